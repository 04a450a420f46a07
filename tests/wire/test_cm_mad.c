/*
 * test_cm_mad.c — the CM MAD codec (wire/mad.h) against the kernel's own
 * RDMA-CM traffic: tests/vectors/rxe/rc_rdmacm_connect.pcap, where
 * `ib_send_bw -R` connects twice between two rxe hosts through the
 * kernel's rdma_cm / ib_cm (REQ, REP, RTU each time) and disconnects both
 * (DREQ, DREP each).
 *
 *  (a) Every MAD of the capture decodes and re-encodes byte for byte, and
 *      the fields have the values tshark shows (tshark -V -d
 *      udp.port==4791,infiniband).  Two it shows wrongly (Wireshark 4.0's
 *      REQ primary flow label and packet rate read the wrong bytes) are
 *      checked against the kernel's rules instead: the flow label is
 *      cma.c's hash of the two TCP ports and gives the UDP source port of
 *      the RC packets that follow.  The starting PSNs and QPNs are checked
 *      against those RC packets too.
 *  (b) REQ, REP, RTU, DREQ and DREP built from the connection's parameters
 *      (addresses, ports, QPNs, PSNs, comm IDs, and the values the kernel's
 *      CM uses for the rest) encode to the captured bytes exactly: the
 *      encoder puts every field where the kernel does, independently of
 *      the decoder.
 *  (c) Malformed input: every truncation, wrong base/class version, class,
 *      method, attribute, path MTU, transport type, message codes, info
 *      lengths each give their own error; every single-bit flip of every
 *      captured MAD either decodes and re-encodes to itself (or, for a
 *      reserved bit, to the original) or gives the error of the field it
 *      hit; the number of reserved bits per message is the kernel's.
 *
 * usage: test_cm_mad VECTOR_DIR
 */
#include <arpa/inet.h>

#include "wire/mad.h"
#include "wire_test.h"

#define MAX_MADS 16
#define UD_SEND_ONLY (WIRE_TR_UD | WIRE_OP_SEND_ONLY)

struct mad {
	size_t frame;                   /* 1-based, as tshark numbers them */
	uint8_t src[16];                /* sender's IP (mapped) */
	uint8_t b[WIRE_MAD_LEN];
};
static struct mad mads[MAX_MADS];
static size_t n_mads;

/* First RC SEND ONLY per (sender, destination QP): its PSN and UDP sport. */
struct rc_first {
	uint8_t src[16];
	uint32_t dqpn, psn;
	uint16_t sport;
};
static struct rc_first rc_first[8];
static size_t n_rc_first;

static void ipv4_mapped(uint8_t out[16], const char *dotted)
{
	memset(out, 0, 16);
	out[10] = out[11] = 0xff;
	inet_pton(AF_INET, dotted, out + 12);
}

static void load(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/rc_rdmacm_connect.pcap", dir);
	struct capture cap = load_capture(path);
	CHECK(cap.count == 64);
	for (size_t i = 0; i < cap.count; i++) {
		struct wire_pkt p;
		int err = wire_decode_eth(cap.frames[i].data, cap.frames[i].len, true, &p);
		CHECK_ERR(err, WIRE_OK);
		if (err)
			continue;
		if (p.ib.bth.opcode == UD_SEND_ONLY) {
			/* CM MADs travel to QP1 from QP1 with the GSI Q_Key. */
			CHECK(p.ib.bth.dqpn == WIRE_GSI_QPN && p.ib.deth.sqpn == WIRE_GSI_QPN);
			CHECK(p.ib.deth.qkey == WIRE_GSI_QKEY && p.ib.bth.pkey == WIRE_GSI_PKEY);
			CHECK(p.ib.payload_len == WIRE_MAD_LEN);
			if (n_mads < MAX_MADS && p.ib.payload_len == WIRE_MAD_LEN) {
				mads[n_mads].frame = i + 1;
				memcpy(mads[n_mads].src, p.ip.src, 16);
				memcpy(mads[n_mads++].b, p.ib.payload, WIRE_MAD_LEN);
			}
		} else if (p.ib.bth.opcode == (WIRE_TR_RC | WIRE_OP_SEND_ONLY)) {
			bool seen = false;
			for (size_t k = 0; k < n_rc_first; k++)
				seen |= !memcmp(rc_first[k].src, p.ip.src, 16) && rc_first[k].dqpn == p.ib.bth.dqpn;
			if (!seen && n_rc_first < 8) {
				struct rc_first *r = &rc_first[n_rc_first++];
				memcpy(r->src, p.ip.src, 16);
				r->dqpn = p.ib.bth.dqpn;
				r->psn = p.ib.bth.psn;
				r->sport = p.udp.sport;
			}
		}
	}
	free_capture(&cap);
}

static const struct rc_first *find_rc(const char *src, uint32_t dqpn)
{
	uint8_t a[16];
	ipv4_mapped(a, src);
	for (size_t k = 0; k < n_rc_first; k++)
		if (!memcmp(rc_first[k].src, a, 16) && rc_first[k].dqpn == dqpn)
			return &rc_first[k];
	return NULL;
}

/* cma.c cma_get_roce_udp_flow_label (IPv4): hash of the two ports. */
static uint32_t cma_flow_label(uint16_t sport, uint16_t dport)
{
	return ((uint32_t)sport * 31 + dport) & 0xfffff;
}

/* ib_verbs.h rdma_flow_label_to_udp_sport. */
static uint16_t flow_label_sport(uint32_t fl)
{
	uint32_t low = fl & 0x3fff, high = fl & 0xfc000;
	return (uint16_t)((low ^ high >> 14) | 0xc000);
}

static int first_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return (int)i;
	return -1;
}

#define CHECK_SAME_MAD(got, want, what)                                              \
	do {                                                                          \
		int d_ = first_diff((got), (want), WIRE_MAD_LEN);                     \
		CHECK(d_ < 0, "%s differs at MAD byte %d: 0x%02x, want 0x%02x", (what), d_, \
		      (got)[d_ < 0 ? 0 : d_], (want)[d_ < 0 ? 0 : d_]);                   \
	} while (0)

/* ---- (a) the capture decodes, with the values tshark shows ------------- */

static void test_capture_roundtrip(void)
{
	static const uint16_t seq[] = {
		WIRE_CM_ATTR_REQ, WIRE_CM_ATTR_REP, WIRE_CM_ATTR_RTU, WIRE_CM_ATTR_REQ, WIRE_CM_ATTR_REP,
		WIRE_CM_ATTR_RTU, WIRE_CM_ATTR_DREQ, WIRE_CM_ATTR_DREP, WIRE_CM_ATTR_DREQ, WIRE_CM_ATTR_DREP,
	};
	static const size_t frames[] = { 1, 2, 3, 24, 25, 26, 61, 62, 63, 64 };
	CHECK(n_mads == sizeof(seq) / sizeof(seq[0]));
	for (size_t i = 0; i < n_mads && i < sizeof(seq) / sizeof(seq[0]); i++) {
		struct wire_cm_msg m;
		struct wire_mad_hdr h;
		uint8_t out[WIRE_MAD_LEN];
		CHECK(mads[i].frame == frames[i]);
		CHECK_ERR(wire_mad_decode_hdr(mads[i].b, WIRE_MAD_LEN, &h), WIRE_OK);
		CHECK(h.mgmt_class == WIRE_MAD_CLASS_CM && h.attr_id == seq[i]);
		CHECK_ERR(wire_cm_decode(mads[i].b, WIRE_MAD_LEN, &m), WIRE_OK);
		CHECK(m.hdr.base_version == 1 && m.hdr.mgmt_class == 0x07 && m.hdr.class_version == 2);
		CHECK(m.hdr.method == WIRE_MAD_METHOD_SEND && m.hdr.status == 0 && m.hdr.class_specific == 0);
		CHECK(m.hdr.attr_id == seq[i] && m.hdr.attr_mod == 0);
		CHECK_ERR(wire_cm_encode(&m, out, sizeof(out)), (int)WIRE_MAD_LEN);
		CHECK_SAME_MAD(out, mads[i].b, wire_cm_attr_name(seq[i]));
	}
}

static void check_req(const struct wire_cm_req *r, uint32_t lcid, uint32_t qpn, uint32_t psn, uint16_t cma_sport)
{
	CHECK(r->local_comm_id == lcid);
	CHECK(r->service_id == 0x0000000001064853ull);          /* prefix 0000000001, TCP (0x06), port 0x4853 */
	uint16_t ps = 0, port = 0;
	CHECK(wire_rdma_cm_service_id_parse(r->service_id, &ps, &port));
	CHECK(ps == WIRE_RDMA_PS_TCP && port == 18515);
	CHECK(r->local_ca_guid == 0x505400fffe770002ull);        /* EUI-64 of 52:54:00:77:00:02 */
	CHECK(r->local_qkey == 0 && r->local_qpn == qpn && r->responder_resources == 0);
	CHECK(r->local_eecn == 0 && r->initiator_depth == 0 && r->remote_eecn == 0);
	CHECK(r->remote_cm_response_timeout == 0x14 && r->transport_service_type == 0 && !r->end_to_end_flow_control);
	CHECK(r->starting_psn == psn);
	CHECK(r->local_cm_response_timeout == 0x14 && r->retry_count == 7);
	CHECK(r->pkey == 0xffff && r->path_mtu == 3 && wire_ib_mtu_bytes(r->path_mtu) == 1024);
	CHECK(!r->rdc_exists && r->rnr_retry_count == 7);
	CHECK(r->max_cm_retries == 15 && !r->srq && r->extended_transport_type == 0);
	const struct wire_cm_path *pp = &r->primary;
	uint8_t g12[16], g11[16];
	ipv4_mapped(g12, "10.77.0.12");
	ipv4_mapped(g11, "10.77.0.11");
	CHECK(pp->local_lid == 0xffff && pp->remote_lid == 0xffff);
	CHECK(!memcmp(pp->local_gid, g12, 16) && !memcmp(pp->remote_gid, g11, 16));
	CHECK(pp->flow_label == cma_flow_label(cma_sport, 18515));
	CHECK(pp->packet_rate == 0);            /* tshark 4.0 misreads this byte */
	CHECK(pp->traffic_class == 0 && pp->hop_limit == 0x40 && pp->sl == 0 && !pp->subnet_local);
	CHECK(pp->local_ack_timeout == 0x13);
	static const struct wire_cm_path zero;
	CHECK(!memcmp(&r->alternate, &zero, sizeof(zero)) && !r->sap_supported);

	/* Private data: the RDMA-CM IP header, then nothing. */
	struct wire_cma_hdr h;
	CHECK_ERR(wire_cma_hdr_decode(r->private_data, sizeof(r->private_data), &h), WIRE_OK);
	uint8_t a12[16] = { 0 }, a11[16] = { 0 };
	inet_pton(AF_INET, "10.77.0.12", a12 + 12);
	inet_pton(AF_INET, "10.77.0.11", a11 + 12);
	CHECK(h.cma_version == 0 && h.ip_version == 4 && h.src_port == cma_sport);
	CHECK(!memcmp(h.src_addr, a12, 16) && !memcmp(h.dst_addr, a11, 16));
	for (size_t k = WIRE_CMA_HDR_LEN; k < sizeof(r->private_data); k++)
		CHECK(r->private_data[k] == 0);
	uint8_t again[WIRE_CMA_HDR_LEN];
	CHECK_ERR(wire_cma_hdr_encode(&h, again, sizeof(again)), (int)WIRE_CMA_HDR_LEN);
	CHECK(!memcmp(again, r->private_data, WIRE_CMA_HDR_LEN));
}

static void check_rep(const struct wire_cm_rep *r, uint32_t lcid, uint32_t rcid, uint32_t qpn, uint32_t psn)
{
	CHECK(r->local_comm_id == lcid && r->remote_comm_id == rcid);
	CHECK(r->local_qkey == 0 && r->local_qpn == qpn && r->local_eecn == 0 && r->starting_psn == psn);
	CHECK(r->responder_resources == 0 && r->initiator_depth == 0);
	CHECK(r->target_ack_delay == 0x0f && r->failover_accepted == 0 && !r->end_to_end_flow_control);
	CHECK(r->rnr_retry_count == 7 && !r->srq);
	CHECK(r->local_ca_guid == 0x505400fffe770001ull);
	for (size_t k = 0; k < sizeof(r->private_data); k++)
		CHECK(r->private_data[k] == 0);
}

static void test_capture_fields(void)
{
	struct wire_cm_msg m[MAX_MADS];
	if (n_mads != 10)
		return;
	for (size_t i = 0; i < n_mads; i++)
		wire_cm_decode(mads[i].b, WIRE_MAD_LEN, &m[i]);

	/* Transaction IDs: one per exchange, the active side's. */
	CHECK(m[0].hdr.tid == 0x00000002288af21dull && m[1].hdr.tid == m[0].hdr.tid && m[2].hdr.tid == m[0].hdr.tid);
	CHECK(m[3].hdr.tid == 0x00000002288af21aull && m[4].hdr.tid == m[3].hdr.tid && m[5].hdr.tid == m[3].hdr.tid);
	CHECK(m[6].hdr.tid == 0x00000002288af21aull && m[7].hdr.tid == m[6].hdr.tid);
	CHECK(m[8].hdr.tid == 0x00000002b3703b81ull && m[9].hdr.tid == m[8].hdr.tid);

	/* Connection 1 (QP 0x42 at both ends) and connection 2 (QP 0x43). */
	check_req(&m[0].req, 0x1df28a28, 0x42, 0x9f9838, 0xa083);
	check_rep(&m[1].rep, 0x813b70b3, 0x1df28a28, 0x42, 0x73137b);
	CHECK(m[2].rtu.local_comm_id == 0x1df28a28 && m[2].rtu.remote_comm_id == 0x813b70b3);
	check_req(&m[3].req, 0x1af28a28, 0x43, 0x1d9ee9, 0xb1b4);
	check_rep(&m[4].rep, 0x8f3b70b3, 0x1af28a28, 0x43, 0xc27e8c);
	CHECK(m[5].rtu.local_comm_id == 0x1af28a28 && m[5].rtu.remote_comm_id == 0x8f3b70b3);
	/* The client disconnects connection 2, the server connection 1. */
	CHECK(m[6].dreq.local_comm_id == 0x1af28a28 && m[6].dreq.remote_comm_id == 0x8f3b70b3);
	CHECK(m[6].dreq.remote_qpn_eecn == 0x43);
	CHECK(m[7].drep.local_comm_id == 0x8f3b70b3 && m[7].drep.remote_comm_id == 0x1af28a28);
	CHECK(m[8].dreq.local_comm_id == 0x813b70b3 && m[8].dreq.remote_comm_id == 0x1df28a28);
	CHECK(m[8].dreq.remote_qpn_eecn == 0x42);
	CHECK(m[9].drep.local_comm_id == 0x1df28a28 && m[9].drep.remote_comm_id == 0x813b70b3);
	uint8_t a11[16], a12[16];
	ipv4_mapped(a11, "10.77.0.11");
	ipv4_mapped(a12, "10.77.0.12");
	static const int from_client[] = { 1, 0, 1, 1, 0, 1, 1, 0, 0, 1 };
	for (size_t i = 0; i < n_mads; i++)
		CHECK(!memcmp(mads[i].src, from_client[i] ? a12 : a11, 16));

	/* The RC traffic agrees: the client (active side) sends from the REP's
	 * starting PSN to the REP's QPN, the server from the REQ's to the
	 * REQ's QPN, and every RC packet of a connection leaves from the UDP
	 * port the REQ's flow label gives (rdma_flow_label_to_udp_sport). */
	const struct rc_first *c1 = find_rc("10.77.0.12", m[1].rep.local_qpn);
	const struct rc_first *s1 = find_rc("10.77.0.11", m[0].req.local_qpn);
	const struct rc_first *c2 = find_rc("10.77.0.12", m[4].rep.local_qpn);
	CHECK(c1 && s1 && c2);
	if (c1 && s1 && c2) {
		CHECK(c1->psn == m[1].rep.starting_psn && s1->psn == m[0].req.starting_psn);
		CHECK(c2->psn == m[4].rep.starting_psn);
		CHECK(c1->sport == flow_label_sport(m[0].req.primary.flow_label) && c1->sport == 63550);
		CHECK(s1->sport == c1->sport);
		CHECK(c2->sport == flow_label_sport(m[3].req.primary.flow_label) && c2->sport == 52488);
	}
}

/* ---- (b) built from the parameters, the kernel's bytes ------------------ */

struct conn_param {
	uint64_t tid;
	uint32_t active_comm_id, passive_comm_id;
	uint32_t active_qpn, passive_qpn;
	uint32_t active_psn, passive_psn;   /* each side's first send PSN */
	const char *active_ip, *passive_ip;
	uint16_t active_port, passive_port;
	uint8_t active_mac[6], passive_mac[6];
};

/* Modified EUI-64 of a MAC, the GUID rxe gives its device. */
static uint64_t mac_guid(const uint8_t mac[6])
{
	return (uint64_t)(mac[0] ^ 2) << 56 | (uint64_t)mac[1] << 48 | (uint64_t)mac[2] << 40 | 0xfffeull << 24 |
	       (uint64_t)mac[3] << 16 | (uint64_t)mac[4] << 8 | mac[5];
}

/* A REQ as the kernel's rdma_cm sends it on RoCE for ib_send_bw -R:
 * CMA_CM_RESPONSE_TIMEOUT 20, CMA_MAX_CM_RETRIES 15, retry and RNR retry
 * 7, MTU 1024, LIDs 0xffff, hop limit 64, ACK timeout 19, flow label from
 * the ports; the private data is the RDMA-CM IP header. */
static void build_req(const struct conn_param *c, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_REQ, c->tid);
	struct wire_cm_req *r = &m->req;
	r->local_comm_id = c->active_comm_id;
	r->service_id = wire_rdma_cm_service_id(WIRE_RDMA_PS_TCP, c->passive_port);
	r->local_ca_guid = mac_guid(c->active_mac);
	r->local_qpn = c->active_qpn;
	r->remote_cm_response_timeout = 20;
	r->starting_psn = c->passive_psn;
	r->local_cm_response_timeout = 20;
	r->retry_count = 7;
	r->pkey = 0xffff;
	r->path_mtu = 3;
	r->rnr_retry_count = 7;
	r->max_cm_retries = 15;
	r->primary.local_lid = r->primary.remote_lid = 0xffff;
	ipv4_mapped(r->primary.local_gid, c->active_ip);
	ipv4_mapped(r->primary.remote_gid, c->passive_ip);
	r->primary.flow_label = cma_flow_label(c->active_port, c->passive_port);
	r->primary.hop_limit = 64;
	r->primary.local_ack_timeout = 19;
	struct wire_cma_hdr h = { .cma_version = WIRE_CMA_VERSION, .ip_version = 4, .src_port = c->active_port };
	inet_pton(AF_INET, c->active_ip, h.src_addr + 12);
	inet_pton(AF_INET, c->passive_ip, h.dst_addr + 12);
	CHECK_ERR(wire_cma_hdr_encode(&h, r->private_data, sizeof(r->private_data)), (int)WIRE_CMA_HDR_LEN);
}

static void build_rep(const struct conn_param *c, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_REP, c->tid);
	struct wire_cm_rep *r = &m->rep;
	r->local_comm_id = c->passive_comm_id;
	r->remote_comm_id = c->active_comm_id;
	r->local_qpn = c->passive_qpn;
	r->starting_psn = c->active_psn;
	r->target_ack_delay = 15;
	r->rnr_retry_count = 7;
	r->local_ca_guid = mac_guid(c->passive_mac);
}

static void build_rtu(const struct conn_param *c, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_RTU, c->tid);
	m->rtu.local_comm_id = c->active_comm_id;
	m->rtu.remote_comm_id = c->passive_comm_id;
}

/* DREQ from the side `active` (else passive) of c, under tid. */
static void build_dreq_drep(const struct conn_param *c, bool active, uint64_t tid, struct wire_cm_msg *dreq,
			    struct wire_cm_msg *drep)
{
	uint32_t self = active ? c->active_comm_id : c->passive_comm_id;
	uint32_t peer = active ? c->passive_comm_id : c->active_comm_id;
	memset(dreq, 0, sizeof(*dreq));
	dreq->hdr = wire_cm_hdr(WIRE_CM_ATTR_DREQ, tid);
	dreq->dreq.local_comm_id = self;
	dreq->dreq.remote_comm_id = peer;
	dreq->dreq.remote_qpn_eecn = active ? c->passive_qpn : c->active_qpn;
	memset(drep, 0, sizeof(*drep));
	drep->hdr = wire_cm_hdr(WIRE_CM_ATTR_DREP, tid);
	drep->drep.local_comm_id = peer;
	drep->drep.remote_comm_id = self;
}

static void check_built(const struct wire_cm_msg *m, size_t idx, const char *what)
{
	uint8_t out[WIRE_MAD_LEN];
	CHECK_ERR(wire_cm_encode(m, out, sizeof(out)), (int)WIRE_MAD_LEN);
	CHECK(idx < n_mads);
	if (idx < n_mads)
		CHECK_SAME_MAD(out, mads[idx].b, what);
}

static void test_built(void)
{
	const struct conn_param c[2] = {
		{ .tid = 0x00000002288af21dull, .active_comm_id = 0x1df28a28, .passive_comm_id = 0x813b70b3,
		  .active_qpn = 0x42, .passive_qpn = 0x42, .active_psn = 7541627, .passive_psn = 10459192,
		  .active_ip = "10.77.0.12", .passive_ip = "10.77.0.11", .active_port = 41091, .passive_port = 18515,
		  .active_mac = { 0x52, 0x54, 0, 0x77, 0, 2 }, .passive_mac = { 0x52, 0x54, 0, 0x77, 0, 1 } },
		{ .tid = 0x00000002288af21aull, .active_comm_id = 0x1af28a28, .passive_comm_id = 0x8f3b70b3,
		  .active_qpn = 0x43, .passive_qpn = 0x43, .active_psn = 12746380, .passive_psn = 0x1d9ee9,
		  .active_ip = "10.77.0.12", .passive_ip = "10.77.0.11", .active_port = 45492, .passive_port = 18515,
		  .active_mac = { 0x52, 0x54, 0, 0x77, 0, 2 }, .passive_mac = { 0x52, 0x54, 0, 0x77, 0, 1 } },
	};
	struct wire_cm_msg m, m2;
	for (int k = 0; k < 2; k++) {
		build_req(&c[k], &m);
		check_built(&m, (size_t)k * 3, "built REQ");
		build_rep(&c[k], &m);
		check_built(&m, (size_t)k * 3 + 1, "built REP");
		build_rtu(&c[k], &m);
		check_built(&m, (size_t)k * 3 + 2, "built RTU");
	}
	/* Connection 2 closed by the client, connection 1 by the server. */
	build_dreq_drep(&c[1], true, 0x00000002288af21aull, &m, &m2);
	check_built(&m, 6, "built DREQ");
	check_built(&m2, 7, "built DREP");
	build_dreq_drep(&c[0], false, 0x00000002b3703b81ull, &m, &m2);
	check_built(&m, 8, "built DREQ");
	check_built(&m2, 9, "built DREP");
}

/* ---- (c) malformed input -------------------------------------------------- */

/* A valid MAD of each kind the capture lacks, built with non-zero fields. */
static void build_other(uint16_t attr, uint8_t out[WIRE_MAD_LEN])
{
	struct wire_cm_msg m;
	memset(&m, 0, sizeof(m));
	m.hdr = wire_cm_hdr(attr, 0x1122334455667788ull);
	switch (attr) {
	case WIRE_CM_ATTR_MRA:
		m.mra = (struct wire_cm_mra){ .local_comm_id = 1, .remote_comm_id = 2, .message_mraed = WIRE_CM_MSG_REP,
					      .service_timeout = 31 };
		m.mra.private_data[221] = 0xaa;
		break;
	case WIRE_CM_ATTR_REJ:
		m.rej = (struct wire_cm_rej){ .local_comm_id = 3, .remote_comm_id = 4, .message_rejected = WIRE_CM_MSG_REQ,
					      .reject_info_length = 72, .reason = WIRE_CM_REJ_CONSUMER_DEFINED };
		m.rej.ari[71] = 0x55;
		m.rej.private_data[147] = 0x66;
		break;
	case WIRE_CM_ATTR_SIDR_REQ:
		m.sidr_req = (struct wire_cm_sidr_req){ .request_id = 5, .pkey = 0xffff,
							.service_id = wire_rdma_cm_service_id(WIRE_RDMA_PS_UDP, 7174) };
		m.sidr_req.private_data[215] = 0x77;
		break;
	case WIRE_CM_ATTR_SIDR_REP:
		m.sidr_rep = (struct wire_cm_sidr_rep){ .request_id = 5, .status = 0, .additional_info_length = 72,
							.qpn = 0xabcdef, .service_id = 0x0000000001111c06ull,
							.qkey = 0x01234567 };
		m.sidr_rep.class_port_info[71] = 0x88;
		m.sidr_rep.private_data[135] = 0x99;
		break;
	}
	CHECK_ERR(wire_cm_encode(&m, out, WIRE_MAD_LEN), (int)WIRE_MAD_LEN);
}

static int decode(const uint8_t *b, size_t len)
{
	struct wire_cm_msg m;
	return wire_cm_decode(b, len, &m);
}

static void test_truncation_and_header(void)
{
	uint8_t b[WIRE_MAD_LEN + 8];
	struct wire_mad_hdr h;
	for (size_t i = 0; i < n_mads; i++) {
		for (size_t len = 0; len < WIRE_MAD_LEN; len++) {
			CHECK_ERR(decode(mads[i].b, len), WIRE_E_TRUNCATED);
			CHECK_ERR(wire_mad_decode_hdr(mads[i].b, len, &h), WIRE_E_TRUNCATED);
		}
		/* Bytes after the MAD are ignored. */
		memcpy(b, mads[i].b, WIRE_MAD_LEN);
		memset(b + WIRE_MAD_LEN, 0xee, 8);
		CHECK_ERR(decode(b, sizeof(b)), WIRE_OK);
	}
	if (!n_mads)
		return;
	const uint8_t *req = mads[0].b;
	struct { size_t at; uint8_t v; int want; } cases[] = {
		{ 0, 0, WIRE_E_MAD_VERSION }, { 0, 2, WIRE_E_MAD_VERSION }, { 0, 0xff, WIRE_E_MAD_VERSION },
		{ 2, 1, WIRE_E_MAD_VERSION }, { 2, 3, WIRE_E_MAD_VERSION }, { 2, 0, WIRE_E_MAD_VERSION },
		{ 1, 0x01, WIRE_E_MAD_CLASS }, { 1, 0x03, WIRE_E_MAD_CLASS }, { 1, 0x87, WIRE_E_MAD_CLASS },
		{ 3, WIRE_MAD_METHOD_GET, WIRE_E_FIELD }, { 3, 0x83, WIRE_E_FIELD }, { 3, WIRE_MAD_METHOD_GET_RESP, WIRE_E_FIELD },
		{ 17, 0x00, WIRE_E_MAD_ATTR }, { 17, 0x01, WIRE_E_MAD_ATTR }, { 17, 0x19, WIRE_E_MAD_ATTR },
		{ 17, 0x1a, WIRE_E_MAD_ATTR }, { 17, 0x1b, WIRE_E_MAD_ATTR }, { 17, 0xff, WIRE_E_MAD_ATTR },
		{ 16, 0x01, WIRE_E_MAD_ATTR },
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		memcpy(b, req, WIRE_MAD_LEN);
		b[cases[k].at] = cases[k].v;
		CHECK_ERR(decode(b, WIRE_MAD_LEN), cases[k].want);
	}
	/* The generic header decoder takes any class and attribute. */
	memcpy(b, req, WIRE_MAD_LEN);
	b[1] = 0x03;
	b[17] = 0x35;
	CHECK_ERR(wire_mad_decode_hdr(b, WIRE_MAD_LEN, &h), WIRE_OK);
	CHECK(h.mgmt_class == 0x03 && h.attr_id == 0x0035 && h.tid == 0x00000002288af21dull);
	b[0] = 2;
	CHECK_ERR(wire_mad_decode_hdr(b, WIRE_MAD_LEN, &h), WIRE_E_MAD_VERSION);
	/* Header order: base version first, then class, then class version. */
	memcpy(b, req, WIRE_MAD_LEN);
	b[1] = 0x01;
	b[2] = 9;
	CHECK_ERR(decode(b, WIRE_MAD_LEN), WIRE_E_MAD_CLASS);
	b[0] = 9;
	CHECK_ERR(decode(b, WIRE_MAD_LEN), WIRE_E_MAD_VERSION);
	CHECK_ERR(decode(NULL, WIRE_MAD_LEN), WIRE_E_FIELD);
}

static void test_bad_fields(void)
{
	uint8_t b[WIRE_MAD_LEN];
	if (!n_mads)
		return;
	const size_t D = WIRE_MAD_HDR_LEN;
	/* REQ path MTU (byte 50, top nibble): only 1..5. */
	for (unsigned mtu = 0; mtu < 16; mtu++) {
		memcpy(b, mads[0].b, WIRE_MAD_LEN);
		b[D + 50] = (uint8_t)((b[D + 50] & 0x0f) | mtu << 4);
		CHECK_ERR(decode(b, WIRE_MAD_LEN), mtu >= 1 && mtu <= 5 ? WIRE_OK : WIRE_E_FIELD);
	}
	/* Transport service type (byte 43 bits 2..1): 3 only with extended
	 * transport type (byte 51 low 3 bits) 1 = XRC. */
	for (unsigned tst = 0; tst < 4; tst++)
		for (unsigned ext = 0; ext < 8; ext++) {
			memcpy(b, mads[0].b, WIRE_MAD_LEN);
			b[D + 43] = (uint8_t)((b[D + 43] & ~0x06) | tst << 1);
			b[D + 51] = (uint8_t)((b[D + 51] & ~0x07) | ext);
			CHECK_ERR(decode(b, WIRE_MAD_LEN), tst != 3 || ext == 1 ? WIRE_OK : WIRE_E_FIELD);
		}
	/* MRA message MRAed, REJ message rejected: 3 is reserved. */
	uint8_t mra[WIRE_MAD_LEN], rej[WIRE_MAD_LEN], sidr_req[WIRE_MAD_LEN], sidr_rep[WIRE_MAD_LEN];
	build_other(WIRE_CM_ATTR_MRA, mra);
	build_other(WIRE_CM_ATTR_REJ, rej);
	build_other(WIRE_CM_ATTR_SIDR_REQ, sidr_req);
	build_other(WIRE_CM_ATTR_SIDR_REP, sidr_rep);
	CHECK_ERR(decode(mra, WIRE_MAD_LEN), WIRE_OK);
	CHECK_ERR(decode(rej, WIRE_MAD_LEN), WIRE_OK);
	CHECK_ERR(decode(sidr_req, WIRE_MAD_LEN), WIRE_OK);
	CHECK_ERR(decode(sidr_rep, WIRE_MAD_LEN), WIRE_OK);
	for (unsigned msg = 0; msg < 4; msg++) {
		memcpy(b, mra, WIRE_MAD_LEN);
		b[D + 8] = (uint8_t)(msg << 6);
		CHECK_ERR(decode(b, WIRE_MAD_LEN), msg < 3 ? WIRE_OK : WIRE_E_FIELD);
		memcpy(b, rej, WIRE_MAD_LEN);
		b[D + 8] = (uint8_t)(msg << 6);
		CHECK_ERR(decode(b, WIRE_MAD_LEN), msg < 3 ? WIRE_OK : WIRE_E_FIELD);
	}
	/* REJ reject info length (byte 9, top 7 bits) and SIDR_REP additional
	 * info length (byte 5): at most the 72 bytes there are. */
	for (unsigned n = 0; n < 128; n++) {
		memcpy(b, rej, WIRE_MAD_LEN);
		b[D + 9] = (uint8_t)(n << 1);
		CHECK_ERR(decode(b, WIRE_MAD_LEN), n <= 72 ? WIRE_OK : WIRE_E_LENGTH);
	}
	for (unsigned n = 0; n < 256; n++) {
		memcpy(b, sidr_rep, WIRE_MAD_LEN);
		b[D + 5] = (uint8_t)n;
		CHECK_ERR(decode(b, WIRE_MAD_LEN), n <= 72 ? WIRE_OK : WIRE_E_LENGTH);
	}
	/* REJ reasons and SIDR statuses are the receiver's to judge. */
	memcpy(b, rej, WIRE_MAD_LEN);
	b[D + 10] = 0xff;
	b[D + 11] = 0xff;
	CHECK_ERR(decode(b, WIRE_MAD_LEN), WIRE_OK);
	memcpy(b, sidr_rep, WIRE_MAD_LEN);
	b[D + 4] = 0xff;
	CHECK_ERR(decode(b, WIRE_MAD_LEN), WIRE_OK);

	/* The decoded values of the built messages sit where the kernel's
	 * ibta_vol1_c12.h says. */
	struct wire_cm_msg m;
	CHECK_ERR(wire_cm_decode(rej, WIRE_MAD_LEN, &m), WIRE_OK);
	CHECK(rej[D + 3] == 3 && rej[D + 7] == 4 && rej[D + 9] == 72 << 1 && rej[D + 11] == 28);
	CHECK(rej[D + 12 + 71] == 0x55 && rej[D + 84 + 147] == 0x66);
	CHECK(m.rej.reason == 28 && m.rej.ari[71] == 0x55 && m.rej.private_data[147] == 0x66);
	CHECK(mra[D + 8] == 0x40 && mra[D + 9] == 31 << 3 && mra[D + 10 + 221] == 0xaa);
	CHECK(sidr_req[D + 4] == 0xff && sidr_req[D + 5] == 0xff && sidr_req[D + 14] == 0x1c && sidr_req[D + 15] == 0x06);
	CHECK(sidr_req[D + 13] == 0x11 && sidr_req[D + 16 + 215] == 0x77);
	CHECK(sidr_rep[D + 5] == 72 && sidr_rep[D + 8] == 0xab && sidr_rep[D + 10] == 0xef && sidr_rep[D + 11] == 0);
	CHECK(sidr_rep[D + 12 + 5] == 0x11 && sidr_rep[D + 20] == 0x01 && sidr_rep[D + 23] == 0x67);
	CHECK(sidr_rep[D + 24 + 71] == 0x88 && sidr_rep[D + 96 + 135] == 0x99);
}

/* Every single-bit flip of every captured MAD: decode, and if it decodes,
 * re-encode.  A flip of a field bit re-encodes to the flipped bytes; a
 * flip of a reserved bit re-encodes to the original.  Counts the reserved
 * bits per message: the kernel's tables leave, besides the header's
 * bytes 18..19 (16 bits), REQ bytes 4..7 and 24..27, 6 bits at 90..91 and
 * at 134..135, 3 each at 94, 95, 138 and 2 at 139 (87 bits); REP bytes
 * 15, 19, 23 and 4 bits of 27 (28); DREQ byte 11 (8); RTU, DREP none. */
static void test_bit_flips(void)
{
	uint8_t b[WIRE_MAD_LEN], out[WIRE_MAD_LEN];
	for (size_t i = 0; i < n_mads; i++) {
		const uint8_t *orig = mads[i].b;
		uint16_t attr = (uint16_t)(orig[16] << 8 | orig[17]);
		unsigned reserved = 0;
		for (unsigned bit = 0; bit < WIRE_MAD_LEN * 8; bit++) {
			size_t at = bit / 8;
			memcpy(b, orig, WIRE_MAD_LEN);
			b[at] ^= (uint8_t)(1u << (bit % 8));
			struct wire_cm_msg m;
			int err = wire_cm_decode(b, WIRE_MAD_LEN, &m);
			if (at == 0 || at == 2)
				CHECK_ERR(err, WIRE_E_MAD_VERSION);
			else if (at == 1)
				CHECK_ERR(err, WIRE_E_MAD_CLASS);
			else if (at == 3)
				CHECK_ERR(err, WIRE_E_FIELD);
			if (err) {
				CHECK(err == WIRE_E_MAD_VERSION || err == WIRE_E_MAD_CLASS || err == WIRE_E_MAD_ATTR ||
				      err == WIRE_E_FIELD || err == WIRE_E_LENGTH);
				continue;
			}
			CHECK_ERR(wire_cm_encode(&m, out, sizeof(out)), (int)WIRE_MAD_LEN);
			if (m.hdr.attr_id != attr) {
				/* Another message's body: re-encoding is stable. */
				uint8_t again[WIRE_MAD_LEN];
				struct wire_cm_msg m2;
				CHECK_ERR(wire_cm_decode(out, sizeof(out), &m2), WIRE_OK);
				CHECK_ERR(wire_cm_encode(&m2, again, sizeof(again)), (int)WIRE_MAD_LEN);
				CHECK(!memcmp(out, again, WIRE_MAD_LEN));
				continue;
			}
			if (!memcmp(out, orig, WIRE_MAD_LEN))
				reserved++;
			else
				CHECK_SAME_MAD(out, b, "re-encoded bit flip");
		}
		unsigned want = 16;
		switch (attr) {
		case WIRE_CM_ATTR_REQ: want += 87; break;
		case WIRE_CM_ATTR_REP: want += 28; break;
		case WIRE_CM_ATTR_DREQ: want += 8; break;
		}
		CHECK(reserved == want, "frame %zu (%s): %u reserved bits, want %u", mads[i].frame,
		      wire_cm_attr_name(attr), reserved, want);
	}
}

static void test_encoder_refuses(void)
{
	struct wire_cm_msg m;
	uint8_t out[WIRE_MAD_LEN];
	if (!n_mads)
		return;
	CHECK_ERR(wire_cm_decode(mads[0].b, WIRE_MAD_LEN, &m), WIRE_OK);
	struct wire_cm_msg bad = m;
	CHECK_ERR(wire_cm_encode(&m, out, WIRE_MAD_LEN - 1), WIRE_E_NOSPACE);
	CHECK_ERR(wire_cm_encode(NULL, out, sizeof(out)), WIRE_E_FIELD);
	bad.req.local_qpn = 1u << 24;
	CHECK_ERR(wire_cm_encode(&bad, out, sizeof(out)), WIRE_E_FIELD);
	bad = m;
	bad.req.starting_psn = 1u << 24;
	CHECK_ERR(wire_cm_encode(&bad, out, sizeof(out)), WIRE_E_FIELD);
	bad = m;
	bad.req.remote_cm_response_timeout = 32;
	CHECK_ERR(wire_cm_encode(&bad, out, sizeof(out)), WIRE_E_FIELD);
	bad = m;
	bad.req.primary.flow_label = 1u << 20;
	CHECK_ERR(wire_cm_encode(&bad, out, sizeof(out)), WIRE_E_FIELD);
	bad = m;
	bad.req.alternate.sl = 16;
	CHECK_ERR(wire_cm_encode(&bad, out, sizeof(out)), WIRE_E_FIELD);
	bad = m;
	bad.req.path_mtu = 6;
	CHECK_ERR(wire_cm_encode(&bad, out, sizeof(out)), WIRE_E_FIELD);
	bad = m;
	bad.hdr.base_version = 2;
	CHECK_ERR(wire_cm_encode(&bad, out, sizeof(out)), WIRE_E_MAD_VERSION);
	bad = m;
	bad.hdr.attr_id = WIRE_CM_ATTR_LAP;
	CHECK_ERR(wire_cm_encode(&bad, out, sizeof(out)), WIRE_E_MAD_ATTR);
	/* A refused encode writes nothing. */
	memset(out, 0x5a, sizeof(out));
	CHECK_ERR(wire_cm_encode(&bad, out, sizeof(out)), WIRE_E_MAD_ATTR);
	CHECK(out[0] == 0x5a && out[255] == 0x5a);
	/* The SAP-supported bit shares byte 139 with the alternate ACK timeout. */
	bad = m;
	bad.req.sap_supported = true;
	bad.req.alternate.local_ack_timeout = 31;
	CHECK_ERR(wire_cm_encode(&bad, out, sizeof(out)), (int)WIRE_MAD_LEN);
	CHECK(out[WIRE_MAD_HDR_LEN + 139] == (31 << 3 | 0x04));
	struct wire_cm_msg back;
	CHECK_ERR(wire_cm_decode(out, sizeof(out), &back), WIRE_OK);
	CHECK(back.req.sap_supported && back.req.alternate.local_ack_timeout == 31);
}

/* ---- helpers ------------------------------------------------------------ */

static void test_helpers(void)
{
	CHECK(wire_rdma_cm_service_id(WIRE_RDMA_PS_TCP, 18515) == 0x0000000001064853ull);
	CHECK(wire_rdma_cm_service_id(WIRE_RDMA_PS_UDP, 1) == 0x0000000001110001ull);
	CHECK(wire_rdma_cm_service_id(WIRE_RDMA_PS_IB, 0xffff) == 0x00000000013fffffull);
	CHECK(wire_rdma_cm_service_id(WIRE_RDMA_PS_IPOIB, 2) == 0x0000000000020002ull);
	uint16_t ps = 0, port = 0;
	CHECK(wire_rdma_cm_service_id_parse(0x0000000001110c00ull, &ps, &port));
	CHECK(ps == WIRE_RDMA_PS_UDP && port == 0x0c00);
	CHECK(wire_rdma_cm_service_id_parse(0x0000000001064853ull, NULL, NULL));
	CHECK(!wire_rdma_cm_service_id_parse(0x0000000001070001ull, &ps, &port));
	CHECK(!wire_rdma_cm_service_id_parse(0x1000000001060001ull, &ps, &port));

	CHECK(wire_cm_timeout_ns(0) == 4096);
	CHECK(wire_cm_timeout_ns(20) == 4294967296ull);          /* ~4.3 s: CMA_CM_RESPONSE_TIMEOUT */
	CHECK(wire_cm_timeout_ns(31) == 4096ull << 31);
	CHECK(wire_ib_mtu_bytes(1) == 256 && wire_ib_mtu_bytes(5) == 4096);
	CHECK(wire_ib_mtu_bytes(0) == 0 && wire_ib_mtu_bytes(6) == 0);

	static const struct {
		uint16_t id;
		const char *name;
	} attrs[] = {
		{ 0x0001, "ClassPortInfo" }, { 0x0010, "REQ" }, { 0x0011, "MRA" }, { 0x0012, "REJ" },
		{ 0x0013, "REP" }, { 0x0014, "RTU" }, { 0x0015, "DREQ" }, { 0x0016, "DREP" },
		{ 0x0017, "SIDR_REQ" }, { 0x0018, "SIDR_REP" }, { 0x0019, "LAP" }, { 0x001a, "APR" },
	};
	for (size_t k = 0; k < sizeof(attrs) / sizeof(attrs[0]); k++) {
		const char *name = wire_cm_attr_name(attrs[k].id);
		CHECK(name && !strcmp(name, attrs[k].name));
	}
	CHECK(!wire_cm_attr_name(0) && !wire_cm_attr_name(2) && !wire_cm_attr_name(0x1b) && !wire_cm_attr_name(0xffff));
	CHECK(!strcmp(wire_cm_rej_reason_name(1), "no-QP"));
	CHECK(!strcmp(wire_cm_rej_reason_name(8), "invalid-service-ID"));
	CHECK(!strcmp(wire_cm_rej_reason_name(10), "stale-connection"));
	CHECK(!strcmp(wire_cm_rej_reason_name(28), "consumer-defined"));
	CHECK(!strcmp(wire_cm_rej_reason_name(35), "vendor-option-not-supported"));
	for (unsigned r = 1; r <= 33; r++)
		CHECK(wire_cm_rej_reason_name((uint16_t)r) != NULL);
	CHECK(!wire_cm_rej_reason_name(0) && !wire_cm_rej_reason_name(34) && !wire_cm_rej_reason_name(36));
	CHECK(!wire_cm_rej_reason_name(0xffff));

	/* RDMA-CM IP header: checks and an IPv6 round trip. */
	uint8_t pd[WIRE_CMA_HDR_LEN];
	struct wire_cma_hdr h = { .cma_version = 0, .ip_version = 6, .src_port = 0x1234 };
	inet_pton(AF_INET6, "fe80::1", h.src_addr);
	inet_pton(AF_INET6, "2001:db8::2", h.dst_addr);
	CHECK_ERR(wire_cma_hdr_encode(&h, pd, sizeof(pd)), (int)WIRE_CMA_HDR_LEN);
	CHECK(pd[0] == 0 && pd[1] == 0x60 && pd[2] == 0x12 && pd[3] == 0x34 && pd[4] == 0xfe && pd[35] == 2);
	struct wire_cma_hdr back;
	CHECK_ERR(wire_cma_hdr_decode(pd, sizeof(pd), &back), WIRE_OK);
	CHECK(!memcmp(&back, &h, sizeof(h)));
	CHECK_ERR(wire_cma_hdr_decode(pd, WIRE_CMA_HDR_LEN - 1, &back), WIRE_E_TRUNCATED);
	CHECK_ERR(wire_cma_hdr_encode(&h, pd, WIRE_CMA_HDR_LEN - 1), WIRE_E_NOSPACE);
	pd[1] = 0x6f;                           /* reserved low nibble: ignored */
	CHECK_ERR(wire_cma_hdr_decode(pd, sizeof(pd), &back), WIRE_OK);
	pd[1] = 0x50;
	CHECK_ERR(wire_cma_hdr_decode(pd, sizeof(pd), &back), WIRE_E_FIELD);
	pd[1] = 0x40;
	pd[0] = 1;
	CHECK_ERR(wire_cma_hdr_decode(pd, sizeof(pd), &back), WIRE_E_FIELD);
	h.ip_version = 5;
	CHECK_ERR(wire_cma_hdr_encode(&h, pd, sizeof(pd)), WIRE_E_FIELD);
}

/* The one-line decode names each message and its key fields. */
static void test_format(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/rc_rdmacm_connect.pcap", dir);
	struct capture cap = load_capture(path);
	static const char *const want[][2] = {
		{ "1", " CM REQ tid=0x00000002288af21d lcid=0x1df28a28 sid=0x0000000001060000+18515 RC qpn=0x000042 "
		       "psn=0x9f9838 mtu=1024 rr=0 id=0 retry=7 rnr=7 pd=36B ip 10.77.0.12:41091->10.77.0.11:18515" },
		{ "2", " CM REP tid=0x00000002288af21d lcid=0x813b70b3 rcid=0x1df28a28 qpn=0x000042 psn=0x73137b "
		       "rr=0 id=0 rnr=7 pd=0B" },
		{ "3", " CM RTU tid=0x00000002288af21d lcid=0x1df28a28 rcid=0x813b70b3 pd=0B" },
		{ "61", " CM DREQ tid=0x00000002288af21a lcid=0x1af28a28 rcid=0x8f3b70b3 qpn=0x000043 pd=0B" },
		{ "64", " CM DREP tid=0x00000002b3703b81 lcid=0x1df28a28 rcid=0x813b70b3 pd=0B" },
	};
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		size_t i = (size_t)atoi(want[k][0]) - 1;
		struct wire_pkt p;
		char line[1024];
		if (i >= cap.count || wire_decode_eth(cap.frames[i].data, cap.frames[i].len, true, &p))
			continue;
		wire_format_pkt(&p, line, sizeof(line));
		const char *at = strstr(line, " len=256");
		CHECK(at && !strcmp(at + 8, want[k][1]), "frame %s: got \"%s\", want \"...len=256%s\"", want[k][0],
		      line, want[k][1]);
	}
	/* A MAD that does not decode says so; other classes are named. */
	struct wire_pkt p;
	if (cap.count && !wire_decode_eth(cap.frames[0].data, cap.frames[0].len, false, &p)) {
		char line[1024];
		uint8_t mad[WIRE_MAD_LEN];
		memcpy(mad, p.ib.payload, WIRE_MAD_LEN);
		p.ib.payload = mad;
		mad[WIRE_MAD_HDR_LEN + 50] = 0x07;      /* MTU code 0 */
		wire_format_pkt(&p, line, sizeof(line));
		CHECK(strstr(line, " CM REQ tid=0x00000002288af21d malformed WIRE_E_FIELD") != NULL);
		mad[17] = 0x19;
		wire_format_pkt(&p, line, sizeof(line));
		CHECK(strstr(line, " CM LAP tid=0x00000002288af21d") && !strstr(line, "malformed"));
		mad[1] = 0x03;
		wire_format_pkt(&p, line, sizeof(line));
		CHECK(strstr(line, " MAD class=0x03 method=0x03 attr=0x0019 tid=0x00000002288af21d") != NULL);
		p.ib.payload_len = 100;
		wire_format_pkt(&p, line, sizeof(line));
		CHECK(strstr(line, " len=100 MAD-malformed") != NULL);
	}
	free_capture(&cap);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s VECTOR_DIR\n", argv[0]);
		return 2;
	}
	load(argv[1]);
	test_capture_roundtrip();
	test_capture_fields();
	test_built();
	test_truncation_and_header();
	test_bad_fields();
	test_bit_flips();
	test_encoder_refuses();
	test_helpers();
	test_format(argv[1]);
	return check_exit("test_cm_mad");
}
