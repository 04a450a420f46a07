/*
 * local_path.c — the host-local path (local_path.h says what and why):
 * routing a packet to a destination's ring, producing entries into it,
 * doorbells for sleeping receivers, consuming our own ring, sleeping.
 * The ring's format is local_ring.c, its files local_registry.c, the
 * message path local_message.c (local_int.h lists them).
 *
 * Producers take the destination ring's robust process-shared mutex —
 * once for a run of packets to the same ring, not per packet — and
 * publish entries by advancing `head`; a producer that dies holding the
 * mutex leaves it "owner dead", and the next one takes it over
 * (EOWNERDEAD).  The consumer hands the entries to the receive path where
 * they lie, and advances `tail` (lock-free) only when they have been
 * delivered (srt_local_recv_done).  So a packet is copied twice, as with
 * a socket but with no system call and no kernel: into the ring, and out
 * of it by the rnic (into the MR, or the receive WQE's buffers).  MRs in
 * a shared mapping would save the copy into the ring too, at the price of
 * mapping every registered buffer into every peer.
 *
 * The ICRC is computed only for a receiver that asks (its SOFTRNIC_FAULTS
 * is on: corruption is the one thing on this path that damages a packet,
 * and the ICRC is how the receive path catches it); otherwise the entry
 * says "no ICRC" and the receiver skips the check.  Memory does not flip
 * bits, and the CRC was two passes over every payload.
 *
 * A full ring drops the packet (a full NIC queue; RC retransmits).
 */
#include "runtime/local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rnic/rnic.h"
#include "runtime/mem_guard.h"
#include "runtime/tx_queue.h"
#include "runtime/share_steer.h"
#include "runtime/udp_port.h"
#include "wire/mad.h"

bool srt_local_is_doorbell(const uint8_t *d, size_t len)
{
	return len == SRT_LOCAL_DOORBELL_LEN && d[0] == SRT_LOCAL_DOORBELL_OPCODE &&
	       ((uint32_t)d[8] << 24 | (uint32_t)d[9] << 16 | (uint32_t)d[10] << 8 | d[11]) ==
		       SRT_LOCAL_DOORBELL_MAGIC;
}

struct srt_local *srt_local_open(int dirfd, struct in_addr addr, unsigned slot, bool shared, bool wants_icrc,
				 int udp_fd)
{
	const char *env = getenv("SOFTRNIC_LOCAL");
	struct srt_local *l;

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
	l->cookie = ((uint64_t)getpid() << 32 | (uint64_t)(uintptr_t)l) ^ srt_local_now_ns() ^ 0x9e3779b97f4a7c15ull;
	l->msg_ok = !(env && !strcmp(env, "packets")) && !wants_icrc && srt_local_memory_reachable(l->cookie);
	l->inline_max = srt_local_inline_max();
	l->pid = (uint32_t)getpid();
	if (!srt_local_registry_create(l, addr, slot)) {
		free(l);
		return NULL;
	}
	ring_init(l->own, l->pid, shared, wants_icrc, l->msg_ok, (uint64_t)(uintptr_t)&l->cookie, l->cookie);
	return l;
}

/* Drops a cached destination (its doorbell, if due, rung first). */
void srt_local_forget_peer(struct srt_local *l, struct srt_local_peer *p)
{
	if (p == l->held)
		srt_local_release_held(l);
	srt_local_send_doorbell(l, p);
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
		srt_local_forget_peer(l, &l->peers[i]);
	srt_local_unlink(l);
	munmap(l->own, RING_BYTES);
	free(l);
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
static struct srt_local_peer *route(struct srt_local *l, struct in_addr dst, uint32_t dqpn, bool fresh)
{
	struct srt_local_peer *p;

	/* QP1's MADs keep to UDP: a shared address steers them by Service
	 * ID and comm ID (share_steer.h), which a ring name cannot. */
	if (!l || dqpn == WIRE_GSI_QPN)
		return NULL;
	p = srt_local_find_peer(l, dst, dqpn >> SRT_SHARE_QPN_SHIFT, fresh);
	if (p->r)
		p->doorbell_qpn = dqpn;
	return p->r ? p : NULL;
}

struct srt_local_peer *srt_local_route(struct srt_local *l, struct in_addr dst, const uint8_t *bth)
{
	return route(l, dst, dest_qpn(bth), false);
}

struct srt_local_peer *srt_local_route_qpn(struct srt_local *l, struct in_addr dst, uint32_t qpn)
{
	return route(l, dst, qpn, false);
}

struct srt_local_peer *srt_local_route_now(struct srt_local *l, struct in_addr dst, const uint8_t *bth)
{
	return route(l, dst, dest_qpn(bth), true);
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
void srt_local_release_held(struct srt_local *l)
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

struct ring_entry *srt_local_reserve(struct srt_local *l, struct srt_local_peer *p, uint32_t bytes,
				     uint32_t keep_free)
{
	struct ring *r = p->r;
	struct ring_entry *e;

	if (l->held != p) {
		srt_local_release_held(l);
		lock_ring(r);
		l->held = p;
		l->held_head = atomic_load_explicit(&r->head, memory_order_relaxed);
		l->held_unpublished = 0;
	}
	e = ring_reserve(r, &l->held_head, &p->tail_seen, bytes, keep_free);
	if (!e && !keep_free)
		l->stats.tx_ring_full++;
	return e;
}

void srt_local_commit(struct srt_local *l, struct ring_entry *e, uint32_t bytes, uint16_t sport, uint8_t tos,
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
uint32_t srt_local_copy_pieces(uint8_t *to, const struct wire_piece *pc, unsigned n)
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

	if (len > ENTRY_DATA || !(e = srt_local_reserve(l, p, len, 0))) {
		if (len > ENTRY_DATA)
			l->stats.tx_ring_full++;
		return true;
	}
	uint32_t off = srt_local_copy_pieces(e->data, pc, npc);
	if (!off)
		return false;   /* not committed: the entry's room stays free */
	e->len = off;
	srt_local_commit(l, e, off, sport, tos, ttl, (icrc ? 0 : ENTRY_NO_ICRC) | (alone ? ENTRY_ALONE : 0));
	return true;
}

int srt_local_fast_send(struct srt_local *l, struct srt_local_peer *p, const struct rnic_fast_msg *m,
			const struct wire_piece *pc, unsigned n)
{
	uint32_t len = (uint32_t)sizeof(struct ring_fast) + m->len;
	struct ring_entry *e;
	struct ring_fast *f;

	if (len > ENTRY_DATA)
		return EMSGSIZE;
	if (!(e = srt_local_reserve(l, p, len, 0)))
		return EAGAIN;
	f = (struct ring_fast *)(void *)e->data;
	*f = (struct ring_fast){ .dqpn = m->dqpn, .sqpn = m->sqpn, .seq = m->seq, .imm = m->imm, .rkey = m->rkey,
				 .len = m->len, .va = m->va, .opcode = m->opcode, .se = m->se };
	if (m->len && srt_local_copy_pieces(e->data + sizeof(*f), pc, n) != m->len)
		return EFAULT;  /* not committed: the room stays free */
	e->len = len;
	srt_local_commit(l, e, len, WIRE_ROCEV2_UDP_PORT, 0, SRT_DEFAULT_TTL, ENTRY_FAST | ENTRY_NO_ICRC);
	return 0;
}

bool srt_local_answer(struct srt_local *l, struct srt_local_peer *p, uint32_t qpn, uint32_t src_qpn, uint32_t seq,
		      uint32_t verdict)
{
	struct ring_entry *e = srt_local_reserve(l, p, sizeof(struct ring_answer), 0);

	if (!e)
		return false;
	*(struct ring_answer *)(void *)e->data =
		(struct ring_answer){ .qpn = qpn, .src_qpn = src_qpn, .seq = seq, .verdict = verdict };
	e->len = sizeof(struct ring_answer);
	srt_local_commit(l, e, sizeof(struct ring_answer), WIRE_ROCEV2_UDP_PORT, 0, SRT_DEFAULT_TTL,
			 ENTRY_ANSWER | ENTRY_NO_ICRC);
	return true;
}

/* Ring p's doorbell now if one is due. */
void srt_local_send_doorbell(struct srt_local *l, struct srt_local_peer *p)
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
	srt_local_release_held(l);
	if (!l->doorbells_due)
		return;
	l->doorbells_due = false;
	for (unsigned i = 0; i < PEER_CACHE; i++)
		srt_local_send_doorbell(l, &l->peers[i]);
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
		srt_local_release_held(l);        /* a device sending to itself */
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
	if (ring_positions_broken(tail, head)) {
		l->stats.rx_ring_broken++;
		tail = head = repair_ring(l);
	}
	while (tail != head && n < (int)SRT_RX_PKTS) {
		struct ring_entry_view v;
		struct srt_rx_pkt *pkt = &b->pkt[n];
		uint32_t takes = ring_read_entry(r, tail, head, &v);

		/* A WRAP past head, or a length no sender writes (a peer's
		 * bug): the entries after it cannot be found; what is left is
		 * dropped (RC resends). */
		if (!takes) {
			l->stats.rx_ring_broken++;
			tail = head;
			break;
		}
		tail += takes;
		if (v.wrap)
			continue;

		/* Where it lies: the entry stays ours until
		 * srt_local_recv_done.  The rnic decodes the headers once
		 * (wire_decode_ib) and copies only the payload from here. */
		pkt->data = (uint8_t *)v.e->data;
		pkt->len = v.len;
		pkt->truncated = false;
		pkt->no_icrc = (v.flags & ENTRY_NO_ICRC) != 0;
		pkt->remote = v.remote;
		pkt->remote_nseg = v.nseg;
		pkt->remote_inline = v.inline_data;
		pkt->remote_inline_len = v.inline_len;
		pkt->alone = (v.flags & ENTRY_ALONE) != 0;
		pkt->ring_kind = (v.flags & ENTRY_FAST) ? SRT_RX_FAST : (v.flags & ENTRY_ANSWER) ? SRT_RX_ANSWER : 0;
		srt_ipv4_to_gid((struct in_addr){ .s_addr = v.e->src }, &pkt->src);
		srt_ipv4_to_gid(l->addr, &pkt->dst);
		pkt->sport = v.e->sport;
		pkt->tos = v.e->tos;
		pkt->ttl = v.e->ttl;
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
