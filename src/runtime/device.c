/*
 * device.c — the process's device: one rnic driven by its paths (UDP and,
 * for peers on this host, shared memory: paths.h), a progress thread and
 * the device lock (the contract is runtime.h; the
 * runtime's other parts are listed in device_int.h).
 *
 * One device per process, created by the first srt_open and destroyed
 * when the last opener calls srt_close.  Here: its creation (its paths,
 * capture and faults from the environment, the rnic with its
 * rnic_io hooks, the progress thread), its end, QP1's agent and the
 * device's timers, and the counters it publishes (stats_file.h) every
 * SRT_STATS_PERIOD_NS.
 *
 * The runtime is the non-deterministic shell around the deterministic
 * rnic: it reads the clock, seeds the rnic from pid and time, and owns
 * every system call.
 *
 * Files: the device's stats file and host-local ring live in the user's
 * runtime directory (runtime_dir.h), which the device holds open for its
 * life; when it opens, it first removes what dead processes of the user
 * left there, and a process that exits with its device still open (every
 * librdmacm program: librdmacm never closes it) removes its own at exit
 * (device_at_exit).
 *
 * Debugging aids on the real path (docs/capture_and_faults.md), each one
 * pointer test when off: SOFTRNIC_FAULTS (faults.h) sits between the
 * paths and the ICRC check, holding packets back in its own queue whose
 * deadline is one of the device's (srt_device_deadline); SOFTRNIC_PCAP
 * (capture.h) records each packet handed to the ICRC check
 * (receive_path.c) and, as a tap on the paths (path.h), each packet
 * sent.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/prng.h"
#include "runtime/capture.h"
#include "runtime/cc_env.h"
#include "runtime/device_int.h"
#include "runtime/env_config.h"
#include "runtime/local_path.h"
#include "runtime/mem_guard.h"
#include "runtime/runtime_dir.h"
#include "runtime/share_steer.h"

#define SRT_DEVICE_NAME "softrnic0"
#define SRT_STATS_RETRY_NS (5ull * 1000 * 1000)

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srt_device *the_device;

uint64_t srt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct rnic *srt_rnic(struct srt_device *dev) { return dev->rnic; }
const struct rnic_gid *srt_gid(const struct srt_device *dev) { return &dev->gid; }
const char *srt_name(const struct srt_device *dev) { (void)dev; return SRT_DEVICE_NAME; }
enum ibv_mtu srt_active_mtu(const struct srt_device *dev) { return srt_paths_port(&dev->paths)->active_mtu; }

bool srt_share_slot(const struct srt_device *dev, unsigned *slot)
{
	return srt_paths_share_slot(&dev->paths, slot);
}

int srt_share_listen(struct srt_device *dev, uint64_t service_id, bool on)
{
	return srt_paths_share_listen(&dev->paths, service_id, on);
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
uint64_t srt_device_deadline(const struct srt_device *dev)
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
void srt_device_advance(struct srt_device *dev, uint64_t now)
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
	/* Queued until srt_unlock.  Errors are counted by the paths; RC
	 * retransmission recovers. */
	(void)srt_paths_queue(&dev->paths, tx);
}

static int io_fast_send(void *ctx, const struct rnic_gid *dgid, const struct rnic_fast_msg *m,
			const struct wire_piece *pc, unsigned n)
{
	struct srt_device *dev = ctx;
	return srt_paths_fast_send(&dev->paths, dgid, m, pc, n);
}

static uint8_t *io_tx_buffer(void *ctx)
{
	struct srt_device *dev = ctx;
	return srt_paths_tx_buffer(&dev->paths);
}

static void io_cq_event(void *ctx, struct rnic_cq *cq, void *cq_context)
{
	struct srt_device *dev = ctx;
	for (int i = 0; i < SRT_MAX_HOOKS; i++)
		if (dev->hooks[i].used && dev->hooks[i].hooks.cq_event)
			dev->hooks[i].hooks.cq_event(dev->hooks[i].hooks.ctx, cq, cq_context);
}

void srt_device_async_event(void *ctx, enum ibv_event_type type, void *user_obj)
{
	struct srt_device *dev = ctx;
	for (int i = 0; i < SRT_MAX_HOOKS; i++)
		if (dev->hooks[i].used && dev->hooks[i].hooks.async_event)
			dev->hooks[i].hooks.async_event(dev->hooks[i].hooks.ctx, type, user_obj);
}

/* An RDMA FLUSH asked for persistence of [addr, addr+len): msync the
 * pages it touches, so a region mapped from a file (MAP_SHARED: a file on
 * a disk, or on persistent memory mounted with DAX) reaches the file
 * before the FLUSH is answered.  For anonymous memory msync has nothing
 * to write and returns at once.  Runs under the device lock: a large
 * flush holds up this process's other QPs meanwhile. */
static int io_persist(void *ctx, void *addr, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(page - 1);

	(void)ctx;
	if (msync((void *)start, (uintptr_t)addr + len - start, MS_SYNC))
		return errno;
	return 0;
}

/* First attach / last detach of a multicast group by a QP of this
 * process (device lock held): join or leave the IP group, and wake the
 * progress thread so it polls the new set of sockets. */
static int io_mcast(void *ctx, const struct rnic_gid *mgid, bool join)
{
	struct srt_device *dev = ctx;
	int e = 0;

	if (join)
		e = srt_mcast_join(&dev->mcast, srt_paths_port(&dev->paths), mgid);
	else
		srt_mcast_leave(&dev->mcast, mgid);
	srt_kick(dev);
	return e;
}

/* ---- published counters ------------------------------------------------- */

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
	if (dev->capture) {
		struct srt_capture_stats cs;
		srt_capture_stats(dev->capture, &cs);
		rt->capture_packets = cs.packets;
		rt->capture_dropped = cs.dropped;
	}
	/* The host-local paths' counters (the ring's and the message
	 * path's entries share one ring, so one set). */
	struct srt_path_stats ls;
	srt_paths_stats_of(&dev->paths, "ring", &ls);
	rt->local_tx_packets = ls.tx_packets;
	rt->local_rx_packets = ls.rx_packets;
	rt->local_ring_full = ls.tx_dropped;
	rt->local_doorbells = ls.doorbells;
	rt->local_ring_broken = ls.rx_broken;
	rt->local_tx_inline = ls.tx_inline;
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
	c.fast_unanswered += dev->paths.answers_lost;
	struct srt_path_stats paths;
	srt_paths_totals(&dev->paths, &paths);
	c.mr_fault += paths.tx_mr_fault;
	struct srt_runtime_counters rt;
	runtime_counters(dev, &rt);
	dev->last_publish_ns = now;
	srt_send_all_at_unlock(dev);
	srt_unlock(dev);
	srt_stats_publish(&dev->stats, &c, agent, n_agent, qps,
			  qp_total < SRT_STATS_QPS ? qp_total : SRT_STATS_QPS, qp_total, &rt, now);
	/* Buffered frames reach the file with each refresh (capture.c). */
	if (dev->capture)
		srt_capture_flush(dev->capture);
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
void srt_publish_stats_soon(struct srt_device *dev, uint64_t now)
{
	if (pthread_mutex_trylock(&dev->lock) != 0) {
		dev->last_publish_ns = now - SRT_STATS_PERIOD_NS + SRT_STATS_RETRY_NS;
		return;
	}
	publish_stats_and_unlock(dev, now);
}

/* Lock held. */
static void progress_stats_locked(struct srt_device *dev, struct srt_progress_stats *out)
{
	struct srt_path_stats paths;

	srt_paths_totals(&dev->paths, &paths);
	*out = (struct srt_progress_stats){
		.rx_by_app = dev->rx_by_app, .rx_by_thread = dev->rx_by_thread,
		.thread_wakeups = __atomic_load_n(&dev->thread_wakeups, __ATOMIC_RELAXED),
		.handoff_timeouts = dev->handoff_timeouts,
		.takeover_wakes = dev->takeover_wakes,
		.poll_watch_wakes = __atomic_load_n(&dev->poll_watch_wakes, __ATOMIC_RELAXED),
		.udp_sends = paths.tx_sends, .gso_sends = paths.tx_gso_sends,
		.acks_rode = dev->acks_rode, .acks_alone = dev->acks_alone,
	};
}

void srt_progress_stats(struct srt_device *dev, struct srt_progress_stats *out)
{
	srt_lock(dev);
	progress_stats_locked(dev, out);
	srt_unlock(dev);
}

/* ---- open / close --------------------------------------------------------- */

/* SOFTRNIC_STATS_AT_EXIT=1: when the device closes (or the process exits
 * with it open: device_at_exit), print its non-zero counters to stderr,
 * so a short-lived program (a demo, a test) shows what the NIC did
 * without racing `softrnic stats` against its exit.  A second
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
static void print_stats_at_exit(struct srt_device *dev, const struct srt_progress_stats *ps)
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
	len = 0;
	struct srt_path_stats paths;
	srt_paths_totals(&dev->paths, &paths);
	append(line, sizeof(line), &len,
	       "softrnic: progress: rx_by_app=%llu rx_by_thread=%llu handoff_timeouts=%llu "
	       "thread_wakeups=%llu takeover_wakes=%llu poll_watch_wakes=%llu udp_sends=%llu gso_sends=%llu "
	       "acks_rode=%llu acks_alone=%llu tx_errors=%llu sport_sockets=%u sport_fallbacks=%llu\n",
	       (unsigned long long)ps->rx_by_app, (unsigned long long)ps->rx_by_thread,
	       (unsigned long long)ps->handoff_timeouts, (unsigned long long)ps->thread_wakeups,
	       (unsigned long long)ps->takeover_wakes, (unsigned long long)ps->poll_watch_wakes,
	       (unsigned long long)ps->udp_sends,
	       (unsigned long long)ps->gso_sends, (unsigned long long)ps->acks_rode,
	       (unsigned long long)ps->acks_alone, (unsigned long long)paths.tx_errors, paths.sport_sockets,
	       (unsigned long long)paths.sport_fallbacks);
	(void)!write(STDERR_FILENO, line, len);
	/* Each path's own packets, in the set's order of preference. */
	const char *names[SRT_PATHS_MAX];
	unsigned npaths = srt_paths_names(&dev->paths, names, SRT_PATHS_MAX);
	len = 0;
	append(line, sizeof(line), &len, "softrnic: paths:");
	for (unsigned i = 0; i < npaths; i++) {
		struct srt_path_stats one;

		srt_paths_stats_of(&dev->paths, names[i], &one);
		append(line, sizeof(line), &len, " %s tx=%llu rx=%llu dropped=%llu broken=%llu", names[i],
		       (unsigned long long)one.tx_packets, (unsigned long long)one.rx_packets,
		       (unsigned long long)one.tx_dropped, (unsigned long long)one.rx_broken);
		if (one.rx_lost)
			append(line, sizeof(line), &len, " lost=%llu", (unsigned long long)one.rx_lost);
		if (one.tx_chunked || one.rx_chunked)
			append(line, sizeof(line), &len, " chunked_tx=%llu chunked_rx=%llu",
			       (unsigned long long)one.tx_chunked, (unsigned long long)one.rx_chunked);
	}
	append(line, sizeof(line), &len, "\n");
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
	srt_paths_close(&dev->paths);
	srt_capture_close(dev->capture);
	dev->capture = NULL;
	if (dev->rundir >= 0)
		close(dev->rundir);
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
	dev->faults = srt_faults_create(&cfg, srt_deliver_packet, dev);
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

/* The paths' tap (path.h): a packet as it left, to SOFTRNIC_PCAP. */
static void capture_sent(void *ctx, const struct srt_capture_hdr *h, const struct wire_piece *pc, unsigned n)
{
	srt_capture_packet(ctx, h, pc, n);
}

static struct srt_device *create_device(void)
{
	/* No device while a SOFTRNIC_* value is one the library does not
	 * understand (env_config.h: said on stderr, errno EINVAL). */
	struct srt_device *dev = srt_env_check() ? NULL : calloc(1, sizeof(*dev));
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
	dev->stats.dirfd = -1;
	/* The runtime directory, and in it first what dead processes of
	 * ours left (killed, or crashed: nothing removed their files). */
	dev->rundir = srt_runtime_dir_open(true);
	srt_stats_reclaim(dev->rundir);
	srt_paths_reclaim(dev->rundir);

	e = srt_paths_open(&dev->paths, err, sizeof(err));
	if (e) {
		fprintf(stderr, "softrnic: %s\n", err);
		goto fail;
	}
	const struct srt_udp *port = srt_paths_port(&dev->paths);
	srt_udp_gid(port, &dev->gid);
	dev->v6 = port->v6;
	if (port->v6) {
		/* Trade-off: the link monitor follows IPv4 addresses only;
		 * an IPv6 port stays ACTIVE whatever its link does. */
		dev->link.fd = -1;
		dev->link.ifname[0] = 0;
		dev->port.active = dev->port.admin_up = true;
	} else {
		srt_link_open(&dev->link, port->addr, &dev->port);
	}
	/* SOFTRNIC_PCAP, SOFTRNIC_FAULTS: asked for and not to be had
	 * (a file that cannot be created, a malformed setting) fails the
	 * open, as a bad SOFTRNIC_ADDR does, rather than run without. */
	e = srt_capture_from_env(&dev->capture, port->gso, err, sizeof(err));
	if (e) {
		fprintf(stderr, "softrnic: %s\n", err);
		goto fail;
	}
	if (dev->capture) {
		struct srt_path_tap tap = { .packet = capture_sent, .ctx = dev->capture };
		srt_paths_set_tap(&dev->paths, &tap);
	}
	e = open_faults(dev);
	if (e)
		goto fail;
	/* The host-local paths, unless the capture wants every packet on
	 * the socket or the environment says no (paths.h). */
	srt_paths_open_local(&dev->paths, dev->rundir, dev->faults != NULL);
	/* The AF_XDP port, if SOFTRNIC_XDP asks for it (xdp_port.h). */
	srt_paths_open_xdp(&dev->paths);

	dev->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dev->wake_fd < 0) {
		e = errno;
		fprintf(stderr, "softrnic: eventfd: %s\n", strerror(e));
		goto fail;
	}
	dev->ep_fd = srt_epoll_create();
	int wake[SRT_PATHS_MAX];
	unsigned nwake = srt_paths_wake_fds(&dev->paths, wake, SRT_PATHS_MAX);
	for (unsigned i = 0; dev->ep_fd >= 0 && i < nwake; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = wake[i] };
		if (srt_epoll_ctl(dev->ep_fd, EPOLL_CTL_ADD, wake[i], &ev) != 0)
			goto epoll_fail;
	}
	if (dev->ep_fd < 0) {
epoll_fail:
		e = errno;
		fprintf(stderr, "softrnic: epoll: %s\n", strerror(e));
		goto fail;
	}

	struct rnic_config cfg;
	rnic_config_default(&cfg);
	cfg.gid = dev->gid;
	cfg.max_mtu = smaller_mtu(cfg.max_mtu, port->active_mtu);
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
		.ctx = dev, .xmit = io_xmit, .cq_event = io_cq_event, .async_event = srt_device_async_event,
		.mcast = io_mcast, .tx_buffer = io_tx_buffer, .gsi_receive = io_gsi_receive,
		.persist = io_persist,
		/* Message-path reads joined per batch (receive_path.c). */
		.pull_batch = srt_pull_batch,
		/* Payloads by reference: safe because srt_unlock sends
		 * the queue (srt_paths_payload_ref says when). */
		.tx_payload_ref = srt_paths_payload_ref(&dev->paths),
		/* Region memory a program unmapped stays its own problem
		 * (mem_guard.h). */
		.mem_copy = srt_io_mem_copy, .mem_probe = srt_io_mem_probe,
		/* Small messages to a local peer as ring entries (fast.c). */
		.fast_send = srt_paths_fast_ok(&dev->paths) ? io_fast_send : NULL,
	};
	if ((e = srt_guard_install()) != 0)
		fprintf(stderr, "softrnic: no fault handler (%s): an unmapped region's page kills the process\n",
			strerror(e));
	dev->rnic = rnic_create(&cfg, &io);
	if (!dev->rnic) {
		e = errno ? errno : ENOMEM;
		fprintf(stderr, "softrnic: cannot create device: %s\n", strerror(e));
		goto fail;
	}

	/* The device works without published stats. */
	e = srt_stats_create(&dev->stats, dev->rundir, SRT_DEVICE_NAME, dev->gid.raw);
	if (e == EEXIST)
		fprintf(stderr, "softrnic: warning: no stats file: %s/" SRT_STATS_PREFIX "%d exists and is not a "
			"file of ours (left alone)\n", srt_runtime_dir_path(), (int)getpid());
	else if (e)
		fprintf(stderr, "softrnic: warning: cannot publish stats in %s: %s\n", srt_runtime_dir_path(),
			strerror(e));
	publish_stats(dev, srt_now());

	e = pthread_create(&dev->thread, NULL, srt_progress_main, dev);
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
		srt_capture_close_inherited(the_device->capture);
		srt_paths_close_inherited(&the_device->paths);
		srt_mcast_close_all(&the_device->mcast);
		srt_link_close(&the_device->link);
		close(the_device->wake_fd);
		close(the_device->ep_fd);
		if (the_device->rundir >= 0)
			close(the_device->rundir);
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
	srt_send_all_at_unlock(dev);
	srt_unlock(dev);
	publish_stats(dev, srt_now());
	if (!dev->exit_reported) {
		struct srt_progress_stats ps;
		srt_progress_stats(dev, &ps);
		print_stats_at_exit(dev, &ps);
	}
	destroy_device(dev);
}

/* Takes `m` within `ms` milliseconds, or gives up. */
static bool lock_within(pthread_mutex_t *m, long ms)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	return pthread_mutex_timedlock(m, &until) == 0;
}

/* A process that exits with its device open — every librdmacm program
 * (librdmacm never closes the device), a program that returns from main
 * without ibv_close_device — removes its stats file and ring now rather
 * than leave them for the next device of the user to reclaim, and
 * SOFTRNIC_STATS_AT_EXIT prints as at close.
 *
 * A destructor, so it runs after the program's atexit handlers (which may
 * close the device themselves: then there is nothing left to do) and
 * after the destructors of the libraries that use ours (librdmacm's).
 * Other threads still run, the progress thread among them: the device is
 * not destroyed and no thread is joined, the files are unlinked but stay
 * mapped, and the locks are only tried for a while (a thread that holds
 * the device lock, or exit() called with it held, must not hang the
 * exit: then the counters are the last ones published).  In a child of
 * fork() the device is the parent's (another owner): nothing is touched,
 * not even its locks, which may have been copied held. */
__attribute__((destructor)) static void device_at_exit(void)
{
	struct srt_device *dev = the_device;
	struct srt_progress_stats ps;

	if (!dev || dev->owner != getpid() || !lock_within(&open_lock, 100))
		return;
	dev = the_device;
	if (dev && dev->owner == getpid() && !dev->exit_reported) {
		dev->exit_reported = true;
		if (lock_within(&dev->lock, 200)) {
			progress_stats_locked(dev, &ps);
			/* What waits to leave (an ACK waiting to ride) goes now,
			 * and the counters include it. */
			publish_stats_and_unlock(dev, srt_now());
			print_stats_at_exit(dev, &ps);
		}
		srt_stats_unlink(&dev->stats);
		srt_paths_unlink(&dev->paths);
	}
	pthread_mutex_unlock(&open_lock);
}

void srt_qp_choose_path(struct srt_device *dev, struct rnic_qp *qp)
{
	srt_paths_choose_for_qp(&dev->paths, dev->rnic, qp);
}
