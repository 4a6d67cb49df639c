#!/usr/bin/env bash
# Builds the cpu preset and runs every test through CTest: the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/bootstrap.sh --with-amd
cmake --preset cpu
cmake --build --preset cpu -j "$(nproc)"
ctest --preset cpu -j "$(nproc)"
