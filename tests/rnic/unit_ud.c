/*
 * unit_ud.c — the UD transport, address handles and multicast of the rnic
 * layer, end to end over three rnics joined by an in-test "switch": a
 * packet to a unicast GID goes to the node with that GID, a packet to a
 * multicast GID goes to every other node (as an IP multicast router
 * would), and every delivered packet carries a fully known IP header
 * (TTL, DSCP, ECN, IPv4 ID) so the GRH a receive reports can be compared
 * byte for byte with the header wire_encode_ip builds for the same packet.
 *
 * Cases: send/recv with immediate (completion fields, GRH bytes, the
 * packet on the wire), Q_Key mismatch dropped, controlled ("privileged")
 * Q_Key, message over the MTU (C10-93.1.1: silent success, no packet), receive
 * buffer too small, no receive WQE, multicast to several QPs on two
 * rnics with attach/detach rules, AH and WR validation, the UD modify
 * masks, and the IPv6 GRH layout.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/rnic.h"
#include "wire/wire.h"

#include "unit_util.h"

#define NODES 3
#define MAXQ 256
#define QKEY 0x11111111u
#define RX_TTL 61
#define RX_DSCP 10
#define RX_ID 0x1234

/* ---- the switch ---------------------------------------------------------- */

struct pkt {
	int from, to;
	struct rnic_gid dst;
	uint8_t dscp, ttl;
	uint16_t sport;
	size_t len;
	uint8_t data[WIRE_MAX_IB_PACKET];
};

struct net {
	struct rnic *r[NODES];
	struct rnic_gid gid[NODES];
	struct pkt *q;
	size_t qlen;
	struct pkt last;        /* the last packet xmitted, for wire checks */
	int joins[NODES], leaves[NODES];
	int fail_join;          /* errno the mcast hook returns, 0 = accept */
};

struct node {
	struct net *n;
	int id;
};
static struct node nodes[NODES];

static bool is_mcast(const struct rnic_gid *g)
{
	return g->raw[0] == 0xff || (g->raw[10] == 0xff && g->raw[11] == 0xff && (g->raw[12] & 0xf0) == 0xe0);
}

static void enqueue(struct net *n, int from, int to, const struct rnic_tx *tx)
{
	struct pkt *p;

	REQUIRE(n->qlen < MAXQ, "queue overflow");
	p = &n->q[n->qlen++];
	p->from = from;
	p->to = to;
	p->dst = tx->dst;
	p->dscp = tx->dscp;
	p->ttl = tx->ttl;
	p->sport = tx->sport;
	p->len = tx->ib_len;
	memcpy(p->data, tx->ib, tx->ib_len);
}

static void xmit(void *ctx, const struct rnic_tx *tx)
{
	struct node *me = ctx;
	struct net *n = me->n;

	n->last.from = me->id;
	n->last.dst = tx->dst;
	n->last.sport = tx->sport;
	n->last.dscp = tx->dscp;
	n->last.ttl = tx->ttl;
	n->last.len = tx->ib_len;
	memcpy(n->last.data, tx->ib, tx->ib_len);
	for (int i = 0; i < NODES; i++) {
		if (i == me->id)
			continue;
		if (is_mcast(&tx->dst) || !memcmp(tx->dst.raw, n->gid[i].raw, 16))
			enqueue(n, me->id, i, tx);
	}
}

static int mcast_hook(void *ctx, const struct rnic_gid *mgid, bool join)
{
	struct node *me = ctx;

	CHECK(is_mcast(mgid));
	if (join && me->n->fail_join)
		return me->n->fail_join;
	if (join)
		me->n->joins[me->id]++;
	else
		me->n->leaves[me->id]++;
	return 0;
}

/* Deliver everything queued (FIFO), with a known IP header. */
static void deliver_all(struct net *n)
{
	static struct pkt batch[MAXQ];
	size_t count;

	while (n->qlen) {
		count = n->qlen;
		memcpy(batch, n->q, count * sizeof(*batch));
		n->qlen = 0;
		for (size_t i = 0; i < count; i++) {
			struct pkt *p = &batch[i];
			struct rnic_rx rx = {
				.src = n->gid[p->from], .dst = p->dst, .sport = p->sport,
				.ecn = 0, .ib = p->data, .ib_len = p->len,
				.dscp = RX_DSCP, .ttl = RX_TTL, .ip_id = RX_ID,
			};
			rnic_receive(n->r[p->to], &rx, 1000);
		}
	}
}

static void set_gid(struct rnic_gid *g, int node, bool ipv6)
{
	memset(g, 0, sizeof(*g));
	if (ipv6) {
		g->raw[0] = 0xfd;       /* unique local fd00::/8 */
		g->raw[15] = (uint8_t)(node + 1);
		return;
	}
	g->raw[10] = g->raw[11] = 0xff;
	g->raw[12] = 10;
	g->raw[15] = (uint8_t)(node + 1);
}

static void net_init(struct net *n, bool ipv6)
{
	memset(n, 0, sizeof(*n));
	n->q = calloc(MAXQ, sizeof(*n->q));
	for (int i = 0; i < NODES; i++) {
		struct rnic_io io = { .ctx = &nodes[i], .xmit = xmit, .mcast = mcast_hook };
		struct rnic_config c;

		rnic_config_default(&c);
		c.seed = 500 + (uint32_t)i;
		c.max_mtu = IBV_MTU_1024;
		set_gid(&c.gid, i, ipv6);
		n->gid[i] = c.gid;
		nodes[i].n = n;
		nodes[i].id = i;
		n->r[i] = rnic_create(&c, &io);
		CHECK(n->r[i] != NULL);
	}
}

static void net_fini(struct net *n)
{
	for (int i = 0; i < NODES; i++)
		rnic_destroy(n->r[i]);
	free(n->q);
}

/* ---- one UD endpoint ------------------------------------------------------- */

#define BUFSZ 8192

struct ep {
	struct rnic_pd *pd;
	struct rnic_cq *scq, *rcq;
	struct rnic_qp *qp;
	uint8_t *buf;
	struct rnic_mr *mr;
	uint32_t qpn;
};

static int to_rts(struct rnic_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a;
	int err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = qkey;
	err = rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0);
	if (err)
		return err;
	a.qp_state = IBV_QPS_RTR;
	err = rnic_qp_modify(qp, &a, IBV_QP_STATE, 0);
	if (err)
		return err;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x123456;
	return rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, 0);
}

static void ep_init(struct net *n, int node, struct ep *e, struct rnic_pd *pd)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2 },
	};

	memset(e, 0, sizeof(*e));
	e->pd = pd ? pd : rnic_pd_alloc(n->r[node]);
	e->scq = rnic_cq_create(n->r[node], 64, NULL);
	e->rcq = rnic_cq_create(n->r[node], 64, NULL);
	e->qp = rnic_qp_create(e->pd, e->scq, e->rcq, &init, NULL);
	e->buf = calloc(1, BUFSZ);
	REQUIRE(e->pd && e->scq && e->rcq && e->qp && e->buf);
	e->mr = rnic_mr_reg(e->pd, e->buf, BUFSZ, (uint64_t)(uintptr_t)e->buf, IBV_ACCESS_LOCAL_WRITE);
	CHECK(e->mr != NULL);
	e->qpn = rnic_qp_num(e->qp);
	CHECK(to_rts(e->qp, QKEY) == 0);
}

static int post_recv(struct ep *e, uint64_t wr_id, uint32_t offset, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uint64_t)(uintptr_t)(e->buf + offset), .length = len, .lkey = rnic_mr_lkey(e->mr),
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return rnic_post_recv(e->qp, &wr, &bad);
}

static int post_send(struct ep *e, struct rnic_ah *ah, uint32_t dqpn, uint32_t qkey, uint32_t len,
		     bool imm, uint64_t wr_id)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;

	wr_send_1(&wr, &sge, imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, wr_id, (uint64_t)(uintptr_t)e->buf, len, rnic_mr_lkey(e->mr));
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(0xcafe0001);
	wr.wr.ud.ah = ah ? &ah->verbs : NULL;
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = qkey;
	return rnic_post_send(e->qp, &wr, &bad, 0);
}

static struct rnic_ah *make_ah(struct rnic_pd *pd, const struct rnic_gid *dgid)
{
	struct ibv_ah_attr a;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.grh.hop_limit = 64;
	a.grh.traffic_class = 0;
	memcpy(a.grh.dgid.raw, dgid->raw, 16);
	return rnic_ah_create(pd, &a);
}

static int poll1(struct rnic_cq *cq, struct ibv_wc *wc)
{
	return rnic_cq_poll(cq, 1, wc);
}

static enum ibv_qp_state qp_state(struct rnic_qp *qp)
{
	struct ibv_qp_attr a;

	rnic_qp_query(qp, &a, NULL);
	return a.qp_state;
}

static void ep_fini(struct ep *e, bool free_pd)
{
	CHECK(rnic_qp_destroy(e->qp) == 0);
	CHECK(rnic_mr_dereg(e->mr) == 0);
	CHECK(rnic_cq_destroy(e->scq) == 0);
	CHECK(rnic_cq_destroy(e->rcq) == 0);
	if (free_pd)
		CHECK(rnic_pd_free(e->pd) == 0);
	free(e->buf);
}

/* The IPv4 header wire_encode_ip builds for packet `p` as the switch
 * delivered it: the reference the GRH area is compared with. */
static void expected_ipv4(const struct net *n, const struct pkt *p, uint8_t out[20])
{
	static uint8_t frame[WIRE_MAX_IB_PACKET + 64];
	struct wire_pkt w;
	int len;

	memset(&w, 0, sizeof(w));
	w.ip.version = 4;
	w.ip.dscp = RX_DSCP;
	w.ip.ttl = RX_TTL;
	w.ip.id = RX_ID;
	w.ip.df = true;
	memcpy(w.ip.src, n->gid[p->from].raw, 16);
	memcpy(w.ip.dst, p->dst.raw, 16);
	w.udp.sport = p->sport;
	w.udp.dport = WIRE_ROCEV2_UDP_PORT;
	CHECK(wire_decode_ib(p->data, p->len, &w.ib) == WIRE_OK);
	len = wire_encode_ip(&w, frame, sizeof(frame));
	CHECK(len == (int)(p->len + 28));
	memcpy(out, frame, 20);
}

/* ---- cases ------------------------------------------------------------------ */

static void test_send_recv(void)
{
	struct net n;
	struct ep a, b;
	struct rnic_ah *ah;
	struct ibv_wc wc;
	struct wire_ib ib;
	struct pkt sent;
	uint8_t ip[20];

	net_init(&n, false);
	ep_init(&n, 0, &a, NULL);
	ep_init(&n, 1, &b, NULL);
	ah = make_ah(a.pd, &n.gid[1]);
	CHECK(ah != NULL);
	for (int i = 0; i < 300; i++)
		a.buf[i] = (uint8_t)(i * 7 + 3);
	memset(b.buf, 0xee, BUFSZ);
	CHECK(post_recv(&b, 77, 0, 1024) == 0);
	CHECK(post_send(&a, ah, b.qpn, QKEY, 300, true, 5) == 0);

	/* Complete on the send side once sent: before any delivery. */
	CHECK(poll1(a.scq, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 5 && wc.opcode == IBV_WC_SEND);

	/* The packet: UD SEND ONLY with immediate, DETH, UD source port. */
	sent = n.last;
	CHECK(wire_decode_ib(sent.data, sent.len, &ib) == WIRE_OK);
	CHECK(ib.bth.opcode == (WIRE_TR_UD | WIRE_OP_SEND_ONLY_IMM));
	CHECK(ib.bth.dqpn == b.qpn);
	CHECK(ib.bth.psn == 0x123456);
	CHECK(!ib.bth.ackreq);
	CHECK(ib.deth.qkey == QKEY && ib.deth.sqpn == a.qpn);
	CHECK(ib.payload_len == 300 && !memcmp(ib.payload, a.buf, 300));
	CHECK(ib.imm == htobe32(0xcafe0001));
	CHECK(sent.sport == wire_udp_sport_ud(a.qpn));
	CHECK(!memcmp(sent.dst.raw, n.gid[1].raw, 16) && sent.ttl == 64);

	deliver_all(&n);
	CHECK(poll1(b.rcq, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS);
	CHECK(wc.wr_id == 77 && wc.opcode == IBV_WC_RECV);
	CHECK(wc.byte_len == 340);
	CHECK(wc.src_qp == a.qpn && wc.qp_num == b.qpn);
	CHECK(wc.wc_flags == (IBV_WC_GRH | IBV_WC_WITH_IMM));
	CHECK(wc.imm_data == htobe32(0xcafe0001));
	CHECK(wc.pkey_index == 0 && wc.slid == 0);
	CHECK(wc.sl == 2);      /* the mlx5 RoCE packet type: IPv4 */
	/* GRH area: 20 zero bytes, then the IPv4 header as received. */
	for (int i = 0; i < 20; i++)
		CHECK(b.buf[i] == 0);
	expected_ipv4(&n, &sent, ip);
	CHECK(!memcmp(b.buf + 20, ip, 20));
	CHECK(b.buf[20] == 0x45 && b.buf[28] == RX_TTL && b.buf[21] == RX_DSCP << 2);
	CHECK(!memcmp(b.buf + 40, a.buf, 300));
	CHECK(b.buf[340] == 0xee);

	/* Without immediate: flags GRH only; PSN advanced by one. */
	CHECK(post_recv(&b, 78, 0, 1024) == 0);
	CHECK(post_send(&a, ah, b.qpn, QKEY, 0, false, 6) == 0);
	CHECK(wire_decode_ib(n.last.data, n.last.len, &ib) == WIRE_OK);
	CHECK(ib.bth.opcode == (WIRE_TR_UD | WIRE_OP_SEND_ONLY) && ib.bth.psn == 0x123457);
	deliver_all(&n);
	CHECK(poll1(b.rcq, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 40 && wc.wc_flags == IBV_WC_GRH);
	CHECK(poll1(a.scq, &wc) == 1 && wc.wr_id == 6);

	CHECK(rnic_ah_destroy(ah) == 0);
	ep_fini(&a, true);
	ep_fini(&b, true);
	net_fini(&n);
}

static void test_qkey(void)
{
	struct net n;
	struct ep a, b;
	struct rnic_ah *ah;
	struct ibv_wc wc;
	struct ibv_qp_attr attr;
	struct wire_ib ib;

	net_init(&n, false);
	ep_init(&n, 0, &a, NULL);
	ep_init(&n, 1, &b, NULL);
	ah = make_ah(a.pd, &n.gid[1]);
	CHECK(post_recv(&b, 1, 0, 1024) == 0);

	/* Wrong Q_Key: dropped and counted, the receive WQE stays. */
	CHECK(post_send(&a, ah, b.qpn, 0x22222222, 8, false, 1) == 0);
	deliver_all(&n);
	CHECK(poll1(b.rcq, &wc) == 0);
	CHECK(rnic_counters(n.r[1])->rx_drop_bad_qkey == 1);

	/* Controlled Q_Key (high bit set in the WR): the sender's QP Q_Key
	 * goes on the wire instead (IBTA 10.2.5). */
	memset(&attr, 0, sizeof(attr));
	attr.qkey = 0x7000abcd;
	CHECK(rnic_qp_modify(a.qp, &attr, IBV_QP_QKEY, 0) == 0);
	CHECK(post_send(&a, ah, b.qpn, 0x80000000u, 8, false, 2) == 0);
	CHECK(wire_decode_ib(n.last.data, n.last.len, &ib) == WIRE_OK && ib.deth.qkey == 0x7000abcd);
	deliver_all(&n);
	CHECK(poll1(b.rcq, &wc) == 0);                  /* receiver has QKEY */
	CHECK(rnic_counters(n.r[1])->rx_drop_bad_qkey == 2);
	attr.qkey = 0x7000abcd;
	CHECK(rnic_qp_modify(b.qp, &attr, IBV_QP_QKEY, 0) == 0);
	CHECK(post_send(&a, ah, b.qpn, 0x80000000u, 8, false, 3) == 0);
	deliver_all(&n);
	CHECK(poll1(b.rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 1);
	CHECK(rnic_counters(n.r[1])->rx_drop_bad_qkey == 2);

	/* Wrong destination QPN: nobody there. */
	CHECK(post_send(&a, ah, b.qpn + 1000, QKEY, 8, false, 4) == 0);
	deliver_all(&n);
	CHECK(rnic_counters(n.r[1])->rx_drop_unknown_qp == 1);

	rnic_ah_destroy(ah);
	ep_fini(&a, true);
	ep_fini(&b, true);
	net_fini(&n);
}

static void test_lengths(void)
{
	struct net n;
	struct ep a, b;
	struct rnic_ah *ah;
	struct ibv_wc wc;
	struct rnic_ah *back;

	net_init(&n, false);
	ep_init(&n, 0, &a, NULL);
	ep_init(&n, 1, &b, NULL);
	ah = make_ah(a.pd, &n.gid[1]);

	/* Exactly the MTU (1024) is fine. */
	CHECK(post_recv(&b, 1, 0, 1024 + 40) == 0);
	CHECK(post_send(&a, ah, b.qpn, QKEY, 1024, false, 1) == 0);
	deliver_all(&n);
	CHECK(poll1(b.rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 1064);
	CHECK(poll1(a.scq, &wc) == 1 && wc.status == IBV_WC_SUCCESS);

	/* One byte more (IBTA C10-93.1.1): no packet is emitted and no error
	 * reported: the send completes successfully, nothing is delivered,
	 * the QP stays in RTS and the WRs behind it go out as usual. */
	uint64_t tx_before = rnic_counters(n.r[0])->tx_packets;
	CHECK(post_recv(&b, 2, 0, 4096 + 40) == 0);
	CHECK(post_send(&a, ah, b.qpn, QKEY, 1025, false, 2) == 0);
	deliver_all(&n);
	CHECK(rnic_counters(n.r[0])->tx_packets == tx_before);
	CHECK(rnic_counters(n.r[0])->tx_drop_ud_over_mtu == 1);
	CHECK(poll1(a.scq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 2);
	CHECK(poll1(b.rcq, &wc) == 0);
	CHECK(qp_state(a.qp) == IBV_QPS_RTS);
	/* Over-MTU sends between normal ones: completions stay in order,
	 * only the normal ones arrive. */
	CHECK(post_send(&a, ah, b.qpn, QKEY, 8, false, 3) == 0);
	CHECK(post_send(&a, ah, b.qpn, QKEY, 4096, false, 4) == 0);
	CHECK(post_send(&a, ah, b.qpn, QKEY, 9, false, 5) == 0);
	CHECK(post_recv(&b, 3, 0, 1024) == 0);
	deliver_all(&n);
	for (uint64_t id = 3; id <= 5; id++)
		CHECK(poll1(a.scq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == id);
	CHECK(poll1(b.rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 2 && wc.byte_len == 48);
	CHECK(poll1(b.rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 3 && wc.byte_len == 49);
	CHECK(rnic_counters(n.r[0])->tx_drop_ud_over_mtu == 2);
	CHECK(post_recv(&a, 9, 0, 1024) == 0);
	back = make_ah(b.pd, &n.gid[0]);
	CHECK(post_send(&b, back, a.qpn, QKEY, 8, false, 1) == 0);
	deliver_all(&n);
	CHECK(poll1(a.rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 9);
	CHECK(poll1(b.scq, &wc) == 1);

	/* Receive buffer too small for GRH + payload: that WQE completes
	 * with LOC_LEN_ERR and the QP keeps going (rxe behaviour). */
	CHECK(post_recv(&b, 3, 0, 40 + 99) == 0);
	CHECK(post_recv(&b, 4, 0, 1024) == 0);
	CHECK(post_send(&a, ah, b.qpn, QKEY, 100, false, 5) == 0);
	CHECK(post_send(&a, ah, b.qpn, QKEY, 100, false, 6) == 0);
	deliver_all(&n);
	CHECK(poll1(b.rcq, &wc) == 1 && wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == 3);
	CHECK(poll1(b.rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 4 && wc.byte_len == 140);
	CHECK(qp_state(b.qp) == IBV_QPS_RTS);

	/* No receive WQE: the datagram is dropped and counted (no RNR). */
	CHECK(post_send(&a, ah, b.qpn, QKEY, 10, false, 7) == 0);
	deliver_all(&n);
	CHECK(poll1(b.rcq, &wc) == 0);
	CHECK(rnic_counters(n.r[1])->rx_drop_no_recv_wqe == 1);
	while (poll1(a.scq, &wc) == 1)
		;
	rnic_ah_destroy(back);
	rnic_ah_destroy(ah);
	ep_fini(&a, true);
	ep_fini(&b, true);
	net_fini(&n);
}

static void test_multicast(void)
{
	struct net n;
	struct ep a, b1, b2, c1, c2, rc_ep;
	struct rnic_ah *ah;
	struct ibv_wc wc;
	struct rnic_gid mgid, other, unicast;
	uint8_t ip[20];

	net_init(&n, false);
	ep_init(&n, 0, &a, NULL);
	ep_init(&n, 1, &b1, NULL);
	ep_init(&n, 1, &b2, b1.pd);
	ep_init(&n, 2, &c1, NULL);
	ep_init(&n, 2, &c2, c1.pd);
	memset(&mgid, 0, sizeof(mgid));
	mgid.raw[10] = mgid.raw[11] = 0xff;
	mgid.raw[12] = 239;
	mgid.raw[13] = 1;
	mgid.raw[14] = 2;
	mgid.raw[15] = 3;
	other = mgid;
	other.raw[15] = 4;
	unicast = n.gid[1];

	/* Attach rules. */
	CHECK(rnic_attach_mcast(b1.qp, &unicast, 0) == EINVAL);
	CHECK(rnic_attach_mcast(b1.qp, &mgid, 0) == 0);
	CHECK(rnic_attach_mcast(b1.qp, &mgid, 0) == 0);         /* twice: no-op */
	CHECK(rnic_attach_mcast(b2.qp, &mgid, 0) == 0);
	CHECK(rnic_attach_mcast(c1.qp, &mgid, 0) == 0);
	CHECK(n.joins[1] == 1 && n.joins[2] == 1 && n.joins[0] == 0);
	CHECK(rnic_detach_mcast(c2.qp, &mgid, 0) == EINVAL);    /* not attached */
	CHECK(rnic_detach_mcast(b1.qp, &other, 0) == EINVAL);
	/* The port refusing to join fails the attach and leaves no group. */
	n.fail_join = EADDRNOTAVAIL;
	CHECK(rnic_attach_mcast(c2.qp, &other, 0) == EADDRNOTAVAIL);
	n.fail_join = 0;
	{
		struct ibv_qp_init_attr init = {
			.qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		memset(&rc_ep, 0, sizeof(rc_ep));
		rc_ep.qp = rnic_qp_create(c1.pd, c1.scq, c1.rcq, &init, NULL);
		CHECK(rc_ep.qp != NULL);
		CHECK(rnic_attach_mcast(rc_ep.qp, &mgid, 0) == EINVAL);
		rnic_qp_destroy(rc_ep.qp);
	}

	for (int i = 0; i < 64; i++)
		a.buf[i] = (uint8_t)(0x40 + i);
	CHECK(post_recv(&b1, 11, 0, 512) == 0);
	CHECK(post_recv(&b2, 12, 0, 512) == 0);
	CHECK(post_recv(&c1, 21, 0, 512) == 0);
	CHECK(post_recv(&c2, 22, 0, 512) == 0);
	ah = make_ah(a.pd, &mgid);
	CHECK(ah != NULL);
	CHECK(post_send(&a, ah, RNIC_MCAST_QPN, QKEY, 64, true, 1) == 0);
	struct pkt sent = n.last;
	deliver_all(&n);
	CHECK(poll1(b1.rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 11 &&
	      wc.src_qp == a.qpn && wc.byte_len == 104 && (wc.wc_flags & IBV_WC_WITH_IMM));
	CHECK(poll1(b2.rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 12);
	CHECK(poll1(c1.rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 21);
	CHECK(poll1(c2.rcq, &wc) == 0);                         /* not attached */
	CHECK(!memcmp(b1.buf + 40, a.buf, 64) && !memcmp(b2.buf + 40, a.buf, 64) && !memcmp(c1.buf + 40, a.buf, 64));
	/* The GRH's IPv4 destination is the group address. */
	expected_ipv4(&n, &sent, ip);
	CHECK(!memcmp(b2.buf + 20, ip, 20));
	CHECK(b2.buf[36] == 239 && b2.buf[39] == 3);

	/* Detach b1: only b2 and c1 still receive; node 1 keeps the IP group
	 * until its last QP leaves. */
	CHECK(rnic_detach_mcast(b1.qp, &mgid, 0) == 0);
	CHECK(n.leaves[1] == 0);
	CHECK(post_recv(&b1, 13, 0, 512) == 0);
	CHECK(post_recv(&b2, 14, 0, 512) == 0);
	CHECK(post_recv(&c1, 23, 0, 512) == 0);
	CHECK(post_send(&a, ah, RNIC_MCAST_QPN, QKEY, 16, false, 2) == 0);
	deliver_all(&n);
	CHECK(poll1(b1.rcq, &wc) == 0);
	CHECK(poll1(b2.rcq, &wc) == 1 && wc.wr_id == 14);
	CHECK(poll1(c1.rcq, &wc) == 1 && wc.wr_id == 23);

	/* Destroying an attached QP detaches it; the last one leaves. */
	ep_fini(&b2, false);
	CHECK(n.leaves[1] == 1);
	CHECK(rnic_detach_mcast(c1.qp, &mgid, 0) == 0);
	CHECK(n.leaves[2] == 1);
	CHECK(post_send(&a, ah, RNIC_MCAST_QPN, QKEY, 16, false, 3) == 0);
	deliver_all(&n);
	CHECK(poll1(c1.rcq, &wc) == 0);
	CHECK(rnic_counters(n.r[2])->rx_drop_mcast_no_group == 1);
	CHECK(rnic_counters(n.r[1])->rx_drop_mcast_no_group == 1);

	rnic_ah_destroy(ah);
	ep_fini(&a, true);
	ep_fini(&b1, true);
	ep_fini(&c2, false);
	ep_fini(&c1, true);
	net_fini(&n);
}

static void test_validation(void)
{
	struct net n;
	struct ep a, b;
	struct rnic_ah *ah, *foreign;
	struct ibv_ah_attr attr;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD, .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rnic_pd *pd2;
	struct rnic_qp *qp;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;

	net_init(&n, false);
	ep_init(&n, 0, &a, NULL);
	ep_init(&n, 1, &b, NULL);

	/* AH: global only, port 1, GID index 0, non-zero destination. */
	memset(&attr, 0, sizeof(attr));
	attr.port_num = 1;
	memcpy(attr.grh.dgid.raw, n.gid[1].raw, 16);
	CHECK(rnic_ah_create(a.pd, &attr) == NULL && errno == EINVAL);
	attr.is_global = 1;
	attr.port_num = 2;
	CHECK(rnic_ah_create(a.pd, &attr) == NULL && errno == EINVAL);
	attr.port_num = 1;
	attr.grh.sgid_index = 1;
	CHECK(rnic_ah_create(a.pd, &attr) == NULL && errno == EINVAL);
	attr.grh.sgid_index = 0;
	CHECK(rnic_ah_create(NULL, &attr) == NULL && errno == EINVAL);
	attr.grh.traffic_class = 0x28;  /* DSCP 10 */
	attr.grh.hop_limit = 7;
	ah = rnic_ah_create(a.pd, &attr);
	CHECK(ah != NULL);
	CHECK(rnic_pd_free(a.pd) == EBUSY);     /* the AH holds the PD */
	CHECK(rnic_ah_destroy(NULL) == EINVAL);

	/* The AH's DSCP reaches the port; its hop limit (7) does not: the
	 * TTL is the route's, as on the kernel's RoCE (rnic.h). */
	CHECK(post_recv(&b, 1, 0, 1024) == 0);
	CHECK(post_send(&a, ah, b.qpn, QKEY, 4, false, 1) == 0);
	CHECK(n.last.dscp == 10 && n.last.ttl == RNIC_ROUTE_TTL);
	deliver_all(&n);

	/* WR checks: no AH, an AH of another PD, RDMA on UD. */
	CHECK(post_send(&a, NULL, b.qpn, QKEY, 4, false, 2) == EINVAL);
	pd2 = rnic_pd_alloc(n.r[0]);
	foreign = make_ah(pd2, &n.gid[1]);
	CHECK(post_send(&a, foreign, b.qpn, QKEY, 4, false, 3) == EINVAL);
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uint64_t)(uintptr_t)a.buf;
	sge.length = 4;
	sge.lkey = rnic_mr_lkey(a.mr);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.ud.ah = &ah->verbs;
	CHECK(rnic_post_send(a.qp, &wr, &bad, 0) == EINVAL && bad == &wr);
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK(rnic_post_send(a.qp, &wr, &bad, 0) == EINVAL);

	/* UD modify masks: INIT needs PKEY_INDEX | PORT | QKEY (no ACCESS),
	 * RTR needs nothing, RTS needs SQ_PSN. */
	qp = rnic_qp_create(a.pd, a.scq, a.rcq, &init, NULL);
	CHECK(qp != NULL);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qkey = 5;
	CHECK(rnic_qp_modify(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT, 0) == EINVAL);
	CHECK(rnic_qp_modify(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
				      IBV_QP_ACCESS_FLAGS, 0) == EINVAL);
	CHECK(rnic_qp_modify(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0) == 0);
	qa.qp_state = IBV_QPS_RTR;
	CHECK(rnic_qp_modify(qp, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, 0) == EINVAL);
	CHECK(rnic_qp_modify(qp, &qa, IBV_QP_STATE, 0) == 0);
	qa.qp_state = IBV_QPS_RTS;
	CHECK(rnic_qp_modify(qp, &qa, IBV_QP_STATE, 0) == EINVAL);
	CHECK(rnic_qp_modify(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN, 0) == 0);
	CHECK(qp_state(qp) == IBV_QPS_RTS);
	CHECK(rnic_qp_destroy(qp) == 0);

	CHECK(rnic_ah_destroy(foreign) == 0);
	CHECK(rnic_pd_free(pd2) == 0);
	CHECK(rnic_ah_destroy(ah) == 0);
	ep_fini(&a, true);
	ep_fini(&b, true);
	net_fini(&n);
}

static void test_ipv6_grh(void)
{
	struct net n;
	struct ep a, b;
	struct rnic_ah *ah;
	struct ibv_wc wc;

	net_init(&n, true);
	ep_init(&n, 0, &a, NULL);
	ep_init(&n, 1, &b, NULL);
	ah = make_ah(a.pd, &n.gid[1]);
	CHECK(post_recv(&b, 1, 0, 1024) == 0);
	CHECK(post_send(&a, ah, b.qpn, QKEY, 20, false, 1) == 0);
	size_t ib_len = n.last.len;
	deliver_all(&n);
	CHECK(poll1(b.rcq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 60);
	CHECK(wc.sl == 1);      /* the mlx5 RoCE packet type: IPv6 */
	/* IPv6 header: version 6, traffic class = DSCP << 2, payload length
	 * = UDP + IB packet, next header 17, hop limit, addresses. */
	CHECK(b.buf[0] >> 4 == 6);
	CHECK(((b.buf[0] & 0xf) << 4 | b.buf[1] >> 4) == RX_DSCP << 2);
	CHECK((b.buf[4] << 8 | b.buf[5]) == (int)(8 + ib_len));
	CHECK(b.buf[6] == 17 && b.buf[7] == RX_TTL);
	CHECK(!memcmp(b.buf + 8, n.gid[0].raw, 16) && !memcmp(b.buf + 24, n.gid[1].raw, 16));
	rnic_ah_destroy(ah);
	ep_fini(&a, true);
	ep_fini(&b, true);
	net_fini(&n);
}

int main(void)
{
	test_send_recv();
	test_qkey();
	test_lengths();
	test_multicast();
	test_validation();
	test_ipv6_grh();
	if (check_failures)
		return check_exit("rnic_unit_ud");
	printf("unit_ud: all passed\n");
	return 0;
}
