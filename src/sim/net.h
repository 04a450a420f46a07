/*
 * net.h — the simulated fabric: hosts that are softrnic rnics on
 * simulated time, switches with a shared buffer, per-port per-priority
 * queues, ECN/RED and PFC, and the links between them.  Driven by the
 * event engine (engine.h); everything random comes from one seed.  The
 * code is split by component (net_int.h lists the files).
 *
 *   host     an rnic (src/rnic: the real requester, responder, completer
 *            and DCQCN), a NIC egress port, and the flows it starts.  The
 *            ICRC is neither written nor checked: nothing corrupts.
 *   link     rate, propagation delay, random loss (per direction).  A
 *            packet occupies wire_bytes = IB packet + 46 (Ethernet, IPv4,
 *            UDP, FCS) + 20 (preamble, inter-frame gap) for 8·wire_bytes
 *            / rate seconds.
 *   switch   every port has 8 priority queues, served in strict priority
 *            (PFC frames first).  RoCE rides priority 3 (DSCP 26), CNPs
 *            priority 6 (DSCP 48).  Buffer: one shared pool; a packet is
 *            accounted to its ingress (port, priority) until it leaves.
 *   ECN      RED on the egress queue's bytes when the packet is enqueued
 *            (as the DCQCN paper's switch): below kmin never, above kmax
 *            always, pmax·(q−kmin)/(kmax−kmin) between; only ECT packets.
 *   PFC      (802.1Qbb) on the lossless priority: when an ingress
 *            (port, priority) holds more than xoff = alpha · (free shared
 *            buffer), a PAUSE with 0xffff quanta (one quantum = 512 bit
 *            times) goes to the upstream port; it is refreshed before it
 *            expires while the ingress stays above xon (xoff − 2 MTU), and
 *            a RESUME (0 quanta) follows when it drops below.  Pauses
 *            expire by themselves.  Packets that arrive after the XOFF go
 *            to the ingress's headroom (sized from rate × 2 × delay plus
 *            two MTUs); a packet that finds the headroom full is dropped
 *            and counted (headroom_drops: zero if sized right).  XON
 *            waits for the headroom to drain, so each XOFF finds it empty.
 *   watchdog (SONiC pfcwd, action drop) a queue paused without a break
 *            for wd_detect_ns while holding packets is stormed: dropped,
 *            its pauses ignored, until none came for wd_restore_ns.
 *   no PFC   a packet is dropped when the egress queue exceeds the
 *            dynamic threshold alpha · (free shared buffer) or the buffer
 *            is full.
 *   IB mode  credits per virtual lane instead of PFC (sim_switch_opts).
 *   routing  shortest paths by hop count from each switch to each host
 *            (min-hop, the subnet manager's step in IB mode);
 *            equal-cost next hops are chosen by a hash of the UDP source
 *            port and the hosts (ECMP); sim_set_route overrides.
 *   building nodes, then links, then sim_build (which places the
 *            nodes into partitions, allocates the partitions' buffers,
 *            computes the routes, arms the watchdog, grants the IB
 *            credits and creates every host's rnic), then flows.
 *
 *   NIC      a host's RoCE packets wait per flow and leave round robin
 *            (the arbiter of a NIC's send queues); CNPs go first.
 *
 *   partitions  (sim_net_set_partitions, sim_net_run) the nodes split into
 *            up to SIM_MAX_PARTS groups, each with its own engine,
 *            random stream and counters, run by the engine's windows
 *            (engine.h, struct sim_parts) of the smallest delay of a
 *            link between groups (the lookahead: nothing one group does
 *            can reach another sooner), a thread each or one after the
 *            other.  An event for another group's node (a packet's
 *            arrival over a crossing link, a credit's return) goes
 *            through the engine's outboxes, so a run depends on the
 *            seed and the number of partitions, never on the threads'
 *            timing.  Between windows, with every thread stopped, the
 *            flows that start in the next window get their QP pair
 *            (touching both hosts; it exists up to a lookahead early,
 *            idle) and QPs a flow's end doomed in another group are
 *            destroyed (flow.c).  One partition is one window as long
 *            as the run: the plain engine, event for event.  Hosts go
 *            in runs of consecutive indexes, switches with most of
 *            their neighbours (topo.c, nodes_place).
 *
 * Trade-offs, said plainly: the host's NIC queues are unbounded and the
 * rnic is not told of pauses (a hardware NIC's scheduler would stop the
 * QP; here the rnic paces at line rate, or at DCQCN's rate, into the
 * paused queue, bounded only by its RC window); the pause is per priority
 * but the hosts send RoCE on one.
 */
#ifndef SOFTRNIC_SIM_NET_H
#define SOFTRNIC_SIM_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "rnic/rnic.h"
#include "sim/engine.h"

#define SIM_PRIOS 8
#define SIM_PRIO_ROCE 3
#define SIM_PRIO_CNP 6
#define SIM_MAX_NODES 8192
#define SIM_WIRE_OVERHEAD (46u + 20u)

struct sim_net;

struct sim_link_opts {
	uint64_t rate_bps;
	uint64_t delay_ns;
	double loss;            /* probability a packet is lost on the wire */
};

struct sim_switch_opts {
	uint64_t buffer_bytes;  /* the shared pool */
	double alpha;           /* dynamic threshold: alpha · free pool */
	bool pfc;               /* PFC on the RoCE priority */
	bool ecn;
	uint64_t kmin_bytes, kmax_bytes;
	double pmax;
	/* Per egress rate, as HPCC's KMIN/KMAX/PMAX maps: a port whose rate
	 * is listed uses that entry, any other the three values above. */
	struct sim_ecn_entry {
		uint64_t rate_bps, kmin_bytes, kmax_bytes;
		double pmax;
	} ecn_map[8];
	unsigned ecn_map_n;
	/* PFC watchdog (SONiC pfcwd, action drop): 0 detect_ns turns it off.
	 * SONiC's defaults are 200 ms for both. */
	uint64_t wd_detect_ns, wd_restore_ns;
	/* InfiniBand mode instead of PFC: credit-based link-level flow
	 * control per virtual lane (the priorities) — a port sends a packet
	 * only when the receiver's input buffer has granted room for it, and
	 * the room comes back as credit when the packet leaves that buffer.
	 * Each switch input port's buffer is buffer_bytes / ports. */
	bool ib_credits;
};

struct sim_host_opts {
	bool dcqcn;             /* ECN marks -> CNPs -> DCQCN rate cuts */
	bool dcqcn_paper;       /* the DCQCN paper's parameters, not mlx5's (dcqcn.h) */
	const struct dcqcn_params *cc;  /* or these (NULL: by dcqcn_paper) */
	uint8_t qp_timeout;     /* IBTA local ACK timeout code (4.096 us · 2^t) */
	unsigned mtu;           /* 256 .. 4096 */
	bool selective_repeat;  /* IRN-style loss recovery (rnic_int.h), else Go-Back-N */
	unsigned send_window;   /* packets in flight per QP at most (0: the rnic's 512) */
	/* The reaction point's algorithm (rnic_config.cc_algo: DCQCN unless
	 * set), DCTCP's, TIMELY's and HPCC's parameters (NULL: their
	 * defaults) and their rate-scaled window in bytes
	 * (rnic_config.cc_window).  With HPCC the switches write INT records
	 * (net_int.h, struct sim_pkt). */
	enum rnic_cc_algo cc_algo;
	const struct dctcp_params *dctcp;
	const struct timely_params *timely;
	const struct hpcc_params *hpcc;
	uint64_t cc_window;
	/* HPCC-PINT (hpcc->pint): the switches' one-field INT (pint.h) with
	 * this PINT_LOG_BASE, and the share of ACKs the senders sample
	 * (PINT_PROB, in (0, 1]). */
	double pint_log_base, pint_prob;
};

/* What happened, all nodes together (per-node figures in the CSVs). */
struct sim_net_stats {
	uint64_t packets_sent;          /* by hosts */
	uint64_t packet_hops;           /* packets that crossed a link (PFC frames too) */
	uint64_t link_losses;           /* the loss knob */
	uint64_t drops;                 /* switch buffer full / over threshold */
	uint64_t headroom_drops;        /* PFC headroom exhausted */
	uint64_t ecn_marks;
	uint64_t pauses_sent, resumes_sent, pauses_received;
	uint64_t paused_ns;             /* summed over every paused (port, priority) */
	uint64_t storms_detected, storms_restored;
	uint64_t watchdog_drops;        /* dropped from or for a stormed queue */
	uint64_t credit_stalls;         /* IB mode: a packet waited for credit */
	uint64_t max_buffer_bytes;      /* a switch's peak occupancy */
	uint64_t max_host_queue_bytes;  /* a host NIC's peak egress queue */
};

struct sim_flow_result {
	unsigned src, dst;              /* host indexes */
	uint64_t bytes, start_ns, fct_ns;       /* fct 0: not finished */
	uint16_t sport;
	bool failed;                    /* completed with an error */
};

struct sim_net *sim_net_create(struct sim_engine *eng, uint64_t seed, const struct sim_host_opts *ho,
			       const struct sim_switch_opts *so);
void sim_net_destroy(struct sim_net *n);
/* Nodes: hosts are numbered among hosts (0..), switches among switches;
 * both get a node id for links.  -1 on failure. */
int sim_add_host(struct sim_net *n);
int sim_add_switch(struct sim_net *n);
unsigned sim_host_node(const struct sim_net *n, unsigned host);
unsigned sim_switch_node(const struct sim_net *n, unsigned sw);
/* A full-duplex link between two nodes (both directions the same). */
int sim_link(struct sim_net *n, unsigned node_a, unsigned node_b, const struct sim_link_opts *o);
/* Build the fabric once its last link is added, before the first flow:
 * place the nodes into partitions, allocate the partitions' buffers,
 * compute the routes, arm the PFC watchdog, grant the IB credits and
 * create every host's rnic.  0, ENOMEM, or EINVAL (a link without delay
 * between two partitions). */
int sim_build(struct sim_net *n);
/* After sim_build: switch node `sw` sends everything for `host` out of
 * its port `port` (a static route, replacing the shortest paths; routes
 * that make a loop of buffer dependencies are how pfc-deadlock starts). */
int sim_set_route(struct sim_net *n, unsigned sw, unsigned host, unsigned port);
/* An RDMA WRITE of `bytes` from host src to host dst, starting at
 * start_ns, on its own RC QP pair.  Returns the flow index or -1. */
int sim_add_flow(struct sim_net *n, unsigned src, unsigned dst, uint64_t bytes, uint64_t start_ns);
unsigned sim_flows(const struct sim_net *n);
struct sim_engine *sim_net_engine(const struct sim_net *n);
const struct sim_flow_result *sim_flow(const struct sim_net *n, unsigned i);
/* Flows still running. */
unsigned sim_flows_running(const struct sim_net *n);
/* Not const: paused_ns is summed over the ports when asked. */
const struct sim_net_stats *sim_net_stats(struct sim_net *n);
/* The path routes take from host src to host dst (the first of equal
 * next hops): its one-way propagation delay and its slowest link.  0, or
 * ENOENT when there is no route. */
int sim_path(const struct sim_net *n, unsigned src, unsigned dst, uint64_t *delay_ns, uint64_t *min_rate_bps);
/* Partitions (above): call before the first node; then sim_build places
 * the nodes.  With threads, a thread each, else one after the other on
 * the caller's (the same output: a check that the threads' timing does
 * not leak into it).  EINVAL for 0, more than SIM_MAX_PARTS, or after
 * nodes were added.  Without a call: one partition, the caller's engine. */
int sim_net_set_partitions(struct sim_net *n, unsigned parts, bool threads);
unsigned sim_net_partitions(const struct sim_net *n);
/* After sim_build: the windows' length (0 with one partition). */
uint64_t sim_net_lookahead(const struct sim_net *n);
/* Run, with any number of partitions, until every flow ended or the next
 * event is after stop, calling progress (if not NULL) between windows
 * and, with one partition, every 65 536 events.  With one partition the
 * caller may also step its engine itself (sim_step: an experiment that
 * looks at the fabric as it goes).  0, ENOMEM, or EAGAIN (no thread). */
typedef void (*sim_net_progress_fn)(void *ctx, const struct sim_net *n);
int sim_net_run(struct sim_net *n, uint64_t stop, sim_net_progress_fn progress, void *ctx);
/* Events run and the latest clock, over the partitions. */
uint64_t sim_net_events(const struct sim_net *n);
uint64_t sim_net_now(const struct sim_net *n);
/* Host h's rnic (for its per-QP view, rnic_qp_infos). */
struct rnic *sim_host_rnic(const struct sim_net *n, unsigned h);
/* From start_ns on, host `host` pauses its switch port for ever (a NIC
 * stuck sending PFC frames): the PFC storm of docs/experiments.md. */
int sim_host_storm(struct sim_net *n, unsigned host, uint64_t start_ns);
/* Time the egress of port `port` of node `node` spent paused (lossless
 * priority), up to now. */
uint64_t sim_port_paused_ns(const struct sim_net *n, unsigned node, unsigned port);
/* Walking the nodes and ports (for per-port outputs). */
unsigned sim_nodes(const struct sim_net *n);
unsigned sim_node_ports(const struct sim_net *n, unsigned node);
bool sim_node_is_host(const struct sim_net *n, unsigned node);
/* PAUSE frames that reached this egress. */
uint64_t sim_port_pauses_received(const struct sim_net *n, unsigned node, unsigned port);
/* Whether that egress is paused now (lossless priority). */
bool sim_port_is_paused(const struct sim_net *n, unsigned node, unsigned port);
/* Bytes (on the wire) of every packet host `src` sent that reached its
 * destination host: sampled over time, a sender's throughput. */
uint64_t sim_host_delivered(const struct sim_net *n, unsigned src);
/* Wire bytes of flow i's request packets that reached its destination so
 * far (resent ones too): its throughput over time. */
uint64_t sim_flow_arrived(const struct sim_net *n, unsigned i);
/* Bytes waiting in the egress queues of port `port` of node `node`. */
uint64_t sim_port_queue_bytes(const struct sim_net *n, unsigned node, unsigned port);
/* The port of node `node` whose link leads to node `peer`, or -1. */
int sim_port_to_node(const struct sim_net *n, unsigned node, unsigned peer);
/* The port of switch node `sw` whose link leads to host `host`, or -1. */
int sim_port_to_host(const struct sim_net *n, unsigned sw, unsigned host);
/* The sum of one rnic counter over every host, by name ("tx_retransmits"
 * ...: RNIC_COUNTER_LIST), or 0 if there is no such counter. */
uint64_t sim_rnic_counter(const struct sim_net *n, const char *name);

#endif
