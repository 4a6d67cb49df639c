# kvh_version(OUT SOURCE_DIR GIVEN): the version kvharness reports (`--version`, `info`,
# results.json's tool_version). GIVEN (the -DKVH_VERSION=... cache value) wins when set: a build
# from a source archive, which has no .git, or a packager's own string. Else `git describe
# --always --dirty --tags` of SOURCE_DIR, else "unknown (not a git checkout)".
# Sets OUT_IS_GIT to TRUE when the version came from git (the caller then re-configures on HEAD moves).
function(kvh_version out source_dir given)
  set(is_git FALSE)
  if(NOT given STREQUAL "")
    # The value becomes a C string literal through a compile definition: no quotes, backslashes, `$` or `;`.
    if(NOT given MATCHES "^[A-Za-z0-9 ._+:/~()@,=-]+$")
      message(FATAL_ERROR "KVH_VERSION='${given}': expected letters, digits, spaces and . _ + : / ~ ( ) @ , = - only")
    endif()
    set(v "${given}")
  else()
    execute_process(COMMAND git describe --always --dirty --tags WORKING_DIRECTORY ${source_dir}
                    OUTPUT_VARIABLE v OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR v STREQUAL "")
      set(v "unknown (not a git checkout; configure with -DKVH_VERSION=...)")
    else()
      set(is_git TRUE)
    endif()
  endif()
  set(${out} "${v}" PARENT_SCOPE)
  set(${out}_IS_GIT ${is_git} PARENT_SCOPE)
endfunction()
