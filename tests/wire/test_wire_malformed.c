/*
 * test_wire_malformed.c — hostile input: vector frames cut short, bit
 * flipped, or with fields rewritten to lie, must each be refused with the
 * one wire_err that names what is wrong (and never crash: this test runs
 * under ASan/UBSan too).  Frames come from the kernel captures, so the
 * starting point is always a packet a real rxe sent.
 *
 * usage: test_wire_malformed VECTOR_DIR
 */
#include "wire_test.h"

#define IP 14                   /* IPv4 header offset in a vector frame */
#define UDP (IP + 20)
#define BTH (UDP + 8)
#define MAXF 2048

struct sample {
	uint8_t d[MAXF];
	size_t len;
};

static const char *vector_dir;

/* First frame of `file` whose BTH opcode (and, if syndrome >= 0, AETH
 * syndrome kind) matches.  Frames are trimmed to the IP length. */
static struct sample find(const char *file, uint8_t opcode, int aeth_kind)
{
	char path[4096];
	struct sample s = { .len = 0 };
	snprintf(path, sizeof(path), "%s/%s", vector_dir, file);
	struct capture cap = load_capture(path);
	for (size_t i = 0; i < cap.count; i++) {
		struct wire_pkt p;
		if (wire_decode_eth(cap.frames[i].data, cap.frames[i].len, true, &p) != WIRE_OK)
			continue;
		if (p.ib.bth.opcode != opcode)
			continue;
		if (aeth_kind >= 0 && wire_aeth_kind(&p.ib.aeth) != aeth_kind)
			continue;
		s.len = IP + p.ip_len;
		memcpy(s.d, cap.frames[i].data, s.len);
		break;
	}
	free_capture(&cap);
	REQUIRE(s.len, "no opcode 0x%02x in %s", opcode, file);
	return s;
}

static int decode(const struct sample *s)
{
	struct wire_pkt p;
	return wire_decode_eth(s->d, s->len, true, &p);
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

/* Recomputes the IPv4 header checksum so a test reaches the check it is
 * aimed at (written here independently of the codec). */
static void fix_ip_csum(struct sample *s)
{
	uint32_t sum = 0;
	wr16(s->d + IP + 10, 0);
	for (int i = 0; i < 20; i += 2)
		sum += rd16(s->d + IP + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	wr16(s->d + IP + 10, (uint16_t)~sum);
}

/* Appends `extra` bytes after the BTH headers (or removes them if
 * negative), keeping IP/UDP lengths truthful, so only the IB layer sees a
 * change of length. */
static void resize_ib(struct sample *s, int extra)
{
	size_t ip_total = rd16(s->d + IP + 2);
	s->len = (size_t)((long)s->len + extra);
	if (extra > 0)
		memset(s->d + s->len - extra, 0, (size_t)extra);
	wr16(s->d + IP + 2, (uint16_t)(ip_total + extra));
	wr16(s->d + UDP + 4, (uint16_t)(rd16(s->d + UDP + 4) + extra));
	fix_ip_csum(s);
}

static void test_truncation(void)
{
	static const struct { const char *file; uint8_t op; } cases[] = {
		{ "rc_send_only.pcap", WIRE_OP_SEND_ONLY },   { "rc_send_only.pcap", WIRE_OP_ACK },
		{ "rc_atomic.pcap", WIRE_OP_FETCH_ADD },      { "rc_atomic.pcap", WIRE_OP_ATOMIC_ACK },
		{ "rc_read.pcap", WIRE_OP_READ_REQUEST },     { "rc_read.pcap", WIRE_OP_READ_RESP_FIRST },
		{ "rc_write.pcap", WIRE_OP_WRITE_FIRST },     { "ud_send.pcap", WIRE_TR_UD | WIRE_OP_SEND_ONLY },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct sample s = find(cases[c].file, cases[c].op, -1);
		CHECK_ERR(decode(&s), WIRE_OK);
		/* Every cut of the frame: Ethernet, IP, UDP, IB or payload. */
		for (size_t k = 0; k < s.len; k++) {
			struct wire_pkt p;
			int err = wire_decode_eth(s.d, k, true, &p);
			CHECK(err == WIRE_E_TRUNCATED, "opcode 0x%02x cut at %zu: %s", cases[c].op, k,
			      wire_err_name(err));
		}
		/* The IB layer alone, given a shorter UDP payload: below the BTH it
		 * is truncated; below the opcode's headers, the opcode lies. */
		const struct wire_opcode_info *info = wire_opcode_info(cases[c].op);
		for (size_t k = 0; k < (size_t)info->hdr_len + 4; k++) {
			struct wire_ib ib;
			CHECK_ERR(wire_decode_ib(s.d + BTH, k, &ib), k < 16 ? WIRE_E_TRUNCATED : WIRE_E_HEADERS);
		}
	}
}

static void test_tver(void)
{
	struct sample s = find("rc_send_only.pcap", WIRE_OP_SEND_ONLY, -1);
	for (int tver = 1; tver < 16; tver++) {
		struct sample t = s;
		t.d[BTH + 1] = (uint8_t)((t.d[BTH + 1] & 0xf0) | tver);
		CHECK_ERR(decode(&t), WIRE_E_TVER);
	}
}

static void test_pad(void)
{
	struct sample ack = find("rc_send_only.pcap", WIRE_OP_ACK, WIRE_AETH_ACK);
	struct sample first = find("rc_write.pcap", WIRE_OP_WRITE_FIRST, -1);
	struct sample middle = find("rc_write.pcap", WIRE_OP_WRITE_MIDDLE, -1);
	for (int pad = 1; pad < 4; pad++) {
		struct sample t = ack;      /* no payload allowed, so no pad */
		t.d[BTH + 1] |= (uint8_t)(pad << 4);
		CHECK_ERR(decode(&t), WIRE_E_PAD);
		t = first;                  /* FIRST/MIDDLE are whole PMTUs */
		t.d[BTH + 1] |= (uint8_t)(pad << 4);
		CHECK_ERR(decode(&t), WIRE_E_PAD);
		t = middle;
		t.d[BTH + 1] |= (uint8_t)(pad << 4);
		CHECK_ERR(decode(&t), WIRE_E_PAD);
	}
	/* A zero-length SEND_ONLY claiming pad bytes that are not there. */
	struct sample send = find("rc_send_only.pcap", WIRE_OP_SEND_ONLY, -1);
	resize_ib(&send, -64);
	CHECK_ERR(decode(&send), WIRE_E_ICRC);          /* well-formed, ICRC stale */
	send.d[BTH + 1] |= 0x20;
	CHECK_ERR(decode(&send), WIRE_E_PAD);
	/* Payload + pad not a multiple of 4. */
	send = find("rc_send_only.pcap", WIRE_OP_SEND_ONLY, -1);
	resize_ib(&send, -1);
	CHECK_ERR(decode(&send), WIRE_E_LENGTH);
}

/* Flip every byte of the IP packet in turn; each position has one right
 * answer, and only the ICRC-masked BTH byte 4 leaves the packet valid. */
static void test_flip_each_byte(const char *file, uint8_t opcode, size_t aeth_at)
{
	struct sample s = find(file, opcode, -1);
	for (size_t i = IP; i < s.len; i++) {
		struct sample t = s;
		t.d[i] ^= 0xff;
		int want;
		if (i == IP)
			want = WIRE_E_IP_VERSION;           /* version nibble */
		else if (i < UDP)
			want = WIRE_E_IP_HEADER;            /* header checksum */
		else if (i < UDP + 2)
			want = WIRE_E_ICRC;                 /* source port */
		else if (i < UDP + 4)
			want = WIRE_E_NOT_ROCE;
		else if (i < UDP + 6)
			want = WIRE_E_UDP_LENGTH;
		else if (i < BTH)
			want = WIRE_E_UDP_CSUM;             /* 0 became non-zero */
		else if (i == BTH)
			continue;                           /* opcode: see test_opcodes */
		else if (i == BTH + 1)
			want = WIRE_E_TVER;
		else if (i == BTH + 4)
			want = WIRE_OK;                     /* resv8a: masked by the ICRC */
		else if (aeth_at && i == BTH + aeth_at)
			want = WIRE_E_FIELD;                /* syndrome with reserved bit 7 */
		else
			want = WIRE_E_ICRC;
		int got = decode(&t);
		CHECK(got == want, "%s op 0x%02x flip byte %zu: %s, want %s", file, opcode, i, wire_err_name(got),
		      wire_err_name(want));
	}
}

/* The variant fields are outside the ICRC: changing them (with a fixed IP
 * checksum) keeps the packet valid; an invariant field does not. */
static void test_icrc_masking(void)
{
	struct sample s = find("rc_write.pcap", WIRE_OP_WRITE_FIRST, -1);
	struct sample t = s;
	t.d[IP + 1] = 0x8b;                 /* DSCP 34, ECN CE */
	t.d[IP + 8] = 3;                    /* TTL */
	fix_ip_csum(&t);
	CHECK_ERR(decode(&t), WIRE_OK);
	t.d[BTH + 4] = 0xc0;                /* FECN + BECN */
	struct wire_pkt p;
	CHECK_ERR(wire_decode_eth(t.d, t.len, true, &p), WIRE_OK);
	CHECK(p.ib.bth.fecn && p.ib.bth.becn && p.ip.ecn == 3 && p.ip.dscp == 34);
	t = s;
	t.d[IP + 4] ^= 1;                   /* IPv4 id is covered (README) */
	fix_ip_csum(&t);
	CHECK_ERR(decode(&t), WIRE_E_ICRC);
	t = s;
	t.d[IP + 15] ^= 1;                  /* source address */
	fix_ip_csum(&t);
	CHECK_ERR(decode(&t), WIRE_E_ICRC);
	/* A correct non-zero UDP checksum is accepted and outside the ICRC. */
	t = s;
	uint32_t sum = 0;
	for (int i = 12; i < 20; i += 2)
		sum += rd16(t.d + IP + i);
	sum += 17 + rd16(t.d + UDP + 4);
	size_t udp_len = rd16(t.d + UDP + 4);
	for (size_t i = 0; i + 1 < udp_len; i += 2)
		sum += rd16(t.d + UDP + i);
	if (udp_len & 1)
		sum += (uint32_t)t.d[UDP + udp_len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	wr16(t.d + UDP + 6, (uint16_t)~sum ? (uint16_t)~sum : 0xffff);
	CHECK_ERR(decode(&t), WIRE_OK);
	t.d[UDP + 7] ^= 1;
	CHECK_ERR(decode(&t), WIRE_E_UDP_CSUM);
}

static void test_opcodes(void)
{
	struct sample ack = find("rc_send_only.pcap", WIRE_OP_ACK, -1);
	struct sample atmack = find("rc_atomic.pcap", WIRE_OP_ATOMIC_ACK, -1);
	struct sample fadd = find("rc_atomic.pcap", WIRE_OP_FETCH_ADD, -1);
	struct sample rreq = find("rc_read.pcap", WIRE_OP_READ_REQUEST, -1);
	struct sample t;

	/* Opcode says fewer headers than the packet has: extra bytes are
	 * payload the opcode does not allow. */
	t = atmack;
	t.d[BTH] = WIRE_OP_ACK;
	CHECK_ERR(decode(&t), WIRE_E_PAYLOAD);
	t = fadd;
	t.d[BTH] = WIRE_OP_READ_REQUEST;
	CHECK_ERR(decode(&t), WIRE_E_PAYLOAD);
	/* Opcode says more headers than the (complete) packet has. */
	t = ack;
	t.d[BTH] = WIRE_OP_ATOMIC_ACK;
	CHECK_ERR(decode(&t), WIRE_E_HEADERS);
	t = rreq;
	t.d[BTH] = WIRE_OP_CMP_SWAP;
	CHECK_ERR(decode(&t), WIRE_E_HEADERS);
	/* Payload where none is allowed, with truthful lengths. */
	t = ack;
	resize_ib(&t, 4);
	CHECK_ERR(decode(&t), WIRE_E_PAYLOAD);
	t = rreq;
	resize_ib(&t, 8);
	CHECK_ERR(decode(&t), WIRE_E_PAYLOAD);
	/* Every opcode the table does not define. */
	int undefined = 0;
	for (int op = 0; op < 256; op++) {
		if (wire_opcode_info((uint8_t)op))
			continue;
		undefined++;
		t = ack;
		t.d[BTH] = (uint8_t)op;
		CHECK_ERR(decode(&t), WIRE_E_OPCODE);
	}
	/* 256 minus 25 RC (FLUSH and ATOMIC WRITE included), 12 UC, 22 RD, 2 UD, CNP. */
	CHECK(undefined == 256 - 25 - 12 - 22 - 2 - 1);
	/* Reserved AETH syndromes: kind 2, bit 7, NAK codes 5..31. */
	static const uint8_t bad_syndromes[] = { 0x40, 0x5f, 0x80, 0x9f, 0xff, 0x65, 0x7f };
	for (size_t i = 0; i < sizeof(bad_syndromes); i++) {
		t = ack;
		t.d[BTH + 12] = bad_syndromes[i];
		CHECK_ERR(decode(&t), WIRE_E_FIELD);
	}
}

static void test_lengths(void)
{
	struct sample s = find("rc_send_only.pcap", WIRE_OP_SEND_ONLY, -1);
	struct sample t;
	size_t total = rd16(s.d + IP + 2);

	for (int d = 1; d <= 8; d++) {       /* IP claims more than arrived */
		t = s;
		wr16(t.d + IP + 2, (uint16_t)(total + d));
		fix_ip_csum(&t);
		CHECK_ERR(decode(&t), WIRE_E_TRUNCATED);
	}
	for (int d = 1; d <= 8; d++) {       /* IP claims less than UDP does */
		t = s;
		wr16(t.d + IP + 2, (uint16_t)(total - d));
		fix_ip_csum(&t);
		CHECK_ERR(decode(&t), WIRE_E_UDP_LENGTH);
	}
	t = s;                               /* IP too short for UDP at all */
	wr16(t.d + IP + 2, 24);
	fix_ip_csum(&t);
	CHECK_ERR(decode(&t), WIRE_E_LENGTH);
	t = s;
	wr16(t.d + IP + 2, 0);
	fix_ip_csum(&t);
	CHECK_ERR(decode(&t), WIRE_E_LENGTH);
	static const int udp_lies[] = { -1, -4, 1, 4, 100 };
	for (size_t i = 0; i < sizeof(udp_lies) / sizeof(udp_lies[0]); i++) {
		t = s;
		wr16(t.d + UDP + 4, (uint16_t)(rd16(t.d + UDP + 4) + udp_lies[i]));
		CHECK_ERR(decode(&t), WIRE_E_UDP_LENGTH);
	}
	t = s;
	wr16(t.d + UDP + 4, 0);
	CHECK_ERR(decode(&t), WIRE_E_UDP_LENGTH);
	/* Ethernet padding after the IP packet is ignored. */
	t = s;
	memset(t.d + t.len, 0, 6);
	t.len += 6;
	CHECK_ERR(decode(&t), WIRE_OK);
	/* Too much payload for any MTU: 4100 bytes (buffer built here). */
	static uint8_t big[WIRE_BTH_LEN + 4104 + 4];
	memcpy(big, s.d + BTH, WIRE_BTH_LEN);
	big[1] &= 0xcf;
	struct wire_ib ib;
	CHECK_ERR(wire_decode_ib(big, WIRE_BTH_LEN + 4100 + 4, &ib), WIRE_E_PAYLOAD);
	CHECK_ERR(wire_decode_ib(big, WIRE_BTH_LEN + 4096 + 4, &ib), WIRE_OK);
}

static void test_ip_headers(void)
{
	struct sample s = find("rc_send_only.pcap", WIRE_OP_SEND_ONLY, -1);
	struct sample t;
	t = s;
	t.d[IP + 9] = 6;                     /* TCP */
	fix_ip_csum(&t);
	CHECK_ERR(decode(&t), WIRE_E_NOT_UDP);
	t = s;
	t.d[IP + 0] = 0x46;                  /* IHL 6: options */
	fix_ip_csum(&t);
	CHECK_ERR(decode(&t), WIRE_E_IP_HEADER);
	t = s;
	t.d[IP + 6] |= 0x20;                 /* MF */
	fix_ip_csum(&t);
	CHECK_ERR(decode(&t), WIRE_E_IP_HEADER);
	t = s;
	t.d[IP + 7] = 1;                     /* fragment offset */
	fix_ip_csum(&t);
	CHECK_ERR(decode(&t), WIRE_E_IP_HEADER);
	t = s;
	t.d[IP + 11] ^= 1;                   /* checksum */
	CHECK_ERR(decode(&t), WIRE_E_IP_HEADER);
	t = s;
	t.d[IP + 0] = 0x65;                  /* IPv6 under an IPv4 ethertype */
	CHECK_ERR(decode(&t), WIRE_E_IP_VERSION);
	t = s;
	t.d[12] = 0x08; t.d[13] = 0x06;      /* ARP */
	CHECK_ERR(decode(&t), WIRE_E_ETHERTYPE);
	t = s;
	wr16(t.d + UDP + 2, 4790);
	CHECK_ERR(decode(&t), WIRE_E_NOT_ROCE);
	struct wire_pkt p;
	CHECK_ERR(wire_decode_ip(s.d + IP, s.len - IP, true, &p), WIRE_OK);
	uint8_t junk = 0x15;
	CHECK_ERR(wire_decode_ip(&junk, 1, true, &p), WIRE_E_IP_VERSION);
	CHECK_ERR(wire_decode_ip(s.d + IP, 0, true, &p), WIRE_E_TRUNCATED);

	/* One 802.1Q tag is accepted. */
	t.len = s.len + 4;
	memcpy(t.d, s.d, 12);
	t.d[12] = 0x81; t.d[13] = 0x00; t.d[14] = 0x00; t.d[15] = 0x05;
	memcpy(t.d + 16, s.d + 12, s.len - 12);
	CHECK_ERR(wire_decode_eth(t.d, t.len, true, &p), WIRE_OK);
	CHECK_ERR(wire_decode_eth(t.d, 17, true, &p), WIRE_E_TRUNCATED);
}

static void test_cnp_malformed(void)
{
	struct wire_ib cnp = { .bth = { .opcode = WIRE_OPCODE_CNP, .pkey = 0xffff, .dqpn = 0x11, .becn = true } };
	uint8_t buf[64];
	int n = wire_encode_ib(&cnp, buf, sizeof(buf));
	CHECK(n == 12 + 16 + 4);
	struct wire_ib out;
	CHECK_ERR(wire_decode_ib(buf, (size_t)n, &out), WIRE_OK);
	CHECK_ERR(wire_decode_ib(buf, (size_t)n - 4, &out), WIRE_E_PAYLOAD);  /* 12 reserved bytes */
	uint8_t longer[68] = { 0 };
	memcpy(longer, buf, (size_t)n);
	CHECK_ERR(wire_decode_ib(longer, (size_t)n + 4, &out), WIRE_E_PAYLOAD);
	buf[1] |= 0x10;
	CHECK_ERR(wire_decode_ib(buf, (size_t)n, &out), WIRE_E_PAD);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s VECTOR_DIR\n", argv[0]);
		return 2;
	}
	vector_dir = argv[1];
	test_truncation();
	test_tver();
	test_pad();
	test_flip_each_byte("rc_send_only.pcap", WIRE_OP_SEND_ONLY, 0);
	test_flip_each_byte("rc_write.pcap", WIRE_OP_WRITE_FIRST, 0);
	test_flip_each_byte("rc_atomic.pcap", WIRE_OP_FETCH_ADD, 0);
	test_flip_each_byte("rc_atomic.pcap", WIRE_OP_ATOMIC_ACK, 12);
	test_flip_each_byte("rc_read.pcap", WIRE_OP_READ_RESP_LAST, 12);
	test_flip_each_byte("ud_send.pcap", WIRE_TR_UD | WIRE_OP_SEND_ONLY, 0);
	test_icrc_masking();
	test_opcodes();
	test_lengths();
	test_ip_headers();
	test_cnp_malformed();
	return check_exit("test_wire_malformed");
}
