# unit.cmake — the rnic layer's own tests (owned by rnic, included by
# tests/rnic/CMakeLists.txt).  They need only wire + rnic, not ports/pair.
if(TARGET softrnic_rnic)
  # unit_util: CHECK and the two-node packet loop the unit tests share.
  add_library(softrnic_unit_util STATIC unit_util.c)
  target_link_libraries(softrnic_unit_util PUBLIC softrnic_rnic)
  target_include_directories(softrnic_unit_util PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})

  foreach(t unit_loop unit_srq unit_ud unit_mw unit_dcqcn unit_dctcp unit_timely unit_hpcc unit_timers)
    add_executable(rnic_${t} ${t}.c)
    target_link_libraries(rnic_${t} PRIVATE softrnic_unit_util)
    add_test(NAME rnic_${t} COMMAND rnic_${t})
    set_tests_properties(rnic_${t} PROPERTIES TIMEOUT 60 LABELS rnic)
  endforeach()
endif()
