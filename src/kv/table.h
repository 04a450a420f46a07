/*
 * table.h — the key-value store's table: a hash table and its items in
 * one flat arena, the memory the server registers as an MR.
 *
 * The layer below the KV server, and the only thing a one-sided client
 * reads: everything in the arena is addressed by offsets from its base,
 * never by pointers, so a client that RDMA READs part of it (Pilaf-style)
 * interprets the bytes with the same definitions (kv_item_check).
 *
 *   [0, 64)                       struct kv_table_hdr
 *   [64, 64 + (nb + P − 1)·64)    buckets: 8 slots {tag, item offset} each
 *   [.., size)                    the slab: items in power-of-two chunks
 *
 * A key hashes (FNV-1a 64, kv_hash) to home bucket h % nb and lives in one
 * of the KV_PROBE buckets from there: the array has KV_PROBE − 1 extra
 * buckets at the end instead of wrapping, so a client reads one contiguous
 * KV_PROBE·64 bytes to see every slot the key can be in.
 *
 * Items: a header (version, CRC, lengths, expiry, size class), the key,
 * the value.  A SET writes a new item in a free chunk and then publishes
 * it by storing its slot (one aligned 8-byte store); the old chunk is
 * freed, and a free or reused chunk has a different version/CRC, so a
 * client whose READ raced a SET sees a check failure and retries.  The
 * CRC (CRC-32 over the header's lengths, the key and the value) is what
 * catches a torn read; the version word is odd while a chunk is free.
 *
 * Memory: chunks of 64·2^k bytes (k = 0 .. KV_CLASSES − 1) come from a bump
 * pointer, then from per-class free lists, then by CLOCK eviction of items
 * of the same class (a GET sets an item's referenced bit, the hand clears
 * it).  Trade-off: memory never moves between classes once carved — a
 * workload that shifts from small to large values can fail a SET with
 * ENOMEM while small chunks sit free; memcached's slab rebalancing is the
 * better algorithm for later.
 *
 * Pure: no I/O, no clock (expiry times and `now` are the caller's, ns),
 * single-threaded (the server serialises).
 */
#ifndef SOFTRNIC_KV_TABLE_H
#define SOFTRNIC_KV_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KV_MAX_KEY 250u
#define KV_MAX_VALUE (1u << 20)
#define KV_SLOTS 8u                     /* per bucket (64 bytes) */
#define KV_PROBE 4u                     /* buckets a key may live in */
#define KV_CLASSES 16u                  /* 64 B .. 2 MiB chunks */
#define KV_MIN_CHUNK 64u
#define KV_TABLE_MAGIC 0x4b56544231ull  /* "KVTB1" */

/* One slot, stored with one aligned 8-byte write (`word`), so a reader
 * never sees the tag of one item with the offset of another. */
struct kv_slot {
	union {
		struct {
			uint32_t tag;   /* hash >> 32 | 1; 0: empty */
			uint32_t off;   /* item offset / 8 in the arena */
		};
		uint64_t word;
	};
};

struct kv_bucket {
	struct kv_slot slot[KV_SLOTS];
};

struct kv_table_hdr {
	uint64_t magic;
	uint32_t nbuckets;              /* home buckets (array has + KV_PROBE − 1) */
	uint32_t reserved;
	uint64_t buckets_off;           /* = 64 */
	uint64_t slab_off, slab_size;
	uint8_t pad[24];
};

struct kv_item {
	uint32_t version;               /* even: live; odd: free / being written */
	uint32_t crc;                   /* CRC-32 of klen, vlen, key, value */
	uint32_t klen, vlen;
	uint64_t expire_ns;             /* 0: never */
	uint8_t cls;                    /* size class */
	uint8_t referenced;             /* CLOCK bit */
	uint8_t pad[6];
	/* key, then value */
};

struct kv_stats {
	uint64_t items, item_bytes;
	uint64_t gets, get_hits, sets, dels, incrs;
	uint64_t evictions, expired, set_failures;
};

/* Called for every item the table drops to make room (not for DEL or
 * expiry), so a test's model can follow. */
typedef void (*kv_evict_fn)(void *ctx, const uint8_t *key, uint32_t klen);

struct kv_table {
	uint8_t *base;
	size_t size;
	struct kv_table_hdr *hdr;
	struct kv_bucket *buckets;
	uint64_t bump;                  /* next uncarved slab byte (offset) */
	uint64_t free_head[KV_CLASSES]; /* offset of the first free chunk, 0: none */
	uint32_t clock_hand;            /* slot index over all buckets */
	kv_evict_fn on_evict;
	void *evict_ctx;
	struct kv_stats stats;
};

uint64_t kv_hash(const uint8_t *key, uint32_t klen);

/* Lay a table out in `arena` (size bytes, 8-byte aligned): nbuckets home
 * buckets (0: one per 512 bytes of arena).  0 or EINVAL (too small). */
int kv_table_init(struct kv_table *t, void *arena, size_t size, uint32_t nbuckets);

/* 0 and *val, *vlen (pointing into the arena, valid until the next change),
 * ENOENT, or EINVAL for a bad key length. */
int kv_get(struct kv_table *t, const uint8_t *key, uint32_t klen, uint64_t now, const uint8_t **val,
	   uint32_t *vlen);
/* kv_get that also gives the item's expiry (0: none), without marking it
 * recently used (the server's log asks, not a client). */
int kv_peek(struct kv_table *t, const uint8_t *key, uint32_t klen, uint64_t now, const uint8_t **val,
	    uint32_t *vlen, uint64_t *expire_ns);
/* expire_ns: absolute time, 0 = never.  0, EINVAL (lengths), ENOMEM. */
int kv_set(struct kv_table *t, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen,
	   uint64_t expire_ns, uint64_t now);
int kv_del(struct kv_table *t, const uint8_t *key, uint32_t klen, uint64_t now);
/* Redis INCRBY: a missing key counts as 0; the value must be a decimal
 * int64 (EINVAL otherwise, or ERANGE on overflow).  The expiry stays. */
int kv_incr(struct kv_table *t, const uint8_t *key, uint32_t klen, int64_t delta, uint64_t now, int64_t *out);

/* Call fn for every live, unexpired item (key, value, expiry), in bucket
 * order; the pointers are valid during the call.  Rewriting the log
 * (aof.c) walks the table this way. */
typedef void (*kv_item_fn)(void *ctx, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen,
			   uint64_t expire_ns);
void kv_table_foreach(const struct kv_table *t, uint64_t now, kv_item_fn fn, void *ctx);

/* The one-sided reader's check, on bytes RDMA READ from the arena: is
 * `item` (len bytes available) a whole, live item for this key?  Then 0
 * and the value's place in `item`; EAGAIN for a free, torn or half-written
 * chunk (read again), ENOENT for another key or an expired item. */
int kv_item_check(const uint8_t *item, size_t len, const uint8_t *key, uint32_t klen, uint64_t now,
		  uint32_t *val_off, uint32_t *vlen);
/* Which home bucket a key has, for one-sided readers: the KV_PROBE buckets
 * from there are at hdr->buckets_off + home * 64. */
static inline uint32_t kv_home_bucket(uint64_t hash, uint32_t nbuckets)
{
	return (uint32_t)(hash % nbuckets);
}
static inline uint32_t kv_tag(uint64_t hash)
{
	return (uint32_t)(hash >> 32) | 1u;
}

#endif
