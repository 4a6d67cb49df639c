#!/usr/bin/env bash
# Issue 9's GPU measurements in one session, on the GPU machine, from the
# repository root with a prebuilt build/cuda carried over:
#
#   OUT=/some/dir bash ci/gpu_time_to_verdict.sh [CPU_REPORTS_DIR]
#
#  1. the device helpers' tests on the GPU (host and device generators agree)
#  2. kvharness run cases/seed-pr.toml, 3 times (wall time, phases)
#  3. ci/seed_pr_torch.py, the same 12 cells as a plain torch script, 3 times
#  4. kvharness run cases/default.toml, 2 times
#  5. with CPU_REPORTS_DIR (holding default/, seed-pr/, random/ report sets of
#     the cpu backend, and random.toml): the random suite here, then
#     kvharness compare CPU GPU --fail-on changes for all three
# Everything printed goes to $OUT/time_to_verdict.log; summary lines (wall
# times) to $OUT/time_to_verdict.md.
set -uo pipefail
CPU=${1:+$(realpath -m "$1")}
OUT=$(realpath -m "${OUT:-./gpu-out}")
cd "$(dirname "$0")/.." || exit 2
mkdir -p "$OUT"
WORK=${WORK:-/tmp/kvh-ttv}
rm -rf "$WORK" && mkdir -p "$WORK"
KVH=${KVH:-build/cuda/harness/kvharness}
PY=${PY:-/opt/torch/.venv/bin/python}
LOG=$OUT/time_to_verdict.log
MD=$OUT/time_to_verdict.md
: >"$LOG"
echo "# time to verdict on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores" >"$MD"
timed() {  # timed NAME CMD...: runs CMD, logs it, appends "NAME: S s (rc R)" to the summary
  local name=$1
  shift
  local t0 t1 rc
  t0=$EPOCHREALTIME
  "$@" >>"$LOG" 2>&1
  rc=$?
  t1=$EPOCHREALTIME
  printf -- '- %s: %s s (rc %d)\n' "$name" "$(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")" "$rc" | tee -a "$MD"
}
echo "## device helpers' tests" >>"$LOG"
timed "harness_test DeviceCache/Parallel on the GPU" build/cuda/harness/harness_test --gtest_filter='DeviceCache.*:Parallel.*:Phases.*'
for i in 1 2 3; do
  timed "kvharness run cases/seed-pr.toml #$i" "$KVH" run cases/seed-pr.toml --no-progress --profile --report-dir "$WORK/seed-pr$i"
done
for i in 1 2 3; do
  timed "torch script (ci/seed_pr_torch.py) #$i" "$PY" ci/seed_pr_torch.py
done
for i in 1 2; do
  timed "kvharness run cases/default.toml #$i" "$KVH" run cases/default.toml --no-progress --profile --report-dir "$WORK/default$i"
done
cp "$WORK/seed-pr1/summary.md" "$OUT/seed-pr-summary.md"
cp "$WORK/default1/summary.md" "$OUT/default-summary.md"
if [ -n "$CPU" ]; then
  timed "kvharness run random.toml (1,000 random attention cases)" "$KVH" run "$CPU/random.toml" --no-progress --report-dir "$WORK/random"
  for s in default seed-pr random; do
    g=$WORK/$s
    [ "$s" = default ] && g=$WORK/default1
    [ "$s" = seed-pr ] && g=$WORK/seed-pr1
    timed "compare cpu vs gpu: $s" "$KVH" compare "$CPU/$s" "$g" --fail-on changes
    "$KVH" compare "$CPU/$s" "$g" --fail-on changes | tail -3 >>"$MD"
  done
fi
