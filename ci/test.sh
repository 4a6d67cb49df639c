#!/usr/bin/env bash
# Builds the cpu preset and runs every test through CTest: the README's test
# command; then the harness's speed on the default suite (kvharness bench
# --suite), the sanitizer tests and the fuzzers (ci/sanitize_and_fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/bootstrap.sh --with-amd --with-fuzz
cmake --preset cpu
cmake --build --preset cpu -j "$(nproc)"
ctest --preset cpu -j "$(nproc)"
# The harness's own speed on the gate suite, in the log (a benchmark, not a timed test).
./build/cpu/harness/kvharness bench --suite cases/default.toml --report-dir build/cpu/bench-suite
bash ci/sanitize_and_fuzz.sh
