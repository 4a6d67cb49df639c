#!/usr/bin/env bash
# The Python providers on a GPU machine, in one call (issue 8's GPU evidence):
# builds the bridge alone against that machine's Python (the serving-image
# recipe of providers/python/README.md), then runs cases/triton.toml with
# kvharness_triton and cases/python.toml with kvharness_torch, and times the
# bridge on empty kernels. Run from the repository root with a prebuilt
# build/cuda/harness/kvharness (cmake --preset cuda && cmake --build --preset cuda).
# Env: OUT (reports land in $OUT/triton, $OUT/python, $OUT/bench), PY (the Python
# holding torch and triton; default /opt/torch/.venv/bin/python, else python3).
set -uo pipefail
OUT=${OUT:-reports/gpu-providers}
PY=${PY:-/opt/torch/.venv/bin/python}
[ -x "$PY" ] || PY=$(command -v python3)
KVH=${KVH:-build/cuda/harness/kvharness}
export PATH="$(dirname "$PY"):$PATH"
mkdir -p "$OUT"
echo "== bridge: cmake -S providers/python -B build/bridge (Python $PY)"
cmake -S providers/python -B build/bridge -DPython3_EXECUTABLE="$PY" > build-bridge.log 2>&1 \
  && cmake --build build/bridge >> build-bridge.log 2>&1 || { tail -30 build-bridge.log; exit 1; }
export KVH_PYTHON_BRIDGE=$PWD/build/bridge/libkvh_python.so
"$KVH" info --provider python:kvharness_triton | sed -n '1,8p'
rc=0
for suite in triton:kvharness_triton python:kvharness_torch; do
  name=${suite%%:*}; module=${suite#*:}
  echo "== kvharness run cases/$name.toml --provider python:$module"
  start=$SECONDS
  "$KVH" run "cases/$name.toml" --provider "python:$module" --report-dir "$OUT/$name" --no-progress --heartbeat 30
  r=$?; [ $r -eq 0 ] || rc=1
  echo "exit $r in $((SECONDS - start)) s"
done
echo "== bridge overhead: empty kernels, median of 2000 calls"
"$KVH" bench --quick --reps 2000 --provider python:providers/python/testing/kvharness_empty.py \
  --kernel fixture_empty_python_writer --kernel fixture_empty_python_reader --report-dir "$OUT/bench" \
  | grep -E "empty_python|kernel" ; rm -f "$OUT/bench/bench.json"
exit $rc
