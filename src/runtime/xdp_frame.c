/*
 * xdp_frame.c — writing and reading the Ethernet, IPv4 and UDP headers of
 * the AF_XDP port's frames (xdp_frame.h).
 */
#include "runtime/xdp_frame.h"

#include <string.h>

#define ETHERTYPE_IPV4 0x0800u
#define IPPROTO_UDP_NUM 17u
#define IPV4_DF 0x4000u
#define IPV4_FRAG_MASK 0x3fffu          /* MF and the fragment offset */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* The ones' complement sum of an IPv4 header (RFC 791), folded. */
static uint16_t ipv4_sum(const uint8_t *ip, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += get16(ip + i);
	while (sum >> 16)
		sum = (sum & 0xffffu) + (sum >> 16);
	return (uint16_t)sum;
}

void srt_xdp_frame_write(uint8_t *f, const struct srt_xdp_frame *h, uint32_t ib_len)
{
	uint8_t *ip = f + WIRE_ETH_LEN, *udp = ip + WIRE_IPV4_LEN;

	memcpy(f, h->dst_mac, 6);
	memcpy(f + 6, h->src_mac, 6);
	put16(f + 12, ETHERTYPE_IPV4);

	ip[0] = 0x45;                   /* version 4, 5 words */
	ip[1] = h->tos;
	put16(ip + 2, (uint16_t)(WIRE_IPV4_LEN + WIRE_UDP_LEN + ib_len));
	put16(ip + 4, 0);               /* Identification, as udp_port.c's kernel writes it */
	put16(ip + 6, IPV4_DF);
	ip[8] = h->ttl;
	ip[9] = IPPROTO_UDP_NUM;
	put16(ip + 10, 0);
	memcpy(ip + 12, &h->src, 4);
	memcpy(ip + 16, &h->dst, 4);
	put16(ip + 10, (uint16_t)~ipv4_sum(ip, WIRE_IPV4_LEN));

	put16(udp, h->sport);
	put16(udp + 2, WIRE_ROCEV2_UDP_PORT);
	put16(udp + 4, (uint16_t)(WIRE_UDP_LEN + ib_len));
	put16(udp + 6, 0);
}

int srt_xdp_frame_read(const uint8_t *f, size_t len, struct srt_xdp_frame *out)
{
	const uint8_t *ip = f + WIRE_ETH_LEN, *udp;
	size_t ihl, tot, ulen;

	if (len < WIRE_ETH_LEN + WIRE_IPV4_LEN)
		return len >= WIRE_ETH_LEN && get16(f + 12) != ETHERTYPE_IPV4 ? SRT_XDP_FRAME_NOT_ROCE
									      : SRT_XDP_FRAME_TRUNCATED;
	if (get16(f + 12) != ETHERTYPE_IPV4)
		return SRT_XDP_FRAME_NOT_ROCE;
	if (ip[0] >> 4 != 4)
		return SRT_XDP_FRAME_BAD_HEADER;
	ihl = (size_t)(ip[0] & 15u) * 4;
	if (ihl < WIRE_IPV4_LEN)
		return SRT_XDP_FRAME_BAD_HEADER;
	if (ip[9] != IPPROTO_UDP_NUM)
		return SRT_XDP_FRAME_NOT_ROCE;
	tot = get16(ip + 2);
	if (tot < ihl + WIRE_UDP_LEN || WIRE_ETH_LEN + tot > len)
		return SRT_XDP_FRAME_TRUNCATED;
	if (ipv4_sum(ip, ihl) != 0xffffu)
		return SRT_XDP_FRAME_BAD_HEADER;
	if (get16(ip + 6) & IPV4_FRAG_MASK)
		return SRT_XDP_FRAME_FRAGMENT;
	udp = ip + ihl;
	if (get16(udp + 2) != WIRE_ROCEV2_UDP_PORT)
		return SRT_XDP_FRAME_NOT_ROCE;
	ulen = get16(udp + 4);
	if (ulen < WIRE_UDP_LEN || ulen > tot - ihl)
		return SRT_XDP_FRAME_TRUNCATED;

	memcpy(out->dst_mac, f, 6);
	memcpy(out->src_mac, f + 6, 6);
	memcpy(&out->src, ip + 12, 4);
	memcpy(&out->dst, ip + 16, 4);
	out->tos = ip[1];
	out->ttl = ip[8];
	out->ip_id = get16(ip + 4);
	out->sport = get16(udp);
	out->ib_off = (uint32_t)(WIRE_ETH_LEN + ihl + WIRE_UDP_LEN);
	out->ib_len = (uint32_t)(ulen - WIRE_UDP_LEN);
	return SRT_XDP_FRAME_OK;
}

struct srt_xdp_gather_out srt_xdp_gather(const struct srt_xdp_piece *pc, unsigned n, bool full, uint8_t *bounce,
					  size_t cap, struct srt_xdp_gathered *out, unsigned max)
{
	struct srt_xdp_gather_out r = { 0 };

	while (r.used < n && r.frames < max) {
		unsigned last = r.used;

		while (last < n && pc[last].more)
			last++;
		if (last == n) {
			/* Its end is not among the pieces. */
			if (r.used == 0 && full) {
				r.used = n;
				r.dropped++;
			}
			break;
		}
		if (last == r.used) {
			out[r.frames++] = (struct srt_xdp_gathered){ pc[last].data, pc[last].len };
			r.used++;
			continue;
		}
		uint8_t *to = bounce ? bounce + (size_t)r.frames * cap : NULL;
		size_t total = 0;
		bool fits = to != NULL;

		for (unsigned i = r.used; i <= last; i++) {
			fits = fits && pc[i].len <= cap - total;
			if (fits) {
				memcpy(to + total, pc[i].data, pc[i].len);
				total += pc[i].len;
			}
		}
		r.used = last + 1;
		if (!fits) {
			r.dropped++;
			continue;
		}
		out[r.frames++] = (struct srt_xdp_gathered){ to, (uint32_t)total };
		r.multi++;
	}
	return r;
}
