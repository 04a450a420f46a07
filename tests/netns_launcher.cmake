# netns_launcher.cmake — every CTest test starts through
# scripts/test_netns.sh, which gives it a network namespace of its own when
# the run allows (scripts/run_ctest.sh sets SOFTRNIC_TEST_NETNS=1): its own
# loopback, 127.0.0.N addresses, UDP port 4791 and softrnic's loopback CM
# port space.  So `ctest -j2` can run two tests at once although many bind
# fixed addresses and ports.  Outside run_ctest.sh the script only execs
# the test.
#
# How: add_test is wrapped (CMake keeps the original as _add_test); the
# launcher goes in front of the command, and a command naming an executable
# target is given as that target's file, which CMake would otherwise have
# resolved itself.  Included by the top-level CMakeLists.txt before any
# folder adds a test.
include_guard(GLOBAL)
set(SOFTRNIC_TEST_LAUNCHER ${CMAKE_SOURCE_DIR}/scripts/test_netns.sh)

function(add_test)
  if(NOT ARGV0 STREQUAL "NAME")
    _add_test(${ARGV})
    return()
  endif()
  cmake_parse_arguments(T "COMMAND_EXPAND_LISTS" "NAME;WORKING_DIRECTORY" "COMMAND;CONFIGURATIONS" ${ARGN})
  list(GET T_COMMAND 0 first)
  list(REMOVE_AT T_COMMAND 0)
  if(TARGET ${first})
    set(first $<TARGET_FILE:${first}>)
  endif()
  set(extra "")
  if(DEFINED T_WORKING_DIRECTORY)
    list(APPEND extra WORKING_DIRECTORY ${T_WORKING_DIRECTORY})
  endif()
  if(DEFINED T_CONFIGURATIONS)
    list(APPEND extra CONFIGURATIONS ${T_CONFIGURATIONS})
  endif()
  if(T_COMMAND_EXPAND_LISTS)
    list(APPEND extra COMMAND_EXPAND_LISTS)
  endif()
  _add_test(NAME ${T_NAME} COMMAND ${SOFTRNIC_TEST_LAUNCHER} ${first} ${T_COMMAND} ${extra})
endfunction()
