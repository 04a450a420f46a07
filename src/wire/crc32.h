/*
 * crc32.h — the CRC-32 of zlib/gzip/Ethernet (reflected, polynomial
 * 0xEDB88320), which the RoCEv2 ICRC is built on.  See crc32.c.
 */
#ifndef SOFTRNIC_WIRE_CRC32_H
#define SOFTRNIC_WIRE_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Same contract as zlib's crc32() and libdeflate_crc32(): start a fresh CRC
 * with crc = 0; pass a previous result to continue it, so
 * wire_crc32(wire_crc32(0, a, n), b, m) is the CRC of a followed by b.
 * buf may be NULL when len is 0.  Thread-safe. */
uint32_t wire_crc32(uint32_t crc, const void *buf, size_t len);

/* Which implementation serves long inputs in this process:
 * "vpclmulqdq-512" (a CPU with AVX-512 too), "vpclmulqdq-256" (one
 * without, or the environment says SOFTRNIC_CRC=vpclmulqdq-256) or
 * "generic" (libdeflate: CPU without VPCLMULQDQ + AVX2, or the
 * environment says SOFTRNIC_CRC=generic).  For tests and benchmarks. */
const char *wire_crc32_impl(void);

#endif
