/*
 * test_xdp_frame.c — the AF_XDP port's frame headers (runtime/xdp_frame.h)
 * against the wire layer's own Ethernet encoder and decoder: a frame the
 * port writes is the frame wire_encode_eth writes for the same packet
 * (ID 0, DF, UDP checksum 0: what the kernel sends for softrnic's UDP
 * socket), so its ICRC is the one a UDP-socket sender computes; reading
 * gives back every field; and each kind of broken or foreign frame is
 * refused with its reason, never read past its end.  And the multi-buffer
 * gather: frames of one piece read in place, of several copied together,
 * a frame whose end is not yet there left for the next read, one longer
 * than a bounce buffer dropped whole, never copied past a buffer's end.
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

/* n pieces of the given lengths and continuation flags, cut from one
 * pattern so that a gathered frame can be compared with it. */
static uint8_t pattern[8 * 4096];

static void pieces(struct srt_xdp_piece *pc, const uint32_t *lens, const bool *more, unsigned n)
{
	size_t off = 0;

	for (unsigned i = 0; i < n; i++) {
		pc[i] = (struct srt_xdp_piece){ pattern + off, lens[i], more[i] };
		off += lens[i];
	}
}

static void gather(void)
{
	enum { CAP = 6000, MAX = 4 };
	static uint8_t bounce[MAX * CAP + 64];
	struct srt_xdp_piece pc[8];
	struct srt_xdp_gathered out[MAX];
	struct srt_xdp_gather_out g;

	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 13 + 5);
	memset(bounce + MAX * CAP, 0xa5, 64);

	/* One piece, two pieces, one piece: in place, together, in place. */
	{
		uint32_t lens[] = { 100, 3840, 400, 60 };
		bool more[] = { false, true, false, false };
		pieces(pc, lens, more, 4);
		g = srt_xdp_gather(pc, 4, false, bounce, CAP, out, MAX);
		CHECK(g.frames == 3 && g.used == 4 && g.multi == 1 && g.dropped == 0, "frames %u used %u multi %u",
		      g.frames, g.used, g.multi);
		CHECK(out[0].data == pc[0].data && out[0].len == 100);
		CHECK(out[1].data == bounce + CAP && out[1].len == 4240 && !memcmp(out[1].data, pc[1].data, 4240),
		      "the two-piece frame is not its pieces together");
		CHECK(out[2].data == pc[3].data && out[2].len == 60);
	}
	/* The last frame's end is not among the pieces: left for next time. */
	{
		uint32_t lens[] = { 100, 3840, 400, 3840 };
		bool more[] = { false, true, false, true };
		pieces(pc, lens, more, 4);
		g = srt_xdp_gather(pc, 4, true, bounce, CAP, out, MAX);
		CHECK(g.frames == 2 && g.used == 3 && g.dropped == 0, "frames %u used %u", g.frames, g.used);
	}
	/* No more frames than max: the rest stay. */
	{
		uint32_t lens[] = { 10, 20, 30, 40, 50, 60 };
		bool more[] = { false, false, false, false, false, false };
		pieces(pc, lens, more, 6);
		g = srt_xdp_gather(pc, 6, true, bounce, CAP, out, MAX);
		CHECK(g.frames == MAX && g.used == MAX);
	}
	/* Longer than a bounce buffer: dropped whole, the next read. */
	{
		uint32_t lens[] = { 3840, 3840, 100 };
		bool more[] = { true, false, false };
		pieces(pc, lens, more, 3);
		g = srt_xdp_gather(pc, 3, false, bounce, CAP, out, MAX);
		CHECK(g.frames == 1 && g.used == 3 && g.dropped == 1 && g.multi == 0, "frames %u used %u dropped %u",
		      g.frames, g.used, g.dropped);
		CHECK(out[0].data == pc[2].data && out[0].len == 100);
	}
	/* The first frame does not end within all the caller could read:
	 * dropped whole when full, left (nothing used) when not. */
	{
		uint32_t lens[] = { 3840, 3840, 3840 };
		bool more[] = { true, true, true };
		pieces(pc, lens, more, 3);
		g = srt_xdp_gather(pc, 3, true, bounce, CAP, out, MAX);
		CHECK(g.frames == 0 && g.used == 3 && g.dropped == 1);
		g = srt_xdp_gather(pc, 3, false, bounce, CAP, out, MAX);
		CHECK(g.frames == 0 && g.used == 0 && g.dropped == 0);
	}
	/* Without bounce buffers (no multi-buffer), a frame of several
	 * pieces is dropped. */
	{
		uint32_t lens[] = { 100, 100, 7 };
		bool more[] = { true, false, false };
		pieces(pc, lens, more, 3);
		g = srt_xdp_gather(pc, 3, false, NULL, 0, out, MAX);
		CHECK(g.frames == 1 && g.used == 3 && g.dropped == 1 && out[0].len == 7);
	}
	/* Every buffer of the last frame filled to the brim: nothing past it. */
	{
		uint32_t lens[] = { CAP - 1, 1, CAP, 0, 3000, 3000 };
		bool more[] = { true, false, false, false, true, false };
		pieces(pc, lens, more, 6);
		g = srt_xdp_gather(pc, 6, false, bounce, CAP, out, MAX);
		CHECK(g.frames == 4 && g.multi == 2 && out[0].len == CAP && out[3].len == 6000 &&
		      out[3].data == bounce + 3 * CAP, "frames %u multi %u", g.frames, g.multi);
		for (int i = 0; i < 64; i++)
			CHECK(bounce[MAX * CAP + i] == 0xa5, "written past the last bounce buffer at +%d", i);
	}
}

int main(void)
{
	gather();
	static const uint32_t sizes[] = { 0, 1, 2, 3, 4, 255, 1024, 2048 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		same_as_wire_encoder(sizes[i]);
	refusals();
	return check_exit("test_xdp_frame");
}
