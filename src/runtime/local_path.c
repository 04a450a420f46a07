/*
 * local_path.c — the host-local path's rings (local_path.h says what and
 * why).
 *
 * One ring per receiving device: many producers (every local sender),
 * one consumer (the device, under its lock).  Producers take a robust
 * process-shared mutex — once for a run of packets to the same ring, not
 * per packet — and publish each entry by advancing `head`; a producer
 * that dies holding the mutex leaves it "owner dead", and the next one
 * takes it over (EOWNERDEAD).  The consumer hands the entries to the
 * receive path where they lie, and advances `tail` (lock-free) only when
 * they have been delivered (srt_local_recv_done).  So a packet is copied
 * twice, as with a socket but with no system call and no kernel: into
 * the ring, and out of it by the rnic (into the MR, or the receive WQE's
 * buffers).  A message-path entry (local_path.h) is copied once, by the
 * receiver's process_vm_readv from the sender's buffers after the
 * receiver's rnic has made its checks, or, sent alone, copied into the
 * entry and out of it (local_path.h: payloads in the ring); a message of
 * one MTU packet stays a packet (SRT_LOCAL_MSG_MIN_BYTES).  MRs in a
 * shared mapping would save the system call too, at the price of mapping
 * every registered buffer into every peer.
 *
 * The ICRC is computed only for a receiver that asks (its SOFTRNIC_FAULTS
 * is on: corruption is the one thing on this path that damages a packet,
 * and the ICRC is how the receive path catches it); otherwise the entry
 * says "no ICRC" and the receiver skips the check.  Memory does not flip
 * bits, and the CRC was two passes over every payload.
 *
 * A full ring drops the packet (a full NIC queue; RC retransmits).  A
 * ring whose owner died stays until the next device of the user opens
 * (remove_dead_rings) or its address is taken again; senders check a
 * cached ring's owner and inode every SRT_LOCAL_RECHECK_NS and drop it
 * when either changed.  The rings are files of the user's runtime
 * directory (runtime_dir.h), opened only through its helpers.
 */
#include "runtime/local_path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "runtime/mem_guard.h"
#include "runtime/runtime_dir.h"
#include "runtime/share_steer.h"
#include "runtime/udp_port.h"
#include "wire/mad.h"

#define RING_MAGIC 0x534c5231u          /* "SLR1" */
#define RING_VERSION 5u
/* Entries are packed, each 64-byte aligned, in an area of this size:
 * about 2000 full-size packets, or 100 000 ACKs.  Packed, a ping-pong's
 * ACK and answer share cache lines and pages; slots of the largest
 * packet's size gave every packet a page of its own, a TLB miss on each
 * side.
 *
 * RING_POPULATE: the ring's memory is allocated when it is created
 * (posix_fallocate), and the owner's mapping and each sender's are
 * populated when made (MAP_POPULATE), so the ring costs its 8 MiB of
 * shared memory from the start, not as traffic first reaches each page
 * (about 3 ms more per device open here).  Touched as used, every new
 * page was a page fault for the writer and another for the reader, one
 * per 32 round trips of a 2-byte ping-pong (an ACK and a SEND, 128
 * bytes, per direction), and each fault stalled that trip 15-20 us on
 * the VMs measured: the mean round trip of ib_send_lat was twice its
 * median over the first 65 000 trips, until the ring had wrapped once
 * (docs/performance.md). */
#define RING_AREA_BYTES (8u << 20)
#define ENTRY_ALIGN 64u
#define ENTRY_MAX_BYTES 4352u           /* entry header + the largest RoCE packet */
#define SRT_LOCAL_RECHECK_NS 200000000ull
#define PEER_CACHE 32u
#define SRT_LOCAL_PUBLISH_EVERY 4u

struct ring_entry {
	uint32_t len;
	uint32_t src;                   /* IPv4, network order */
	uint16_t sport;
	uint8_t tos, ttl;
	uint8_t flags;                  /* ENTRY_NO_ICRC */
	uint8_t pad[3];
	uint8_t data[];
};
#define ENTRY_NO_ICRC 1u                /* the ICRC bytes are not computed */
#define ENTRY_WRAP 2u                   /* no packet: the next entry is at the area's start */
#define ENTRY_REMOTE 4u                 /* a message-path packet: headers, then its
                                           payload's description (srt_local_remote) */
#define ENTRY_INLINE 8u                 /* with ENTRY_REMOTE: the description says
                                           only the length, and the payload follows
                                           it in the entry (inline_at) */
#define ENTRY_ALONE 16u                 /* the sender's rnic_tx.alone */
#define ENTRY_DATA (ENTRY_MAX_BYTES - sizeof(struct ring_entry))
/* The largest payload an inline entry may carry (a sender's
 * SOFTRNIC_LOCAL_INLINE_MAX is held to it): a receiver drops as broken
 * any entry that claims more. */
#define ENTRY_INLINE_CAP (1u << 20)
/* An inline entry is written only while the ring stays at most this full
 * with it; past that the payload is described, as before: a stream of
 * large messages then cannot fill the ring with copies, and the packets
 * of other senders still find room. */
#define INLINE_RING_SHARE (RING_AREA_BYTES / 2)

/* The bytes an entry of len bytes of packet takes. */
static uint32_t entry_bytes(uint32_t len)
{
	return ((uint32_t)sizeof(struct ring_entry) + len + ENTRY_ALIGN - 1) & ~(ENTRY_ALIGN - 1);
}

struct ring {
	uint32_t magic, version;
	uint32_t owner_pid, shared;
	uint32_t area_bytes, entry_max;
	uint32_t wants_icrc;                    /* the receiver checks ICRCs (faults on) */
	/* The message path (srt_local_message_path): the owner can read
	 * and be read by its peers' process_vm_readv, and the address of a
	 * word holding `cookie` in its memory, which a peer reads to prove
	 * it. */
	uint32_t msg_ok;
	uint64_t probe_addr, cookie;
	pthread_mutex_t lock;                   /* producers */
	_Alignas(64) _Atomic uint64_t head;     /* byte position of the next entry to write */
	_Alignas(64) _Atomic uint64_t tail;     /* byte position of the next entry to read  */
	_Alignas(64) _Atomic uint32_t sleeping; /* the consumer's thread is about to sleep */
	_Alignas(64) uint8_t entries[];
};
#define RING_BYTES (sizeof(struct ring) + (size_t)RING_AREA_BYTES)

/* A destination we looked for: its ring, or none (negative entry). */
struct srt_local_peer {
	bool used;
	struct in_addr ip;
	unsigned slot;                  /* the QPN slot we looked up (the key) */
	unsigned ring_slot;             /* the slot of the ring found: slot, or 0
	                                   for an unshared address */
	struct ring *r;                 /* NULL: not local */
	ino_t ino;
	uint64_t checked_ns;
	bool ring_doorbell;
	uint32_t doorbell_qpn;
	uint64_t tail_seen;             /* the ring's tail when we last looked:
	                                   read again only when the ring looks
	                                   full (the line stays the consumer's) */
};

struct srt_local {
	struct ring *own;
	int dirfd;                      /* the runtime directory (runtime_dir.h), borrowed */
	char name[96];                  /* our ring's name in it */
	char path[PATH_MAX];            /* and its whole path (srt_local_file) */
	ino_t ino;
	struct in_addr addr;
	int udp_fd;                     /* doorbells leave from it */
	struct srt_local_peer peers[PEER_CACHE];
	unsigned next_victim;
	bool doorbells_due;
	struct srt_local_peer *held;    /* the peer whose ring's mutex we hold (srt_local_send) */
	uint64_t held_head;             /* its head as we wrote it, not yet published */
	unsigned held_unpublished;      /* entries written since the last publish */
	uint64_t rx_next;               /* tail once what srt_local_recv gave is delivered */
	bool msg_ok;                    /* we may use the message path */
	uint64_t cookie;                /* what a peer's probe reads (msg_ok) */
	uint32_t inline_max;            /* message-path payloads up to this go in
	                                   the ring (srt_local_inline_max) */
	/* Our pid, for the descriptions we write: glibc's getpid() is a
	 * system call, a fifth of a 64 KiB WRITE stream's sender once. */
	uint32_t pid;
	struct srt_local_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The network namespace we are in: an address means something only
 * within one, and programs in two namespaces (scripts/netns_test.sh,
 * scripts/congestion.sh) must meet through the network between them. */
static unsigned long netns_id(void)
{
	static unsigned long id;
	struct stat st;

	if (!id)
		id = stat("/proc/self/ns/net", &st) ? 1 : (unsigned long)st.st_ino;
	return id;
}

/* A ring's name in the runtime directory. */
static void ring_name(char *out, size_t cap, struct in_addr ip, unsigned slot)
{
	snprintf(out, cap, "softrnic-local-%u-%lx-%08x-%u", (unsigned)getuid(), netns_id(),
		 (unsigned)ntohl(ip.s_addr), slot);
}

bool srt_local_is_doorbell(const uint8_t *d, size_t len)
{
	return len == SRT_LOCAL_DOORBELL_LEN && d[0] == SRT_LOCAL_DOORBELL_OPCODE &&
	       ((uint32_t)d[8] << 24 | (uint32_t)d[9] << 16 | (uint32_t)d[10] << 8 | d[11]) ==
		       SRT_LOCAL_DOORBELL_MAGIC;
}

/* Removes the dead ring open as `fd` at `name` — but only that file.  A
 * process taking the address may replace it at any moment (unlink, then
 * create: srt_local_open), and an unlink by name could remove the new
 * owner's ring instead, which leaves that process reachable only over
 * UDP for its life.  So the file is first renamed out of the way and
 * unlinked only if it is the one judged dead; if it is not, it goes back
 * (link fails if the name was taken meanwhile: then it is superseded
 * anyway). */
static void remove_dead_ring(int dirfd, int fd, const char *name)
{
	char aside[96];
	struct stat dead, moved;

	snprintf(aside, sizeof(aside), "softrnic-gc-%u-%d", (unsigned)getuid(), (int)getpid());
	if (fstat(fd, &dead) || renameat(dirfd, name, dirfd, aside))
		return;
	if (fstatat(dirfd, aside, &moved, AT_SYMLINK_NOFOLLOW) || moved.st_ino != dead.st_ino)
		(void)linkat(dirfd, aside, dirfd, name, 0);
	unlinkat(dirfd, aside, 0);
}

/* Rings of this user's processes that died without closing (SIGKILL, a
 * crash) are removed when the next device opens: tmpfs keeps what their
 * senders had written.  Dead: the owner's pid runs no process of ours
 * (a pid reused by another user's process is no owner).  Each file is
 * opened as srt_open_owned does (no link followed, no FIFO waited on). */
static void remove_dead_rings(int dirfd)
{
	char prefix[48];
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	size_t n;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	n = (size_t)snprintf(prefix, sizeof(prefix), "softrnic-local-%u-", (unsigned)getuid());
	while ((de = readdir(d)) != NULL) {
		uint32_t hdr[3];

		if (strncmp(de->d_name, prefix, n))
			continue;
		fd = srt_open_owned(dirfd, de->d_name, O_RDONLY, geteuid());
		if (fd < 0)
			continue;
		if (pread(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) && hdr[0] == RING_MAGIC &&
		    !srt_process_runs_as((pid_t)hdr[2], geteuid()))
			remove_dead_ring(dirfd, fd, de->d_name);
		close(fd);
	}
	closedir(d);
}

void srt_local_remove_dead(int dirfd)
{
	if (dirfd >= 0)
		remove_dead_rings(dirfd);
}

/* May this process use the message path: can its peers (processes of
 * the same user) read its memory with process_vm_readv, and can it read
 * theirs?  Yama's ptrace_scope above 0 allows it only to ancestors; a
 * process that is not dumpable (setuid, or it said so) refuses it; a
 * seccomp filter may forbid the call itself (tried on ourselves). */
static bool memory_reachable(uint64_t cookie)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0;

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 1;
		fclose(f);
	}
	if (scope != 0 || prctl(PR_GET_DUMPABLE) != 1)
		return false;
	uint64_t got = 0;
	struct iovec dst = { &got, sizeof(got) }, src = { &cookie, sizeof(cookie) };
	return process_vm_readv(getpid(), &dst, 1, &src, 1, 0) == (ssize_t)sizeof(got) && got == cookie;
}

struct srt_local *srt_local_open(int dirfd, struct in_addr addr, unsigned slot, bool shared, bool wants_icrc,
				 int udp_fd)
{
	const char *env = getenv("SOFTRNIC_LOCAL");
	struct srt_local *l;
	pthread_mutexattr_t ma;
	struct stat st;
	int fd;

	if ((env && !strcmp(env, "0")) || dirfd < 0)
		return NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->dirfd = dirfd;
	l->addr = addr;
	l->udp_fd = udp_fd;
	/* The message path: not with SOFTRNIC_LOCAL=packets, nor when our
	 * SOFTRNIC_FAULTS must see every packet (wants_icrc). */
	l->cookie = ((uint64_t)getpid() << 32 | (uint64_t)(uintptr_t)l) ^ now_ns() ^ 0x9e3779b97f4a7c15ull;
	l->msg_ok = !(env && !strcmp(env, "packets")) && !wants_icrc && memory_reachable(l->cookie);
	l->inline_max = srt_local_inline_max();
	ring_name(l->name, sizeof(l->name), addr, slot);
	snprintf(l->path, sizeof(l->path), "%s/%s", srt_runtime_dir_path(), l->name);
	/* We hold the address (its socket is bound): a ring left by a
	 * process that had it before is stale, and srt_create_private
	 * replaces it (but no link or FIFO: then no ring). */
	fd = srt_create_private(dirfd, l->name, O_RDWR);
	/* The memory is taken now (RING_POPULATE): a /dev/shm without 8 MiB
	 * to spare (a container's 64 MiB, shared by many processes) means
	 * no ring, UDP as before, rather than a SIGBUS when traffic reaches
	 * a page tmpfs cannot give. */
	if (fd < 0 || posix_fallocate(fd, 0, (off_t)RING_BYTES) || fstat(fd, &st))
		goto fail_fd;
	l->own = mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	close(fd);
	fd = -1;
	if (l->own == MAP_FAILED)
		goto fail;
	l->ino = st.st_ino;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&l->own->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	l->own->version = RING_VERSION;
	l->pid = (uint32_t)getpid();
	l->own->owner_pid = l->pid;
	l->own->shared = shared;
	l->own->area_bytes = RING_AREA_BYTES;
	l->own->entry_max = ENTRY_MAX_BYTES;
	l->own->wants_icrc = wants_icrc;
	l->own->msg_ok = l->msg_ok;
	l->own->probe_addr = (uint64_t)(uintptr_t)&l->cookie;
	l->own->cookie = l->cookie;
	atomic_store(&l->own->head, 0);
	atomic_store(&l->own->tail, 0);
	atomic_store(&l->own->sleeping, 0);
	/* Last: a sender that sees the magic sees the rest. */
	__atomic_store_n(&l->own->magic, RING_MAGIC, __ATOMIC_RELEASE);
	return l;
fail_fd:
	if (fd < 0) {           /* nothing of ours was made */
		free(l);
		return NULL;
	}
	close(fd);
fail:
	unlinkat(dirfd, l->name, 0);
	free(l);
	return NULL;
}

static void send_doorbell(struct srt_local *l, struct srt_local_peer *p);
static void release_held(struct srt_local *l);

/* Drops a cached destination (its doorbell, if due, rung first). */
static void forget_peer(struct srt_local *l, struct srt_local_peer *p)
{
	if (p == l->held)
		release_held(l);
	send_doorbell(l, p);
	if (p->r)
		munmap(p->r, RING_BYTES);
	memset(p, 0, sizeof(*p));
}

void srt_local_unlink(struct srt_local *l)
{
	struct stat st;

	/* Only our own file: a successor may have replaced it already. */
	if (l && l->name[0] && !fstatat(l->dirfd, l->name, &st, AT_SYMLINK_NOFOLLOW) && st.st_ino == l->ino)
		unlinkat(l->dirfd, l->name, 0);
}

void srt_local_close(struct srt_local *l)
{
	if (!l)
		return;
	for (unsigned i = 0; i < PEER_CACHE; i++)
		forget_peer(l, &l->peers[i]);
	srt_local_unlink(l);
	munmap(l->own, RING_BYTES);
	free(l);
}

/* The ring `name` of dirfd if it is alive (its owner runs, the file is
 * whole, a regular file of ours); NULL otherwise. */
static struct ring *map_ring(int dirfd, const char *name, ino_t *ino)
{
	struct stat st;
	struct ring *r;
	int fd = srt_open_owned(dirfd, name, O_RDWR, geteuid());

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || (size_t)st.st_size != RING_BYTES) {
		close(fd);
		return NULL;
	}
	r = mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	close(fd);
	if (r == MAP_FAILED)
		return NULL;
	if (__atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) != RING_MAGIC || r->version != RING_VERSION ||
	    r->area_bytes != RING_AREA_BYTES || r->entry_max != ENTRY_MAX_BYTES ||
	    (kill((pid_t)r->owner_pid, 0) && errno == ESRCH)) {
		munmap(r, RING_BYTES);
		return NULL;
	}
	*ino = st.st_ino;
	return r;
}

/* Still the ring published at its name, by a live owner? */
static bool still_valid(const struct srt_local *l, const struct srt_local_peer *p)
{
	char name[96];
	struct stat st;

	ring_name(name, sizeof(name), p->ip, p->ring_slot);
	return !fstatat(l->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && st.st_ino == p->ino &&
	       !(kill((pid_t)p->r->owner_pid, 0) && errno == ESRCH);
}

/* Looks up the ring of (ip, QPN slot): on a shared address the slot's own
 * ring, else the address's only one (slot 0, not shared). */
static void look_up(const struct srt_local *l, struct srt_local_peer *p, struct in_addr ip, unsigned slot)
{
	char name[96];
	struct ring *r;
	ino_t ino;

	p->used = true;
	p->ip = ip;
	p->slot = slot;
	p->r = NULL;
	ring_name(name, sizeof(name), ip, slot);
	r = map_ring(l->dirfd, name, &ino);
	if (r && (r->shared || slot == 0)) {
		p->r = r;
		p->ino = ino;
		p->ring_slot = slot;
		return;
	}
	if (r)
		munmap(r, RING_BYTES);
	if (slot != 0) {        /* an unshared address: its one ring */
		ring_name(name, sizeof(name), ip, 0);
		r = map_ring(l->dirfd, name, &ino);
		if (r && !r->shared) {
			p->r = r;
			p->ino = ino;
			p->ring_slot = 0;
			return;
		}
		if (r)
			munmap(r, RING_BYTES);
	}
}

static struct srt_local_peer *find_peer(struct srt_local *l, struct in_addr ip, unsigned slot, uint64_t now)
{
	struct srt_local_peer *p;

	for (unsigned i = 0; i < PEER_CACHE; i++) {
		p = &l->peers[i];
		if (!p->used || p->ip.s_addr != ip.s_addr || p->slot != slot)
			continue;
		if (now - p->checked_ns < SRT_LOCAL_RECHECK_NS)
			return p;
		/* Time to check again (a negative entry: look again). */
		if (p->r && still_valid(l, p)) {
			p->checked_ns = now;
			return p;
		}
		forget_peer(l, p);
		look_up(l, p, ip, slot);
		p->checked_ns = now;
		return p;
	}
	p = &l->peers[l->next_victim++ % PEER_CACHE];
	forget_peer(l, p);
	look_up(l, p, ip, slot);
	p->checked_ns = now;
	return p;
}

static void lock_ring(struct ring *r)
{
	if (pthread_mutex_lock(&r->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&r->lock);     /* a producer died inside: the entry was not published */
}

static uint32_t dest_qpn(const uint8_t *bth)
{
	return (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];
}

/* srt_local_route and srt_local_route_now: `fresh` looks again whatever
 * the cache holds. */
static struct srt_local_peer *route(struct srt_local *l, struct in_addr dst, const uint8_t *bth, bool fresh)
{
	uint32_t dqpn = dest_qpn(bth);
	struct srt_local_peer *p;
	uint64_t now = now_ns();

	/* QP1's MADs keep to UDP: a shared address steers them by Service
	 * ID and comm ID (share_steer.h), which a ring name cannot. */
	if (!l || dqpn == WIRE_GSI_QPN)
		return NULL;
	p = find_peer(l, dst, dqpn >> SRT_SHARE_QPN_SHIFT, now);
	/* The cache may hold a process that had the address before (its
	 * ring, or none), for up to SRT_LOCAL_RECHECK_NS. */
	if (fresh && (!p->r || !still_valid(l, p))) {
		forget_peer(l, p);
		look_up(l, p, dst, dqpn >> SRT_SHARE_QPN_SHIFT);
		p->checked_ns = now;
	}
	if (p->r)
		p->doorbell_qpn = dqpn;
	return p->r ? p : NULL;
}

struct srt_local_peer *srt_local_route(struct srt_local *l, struct in_addr dst, const uint8_t *bth)
{
	return route(l, dst, bth, false);
}

struct srt_local_peer *srt_local_route_now(struct srt_local *l, struct in_addr dst, const uint8_t *bth)
{
	return route(l, dst, bth, true);
}

bool srt_local_wants_icrc(const struct srt_local_peer *p)
{
	return p->r->wants_icrc != 0;
}

/* Makes the entries written into the held ring visible to its consumer.
 * Once per run of packets (or per SRT_LOCAL_PUBLISH_EVERY): every store
 * to head takes the line from the consumer, which spins reading it. */
static void publish(struct srt_local *l)
{
	if (!l->held_unpublished)
		return;
	atomic_store_explicit(&l->held->r->head, l->held_head, memory_order_release);
	l->held_unpublished = 0;
}

/* Lets go of the ring whose mutex srt_local_send kept, after a Dekker
 * with srt_local_sleep: our head stores before its load, its sleeping
 * store before our load.  A sleeping receiver gets its doorbell at
 * srt_local_flush, one per sleep: the sender that sees the mark takes it
 * (an exchange), so the others that publish before the receiver is up
 * again do not ring too.  Until the receiver ran again, each flush of a
 * stream rang: 2 500-3 200 doorbells, each a sendto, in 20 000 64 KiB
 * WRITEs of ib_write_bw.  The receiver reads the whole ring once woken,
 * and a doorbell left over from an earlier sleep only wakes it early. */
static void release_held(struct srt_local *l)
{
	struct srt_local_peer *p = l->held;

	if (!p)
		return;
	publish(l);
	l->held = NULL;
	pthread_mutex_unlock(&p->r->lock);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&p->r->sleeping, memory_order_relaxed) &&
	    atomic_exchange_explicit(&p->r->sleeping, 0, memory_order_relaxed)) {
		p->ring_doorbell = true;
		l->doorbells_due = true;
	}
}

/* Room in p's ring for an entry of `bytes` (header and data), its mutex
 * held (kept for the packets that follow to the same ring, until
 * srt_local_flush); NULL when the ring is full, or would have less than
 * keep_free bytes free with it (then not counted as full: the caller has
 * a smaller entry to write instead).  commit_entry publishes it. */
static struct ring_entry *reserve_entry(struct srt_local *l, struct srt_local_peer *p, uint32_t bytes,
					uint32_t keep_free)
{
	struct ring *r = p->r;
	uint64_t head;

	if (l->held != p) {
		release_held(l);
		lock_ring(r);
		l->held = p;
		l->held_head = atomic_load_explicit(&r->head, memory_order_relaxed);
		l->held_unpublished = 0;
	}
	head = l->held_head;
	/* An entry does not wrap: one that would pass the area's end goes
	 * to its start, after a WRAP marker that fills the rest. */
	uint32_t need = entry_bytes(bytes), at = (uint32_t)(head % RING_AREA_BYTES);
	uint32_t skip = at + need > RING_AREA_BYTES ? RING_AREA_BYTES - at : 0;
	if (head + skip + need - p->tail_seen > RING_AREA_BYTES - keep_free) {
		p->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (head + skip + need - p->tail_seen > RING_AREA_BYTES - keep_free) {
			if (!keep_free)
				l->stats.tx_ring_full++;
			return NULL;
		}
	}
	if (skip) {
		((struct ring_entry *)(r->entries + at))->flags = ENTRY_WRAP;
		head += skip;
	}
	l->held_head = head;
	return (struct ring_entry *)(r->entries + head % RING_AREA_BYTES);
}

static void commit_entry(struct srt_local *l, struct ring_entry *e, uint32_t bytes, uint16_t sport, uint8_t tos,
			 uint8_t ttl, uint8_t flags)
{
	e->src = l->addr.s_addr;
	e->sport = sport;
	e->tos = tos;
	e->ttl = ttl;
	e->flags = flags;
	l->held_head += entry_bytes(bytes);
	/* A long run is published as it goes, so the consumer starts on
	 * the first packets while we copy the next. */
	if (++l->held_unpublished == SRT_LOCAL_PUBLISH_EVERY)
		publish(l);
	l->stats.tx_packets++;
}

/* The pieces, one after another, to `to`; the bytes copied, or 0 when a
 * page of a piece faulted (a payload in region memory, mem_guard.h). */
static uint32_t copy_pieces(uint8_t *to, const struct wire_piece *pc, unsigned n)
{
	uint32_t off = 0;

	for (unsigned i = 0; i < n; i++)
		off += (uint32_t)pc[i].len;
	return srt_guard_gather(to, pc, n) ? off : 0;
}

bool srt_local_send(struct srt_local *l, struct srt_local_peer *p, uint16_t sport, uint8_t tos, uint8_t ttl,
		    const struct wire_piece *pc, unsigned npc, uint32_t len, bool icrc, bool alone)
{
	struct ring_entry *e;

	if (len > ENTRY_DATA || !(e = reserve_entry(l, p, len, 0))) {
		if (len > ENTRY_DATA)
			l->stats.tx_ring_full++;
		return true;
	}
	uint32_t off = copy_pieces(e->data, pc, npc);
	if (!off)
		return false;   /* not committed: the entry's room stays free */
	e->len = off;
	commit_entry(l, e, off, sport, tos, ttl, (icrc ? 0 : ENTRY_NO_ICRC) | (alone ? ENTRY_ALONE : 0));
	return true;
}

/* Where a remote entry's description starts, after `len` bytes of
 * headers; and the entry's data bytes with nseg pieces. */
static uint32_t remote_at(uint32_t len)
{
	return (len + 7u) & ~7u;
}

static uint32_t remote_bytes(uint32_t len, uint32_t nseg)
{
	return remote_at(len) + (uint32_t)sizeof(struct srt_local_remote) + nseg * (uint32_t)sizeof(struct srt_local_seg);
}

/* A message-path entry's headers into e; where its description goes. */
static struct srt_local_remote *remote_entry(struct ring_entry *e, const uint8_t *hdr, uint32_t hdr_len)
{
	memcpy(e->data, hdr, hdr_len);
	e->len = hdr_len;
	return (struct srt_local_remote *)(void *)(e->data + remote_at(hdr_len));
}

/* Where an inline entry's payload starts in its data, after `len` bytes
 * of headers and the description: on a cache line of its own (entries
 * start on one), which the copies out of it run faster from. */
static uint32_t inline_at(uint32_t len)
{
	uint32_t from_entry = (uint32_t)sizeof(struct ring_entry) + remote_bytes(len, 0);

	return ((from_entry + ENTRY_ALIGN - 1) & ~(ENTRY_ALIGN - 1)) - (uint32_t)sizeof(struct ring_entry);
}

/* The payload into the ring itself, if it is short enough
 * (srt_local_inline_max) and the ring has room to spare; false: not
 * written, describe it instead. */
static bool send_inline(struct srt_local *l, struct srt_local_peer *p, uint16_t sport, uint8_t tos, uint8_t ttl,
			const uint8_t *hdr, uint32_t hdr_len, const struct wire_piece *vec, unsigned nvec)
{
	struct ring_entry *e;
	size_t total = 0;

	for (unsigned i = 0; i < nvec; i++)
		total += vec[i].len;
	if (!total || total > l->inline_max || hdr_len > ENTRY_DATA - sizeof(struct srt_local_remote))
		return false;
	uint32_t bytes = inline_at(hdr_len) + (uint32_t)total;
	if (!(e = reserve_entry(l, p, bytes, INLINE_RING_SHARE)))
		return false;
	struct srt_local_remote *d = remote_entry(e, hdr, hdr_len);
	d->pid = 0;
	d->nseg = 0;
	d->total = copy_pieces(e->data + inline_at(hdr_len), vec, nvec);
	if (!d->total)
		return false;   /* faulted: described instead, the reader finds out */
	commit_entry(l, e, bytes, sport, tos, ttl, ENTRY_NO_ICRC | ENTRY_REMOTE | ENTRY_INLINE);
	l->stats.tx_inline++;
	return true;
}

void srt_local_send_remote(struct srt_local *l, struct srt_local_peer *p, uint16_t sport, uint8_t tos, uint8_t ttl,
			   const uint8_t *hdr, uint32_t hdr_len, const struct wire_piece *vec, unsigned nvec,
			   bool alone)
{
	struct ring_entry *e;
	uint32_t bytes = remote_bytes(hdr_len, nvec);

	if (alone && send_inline(l, p, sport, tos, ttl, hdr, hdr_len, vec, nvec))
		return;
	if (nvec > SRT_LOCAL_REMOTE_SEGS || bytes > ENTRY_DATA || !(e = reserve_entry(l, p, bytes, 0))) {
		if (nvec > SRT_LOCAL_REMOTE_SEGS || bytes > ENTRY_DATA)
			l->stats.tx_ring_full++;
		return;
	}
	struct srt_local_remote *d = remote_entry(e, hdr, hdr_len);
	d->pid = l->pid;
	d->nseg = nvec;
	d->total = 0;
	for (unsigned i = 0; i < nvec; i++) {
		d->seg[i].addr = (uint64_t)(uintptr_t)vec[i].p;
		d->seg[i].len = vec[i].len;
		d->total += vec[i].len;
	}
	commit_entry(l, e, bytes, sport, tos, ttl, ENTRY_NO_ICRC | ENTRY_REMOTE);
}

/* A size from the environment, `dflt` when unset or outside [lo, hi]. */
static uint32_t env_bytes(const char *name, uint32_t dflt, unsigned long lo, unsigned long hi)
{
	const char *env = getenv(name);
	char *end;
	unsigned long v;

	if (!env || !*env)
		return dflt;
	v = strtoul(env, &end, 0);
	if (*end || v < lo || v > hi)
		return dflt;
	return (uint32_t)v;
}

uint32_t srt_local_message_min(void)
{
	return env_bytes("SOFTRNIC_LOCAL_MSG_MIN", SRT_LOCAL_MSG_MIN_BYTES, 4096, 1ul << 30);
}

uint32_t srt_local_inline_max(void)
{
	return env_bytes("SOFTRNIC_LOCAL_INLINE_MAX", SRT_LOCAL_INLINE_MAX_BYTES, 0, ENTRY_INLINE_CAP);
}

int srt_local_pull_inline(const uint8_t *src, uint32_t len, const struct iovec *dst, unsigned n)
{
	size_t want = 0;

	for (unsigned i = 0; i < n; i++)
		want += dst[i].iov_len;
	if (want != len)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (!srt_guard_copy(dst[i].iov_base, src, dst[i].iov_len))
			return -EFAULT;         /* our region's page went away */
		src += dst[i].iov_len;
	}
	return 0;
}

int srt_local_pull(const struct srt_local_remote *d, uint32_t nseg, const struct iovec *dst, unsigned n)
{
	struct iovec src[SRT_LOCAL_REMOTE_SEGS];
	size_t want = 0, total = 0;

	if (nseg > SRT_LOCAL_REMOTE_SEGS)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		want += dst[i].iov_len;
	for (uint32_t i = 0; i < nseg; i++) {
		src[i] = (struct iovec){ (void *)(uintptr_t)d->seg[i].addr, (size_t)d->seg[i].len };
		total += src[i].iov_len;
	}
	if (total != want)
		return -EINVAL;
	/* One system call, however the two sides' pieces fall.  A transfer
	 * that stops short (a page the sender unmapped) is a failure. */
	ssize_t got = process_vm_readv((pid_t)d->pid, dst, n, src, nseg, 0);
	if (got < 0)
		return -errno;
	return (size_t)got == want ? 0 : -EFAULT;
}

/* The most pieces one process_vm_readv takes on either side (the
 * kernel's UIO_MAXIOV). */
#define PULL_MAX_IOV 1024u

void srt_local_pull_many(struct srt_local_pull *pulls, unsigned n)
{
	struct iovec dst[PULL_MAX_IOV], src[PULL_MAX_IOV];
	size_t end[PULL_MAX_IOV];       /* bytes read once payload k is in */
	unsigned i = 0;

	for (unsigned k = 0; k < n; k++)
		pulls[k].ok = false;
	while (i < n) {
		unsigned j = i, nd = 0, ns = 0;
		size_t bytes = 0;
		uint32_t pid = pulls[i].desc->pid;
		bool bad = false;       /* pulls[j] is not to be read */

		/* A run of one sender's payloads that fits one call.  Each
		 * description is read once: the sender can still write it. */
		while (j < n && nd < PULL_MAX_IOV) {
			const struct srt_local_remote *d = pulls[j].desc;
			uint32_t nseg = pulls[j].nseg;
			size_t total = 0;

			if (j > i && (d->pid != pid || ns + nseg > PULL_MAX_IOV))
				break;
			if (nseg > SRT_LOCAL_REMOTE_SEGS || ns + nseg > PULL_MAX_IOV) {
				bad = true;
				break;
			}
			for (uint32_t k = 0; k < nseg; k++) {
				src[ns + k] = (struct iovec){ (void *)(uintptr_t)d->seg[k].addr, (size_t)d->seg[k].len };
				total += src[ns + k].iov_len;
			}
			if (total != pulls[j].dst.iov_len) {
				bad = true;     /* does not add up */
				break;
			}
			ns += nseg;
			dst[nd++] = pulls[j].dst;
			bytes += total;
			end[j - i] = bytes;
			j++;
		}
		ssize_t got = nd ? process_vm_readv((pid_t)pid, dst, nd, src, ns, 0) : 0;
		unsigned k = i;
		while (k < j && got >= 0 && end[k - i] <= (size_t)got)
			pulls[k++].ok = true;
		/* Stopped short at pulls[k], or pulls[j] is bad: on after it. */
		i = k < j || bad ? k + 1 : j;
	}
}

bool srt_local_message_path(struct srt_local *l, struct srt_local_peer *p)
{
	struct ring *r = p->r;
	uint64_t got = 0;

	if (!l->msg_ok || !r->msg_ok)
		return false;
	/* Read the peer's cookie where it says it is: the same pid
	 * namespace, and its memory open to us. */
	uint64_t addr = r->probe_addr, want = r->cookie;
	struct iovec dst = { &got, sizeof(got) }, src = { (void *)(uintptr_t)addr, sizeof(got) };
	return process_vm_readv((pid_t)r->owner_pid, &dst, 1, &src, 1, 0) == (ssize_t)sizeof(got) && got == want;
}

/* Ring p's doorbell now if one is due. */
static void send_doorbell(struct srt_local *l, struct srt_local_peer *p)
{
	uint8_t d[SRT_LOCAL_DOORBELL_LEN] = { SRT_LOCAL_DOORBELL_OPCODE, 0, 0, 0, 0,
					       (uint8_t)(p->doorbell_qpn >> 16), (uint8_t)(p->doorbell_qpn >> 8),
					       (uint8_t)p->doorbell_qpn, (uint8_t)(SRT_LOCAL_DOORBELL_MAGIC >> 24),
					       (uint8_t)(SRT_LOCAL_DOORBELL_MAGIC >> 16), (uint8_t)(SRT_LOCAL_DOORBELL_MAGIC >> 8),
					       (uint8_t)SRT_LOCAL_DOORBELL_MAGIC };
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(WIRE_ROCEV2_UDP_PORT), .sin_addr = p->ip };

	if (!p->ring_doorbell)
		return;
	p->ring_doorbell = false;
	if (sendto(l->udp_fd, d, sizeof(d), MSG_DONTWAIT, (struct sockaddr *)&to, sizeof(to)) == sizeof(d))
		l->stats.doorbells_sent++;
}

void srt_local_flush(struct srt_local *l)
{
	if (!l)
		return;
	release_held(l);
	if (!l->doorbells_due)
		return;
	l->doorbells_due = false;
	for (unsigned i = 0; i < PEER_CACHE; i++)
		send_doorbell(l, &l->peers[i]);
}

/* Our ring's head (or tail) is one no sender writes: past the tail by
 * more than the area, or off the entries' alignment (a peer's bug, or
 * anything written into the file).  Everything up to it is lost, and the
 * head is set to the next aligned position under the senders' mutex:
 * left as it was, every later read would find the ring broken again, and
 * a reader would see it pending forever.  Returns the new head. */
static uint64_t repair_ring(struct srt_local *l)
{
	struct ring *r = l->own;

	if (l->held && l->held->r == r)
		release_held(l);        /* a device sending to itself */
	lock_ring(r);
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	head += (ENTRY_ALIGN - head % ENTRY_ALIGN) % ENTRY_ALIGN;
	atomic_store_explicit(&r->head, head, memory_order_release);
	pthread_mutex_unlock(&r->lock);
	return head;
}

int srt_local_recv(struct srt_local *l, struct srt_rx_batch *b)
{
	struct ring *r;
	uint64_t tail, head;
	int n = 0;

	if (!l)
		return 0;
	r = l->own;
	tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	head = atomic_load_explicit(&r->head, memory_order_acquire);
	/* head - tail: what the senders published.  A sender bug could have
	 * written anything into an entry; nothing read from one moves tail
	 * past head (a sender's own head is under the ring's mutex). */
	if (head - tail > RING_AREA_BYTES || (tail | head) % ENTRY_ALIGN) {
		l->stats.rx_ring_broken++;
		tail = head = repair_ring(l);
	}
	while (tail != head && n < (int)SRT_RX_PKTS) {
		uint32_t at = (uint32_t)(tail % RING_AREA_BYTES);
		struct ring_entry *e = (struct ring_entry *)(r->entries + at);
		struct srt_rx_pkt *pkt = &b->pkt[n];
		uint32_t len = e->len;

		/* A WRAP past head, or a length no sender writes (a peer's
		 * bug): the entries after it cannot be found; what is left is
		 * dropped (RC resends). */
		uint8_t flags = e->flags;
		bool wrap = flags & ENTRY_WRAP;
		const struct srt_local_remote *remote = NULL;
		uint32_t bytes = len, nseg = 0, inline_len = 0;
		bool in_entry = (flags & (ENTRY_REMOTE | ENTRY_INLINE)) == (ENTRY_REMOTE | ENTRY_INLINE);
		/* Nothing is read past the area's end: an entry never crosses
		 * it (senders wrap), so one that would is broken.  Each
		 * length is read once: the sender can still write the
		 * entry. */
		if (!wrap && (flags & ENTRY_REMOTE) && len <= ENTRY_DATA - sizeof(struct srt_local_remote) &&
		    at + sizeof(*e) + remote_at(len) + sizeof(struct srt_local_remote) <= RING_AREA_BYTES) {
			remote = (const struct srt_local_remote *)(const void *)(e->data + remote_at(len));
			if (in_entry) {
				uint64_t total = remote->total;
				inline_len = (uint32_t)total;
				bytes = total && total <= ENTRY_INLINE_CAP ? inline_at(len) + inline_len : UINT32_MAX;
			} else {
				nseg = remote->nseg;
				bytes = nseg <= SRT_LOCAL_REMOTE_SEGS ? remote_bytes(len, nseg) : UINT32_MAX;
			}
		} else if (!wrap && (flags & ENTRY_REMOTE)) {
			bytes = UINT32_MAX;
		}
		uint32_t most = in_entry ? ENTRY_DATA + ENTRY_INLINE_CAP : ENTRY_DATA;
		uint32_t takes = wrap ? RING_AREA_BYTES - at : entry_bytes(bytes);   /* meaningful only if bytes fit */
		if ((!wrap && (bytes > most || at + takes > RING_AREA_BYTES)) || head - tail < takes) {
			l->stats.rx_ring_broken++;
			tail = head;
			break;
		}
		tail += takes;
		if (wrap)
			continue;

		/* Where it lies: the entry stays ours until
		 * srt_local_recv_done.  The rnic decodes the headers once
		 * (wire_decode_ib) and copies only the payload from here. */
		pkt->data = e->data;
		pkt->len = len;
		pkt->truncated = false;
		pkt->no_icrc = (flags & ENTRY_NO_ICRC) != 0;
		pkt->remote = remote;
		pkt->remote_nseg = nseg;
		pkt->remote_inline = remote && in_entry ? e->data + inline_at(len) : NULL;
		pkt->remote_inline_len = inline_len;
		pkt->alone = (flags & ENTRY_ALONE) != 0;
		srt_ipv4_to_gid((struct in_addr){ .s_addr = e->src }, &pkt->src);
		srt_ipv4_to_gid(l->addr, &pkt->dst);
		pkt->sport = e->sport;
		pkt->tos = e->tos;
		pkt->ttl = e->ttl;
		pkt->seg_index = 0;
		n++;
	}
	l->rx_next = tail;
	l->stats.rx_packets += (uint64_t)n;
	return n;
}

void srt_local_recv_done(struct srt_local *l)
{
	if (l)
		atomic_store_explicit(&l->own->tail, l->rx_next, memory_order_release);
}

bool srt_local_pending(const struct srt_local *l)
{
	return l && atomic_load_explicit(&l->own->head, memory_order_acquire) !=
			    atomic_load_explicit(&l->own->tail, memory_order_relaxed);
}

bool srt_local_sleep(struct srt_local *l, bool sleeping)
{
	if (!l)
		return true;
	atomic_store_explicit(&l->own->sleeping, sleeping, memory_order_relaxed);
	if (!sleeping)
		return true;
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&l->own->head, memory_order_acquire) !=
	    atomic_load_explicit(&l->own->tail, memory_order_relaxed)) {
		atomic_store_explicit(&l->own->sleeping, 0, memory_order_relaxed);
		return false;
	}
	return true;
}

const char *srt_local_file(const struct srt_local *l)
{
	return l->path;
}

void srt_local_get_stats(const struct srt_local *l, struct srt_local_stats *s)
{
	if (l)
		*s = l->stats;
	else
		memset(s, 0, sizeof(*s));
}
