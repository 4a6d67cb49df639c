# CTest (cmake -P): kvh_version's rules, and what this build's kvharness prints.
#   -DKVH=path/to/kvharness -DEXPECTED=the version this build was configured with -DWORK=scratch dir
# A directory outside any git checkout: "unknown (...)" without a given version, the given one with it;
# a given version wins in a checkout too; `kvharness --version` prints "kvharness EXPECTED".
include(${CMAKE_CURRENT_LIST_DIR}/kvh_version.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
get_filename_component(above ${WORK} DIRECTORY)
set(ENV{GIT_CEILING_DIRECTORIES} ${above})  # git must not find the checkout WORK lies in
kvh_version(v ${WORK} "")
if(NOT v MATCHES "^unknown \\(not a git checkout" OR v_IS_GIT)
  message(FATAL_ERROR "outside a checkout, no KVH_VERSION: got '${v}' (is_git ${v_IS_GIT}), want 'unknown (not a git checkout...'")
endif()
kvh_version(v ${WORK} "1.2.3-src")
if(NOT v STREQUAL "1.2.3-src" OR v_IS_GIT)
  message(FATAL_ERROR "outside a checkout, KVH_VERSION=1.2.3-src: got '${v}'")
endif()
unset(ENV{GIT_CEILING_DIRECTORIES})
kvh_version(v ${CMAKE_CURRENT_LIST_DIR} "given-wins")
if(NOT v STREQUAL "given-wins")
  message(FATAL_ERROR "KVH_VERSION=given-wins in a checkout: got '${v}'")
endif()
execute_process(COMMAND ${KVH} --version OUTPUT_VARIABLE out OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "kvharness ${EXPECTED}")
  message(FATAL_ERROR "kvharness --version: exit ${rc}, printed '${out}', want 'kvharness ${EXPECTED}'")
endif()
message(STATUS "ok: kvh_version rules; kvharness --version = '${out}'")
