#!/usr/bin/env bash
# The rocm preset builds, here, without AMD hardware (CTest: rocm_preset_builds).
#
# Configures `cmake --preset rocm` into SCRATCH (not build/rocm) for gfx942
# (MI300) only and without the Python bridge, builds the two programs
# (kvharness and kvharness_planted: every kernel, fixture and planted-bug
# kernel, the host code they link; not the GoogleTest binaries, whose host
# code the cpu preset builds and runs), then checks the program it made:
#   - `ldd kvharness` resolves the HIP runtime (libamdhip64.so.N => a file);
#   - kvharness carries a gfx942 device code object (its offload bundle id,
#     "hipv4-amdgcn-amd-amdhsa--gfx942", is plain text in .hip_fatbin).
# One architecture: the preset's other one, gfx90a, is compiled (host and
# device) by hipcc in ci/amd_compile_check.sh; a second device pass here cost
# a third of CI's longest test. KVH_ROCM_ARCHS overrides ("gfx90a;gfx942").
# With KNOWN_BAD (a binary that is not a ROCm build, e.g. the cpu preset's
# kvharness), the same checks must reject it first, so a check that passes
# everything fails this test.
# Prints the configure and build times. Exits 1 on any failure, naming it.
#
# Usage: ci/rocm_build_test.sh SCRATCH [KNOWN_BAD_BINARY]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scratch="${1:?usage: rocm_build_test.sh SCRATCH [KNOWN_BAD_BINARY]}"
known_bad="${2:-}"
arch_list="${KVH_ROCM_ARCHS:-gfx942}"
IFS=';' read -ra archs <<<"$arch_list"

# check_rocm_binary FILE: 0 when FILE links the HIP runtime and has every arch's code object.
check_rocm_binary() {
  local bin="$1" ok=0 line
  line="$(ldd "$bin" 2>/dev/null | grep -E 'libamdhip64\.so(\.[0-9]+)* => /' || true)"
  if [ -z "$line" ]; then
    echo "rocm_build_test: $bin does not link the HIP runtime (no libamdhip64 in ldd)"
    ok=1
  else
    echo "rocm_build_test: ldd: $(echo "$line" | sed 's/^[[:space:]]*//')"
  fi
  local a
  for a in "${archs[@]}"; do
    if grep -a -q -E "amdgcn-amd-amdhsa-+${a}(\b|:)" "$bin"; then
      echo "rocm_build_test: $a code object present"
    else
      echo "rocm_build_test: $bin has no $a code object"
      ok=1
    fi
  done
  return $ok
}

if [ -n "$known_bad" ]; then
  if check_rocm_binary "$known_bad" >/dev/null; then
    echo "rocm_build_test: FAIL: the checks accept $known_bad, which is not a ROCm build" >&2
    exit 1
  fi
  echo "rocm_build_test: the checks reject the known-bad binary $known_bad"
fi

rm -rf "$scratch"
t0=$(date +%s)
# Host C++ (.cpp, g++) at -O0: this build is never run, and the cpu preset compiles the same
# sources at -O3; the .hip sources (HIP language: device code) keep the preset's -O3.
cmake -S "$root" -B "$scratch" --preset rocm -DKVH_PYTHON=OFF -DCMAKE_HIP_ARCHITECTURES="$arch_list" \
  -DCMAKE_CXX_FLAGS_RELEASE="-O0 -DNDEBUG" >"$scratch.configure.log" 2>&1 || {
  cat "$scratch.configure.log"; echo "rocm_build_test: FAIL: configure" >&2; exit 1; }
grep 'kvharness rocm:' "$scratch.configure.log" || true
t1=$(date +%s)
jobs="${KVH_ROCM_BUILD_JOBS:-$(nproc)}"
cmake --build "$scratch" -j "$jobs" --target kvharness kvharness_planted >"$scratch.build.log" 2>&1 || {
  grep -E -B2 -A20 'FAILED|error' "$scratch.build.log" | head -120
  echo "rocm_build_test: FAIL: build (full log: $scratch.build.log)" >&2; exit 1; }
t2=$(date +%s)
echo "rocm_build_test: configure $((t1 - t0)) s, build $((t2 - t1)) s (-j $jobs)"

check_rocm_binary "$scratch/harness/kvharness" || { echo "rocm_build_test: FAIL" >&2; exit 1; }
echo "rocm_build_test: PASS"
