/*
 * wire_gen.c — seeded generator of random, valid RoCEv2 frames for the
 * cross-checks in tests/wire (test_scapy_xcheck.py, test_tshark.py).
 *
 *   wire_gen --seed N --count M --out FILE.pcap [--ipv6-share P]
 *
 * Every frame is built with softrnic's own encoder (wire_encode_eth), so
 * the ICRC, pad count, lengths and checksums are whatever the codec
 * produces.  Beside the pcap it writes FILE.pcap.fields.jsonl: one JSON
 * object per frame with every field the generator chose.  The Python tests
 * then parse the pcap with tools that share no code with softrnic (scapy,
 * tshark, a hand-written struct/zlib parser) and compare against that file.
 *
 * Which headers each opcode carries and how much payload it may have is
 * written out here again, from IBTA 9.2 / table 36 and 9.3, instead of being
 * read from wire_opcode_info(): the point is to check the codec, not to
 * agree with it.
 */
#include "wire/pcap.h"
#include "wire/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a small deterministic PRNG (splitmix64) ------------------------- */

struct rng {
	uint64_t state;
};

static uint64_t rng_u64(struct rng *r)
{
	uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rng_u32(struct rng *r) { return (uint32_t)(rng_u64(r) >> 32); }

/* Uniform in [0, n), n > 0 (multiply-shift; the bias is irrelevant here). */
static uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(((uint64_t)rng_u32(r) * n) >> 32);
}

static bool rng_bool(struct rng *r) { return rng_u64(r) >> 63; }

/* ---- what each opcode carries (independent of the codec's table) ----- */

/* Payload rule of an opcode (IBTA ch. 9, packet sizes of multi-packet
 * messages: FIRST and MIDDLE packets carry exactly one path MTU, LAST
 * carries 1..PMTU, ONLY 0..PMTU). */
enum gen_payload {
	GP_NONE,        /* no payload allowed */
	GP_FULL,        /* exactly PMTU bytes */
	GP_LAST,        /* 1..PMTU bytes      */
	GP_ONLY,        /* 0..PMTU bytes      */
	GP_CNP,         /* the 16 reserved bytes of a CNP (A17.9) */
};

struct gen_op {
	uint8_t opcode;
	uint8_t headers;        /* enum wire_hdr_bit */
	uint8_t payload;        /* enum gen_payload  */
	bool response;          /* sent by a responder: AckReq stays 0 */
	bool may_solicit;       /* SE is meaningful (last/only of SEND, WRITE w/ imm) */
};

#define RC(op) (WIRE_TR_RC | (op))
#define UC(op) (WIRE_TR_UC | (op))
#define UD(op) (WIRE_TR_UD | (op))

static const struct gen_op gen_ops[] = {
	/* Reliable Connection (IBTA table 36, 000xxxxx) */
	{ RC(0x00), 0, GP_FULL, false, false },                             /* SEND First */
	{ RC(0x01), 0, GP_FULL, false, false },                             /* SEND Middle */
	{ RC(0x02), 0, GP_LAST, false, true },                              /* SEND Last */
	{ RC(0x03), WIRE_HDR_IMMDT, GP_LAST, false, true },                 /* SEND Last w/ Imm */
	{ RC(0x04), 0, GP_ONLY, false, true },                              /* SEND Only */
	{ RC(0x05), WIRE_HDR_IMMDT, GP_ONLY, false, true },                 /* SEND Only w/ Imm */
	{ RC(0x06), WIRE_HDR_RETH, GP_FULL, false, false },                 /* WRITE First */
	{ RC(0x07), 0, GP_FULL, false, false },                             /* WRITE Middle */
	{ RC(0x08), 0, GP_LAST, false, false },                             /* WRITE Last */
	{ RC(0x09), WIRE_HDR_IMMDT, GP_LAST, false, true },                 /* WRITE Last w/ Imm */
	{ RC(0x0a), WIRE_HDR_RETH, GP_ONLY, false, false },                 /* WRITE Only */
	{ RC(0x0b), WIRE_HDR_RETH | WIRE_HDR_IMMDT, GP_ONLY, false, true }, /* WRITE Only w/ Imm */
	{ RC(0x0c), WIRE_HDR_RETH, GP_NONE, false, false },                 /* READ Request */
	{ RC(0x0d), WIRE_HDR_AETH, GP_FULL, true, false },                  /* READ Resp First */
	{ RC(0x0e), 0, GP_FULL, true, false },                              /* READ Resp Middle */
	{ RC(0x0f), WIRE_HDR_AETH, GP_LAST, true, false },                  /* READ Resp Last */
	{ RC(0x10), WIRE_HDR_AETH, GP_ONLY, true, false },                  /* READ Resp Only */
	{ RC(0x11), WIRE_HDR_AETH, GP_NONE, true, false },                  /* Acknowledge */
	{ RC(0x12), WIRE_HDR_AETH | WIRE_HDR_ATMACK, GP_NONE, true, false },/* Atomic Ack */
	{ RC(0x13), WIRE_HDR_ATMETH, GP_NONE, false, false },               /* CmpSwap */
	{ RC(0x14), WIRE_HDR_ATMETH, GP_NONE, false, false },               /* FetchAdd */
	{ RC(0x16), WIRE_HDR_IETH, GP_LAST, false, true },                  /* SEND Last w/ Inv */
	{ RC(0x17), WIRE_HDR_IETH, GP_ONLY, false, true },                  /* SEND Only w/ Inv */
	/* Unreliable Connection (001xxxxx): SEND and WRITE only */
	{ UC(0x00), 0, GP_FULL, false, false },
	{ UC(0x01), 0, GP_FULL, false, false },
	{ UC(0x02), 0, GP_LAST, false, true },
	{ UC(0x03), WIRE_HDR_IMMDT, GP_LAST, false, true },
	{ UC(0x04), 0, GP_ONLY, false, true },
	{ UC(0x05), WIRE_HDR_IMMDT, GP_ONLY, false, true },
	{ UC(0x06), WIRE_HDR_RETH, GP_FULL, false, false },
	{ UC(0x07), 0, GP_FULL, false, false },
	{ UC(0x08), 0, GP_LAST, false, false },
	{ UC(0x09), WIRE_HDR_IMMDT, GP_LAST, false, true },
	{ UC(0x0a), WIRE_HDR_RETH, GP_ONLY, false, false },
	{ UC(0x0b), WIRE_HDR_RETH | WIRE_HDR_IMMDT, GP_ONLY, false, true },
	/* Unreliable Datagram (011xxxxx): SEND Only, with and without Imm */
	{ UD(0x04), WIRE_HDR_DETH, GP_ONLY, false, true },
	{ UD(0x05), WIRE_HDR_DETH | WIRE_HDR_IMMDT, GP_ONLY, false, true },
	/* RoCEv2 Congestion Notification Packet (A17.9) */
	{ WIRE_OPCODE_CNP, 0, GP_CNP, false, false },
};
#define GEN_NOPS (sizeof(gen_ops) / sizeof(gen_ops[0]))

/* ---- choosing field values ------------------------------------------- */

static const uint32_t path_mtus[] = { 256, 512, 1024, 2048, 4096 };

static uint32_t pick_payload_len(struct rng *r, enum gen_payload rule)
{
	uint32_t pmtu = path_mtus[rng_below(r, 5)];

	switch (rule) {
	case GP_FULL: return pmtu;
	case GP_LAST: return 1 + rng_below(r, pmtu);
	case GP_ONLY: return rng_below(r, pmtu + 1);
	case GP_CNP: return WIRE_CNP_PAYLOAD_LEN;
	case GP_NONE: break;
	}
	return 0;
}

/* P_Keys whose low 15 bits are zero are the invalid P_Key (IBTA 10.9,
 * partitioning);
 * every other value is a legal key on the wire. */
static uint16_t pick_pkey(struct rng *r)
{
	uint16_t pkey;

	do
		pkey = (uint16_t)rng_u32(r);
	while ((pkey & 0x7fff) == 0);
	return pkey;
}

/* AETH syndrome (IBTA 9.3.5 table 43).  Responses that carry data are
 * always an ACK kind; a bare Acknowledge may also be an RNR NAK or a NAK
 * with one of the five defined NAK codes. */
static uint8_t pick_syndrome(struct rng *r, bool ack_only)
{
	uint32_t kind = ack_only ? 0 : rng_below(r, 3);

	if (kind == 0)
		return wire_aeth_syndrome(WIRE_AETH_ACK, rng_below(r, 32));
	if (kind == 1)
		return wire_aeth_syndrome(WIRE_AETH_RNR_NAK, rng_below(r, 32));
	return wire_aeth_syndrome(WIRE_AETH_NAK, rng_below(r, 5));
}

static void pick_ip(struct rng *r, double ipv6_share, struct wire_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	ip->version = ((double)rng_u32(r) / 4294967296.0) < ipv6_share ? 6 : 4;
	ip->dscp = (uint8_t)rng_below(r, 64);
	ip->ecn = (uint8_t)rng_below(r, 4);
	ip->ttl = (uint8_t)(1 + rng_below(r, 255));
	if (ip->version == 4) {
		ip->id = (uint16_t)rng_u32(r);
		ip->df = rng_bool(r);
		for (int side = 0; side < 2; side++) {
			uint8_t *a = side ? ip->dst : ip->src;
			uint32_t v4 = rng_u32(r);
			a[10] = a[11] = 0xff;   /* IPv4-mapped ::ffff:a.b.c.d */
			a[12] = (uint8_t)(1 + rng_below(r, 223)); /* unicast 1..223 */
			a[13] = (uint8_t)(v4 >> 16);
			a[14] = (uint8_t)(v4 >> 8);
			a[15] = (uint8_t)v4;
		}
	} else {
		ip->flow_label = rng_u32(r) & 0xfffff;
		for (int side = 0; side < 2; side++) {
			uint8_t *a = side ? ip->dst : ip->src;
			a[0] = 0xfd;    /* unique-local fd00::/8 */
			for (int i = 1; i < 16; i++)
				a[i] = (uint8_t)rng_u32(r);
		}
	}
}

/* Fill every field the opcode carries; fields it does not carry stay 0. */
static void pick_ib(struct rng *r, const struct gen_op *op, struct wire_ib *ib, uint8_t *payload)
{
	struct wire_bth *bth = &ib->bth;
	bool cnp = op->payload == GP_CNP;

	memset(ib, 0, sizeof(*ib));
	bth->opcode = op->opcode;
	bth->pkey = pick_pkey(r);
	bth->dqpn = rng_u32(r) & WIRE_QPN_MASK;
	bth->fecn = rng_bool(r);
	bth->becn = rng_bool(r);
	if (cnp) {
		/* A CNP (A17.9) leaves PSN, SE, M, AckReq and pad reserved, sent
		 * as 0; BECN is set, as scapy's cnp() helper does too. */
		bth->fecn = false;
		bth->becn = true;
	} else {
		bth->psn = rng_u32(r) & WIRE_PSN_MASK;
		bth->migreq = rng_bool(r);
		bth->se = op->may_solicit && rng_bool(r);
		bth->ackreq = !op->response && rng_bool(r);
	}

	ib->payload_len = pick_payload_len(r, (enum gen_payload)op->payload);
	if (!cnp)
		for (uint32_t i = 0; i < ib->payload_len; i++)
			payload[i] = (uint8_t)rng_u32(r);
	else
		memset(payload, 0, ib->payload_len);
	ib->payload = ib->payload_len ? payload : NULL;

	if (op->headers & WIRE_HDR_DETH) {
		ib->deth.qkey = rng_u32(r);
		ib->deth.sqpn = rng_u32(r) & WIRE_QPN_MASK;
	}
	if (op->headers & WIRE_HDR_RETH) {
		ib->reth.va = rng_u64(r);
		ib->reth.rkey = rng_u32(r);
		/* A WRITE Only moves exactly its payload; a WRITE First starts a
		 * longer message; a READ request may ask for anything. */
		if (op->payload == GP_ONLY)
			ib->reth.dma_len = ib->payload_len;
		else if (op->payload == GP_FULL)
			ib->reth.dma_len = ib->payload_len + 1 + rng_below(r, 1u << 20);
		else
			ib->reth.dma_len = rng_u32(r);
	}
	if (op->headers & WIRE_HDR_ATMETH) {
		ib->atmeth.va = rng_u64(r) & ~(uint64_t)7; /* atomics are 8-byte aligned */
		ib->atmeth.rkey = rng_u32(r);
		ib->atmeth.swap_add = rng_u64(r);
		ib->atmeth.compare = rng_u64(r);
	}
	if (op->headers & WIRE_HDR_AETH) {
		bool bare_ack = op->opcode == RC(0x11);
		ib->aeth.syndrome = pick_syndrome(r, !bare_ack);
		ib->aeth.msn = rng_u32(r) & 0xffffff;
	}
	if (op->headers & WIRE_HDR_ATMACK)
		ib->atmack = rng_u64(r);
	if (op->headers & WIRE_HDR_IMMDT)
		ib->imm = rng_u32(r);    /* kept in network order, as wire.h says */
	if (op->headers & WIRE_HDR_IETH)
		ib->ieth = rng_u32(r);
	ib->headers = op->headers;
}

/* ---- the .fields.jsonl side file ------------------------------------- */

struct json_line {
	FILE *f;
	bool first;
};

static void json_begin(struct json_line *j, FILE *f) { j->f = f; j->first = true; fputc('{', f); }
static void json_end(struct json_line *j) { fputs("}\n", j->f); }

static void json_key(struct json_line *j, const char *key)
{
	fprintf(j->f, "%s\"%s\": ", j->first ? "" : ", ", key);
	j->first = false;
}

static void json_u64(struct json_line *j, const char *key, uint64_t v)
{
	json_key(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

static void json_bool(struct json_line *j, const char *key, bool v)
{
	json_key(j, key);
	fputs(v ? "true" : "false", j->f);
}

static void json_str(struct json_line *j, const char *key, const char *v)
{
	json_key(j, key);
	fprintf(j->f, "\"%s\"", v);
}

static void ip_to_text(const struct wire_ip *ip, const uint8_t addr[16], char *out, size_t cap)
{
	if (ip->version == 4)
		inet_ntop(AF_INET, addr + 12, out, (socklen_t)cap);
	else
		inet_ntop(AF_INET6, addr, out, (socklen_t)cap);
}

static void write_fields(FILE *f, uint32_t index, const struct wire_pkt *pkt, uint8_t pad, uint32_t icrc)
{
	const struct wire_ib *ib = &pkt->ib;
	const struct wire_ip *ip = &pkt->ip;
	struct json_line j;
	char addr[INET6_ADDRSTRLEN];

	json_begin(&j, f);
	json_u64(&j, "frame", index);
	json_u64(&j, "ip_version", ip->version);
	ip_to_text(ip, ip->src, addr, sizeof(addr));
	json_str(&j, "ip_src", addr);
	ip_to_text(ip, ip->dst, addr, sizeof(addr));
	json_str(&j, "ip_dst", addr);
	json_u64(&j, "dscp", ip->dscp);
	json_u64(&j, "ecn", ip->ecn);
	json_u64(&j, "ttl", ip->ttl);
	if (ip->version == 4) {
		json_u64(&j, "ip_id", ip->id);
		json_bool(&j, "df", ip->df);
	} else {
		json_u64(&j, "flow_label", ip->flow_label);
	}
	json_u64(&j, "sport", pkt->udp.sport);
	json_u64(&j, "dport", pkt->udp.dport);
	json_u64(&j, "udp_csum", pkt->udp.csum);

	json_u64(&j, "opcode", ib->bth.opcode);
	json_bool(&j, "se", ib->bth.se);
	json_bool(&j, "migreq", ib->bth.migreq);
	json_u64(&j, "pad", pad);
	json_u64(&j, "tver", ib->bth.tver);
	json_u64(&j, "pkey", ib->bth.pkey);
	json_bool(&j, "fecn", ib->bth.fecn);
	json_bool(&j, "becn", ib->bth.becn);
	json_u64(&j, "dqpn", ib->bth.dqpn);
	json_bool(&j, "ackreq", ib->bth.ackreq);
	json_u64(&j, "psn", ib->bth.psn);
	if (ib->headers & WIRE_HDR_DETH) {
		json_u64(&j, "deth_qkey", ib->deth.qkey);
		json_u64(&j, "deth_sqpn", ib->deth.sqpn);
	}
	if (ib->headers & WIRE_HDR_RETH) {
		json_u64(&j, "reth_va", ib->reth.va);
		json_u64(&j, "reth_rkey", ib->reth.rkey);
		json_u64(&j, "reth_dma_len", ib->reth.dma_len);
	}
	if (ib->headers & WIRE_HDR_ATMETH) {
		json_u64(&j, "atmeth_va", ib->atmeth.va);
		json_u64(&j, "atmeth_rkey", ib->atmeth.rkey);
		json_u64(&j, "atmeth_swap_add", ib->atmeth.swap_add);
		json_u64(&j, "atmeth_compare", ib->atmeth.compare);
	}
	if (ib->headers & WIRE_HDR_AETH) {
		json_u64(&j, "aeth_syndrome", ib->aeth.syndrome);
		json_u64(&j, "aeth_msn", ib->aeth.msn);
	}
	if (ib->headers & WIRE_HDR_ATMACK)
		json_u64(&j, "atmack", ib->atmack);
	if (ib->headers & WIRE_HDR_IMMDT)
		json_u64(&j, "imm", ntohl(ib->imm)); /* as the 4 bytes read big-endian */
	if (ib->headers & WIRE_HDR_IETH)
		json_u64(&j, "ieth", ib->ieth);
	json_u64(&j, "payload_len", ib->payload_len);
	json_u64(&j, "payload_crc32",
	         libdeflate_crc32(0, ib->payload ? ib->payload : (const uint8_t *)"", ib->payload_len));
	json_u64(&j, "icrc", icrc);
	json_end(&j);
}

/* ---- UDP checksum (RFC 768, RFC 8200 8.1) ------------------------------ */

static uint32_t sum16(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

/* Fill in the UDP checksum of an encoded frame (the encoder writes the
 * value it is given; the ICRC masks this field, so setting it afterwards
 * leaves the ICRC valid).  Zero is not allowed for UDP over IPv6 (RFC 8200
 * 8.1), so IPv6 frames always get one; rxe-style IPv4 frames often carry
 * none.  Returns the value written. */
static uint16_t seal_udp_csum(uint8_t *frame, size_t len, uint8_t ip_version)
{
	size_t ip_at = WIRE_ETH_LEN;
	size_t udp_at = ip_at + (ip_version == 4 ? WIRE_IPV4_LEN : WIRE_IPV6_LEN);
	size_t udp_len = len - udp_at;
	uint32_t sum = 0;
	uint16_t csum;

	if (ip_version == 4)
		sum = sum16(sum, frame + ip_at + 12, 8);        /* src, dst */
	else
		sum = sum16(sum, frame + ip_at + 8, 32);
	sum += 17 + (uint32_t)udp_len;                  /* protocol, UDP length */
	frame[udp_at + 6] = frame[udp_at + 7] = 0;
	sum = sum16(sum, frame + udp_at, udp_len);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	csum = (uint16_t)~sum;
	if (csum == 0)
		csum = 0xffff;  /* 0 means "no checksum" (RFC 768) */
	frame[udp_at + 6] = (uint8_t)(csum >> 8);
	frame[udp_at + 7] = (uint8_t)csum;
	return csum;
}

/* ---- main ------------------------------------------------------------ */

struct gen_args {
	uint64_t seed;
	uint32_t count;
	const char *out;
	double ipv6_share;
};

static int usage(void)
{
	fprintf(stderr, "usage: wire_gen --seed N --count M --out FILE.pcap [--ipv6-share P]\n"
	                "  writes M random valid RoCEv2 frames and FILE.pcap.fields.jsonl\n");
	return 2;
}

static int parse_args(int argc, char **argv, struct gen_args *a)
{
	bool have_seed = false, have_count = false;

	memset(a, 0, sizeof(*a));
	a->ipv6_share = 0.5;
	for (int i = 1; i < argc; i += 2) {
		const char *opt = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;

		if (!val)
			return -1;
		errno = 0;
		if (!strcmp(opt, "--seed")) {
			a->seed = strtoull(val, &end, 0);
			have_seed = true;
		} else if (!strcmp(opt, "--count")) {
			unsigned long n = strtoul(val, &end, 0);
			if (n == 0 || n > 10000000ul)
				return -1;
			a->count = (uint32_t)n;
			have_count = true;
		} else if (!strcmp(opt, "--ipv6-share")) {
			a->ipv6_share = strtod(val, &end);
			if (a->ipv6_share < 0.0 || a->ipv6_share > 1.0)
				return -1;
		} else if (!strcmp(opt, "--out")) {
			a->out = val;
			end = (char *)val + strlen(val);
		} else {
			return -1;
		}
		if (errno || !end || *end || end == val)
			return -1;
	}
	return have_seed && have_count && a->out ? 0 : -1;
}

/* The pad count the packet must carry: payload + pad is a multiple of 4
 * (IBTA 9.2, BTH PadCnt).  Worked out here, not read back, so that the Python side
 * compares the encoder's BTH against an independent expectation. */
static uint8_t expected_pad(uint32_t payload_len)
{
	return (uint8_t)((4 - (payload_len & 3)) & 3);
}

int main(int argc, char **argv)
{
	static uint8_t payload[WIRE_MAX_IB_PACKET];
	static uint8_t frame[WIRE_MAX_IB_PACKET + 128];
	struct gen_args args;
	struct pcap_writer w;
	struct rng r;
	char jsonl_path[4096];
	FILE *jsonl;
	int rc = 0;

	if (parse_args(argc, argv, &args) < 0)
		return usage();
	if (snprintf(jsonl_path, sizeof(jsonl_path), "%s.fields.jsonl", args.out) >= (int)sizeof(jsonl_path)) {
		fprintf(stderr, "wire_gen: output path too long\n");
		return 2;
	}
	if (pcap_open_write(&w, args.out, PCAP_LINKTYPE_ETHERNET) < 0) {
		fprintf(stderr, "wire_gen: %s: %s\n", args.out, strerror(errno));
		return 1;
	}
	jsonl = fopen(jsonl_path, "w");
	if (!jsonl) {
		fprintf(stderr, "wire_gen: %s: %s\n", jsonl_path, strerror(errno));
		pcap_close_write(&w);
		return 1;
	}

	r.state = args.seed;
	for (uint32_t i = 0; i < args.count && rc == 0; i++) {
		/* Cycle through the opcodes so that even a short run covers
		 * every one of them; everything else is random. */
		const struct gen_op *op = &gen_ops[i % GEN_NOPS];
		struct wire_pkt pkt;
		uint8_t eth[14];
		int n;

		memset(&pkt, 0, sizeof(pkt));
		pick_ip(&r, args.ipv6_share, &pkt.ip);
		pkt.udp.sport = (uint16_t)(0xc000 | rng_below(&r, 0x4000));
		pkt.udp.dport = WIRE_ROCEV2_UDP_PORT;
		pkt.udp.csum = 0;       /* as rxe sends it; maybe sealed below */
		pick_ib(&r, op, &pkt.ib, payload);
		for (int k = 0; k < 12; k++)
			eth[k] = (uint8_t)rng_u32(&r);
		eth[0] = (uint8_t)((eth[0] & 0xfc) | 0x02);     /* local unicast */
		eth[6] = (uint8_t)((eth[6] & 0xfc) | 0x02);
		eth[12] = eth[13] = 0;

		n = wire_encode_eth(eth, &pkt, frame, sizeof(frame));
		if (n < 0) {
			fprintf(stderr, "wire_gen: frame %u opcode 0x%02x: encode failed: %s\n",
			        i + 1, op->opcode, wire_strerror(n));
			rc = 1;
			break;
		}
		if (pkt.ip.version == 6 || rng_below(&r, 10) < 3)
			pkt.udp.csum = seal_udp_csum(frame, (size_t)n, pkt.ip.version);
		if (pcap_write(&w, 1700000000ull * 1000000000ull + (uint64_t)i * 1000, frame, (uint32_t)n) < 0) {
			fprintf(stderr, "wire_gen: %s: write failed: %s\n", args.out, strerror(errno));
			rc = 1;
			break;
		}
		write_fields(jsonl, i + 1, &pkt, expected_pad(pkt.ib.payload_len),
		             wire_icrc_load(frame + n - WIRE_ICRC_LEN));
	}

	if (fclose(jsonl) != 0 && rc == 0) {
		fprintf(stderr, "wire_gen: %s: %s\n", jsonl_path, strerror(errno));
		rc = 1;
	}
	if (pcap_close_write(&w) < 0 && rc == 0) {
		fprintf(stderr, "wire_gen: %s: %s\n", args.out, strerror(errno));
		rc = 1;
	}
	return rc;
}
