/*
 * net.c — the simulated fabric of net.h: ports that serialize packets onto
 * links, switches that buffer, mark and pause, and hosts whose rnics run
 * on the engine's clock.
 *
 * Every packet is one malloc'd struct sim_pkt carried by one event: the
 * peer's "arrival", scheduled when the packet starts to leave (its last
 * bit arrives a serialization time plus the link's delay later).  A port
 * sends one packet at a time (busy until the last bit is out), choosing
 * PFC frames first, then the highest unpaused priority.  It is woken at
 * the end of a transmission only if something waits to go; a port whose
 * queues ran empty costs no event until a packet comes, so a hop is one
 * event on an idle link and two behind a queue.
 *
 * Every node belongs to a partition (struct part): its events run on the
 * partition's engine and count in its counters.  With one partition that
 * is the caller's engine and nothing else changes; with more, sim_net_run
 * (at the end) runs them in windows, on threads (net.h, "partitions").
 */
#include "sim/net.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/prng.h"
#include "rnic/rnic.h"
#include "wire/wire.h"
#include "sim/pint.h"

#define MAX_PORTS 64
#define MAX_ECMP 8
#define HOST_BUF (4u << 20)             /* the hosts' MR: flows are written in pieces this big */
#define PFC_FRAME_WIRE (64u + 20u)
#define PFC_QUANTA 0xffffu
#define OP_CNP 0x81
#define NIC_FLOW_QUEUES 256

enum { PKT_DATA = 0, PKT_PFC = 1 };

struct sim_pkt {
	uint32_t wire;                  /* bytes on the wire, with overhead */
	uint8_t kind, prio, ecn;
	bool in_headroom;
	uint16_t sport;
	uint16_t in_port;               /* ingress port at the current switch */
	uint32_t src_host, dst_host;
	uint16_t quanta;                /* PFC */
	uint8_t pfc_prio;
	/* HPCC's INT (CC_MODE 3): a request's records, one per switch it
	 * left (port_kick), or on an ACK the records its flow's latest
	 * request brought (host_xmit).  A simulator-only field beside the
	 * packet: the bytes in ib[] are what the real stack sends, and it
	 * sends no INT.  Only HPCC's packets have room for it (tel points
	 * past ib[], in the same allocation; NULL otherwise): 168 bytes in
	 * every packet of every other run made them three times larger. */
	bool tel_push, tel_echo;
	struct hpcc_int *tel;
	uint16_t pint_field;            /* HPCC-PINT: the path's largest U, encoded */
	/* The IB bytes as the rnic built them: with payload_len > 0 (an
	 * RC/UC packet whose payload the rnic handed by reference), ib[]
	 * holds the headers (hdr_len bytes), then the pad and the ICRC, and
	 * the payload is not carried: its bytes do not matter here, only
	 * their number (the receiver gets stand-ins, host_receive).  A
	 * packet is then some 100 bytes, not an MTU, and the packets in
	 * flight at 1 024 hosts stay in the caches. */
	uint32_t ib_len, payload_len;
	uint16_t hdr_len;
	uint8_t ib[];
};

struct queue {
	struct sim_pkt **ring;          /* FIFO of packets; cap is a power of two */
	uint32_t head, len, cap;
	uint64_t bytes;
};

struct node;

struct port {
	struct node *node;
	unsigned index;
	struct node *peer;
	unsigned peer_port;
	uint64_t rate_bps, delay_ns;
	uint64_t tx_bytes;              /* wire bytes of packets sent (HPCC's INT) */
	struct sim_pint_port pint;      /* HPCC-PINT's U of this egress port */
	double loss;
	struct queue ctrl;
	uint64_t busy_until;            /* the last bit of the packet on the wire leaves then */
	uint64_t wake_at;               /* a port_wake is due then (UINT64_MAX: none) */
	uint8_t backlog;                /* bit prio: pr[prio].q holds packets */
	/* What a packet of one priority touches, together: a packet's way
	 * through a switch reads its ingress's and its egress's pr[prio]
	 * and little else of the two ports (as arrays per field, one
	 * packet touched a cache line of each). */
	struct port_prio {
		struct queue q;
		/* Egress: paused by the peer (802.1Qbb) until this time. */
		uint64_t paused_until;
		/* InfiniBand mode: bytes the peer's input buffer for this
		 * VL can still take (credits it granted and we have not
		 * used). */
		uint64_t credits;
		/* Ingress (switches): bytes held for packets that came in
		 * here. */
		uint64_t in_bytes, headroom_used;
		bool stormed;           /* the watchdog's verdict */
		bool xoff_sent;
	} pr[SIM_PRIOS];
	uint64_t pause_start[SIM_PRIOS], paused_total[SIM_PRIOS];
	uint64_t last_pause_rx[SIM_PRIOS];
	uint64_t pauses_rx;             /* PAUSE frames (quanta > 0) that reached this port */
	uint64_t refresh_gen[SIM_PRIOS];
};

struct flow {
	struct sim_flow_result r;
	struct rnic_qp *qp_src, *qp_dst;
	uint64_t arrived;               /* wire bytes of its requests that reached dst */
	struct hpcc_int last_int;       /* HPCC: the latest request's INT, for its ACKs */
	uint16_t last_pint;             /* HPCC-PINT: the latest request's field */
	bool pint_seen;
};

struct host {
	struct sim_net *net;
	unsigned index;
	struct node *node;
	struct rnic *rnic;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_mr *mr;
	uint8_t *buf;
	uint64_t timer_at, timer_gen;
	/* The flow (index + 1) whose QP on this host has QPN q, at slot
	 * q % slots, with the QPN beside it (0: none).  slots is the rnic's
	 * max_qp, whose QP table gives live QPs distinct slots the same way. */
	uint32_t *slot_flow, *slot_qpn, slots;
	/* The NIC's arbiter: RoCE packets wait per flow (by destination host
	 * and QP, hashed into NIC_FLOW_QUEUES) and leave round robin, one
	 * packet per turn, so a new flow is not stuck behind the backlog of
	 * long ones in one FIFO. */
	struct queue flowq[NIC_FLOW_QUEUES];
	uint16_t active[NIC_FLOW_QUEUES];
	unsigned act_head, act_len;
	uint64_t flowq_bytes;
};

/* A partition of the fabric (net.h, "Partitions"): its nodes' events run
 * on its own engine, with its own random stream and counters.  An event
 * for an object of another partition waits in the outbox for that
 * partition until the window ends. */
struct xfer {
	uint64_t at;
	sim_fn fn;
	void *ctx;
	uint64_t arg;
};

struct part {
	struct sim_net *net;
	unsigned index;
	struct sim_engine *eng;         /* partition 0: the caller's engine */
	struct sim_engine own;          /* the others' */
	uint64_t rng[4];
	struct sim_net_stats stats;
	uint8_t *host_buf;              /* its hosts' MR (HOST_BUF bytes, shared by them) */
	uint8_t *rx_buf;                /* host_receive's scratch */
	uint64_t *delivered;            /* per source host: wire bytes that arrived here */
	unsigned done;                  /* flows that ended here (or failed to start) */
	struct xfer *out[SIM_MAX_PARTS];
	size_t out_len[SIM_MAX_PARTS], out_cap[SIM_MAX_PARTS];
	struct rnic_qp **dead;          /* QPs of other partitions' hosts to destroy */
	size_t ndead, capdead;
	int error;                      /* ENOMEM: an outbox could not grow */
};

struct node {
	struct sim_net *net;
	struct part *part;
	bool is_host;
	unsigned id, index;             /* node id; index among hosts or switches */
	unsigned nports;
	struct port *ports[MAX_PORTS];
	struct host *host;
	uint64_t buf_used;              /* switch: shared buffer in use */
	/* Switch: per host, 1 + the index in sets[] of its next hops (0:
	 * none).  A fat-tree switch has a handful of distinct sets (each
	 * port down, all ports up), so a route is two bytes per host and
	 * the tables of 320 switches stay in the caches (with the sets
	 * themselves per host they were 2.9 MB, and a miss per hop). */
	uint16_t *route;
	struct ecmp_set {
		uint8_t n, port[MAX_ECMP];
	} *sets;
	unsigned nsets;
};

struct sim_net {
	struct sim_engine *eng;         /* parts[0].eng */
	struct part parts[SIM_MAX_PARTS];
	unsigned nparts;
	bool threads;                   /* a thread per partition, else one after the other */
	uint64_t lookahead_ns;          /* the smallest delay of a link between partitions */
	uint64_t seed;
	struct sim_host_opts ho;
	struct sim_switch_opts so;
	struct node *nodes[SIM_MAX_NODES];
	unsigned nnodes, nhosts, nswitches;
	struct host **hosts;
	unsigned *host_nodes, *switch_nodes;
	struct flow *flows;
	unsigned nflows, capflows, added;   /* running: added - the parts' done */
	struct sim_net_stats stats;     /* the parts' together (sim_net_stats) */
	bool pint_on;                   /* HPCC-PINT (ho.hpcc->pint) */
	/* The memory every host registers as its MR is its partition's
	 * host_buf: what a flow's bytes are does not matter here, so the
	 * hosts share one HOST_BUF (with a buffer each, 1 024 hosts would
	 * touch 4 GiB). */
	/* Flows not started yet, as start events held back in an engine of
	 * their own (never run there, only popped): only the earliest
	 * is an engine event (arm_next_start), so the engine's heap holds the
	 * packets in flight, not a workload's hundreds of thousands of future
	 * arrivals (a k=16 fat-tree's 373 775 made every event's heap walk
	 * longer and colder).  The order of events is what scheduling each
	 * flow's start when it was added gave: its sequence number is
	 * reserved then. */
	struct sim_engine starts;
	int64_t armed;                  /* the start in the engine now (-1: none) */
	uint64_t armed_at, armed_seq;   /* its time and sequence number */
	struct sim_pint pint;
};

/* ---- helpers ----------------------------------------------------------- */

static double uniform(struct part *P)
{
	return (double)(prng_next(P->rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* Call fn at `at` for an object of node `to`: on this partition's engine,
 * or through the outbox to its own (`at` is then at least a lookahead
 * ahead: every such event is a link's crossing). */
static void net_at(struct part *P, const struct node *to, uint64_t at, sim_fn fn, void *ctx, uint64_t arg)
{
	struct part *Q = to->part;

	if (Q == P) {
		sim_at(P->eng, at, fn, ctx, arg);
		return;
	}
	unsigned q = Q->index;
	if (P->out_len[q] == P->out_cap[q]) {
		size_t cap = P->out_cap[q] ? 2 * P->out_cap[q] : 1024;
		struct xfer *v = realloc(P->out[q], cap * sizeof(*v));
		if (!v) {
			P->error = ENOMEM;
			return;
		}
		P->out[q] = v;
		P->out_cap[q] = cap;
	}
	P->out[q][P->out_len[q]++] = (struct xfer){ .at = at, .fn = fn, .ctx = ctx, .arg = arg };
}

static uint64_t ser_ns(const struct port *p, uint32_t wire)
{
	return ((uint64_t)wire * 8u * 1000000000ull + p->rate_bps - 1) / p->rate_bps;
}

static uint64_t mtu_wire(const struct sim_net *n)
{
	return n->ho.mtu + 64u + SIM_WIRE_OVERHEAD;
}

static int q_push(struct queue *q, struct sim_pkt *p)
{
	if (q->len == q->cap) {
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
	}
	q->ring[(q->head + q->len++) & (q->cap - 1)] = p;
	q->bytes += p->wire;
	return 0;
}

static struct sim_pkt *q_pop(struct queue *q)
{
	struct sim_pkt *p = q->ring[q->head];

	q->head = (q->head + 1) & (q->cap - 1);
	q->len--;
	q->bytes -= p->wire;
	/* The packet behind it leaves next: while this one is on the wire,
	 * bring it into the cache (the pop's own first touch of p was a
	 * large run's most expensive load). */
	if (q->len)
		__builtin_prefetch(q->ring[q->head]);
	return p;
}

static void q_free(struct queue *q)
{
	while (q->len)
		free(q_pop(q));
	free(q->ring);
}

static void gid_of_host(unsigned h, struct rnic_gid *g)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	g->raw[12] = 10;
	g->raw[13] = (uint8_t)(h >> 16);
	g->raw[14] = (uint8_t)(h >> 8);
	g->raw[15] = (uint8_t)h;
}

static int host_of_gid(const struct sim_net *n, const struct rnic_gid *g)
{
	unsigned h = (unsigned)g->raw[13] << 16 | (unsigned)g->raw[14] << 8 | g->raw[15];

	return g->raw[12] == 10 && h < n->nhosts ? (int)h : -1;
}

/* ---- ports and links ------------------------------------------------------ */

static void port_kick(struct sim_net *n, struct port *p);
static void arrive(void *ctx, uint64_t arg, uint64_t now);

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
static void port_wake_at(struct sim_net *n, struct port *p, uint64_t at, const struct sim_pkt *hint)
{
	if (p->wake_at <= at)
		return;
	(void)n;
	p->wake_at = at;
	sim_at(p->node->part->eng, at, port_wake, p, (uint64_t)(uintptr_t)hint);
}

static bool port_has_work(const struct port *p)
{
	return p->backlog || p->ctrl.len || (p->node->host && p->node->host->act_len);
}

/* A port's priority queues, with its backlog mask kept beside them. */
static int port_push(struct port *p, unsigned prio, struct sim_pkt *pkt)
{
	int rc = q_push(&p->pr[prio].q, pkt);

	if (!rc)
		p->backlog |= (uint8_t)(1u << prio);
	return rc;
}

static struct sim_pkt *port_pop(struct port *p, unsigned prio)
{
	struct sim_pkt *pkt = q_pop(&p->pr[prio].q);

	if (!p->pr[prio].q.len)
		p->backlog &= (uint8_t)~(1u << prio);
	return pkt;
}

/* A switch lets go of a packet's buffer when it starts to leave; that may
 * take its ingress below XON. */
static void send_pfc(struct sim_net *n, struct port *ingress, uint8_t prio, uint16_t quanta);

static uint64_t xoff_threshold(const struct sim_net *n, const struct node *sw)
{
	uint64_t free_bytes = n->so.buffer_bytes > sw->buf_used ? n->so.buffer_bytes - sw->buf_used : 0;
	return (uint64_t)(n->so.alpha * (double)free_bytes);
}

static void credit_return(void *ctx, uint64_t arg, uint64_t now);

static void release(struct sim_net *n, struct node *sw, struct sim_pkt *pkt)
{
	struct port *in = sw->ports[pkt->in_port];
	struct part *P = sw->part;

	if (n->so.ib_credits) {
		/* The input buffer space is free again: the credit goes back
		 * to the upstream port, one link delay away (a flow-control
		 * packet; its own wire time is neglected). */
		in->pr[pkt->prio].in_bytes -= pkt->wire;
		sw->buf_used -= pkt->wire;
		struct port *up = in->peer->ports[in->peer_port];
		net_at(P, up->node, P->eng->now + in->delay_ns, credit_return, up, (uint64_t)pkt->wire << 8 | pkt->prio);
		return;
	}

	if (pkt->in_headroom) {
		in->pr[pkt->prio].headroom_used -= pkt->wire;
	} else {
		in->pr[pkt->prio].in_bytes -= pkt->wire;
		sw->buf_used -= pkt->wire;
	}
	/* XON: two MTUs below XOFF, and the headroom empty again, so that
	 * the next XOFF finds all of it for the packets in flight. */
	uint64_t xoff = xoff_threshold(n, sw), two = 2 * mtu_wire(n);
	if (in->pr[pkt->prio].xoff_sent && !in->pr[pkt->prio].headroom_used && in->pr[pkt->prio].in_bytes + two <= xoff) {
		in->pr[pkt->prio].xoff_sent = false;
		in->refresh_gen[pkt->prio]++;
		send_pfc(n, in, pkt->prio, 0);
		P->stats.resumes_sent++;
	}
}

static void port_kick(struct sim_net *n, struct port *p)
{
	struct part *P = p->node->part;
	uint64_t now = P->eng->now, wake = UINT64_MAX;
	struct sim_pkt *pkt = NULL;

	if (!p->peer)
		return;
	if (now < p->busy_until) {
		port_wake_at(n, p, p->busy_until, NULL);
		return;
	}
	struct host *h = p->node->host;
	if (h && !p->pr[SIM_PRIO_ROCE].q.len && h->act_len) {
		/* The arbiter's next turn: one packet of the next flow. */
		unsigned id = h->active[h->act_head];
		h->act_head = (h->act_head + 1) % NIC_FLOW_QUEUES;
		h->act_len--;
		struct sim_pkt *next = q_pop(&h->flowq[id]);
		h->flowq_bytes -= next->wire;
		if (h->flowq[id].len)
			h->active[(h->act_head + h->act_len++) % NIC_FLOW_QUEUES] = (uint16_t)id;
		if (port_push(p, SIM_PRIO_ROCE, next))
			free(next);
	}
	if (p->ctrl.len) {
		pkt = q_pop(&p->ctrl);
	} else {
		/* The highest priority with packets first (the backlog mask:
		 * no look at the empty queues). */
		for (unsigned left = p->backlog; left && !pkt;) {
			unsigned prio = 31u - (unsigned)__builtin_clz(left);
			left &= ~(1u << prio);
			if (p->pr[prio].paused_until > now) {
				wake = p->pr[prio].paused_until < wake ? p->pr[prio].paused_until : wake;
				continue;
			}
			if (n->so.ib_credits) {
				/* Send only what the receiver has room for; the
				 * credit's return kicks the port again. */
				uint32_t need = p->pr[prio].q.ring[p->pr[prio].q.head]->wire;
				if (p->pr[prio].credits < need) {
					P->stats.credit_stalls++;
					continue;
				}
				p->pr[prio].credits -= need;
			}
			pkt = port_pop(p, prio);
		}
	}
	if (!pkt) {
		if (wake != UINT64_MAX)
			port_wake_at(n, p, wake, NULL);
		return;
	}
	if (n->pint_on && !p->node->is_host && pkt->kind == PKT_DATA) {
		/* HPCC-PINT: the port's U, raised into a request's field. */
		if (pkt->tel_push) {
			uint64_t queued = 0;
			for (int prio = 0; prio < SIM_PRIOS; prio++)
				queued += p->pr[prio].q.bytes;
			double u = sim_pint_port_u(&n->pint, &p->pint, now, queued, p->rate_bps);
			uint16_t f = sim_pint_encode(&n->pint, u, uniform(P));
			if (f > pkt->pint_field)
				pkt->pint_field = f;
		}
		sim_pint_port_sent(&p->pint, now, pkt->wire);
	} else if (!p->node->is_host && pkt->kind == PKT_DATA && pkt->tel_push && pkt->tel &&
		   pkt->tel->nhop < HPCC_MAX_HOPS) {
		/* HPCC's INT record of this egress port, as HPCC's switch
		 * writes it when the packet leaves the queue: the time, the
		 * bytes sent before it, the bytes still queued, the rate. */
		uint64_t queued = 0;
		for (int prio = 0; prio < SIM_PRIOS; prio++)
			queued += p->pr[prio].q.bytes;
		pkt->tel->hop[pkt->tel->nhop++] = (struct hpcc_int_hop){
			.ts_ns = now, .tx_bytes = p->tx_bytes, .qlen_bytes = queued, .rate_bps = p->rate_bps };
	}
	if (pkt->kind == PKT_DATA)
		p->tx_bytes += pkt->wire;
	if (!p->node->is_host && pkt->kind == PKT_DATA)
		release(n, p->node, pkt);
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
		port_wake_at(n, p, p->busy_until, next);
	}
}

static void send_pfc(struct sim_net *n, struct port *ingress, uint8_t prio, uint16_t quanta)
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
	uint64_t quantum_ns = 512ull * 1000000000ull / in->rate_bps;
	sim_at(in->node->part->eng, now + (uint64_t)PFC_QUANTA * quantum_ns / 2, pfc_refresh, in, gen << 8 | prio);
}

static void xoff(struct sim_net *n, struct port *in, uint8_t prio)
{
	in->pr[prio].xoff_sent = true;
	in->refresh_gen[prio]++;
	struct part *P = in->node->part;
	send_pfc(n, in, prio, PFC_QUANTA);
	P->stats.pauses_sent++;
	uint64_t quantum_ns = 512ull * 1000000000ull / in->rate_bps;
	sim_at(P->eng, P->eng->now + (uint64_t)PFC_QUANTA * quantum_ns / 2, pfc_refresh, in,
	       in->refresh_gen[prio] << 8 | prio);
}

/* Time this (port, priority) has spent paused, up to now. */
static uint64_t paused_ns(const struct port *p, int prio, uint64_t now)
{
	uint64_t t = p->paused_total[prio];
	uint64_t end = p->pr[prio].paused_until < now ? p->pr[prio].paused_until : now;

	return end > p->pause_start[prio] ? t + end - p->pause_start[prio] : t;
}

/* A PAUSE or RESUME for our egress on this port.  A queue the watchdog
 * has declared stormed ignores them (SONiC pfcwd's "drop" action). */
static void on_pfc(struct sim_net *n, struct port *p, const struct sim_pkt *pkt, uint64_t now)
{
	uint8_t prio = pkt->pfc_prio;
	uint64_t quantum_ns = 512ull * 1000000000ull / p->rate_bps;

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
	p->pr[prio].paused_until = now + (uint64_t)pkt->quanta * quantum_ns;
	port_kick(n, p);
}

/* ---- the PFC watchdog (SONiC pfcwd) ---------------------------------------
 *
 * Every detect/4, each switch egress queue of the lossless priority is
 * looked at: paused without a break for the detection time while holding
 * packets, it is declared stormed: its packets are dropped, and so is
 * everything routed to it later, and pauses for it are ignored.  It is
 * restored once no pause has arrived for the restoration time. */
static void drop_queue(struct sim_net *n, struct port *p, int prio)
{
	while (p->pr[prio].q.len) {
		struct sim_pkt *pkt = port_pop(p, (unsigned)prio);
		release(n, p->node, pkt);
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
			continue;       /* its own partition's tick looks at it */
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

/* A host whose NIC pauses its switch port for ever (a PFC storm),
 * refreshing the pause before it expires. */
static void storm_tick(void *ctx, uint64_t arg, uint64_t now)
{
	struct port *p = ctx;
	struct sim_net *n = p->node->net;
	uint64_t quantum_ns = 512ull * 1000000000ull / p->rate_bps;

	(void)arg;
	send_pfc(n, p, SIM_PRIO_ROCE, PFC_QUANTA);
	p->node->part->stats.pauses_sent++;
	sim_at(p->node->part->eng, now + (uint64_t)PFC_QUANTA * quantum_ns / 2, storm_tick, p, 0);
}

int sim_host_storm(struct sim_net *n, unsigned host, uint64_t start_ns)
{
	if (host >= n->nhosts || !n->hosts[host]->node->nports)
		return EINVAL;
	return sim_at(n->hosts[host]->node->part->eng, start_ns, storm_tick, n->hosts[host]->node->ports[0], 0);
}

unsigned sim_nodes(const struct sim_net *n)
{
	return n->nnodes;
}

unsigned sim_node_ports(const struct sim_net *n, unsigned node)
{
	return node < n->nnodes ? n->nodes[node]->nports : 0;
}

bool sim_node_is_host(const struct sim_net *n, unsigned node)
{
	return node < n->nnodes && n->nodes[node]->is_host;
}

uint64_t sim_port_pauses_received(const struct sim_net *n, unsigned node, unsigned port)
{
	return node < n->nnodes && port < n->nodes[node]->nports ? n->nodes[node]->ports[port]->pauses_rx : 0;
}

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

static void credit_return(void *ctx, uint64_t arg, uint64_t now)
{
	struct port *p = ctx;

	(void)now;
	p->pr[arg & 0xff].credits += arg >> 8;
	port_kick(p->node->net, p);
}

/* ---- switches ------------------------------------------------------------ */

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
	 * (whose latency was a tenth of a packet's arrival); the same port. */
	unsigned n = set->n;
	return sw->ports[set->port[(n & (n - 1)) == 0 ? h & (n - 1) : h % n]];
}

static void switch_receive(struct sim_net *n, struct node *sw, struct port *in, struct sim_pkt *pkt)
{
	struct part *P = sw->part;
	struct port *out = route(sw, pkt);
	uint8_t prio = pkt->prio;

	if (!out) {
		P->stats.drops++;
		free(pkt);
		return;
	}
	pkt->in_port = (uint16_t)in->index;
	pkt->in_headroom = false;
	if (out->pr[prio].stormed) {
		P->stats.watchdog_drops++;
		free(pkt);
		return;
	}
	if (n->so.ib_credits) {
		/* Credits guarantee the room: nothing is dropped (counted if
		 * the model is ever wrong). */
		if (in->pr[prio].in_bytes + pkt->wire > n->so.buffer_bytes / sw->nports) {
			P->stats.drops++;
			free(pkt);
			return;
		}
	} else if (n->so.pfc && prio == SIM_PRIO_ROCE) {
		uint64_t threshold = xoff_threshold(n, sw);
		if (in->pr[prio].in_bytes + pkt->wire > threshold || sw->buf_used + pkt->wire > n->so.buffer_bytes) {
			/* Headroom: what is in flight during the pause's
			 * round trip, and two packets of slack. */
			uint64_t headroom = 2 * in->rate_bps / 8 * in->delay_ns / 1000000000ull + 2 * mtu_wire(n) +
					    PFC_FRAME_WIRE;
			if (!in->pr[prio].xoff_sent)
				xoff(n, in, prio);
			if (in->pr[prio].headroom_used + pkt->wire > headroom) {
				P->stats.headroom_drops++;
				free(pkt);
				return;
			}
			in->pr[prio].headroom_used += pkt->wire;
			pkt->in_headroom = true;
		}
	} else {
		uint64_t threshold = xoff_threshold(n, sw);
		if (out->pr[prio].q.bytes + pkt->wire > threshold || sw->buf_used + pkt->wire > n->so.buffer_bytes) {
			P->stats.drops++;
			free(pkt);
			return;
		}
	}
	if (!pkt->in_headroom) {
		in->pr[prio].in_bytes += pkt->wire;
		sw->buf_used += pkt->wire;
		if (sw->buf_used > P->stats.max_buffer_bytes)
			P->stats.max_buffer_bytes = sw->buf_used;
	}
	/* ECN/RED at enqueue, on the egress queue's bytes. */
	if (n->so.ecn && (pkt->ecn == 1 || pkt->ecn == 2)) {
		uint64_t qb = out->pr[prio].q.bytes, kmin = n->so.kmin_bytes, kmax = n->so.kmax_bytes;
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
	if (port_push(out, prio, pkt)) {
		release(n, sw, pkt);
		P->stats.drops++;
		free(pkt);
		return;
	}
	port_kick(n, out);
}

/* ---- hosts --------------------------------------------------------------- */

static void host_timer(void *ctx, uint64_t arg, uint64_t now);

/* A QP of another partition's host, destroyed at the window's end.  If
 * the list cannot grow the run stops with ENOMEM (P->error, sim_net_run)
 * and the QP goes with its rnic at sim_net_destroy. */
static void qp_doom(struct part *P, struct rnic_qp *qp)
{
	if (P->ndead == P->capdead) {
		size_t cap = P->capdead ? 2 * P->capdead : 64;
		struct rnic_qp **v = realloc(P->dead, cap * sizeof(*v));
		if (!v) {
			P->error = ENOMEM;
			return;
		}
		P->dead = v;
		P->capdead = cap;
	}
	P->dead[P->ndead++] = qp;
}

/* After the rnic ran: completions, then its next timer. */
static void host_after(struct host *h)
{
	struct sim_net *n = h->net;
	struct part *P = h->node->part;
	struct ibv_wc wc[16];
	int got;

	while ((got = rnic_cq_poll(h->cq, 16, wc)) > 0) {
		for (int i = 0; i < got; i++) {
			struct flow *f = &n->flows[wc[i].wr_id];
			if (f->r.fct_ns)
				continue;
			f->r.fct_ns = P->eng->now - f->r.start_ns;
			f->r.failed = wc[i].status != IBV_WC_SUCCESS;
			P->done++;
			/* Done: every byte is acknowledged, the pair can go (a
			 * late duplicate finds no QP and is counted).  The
			 * destination's QP, if its host is in another
			 * partition, at the window's end. */
			if (!f->r.failed) {
				rnic_qp_destroy(f->qp_src);
				if (n->hosts[f->r.dst]->node->part == P)
					rnic_qp_destroy(f->qp_dst);
				else
					qp_doom(P, f->qp_dst);
				f->qp_src = f->qp_dst = NULL;
			}
		}
	}
	uint64_t d = rnic_next_deadline(h->rnic);
	if (d < h->timer_at) {
		h->timer_at = d;
		sim_at(P->eng, d, host_timer, h, ++h->timer_gen);
	}
}

static void host_timer(void *ctx, uint64_t arg, uint64_t now)
{
	struct host *h = ctx;

	if (arg != h->timer_gen)
		return;                 /* superseded by an earlier deadline */
	h->timer_at = UINT64_MAX;
	rnic_advance(h->rnic, now);
	host_after(h);
}

static void host_xmit(void *ctx, const struct rnic_tx *tx)
{
	struct host *h = ctx;
	struct sim_net *n = h->net;
	struct part *P = h->node->part;
	int dst = host_of_gid(n, &tx->dst);
	struct sim_pkt *pkt;

	bool with_int = n->ho.cc_algo == RNIC_CC_HPCC && !n->pint_on;
	size_t int_at = (sizeof(*pkt) + tx->ib_len + 7) & ~(size_t)7;

	if (dst < 0 || tx->payload_nvec || tx->hdr_len > tx->ib_len || tx->hdr_len > UINT16_MAX ||
	    tx->ib_len + tx->payload_len > WIRE_MAX_IB_PACKET ||
	    !(pkt = malloc(with_int ? int_at + sizeof(struct hpcc_int) : sizeof(*pkt) + tx->ib_len)))
		return;
	memset(pkt, 0, sizeof(*pkt));
	if (with_int) {
		pkt->tel = (struct hpcc_int *)((uint8_t *)pkt + int_at);
		memset(pkt->tel, 0, sizeof(*pkt->tel));
	}
	pkt->kind = PKT_DATA;
	pkt->wire = (uint32_t)(tx->ib_len + tx->payload_len) + SIM_WIRE_OVERHEAD;
	pkt->prio = tx->ib_len && tx->ib[0] == OP_CNP ? SIM_PRIO_CNP : SIM_PRIO_ROCE;
	pkt->ecn = tx->ecn;
	pkt->sport = tx->sport;
	pkt->src_host = h->index;
	pkt->dst_host = (uint32_t)dst;
	pkt->ib_len = (uint32_t)tx->ib_len;
	pkt->payload_len = (uint32_t)tx->payload_len;
	pkt->hdr_len = (uint16_t)tx->hdr_len;
	memcpy(pkt->ib, tx->ib, tx->ib_len);
	P->stats.packets_sent++;
	if (n->ho.cc_algo == RNIC_CC_HPCC && pkt->prio == SIM_PRIO_ROCE && tx->ib_len >= 8) {
		uint8_t op = tx->ib[0] & 0x1f;
		if (op < 0x11) {
			pkt->tel_push = true;   /* a request: switches add INT */
		} else if (op == 0x11) {
			/* An ACK: echo the INT its flow's latest request
			 * brought (the flow by its QP at the ACK's target). */
			struct host *to = n->hosts[dst];
			uint32_t qpn = (uint32_t)tx->ib[5] << 16 | (uint32_t)tx->ib[6] << 8 | tx->ib[7];
			uint32_t slot = qpn % to->slots;
			if (to->slot_qpn[slot] == qpn && to->slot_flow[slot]) {
				const struct flow *f = &n->flows[to->slot_flow[slot] - 1];
				if (pkt->tel) {
					*pkt->tel = f->last_int;
					pkt->tel_echo = pkt->tel->nhop > 0;
				}
				if (n->pint_on) {
					pkt->pint_field = f->last_pint;
					pkt->tel_echo = f->pint_seen;
				}
			}
		}
	}
	struct port *p = h->node->ports[0];
	if (!p) {
		free(pkt);
		return;
	}
	if (pkt->prio == SIM_PRIO_ROCE) {
		/* BTH bytes 5..7: the destination QP; with the host, the flow. */
		unsigned dqp = tx->ib_len >= 8 ? (unsigned)tx->ib[5] << 16 | (unsigned)tx->ib[6] << 8 | tx->ib[7] : 0;
		unsigned id = (dqp * 2654435761u ^ (unsigned)dst * 40503u) % NIC_FLOW_QUEUES;
		if (q_push(&h->flowq[id], pkt)) {
			free(pkt);
			return;
		}
		if (h->flowq[id].len == 1)
			h->active[(h->act_head + h->act_len++) % NIC_FLOW_QUEUES] = (uint16_t)id;
		h->flowq_bytes += pkt->wire;
		if (h->flowq_bytes > P->stats.max_host_queue_bytes)
			P->stats.max_host_queue_bytes = h->flowq_bytes;
	} else if (port_push(p, pkt->prio, pkt)) {
		free(pkt);
		return;
	}
	port_kick(n, p);
}

static void host_receive(struct sim_net *n, struct host *h, struct sim_pkt *pkt, uint64_t now)
{
	struct part *P = h->node->part;
	struct rnic_rx rx;

	memset(&rx, 0, sizeof(rx));
	gid_of_host(pkt->src_host, &rx.src);
	gid_of_host(h->index, &rx.dst);
	rx.sport = pkt->sport;
	rx.ecn = pkt->ecn;
	rx.ib = pkt->ib;
	rx.ib_len = pkt->ib_len;
	if (pkt->payload_len) {
		/* headers ++ payload (zeros: its bytes are not simulated) ++
		 * pad and ICRC, as on the wire (rnic_tx) */
		memcpy(P->rx_buf, pkt->ib, pkt->hdr_len);
		memcpy(P->rx_buf + pkt->hdr_len + pkt->payload_len, pkt->ib + pkt->hdr_len, pkt->ib_len - pkt->hdr_len);
		rx.ib = P->rx_buf;
		rx.ib_len = pkt->ib_len + pkt->payload_len;
	}
	rx.ttl = 64;
	P->delivered[pkt->src_host] += pkt->wire;
	/* Per-flow throughput (sim_flow_arrived): requests to a flow's QP
	 * here (BTH opcode below ACK's 0x11, DestQP bytes 5..7). */
	if (pkt->prio == SIM_PRIO_ROCE && pkt->ib_len >= 12 && (pkt->ib[0] & 0x1f) < 0x11) {
		uint32_t qpn = (uint32_t)pkt->ib[5] << 16 | (uint32_t)pkt->ib[6] << 8 | pkt->ib[7];
		uint32_t slot = qpn % h->slots;
		if (h->slot_qpn[slot] == qpn && h->slot_flow[slot]) {
			n->flows[h->slot_flow[slot] - 1].arrived += pkt->wire;
			/* Before the rnic answers it: its ACK echoes these. */
			if (pkt->tel_push) {
				struct flow *f = &n->flows[h->slot_flow[slot] - 1];
				if (pkt->tel)
					f->last_int = *pkt->tel;
				f->last_pint = pkt->pint_field;
				f->pint_seen = true;
			}
		}
	}
	rnic_receive(h->rnic, &rx, now);
	if (pkt->tel_echo && n->pint_on) {
		/* HPCC-PINT: a sampled share of the ACKs carries feedback. */
		if (n->ho.pint_prob >= 1 || uniform(P) < n->ho.pint_prob) {
			uint32_t qpn = (uint32_t)pkt->ib[5] << 16 | (uint32_t)pkt->ib[6] << 8 | pkt->ib[7];
			struct hpcc_int t = { .pint_u = sim_pint_decode_q20(&n->pint, pkt->pint_field) };
			rnic_cc_telemetry(h->rnic, qpn, &t, now);
		}
	} else if (pkt->tel_echo) {
		/* HPCC's feedback, once the ACK itself is processed. */
		uint32_t qpn = (uint32_t)pkt->ib[5] << 16 | (uint32_t)pkt->ib[6] << 8 | pkt->ib[7];
		rnic_cc_telemetry(h->rnic, qpn, pkt->tel, now);
	}
	free(pkt);
	host_after(h);
}

static void arrive(void *ctx, uint64_t arg, uint64_t now)
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

/* ---- building ------------------------------------------------------------ */

struct sim_net *sim_net_create(struct sim_engine *eng, uint64_t seed, const struct sim_host_opts *ho,
			       const struct sim_switch_opts *so)
{
	struct sim_net *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->eng = eng;
	n->seed = seed;
	n->nparts = 1;
	n->parts[0].net = n;
	n->parts[0].eng = eng;
	prng_seed(n->parts[0].rng, seed);
	n->armed = -1;
	sim_engine_init(&n->starts);
	n->ho = *ho;
	if (ho->cc_algo == RNIC_CC_HPCC && ho->hpcc && ho->hpcc->pint) {
		n->pint_on = true;
		sim_pint_init(&n->pint, ho->pint_log_base, ho->hpcc->base_rtt);
	}
	n->so = *so;
	if (!n->ho.mtu)
		n->ho.mtu = 1024;
	if (!n->ho.qp_timeout)
		n->ho.qp_timeout = 10;
	return n;
}

int sim_net_set_partitions(struct sim_net *n, unsigned parts, bool threads)
{
	if (!parts || parts > SIM_MAX_PARTS || n->nhosts || n->nswitches)
		return EINVAL;
	n->threads = threads;
	for (unsigned i = 1; i < parts; i++) {
		struct part *P = &n->parts[i];
		P->net = n;
		P->index = i;
		sim_engine_init(&P->own);
		P->eng = &P->own;
		prng_seed(P->rng, n->seed ^ (0x9e3779b97f4a7c15ull * i));
	}
	n->nparts = parts;
	return 0;
}

unsigned sim_net_partitions(const struct sim_net *n)
{
	return n->nparts;
}

uint64_t sim_net_lookahead(const struct sim_net *n)
{
	return n->nparts > 1 ? n->lookahead_ns : 0;
}

/* Which partition each node runs in: hosts in nparts runs of consecutive
 * indexes (a fat-tree's files list a pod's hosts together), then each
 * switch with the partition most of its placed neighbours are in (ToRs
 * with their hosts, aggregation switches with their ToRs), and a switch
 * whose neighbours are split evenly (a core switch) where fewer switches
 * are so far.  Trade-off: a greedy rule for the topologies HPCC's users
 * run, not a min-cut partitioner (METIS would balance any graph).  Then
 * the lookahead: the smallest delay of a link between partitions. */
static int partition_nodes(struct sim_net *n)
{
	unsigned np = n->nparts, load[SIM_MAX_PARTS] = { 0 };
	bool progress = true;

	for (unsigned h = 0; h < n->nhosts; h++)
		n->hosts[h]->node->part = &n->parts[(uint64_t)h * np / n->nhosts];
	for (unsigned i = 0; i < n->nnodes; i++)
		if (!n->nodes[i]->is_host)
			n->nodes[i]->part = NULL;
	while (progress) {
		progress = false;
		for (unsigned s = 0; s < n->nswitches; s++) {
			struct node *sw = n->nodes[n->switch_nodes[s]];
			unsigned votes[SIM_MAX_PARTS] = { 0 }, best = 0, ties = 0;
			if (sw->part)
				continue;
			for (unsigned k = 0; k < sw->nports; k++)
				if (sw->ports[k]->peer && sw->ports[k]->peer->part)
					votes[sw->ports[k]->peer->part->index]++;
			for (unsigned q = 1; q < np; q++)
				if (votes[q] > votes[best])
					best = q;
			for (unsigned q = 0; q < np; q++)
				ties += votes[q] == votes[best];
			if (!votes[best] || ties > 1)
				continue;
			sw->part = &n->parts[best];
			load[best]++;
			progress = true;
		}
	}
	for (unsigned s = 0; s < n->nswitches; s++) {
		struct node *sw = n->nodes[n->switch_nodes[s]];
		if (sw->part)
			continue;
		unsigned best = 0;
		for (unsigned q = 1; q < np; q++)
			if (load[q] < load[best])
				best = q;
		sw->part = &n->parts[best];
		load[best]++;
	}
	n->lookahead_ns = UINT64_MAX;
	for (unsigned i = 0; i < n->nnodes; i++)
		for (unsigned k = 0; k < n->nodes[i]->nports; k++) {
			const struct port *p = n->nodes[i]->ports[k];
			if (p->peer && p->peer->part != p->node->part && p->delay_ns < n->lookahead_ns)
				n->lookahead_ns = p->delay_ns;
		}
	return n->lookahead_ns ? 0 : EINVAL;    /* a link without delay between partitions */
}

static struct node *new_node(struct sim_net *n, bool is_host)
{
	struct node *node;

	if (n->nnodes == SIM_MAX_NODES || !(node = calloc(1, sizeof(*node))))
		return NULL;
	node->net = n;
	node->part = &n->parts[0];
	node->is_host = is_host;
	node->id = n->nnodes;
	n->nodes[n->nnodes++] = node;
	return node;
}

int sim_add_host(struct sim_net *n)
{
	struct node *node = new_node(n, true);
	struct host *h = node ? calloc(1, sizeof(*h)) : NULL;
	struct host **hs = h ? realloc(n->hosts, (n->nhosts + 1) * sizeof(*hs)) : NULL;
	unsigned *hn = hs ? realloc(n->host_nodes, (n->nhosts + 1) * sizeof(*hn)) : NULL;

	if (hs)
		n->hosts = hs;
	if (!hn) {
		free(h);
		return -1;
	}
	n->host_nodes = hn;
	h->net = n;
	h->index = n->nhosts;
	h->node = node;
	h->timer_at = UINT64_MAX;
	node->host = h;
	node->index = h->index;
	n->hosts[n->nhosts] = h;
	n->host_nodes[n->nhosts] = node->id;
	return (int)n->nhosts++;
}

int sim_add_switch(struct sim_net *n)
{
	struct node *node = new_node(n, false);
	unsigned *sn = node ? realloc(n->switch_nodes, (n->nswitches + 1) * sizeof(*sn)) : NULL;

	if (!sn)
		return -1;
	n->switch_nodes = sn;
	node->index = n->nswitches;
	n->switch_nodes[n->nswitches] = node->id;
	return (int)n->nswitches++;
}

unsigned sim_host_node(const struct sim_net *n, unsigned host)
{
	return n->host_nodes[host];
}

unsigned sim_switch_node(const struct sim_net *n, unsigned sw)
{
	return n->switch_nodes[sw];
}

static struct port *new_port(struct node *node, const struct sim_link_opts *o)
{
	struct port *p;

	if (node->nports == MAX_PORTS || (node->is_host && node->nports == 1) || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->node = node;
	p->index = node->nports;
	p->rate_bps = o->rate_bps;
	p->delay_ns = o->delay_ns;
	p->loss = o->loss;
	p->wake_at = UINT64_MAX;
	node->ports[node->nports++] = p;
	return p;
}

int sim_link(struct sim_net *n, unsigned a, unsigned b, const struct sim_link_opts *o)
{
	if (a >= n->nnodes || b >= n->nnodes || a == b || !o->rate_bps)
		return EINVAL;
	struct port *pa = new_port(n->nodes[a], o), *pb = pa ? new_port(n->nodes[b], o) : NULL;
	if (!pb)
		return EINVAL;
	pa->peer = n->nodes[b];
	pa->peer_port = pb->index;
	pb->peer = n->nodes[a];
	pb->peer_port = pa->index;
	return 0;
}

/* Host h's next hops at switch sw: the set's index, added to sw's sets
 * if new.  0 or ENOMEM. */
static int set_route(struct node *sw, unsigned h, const struct ecmp_set *set)
{
	unsigned i = 0;

	while (i < sw->nsets && memcmp(&sw->sets[i], set, sizeof(*set)))
		i++;
	if (i == sw->nsets) {
		if (i == UINT16_MAX)
			return ENOMEM;
		struct ecmp_set *v = realloc(sw->sets, (i + 1) * sizeof(*v));
		if (!v)
			return ENOMEM;
		sw->sets = v;
		sw->sets[sw->nsets++] = *set;
	}
	sw->route[h] = (uint16_t)(i + 1);
	return 0;
}

/* The rnic of each host, and every switch's shortest-path next hops. */
int sim_route(struct sim_net *n)
{
	if (n->nparts > 1 && partition_nodes(n))
		return EINVAL;
	for (unsigned q = 0; q < n->nparts; q++) {
		struct part *P = &n->parts[q];
		if (!(P->host_buf = calloc(1, HOST_BUF)) || !(P->rx_buf = calloc(1, WIRE_MAX_IB_PACKET)) ||
		    !(P->delivered = calloc(n->nhosts ? n->nhosts : 1, sizeof(uint64_t))))
			return ENOMEM;
	}
	unsigned *dist = malloc(n->nnodes * sizeof(*dist)), *fifo = malloc(n->nnodes * sizeof(*fifo));

	if (!dist || !fifo) {
		free(dist);
		free(fifo);
		return ENOMEM;
	}
	for (unsigned s = 0; s < n->nswitches; s++) {
		struct node *sw = n->nodes[n->switch_nodes[s]];
		if (!(sw->route = calloc(n->nhosts, sizeof(*sw->route)))) {
			free(dist);
			free(fifo);
			return ENOMEM;
		}
	}
	for (unsigned h = 0; h < n->nhosts; h++) {
		/* BFS from the host; switches only as transit. */
		unsigned head = 0, tail = 0;
		for (unsigned i = 0; i < n->nnodes; i++)
			dist[i] = UINT32_MAX;
		dist[n->host_nodes[h]] = 0;
		fifo[tail++] = n->host_nodes[h];
		while (head < tail) {
			struct node *x = n->nodes[fifo[head++]];
			if (x->is_host && x->id != n->host_nodes[h])
				continue;
			for (unsigned i = 0; i < x->nports; i++) {
				struct node *y = x->ports[i]->peer;
				if (y && dist[y->id] == UINT32_MAX) {
					dist[y->id] = dist[x->id] + 1;
					fifo[tail++] = y->id;
				}
			}
		}
		for (unsigned s = 0; s < n->nswitches; s++) {
			struct node *sw = n->nodes[n->switch_nodes[s]];
			if (dist[sw->id] == UINT32_MAX)
				continue;
			struct ecmp_set set = { 0 };
			for (unsigned i = 0; i < sw->nports && set.n < MAX_ECMP; i++) {
				struct node *y = sw->ports[i]->peer;
				if (y && dist[y->id] + 1 == dist[sw->id] && (!y->is_host || y->index == h))
					set.port[set.n++] = (uint8_t)i;
			}
			if (set.n && set_route(sw, h, &set)) {
				free(dist);
				free(fifo);
				return ENOMEM;
			}
		}
	}
	free(dist);
	free(fifo);
	for (unsigned q = 0; n->so.pfc && n->so.wd_detect_ns && q < n->nparts; q++)
		if (sim_at(n->parts[q].eng, n->so.wd_detect_ns / 4, watchdog_tick, &n->parts[q], 0))
			return ENOMEM;
	/* InfiniBand mode: each switch input port's buffer is its share of
	 * the switch's (static partition per port, per VL); the upstream port
	 * starts with that many bytes of credit.  A host takes what arrives
	 * at once, so sending to a host is never credit-bound. */
	for (unsigned i = 0; n->so.ib_credits && i < n->nnodes; i++) {
		struct node *x = n->nodes[i];
		for (unsigned k = 0; k < x->nports; k++) {
			struct port *p = x->ports[k];
			for (int q = 0; q < SIM_PRIOS; q++)
				p->pr[q].credits = p->peer && !p->peer->is_host ? n->so.buffer_bytes / p->peer->nports
									      : UINT64_MAX / 2;
		}
	}
	/* The hosts' rnics. */
	for (unsigned h = 0; h < n->nhosts; h++) {
		struct host *host = n->hosts[h];
		struct rnic_config cfg;
		struct rnic_io io = { .ctx = host, .xmit = host_xmit, .tx_payload_ref = true };
		rnic_config_default(&cfg);
		/* 1024 QP slots per host: the QPNs a host hands out depend on
		 * the table's size, and with them the NIC's flow queues, so a
		 * seed replays the same run as before the device's default
		 * grew.  The experiments' hosts have far fewer flows. */
		cfg.max_qp = 1024;
		gid_of_host(h, &cfg.gid);
		cfg.seed = (uint32_t)(prng_next(n->parts[0].rng) | 1);
		/* The rnic paces IB bytes; the link carries 66 more per
		 * packet (net.h): pace at the rate that fills the link with
		 * full-MTU packets, not above it (else the NIC queue grows
		 * for ever and every RTT with it). */
		if (host->node->nports) {
			uint64_t ib = n->ho.mtu + 48u;  /* payload, BTH, RETH, ICRC */
			cfg.line_rate = host->node->ports[0]->rate_bps / (ib + SIM_WIRE_OVERHEAD) * ib;
		}
		cfg.pace_line_rate = true;
		cfg.ecn = true;
		cfg.cnp = n->ho.dcqcn;
		cfg.dcqcn = n->ho.dcqcn;
		cfg.selective_repeat = n->ho.selective_repeat;
		cfg.cc_algo = n->ho.cc_algo;
		if (n->ho.dctcp)
			cfg.dctcp = *n->ho.dctcp;
		if (n->ho.timely)
			cfg.timely = *n->ho.timely;
		if (n->ho.hpcc)
			cfg.hpcc = *n->ho.hpcc;
		cfg.cc_window = n->ho.cc_window;
		cfg.send_window = n->ho.send_window;
		/* A timeout resends the whole window, as RoCE NICs do: the
		 * experiments show what their Go-Back-N does to a fabric
		 * (pfc-storm: the resent windows fill the buffers that spread
		 * the pause); the runtime probes with one packet first. */
		cfg.timeout_probe = false;
		if (n->ho.cc)
			cfg.cc = *n->ho.cc;
		else if (n->ho.dcqcn_paper)
			dcqcn_params_default(&cfg.cc, DCQCN_PROFILE_PAPER);
		host->rnic = rnic_create(&cfg, &io);
		host->pd = host->rnic ? rnic_pd_alloc(host->rnic) : NULL;
		host->cq = host->pd ? rnic_cq_create(host->rnic, 65536, NULL) : NULL;
		host->buf = host->cq ? host->node->part->host_buf : NULL;
		host->slots = cfg.max_qp;
		host->slot_flow = host->buf ? calloc(host->slots, sizeof(uint32_t)) : NULL;
		host->slot_qpn = host->slot_flow ? calloc(host->slots, sizeof(uint32_t)) : NULL;
		if (!host->slot_qpn)
			return ENOMEM;
		host->mr = host->buf ? rnic_mr_reg(host->pd, host->buf, HOST_BUF, (uintptr_t)host->buf,
						   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
				     : NULL;
		if (!host->mr)
			return ENOMEM;
	}
	return 0;
}

int sim_set_route(struct sim_net *n, unsigned sw, unsigned host, unsigned port)
{
	struct node *x = sw < n->nnodes ? n->nodes[sw] : NULL;

	if (!x || x->is_host || !x->route || host >= n->nhosts || port >= x->nports)
		return EINVAL;
	struct ecmp_set set = { .n = 1, .port = { (uint8_t)port } };
	return set_route(x, host, &set);
}

/* ---- flows --------------------------------------------------------------- */

static int connect_qp(struct sim_net *n, struct rnic_qp *qp, unsigned peer, uint32_t peer_qpn, uint64_t now)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, now))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = n->ho.mtu >= 4096 ? IBV_MTU_4096 : n->ho.mtu >= 2048 ? IBV_MTU_2048
		     : n->ho.mtu >= 1024 ? IBV_MTU_1024 : n->ho.mtu >= 512 ? IBV_MTU_512 : IBV_MTU_256;
	a.dest_qp_num = peer_qpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = 26 << 2;  /* DSCP 26: the RoCE priority */
	gid_of_host(peer, (struct rnic_gid *)a.ah_attr.grh.dgid.raw);
	if (rnic_qp_modify(qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			   now))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = n->ho.qp_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return rnic_qp_modify(qp, &a,
			      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				      IBV_QP_MAX_QP_RD_ATOMIC,
			      now);
}

static int arm_next_start(struct sim_net *n);

/* A flow's QP pair, created and connected at `now` (0, or -1: failed,
 * and counted as done in partition P). */
static int flow_setup(struct sim_net *n, struct part *P, uint32_t id, uint64_t now)
{
	struct flow *f = &n->flows[id];
	struct host *src = n->hosts[f->r.src], *dst = n->hosts[f->r.dst];

	/* The QP pair exists while the flow runs (a host's rnic looks at
	 * every QP for its next deadline: idle ones would cost every event). */
	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = (uint32_t)(f->r.bytes / HOST_BUF + 2);
	init.cap.max_recv_wr = 1;
	init.cap.max_send_sge = init.cap.max_recv_sge = 1;
	f->qp_src = rnic_qp_create(src->pd, src->cq, src->cq, &init, NULL);
	f->qp_dst = rnic_qp_create(dst->pd, dst->cq, dst->cq, &init, NULL);
	if (!f->qp_src || !f->qp_dst || connect_qp(n, f->qp_src, f->r.dst, rnic_qp_num(f->qp_dst), now) ||
	    connect_qp(n, f->qp_dst, f->r.src, rnic_qp_num(f->qp_src), now)) {
		f->r.failed = true;
		f->r.fct_ns = 1;
		P->done++;
		return -1;
	}
	uint32_t qpn = rnic_qp_num(f->qp_dst);
	dst->slot_qpn[qpn % dst->slots] = qpn;
	dst->slot_flow[qpn % dst->slots] = id + 1;
	/* The sender's QP too: HPCC's ACKs find their flow by it. */
	qpn = rnic_qp_num(f->qp_src);
	src->slot_qpn[qpn % src->slots] = qpn;
	src->slot_flow[qpn % src->slots] = id + 1;
	return 0;
}

/* Post the flow as WRITEs of at most HOST_BUF bytes; the last signaled. */
static void flow_post(struct sim_net *n, uint32_t id, uint64_t now)
{
	struct flow *f = &n->flows[id];
	struct host *src = n->hosts[f->r.src], *dst = n->hosts[f->r.dst];
	uint64_t left = f->r.bytes;

	while (left) {
		uint32_t len = left > HOST_BUF ? HOST_BUF : (uint32_t)left;
		struct ibv_sge sge = { .addr = (uintptr_t)src->buf, .length = len, .lkey = rnic_mr_lkey(src->mr) };
		struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE },
				   *bad;
		left -= len;
		if (!left)
			wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)dst->buf;
		wr.wr.rdma.rkey = rnic_mr_rkey(dst->mr);
		if (rnic_post_send(f->qp_src, &wr, &bad, now)) {
			f->r.failed = true;
			f->r.fct_ns = 1;
			src->node->part->done++;
			break;
		}
	}
	host_after(src);
}

/* A flow starts: one partition, its QPs made and its WRITEs posted now. */
static void flow_start(void *ctx, uint64_t arg, uint64_t now)
{
	struct sim_net *n = ctx;
	if ((int64_t)arg == n->armed) {
		n->armed = -1;
		if (arm_next_start(n))
			n->armed = -1;  /* out of memory: later flows never start */
	}
	struct flow *f = &n->flows[arg];

	f->r.start_ns = now;
	f->arrived = 0;
	if (!flow_setup(n, n->hosts[f->r.src]->node->part, (uint32_t)arg, now))
		flow_post(n, (uint32_t)arg, now);
}

/* Partitions: its QPs were made at the window's start (sim_net_run), its
 * WRITEs are posted now, in the source's partition. */
static void flow_post_event(void *ctx, uint64_t arg, uint64_t now)
{
	flow_post(ctx, (uint32_t)arg, now);
}

/* Put the earliest waiting start into the engine (a flow's own event). */
static int arm_next_start(struct sim_net *n)
{
	struct sim_event ev;

	if (!sim_pop(&n->starts, &ev))
		return 0;
	n->armed = (int64_t)ev.arg;
	n->armed_at = ev.at;
	n->armed_seq = ev.seq;
	return sim_at_seq(n->eng, ev.at, ev.seq, ev.fn, ev.ctx, ev.arg);
}

int sim_add_flow(struct sim_net *n, unsigned src, unsigned dst, uint64_t bytes, uint64_t start_ns)
{
	if (src >= n->nhosts || dst >= n->nhosts || src == dst || !bytes || !n->hosts[src]->rnic)
		return -1;
	if (n->nflows == n->capflows) {
		unsigned cap = n->capflows ? n->capflows * 2 : 64;
		struct flow *f = realloc(n->flows, cap * sizeof(*f));
		if (!f)
			return -1;
		n->flows = f;
		n->capflows = cap;
	}
	struct flow *f = &n->flows[n->nflows];
	memset(f, 0, sizeof(*f));
	f->r = (struct sim_flow_result){ .src = src, .dst = dst, .bytes = bytes, .start_ns = start_ns };
	uint64_t at = start_ns < n->eng->now ? n->eng->now : start_ns, seq = sim_reserve_seq(n->eng);
	uint32_t id = n->nflows++;
	if (sim_at_seq(&n->starts, at, seq, flow_start, n, id)) {
		n->nflows--;
		return -1;
	}
	/* Every waiting start comes after the armed one; one that comes
	 * before it goes into the engine at once, beside it.  (Partitions:
	 * sim_net_run takes them from there itself.) */
	bool first = n->armed < 0 || at < n->armed_at || (at == n->armed_at && seq < n->armed_seq);
	if (n->nparts == 1 && first && arm_next_start(n)) {
		n->nflows--;
		return -1;
	}
	n->added++;
	return (int)id;
}

struct sim_engine *sim_net_engine(const struct sim_net *n)
{
	return n->eng;
}

unsigned sim_flows(const struct sim_net *n)
{
	return n->nflows;
}

const struct sim_flow_result *sim_flow(const struct sim_net *n, unsigned i)
{
	return i < n->nflows ? &n->flows[i].r : NULL;
}

unsigned sim_flows_running(const struct sim_net *n)
{
	unsigned done = 0;

	for (unsigned q = 0; q < n->nparts; q++)
		done += n->parts[q].done;
	return n->added - done;
}

uint64_t sim_net_events(const struct sim_net *n)
{
	uint64_t e = 0;

	for (unsigned q = 0; q < n->nparts; q++)
		e += n->parts[q].eng->events_run;
	return e;
}

uint64_t sim_net_now(const struct sim_net *n)
{
	uint64_t t = 0;

	for (unsigned q = 0; q < n->nparts; q++)
		t = n->parts[q].eng->now > t ? n->parts[q].eng->now : t;
	return t;
}

const struct sim_net_stats *sim_net_stats(struct sim_net *n)
{
	/* The partitions' counters together (their peaks: the largest), and
	 * paused_ns summed now, up to each partition's clock. */
	struct sim_net_stats *t = &n->stats;
	memset(t, 0, sizeof(*t));
	for (unsigned q = 0; q < n->nparts; q++) {
		const struct sim_net_stats *s = &n->parts[q].stats;
		t->packets_sent += s->packets_sent;
		t->packet_hops += s->packet_hops;
		t->link_losses += s->link_losses;
		t->drops += s->drops;
		t->headroom_drops += s->headroom_drops;
		t->ecn_marks += s->ecn_marks;
		t->pauses_sent += s->pauses_sent;
		t->resumes_sent += s->resumes_sent;
		t->pauses_received += s->pauses_received;
		t->storms_detected += s->storms_detected;
		t->storms_restored += s->storms_restored;
		t->watchdog_drops += s->watchdog_drops;
		t->credit_stalls += s->credit_stalls;
		if (s->max_buffer_bytes > t->max_buffer_bytes)
			t->max_buffer_bytes = s->max_buffer_bytes;
		if (s->max_host_queue_bytes > t->max_host_queue_bytes)
			t->max_host_queue_bytes = s->max_host_queue_bytes;
	}
	for (unsigned i = 0; i < n->nnodes; i++)
		for (unsigned p = 0; p < n->nodes[i]->nports; p++)
			for (int q = 0; q < SIM_PRIOS; q++)
				t->paused_ns += paused_ns(n->nodes[i]->ports[p], q, n->nodes[i]->part->eng->now);
	return t;
}

int sim_path(const struct sim_net *n, unsigned src, unsigned dst, uint64_t *delay_ns, uint64_t *min_rate_bps)
{
	if (src >= n->nhosts || dst >= n->nhosts || !n->hosts[src]->node->nports)
		return ENOENT;
	struct port *p = n->hosts[src]->node->ports[0];
	uint64_t delay = 0, rate = UINT64_MAX;
	for (unsigned hops = 0; hops < SIM_MAX_NODES; hops++) {
		delay += p->delay_ns;
		rate = p->rate_bps < rate ? p->rate_bps : rate;
		struct node *x = p->peer;
		if (!x)
			return ENOENT;
		if (x->is_host) {
			if (x->index != dst)
				return ENOENT;
			*delay_ns = delay;
			*min_rate_bps = rate;
			return 0;
		}
		if (!x->route || !x->route[dst])
			return ENOENT;
		p = x->ports[x->sets[x->route[dst] - 1].port[0]];
	}
	return ENOENT;
}

struct rnic *sim_host_rnic(const struct sim_net *n, unsigned h)
{
	return h < n->nhosts ? n->hosts[h]->rnic : NULL;
}

uint64_t sim_flow_arrived(const struct sim_net *n, unsigned i)
{
	return i < n->nflows ? n->flows[i].arrived : 0;
}

uint64_t sim_host_delivered(const struct sim_net *n, unsigned src)
{
	uint64_t d = 0;

	for (unsigned q = 0; src < n->nhosts && q < n->nparts; q++)
		d += n->parts[q].delivered[src];
	return d;
}

uint64_t sim_port_queue_bytes(const struct sim_net *n, unsigned node, unsigned port)
{
	uint64_t b = 0;

	if (node >= n->nnodes || port >= n->nodes[node]->nports)
		return 0;
	for (int q = 0; q < SIM_PRIOS; q++)
		b += n->nodes[node]->ports[port]->pr[q].q.bytes;
	if (n->nodes[node]->host)
		b += n->nodes[node]->host->flowq_bytes;
	return b;
}

int sim_port_to_node(const struct sim_net *n, unsigned node, unsigned peer)
{
	if (node >= n->nnodes || peer >= n->nnodes)
		return -1;
	for (unsigned i = 0; i < n->nodes[node]->nports; i++)
		if (n->nodes[node]->ports[i]->peer == n->nodes[peer])
			return (int)i;
	return -1;
}

int sim_port_to_host(const struct sim_net *n, unsigned sw, unsigned host)
{
	if (sw >= n->nnodes || host >= n->nhosts)
		return -1;
	for (unsigned i = 0; i < n->nodes[sw]->nports; i++)
		if (n->nodes[sw]->ports[i]->peer == n->hosts[host]->node)
			return (int)i;
	return -1;
}

uint64_t sim_rnic_counter(const struct sim_net *n, const char *name)
{
	uint64_t sum = 0;

	for (unsigned h = 0; h < n->nhosts; h++) {
		const struct rnic_counters *c = n->hosts[h]->rnic ? rnic_counters(n->hosts[h]->rnic) : NULL;
		if (!c)
			continue;
#define SUM_ONE(field)                    \
		if (!strcmp(name, #field)) \
			sum += c->field;
		RNIC_COUNTER_LIST(SUM_ONE)
#undef SUM_ONE
	}
	return sum;
}

static void free_in_flight(const struct sim_event *ev, void *ctx)
{
	(void)ctx;
	if (ev->fn == arrive)
		free((void *)(uintptr_t)ev->arg);
}

void sim_net_destroy(struct sim_net *n)
{
	if (!n)
		return;
	/* Packets on the wire live in the engine's arrival events: free
	 * them, and leave no event that points into the net. */
	for (unsigned q = 0; q < n->nparts; q++) {
		struct part *P = &n->parts[q];
		sim_clear(P->eng, free_in_flight, NULL);
		for (unsigned r = 0; r < SIM_MAX_PARTS; r++) {
			for (size_t i = 0; i < P->out_len[r]; i++)
				if (P->out[r][i].fn == arrive)
					free((void *)(uintptr_t)P->out[r][i].arg);
			free(P->out[r]);
		}
		for (size_t i = 0; i < P->ndead; i++)
			rnic_qp_destroy(P->dead[i]);
		free(P->dead);
	}
	for (unsigned i = 0; i < n->nflows; i++) {
		if (n->flows[i].qp_src)
			rnic_qp_destroy(n->flows[i].qp_src);
		if (n->flows[i].qp_dst)
			rnic_qp_destroy(n->flows[i].qp_dst);
	}
	for (unsigned h = 0; h < n->nhosts; h++) {
		struct host *host = n->hosts[h];
		if (host->mr)
			rnic_mr_dereg(host->mr);
		if (host->cq)
			rnic_cq_destroy(host->cq);
		if (host->pd)
			rnic_pd_free(host->pd);
		if (host->rnic)
			rnic_destroy(host->rnic);
		for (unsigned q = 0; q < NIC_FLOW_QUEUES; q++)
			q_free(&host->flowq[q]);
		free(host->slot_flow);
		free(host->slot_qpn);
		free(host);
	}
	for (unsigned q = 0; q < n->nparts; q++) {
		free(n->parts[q].host_buf);
		free(n->parts[q].rx_buf);
		free(n->parts[q].delivered);
		if (q)
			sim_engine_free(&n->parts[q].own);
	}
	sim_engine_free(&n->starts);
	for (unsigned i = 0; i < n->nnodes; i++) {
		struct node *node = n->nodes[i];
		for (unsigned p = 0; p < node->nports; p++) {
			for (int q = 0; q < SIM_PRIOS; q++)
				q_free(&node->ports[p]->pr[q].q);
			q_free(&node->ports[p]->ctrl);
			free(node->ports[p]);
		}
		free(node->route);
		free(node->sets);
		free(node);
	}
	free(n->hosts);
	free(n->host_nodes);
	free(n->switch_nodes);
	free(n->flows);
	free(n);
}

/* ---- partitions: the windows (net.h, "Partitions") ------------------------ */

/* Threads meet here twice a window.  They spin (a window is some
 * thousands of events: microseconds to milliseconds of work), yielding
 * after a while in case there are fewer cores than threads. */
struct spin_barrier {
	_Atomic unsigned count, gen;
	unsigned n;
};

static void barrier_wait(struct spin_barrier *b)
{
	unsigned gen = atomic_load_explicit(&b->gen, memory_order_acquire);

	if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 == b->n) {
		atomic_store_explicit(&b->count, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&b->gen, 1, memory_order_release);
		return;
	}
	for (unsigned spins = 0; atomic_load_explicit(&b->gen, memory_order_acquire) == gen; spins++) {
		if (spins > 4096)
			sched_yield();
#if defined(__x86_64__) || defined(__i386__)
		else
			__builtin_ia32_pause();
#endif
	}
}

struct windows {
	struct sim_net *n;
	struct spin_barrier bar;
	uint64_t end;                   /* this window: events before it */
	bool over;
};

struct worker {
	struct windows *w;
	struct part *P;
};

static void run_window(struct part *P, uint64_t end)
{
	while (sim_next_time(P->eng) < end)
		sim_step(P->eng);
}

static void *worker_main(void *arg)
{
	struct worker *k = arg;

	for (;;) {
		barrier_wait(&k->w->bar);
		if (k->w->over)
			return NULL;
		run_window(k->P, k->w->end);
		barrier_wait(&k->w->bar);
	}
}

/* Between windows, everything stopped: the outboxes into the engines (by
 * destination, then by source partition, each in its order: the same
 * every run), the QPs doomed by other partitions' hosts destroyed. */
static int hand_over(struct sim_net *n)
{
	for (unsigned q = 0; q < n->nparts; q++)
		for (unsigned p = 0; p < n->nparts; p++) {
			struct part *P = &n->parts[p];
			for (size_t i = 0; i < P->out_len[q]; i++) {
				const struct xfer *x = &P->out[q][i];
				if (sim_at(n->parts[q].eng, x->at, x->fn, x->ctx, x->arg))
					return ENOMEM;
			}
			P->out_len[q] = 0;
		}
	for (unsigned p = 0; p < n->nparts; p++) {
		struct part *P = &n->parts[p];
		for (size_t i = 0; i < P->ndead; i++)
			rnic_qp_destroy(P->dead[i]);
		P->ndead = 0;
		if (P->error)
			return P->error;
	}
	return 0;
}

int sim_net_run(struct sim_net *n, uint64_t stop, sim_net_progress_fn progress, void *ctx)
{
	if (n->nparts == 1)
		return EINVAL;          /* one partition: the caller steps its engine */
	struct windows w = { .n = n, .bar = { .n = n->threads ? n->nparts : 1 } };
	struct worker k[SIM_MAX_PARTS];
	pthread_t th[SIM_MAX_PARTS];
	unsigned started = 1;
	int rc = 0;

	for (; n->threads && started < n->nparts; started++) {
		k[started] = (struct worker){ .w = &w, .P = &n->parts[started] };
		if (pthread_create(&th[started], NULL, worker_main, &k[started]))
			break;
	}
	if (n->threads && started < n->nparts) {
		/* No thread for every partition: nothing runs (the ones that
		 * started are let go below); the caller may ask for fewer. */
		rc = EAGAIN;
		w.bar.n = started;
	}
	uint64_t t = 0;
	while (!rc) {
		if ((rc = hand_over(n)))
			break;
		if (!sim_flows_running(n))
			break;
		uint64_t next = sim_next_time(&n->starts);
		for (unsigned q = 0; q < n->nparts; q++) {
			uint64_t nt = sim_next_time(n->parts[q].eng);
			next = nt < next ? nt : next;
		}
		if (next == UINT64_MAX || next > stop)
			break;
		t = next > t ? next : t;
		uint64_t end = t + n->lookahead_ns;
		if (end > stop + 1)
			end = stop + 1;
		/* Flows that start in this window: their QPs now, on both
		 * hosts (the only moment both partitions may be touched), their
		 * WRITEs at their time, in the source's partition. */
		struct sim_event ev;
		while (sim_next_time(&n->starts) < end && sim_pop(&n->starts, &ev)) {
			struct flow *f = &n->flows[ev.arg];
			struct part *S = n->hosts[f->r.src]->node->part;
			f->r.start_ns = ev.at;
			f->arrived = 0;
			if (!flow_setup(n, S, (uint32_t)ev.arg, t) &&
			    sim_at(S->eng, ev.at, flow_post_event, n, ev.arg))
				rc = ENOMEM;
		}
		if (progress)
			progress(ctx, n);
		w.end = end;
		if (n->threads) {
			barrier_wait(&w.bar);
			run_window(&n->parts[0], end);
			barrier_wait(&w.bar);
		} else {
			for (unsigned q = 0; q < n->nparts; q++)
				run_window(&n->parts[q], end);
		}
		t = end;
	}
	w.over = true;
	if (n->threads)
		barrier_wait(&w.bar);
	for (unsigned q = 1; q < started; q++)
		pthread_join(th[q], NULL);
	return rc;
}
