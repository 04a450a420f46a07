/*
 * test_xdp_frame.c — the AF_XDP port's frame headers (runtime/xdp_frame.h)
 * against the wire layer's own Ethernet encoder and decoder: a frame the
 * port writes is the frame wire_encode_eth writes for the same packet
 * (ID 0, DF, UDP checksum 0: what the kernel sends for softrnic's UDP
 * socket), so its ICRC is the one a UDP-socket sender computes; reading
 * gives back every field; and each kind of broken or foreign frame is
 * refused with its reason, never read past its end.
 */
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "check.h"
#include "runtime/xdp_frame.h"
#include "wire/wire.h"

static uint8_t frame[SRT_XDP_HDR_LEN + 4096];

/* A RoCEv2 SEND ONLY with `len` bytes of payload, in `ib`; its length. */
static size_t make_ib(uint8_t *ib, size_t cap, uint32_t len)
{
	struct wire_ib p;
	static uint8_t payload[2048];

	for (uint32_t i = 0; i < len; i++)
		payload[i] = (uint8_t)(i * 7 + 1);
	memset(&p, 0, sizeof(p));
	p.bth.opcode = WIRE_OP_SEND_ONLY;
	p.bth.pkey = 0xffff;
	p.bth.dqpn = 0x123456;
	p.bth.psn = 77;
	p.payload = payload;
	p.payload_len = len;
	int n = wire_encode_ib(&p, ib, cap);
	REQUIRE(n > 0);
	return (size_t)n;
}

static void same_as_wire_encoder(uint32_t payload)
{
	uint8_t ib[4200], ref[SRT_XDP_HDR_LEN + 4200];
	size_t ib_len = make_ib(ib, sizeof(ib), payload);
	struct srt_xdp_frame h = { .dst_mac = { 2, 0, 0, 0, 0, 2 }, .src_mac = { 2, 0, 0, 0, 0, 1 },
				   .sport = 0xc123, .tos = 0x02, .ttl = 64 };

	inet_pton(AF_INET, "10.1.2.3", &h.src);
	inet_pton(AF_INET, "10.1.2.4", &h.dst);
	srt_xdp_frame_write(frame, &h, (uint32_t)ib_len);
	memcpy(frame + SRT_XDP_HDR_LEN, ib, ib_len);
	/* The ICRC over the frame's real IPv4 header, as path_xdp.c does. */
	uint32_t crc = wire_icrc_ip(frame + WIRE_ETH_LEN, WIRE_IPV4_LEN + WIRE_UDP_LEN + ib_len - WIRE_ICRC_LEN);
	wire_icrc_store(frame + SRT_XDP_HDR_LEN + ib_len - WIRE_ICRC_LEN, crc);

	/* The same packet by the wire layer (the pcap writer's encoder). */
	struct wire_pkt pkt;
	memset(&pkt, 0, sizeof(pkt));
	REQUIRE(wire_decode_ib(ib, ib_len, &pkt.ib) == WIRE_OK);
	pkt.ip.version = 4;
	pkt.ip.ecn = 2;
	pkt.ip.ttl = 64;
	pkt.ip.df = true;
	pkt.ip.src[10] = pkt.ip.src[11] = pkt.ip.dst[10] = pkt.ip.dst[11] = 0xff;
	memcpy(&pkt.ip.src[12], &h.src, 4);
	memcpy(&pkt.ip.dst[12], &h.dst, 4);
	pkt.udp.sport = h.sport;
	uint8_t eth[14] = { 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1 };
	int n = wire_encode_eth(eth, &pkt, ref, sizeof(ref));
	CHECK_EQ(n, (int)(SRT_XDP_HDR_LEN + ib_len));
	CHECK(n > 0 && !memcmp(ref, frame, (size_t)n), "payload %u: frame differs from wire_encode_eth's", payload);

	/* The ICRC a UDP-socket sender computes for the payload (ID 0). */
	struct wire_ip ip = pkt.ip;
	CHECK_EQ(wire_icrc_udp_payload(&ip, h.sport, ib, ib_len - WIRE_ICRC_LEN), crc);
	struct wire_pkt back;
	CHECK_EQ(wire_decode_eth(frame, SRT_XDP_HDR_LEN + ib_len, true, &back), WIRE_OK);

	struct srt_xdp_frame r;
	CHECK_EQ(srt_xdp_frame_read(frame, SRT_XDP_HDR_LEN + ib_len, &r), SRT_XDP_FRAME_OK);
	CHECK(r.src == h.src && r.dst == h.dst && r.sport == h.sport && r.tos == h.tos && r.ttl == h.ttl &&
	      r.ip_id == 0);
	CHECK(!memcmp(r.dst_mac, h.dst_mac, 6) && !memcmp(r.src_mac, h.src_mac, 6));
	CHECK_EQ(r.ib_off, SRT_XDP_HDR_LEN);
	CHECK_EQ(r.ib_len, ib_len);
	/* Ethernet padding after the IP packet is not payload. */
	CHECK_EQ(srt_xdp_frame_read(frame, SRT_XDP_HDR_LEN + ib_len + 6, &r), SRT_XDP_FRAME_OK);
	CHECK_EQ(r.ib_len, ib_len);
}

static void refusals(void)
{
	uint8_t ib[64];
	size_t ib_len = make_ib(ib, sizeof(ib), 4);
	size_t len = SRT_XDP_HDR_LEN + ib_len;
	struct srt_xdp_frame h = { .ttl = 64 }, r;
	uint8_t *ip = frame + WIRE_ETH_LEN;

#define FRESH() do { srt_xdp_frame_write(frame, &h, (uint32_t)ib_len); memcpy(frame + SRT_XDP_HDR_LEN, ib, ib_len); } while (0)
	FRESH();
	CHECK_EQ(srt_xdp_frame_read(frame, len, &r), SRT_XDP_FRAME_OK);
	/* Every cut short of the whole packet is refused. */
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, frame, cut);
		int e = srt_xdp_frame_read(copy, cut, &r);
		CHECK(e == SRT_XDP_FRAME_TRUNCATED, "cut at %zu: %d", cut, e);
		free(copy);
	}
	FRESH(); frame[12] = 0x86; frame[13] = 0xdd;            /* IPv6 */
	CHECK_EQ(srt_xdp_frame_read(frame, len, &r), SRT_XDP_FRAME_NOT_ROCE);
	FRESH(); frame[12] = 0x08; frame[13] = 0x06;            /* ARP */
	CHECK_EQ(srt_xdp_frame_read(frame, len, &r), SRT_XDP_FRAME_NOT_ROCE);
	FRESH(); ip[9] = 6;                                     /* TCP */
	CHECK_EQ(srt_xdp_frame_read(frame, len, &r), SRT_XDP_FRAME_NOT_ROCE);
	FRESH(); ip[WIRE_IPV4_LEN + 3] ^= 1;                    /* port 4790 */
	CHECK_EQ(srt_xdp_frame_read(frame, len, &r), SRT_XDP_FRAME_NOT_ROCE);
	FRESH(); ip[15] ^= 0x10;                                /* a flipped address bit */
	CHECK_EQ(srt_xdp_frame_read(frame, len, &r), SRT_XDP_FRAME_BAD_HEADER);
	FRESH(); ip[0] = 0x65;                                  /* version 6 in an IPv4 frame */
	CHECK_EQ(srt_xdp_frame_read(frame, len, &r), SRT_XDP_FRAME_BAD_HEADER);
	FRESH(); ip[0] = 0x44;                                  /* IHL 4 */
	CHECK_EQ(srt_xdp_frame_read(frame, len, &r), SRT_XDP_FRAME_BAD_HEADER);
	FRESH(); ip[2] = 0xff;                                  /* total length past the frame */
	CHECK_EQ(srt_xdp_frame_read(frame, len, &r), SRT_XDP_FRAME_TRUNCATED);
	FRESH(); ip[WIRE_IPV4_LEN + 4] = 0xff;                  /* UDP length past the IP packet */
	CHECK_EQ(srt_xdp_frame_read(frame, len, &r), SRT_XDP_FRAME_TRUNCATED);
	/* A fragment (MF set), with its checksum made right again. */
	FRESH();
	ip[6] |= 0x20;
	ip[10] = ip[11] = 0;
	{
		uint32_t s = 0;
		for (int i = 0; i < 20; i += 2)
			s += (uint32_t)(ip[i] << 8 | ip[i + 1]);
		while (s >> 16)
			s = (s & 0xffff) + (s >> 16);
		ip[10] = (uint8_t)(~s >> 8);
		ip[11] = (uint8_t)~s;
	}
	CHECK_EQ(srt_xdp_frame_read(frame, len, &r), SRT_XDP_FRAME_FRAGMENT);
#undef FRESH
}

int main(void)
{
	static const uint32_t sizes[] = { 0, 1, 2, 3, 4, 255, 1024, 2048 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		same_as_wire_encoder(sizes[i]);
	refusals();
	return check_exit("test_xdp_frame");
}
