/*
 * fuzz_kv.c — the key-value store's parsers and table under fuzzed input
 * (src/kv): every byte a client or a log can hand the server.
 *
 *   kv_req_parse    a request: if accepted, every length it promises lies
 *                   inside the message (the MGET keys walked again here)
 *   kv_item_check   bytes a one-sided reader got: if accepted, the value
 *                   lies inside them and the key is the one asked for
 *   kv_aof_parse    a log record: if accepted, it lies inside the input
 *   kv_aof_check    the input as a whole log: its verdict's offsets lie
 *                   inside it, every record it applies lies inside it and
 *                   ends where the next begins, and a VALID log is all
 *                   records, to the last byte
 *   the table       the input as a program of SET/GET/DEL/INCR on a small
 *                   arena (eviction all the time); GET returns what the
 *                   last SET of that key stored unless an eviction
 *                   reported dropping it, and the item count never drifts
 * A violation aborts; ASan and UBSan catch any read or write outside.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "kv/aof.h"
#include "kv/proto.h"
#include "kv/table.h"

#define NK 8

struct model {
	bool present[NK];
	uint8_t val[NK][600];
	uint32_t len[NK];
	uint64_t items;
};

static struct model m;

static int key_index(const uint8_t *key, uint32_t klen)
{
	return klen == 2 && key[0] == 'k' && key[1] >= '0' && key[1] < '0' + NK ? key[1] - '0' : -1;
}

static void on_evict(void *ctx, const uint8_t *key, uint32_t klen)
{
	(void)ctx;
	int k = key_index(key, klen);
	if (k >= 0)
		m.present[k] = false;
}

struct walk {
	const uint8_t *base;
	uint64_t size, at, records;
};

static void on_record(void *ctx, const struct kv_aof_view *v)
{
	struct walk *w = ctx;

	FUZZ_ASSERT(v->key >= w->base + w->at && v->val + v->vlen <= w->base + w->size);
	w->at = (uint64_t)(v->val + v->vlen - w->base);
	w->records++;
}

static void run_table(const uint8_t *data, size_t size)
{
	static uint64_t arena[(64 * 1024) / 8];
	struct kv_table t;
	size_t at = 0;

	memset(&m, 0, sizeof(m));
	FUZZ_ASSERT(kv_table_init(&t, arena, sizeof(arena), 16) == 0);
	t.on_evict = on_evict;
	while (at + 3 <= size) {
		uint8_t op = data[at] % 4, k = data[at + 1] % NK;
		uint32_t len = (uint32_t)data[at + 2] * 3 % 600;
		uint8_t key[2] = { 'k', (uint8_t)('0' + k) };
		const uint8_t *v;
		uint32_t vl;
		int64_t n;
		at += 3;
		if (op == 0) {
			if (len > size - at)
				len = (uint32_t)(size - at);
			int r = kv_set(&t, key, 2, data + at, len, 0, 0);
			FUZZ_ASSERT(r == 0 || r == ENOMEM);
			if (r == 0) {
				m.present[k] = true;
				memcpy(m.val[k], data + at, len);
				m.len[k] = len;
			}
			at += len;
		} else if (op == 1) {
			int r = kv_get(&t, key, 2, 0, &v, &vl);
			FUZZ_ASSERT((r == 0) == m.present[k]);
			FUZZ_ASSERT(r != 0 || (vl == m.len[k] && memcmp(v, m.val[k], vl) == 0));
		} else if (op == 2) {
			int r = kv_del(&t, key, 2, 0);
			FUZZ_ASSERT((r == 0) == m.present[k]);
			m.present[k] = false;
		} else {
			int r = kv_incr(&t, key, 2, 1, 0, &n);
			FUZZ_ASSERT(r == 0 || r == EINVAL || r == ERANGE || r == ENOMEM);
			if (r == 0 && kv_get(&t, key, 2, 0, &v, &vl) == 0) {
				m.present[k] = true;
				memcpy(m.val[k], v, vl);
				m.len[k] = vl;
			}
		}
		uint64_t items = 0;
		for (int i = 0; i < NK; i++)
			items += m.present[i];
		FUZZ_ASSERT(t.stats.items == items);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_req req;
	struct kv_aof_view v;
	uint32_t voff, vlen;

	if (size > KV_MSG_MAX)
		return 0;
	/* A request. */
	if (kv_req_parse(data, (uint32_t)size, &req) == KV_OK) {
		FUZZ_ASSERT(sizeof(req) + (uint64_t)req.klen + req.vlen == size);
		if (req.op == KV_OP_MGET) {
			uint32_t at = 0;
			while (at < req.vlen) {
				uint16_t kl;
				memcpy(&kl, data + sizeof(req) + at, 2);
				FUZZ_ASSERT(kl >= 1 && kl <= KV_MAX_KEY && at + 2u + kl <= req.vlen);
				at += 2u + kl;
			}
		}
	}
	/* A one-sided read. */
	static const uint8_t key[] = "fuzzkey";
	if (kv_item_check(data, size, key, 7, 5, &voff, &vlen) == 0) {
		FUZZ_ASSERT((uint64_t)voff + vlen <= size && voff >= 32 + 7);
		FUZZ_ASSERT(memcmp(data + 32, key, 7) == 0);
	}
	/* A log record. */
	uint32_t n = kv_aof_parse(data, size, &v);
	if (n) {
		FUZZ_ASSERT(n <= size && v.key >= data && v.val + v.vlen <= data + n);
		FUZZ_ASSERT(v.klen >= 1 && v.klen <= KV_MAX_KEY);
	}
	/* A whole log. */
	struct kv_aof_check c;
	struct walk w = { .base = data, .size = size };
	kv_aof_check(data, size, &c, on_record, &w);
	FUZZ_ASSERT(c.good <= size && c.records == w.records && w.at <= c.good);
	if (c.state == KV_AOF_VALID)
		FUZZ_ASSERT(c.good == size);
	if (c.state == KV_AOF_CORRUPT && c.resync)
		FUZZ_ASSERT(c.resync > c.good && c.resync < size);
	/* The table. */
	run_table(data, size);
	return 0;
}
