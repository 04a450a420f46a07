/*
 * runtime.h — the real-process driver of an rnic: UDP socket on port 4791,
 * clock, progress thread, device lock, published counters.
 *
 * One runtime device per process, shared (reference-counted) by every
 * ibv_context the process opens, so QPs of two contexts in one process can
 * talk to each other like QPs of one NIC.
 *
 * Addressing: with no configuration the device binds the first free
 * loopback address 127.0.0.N (N = 1..254) on UDP 4791, so unmodified
 * programs on one machine find each other through the GIDs they exchange.
 * SOFTRNIC_ADDR=<ipv4 or ipv6> binds that address instead (fe80::x%ifname
 * for a link-local one); SOFTRNIC_IFACE=<name> binds the first IPv4
 * address of that interface, or with none its first global IPv6 address.
 * Over IPv6 the GID is the address and packets carry an IPv6 header
 * (udp_port.c); the host-local path, address sharing between processes
 * and the link monitor are IPv4-only for now.
 *
 * UDP source port: as kernel rxe, RC/UC use rdma_get_udp_sport(0, lqpn,
 * rqpn) and UD 0xC000 + hash_32(qpn, 14) (flow entropy for ECMP); the
 * destination port is 4791.  Packets leave from a send-only socket bound
 * to <addr>:<sport>, one per port in use, opened on first use and closed
 * with the device (udp_port.c); a port that cannot be bound (EADDRINUSE)
 * or exceeds the socket budget (a quarter of RLIMIT_NOFILE) leaves from
 * 4791 instead, counted as sport_fallbacks (SOFTRNIC_STATS_AT_EXIT).
 * Nothing is ever received on those sockets.  SOFTRNIC_SPORT=fixed sends
 * everything from the one socket on 4791 (the old behaviour);
 * SOFTRNIC_SPORT=flow (or unset) is the default; other values fail
 * srt_open with EINVAL.
 *
 * Threading: all calls into the rnic happen with the device lock held
 * (srt_lock/srt_unlock).  The progress thread receives packets, fires
 * timers and publishes counters; application threads post and poll under
 * the same lock, and posting sends directly from the caller's thread.
 * Packets the rnic produces while the lock is held are queued and leave
 * in one batch (sendmmsg, UDP GSO) when srt_unlock releases it.
 *
 * Who reads the socket: an application thread that polls a CQ in a loop
 * (srt_poll_cq: a poll less than 5 us after its previous poll or post
 * returned) reads the socket itself, without blocking, and the progress
 * thread stops listening to it and leaves the device lock alone, so a
 * busy-polling program needs no thread hand-off per packet.  An empty
 * poll of an armed CQ (ibv_req_notify_cq was called and has not fired)
 * never takes the socket: that is the end of the canonical event loop,
 * and the program sleeps next, perhaps in its own poll() on the
 * channel's fd where the runtime cannot see it.  The
 * progress thread takes the socket back when that thread's poll finds a
 * completion and the program did not come straight back after its
 * previous completion (it may now stop polling: perftest's write_lat
 * spins on memory), when it arms a CQ notification (srt_req_notify_cq:
 * it is about to sleep), or when it has neither polled nor posted for
 * the hand-off time: 200 us, doubled each time the progress thread looks
 * and finds it still polling, up to 1.6 ms (each look takes a CPU from
 * the poller).  A thread that keeps polling an empty CQ for more
 * than 10 us yields the CPU after each further empty poll (progress.c:
 * two busy-polling processes sharing one CPU would otherwise trade it
 * only once per time slice).  The progress thread asks the scheduler for
 * a short time slice (Linux 6.12+), so a packet that wakes it preempts an
 * application spinning on memory at once; when it has the socket and the
 * machine has a CPU to spare (cpu_idle.h), it keeps reading for 50 us
 * after a packet before it sleeps.
 *
 * ACKs ride with sends: a plain ACK waits up to 20 us in the transmit
 * queue for the next packet the process sends, and leaves after it in the
 * same system call, so a ping-pong turn costs one send and one receive
 * (send_path.c, SRT_ACK_RIDE_NS; srt_progress_stats counts them).
 */
#ifndef SOFTRNIC_RUNTIME_H
#define SOFTRNIC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "rnic/rnic.h"

struct srt_device;

/* Hooks through which the compat layer hears about completions and async
 * events (called from the progress thread or the posting thread, with the
 * device lock held; they must not call back into the rnic).  Port events
 * (IBV_EVENT_PORT_ERR, IBV_EVENT_PORT_ACTIVE when the link of our
 * interface goes down or comes back, link_monitor.h) come with user_obj
 * NULL and go to every opener; the port is port 1. */
struct srt_hooks {
	void *ctx;
	void (*cq_event)(void *ctx, struct rnic_cq *cq, void *cq_context);
	void (*async_event)(void *ctx, enum ibv_event_type type, void *user_obj);
};

/* The agent: a deterministic protocol machine beside the rnic that owns
 * QP1 — the connection manager (src/cm), which librdmacm.so.1 attaches.
 * Every callback runs with the device lock held, from the progress thread
 * or a polling application thread: gsi_receive gets each MAD that arrived
 * for QP1 (and may answer with rnic_gsi_send), next_deadline says when the
 * agent's next timer is due (UINT64_MAX: none) and advance fires what is
 * due; the runtime sleeps no longer than the earliest of the rnic's and
 * the agent's deadlines.  One agent per device: srt_set_agent returns
 * EBUSY if one is set; NULL detaches it (after which MADs are dropped and
 * counted).  After arming an agent timer outside these callbacks, call
 * srt_kick so the progress thread re-reads the deadline. */
/* A named counter the agent publishes (its protocol's, e.g. "cm_tx_req"). */
#define SRT_AGENT_COUNTERS 64
struct srt_named_counter {
	char name[32];
	uint64_t value;
};

struct srt_agent {
	void *ctx;
	void (*gsi_receive)(void *ctx, const struct rnic_gid *src, uint32_t src_qpn, const uint8_t *mad,
			    size_t len, uint64_t now);
	uint64_t (*next_deadline)(void *ctx);
	void (*advance)(void *ctx, uint64_t now);
	/* Optional: fill up to `cap` counters for `softrnic stats` (called
	 * with the lock held, when the counters are published); returns how
	 * many. */
	size_t (*counters)(void *ctx, struct srt_named_counter *out, size_t cap);
};
int srt_set_agent(struct srt_device *dev, const struct srt_agent *agent);

/* Open (or take another reference to) this process's device.  NULL with
 * errno set and a message on stderr naming the address and reason when
 * the address or port cannot be had. */
struct srt_device *srt_open(void);
void srt_close(struct srt_device *dev);

/* Register hooks for one opener; returns a handle for srt_remove_hooks. */
int srt_add_hooks(struct srt_device *dev, const struct srt_hooks *hooks);
void srt_remove_hooks(struct srt_device *dev, int handle);

void srt_lock(struct srt_device *dev);
void srt_unlock(struct srt_device *dev);
struct rnic *srt_rnic(struct srt_device *dev);
/* Monotonic nanoseconds (CLOCK_MONOTONIC). */
uint64_t srt_now(void);
/* Call after posting with the lock released: lets the progress thread
 * re-read rnic_next_deadline. */
void srt_kick(struct srt_device *dev);
/* Lock held, an RC QP just entered RTR: it takes the host-local message
 * path (local_path.h, rnic_qp_set_message_path) when its peer is a
 * softrnic device on this host that can take it too. */
void srt_qp_choose_path(struct srt_device *dev, struct rnic_qp *qp);

/* The data-path verbs with the progress model above (each takes and
 * releases the device lock).  srt_poll_cq: rnic_cq_poll, and if the CQ is
 * empty, receive and fire due timers in the caller's thread and poll
 * again.  srt_req_notify_cq: rnic_cq_req_notify, and hand the socket
 * back to the progress thread.  srt_post_send: rnic_post_send, then wake
 * the progress thread only if posting armed a timer earlier than the one
 * it sleeps towards. */
int srt_poll_cq(struct srt_device *dev, struct rnic_cq *cq, int n, struct ibv_wc *wc);
int srt_req_notify_cq(struct srt_device *dev, struct rnic_cq *cq, bool solicited_only);
int srt_post_send(struct srt_device *dev, struct rnic_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
/* The calling thread is about to block waiting for an event (e.g. in
 * ibv_get_cq_event): hand the socket back to the progress thread. */
void srt_will_sleep(struct srt_device *dev);

/* Our address as a GID (IPv4-mapped for IPv4), and the name ("softrnic0"). */
const struct rnic_gid *srt_gid(const struct srt_device *dev);
/* Sharing the host address with other processes (host_share.h): true and
 * our slot when shared. */
bool srt_share_slot(const struct srt_device *dev, unsigned *slot);
/* Tells the host's helper that this process listens on (or no longer
 * on) a CM Service ID: 0, EADDRINUSE (another process of the host has
 * it) or another errno; 0 when not shared. */
int srt_share_listen(struct srt_device *dev, uint64_t service_id, bool on);
const char *srt_name(const struct srt_device *dev);
/* Interface MTU used for active_mtu (loopback: 4096 path MTU). */
enum ibv_mtu srt_active_mtu(const struct srt_device *dev);
/* The port's state, following the link of the interface our address lives
 * on (always active on loopback): IBV_PORT_ACTIVE or IBV_PORT_DOWN, and,
 * if phys_state is not NULL, the PortPhysicalState rxe reports (5 LinkUp,
 * 2 Polling: link up without carrier or address, 3 Disabled: link set
 * down).  Call with the device lock held. */
enum ibv_port_state srt_port_state(const struct srt_device *dev, uint8_t *phys_state);

/* How the progress model behaved (SOFTRNIC_STATS_AT_EXIT prints these):
 * packets read by polling application threads and by the progress
 * thread, the thread's wake-ups (hand-off timeouts among them,
 * wake-ups an application thread asked for when it took the socket, and
 * poll_watch_wakes: wake-ups that found an application thread still
 * polling),
 * send system-call messages (UDP GSO sends among them), and plain ACKs
 * that waited in the transmit queue (send_path.c, "ACKs ride with sends"):
 * acks_rode left together with other packets, acks_alone left by
 * themselves when the wait ran out. */
struct srt_progress_stats {
	uint64_t rx_by_app, rx_by_thread;
	uint64_t thread_wakeups, handoff_timeouts, takeover_wakes, poll_watch_wakes;
	uint64_t udp_sends, gso_sends;
	uint64_t acks_rode, acks_alone;
};
void srt_progress_stats(struct srt_device *dev, struct srt_progress_stats *out);

/* The runtime's own counters (stats file version 4 on), by name for the
 * CLI: the faults SOFTRNIC_FAULTS injected into received packets
 * (faults.h: packets lost, extra copies, packets held back, packets
 * delayed, bits flipped) and the frames SOFTRNIC_PCAP wrote and did not
 * write (capture.h: past SOFTRNIC_PCAP_LIMIT, or a write error). */
#define SRT_RUNTIME_COUNTER_LIST(X)                                             \
	X(faults_loss) X(faults_dup) X(faults_reorder) X(faults_delay)          \
	X(faults_corrupt) X(capture_packets) X(capture_dropped)                 \
	X(local_tx_packets) X(local_rx_packets) X(local_ring_full)              \
	X(local_doorbells) X(local_ring_broken) X(local_tx_inline)
struct srt_runtime_counters {
#define SRT_RUNTIME_COUNTER_FIELD(name) uint64_t name;
	SRT_RUNTIME_COUNTER_LIST(SRT_RUNTIME_COUNTER_FIELD)
#undef SRT_RUNTIME_COUNTER_FIELD
};

/* Published statistics: each open device writes its counters to
 * softrnic-<pid> in the user's runtime directory (struct srt_stats_file;
 * stats_file.h, runtime_dir.h), refreshed by the progress thread;
 * `softrnic stats` reads them. */
#define SRT_STATS_MAGIC 0x534f4654524e4943ull /* "SOFTRNIC" */
#define SRT_STATS_QPS 64
struct srt_stats_file {
	uint64_t magic;
	uint32_t version;
	int32_t pid;
	char name[32];
	uint8_t gid[16];
	uint64_t updated_ns;
	struct rnic_counters counters;
	/* The agent's counters (version 2 on): the CM's, when librdmacm runs. */
	uint32_t n_agent;
	uint32_t reserved;
	struct srt_named_counter agent[SRT_AGENT_COUNTERS];
	/* The QPs (version 3 on), lowest QPNs first: `softrnic stats --qp`.
	 * qp_total may exceed SRT_STATS_QPS; only that many are listed. */
	uint32_t n_qp, qp_total;
	struct rnic_qp_info qps[SRT_STATS_QPS];
	/* The runtime's counters (version 4 on): faults, capture. */
	struct srt_runtime_counters runtime;
};

#endif
