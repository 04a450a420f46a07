/*
 * pfc.c — priority flow control (802.1Qbb) in the simulated fabric
 * (net.h, "PFC" and "watchdog"), both of its ends:
 *
 *   ingress  a switch's (port, priority) holding more than xoff = alpha ·
 *            (free shared buffer) sends a PAUSE upstream (pfc_admit),
 *            refreshes it at half its time while above xon, and sends a
 *            RESUME once below xon with its headroom empty
 *            (pfc_maybe_xon, from switch_release); packets that come in
 *            after the XOFF use the headroom, and one that finds it full
 *            is dropped
 *   egress   a PAUSE stops that priority of the port until its quanta
 *            run out or a RESUME comes (on_pfc); the time paused is
 *            summed per (port, priority)
 *   watchdog (SONiC pfcwd, action drop) per partition, every detect/4
 *   storm    a host that pauses its switch port for ever
 *
 * A PFC frame is a packet of its own (PKT_PFC) in the port's control
 * queue, sent before any data (port.c).
 */
#include "sim/net_int.h"

static uint64_t quantum_ns(const struct port *p)
{
	return 512ull * 1000000000ull / p->rate_bps;
}

void send_pfc(struct sim_net *n, struct port *ingress, uint8_t prio, uint16_t quanta)
{
	struct sim_pkt *pkt = calloc(1, sizeof(*pkt));

	if (!pkt)
		return;
	pkt->kind = PKT_PFC;
	pkt->wire = PFC_FRAME_WIRE;
	pkt->pfc_prio = prio;
	pkt->quanta = quanta;
	if (q_push(&ingress->ctrl, pkt)) {
		free(pkt);
		return;
	}
	port_kick(n, ingress);
}

/* Refresh a PAUSE at half its time while the ingress stays congested. */
static void pfc_refresh(void *ctx, uint64_t arg, uint64_t now)
{
	struct port *in = ctx;
	struct sim_net *n = in->node->net;
	uint8_t prio = (uint8_t)(arg & 0xff);
	uint64_t gen = arg >> 8;

	if (!in->pr[prio].xoff_sent || in->refresh_gen[prio] != gen)
		return;
	send_pfc(n, in, prio, PFC_QUANTA);
	in->node->part->stats.pauses_sent++;
	sim_at(in->node->part->eng, now + (uint64_t)PFC_QUANTA * quantum_ns(in) / 2, pfc_refresh, in, gen << 8 | prio);
}

static void xoff(struct sim_net *n, struct port *in, uint8_t prio)
{
	in->pr[prio].xoff_sent = true;
	in->refresh_gen[prio]++;
	struct part *P = in->node->part;
	send_pfc(n, in, prio, PFC_QUANTA);
	P->stats.pauses_sent++;
	sim_at(P->eng, P->eng->now + (uint64_t)PFC_QUANTA * quantum_ns(in) / 2, pfc_refresh, in,
	       in->refresh_gen[prio] << 8 | prio);
}

/* A packet of the lossless priority came in at `in`: over the XOFF
 * threshold (or with the shared buffer full) it pauses the upstream port
 * if not yet, and goes to the headroom.  False: the headroom is full,
 * the packet was dropped (and freed). */
bool pfc_admit(struct sim_net *n, struct node *sw, struct port *in, struct sim_pkt *pkt)
{
	struct part *P = sw->part;
	uint8_t prio = pkt->prio;
	uint64_t threshold = xoff_threshold(n, sw);

	if (in->pr[prio].in_bytes + pkt->wire <= threshold && sw->buf_used + pkt->wire <= n->so.buffer_bytes)
		return true;
	/* Headroom: what is in flight during the pause's round trip, and
	 * two packets of slack. */
	uint64_t headroom = 2 * in->rate_bps / 8 * in->delay_ns / 1000000000ull + 2 * mtu_wire(n) + PFC_FRAME_WIRE;
	if (!in->pr[prio].xoff_sent)
		xoff(n, in, prio);
	if (in->pr[prio].headroom_used + pkt->wire > headroom) {
		P->stats.headroom_drops++;
		free(pkt);
		return false;
	}
	in->pr[prio].headroom_used += pkt->wire;
	pkt->in_headroom = true;
	return true;
}

/* A packet that came in at `in` left the switch.  XON: two MTUs below
 * XOFF, and the headroom empty again, so that the next XOFF finds all of
 * it for the packets in flight. */
void pfc_maybe_xon(struct sim_net *n, struct node *sw, struct port *in, uint8_t prio)
{
	uint64_t xoff_at = xoff_threshold(n, sw), two = 2 * mtu_wire(n);

	if (in->pr[prio].xoff_sent && !in->pr[prio].headroom_used && in->pr[prio].in_bytes + two <= xoff_at) {
		in->pr[prio].xoff_sent = false;
		in->refresh_gen[prio]++;
		send_pfc(n, in, prio, 0);
		sw->part->stats.resumes_sent++;
	}
}

/* Time this (port, priority) has spent paused, up to now. */
uint64_t paused_ns(const struct port *p, int prio, uint64_t now)
{
	uint64_t t = p->paused_total[prio];
	uint64_t end = p->pr[prio].paused_until < now ? p->pr[prio].paused_until : now;

	return end > p->pause_start[prio] ? t + end - p->pause_start[prio] : t;
}

/* A PAUSE or RESUME for our egress on this port.  A queue the watchdog
 * has declared stormed ignores them (SONiC pfcwd's "drop" action). */
void on_pfc(struct sim_net *n, struct port *p, const struct sim_pkt *pkt, uint64_t now)
{
	uint8_t prio = pkt->pfc_prio;

	p->node->part->stats.pauses_received++;
	if (pkt->quanta) {
		p->last_pause_rx[prio] = now;
		p->pauses_rx++;
	}
	if (p->pr[prio].stormed)
		return;
	if (p->pr[prio].paused_until <= now) {
		if (pkt->quanta == 0)
			return;         /* a RESUME for a queue not paused */
		/* A new pause period: the last one is over. */
		if (p->pr[prio].paused_until > p->pause_start[prio])
			p->paused_total[prio] += p->pr[prio].paused_until - p->pause_start[prio];
		p->pause_start[prio] = now;
		p->pr[prio].paused_until = now;
	}
	/* A pause expires by itself after its quanta; a newer frame
	 * replaces the time left (802.1Qbb), a RESUME ends it now. */
	p->pr[prio].paused_until = now + (uint64_t)pkt->quanta * quantum_ns(p);
	port_kick(n, p);
}

/* ---- the PFC watchdog (SONiC pfcwd) ---------------------------------------
 *
 * Every detect/4, each switch egress queue of the lossless priority is
 * looked at: paused without a break for the detection time while holding
 * packets, it is declared stormed: its packets are dropped, and so is
 * everything routed to it later (switch_receive), and pauses for it are
 * ignored.  It is restored once no pause has arrived for the restoration
 * time.  Each partition's tick looks at its own switches. */
static void drop_queue(struct sim_net *n, struct port *p, int prio)
{
	while (p->pr[prio].q.len) {
		struct sim_pkt *pkt = port_pop(p, (unsigned)prio);
		switch_release(n, p->node, pkt);
		p->node->part->stats.watchdog_drops++;
		free(pkt);
	}
}

static void watchdog_tick(void *ctx, uint64_t arg, uint64_t now)
{
	struct part *P = ctx;
	struct sim_net *n = P->net;
	const int prio = SIM_PRIO_ROCE;

	(void)arg;
	for (unsigned s = 0; s < n->nswitches; s++) {
		struct node *sw = n->nodes[n->switch_nodes[s]];
		if (sw->part != P)
			continue;
		for (unsigned i = 0; i < sw->nports; i++) {
			struct port *p = sw->ports[i];
			if (!p->pr[prio].stormed && p->pr[prio].paused_until > now && p->pr[prio].q.len &&
			    now - p->pause_start[prio] >= n->so.wd_detect_ns) {
				p->pr[prio].stormed = true;
				p->paused_total[prio] += now - p->pause_start[prio];
				p->pause_start[prio] = p->pr[prio].paused_until = now;
				P->stats.storms_detected++;
				drop_queue(n, p, prio);
				port_kick(n, p);
			} else if (p->pr[prio].stormed && now - p->last_pause_rx[prio] >= n->so.wd_restore_ns) {
				p->pr[prio].stormed = false;
				P->stats.storms_restored++;
			}
		}
	}
	sim_at(P->eng, now + n->so.wd_detect_ns / 4, watchdog_tick, P, 0);
}

/* The first tick of every partition, with PFC and a detection time. */
int watchdog_arm(struct sim_net *n)
{
	for (unsigned q = 0; n->so.pfc && n->so.wd_detect_ns && q < n->nparts; q++)
		if (sim_at(n->parts[q].eng, n->so.wd_detect_ns / 4, watchdog_tick, &n->parts[q], 0))
			return ENOMEM;
	return 0;
}

/* A host whose NIC pauses its switch port for ever (a PFC storm),
 * refreshing the pause before it expires. */
static void storm_tick(void *ctx, uint64_t arg, uint64_t now)
{
	struct port *p = ctx;
	struct sim_net *n = p->node->net;

	(void)arg;
	send_pfc(n, p, SIM_PRIO_ROCE, PFC_QUANTA);
	p->node->part->stats.pauses_sent++;
	sim_at(p->node->part->eng, now + (uint64_t)PFC_QUANTA * quantum_ns(p) / 2, storm_tick, p, 0);
}

int sim_host_storm(struct sim_net *n, unsigned host, uint64_t start_ns)
{
	if (host >= n->nhosts || !n->hosts[host]->node->nports)
		return EINVAL;
	return sim_at(n->hosts[host]->node->part->eng, start_ns, storm_tick, n->hosts[host]->node->ports[0], 0);
}
