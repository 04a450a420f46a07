/*
 * port.c — ports and links of the simulated fabric (net_int.h): the
 * packet queues, a port serialising one packet at a time onto its link,
 * the link's random loss, and the arrival at the far end, handed to the
 * host (host.c), the switch (switch.c) or, for a PFC frame, to pfc.c.
 *
 * A port sends one packet at a time (busy until the last bit is out),
 * choosing PFC frames first, then the highest unpaused priority.  It is
 * woken at the end of a transmission only if something waits to go; a
 * port whose queues ran empty costs no event until a packet comes, so a
 * hop is one event on an idle link and two behind a queue.  The packet
 * arrives a serialisation time plus the link's delay after it started.
 */
#include "sim/net_int.h"

int q_grow(struct queue *q)
{
	uint32_t cap = q->cap ? q->cap * 2 : 64;
	struct sim_pkt **r = malloc(cap * sizeof(*r));

	if (!r)
		return ENOMEM;
	for (uint32_t i = 0; i < q->len; i++)
		r[i] = q->ring[(q->head + i) & (q->cap - 1)];
	free(q->ring);
	q->ring = r;
	q->head = 0;
	q->cap = cap;
	return 0;
}

void q_free(struct queue *q)
{
	while (q->len)
		free(q_pop(q));
	free(q->ring);
}

/* Bytes waiting in the port's priority queues (HPCC's INT, PINT's U). */
uint64_t port_queued(const struct port *p)
{
	uint64_t queued = 0;

	for (int prio = 0; prio < SIM_PRIOS; prio++)
		queued += p->pr[prio].q.bytes;
	return queued;
}

static void port_wake(void *ctx, uint64_t arg, uint64_t now)
{
	struct port *p = ctx;

	(void)arg;
	if (p->wake_at == now)
		p->wake_at = UINT64_MAX;
	port_kick(p->node->net, p);
}

/* Kick the port again at `at`, unless a wake no later is due already (a
 * later one stays: it finds the port with nothing to do, or busy, and
 * costs a look). */
static void port_wake_at(struct port *p, uint64_t at, const struct sim_pkt *hint)
{
	if (p->wake_at <= at)
		return;
	p->wake_at = at;
	sim_at(p->node->part->eng, at, port_wake, p, (uint64_t)(uintptr_t)hint);
}

static bool port_has_work(const struct port *p)
{
	return p->backlog || p->ctrl.len || (p->node->host && p->node->host->act_len);
}

/* The packet to send now: a PFC frame, else the head of the highest
 * priority that is neither paused nor (IB mode) short of credit.  NULL
 * with *wake the earliest end of a pause that holds one back. */
static struct sim_pkt *port_choose(struct sim_net *n, struct port *p, uint64_t now, uint64_t *wake)
{
	struct part *P = p->node->part;

	if (p->ctrl.len)
		return q_pop(&p->ctrl);
	/* The highest priority with packets first (the backlog mask: no look
	 * at the empty queues). */
	for (unsigned left = p->backlog; left;) {
		unsigned prio = 31u - (unsigned)__builtin_clz(left);
		left &= ~(1u << prio);
		if (p->pr[prio].paused_until > now) {
			*wake = p->pr[prio].paused_until < *wake ? p->pr[prio].paused_until : *wake;
			continue;
		}
		if (n->so.ib_credits && !credit_take(P, p, prio))
			continue;
		return port_pop(p, prio);
	}
	return NULL;
}

void port_kick(struct sim_net *n, struct port *p)
{
	struct part *P = p->node->part;
	uint64_t now = P->eng->now, wake = UINT64_MAX;

	if (!p->peer)
		return;
	if (now < p->busy_until) {
		port_wake_at(p, p->busy_until, NULL);
		return;
	}
	struct host *h = p->node->host;
	if (h && !p->pr[SIM_PRIO_ROCE].q.len && h->act_len)
		host_nic_next(h, p);
	struct sim_pkt *pkt = port_choose(n, p, now, &wake);
	if (!pkt) {
		if (wake != UINT64_MAX)
			port_wake_at(p, wake, NULL);
		return;
	}
	if (pkt->kind == PKT_DATA && !p->node->is_host)
		switch_int(n, p, pkt, now);
	if (pkt->kind == PKT_DATA)
		p->tx_bytes += pkt->wire;
	/* A switch lets go of a packet's buffer when it starts to leave. */
	if (pkt->kind == PKT_DATA && !p->node->is_host)
		switch_release(n, p->node, pkt);
	/* On the wire: the port is busy until the last bit is out, and the
	 * packet arrives a link delay after that, unless the link loses it. */
	p->busy_until = now + ser_ns(p, pkt->wire);
	P->stats.packet_hops++;
	if (pkt->kind == PKT_DATA && p->loss > 0 && uniform(P) < p->loss) {
		P->stats.link_losses++;
		free(pkt);
	} else {
		struct port *dst = p->peer->ports[p->peer_port];
		net_at(P, p->peer, p->busy_until + p->delay_ns, arrive, dst, (uint64_t)(uintptr_t)pkt);
	}
	if (port_has_work(p)) {
		/* The wake's argument is only a hint: the packet that will
		 * most likely leave next, which the engine prefetches while
		 * the event before it runs (it is not used: a packet of a
		 * higher priority may come first). */
		const struct sim_pkt *next = NULL;
		if (p->backlog) {
			const struct queue *q = &p->pr[31 - __builtin_clz(p->backlog)].q;
			next = q->ring[q->head];
		}
		port_wake_at(p, p->busy_until, next);
	}
}

/* A packet's last bit reached port p: a PFC frame for its egress, or a
 * packet for its node. */
void arrive(void *ctx, uint64_t arg, uint64_t now)
{
	struct port *p = ctx;
	struct sim_pkt *pkt = (struct sim_pkt *)(uintptr_t)arg;
	struct node *node = p->node;
	struct sim_net *n = node->net;

	if (pkt->kind == PKT_PFC) {
		on_pfc(n, p, pkt, now);
		free(pkt);
		return;
	}
	if (node->is_host)
		host_receive(n, node->host, pkt, now);
	else
		switch_receive(n, node, p, pkt);
}

/* ---- what a port is doing, for the outputs (net.h) --------------------- */

bool sim_port_is_paused(const struct sim_net *n, unsigned node, unsigned port)
{
	if (node >= n->nnodes || port >= n->nodes[node]->nports)
		return false;
	return n->nodes[node]->ports[port]->pr[SIM_PRIO_ROCE].paused_until > n->nodes[node]->part->eng->now;
}

uint64_t sim_port_paused_ns(const struct sim_net *n, unsigned node, unsigned port)
{
	if (node >= n->nnodes || port >= n->nodes[node]->nports)
		return 0;
	return paused_ns(n->nodes[node]->ports[port], SIM_PRIO_ROCE, n->nodes[node]->part->eng->now);
}

uint64_t sim_port_pauses_received(const struct sim_net *n, unsigned node, unsigned port)
{
	return node < n->nnodes && port < n->nodes[node]->nports ? n->nodes[node]->ports[port]->pauses_rx : 0;
}

uint64_t sim_port_queue_bytes(const struct sim_net *n, unsigned node, unsigned port)
{
	if (node >= n->nnodes || port >= n->nodes[node]->nports)
		return 0;
	uint64_t b = port_queued(n->nodes[node]->ports[port]);
	if (n->nodes[node]->host)
		b += n->nodes[node]->host->flowq_bytes;
	return b;
}
