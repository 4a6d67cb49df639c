#!/usr/bin/env bash
# AMD compile check, without AMD hardware (DESIGN.md, "AMD compile check").
#
# For every kernel source (every .hip file under kernels/ but the planted-bug
# kernels of kernels/testing/, which rocm_preset_builds compiles):
#   - Debian's hipcc (clang 15, ROCm 5.2 device libraries linked) compiles it
#     for gfx90a (host and device) and for gfx940 (device only), with
#     -Rpass-analysis=kernel-resource-usage; the remarks give per-kernel VGPRs,
#     SGPRs, LDS, scratch and spills (the realistic figures);
#   - clang++-19 emits gfx942 assembly with -nogpulib --cuda-device-only -S;
#     every kernel hipcc saw must be in it, and its metadata
#     (.vgpr_count, ...) is read too (inflated: device-library calls are
#     external with -nogpulib).
# Writes OUT/resources.md and OUT/resources.json, prints the table, keeps each
# compiler's output under OUT/logs/. Exits 1 if any compile fails (its error
# output is shown) or a kernel is missing from the gfx942 assembly, 2 on bad
# usage or a missing toolchain.
#
# kernels/device/device.hip (host-side runtime glue, no kernels) is compiled too: it
# is part of every HIP build, so a HIP-portability break there matters as much
# as one in a kernel; it simply contributes no rows.
#
# Usage: ci/amd_compile_check.sh [--out DIR] [--jobs N] [--no-install] [--src FILE...]
#        ci/amd_compile_check.sh --install-only
# Sourcing this file defines kvh_install_amd_toolchain (for ci/bootstrap.sh)
# and runs nothing.

kvh_amd_toolchain_present() {
  command -v hipcc >/dev/null 2>&1 && command -v clang++-19 >/dev/null 2>&1 &&
    command -v python3 >/dev/null 2>&1 && command -v c++filt >/dev/null 2>&1 &&
    [ -f /usr/include/hip/hip_runtime.h ] &&
    [ -f /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc ] &&
    [ -f /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/oclc_isa_version_940.bc ] &&
    [ -x /usr/lib/llvm-19/bin/ld.lld ] && [ -x /usr/lib/llvm-19/bin/llvm-as ] &&
    [ -x /usr/lib/llvm-19/bin/clang-offload-bundler ] &&
    [ -f /usr/lib/x86_64-linux-gnu/cmake/amd_comgr/amd_comgr-config.cmake ] &&
    ls /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.builtins-x86_64.a >/dev/null 2>&1
}

# Installs what the check needs, idempotently (Debian bookworm packages):
#   hipcc            /usr/bin/hipcc 5.2, pulls clang-15, lld-15 and libamdhip64-dev
#                    (/usr/include/hip), rocminfo
#   rocm-device-libs ocml/ockl/oclc_* bitcode, gfx90a and gfx940 included (not gfx942)
#   clang-19         the gfx942-capable compiler
#   python3, binutils (c++filt) for the report
# and for the rocm preset's build (cmake/rocm_backend.cmake, ci/rocm_build_test.sh):
#   lld-19, llvm-19 (llvm-dis/llvm-as), clang-tools-19 (clang-offload-bundler),
#   libclang-rt-19-dev (clang_rt.builtins, which hip-lang links), libamdhip64-dev,
#   libamd-comgr-dev, libhsa-runtime-dev (hip-lang's CMake dependencies)
kvh_install_amd_toolchain() {
  if kvh_amd_toolchain_present; then return 0; fi
  echo "amd_compile_check: installing hipcc, rocm-device-libs, clang-19 (Debian packages)" >&2
  export DEBIAN_FRONTEND=noninteractive
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq >/dev/null || return 1
  $sudo apt-get install -y -qq --no-install-recommends hipcc rocm-device-libs clang-19 python3 binutils \
    lld-19 llvm-19 clang-tools-19 libclang-rt-19-dev libamdhip64-dev libamd-comgr-dev libhsa-runtime-dev >/dev/null ||
    return 1
  kvh_amd_toolchain_present
}

if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
  return 0 2>/dev/null  # sourced: only the functions above
fi

set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

usage() {
  sed -n '/^# Usage:/,/^# and runs nothing/p' "$0" | sed 's/^# \{0,1\}//'
}

out="$root/reports/amd-compile"
jobs="$(nproc 2>/dev/null || echo 2)"
install=1
srcs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { usage >&2; exit 2; }; out="$2"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --jobs) [ $# -ge 2 ] || { usage >&2; exit 2; }; jobs="$2"; shift 2 ;;
    --no-install) install=0; shift ;;
    --install-only) kvh_install_amd_toolchain; exit $? ;;
    --src)
      shift
      while [ $# -gt 0 ] && [[ "$1" != --* ]]; do srcs+=("$1"); shift; done
      ;;
    -h|--help) usage; exit 0 ;;
    *) echo "amd_compile_check: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

if [ "$install" = 1 ]; then
  kvh_install_amd_toolchain || { echo "amd_compile_check: toolchain install failed" >&2; exit 2; }
elif ! kvh_amd_toolchain_present; then
  echo "amd_compile_check: hipcc / clang++-19 / ROCm device libs missing (run without --no-install)" >&2
  exit 2
fi

# Absolute paths before changing directory.
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
out="$(abs "$out")"
for i in "${!srcs[@]}"; do
  [ -f "${srcs[$i]}" ] || { echo "amd_compile_check: no such file: ${srcs[$i]}" >&2; exit 2; }
  srcs[$i]="$(abs "${srcs[$i]}")"
done
cd "$root"
if [ ${#srcs[@]} -eq 0 ]; then
  # Every .hip under kernels/ but testing/: kernels, fixtures, device.hip. The
  # planted-bug kernels of testing/ are the same templates with one rule
  # swapped; the rocm preset's build (rocm_preset_builds) compiles them for
  # gfx90a and gfx942, and three more compiles each here doubled CI's AMD time.
  while IFS= read -r f; do srcs+=("$root/$f"); done < <(find kernels -name '*.hip' -type f -not -path 'kernels/testing/*' | LC_ALL=C sort)
fi
[ ${#srcs[@]} -gt 0 ] || { echo "amd_compile_check: no kernel sources found" >&2; exit 2; }

start=$(date +%s.%N)
logs="$out/logs"
mkdir -p "$out"
rm -rf "$logs"
mkdir -p "$logs"

# Flags shared by both compilers: the project's Release level, the HIP backend.
common=(-std=c++17 -O3 -DKVH_BACKEND_HIP -I kernels -I kernels/runtime -I include)

# One compile: TARGET SRC TAG. Writes TAG.cmd, TAG.log (stdout+stderr), TAG.rc.
compile_one() {
  local target="$1" src="$2" tag="$3"
  local cmd
  case "$target" in
    gfx90a)  # host and device: the launchers must build for HIP too
      cmd=(hipcc --offload-arch="$target" "${common[@]}" -Rpass-analysis=kernel-resource-usage
           -c "$src" -o "$tag.o") ;;
    gfx940)  # device only: the host side was just compiled for gfx90a
      cmd=(hipcc --offload-arch="$target" --cuda-device-only "${common[@]}" -Rpass-analysis=kernel-resource-usage
           -c "$src" -o "$tag.o") ;;
    gfx942)
      cmd=(clang++-19 -x hip --offload-arch=gfx942 --rocm-path=/usr -nogpulib --cuda-device-only -S
           "${common[@]}" "$src" -o "$tag.s") ;;
  esac
  printf '%q ' "${cmd[@]}" >"$tag.cmd"
  local rc=0
  "${cmd[@]}" >"$tag.log" 2>&1 || rc=$?
  echo "$rc" >"$tag.rc"
}

manifest="$logs/manifest.tsv"
: >"$manifest"
running=0
for src in "${srcs[@]}"; do
  rel="${src#"$root"/}"
  stem="$(printf '%s' "$rel" | sed 's#^/##; s#[/ ]#__#g')"
  for target in gfx90a gfx940 gfx942; do
    tag="$logs/$stem.$target"
    printf '%s\t%s\t%s\n' "$rel" "$target" "$tag" >>"$manifest"
    compile_one "$target" "$src" "$tag" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  done
done
wait

compile_s=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
python3 "$here/amd_compile_report.py" --manifest "$manifest" --out "$out" --root "$root" --elapsed "$compile_s"
