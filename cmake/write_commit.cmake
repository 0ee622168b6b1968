# Writes OUT (a header defining SERENITY_GIT_COMMIT) from `git rev-parse` in
# SOURCE_DIR, rewriting it only when the commit changed, so that only
# common/version.cc recompiles after a new commit. Run at build time by the
# serenity_commit target (common/CMakeLists.txt).
set(commit "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --short=12 HEAD
                  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE out
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE result)
  if(result EQUAL 0 AND out)
    set(commit "${out}")
  endif()
endif()
set(text "#define SERENITY_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
