/*
 * test_wire_unit.c — unit tests of the codec that need no captures: the
 * opcode table's internal consistency, PSN arithmetic, the RNR timer
 * table, UDP source-port rules, CNP, a seeded random round trip of every
 * opcode over IPv4 and IPv6, encoder refusals, formatting, error names and
 * the pcap writer/reader.
 *
 * usage: test_wire_unit SCRATCH_DIR   (for the pcap round trip file)
 */
#include <errno.h>
#include <unistd.h>

#include "wire_test.h"

#define BUF_CAP (WIRE_ETH_LEN + WIRE_IPV6_LEN + WIRE_UDP_LEN + WIRE_MAX_IB_PACKET)

/* Header lengths, restated from IBTA 9.3 rather than taken from wire.h. */
static unsigned ext_len(uint16_t h)
{
	unsigned n = 0;
	n += (h & WIRE_HDR_RDETH) ? 4 : 0;
	n += (h & WIRE_HDR_DETH) ? 8 : 0;
	n += (h & WIRE_HDR_FETH) ? 4 : 0;
	n += (h & WIRE_HDR_RETH) ? 16 : 0;
	n += (h & WIRE_HDR_ATMETH) ? 28 : 0;
	n += (h & WIRE_HDR_AETH) ? 4 : 0;
	n += (h & WIRE_HDR_ATMACK) ? 8 : 0;
	n += (h & WIRE_HDR_IMMDT) ? 4 : 0;
	n += (h & WIRE_HDR_IETH) ? 4 : 0;
	return n;
}

static void test_opcode_table(void)
{
	int defined = 0;
	for (int op = 0; op < 256; op++) {
		const struct wire_opcode_info *info = wire_opcode_info((uint8_t)op);
		if (!info) {
			CHECK_ERR(wire_payload_offset((uint8_t)op), WIRE_E_OPCODE);
			continue;
		}
		defined++;
		CHECK(info->hdr_len == 12 + ext_len(info->headers));
		CHECK(wire_payload_offset((uint8_t)op) == info->hdr_len);
		/* The transport prefix names the QP type (IBTA table 36). */
		static const struct { uint8_t prefix, qp; } tr[] = {
			{ WIRE_TR_RC, WIRE_QP_RC }, { WIRE_TR_UC, WIRE_QP_UC }, { WIRE_TR_RD, WIRE_QP_RD },
			{ WIRE_TR_UD, WIRE_QP_UD }, { WIRE_TR_CNP, WIRE_QP_CNP },
		};
		for (size_t i = 0; i < sizeof(tr) / sizeof(tr[0]); i++)
			if ((op & 0xe0) == tr[i].prefix)
				CHECK(info->qp_types == tr[i].qp);
		if (op == WIRE_OPCODE_CNP) {
			CHECK(info->flags == WIRE_F_CNP && info->headers == 0);
			continue;
		}
		unsigned pos = info->flags & (WIRE_F_FIRST | WIRE_F_MIDDLE | WIRE_F_LAST | WIRE_F_ONLY);
		CHECK(pos && !(pos & (pos - 1)));                     /* exactly one */
		CHECK(!(info->flags & WIRE_F_REQUEST) != !(info->flags & WIRE_F_RESPONSE));
		/* Same op in RC, UC, RD, UD has the same meaning and, but for
		 * DETH/RDETH, the same headers.  RD RESYNC has no RC twin. */
		const struct wire_opcode_info *rc = wire_opcode_info((uint8_t)(op & 0x1f));
		if (op == 0x55) {
			CHECK(!rc && info->headers == (WIRE_HDR_RDETH | WIRE_HDR_DETH));
			continue;
		}
		CHECK(rc != NULL);
		if (!rc)
			continue;
		CHECK(rc->flags == info->flags);
		CHECK((rc->headers & ~WIRE_HDR_DETH) == (info->headers & ~(WIRE_HDR_DETH | WIRE_HDR_RDETH)));
		/* Which headers go with which kind of packet. */
		CHECK(!(info->flags & WIRE_F_IMM) == !(info->headers & WIRE_HDR_IMMDT));
		CHECK(!(info->flags & WIRE_F_INV) == !(info->headers & WIRE_HDR_IETH));
		if (info->headers & WIRE_HDR_RETH)
			CHECK(info->flags & (WIRE_F_WRITE | WIRE_F_READ));
		CHECK(!(info->headers & WIRE_HDR_ATMETH) || (info->flags & WIRE_F_ATOMIC));
		CHECK(!(info->headers & WIRE_HDR_AETH) || (info->flags & WIRE_F_RESPONSE));
		/* Names are unique. */
		for (int o2 = 0; o2 < op; o2++) {
			const struct wire_opcode_info *i2 = wire_opcode_info((uint8_t)o2);
			CHECK(!i2 || strcmp(i2->name, info->name));
		}
	}
	CHECK(defined == 25 + 12 + 22 + 2 + 1);           /* RC includes FLUSH and ATOMIC WRITE */
	CHECK(wire_opcode_info(0x1d)->hdr_len == 12 + 16);            /* ATOMIC_WRITE: RETH */
	CHECK(wire_opcode_info(0x1c)->hdr_len == 12 + 4 + 16);        /* FLUSH: FETH, RETH */
	CHECK(wire_opcode_info(0x1c)->flags == (WIRE_F_ONLY | WIRE_F_REQUEST | WIRE_F_READ | WIRE_F_FLUSH));
	CHECK(!strcmp(wire_opcode_info(0x64)->name, "UD_SEND_ONLY"));
	CHECK(wire_opcode_info(0x0b)->hdr_len == 12 + 16 + 4);        /* WRITE_ONLY_IMM */
	CHECK(wire_opcode_info(0x12)->hdr_len == 12 + 4 + 8);         /* ATOMIC_ACK */
	CHECK(wire_opcode_info(0x65)->hdr_len == 12 + 8 + 4);         /* UD SEND_ONLY_IMM */
	CHECK(wire_opcode_info(0x53)->hdr_len == 12 + 4 + 8 + 28);    /* RD CMP_SWAP */
}

static void test_psn(void)
{
	CHECK(wire_psn_add(0xffffff, 1) == 0);
	CHECK(wire_psn_add(0xfffffe, 5) == 3);
	CHECK(wire_psn_add(5, 0x1000000) == 5);
	CHECK(wire_psn_diff(0, 0xffffff) == 1);
	CHECK(wire_psn_diff(0xffffff, 0) == -1);
	CHECK(wire_psn_diff(3, 0xfffffe) == 5);
	CHECK(wire_psn_diff(0x7fffff, 0) == 0x7fffff);
	CHECK(wire_psn_diff(0x800000, 0) == -0x800000);
	CHECK(wire_psn_diff(1234, 1234) == 0);
	uint64_t seed = 42;
	for (int i = 0; i < 10000; i++) {
		uint32_t a = (uint32_t)test_rand(&seed) & WIRE_PSN_MASK;
		uint32_t n = (uint32_t)test_rand(&seed) % 0x800000;
		CHECK(wire_psn_diff(wire_psn_add(a, n), a) == (int32_t)n);
		CHECK(wire_psn_diff(a, wire_psn_add(a, n)) == -(int32_t)n);
	}
}

static void test_rnr_timer(void)
{
	/* IBTA table 45, in milliseconds as the spec prints them. */
	static const double ms[32] = {
		655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32,
		0.48, 0.64, 0.96, 1.28, 1.92, 2.56, 3.84, 5.12, 7.68, 10.24, 15.36,
		20.48, 30.72, 40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52,
	};
	for (int c = 0; c < 32; c++)
		CHECK(wire_rnr_timer_us((uint8_t)c) == (uint32_t)(ms[c] * 1000 + 0.5));
	for (int c = 3; c + 2 < 32; c++)
		CHECK(wire_rnr_timer_us((uint8_t)(c + 2)) == 2 * wire_rnr_timer_us((uint8_t)c));
	CHECK(wire_rnr_timer_us(32 + 12) == wire_rnr_timer_us(12));  /* 5-bit field */
}

static void test_sport(void)
{
	/* Examples of the vectors README. */
	CHECK(wire_udp_sport_rc(0x39, 0x39) == 52401);
	CHECK(wire_udp_sport_ud(0x38) == 55543);
	CHECK(wire_udp_sport_ud(1) == 55410);
	uint64_t seed = 7;
	for (int i = 0; i < 1000; i++) {
		uint32_t a = (uint32_t)test_rand(&seed) & WIRE_QPN_MASK;
		uint32_t b = (uint32_t)test_rand(&seed) & WIRE_QPN_MASK;
		CHECK(wire_udp_sport_rc(a, b) == wire_udp_sport_rc(b, a));
		CHECK(wire_udp_sport_rc(a, b) >= 0xc000);
		CHECK(wire_udp_sport_ud(a) >= 0xc000);
	}
	/* Folding: a product above 20 bits still lands in the 14-bit range.
	 * 0x100000 * 1: v ^= v >> 20 gives 0x100001, fl = 1, port 0xC001. */
	CHECK(wire_udp_sport_rc(0x100000, 1) == 0xc001);
	/* 0x4000 = bit 14: (fl & 0x3fff) ^ (fl >> 14) = 1. */
	CHECK(wire_udp_sport_rc(0x4000, 1) == 0xc001);
	/* Products above 40 bits exercise the second fold (v ^= v >> 40);
	 * values from a Python transcription of the kernel formula. */
	CHECK(wire_udp_sport_rc(0xffffff, 0xffffff) == 65313);
	CHECK(wire_udp_sport_rc(0x123456, 0xabcdef) == 50120);
}

static void random_ip(uint64_t *s, struct wire_ip *ip, bool v6)
{
	memset(ip, 0, sizeof(*ip));
	ip->version = v6 ? 6 : 4;
	ip->dscp = (uint8_t)(test_rand(s) & 63);
	ip->ecn = (uint8_t)(test_rand(s) & 3);
	ip->ttl = (uint8_t)test_rand(s);
	for (int i = 0; i < 16; i++) {
		ip->src[i] = (uint8_t)test_rand(s);
		ip->dst[i] = (uint8_t)test_rand(s);
	}
	if (v6) {
		ip->flow_label = (uint32_t)test_rand(s) & 0xfffff;
	} else {
		ip->id = (uint16_t)test_rand(s);
		ip->df = test_rand(s) & 1;
		static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		memcpy(ip->src, mapped, 12);
		memcpy(ip->dst, mapped, 12);
	}
}

static uint32_t random_payload_len(uint64_t *s, const struct wire_opcode_info *info)
{
	if (info->flags & WIRE_F_CNP)
		return WIRE_CNP_PAYLOAD_LEN;
	if (!(info->flags & WIRE_F_PAYLOAD))
		return 0;
	if (info->flags & (WIRE_F_FIRST | WIRE_F_MIDDLE))
		return 4 * (1 + (uint32_t)(test_rand(s) % 1024));
	return (uint32_t)(test_rand(s) % 4097);
}

static void random_ib(uint64_t *s, uint8_t op, struct wire_ib *ib, uint8_t *payload)
{
	const struct wire_opcode_info *info = wire_opcode_info(op);
	static const uint8_t syndromes[] = { 0x1f, 0x00, 0x05, 0x20, 0x2c, 0x3f, 0x60, 0x61, 0x62, 0x63, 0x64 };
	memset(ib, 0, sizeof(*ib));
	ib->bth.opcode = op;
	ib->bth.se = test_rand(s) & 1;
	ib->bth.migreq = test_rand(s) & 1;
	ib->bth.pkey = (uint16_t)test_rand(s);
	ib->bth.fecn = test_rand(s) & 1;
	ib->bth.becn = test_rand(s) & 1;
	ib->bth.selective = test_rand(s) & 1;
	ib->bth.msg = test_rand(s) & 1;
	ib->bth.dqpn = (uint32_t)test_rand(s) & WIRE_QPN_MASK;
	ib->bth.ackreq = test_rand(s) & 1;
	ib->bth.psn = (uint32_t)test_rand(s) & WIRE_PSN_MASK;
	ib->feth.placement = (uint8_t)(test_rand(s) & 0x0f);
	ib->feth.selectivity = (uint8_t)(test_rand(s) & 0x03);
	ib->reth.va = test_rand(s);
	ib->reth.rkey = (uint32_t)test_rand(s);
	ib->reth.dma_len = (uint32_t)test_rand(s);
	ib->aeth.syndrome = syndromes[test_rand(s) % sizeof(syndromes)];
	ib->aeth.msn = (uint32_t)test_rand(s) & 0xffffff;
	ib->atmeth.va = test_rand(s);
	ib->atmeth.rkey = (uint32_t)test_rand(s);
	ib->atmeth.swap_add = test_rand(s);
	ib->atmeth.compare = test_rand(s);
	ib->atmack = test_rand(s);
	ib->imm = (uint32_t)test_rand(s);
	ib->ieth = (uint32_t)test_rand(s);
	ib->deth.qkey = (uint32_t)test_rand(s);
	ib->deth.sqpn = (uint32_t)test_rand(s) & WIRE_QPN_MASK;
	ib->rdeth_eec = (uint32_t)test_rand(s) & 0xffffff;
	ib->payload_len = random_payload_len(s, info);
	for (uint32_t i = 0; i < ib->payload_len; i++)
		payload[i] = (uint8_t)test_rand(s);
	ib->payload = ib->payload_len ? payload : NULL;
	if (info->flags & WIRE_F_CNP)
		memset(payload, 0, WIRE_CNP_PAYLOAD_LEN);
}

/* Fields the opcode carries must come back; others must read as zero. */
static void compare_ib(const struct wire_ib *a, const struct wire_ib *b)
{
	const struct wire_opcode_info *info = wire_opcode_info(a->bth.opcode);
	uint16_t h = info->headers;
	CHECK(b->headers == h);
	CHECK(b->feth.placement == ((h & WIRE_HDR_FETH) ? a->feth.placement : 0));
	CHECK(b->feth.selectivity == ((h & WIRE_HDR_FETH) ? a->feth.selectivity : 0));
	CHECK(!memcmp(&a->bth, &b->bth, offsetof(struct wire_bth, pad)));
	CHECK(a->bth.pkey == b->bth.pkey && a->bth.fecn == b->bth.fecn && a->bth.becn == b->bth.becn);
	CHECK(a->bth.selective == b->bth.selective && a->bth.msg == b->bth.msg);
	CHECK(a->bth.dqpn == b->bth.dqpn && a->bth.ackreq == b->bth.ackreq && a->bth.psn == b->bth.psn);
	CHECK(b->bth.pad == (4 - a->payload_len % 4) % 4);
	CHECK(b->reth.va == ((h & WIRE_HDR_RETH) ? a->reth.va : 0));
	CHECK(b->reth.rkey == ((h & WIRE_HDR_RETH) ? a->reth.rkey : 0));
	CHECK(b->reth.dma_len == ((h & WIRE_HDR_RETH) ? a->reth.dma_len : 0));
	CHECK(b->aeth.syndrome == ((h & WIRE_HDR_AETH) ? a->aeth.syndrome : 0));
	CHECK(b->aeth.msn == ((h & WIRE_HDR_AETH) ? a->aeth.msn : 0));
	CHECK(b->atmeth.va == ((h & WIRE_HDR_ATMETH) ? a->atmeth.va : 0));
	CHECK(b->atmeth.rkey == ((h & WIRE_HDR_ATMETH) ? a->atmeth.rkey : 0));
	CHECK(b->atmeth.swap_add == ((h & WIRE_HDR_ATMETH) ? a->atmeth.swap_add : 0));
	CHECK(b->atmeth.compare == ((h & WIRE_HDR_ATMETH) ? a->atmeth.compare : 0));
	CHECK(b->atmack == ((h & WIRE_HDR_ATMACK) ? a->atmack : 0));
	CHECK(b->imm == ((h & WIRE_HDR_IMMDT) ? a->imm : 0));
	CHECK(b->ieth == ((h & WIRE_HDR_IETH) ? a->ieth : 0));
	CHECK(b->deth.qkey == ((h & WIRE_HDR_DETH) ? a->deth.qkey : 0));
	CHECK(b->deth.sqpn == ((h & WIRE_HDR_DETH) ? a->deth.sqpn : 0));
	CHECK(b->rdeth_eec == ((h & WIRE_HDR_RDETH) ? a->rdeth_eec : 0));
	CHECK(b->payload_len == a->payload_len);
	CHECK(!a->payload_len || !memcmp(a->payload, b->payload, a->payload_len));
}

static void compare_ip(const struct wire_ip *a, const struct wire_ip *b)
{
	CHECK(a->version == b->version && a->dscp == b->dscp && a->ecn == b->ecn && a->ttl == b->ttl);
	CHECK(!memcmp(a->src, b->src, 16) && !memcmp(a->dst, b->dst, 16));
	if (a->version == 4)
		CHECK(a->id == b->id && a->df == b->df);
	else
		CHECK(a->flow_label == b->flow_label);
}

static void test_round_trip(void)
{
	static uint8_t payload[4096], buf[BUF_CAP], buf2[BUF_CAP];
	static const uint8_t eth[14] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0 };
	uint64_t seed = 0x50f7121c;
	int trips = 0;
	for (int op = 0; op < 256; op++) {
		const struct wire_opcode_info *info = wire_opcode_info((uint8_t)op);
		struct wire_pkt pkt = { 0 }, dec;
		if (!info) {
			pkt.ip.version = 4;
			pkt.ib.bth.opcode = (uint8_t)op;
			CHECK_ERR(wire_encode_ip(&pkt, buf, sizeof(buf)), WIRE_E_OPCODE);
			continue;
		}
		for (int iter = 0; iter < 16; iter++) {
			bool v6 = iter & 1;
			random_ip(&seed, &pkt.ip, v6);
			pkt.udp.sport = (uint16_t)test_rand(&seed);
			random_ib(&seed, (uint8_t)op, &pkt.ib, payload);

			int n = wire_encode_eth(eth, &pkt, buf, sizeof(buf));
			size_t want = 14 + (v6 ? 40 : 20) + 8 + info->hdr_len + pkt.ib.payload_len +
				      (4 - pkt.ib.payload_len % 4) % 4 + 4;
			CHECK(n == (int)want);
			if (n < 0)
				continue;
			int err = wire_decode_eth(buf, (size_t)n, true, &dec);
			CHECK_ERR(err, WIRE_OK);
			if (err)
				continue;
			compare_ip(&pkt.ip, &dec.ip);
			compare_ib(&pkt.ib, &dec.ib);
			CHECK(dec.udp.sport == pkt.udp.sport && dec.udp.dport == 4791);
			CHECK(dec.ip_len == (size_t)n - 14 && dec.ip_start == buf + 14);
			/* Both ICRC entry points agree. */
			size_t hl = v6 ? 40 : 20;
			CHECK(wire_icrc_udp_payload(&pkt.ip, pkt.udp.sport, buf + 14 + hl + 8,
						    dec.ip_len - hl - 8 - 4) == dec.ib.icrc);
			/* Decoded fields re-encode to the same bytes. */
			int n2 = wire_encode_eth(buf, &dec, buf2, sizeof(buf2));
			CHECK(n2 == n && !memcmp(buf, buf2, (size_t)n));
			/* Every cut and an exact-size buffer: no overrun, NOSPACE. */
			CHECK(wire_encode_eth(eth, &pkt, buf2, (size_t)n) == n);
			CHECK_ERR(wire_encode_eth(eth, &pkt, buf2, (size_t)n - 1 - test_rand(&seed) % (size_t)n), WIRE_E_NOSPACE);
			trips++;
		}
	}
	CHECK(trips == 16 * (25 + 12 + 22 + 2 + 1));
}

static void test_encoder_refusals(void)
{
	uint8_t buf[BUF_CAP];
	struct wire_ib ib = { .bth = { .opcode = WIRE_OP_ACK, .pkey = 0xffff } };
	CHECK(wire_encode_ib(&ib, buf, sizeof(buf)) == 12 + 4 + 4);
	ib.payload_len = 4;
	CHECK_ERR(wire_encode_ib(&ib, buf, sizeof(buf)), WIRE_E_PAYLOAD);
	ib.payload_len = 0;
	ib.bth.tver = 1;
	CHECK_ERR(wire_encode_ib(&ib, buf, sizeof(buf)), WIRE_E_TVER);
	ib.bth.tver = 0;
	ib.bth.dqpn = 0x1000000;
	CHECK_ERR(wire_encode_ib(&ib, buf, sizeof(buf)), WIRE_E_FIELD);
	ib.bth.dqpn = 1;
	ib.bth.psn = 0x1000000;
	CHECK_ERR(wire_encode_ib(&ib, buf, sizeof(buf)), WIRE_E_FIELD);
	ib.bth.psn = 0;
	ib.aeth.syndrome = 0x40;              /* reserved kind */
	CHECK_ERR(wire_encode_ib(&ib, buf, sizeof(buf)), WIRE_E_FIELD);
	ib.aeth.syndrome = 0x1f;
	ib.aeth.msn = 0x1000000;
	CHECK_ERR(wire_encode_ib(&ib, buf, sizeof(buf)), WIRE_E_FIELD);

	struct wire_ib w = { .bth = { .opcode = WIRE_OP_WRITE_MIDDLE }, .payload_len = 1022 };
	CHECK_ERR(wire_encode_ib(&w, buf, sizeof(buf)), WIRE_E_PAD);   /* middle must be 4-aligned */
	w.payload_len = 0;
	CHECK_ERR(wire_encode_ib(&w, buf, sizeof(buf)), WIRE_E_PAYLOAD);
	w.bth.opcode = WIRE_OP_WRITE_LAST;
	w.payload_len = 4097;
	CHECK_ERR(wire_encode_ib(&w, buf, sizeof(buf)), WIRE_E_PAYLOAD);
	w.payload_len = 1022;                 /* payload NULL: left for the caller */
	int n = wire_encode_ib(&w, buf, sizeof(buf));
	CHECK(n == 12 + 1024 + 4 && ((buf[1] >> 4) & 3) == 2);
	CHECK(wire_payload_offset(WIRE_OP_WRITE_LAST) == 12);

	struct wire_ib ud = { .bth = { .opcode = WIRE_TR_UD | WIRE_OP_SEND_ONLY }, .deth = { .sqpn = 0x1000000 } };
	CHECK_ERR(wire_encode_ib(&ud, buf, sizeof(buf)), WIRE_E_FIELD);
	struct wire_pkt pkt = { .ip = { .version = 5 } };
	CHECK_ERR(wire_encode_ip(&pkt, buf, sizeof(buf)), WIRE_E_IP_VERSION);
	pkt.ip.version = 4;
	pkt.ip.dscp = 64;
	CHECK_ERR(wire_encode_ip(&pkt, buf, sizeof(buf)), WIRE_E_FIELD);
	pkt.ip.dscp = 0;
	pkt.udp.dport = 4790;
	CHECK_ERR(wire_encode_ip(&pkt, buf, sizeof(buf)), WIRE_E_FIELD);
	pkt.udp.dport = 0;
	pkt.ib.bth.opcode = WIRE_OP_ACK;
	CHECK(wire_encode_ip(&pkt, buf, sizeof(buf)) == 20 + 8 + 12 + 4 + 4);
	CHECK_ERR(wire_encode_ip(&pkt, buf, 27), WIRE_E_NOSPACE);
	pkt.ip.version = 6;
	pkt.ip.flow_label = 0x100000;
	CHECK_ERR(wire_encode_ip(&pkt, buf, sizeof(buf)), WIRE_E_FIELD);
	CHECK_ERR(wire_decode_ib(NULL, 10, &ud), WIRE_E_FIELD);
}

static void test_cnp(void)
{
	uint8_t buf[BUF_CAP];
	struct wire_pkt pkt = { .ip = { .version = 4, .ttl = 64, .dscp = 48, .df = true, .id = 77 } };
	pkt.ip.src[10] = pkt.ip.src[11] = pkt.ip.dst[10] = pkt.ip.dst[11] = 0xff;
	pkt.ip.src[12] = 10; pkt.ip.src[15] = 1;
	pkt.ip.dst[12] = 10; pkt.ip.dst[15] = 2;
	pkt.udp.sport = wire_udp_sport_rc(0x12, 0x34);
	pkt.ib.bth = (struct wire_bth){ .opcode = WIRE_OPCODE_CNP, .pkey = 0xffff, .dqpn = 0x34, .becn = true };
	int n = wire_encode_ip(&pkt, buf, sizeof(buf));
	CHECK(n == 20 + 8 + 12 + 16 + 4);
	if (n < 0)
		return;
	static const uint8_t zero[16];
	CHECK(!memcmp(buf + 40, zero, 16));              /* reserved bytes */
	CHECK(buf[28] == 0x81 && buf[32] == 0x40);       /* opcode; BECN bit */
	struct wire_pkt dec;
	CHECK_ERR(wire_decode_ip(buf, (size_t)n, true, &dec), WIRE_OK);
	CHECK(dec.ib.bth.opcode == WIRE_OPCODE_CNP && dec.ib.bth.dqpn == 0x34 && dec.ib.bth.becn);
	CHECK(dec.ib.payload_len == 16 && dec.ip.dscp == 48);
	char line[256];
	wire_format_pkt(&dec, line, sizeof(line));
	CHECK(strstr(line, "CNP qp=0x000034") && strstr(line, "BECN"));
	pkt.ib.payload_len = 8;
	CHECK_ERR(wire_encode_ip(&pkt, buf, sizeof(buf)), WIRE_E_PAYLOAD);
}

static void test_format_and_errors(void)
{
	/* Every code has its own name and message. */
	for (int a = 0; a < WIRE_E_COUNT; a++) {
		CHECK(strncmp(wire_err_name(-a), "WIRE_", 5) == 0);
		CHECK(strcmp(wire_strerror(-a), "unknown wire error") != 0);
		for (int b = 0; b < a; b++) {
			CHECK(strcmp(wire_err_name(-a), wire_err_name(-b)));
			CHECK(strcmp(wire_strerror(-a), wire_strerror(-b)));
		}
	}
	CHECK(!strcmp(wire_err_name(WIRE_E_PAD), "WIRE_E_PAD"));
	CHECK(!strcmp(wire_err_name(-WIRE_E_COUNT), "WIRE_E_UNKNOWN"));
	CHECK(!strcmp(wire_strerror(1), "unknown wire error"));

	struct wire_pkt pkt = { .ip = { .version = 4 }, .udp = { .sport = 52401, .dport = 4791 } };
	pkt.ip.src[10] = pkt.ip.src[11] = 0xff; pkt.ip.src[12] = 10; pkt.ip.src[13] = 77; pkt.ip.src[15] = 12;
	pkt.ip.dst[10] = pkt.ip.dst[11] = 0xff; pkt.ip.dst[12] = 10; pkt.ip.dst[13] = 77; pkt.ip.dst[15] = 11;
	pkt.ib.bth = (struct wire_bth){ .opcode = WIRE_OP_WRITE_ONLY_IMM, .dqpn = 0x39, .psn = 5, .se = true, .ackreq = true, .fecn = true };
	pkt.ib.headers = WIRE_HDR_RETH | WIRE_HDR_IMMDT;
	pkt.ib.reth = (struct wire_reth){ .va = 0x1000, .rkey = 0xabc, .dma_len = 64 };
	uint8_t imm_be[4] = { 0x12, 0x34, 0x56, 0x78 };
	memcpy(&pkt.ib.imm, imm_be, 4);
	pkt.ib.payload_len = 64;
	char line[512];
	int n = wire_format_pkt(&pkt, line, sizeof(line));
	CHECK(n == (int)strlen(line));
	CHECK(!strcmp(line, "10.77.0.12:52401 > 10.77.0.11:4791 RC_WRITE_ONLY_IMM qp=0x000039 psn=5 SE AckReq FECN "
			    "reth(va=0x1000 rkey=0x00000abc len=64) imm=0x12345678 len=64"));
	char small[10];
	CHECK(wire_format_pkt(&pkt, small, sizeof(small)) == n);
	CHECK(strlen(small) == 9 && !strncmp(small, line, 9));
	CHECK(wire_format_pkt(&pkt, NULL, 0) == n);

	pkt.ib.bth = (struct wire_bth){ .opcode = WIRE_OP_ACK, .dqpn = 1 };
	pkt.ib.headers = WIRE_HDR_AETH;
	pkt.ib.payload_len = 0;
	pkt.ib.aeth = (struct wire_aeth){ .syndrome = wire_aeth_syndrome(WIRE_AETH_NAK, WIRE_NAK_REM_ACCESS_ERR), .msn = 9 };
	wire_format_pkt(&pkt, line, sizeof(line));
	CHECK(strstr(line, "aeth(NAK rem-access-err msn=9)") != NULL);
	pkt.ib.aeth.syndrome = wire_aeth_syndrome(WIRE_AETH_RNR_NAK, 14);
	wire_format_pkt(&pkt, line, sizeof(line));
	CHECK(strstr(line, "aeth(RNR-NAK timer=14/1280us msn=9)") != NULL);
	pkt.ip.version = 6;
	wire_format_pkt(&pkt, line, sizeof(line));
	CHECK(!strncmp(line, "[::ffff:10.77.0.12]:52401 > [::ffff:10.77.0.11]:4791 RC_ACK", 58));
}

static void test_pcap(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/test_wire_unit.pcap", dir);
	struct pcap_writer w;
	CHECK(pcap_open_write(&w, path, PCAP_LINKTYPE_ETHERNET) == 0);
	uint8_t frames[3][100];
	for (int i = 0; i < 3; i++) {
		memset(frames[i], 0x30 + i, sizeof(frames[i]));
		CHECK(pcap_write(&w, 1700000000123456789ull + (uint64_t)i, frames[i], (uint32_t)(60 + i * 20)) == 0);
	}
	CHECK(pcap_close_write(&w) == 0);

	struct pcap_reader r;
	struct pcap_record rec;
	uint8_t buf[200];
	CHECK(pcap_open_read(&r, path) == 0);
	CHECK(r.linktype == PCAP_LINKTYPE_ETHERNET && r.nanosecond);
	for (int i = 0; i < 3; i++) {
		CHECK(pcap_read(&r, &rec, buf, sizeof(buf)) == 1);
		CHECK(rec.caplen == (uint32_t)(60 + i * 20) && rec.origlen == rec.caplen);
		CHECK(rec.ts_ns == 1700000000123456789ull + (uint64_t)i);
		CHECK(!memcmp(rec.data, frames[i], rec.caplen));
	}
	CHECK(pcap_read(&r, &rec, buf, sizeof(buf)) == 0);
	pcap_close_read(&r);

	/* Damaged files: record cut short, and a buffer too small. */
	FILE *f = fopen(path, "r+b");
	CHECK(f && ftruncate(fileno(f), 24 + 16 + 30) == 0);
	if (f)
		fclose(f);
	CHECK(pcap_open_read(&r, path) == 0);
	CHECK(pcap_read(&r, &rec, buf, sizeof(buf)) == -1);
	pcap_close_read(&r);
	CHECK(pcap_open_read(&r, path) == 0);
	CHECK(pcap_read(&r, &rec, buf, 10) == -1 && errno == ENOSPC);
	pcap_close_read(&r);
	/* Not a pcap file at all. */
	f = fopen(path, "wb");
	if (f) {
		fputs("this is not a capture file, just text", f);
		fclose(f);
	}
	errno = 0;
	CHECK(pcap_open_read(&r, path) == -1 && errno == EINVAL);
	CHECK(pcap_open_read(&r, "/nonexistent/x.pcap") == -1 && errno == ENOENT);
	unlink(path);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
		return 2;
	}
	test_opcode_table();
	test_psn();
	test_rnr_timer();
	test_sport();
	test_round_trip();
	test_encoder_refusals();
	test_cnp();
	test_format_and_errors();
	test_pcap(argv[1]);
	return check_exit("test_wire_unit");
}
