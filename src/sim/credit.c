/*
 * credit.c — InfiniBand's link-level flow control in the simulated fabric
 * (sim_switch_opts.ib_credits), instead of PFC: per virtual lane (the
 * priorities), a port sends a packet only when the receiver's input
 * buffer has granted room for it (credit_take, from port.c), and the
 * room comes back as credit, one link delay upstream, when the packet
 * leaves that buffer (credit_release, from switch.c).  Each switch input
 * port's buffer is buffer_bytes / ports: nothing is dropped, and nothing
 * is paused.
 */
#include "sim/net_int.h"

/* Take credit for the head packet of p's queue `prio`; false (a stall,
 * counted) when the receiver has no room for it yet. */
bool credit_take(struct part *P, struct port *p, unsigned prio)
{
	uint32_t need = p->pr[prio].q.ring[p->pr[prio].q.head]->wire;

	if (p->pr[prio].credits < need) {
		P->stats.credit_stalls++;
		return false;
	}
	p->pr[prio].credits -= need;
	return true;
}

/* Whether the input buffer of `in` holds the packet: always, if credit
 * works (a drop here would say the model is wrong). */
bool credit_room(const struct sim_net *n, const struct node *sw, const struct port *in, const struct sim_pkt *pkt)
{
	return in->pr[pkt->prio].in_bytes + pkt->wire <= n->so.buffer_bytes / sw->nports;
}

/* The credit arrives at the upstream port: room again, and a look at its
 * queues. */
static void credit_return(void *ctx, uint64_t arg, uint64_t now)
{
	struct port *p = ctx;

	(void)now;
	p->pr[arg & 0xff].credits += arg >> 8;
	port_kick(p->node->net, p);
}

/* The packet left the switch: its input buffer space is free again, and
 * the credit goes back to the upstream port, one link delay away (a
 * flow-control packet whose own wire time is neglected). */
void credit_release(struct node *sw, struct port *in, const struct sim_pkt *pkt)
{
	struct part *P = sw->part;

	in->pr[pkt->prio].in_bytes -= pkt->wire;
	sw->buf_used -= pkt->wire;
	struct port *up = in->peer->ports[in->peer_port];
	net_at(P, up->node, P->eng->now + in->delay_ns, credit_return, up, (uint64_t)pkt->wire << 8 | pkt->prio);
}

/* Each switch input port's buffer is its share of the switch's (a static
 * partition per port, per VL); the upstream port starts with that many
 * bytes of credit.  A host takes what arrives at once, so sending to a
 * host is never credit-bound. */
void credits_init(struct sim_net *n)
{
	for (unsigned i = 0; n->so.ib_credits && i < n->nnodes; i++) {
		struct node *x = n->nodes[i];
		for (unsigned k = 0; k < x->nports; k++) {
			struct port *p = x->ports[k];
			for (int q = 0; q < SIM_PRIOS; q++)
				p->pr[q].credits = p->peer && !p->peer->is_host ? n->so.buffer_bytes / p->peer->nports
									      : UINT64_MAX / 2;
		}
	}
}
