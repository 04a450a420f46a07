/*
 * local_ring.h — the host-local ring's format, as pure code: the shared
 * header, how entries are laid in the area, how a producer makes room for
 * one and how a consumer reads one back.  No files, no system calls: the
 * rings' files live in local_registry.c, their use as a path in
 * local_path.c and local_message.c.  The fuzz target fuzz_local_ring
 * feeds the reader (ring_read_entry) entries a hostile peer could write.
 *
 * One ring per receiving device: many producers (every local sender,
 * under the ring's robust process-shared mutex), one consumer (the
 * device).  head and tail are byte positions that only grow; an entry
 * lies at position % RING_AREA_BYTES, 64-byte aligned, and never crosses
 * the area's end (a WRAP marker fills the rest and the entry goes to the
 * start).
 */
#ifndef SOFTRNIC_RUNTIME_LOCAL_RING_H
#define SOFTRNIC_RUNTIME_LOCAL_RING_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/local_path.h"

#define RING_MAGIC 0x534c5231u          /* "SLR1" */
#define RING_VERSION 6u
/* Entries are packed, each 64-byte aligned, in an area of this size:
 * about 2000 full-size packets, or 100 000 ACKs.  Packed, a ping-pong's
 * ACK and answer share cache lines and pages; slots of the largest
 * packet's size gave every packet a page of its own, a TLB miss on each
 * side. */
#define RING_AREA_BYTES (8u << 20)
#define ENTRY_ALIGN 64u
#define ENTRY_MAX_BYTES 4352u           /* entry header + the largest RoCE packet */

struct ring_entry {
	uint32_t len;
	uint32_t src;                   /* IPv4, network order */
	uint16_t sport;
	uint8_t tos, ttl;
	uint8_t flags;                  /* ENTRY_* */
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
#define ENTRY_FAST 32u                  /* no packet: a fast message (struct
                                           ring_fast, then its payload) */
#define ENTRY_ANSWER 64u                /* no packet: a fast message's answer
                                           (struct ring_answer) */
#define ENTRY_DATA (ENTRY_MAX_BYTES - sizeof(struct ring_entry))

/* The host-local fast path (rnic.h, rnic_fast_msg): a message between two
 * QPs as one entry, its payload after this header, and the answer that
 * comes back in the sender's ring.  Fields in host order (one host). */
struct ring_fast {
	uint32_t dqpn, sqpn, seq;
	uint32_t imm;                   /* network order, as posted */
	uint32_t rkey, len;             /* len: the payload bytes after it */
	uint64_t va;
	uint8_t opcode, se, pad[6];
};
struct ring_answer {
	uint32_t qpn;                   /* the requester's QP */
	uint32_t src_qpn;               /* the responder's */
	uint32_t seq;
	uint32_t verdict;               /* enum rnic_fast_verdict */
};
/* The largest payload an inline entry may carry (a sender's
 * SOFTRNIC_LOCAL_INLINE_MAX is held to it): a receiver drops as broken
 * any entry that claims more. */
#define ENTRY_INLINE_CAP (1u << 20)
/* An inline entry is written only while the ring stays at most this full
 * with it; past that the payload is described: a stream of large
 * messages then cannot fill the ring with copies, and the packets of
 * other senders still find room. */
#define INLINE_RING_SHARE (RING_AREA_BYTES / 2)

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

/* The bytes an entry of len bytes of data takes. */
static inline uint32_t entry_bytes(uint32_t len)
{
	return ((uint32_t)sizeof(struct ring_entry) + len + ENTRY_ALIGN - 1) & ~(ENTRY_ALIGN - 1);
}

/* Where a remote entry's description starts, after `len` bytes of
 * headers; and the entry's data bytes with nseg pieces. */
static inline uint32_t remote_at(uint32_t len)
{
	return (len + 7u) & ~7u;
}

static inline uint32_t remote_bytes(uint32_t len, uint32_t nseg)
{
	return remote_at(len) + (uint32_t)sizeof(struct srt_local_remote) + nseg * (uint32_t)sizeof(struct srt_local_seg);
}

/* Where an inline entry's payload starts in its data, after `len` bytes
 * of headers and the description: on a cache line of its own (entries
 * start on one), which the copies out of it run faster from. */
static inline uint32_t inline_at(uint32_t len)
{
	uint32_t from_entry = (uint32_t)sizeof(struct ring_entry) + remote_bytes(len, 0);

	return ((from_entry + ENTRY_ALIGN - 1) & ~(ENTRY_ALIGN - 1)) - (uint32_t)sizeof(struct ring_entry);
}

/* A fresh ring's header (the area is left as it is).  The magic is
 * stored last, with release: a sender that sees it sees the rest. */
void ring_init(struct ring *r, uint32_t owner_pid, bool shared, bool wants_icrc, bool msg_ok, uint64_t probe_addr,
	       uint64_t cookie);
/* Does a mapped ring's header describe a ring of this format? */
bool ring_header_ok(const struct ring *r);

/* Producer, the ring's mutex held: room at *head for an entry of `bytes`
 * of data, or NULL when the ring is full or would keep less than
 * keep_free bytes free.  *tail_seen is the tail the producer last read
 * (read again only when the ring looks full: the line stays the
 * consumer's).  On success *head is where the entry lies (past a WRAP
 * marker written, if the area's end came first); the producer advances
 * it by entry_bytes(bytes) once the entry is written. */
struct ring_entry *ring_reserve(struct ring *r, uint64_t *head, uint64_t *tail_seen, uint32_t bytes,
				uint32_t keep_free);

/* Consumer: what the entry at `tail` holds, with head - tail bytes
 * published.  Each field is read once (the sender can still write the
 * entry) and nothing is read past the area's end. */
struct ring_entry_view {
	bool wrap;                      /* a WRAP marker: no packet */
	uint8_t flags;
	const struct ring_entry *e;
	uint32_t len;                   /* packet bytes at e->data */
	const struct srt_local_remote *remote;  /* ENTRY_REMOTE: its description */
	uint32_t nseg;                  /* its piece count, as checked */
	const uint8_t *inline_data;     /* ENTRY_INLINE: the payload */
	uint32_t inline_len;
};
/* Returns the bytes the entry takes (to add to tail), or 0 when it is
 * broken: a length no sender writes, an entry past the area's end or past
 * head.  Then nothing after it can be found. */
uint32_t ring_read_entry(const struct ring *r, uint64_t tail, uint64_t head, struct ring_entry_view *v);

/* Is the published part of the ring impossible (head more than an area
 * past tail, or either off the alignment)? */
static inline bool ring_positions_broken(uint64_t tail, uint64_t head)
{
	return head - tail > RING_AREA_BYTES || (tail | head) % ENTRY_ALIGN;
}

#endif
