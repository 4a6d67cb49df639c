#!/usr/bin/env bash
# One GPU session, on the machine with the GPU (H200, Ubuntu 24.04, CUDA 13
# driver), from the repository root, with a prebuilt build/cuda carried over
# (the cuda binaries are self-contained: glibc and the CUDA driver only):
#
#   OUT=/some/dir bash ci/gpu_run.sh [CPU_DEFAULT_RESULTS_JSON] [CPU_SEEDPR_RESULTS_JSON]
#
# Steps, in this order (all run even when one fails; STEPS selects, default
# all of them; each call is self-contained, so a session can be split, e.g.
# STEPS="info tests seedpr bench compare", then STEPS="default compare"):
#   info     kvharness info (+ nvidia-smi when present)
#   tests    the cuda build's GoogleTest binaries (runner_test: timing, device
#            faults, bench byte counts, compare; harness_test: write cases)
#   default  kvharness run cases/default.toml
#   seedpr   kvharness run cases/seed-pr.toml
#   bench    kvharness bench (copy bandwidth, writers and decode readers)
#   compare  right after each suite whose CPU results.json was given:
#            kvharness compare CPU GPU --fail-on any (exit 1 on any verdict difference)
# Each run is timed with date +%s.%N. The device tool brings back at most 8
# files from $OUT, so reports are written to $WORK and only these are copied
# to $OUT (flat):
#   gpu_run.log            everything printed, in order
#   summary.md             per step: exit code and seconds; run totals; compare totals; bandwidth summary
#   default-results.json   seedpr-results.json   (gzip'ed if over 15 MB)
#   default-summary.md     seedpr-summary.md
#   bench.md               bench.json
# Exit code: 0 if every step succeeded and compare found no difference, else 1.
# Environment: OUT (default ./gpu-out), WORK (default /tmp/kvh-gpu-work; never
# inside $OUT), KVH (default build/cuda/harness/kvharness), STEPS, STEP_TIMEOUT
# (seconds per step, default 0 = none), BENCH_ARGS (extra bench options,
# e.g. "--quick" or "--kernel pa_fwd_asm"), RUN_ARGS (extra run options).
set -uo pipefail
CPU_DEFAULT=${1:+$(realpath -m "$1")}
CPU_SEEDPR=${2:+$(realpath -m "$2")}
OUT=$(realpath -m "${OUT:-./gpu-out}")
cd "$(dirname "$0")/.." || exit 2

mkdir -p "$OUT"
WORK=${WORK:-${TMPDIR:-/tmp}/kvh-gpu-work}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
KVH=${KVH:-build/cuda/harness/kvharness}
BUILD_DIR=$(dirname "$(dirname "$KVH")")
STEPS=${STEPS:-info tests default seedpr bench compare}
STEP_TIMEOUT=${STEP_TIMEOUT:-0}
LOG="$OUT/gpu_run.log"
SUMMARY="$OUT/summary.md"
: > "$LOG"
FAILED=0

log() { echo "$@" | tee -a "$LOG"; }
want() { [[ " $STEPS " == *" $1 "* ]]; }
secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# step NAME CMD...: runs CMD with its output in the log, records exit code and seconds.
step() {
  local name=$1
  shift
  log ""
  log "=== $name: $* ($(date -u +%FT%TZ))"
  local t0 rc
  t0=$(date +%s.%N)
  local out="$WORK/step-${name//[:\/]/_}.out"
  if [[ "$STEP_TIMEOUT" != 0 ]]; then
    timeout --signal=TERM --kill-after=30 "$STEP_TIMEOUT" "$@" 2>&1 | tee -a "$LOG" "$out"
  else
    "$@" 2>&1 | tee -a "$LOG" "$out"
  fi
  rc=${PIPESTATUS[0]}
  local s
  s=$(secs_since "$t0")
  log "=== $name: exit $rc after ${s}s"
  echo "| $name | $rc | $s |" >> "$WORK/steps.md"
  return "$rc"
}

: > "$WORK/steps.md"
rm -f "$WORK"/step-*.out
if [[ ! -x "$KVH" ]]; then
  log "gpu_run.sh: $KVH not found or not executable: build it with 'cmake --preset cuda && cmake --build --preset cuda' and carry build/cuda"
  exit 2
fi
log "gpu_run.sh on $(hostname) at $(date -u +%FT%TZ); OUT=$OUT WORK=$WORK KVH=$KVH STEPS='$STEPS'"
log "git: $(git rev-parse --short HEAD 2>/dev/null || echo unknown) $(git status --porcelain 2>/dev/null | wc -l) changed files"

if want info; then
  step info "$KVH" info || FAILED=1
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv 2>&1 | tee -a "$LOG"
  fi
fi

if want tests; then
  for t in "$BUILD_DIR/harness/runner_test" "$BUILD_DIR/harness/harness_test"; do
    if [[ -x "$t" ]]; then
      step "tests:$(basename "$t")" "$t" --gtest_brief=1 || FAILED=1
    else
      log "tests: $t not built, skipped"
    fi
  done
fi

# run_suite NAME CASE_FILE CPU_RESULTS_JSON: run, keep the files, compare with the CPU verdicts.
: > "$WORK/compare.md"
run_suite() {
  local name=$1 file=$2 cpu=$3
  rm -rf "${WORK:?}/$name"
  # shellcheck disable=SC2086  # RUN_ARGS is a list of options
  step "$name" "$KVH" run "$file" --no-progress --report-dir "$WORK/$name" ${RUN_ARGS:-} || FAILED=1
  [[ -f "$WORK/$name/summary.md" ]] && cp "$WORK/$name/summary.md" "$OUT/$name-summary.md"
  if [[ -f "$WORK/$name/results.json" ]]; then
    if (( $(stat -c %s "$WORK/$name/results.json") > 15 * 1024 * 1024 )); then
      gzip -9 -c "$WORK/$name/results.json" > "$OUT/$name-results.json.gz"
    else
      cp "$WORK/$name/results.json" "$OUT/$name-results.json"
    fi
  fi
  want compare || return 0
  if [[ -z "$cpu" ]]; then
    log "compare $name: no CPU results.json given, skipped"
    return 0
  fi
  if [[ ! -f "$cpu" || ! -f "$WORK/$name/results.json" ]]; then
    log "compare $name: missing $cpu or $WORK/$name/results.json"
    FAILED=1
    return 0
  fi
  step "compare:$name" "$KVH" compare "$cpu" "$WORK/$name/results.json" --fail-on any --max-only 50 || FAILED=1
  {
    echo "### $name: CPU vs GPU verdicts"
    echo '```'
    head -7 "$WORK/step-compare_$name.out"
    echo '```'
  } >> "$WORK/compare.md"
}
want default && run_suite default cases/default.toml "$CPU_DEFAULT"
want seedpr && run_suite seedpr cases/seed-pr.toml "$CPU_SEEDPR"

if want bench; then
  rm -rf "${WORK:?}/bench"
  # shellcheck disable=SC2086
  step bench "$KVH" bench --report-dir "$WORK/bench" ${BENCH_ARGS:-} || FAILED=1
  for f in bench.md bench.json; do [[ -f "$WORK/bench/$f" ]] && cp "$WORK/bench/$f" "$OUT/$f"; done
fi

{
  echo "# gpu_run.sh $(date -u +%FT%TZ)"
  echo
  "$KVH" info 2>&1 | head -6 | sed 's/^/    /'
  echo
  echo "| step | exit | seconds |"
  echo "| --- | --- | --- |"
  cat "$WORK/steps.md"
  echo
  for name in default seedpr; do
    [[ -f "$WORK/step-$name.out" ]] || continue
    echo "- $name: $(grep -E '^[0-9]+ cases: |run stopped' "$WORK/step-$name.out" | tr '\n' ' ')"
  done
  echo
  cat "$WORK/compare.md"
  if [[ -f "$WORK/bench/bench.md" ]]; then
    echo
    grep -E '^- \*\*copy bandwidth|^- \*\*stopped' "$WORK/bench/bench.md"
    sed -n '/^## Large sizes/,/^## Cache writers/p' "$WORK/bench/bench.md" | sed '$d'
  fi
} > "$SUMMARY" 2>&1
log ""
log "summary: $SUMMARY"
cat "$SUMMARY" >> "$LOG"
log "files in $OUT: $(find "$OUT" -maxdepth 1 -type f -printf '%f ')"
exit "$FAILED"
