#!/usr/bin/env bash
# Issue 24: `kvharness bench --suite all` (every shipped suite this build can run, together)
# on a shard: exit 0, a row per suite with its cases and cases/s, the references line, and the
# provider suites skipped with their reason on stderr.
#   bench_suite_all_test.sh KVHARNESS OUT_DIR
set -uo pipefail
kvh=$1 out=$2
rm -rf "$out" && mkdir -p "$out"
"$kvh" bench --suite all --shard 1/40 --report-dir "$out" >"$out/stdout" 2>"$out/stderr"
rc=$?
cat "$out/stdout"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" -eq 0 ] || fail "exit $rc (want 0)"
grep -qE '^## bench --suite all --shard 1/40' "$out/stdout" || fail "no heading"
grep -qE '^[0-9]+ cases of [0-9]+ file\(s\) in [0-9.]+ s \([0-9.]+ cases/s\)' "$out/stdout" || fail "no total line"
for suite in default fp8 mla ragged quant; do
  grep -qE "^\| cases/$suite\.toml \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \| 0 \|$" "$out/stdout" || fail "no row for $suite"
done
grep -qE '^References: [0-9]+ decode case\(s\) over [0-9]+ distinct float64 reference' "$out/stdout" || fail "no references line"
grep -q 'skipping cases/python.toml: needs --provider for .*writer torch_reshape_and_cache_flash' "$out/stderr" ||
  fail "the provider suite is not named as skipped: $(cat "$out/stderr")"
grep -q 'known writers' "$out/stderr" && fail "a skip line lists every kernel"
[ -s "$out/suite/results.json" ] || fail "no results.json under $out/suite"
# The report set says what made it (as run's does), so that a bench's shards merge.
python3 - "$out/suite/results.json" <<'PY' || fail "the bench report lacks run metadata"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["shard"] == "1/40", j["shard"]
assert j["identity"], "no identity"
assert "bench --suite all" in j["command_line"], j["command_line"]
assert j["tool_version"] and j["host"], (j["tool_version"], j["host"])
PY
cat >"$out/small.toml" <<'EOF'
seeds = [1, 2]
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first", "padded"]
head_sizes = [128]
num_tokens = [4, 64]
block_sizes = [16]
dtypes = ["bf16"]
writers = ["reshape_and_cache"]
EOF
for i in 1 2; do
  "$kvh" bench --suite "$out/small.toml" --shard "$i/2" --report-dir "$out/s$i" >/dev/null 2>&1 || fail "bench shard $i/2: exit $?"
done
"$kvh" merge "$out/s1/suite" "$out/s2/suite" -o "$out/merged" >"$out/merge.out" 2>&1 ||
  fail "the bench shards do not merge: $(cat "$out/merge.out")"
echo "PASS"
