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

# The scapy test runs as three CTest tests so each stays short on a busy
# machine: (a) scapy-built frames decoded by softrnic, (b)+(c) wire_gen
# frames parsed by scapy and round-tripped, (d) the kernel Soft-RoCE
# captures, when the directory tests/wire/CMakeLists.txt names
# (SOFTRNIC_VECTORS) exists.
set(XCHECK_SCAPY ${SOFTRNIC_XCHECK_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_scapy_xcheck.py
    --wire-gen $<TARGET_FILE:wire_gen> --wire-dump $<TARGET_FILE:wire_dump>)
add_test(NAME wire_xcheck_scapy_decode
         COMMAND ${XCHECK_SCAPY} --parts a --workdir ${XCHECK_WORKDIR}/scapy_a)
add_test(NAME wire_xcheck_scapy_encode
         COMMAND ${XCHECK_SCAPY} --parts bce --workdir ${XCHECK_WORKDIR}/scapy_bc)
set(XCHECK_TESTS wire_xcheck_scapy_decode wire_xcheck_scapy_encode wire_xcheck_tshark)
if(DEFINED SOFTRNIC_VECTORS AND EXISTS ${SOFTRNIC_VECTORS})
  add_test(NAME wire_xcheck_rxe
           COMMAND ${XCHECK_SCAPY} --parts d --rxe-dir ${SOFTRNIC_VECTORS}
                   --workdir ${XCHECK_WORKDIR}/rxe)
  list(APPEND XCHECK_TESTS wire_xcheck_rxe)
endif()

add_test(NAME wire_xcheck_tshark
         COMMAND ${SOFTRNIC_XCHECK_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_tshark.py
                 --wire-gen $<TARGET_FILE:wire_gen>
                 --workdir ${XCHECK_WORKDIR}/tshark)
set_tests_properties(${XCHECK_TESTS} PROPERTIES TIMEOUT 120 LABELS "wire;xcheck")
