/*
 * runtime.c — the process's device: one rnic driven by a UDP port, a
 * progress thread and the device lock (the contract is runtime.h).
 *
 * One device per process, created by the first srt_open and destroyed when
 * the last opener calls srt_close.  The progress thread sleeps in ppoll on
 * an epoll set holding the socket, an eventfd (srt_kick, shutdown) and
 * the link watch (link_monitor.h: port up/down events), until a packet
 * arrives, the rnic's next timer is due, or the 100 ms
 * stats refresh; then, under the device lock, it verifies ICRCs, feeds
 * packets to the rnic and fires timers.  While an application thread
 * busy-polls a CQ, that thread reads the socket instead and the socket is
 * taken out of the epoll set (runtime.h, "Who reads the socket").
 *
 * Transmit: the rnic's packets are queued (io_xmit) and leave when the
 * lock is released (srt_unlock), as one sendmmsg with UDP GSO runs
 * (udp_port.c).  Measured on a 2-core VM, loopback, 64 KiB RDMA WRITEs:
 * see the numbers in docs/performance.md.
 *
 * The runtime is the non-deterministic shell around the deterministic
 * rnic: it reads the clock, seeds the rnic from pid and time, and owns
 * every system call.
 *
 * Debugging aids on the real path (docs/capture_and_faults.md), each one
 * pointer test when off: SOFTRNIC_FAULTS (faults.h) sits between the
 * socket and the ICRC check, holding packets back in its own queue whose
 * deadline is one of the device's (device_deadline); SOFTRNIC_PCAP
 * (capture.h) records each packet handed to the ICRC check here and each
 * packet sent in udp_port.c.
 */
#include "runtime/runtime.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/prng.h"
#include "runtime/capture.h"
#include "runtime/cc_env.h"
#include "runtime/cpu_idle.h"
#include "runtime/faults.h"
#include "runtime/icrc_recv.h"
#include "runtime/link_monitor.h"
#include "runtime/mcast.h"
#include "runtime/stats_file.h"
#include "runtime/udp_port.h"
#include "runtime/share_steer.h"

#define SRT_DEVICE_NAME "softrnic0"
#define SRT_MAX_HOOKS 64
#define SRT_STATS_PERIOD_NS (100ull * 1000 * 1000)
#define SRT_STATS_RETRY_NS (5ull * 1000 * 1000)
/* Batches read per wake-up before timers get another look. */
#define SRT_RX_BATCHES_PER_WAKE 8
/* An application thread that polls in a loop reads the socket itself
 * (runtime.h); if it has neither polled nor posted for this long, the
 * progress thread takes the socket back.  Trade-off: a program that
 * stops polling without arming a notification (it spins on memory, say)
 * gets its packets this much later; shorter means more idle wake-ups of
 * the progress thread. */
#define SRT_POLL_HANDOFF_NS (200ull * 1000)
/* Polling in a loop: a poll that begins less than this long after the
 * thread's previous poll or post returned.  A program that polls once
 * and then waits elsewhere (perftest's write_lat spins on memory) leaves
 * the socket with the progress thread; after a completion, a program
 * that comes back sooner than this "keeps polling" (srt_poll_cq). */
#define SRT_BUSY_POLL_GAP_NS (5ull * 1000)
/* A thread that has polled empty CQs for this long yields the CPU after
 * each further empty poll.  Not for the progress thread's sake (the
 * poller receives itself): two busy-polling processes that the scheduler
 * put on one CPU (a 2-core machine with other work) otherwise hand the
 * CPU to each other only at the end of a time slice, and a ping-pong
 * round trip becomes ~10x longer (measured: ib_send_lat 260 us instead
 * of 20 in one run of four).  Trade-off: a yield with nothing else to
 * run costs ~1 us, paid on every empty poll after the first 10 us of a
 * wait; measured A/B over 4-6 runs: ib_read_lat 30 us vs 44 without,
 * send/write latency and bandwidth unchanged within the noise. */
#define SRT_POLL_YIELD_AFTER_NS (10ull * 1000)
/* ACKs ride with sends: a plain ACK (made by a polling application
 * thread, or by the progress thread) waits up to this long in the
 * transmit queue for the next packet this process sends, and leaves after
 * it in the same system call (see srt_unlock).  A ping-pong program
 * answers within a microsecond or two of its completion, so the ACK and
 * the answer then cost one send and the peer one receive, instead of two
 * each.  The bound: the next unlock after this long sends them; if the
 * program stops calling the library meanwhile, the progress thread does,
 * within SRT_POLL_HANDOFF_NS.  Either is far below the peer's retransmit
 * timer (>= 4 us * 2^timeout; perftest and rdma-core's tests use timeout
 * >= 12: 16 ms). */
#define SRT_ACK_RIDE_NS (20ull * 1000)
/* A program that never answers (ride_start): after this many waits in a
 * row that ended alone, ACKs leave at once, but for one wait in
 * SRT_RIDE_PROBE. */
#define SRT_RIDE_MISSES 4u
#define SRT_RIDE_PROBE 32u
/* After its last packet, the progress thread keeps reading the socket for
 * this long instead of sleeping, when it has the socket and a CPU is
 * free (cpu_idle.h): a stream of requests (READs, WRITEs to a program
 * that is not polling) then finds it awake, with no wake-up per
 * datagram, which costs the sender an inter-processor interrupt (a VM
 * exit under KVM) and the receiver a context switch.  Measured on 2
 * cores, bench/perf_compare.sh: ib_read_lat RTT 31.7 -> 19.7 us, ib_send_bw
 * -e 985 -> 1764 MiB/s (medians of 5); ib_write_lat -c UC unchanged at
 * ~23 us t_typical, where two programs spin on memory and the check says
 * no.  While spinning on the socket, the thread looks at its other file
 * descriptors (kicks, link, multicast groups) every SRT_SPIN_POLL_EVERY
 * turns only; on the local ring, it watches the ring with plain loads and
 * its descriptors every SRT_SPIN_FD_CHECK_NS (spin_wait).  It does not
 * yield: the check said a CPU is free. */
#define SRT_THREAD_SPIN_NS (50ull * 1000)
#define SRT_SPIN_POLL_EVERY 8u
#define SRT_SPIN_FD_CHECK_NS (5ull * 1000)
/* The time slice the progress thread asks for (ask_short_slice): the
 * kernel's minimum. */
#define SRT_THREAD_SLICE_NS (100ull * 1000)
/* How often a polling application thread scans the rnic's timers (a scan
 * visits every QP slot).  Far below every timer the rnic arms (delayed
 * ACK 20 us, retransmit >= 4 us * 2^timeout). */
#define SRT_APP_TIMER_SCAN_NS (10ull * 1000)
/* The host-local path: a ring that carried a packet this recently is
 * active, and a polling thread then reads the socket only this often
 * (receive_packets). */
#define SRT_LOCAL_ACTIVE_NS (1000ull * 1000)
#define SRT_LOCAL_UDP_EVERY_NS (20ull * 1000)

struct srt_hook_slot {
	bool used;
	struct srt_hooks hooks;
};

struct srt_device {
	pthread_mutex_t lock;           /* the device lock: guards rnic, hooks */
	struct rnic *rnic;
	struct srt_udp udp;
	struct srt_mcast mcast;         /* group sockets (mcast.h) */
	struct rnic_gid gid;
	int wake_fd;                    /* eventfd: srt_kick and shutdown */
	/* The progress thread waits on ep_fd, which holds the UDP socket
	 * only while no application thread reads it (app_polling false);
	 * toggled with epoll_ctl under the device lock, so handing the
	 * socket over never wakes the thread. */
	int ep_fd;
	bool app_polling;               /* written under the lock (atomic) */
	/* Under the lock: the queued plain ACKs may wait for company
	 * (SRT_ACK_RIDE_NS) since ride_since_ns.  Set only when the
	 * progress thread is sure to run before long and send them: by a
	 * polling application thread (the progress thread then wakes within
	 * SRT_POLL_HANDOFF_NS), or by the progress thread itself, which then
	 * sleeps no longer than the ride lasts.  Cleared when sent. */
	bool acks_may_ride;
	uint64_t ride_since_ns;
	unsigned ride_misses;           /* waits in a row that ended alone */
	unsigned ride_probe;            /* ACKs sent at once since the last wait */
	uint64_t app_poll_ns;           /* last poll in a loop, or post, of the
	                                   thread that has the socket (atomic) */
	uint64_t app_timer_scan_ns;     /* under the lock */
	uint64_t app_empty_since_ns;    /* start of the current empty streak, 0: none */
	uint64_t thread_wake_ns;        /* the progress thread's own deadline (atomic) */
	/* Under the lock: does the program come straight back after a
	 * completion (srt_poll_cq, "keeps polling")?  app_exit_ns: when
	 * its last poll or post returned (atomic: written after a yield,
	 * outside the lock); judge_gap: the last poll returned
	 * a completion, judge the gap at the next call. */
	uint64_t app_exit_ns;
	bool judge_gap;
	bool keeps_polling;
	/* Under the lock: who received how much (SOFTRNIC_STATS_AT_EXIT). */
	uint64_t rx_by_app, rx_by_thread, handoff_timeouts, thread_wakeups, takeover_wakes;
	uint64_t acks_rode, acks_alone;
	pthread_t thread;
	/* Posted once the progress thread has set itself up: srt_open
	 * returns only then, so a fork() right after it never copies a
	 * thread caught half-way through its start (under ASan that start
	 * allocates, and a child forked then inherits the allocator's lock
	 * held and hangs in its first malloc). */
	sem_t thread_ready;
	int stopping;                   /* atomic */
	int refcount;                   /* guarded by open_lock */
	pid_t owner;                    /* process that created the device */
	struct srt_hook_slot hooks[SRT_MAX_HOOKS];

	/* Written by the progress thread only. */
	struct srt_stats_writer stats;
	uint64_t last_publish_ns;
	/* Under the lock (whoever reads the socket). */
	uint64_t rx_drop_bad_icrc;
	uint64_t rx_drop_malformed;     /* truncated or shorter than BTH+ICRC */
	uint64_t rx_icrc_id_recovered;  /* accepted with a non-zero IPv4 ID   */
	struct srt_rx_batch batch;
	/* The port follows the interface's link (link_monitor.h): `link` is
	 * the progress thread's, `port` is read and written under the lock. */
	struct srt_link link;
	struct srt_link_state port;
	/* QP1's owner (srt_set_agent), under the lock; MADs that arrive
	 * while there is none are counted here. */
	struct srt_agent agent;
	uint64_t rx_mad_no_agent;
	/* SOFTRNIC_FAULTS (faults.h), under the lock; NULL: off.  The
	 * capture is dev->udp.capture. */
	struct srt_faults *faults;
	/* The host-local path (receive_packets): when the ring last carried
	 * a packet, and when a polling thread last read the socket. */
	uint64_t last_local_rx_ns, last_udp_read_ns;
};

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srt_device *the_device;

uint64_t srt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void srt_lock(struct srt_device *dev) { pthread_mutex_lock(&dev->lock); }

/* Lock held: may the queued ACKs start waiting now?  Waiting pays only
 * when the program answers what it receives; one that does not (a
 * server that only takes WRITEs, or only receives) would see every ACK
 * late.  So after SRT_RIDE_MISSES waits in a row ended alone, ACKs leave
 * at once, except one wait in SRT_RIDE_PROBE, which notices a program
 * that starts answering. */
static bool ride_start(struct srt_device *dev, uint64_t now)
{
	if (dev->ride_misses >= SRT_RIDE_MISSES && ++dev->ride_probe < SRT_RIDE_PROBE)
		return false;
	dev->ride_probe = 0;
	dev->ride_since_ns = now;
	return true;
}

/* Lock held: when the ACKs waiting in the queue must leave (UINT64_MAX:
 * nothing waits, the queue holds other packets or none). */
static uint64_t ride_deadline(struct srt_device *dev, uint64_t now)
{
	if (!srt_udp_only_acks(&dev->udp))
		return UINT64_MAX;
	if (!dev->ride_since_ns && !ride_start(dev, now))
		return UINT64_MAX;
	return dev->ride_since_ns + SRT_ACK_RIDE_NS;
}

/* Lock held: may what is queued wait for the next unlock?  Only plain
 * ACKs, only when the progress thread is sure to come by (acks_may_ride),
 * and only until their ride deadline ("ACKs ride with sends" above). */
static bool acks_wait(struct srt_device *dev)
{
	if (!dev->acks_may_ride)
		return false;
	uint64_t now = srt_now();
	uint64_t deadline = ride_deadline(dev, now);
	return deadline != UINT64_MAX && now < deadline;
}

/* Packets the rnic produced under the lock leave here, in one batch
 * (plain ACKs may wait: acks_wait). */
void srt_unlock(struct srt_device *dev)
{
	if (srt_udp_pending(&dev->udp) && !acks_wait(dev)) {
		if (dev->ride_since_ns) {
			const struct srt_tx_queue *q = dev->udp.txq;
			if (q->not_acks) {
				dev->acks_rode += q->n - q->not_acks;
				dev->ride_misses = 0;
			} else {
				dev->acks_alone += q->n;
				dev->ride_misses++;
			}
		}
		srt_udp_flush(&dev->udp);
		dev->acks_may_ride = false;
		dev->ride_since_ns = 0;
	}
	pthread_mutex_unlock(&dev->lock);
}

/* Lock held, by a thread that may not come back soon (the progress
 * thread, a program about to sleep): nothing waits. */
static void send_all_at_unlock(struct srt_device *dev)
{
	dev->acks_may_ride = false;
}
struct rnic *srt_rnic(struct srt_device *dev) { return dev->rnic; }
const struct rnic_gid *srt_gid(const struct srt_device *dev) { return &dev->gid; }
const char *srt_name(const struct srt_device *dev) { (void)dev; return SRT_DEVICE_NAME; }
enum ibv_mtu srt_active_mtu(const struct srt_device *dev) { return dev->udp.active_mtu; }

bool srt_share_slot(const struct srt_device *dev, unsigned *slot)
{
	if (dev->udp.share.conn < 0)
		return false;
	*slot = dev->udp.share.slot;
	return true;
}

int srt_share_listen(struct srt_device *dev, uint64_t service_id, bool on)
{
	return srt_host_share_listen(&dev->udp.share, service_id, on);
}

/* What rxe reports for its netdev: LinkUp when active, Polling when the
 * link is up without carrier (or address), Disabled when set down
 * (IBTA 14.2.5.6 PortInfo PortPhysicalState: 2 Polling, 3 Disabled,
 * 5 LinkUp). */
enum ibv_port_state srt_port_state(const struct srt_device *dev, uint8_t *phys_state)
{
	if (phys_state)
		*phys_state = dev->port.active ? 5 : dev->port.admin_up ? 2 : 3;
	return dev->port.active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
}

void srt_kick(struct srt_device *dev)
{
	uint64_t one = 1;
	/* A full eventfd counter (EAGAIN) still wakes the thread: ignore. */
	ssize_t n = write(dev->wake_fd, &one, sizeof(one));
	(void)n;
}

/* ---- hooks ---------------------------------------------------------------- */

int srt_add_hooks(struct srt_device *dev, const struct srt_hooks *hooks)
{
	int handle = -1;

	srt_lock(dev);
	for (int i = 0; i < SRT_MAX_HOOKS; i++) {
		if (!dev->hooks[i].used) {
			dev->hooks[i].used = true;
			dev->hooks[i].hooks = *hooks;
			handle = i;
			break;
		}
	}
	srt_unlock(dev);
	if (handle < 0)
		errno = ENOMEM;
	return handle;
}

void srt_remove_hooks(struct srt_device *dev, int handle)
{
	if (handle < 0 || handle >= SRT_MAX_HOOKS)
		return;
	srt_lock(dev);
	dev->hooks[handle].used = false;
	srt_unlock(dev);
}

/* ---- the agent (QP1's owner) and the device's timers --------------------- */

/* Lock held: the earliest timer of the rnic and of the agent. */
static uint64_t device_deadline(const struct srt_device *dev)
{
	uint64_t d = rnic_next_deadline(dev->rnic);

	if (dev->agent.next_deadline) {
		uint64_t a = dev->agent.next_deadline(dev->agent.ctx);
		if (a < d)
			d = a;
	}
	if (dev->faults) {      /* packets held back (SOFTRNIC_FAULTS) */
		uint64_t f = srt_faults_deadline(dev->faults);
		if (f < d)
			d = f;
	}
	return d;
}

/* Lock held: fire what is due at `now` in the rnic and the agent, and
 * deliver the held-back packets that are due (before the timers: a
 * delayed ACK then stops a retransmission due at the same time). */
static void device_advance(struct srt_device *dev, uint64_t now)
{
	if (dev->faults)
		srt_faults_release(dev->faults, now);
	if (rnic_next_deadline(dev->rnic) <= now)
		rnic_advance(dev->rnic, now);
	if (dev->agent.advance && dev->agent.next_deadline(dev->agent.ctx) <= now)
		dev->agent.advance(dev->agent.ctx, now);
}

int srt_set_agent(struct srt_device *dev, const struct srt_agent *agent)
{
	int e = 0;

	srt_lock(dev);
	if (agent && dev->agent.gsi_receive)
		e = EBUSY;
	else if (agent)
		dev->agent = *agent;
	else
		memset(&dev->agent, 0, sizeof(dev->agent));
	srt_unlock(dev);
	if (!e)
		srt_kick(dev);  /* the progress thread re-reads the deadlines */
	return e;
}

/* ---- rnic_io: called by the rnic with the device lock held ---------------- */

static void io_gsi_receive(void *ctx, const struct rnic_gid *src, uint32_t src_qpn, const uint8_t *mad,
			   size_t len)
{
	struct srt_device *dev = ctx;

	if (dev->agent.gsi_receive)
		dev->agent.gsi_receive(dev->agent.ctx, src, src_qpn, mad, len, srt_now());
	else
		dev->rx_mad_no_agent++;
}

static void io_xmit(void *ctx, const struct rnic_tx *tx)
{
	struct srt_device *dev = ctx;
	/* Queued until srt_unlock.  Errors are counted in udp.tx_errors;
	 * RC retransmission recovers. */
	(void)srt_udp_queue(&dev->udp, tx);
}

static uint8_t *io_tx_buffer(void *ctx)
{
	struct srt_device *dev = ctx;
	return srt_udp_tx_buffer(&dev->udp);
}

static void io_cq_event(void *ctx, struct rnic_cq *cq, void *cq_context)
{
	struct srt_device *dev = ctx;
	for (int i = 0; i < SRT_MAX_HOOKS; i++)
		if (dev->hooks[i].used && dev->hooks[i].hooks.cq_event)
			dev->hooks[i].hooks.cq_event(dev->hooks[i].hooks.ctx, cq, cq_context);
}

static void io_async_event(void *ctx, enum ibv_event_type type, void *user_obj)
{
	struct srt_device *dev = ctx;
	for (int i = 0; i < SRT_MAX_HOOKS; i++)
		if (dev->hooks[i].used && dev->hooks[i].hooks.async_event)
			dev->hooks[i].hooks.async_event(dev->hooks[i].hooks.ctx, type, user_obj);
}

/* First attach / last detach of a multicast group by a QP of this
 * process (device lock held): join or leave the IP group, and wake the
 * progress thread so it polls the new set of sockets. */
static int io_mcast(void *ctx, const struct rnic_gid *mgid, bool join)
{
	struct srt_device *dev = ctx;
	int e = 0;

	if (join)
		e = srt_mcast_join(&dev->mcast, dev->udp.addr, mgid);
	else
		srt_mcast_leave(&dev->mcast, mgid);
	srt_kick(dev);
	return e;
}

/* ---- progress thread ---------------------------------------------------- */

/* Lock held: the runtime's own counters (runtime.h). */
static void runtime_counters(struct srt_device *dev, struct srt_runtime_counters *rt)
{
	memset(rt, 0, sizeof(*rt));
	if (dev->faults) {
		const struct srt_faults_counters *f = srt_faults_counters(dev->faults);
		rt->faults_loss = f->loss;
		rt->faults_dup = f->dup;
		rt->faults_reorder = f->reorder;
		rt->faults_delay = f->delay;
		rt->faults_corrupt = f->corrupt;
	}
	if (dev->udp.capture) {
		struct srt_capture_stats cs;
		srt_capture_stats(dev->udp.capture, &cs);
		rt->capture_packets = cs.packets;
		rt->capture_dropped = cs.dropped;
	}
	if (dev->udp.local) {
		struct srt_local_stats ls;
		srt_local_get_stats(dev->udp.local, &ls);
		rt->local_tx_packets = ls.tx_packets;
		rt->local_rx_packets = ls.rx_packets;
		rt->local_ring_full = ls.tx_ring_full;
		rt->local_doorbells = ls.doorbells_sent;
		rt->local_ring_broken = ls.rx_ring_broken;
	}
}

/* Lock held: publish the rnic's counters plus the drops the runtime
 * makes before the rnic sees a packet, releasing the lock once they are
 * read (the shared-memory write needs no lock). */
static void publish_stats_and_unlock(struct srt_device *dev, uint64_t now)
{
	struct rnic_counters c = *rnic_counters(dev->rnic);
	struct srt_named_counter agent[SRT_AGENT_COUNTERS];
	struct rnic_qp_info qps[SRT_STATS_QPS];
	size_t n_agent = 0;
	size_t qp_total = rnic_qp_infos(dev->rnic, qps, SRT_STATS_QPS, now);

	if (dev->agent.counters)
		n_agent = dev->agent.counters(dev->agent.ctx, agent, SRT_AGENT_COUNTERS);
	c.rx_drop_bad_icrc += dev->rx_drop_bad_icrc;
	c.rx_drop_malformed += dev->rx_drop_malformed + dev->batch.dropped;
	struct srt_runtime_counters rt;
	runtime_counters(dev, &rt);
	dev->last_publish_ns = now;
	send_all_at_unlock(dev);
	srt_unlock(dev);
	srt_stats_publish(&dev->stats, &c, agent, n_agent, qps,
			  qp_total < SRT_STATS_QPS ? qp_total : SRT_STATS_QPS, qp_total, &rt, now);
	/* Buffered frames reach the file with each refresh (capture.c). */
	if (dev->udp.capture)
		srt_capture_flush(dev->udp.capture);
}

/* Refresh the published counters now. */
static void publish_stats(struct srt_device *dev, uint64_t now)
{
	srt_lock(dev);
	publish_stats_and_unlock(dev, now);
}

/* The progress thread's periodic refresh: skipped while the lock is busy
 * (an application thread posting or polling), and tried again a little
 * later, so the thread never queues behind a busy application for a
 * statistic. */
static void publish_stats_soon(struct srt_device *dev, uint64_t now)
{
	if (pthread_mutex_trylock(&dev->lock) != 0) {
		dev->last_publish_ns = now - SRT_STATS_PERIOD_NS + SRT_STATS_RETRY_NS;
		return;
	}
	publish_stats_and_unlock(dev, now);
}

/* SOFTRNIC_PCAP: a packet as it was received (capture.h), with the IPv4
 * ID it carried. */
static void capture_received(struct srt_device *dev, const struct srt_rx_pkt *p, uint16_t ip_id)
{
	struct srt_capture_hdr h = { .src = p->src, .dst = p->dst, .sport = p->sport, .ip_id = ip_id,
				     .tos = p->tos, .ttl = p->ttl };
	struct wire_piece pc = { p->data, p->len };

	srt_capture_packet(dev->udp.capture, &h, &pc, 1);
}

/* Check one datagram before the rnic sees it.  Returns true if it may be
 * delivered, and fills rx. */
static bool accept_datagram(struct srt_device *dev, const struct srt_rx_pkt *p, struct rnic_rx *rx)
{
	if (p->truncated || p->len < WIRE_BTH_LEN + WIRE_ICRC_LEN) {
		/* A truncated datagram's bytes are not all here: not captured. */
		if (dev->udp.capture && !p->truncated)
			capture_received(dev, p, p->seg_index);
		dev->rx_drop_malformed++;
		return false;
	}

	struct wire_ip ip;
	uint16_t id = 0;
	memset(&ip, 0, sizeof(ip));
	ip.version = 4;
	srt_ipv4_to_gid(p->src, &rx->src);
	/* The destination the packet carried: our address, or a multicast
	 * group (IP_PKTINFO); the ICRC covers it. */
	srt_ipv4_to_gid(p->dst, &rx->dst);
	memcpy(ip.src, rx->src.raw, 16);
	memcpy(ip.dst, rx->dst.raw, 16);

	/* Segment k of a GSO run was sent with IPv4 ID k (udp_port.c).  A
	 * local ring's packet may come without one (local_path.h): only when
	 * no SOFTRNIC_FAULTS of ours could have damaged it. */
	int verdict = p->no_icrc && !dev->faults
			      ? SRT_ICRC_OK
			      : srt_icrc_verify_ipv4_hint(&ip, p->sport, p->data, p->len, p->seg_index, &id);
	/* The IPv4 ID the ICRC check found is the one the packet carried
	 * (with a bad ICRC: the one a GSO sender gave it, our best guess). */
	if (dev->udp.capture)
		capture_received(dev, p, verdict == SRT_ICRC_BAD ? p->seg_index : id);
	if (verdict == SRT_ICRC_BAD) {
		dev->rx_drop_bad_icrc++;
		return false;
	}
	if (verdict == SRT_ICRC_OK_ID)
		dev->rx_icrc_id_recovered++;

	rx->sport = p->sport;
	rx->ecn = p->tos & 3;
	rx->dscp = p->tos >> 2;
	rx->ttl = p->ttl;
	rx->ip_id = id;                 /* as the ICRC check recovered it */
	rx->flow_label = 0;
	rx->ib = p->data;
	rx->ib_len = p->len;
	return true;
}

/* One received packet (or one SOFTRNIC_FAULTS let through, later
 * perhaps: srt_faults_deliver_fn) to the ICRC check and the rnic. */
static void deliver_packet(void *ctx, const struct srt_rx_pkt *p, uint64_t now)
{
	struct srt_device *dev = ctx;
	struct rnic_rx rx;

	if (accept_datagram(dev, p, &rx))
		rnic_receive(dev->rnic, &rx, now);
}

/* Read and deliver what is waiting on socket `u` (the device's own, or
 * a multicast group's), device lock held.  Trade-off: the ICRC check runs
 * under the lock too, so the batch buffer needs no lock of its own and
 * any thread may receive; it serialises multi-threaded programs a little
 * more.  Returns the number of packets read. */
static int deliver_batch(struct srt_device *dev, int n, uint64_t now)
{
	for (int i = 0; i < n; i++) {
		const struct srt_rx_pkt *p = &dev->batch.pkt[i];

		/* A local peer's wake-up (local_path.h) has done its work by
		 * waking us: not a packet, not for SOFTRNIC_FAULTS to touch. */
		if (!p->truncated && srt_local_is_doorbell(p->data, p->len))
			continue;
		if (dev->faults)        /* which calls deliver_packet, or not */
			srt_faults_receive(dev->faults, &dev->batch.pkt[i], now);
		else
			deliver_packet(dev, &dev->batch.pkt[i], now);
	}
	return n;
}

/* Each round: the device's local ring (local_path.h; only for the
 * device's own socket, not a multicast group's), then the socket.
 *
 * A busy-polling application thread talking to a local peer would pay a
 * recvmmsg on every poll for a socket that carries nothing but the odd
 * MAD or remote packet; while the ring has carried packets in the last
 * SRT_LOCAL_ACTIVE_NS, such a thread (may_skip_udp) reads the socket only
 * every SRT_LOCAL_UDP_EVERY_NS, so the local fast path makes no system
 * call.  So does the progress thread when the ring, not the socket, woke
 * it.  Trade-off: a remote peer's packet then waits up to that long for a
 * polling reader (the progress thread, woken by epoll, does not wait). */
static int receive_packets(struct srt_device *dev, struct srt_udp *u, bool may_skip_udp, uint64_t now)
{
	int total = 0;

	for (int round = 0; round < SRT_RX_BATCHES_PER_WAKE; round++) {
		int got = 0, n;
		bool skip_udp = false;

		/* The caller's clock for the first round (a busy poller reads
		 * it once per poll), a fresh one after a round that did work. */
		if (round)
			now = srt_now();
		if (u->local) {
			n = srt_local_recv(u->local, &dev->batch);
			if (n > 0) {
				dev->last_local_rx_ns = now;
				got += deliver_batch(dev, n, now);
			}
			srt_local_recv_done(u->local);  /* delivered: the entries go back */
			skip_udp = may_skip_udp && now - dev->last_local_rx_ns < SRT_LOCAL_ACTIVE_NS &&
				   now - dev->last_udp_read_ns < SRT_LOCAL_UDP_EVERY_NS;
		}
		if (!skip_udp) {
			if (u->local)
				dev->last_udp_read_ns = now;
			n = srt_udp_recv(u, &dev->batch);
			got += n > 0 ? deliver_batch(dev, n, now) : 0;
		}
		if (!got)
			break;
		total += got;
	}
	return total;
}

/* ---- who reads the socket (runtime.h) --------------------------------------- */

static void socket_to_thread(struct srt_device *dev, bool listen)
{
	struct epoll_event ev = { .events = listen ? EPOLLIN : 0, .data.fd = dev->udp.fd };

	(void)epoll_ctl(dev->ep_fd, EPOLL_CTL_MOD, dev->udp.fd, &ev);
}

static void wake_thread(struct srt_device *dev)
{
	uint64_t one = 1;
	ssize_t n = write(dev->wake_fd, &one, sizeof(one));
	(void)n;
}

/* Lock held.  The progress thread reads the socket and runs the timers
 * again; wake it if a timer armed meanwhile is due before it would wake
 * by itself (a pending datagram wakes it through ep_fd anyway). */
static void hand_back(struct srt_device *dev)
{
	if (!dev->app_polling)
		return;
	__atomic_store_n(&dev->app_polling, false, __ATOMIC_RELEASE);
	socket_to_thread(dev, true);
	if (device_deadline(dev) < __atomic_load_n(&dev->thread_wake_ns, __ATOMIC_ACQUIRE))
		wake_thread(dev);
}

/* Lock held: an application thread polls in a loop; it reads the socket
 * from now on, and the progress thread stops listening to it. */
static void take_socket(struct srt_device *dev, uint64_t now)
{
	if (dev->app_polling)
		return;
	__atomic_store_n(&dev->app_polling, true, __ATOMIC_RELEASE);
	socket_to_thread(dev, false);
	/* The progress thread may be asleep towards a far deadline (stats
	 * refresh): make it recompute one that includes the hand-off
	 * timeout, in case this thread stops polling without a word.
	 * Rare: while polling goes on, the thread wakes every
	 * SRT_POLL_HANDOFF_NS anyway. */
	if (__atomic_load_n(&dev->thread_wake_ns, __ATOMIC_ACQUIRE) > now + SRT_POLL_HANDOFF_NS) {
		wake_thread(dev);
		dev->takeover_wakes++;
	}
}

/* Lock held: an application thread found its CQ empty; receive what is
 * waiting and fire due timers in its place. */
static void drive_from_app(struct srt_device *dev, uint64_t now)
{
	/* The progress thread wakes within SRT_POLL_HANDOFF_NS while this
	 * thread polls: the ACKs made here may ride (SRT_ACK_RIDE_NS). */
	if (dev->app_polling)
		dev->acks_may_ride = true;
	dev->rx_by_app += (uint64_t)receive_packets(dev, &dev->udp, true, now);
	if (now >= dev->app_timer_scan_ns) {
		uint64_t deadline = device_deadline(dev);
		if (deadline <= now) {
			device_advance(dev, now);
			deadline = device_deadline(dev);
		}
		dev->app_timer_scan_ns = deadline < now + SRT_APP_TIMER_SCAN_NS ? deadline
										 : now + SRT_APP_TIMER_SCAN_NS;
	}
}

/* Lock held, at the start of a poll or post by the application: if its
 * last poll returned a completion, did it come back at once? */
static void judge_return(struct srt_device *dev, uint64_t now)
{
	if (!dev->judge_gap)
		return;
	dev->judge_gap = false;
	dev->keeps_polling = now - __atomic_load_n(&dev->app_exit_ns, __ATOMIC_RELAXED) < SRT_BUSY_POLL_GAP_NS;
}

int srt_poll_cq(struct srt_device *dev, struct rnic_cq *cq, int n, struct ibv_wc *wc)
{
	bool yield = false;
	int got;

	/* Read before the lock: time spent waiting for it (the progress
	 * thread receiving) is not the program being away. */
	uint64_t now = srt_now();

	srt_lock(dev);
	uint64_t rx_before = dev->rx_by_app;
	/* Polling in a loop: this poll comes straight after the previous
	 * poll or post returned (a bandwidth loop posts between polls).
	 * A program that returns to poll only now and then, or that waits
	 * elsewhere between polls (perftest's write_lat spins on memory),
	 * leaves the socket with the progress thread. */
	bool looping = now - __atomic_load_n(&dev->app_exit_ns, __ATOMIC_RELAXED) < SRT_BUSY_POLL_GAP_NS;
	judge_return(dev, now);
	if (looping)
		__atomic_store_n(&dev->app_poll_ns, now, __ATOMIC_RELEASE);
	got = rnic_cq_poll(cq, n, wc);
	if (got == 0) {
		/* An empty poll of an armed CQ is the end of the canonical
		 * event loop (get the event, ack, arm, poll until empty) and
		 * the program sleeps next, perhaps in its own poll() on the
		 * channel's fd, where ibv_get_cq_event cannot tell us: the
		 * socket stays with the progress thread (else packets would
		 * wait SRT_POLL_HANDOFF_NS; measured 300 us per request in
		 * the key-value server's loop). */
		if (rnic_cq_armed(cq))
			hand_back(dev);
		else if (looping)
			take_socket(dev, now);
		drive_from_app(dev, now);
		got = rnic_cq_poll(cq, n, wc);
	}
	if (got > 0) {
		/* A completion may end the polling (a program that now waits
		 * on memory, or sleeps): the socket goes back to the progress
		 * thread, unless after its previous completion the program
		 * came straight back to post or poll (a bandwidth loop, a
		 * ping-pong on the CQ); such a program keeps it, or takes it
		 * if it polls in a loop.  Handing back and taking over again
		 * costs two epoll_ctl calls, and packets arriving in between
		 * wake the progress thread, which then waits for the lock
		 * (measured: 20% of a core in ib_write_bw's client).  If such
		 * a program does stop polling now, the progress thread takes
		 * the socket back after SRT_POLL_HANDOFF_NS. */
		if (!dev->keeps_polling)
			hand_back(dev);
		else if (looping)
			take_socket(dev, now);
		dev->judge_gap = true;
		dev->app_empty_since_ns = 0;
	} else if (!dev->app_empty_since_ns) {
		dev->app_empty_since_ns = now;
	} else {
		yield = now - dev->app_empty_since_ns >= SRT_POLL_YIELD_AFTER_NS;
	}
	/* An empty poll that received nothing took a fraction of a
	 * microsecond: its start is close enough to its end (a busy poller
	 * saves a clock read per turn). */
	bool quick = got == 0 && !yield && dev->rx_by_app == rx_before && !srt_udp_pending(&dev->udp);
	srt_unlock(dev);
	if (yield)
		sched_yield();
	/* The program gets control back now: the time spent sending at
	 * unlock, or yielding to another thread, is not the program away
	 * from polling. */
	__atomic_store_n(&dev->app_exit_ns, quick ? now : srt_now(), __ATOMIC_RELAXED);
	return got;
}

void srt_will_sleep(struct srt_device *dev)
{
	srt_lock(dev);
	hand_back(dev);
	send_all_at_unlock(dev);
	srt_unlock(dev);
}

int srt_req_notify_cq(struct srt_device *dev, struct rnic_cq *cq, bool solicited_only)
{
	int ret;

	srt_lock(dev);
	ret = rnic_cq_req_notify(cq, solicited_only);
	hand_back(dev);         /* the program is about to sleep */
	send_all_at_unlock(dev);
	srt_unlock(dev);
	return ret;
}

int srt_post_send(struct srt_device *dev, struct rnic_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	bool wake = false;
	int ret;

	uint64_t now = srt_now();

	srt_lock(dev);
	judge_return(dev, now);
	/* A thread that posts is as busy as one that polls: a bandwidth
	 * loop posts for milliseconds between polls, and the socket stays
	 * with it meanwhile (what arrives waits in the socket buffer for its
	 * next poll) instead of going back to the progress thread, which
	 * would then contend with it for the lock on every packet. */
	if (dev->app_polling)
		__atomic_store_n(&dev->app_poll_ns, now, __ATOMIC_RELEASE);
	ret = rnic_post_send(qp, wr, bad, now);
	/* A polling application thread runs the timers itself. */
	if (!dev->app_polling)
		wake = device_deadline(dev) < __atomic_load_n(&dev->thread_wake_ns, __ATOMIC_ACQUIRE);
	srt_unlock(dev);        /* sends what the post produced */
	__atomic_store_n(&dev->app_exit_ns, srt_now(), __ATOMIC_RELAXED);
	if (wake)
		wake_thread(dev);
	return ret;
}

/* The link watch reported something (progress thread, lock not held):
 * read the interface's state without the lock, and on a change of the
 * port's state tell every opener, as rxe does on a netdev event
 * (IBTA 11.6.3.1: port events carry the port, not an object).
 * Traffic is not stopped while the port is down: packets still go to
 * the kernel, which drops what it cannot route, and RC retransmission
 * either recovers when the link returns or ends in a retry-exceeded
 * completion, as with rxe. */
static void follow_link(struct srt_device *dev)
{
	struct srt_link_state now;

	if (!srt_link_read(&dev->link, &now))
		return;
	srt_lock(dev);
	bool change = now.active != dev->port.active;
	dev->port = now;
	if (change)
		io_async_event(dev, now.active ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR, NULL);
	srt_unlock(dev);
}

static void drain_eventfd(int fd)
{
	uint64_t value;
	ssize_t n = read(fd, &value, sizeof(value));
	(void)n;
}

/* Ask the scheduler for a short time slice for this thread (Linux 6.12+:
 * sched_setattr with sched_runtime on a SCHED_OTHER thread; no privilege
 * needed).  EEVDF lets a waking thread with a short slice preempt the
 * running one at once; with the default slice a packet that wakes this
 * thread on a core where the application spins on memory (perftest's
 * write_lat over UC, with no ACK to ride on) waits for the end of the
 * spinner's slice: measured 2-4 ms per round trip on 2 cores.  Older
 * kernels refuse or ignore it; nothing else changes then. */
static void ask_short_slice(void)
{
#ifdef SYS_sched_setattr
	struct {
		uint32_t size, sched_policy;
		uint64_t sched_flags;
		int32_t sched_nice;
		uint32_t sched_priority;
		uint64_t sched_runtime, sched_deadline, sched_period;
		uint32_t sched_util_min, sched_util_max;
	} attr = { .size = sizeof(attr), .sched_policy = 0 /* SCHED_OTHER */,
		   .sched_runtime = SRT_THREAD_SLICE_NS };
	attr.sched_nice = getpriority(PRIO_PROCESS, 0);
	(void)syscall(SYS_sched_setattr, 0, &attr, 0u);
#endif
}

/* A hint to the CPU that this is a spin-wait loop. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* The progress thread spins (SRT_THREAD_SPIN_NS) while the local ring
 * carries the traffic: until `until`, watch the ring with plain loads,
 * and the descriptors (socket, kicks, link, groups) with a zero-timeout
 * ppoll every SRT_SPIN_FD_CHECK_NS, not on every turn: a lock, a recvmmsg
 * and now and then a ppoll per turn were most of a turn's cost.  Returns
 * true when the ring has packets (*socket_empty_ns: when a ppoll last
 * found the socket empty, 0 if none did); false when a descriptor is
 * ready or the time is up (the caller's ppoll then looks). */
static bool spin_wait(struct srt_device *dev, struct pollfd *fds, int nfds, uint64_t until,
		      uint64_t *socket_empty_ns)
{
	const struct timespec zero = { 0, 0 };
	uint64_t next_fd_check = 0;

	*socket_empty_ns = 0;
	for (;;) {
		if (srt_local_pending(dev->udp.local))
			return true;
		uint64_t now = srt_now();
		if (now >= until || __atomic_load_n(&dev->stopping, __ATOMIC_ACQUIRE))
			return false;
		if (now >= next_fd_check) {
			if (ppoll(fds, (nfds_t)nfds, &zero, NULL) > 0)
				return false;
			*socket_empty_ns = now;
			next_fd_check = now + SRT_SPIN_FD_CHECK_NS;
		}
		cpu_relax();    /* one: a pause is ~140 cycles on recent x86 */
	}
}

static void *progress_main(void *arg)
{
	struct srt_device *dev = arg;
	sigset_t all;

	/* Signals belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	ask_short_slice();

	/* The poll set, rebuilt under the lock (multicast groups change). */
	struct pollfd fds[3 + SRT_MCAST_MAX];
	struct srt_udp *group[SRT_MCAST_MAX];
	int ngroups = 0;
	bool must_lock = true;          /* first round, or something happened */
	bool socket_ready = true;       /* ppoll said the socket (ep_fd) is readable, or read it anyway */
	bool ring_active = false;       /* the ring carried packets lately (SRT_LOCAL_ACTIVE_NS) */
	unsigned spin_turns = 0;
	uint64_t socket_empty_ns = 0;   /* spin_wait's last look found the socket empty */
	uint64_t last_rx_ns = 0;        /* this thread's last packet */
	struct srt_cpu_idle cpus;

	srt_cpu_idle_open(&cpus);
	sem_post(&dev->thread_ready);

	while (!__atomic_load_n(&dev->stopping, __ATOMIC_ACQUIRE)) {
		/* app_poll_ns first: then it is not later than now. */
		uint64_t poll_ns = __atomic_load_n(&dev->app_poll_ns, __ATOMIC_ACQUIRE);
		uint64_t now = srt_now();
		uint64_t wake_at;
		bool spin = false;
		bool stats_due = now - dev->last_publish_ns >= SRT_STATS_PERIOD_NS;

		__atomic_fetch_add(&dev->thread_wakeups, 1, __ATOMIC_RELAXED);  /* read by stats */
		if (!must_lock && __atomic_load_n(&dev->app_polling, __ATOMIC_ACQUIRE) &&
		    now - poll_ns < SRT_POLL_HANDOFF_NS) {
			/* An application thread polls: it reads the socket and
			 * fires the timers.  Leave the lock to it: waiting for
			 * the lock behind a busy poller makes each of its
			 * unlocks wake this thread, which mostly finds the lock
			 * taken again (measured in ib_write_bw's client: 9000
			 * futex calls a second and a fifth of a core). */
			wake_at = poll_ns + SRT_POLL_HANDOFF_NS;
			if (dev->last_publish_ns + SRT_STATS_PERIOD_NS < wake_at)
				wake_at = dev->last_publish_ns + SRT_STATS_PERIOD_NS;
			__atomic_store_n(&dev->thread_wake_ns, wake_at, __ATOMIC_RELEASE);
		} else {
			must_lock = false;
			srt_lock(dev);
			/* Waiting for the lock took time, and app_poll_ns may
			 * have moved past the `now` read before it. */
			now = srt_now();
			/* An application thread that stopped polling without
			 * saying so (runtime.h): take the socket back. */
			if (dev->app_polling && now - __atomic_load_n(&dev->app_poll_ns, __ATOMIC_ACQUIRE) >=
						       SRT_POLL_HANDOFF_NS) {
				__atomic_store_n(&dev->app_polling, false, __ATOMIC_RELEASE);
				socket_to_thread(dev, true);
				dev->handoff_timeouts++;
			}
			if (!dev->app_polling) {
				/* A look that found the socket empty counts as a read
				 * (receive_packets' SRT_LOCAL_UDP_EVERY_NS). */
				if (socket_empty_ns > dev->last_udp_read_ns)
					dev->last_udp_read_ns = socket_empty_ns;
				int got = receive_packets(dev, &dev->udp, !socket_ready, now);
				dev->rx_by_thread += (uint64_t)got;
				if (got > 0)
					last_rx_ns = now;
				spin = now - last_rx_ns < SRT_THREAD_SPIN_NS && srt_cpu_idle(&cpus, now);
				ring_active = dev->udp.local && now - dev->last_local_rx_ns < SRT_LOCAL_ACTIVE_NS;
			}
			if (device_deadline(dev) <= now)
				device_advance(dev, now);
			uint64_t deadline = device_deadline(dev);
			ngroups = srt_mcast_poll_set(&dev->mcast, fds + 2, group, SRT_MCAST_MAX);

			/* The next stats refresh (a due one is published below). */
			wake_at = dev->last_publish_ns + SRT_STATS_PERIOD_NS;
			if (wake_at <= now || wake_at > now + SRT_STATS_PERIOD_NS)
				wake_at = now + SRT_STATS_PERIOD_NS;
			if (deadline < wake_at)
				wake_at = deadline;
			if (dev->app_polling) {
				uint64_t handoff = __atomic_load_n(&dev->app_poll_ns, __ATOMIC_ACQUIRE) +
						   SRT_POLL_HANDOFF_NS;
				if (handoff < wake_at)
					wake_at = handoff;
			}
			/* ACKs this thread made wait for the application's next
			 * send (a program that answers what it received, or one
			 * that waits on memory for a WRITE and then writes
			 * back); then this thread wakes when they must leave. */
			uint64_t ride = ride_deadline(dev, now);
			dev->acks_may_ride = ride > now && ride != UINT64_MAX;
			if (dev->acks_may_ride && ride < wake_at)
				wake_at = ride;
			/* Read by posting threads under the lock (srt_post_send). */
			__atomic_store_n(&dev->thread_wake_ns, wake_at, __ATOMIC_RELEASE);
			srt_unlock(dev);
		}

		if (stats_due)
			publish_stats_soon(dev, now);

		fds[0] = (struct pollfd){ .fd = dev->ep_fd, .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = dev->wake_fd, .events = POLLIN };
		int nfds = 2 + ngroups;
		if (dev->link.fd >= 0)  /* after the groups: fds[2 + i] stay theirs */
			fds[nfds++] = (struct pollfd){ .fd = dev->link.fd, .events = POLLIN };
		socket_ready = false;
		/* Spinning on the ring: watch it without the lock, the
		 * descriptors now and then; its packets are taken next round.
		 * Spinning on the socket: straight back to it, most turns. */
		if (spin && ring_active) {
			uint64_t until = last_rx_ns + SRT_THREAD_SPIN_NS;
			if (spin_wait(dev, fds, nfds, until < wake_at ? until : wake_at, &socket_empty_ns)) {
				must_lock = true;
				continue;
			}
		} else if (spin && ++spin_turns % SRT_SPIN_POLL_EVERY != 0) {
			socket_ready = true;
			continue;
		}

		uint64_t wait = wake_at > now && !spin ? wake_at - now : 0;
		/* Sleeping with the socket in our poll set: local senders
		 * must ring our doorbell (local_path.h); not if packets wait
		 * in the ring already. */
		bool local_sleep = wait && dev->udp.local && !__atomic_load_n(&dev->app_polling, __ATOMIC_ACQUIRE);
		if (local_sleep && !srt_local_sleep(dev->udp.local, true)) {
			wait = 0;
			local_sleep = false;
			must_lock = true;
		}
		struct timespec ts = { .tv_sec = (time_t)(wait / 1000000000ull),
				       .tv_nsec = (long)(wait % 1000000000ull) };
		int ready = ppoll(fds, (nfds_t)nfds, &ts, NULL);
		if (local_sleep) {
			srt_local_sleep(dev->udp.local, false);
			must_lock = true;       /* the ring may have filled meanwhile */
		}
		if (ready <= 0)
			continue;
		/* The socket (handed back to this thread), a kick, a link
		 * event: look at everything under the lock next round. */
		must_lock = true;
		socket_ready = (fds[0].revents & POLLIN) != 0;
		if (fds[1].revents & POLLIN)
			drain_eventfd(dev->wake_fd);
		if (nfds > 2 + ngroups && fds[2 + ngroups].revents)
			follow_link(dev);
		if (ngroups) {
			srt_lock(dev);
			for (int i = 0; i < ngroups; i++)
				if (fds[2 + i].revents & POLLIN)
					receive_packets(dev, group[i], false, srt_now());
			send_all_at_unlock(dev);
			srt_unlock(dev);
		}
	}
	srt_cpu_idle_close(&cpus);
	return NULL;
}

void srt_progress_stats(struct srt_device *dev, struct srt_progress_stats *out)
{
	srt_lock(dev);
	*out = (struct srt_progress_stats){
		.rx_by_app = dev->rx_by_app, .rx_by_thread = dev->rx_by_thread,
		.thread_wakeups = __atomic_load_n(&dev->thread_wakeups, __ATOMIC_RELAXED),
		.handoff_timeouts = dev->handoff_timeouts,
		.takeover_wakes = dev->takeover_wakes,
		.udp_sends = dev->udp.tx_sends, .gso_sends = dev->udp.tx_gso_sends,
		.acks_rode = dev->acks_rode, .acks_alone = dev->acks_alone,
	};
	srt_unlock(dev);
}

/* ---- open / close --------------------------------------------------------- */

/* SOFTRNIC_STATS_AT_EXIT=1: when the device closes, print its non-zero
 * counters to stderr, so a short-lived program (a demo, a test) shows what
 * the NIC did without racing `softrnic stats` against its exit.  A second
 * line tells how the progress model behaved: packets read by polling
 * application threads vs the progress thread, the thread's wake-ups
 * (hand-off timeouts among them), send system calls (GSO sends among
 * them), and the per-source-port sockets open and source ports that fell
 * back to 4791 (udp_port.c). */
/* One line appended to a buffer (print_stats_at_exit). */
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len >= cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

/* Each line leaves in one write(2): two processes of a test often share
 * one log file, and their lines must not interleave mid-line. */
static void print_stats_at_exit(struct srt_device *dev)
{
	const char *want = getenv("SOFTRNIC_STATS_AT_EXIT");
	const struct srt_stats_file *f = dev->stats.map;
	char line[4096];
	size_t len = 0;

	if (!want || !*want || !strcmp(want, "0") || !f)
		return;
	append(line, sizeof(line), &len, "softrnic: %s (pid %d) counters:", f->name, (int)getpid());
#define PRINT_NONZERO(name)                                                        \
	if (f->counters.name)                                                     \
		append(line, sizeof(line), &len, " %s=%llu", #name, (unsigned long long)f->counters.name);
	RNIC_COUNTER_LIST(PRINT_NONZERO)
#undef PRINT_NONZERO
#define PRINT_NONZERO_RT(name)                                                     \
	if (f->runtime.name)                                                      \
		append(line, sizeof(line), &len, " %s=%llu", #name, (unsigned long long)f->runtime.name);
	SRT_RUNTIME_COUNTER_LIST(PRINT_NONZERO_RT)
#undef PRINT_NONZERO_RT
	append(line, sizeof(line), &len, "\n");
	(void)!write(STDERR_FILENO, line, len);
	struct srt_progress_stats ps;
	srt_progress_stats(dev, &ps);
	len = 0;
	append(line, sizeof(line), &len,
	       "softrnic: progress: rx_by_app=%llu rx_by_thread=%llu handoff_timeouts=%llu "
	       "thread_wakeups=%llu takeover_wakes=%llu udp_sends=%llu gso_sends=%llu acks_rode=%llu "
	       "acks_alone=%llu tx_errors=%llu sport_sockets=%u sport_fallbacks=%llu\n",
	       (unsigned long long)ps.rx_by_app, (unsigned long long)ps.rx_by_thread,
	       (unsigned long long)ps.handoff_timeouts, (unsigned long long)ps.thread_wakeups,
	       (unsigned long long)ps.takeover_wakes, (unsigned long long)ps.udp_sends,
	       (unsigned long long)ps.gso_sends, (unsigned long long)ps.acks_rode,
	       (unsigned long long)ps.acks_alone, (unsigned long long)dev->udp.tx_errors,
	       dev->udp.sport_sockets, (unsigned long long)dev->udp.tx_sport_fallbacks);
	(void)!write(STDERR_FILENO, line, len);
}

static void destroy_device(struct srt_device *dev)
{
	if (dev->rnic) {
		srt_lock(dev);
		rnic_destroy(dev->rnic);
		dev->rnic = NULL;
		srt_unlock(dev);
	}
	srt_stats_remove(&dev->stats);
	srt_mcast_close_all(&dev->mcast);
	srt_link_close(&dev->link);
	srt_faults_destroy(dev->faults);
	dev->faults = NULL;
	srt_local_close(dev->udp.local);
	dev->udp.local = NULL;
	srt_capture_close(dev->udp.capture);
	dev->udp.capture = NULL;
	srt_udp_close(&dev->udp);
	if (dev->wake_fd >= 0)
		close(dev->wake_fd);
	if (dev->ep_fd >= 0)
		close(dev->ep_fd);
	pthread_mutex_destroy(&dev->lock);
	sem_destroy(&dev->thread_ready);
	free(dev);
}

static enum ibv_mtu smaller_mtu(enum ibv_mtu a, enum ibv_mtu b)
{
	return a < b ? a : b;
}

/* SOFTRNIC_FAULTS (faults.h): parsed, announced on stderr (a run with
 * faults on should never pass for a clean one; the line names the seed
 * that replays its decisions), created.  0 or an errno, with a message
 * on stderr. */
static int open_faults(struct srt_device *dev)
{
	const char *spec = getenv("SOFTRNIC_FAULTS");
	struct srt_faults_config cfg;
	char err[256], text[256];

	if (!spec)
		return 0;
	if (srt_faults_parse(spec, &cfg, err, sizeof(err))) {
		fprintf(stderr, "softrnic: SOFTRNIC_FAULTS=\"%s\": %s\n", spec, err);
		return EINVAL;
	}
	if (!srt_faults_config_active(&cfg))
		return 0;
	/* One chosen seed and one announcement per process, however often
	 * it opens the device (ibv_get_device_guid opens it too); called
	 * under open_lock. */
	static pid_t seed_pid, announced_pid;
	static uint64_t chosen_seed;
	if (!cfg.seeded) {
		if (seed_pid != getpid()) {
			uint64_t mix = (uint64_t)getpid() << 32 ^ srt_now();
			chosen_seed = prng_splitmix64(&mix) & 0xffffffffu;   /* short enough to type back */
			seed_pid = getpid();
		}
		cfg.seed = chosen_seed;
	}
	dev->faults = srt_faults_create(&cfg, deliver_packet, dev);
	if (!dev->faults) {
		fprintf(stderr, "softrnic: SOFTRNIC_FAULTS: out of memory\n");
		return ENOMEM;
	}
	if (announced_pid != getpid()) {
		srt_faults_format(&cfg, text, sizeof(text));
		fprintf(stderr, "softrnic: pid %d: SOFTRNIC_FAULTS on received packets: %s%s\n", (int)getpid(), text,
			cfg.seeded ? "" : " (seed chosen; give it to replay the decisions)");
		announced_pid = getpid();
	}
	return 0;
}

static struct srt_device *create_device(void)
{
	struct srt_device *dev = calloc(1, sizeof(*dev));
	char err[256];
	int e;

	if (!dev)
		return NULL;
	/* Adaptive: critical sections are short (a poll, a post), so a
	 * contending thread spins a little before it sleeps in the kernel. */
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&dev->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	sem_init(&dev->thread_ready, 0, 0);
	srt_mcast_init(&dev->mcast);
	dev->wake_fd = -1;
	dev->ep_fd = -1;
	dev->link.fd = -1;
	dev->owner = getpid();
	dev->refcount = 1;

	e = srt_udp_open(&dev->udp, err, sizeof(err));
	if (e) {
		fprintf(stderr, "softrnic: %s\n", err);
		dev->udp.fd = -1;
		goto fail;
	}
	srt_udp_gid(&dev->udp, &dev->gid);
	srt_link_open(&dev->link, dev->udp.addr, &dev->port);
	/* SOFTRNIC_PCAP, SOFTRNIC_FAULTS: asked for and not to be had
	 * (a file that cannot be created, a malformed setting) fails the
	 * open, as a bad SOFTRNIC_ADDR does, rather than run without. */
	e = srt_capture_from_env(&dev->udp.capture, dev->udp.gso, err, sizeof(err));
	if (e) {
		fprintf(stderr, "softrnic: %s\n", err);
		goto fail;
	}
	e = open_faults(dev);
	if (e)
		goto fail;
	/* The host-local path (local_path.h), unless a capture wants every
	 * packet on the socket or SOFTRNIC_LOCAL=0. */
	if (!dev->udp.capture) {
		unsigned slot = 0;
		bool shared = srt_share_slot(dev, &slot);

		dev->udp.local = srt_local_open(dev->udp.addr, slot, shared, dev->faults != NULL, dev->udp.fd);
	}

	dev->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dev->wake_fd < 0) {
		e = errno;
		fprintf(stderr, "softrnic: eventfd: %s\n", strerror(e));
		goto fail;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = dev->udp.fd };
	dev->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (dev->ep_fd < 0 || epoll_ctl(dev->ep_fd, EPOLL_CTL_ADD, dev->udp.fd, &ev) != 0) {
		e = errno;
		fprintf(stderr, "softrnic: epoll: %s\n", strerror(e));
		goto fail;
	}

	struct rnic_config cfg;
	rnic_config_default(&cfg);
	cfg.gid = dev->gid;
	cfg.max_mtu = smaller_mtu(cfg.max_mtu, dev->udp.active_mtu);
	/* One socket per multicast group (mcast.h). */
	if (cfg.max_mcast_grp > SRT_MCAST_MAX)
		cfg.max_mcast_grp = SRT_MCAST_MAX;
	srt_cc_from_env(&cfg);  /* SOFTRNIC_ECN, _DCQCN, _CC_* (cc_env.c) */
	/* Non-deterministic on purpose: QPNs and keys differ between runs. */
	cfg.seed = (uint32_t)getpid() * 2654435761u ^ (uint32_t)srt_now();
	/* On a shared address, our slot's QPNs only (share_steer.h). */
	unsigned slot;
	if (srt_share_slot(dev, &slot)) {
		cfg.qpn_base = slot << SRT_SHARE_QPN_SHIFT;
		cfg.qpn_span = 1u << SRT_SHARE_QPN_SHIFT;
	}
	struct rnic_io io = {
		.ctx = dev, .xmit = io_xmit, .cq_event = io_cq_event, .async_event = io_async_event,
		.mcast = io_mcast, .tx_buffer = io_tx_buffer, .gsi_receive = io_gsi_receive,
		/* payloads by reference: safe because srt_unlock flushes.  On
		 * for the local path's packets (copied once, into the ring);
		 * srt_udp_queue copies those for the socket unless
		 * SOFTRNIC_TX_COPY=0 (udp_port.c). */
		.tx_payload_ref = dev->udp.txq && (dev->udp.tx_payload_ref || dev->udp.local),
	};
	dev->rnic = rnic_create(&cfg, &io);
	if (!dev->rnic) {
		e = errno ? errno : ENOMEM;
		fprintf(stderr, "softrnic: cannot create device: %s\n", strerror(e));
		goto fail;
	}

	e = srt_stats_create(&dev->stats, SRT_DEVICE_NAME, dev->gid.raw);
	if (e)   /* The device works without published stats. */
		fprintf(stderr, "softrnic: warning: cannot publish stats in %s: %s\n", SRT_STATS_DIR, strerror(e));
	publish_stats(dev, srt_now());

	e = pthread_create(&dev->thread, NULL, progress_main, dev);
	if (e) {
		fprintf(stderr, "softrnic: cannot start progress thread: %s\n", strerror(e));
		goto fail;
	}
	while (sem_wait(&dev->thread_ready) != 0 && errno == EINTR)
		;
	return dev;

fail:
	destroy_device(dev);
	errno = e;
	return NULL;
}

struct srt_device *srt_open(void)
{
	struct srt_device *dev;

	pthread_mutex_lock(&open_lock);
	/* A child of fork() inherits the pointer but not the thread: it gets
	 * a device of its own (the parent's sockets are closed here, its
	 * memory is left alone). */
	if (the_device && the_device->owner != getpid()) {
		srt_capture_close_inherited(the_device->udp.capture);
		srt_udp_close(&the_device->udp);
		srt_mcast_close_all(&the_device->mcast);
		srt_link_close(&the_device->link);
		close(the_device->wake_fd);
		close(the_device->ep_fd);
		the_device = NULL;
	}
	if (the_device) {
		the_device->refcount++;
		dev = the_device;
	} else {
		dev = the_device = create_device();
	}
	pthread_mutex_unlock(&open_lock);
	return dev;
}

void srt_close(struct srt_device *dev)
{
	if (!dev)
		return;
	pthread_mutex_lock(&open_lock);
	if (--dev->refcount > 0) {
		pthread_mutex_unlock(&open_lock);
		return;
	}
	if (the_device == dev)
		the_device = NULL;
	pthread_mutex_unlock(&open_lock);

	__atomic_store_n(&dev->stopping, 1, __ATOMIC_RELEASE);
	srt_kick(dev);
	pthread_join(dev->thread, NULL);
	/* What still waits in the transmit queue (an ACK waiting to ride)
	 * leaves now, so the last counters include it (capture_packets). */
	srt_lock(dev);
	send_all_at_unlock(dev);
	srt_unlock(dev);
	publish_stats(dev, srt_now());
	print_stats_at_exit(dev);
	destroy_device(dev);
}
