/*
 * pair.h — a deterministic in-memory "wire" between two or more rnic
 * instances, for tests.
 *
 * The pair owns N rnics and acts as every rnic's rnic_io.  A packet sent by
 * one rnic is copied into an event of the simulator's engine (sim/engine.h)
 * due at its delivery time (events due at the same time run in the order
 * they were scheduled), after the link's fault knobs had their say: loss,
 * duplication, extra delay (reordering), base delay + jitter, and byte
 * corruption.  pair_run_until() advances a simulated clock from event to
 * event — the next packet delivery or the earliest rnic timer — so a test
 * that would take seconds of retransmit timeouts on a real network runs in
 * microseconds, and never depends on the host's speed.
 *
 * All randomness comes from one seeded PRNG (xoshiro256**), and the event
 * order is total, so a run replays bit-for-bit from its seed (the way
 * FoundationDB's simulator does).  A trace hash over every delivered packet
 * and its delivery time lets a test assert that two runs were identical.
 *
 * Like the UDP port, the pair fills the ICRC of every packet it sends (using
 * the GIDs as IPv4-mapped addresses) and verifies it on delivery, so a
 * corrupted packet is dropped and counted before the rnic sees it.
 *
 * Each node may have an *agent*, the owner of its QP1 (the connection
 * manager, src/cm), exactly as the runtime's srt_set_agent: MADs that
 * rnic/gsi.c accepts for QP1 go to the agent with the simulated time, and
 * the agent's timers are events of the simulation like the rnics' (see
 * pair_set_agent).
 */
#ifndef SOFTRNIC_PORTS_PAIR_H
#define SOFTRNIC_PORTS_PAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "rnic/rnic.h"

struct pair;

/* Fault knobs of one direction (from node -> to node).  Probabilities are
 * in [0, 1]; times in simulated nanoseconds.  A link is a FIFO: jitter
 * varies the delay but never lets a packet overtake an earlier one; only
 * the reorder knob holds a packet back so that later ones pass it. */
struct pair_faults {
	double loss;            /* drop the packet                            */
	double dup;             /* deliver a second copy (own delay/loss)      */
	double reorder;         /* hold back by a random (0, reorder_ns]       */
	uint64_t reorder_ns;
	double corrupt;         /* flip one byte (the ICRC then fails)         */
	uint64_t delay_ns;      /* base one-way delay                          */
	uint64_t jitter_ns;     /* plus uniform [0, jitter_ns]                 */
	/* A message-path packet (rnic_tx.payload_vec): its payload is read
	 * from the sender's buffers when the receiver's rnic asks, as the
	 * runtime's process_vm_readv does; with this probability the read
	 * fails (the sender died or unmapped the buffer meanwhile). */
	double pull_fail;
};

/* What the pair did with packets (all directions together). */
struct pair_stats {
	uint64_t sent;          /* xmit calls                                 */
	uint64_t delivered;     /* handed to rnic_receive                     */
	uint64_t lost;          /* dropped by the loss knob                   */
	uint64_t tapped;        /* dropped by the tap                         */
	uint64_t duplicated;
	uint64_t reordered;
	uint64_t corrupted;
	uint64_t bad_icrc;      /* dropped on delivery: ICRC mismatch         */
	uint64_t no_route;      /* destination GID matches no node            */
	uint64_t runt;          /* shorter than BTH + ICRC: not sent          */
	uint64_t alloc_failures; /* packet lost because malloc failed         */
	uint64_t payload_by_ref; /* xmits with the payload by reference (even
	                            nodes take them: rnic_io.tx_payload_ref) */
	uint64_t messages;      /* message-path packets sent (payload_vec)  */
	uint64_t pulls, pull_failures; /* their payloads read by receivers */
	/* Of those, read at a batch's end (rnic_io.pull_batch, the even
	 * nodes), in how many batches, and how many failed there. */
	uint64_t pulls_put_off, pull_batches, put_off_failures;
	uint64_t gsi_no_agent;  /* MADs gsi.c accepted for QP1 on a node
	                           without an agent: dropped (the runtime's
	                           rx_mad_no_agent)                          */
	uint64_t agent_mads;    /* MADs handed to an agent's gsi_receive     */
	uint64_t agent_advances; /* agent advance calls                      */
};

/* A packet passing through the pair, as the tap sees it at xmit time.
 * `ib` may be modified in place (length fixed); the ICRC is computed after
 * the tap returns, so a modified packet still arrives with a valid ICRC. */
struct pair_packet {
	unsigned from, to;      /* node indexes                               */
	uint64_t now;           /* simulated time of the xmit                 */
	uint8_t *ib;            /* BTH .. ICRC                                */
	size_t ib_len;
	uint16_t sport;
};
/* Return true to let the packet through (faults still apply), false to drop
 * it (counted as `tapped`). */
typedef bool (*pair_tap_fn)(void *arg, struct pair_packet *pkt);

/* Create `n` rnics (2 <= n <= 16).  Node i gets GID ::ffff:10.0.0.(i+1) and
 * `cfg` (rnic_config_default if NULL) with cfg.seed mixed with i.  All
 * links start fault-free with 1 us delay.  Returns NULL on bad arguments or
 * allocation failure. */
struct pair *pair_create(uint64_t seed, unsigned n, const struct rnic_config *cfg);
/* The same with a configuration per node (cfgs[0..n-1]; each seed is mixed
 * with its node's index all the same). */
struct pair *pair_create_each(uint64_t seed, unsigned n, const struct rnic_config *cfgs);
void pair_destroy(struct pair *p);

struct rnic *pair_rnic(struct pair *p, unsigned node);
const struct rnic_gid *pair_gid(const struct pair *p, unsigned node);
unsigned pair_nodes(const struct pair *p);

/* Faults for one direction, or for every direction (pair_set_all_faults). */
int pair_set_faults(struct pair *p, unsigned from, unsigned to, const struct pair_faults *f);
void pair_set_all_faults(struct pair *p, const struct pair_faults *f);
void pair_set_tap(struct pair *p, pair_tap_fn fn, void *arg);

/* ---- a bottleneck queue ---------------------------------------------------
 *
 * A switch egress queue in front of node `to`: every packet to that node
 * (from any node) first crosses its sender's host link (host_rate_bps, so
 * a sender cannot exceed its line rate), then waits in one FIFO drained at
 * rate_bps.  A fluid model of a single queue, exact for FIFO service: a
 * packet arriving at t finds backlog (busy_until − t)·rate bytes.
 *
 *   drop   when backlog + packet > limit_bytes (tail drop);
 *   mark   an ECN-capable packet (ECT(0)/ECT(1)) is set to CE with the
 *          RED ramp on the instantaneous backlog: never below kmin_bytes,
 *          with probability pmax·(b − kmin)/(kmax − kmin) up to
 *          kmax_bytes, always above (the DCQCN paper's switch, "CP").
 *
 * The link's fault knobs (delay, jitter, loss, ...) apply after the
 * queue.  Marking draws from the pair's PRNG, so a run still replays from
 * its seed.  rate_bps 0 removes the queue (the default).
 *
 * This is not the simulator's switch (sim/switch.c, port.c), and gives
 * other marks from the same backlog: the simulator counts the whole
 * packets waiting in an egress queue (the one on the wire is out), not
 * this fluid backlog; it marks always only above kmax (at kmax with
 * probability pmax) and draws for every packet between the thresholds,
 * where chance() draws only for 0 < p < 1; its thresholds may depend on
 * the port's rate; it admits by a shared buffer's dynamic threshold (or
 * PFC, or credits), not a tail-drop limit; a packet's wire bytes are its
 * IB bytes + 66 there, + 42 here; and its INT record is written when the
 * packet starts to leave (that time, the bytes sent before it, the bytes
 * queued behind it), where this queue writes the record at enqueue (the
 * time its last bit leaves, the bytes accepted before it, the backlog it
 * found).  Both share only the RED ramp's formula and a draw's scaling
 * ((x >> 11)·2^-53) and the serialisation time (rounded up). */
struct pair_queue {
	uint64_t rate_bps;
	uint64_t host_rate_bps;         /* 0: hosts send infinitely fast */
	uint64_t limit_bytes;           /* 0: no limit */
	uint64_t kmin_bytes, kmax_bytes;
	double pmax;
	/* HPCC's INT (rnic/hpcc_cc.h): each request leaving the queue gets
	 * a record (its departure, the bytes that left before it, the bytes
	 * queued when it came, the rate) beside its bytes; the node it goes
	 * to echoes the latest on its ACKs to the sender's node, and the
	 * sender's rnic gets them after each such ACK (rnic_cc_telemetry).
	 * One flow per pair of nodes: the echo is kept per node pair. */
	bool telemetry;
};
struct pair_queue_stats {
	uint64_t packets, bytes;        /* accepted into the queue */
	uint64_t marked;                /* set to CE here */
	uint64_t dropped;               /* tail drops */
	uint64_t max_backlog;           /* bytes */
};
int pair_set_queue(struct pair *p, unsigned to, const struct pair_queue *q);
const struct pair_queue_stats *pair_queue_stats(const struct pair *p, unsigned to);
/* Bytes waiting in front of node `to` now. */
uint64_t pair_queue_backlog(const struct pair *p, unsigned to);

/* ---- agents: the owner of a node's QP1 ----------------------------------
 *
 * The mirror of the runtime's struct srt_agent (runtime/runtime.h), so that
 * what the runtime does with the CM can be replayed from a seed:
 *   gsi_receive    each MAD rnic/gsi.c accepted for QP1 of the node (a UD
 *                  SEND ONLY to DestQP 1, GSI Q_Key, 256 bytes), with the
 *                  sender's GID and source QP and the simulated `now`.  It
 *                  runs inside rnic_receive of that node's rnic and may
 *                  answer with rnic_gsi_send (as the runtime's agent does);
 *                  the bytes are valid only during the call.
 *   next_deadline  the agent's earliest timer (UINT64_MAX: none), or NULL
 *                  for an agent without timers.  pair_run_until and
 *                  pair_run_for take it into their next-event computation
 *                  like rnic_next_deadline, so e.g. a CM retry fires at its
 *                  exact simulated time.
 *   advance        called with the simulated now when that deadline is due
 *                  (after the node's rnic_advance, if both are due, as the
 *                  runtime orders them).  Required with next_deadline.
 * The pair copies *a.  pair_set_agent returns 0, EINVAL (bad node, no
 * gsi_receive, next_deadline without advance) or EBUSY (the node has an
 * agent already); a NULL `a` detaches the node's agent.
 *
 * Without an agent a node behaves exactly as before agents existed (same
 * packets, same times, same trace hash), with one difference in counters:
 * the pair's rnics always have an rnic_io.gsi_receive hook (as the
 * runtime's do), so a well-formed MAD to a node without an agent counts in
 * rnic rx_gsi_mads and pair gsi_no_agent instead of rnic rx_drop_gsi.
 * Malformed QP1 traffic (wrong Q_Key, length, opcode) is still dropped by
 * gsi.c and counted in rx_drop_gsi, agent or not. */
struct pair_agent {
	void *ctx;
	void (*gsi_receive)(void *ctx, const struct rnic_gid *src, uint32_t src_qpn, const uint8_t *mad,
			    size_t len, uint64_t now);
	uint64_t (*next_deadline)(void *ctx);
	void (*advance)(void *ctx, uint64_t now);
};
int pair_set_agent(struct pair *p, unsigned node, const struct pair_agent *a);

/* What a node's rnic asked its port to make persistent (rnic_io.persist,
 * an RDMA FLUSH of the persistence type): the count and the last range.
 * A test sets fail_with to an errno to make the next calls fail. */
struct pair_persisted {
	uint64_t calls;
	void *last_addr;
	size_t last_len;
	int fail_with;
};
struct pair_persisted *pair_persist_log(struct pair *p, unsigned node);

/* The simulated clock and the PRNG (tests may draw from it so that their
 * own random choices replay from the same seed). */
uint64_t pair_now(const struct pair *p);
uint64_t pair_random(struct pair *p);
/* Uniform in [0, n) (n > 0). */
uint64_t pair_random_below(struct pair *p, uint64_t n);

enum pair_run_result {
	PAIR_DONE = 0,          /* the predicate returned true               */
	PAIR_TIMEOUT = 1,       /* max_sim_ns of simulated time passed        */
	PAIR_IDLE = 2,          /* nothing left to happen: no packets, no timers */
	PAIR_STUCK = 3,         /* a timer keeps firing without time moving   */
};
/* Advance the simulation until pred(arg) returns true (checked before every
 * step; pred may be NULL), max_sim_ns of simulated time passes, or nothing
 * is left to do.  A step is the earliest of: the next packet delivery, the
 * earliest rnic timer, the earliest agent timer (timers first on a tie).
 * pred may post work requests, poll CQs and call into the agents (use
 * pair_now() as `now`): e.g. act on CM events queued by the agent. */
enum pair_run_result pair_run_until(struct pair *p, bool (*pred)(void *arg), void *arg, uint64_t max_sim_ns);
/* Advance exactly to now + ns, processing everything due on the way. */
void pair_run_for(struct pair *p, uint64_t ns);
/* Packets queued and not yet delivered. */
size_t pair_in_flight(const struct pair *p);

/* FNV-1a over every delivered packet: time, from, to, bytes. */
uint64_t pair_trace_hash(const struct pair *p);
const struct pair_stats *pair_stats(const struct pair *p);

#endif
