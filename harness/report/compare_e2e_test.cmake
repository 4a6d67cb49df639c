# cmake -DKVH=kvharness -DOUT=dir -P compare_e2e_test.cmake: `kvharness compare`
# as a CI gate sees it, through the command line: its exit codes (0 no gating
# difference, 1 a gating difference, 2 an input or usage error) and what it prints.
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}/empty")
set(head "\"schema\": \"kvharness.results/1\", \"backend\": \"cpu\", \"complete\": true")
file(WRITE "${OUT}/a.json" "{${head}, \"cases\": [
  {\"id\": \"x\", \"verdict\": \"PASS\", \"head_size\": 128, \"kernel_us\": 10.0},
  {\"id\": \"y\", \"verdict\": \"PASS\", \"head_size\": 256, \"kernel_us\": 10.0}]}")
# B: y regressed, x is twice as slow, z is new.
file(WRITE "${OUT}/b.json" "{${head}, \"cases\": [
  {\"id\": \"x\", \"verdict\": \"PASS\", \"head_size\": 128, \"kernel_us\": 20.0},
  {\"id\": \"y\", \"verdict\": \"FAIL\", \"reason\": \"mismatch\", \"head_size\": 256},
  {\"id\": \"z\", \"verdict\": \"PASS\", \"head_size\": 128}]}")
file(WRITE "${OUT}/summary.md" "# not a results file\n")

function(expect want pattern)  # expect(<exit code> <regex the output must match> <compare arguments>...)
  execute_process(COMMAND "${KVH}" compare ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL want OR NOT "${out}${err}" MATCHES "${pattern}")
    message(FATAL_ERROR "compare ${ARGN}: exit ${rc} (expected ${want}), output should match '${pattern}':\n${out}${err}")
  endif()
endfunction()
set(A "${OUT}/a.json")
set(B "${OUT}/b.json")
expect(0 "no gating difference" ${A} ${A})
expect(1 "REGRESSED.*y: PASS -> FAIL mismatch" ${A} ${B})
expect(0 "ONLY IN B \\(1\\):\n  z" ${A} ${B} --filter head_size=128)
expect(1 "ONLY IN B" ${A} ${B} --filter head_size=128 --fail-on any)
expect(1 "x: 10.00 us -> 20.00 us \\(2.00x\\)" ${A} ${B} --filter head_size=128 --kernel-us-threshold 1.5)
expect(2 "summary.md: not JSON.*kvharness.results/1" ${A} "${OUT}/summary.md")
expect(2 "empty: a directory without results.json" "${OUT}/empty" ${B})
expect(2 "--filter: .*unknown key 'colour'" ${A} ${B} --filter colour=red)
expect(2 "--fail-on" ${A} ${B} --fail-on regression)
