/*
 * progress.c — who drives the rnic (device_int.h has the runtime's
 * parts; runtime.h, "Who reads the socket", the contract).
 *
 * An application thread that polls a CQ in a loop, or posts, reads the
 * socket and runs the timers itself (srt_poll_cq, drive_from_app), and
 * the socket is taken out of the progress thread's epoll set
 * (take_socket).  When the program stops polling — it arms a CQ, sleeps,
 * or simply stays away for SRT_POLL_HANDOFF_NS (longer after a long
 * streak of polling: SRT_POLL_HANDOFF_MAX_NS) — the socket goes back
 * (hand_back) and the progress thread (srt_progress_main) sleeps in
 * ppoll on it, an eventfd (srt_kick, shutdown), the link watch and the
 * multicast groups, until a packet, a timer or the stats refresh is due;
 * after a packet it spins a while when a CPU is free.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cpu_idle.h"
#include "runtime/device_int.h"
#include "runtime/local_path.h"

/* An application thread that polls in a loop reads the socket itself
 * (runtime.h); if it has neither polled nor posted for this long, the
 * progress thread takes the socket back.  Trade-off: a program that
 * stops polling without arming a notification (it spins on memory, say)
 * gets its packets this much later; shorter means more idle wake-ups of
 * the progress thread. */
#define SRT_POLL_HANDOFF_NS (200ull * 1000)
/* While a thread polls, the progress thread wakes when that time is up
 * to see whether the program still polls; each time it finds it does,
 * the time doubles, up to this (dev->handoff_ns), and it starts again
 * from SRT_POLL_HANDOFF_NS when it ran out (a program that went away
 * without a word; one that says so, hand_back, keeps it: a ping-pong
 * hands the socket back after every late answer).
 * Each of those wake-ups takes a CPU from a spinning program: on 2 cores
 * with both sides of ib_send_lat busy-polling, a wake every 200 us gave
 * 5 500-7 900 context switches per process per 100 000 round trips and
 * a mean round trip two to three times the median; with the backoff,
 * 770-930 context switches and a mean 1.6-1.8 times the median
 * (docs/performance.md).  Trade-off: a program that polled for a long
 * while and then stops without a word gets its packets, and its riding
 * ACKs leave, up to 1.6 ms later (still far below a peer's retransmit
 * timer). */
#define SRT_POLL_HANDOFF_MAX_NS (1600ull * 1000)
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

/* ---- who reads the socket (runtime.h) --------------------------------------- */

/* The paths' wake descriptors (the UDP socket) to the progress thread's
 * epoll set (listen) or out of it (an application thread reads them). */
static void socket_to_thread(struct srt_device *dev, bool listen)
{
	int fds[SRT_PATHS_MAX];
	unsigned n = srt_paths_wake_fds(&dev->paths, fds, SRT_PATHS_MAX);

	for (unsigned i = 0; i < n; i++) {
		struct epoll_event ev = { .events = listen ? EPOLLIN : 0, .data.fd = fds[i] };
		(void)srt_epoll_ctl(dev->ep_fd, EPOLL_CTL_MOD, fds[i], &ev);
	}
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
	if (srt_device_deadline(dev) < __atomic_load_n(&dev->thread_wake_ns, __ATOMIC_ACQUIRE))
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
	 * Rare: while polling goes on, the thread wakes within the
	 * hand-off time anyway. */
	if (__atomic_load_n(&dev->thread_wake_ns, __ATOMIC_ACQUIRE) >
	    now + __atomic_load_n(&dev->handoff_ns, __ATOMIC_RELAXED)) {
		wake_thread(dev);
		dev->takeover_wakes++;
	}
}

/* Lock held: an application thread found its CQ empty; receive what is
 * waiting and fire due timers in its place. */
static void drive_from_app(struct srt_device *dev, uint64_t now)
{
	/* The progress thread wakes within dev->handoff_ns (at most
	 * SRT_POLL_HANDOFF_MAX_NS) while this thread polls: the ACKs made
	 * here may ride (SRT_ACK_RIDE_NS). */
	if (dev->app_polling)
		dev->acks_may_ride = true;
	dev->rx_by_app += (uint64_t)srt_receive_packets(dev, true, now);
	if (now >= dev->app_timer_scan_ns) {
		uint64_t deadline = srt_device_deadline(dev);
		if (deadline <= now) {
			srt_device_advance(dev, now);
			deadline = srt_device_deadline(dev);
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
		 * wait the hand-off time; measured 300 us per request in
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
		 * the socket back after the hand-off time (handoff_ns). */
		if (!dev->keeps_polling)
			hand_back(dev);
		else if (looping)
			take_socket(dev, now);
		dev->judge_gap = true;
		dev->app_empty_since_ns = 0;
	} else if (!dev->app_empty_since_ns || !looping) {
		/* A streak is polls in a loop: one that comes after the
		 * program was away (asleep in poll(), say) starts a new one.
		 * Else the first empty poll after a sleep yielded, and a
		 * yield on a busy 2-core machine can cost a time slice:
		 * 1.7 ms per request of redis-server over rsockets. */
		dev->app_empty_since_ns = now;
	} else {
		yield = now - dev->app_empty_since_ns >= SRT_POLL_YIELD_AFTER_NS;
	}
	/* An empty poll that received nothing took a fraction of a
	 * microsecond: its start is close enough to its end (a busy poller
	 * saves a clock read per turn). */
	bool quick = got == 0 && !yield && dev->rx_by_app == rx_before && !srt_paths_queued(&dev->paths)->n;
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
	srt_send_all_at_unlock(dev);
	srt_unlock(dev);
}

int srt_req_notify_cq(struct srt_device *dev, struct rnic_cq *cq, bool solicited_only)
{
	int ret;

	srt_lock(dev);
	ret = rnic_cq_req_notify(cq, solicited_only);
	hand_back(dev);         /* the program is about to sleep */
	dev->app_empty_since_ns = 0;
	srt_send_all_at_unlock(dev);
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
		wake = srt_device_deadline(dev) < __atomic_load_n(&dev->thread_wake_ns, __ATOMIC_ACQUIRE);
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
		srt_device_async_event(dev, now.active ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR, NULL);
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
		if (srt_paths_rx_pending(&dev->paths))
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

void *srt_progress_main(void *arg)
{
	struct srt_device *dev = arg;
	sigset_t all;

	/* Signals belong to the application's threads; not the faults of
	 * this thread's own accesses, which the kernel delivers here or,
	 * when blocked, turns into the process's death (mem_guard.h catches
	 * a region's pages gone under a copy). */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	ask_short_slice();

	/* The poll set, rebuilt under the lock (multicast groups change). */
	struct pollfd fds[3 + SRT_MCAST_MAX];
	struct srt_udp *group[SRT_MCAST_MAX];
	int ngroups = 0;
	bool must_lock = true;          /* first round, or something happened */
	bool socket_ready = true;       /* ppoll said the socket (ep_fd) is readable, or read it anyway */
	bool ring_active = false;       /* a cheap path carried packets lately (SRT_PATH_ACTIVE_NS) */
	unsigned spin_turns = 0;
	uint64_t socket_empty_ns = 0;   /* spin_wait's last look found the socket empty */
	uint64_t last_rx_ns = 0;        /* this thread's last packet */
	struct srt_cpu_idle cpus;

	srt_cpu_idle_open(&cpus);
	__atomic_store_n(&dev->handoff_ns, SRT_POLL_HANDOFF_NS, __ATOMIC_RELAXED);
	sem_post(&dev->thread_ready);

	while (!__atomic_load_n(&dev->stopping, __ATOMIC_ACQUIRE)) {
		/* app_poll_ns first: then it is not later than now. */
		uint64_t poll_ns = __atomic_load_n(&dev->app_poll_ns, __ATOMIC_ACQUIRE);
		uint64_t now = srt_now();
		uint64_t wake_at;
		bool spin = false;
		bool stats_due = now - dev->last_publish_ns >= SRT_STATS_PERIOD_NS;

		__atomic_fetch_add(&dev->thread_wakeups, 1, __ATOMIC_RELAXED);  /* read by stats */
		uint64_t handoff_ns = __atomic_load_n(&dev->handoff_ns, __ATOMIC_RELAXED);
		if (!must_lock && __atomic_load_n(&dev->app_polling, __ATOMIC_ACQUIRE) && now - poll_ns < handoff_ns) {
			/* An application thread polls: it reads the socket and
			 * fires the timers.  Leave the lock to it: waiting for
			 * the lock behind a busy poller makes each of its
			 * unlocks wake this thread, which mostly finds the lock
			 * taken again (measured in ib_write_bw's client: 9000
			 * futex calls a second and a fifth of a core). */
			if (now >= __atomic_load_n(&dev->thread_wake_ns, __ATOMIC_RELAXED)) {
				/* Woken by the deadline, not a kick: the program
				 * still polls, look again later (SRT_POLL_HANDOFF_MAX_NS). */
				__atomic_fetch_add(&dev->poll_watch_wakes, 1, __ATOMIC_RELAXED);
				if (handoff_ns < SRT_POLL_HANDOFF_MAX_NS) {
					handoff_ns *= 2;
					__atomic_store_n(&dev->handoff_ns, handoff_ns, __ATOMIC_RELAXED);
				}
			}
			wake_at = poll_ns + handoff_ns;
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
						       __atomic_load_n(&dev->handoff_ns, __ATOMIC_RELAXED)) {
				__atomic_store_n(&dev->app_polling, false, __ATOMIC_RELEASE);
				__atomic_store_n(&dev->handoff_ns, SRT_POLL_HANDOFF_NS, __ATOMIC_RELAXED);
				socket_to_thread(dev, true);
				dev->handoff_timeouts++;
			}
			if (!dev->app_polling) {
				/* A look that found the socket empty counts as a read
				 * (srt_paths_skip_syscall). */
				if (socket_empty_ns > dev->paths.last_syscall_read_ns)
					dev->paths.last_syscall_read_ns = socket_empty_ns;
				int got = srt_receive_packets(dev, !socket_ready, now);
				dev->rx_by_thread += (uint64_t)got;
				/* The spin counts from the end of the batch: a batch
				 * of message-path WRITEs reads up to 1 MiB (pull.c),
				 * 50-80 us here, and its sender answers the ACK sent
				 * at its end.  Counted from the start, the spin was
				 * over before that answer came, and the thread slept
				 * in the middle of a stream. */
				if (got > 0)
					last_rx_ns = now = srt_now();
				spin = now - last_rx_ns < SRT_THREAD_SPIN_NS && srt_cpu_idle(&cpus, now);
				ring_active = srt_paths_cheap_active(&dev->paths, now);
			}
			if (srt_device_deadline(dev) <= now)
				srt_device_advance(dev, now);
			uint64_t deadline = srt_device_deadline(dev);
			ngroups = srt_mcast_poll_set(&dev->mcast, fds + 2, group, SRT_MCAST_MAX);

			/* The next stats refresh (a due one is published below). */
			wake_at = dev->last_publish_ns + SRT_STATS_PERIOD_NS;
			if (wake_at <= now || wake_at > now + SRT_STATS_PERIOD_NS)
				wake_at = now + SRT_STATS_PERIOD_NS;
			if (deadline < wake_at)
				wake_at = deadline;
			if (dev->app_polling) {
				uint64_t handoff = __atomic_load_n(&dev->app_poll_ns, __ATOMIC_ACQUIRE) +
						   __atomic_load_n(&dev->handoff_ns, __ATOMIC_RELAXED);
				if (handoff < wake_at)
					wake_at = handoff;
			}
			/* ACKs this thread made wait for the application's next
			 * send (a program that answers what it received, or one
			 * that waits on memory for a WRITE and then writes
			 * back); then this thread wakes when they must leave. */
			uint64_t ride = srt_ride_deadline(dev, now);
			dev->acks_may_ride = ride > now && ride != UINT64_MAX;
			if (dev->acks_may_ride && ride < wake_at)
				wake_at = ride;
			/* Read by posting threads under the lock (srt_post_send). */
			__atomic_store_n(&dev->thread_wake_ns, wake_at, __ATOMIC_RELEASE);
			srt_unlock(dev);
		}

		if (stats_due)
			srt_publish_stats_soon(dev, now);

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
		bool local_sleep = wait && srt_paths_can_arm(&dev->paths) &&
				   !__atomic_load_n(&dev->app_polling, __ATOMIC_ACQUIRE);
		if (local_sleep && !srt_paths_arm(&dev->paths, true)) {
			wait = 0;
			local_sleep = false;
			must_lock = true;
		}
		struct timespec ts = { .tv_sec = (time_t)(wait / 1000000000ull),
				       .tv_nsec = (long)(wait % 1000000000ull) };
		int ready = ppoll(fds, (nfds_t)nfds, &ts, NULL);
		if (local_sleep) {
			srt_paths_arm(&dev->paths, false);
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
					srt_receive_group(dev, group[i], srt_now());
			srt_send_all_at_unlock(dev);
			srt_unlock(dev);
		}
	}
	srt_cpu_idle_close(&cpus);
	return NULL;
}
