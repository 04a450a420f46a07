# unit.cmake — the rnic layer's own tests (owned by rnic, included by
# tests/rnic/CMakeLists.txt).  They need only wire + rnic, not ports/pair.
if(TARGET softrnic_rnic)
  foreach(t unit_loop unit_srq unit_ud)
    add_executable(rnic_${t} ${t}.c)
    target_link_libraries(rnic_${t} PRIVATE softrnic_rnic)
    add_test(NAME rnic_${t} COMMAND rnic_${t})
    set_tests_properties(rnic_${t} PROPERTIES TIMEOUT 60 LABELS rnic)
  endforeach()
endif()
