/*
 * net_int.h — what the files of the simulated fabric share, and nothing
 * outside src/sim/ sees (net.h is the public side):
 *
 *   port.c    packet queues, a port's serialisation onto its link, the
 *             link's loss, and the arrival that hands a packet to a host
 *             or a switch
 *   pfc.c     802.1Qbb: XOFF/XON and headroom at a switch ingress, the
 *             pauses an egress obeys, their refresh, the watchdog and
 *             the host that storms
 *   credit.c  InfiniBand's credit-based flow control instead of PFC
 *   switch.c  routing (ECMP), the shared buffer, ECN/RED marking, INT
 *   host.c    the NIC (its per-flow arbiter) and the glue to the rnic
 *   topo.c    nodes, links, routes (min-hop, static), placement of the
 *             nodes into partitions
 *   flow.c    flows: their QP pairs, their WRITEs, their completion
 *   net.c     the fabric object: create, build, run, stats, destroy
 *
 * Every packet is one malloc'd struct sim_pkt carried by one event: the
 * peer's "arrival", scheduled when the packet starts to leave.  Every
 * node belongs to a partition (struct part): its events run on the
 * partition's engine (engine.h, struct sim_parts) and count in its
 * counters; an event for another partition's node goes through net_at.
 */
#ifndef SOFTRNIC_SIM_NET_INT_H
#define SOFTRNIC_SIM_NET_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/prng.h"
#include "rnic/rnic.h"
#include "sim/engine.h"
#include "sim/net.h"
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
	 * left (switch_int), or on an ACK the records its flow's latest
	 * request brought (host_xmit).  A simulator-only field beside the
	 * packet: the bytes in ib[] are what the real stack sends, and it
	 * sends no INT.  Only HPCC's packets have room for it (tel points
	 * past ib[], in the same allocation; NULL otherwise), which keeps
	 * every other run's packets a third of the size. */
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
	 * and little else of the two ports (one cache line of each, where
	 * arrays per field would touch one per field). */
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

/* A partition of the fabric (net.h, "partitions"): its nodes' events run
 * on its engine (sim_net.parts.eng[index]), with its own random stream,
 * counters and scratch. */
struct part {
	struct sim_net *net;
	unsigned index;
	struct sim_engine *eng;
	uint64_t rng[4];
	struct sim_net_stats stats;
	uint8_t *host_buf;              /* its hosts' MR (HOST_BUF bytes, shared by them) */
	uint8_t *rx_buf;                /* host_receive's scratch */
	uint64_t *delivered;            /* per source host: wire bytes that arrived here */
	unsigned done;                  /* flows that ended here (or failed to start) */
	struct rnic_qp **dead;          /* QPs of other partitions' hosts to destroy (flow.c) */
	size_t ndead, capdead;
	int error;                      /* ENOMEM: the list of dead QPs could not grow */
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
	 * the tables of 320 switches stay in the caches (sets per host would
	 * take 2.9 MB, and a cache miss per hop). */
	uint16_t *route;
	struct ecmp_set {
		uint8_t n, port[MAX_ECMP];
	} *sets;
	unsigned nsets;
};

struct sim_net {
	struct sim_engine *eng;         /* partition 0's: the caller's */
	struct sim_parts parts_eng;     /* the partitions' engines and windows */
	struct part parts[SIM_MAX_PARTS];
	unsigned nparts;
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
	/* Flows not started yet, as start events held back in an engine of
	 * their own (never run there, only popped).  With one partition
	 * only the earliest is an engine event (arm_next_start), so the
	 * engine's heap holds the packets in flight, not a workload's
	 * hundreds of thousands of future arrivals; with several, each
	 * window takes those that start in it (flows_window).  The order of
	 * events is what scheduling each flow's start when it was added
	 * gives: its sequence number is reserved then. */
	struct sim_engine starts;
	bool starts_in_windows;         /* several partitions: flows_window sets them up */
	int64_t armed;                  /* the start in the engine (-1: none) */
	uint64_t armed_at, armed_seq;   /* its time and sequence number */
	struct sim_pint pint;
};

/* ---- shared helpers (inline: on every packet's path) -------------------- */

static inline double uniform(struct part *P)
{
	return (double)(prng_next(P->rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* Call fn at `at` for an object of node `to`: on this partition's engine,
 * or through the outbox to its own (`at` is then at least a lookahead
 * ahead: every such event is a link's crossing). */
static inline void net_at(struct part *P, const struct node *to, uint64_t at, sim_fn fn, void *ctx, uint64_t arg)
{
	if (to->part == P)
		sim_at(P->eng, at, fn, ctx, arg);
	else
		sim_parts_post(&P->net->parts_eng, P->index, to->part->index, at, fn, ctx, arg);
}

static inline uint64_t ser_ns(const struct port *p, uint32_t wire)
{
	return ((uint64_t)wire * 8u * 1000000000ull + p->rate_bps - 1) / p->rate_bps;
}

static inline uint64_t mtu_wire(const struct sim_net *n)
{
	return n->ho.mtu + 64u + SIM_WIRE_OVERHEAD;
}

/* port.c: queues */
int q_grow(struct queue *q);

static inline int q_push(struct queue *q, struct sim_pkt *p)
{
	if (q->len == q->cap && q_grow(q))
		return ENOMEM;
	q->ring[(q->head + q->len++) & (q->cap - 1)] = p;
	q->bytes += p->wire;
	return 0;
}

static inline struct sim_pkt *q_pop(struct queue *q)
{
	struct sim_pkt *p = q->ring[q->head];

	q->head = (q->head + 1) & (q->cap - 1);
	q->len--;
	q->bytes -= p->wire;
	/* The packet behind it leaves next: while this one is on the wire,
	 * bring it into the cache (else the pop's own first touch of p is a
	 * large run's most expensive load). */
	if (q->len)
		__builtin_prefetch(q->ring[q->head]);
	return p;
}

void q_free(struct queue *q);

/* A port's priority queues, with its backlog mask kept beside them. */
static inline int port_push(struct port *p, unsigned prio, struct sim_pkt *pkt)
{
	int rc = q_push(&p->pr[prio].q, pkt);

	if (!rc)
		p->backlog |= (uint8_t)(1u << prio);
	return rc;
}

static inline struct sim_pkt *port_pop(struct port *p, unsigned prio)
{
	struct sim_pkt *pkt = q_pop(&p->pr[prio].q);

	if (!p->pr[prio].q.len)
		p->backlog &= (uint8_t)~(1u << prio);
	return pkt;
}

/* port.c */
void port_kick(struct sim_net *n, struct port *p);
void arrive(void *ctx, uint64_t arg, uint64_t now);
uint64_t port_queued(const struct port *p);

/* pfc.c */
void send_pfc(struct sim_net *n, struct port *ingress, uint8_t prio, uint16_t quanta);
bool pfc_admit(struct sim_net *n, struct node *sw, struct port *in, struct sim_pkt *pkt);
void pfc_maybe_xon(struct sim_net *n, struct node *sw, struct port *in, uint8_t prio);
void on_pfc(struct sim_net *n, struct port *p, const struct sim_pkt *pkt, uint64_t now);
uint64_t paused_ns(const struct port *p, int prio, uint64_t now);
int watchdog_arm(struct sim_net *n);

/* credit.c */
bool credit_take(struct part *P, struct port *p, unsigned prio);
bool credit_room(const struct sim_net *n, const struct node *sw, const struct port *in, const struct sim_pkt *pkt);
void credit_release(struct node *sw, struct port *in, const struct sim_pkt *pkt);
void credits_init(struct sim_net *n);

/* switch.c */
uint64_t xoff_threshold(const struct sim_net *n, const struct node *sw);
void switch_receive(struct sim_net *n, struct node *sw, struct port *in, struct sim_pkt *pkt);
void switch_int(struct sim_net *n, struct port *p, struct sim_pkt *pkt, uint64_t now);
void switch_release(struct sim_net *n, struct node *sw, struct sim_pkt *pkt);

/* host.c */
void gid_of_host(unsigned h, struct rnic_gid *g);
void host_nic_next(struct host *h, struct port *p);
void host_receive(struct sim_net *n, struct host *h, struct sim_pkt *pkt, uint64_t now);
void host_after(struct host *h);
int hosts_create_rnics(struct sim_net *n);
void host_free(struct host *h);

/* topo.c */
int routes_compute(struct sim_net *n);
int nodes_place(struct sim_net *n);
void node_free(struct node *node);

/* flow.c */
void flow_completed(struct sim_net *n, struct part *P, const struct ibv_wc *wc);
int flows_window(struct sim_net *n, uint64_t start, uint64_t end);
int flows_between(struct sim_net *n);
uint64_t flows_held_next(const struct sim_net *n);
void flows_free(struct sim_net *n);

#endif
