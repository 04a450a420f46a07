/*
 * test_cm_capture.c — the QP attributes softrnic's CM gives each side of a
 * connection, checked against what the Linux kernel's Soft-RoCE did on the
 * wire with the same REQ and REP.
 *
 * The capture (tests/vectors/rxe/rc_rdmacm_connect.pcap, ib_send_bw -R
 * between two kernels) holds a REQ, its REP and RTU, and then the RC
 * packets both kernels sent over that connection.  Those packets say what
 * each kernel's QP was set to: the PSN each side sent first, the QPN it
 * sent to, the P_Key, the IP traffic class.  This test plays each side in
 * turn with softrnic's cm:
 *
 *   passive  the capture's REQ goes into a cm listening on its service ID;
 *            the cm accepts with the capture's REP values, and the REP it
 *            sends must carry the same Starting PSN; cm_qp_attr_passive
 *            must then give the QP the passive kernel's QP had;
 *   active   a cm connects with the capture's REQ values (its REQ must
 *            carry the same Starting PSN); the capture's REP, re-addressed
 *            to that REQ's comm ID and transaction ID, goes into it, and
 *            cm_qp_attr_active must give the QP the active kernel's had.
 *
 * Two cm instances agreeing with each other prove nothing about the rule
 * (a rule read backwards on both ends passes every self-test); here the
 * other end is the kernel.  Reversing the Starting PSN rule fails both
 * cases.
 *
 * With --rule, the same reading checks only the rule itself on a capture
 * of any connection (tests/rdmacm/cm_psn_rule.sh gives it one of two
 * softrnic processes, rping through librdmacm.so.1): each side's first
 * request carries the Starting PSN of the *other* side's REQ or REP.
 *
 * usage: cm_capture [--rule] PCAP
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm.h"
#include "../check.h"
#include "wire/mad.h"
#include "wire/pcap.h"
#include "wire/wire.h"

#define MS 1000000ull

/* ---- what the capture says ------------------------------------------------ */

struct side_seen {
	uint8_t gid[16];                /* its address, IPv4-mapped */
	bool sent_data;
	uint32_t first_psn;             /* of its first request packet */
	uint32_t dqpn;                  /* where its requests went */
	uint16_t pkey;
	uint8_t dscp, ttl;
	uint32_t max_payload;
	uint32_t requests;
	bool acked_first;               /* the peer answered first_psn */
};

struct capture {
	uint8_t req_mad[WIRE_MAD_LEN], rep_mad[WIRE_MAD_LEN];
	struct wire_cm_msg req, rep;
	bool have_req, have_rep, have_rtu;
	struct side_seen active, passive;
};

static bool is_request(uint8_t opcode)
{
	const struct wire_opcode_info *oi = wire_opcode_info(opcode);
	return oi && (oi->flags & WIRE_F_REQUEST) && (oi->qp_types & WIRE_QP_RC) && (opcode >> 5) == 0;
}

/* The first connection of the capture: its REQ, REP and RTU, then the RC
 * traffic between its two QPs. */
static int read_capture(const char *path, struct capture *c)
{
	struct pcap_reader r;
	struct pcap_record rec;
	static uint8_t buf[PCAP_MAX_SNAPLEN];
	memset(c, 0, sizeof(*c));
	if (pcap_open_read(&r, path)) {
		FAIL("%s: %s", path, strerror(errno));
		return -1;
	}
	int n = 0, rc;
	while ((rc = pcap_read(&r, &rec, buf, sizeof(buf))) == 1) {
		struct wire_pkt p;
		n++;
		if (wire_decode_eth(rec.data, rec.caplen, true, &p) < 0) {
			FAIL("packet %d: not a RoCEv2 packet with a good ICRC", n);
			continue;
		}
		const struct wire_bth *b = &p.ib.bth;
		if (b->dqpn == 1) {
			struct wire_cm_msg m;
			if (p.ib.payload_len < WIRE_MAD_LEN || wire_cm_decode(p.ib.payload, p.ib.payload_len, &m) < 0)
				continue;
			if (m.hdr.attr_id == WIRE_CM_ATTR_REQ && !c->have_req) {
				c->req = m;
				memcpy(c->req_mad, p.ib.payload, WIRE_MAD_LEN);
				memcpy(c->active.gid, p.ip.src, 16);
				memcpy(c->passive.gid, p.ip.dst, 16);
				c->have_req = true;
			} else if (m.hdr.attr_id == WIRE_CM_ATTR_REP && c->have_req && !c->have_rep &&
				   m.rep.remote_comm_id == c->req.req.local_comm_id) {
				c->rep = m;
				memcpy(c->rep_mad, p.ib.payload, WIRE_MAD_LEN);
				c->have_rep = true;
			} else if (m.hdr.attr_id == WIRE_CM_ATTR_RTU && c->have_rep &&
				   m.rtu.local_comm_id == c->req.req.local_comm_id) {
				c->have_rtu = true;
			}
			continue;
		}
		if (!c->have_rtu)
			continue;
		bool from_active = memcmp(p.ip.src, c->active.gid, 16) == 0;
		bool from_passive = memcmp(p.ip.src, c->passive.gid, 16) == 0;
		struct side_seen *s = from_active ? &c->active : from_passive ? &c->passive : NULL;
		struct side_seen *peer = from_active ? &c->passive : &c->active;
		/* Only the connection's own QPs: the active's requests go to the
		 * REP's QPN, the passive's to the REQ's. */
		uint32_t to = from_active ? c->rep.rep.local_qpn : c->req.req.local_qpn;
		if (!s || b->dqpn != to)
			continue;
		if (is_request(b->opcode)) {
			if (!s->sent_data) {
				s->sent_data = true;
				s->first_psn = b->psn;
				s->dqpn = b->dqpn;
				s->pkey = b->pkey;
				s->dscp = p.ip.dscp;
				s->ttl = p.ip.ttl;
			}
			s->requests++;
			if (p.ib.payload_len > s->max_payload)
				s->max_payload = p.ib.payload_len;
		} else if (peer->sent_data && b->psn == peer->first_psn && (b->opcode >> 5) == 0 &&
			   wire_opcode_info(b->opcode) && (wire_opcode_info(b->opcode)->flags & WIRE_F_RESPONSE)) {
			/* an ACK, or the first READ response / atomic ACK */
			peer->acked_first = true;
		}
	}
	pcap_close_read(&r);
	if (rc < 0)
		FAIL("%s: damaged after %d packets", path, n);
	if (!c->have_req || !c->have_rep || !c->have_rtu || !c->active.sent_data || !c->passive.sent_data) {
		FAIL("%s: no REQ/REP/RTU followed by data both ways (req %d rep %d rtu %d)", path, c->have_req,
			c->have_rep, c->have_rtu);
		return -1;
	}
	printf("capture: REQ qpn 0x%06x starting psn 0x%06x mtu %u; REP qpn 0x%06x starting psn 0x%06x\n",
	       c->req.req.local_qpn, c->req.req.starting_psn, c->req.req.path_mtu, c->rep.rep.local_qpn,
	       c->rep.rep.starting_psn);
	printf("capture: active sent from psn 0x%06x to qpn 0x%06x (%u requests), passive from 0x%06x to 0x%06x (%u)\n",
	       c->active.first_psn, c->active.dqpn, c->active.requests, c->passive.first_psn, c->passive.dqpn,
	       c->passive.requests);
	return 0;
}

/* ---- a cm with its outputs kept ------------------------------------------- */

struct node {
	struct cm *cm;
	uint8_t sent[8][WIRE_MAD_LEN];
	unsigned nsent;
	struct cm_event ev[8];
	unsigned nev;
	struct cm_req_info req;         /* copied: events point at cm memory */
	struct cm_rep_info rep;
};

static void on_send(void *ctx, const uint8_t dgid[16], const uint8_t mad[256])
{
	struct node *n = ctx;
	(void)dgid;
	if (n->nsent < 8)
		memcpy(n->sent[n->nsent++], mad, WIRE_MAD_LEN);
}

static void on_event(void *ctx, const struct cm_event *ev)
{
	struct node *n = ctx;
	if (n->nev >= 8)
		return;
	n->ev[n->nev++] = *ev;
	if (ev->type == CM_EV_REQ_RECEIVED)
		n->req = ev->u.req;
	if (ev->type == CM_EV_REP_RECEIVED)
		n->rep = ev->u.rep;
}

static int node_init(struct node *n, const uint8_t gid[16], uint32_t seed)
{
	struct cm_config cfg;
	cm_config_default(&cfg);
	memcpy(cfg.gid, gid, 16);
	cfg.ca_guid = 0x5eed000000000000ull | seed;
	cfg.seed = seed;
	memset(n, 0, sizeof(*n));
	struct cm_io io = { .ctx = n, .send_mad = on_send, .event = on_event };
	n->cm = cm_create(&cfg, &io);
	if (!n->cm) {
		FAIL("cm_create: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The last MAD the node sent, decoded; it must be of kind attr. */
static bool last_sent(struct node *n, uint16_t attr, struct wire_cm_msg *m)
{
	if (!n->nsent || wire_cm_decode(n->sent[n->nsent - 1], WIRE_MAD_LEN, m) < 0 || m->hdr.attr_id != attr) {
		FAIL("the cm sent no %s", wire_cm_attr_name(attr));
		return false;
	}
	return true;
}

/* ---- the QP against the kernel's ---------------------------------------------- */

/* `me` is what the capture shows of the side whose QP `a` describes, `peer`
 * of the other side. */
static void check_attr(const char *who, const struct cm_qp_attr *a, const struct side_seen *me,
		       const struct side_seen *peer)
{
	printf("%s: sq_psn 0x%06x rq_psn 0x%06x dest_qp 0x%06x mtu %u rd %u/%u timeout %u retry %u rnr %u "
	       "pkey 0x%04x tc %u hop %u\n",
	       who, a->sq_psn, a->rq_psn, a->dest_qp_num, a->path_mtu, a->max_rd_atomic, a->max_dest_rd_atomic,
	       a->timeout, a->retry_cnt, a->rnr_retry, a->pkey, a->traffic_class, a->hop_limit);
	if (a->sq_psn != me->first_psn)
		FAIL("%s: sq_psn 0x%06x, but the kernel on this side sent from 0x%06x", who, a->sq_psn,
			me->first_psn);
	if (a->rq_psn != peer->first_psn)
		FAIL("%s: rq_psn 0x%06x, but the peer sent from 0x%06x", who, a->rq_psn, peer->first_psn);
	if (!peer->acked_first)
		FAIL("%s: the peer never answered this side's first PSN", who);
	if (a->dest_qp_num != me->dqpn)
		FAIL("%s: dest_qp_num 0x%06x, but the kernel sent to 0x%06x", who, a->dest_qp_num, me->dqpn);
	if (a->pkey != me->pkey)
		FAIL("%s: pkey 0x%04x, the kernel's packets 0x%04x", who, a->pkey, me->pkey);
	if (a->traffic_class >> 2 != me->dscp)
		FAIL("%s: traffic class %u, the kernel's packets DSCP %u", who, a->traffic_class, me->dscp);
	if (a->hop_limit != me->ttl)
		FAIL("%s: hop limit %u, the kernel's packets TTL %u", who, a->hop_limit, me->ttl);
	uint32_t mtu_bytes = 128u << a->path_mtu;
	if (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096 || me->max_payload > mtu_bytes ||
	    peer->max_payload > mtu_bytes)
		FAIL("%s: path MTU %u bytes, payloads of %u / %u", who, mtu_bytes, me->max_payload,
			peer->max_payload);
}

/* ---- the two sides ---------------------------------------------------------- */

static void case_passive(const struct capture *c)
{
	check_begin("passive: the kernel's REQ into softrnic's cm, the QP against the kernel's passive side");
	struct node n;
	const struct wire_cm_req *kreq = &c->req.req;
	const struct wire_cm_rep *krep = &c->rep.rep;
	if (node_init(&n, c->passive.gid, 11))
		goto out;
	struct cm_listen *l;
	CHECK(cm_listen(n.cm, kreq->service_id, NULL, &l) == 0);
	cm_receive(n.cm, c->active.gid, c->req_mad, WIRE_MAD_LEN, 1 * MS);
	if (n.nev != 1 || n.ev[0].type != CM_EV_REQ_RECEIVED) {
		FAIL("no REQ_RECEIVED (%u events)", n.nev);
		goto out;
	}
	CHECK(n.req.qpn == kreq->local_qpn);
	CHECK(n.req.starting_psn == kreq->starting_psn);
	/* Accept as the kernel did: its REP's QPN, PSN, depths, RNR retries. */
	struct cm_rep_param rep = {
		.qpn = krep->local_qpn,
		.starting_psn = krep->starting_psn,
		.responder_resources = krep->responder_resources,
		.initiator_depth = krep->initiator_depth,
		.rnr_retry_count = krep->rnr_retry_count,
		.srq = krep->srq,
		.flow_control = krep->end_to_end_flow_control,
	};
	CHECK(cm_accept(n.ev[0].id, &rep, 2 * MS) == 0);
	struct wire_cm_msg sent;
	if (last_sent(&n, WIRE_CM_ATTR_REP, &sent)) {
		CHECK(sent.rep.starting_psn == krep->starting_psn);
		CHECK(sent.rep.local_qpn == krep->local_qpn);
	}
	struct cm_qp_attr a;
	cm_qp_attr_passive(&n.req, &rep, &a);
	check_attr("passive", &a, &c->passive, &c->active);
	/* What the REQ asked of this side's QP. */
	CHECK(a.retry_cnt == kreq->retry_count);
	CHECK(a.rnr_retry == kreq->rnr_retry_count);
	CHECK(a.timeout == kreq->primary.local_ack_timeout);
	CHECK(a.path_mtu == kreq->path_mtu);
	CHECK(a.max_dest_rd_atomic == krep->responder_resources);
out:
	if (n.cm)
		cm_destroy(n.cm);
	check_end_say(true);
}

static void case_active(const struct capture *c)
{
	check_begin("active: softrnic's cm connects as the kernel did, the kernel's REP in, the QP against the kernel's active side");
	struct node n;
	const struct wire_cm_req *kreq = &c->req.req;
	if (node_init(&n, c->active.gid, 12))
		goto out;
	struct cm_req_param p;
	cm_req_param_init(n.cm, &p);
	memcpy(p.dgid, c->passive.gid, 16);
	p.service_id = kreq->service_id;
	p.qpn = kreq->local_qpn;
	p.qp_type = IBV_QPT_RC;
	p.starting_psn = kreq->starting_psn;
	p.responder_resources = kreq->responder_resources;
	p.initiator_depth = kreq->initiator_depth;
	p.path_mtu = (enum ibv_mtu)kreq->path_mtu;
	p.retry_count = kreq->retry_count;
	p.rnr_retry_count = kreq->rnr_retry_count;
	p.local_ack_timeout = kreq->primary.local_ack_timeout;
	p.pkey = kreq->pkey;
	p.traffic_class = kreq->primary.traffic_class;
	p.flow_label = kreq->primary.flow_label;
	p.hop_limit = kreq->primary.hop_limit;
	p.sl = kreq->primary.sl;
	struct cm_id *id;
	if (cm_connect(n.cm, &p, NULL, 1 * MS, &id)) {
		FAIL("cm_connect refused the kernel's REQ values");
		goto out;
	}
	struct wire_cm_msg req;
	if (!last_sent(&n, WIRE_CM_ATTR_REQ, &req))
		goto out;
	CHECK(req.req.starting_psn == kreq->starting_psn);
	/* The kernel's REP, re-addressed to our REQ: only the comm ID it
	 * answers and the transaction ID change. */
	struct wire_cm_msg rep = c->rep;
	uint8_t mad[WIRE_MAD_LEN];
	rep.rep.remote_comm_id = req.req.local_comm_id;
	rep.hdr.tid = req.hdr.tid;
	if (wire_cm_encode(&rep, mad, sizeof(mad)) != (int)WIRE_MAD_LEN) {
		FAIL("the capture's REP does not encode again");
		goto out;
	}
	cm_receive(n.cm, c->passive.gid, mad, WIRE_MAD_LEN, 2 * MS);
	if (n.nev != 1 || n.ev[0].type != CM_EV_REP_RECEIVED) {
		FAIL("no REP_RECEIVED (%u events)", n.nev);
		goto out;
	}
	CHECK(n.rep.starting_psn == c->rep.rep.starting_psn);
	struct cm_qp_attr a;
	cm_qp_attr_active(&p, &n.rep, &a);
	check_attr("active", &a, &c->active, &c->passive);
	CHECK(a.rnr_retry == c->rep.rep.rnr_retry_count);
	CHECK(a.retry_cnt == kreq->retry_count);
	CHECK(a.max_dest_rd_atomic == c->rep.rep.initiator_depth);
	CHECK(cm_send_rtu(id, NULL, 0, 3 * MS) == 0);
out:
	if (n.cm)
		cm_destroy(n.cm);
	check_end_say(true);
}

static void case_rule(const struct capture *c)
{
	check_begin("rule: each side sends from the Starting PSN of the other side's message");
	if (c->active.first_psn != c->rep.rep.starting_psn)
		FAIL("the active side sent from 0x%06x; the REP's Starting PSN is 0x%06x (its own REQ's 0x%06x)",
			c->active.first_psn, c->rep.rep.starting_psn, c->req.req.starting_psn);
	if (c->passive.first_psn != c->req.req.starting_psn)
		FAIL("the passive side sent from 0x%06x; the REQ's Starting PSN is 0x%06x (its own REP's 0x%06x)",
			c->passive.first_psn, c->req.req.starting_psn, c->rep.rep.starting_psn);
	if (!c->active.acked_first || !c->passive.acked_first)
		FAIL("a side's first request was never answered (active %d, passive %d)", c->active.acked_first,
			c->passive.acked_first);
	check_end_say(true);
}

int main(int argc, char **argv)
{
	struct capture c;
	bool rule_only = argc == 3 && strcmp(argv[1], "--rule") == 0;
	if (argc != 2 && !rule_only) {
		fprintf(stderr, "usage: %s [--rule] PCAP\n", argv[0]);
		return 2;
	}
	const char *path = argv[argc - 1];
	check_begin("read %s", path);
	int rc = read_capture(path, &c);
	check_end_say(true);
	if (rc == 0) {
		case_rule(&c);
		if (!rule_only) {
			case_passive(&c);
			case_active(&c);
		}
	}
	printf("%d cases, %d failures\n", check_cases, check_failures);
	return check_exit("cm_capture");
}
