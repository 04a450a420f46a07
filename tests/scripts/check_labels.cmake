# check_labels.cmake — fails when a test of the build carries none of the
# six labels of tests/labels.cmake (pure, path, e2e, sim, interop, bench),
# or has a name outside <folder>_<what>.
#   cmake -DCTEST=<ctest> -DBUILD=<build dir> -P check_labels.cmake
# Asks CTest itself (`ctest -N`, with -LE for the tests none of whose
# labels is one of the six), so it sees the tests as CTest will run them,
# whatever folders were built.
cmake_minimum_required(VERSION 3.20)
set(six "^(pure|path|e2e|sim|interop|bench)$")

function(test_names out)
  execute_process(COMMAND ${CTEST} -N ${ARGN} WORKING_DIRECTORY ${BUILD}
                  OUTPUT_VARIABLE text RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ctest -N ${ARGN} in ${BUILD} failed (${rc}): ${err}")
  endif()
  string(REGEX MATCHALL "Test +#[0-9]+: [^\n]+" lines "${text}")
  set(names "")
  foreach(l ${lines})
    string(REGEX REPLACE "Test +#[0-9]+: " "" n "${l}")
    list(APPEND names "${n}")
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

test_names(all)
test_names(unlabelled -LE "${six}")
set(badnames "")
foreach(n ${all})
  # <folder>_<what>: a lower-case folder, then letters (a program's flag
  # may be upper case, as perftest's -R), digits and underscores.
  if(NOT n MATCHES "^[a-z0-9]+_[A-Za-z0-9_]+$")
    list(APPEND badnames ${n})
  endif()
endforeach()
foreach(n ${unlabelled})
  message("no pure/path/e2e/sim/interop/bench label: ${n}")
endforeach()
foreach(n ${badnames})
  message("name not <folder>_<what>: ${n}")
endforeach()
list(LENGTH all nall)
if(unlabelled OR badnames OR nall EQUAL 0)
  message(FATAL_ERROR "tests_labelled: ${nall} tests; see tests/labels.cmake for the rule")
endif()
message("tests_labelled: ${nall} tests, each labelled one of pure, path, e2e, sim, interop, bench")
