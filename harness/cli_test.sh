#!/usr/bin/env bash
# The command line a person reads (issue 25, items 7, 8, 9 and 13), one CTest test each:
#   cli_test.sh KVHARNESS WORKDIR TEST
# Run from the source root (ctest does). Each test checks output and exit codes.
set -uo pipefail
KVH=$(realpath "$1"); WORK=$2; TEST=$3
rm -rf "$WORK"; mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
# run_rc OUT ERR ARGS...: runs kvharness with ARGS, stdout to OUT, stderr to ERR; prints the exit code.
run_rc() { local out=$1 err=$2; shift 2; "$KVH" "$@" > "$out" 2> "$err"; echo $?; }

# Two write cases: a run of a second or so.
cat > "$WORK/small.toml" <<'EOF'
seeds = [1]
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first"]
head_sizes = [128]
num_tokens = [4, 64]
block_sizes = [16]
dtypes = ["bf16"]
writers = ["reshape_and_cache"]
EOF

case "$TEST" in
# Item 7: bisect-run in --help; a bare kvharness prints the help and exits 2; unknown commands and
# options say `kvharness ...: unknown ...; did you mean ...?` and exit 2 (125 under bisect-run).
usage_errors)
  "$KVH" --help > "$WORK/help" || fail "--help: exit $?"
  for cmd in run list info bench compare merge bisect-run; do
    grep -qE "^  $cmd " "$WORK/help" || fail "--help does not list $cmd: $(cat "$WORK/help")"
  done
  rc=$(run_rc "$WORK/o" "$WORK/e")
  [ "$rc" = 2 ] || fail "bare kvharness: exit $rc, expected 2"
  grep -q "bisect-run" "$WORK/e" && grep -q "a command is required" "$WORK/e" || fail "bare kvharness: $(cat "$WORK/e")"
  rc=$(run_rc "$WORK/o" "$WORK/e" rnu)
  [ "$rc" = 2 ] || fail "rnu: exit $rc"
  grep -q "^kvharness: unknown command 'rnu'; did you mean 'run'?" "$WORK/e" || fail "rnu: $(cat "$WORK/e")"
  rc=$(run_rc "$WORK/o" "$WORK/e" run "$WORK/small.toml" --fitler writer=x --report-dir "$WORK/r")
  [ "$rc" = 2 ] || fail "run --fitler: exit $rc"
  grep -q "^kvharness run: unknown option '--fitler'; did you mean '--filter'? (\`kvharness run --help\` lists its options)" \
    "$WORK/e" || fail "run --fitler: $(cat "$WORK/e")"
  rc=$(run_rc "$WORK/o" "$WORK/e" run --fail-on=any)
  [ "$rc" = 2 ] || fail "run --fail-on: exit $rc"
  grep -q "unknown option '--fail-on' (an option of compare)" "$WORK/e" || fail "run --fail-on: $(cat "$WORK/e")"
  rc=$(run_rc "$WORK/o" "$WORK/e" compare a b --max-onyl 3)
  [ "$rc" = 2 ] || fail "compare --max-onyl: exit $rc"
  grep -q "did you mean '--max-only'" "$WORK/e" || fail "compare --max-onyl: $(cat "$WORK/e")"
  rc=$(run_rc "$WORK/o" "$WORK/e" bisect-run "$WORK/small.toml" --fitler x)
  [ "$rc" = 125 ] || fail "bisect-run --fitler: exit $rc, expected 125"
  rc=$(run_rc "$WORK/o" "$WORK/e" run --seed x)
  [ "$rc" = 2 ] || fail "run --seed x: exit $rc"
  grep -q "^kvharness run: " "$WORK/e" || fail "run --seed x: $(cat "$WORK/e")"
  "$KVH" bisect-run --help | grep -q -- "--bisect" || fail "bisect-run --help is not run's help"
  # Issue 24, after attack: NaN passes a range check; a bad KVH_REFERENCE_CACHE_MB would quietly
  # turn sharing off; a bad bench --shard is a usage error (2), not the harness failing (128).
  rc=$(run_rc "$WORK/o" "$WORK/e" run "$WORK/small.toml" --timing-budget nan --report-dir "$WORK/r")
  [ "$rc" = 2 ] || fail "--timing-budget nan: exit $rc, expected 2"
  grep -q -- "--timing-budget" "$WORK/e" || fail "--timing-budget nan: $(cat "$WORK/e")"
  rc=$(KVH_REFERENCE_CACHE_MB=abc run_rc "$WORK/o" "$WORK/e" run "$WORK/small.toml" --report-dir "$WORK/r")
  [ "$rc" = 2 ] || fail "KVH_REFERENCE_CACHE_MB=abc: exit $rc, expected 2"
  grep -q "KVH_REFERENCE_CACHE_MB='abc': expected a whole number of megabytes" "$WORK/e" ||
    fail "KVH_REFERENCE_CACHE_MB=abc: $(cat "$WORK/e")"
  for bad in 0/4 5/4 1/0 abc; do
    rc=$(run_rc "$WORK/o" "$WORK/e" bench --suite "$WORK/small.toml" --shard "$bad" --report-dir "$WORK/b")
    [ "$rc" = 2 ] || fail "bench --shard $bad: exit $rc, expected 2"
    grep -q -- "--shard '$bad'" "$WORK/e" || fail "bench --shard $bad: $(cat "$WORK/e")"
  done
  ;;
# Item 7: compare -f is --filter (as in run and list); compare warns on stderr, naming both sides,
# when the runs used other case files, providers or substitutions, and --fail-on any fails then.
compare_setups)
  "$KVH" run "$WORK/small.toml" --report-dir "$WORK/a" --no-progress > /dev/null 2>&1 || fail "the small run failed"
  python3 - "$WORK" <<'EOF'
import json, os, sys
w = sys.argv[1]
a = json.load(open(f"{w}/a/results.json"))
def save(name, **change):
    j = dict(a, **change)
    os.makedirs(f"{w}/{name}", exist_ok=True)
    json.dump(j, open(f"{w}/{name}/results.json", "w"))
save("moved", case_files=["/elsewhere/" + os.path.basename(a["case_files"][0])])  # the same suite elsewhere
save("suite", case_files=["cases/seed-pr.toml"])
save("prov", command_line=a["command_line"] + " --provider python:my_kernels", providers=["python:my_kernels"])
save("subst", replaced_kernels={"reshape_and_cache": "reshape_and_cache (replaced by python:my_kernels:mine)"})
EOF
  rc=$(run_rc "$WORK/o" "$WORK/e" compare "$WORK/a" "$WORK/moved" --fail-on any -f writer=reshape_and_cache)
  [ "$rc" = 0 ] || fail "same suite at another path: exit $rc; $(cat "$WORK/e")"
  [ -s "$WORK/e" ] && fail "same suite at another path warns: $(cat "$WORK/e")"
  rc=$(run_rc "$WORK/o" "$WORK/e" compare "$WORK/a" "$WORK/suite")
  [ "$rc" = 0 ] || fail "other suite, --fail-on regressions: exit $rc"
  grep -q "warning: the runs used different case files: A: .*small.toml; B: cases/seed-pr.toml" "$WORK/e" \
    || fail "other suite: $(cat "$WORK/e")"
  rc=$(run_rc "$WORK/o" "$WORK/e" compare "$WORK/a" "$WORK/suite" --fail-on any)
  [ "$rc" = 1 ] || fail "other suite, --fail-on any: exit $rc, expected 1"
  rc=$(run_rc "$WORK/o" "$WORK/e" compare "$WORK/a" "$WORK/prov" --fail-on any)
  [ "$rc" = 1 ] || fail "other providers, --fail-on any: exit $rc"
  grep -q "different providers: A: (none); B: python:my_kernels" "$WORK/e" || fail "providers: $(cat "$WORK/e")"
  rc=$(run_rc "$WORK/o" "$WORK/e" compare "$WORK/subst" "$WORK/a" --fail-on any)
  [ "$rc" = 1 ] || fail "other substitutions, --fail-on any: exit $rc"
  grep -q "different substitutions (--replace-kernel, --replace-router): A: reshape_and_cache (replaced by python:my_kernels:mine); B: (none)" \
    "$WORK/e" || fail "substitutions: $(cat "$WORK/e")"
  ;;
# Item 8: an interrupted run prints its counts and `report:` line on stdout, as a finished run
# does, whether SIGINT lands during a case (the run is abandoned there) or between cases.
interrupt_same_stream)
  "$KVH" run "$WORK/small.toml" --report-dir "$WORK/done" --no-progress > "$WORK/done.out" 2> "$WORK/done.err"
  grep -q "^report: " "$WORK/done.out" || fail "a finished run has no report: line on stdout"
  # During a case: batch 512 of seed-pr runs for seconds.
  "$KVH" run cases/seed-pr.toml --filter 'batch_size=512' --no-isolate --report-dir "$WORK/during" --no-progress \
    > "$WORK/during.out" 2> "$WORK/during.err" &
  pid=$!
  sleep 3
  kill -INT $pid
  wait $pid; rc=$?
  [ $rc -eq 130 ] || fail "SIGINT during a case: exit $rc"
  [ "$(json "$WORK/during/results.json" "j['cases'][-1]['verdict']")" = INTERRUPTED ] \
    || fail "SIGINT did not land during a case"
  # Between cases: the default suite's 1,222 write cases take about 5 ms each; the loop sees the signal.
  "$KVH" run cases/default.toml --filter kind=write --no-isolate --report-dir "$WORK/between" --no-progress \
    > "$WORK/between.out" 2> "$WORK/between.err" &
  pid=$!
  sleep 1
  kill -INT $pid
  wait $pid; rc=$?
  [ $rc -eq 130 ] || fail "SIGINT between cases: exit $rc"
  for m in during between; do
    grep -q "^report: $WORK/$m/summary.md" "$WORK/$m.out" || fail "$m: no report: line on stdout: $(cat "$WORK/$m.out")"
    grep -q "cases: .*(INCOMPLETE)" "$WORK/$m.out" || fail "$m: no counts on stdout"
    grep -q "^report: " "$WORK/$m.err" && fail "$m: a report: line on stderr"
    grep -q "kvharness: run stopped: interrupted by signal 2" "$WORK/$m.err" || fail "$m: no reason on stderr: $(cat "$WORK/$m.err")"
    grep -q "kvharness: to run the rest, repeat this command with --resume " "$WORK/$m.err" || fail "$m: no --resume hint"
  done
  ;;
# Item 9: the heartbeat gives elapsed time and an estimate; a run says which case file it
# defaulted to and its wall time.
progress_and_wall_time)
  # 203 write cases, about half a second: several heartbeats.
  "$KVH" run cases/default.toml --filter 'kind=write,layout=kv_first' --report-dir "$WORK/r" --no-progress \
    --heartbeat 0.05 > "$WORK/out" 2> "$WORK/err" || fail "write cases: $(cat "$WORK/err")"
  grep -qE "^kvharness: [0-9]+/203 cases done, 0 unexpected failure\(s\) so far; [0-9.]+ s elapsed, about [0-9.]+ (s|min [0-9]+ s) left" \
    "$WORK/err" || fail "heartbeat: $(cat "$WORK/err")"
  grep -qE "^wall time: [0-9]+\.[0-9] s" "$WORK/out" || fail "no wall time: $(cat "$WORK/out")"
  "$KVH" list > "$WORK/list" 2> "$WORK/err" || fail "list of the default suite"
  grep -q "^kvharness: cases: .*cases/default.toml (default)$" "$WORK/err" || fail "list: $(cat "$WORK/err")"
  rc=$(run_rc "$WORK/o" "$WORK/e" run --filter 'id=none' --report-dir "$WORK/none")
  [ "$rc" = 125 ] || fail "run of no case: exit $rc"
  grep -q "^kvharness: cases: .*cases/default.toml (default)$" "$WORK/e" || fail "run: $(cat "$WORK/e")"
  "$KVH" run "$WORK/small.toml" --report-dir "$WORK/named" --no-progress > /dev/null 2> "$WORK/e"
  grep -q "(default)" "$WORK/e" && fail "a named case file is called the default: $(cat "$WORK/e")"
  ;;
# Item 13: on the cpu backend a routed case without `target` takes the host's kernel workers as
# compute units: one warning, at the first such case's file:line, whatever the worker count.
host_compute_units)
  cat > "$WORK/routes.toml" <<'EOF'
seeds = [1]
[[attention]]
models = ["Llama-3.1-8B"]
layouts = ["kv_first"]
batch_sizes = [4, 160]
context_lens = [1, 40]
block_sizes = [16]
dtypes = ["bf16"]
routers = ["aiter-v0.1.12"]

[[attention]]
models = ["Llama-3.1-8B"]
layouts = ["kv_first"]
batch_sizes = [4]
context_lens = [1, 40]
block_sizes = [16]
dtypes = ["bf16"]
routers = ["aiter-v0.1.12", "vllm-unified-9c0ee99"]
target = "MI300X"
EOF
  for workers in 2 16; do
    KVH_HOST_WORKERS=$workers "$KVH" list "$WORK/routes.toml" > /dev/null 2> "$WORK/e" || fail "list: $(cat "$WORK/e")"
    [ "$(grep -c warning "$WORK/e")" = 1 ] || fail "expected one warning: $(cat "$WORK/e")"
    grep -q "^kvharness: warning: $WORK/routes.toml:2: router aiter-v0.1.12 routes without a \`target\`: .* this host's $workers kernel workers as compute units.*(2 cases like it)" \
      "$WORK/e" || fail "KVH_HOST_WORKERS=$workers: $(cat "$WORK/e")"
  done
  "$KVH" run "$WORK/routes.toml" --filter batch_size=4 --report-dir "$WORK/r" --no-progress > /dev/null 2> "$WORK/e"
  [ "$(grep -c "warning: $WORK/routes.toml:2:" "$WORK/e")" = 1 ] || fail "run (isolated workers): $(cat "$WORK/e")"
  # With a target, and for the vLLM unified rule (no compute units), nothing to say.
  sed -n '10,$p' "$WORK/routes.toml" > "$WORK/targeted.toml"
  "$KVH" list "$WORK/targeted.toml" > /dev/null 2> "$WORK/e" || fail "list targeted: $(cat "$WORK/e")"
  [ -s "$WORK/e" ] && fail "a targeted file warns: $(cat "$WORK/e")"
  ;;
*) fail "unknown test $TEST" ;;
esac
echo "PASS $TEST"
