# The `cuda` backend (KVH_BACKEND=cuda): nvcc compiles the .hip kernel sources
# through kernels/runtime/cuda.h, and every executable is made self-contained
# for another machine with only a CUDA 13 driver and glibc (the H200 the
# `device` tool lends runs Ubuntu 24.04; the build runs here, on Debian 12):
#   - CUDA runtime linked statically (CUDA::cudart_static, CUDA_RUNTIME_LIBRARY Static);
#   - libstdc++ and libgcc linked statically (-static-libstdc++ -static-libgcc);
#   - fmt and toml++ used header-only (Debian's fmt::fmt and
#     tomlplusplus::tomlplusplus are shared libraries; both names are defined
#     here, before find_package, as header-only targets, so a CMakeLists that
#     links them needs no change);
#   - GoogleTest from Debian is static (libgtest.a), so tests stay enabled.
# nvcc also gets --expt-relaxed-constexpr (HIP's rule for constexpr functions).
# Included from the root CMakeLists.txt before any find_package. At the end
# of the configure step every EXECUTABLE target of the whole tree, wherever
# it was added, gets kvh_cuda_self_contained(); target kvh_check_self_contained
# (part of ALL) then checks each binary's NEEDED entries and glibc symbol
# versions with objdump and fails the build if anything else is needed.
include_guard(GLOBAL)

# nvcc: -DCMAKE_CUDA_COMPILER, then $CUDACXX, then PATH, then /usr/local/cuda.
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(KVH_NVCC nvcc HINTS /usr/local/cuda/bin)
  if(KVH_NVCC)
    set(CMAKE_CUDA_COMPILER "${KVH_NVCC}" CACHE FILEPATH "CUDA compiler")
  endif()
endif()
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures (H200: 90)")
endif()
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
# HIP-clang (and clang for CUDA) treat constexpr functions as __host__
# __device__; nvcc only does with this flag. Without it a plain constexpr
# helper used in a kernel (kernels/block_reduce.h) builds for rocm and cpu only.
add_compile_options($<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
# Test binaries are built here and may run on the GPU machine: list their
# tests when ctest runs, not at build time.
set(CMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE PRE_TEST)
# Newest glibc symbol version a binary may need (Ubuntu 24.04 has 2.39).
set(KVH_MAX_GLIBC "2.39" CACHE STRING "newest GLIBC_ symbol version the cuda binaries may require")

# Header-only fmt: both of the package's target names, so that its config
# file (which returns early when all its targets exist) defines nothing.
if(NOT TARGET fmt::fmt)
  find_path(KVH_FMT_INCLUDE_DIR fmt/format-inl.h REQUIRED)
  add_library(fmt::fmt-header-only INTERFACE IMPORTED)
  set_target_properties(fmt::fmt-header-only PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${KVH_FMT_INCLUDE_DIR}"
                                                        INTERFACE_COMPILE_DEFINITIONS "FMT_HEADER_ONLY=1")
  add_library(fmt::fmt INTERFACE IMPORTED)
  set_target_properties(fmt::fmt PROPERTIES INTERFACE_LINK_LIBRARIES fmt::fmt-header-only)
endif()
# Header-only toml++ (its config skips target creation when the target exists).
if(NOT TARGET tomlplusplus::tomlplusplus)
  find_path(KVH_TOMLPP_INCLUDE_DIR toml++/toml.h REQUIRED)
  add_library(tomlplusplus::tomlplusplus INTERFACE IMPORTED)
  set_target_properties(tomlplusplus::tomlplusplus PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${KVH_TOMLPP_INCLUDE_DIR}"
                                                              INTERFACE_COMPILE_DEFINITIONS "TOML_HEADER_ONLY=1")
endif()

# Makes one executable self-contained (see the top of this file). Called for
# every executable automatically; callable by hand for other targets.
function(kvh_cuda_self_contained target)
  set_property(TARGET ${target} PROPERTY CUDA_RUNTIME_LIBRARY Static)
  target_link_options(${target} PRIVATE
    $<$<LINK_LANGUAGE:CXX>:-static-libstdc++ -static-libgcc>
    $<$<LINK_LANGUAGE:CUDA>:-Xcompiler=-static-libstdc++,-static-libgcc>)
endfunction()

function(_kvh_targets_under dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _kvh_targets_under("${sub}" sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# Runs once the whole tree is configured (cmake_language(DEFER) below).
function(_kvh_cuda_finalize)
  _kvh_targets_under("${PROJECT_SOURCE_DIR}" targets)
  set(exes "")
  set(files "")
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "EXECUTABLE")
      kvh_cuda_self_contained(${t})
      list(APPEND exes ${t})
      list(APPEND files "$<TARGET_FILE:${t}>")
    endif()
  endforeach()
  if(NOT exes)
    return()
  endif()
  set(stamp "${CMAKE_BINARY_DIR}/kvh_self_contained.stamp")
  add_custom_command(
    OUTPUT "${stamp}"
    COMMAND "${CMAKE_COMMAND}" "-DKVH_OBJDUMP=${CMAKE_OBJDUMP}" "-DKVH_MAX_GLIBC=${KVH_MAX_GLIBC}"
            -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/check_self_contained.cmake" ${files}
    COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
    DEPENDS ${exes} "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/check_self_contained.cmake"
    COMMENT "Checking that the cuda binaries need only glibc and the CUDA driver"
    VERBATIM)
  add_custom_target(kvh_check_self_contained ALL DEPENDS "${stamp}")
endfunction()
cmake_language(DEFER DIRECTORY "${PROJECT_SOURCE_DIR}" CALL _kvh_cuda_finalize)
