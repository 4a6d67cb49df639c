#!/usr/bin/env bash
# `cmake --install` end to end (CTest: install_runs_from_prefix):
#   installs BUILD into OUT/prefix, checks the layout of cmake/install.cmake,
#   moves the prefix elsewhere (OUT/moved: the install is relocatable) and,
#   from an empty folder, runs moved/bin/kvharness with no case file: its
#   results.json must name moved/share/kvharness/cases/default.toml (not the
#   source tree's, not the working folder's). Known-bad: with that cases
#   folder hidden the same check must fail (the binary falls back to the
#   source tree). With the bridge built: `info --provider python:kvharness_torch`
#   from the moved prefix loads lib/kvharness/libkvh_python.so and the package
#   beside it and lists kvharness_torch's kernels.
# Usage: ci/install_test.sh BUILD_DIR OUT
set -uo pipefail
build="${1:?usage: install_test.sh BUILD_DIR OUT}"
out="${2:?usage: install_test.sh BUILD_DIR OUT}"
fail() { echo "install_test: FAIL: $*"; exit 1; }
rm -rf "$out"
mkdir -p "$out/elsewhere"
out="$(cd "$out" && pwd)"

cmake --install "$build" --prefix "$out/prefix" >"$out/install.log" 2>&1 || { cat "$out/install.log"; fail "cmake --install"; }
for f in bin/kvharness share/kvharness/cases/default.toml share/kvharness/cases/seed-pr.toml \
         include/kvharness/provider.h; do
  [ -f "$out/prefix/$f" ] || fail "PREFIX/$f not installed"
done
bridge=0
if grep -q 'libkvh_python.so' "$out/install.log"; then
  bridge=1
  for f in lib/kvharness/libkvh_python.so lib/kvharness/python/kvharness/__init__.py \
           lib/kvharness/python/kvharness/_bridge.py lib/kvharness/python/kvharness_torch.py; do
    [ -f "$out/prefix/$f" ] || fail "PREFIX/$f not installed"
  done
fi
mv "$out/prefix" "$out/moved"
kvh="$out/moved/bin/kvharness"

# case_files of a run of the default case file, from an empty folder: CASE_FILE or an error.
default_case_file() {
  (cd "$out/elsewhere" && "$kvh" run --filter 'id=write/Qwen3.5-397B-A17B/tp8/hd64/separate/bs16/fp16/n4/reshape_and_cache_flash/s1' \
     --report-dir "$out/elsewhere/$1" --no-progress >"$out/elsewhere/$1.log" 2>&1) || return 1
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["counts"]["pass"] == 1, d["counts"]; print(d["case_files"][0])' \
    "$out/elsewhere/$1/results.json"
}
want="$out/moved/share/kvharness/cases/default.toml"
got="$(default_case_file run)" || fail "the installed binary's default run ($out/elsewhere/run.log)"
[ "$got" = "$want" ] || fail "the installed binary ran '$got', expected '$want'"
echo "install_test: the moved binary runs its own default case file $got"

mv "$out/moved/share/kvharness/cases" "$out/moved/share/kvharness/cases.hidden"
got_bad="$(default_case_file run-hidden)"
mv "$out/moved/share/kvharness/cases.hidden" "$out/moved/share/kvharness/cases"
[ "$got_bad" != "$want" ] || fail "known-bad: with the cases hidden the check still sees '$want'"
echo "install_test: known-bad: with the installed cases hidden it runs '${got_bad:-nothing}', and the check notices"

# The bridge's interpreter is the one the build configured (CMakeCache), not the first python3 on PATH.
py="$(sed -n 's/^_\{0,1\}Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null | head -n 1)"
if [ "$bridge" = 1 ] && "${py:-python3}" -c 'import torch' 2>/dev/null; then
  (cd "$out/elsewhere" && env -u KVH_PYTHON_BRIDGE -u PYTHONPATH "$kvh" info --provider python:kvharness_torch) \
    >"$out/elsewhere/info.log" 2>&1 || { cat "$out/elsewhere/info.log"; fail "info --provider python:kvharness_torch from the prefix"; }
  grep -q "torch_reshape_and_cache_flash .*\[python:kvharness_torch\]" "$out/elsewhere/info.log" || fail "info lists no kvharness_torch kernel ($out/elsewhere/info.log)"
  echo "install_test: the installed bridge loads python:kvharness_torch"
fi
echo "install_test: PASS"
