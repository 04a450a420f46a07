/*
 * icrc.c — the RoCEv2 Invariant CRC (IBTA A17.3.3).
 *
 * The ICRC is the Ethernet CRC-32 (as zlib and libdeflate compute it;
 * wire_crc32, crc32.c) over
 *   8 bytes of 0xFF (standing in for the absent IB LRH)
 *   + the IP header with its variant fields set to all-ones
 *       IPv4: TOS, TTL, header checksum;  IPv6: traffic class, flow label,
 *       hop limit
 *   + the UDP header with the checksum set to all-ones
 *   + the BTH with byte 4 (resv8a, which RoCEv2 uses for FECN/BECN) set to
 *     all-ones
 *   + everything after the BTH up to the ICRC.
 * It travels little-endian after the pad (wire_icrc_store).
 *
 * The headers are copied into a small stack buffer and masked there, then
 * the CRC continues over the rest in place: no allocation, one pass.
 */
#include <string.h>

#include "wire/bytes.h"
#include "wire/crc32.h"
#include "wire/wire.h"

#define LRH_STANDIN 8u
#define IPV4_MAX_HDR 60u
/* 0xFF x 8 + largest IP header + UDP + BTH */
#define MASKED_MAX (LRH_STANDIN + IPV4_MAX_HDR + WIRE_UDP_LEN + WIRE_BTH_LEN)

static void mask_ipv4(uint8_t *h)
{
	h[1] = 0xff;                     /* TOS (DSCP + ECN) */
	h[8] = 0xff;                     /* TTL */
	h[10] = h[11] = 0xff;            /* header checksum */
}

static void mask_ipv6(uint8_t *h)
{
	h[0] |= 0x0f;                    /* traffic class, high nibble */
	h[1] = h[2] = h[3] = 0xff;       /* traffic class low nibble, flow label */
	h[7] = 0xff;                     /* hop limit */
}

/* CRC over a packet given as `ip_udp` (IP header + UDP header, ip_hlen +
 * 8 bytes, unmasked) followed by the IB packet `ib` (ib_len bytes, ICRC
 * excluded).  The two pieces need not be contiguous. */
static uint32_t icrc_compute(const uint8_t *ip_udp, size_t ip_hlen, bool v6, const uint8_t *ib, size_t ib_len)
{
	uint8_t m[MASKED_MAX];
	size_t n = 0;
	memset(m, 0xff, LRH_STANDIN);
	n += LRH_STANDIN;
	memcpy(m + n, ip_udp, ip_hlen + WIRE_UDP_LEN);
	if (v6)
		mask_ipv6(m + n);
	else
		mask_ipv4(m + n);
	n += ip_hlen;
	m[n + 6] = m[n + 7] = 0xff;      /* UDP checksum */
	n += WIRE_UDP_LEN;
	size_t bth = ib_len < WIRE_BTH_LEN ? ib_len : WIRE_BTH_LEN;
	memcpy(m + n, ib, bth);
	if (bth > 4)
		m[n + 4] = 0xff;         /* BTH resv8a: FECN/BECN are variant */
	n += bth;
	uint32_t crc = wire_crc32(0, m, n);
	return wire_crc32(crc, ib + bth, ib_len - bth);
}

uint32_t wire_icrc_ip(const uint8_t *ip, size_t ip_len)
{
	bool v6 = ip_len >= 1 && (ip[0] >> 4) == 6;
	size_t hlen = v6 ? WIRE_IPV6_LEN : ip_len >= 1 ? (size_t)(ip[0] & 0xf) * 4 : 0;
	if (hlen < WIRE_IPV4_LEN)
		hlen = WIRE_IPV4_LEN;
	/* The contract wants a decoded packet; anything shorter than its
	 * IP + UDP headers has no meaningful ICRC, but must not be read past. */
	if (ip_len < hlen + WIRE_UDP_LEN)
		return wire_crc32(0, ip, ip_len);
	return icrc_compute(ip, hlen, v6, ip + hlen + WIRE_UDP_LEN, ip_len - hlen - WIRE_UDP_LEN);
}

/* The IP + UDP headers the kernel will build for a UDP payload of
 * `ib_len` bytes (ICRC excluded), unmasked, into h; returns the IP header
 * length. */
static size_t udp_headers(const struct wire_ip *ip, uint16_t sport, size_t ib_len, uint8_t *h)
{
	size_t udp_len = WIRE_UDP_LEN + ib_len + WIRE_ICRC_LEN;
	size_t hlen;
	memset(h, 0, WIRE_IPV6_LEN + WIRE_UDP_LEN);
	if (ip->version == 6) {
		hlen = WIRE_IPV6_LEN;
		put32(h, 6u << 28);          /* TC, flow label masked anyway */
		put16(h + 4, (uint16_t)udp_len);
		h[6] = 17;
		memcpy(h + 8, ip->src, 16);
		memcpy(h + 24, ip->dst, 16);
	} else {
		hlen = WIRE_IPV4_LEN;
		h[0] = 0x45;
		put16(h + 2, (uint16_t)(WIRE_IPV4_LEN + udp_len));
		put16(h + 4, ip->id);
		put16(h + 6, ip->df ? 0x4000 : 0);
		h[9] = 17;
		memcpy(h + 12, ip->src + 12, 4);
		memcpy(h + 16, ip->dst + 12, 4);
	}
	put16(h + hlen, sport);
	put16(h + hlen + 2, WIRE_ROCEV2_UDP_PORT);
	put16(h + hlen + 4, (uint16_t)udp_len);
	return hlen;
}

uint32_t wire_icrc_udp_payload(const struct wire_ip *ip, uint16_t sport, const uint8_t *ib, size_t ib_len)
{
	uint8_t h[WIRE_IPV6_LEN + WIRE_UDP_LEN];
	size_t hlen = udp_headers(ip, sport, ib_len, h);
	return icrc_compute(h, hlen, ip->version == 6, ib, ib_len);
}

/* The CRC-32 continues from a previous result, so the pieces
 * after the first (which carries the BTH to mask) are simply chained. */
uint32_t wire_icrc_udp_payload_pieces(const struct wire_ip *ip, uint16_t sport, const struct wire_piece *piece,
				      unsigned n)
{
	uint8_t h[WIRE_IPV6_LEN + WIRE_UDP_LEN];
	size_t ib_len = 0;
	for (unsigned i = 0; i < n; i++)
		ib_len += piece[i].len;
	size_t hlen = udp_headers(ip, sport, ib_len, h);
	static const uint8_t none[1];
	if (!n || piece[0].len < WIRE_BTH_LEN)
		return icrc_compute(h, hlen, ip->version == 6, none, 0);
	uint32_t crc = icrc_compute(h, hlen, ip->version == 6, piece[0].p, piece[0].len);
	for (unsigned i = 1; i < n; i++)
		crc = wire_crc32(crc, piece[i].p, piece[i].len);
	return crc;
}
