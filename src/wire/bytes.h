/*
 * bytes.h — big-endian load/store helpers private to wire/.  Network byte
 * order everywhere except the ICRC (little-endian, see wire_icrc_store).
 * Byte-by-byte so that unaligned buffers are fine on every architecture.
 */
#ifndef SOFTRNIC_WIRE_BYTES_H
#define SOFTRNIC_WIRE_BYTES_H

#include <stdint.h>

static inline uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t get24(const uint8_t *p) { return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]; }
static inline uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | get24(p + 1); }
static inline uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }

static inline void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16); p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)v;
}
static inline void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24); put24(p + 1, v); }
static inline void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)(v >> 32)); put32(p + 4, (uint32_t)v); }

#endif
