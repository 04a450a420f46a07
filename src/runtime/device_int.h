/*
 * device_int.h — the state of the process's device, shared by the
 * runtime's files; not a contract for anyone else (that is runtime.h).
 *
 * The runtime is one rnic driven by real I/O, in four parts:
 *   device.c        the device's life: open and close, the rnic's I/O
 *                   hooks (rnic_io), QP1's agent, the device's timers,
 *                   the published counters;
 *   send_path.c     what leaves and when: the device lock, whose unlock
 *                   sends what the rnic queued, and plain ACKs that ride
 *                   with the next send;
 *   receive_path.c  what arrives: every path read in rounds, each packet
 *                   checked (length, ICRC), shown to the capture, and
 *                   handed to the rnic (or to SOFTRNIC_FAULTS first);
 *   progress.c      who drives the rnic: an application thread that
 *                   polls in a loop reads the socket and runs the timers
 *                   itself, else the progress thread does.
 * Below them: paths.h, the set of ways packets leave and arrive (UDP,
 * the host-local ring and message paths, path.h) and the one place that
 * chooses among them.
 */
#ifndef SOFTRNIC_RUNTIME_DEVICE_INT_H
#define SOFTRNIC_RUNTIME_DEVICE_INT_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "runtime/faults.h"
#include "runtime/link_monitor.h"
#include "runtime/mcast.h"
#include "runtime/runtime.h"
#include "runtime/stats_file.h"
#include "runtime/capture.h"
#include "runtime/paths.h"

#define SRT_MAX_HOOKS 64
#define SRT_STATS_PERIOD_NS (100ull * 1000 * 1000)

struct srt_hook_slot {
	bool used;
	struct srt_hooks hooks;
};

/* The reader of a message-path payload (receive_path.c). */
struct srt_remote_payload {
	struct rnic_rx_remote base;
	const struct srt_local_remote *desc;
	uint32_t nseg;
	const uint8_t *inline_data;     /* carried in the ring: NULL if described */
	uint32_t inline_len;
};

struct srt_device {
	pthread_mutex_t lock;           /* the device lock: guards rnic, hooks */
	struct rnic *rnic;
	struct srt_paths paths;         /* how packets leave and arrive (paths.h) */
	bool v6;                        /* the port is IPv6 (for ICRCs) */
	/* SOFTRNIC_PCAP (capture.h): every packet sent (a tap on the
	 * paths) and received (receive_path.c); NULL: off. */
	struct srt_capture *capture;
	struct srt_mcast mcast;         /* group sockets (mcast.h) */
	struct rnic_gid gid;
	int wake_fd;                    /* eventfd: srt_kick and shutdown */
	/* The progress thread waits on ep_fd, which holds the paths' wake
	 * descriptors (the UDP socket) only while no application thread
	 * reads them (app_polling false); toggled with epoll_ctl under the
	 * device lock, so handing them over never wakes the thread. */
	int ep_fd;
	bool app_polling;               /* written under the lock (atomic) */
	/* Under the lock: the queued plain ACKs may wait for company
	 * (SRT_ACK_RIDE_NS) since ride_since_ns.  Set only when the
	 * progress thread is sure to run before long and send them: by a
	 * polling application thread (the progress thread then wakes within
	 * handoff_ns), or by the progress thread itself, which then
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
	/* How long the thread that has the socket may stay away before the
	 * progress thread takes it back (progress.c, SRT_POLL_HANDOFF_MAX_NS;
	 * atomic).  poll_watch_wakes: the progress thread's wake-ups that
	 * found it still polling (atomic, read by stats). */
	uint64_t handoff_ns;
	uint64_t poll_watch_wakes;
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

	/* The user's runtime directory (runtime_dir.h), open for the
	 * device's life: its stats file and ring live there.  -1: none (it
	 * was refused), and so neither. */
	int rundir;
	bool exit_reported;             /* device_at_exit ran (open_lock) */
	/* Written by the progress thread only. */
	struct srt_stats_writer stats;
	uint64_t last_publish_ns;
	/* Under the lock (whoever reads the socket). */
	uint64_t rx_drop_bad_icrc;
	uint64_t rx_drop_malformed;     /* truncated or shorter than BTH+ICRC */
	uint64_t rx_icrc_id_recovered;  /* accepted with a non-zero IPv4 ID   */
	struct srt_rx_batch batch;
	/* The readers of the batch's message-path payloads, one per packet
	 * (receive_path.c): the rnic may use them until rnic_receive_end. */
	struct srt_remote_payload remote[SRT_RX_PKTS];
	/* The port follows the interface's link (link_monitor.h): `link` is
	 * the progress thread's, `port` is read and written under the lock. */
	struct srt_link link;
	struct srt_link_state port;
	/* QP1's owner (srt_set_agent), under the lock; MADs that arrive
	 * while there is none are counted here. */
	struct srt_agent agent;
	uint64_t rx_mad_no_agent;
	/* SOFTRNIC_FAULTS (faults.h), under the lock; NULL: off. */
	struct srt_faults *faults;
};

/* ---- device.c ------------------------------------------------------------ */

/* Lock held: the earliest timer of the rnic, the agent and the
 * held-back packets (SOFTRNIC_FAULTS); fire what is due at `now`. */
uint64_t srt_device_deadline(const struct srt_device *dev);
void srt_device_advance(struct srt_device *dev, uint64_t now);
/* Lock held: an async event (a port event) to every opener's hooks. */
void srt_device_async_event(void *ctx, enum ibv_event_type type, void *user_obj);
/* The progress thread's periodic refresh of the published counters. */
void srt_publish_stats_soon(struct srt_device *dev, uint64_t now);

/* ---- send_path.c ---------------------------------------------------------- */

/* Lock held: when the plain ACKs waiting in the transmit queue must
 * leave (UINT64_MAX: nothing waits). */
uint64_t srt_ride_deadline(struct srt_device *dev, uint64_t now);
/* Lock held, by a thread that may not come back soon: nothing waits. */
void srt_send_all_at_unlock(struct srt_device *dev);

/* ---- receive_path.c -------------------------------------------------------- */

/* rnic_io.pull_batch: the message-path reads the rnic put off, joined
 * (srt_local_pull_many). */
void srt_pull_batch(void *ctx, struct rnic_pull *pulls, unsigned n);
/* One received packet to the ICRC check and the rnic (also
 * SOFTRNIC_FAULTS' delivery function). */
void srt_deliver_packet(void *ctx, const struct srt_rx_pkt *p, uint64_t now);
/* Lock held: read and deliver what waits on the device's paths
 * (may_skip: a polling thread, which may leave the paths whose receive is
 * a system call for later while a cheap one is active).  Returns the
 * packets read. */
int srt_receive_packets(struct srt_device *dev, bool may_skip, uint64_t now);
/* Lock held: the same for a multicast group's socket (mcast.h). */
int srt_receive_group(struct srt_device *dev, struct srt_udp *group, uint64_t now);

/* ---- progress.c ------------------------------------------------------------ */

void *srt_progress_main(void *arg);

/* The device's epoll set by the system calls, not libc's functions: under
 * a preload library (softrnic's or rdma-core's librspreload.so) libc's
 * epoll_* are replaced by epoll over rsockets, which the progress thread
 * must not sleep in. */
static inline int srt_epoll_create(void)
{
	return (int)syscall(SYS_epoll_create1, EPOLL_CLOEXEC);
}

static inline int srt_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	return (int)syscall(SYS_epoll_ctl, epfd, op, fd, ev);
}

#endif
