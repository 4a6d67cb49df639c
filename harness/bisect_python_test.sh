#!/usr/bin/env bash
# `git bisect run` over a kernel repository whose kernels are a Python provider
# module (the README recipe, "Bisecting a kernel repository"):
#   bisect_python_test.sh KVHARNESS WORKDIR
# Eight commits of mykernels.py: 1-3 good, 4 does not import (a dependency the
# commit forgot: untestable, exit 125), 5 good again, 6 the regression (the
# writer drops the last token), 7-8 good-looking. The bisect must name commit
# 6, having skipped commit 4, never blaming it.
set -uo pipefail
KVH=$(realpath "$1"); WORK=$(realpath -m "$2")
rm -rf "$WORK"; mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The suite the bisect judges each commit by (outside the kernel repository).
cat > "$WORK/cases.toml" <<'T'
seeds = [1]
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first", "interleaved"]
head_sizes = [128]
num_tokens = [4, 64]
block_sizes = [16]
dtypes = ["bf16"]
writers = ["my_reshape_and_cache_flash"]
T
# The bisect step (README): exit 0 good, 1 bad, 125 untestable.
cat > "$WORK/step.sh" <<T
#!/bin/sh
exec "$KVH" bisect-run "$WORK/cases.toml" --provider "python:\$(pwd)/mykernels.py" --report-dir "$WORK/reports"
T
chmod +x "$WORK/step.sh"

cd "$WORK" && git init -q repo && cd repo || fail "git init"
git config user.email t@example.com && git config user.name test
cat > mykernels.py <<'P'
"""A kernel library's cache writer, as a kvharness Python provider."""
import torch

from kvharness import writer


@writer("my_reshape_and_cache_flash", cache_format="flash", description="NHD cache writer in torch")
def reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, block_size):
    valid = slot_mapping >= 0
    slots = slot_mapping[valid]
    blk, off = torch.div(slots, block_size, rounding_mode="floor"), slots % block_size
    n = slots.shape[0]  # LIMIT
    key_cache[blk[:n], off[:n]] = key[valid][:n]
    value_cache[blk[:n], off[:n]] = value[valid][:n]
P
commit() { git add -A && git commit -qm "$1" && git rev-parse HEAD; }
c1=$(commit "1 good")
branch=$(git symbolic-ref --short HEAD)
echo "# tuning notes" >> mykernels.py; commit "2 good" > /dev/null
sed -i 's/description="NHD cache writer in torch"/description="NHD cache writer (torch)"/' mykernels.py; commit "3 good" > /dev/null
sed -i 's/^import torch$/import torch\nimport mykernels_fastpath  # forgot to commit this module/' mykernels.py
c4=$(commit "4 untestable: imports a module the commit lacks")
sed -i '/mykernels_fastpath/d' mykernels.py; commit "5 good" > /dev/null
sed -i 's/n = slots.shape\[0\]  # LIMIT/n = slots.shape[0] - 1  # LIMIT/' mykernels.py
grep -q 'shape\[0\] - 1' mykernels.py || fail "the regression was not planted"
c6=$(commit "6 regression: the last token is never written")
echo "# more notes" >> mykernels.py; commit "7 good-looking" > /dev/null
echo "# even more notes" >> mykernels.py; commit "8 good-looking" > /dev/null

# The step's exit codes at the three kinds of commit.
"$WORK/step.sh" > "$WORK/head.out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "HEAD (regressed) should exit 1, got $rc: $(tail -3 "$WORK/head.out")"
git checkout -q "$c4" && { "$WORK/step.sh" > "$WORK/c4.out" 2>&1; rc=$?; }
[ $rc -eq 125 ] || fail "commit 4 (does not import) should exit 125, got $rc: $(tail -3 "$WORK/c4.out")"
grep -q "mykernels_fastpath" "$WORK/c4.out" || fail "the 125 does not name the missing module: $(cat "$WORK/c4.out")"
git checkout -q "$c1" && { "$WORK/step.sh" > "$WORK/c1.out" 2>&1; rc=$?; }
[ $rc -eq 0 ] || fail "commit 1 should exit 0, got $rc: $(tail -3 "$WORK/c1.out")"
git checkout -q "$branch"

git bisect start HEAD "$c1" > /dev/null
git bisect run "$WORK/step.sh" > "$WORK/bisect.log" 2>&1
git bisect log > "$WORK/bisect.steps"
git bisect reset > /dev/null 2>&1
grep -q "^$c6 is the first bad commit" "$WORK/bisect.log" \
  || fail "bisect did not name commit 6: $(grep -A3 'first bad commit\|could be any' "$WORK/bisect.log")"
grep -q "^git bisect skip $c4" "$WORK/bisect.steps" || fail "commit 4 was not skipped: $(cat "$WORK/bisect.steps")"
echo "PASS: bisect named commit 6 and skipped commit 4"
