#!/usr/bin/env bash
# The GPU evidence of kvharness 0.3 (issues 11, 12, 13) in one device session,
# on a machine with two GPUs (nvidia-h200-x2), from the repository root, with a
# prebuilt build/cuda and the CPU reports carried over:
#
#   OUT=/some/dir bash ci/gpu_features.sh CPU_REPORTS_DIR
#
# CPU_REPORTS_DIR holds, per suite S, S/results.json from the cpu backend (and
# random.toml / features.toml / layouts.toml, the generated random suites). Steps (STEPS
# selects; default all):
#   suites   default, seed-pr, fp8, attention-features, random, features, layouts on GPU 0,
#            each followed by `kvharness compare CPU GPU --fail-on changes`
#   isolate  default.toml with --no-isolate (GPU runs isolate by default): the cost;
#            a suite with kernels that abort and make an illegal address access
#            (kvharness_planted), which must cost one CRASH each under --isolate
#   large    cases/large_readers.toml (K/V views past 2^31 elements, block ids
#            above 65,535): PASS; then with planted_int32_offset in place of
#            paged_attention_rocm: FAIL or CRASH, its report written
#   shards   default.toml as --shard 1/2 on GPU 0 and 2/2 on GPU 1 at once,
#            kvharness merge, compared with the unsharded GPU run
# Writes $OUT/gpu_features.log (everything), $OUT/summary.md (per step: exit
# code and seconds, counts) and $OUT/results.tgz (every run's results.json);
# exit 0 when every expectation held.
set -uo pipefail
CPU=$(realpath -m "${1:?CPU_REPORTS_DIR}")
OUT=$(realpath -m "${OUT:-./gpu-out}")
cd "$(dirname "$0")/.." || exit 2
mkdir -p "$OUT"
WORK=${WORK:-/tmp/kvh-features}
rm -rf "$WORK"; mkdir -p "$WORK"
KVH=${KVH:-build/cuda/harness/kvharness}
KVP=${KVP:-build/cuda/harness/kvharness_planted}
STEPS=${STEPS:-suites isolate large shards}
LOG="$OUT/gpu_features.log"; SUMMARY="$OUT/summary.md"
: > "$LOG"; echo "# GPU evidence ($(date -u +%FT%TZ))" > "$SUMMARY"
FAILED=0
want() { [[ " $STEPS " == *" $1 "* ]]; }
counts() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); c=j['counts']; print(f\"{c['cases']} cases: {c['pass']} PASS, {c['fail']} FAIL, {c.get('xfail', 0)} XFAIL, {c['xpass']} XPASS, {c['crash']} CRASH, {c['unsupported']} UNSUPPORTED; {c['unexpected_failures']} unexpected\")" "$1" 2>/dev/null || echo "(no results.json)"; }
# step NAME EXPECTED_RC CMD...: runs CMD, logs it, records rc and seconds; a different rc is a failure.
step() {
  local name=$1 want_rc=$2; shift 2
  echo "=== $name: $*" >> "$LOG"
  local t0=$EPOCHREALTIME
  "$@" >> "$LOG" 2>&1; local rc=$?
  local secs; secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  local ok=ok; [[ " $want_rc " == *" $rc "* ]] || { ok="UNEXPECTED (wanted $want_rc)"; FAILED=1; }
  echo "| $name | $rc | $secs s | $ok |" >> "$SUMMARY"
  echo "--- $name: rc $rc, $secs s, $ok" >> "$LOG"
}
suite_file() {
  case $1 in
    default) echo cases/default.toml ;; seed-pr) echo cases/seed-pr.toml ;; fp8) echo cases/fp8.toml ;;
    attention-features) echo cases/attention-features.toml ;; *) echo "$CPU/$1.toml" ;;
  esac
}

echo "| step | rc | wall | |" >> "$SUMMARY"; echo "|---|---|---|---|" >> "$SUMMARY"
nvidia-smi -L >> "$LOG" 2>&1
export CUDA_VISIBLE_DEVICES=0
if want suites; then
  for s in default seed-pr fp8 attention-features random features layouts; do
    f=$(suite_file "$s"); [ -f "$f" ] || { echo "| $s | - | - | missing $f |" >> "$SUMMARY"; continue; }
    step "run $s" "0" "$KVH" run "$f" --no-progress --timing-reps 0 --report-dir "$WORK/$s"
    echo "| | $(counts "$WORK/$s/results.json") | | |" >> "$SUMMARY"
    [ -f "$CPU/$s/results.json" ] && step "compare cpu $s" 0 "$KVH" compare "$CPU/$s" "$WORK/$s" --fail-on changes
  done
  cp "$WORK/default/summary.md" "$OUT/default-summary.md" 2>/dev/null
fi
if want isolate; then
  step "default --no-isolate" 0 "$KVH" run --no-isolate --no-progress --timing-reps 0 --report-dir "$WORK/noiso"
  step "default (isolated)" 0 "$KVH" run --no-progress --timing-reps 0 --report-dir "$WORK/iso"
  step "compare isolate" 0 "$KVH" compare "$WORK/noiso" "$WORK/iso" --fail-on changes
  { echo "seeds = [1]"
    n=4
    for w in planted_aborts planted_wild_write; do
      n=$((n * 2))  # distinct shapes per table: equal ids would be one case
      cat <<T
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first", "interleaved"]
head_sizes = [128]
num_tokens = [$n]
block_sizes = [16]
dtypes = ["bf16"]
writers = ["reshape_and_cache_flash", "$w", "reshape_and_cache"]
T
    done; } > "$WORK/crash.toml"
  step "crash suite --isolate" 1 "$KVP" run "$WORK/crash.toml" --isolate --case-timeout 20 --no-progress --timing-reps 0 --report-dir "$WORK/crash"
  echo "| | $(counts "$WORK/crash/results.json") | | |" >> "$SUMMARY"
  python3 - "$WORK/crash/results.json" >> "$SUMMARY" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
crash = sorted({(c["writer"], c["reason"], (c["detail"] or "")[:90]) for c in j["cases"] if c["verdict"] == "CRASH"})
good = [c["verdict"] for c in j["cases"] if not c["writer"].startswith("planted")]
ok = j["complete"] and len(crash) == 2 and all(v == "PASS" for v in good) and len(good) == 8
print(f"| crash suite verdicts | complete={j['complete']} | {len(good)} good cases all PASS={all(v == 'PASS' for v in good)} | {'ok' if ok else 'UNEXPECTED'} |")
for w, r, d in crash: print(f"| | {w}: {r} | {d} | |")
sys.exit(0 if ok else 1)
PY
  [ $? -eq 0 ] || FAILED=1
  cp "$WORK/crash/results.json" "$OUT/crash-results.json" 2>/dev/null
fi
if want large; then
  nvidia-smi --query-gpu=memory.total,memory.used --format=csv >> "$LOG" 2>&1
  step "large_readers" 0 "$KVH" run cases/large_readers.toml --no-progress --timing-reps 0 --report-dir "$WORK/large"
  echo "| | $(counts "$WORK/large/results.json") | | |" >> "$SUMMARY"
  step "large_readers, planted_int32_offset" 1 "$KVP" run cases/large_readers.toml --no-progress --timing-reps 0 \
    --replace-kernel paged_attention_rocm=planted_int32_offset --report-dir "$WORK/large32"
  echo "| | $(counts "$WORK/large32/results.json") | | |" >> "$SUMMARY"
  cp "$WORK/large32/summary.md" "$OUT/large-int32-summary.md" 2>/dev/null
fi
if want shards; then
  t0=$EPOCHREALTIME
  CUDA_VISIBLE_DEVICES=0 "$KVH" run --shard 1/2 --no-progress --timing-reps 0 --report-dir "$WORK/s1" >> "$LOG" 2>&1 &
  p1=$!
  CUDA_VISIBLE_DEVICES=1 "$KVH" run --shard 2/2 --no-progress --timing-reps 0 --report-dir "$WORK/s2" >> "$LOG" 2>&1 &
  p2=$!
  wait $p1; r1=$?; wait $p2; r2=$?
  echo "| two shards on two GPUs at once | $r1 $r2 | $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }') s | |" >> "$SUMMARY"
  step "merge shards" 0 "$KVH" merge "$WORK/s1" "$WORK/s2" -o "$WORK/merged"
  [ -d "$WORK/iso" ] && step "compare merged vs unsharded" 0 "$KVH" compare "$WORK/iso" "$WORK/merged" --fail-on changes
fi
# Every run's results.json, for comparisons made elsewhere (the device tool brings back few files).
(cd "$WORK" && tar czf "$OUT/results.tgz" */results.json) 2>> "$LOG"
echo "" >> "$SUMMARY"; echo "exit: $FAILED" >> "$SUMMARY"
exit $FAILED
