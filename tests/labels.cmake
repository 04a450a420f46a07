# labels.cmake — the labels every CTest test carries (at least one of the
# six below; tests/scripts/check_labels.cmake, CTest `tests_labelled`,
# fails on a test without), and softrnic_labels() to give them.  Included by
# each tests/*/CMakeLists.txt, which labels its tests at its end.
#
# The rule (docs/testing.md):
#   pure     no runtime, no sockets: unit tests of pure code, parsers,
#            state machines, and the transport over in-process simulated
#            links (tests/rnic, tests/cm: ports/pair, cm_link);
#   path     opens a softrnic device or moves packets through the runtime's
#            transport (UDP or host-local): anything whose outcome could
#            change with SOFTRNIC_LOCAL=0 / packets / 1.  CI runs these in
#            every transport mode, so when in doubt a test is `path`;
#   e2e      runs programs end to end: perftest, rping, the CLI, scripts;
#   sim      the simulator (src/sim);
#   interop  against another implementation (kernel captures, scapy,
#            tshark, rxe);
#   bench    benchmark-like: it measures.
# Tests that assert on rates or wall-clock times, or load the machine
# enough to upset those that do, are also RUN_SERIAL (SERIAL below), so
# that `ctest -j2` stays safe.  Other labels (the folder's name,
# `congestion`, `no_sanitize`, ...) stay beside these: scripts select on
# them.
#
# Test names are <folder>_<what>, in lower case with underscores.
include_guard(GLOBAL)

# softrnic_labels(LABELS label... TESTS test... [SERIAL])
# Appends the labels to each test of this folder that exists (tests are
# added only when their targets are built); SERIAL sets RUN_SERIAL.
function(softrnic_labels)
  cmake_parse_arguments(A "SERIAL" "" "LABELS;TESTS" ${ARGN})
  set(six pure path e2e sim interop bench)
  foreach(l ${A_LABELS})
    if(NOT l IN_LIST six)
      message(FATAL_ERROR "softrnic_labels: \"${l}\" is not one of ${six}")
    endif()
  endforeach()
  foreach(t ${A_TESTS})
    if(TEST ${t})
      set_property(TEST ${t} APPEND PROPERTY LABELS ${A_LABELS})
      if(A_SERIAL)
        set_property(TEST ${t} PROPERTY RUN_SERIAL TRUE)
      endif()
    endif()
  endforeach()
endfunction()
