#!/usr/bin/env bash
# Sanitizers and fuzzing (issue 7): fails on any ASan/UBSan report in the unit
# tests and on any crash, sanitizer report, uncaught exception, hang or
# oversized allocation the fuzzers find.
#   1. the `asan` preset (g++, -fsanitize=address,undefined, -O1 -g1):
#      configure, build, `ctest --preset asan` (its ASAN_OPTIONS and test
#      selection are in CMakePresets.json);
#   2. fuzz/ with clang++-19 and libFuzzer (cmake -S fuzz -B build/fuzz);
#      every input under fuzz/regressions/<target>/ is replayed, then each
#      target fuzzes for KVH_FUZZ_SECONDS (default 60) from its seeds:
#      case_file_fuzz from cases/*.toml, filter_fuzz from fuzz/corpus/filter.
#      New corpus units stay in build/fuzz/corpus/<target>; a failing input
#      is written to build/fuzz/artifacts/ (add it to fuzz/regressions/ and a
#      test once fixed: fuzz/README.md).
# Environment: KVH_FUZZ_SECONDS (per target), KVH_FUZZ_JOBS (parallel build
# jobs, default nproc), KVH_SKIP_ASAN=1 / KVH_SKIP_FUZZ=1 to run one half.
# Packages: ci/bootstrap.sh --with-fuzz (clang-19, libclang-rt-19-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${KVH_FUZZ_SECONDS:-60}
jobs=${KVH_FUZZ_JOBS:-$(nproc)}

if [ "${KVH_SKIP_ASAN:-0}" != 1 ]; then
  start=$SECONDS
  cmake --preset asan
  cmake --build --preset asan -j "$jobs"
  echo "sanitize: asan build $((SECONDS - start)) s" | tee -a "${KVH_CI_TIMES:-/dev/null}"
  start=$SECONDS
  ctest --preset asan -j "$jobs"
  echo "sanitize: asan ctest $((SECONDS - start)) s" | tee -a "${KVH_CI_TIMES:-/dev/null}"
fi

if [ "${KVH_SKIP_FUZZ:-0}" != 1 ]; then
  command -v clang++-19 >/dev/null || { echo "sanitize: clang++-19 missing; run ci/bootstrap.sh --with-fuzz" >&2; exit 2; }
  start=$SECONDS
  cmake -S fuzz -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19
  cmake --build build/fuzz -j "$jobs"
  echo "fuzz: build $((SECONDS - start)) s" | tee -a "${KVH_CI_TIMES:-/dev/null}"
  mkdir -p build/fuzz/artifacts
  for target in case_file_fuzz filter_fuzz; do
    name=${target%_fuzz}
    corpus=build/fuzz/corpus/$name
    mkdir -p "$corpus"
    seeds=()
    if [ "$name" = case_file ]; then cp cases/*.toml "$corpus"/; else seeds+=(fuzz/corpus/filter); fi
    # Regression inputs first (fuzzer finds and hand-written bound checks): each must run clean.
    if compgen -G "fuzz/regressions/$name/*" >/dev/null; then
      build/fuzz/$target -artifact_prefix="$root/build/fuzz/artifacts/" fuzz/regressions/$name/* ||
        { echo "fuzz: $target fails on an input of fuzz/regressions/$name/ (a fixed bug is back)" >&2; exit 1; }
      seeds+=("fuzz/regressions/$name")
    fi
    # -timeout: one input running 10 s is a hang; -rss_limit_mb (and the
    # malloc limit, which follows it): a small input must not need 2 GB.
    # The progress lines (NEW, REDUCE, pulse, NEW_FUNC) are dropped from the log.
    if ! build/fuzz/$target -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$root/build/fuzz/artifacts/" "$corpus" "${seeds[@]}" 2>&1 |
        grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)|^[[:space:]]*NEW_FUNC' | tee "build/fuzz/$name.log"; then
      echo "fuzz: $target failed; the input is in build/fuzz/artifacts/" >&2
      exit 1
    fi
  done
fi
