# The case model's sources (library kvh_cases), relative to cases/: the one
# list that cases/CMakeLists.txt builds and fuzz/CMakeLists.txt builds again,
# instrumented (kvh_cases_fuzz). A new cases/*.cpp that is not a test goes here.
set(KVH_CASES_SOURCES
  layout.cpp model.cpp case.cpp case_file.cpp filter.cpp expectation.cpp route_boundaries.cpp keys.cpp dtype_names.cpp)
