/*
 * fuzz_xdp_frame.c — libFuzzer target: the AF_XDP port's frame reader
 * (srt_xdp_frame_read, runtime/xdp_frame.h) over any bytes.  What it
 * accepts must lie inside the frame; written again from what was read,
 * the headers must read back the same; and where wire_decode_eth (the
 * pcap decoder, written independently) reads the same frame as a RoCEv2
 * packet, the two agree on addresses, ports and the payload's place.
 */
#include "fuzz_check.h"

#include "runtime/xdp_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
