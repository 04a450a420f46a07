# xcheck.cmake — independent cross-checks of the wire codec, include()d by
# tests/wire/CMakeLists.txt.
#
# wire_gen writes random valid frames with softrnic's encoder; wire_dump
# prints what softrnic's decoder reads from any pcap.  The Python tests hold
# them against tools that share no code with softrnic: scapy (its RoCE layer
# and ICRC), a hand-written struct/zlib parser, and tshark's InfiniBand
# dissector.  They need /usr/bin/python3 with scapy (Debian python3-scapy)
# and tshark on PATH.

add_executable(wire_gen ${CMAKE_CURRENT_LIST_DIR}/wire_gen.c)
target_link_libraries(wire_gen PRIVATE softrnic_wire PkgConfig::LIBDEFLATE)

add_executable(wire_dump ${CMAKE_CURRENT_LIST_DIR}/wire_dump.c)
target_link_libraries(wire_dump PRIVATE softrnic_wire PkgConfig::LIBDEFLATE)

# Debian's scapy lives in the system interpreter, not in a pyenv one that
# may come first on PATH.
set(SOFTRNIC_XCHECK_PYTHON /usr/bin/python3 CACHE FILEPATH
    "Python with scapy for the wire cross-check tests")
set(XCHECK_WORKDIR ${CMAKE_CURRENT_BINARY_DIR}/xcheck)

# Part (d) of the scapy test decodes the kernel Soft-RoCE captures when the
# directory that tests/wire/CMakeLists.txt names (SOFTRNIC_VECTORS) exists.
set(XCHECK_RXE_ARGS "")
if(DEFINED SOFTRNIC_VECTORS AND EXISTS ${SOFTRNIC_VECTORS})
  set(XCHECK_RXE_ARGS --rxe-dir ${SOFTRNIC_VECTORS})
endif()

add_test(NAME wire_xcheck_scapy
         COMMAND ${SOFTRNIC_XCHECK_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_scapy_xcheck.py
                 --wire-gen $<TARGET_FILE:wire_gen>
                 --wire-dump $<TARGET_FILE:wire_dump>
                 --workdir ${XCHECK_WORKDIR}/scapy
                 ${XCHECK_RXE_ARGS})
add_test(NAME wire_xcheck_tshark
         COMMAND ${SOFTRNIC_XCHECK_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_tshark.py
                 --wire-gen $<TARGET_FILE:wire_gen>
                 --workdir ${XCHECK_WORKDIR}/tshark)
set_tests_properties(wire_xcheck_scapy wire_xcheck_tshark PROPERTIES
                     TIMEOUT 120 LABELS "wire;xcheck")
