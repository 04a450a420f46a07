/*
 * switch.c — a switch of the simulated fabric (net.h, "switch", "ECN",
 * "no PFC", "routing"): a packet that arrives is routed (ECMP over the
 * next hops topo.c computed), admitted to the shared buffer or dropped,
 * marked by RED on its egress queue's length, and queued at its egress
 * port (port.c sends it).  Admission is by the mode: credits (credit.c),
 * PFC on the lossless priority (pfc.c: XOFF and headroom), else the
 * dynamic threshold on the egress queue.  A packet holds buffer, counted
 * to its ingress (port, priority), until it starts to leave
 * (switch_release); as it leaves, HPCC's INT record or PINT's field is
 * written (switch_int).
 */
#include "sim/net_int.h"

/* alpha · (free shared buffer): PFC's XOFF, and the drop threshold
 * without PFC. */
uint64_t xoff_threshold(const struct sim_net *n, const struct node *sw)
{
	uint64_t free_bytes = n->so.buffer_bytes > sw->buf_used ? n->so.buffer_bytes - sw->buf_used : 0;
	return (uint64_t)(n->so.alpha * (double)free_bytes);
}

/* The egress port for the packet: one of its destination's next hops,
 * by a hash of the UDP source port and the hosts (ECMP). */
static struct port *route(struct node *sw, const struct sim_pkt *pkt)
{
	unsigned idx = sw->route[pkt->dst_host];
	uint64_t h = (uint64_t)pkt->sport * 0x9e3779b97f4a7c15ull ^ (uint64_t)pkt->src_host << 32 ^ pkt->dst_host;

	if (!idx)
		return NULL;
	const struct ecmp_set *set = &sw->sets[idx - 1];
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	/* A fat-tree's sets hold 1, k/2 ... ports: a mask, not a division
	 * (whose latency costs a tenth of a packet's arrival); for a power
	 * of two both pick the same port. */
	unsigned n = set->n;
	return sw->ports[set->port[(n & (n - 1)) == 0 ? h & (n - 1) : h % n]];
}

/* RED at enqueue on the egress queue's bytes (ECT packets only), with the
 * thresholds of the egress port's rate if the ECN map lists it. */
static void ecn_mark(struct sim_net *n, struct part *P, const struct port *out, struct sim_pkt *pkt)
{
	uint64_t qb = out->pr[pkt->prio].q.bytes, kmin = n->so.kmin_bytes, kmax = n->so.kmax_bytes;
	double pmax = n->so.pmax;

	for (unsigned i = 0; i < n->so.ecn_map_n; i++) {
		if (n->so.ecn_map[i].rate_bps == out->rate_bps) {
			kmin = n->so.ecn_map[i].kmin_bytes;
			kmax = n->so.ecn_map[i].kmax_bytes;
			pmax = n->so.ecn_map[i].pmax;
		}
	}
	bool mark = qb > kmax ||
		    (qb > kmin && kmax > kmin && uniform(P) < pmax * (double)(qb - kmin) / (double)(kmax - kmin));
	if (mark) {
		pkt->ecn = 3;
		P->stats.ecn_marks++;
	}
}

static void drop(struct sim_pkt *pkt, uint64_t *counter)
{
	(*counter)++;
	free(pkt);
}

void switch_receive(struct sim_net *n, struct node *sw, struct port *in, struct sim_pkt *pkt)
{
	struct part *P = sw->part;
	struct port *out = route(sw, pkt);
	uint8_t prio = pkt->prio;

	if (!out) {
		drop(pkt, &P->stats.drops);
		return;
	}
	pkt->in_port = (uint16_t)in->index;
	pkt->in_headroom = false;
	if (out->pr[prio].stormed) {
		drop(pkt, &P->stats.watchdog_drops);
		return;
	}
	if (n->so.ib_credits) {
		if (!credit_room(n, sw, in, pkt)) {
			drop(pkt, &P->stats.drops);
			return;
		}
	} else if (n->so.pfc && prio == SIM_PRIO_ROCE) {
		if (!pfc_admit(n, sw, in, pkt))
			return;
	} else {
		uint64_t threshold = xoff_threshold(n, sw);
		if (out->pr[prio].q.bytes + pkt->wire > threshold || sw->buf_used + pkt->wire > n->so.buffer_bytes) {
			drop(pkt, &P->stats.drops);
			return;
		}
	}
	if (!pkt->in_headroom) {
		in->pr[prio].in_bytes += pkt->wire;
		sw->buf_used += pkt->wire;
		if (sw->buf_used > P->stats.max_buffer_bytes)
			P->stats.max_buffer_bytes = sw->buf_used;
	}
	if (n->so.ecn && (pkt->ecn == 1 || pkt->ecn == 2))
		ecn_mark(n, P, out, pkt);
	if (port_push(out, prio, pkt)) {
		switch_release(n, sw, pkt);
		drop(pkt, &P->stats.drops);
		return;
	}
	port_kick(n, out);
}

/* The packet starts to leave egress port p: HPCC-PINT raises the
 * request's field to the port's U; HPCC appends the port's INT record as
 * its switch writes it when the packet leaves the queue (the time, the
 * bytes sent before it, the bytes still queued, the rate). */
void switch_int(struct sim_net *n, struct port *p, struct sim_pkt *pkt, uint64_t now)
{
	if (n->pint_on) {
		if (pkt->tel_push) {
			double u = sim_pint_port_u(&n->pint, &p->pint, now, port_queued(p), p->rate_bps);
			uint16_t f = sim_pint_encode(&n->pint, u, uniform(p->node->part));
			if (f > pkt->pint_field)
				pkt->pint_field = f;
		}
		sim_pint_port_sent(&p->pint, now, pkt->wire);
	} else if (pkt->tel_push && pkt->tel && pkt->tel->nhop < HPCC_MAX_HOPS) {
		pkt->tel->hop[pkt->tel->nhop++] = (struct hpcc_int_hop){
			.ts_ns = now, .tx_bytes = p->tx_bytes, .qlen_bytes = port_queued(p), .rate_bps = p->rate_bps };
	}
}

/* The packet leaves the switch's buffer (it started to leave, or the
 * watchdog dropped it): its ingress's bytes go down, which may end a
 * pause (XON) or return credit. */
void switch_release(struct sim_net *n, struct node *sw, struct sim_pkt *pkt)
{
	struct port *in = sw->ports[pkt->in_port];

	if (n->so.ib_credits) {
		credit_release(sw, in, pkt);
		return;
	}
	if (pkt->in_headroom) {
		in->pr[pkt->prio].headroom_used -= pkt->wire;
	} else {
		in->pr[pkt->prio].in_bytes -= pkt->wire;
		sw->buf_used -= pkt->wire;
	}
	pfc_maybe_xon(n, sw, in, pkt->prio);
}
