/*
 * format.c — human-readable text for the codec: error names and messages,
 * and the one-line packet description that `softrnic decode` prints.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "wire/wire.h"

struct err_text {
	const char *name;
	const char *msg;
};

/* Indexed by -err. */
static const struct err_text err_texts[WIRE_E_COUNT] = {
	{ "WIRE_OK", "success" },
	{ "WIRE_E_TRUNCATED", "packet truncated" },
	{ "WIRE_E_TVER", "BTH transport version is not 0" },
	{ "WIRE_E_OPCODE", "unknown or unsupported opcode" },
	{ "WIRE_E_PAD", "bad pad count" },
	{ "WIRE_E_ICRC", "ICRC mismatch" },
	{ "WIRE_E_LENGTH", "length field disagrees with the data" },
	{ "WIRE_E_PAYLOAD", "payload not allowed, missing or too large for opcode" },
	{ "WIRE_E_IP_VERSION", "not IPv4 or IPv6" },
	{ "WIRE_E_IP_HEADER", "bad IPv4 header (IHL, options, fragment or checksum)" },
	{ "WIRE_E_NOT_UDP", "IP protocol is not UDP" },
	{ "WIRE_E_NOT_ROCE", "UDP destination port is not 4791" },
	{ "WIRE_E_UDP_LENGTH", "UDP length disagrees with IP length" },
	{ "WIRE_E_ETHERTYPE", "Ethernet type is not IPv4 or IPv6" },
	{ "WIRE_E_FIELD", "field value not allowed by the spec" },
	{ "WIRE_E_NOSPACE", "output buffer too small" },
	{ "WIRE_E_UDP_CSUM", "UDP checksum mismatch" },
	{ "WIRE_E_HEADERS", "packet too short for the headers its opcode requires" },
};

static const struct err_text *err_lookup(int err)
{
	if (err > 0 || err <= -WIRE_E_COUNT)
		return NULL;
	return &err_texts[-err];
}

const char *wire_strerror(int err)
{
	const struct err_text *t = err_lookup(err);
	return t ? t->msg : "unknown wire error";
}

const char *wire_err_name(int err)
{
	const struct err_text *t = err_lookup(err);
	return t ? t->name : "WIRE_E_UNKNOWN";
}

/* Appending snprintf: keeps the total length even once `cap` is full. */
struct out {
	char *buf;
	size_t cap;
	size_t len;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t at = o->len < o->cap ? o->len : o->cap;
	int n = vsnprintf(o->buf ? o->buf + at : NULL, o->cap - at, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

static void put_addr(struct out *o, const struct wire_ip *ip, const uint8_t *addr)
{
	char text[INET6_ADDRSTRLEN];
	if (ip->version == 4)
		inet_ntop(AF_INET, addr + 12, text, sizeof(text));
	else
		inet_ntop(AF_INET6, addr, text, sizeof(text));
	put(o, ip->version == 4 ? "%s" : "[%s]", text);
}

static const char *nak_name(unsigned code)
{
	static const char *names[] = { "PSN-seq-err", "invalid-req", "rem-access-err", "rem-op-err", "invalid-rd-req" };
	return code < sizeof(names) / sizeof(names[0]) ? names[code] : "reserved";
}

static void put_aeth(struct out *o, const struct wire_aeth *a)
{
	unsigned value = wire_aeth_value(a);
	switch (wire_aeth_kind(a)) {
	case WIRE_AETH_ACK:
		if (value == WIRE_AETH_CREDIT_INVALID)
			put(o, " aeth(ACK credits=invalid");
		else
			put(o, " aeth(ACK credits=%u", value);
		break;
	case WIRE_AETH_RNR_NAK:
		put(o, " aeth(RNR-NAK timer=%u/%" PRIu32 "us", value, wire_rnr_timer_us((uint8_t)value));
		break;
	case WIRE_AETH_NAK:
		put(o, " aeth(NAK %s", nak_name(value));
		break;
	default:
		put(o, " aeth(syndrome=0x%02x", a->syndrome);
	}
	put(o, " msn=%" PRIu32 ")", a->msn);
}

static void put_headers(struct out *o, const struct wire_ib *ib)
{
	if (ib->headers & WIRE_HDR_RDETH)
		put(o, " eec=0x%06" PRIx32, ib->rdeth_eec);
	if (ib->headers & WIRE_HDR_DETH)
		put(o, " deth(qkey=0x%08" PRIx32 " sqp=0x%06" PRIx32 ")", ib->deth.qkey, ib->deth.sqpn);
	if (ib->headers & WIRE_HDR_RETH)
		put(o, " reth(va=0x%" PRIx64 " rkey=0x%08" PRIx32 " len=%" PRIu32 ")",
		    ib->reth.va, ib->reth.rkey, ib->reth.dma_len);
	if (ib->headers & WIRE_HDR_ATMETH)
		put(o, " atomic(va=0x%" PRIx64 " rkey=0x%08" PRIx32 " swap_add=0x%" PRIx64 " cmp=0x%" PRIx64 ")",
		    ib->atmeth.va, ib->atmeth.rkey, ib->atmeth.swap_add, ib->atmeth.compare);
	if (ib->headers & WIRE_HDR_AETH)
		put_aeth(o, &ib->aeth);
	if (ib->headers & WIRE_HDR_ATMACK)
		put(o, " atomic-ack(orig=0x%" PRIx64 ")", ib->atmack);
	if (ib->headers & WIRE_HDR_IMMDT)
		put(o, " imm=0x%08" PRIx32, (uint32_t)ntohl(ib->imm));
	if (ib->headers & WIRE_HDR_IETH)
		put(o, " inv-rkey=0x%08" PRIx32, ib->ieth);
}

int wire_format_pkt(const struct wire_pkt *pkt, char *out, size_t cap)
{
	struct out o = { .buf = out, .cap = out ? cap : 0, .len = 0 };
	const struct wire_ib *ib = &pkt->ib;
	const struct wire_opcode_info *info = wire_opcode_info(ib->bth.opcode);

	if (o.cap)
		o.buf[0] = '\0';
	put_addr(&o, &pkt->ip, pkt->ip.src);
	put(&o, ":%u > ", pkt->udp.sport);
	put_addr(&o, &pkt->ip, pkt->ip.dst);
	put(&o, ":%u ", pkt->udp.dport);
	if (info)
		put(&o, "%s", info->name);
	else
		put(&o, "opcode-0x%02x", ib->bth.opcode);
	put(&o, " qp=0x%06" PRIx32 " psn=%" PRIu32, ib->bth.dqpn, ib->bth.psn);
	if (ib->bth.se)
		put(&o, " SE");
	if (ib->bth.ackreq)
		put(&o, " AckReq");
	if (ib->bth.migreq)
		put(&o, " MigReq");
	if (ib->bth.fecn)
		put(&o, " FECN");
	if (ib->bth.becn)
		put(&o, " BECN");
	if (pkt->ip.ecn == 3)
		put(&o, " ECN-CE");
	put_headers(&o, ib);
	put(&o, " len=%" PRIu32, ib->payload_len);
	return (int)o.len;
}
