#!/usr/bin/env bash
# Builds the cpu preset and runs every test through CTest: the README's test
# command; then the sanitizer tests and the fuzzers (ci/sanitize_and_fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/bootstrap.sh --with-amd --with-fuzz
cmake --preset cpu
cmake --build --preset cpu -j "$(nproc)"
ctest --preset cpu -j "$(nproc)"
bash ci/sanitize_and_fuzz.sh
