# `cmake --install BUILD --prefix PREFIX`: what a serving image needs to run
# the harness without the source tree. The layout is fixed (not
# GNUInstallDirs' multiarch lib/), because the binary and the bridge find
# each other and the case files relative to themselves:
#   PREFIX/bin/kvharness
#   PREFIX/share/kvharness/cases/*.toml           the default case file (harness/cli.cpp looks here)
#   PREFIX/lib/kvharness/libkvh_python.so         the Python bridge (kernels/registry/registry.cpp looks here)
#   PREFIX/lib/kvharness/python/kvharness/        its Python package (providers/python/bridge.cpp
#   PREFIX/lib/kvharness/python/kvharness_*.py      puts this folder first on sys.path), the shipped providers
#   PREFIX/include/kvharness/provider.h           the provider ABI, for out-of-tree providers
#   PREFIX/share/doc/kvharness/                   README.md, docs/*.md, cases.md and python-bridge.md (cases/ and providers/python/ READMEs)
# Libraries found outside the build tree at link time (a ROCm install's
# libamdhip64) stay on the installed binaries' RUNPATH.
include_guard(GLOBAL)

set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(kvharness PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS kvharness RUNTIME DESTINATION bin)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/cases/ DESTINATION share/kvharness/cases FILES_MATCHING PATTERN "*.toml")
install(FILES ${PROJECT_SOURCE_DIR}/include/kvharness/provider.h DESTINATION include/kvharness)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/kvharness)
install(FILES ${PROJECT_SOURCE_DIR}/cases/README.md DESTINATION share/doc/kvharness RENAME cases.md)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/kvharness/docs FILES_MATCHING PATTERN "*.md")
if(TARGET kvh_python)
  set_target_properties(kvh_python PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS kvh_python LIBRARY DESTINATION lib/kvharness)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/providers/python/kvharness DESTINATION lib/kvharness/python
          FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
  install(FILES ${PROJECT_SOURCE_DIR}/providers/python/kvharness_torch.py
                ${PROJECT_SOURCE_DIR}/providers/python/kvharness_triton.py
          DESTINATION lib/kvharness/python)
  install(FILES ${PROJECT_SOURCE_DIR}/providers/python/README.md DESTINATION share/doc/kvharness RENAME python-bridge.md)
endif()
