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
echo "PASS"
