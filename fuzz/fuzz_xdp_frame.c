/*
 * fuzz_xdp_frame.c — libFuzzer target: the AF_XDP port's frame reader
 * (srt_xdp_frame_read, runtime/xdp_frame.h) over any bytes.  What it
 * accepts must lie inside the frame; written again from what was read,
 * the headers must read back the same; and where wire_decode_eth (the
 * pcap decoder, written independently) reads the same frame as a RoCEv2
 * packet, the two agree on addresses, ports and the payload's place.
 * The same bytes also drive the multi-buffer gather (srt_xdp_gather): cut
 * into pieces of lengths and continuation flags they give, every frame it
 * returns lies in a piece or in its own bounce buffer, is the pieces it
 * was made of, and no more pieces or frames are taken than there are.
 */
#include "fuzz_check.h"

#include <stdlib.h>

#include "runtime/xdp_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void gather(const uint8_t *data, size_t size)
{
	enum { MAXP = 32, MAXF = 8, CAP = 700 };
	struct srt_xdp_piece pc[MAXP];
	struct srt_xdp_gathered out[MAXF];
	uint8_t *bounce;
	unsigned n = 0, max;
	size_t off, cursor;

	if (size < 2)
		return;
	max = 1u + data[0] % MAXF;
	/* Piece i: length and flag from two bytes of the head, its bytes
	 * from the rest, in turn. */
	off = 1;
	cursor = 0;
	while (n < MAXP && off + 2 <= size / 2) {
		uint32_t len = (uint32_t)(data[off] | data[off + 1] << 8) % 512u;
		size_t body = size - size / 2;

		if (cursor + len > body)
			len = (uint32_t)(body - cursor);
		pc[n++] = (struct srt_xdp_piece){ data + size / 2 + cursor, len, (data[off + 1] & 0x80) != 0 };
		cursor += len;
		off += 2;
	}
	bounce = malloc((size_t)max * CAP);
	if (!bounce)
		return;
	struct srt_xdp_gather_out g = srt_xdp_gather(pc, n, data[0] & 0x80, bounce, CAP, out, max);
	FUZZ_ASSERT(g.frames <= max && g.used <= n && g.multi <= g.frames);
	unsigned p = 0;
	for (unsigned f = 0; f < g.frames; f++) {
		/* Skip the pieces of frames dropped before this one. */
		size_t total = 0;
		unsigned first;
		for (;;) {
			FUZZ_ASSERT(p < g.used);
			first = p;
			total = 0;
			while (pc[p].more)
				total += pc[p++].len;
			total += pc[p++].len;
			if (p - first == 1 || total <= CAP)
				break;
		}
		FUZZ_ASSERT(out[f].len == total);
		if (p - first == 1) {
			FUZZ_ASSERT(out[f].data == pc[first].data);
		} else {
			FUZZ_ASSERT(out[f].data == bounce + (size_t)f * CAP);
			size_t at = 0;
			for (unsigned i = first; i < p; i++) {
				FUZZ_ASSERT(!memcmp(out[f].data + at, pc[i].data, pc[i].len));
				at += pc[i].len;
			}
		}
	}
	free(bounce);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gather(data, size);
	static uint8_t again[SRT_XDP_HDR_LEN + 65536];
	struct srt_xdp_frame h, h2;
	struct wire_pkt pkt;

	if (srt_xdp_frame_read(data, size, &h) != SRT_XDP_FRAME_OK)
		return 0;
	FUZZ_ASSERT(h.ib_off >= SRT_XDP_HDR_LEN && (size_t)h.ib_off + h.ib_len <= size);
	srt_xdp_frame_write(again, &h, h.ib_len);
	memcpy(again + SRT_XDP_HDR_LEN, data + h.ib_off, h.ib_len);
	FUZZ_ASSERT(srt_xdp_frame_read(again, SRT_XDP_HDR_LEN + h.ib_len, &h2) == SRT_XDP_FRAME_OK);
	FUZZ_ASSERT(h2.src == h.src && h2.dst == h.dst && h2.sport == h.sport && h2.tos == h.tos &&
		    h2.ttl == h.ttl && h2.ib_len == h.ib_len && h2.ip_id == 0);
	FUZZ_ASSERT(!memcmp(h2.dst_mac, h.dst_mac, 6) && !memcmp(h2.src_mac, h.src_mac, 6));
	if (wire_decode_eth(data, size, false, &pkt) == WIRE_OK && pkt.ip.version == 4) {
		FUZZ_ASSERT(!memcmp(&pkt.ip.src[12], &h.src, 4) && !memcmp(&pkt.ip.dst[12], &h.dst, 4));
		FUZZ_ASSERT(pkt.udp.sport == h.sport && pkt.ip.ttl == h.ttl);
		FUZZ_ASSERT(pkt.ip_start + pkt.ip_len == data + h.ib_off + h.ib_len);
	}
	return 0;
}
