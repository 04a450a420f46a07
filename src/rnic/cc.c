/*
 * cc.c — congestion control and rate limiting in the transport: the glue
 * between the QP and its reaction point (DCQCN, dcqcn.c, by default;
 * DCTCP, dctcp.c, TIMELY, timely.c, or HPCC, hpcc_cc.c, by
 * rnic_config.cc_algo), the pacer (pacer.h), the congestion window and
 * the CNP.
 *
 * The loop (RoCEv2, IBTA Annex A17.9; DCQCN, SIGCOMM 2015):
 *
 *   out   RC and UC packets leave ECN-capable, ECT(0) (cc_tx_ecn);
 *   NP    a packet that arrives CE-marked for a connected QP is answered
 *         with a CNP to the QP that sent it, at most one per QP per
 *         min_time_between_cnps (cc_on_receive, send_cnp);
 *   RP    a CNP cuts the sending QP's DCQCN rate (cc_receive_cnp), and
 *         the requester's packets then pass the pacer at that rate
 *         (cc_may_send / cc_on_sent);
 *   DCTCP the CNP is the ECN echo: the NP of a DCTCP device sends one for
 *         every CE packet (no min_time_between_cnps), the RP counts them
 *         against the packets of each window (cc_on_ack) and cuts once
 *         per window; the ACK path has no room for an ECN-echo bit (the
 *         AETH is all taken, and a peer's rxe would not set one);
 *   TIMELY the completer's RTT samples (cc_on_rtt) set the rate;
 *   HPCC  the simulator hands in the INT records each ACK echoed
 *         (rnic_cc_telemetry), which set the rate;
 *   window DCTCP, TIMELY and HPCC also bound the packets in flight to
 *         cc_window · rate / line_rate bytes (cc_window_open), as the HPCC
 *         simulator's VAR_WIN does;
 *   app   ibv_modify_qp_rate_limit / IBV_QP_RATE_LIMIT set a ceiling that
 *         the same pacer enforces.
 *
 * What is paced: the requester's packets (requests and their
 * retransmissions), which is where a sender's bytes come from.  READ
 * responses leave unpaced: they answer the peer's requests, and the
 * peer's requester is paced.  Trade-off: a READ-heavy flow reacts to
 * congestion on the response path only through its request rate; ConnectX
 * paces responses too, and the responder could pass the same pacer.
 *
 * Hand-offs are explicit: the requester asks cc_may_send and reports
 * cc_on_sent; rnic_receive calls cc_on_receive and cc_receive_cnp; the
 * rnic's timers call cc_advance, which reruns the requester when the
 * pacer lets the next packet go.
 */
#include "rnic/rnic_int.h"

#define KBPS 1000ull

static bool connected(const struct rnic_qp *qp)
{
	return qp->type == IBV_QPT_RC || qp->type == IBV_QPT_UC;
}

void cc_qp_reset(struct rnic_qp *qp)
{
	const struct rnic_config *cfg = &qp->r->cfg;
	uint64_t limit = qp->cc.limit_bps;
	uint32_t burst = qp->cc.limit_burst;

	memset(&qp->cc, 0, sizeof(qp->cc));
	dcqcn_init(&qp->cc.rp, &cfg->cc, cfg->line_rate);
	dctcp_init(&qp->cc.dctcp, &cfg->dctcp, cfg->line_rate);
	timely_init(&qp->cc.timely, &cfg->timely, cfg->line_rate);
	hpcc_init(&qp->cc.hpcc, &cfg->hpcc, cfg->line_rate, cfg->cc_window);
	qp->cc.pace_until = RNIC_NO_DEADLINE;
	/* The application's limit is a QP attribute: it survives RESET
	 * like the others it set (rdma-core keeps no other notion). */
	qp->cc.limit_bps = limit;
	qp->cc.limit_burst = burst;
}

uint8_t cc_tx_ecn(const struct rnic_qp *qp)
{
	return qp->r->cfg.ecn && connected(qp) ? WIRE_ECN_ECT0 : WIRE_ECN_NOT_ECT;
}

/* The algorithm in charge of this QP's rate: DCTCP, TIMELY and HPCC only
 * for the connected QPs they can hear from; any other QP (UD) stays with
 * DCQCN, whose state is idle until a CNP names the QP. */
static enum rnic_cc_algo algo(const struct rnic_qp *qp)
{
	return connected(qp) ? qp->r->cfg.cc_algo : RNIC_CC_DCQCN;
}

/* The algorithm's rate, 0 while it does not hold the QP back (DCQCN
 * uncongested; the others at the line rate). */
static uint64_t algo_rate(const struct rnic_qp *qp)
{
	uint64_t line = qp->r->cfg.line_rate, rate;

	switch (algo(qp)) {
	case RNIC_CC_DCTCP:
		rate = dctcp_rate(&qp->cc.dctcp);
		return rate < line ? rate : 0;
	case RNIC_CC_TIMELY:
		rate = timely_rate(&qp->cc.timely);
		return rate < line ? rate : 0;
	case RNIC_CC_HPCC:
		rate = hpcc_rate(&qp->cc.hpcc);
		return rate < line ? rate : 0;
	default:
		return qp->cc.rp.congested ? dcqcn_rate(&qp->cc.rp) : 0;
	}
}

/* The pacer's rate now, 0 when it stands aside (no limit, uncongested on
 * a port without a real rate).  By default an uncongested QP sends as fast
 * as the host can: the nominal 25 Gb/s means little on
 * loopback.  With cfg.pace_line_rate the port's rate is real, as on a NIC:
 * needed when the first hop is faster than the slowest link (veth into a
 * 1 Gbit/s bottleneck), or DCQCN recovers to 25 Gb/s and overruns it. */
static uint64_t pace_rate(const struct rnic_qp *qp)
{
	uint64_t rate = algo_rate(qp);

	if (!rate && qp->r->cfg.pace_line_rate)
		rate = qp->r->cfg.line_rate;

	if (qp->cc.limit_bps && (!rate || qp->cc.limit_bps < rate))
		rate = qp->cc.limit_bps;
	return rate;
}

static uint64_t burst_ns(const struct rnic_qp *qp, uint64_t rate)
{
	/* Two path-MTU packets (on the message path too, whose one packet
	 * per message would make the allowance a whole message). */
	uint64_t two = pacer_cost(2u * (qp->mtu + WIRE_BTH_LEN + WIRE_RETH_LEN + WIRE_ICRC_LEN +
					RNIC_PACER_OVERHEAD),
				  rate);

	if (qp->cc.limit_burst && rate == qp->cc.limit_bps)
		return pacer_cost(qp->cc.limit_burst, rate);
	return two > RNIC_PACER_BURST_NS ? two : RNIC_PACER_BURST_NS;
}

bool cc_window_open(const struct rnic_qp *qp, uint32_t in_flight)
{
	const struct rnic_config *cfg = &qp->r->cfg;
	uint64_t rate, window;

	if (!cfg->cc_window || algo(qp) == RNIC_CC_DCQCN)
		return true;
	rate = algo(qp) == RNIC_CC_DCTCP  ? dctcp_rate(&qp->cc.dctcp)
	       : algo(qp) == RNIC_CC_HPCC ? hpcc_rate(&qp->cc.hpcc)
					   : timely_rate(&qp->cc.timely);
	window = (uint64_t)((unsigned __int128)cfg->cc_window * rate / cfg->line_rate);
	/* At least one packet, or a QP at the minimum rate never sends. */
	/* Trade-off: on the message path in_flight counts messages, each
	 * counted as one path MTU here; the path is between two processes
	 * of one host, where no queue builds for the window to bound. */
	return in_flight == 0 || (uint64_t)in_flight * qp->mtu < window;
}

bool cc_wants_ackreq(const struct rnic_qp *qp, uint32_t in_flight)
{
	/* Every packet while few are out, then spread so that the
	 * completer's RNIC_RTT_MARKS marks (a ring of the AckReq packets
	 * in flight) still cover everything in flight: a mark overwritten
	 * before its ACK is a sample lost. */
	bool spaced = qp->req.since_ackreq + 1 >= in_flight / (RNIC_RTT_MARKS / 2);

	if (algo(qp) == RNIC_CC_TIMELY || algo(qp) == RNIC_CC_HPCC)
		return spaced;          /* feedback all through the window */
	return spaced && !cc_window_open(qp, in_flight);
}

bool cc_may_send(struct rnic_qp *qp, uint64_t now)
{
	uint64_t rate = pace_rate(qp);
	uint64_t burst;

	if (!rate)
		return true;
	pacer_set_rate(&qp->cc.pacer, now, rate);
	burst = burst_ns(qp, rate);
	if (pacer_ready(&qp->cc.pacer, now, burst))
		return true;
	qp->cc.pace_until = pacer_ready_at(&qp->cc.pacer, burst);
	rnic_qp_timer_armed(qp, qp->cc.pace_until);
	return false;
}

void cc_on_sent(struct rnic_qp *qp, size_t wire_bytes, uint64_t now)
{
	uint64_t bytes = wire_bytes + RNIC_PACER_OVERHEAD;
	uint64_t rate = pace_rate(qp);

	if (rate)
		pacer_sent(&qp->cc.pacer, now, bytes, rate);
	dcqcn_on_sent(&qp->cc.rp, bytes, now);
	rnic_qp_timer_armed(qp, cc_next_deadline(qp));
}

/* Packets the QP has sent (new ones): acknowledged plus in flight. */
static uint64_t snd_nxt(const struct rnic_qp *qp)
{
	int32_t in_flight = wire_psn_diff(qp->req.psn_high, qp->comp.psn);

	return qp->cc.acked + (in_flight > 0 ? (uint64_t)in_flight : 0);
}

static void rate_changed(struct rnic_qp *qp, uint64_t cuts_before, uint64_t cuts_after, uint64_t now);

void cc_on_ack(struct rnic_qp *qp, uint32_t psns, uint64_t now)
{
	qp->cc.acked += psns;
	if (algo(qp) != RNIC_CC_DCTCP || !qp->r->cfg.dcqcn)
		return;
	/* snd_nxt with the ACK counted: comp.psn has not moved yet. */
	uint64_t cuts = qp->cc.dctcp.cuts;
	dctcp_on_ack(&qp->cc.dctcp, qp->cc.acked, snd_nxt(qp) - psns);
	rate_changed(qp, cuts, qp->cc.dctcp.cuts, now);
}

void cc_on_rtt(struct rnic_qp *qp, uint64_t rtt_ns, uint64_t now)
{
	if (algo(qp) != RNIC_CC_TIMELY || !qp->r->cfg.dcqcn)
		return;
	uint64_t cuts = qp->cc.timely.cuts;
	timely_on_rtt(&qp->cc.timely, rtt_ns, qp->cc.acked, snd_nxt(qp));
	rate_changed(qp, cuts, qp->cc.timely.cuts, now);
}

void rnic_cc_telemetry(struct rnic *r, uint32_t qpn, const struct hpcc_int *t, uint64_t now)
{
	struct rnic_qp *qp = rnic_qp_lookup(r, qpn);

	if (!qp || !t || algo(qp) != RNIC_CC_HPCC || !rnic_qp_can_send(qp) || !r->cfg.dcqcn)
		return;
	uint64_t cuts = qp->cc.hpcc.cuts;
	hpcc_on_ack(&qp->cc.hpcc, t, qp->cc.acked, snd_nxt(qp));
	rate_changed(qp, cuts, qp->cc.hpcc.cuts, now);
}

/* ---- notification point --------------------------------------------------- */

/* A CNP (IBTA Annex A17.9.2): BTH with opcode 0x81, DestQP the QP whose
 * packet was marked, BECN set, PSN 0, our default P_Key, then 16 reserved
 * bytes and the ICRC.  It travels the flow's path back (the marked
 * packet's UDP source port) and is never ECN-capable, so congestion on
 * the return path cannot mark or drop it as ECT traffic. */
static void send_cnp(struct rnic_qp *qp, const struct rnic_rx *rx)
{
	struct rnic *r = qp->r;
	struct wire_ib ib;
	int n;

	memset(&ib, 0, sizeof(ib));
	ib.bth.opcode = WIRE_OPCODE_CNP;
	ib.bth.pkey = RNIC_DEFAULT_PKEY;
	ib.bth.becn = true;
	ib.bth.dqpn = qp->attr.dest_qp_num;
	n = wire_encode_ib(&ib, r->tx, sizeof(r->tx));
	if (n < 0)
		return;
	struct rnic_tx tx = {
		.dst = qp->dgid,
		.sport = rx->sport,
		.ecn = WIRE_ECN_NOT_ECT,
		.dscp = qp->dscp,
		.ttl = qp->ttl,
		.ib = r->tx,
		.ib_len = (size_t)n,
	};
	r->ctr.tx_packets++;
	r->ctr.tx_bytes += (size_t)n;
	r->ctr.cnp_sent++;
	qp->cc.cnp_sent++;
	r->io.xmit(r->io.ctx, &tx);
}

void cc_on_receive(struct rnic_qp *qp, const struct rnic_rx *rx, uint64_t now)
{
	/* DCTCP's CNPs are its ECN echo: one per CE packet, no gap. */
	uint64_t gap = algo(qp) == RNIC_CC_DCTCP ? 0 : (uint64_t)qp->r->cfg.cc.min_time_between_cnps * 1000u;

	if ((rx->ecn & WIRE_ECN_CE) != WIRE_ECN_CE || !connected(qp))
		return;
	qp->cc.ce_received++;
	if (!qp->r->cfg.cnp)
		return;
	if (gap && qp->cc.cnp_ever && now - qp->cc.last_cnp < gap)
		return;
	qp->cc.cnp_ever = true;
	qp->cc.last_cnp = now;
	send_cnp(qp, rx);
}

/* ---- reaction point --------------------------------------------------------- */

void cc_receive_cnp(struct rnic *r, const struct wire_ib *pkt, const struct rnic_rx *rx, uint64_t now)
{
	struct rnic_qp *qp = rnic_qp_lookup(r, pkt->bth.dqpn);

	r->ctr.cnp_received++;
	/* Only the connected peer may slow a QP down (IBTA 9.6.1.5's
	 * source check, applied to CNPs too: anyone else's CNP would be a
	 * cheap way to throttle a victim). */
	if (!qp || !connected(qp) || !rnic_qp_can_send(qp) ||
	    memcmp(rx->src.raw, qp->dgid.raw, sizeof(rx->src.raw)) != 0) {
		r->ctr.rx_drop_cnp++;
		return;
	}
	qp->cc.cnp_received++;
	if (!r->cfg.dcqcn)
		return;
	if (algo(qp) == RNIC_CC_DCTCP) {
		uint64_t before = qp->cc.dctcp.cuts;
		dctcp_on_mark(&qp->cc.dctcp, snd_nxt(qp));
		rate_changed(qp, before, qp->cc.dctcp.cuts, now);
		return;
	}
	if (algo(qp) != RNIC_CC_DCQCN)
		return;         /* TIMELY and HPCC do not hear the marks */
	uint64_t cuts = qp->cc.rp.cuts;
	dcqcn_on_cnp(&qp->cc.rp, now);
	r->ctr.rate_decreases += qp->cc.rp.cuts - cuts;
	rnic_qp_timer_armed(qp, cc_next_deadline(qp));
}

/* ---- timers ----------------------------------------------------------------- */

uint64_t cc_next_deadline(const struct rnic_qp *qp)
{
	uint64_t d = dcqcn_next_deadline(&qp->cc.rp);

	return qp->cc.pace_until < d ? qp->cc.pace_until : d;
}

/* The rate changed: a requester waiting for the pacer waits for the time
 * the new rate gives (what it owes is rescaled, pacer.h). */
static void repace(struct rnic_qp *qp, uint64_t now)
{
	uint64_t rate;

	if (qp->cc.pace_until == RNIC_NO_DEADLINE)
		return;
	rate = pace_rate(qp);
	if (!rate) {
		qp->cc.pace_until = now;
		rnic_qp_timer_armed(qp, now);
		return;
	}
	pacer_set_rate(&qp->cc.pacer, now, rate);
	qp->cc.pace_until = pacer_ready_at(&qp->cc.pacer, burst_ns(qp, rate));
	rnic_qp_timer_armed(qp, qp->cc.pace_until);
}

/* DCTCP, TIMELY or HPCC moved the rate: count the cuts, and a requester
 * waiting for the pacer waits for the new rate's time. */
static void rate_changed(struct rnic_qp *qp, uint64_t cuts_before, uint64_t cuts_after, uint64_t now)
{
	qp->r->ctr.rate_decreases += cuts_after - cuts_before;
	repace(qp, now);
}

void cc_advance(struct rnic_qp *qp, uint64_t now)
{
	uint64_t cuts = qp->cc.rp.cuts;

	dcqcn_advance(&qp->cc.rp, now);
	qp->r->ctr.rate_decreases += qp->cc.rp.cuts - cuts;
	repace(qp, now);
	if (qp->cc.pace_until <= now) {
		qp->cc.pace_until = RNIC_NO_DEADLINE;
		requester_run(qp, now);
	}
	rnic_qp_timer_armed(qp, cc_next_deadline(qp));
}

/* ---- the application's rate limit ------------------------------------------- */

int cc_check_rate_limit(const struct rnic_qp *qp, uint32_t rate_kbps)
{
	if (qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC && qp->type != IBV_QPT_UD)
		return EINVAL;
	if (rate_kbps && (rate_kbps < RNIC_RATE_LIMIT_MIN_KBPS ||
			  (uint64_t)rate_kbps * KBPS > qp->r->cfg.line_rate))
		return EINVAL;
	return 0;
}

static void set_limit(struct rnic_qp *qp, uint32_t rate_kbps, uint32_t burst, uint64_t now)
{
	qp->cc.limit_bps = (uint64_t)rate_kbps * KBPS;
	qp->cc.limit_burst = burst;
	qp->attr.rate_limit = rate_kbps;
	repace(qp, now);        /* a waiting requester waits for the new rate */
}

void cc_set_rate_limit(struct rnic_qp *qp, uint32_t rate_kbps, uint64_t now)
{
	set_limit(qp, rate_kbps, qp->cc.limit_burst, now);
}

int rnic_qp_set_rate_limit(struct rnic_qp *qp, uint32_t rate_kbps, uint32_t max_burst_sz,
			   uint16_t typical_pkt_sz, uint64_t now)
{
	int err;

	(void)typical_pkt_sz;
	if (!qp)
		return EINVAL;
	err = cc_check_rate_limit(qp, rate_kbps);
	if (err)
		return err;
	set_limit(qp, rate_kbps, max_burst_sz, now);
	return 0;
}

/* ---- the live view ------------------------------------------------------------ */

size_t rnic_qp_infos(struct rnic *r, struct rnic_qp_info *out, size_t max, uint64_t now)
{
	size_t n = 0;

	/* QPN order: slots are qpn % max_qp and QPNs are handed out in
	 * sequence, so sort the few found by QPN (insertion sort: the live
	 * view lists at most a screenful). */
	for (uint32_t i = 0; i < r->cfg.max_qp; i++) {
		struct rnic_qp *qp = r->qps[i];

		if (!qp)
			continue;
		if (n < max) {
			struct rnic_qp_info *q = &out[n];

			memset(q, 0, sizeof(*q));
			q->qpn = qp->qpn;
			q->dest_qpn = qp->attr.dest_qp_num;
			q->type = qp->type;
			q->state = qp->attr.qp_state;
			q->sq_psn = qp->req.psn;
			q->unacked_psn = qp->comp.psn;
			q->rq_psn = qp->resp.epsn;
			q->outstanding = qp->sq.head - qp->sq.comp;
			q->retransmits = qp->stats.retransmits;
			q->rate_bps = pace_rate(qp);
			q->rate_limit_bps = qp->cc.limit_bps;
			q->alpha = algo(qp) == RNIC_CC_DCTCP ? dctcp_alpha(&qp->cc.dctcp) : dcqcn_alpha(&qp->cc.rp, now);
			q->congested = algo_rate(qp) != 0;
			q->ce_received = qp->cc.ce_received;
			q->cnp_sent = qp->cc.cnp_sent;
			q->cnp_received = qp->cc.cnp_received;
			q->rate_decreases = qp->cc.rp.cuts + qp->cc.dctcp.cuts + qp->cc.timely.cuts + qp->cc.hpcc.cuts;
			q->tx_packets = qp->stats.tx_packets;
			q->tx_bytes = qp->stats.tx_bytes;
			q->rx_packets = qp->stats.rx_packets;
			q->rx_bytes = qp->stats.rx_bytes;
			for (size_t k = n; k > 0 && out[k - 1].qpn > out[k].qpn; k--) {
				struct rnic_qp_info t = out[k - 1];
				out[k - 1] = out[k];
				out[k] = t;
			}
		}
		n++;
	}
	return n;
}
