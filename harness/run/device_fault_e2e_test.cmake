# cmake -DKVH=kvharness -DOUT=dir -P device_fault_e2e_test.cmake, run from the source root (ctest does).
# KVH_INJECT_FAULT=3: the third device synchronize raises a sticky fault. The
# run must stop there: exit code 1, results.json with complete = false, the
# two verdicts before it and the CRASH of the third case.
file(REMOVE_RECURSE "${OUT}")
set(ENV{KVH_INJECT_FAULT} 3)
execute_process(
  COMMAND "${KVH}" run cases/default.toml --no-isolate --no-progress --timing-reps 0 --report-dir "${OUT}"
          --filter "kind=write,writer=reshape_and_cache_flash,layout=kv_first,block_size=16,dtype=bf16"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "exit ${rc}\n${out}${err}")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "expected exit code 1, got ${rc}")
endif()
if(NOT err MATCHES "run stopped: device fault in case")
  message(FATAL_ERROR "stderr does not say why the run stopped")
endif()
file(READ "${OUT}/results.json" j)
string(JSON complete GET "${j}" complete)
string(JSON n LENGTH "${j}" cases)
string(JSON v0 GET "${j}" cases 0 verdict)
string(JSON v2 GET "${j}" cases 2 verdict)
string(JSON stopped GET "${j}" stopped_because)
if(complete OR NOT n EQUAL 3 OR NOT v0 STREQUAL "PASS" OR NOT v2 STREQUAL "CRASH")
  message(FATAL_ERROR "results.json: complete=${complete} cases=${n} first=${v0} third=${v2}")
endif()
message(STATUS "stopped_because: ${stopped}")
