/*
 * table.c — the KV table in its arena (layout and rules: table.h).
 */
#include "kv/table.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "wire/crc32.h"

#define ITEM_HDR ((uint32_t)sizeof(struct kv_item))

_Static_assert(sizeof(struct kv_bucket) == 64, "a bucket is one 64-byte read");
_Static_assert(sizeof(struct kv_table_hdr) == 64, "the header is 64 bytes");
_Static_assert(sizeof(struct kv_item) == 32, "item header");

uint64_t kv_hash(const uint8_t *key, uint32_t klen)
{
	uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a 64 */

	for (uint32_t i = 0; i < klen; i++) {
		h ^= key[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint32_t item_crc(uint32_t klen, uint32_t vlen, const uint8_t *key, const uint8_t *val)
{
	uint32_t lens[2] = { klen, vlen };
	uint32_t c = wire_crc32(0, lens, sizeof(lens));

	c = wire_crc32(c, key, klen);
	return wire_crc32(c, val, vlen);
}

static int size_class(uint64_t bytes)
{
	for (int k = 0; k < (int)KV_CLASSES; k++)
		if ((uint64_t)KV_MIN_CHUNK << k >= bytes)
			return k;
	return -1;
}

static struct kv_item *item_at(const struct kv_table *t, uint64_t off)
{
	return (struct kv_item *)(t->base + off);
}

/* The item a slot names, and its offset. */
static uint64_t slot_off(const struct kv_slot *s)
{
	return (uint64_t)s->off << 3;
}

static struct kv_item *slot_item(const struct kv_table *t, const struct kv_slot *s)
{
	return item_at(t, slot_off(s));
}

static uint32_t total_buckets(const struct kv_table *t)
{
	return t->hdr->nbuckets + KV_PROBE - 1;
}

int kv_table_init(struct kv_table *t, void *arena, size_t size, uint32_t nbuckets)
{
	memset(t, 0, sizeof(*t));
	if (!arena || ((uintptr_t)arena & 7) || size < 64 * 1024 || size > ((uint64_t)UINT32_MAX << 3))
		return EINVAL;
	if (!nbuckets)
		nbuckets = (uint32_t)(size / 512);
	uint64_t buckets_bytes = ((uint64_t)nbuckets + KV_PROBE - 1) * sizeof(struct kv_bucket);
	if (64 + buckets_bytes + KV_MIN_CHUNK > size)
		return EINVAL;
	t->base = arena;
	t->size = size;
	t->hdr = arena;
	t->buckets = (struct kv_bucket *)(t->base + 64);
	memset(t->base, 0, 64 + buckets_bytes);
	t->hdr->nbuckets = nbuckets;
	t->hdr->buckets_off = 64;
	t->hdr->slab_off = (64 + buckets_bytes + 63) & ~63ull;
	t->hdr->slab_size = size - t->hdr->slab_off;
	t->bump = t->hdr->slab_off;
	__atomic_store_n(&t->hdr->magic, KV_TABLE_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* ---- chunks ------------------------------------------------------------------ */

static void chunk_free(struct kv_table *t, uint64_t off)
{
	struct kv_item *it = item_at(t, off);
	int cls = it->cls;

	t->stats.items--;
	t->stats.item_bytes -= ITEM_HDR + it->klen + it->vlen;
	/* Odd version first: a reader of this chunk now fails its check. */
	__atomic_store_n(&it->version, it->version | 1u, __ATOMIC_RELEASE);
	it->expire_ns = t->free_head[cls];      /* the free list's link */
	t->free_head[cls] = off;
}

static void slot_clear(struct kv_slot *s)
{
	__atomic_store_n(&s->word, 0, __ATOMIC_RELEASE);
}

static void slot_set(struct kv_slot *s, uint32_t tag, uint64_t off)
{
	struct kv_slot v;

	v.tag = tag;
	v.off = (uint32_t)(off >> 3);
	__atomic_store_n(&s->word, v.word, __ATOMIC_RELEASE);
}

/* Drop the item in slot s to make room. */
static void evict(struct kv_table *t, struct kv_slot *s)
{
	uint64_t off = slot_off(s);
	struct kv_item *it = item_at(t, off);

	if (t->on_evict)
		t->on_evict(t->evict_ctx, (const uint8_t *)(it + 1), it->klen);
	slot_clear(s);
	chunk_free(t, off);
	t->stats.evictions++;
}

static uint64_t free_pop(struct kv_table *t, int cls)
{
	uint64_t off = t->free_head[cls];

	t->free_head[cls] = item_at(t, off)->expire_ns;        /* the list's link */
	return off;
}

/* A chunk of class cls: a free one, a new one, or an evicted one (CLOCK
 * over every slot, at most two turns).  0 when none can be had. */
static uint64_t chunk_alloc(struct kv_table *t, int cls)
{
	uint64_t bytes = (uint64_t)KV_MIN_CHUNK << cls, off;
	uint32_t nslots = total_buckets(t) * KV_SLOTS;

	if (t->free_head[cls])
		return free_pop(t, cls);
	if (t->bump + bytes <= t->size) {
		off = t->bump;
		t->bump += bytes;
		item_at(t, off)->version = 1;   /* never live yet */
		item_at(t, off)->cls = (uint8_t)cls;
		return off;
	}
	for (uint32_t n = 0; n < 2 * nslots; n++) {
		uint32_t i = t->clock_hand;
		struct kv_slot *s = &t->buckets[i / KV_SLOTS].slot[i % KV_SLOTS];

		t->clock_hand = (i + 1) % nslots;
		if (!s->tag)
			continue;
		struct kv_item *it = slot_item(t, s);
		if (it->cls != cls)
			continue;
		if (it->referenced) {
			it->referenced = 0;
			continue;
		}
		evict(t, s);
		return free_pop(t, cls);
	}
	return 0;
}

/* ---- lookup --------------------------------------------------------------------- */

static bool key_ok(uint32_t klen)
{
	return klen >= 1 && klen <= KV_MAX_KEY;
}

static struct kv_slot *find(struct kv_table *t, const uint8_t *key, uint32_t klen, uint64_t hash)
{
	uint32_t home = kv_home_bucket(hash, t->hdr->nbuckets), tag = kv_tag(hash);

	for (uint32_t b = home; b < home + KV_PROBE; b++)
		for (uint32_t k = 0; k < KV_SLOTS; k++) {
			struct kv_slot *s = &t->buckets[b].slot[k];
			if (s->tag != tag)
				continue;
			struct kv_item *it = slot_item(t, s);
			if (it->klen == klen && memcmp(it + 1, key, klen) == 0)
				return s;
		}
	return NULL;
}

/* find, dropping an expired item on the way (ENOENT then). */
static struct kv_slot *find_live(struct kv_table *t, const uint8_t *key, uint32_t klen, uint64_t hash,
				 uint64_t now)
{
	struct kv_slot *s = find(t, key, klen, hash);

	if (s) {
		struct kv_item *it = slot_item(t, s);
		if (it->expire_ns && it->expire_ns <= now) {
			uint64_t off = slot_off(s);
			slot_clear(s);
			chunk_free(t, off);
			t->stats.expired++;
			return NULL;
		}
	}
	return s;
}

void kv_table_foreach(const struct kv_table *t, uint64_t now, kv_item_fn fn, void *ctx)
{
	for (uint32_t b = 0; b < total_buckets(t); b++) {
		for (unsigned i = 0; i < KV_SLOTS; i++) {
			const struct kv_slot *s = &t->buckets[b].slot[i];
			if (!s->tag)
				continue;
			const struct kv_item *it = slot_item(t, s);
			if ((it->version & 1) || (it->expire_ns && it->expire_ns <= now))
				continue;
			const uint8_t *key = (const uint8_t *)(it + 1);
			fn(ctx, key, it->klen, key + it->klen, it->vlen, it->expire_ns);
		}
	}
}

/* The live item of a key (expired ones dropped on the way), or NULL. */
static struct kv_item *lookup(struct kv_table *t, const uint8_t *key, uint32_t klen, uint64_t now)
{
	struct kv_slot *s = find_live(t, key, klen, kv_hash(key, klen), now);

	return s ? slot_item(t, s) : NULL;
}

int kv_get(struct kv_table *t, const uint8_t *key, uint32_t klen, uint64_t now, const uint8_t **val,
	   uint32_t *vlen)
{
	struct kv_item *it;

	if (!key_ok(klen))
		return EINVAL;
	t->stats.gets++;
	it = lookup(t, key, klen, now);
	if (!it)
		return ENOENT;
	it->referenced = 1;
	*val = (const uint8_t *)(it + 1) + it->klen;
	*vlen = it->vlen;
	t->stats.get_hits++;
	return 0;
}

int kv_peek(struct kv_table *t, const uint8_t *key, uint32_t klen, uint64_t now, const uint8_t **val,
	    uint32_t *vlen, uint64_t *expire_ns)
{
	struct kv_item *it;

	if (!key_ok(klen))
		return EINVAL;
	it = lookup(t, key, klen, now);
	if (!it)
		return ENOENT;
	*val = (const uint8_t *)(it + 1) + it->klen;
	*vlen = it->vlen;
	*expire_ns = it->expire_ns;
	return 0;
}

int kv_set(struct kv_table *t, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen,
	   uint64_t expire_ns, uint64_t now)
{
	uint64_t hash, off;
	int cls;

	if (!key_ok(klen) || vlen > KV_MAX_VALUE || (vlen && !val))
		return EINVAL;
	cls = size_class((uint64_t)ITEM_HDR + klen + vlen);
	t->stats.sets++;
	/* The chunk first: eviction may take this key's old item. */
	off = chunk_alloc(t, cls);
	if (!off) {
		t->stats.set_failures++;
		return ENOMEM;
	}
	struct kv_item *it = item_at(t, off);
	it->cls = (uint8_t)cls;
	it->referenced = 0;
	it->klen = klen;
	it->vlen = vlen;
	it->expire_ns = expire_ns;
	memcpy(it + 1, key, klen);
	if (vlen)
		memcpy((uint8_t *)(it + 1) + klen, val, vlen);
	it->crc = item_crc(klen, vlen, key, (const uint8_t *)(it + 1) + klen);
	__atomic_store_n(&it->version, (it->version | 1u) + 1u, __ATOMIC_RELEASE);   /* even: live */
	t->stats.items++;
	t->stats.item_bytes += ITEM_HDR + klen + vlen;

	hash = kv_hash(key, klen);
	struct kv_slot *s = find_live(t, key, klen, hash, now);
	if (s) {
		uint64_t old = slot_off(s);
		slot_set(s, kv_tag(hash), off);
		chunk_free(t, old);
		return 0;
	}
	/* A free slot in the key's buckets, or the first unreferenced one
	 * there made free (every slot of those buckets full: rare with one
	 * bucket per 512 bytes). */
	uint32_t home = kv_home_bucket(hash, t->hdr->nbuckets);
	struct kv_slot *victim = NULL;
	for (uint32_t b = home; b < home + KV_PROBE && !s; b++)
		for (uint32_t k = 0; k < KV_SLOTS && !s; k++) {
			struct kv_slot *c = &t->buckets[b].slot[k];
			if (!c->tag)
				s = c;
			else if (!victim && !slot_item(t, c)->referenced)
				victim = c;
		}
	if (!s) {
		s = victim ? victim : &t->buckets[home].slot[0];
		evict(t, s);
	}
	slot_set(s, kv_tag(hash), off);
	return 0;
}

int kv_del(struct kv_table *t, const uint8_t *key, uint32_t klen, uint64_t now)
{
	struct kv_slot *s;

	if (!key_ok(klen))
		return EINVAL;
	t->stats.dels++;
	s = find_live(t, key, klen, kv_hash(key, klen), now);
	if (!s)
		return ENOENT;
	uint64_t off = slot_off(s);
	slot_clear(s);
	chunk_free(t, off);
	return 0;
}

/* A decimal int64 exactly as Redis accepts it: optional '-', digits, no
 * spaces, no leading '+', no leading zeros except "0". */
static bool parse_int64(const uint8_t *p, uint32_t n, int64_t *out)
{
	bool neg = n && p[0] == '-';
	uint32_t i = neg;
	uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

	if (n == 0 || n > 20 || i == n || (p[i] == '0' && n - i > 1) || (neg && p[i] == '0'))
		return false;
	for (; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		uint64_t d = (uint64_t)(p[i] - '0');
		if (v > (limit - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

int kv_incr(struct kv_table *t, const uint8_t *key, uint32_t klen, int64_t delta, uint64_t now, int64_t *out)
{
	struct kv_slot *s;
	int64_t cur = 0, next;
	uint64_t expire = 0;
	char buf[24];
	int n;

	if (!key_ok(klen))
		return EINVAL;
	t->stats.incrs++;
	s = find_live(t, key, klen, kv_hash(key, klen), now);
	if (s) {
		struct kv_item *it = slot_item(t, s);
		if (!parse_int64((const uint8_t *)(it + 1) + it->klen, it->vlen, &cur))
			return EINVAL;
		expire = it->expire_ns;
	}
	if (__builtin_add_overflow(cur, delta, &next))
		return ERANGE;
	n = snprintf(buf, sizeof(buf), "%" PRId64, next);
	int err = kv_set(t, key, klen, (const uint8_t *)buf, (uint32_t)n, expire, now);
	if (err)
		return err;
	*out = next;
	return 0;
}

/* ---- the one-sided reader's check ----------------------------------------------- */

int kv_item_check(const uint8_t *item, size_t len, const uint8_t *key, uint32_t klen, uint64_t now,
		  uint32_t *val_off, uint32_t *vlen)
{
	struct kv_item h;

	if (len < ITEM_HDR)
		return EAGAIN;
	memcpy(&h, item, sizeof(h));
	if (h.version & 1u)
		return EAGAIN;                  /* free or being rewritten */
	if (h.klen > KV_MAX_KEY || h.vlen > KV_MAX_VALUE || ITEM_HDR + (uint64_t)h.klen + h.vlen > len)
		return EAGAIN;                  /* garbage: a torn or reused chunk */
	if (h.crc != item_crc(h.klen, h.vlen, item + ITEM_HDR, item + ITEM_HDR + h.klen))
		return EAGAIN;                  /* torn by a concurrent SET */
	if (h.klen != klen || memcmp(item + ITEM_HDR, key, klen) != 0)
		return ENOENT;                  /* a whole item, another key */
	if (h.expire_ns && h.expire_ns <= now)
		return ENOENT;
	*val_off = ITEM_HDR + h.klen;
	*vlen = h.vlen;
	return 0;
}
