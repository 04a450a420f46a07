/*
 * ring.h — consistent hashing for the key-value client's shards (ring.c):
 * which of several servers holds a key.  Pure: no I/O, tested alone
 * (tests/kv/ring_test.c), used by cluster.c.
 *
 * Each server is KV_RING_POINTS points on a 64-bit ring, at hashes of its
 * name ("host:port#i"); a key belongs to the first point at or after its
 * hash.  Adding a server moves only the keys that now fall to it, about
 * 1/(n+1) of them; removing one moves only its own keys.  The key's ring
 * hash is a remix of kv_hash, so that the keys a shard holds still spread
 * over all of its table's buckets (which take kv_hash % nbuckets).
 */
#ifndef SOFTRNIC_KV_RING_H
#define SOFTRNIC_KV_RING_H

#include <stdint.h>

#define KV_RING_POINTS 160u             /* per server: spread within a few % */
#define KV_RING_MAX_SERVERS 64u

struct kv_ring_point {
	uint64_t hash;
	uint32_t server;
};

struct kv_ring {
	unsigned nservers, npoints;
	struct kv_ring_point points[KV_RING_POINTS * KV_RING_MAX_SERVERS];
};

/* 0, or EINVAL (no servers, too many, a name repeated). */
int kv_ring_build(struct kv_ring *ring, const char *const *names, unsigned n);
uint64_t kv_ring_key_hash(const void *key, uint32_t klen);
/* The server (an index into the names) that holds `key`. */
unsigned kv_ring_server(const struct kv_ring *ring, const void *key, uint32_t klen);

#endif
