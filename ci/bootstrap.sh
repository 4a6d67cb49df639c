#!/usr/bin/env bash
# Installs what kvharness needs to build and run on a fresh Debian 12 machine
# (with --with-amd, what the test suite's AMD compile check needs; with
# --with-fuzz, clang-19 and its libFuzzer/sanitizer runtimes for
# ci/sanitize_and_fuzz.sh).
# Idempotent: packages already present are left alone.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libgtest-dev libgmock-dev        # GoogleTest 1.12
  libeigen3-dev                    # Eigen 3.4: references
  libfmt-dev                       # fmt 9: the shared libfmt (header-only in the cuda preset)
  libcli11-dev                     # CLI11 2.1
  libtomlplusplus-dev              # toml++ 3.3: case files
  nlohmann-json3-dev               # nlohmann-json 3.11: reports
  libboost-fiber-dev libboost-context-dev  # Boost.Fiber 1.74: the cpu backend's SIMT runtime
  python3-dev pybind11-dev libdlpack-dev   # the Python provider bridge (providers/python)
  python3-torch python3-numpy              # torch 1.13 (CPU): kvharness_torch and the bridge's tests
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "bootstrap: all packages present"
fi

# The CI tooling of the test suite: headless Chromium (ci/nightly_test.sh opens
# the nightly page), Node.js and npm (the workflow linter, ci/tools/package.json,
# installed from the npm registry at the versions of ci/tools/package-lock.json).
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
tools=()
command -v chromium >/dev/null 2>&1 || tools+=(chromium fonts-dejavu-core)
command -v npm >/dev/null 2>&1 || tools+=(nodejs npm)
if ((${#tools[@]})); then
  echo "bootstrap: installing ${tools[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${tools[@]}"
fi
if [ ! -x "$(dirname "$0")/tools/node_modules/.bin/action-validator" ]; then
  echo "bootstrap: npm ci in ci/tools (the workflow linter)"
  npm ci --prefix "$(dirname "$0")/tools" --no-audit --no-fund --loglevel=error
fi

# With --with-amd (the test suite): the AMD compile check's and the rocm
# preset's toolchain (Debian hipcc 5.2 with clang 15, the HIP 5.2 runtime,
# ROCm device libraries, clang/lld/llvm 19 for gfx942).
for flag in "$@"; do
  case "$flag" in
    --with-amd) bash "$(dirname "$0")/amd_compile_check.sh" --install-only ;;
    --with-fuzz)  # libFuzzer and the clang sanitizer runtimes are in libclang-rt-19-dev
      for p in clang-19 libclang-rt-19-dev; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
        SUDO=""
        [ "$(id -u)" -eq 0 ] || SUDO=sudo
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang-19 libclang-rt-19-dev
        break
      done ;;
    *) echo "bootstrap: unknown flag '$flag'; expected --with-amd or --with-fuzz" >&2; exit 2 ;;
  esac
done
