#!/usr/bin/env bash
# ci/nightly.sh end to end (CTest: nightly_two_nights), on a small suite:
#   night 1 (clean) must exit 0 and store HISTORY/2026-11-28__test-image_1/;
#   night 2, with one planted writer (--replace-kernel
#   reshape_and_cache_shuffle=planted_shuffle_v_token_swapped), must exit 1,
#   and its small.compare.md (beside the report folder small/, not in it)
#   must report regressions; `kvharness run --resume` accepts that report
#   folder (issue 25: a compare.md inside it made kvharness refuse it);
#   --kvharness NAME is looked up on PATH;
#   headless Chromium loads the page: its DOM (ci/nightly_dom_check.py) must
#   hold one heat map, two trend rows and the planted writer's regression as
#   the diff table's first row; the same check on night 1's page (no
#   regression) must fail; a screenshot (PNG) is taken.
#   bad usage (no --tag) exits 2.
# Usage: ci/nightly_test.sh KVHARNESS_PLANTED OUT
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kvh="${1:?usage: nightly_test.sh KVHARNESS_PLANTED OUT}"
out="${2:?usage: nightly_test.sh KVHARNESS_PLANTED OUT}"
fail() { echo "nightly_test: FAIL: $*"; exit 1; }
rm -rf "$out"
mkdir -p "$out"
command -v chromium >/dev/null || fail "chromium missing (bash ci/bootstrap.sh)"

cat >"$out/small.toml" <<'TOML'
seeds = [1]
[[write]]
models = ["Qwen3.5-397B-A17B", "Qwen3-235B-A22B"]
tp = 8
layouts = ["separate", "kv_first", "interleaved"]
head_sizes = [64, 128]
num_tokens = [4]
block_sizes = [16]
dtypes = ["bf16"]
writers = ["reshape_and_cache_flash", "reshape_and_cache", "reshape_and_cache_shuffle"]
TOML
h="$out/history"
nightly=(bash "$root/ci/nightly.sh" --history "$h" --kvharness "$kvh" --suite "small=$out/small.toml")

"${nightly[@]}" --date 2026-11-28 >"$out/usage.log" 2>&1
[ $? -eq 2 ] || fail "nightly.sh without --tag does not exit 2 ($out/usage.log)"

"${nightly[@]}" --tag test-image:1 --date 2026-11-28 >"$out/night1.log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "night 1 exit $rc, expected 0 ($out/night1.log)"
n1="$h/2026-11-28__test-image_1"
[ -f "$n1/night.json" ] && [ -f "$n1/small/results.json" ] && [ ! -f "$n1/small.compare.md" ] ||
  fail "night 1's folder is not $n1/{night.json,small/results.json} without small.compare.md"

"${nightly[@]}" --tag test-image:2 --date 2026-11-29 -- \
  --replace-kernel reshape_and_cache_shuffle=planted_shuffle_v_token_swapped >"$out/night2.log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "night 2 (planted writer) exit $rc, expected 1 ($out/night2.log)"
n2="$h/2026-11-29__test-image_2"
grep -q -i "regress" "$n2/small.compare.md" || fail "small.compare.md of night 2 reports no regression"
[ "$(ls "$n2/small")" = "$(printf 'junit.xml\nresults.json\nsummary.md')" ] ||
  fail "night 2's report folder holds more than kvharness wrote: $(ls "$n2/small" | tr '\n' ' ')"
"$kvh" run "$out/small.toml" --resume "$n2/small" --no-progress \
  --replace-kernel reshape_and_cache_shuffle=planted_shuffle_v_token_swapped >"$out/resume.log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "kvharness run --resume on night 2's report folder: exit $rc, expected 1 ($out/resume.log)"
grep -q "did not write" "$out/resume.log" && fail "--resume refuses the night's report folder ($out/resume.log)"
# --kvharness NAME: the harness of that name on PATH.
PATH="$(dirname "$kvh"):$PATH" bash "$root/ci/nightly.sh" --history "$out/history-path" --kvharness "$(basename "$kvh")" \
  --suite "small=$out/small.toml" --tag test-image:1 --date 2026-11-28 >"$out/path.log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "--kvharness $(basename "$kvh") (a name on PATH): exit $rc, expected 0 ($out/path.log)"
python3 - "$n2/night.json" <<'PY' || fail "night 2's night.json"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["previous"] == "2026-11-28__test-image_1", m
assert m["suites"]["small"]["exit_code"] == 1 and m["suites"]["small"]["compare_exit_code"] == 1, m
PY

chrome=(chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=2000)
"${chrome[@]}" --dump-dom "file://$h/index.html" >"$out/dom.html" 2>/dev/null || fail "chromium --dump-dom"
python3 "$root/ci/nightly_dom_check.py" "$out/dom.html" --suites 1 --nights 2 \
  --regression reshape_and_cache_shuffle || fail "DOM of the night-2 page"
"${chrome[@]}" --dump-dom "file://$n1/index.html" >"$out/dom-night1.html" 2>/dev/null || fail "chromium --dump-dom (night 1)"
if python3 "$root/ci/nightly_dom_check.py" "$out/dom-night1.html" --suites 1 --nights 1 \
     --regression reshape_and_cache_shuffle >/dev/null; then
  fail "the DOM check accepts night 1's page, which has no regression"
fi
"${chrome[@]}" --window-size=1400,1600 --screenshot="$out/nightly.png" "file://$h/index.html" >/dev/null 2>&1
head -c 8 "$out/nightly.png" 2>/dev/null | od -An -tx1 | grep -q "89 50 4e 47 0d 0a 1a 0a" ||
  fail "no PNG screenshot at $out/nightly.png"
# The same night again (same date and tag) replaces the earlier record, and says so.
"${nightly[@]}" --tag test-image:1 --date 2026-11-28 >"$out/night1-again.log" 2>&1
grep -q "nightly: 2026-11-28__test-image_1 already exists in .*: replaced by this run" "$out/night1-again.log" ||
  fail "a night run again does not say it replaced the earlier one ($out/night1-again.log)"
echo "nightly_test: PASS (page $h/index.html, screenshot $out/nightly.png)"
