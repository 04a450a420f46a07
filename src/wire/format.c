/*
 * format.c — human-readable text for the codec: error names and messages,
 * and the one-line packet description that `softrnic decode` prints
 * (including, for a MAD to QP1, the CM message and its key fields).
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "wire/mad.h"
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
	{ "WIRE_E_MAD_VERSION", "MAD base or class version not supported" },
	{ "WIRE_E_MAD_CLASS", "MAD management class is not CM" },
	{ "WIRE_E_MAD_ATTR", "MAD attribute is not a CM message softrnic decodes" },
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
	if (ib->headers & WIRE_HDR_FETH)
		put(o, " feth(placement=%s%s%s selectivity=%s)",
		    (ib->feth.placement & WIRE_FLUSH_GLOBAL) ? "global" : "",
		    ib->feth.placement == (WIRE_FLUSH_GLOBAL | WIRE_FLUSH_PERSISTENT) ? "+" : "",
		    (ib->feth.placement & WIRE_FLUSH_PERSISTENT) ? "persistent" :
		    (ib->feth.placement & WIRE_FLUSH_GLOBAL) ? "" : "none",
		    ib->feth.selectivity == WIRE_FLUSH_MR ? "mr" :
		    ib->feth.selectivity == WIRE_FLUSH_RANGE ? "range" : "reserved");
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

/* Private data: how many bytes are in use, i.e. up to the last non-zero
 * one (the wire always carries the message's full size); `at_least` counts
 * a header known to be there (RDMA-CM's) as used even where it is zero. */
static void put_pd(struct out *o, const uint8_t *pd, size_t len, size_t at_least)
{
	size_t used = len;
	while (used > at_least && pd[used - 1] == 0)
		used--;
	put(o, " pd=%zuB", used);
}

static void put_cma_addr(struct out *o, uint8_t ip_version, const uint8_t *addr)
{
	char text[INET6_ADDRSTRLEN];
	if (ip_version == 4)
		inet_ntop(AF_INET, addr + 12, text, sizeof(text));
	else
		inet_ntop(AF_INET6, addr, text, sizeof(text));
	put(o, ip_version == 4 ? "%s" : "[%s]", text);
}

static void put_sid(struct out *o, uint64_t sid)
{
	uint16_t ps, port;
	if (wire_rdma_cm_service_id_parse(sid, &ps, &port))
		put(o, " sid=0x%016" PRIx64 "+%u", wire_rdma_cm_service_id(ps, 0), port);
	else
		put(o, " sid=0x%016" PRIx64, sid);
}

/* Private data of a REQ or SIDR_REQ: with an RDMA-CM service ID it starts
 * with the IP header of cma.c; show the addresses it names. */
static void put_req_pd(struct out *o, uint64_t sid, const uint8_t *pd, size_t len)
{
	struct wire_cma_hdr h;
	uint16_t ps, port;
	if (!wire_rdma_cm_service_id_parse(sid, &ps, &port) || ps == WIRE_RDMA_PS_IB ||
	    wire_cma_hdr_decode(pd, len, &h) != WIRE_OK) {
		put_pd(o, pd, len, 0);
		return;
	}
	put_pd(o, pd, len, WIRE_CMA_HDR_LEN);
	put(o, " ip ");
	put_cma_addr(o, h.ip_version, h.src_addr);
	put(o, ":%u->", h.src_port);
	put_cma_addr(o, h.ip_version, h.dst_addr);
	put(o, ":%u", port);
}

static const char *msg_response_name(uint8_t code, bool mra)
{
	switch (code) {
	case WIRE_CM_MSG_REQ: return "REQ";
	case WIRE_CM_MSG_REP: return "REP";
	default: return mra ? "LAP" : "other";
	}
}

static void put_cm(struct out *o, const struct wire_cm_msg *m)
{
	switch (m->hdr.attr_id) {
	case WIRE_CM_ATTR_REQ: {
		const struct wire_cm_req *r = &m->req;
		static const char *const tst[] = { "RC", "UC", "RD", "XRC" };
		put(o, " lcid=0x%08" PRIx32, r->local_comm_id);
		put_sid(o, r->service_id);
		put(o, " %s qpn=0x%06" PRIx32 " psn=0x%06" PRIx32 " mtu=%u rr=%u id=%u retry=%u rnr=%u",
		    tst[r->transport_service_type], r->local_qpn, r->starting_psn, wire_ib_mtu_bytes(r->path_mtu),
		    r->responder_resources, r->initiator_depth, r->retry_count, r->rnr_retry_count);
		if (r->srq)
			put(o, " srq");
		put_req_pd(o, r->service_id, r->private_data, sizeof(r->private_data));
		break;
	}
	case WIRE_CM_ATTR_REP: {
		const struct wire_cm_rep *r = &m->rep;
		put(o, " lcid=0x%08" PRIx32 " rcid=0x%08" PRIx32 " qpn=0x%06" PRIx32 " psn=0x%06" PRIx32
		    " rr=%u id=%u rnr=%u", r->local_comm_id, r->remote_comm_id, r->local_qpn, r->starting_psn,
		    r->responder_resources, r->initiator_depth, r->rnr_retry_count);
		if (r->srq)
			put(o, " srq");
		put_pd(o, r->private_data, sizeof(r->private_data), 0);
		break;
	}
	case WIRE_CM_ATTR_RTU:
		put(o, " lcid=0x%08" PRIx32 " rcid=0x%08" PRIx32, m->rtu.local_comm_id, m->rtu.remote_comm_id);
		put_pd(o, m->rtu.private_data, sizeof(m->rtu.private_data), 0);
		break;
	case WIRE_CM_ATTR_REJ: {
		const struct wire_cm_rej *r = &m->rej;
		const char *why = wire_cm_rej_reason_name(r->reason);
		put(o, " lcid=0x%08" PRIx32 " rcid=0x%08" PRIx32 " msg=%s reason=%u(%s) ari=%uB",
		    r->local_comm_id, r->remote_comm_id, msg_response_name(r->message_rejected, false), r->reason,
		    why ? why : "reserved", r->reject_info_length);
		put_pd(o, r->private_data, sizeof(r->private_data), 0);
		break;
	}
	case WIRE_CM_ATTR_MRA:
		put(o, " lcid=0x%08" PRIx32 " rcid=0x%08" PRIx32 " msg=%s timeout=%u", m->mra.local_comm_id,
		    m->mra.remote_comm_id, msg_response_name(m->mra.message_mraed, true), m->mra.service_timeout);
		put_pd(o, m->mra.private_data, sizeof(m->mra.private_data), 0);
		break;
	case WIRE_CM_ATTR_DREQ:
		put(o, " lcid=0x%08" PRIx32 " rcid=0x%08" PRIx32 " qpn=0x%06" PRIx32, m->dreq.local_comm_id,
		    m->dreq.remote_comm_id, m->dreq.remote_qpn_eecn);
		put_pd(o, m->dreq.private_data, sizeof(m->dreq.private_data), 0);
		break;
	case WIRE_CM_ATTR_DREP:
		put(o, " lcid=0x%08" PRIx32 " rcid=0x%08" PRIx32, m->drep.local_comm_id, m->drep.remote_comm_id);
		put_pd(o, m->drep.private_data, sizeof(m->drep.private_data), 0);
		break;
	case WIRE_CM_ATTR_SIDR_REQ:
		put(o, " rid=0x%08" PRIx32 " pkey=0x%04x", m->sidr_req.request_id, m->sidr_req.pkey);
		put_sid(o, m->sidr_req.service_id);
		put_req_pd(o, m->sidr_req.service_id, m->sidr_req.private_data, sizeof(m->sidr_req.private_data));
		break;
	case WIRE_CM_ATTR_SIDR_REP: {
		const struct wire_cm_sidr_rep *r = &m->sidr_rep;
		put(o, " rid=0x%08" PRIx32 " status=%u", r->request_id, r->status);
		put_sid(o, r->service_id);
		put(o, " qpn=0x%06" PRIx32 " qkey=0x%08" PRIx32, r->qpn, r->qkey);
		put_pd(o, r->private_data, sizeof(r->private_data), 0);
		break;
	}
	}
}

/* The MAD carried by a UD SEND to QP1 (the GSI): the CM message and its
 * key fields, or what kind of MAD it is. */
static void put_mad(struct out *o, const struct wire_ib *ib)
{
	struct wire_mad_hdr h;
	struct wire_cm_msg m;
	if (wire_mad_decode_hdr(ib->payload, ib->payload_len, &h) != WIRE_OK) {
		put(o, " MAD-malformed");
		return;
	}
	if (h.mgmt_class != WIRE_MAD_CLASS_CM) {
		put(o, " MAD class=0x%02x method=0x%02x attr=0x%04x tid=0x%016" PRIx64, h.mgmt_class, h.method,
		    h.attr_id, h.tid);
		return;
	}
	const char *name = wire_cm_attr_name(h.attr_id);
	if (name)
		put(o, " CM %s", name);
	else
		put(o, " CM attr=0x%04x", h.attr_id);
	put(o, " tid=0x%016" PRIx64, h.tid);
	int err = wire_cm_decode(ib->payload, ib->payload_len, &m);
	if (err == WIRE_E_MAD_ATTR)
		return;                 /* ClassPortInfo, LAP, APR: header only */
	if (err)
		put(o, " malformed %s", wire_err_name(err));
	else
		put_cm(o, &m);
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
	if (ib->bth.selective)
		put(&o, " SR");
	if (pkt->ip.ecn == 3)
		put(&o, " ECN-CE");
	put_headers(&o, ib);
	put(&o, " len=%" PRIu32, ib->payload_len);
	if (ib->bth.opcode == (WIRE_TR_UD | WIRE_OP_SEND_ONLY) && ib->bth.dqpn == WIRE_GSI_QPN && ib->payload)
		put_mad(&o, ib);
	return (int)o.len;
}
