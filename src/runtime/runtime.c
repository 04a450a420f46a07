/*
 * runtime.c — the process's device: one rnic driven by a UDP port, a
 * progress thread and the device lock (the contract is runtime.h).
 *
 * One device per process, created by the first srt_open and destroyed when
 * the last opener calls srt_close.  The progress thread sleeps in ppoll on
 * the socket and an eventfd (srt_kick, shutdown) until a packet arrives,
 * the rnic's next timer is due, or the 100 ms stats refresh; then it
 * verifies ICRCs (outside the lock), feeds packets to the rnic and fires
 * timers (inside it).
 *
 * The runtime is the non-deterministic shell around the deterministic
 * rnic: it reads the clock, seeds the rnic from pid and time, and owns
 * every system call.
 */
#include "runtime/runtime.h"

#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "runtime/icrc_recv.h"
#include "runtime/stats_file.h"
#include "runtime/udp_port.h"

#define SRT_DEVICE_NAME "softrnic0"
#define SRT_MAX_HOOKS 64
#define SRT_STATS_PERIOD_NS (100ull * 1000 * 1000)
/* Batches read per wake-up before timers get another look. */
#define SRT_RX_BATCHES_PER_WAKE 8

struct srt_hook_slot {
	bool used;
	struct srt_hooks hooks;
};

struct srt_device {
	pthread_mutex_t lock;           /* the device lock: guards rnic, hooks */
	struct rnic *rnic;
	struct srt_udp udp;
	struct rnic_gid gid;
	int wake_fd;                    /* eventfd: srt_kick and shutdown */
	pthread_t thread;
	int stopping;                   /* atomic */
	int refcount;                   /* guarded by open_lock */
	pid_t owner;                    /* process that created the device */
	struct srt_hook_slot hooks[SRT_MAX_HOOKS];

	/* Written by the progress thread only. */
	struct srt_stats_writer stats;
	uint64_t last_publish_ns;
	uint64_t rx_drop_bad_icrc;
	uint64_t rx_drop_malformed;     /* truncated or shorter than BTH+ICRC */
	uint64_t rx_icrc_id_recovered;  /* accepted with a non-zero IPv4 ID   */
	struct srt_rx_batch batch;
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
void srt_unlock(struct srt_device *dev) { pthread_mutex_unlock(&dev->lock); }
struct rnic *srt_rnic(struct srt_device *dev) { return dev->rnic; }
const struct rnic_gid *srt_gid(const struct srt_device *dev) { return &dev->gid; }
const char *srt_name(const struct srt_device *dev) { (void)dev; return SRT_DEVICE_NAME; }
enum ibv_mtu srt_active_mtu(const struct srt_device *dev) { return dev->udp.active_mtu; }

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

/* ---- rnic_io: called by the rnic with the device lock held ---------------- */

static void io_xmit(void *ctx, const struct rnic_tx *tx)
{
	struct srt_device *dev = ctx;
	/* Errors are counted in udp.tx_errors; RC retransmission recovers. */
	(void)srt_udp_send(&dev->udp, tx);
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

/* ---- progress thread ---------------------------------------------------- */

/* The rnic's counters plus the drops the runtime makes before the rnic
 * sees a packet. */
static void publish_stats(struct srt_device *dev, uint64_t now)
{
	struct rnic_counters c;

	srt_lock(dev);
	c = *rnic_counters(dev->rnic);
	srt_unlock(dev);
	c.rx_drop_bad_icrc += dev->rx_drop_bad_icrc;
	c.rx_drop_malformed += dev->rx_drop_malformed;
	srt_stats_publish(&dev->stats, &c, now);
	dev->last_publish_ns = now;
}

/* Check one datagram before the rnic sees it.  Returns true if it may be
 * delivered, and fills rx. */
static bool accept_datagram(struct srt_device *dev, const struct srt_rx_pkt *p, struct rnic_rx *rx)
{
	if (p->truncated || p->len < WIRE_BTH_LEN + WIRE_ICRC_LEN) {
		dev->rx_drop_malformed++;
		return false;
	}

	struct wire_ip ip;
	memset(&ip, 0, sizeof(ip));
	ip.version = 4;
	srt_ipv4_to_gid(p->src, &rx->src);
	memcpy(ip.src, rx->src.raw, 16);
	memcpy(ip.dst, dev->gid.raw, 16);

	int verdict = srt_icrc_verify_ipv4(&ip, p->sport, p->data, p->len, NULL);
	if (verdict == SRT_ICRC_BAD) {
		dev->rx_drop_bad_icrc++;
		return false;
	}
	if (verdict == SRT_ICRC_OK_ID)
		dev->rx_icrc_id_recovered++;

	rx->dst = dev->gid;
	rx->sport = p->sport;
	rx->ecn = p->tos & 3;
	rx->ib = p->data;
	rx->ib_len = p->len;
	return true;
}

/* Read and deliver what is waiting on the socket. */
static void receive_packets(struct srt_device *dev)
{
	for (int round = 0; round < SRT_RX_BATCHES_PER_WAKE; round++) {
		struct rnic_rx rx[SRT_RX_BATCH];
		int n = srt_udp_recv(&dev->udp, &dev->batch);
		int good = 0;

		if (n <= 0)
			return;
		for (int i = 0; i < n; i++)
			if (accept_datagram(dev, &dev->batch.pkt[i], &rx[good]))
				good++;
		if (good) {
			uint64_t now = srt_now();
			srt_lock(dev);
			for (int i = 0; i < good; i++)
				rnic_receive(dev->rnic, &rx[i], now);
			srt_unlock(dev);
		}
		if (n < SRT_RX_BATCH)
			return;
	}
}

static void drain_eventfd(int fd)
{
	uint64_t value;
	ssize_t n = read(fd, &value, sizeof(value));
	(void)n;
}

static void *progress_main(void *arg)
{
	struct srt_device *dev = arg;
	sigset_t all;

	/* Signals belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);

	while (!__atomic_load_n(&dev->stopping, __ATOMIC_ACQUIRE)) {
		uint64_t now = srt_now();
		uint64_t deadline;

		srt_lock(dev);
		if (rnic_next_deadline(dev->rnic) <= now)
			rnic_advance(dev->rnic, now);
		deadline = rnic_next_deadline(dev->rnic);
		srt_unlock(dev);

		if (now - dev->last_publish_ns >= SRT_STATS_PERIOD_NS)
			publish_stats(dev, now);

		uint64_t wait = dev->last_publish_ns + SRT_STATS_PERIOD_NS - now;
		if (wait > SRT_STATS_PERIOD_NS)
			wait = SRT_STATS_PERIOD_NS;
		if (deadline <= now)
			wait = 0;
		else if (deadline - now < wait)
			wait = deadline - now;

		struct timespec ts = { .tv_sec = (time_t)(wait / 1000000000ull),
				       .tv_nsec = (long)(wait % 1000000000ull) };
		struct pollfd fds[2] = {
			{ .fd = dev->udp.fd, .events = POLLIN },
			{ .fd = dev->wake_fd, .events = POLLIN },
		};
		int ready = ppoll(fds, 2, &ts, NULL);
		if (ready <= 0)
			continue;
		if (fds[1].revents & POLLIN)
			drain_eventfd(dev->wake_fd);
		if (fds[0].revents & POLLIN)
			receive_packets(dev);
	}
	return NULL;
}

/* ---- open / close --------------------------------------------------------- */

/* SOFTRNIC_STATS_AT_EXIT=1: when the device closes, print its non-zero
 * counters to stderr, so a short-lived program (a demo, a test) shows what
 * the NIC did without racing `softrnic stats` against its exit. */
static void print_stats_at_exit(const struct srt_device *dev)
{
	const char *want = getenv("SOFTRNIC_STATS_AT_EXIT");
	const struct srt_stats_file *f = dev->stats.map;

	if (!want || !*want || !strcmp(want, "0") || !f)
		return;
	fprintf(stderr, "softrnic: %s (pid %d) counters:", f->name, (int)getpid());
#define PRINT_NONZERO(name)                                                        \
	if (f->counters.name)                                                     \
		fprintf(stderr, " %s=%llu", #name, (unsigned long long)f->counters.name);
	RNIC_COUNTER_LIST(PRINT_NONZERO)
#undef PRINT_NONZERO
	fprintf(stderr, "\n");
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
	srt_udp_close(&dev->udp);
	if (dev->wake_fd >= 0)
		close(dev->wake_fd);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

static enum ibv_mtu smaller_mtu(enum ibv_mtu a, enum ibv_mtu b)
{
	return a < b ? a : b;
}

static struct srt_device *create_device(void)
{
	struct srt_device *dev = calloc(1, sizeof(*dev));
	char err[256];
	int e;

	if (!dev)
		return NULL;
	pthread_mutex_init(&dev->lock, NULL);
	dev->wake_fd = -1;
	dev->owner = getpid();
	dev->refcount = 1;

	e = srt_udp_open(&dev->udp, err, sizeof(err));
	if (e) {
		fprintf(stderr, "softrnic: %s\n", err);
		dev->udp.fd = -1;
		goto fail;
	}
	srt_udp_gid(&dev->udp, &dev->gid);

	dev->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dev->wake_fd < 0) {
		e = errno;
		fprintf(stderr, "softrnic: eventfd: %s\n", strerror(e));
		goto fail;
	}

	struct rnic_config cfg;
	rnic_config_default(&cfg);
	cfg.gid = dev->gid;
	cfg.max_mtu = smaller_mtu(cfg.max_mtu, dev->udp.active_mtu);
	/* Non-deterministic on purpose: QPNs and keys differ between runs. */
	cfg.seed = (uint32_t)getpid() * 2654435761u ^ (uint32_t)srt_now();
	struct rnic_io io = {
		.ctx = dev, .xmit = io_xmit, .cq_event = io_cq_event, .async_event = io_async_event,
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
		srt_udp_close(&the_device->udp);
		close(the_device->wake_fd);
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
	publish_stats(dev, srt_now());
	print_stats_at_exit(dev);
	destroy_device(dev);
}
