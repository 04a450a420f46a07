/*
 * paths.h — the device's set of paths (path.h) and the one place that
 * chooses among them: which path carries each packet and each QP's
 * messages, the transmit queue they are built in, and the properties of
 * the set the progress loop reads (what to poll, whether to spin on
 * memory, how to arm before sleeping).
 *
 * The set always has the UDP port (it owns the address every path's
 * packets carry, and QP1's MADs go nowhere else); the host-local ring and
 * message paths join it when the environment allows (local_path.h), and
 * the AF_XDP port when SOFTRNIC_XDP names an interface and it can be had
 * (xdp_port.h).  Preference: message (for whole messages only), ring,
 * AF_XDP, UDP last, which takes whatever the others do not.
 */
#ifndef SOFTRNIC_RUNTIME_PATHS_H
#define SOFTRNIC_RUNTIME_PATHS_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/local_path.h"
#include "runtime/path.h"
#include "runtime/rx_batch.h"
#include "runtime/tx_queue.h"
#include "runtime/udp_port.h"
#include "runtime/xdp_port.h"

#define SRT_PATHS_MAX 4

/* A path that carried a packet this recently is active, and a polling
 * thread then reads the paths whose receive is a system call only this
 * often (srt_paths_skip_syscall). */
#define SRT_PATH_ACTIVE_NS (1000ull * 1000)
#define SRT_PATH_SYSCALL_EVERY_NS (20ull * 1000)

struct srt_path_udp {
	struct srt_path base;
	struct srt_udp *u;
};

struct srt_path_local {
	struct srt_path base;
	struct srt_local *l;
	struct rnic_gid gid;            /* our address, for ICRCs */
};

struct srt_path_xdp {
	struct srt_path base;
	struct srt_xdp *x;
	struct srt_udp *u;              /* for packets too large for a frame */
	struct rnic_gid gid;            /* our address */
	uint64_t to_udp;                /* packets it gave the UDP port */
	uint64_t runs_split;            /* frames received that were GSO runs */
};

#define SRT_ANSWERS_WAIT 64u

struct srt_paths {
	struct srt_udp udp;             /* the port */
	struct srt_local *local;        /* NULL: no host-local paths */
	struct srt_xdp *xdp;            /* NULL: no AF_XDP port */
	struct srt_path_udp udp_path;
	struct srt_path_local ring_path, message_path;
	struct srt_path_xdp xdp_path;
	struct srt_path *list[SRT_PATHS_MAX];   /* in order of preference */
	unsigned n;
	bool has_cheap;                 /* a path receives without system calls */
	struct srt_tx_queue *txq;       /* packets built, until srt_paths_flush */
	/* Plain ACKs the queue held that left just ahead of a whole message:
	 * they rode with it.  The runtime takes the count at unlock
	 * (send_path.c). */
	uint64_t acks_before_message;
	/* The next unlock flushes (send_path.c) even with nothing queued,
	 * and lets nothing wait to ride: a fast message is in a ring, not
	 * yet published, or an answer must not wait (a rejection, whose
	 * sender waits for it to send the message as packets). */
	bool flush_at_unlock;
	/* Answers to fast messages (local_path.h), waiting like plain ACKs
	 * to ride with the next thing this process sends (send_path.c), and
	 * written into their senders' rings ahead of it; answers_lost: no
	 * room or no ring for one (its sender's retries run out), or a fast
	 * message not executed because no answer could reach its sender. */
	struct srt_answer_wait {
		struct in_addr to;
		uint32_t qpn, src_qpn, seq, verdict;
	} answers[SRT_ANSWERS_WAIT];
	unsigned answers_n;
	uint64_t answers_lost;
	uint64_t tx_unroutable;         /* no path carries the destination */
	uint64_t tx_mr_fault;           /* not queued: a payload page faulted */
	/* Receive policy (srt_paths_skip_syscall): when a path without
	 * system calls last carried a packet, and when a polling thread
	 * last read the paths that need one. */
	uint64_t last_cheap_rx_ns, last_syscall_read_ns;
};

/* The UDP port, as configured by the environment (runtime.h): 0, or an
 * errno with a one-line explanation in err. */
int srt_paths_open(struct srt_paths *ps, char *err, size_t errlen);
/* The host-local paths (local_path.h), unless the environment or the
 * port rules them out (an IPv6 port, a tap that must see every packet):
 * rundir, the runtime directory; faults_on, our SOFTRNIC_FAULTS (its
 * peers then compute ICRCs, and no whole messages). */
void srt_paths_open_local(struct srt_paths *ps, int rundir, bool faults_on);
/* The AF_XDP port, if SOFTRNIC_XDP names an interface: on it, or with
 * one line on stderr saying why not (the set goes on without it). */
void srt_paths_open_xdp(struct srt_paths *ps);
void srt_paths_close(struct srt_paths *ps);
/* A child of fork(): closes the parent's sockets, leaves its memory (and
 * its ring's file) alone. */
void srt_paths_close_inherited(struct srt_paths *ps);
/* A device opening: removes what paths of dead processes of ours left in
 * the runtime directory (their rings). */
void srt_paths_reclaim(int rundir);
/* At exit: removes what other processes could still find (our ring's
 * file) and what steers packets to us (the AF_XDP port's program), and
 * nothing else. */
void srt_paths_unlink(struct srt_paths *ps);
/* Every path shows what it sends to the tap (SOFTRNIC_PCAP). */
void srt_paths_set_tap(struct srt_paths *ps, const struct srt_path_tap *tap);

/* The port: its address and what it knows of its link. */
static inline const struct srt_udp *srt_paths_port(const struct srt_paths *ps) { return &ps->udp; }
/* A shared host address (host_share.h): our slot, or false. */
bool srt_paths_share_slot(const struct srt_paths *ps, unsigned *slot);
int srt_paths_share_listen(struct srt_paths *ps, uint64_t service_id, bool on);

/* ---- transmit ---- */

/* rnic_io.tx_buffer: room for the next packet (sending what waits first
 * when the queue is full). */
uint8_t *srt_paths_tx_buffer(struct srt_paths *ps);
/* rnic_io.xmit: a packet to the queue, or a whole message straight to its
 * path (what is queued leaves first: a QP's packets keep their order).
 * 0 or an errno (the packet is lost; RC recovers). */
int srt_paths_queue(struct srt_paths *ps, const struct rnic_tx *tx);
/* What is queued leaves, each packet by the path chosen for it.
 * Returns the packets lost. */
unsigned srt_paths_flush(struct srt_paths *ps);
static inline const struct srt_tx_queue *srt_paths_queued(const struct srt_paths *ps) { return ps->txq; }
/* Should the rnic hand over payloads by reference (rnic_io.tx_payload_ref)? */
/* The fast path (rnic.h, rnic_qp_set_fast): on where the host-local ring
 * is, unless SOFTRNIC_LOCAL_FAST=0; and the rnic's fast_send hook. */
struct rnic_fast_msg;
bool srt_paths_fast_ok(const struct srt_paths *ps);
/* The answer to a fast message from `to` (its QP qpn, ours src_qpn),
 * kept to ride (above). */
void srt_paths_answer(struct srt_paths *ps, struct in_addr to, uint32_t qpn, uint32_t src_qpn, uint32_t seq,
		      uint32_t verdict);
int srt_paths_fast_send(struct srt_paths *ps, const struct rnic_gid *dgid, const struct rnic_fast_msg *m,
			const struct wire_piece *pc, unsigned n);
bool srt_paths_payload_ref(const struct srt_paths *ps);
/* At connect: the way an RC QP carries its messages (a peer on this
 * host: whole messages, rnic_qp_set_message_path). */
void srt_paths_choose_for_qp(struct srt_paths *ps, struct rnic *r, struct rnic_qp *qp);

/* ---- receive ---- */

/* Without the lock: does a path without a descriptor hold packets? */
bool srt_paths_rx_pending(const struct srt_paths *ps);
/* Has a path without system calls carried a packet within
 * SRT_PATH_ACTIVE_NS?  (A thread then spins on memory, not on a socket.) */
bool srt_paths_cheap_active(const struct srt_paths *ps, uint64_t now);
/* Should a polling thread skip the paths whose receive is a system call
 * this round (a cheap path is active and they were read within
 * SRT_PATH_SYSCALL_EVERY_NS)? */
bool srt_paths_skip_syscall(const struct srt_paths *ps, bool may_skip, uint64_t now);
/* The descriptors that become readable when packets arrive: up to cap
 * into fds; returns the count. */
unsigned srt_paths_wake_fds(const struct srt_paths *ps, int *fds, unsigned cap);
/* Can any path be armed before sleeping (does any need telling)? */
bool srt_paths_can_arm(const struct srt_paths *ps);
/* About to sleep (true; false: packets already wait, do not) or woke. */
bool srt_paths_arm(struct srt_paths *ps, bool sleeping);

/* ---- counters ---- */

/* All paths' counters added up. */
void srt_paths_totals(const struct srt_paths *ps, struct srt_path_stats *s);
/* One path's, by its name (path.h); zeros if the set has none. */
/* The names of the paths of the set, in order of preference; how many. */
unsigned srt_paths_names(const struct srt_paths *ps, const char **names, unsigned max);
void srt_paths_stats_of(const struct srt_paths *ps, const char *name, struct srt_path_stats *s);

/* ---- the paths themselves (paths.c and the contract test make them) ---- */

void srt_path_udp_init(struct srt_path_udp *pu, struct srt_udp *u);
void srt_path_ring_init(struct srt_path_local *pl, struct srt_local *l, const struct rnic_gid *gid);
void srt_path_xdp_init(struct srt_path_xdp *px, struct srt_xdp *x, struct srt_udp *u, const struct rnic_gid *gid);
void srt_path_message_init(struct srt_path_local *pl, struct srt_local *l, const struct rnic_gid *gid);
/* Shared by the two host-local paths (path_ring.c). */
void *srt_path_local_route(struct srt_path *p, const struct rnic_gid *dst, const uint8_t *bth, bool fresh);
unsigned srt_path_local_flush(struct srt_path *p);
uint16_t srt_path_local_sport(const struct srt_tx_meta *m);

#endif
