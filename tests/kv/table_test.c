/*
 * table_test.c — the KV table (src/kv/table.c) against a model.
 *
 *   basic     GET/SET/DEL/INCR semantics, length limits, TTL expiry
 *   model     100 000 random SET/GET/DEL/INCR over 3000 keys with values
 *             from 0 B to 64 KiB in a 4 MiB arena, so CLOCK eviction runs
 *             all the time: after every operation the table and the model
 *             agree on that key (the eviction callback tells the model what
 *             went), and every 5000 operations on every key; the item count
 *             and bytes match the model's
 *   onesided  a one-sided reader's view: the bucket bytes and the item
 *             bytes copied out of the arena as an RDMA READ would see
 *             them, checked with kv_item_check; a torn item, a freed chunk
 *             and a chunk reused by another key are never taken for the
 *             value
 *
 * usage: kv_table_test [--seed N]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "base/prng.h"
#include "kv/table.h"


static const uint8_t *K(const char *s)
{
	return (const uint8_t *)s;
}

static void test_basic(void)
{
	static uint64_t arena[(1 << 20) / 8];
	struct kv_table t;
	const uint8_t *v;
	uint32_t vlen;
	int64_t n;
	uint8_t big[KV_MAX_KEY + 1];

	CHECK(kv_table_init(&t, arena, sizeof(arena), 0) == 0);
	CHECK(kv_table_init(&t, (uint8_t *)arena + 1, sizeof(arena) - 8, 0) == EINVAL);
	CHECK(kv_table_init(&t, arena, 1024, 0) == EINVAL);
	CHECK(kv_table_init(&t, arena, sizeof(arena), 0) == 0);

	CHECK(kv_get(&t, K("a"), 1, 0, &v, &vlen) == ENOENT);
	CHECK(kv_set(&t, K("a"), 1, K("hello"), 5, 0, 0) == 0);
	CHECK(kv_get(&t, K("a"), 1, 0, &v, &vlen) == 0 && vlen == 5 && memcmp(v, "hello", 5) == 0);
	CHECK(kv_set(&t, K("a"), 1, K("bye"), 3, 0, 0) == 0);
	CHECK(kv_get(&t, K("a"), 1, 0, &v, &vlen) == 0 && vlen == 3 && memcmp(v, "bye", 3) == 0);
	CHECK(t.stats.items == 1);
	CHECK(kv_set(&t, K("empty"), 5, NULL, 0, 0, 0) == 0);
	CHECK(kv_get(&t, K("empty"), 5, 0, &v, &vlen) == 0 && vlen == 0);
	CHECK(kv_del(&t, K("a"), 1, 0) == 0);
	CHECK(kv_del(&t, K("a"), 1, 0) == ENOENT);
	CHECK(kv_get(&t, K("a"), 1, 0, &v, &vlen) == ENOENT);

	/* Lengths. */
	memset(big, 'k', sizeof(big));
	CHECK(kv_set(&t, big, KV_MAX_KEY, K("x"), 1, 0, 0) == 0);
	CHECK(kv_set(&t, big, KV_MAX_KEY + 1, K("x"), 1, 0, 0) == EINVAL);
	CHECK(kv_get(&t, big, 0, 0, &v, &vlen) == EINVAL);
	CHECK(kv_set(&t, K("v"), 1, big, KV_MAX_VALUE + 1, 0, 0) == EINVAL);

	/* INCR, Redis's rules. */
	CHECK(kv_incr(&t, K("n"), 1, 5, 0, &n) == 0 && n == 5);
	CHECK(kv_incr(&t, K("n"), 1, -7, 0, &n) == 0 && n == -2);
	CHECK(kv_get(&t, K("n"), 1, 0, &v, &vlen) == 0 && vlen == 2 && memcmp(v, "-2", 2) == 0);
	CHECK(kv_set(&t, K("s"), 1, K("12a"), 3, 0, 0) == 0);
	CHECK(kv_incr(&t, K("s"), 1, 1, 0, &n) == EINVAL);
	CHECK(kv_set(&t, K("s"), 1, K("007"), 3, 0, 0) == 0);
	CHECK(kv_incr(&t, K("s"), 1, 1, 0, &n) == EINVAL);
	CHECK(kv_set(&t, K("m"), 1, K("9223372036854775807"), 19, 0, 0) == 0);
	CHECK(kv_incr(&t, K("m"), 1, 1, 0, &n) == ERANGE);
	CHECK(kv_set(&t, K("m"), 1, K("-9223372036854775808"), 20, 0, 0) == 0);
	CHECK(kv_incr(&t, K("m"), 1, 0, 0, &n) == 0 && n == INT64_MIN);

	/* TTL: gone at its time, not before; INCR keeps it. */
	CHECK(kv_set(&t, K("t"), 1, K("1"), 1, 1000, 0) == 0);
	CHECK(kv_incr(&t, K("t"), 1, 1, 500, &n) == 0 && n == 2);
	CHECK(kv_get(&t, K("t"), 1, 999, &v, &vlen) == 0 && vlen == 1 && v[0] == '2');
	uint64_t expired = t.stats.expired;
	CHECK(kv_get(&t, K("t"), 1, 1000, &v, &vlen) == ENOENT);
	CHECK(t.stats.expired == expired + 1);
}

/* ---- against a model ---------------------------------------------------------- */

#define NKEYS 3000
#define MAXV (64 * 1024)

struct model {
	bool present[NKEYS];
	uint32_t len[NKEYS];
	uint32_t seed[NKEYS];           /* the value is a function of (seed, len) */
	uint64_t evicted;
};

static void key_of(int k, char *buf, uint32_t *klen)
{
	*klen = (uint32_t)snprintf(buf, 32, "key:%d", k);
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)((seed * 2654435761u + i * 40503u) >> 13);
}

static void on_evict(void *ctx, const uint8_t *key, uint32_t klen)
{
	struct model *m = ctx;
	char buf[32];
	int k;

	memcpy(buf, key, klen < 31 ? klen : 31);
	buf[klen < 31 ? klen : 31] = 0;
	if (sscanf(buf, "key:%d", &k) == 1 && k >= 0 && k < NKEYS && m->present[k]) {
		m->present[k] = false;
		m->evicted++;
	}
}

static void agree(struct kv_table *t, struct model *m, int k, uint8_t *scratch)
{
	char key[32];
	uint32_t klen, vlen;
	const uint8_t *v;

	key_of(k, key, &klen);
	int r = kv_get(t, K(key), klen, 0, &v, &vlen);
	if (!m->present[k]) {
		CHECK(r == ENOENT);
		return;
	}
	CHECK(r == 0);
	if (r)
		return;
	CHECK(vlen == m->len[k]);
	fill(scratch, m->len[k], m->seed[k]);
	CHECK(vlen != m->len[k] || memcmp(v, scratch, vlen) == 0);
}

static void test_model(uint64_t seed)
{
	int before = check_failures;
	check_seed(seed);
	static uint64_t arena[(4 << 20) / 8];
	static uint8_t val[MAXV], scratch[MAXV];
	static struct model m;
	struct kv_table t;
	uint64_t rng[4];

	memset(&m, 0, sizeof(m));
	prng_seed(rng, seed);
	CHECK(kv_table_init(&t, arena, sizeof(arena), 0) == 0);
	t.on_evict = on_evict;
	t.evict_ctx = &m;
	for (int op = 0; op < 100000; op++) {
		int k = (int)(prng_next(rng) % NKEYS);
		unsigned what = (unsigned)(prng_next(rng) % 100);
		char key[32];
		uint32_t klen;

		key_of(k, key, &klen);
		if (what < 45) {
			/* Mostly small values, some up to 64 KiB. */
			uint32_t len = prng_next(rng) % 8 == 0 ? (uint32_t)(prng_next(rng) % MAXV)
								: (uint32_t)(prng_next(rng) % 600);
			uint32_t s = (uint32_t)prng_next(rng);
			fill(val, len, s);
			int r = kv_set(&t, K(key), klen, val, len, 0, 0);
			if (r == 0) {
				m.present[k] = true;
				m.len[k] = len;
				m.seed[k] = s;
			} else {
				/* ENOMEM: nothing of that size class to evict; the
				 * old value (if any) stays. */
				CHECK(r == ENOMEM);
			}
		} else if (what < 85) {
			agree(&t, &m, k, scratch);
		} else if (what < 95) {
			int r = kv_del(&t, K(key), klen, 0);
			CHECK(r == (m.present[k] ? 0 : ENOENT));
			m.present[k] = false;
		} else {
			/* INCR on a key that holds a number (its own namespace). */
			char nkey[32];
			uint32_t nlen = (uint32_t)snprintf(nkey, sizeof(nkey), "counter:%d", k % 50);
			int64_t before = 0, after;
			const uint8_t *v;
			uint32_t vl;
			if (kv_get(&t, K(nkey), nlen, 0, &v, &vl) == 0) {
				char tmp[24];
				memcpy(tmp, v, vl);
				tmp[vl] = 0;
				before = strtoll(tmp, NULL, 10);
			}
			int r = kv_incr(&t, K(nkey), nlen, 3, 0, &after);
			CHECK(r == 0 || r == ENOMEM);
			CHECK(r != 0 || after == before + 3);
		}
		agree(&t, &m, k, scratch);
		if (op % 5000 == 4999)
			for (int j = 0; j < NKEYS; j++)
				agree(&t, &m, j, scratch);
	}
	uint64_t n = 0, bytes = 0;
	for (int j = 0; j < NKEYS; j++)
		if (m.present[j]) {
			char key[32];
			uint32_t klen;
			key_of(j, key, &klen);
			n++;
			bytes += sizeof(struct kv_item) + klen + m.len[j];
		}
	/* The counters are items too: count them from the table. */
	uint64_t counters = 0, counter_bytes = 0;
	for (int c = 0; c < 50; c++) {
		char nkey[32];
		uint32_t nlen = (uint32_t)snprintf(nkey, sizeof(nkey), "counter:%d", c), vl;
		const uint8_t *v;
		if (kv_get(&t, K(nkey), nlen, 0, &v, &vl) == 0) {
			counters++;
			counter_bytes += sizeof(struct kv_item) + nlen + vl;
		}
	}
	CHECK(t.stats.items == n + counters);
	CHECK(t.stats.item_bytes == bytes + counter_bytes);
	CHECK(t.stats.evictions > 1000);        /* the arena was too small on purpose */
	printf("kv model seed %" PRIu64 ": %" PRIu64 " items, %" PRIu64 " evictions, %" PRIu64 " set failures\n",
	       seed, t.stats.items, t.stats.evictions, t.stats.set_failures);
	if (check_failures > before)
		check_replay("kv_table_test --seed %" PRIu64, seed);
	check_seeded = false;
}

/* ---- what a one-sided reader sees ------------------------------------------- */

/* Look a key up the way a Pilaf-style client does, on a copy of the arena
 * (its RDMA READs): the KV_PROBE buckets, then each candidate item. */
static int remote_get(const uint8_t *copy, const uint8_t *key, uint32_t klen, uint8_t *out, uint32_t *vlen,
		      uint64_t *item_off)
{
	struct kv_table_hdr hdr;
	struct kv_bucket b[KV_PROBE];
	uint64_t h = kv_hash(key, klen);

	memcpy(&hdr, copy, sizeof(hdr));
	if (hdr.magic != KV_TABLE_MAGIC)
		return EINVAL;
	memcpy(b, copy + hdr.buckets_off + (uint64_t)kv_home_bucket(h, hdr.nbuckets) * 64, sizeof(b));
	for (unsigned i = 0; i < KV_PROBE * KV_SLOTS; i++) {
		struct kv_slot s = b[i / KV_SLOTS].slot[i % KV_SLOTS];
		uint32_t voff, vl;
		if (s.tag != kv_tag(h))
			continue;
		uint64_t off = (uint64_t)s.off << 3;
		int r = kv_item_check(copy + off, sizeof(struct kv_item) + KV_MAX_KEY + 4096, key, klen, 0, &voff, &vl);
		if (r == ENOENT)
			continue;
		if (r)
			return r;
		memcpy(out, copy + off + voff, vl);
		*vlen = vl;
		*item_off = off;
		return 0;
	}
	return ENOENT;
}

static void test_onesided(void)
{
	static uint64_t arena[(1 << 20) / 8], copy[(1 << 20) / 8];
	struct kv_table t;
	uint8_t out[4096];
	uint32_t vlen;
	uint64_t off, off2;

	CHECK(kv_table_init(&t, arena, sizeof(arena), 0) == 0);
	CHECK(kv_set(&t, K("alpha"), 5, K("first value"), 11, 0, 0) == 0);
	CHECK(kv_set(&t, K("beta"), 4, K("second"), 6, 0, 0) == 0);
	memcpy(copy, arena, sizeof(arena));
	CHECK(remote_get((uint8_t *)copy, K("alpha"), 5, out, &vlen, &off) == 0 && vlen == 11 &&
	      memcmp(out, "first value", 11) == 0);
	CHECK(remote_get((uint8_t *)copy, K("gamma"), 5, out, &vlen, &off2) == ENOENT);

	/* A torn read: one byte of the value from a different write. */
	((uint8_t *)copy)[off + sizeof(struct kv_item) + 5 + 3] ^= 0x40;
	uint32_t voff, vl;
	CHECK(kv_item_check((uint8_t *)copy + off, 4096, K("alpha"), 5, 0, &voff, &vl) == EAGAIN);

	/* The bucket read before a DEL, the item read after it: free chunk. */
	memcpy(copy, arena, sizeof(arena));
	CHECK(kv_del(&t, K("alpha"), 5, 0) == 0);
	CHECK(kv_item_check((uint8_t *)arena + off, 4096, K("alpha"), 5, 0, &voff, &vl) == EAGAIN);
	/* ... and after the chunk went to another key of the same size. */
	CHECK(kv_set(&t, K("delta"), 5, K("other value"), 11, 0, 0) == 0);
	CHECK(kv_item_check((uint8_t *)arena + off, 4096, K("alpha"), 5, 0, &voff, &vl) == ENOENT);
	CHECK(kv_item_check((uint8_t *)arena + off, 4096, K("delta"), 5, 0, &voff, &vl) == 0);

	/* An expired item is not served one-sided either. */
	CHECK(kv_set(&t, K("ttl"), 3, K("x"), 1, 100, 0) == 0);
	memcpy(copy, arena, sizeof(arena));
	CHECK(remote_get((uint8_t *)copy, K("ttl"), 3, out, &vlen, &off) == 0);
	CHECK(kv_item_check((uint8_t *)copy + off, 4096, K("ttl"), 3, 100, &voff, &vl) == ENOENT);

	/* Garbage where an item should be never passes. */
	uint8_t junk[4096];
	uint64_t r[4];
	prng_seed(r, 7);
	for (int i = 0; i < 1000; i++) {
		for (size_t j = 0; j < sizeof(junk); j += 8) {
			uint64_t x = prng_next(r);
			memcpy(junk + j, &x, 8);
		}
		CHECK(kv_item_check(junk, sizeof(junk), K("alpha"), 5, 0, &voff, &vl) != 0);
	}
}

int main(int argc, char **argv)
{
	uint64_t seed = 1;

	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--seed") == 0)
			seed = strtoull(argv[i + 1], NULL, 0);
	test_basic();
	test_model(seed);
	test_model(seed + 1);
	test_onesided();
	if (check_failures)
		return check_exit("kv_table_test");
	printf("kv_table_test: ok\n");
	return 0;
}
