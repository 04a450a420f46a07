/*
 * local_registry.c — the host-local rings' files (local_path.h says
 * where they live and why): each device's own ring made as a private
 * file of the user's runtime directory, a destination's ring found by its
 * name and mapped as a sender, the cache of destinations looked up, and
 * the rings of owners that died removed.
 *
 * A ring whose owner died stays until the next device of the user opens
 * (remove_dead_rings) or its address is taken again; senders check a
 * cached ring's owner and inode every SRT_LOCAL_RECHECK_NS and drop it
 * when either changed.  The files are opened only through the runtime
 * directory's helpers (runtime_dir.h: no link followed, regular files of
 * ours only).
 */
#include "runtime/local_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/runtime_dir.h"

uint64_t srt_local_now_ns(void)
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

/* RING_POPULATE: the ring's memory is allocated when it is created
 * (posix_fallocate), and the owner's mapping and each sender's are
 * populated when made (MAP_POPULATE), so the ring costs its 8 MiB of
 * shared memory from the start, not as traffic first reaches each page
 * (about 3 ms more per device open).  Touched as used, every new page
 * was a page fault for the writer and another for the reader, one per 32
 * round trips of a 2-byte ping-pong, each stalling that trip 15-20 us on
 * the VMs measured (docs/performance.md). */
bool srt_local_registry_create(struct srt_local *l, struct in_addr addr, unsigned slot)
{
	struct stat st;
	int fd;

	ring_name(l->name, sizeof(l->name), addr, slot);
	snprintf(l->path, sizeof(l->path), "%s/%s", srt_runtime_dir_path(), l->name);
	/* We hold the address (its socket is bound): a ring left by a
	 * process that had it before is stale, and srt_create_private
	 * replaces it (but no link or FIFO: then no ring). */
	fd = srt_create_private(l->dirfd, l->name, O_RDWR);
	if (fd < 0)
		return false;
	/* A /dev/shm without 8 MiB to spare (a container's 64 MiB, shared
	 * by many processes) means no ring, UDP only, rather than a SIGBUS
	 * when traffic reaches a page tmpfs cannot give. */
	if (posix_fallocate(fd, 0, (off_t)RING_BYTES) || fstat(fd, &st)) {
		close(fd);
		unlinkat(l->dirfd, l->name, 0);
		return false;
	}
	l->own = mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	close(fd);
	if (l->own == MAP_FAILED) {
		l->own = NULL;
		unlinkat(l->dirfd, l->name, 0);
		return false;
	}
	l->ino = st.st_ino;
	return true;
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
	if (!ring_header_ok(r) || (kill((pid_t)r->owner_pid, 0) && errno == ESRCH)) {
		munmap(r, RING_BYTES);
		return NULL;
	}
	*ino = st.st_ino;
	return r;
}

/* Still the ring published at its name, by a live owner? */
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

struct srt_local_peer *srt_local_find_peer(struct srt_local *l, struct in_addr ip, unsigned slot, bool fresh)
{
	struct srt_local_peer *p = NULL;
	uint64_t now = srt_local_now_ns();

	for (unsigned i = 0; i < PEER_CACHE; i++) {
		p = &l->peers[i];
		if (!p->used || p->ip.s_addr != ip.s_addr || p->slot != slot)
			continue;
		/* Time to check again (a negative entry: look again).  The
		 * cache may hold a process that had the address before (its
		 * ring, or none), for up to SRT_LOCAL_RECHECK_NS: `fresh`
		 * checks now. */
		if (!fresh && now - p->checked_ns < SRT_LOCAL_RECHECK_NS)
			return p;
		if (p->r && still_valid(l, p)) {
			p->checked_ns = now;
			return p;
		}
		break;
	}
	if (!p || !p->used || p->ip.s_addr != ip.s_addr || p->slot != slot)
		p = &l->peers[l->next_victim++ % PEER_CACHE];
	srt_local_forget_peer(l, p);
	look_up(l, p, ip, slot);
	p->checked_ns = now;
	return p;
}
