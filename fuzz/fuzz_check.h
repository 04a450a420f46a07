/*
 * fuzz_check.h — the property all wire fuzz targets assert: whatever the
 * decoder accepts, the encoder turns back into the same bytes, except for
 * what the decoder is allowed to forget (reserved bits and bytes, pad
 * bytes, the ICRC, which the encoder recomputes).  A violation aborts, so
 * libFuzzer reports it as a crash.
 */
#ifndef SOFTRNIC_FUZZ_CHECK_H
#define SOFTRNIC_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

#define FUZZ_ASSERT(c)                                                        \
	do {                                                                  \
		if (!(c)) {                                                   \
			fprintf(stderr, "fuzz assertion failed: %s (%s:%d)\n", #c, __FILE__, __LINE__); \
			abort();                                              \
		}                                                             \
	} while (0)

/* Clears, in an IB packet of `len` bytes that decoded as `d`, the bytes
 * the codec may legitimately not reproduce. */
static inline void fuzz_mask_ib(uint8_t *ib, size_t len, const struct wire_ib *d)
{
	const struct wire_opcode_info *info = wire_opcode_info(d->bth.opcode);
	ib[4] &= 0xc0;                          /* BTH resv8a bits 5..0 */
	ib[8] &= 0x80;                          /* BTH resv7 */
	size_t off = WIRE_BTH_LEN;
	if (info->headers & WIRE_HDR_RDETH) {
		ib[off] = 0;                    /* RDETH reserved byte */
		off += 4;
	}
	if (info->headers & WIRE_HDR_DETH) {
		ib[off + 4] = 0;                /* DETH reserved byte */
		off += WIRE_DETH_LEN;
	}
	if (info->headers & WIRE_HDR_FETH) {
		/* FETH: bits 31..6 reserved; placement 3..0, selectivity 5..4 */
		ib[off] = ib[off + 1] = ib[off + 2] = 0;
		ib[off + 3] &= 0x3f;
	}
	memset(ib + info->hdr_len + d->payload_len, 0, d->bth.pad);
	memset(ib + len - WIRE_ICRC_LEN, 0, WIRE_ICRC_LEN);
}

/* Asserts that `got` (re-encoded) equals `orig` (input) once both are
 * masked.  Both are IB packets of `len` bytes. */
static inline void fuzz_compare_ib(const uint8_t *orig, const uint8_t *got, size_t len, const struct wire_ib *d)
{
	static uint8_t a[WIRE_MAX_IB_PACKET + 64], b[WIRE_MAX_IB_PACKET + 64];
	FUZZ_ASSERT(len <= sizeof(a));
	memcpy(a, orig, len);
	memcpy(b, got, len);
	fuzz_mask_ib(a, len, d);
	fuzz_mask_ib(b, len, d);
	FUZZ_ASSERT(memcmp(a, b, len) == 0);
}

/* IP level: headers identical (the IPv4 checksum was validated, the UDP
 * checksum is copied), IB part compared masked, and the re-encoded packet
 * decodes with a valid ICRC. */
static inline void fuzz_check_ip(const uint8_t *ip, const struct wire_pkt *pkt)
{
	static uint8_t out[WIRE_IPV6_LEN + WIRE_UDP_LEN + WIRE_MAX_IB_PACKET + 64];
	int n = wire_encode_ip(pkt, out, sizeof(out));
	FUZZ_ASSERT(n > 0 && (size_t)n == pkt->ip_len);
	size_t hl = pkt->ip.version == 4 ? WIRE_IPV4_LEN : WIRE_IPV6_LEN;
	FUZZ_ASSERT(memcmp(out, ip, hl + WIRE_UDP_LEN) == 0);
	fuzz_compare_ib(ip + hl + WIRE_UDP_LEN, out + hl + WIRE_UDP_LEN, (size_t)n - hl - WIRE_UDP_LEN, &pkt->ib);
	/* The re-encoded ICRC is right; the copied UDP checksum covers the
	 * ICRC, so it only stays right if the input's ICRC already was. */
	struct wire_pkt again;
	FUZZ_ASSERT(wire_icrc_ip(out, (size_t)n - WIRE_ICRC_LEN) == wire_icrc_load(out + n - WIRE_ICRC_LEN));
	bool same_icrc = wire_icrc_load(out + n - WIRE_ICRC_LEN) == pkt->ib.icrc;
	int rc = wire_decode_ip(out, (size_t)n, true, &again);
	FUZZ_ASSERT(rc == WIRE_OK || (pkt->udp.csum && !same_icrc && rc == WIRE_E_UDP_CSUM));
	char line[1024];
	FUZZ_ASSERT(wire_format_pkt(pkt, line, sizeof(line)) > 0);
}

#endif
