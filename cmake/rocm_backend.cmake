# The `rocm` backend (KVH_BACKEND=rocm): CMake's HIP language compiles the
# .hip kernel sources with a ROCm-capable clang and links the HIP runtime
# (libamdhip64) through hip::host. Included from the root CMakeLists.txt in
# place of a bare enable_language(HIP), so that one preset builds against
# either of:
#
#   1. A ROCm install (/opt/rocm, or wherever $ROCM_PATH points): the HIP
#      compiler is <root>/llvm/bin/clang++, and CMake finds hip-lang and hip
#      under <root>/lib/cmake. This is the layout CMake's HIP support expects;
#      nothing below changes it.
#   2. The distribution's packages (Debian 12: hipcc, libamdhip64-dev,
#      rocm-device-libs of ROCm 5.2, clang-19/lld-19/llvm-19/clang-tools-19;
#      ci/bootstrap.sh --with-amd installs them). Three gaps are bridged,
#      each only when it is actually there:
#        - hipcc's clang (clang 15) predates gfx942, so the compiler is the
#          newest /usr/lib/llvm-N/bin/clang++ with N >= 17 (Debian has 19);
#        - Debian puts hip-lang-config.cmake under lib/<multiarch>/cmake,
#          where CMake 3.25 does not look (it wants <root>/lib/cmake/hip-lang):
#          a one-line forwarding config in the build tree points it there;
#        - clang 19 does not find Debian's device bitcode
#          (lib/<multiarch>/amdgcn/bitcode), and rocm-device-libs 5.2 has no
#          oclc_isa_version_942.bc: the build tree gets a bitcode folder that
#          links every distribution file and adds the missing
#          oclc_isa_version_<gfx>.bc, made from an existing one with its single
#          constant, __oclc_ISA_version (major*1000 + minor*100 + stepping,
#          gfx942 -> 9402), set for that target. Compiles get
#          --rocm-device-lib-path to it.
#      Debian's HIP runtime is 5.2, which predates code object version 5,
#      so device code is emitted as code object v4 there.
#
# Overrides, in order: -DCMAKE_HIP_COMPILER=... or $HIPCXX (a clang, never
# hipcc), then $ROCM_PATH, then /opt/rocm, then the distribution's compiler.
# CMAKE_HIP_ARCHITECTURES comes from the preset (gfx90a;gfx942); gfx950 needs
# a compiler and device libraries that know it (ROCm >= 6.3 / LLVM >= 20).
# Errors: FATAL_ERROR naming what is missing (no HIP compiler, no hip-lang
# config, no device bitcode, no llvm-dis/llvm-as to make a missing ISA file).
include_guard(GLOBAL)

set(_kvh_rocm_root "")
if(DEFINED ENV{ROCM_PATH} AND EXISTS "$ENV{ROCM_PATH}/lib/cmake/hip-lang/hip-lang-config.cmake")
  set(_kvh_rocm_root "$ENV{ROCM_PATH}")
elseif(EXISTS "/opt/rocm/lib/cmake/hip-lang/hip-lang-config.cmake")
  set(_kvh_rocm_root "/opt/rocm")
endif()

if(_kvh_rocm_root)
  # A ROCm install: its clang, its hip-lang, its device libraries.
  if(NOT CMAKE_HIP_COMPILER AND NOT DEFINED ENV{HIPCXX} AND EXISTS "${_kvh_rocm_root}/llvm/bin/clang++")
    set(CMAKE_HIP_COMPILER "${_kvh_rocm_root}/llvm/bin/clang++" CACHE FILEPATH "HIP compiler (ROCm clang)")
  endif()
  list(APPEND CMAKE_PREFIX_PATH "${_kvh_rocm_root}")
  message(STATUS "kvharness rocm: ROCm install at ${_kvh_rocm_root}")
else()
  # The distribution's packages.
  if(NOT CMAKE_HIP_COMPILER AND NOT DEFINED ENV{HIPCXX})
    foreach(_v 25 24 23 22 21 20 19 18 17)  # newest first
      if(EXISTS "/usr/lib/llvm-${_v}/bin/clang++")
        set(CMAKE_HIP_COMPILER "/usr/lib/llvm-${_v}/bin/clang++" CACHE FILEPATH "HIP compiler (distribution clang >= 17)")
        break()
      endif()
    endforeach()
    if(NOT CMAKE_HIP_COMPILER)
      message(FATAL_ERROR "kvharness rocm: no ROCm install ($ROCM_PATH, /opt/rocm) and no clang >= 17 under "
                          "/usr/lib/llvm-N/bin (gfx942 needs LLVM 17). On Debian 12: bash ci/bootstrap.sh --with-amd")
    endif()
  endif()
  find_path(KVH_HIP_LANG_DIR hip-lang-config.cmake
            PATH_SUFFIXES lib/cmake/hip-lang lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/hip-lang
            DOC "folder of the distribution's hip-lang-config.cmake")
  if(NOT KVH_HIP_LANG_DIR)
    message(FATAL_ERROR "kvharness rocm: hip-lang-config.cmake not found (Debian package libamdhip64-dev; "
                        "or set ROCM_PATH to a ROCm install)")
  endif()
  get_filename_component(_kvh_prefix "${KVH_HIP_LANG_DIR}/../../../.." ABSOLUTE)
  if(NOT EXISTS "${_kvh_prefix}/lib/cmake/hip-lang/hip-lang-config.cmake")
    # CMake 3.25 loads <rocm root>/lib/cmake/hip-lang only: forward from a build-tree root.
    set(_kvh_shim "${CMAKE_BINARY_DIR}/kvh-rocm-root")
    file(WRITE "${_kvh_shim}/lib/cmake/hip-lang/hip-lang-config.cmake"
         "# Written by cmake/rocm_backend.cmake: the distribution's hip-lang. Its dependency\n"
         "# amd_comgr sits beside it, where try_compile projects (no library architecture) do not look.\n"
         "if(NOT amd_comgr_DIR AND EXISTS \"${KVH_HIP_LANG_DIR}/../amd_comgr\")\n"
         "  set(amd_comgr_DIR \"${KVH_HIP_LANG_DIR}/../amd_comgr\")\n"
         "endif()\n"
         "include(\"${KVH_HIP_LANG_DIR}/hip-lang-config.cmake\")\n"
         "# Its include folder is ${_kvh_prefix}/include, a system folder: as -isystem it breaks\n"
         "# libstdc++'s #include_next <math.h>; clang adds the HIP headers itself (-idirafter).\n"
         "foreach(_t hip-lang::device hip-lang::amdhip64)\n"
         "  set_property(TARGET \${_t} PROPERTY INTERFACE_INCLUDE_DIRECTORIES \"\")\n"
         "  set_property(TARGET \${_t} PROPERTY INTERFACE_SYSTEM_INCLUDE_DIRECTORIES \"\")\n"
         "endforeach()\n")
    set(CMAKE_HIP_COMPILER_ROCM_ROOT "${_kvh_shim}")
  endif()
  message(STATUS "kvharness rocm: distribution HIP (hip-lang in ${KVH_HIP_LANG_DIR})")
  set(_kvh_hipcxx "${CMAKE_HIP_COMPILER}")
  if(NOT _kvh_hipcxx)
    separate_arguments(_kvh_hipcxx NATIVE_COMMAND "$ENV{HIPCXX}")
    list(GET _kvh_hipcxx 0 _kvh_hipcxx)
  endif()
  # Device bitcode: does the compiler find every architecture's libraries by itself?
  # Probe: a device-only compile of an empty file per architecture.
  set(_kvh_probe "${CMAKE_BINARY_DIR}/kvh-rocm-probe.hip")
  file(WRITE "${_kvh_probe}" "__global__ void kvh_probe() {}\n")
  set(_kvh_missing_archs "")
  foreach(_arch IN LISTS CMAKE_HIP_ARCHITECTURES)
    execute_process(COMMAND "${_kvh_hipcxx}" -x hip --offload-arch=${_arch} --cuda-device-only -c "${_kvh_probe}"
                            -o "${CMAKE_BINARY_DIR}/kvh-rocm-probe.o"
                    RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
    if(NOT _rc EQUAL 0)
      if(NOT _err MATCHES "cannot find ROCm device library")
        message(FATAL_ERROR "kvharness rocm: ${_kvh_hipcxx} cannot compile for ${_arch}:\n${_err}")
      endif()
      list(APPEND _kvh_missing_archs ${_arch})
    endif()
  endforeach()

  if(_kvh_missing_archs)
    find_path(KVH_DEVICE_BITCODE_DIR ocml.bc
              PATH_SUFFIXES lib/${CMAKE_LIBRARY_ARCHITECTURE}/amdgcn/bitcode amdgcn/bitcode lib/amdgcn/bitcode
              DOC "folder of the distribution's ROCm device bitcode (ocml.bc, oclc_*.bc)")
    if(NOT KVH_DEVICE_BITCODE_DIR)
      message(FATAL_ERROR "kvharness rocm: ${_kvh_hipcxx} finds no device libraries for "
                          "${_kvh_missing_archs} and no ocml.bc was found (Debian package rocm-device-libs)")
    endif()
    get_filename_component(_kvh_llvm_bin "${_kvh_hipcxx}" DIRECTORY)
    find_program(KVH_LLVM_DIS llvm-dis HINTS "${_kvh_llvm_bin}" NO_DEFAULT_PATH)
    find_program(KVH_LLVM_AS llvm-as HINTS "${_kvh_llvm_bin}" NO_DEFAULT_PATH)
    set(_kvh_bc "${CMAKE_BINARY_DIR}/kvh-device-bitcode")
    file(REMOVE_RECURSE "${_kvh_bc}")
    file(MAKE_DIRECTORY "${_kvh_bc}")
    file(GLOB _kvh_bc_files "${KVH_DEVICE_BITCODE_DIR}/*.bc")
    foreach(_f IN LISTS _kvh_bc_files)
      get_filename_component(_n "${_f}" NAME)
      file(CREATE_LINK "${_f}" "${_kvh_bc}/${_n}" SYMBOLIC)
    endforeach()
    foreach(_arch IN LISTS _kvh_missing_archs)
      # gfx<major><minor><stepping>, stepping a hex digit: gfx942 -> 942 / 9402, gfx90a -> 90a / 9010.
      if(NOT _arch MATCHES "^gfx([0-9]+)([0-9a-f])([0-9a-f])$")
        message(FATAL_ERROR "kvharness rocm: cannot read an ISA version from '${_arch}'")
      endif()
      set(_file "${_kvh_bc}/oclc_isa_version_${CMAKE_MATCH_1}${CMAKE_MATCH_2}${CMAKE_MATCH_3}.bc")
      if(EXISTS "${_file}")
        continue()
      endif()
      math(EXPR _ver "${CMAKE_MATCH_1} * 1000 + 0x${CMAKE_MATCH_2} * 100 + 0x${CMAKE_MATCH_3}")
      if(NOT KVH_LLVM_DIS OR NOT KVH_LLVM_AS)
        message(FATAL_ERROR "kvharness rocm: oclc_isa_version for ${_arch} is missing and llvm-dis/llvm-as "
                            "are not beside ${_kvh_hipcxx} (Debian package llvm-19)")
      endif()
      execute_process(COMMAND "${KVH_LLVM_DIS}" "${KVH_DEVICE_BITCODE_DIR}/oclc_isa_version_900.bc" -o -
                      OUTPUT_VARIABLE _ir RESULT_VARIABLE _rc)
      if(NOT _rc EQUAL 0 OR NOT _ir MATCHES "@__oclc_ISA_version = [^\n]* constant i32 9000,")
        message(FATAL_ERROR "kvharness rocm: ${KVH_DEVICE_BITCODE_DIR}/oclc_isa_version_900.bc is not the "
                            "one-constant module expected (llvm-dis exit ${_rc})")
      endif()
      string(REGEX REPLACE "(@__oclc_ISA_version = [^\n]* constant i32) 9000," "\\1 ${_ver}," _ir "${_ir}")
      file(WRITE "${_kvh_bc}/oclc_isa_version_${_arch}.ll" "${_ir}")
      execute_process(COMMAND "${KVH_LLVM_AS}" "${_kvh_bc}/oclc_isa_version_${_arch}.ll" -o "${_file}"
                      RESULT_VARIABLE _rc)
      if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "kvharness rocm: llvm-as failed on ${_kvh_bc}/oclc_isa_version_${_arch}.ll")
      endif()
      message(STATUS "kvharness rocm: made ${_file} (__oclc_ISA_version = ${_ver}) from the distribution's bitcode")
    endforeach()
    # Before enable_language(HIP): the compiler identification compiles device code too.
    string(APPEND CMAKE_HIP_FLAGS_INIT " --rocm-device-lib-path=${_kvh_bc}")
  endif()
endif()


enable_language(HIP)
find_package(hip REQUIRED CONFIG)
message(STATUS "kvharness rocm: HIP compiler ${CMAKE_HIP_COMPILER} (${CMAKE_HIP_COMPILER_VERSION}), "
               "HIP runtime ${hip_VERSION}, architectures ${CMAKE_HIP_ARCHITECTURES}")

# Code object v5 needs HIP runtime >= 5.5 (clang >= 17 emits v5 by default).
if(hip_VERSION VERSION_LESS 5.5)
  add_compile_options("$<$<COMPILE_LANGUAGE:HIP>:-mcode-object-version=4>")
endif()
