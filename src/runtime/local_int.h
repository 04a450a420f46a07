/*
 * local_int.h — the host-local path's state, shared by its files and by
 * no one else (local_path.h is the contract):
 *   local_ring.c      the ring's format (pure);
 *   local_registry.c  the rings' files in the runtime directory: naming,
 *                     creating, mapping a peer's, dead owners, the cache
 *                     of destinations looked up;
 *   local_path.c      the path: routing, producing entries, doorbells,
 *                     consuming, sleeping;
 *   local_message.c   the message path: described and inline payloads,
 *                     pulls, the reachability probe.
 */
#ifndef SOFTRNIC_RUNTIME_LOCAL_INT_H
#define SOFTRNIC_RUNTIME_LOCAL_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/local_path.h"
#include "runtime/local_ring.h"

/* A cached destination is looked at again after this long. */
#define SRT_LOCAL_RECHECK_NS 200000000ull
#define PEER_CACHE 32u
/* A run of entries to one ring is published every this many. */
#define SRT_LOCAL_PUBLISH_EVERY 4u

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

/* CLOCK_MONOTONIC_COARSE, in ns: cheap, for the cache's rechecks. */
uint64_t srt_local_now_ns(void);

/* ---- local_registry.c ---- */

/* Makes our ring's file (l->name, l->path, l->ino, l->own mapped) in
 * l->dirfd; false: no ring (nothing left behind). */
bool srt_local_registry_create(struct srt_local *l, struct in_addr addr, unsigned slot);
/* The cached destination for (ip, QPN slot), looked up if not cached or
 * due for a recheck; fresh: looked up again whatever the cache holds. */
struct srt_local_peer *srt_local_find_peer(struct srt_local *l, struct in_addr ip, unsigned slot, bool fresh);
/* Drops a cached destination (its held mutex let go and its doorbell,
 * if due, rung first: local_path.c). */
void srt_local_forget_peer(struct srt_local *l, struct srt_local_peer *p);

/* ---- local_path.c ---- */

/* Room in p's ring for an entry of `bytes`, its mutex held (kept for the
 * packets that follow to the same ring, until srt_local_flush); NULL when
 * the ring is full (counted) or would keep less than keep_free bytes free
 * (not counted: the caller has a smaller entry to write instead). */
struct ring_entry *srt_local_reserve(struct srt_local *l, struct srt_local_peer *p, uint32_t bytes,
				     uint32_t keep_free);
/* Fills in the entry's header and publishes it (now or with the run). */
void srt_local_commit(struct srt_local *l, struct ring_entry *e, uint32_t bytes, uint16_t sport, uint8_t tos,
		      uint8_t ttl, uint8_t flags);
/* The pieces, one after another, to `to`; the bytes copied, or 0 when a
 * page of a piece faulted (a payload in region memory, mem_guard.h). */
uint32_t srt_local_copy_pieces(uint8_t *to, const struct wire_piece *pc, unsigned n);
/* Lets go of the held ring and rings p's doorbell if one is due. */
void srt_local_release_held(struct srt_local *l);
void srt_local_send_doorbell(struct srt_local *l, struct srt_local_peer *p);

/* ---- local_message.c ---- */

/* May this process use the message path (its memory and its peers'
 * readable by process_vm_readv)? */
bool srt_local_memory_reachable(uint64_t cookie);

#endif
