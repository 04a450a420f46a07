# program_env.cmake — the environment of tests that run unmodified programs
# (ibverbs-utils, perftest, rdmacm-utils) over softrnic's libraries:
# SR_PROG_ENV for set_tests_properties(... ENVIRONMENT), and
# SR_PRELOAD_MISSING when a sanitizer build cannot find its runtime.
# A sanitized libibverbs.so.1 inside an unsanitized program needs the
# sanitizer runtime loaded first: find it and pass it as SOFTRNIC_PRELOAD.
# If it cannot be found the program tests are skipped (exit 77) with that
# reason rather than failing for a reason unrelated to the code.
set(SR_PRELOAD "")
set(SR_PRELOAD_MISSING FALSE)
if(SOFTRNIC_SANITIZE)
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
                    OUTPUT_VARIABLE SR_PRELOAD OUTPUT_STRIP_TRAILING_WHITESPACE)
  else()
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                    OUTPUT_VARIABLE SR_PRELOAD OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  if(NOT IS_ABSOLUTE "${SR_PRELOAD}" OR NOT EXISTS "${SR_PRELOAD}")
    set(SR_PRELOAD_MISSING TRUE)
  endif()
endif()
# Leak reports from the unmodified programs' own allocations are not ours.
set(SR_PROG_ENV "SOFTRNIC_PRELOAD=${SR_PRELOAD}" "ASAN_OPTIONS=detect_leaks=0")
