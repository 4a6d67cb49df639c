#!/usr/bin/env bash
# End-to-end tests of crash isolation, resume and sharding (issue 13), one per
# CTest test:
#   isolate_e2e_test.sh KVHARNESS_PLANTED WORKDIR TEST
# KVHARNESS_PLANTED is the kvharness binary with the planted kernels
# (planted_aborts, planted_wild_write, planted_hangs). Run from the source root.
set -uo pipefail
KVH=$(realpath "$1"); WORK=$2; TEST=$3
rm -rf "$WORK"; mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# Three tables (three worker groups): good writers around each planted crash,
# so that a crash in the middle of a group leaves cases after it in that group.
write_table() {  # NUM_TOKENS WRITERS...
  local writers; writers=$(printf '"%s", ' "${@:2}")
  cat <<T
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first", "interleaved"]
head_sizes = [128]
num_tokens = [$1]
block_sizes = [16]
dtypes = ["bf16"]
writers = [${writers%, }]
T
}
crash_suite() {
  { echo "seeds = [1]"
    write_table 4 reshape_and_cache_flash planted_aborts reshape_and_cache
    write_table 8 reshape_and_cache planted_wild_write reshape_and_cache_flash
    write_table 16 reshape_and_cache_flash planted_hangs reshape_and_cache_shuffle
  } > "$1"
}
# The default suite's 1,161 write cases (some 10 s): killed and resumed.
SUITE=(cases/default.toml --filter 'kind=write')

case "$TEST" in
# An abort, a wild write (SIGSEGV on the cpu backend) and a hang are each one
# CRASH naming the writer; every other case gets its verdict; the run is complete.
# No flag: isolation is the default on every backend (issue 23), the cpu one included.
isolate_crashes_cost_one_case)
  crash_suite "$WORK/crash.toml"
  "$KVH" run "$WORK/crash.toml" --case-timeout 3 --report-dir "$WORK/r" --no-progress > "$WORK/out" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "expected exit 1 (three crashes), got $rc: $(tail -5 "$WORK/out")"
  r="$WORK/r/results.json"
  [ "$(json "$r" "j['complete']")" = True ] || fail "the run is not complete: $(json "$r" "j['stopped_because']")"
  [ "$(json "$r" "len(j['cases'])")" = 18 ] || fail "expected 18 cases, got $(json "$r" "len(j['cases'])")"
  [ "$(json "$r" "j['counts']['crash']")" = 6 ] || fail "expected 6 CRASH (3 kernels x 2 layouts)"
  [ "$(json "$r" "j['counts']['pass']")" = 12 ] || fail "every other case must PASS"
  [ "$(json "$r" "sorted(set((c['writer'], c['reason'], c['component']) for c in j['cases'] if c['verdict']=='CRASH'))")" \
    = "[('planted_aborts', 'crash', 'writer'), ('planted_hangs', 'timeout', 'writer'), ('planted_wild_write', 'crash', 'writer')]" ] \
    || fail "wrong crashes: $(json "$r" "[(c['writer'], c['reason'], c['component']) for c in j['cases'] if c['verdict']=='CRASH']")"
  [ "$(json "$r" "[c['verdict'] for c in j['cases'] if not c['writer'].startswith('planted')].count('PASS')")" = 12 ] \
    || fail "a good case did not PASS"
  json "$r" "[c['detail'] for c in j['cases'] if c['writer']=='planted_aborts'][0]" | grep -q "signal 6" \
    || fail "the abort's detail does not name SIGABRT"
  json "$r" "[c['detail'] for c in j['cases'] if c['writer']=='planted_wild_write'][0]" | grep -q "signal 11" \
    || fail "the wild write's detail does not name SIGSEGV"
  # The same verdicts with a worker per 4 cases.
  "$KVH" run "$WORK/crash.toml" --isolate --isolate-batch 4 --case-timeout 3 --report-dir "$WORK/b4" --no-progress \
    > "$WORK/out" 2>&1
  "$KVH" compare "$WORK/r" "$WORK/b4" --fail-on any > "$WORK/cmp" || fail "--isolate-batch 4 changed verdicts: $(cat "$WORK/cmp")"
  # Without --isolate the first crash ends the run (what --isolate is for), its report kept.
  "$KVH" run "$WORK/crash.toml" --no-isolate --case-timeout 3 --report-dir "$WORK/plain" --no-progress > /dev/null 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "without --isolate: expected exit 1, got $rc"
  [ "$(json "$WORK/plain/results.json" "j['complete']")" = False ] || fail "without --isolate the abort should end the run"
  [ "$(json "$WORK/plain/results.json" "j['cases'][-1]['writer'] + ' ' + j['cases'][-1]['verdict']")" = "planted_aborts CRASH" ] \
    || fail "without --isolate the abort is not the report's last case"
  ;;
# --isolate with --filter, --fail-fast, an expected failure, and SIGINT.
isolate_composes)
  crash_suite "$WORK/crash.toml"
  # --filter: only the abort table's cases run; --fail-fast: the run stops at the first CRASH.
  "$KVH" run "$WORK/crash.toml" --isolate --fail-fast --filter 'writer=reshape_and_cache_flash|planted_aborts' \
    --case-timeout 3 --report-dir "$WORK/ff" --no-progress > "$WORK/out" 2>&1; rc=$?
  [ $rc -eq 1 ] || fail "--fail-fast: expected exit 1, got $rc"
  r="$WORK/ff/results.json"
  [ "$(json "$r" "j['complete']")" = False ] || fail "--fail-fast: the report must say incomplete"
  json "$r" "j['stopped_because']" | grep -q -- "--fail-fast" || fail "--fail-fast: stopped_because does not say so"
  [ "$(json "$r" "j['cases'][-1]['writer'] + ' ' + j['cases'][-1]['verdict']")" = "planted_aborts CRASH" ] \
    || fail "--fail-fast: the last case must be the abort"
  [ "$(json "$r" "all(c['writer'] in ('reshape_and_cache_flash', 'planted_aborts') for c in j['cases'])")" = True ] \
    || fail "--filter not applied in the workers"
  # An expected CRASH (declared) is not a failure: exit 0.
  { cat "$WORK/crash.toml"; cat <<'T'
[[write.expected_failure]]
filter = "writer=planted_hangs"
component = "writer"
reasons = ["timeout"]
why = "test: the planted hang is declared"
T
  } > "$WORK/declared.toml"
  "$KVH" run "$WORK/declared.toml" --isolate --filter 'writer=planted_hangs|reshape_and_cache_shuffle' \
    --case-timeout 2 --report-dir "$WORK/x" --no-progress > "$WORK/out" 2>&1; rc=$?
  [ $rc -eq 0 ] || fail "a declared timeout under --isolate: expected exit 0, got $rc: $(tail -3 "$WORK/out")"
  [ "$(json "$WORK/x/results.json" "j['counts']['expected_failures']")" = 2 ] || fail "the hangs are not counted expected"
  # SIGINT while a hung kernel runs: INTERRUPTED, exit 130, no CRASH.
  "$KVH" run "$WORK/crash.toml" --isolate --filter 'writer=planted_hangs' --case-timeout 0 \
    --report-dir "$WORK/int" --no-progress > "$WORK/out" 2>&1 &
  pid=$!
  sleep 3
  kill -INT $pid
  wait $pid; rc=$?
  [ $rc -eq 130 ] || fail "SIGINT under --isolate: expected exit 130, got $rc"
  r="$WORK/int/results.json"
  [ "$(json "$r" "j['cases'][-1]['verdict']")" = INTERRUPTED ] || fail "the case in flight is not INTERRUPTED"
  [ "$(json "$r" "j['counts']['crash']")" = 0 ] || fail "an interrupt became a CRASH"
  [ "$(json "$r" "j['interrupted_by']")" = 2 ] || fail "interrupted_by is not SIGINT"
  pgrep -f -- "--isolate-worker.*$WORK/int" > /dev/null && fail "a worker outlived its interrupted parent"
  true
  ;;
# SIGKILL mid-run leaves a valid partial report; --resume completes it; the
# verdicts equal an uninterrupted run's. A resume of another run is refused.
resume_after_sigkill)
  "$KVH" run "${SUITE[@]}" --report-dir "$WORK/full" --no-progress > /dev/null 2>&1 || fail "the full run failed"
  n=$(json "$WORK/full/results.json" "len(j['cases'])")
  "$KVH" run "${SUITE[@]}" --report-dir "$WORK/part" --no-progress > /dev/null 2>&1 &
  pid=$!
  for _ in $(seq 300); do  # until a partial report with some cases is on disk
    sleep 0.1
    k=$(json "$WORK/part/results.json" "len(j['cases'])" 2>/dev/null || echo 0)
    [ "$k" -ge 1 ] && break
  done
  kill -KILL $pid; wait $pid 2>/dev/null
  r="$WORK/part/results.json"
  [ "$(json "$r" "j['complete']")" = False ] || fail "the killed run's report says complete"
  k=$(json "$r" "len(j['cases'])")
  [ "$k" -ge 1 ] && [ "$k" -lt "$n" ] || fail "the killed run should have left a partial report ($k of $n cases)"
  cp -r "$WORK/part" "$WORK/part-isolated"
  "$KVH" run "${SUITE[@]}" --resume "$WORK/part" --no-progress > "$WORK/out" 2>&1 || fail "resume failed: $(tail -3 "$WORK/out")"
  # The same resume in --isolate workers (they run the cases left, not the first ones of the suite).
  "$KVH" run "${SUITE[@]}" --resume "$WORK/part-isolated" --isolate --no-progress > "$WORK/out-i" 2>&1 \
    || fail "isolated resume failed: $(tail -3 "$WORK/out-i")"
  "$KVH" compare "$WORK/full" "$WORK/part-isolated" --fail-on any > "$WORK/cmp" || fail "isolated resume differs: $(cat "$WORK/cmp")"
  grep -q "$k of $n cases already decided" "$WORK/out" || fail "resume did not keep the $k decided cases: $(cat "$WORK/out")"
  [ "$(json "$r" "j['complete']")" = True ] || fail "the resumed report is not complete"
  [ "$(json "$r" "len(j['cases'])")" = "$n" ] || fail "the resumed report does not have all $n cases"
  "$KVH" compare "$WORK/full" "$WORK/part" --fail-on any > "$WORK/cmp" || fail "verdicts differ: $(cat "$WORK/cmp")"
  # Refused: another seed (other ids), another kernel set.
  "$KVH" run "${SUITE[@]}" --seed 7 --resume "$WORK/full" --report-dir "$WORK/other" --no-progress > "$WORK/out" 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "resume of another run: expected exit 2, got $rc"
  grep -q "is not this one" "$WORK/out" || fail "the refusal does not say why: $(cat "$WORK/out")"
  "$KVH" run "${SUITE[@]}" --replace-kernel reshape_and_cache=reshape_and_cache_flash --resume "$WORK/full" \
    --report-dir "$WORK/other" --no-progress > "$WORK/out" 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "resume with other kernels: expected exit 2, got $rc"
  # A refused resume into DIR itself (no --report-dir) leaves DIR's report as it was: its decided cases survive.
  cp -r "$WORK/full" "$WORK/keep"
  "$KVH" run "${SUITE[@]}" --seed 7 --resume "$WORK/keep" --no-progress > "$WORK/out" 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "refused resume into DIR: expected exit 2, got $rc"
  diff -r "$WORK/full" "$WORK/keep" > /dev/null || fail "a refused resume rewrote DIR: $(cat "$WORK/out")"
  grep -q "left as it was" "$WORK/out" || fail "the refusal does not say DIR was kept: $(cat "$WORK/out")"
  ;;
# Shards 1/3..3/3 merged give the unsharded run's verdicts; bad merges are refused.
shard_merge)
  SUITE=(cases/default.toml --filter 'kind=write,dtype=bf16,layout=kv_first|interleaved')
  "$KVH" run "${SUITE[@]}" --report-dir "$WORK/full" --no-progress > /dev/null 2>&1 || fail "full run"
  n=$(json "$WORK/full/results.json" "len(j['cases'])")
  for i in 1 2 3; do
    "$KVH" run "${SUITE[@]}" --shard $i/3 --report-dir "$WORK/s$i" --no-progress > /dev/null 2>&1 \
      || fail "shard $i/3 failed"
    k=$(json "$WORK/s$i/results.json" "len(j['cases'])")
    [ "$k" -gt 0 ] && [ "$k" -lt "$n" ] || fail "shard $i/3 has $k of $n cases"
  done
  # --isolate under --shard: its workers run the shard's cases, with the same verdicts.
  "$KVH" run "${SUITE[@]}" --shard 2/3 --isolate --report-dir "$WORK/i2" --no-progress > /dev/null 2>&1 || fail "isolated shard 2/3"
  "$KVH" compare "$WORK/s2" "$WORK/i2" --fail-on any > "$WORK/cmp" || fail "isolated shard 2/3 differs: $(cat "$WORK/cmp")"
  "$KVH" merge "$WORK/s1" "$WORK/s2" "$WORK/s3" -o "$WORK/merged" > "$WORK/out" 2>&1 || fail "merge: $(cat "$WORK/out")"
  [ "$(json "$WORK/merged/results.json" "len(j['cases'])")" = "$n" ] || fail "the merged report lacks cases"
  [ "$(json "$WORK/merged/results.json" "j['complete']")" = True ] || fail "the merged report is not complete"
  "$KVH" compare "$WORK/full" "$WORK/merged" --fail-on changes > "$WORK/cmp" || fail "verdicts differ: $(cat "$WORK/cmp")"
  "$KVH" compare "$WORK/full" "$WORK/merged" --fail-on any > "$WORK/cmp" || fail "cases differ: $(cat "$WORK/cmp")"
  grep -q "^- " "$WORK/merged/summary.md" || grep -q "|" "$WORK/merged/summary.md" || fail "no summary.md"
  # A shard missing: incomplete, exit 1.
  "$KVH" merge "$WORK/s1" "$WORK/s3" -o "$WORK/m2" > "$WORK/out" 2>&1; rc=$?
  [ $rc -eq 1 ] || fail "a missing shard: expected exit 1, got $rc"
  grep -q "shard(s) 2 of 3 missing" "$WORK/out" || fail "the missing shard is not named: $(cat "$WORK/out")"
  # Refused (exit 2): a shard twice, a shard and the whole run, another run's shard.
  "$KVH" merge "$WORK/s1" "$WORK/s1" -o "$WORK/m3" > "$WORK/out" 2>&1; rc=$?
  [ $rc -eq 2 ] && grep -q "given twice" "$WORK/out" || fail "a shard twice: expected exit 2 'given twice', got $rc $(cat "$WORK/out")"
  "$KVH" merge "$WORK/full" "$WORK/s2" -o "$WORK/m4" > "$WORK/out" 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "the whole run and a shard: expected exit 2, got $rc $(cat "$WORK/out")"
  "$KVH" run "${SUITE[@]}" --seed 9 --shard 2/3 --report-dir "$WORK/o2" --no-progress > /dev/null 2>&1
  "$KVH" merge "$WORK/s1" "$WORK/o2" "$WORK/s3" -o "$WORK/m5" > "$WORK/out" 2>&1; rc=$?
  [ $rc -eq 2 ] && grep -q "another run" "$WORK/out" || fail "another run's shard: expected exit 2, got $rc $(cat "$WORK/out")"
  [ -e "$WORK/m5" ] && fail "a refused merge wrote a report"
  true
  ;;
*) fail "unknown test $TEST" ;;
esac
echo "PASS: $TEST"
