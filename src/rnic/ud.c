/*
 * ud.c — the Unreliable Datagram transport (IBTA 9.8.1, 10.2.5, 10.5) and
 * multicast groups.
 *
 * Sending reuses the requester (requester.c): a UD WQE is one SEND ONLY
 * packet whose BTH DestQP and DETH come from the work request
 * (ud_fill_deth) and whose destination comes from the address handle
 * (ud_xmit).  It completes as soon as it left: there are no ACKs.
 *
 * Receiving does not go through the RC responder: UD has no PSN sequence,
 * no ACKs and no multi-packet messages, so a packet is checked (opcode,
 * Q_Key, length) and lands in the next receive WQE with the 40-byte GRH
 * area first.  What the GRH area holds follows the kernel's rxe, which is
 * what verbs programs on RoCE see: rxe copies the received network header
 * into a `union rdma_network_hdr` — for IPv4 20 bytes of zero and then the
 * 20-byte IPv4 header as received, for IPv6 the 40-byte IPv6 header (which
 * has the layout of an IB GRH).  rdma-core's ibv_init_ah_from_wc then tells
 * the two apart by the IP version nibble and the IPv4 header checksum, so
 * the checksum we write must be right.
 *
 * Multicast (IBTA 10.5.2.5): a QP attaches to a group GID; a packet sent
 * with DestQP 0xFFFFFF to the group's IP address is delivered to every
 * attached QP of this rnic.  The port hears about the first attach and
 * the last detach of a group (rnic_io.mcast) so it can join the IP group.
 */
#include <stdlib.h>

#include "rnic/rnic_int.h"

#define UD_GRH_LEN 40u

/* ---- multicast groups ------------------------------------------------------ */

int ud_init(struct rnic *r)
{
	/* Bounds keep a hostile configuration from asking for gigabytes. */
	if (r->cfg.max_mcast_grp > 4096 || r->cfg.max_mcast_qp_attach > 4096) {
		errno = EINVAL;
		return -1;
	}
	if (!r->cfg.max_mcast_grp)
		return 0;
	r->mcast = calloc(r->cfg.max_mcast_grp, sizeof(*r->mcast));
	if (!r->mcast) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void ud_fini(struct rnic *r)
{
	if (!r->mcast)
		return;
	for (uint32_t i = 0; i < r->cfg.max_mcast_grp; i++)
		free(r->mcast[i].qps);
	free(r->mcast);
	r->mcast = NULL;
}

/* A RoCEv2 multicast GID is a multicast IP address: ff00::/8, or
 * IPv4-mapped 224.0.0.0/4 (as the kernel's rdma_is_multicast_addr). */
static bool gid_is_multicast(const struct rnic_gid *gid)
{
	static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (gid->raw[0] == 0xff)
		return true;
	return memcmp(gid->raw, v4_prefix, sizeof(v4_prefix)) == 0 && (gid->raw[12] & 0xf0) == 0xe0;
}

static struct rnic_mcast_group *find_group(struct rnic *r, const struct rnic_gid *gid)
{
	for (uint32_t i = 0; r->mcast && i < r->cfg.max_mcast_grp; i++)
		if (r->mcast[i].used && !memcmp(r->mcast[i].gid.raw, gid->raw, sizeof(gid->raw)))
			return &r->mcast[i];
	return NULL;
}

static int group_index_of(const struct rnic_mcast_group *g, const struct rnic_qp *qp)
{
	for (uint32_t i = 0; i < g->nqp; i++)
		if (g->qps[i] == qp)
			return (int)i;
	return -1;
}

static struct rnic_mcast_group *new_group(struct rnic *r, const struct rnic_gid *gid, int *err)
{
	struct rnic_mcast_group *g = NULL;

	for (uint32_t i = 0; r->mcast && i < r->cfg.max_mcast_grp; i++) {
		if (!r->mcast[i].used) {
			g = &r->mcast[i];
			break;
		}
	}
	if (!g || !r->cfg.max_mcast_qp_attach) {
		*err = ENOMEM;
		return NULL;
	}
	if (!g->qps) {
		g->qps = calloc(r->cfg.max_mcast_qp_attach, sizeof(*g->qps));
		if (!g->qps) {
			*err = ENOMEM;
			return NULL;
		}
	}
	/* The port joins the IP group first: if it cannot, the attach fails
	 * and nothing changed. */
	if (r->io.mcast) {
		*err = r->io.mcast(r->io.ctx, gid, true);
		if (*err)
			return NULL;
	}
	g->used = true;
	g->gid = *gid;
	g->nqp = 0;
	return g;
}

static void remove_from_group(struct rnic *r, struct rnic_mcast_group *g, int idx)
{
	g->qps[idx] = g->qps[g->nqp - 1];
	g->nqp--;
	if (g->nqp)
		return;
	g->used = false;
	if (r->io.mcast)
		(void)r->io.mcast(r->io.ctx, &g->gid, false);
}

int rnic_attach_mcast(struct rnic_qp *qp, const struct rnic_gid *gid, uint16_t lid)
{
	struct rnic_mcast_group *g;
	struct rnic *r;
	int err = 0;

	(void)lid;      /* RoCE: no LIDs */
	if (!qp || !gid || qp->type != IBV_QPT_UD || !gid_is_multicast(gid))
		return EINVAL;
	r = qp->r;
	g = find_group(r, gid);
	if (g && group_index_of(g, qp) >= 0)
		return 0;
	if (g && g->nqp >= r->cfg.max_mcast_qp_attach)
		return ENOMEM;
	if (!g)
		g = new_group(r, gid, &err);
	if (!g)
		return err;
	g->qps[g->nqp++] = qp;
	return 0;
}

int rnic_detach_mcast(struct rnic_qp *qp, const struct rnic_gid *gid, uint16_t lid)
{
	struct rnic_mcast_group *g;
	int idx;

	(void)lid;
	if (!qp || !gid)
		return EINVAL;
	g = find_group(qp->r, gid);
	idx = g ? group_index_of(g, qp) : -1;
	if (idx < 0)
		return EINVAL;
	remove_from_group(qp->r, g, idx);
	return 0;
}

void ud_detach_all(struct rnic_qp *qp)
{
	struct rnic *r = qp->r;

	for (uint32_t i = 0; r->mcast && i < r->cfg.max_mcast_grp; i++) {
		struct rnic_mcast_group *g = &r->mcast[i];
		int idx = g->used ? group_index_of(g, qp) : -1;

		if (idx >= 0)
			remove_from_group(r, g, idx);
	}
}

/* ---- sending ------------------------------------------------------------- */

int ud_check_send_wr(const struct rnic_qp *qp, const struct ibv_send_wr *wr)
{
	const struct rnic_ah *ah;

	if (!wr->wr.ud.ah)
		return EINVAL;
	ah = rnic_ah_from_ibv(wr->wr.ud.ah);
	/* The AH must belong to the QP's PD (AHs are PD objects, IBTA
	 * 10.2.3; a foreign AH is an invalid WR here rather than a
	 * completion error, since it is known at post time). */
	if (ah->pd != qp->pd || wr->wr.ud.remote_qpn > WIRE_QPN_MASK)
		return EINVAL;
	return 0;
}

void ud_copy_send_wr(struct rnic_send_wqe *w, const struct ibv_send_wr *wr)
{
	const struct rnic_ah *ah = rnic_ah_from_ibv(wr->wr.ud.ah);

	w->ud_dgid = ah->dgid;
	w->ud_dscp = ah->dscp;
	w->ud_ttl = ah->ttl;
	w->ud_qpn = wr->wr.ud.remote_qpn;
	w->ud_qkey = wr->wr.ud.remote_qkey;
}

void ud_fill_deth(const struct rnic_qp *qp, const struct rnic_send_wqe *w, struct wire_ib *ib)
{
	ib->bth.dqpn = w->ud_qpn;
	/* IBTA 10.2.5: a Q_Key with the high-order bit set in the WR is
	 * "controlled": the QP's own Q_Key is sent instead.  Decided when the
	 * packet is built, so a modify of the QP's Q_Key applies to queued
	 * sends too. */
	ib->deth.qkey = (w->ud_qkey & 0x80000000u) ? qp->attr.qkey : w->ud_qkey;
	ib->deth.sqpn = qp->qpn;
}

void ud_xmit(struct rnic_qp *qp, const struct rnic_send_wqe *w, size_t len)
{
	struct rnic *r = qp->r;
	struct rnic_tx tx = {
		.dst = w->ud_dgid,
		.sport = wire_udp_sport_ud(qp->qpn),
		.ecn = 0,
		.dscp = w->ud_dscp,
		.ttl = w->ud_ttl,
		.ib = r->tx,
		.ib_len = len,
	};

	r->ctr.tx_packets++;
	r->ctr.tx_bytes += len;
	r->io.xmit(r->io.ctx, &tx);
}

void ud_send_error(struct rnic_qp *qp, enum ibv_wc_status st)
{
	/* The failed WQE is the oldest (requester.c reports in order). */
	rnic_qp_complete_send(qp, sq_at(&qp->sq, qp->sq.comp), st);
	qp->sq.comp++;
	while (qp->sq.comp != qp->sq.head) {
		rnic_qp_complete_send(qp, sq_at(&qp->sq, qp->sq.comp), IBV_WC_WR_FLUSH_ERR);
		qp->sq.comp++;
	}
	qp->sq.req = qp->sq.head;
	qp->req.offset = 0;
	qp->attr.qp_state = IBV_QPS_SQE;
	qp->attr.cur_qp_state = IBV_QPS_SQE;
}

/* ---- receiving ----------------------------------------------------------- */

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static bool gid_is_ipv4(const struct rnic_gid *gid)
{
	static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(gid->raw, v4_prefix, sizeof(v4_prefix)) == 0;
}

/* The 40-byte GRH area of a UD receive, as rxe fills it (see the top of
 * this file).  IPv4: bytes 0..19 zero, 20..39 the IPv4 header (DF set and
 * UDP, as every RoCEv2 sender sends; total length = IP + UDP + the IB
 * packet).  IPv6: the IPv6 header. */
static void build_grh(const struct rnic_rx *rx, uint8_t grh[UD_GRH_LEN])
{
	uint8_t ttl = rx->ttl ? rx->ttl : 64;
	uint8_t tclass = (uint8_t)(rx->dscp << 2 | (rx->ecn & 3));

	memset(grh, 0, UD_GRH_LEN);
	if (gid_is_ipv4(&rx->src) && gid_is_ipv4(&rx->dst)) {
		uint8_t *ip = grh + 20;
		uint32_t sum = 0;

		ip[0] = 0x45;
		ip[1] = tclass;
		put_be16(ip + 2, (uint16_t)(WIRE_IPV4_LEN + WIRE_UDP_LEN + rx->ib_len));
		put_be16(ip + 4, rx->ip_id);
		put_be16(ip + 6, 0x4000);               /* DF, offset 0 */
		ip[8] = ttl;
		ip[9] = 17;                             /* UDP */
		memcpy(ip + 12, rx->src.raw + 12, 4);
		memcpy(ip + 16, rx->dst.raw + 12, 4);
		for (int i = 0; i < 20; i += 2)
			sum += (uint32_t)ip[i] << 8 | ip[i + 1];
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		put_be16(ip + 10, (uint16_t)~sum);
		return;
	}
	/* IPv6 header = IB GRH layout (IBTA 8.3.1): version 6, traffic
	 * class, flow label, payload length (UDP + IB), next header UDP. */
	uint32_t vtf = 6u << 28 | (uint32_t)tclass << 20 | (rx->flow_label & 0xfffff);
	grh[0] = (uint8_t)(vtf >> 24);
	grh[1] = (uint8_t)(vtf >> 16);
	grh[2] = (uint8_t)(vtf >> 8);
	grh[3] = (uint8_t)vtf;
	put_be16(grh + 4, (uint16_t)(WIRE_UDP_LEN + rx->ib_len));
	grh[6] = 17;
	grh[7] = ttl;
	memcpy(grh + 8, rx->src.raw, 16);
	memcpy(grh + 24, rx->dst.raw, 16);
}

/* Take the next receive WQE (the QP's RQ, or its SRQ).  false if none. */
static bool take_recv_wqe(struct rnic_qp *qp, struct rnic_recv_wqe *wqe)
{
	if (qp->srq)
		return rnic_srq_take(qp, wqe);
	if (qp->rq.tail == qp->rq.head)
		return false;
	*wqe = qp->rq.wqe[qp->rq.tail % qp->rq.cap];
	qp->rq.tail++;
	return true;
}

/* The RoCE packet type in wc.sl, the mlx5 convention that UCX's ud_verbs
 * (uct_ud_iface_check_grh) and other middleware read to find the IPv4
 * header inside the 40-byte GRH area: 0 an IB GRH (RoCE v1), 1 IPv6,
 * 2 IPv4 (mlx5 CQE "l3_hdr_type" reported through the SL bits).  RoCE has
 * no SL of its own (IBTA A17.4.5.1: the priority travels in the DSCP), so
 * the field is free for this. */
enum { UD_WC_SL_IB_GRH = 0, UD_WC_SL_IPV6 = 1, UD_WC_SL_IPV4 = 2 };

static uint8_t roce_packet_type(const struct rnic_rx *rx)
{
	if (gid_is_ipv4(&rx->src) && gid_is_ipv4(&rx->dst))
		return UD_WC_SL_IPV4;
	return UD_WC_SL_IPV6;
}

static void complete_recv(struct rnic_qp *qp, const struct rnic_recv_wqe *wqe, const struct wire_ib *pkt,
			  const struct rnic_rx *rx, enum ibv_wc_status st, uint32_t byte_len)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wqe->wr_id;
	wc.status = st;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = qp->qpn;
	if (st == IBV_WC_SUCCESS) {
		/* A UD receive completion (ibv_poll_cq(3), IBTA 11.4.2.1):
		 * source QP, GRH present (RoCE always has one), SLID and
		 * P_Key index 0 on RoCE, and the RoCE packet type in SL. */
		wc.byte_len = byte_len;
		wc.src_qp = pkt->deth.sqpn;
		wc.wc_flags = IBV_WC_GRH;
		if ((pkt->bth.opcode & 0x1f) == WIRE_OP_SEND_ONLY_IMM) {
			wc.wc_flags |= IBV_WC_WITH_IMM;
			wc.imm_data = pkt->imm;
		}
		wc.pkey_index = 0;
		wc.slid = 0;
		wc.sl = roce_packet_type(rx);
	}
	rnic_cq_push(qp->recv_cq, &wc, pkt->bth.se || st != IBV_WC_SUCCESS);
}

/* The checks a UD packet passes before it may take a receive WQE. */
static bool ud_packet_ok(struct rnic_qp *qp, const struct wire_ib *pkt)
{
	struct rnic *r = qp->r;
	uint8_t op = pkt->bth.opcode;

	if (op != (WIRE_TR_UD | WIRE_OP_SEND_ONLY) && op != (WIRE_TR_UD | WIRE_OP_SEND_ONLY_IMM)) {
		r->ctr.rx_drop_bad_opcode_seq++;
		return false;
	}
	if (!rnic_qp_can_receive(qp)) {
		r->ctr.rx_drop_qp_state++;
		return false;
	}
	/* IBTA 10.2.5 (Q_Keys): the DETH Q_Key must equal the QP's; a
	 * mismatch is silently dropped and counted. */
	if (pkt->deth.qkey != qp->attr.qkey) {
		r->ctr.rx_drop_bad_qkey++;
		return false;
	}
	/* No UD packet is longer than our MTU (a peer that sends one is
	 * broken or hostile). */
	if (pkt->payload_len > qp->mtu) {
		r->ctr.rx_drop_malformed++;
		return false;
	}
	return true;
}

void ud_receive(struct rnic_qp *qp, const struct wire_ib *pkt, const struct rnic_rx *rx)
{
	uint8_t grh[UD_GRH_LEN];
	struct rnic_recv_wqe wqe;
	enum ibv_wc_status st;

	rnic_trace_step(qp, "resp", "UD");
	if (!ud_packet_ok(qp, pkt))
		return;
	/* No receive WQE: UD has no RNR NAK, the datagram is lost (IBTA
	 * 9.8.1). */
	if (!take_recv_wqe(qp, &wqe)) {
		qp->r->ctr.rx_drop_no_recv_wqe++;
		return;
	}
	/* Too small for GRH + payload: the WQE completes with a local length
	 * error and the QP carries on (rxe: class D error for UD). */
	if ((uint64_t)pkt->payload_len + UD_GRH_LEN > wqe.length) {
		complete_recv(qp, &wqe, pkt, rx, IBV_WC_LOC_LEN_ERR, 0);
		return;
	}
	build_grh(rx, grh);
	st = rnic_scatter_pd(qp->r, qp->srq ? qp->srq->pd : qp->pd, wqe.sge, wqe.num_sge, 0, grh, UD_GRH_LEN);
	if (st == IBV_WC_SUCCESS && pkt->payload_len)
		st = rnic_scatter_pd(qp->r, qp->srq ? qp->srq->pd : qp->pd, wqe.sge, wqe.num_sge, UD_GRH_LEN,
				     pkt->payload, pkt->payload_len);
	complete_recv(qp, &wqe, pkt, rx, st, UD_GRH_LEN + pkt->payload_len);
	/* A receive buffer with a bad key is a QP-fatal local error. */
	if (st != IBV_WC_SUCCESS) {
		rnic_qp_to_error(qp);
		rnic_async(qp->r, IBV_EVENT_QP_FATAL, qp->ctx);
	}
}

void ud_receive_mcast(struct rnic *r, const struct wire_ib *pkt, const struct rnic_rx *rx)
{
	struct rnic_mcast_group *g = gid_is_multicast(&rx->dst) ? find_group(r, &rx->dst) : NULL;

	if (!g) {
		r->ctr.rx_drop_mcast_no_group++;
		return;
	}
	/* Each attached QP gets its own copy.  ud_receive never detaches, so
	 * the list is stable during the loop. */
	for (uint32_t i = 0; i < g->nqp; i++)
		ud_receive(g->qps[i], pkt, rx);
}
