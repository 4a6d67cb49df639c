#!/usr/bin/env bash
# Builds the cpu preset and runs every test through CTest: the README's test
# command; then the harness's speed on every shipped suite (kvharness bench
# --suite all, an eighth of it), the sanitizer tests and the fuzzers (ci/sanitize_and_fuzz.sh).
# Each stage's wall time is printed when it ends and all of them again at the
# end (also when a stage fails), so that a CI log's tail says where the time went.
set -euo pipefail
cd "$(dirname "$0")/.."
export KVH_CI_TIMES="${KVH_CI_TIMES:-$PWD/build/ci-stage-times.txt}"
mkdir -p build && : >"$KVH_CI_TIMES"
trap 'echo "ci: stage times (s):"; cat "$KVH_CI_TIMES"; echo "ci: total $SECONDS s"' EXIT
# stage NAME COMMAND...: runs COMMAND, records its wall time under NAME.
stage() {
  local name=$1 t0=$SECONDS
  shift
  "$@"
  echo "  $name $((SECONDS - t0))" | tee -a "$KVH_CI_TIMES"
}
stage bootstrap bash ci/bootstrap.sh --with-amd --with-fuzz
stage configure cmake --preset cpu
stage build cmake --build --preset cpu -j "$(nproc)"
stage ctest ctest --preset cpu -j "$(nproc)"
# The harness's own speed on an eighth of every shipped suite, in the log (a benchmark, not a timed test).
stage bench ./build/cpu/harness/kvharness bench --suite all --shard 1/8 --report-dir build/cpu/bench-suite
stage sanitize_and_fuzz bash ci/sanitize_and_fuzz.sh
