/*
 * client_onesided.c — the key-value client's GETs without the server's
 * CPU: RDMA READs of the server's table (Pilaf-style, table.h) over the
 * connection client.c made.  kv_get_one_sided reads and waits, one READ
 * after another; kv_submit_get_one_sided runs the same lookup in one of
 * the KV_DEPTH request slots, each READ posted from the completion of the
 * one before (client.c's on_wc calls kvc_os_advance) and its result
 * handed back by kv_complete like an answer.  kv_probe_remote is the
 * tests' READ or WRITE anywhere with the table's rkey.
 */
#include "kv/client.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "kv/client_int.h"
#include "kv/proto.h"
#include "kv/table.h"

/* Post a one-sided WR (wr_id WR_READ) and wait for its completion: 0,
 * EACCES (a remote access error) or EIO. */
static int post_and_wait(struct kv_client *c, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	if (ibv_post_send(c->id->qp, wr, &bad))
		return errno ? errno : EIO;
	c->sq_used++;
	c->read_done = false;
	while (!c->read_done) {
		int n = kvc_progress(c, true);
		if (n < 0)
			return -n;
	}
	return c->read_status == IBV_WC_SUCCESS ? 0 : c->read_status == IBV_WC_REM_ACCESS_ERR ? EACCES : EIO;
}

/* RDMA READ len bytes of the server's arena at offset `off` into c->read
 * and wait for it. */
int kvc_read_remote(struct kv_client *c, uint64_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)c->read, .length = len, .lkey = c->read_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_ID(WR_READ, 0), .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED };

	if (off > c->hello.size || len > c->hello.size - off || len > KV_MSG_MAX)
		return EINVAL;
	if (c->failed)
		return c->failed;
	wr.wr.rdma.remote_addr = c->hello.addr + off;
	wr.wr.rdma.rkey = c->hello.rkey;
	return post_and_wait(c, &wr);
}

/* Pilaf-style: READ the key's KV_PROBE buckets, then each candidate item
 * (its first 4 KiB, and the rest if it is longer); kv_item_check decides.
 * A chunk that changed under the READ (EAGAIN) restarts the lookup. */
int kv_get_one_sided(struct kv_client *c, const void *key, uint32_t klen, uint64_t now, struct kv_result *res)
{
	uint64_t h = kv_hash(key, klen);
	struct kv_bucket b[KV_PROBE];
	int err;

	if (!c->one_sided_ok)
		return EOPNOTSUPP;
	if (klen < 1 || klen > KV_MAX_KEY)
		return EINVAL;
	if (kv_in_flight(c))
		return EBUSY;
	if ((err = kvc_release_held(c)) != 0)
		return err;
	for (int attempt = 0; attempt < 64; attempt++) {
		bool retry = false;

		err = kvc_read_remote(c, c->table.buckets_off + (uint64_t)kv_home_bucket(h, c->table.nbuckets) * 64,
				  sizeof(b));
		if (err)
			return err;
		memcpy(b, c->read, sizeof(b));
		for (unsigned i = 0; i < KV_PROBE * KV_SLOTS && !retry; i++) {
			struct kv_slot s = b[i / KV_SLOTS].slot[i % KV_SLOTS];
			uint64_t off = (uint64_t)s.off << 3;
			uint32_t voff, vlen, want = 4096;
			struct kv_item hdr;

			if (s.tag != kv_tag(h) || off < c->table.slab_off || off >= c->hello.size)
				continue;
			if (want > c->hello.size - off)
				want = (uint32_t)(c->hello.size - off);
			if ((err = kvc_read_remote(c, off, want)) != 0)
				return err;
			/* Longer than the first read: read it whole (a header
			 * that is garbage fails the check below either way). */
			memcpy(&hdr, c->read, sizeof(hdr));
			uint64_t whole = sizeof(hdr) + (uint64_t)hdr.klen + hdr.vlen;
			if (hdr.klen <= KV_MAX_KEY && hdr.vlen <= KV_MAX_VALUE && whole > want &&
			    whole <= c->hello.size - off) {
				if ((err = kvc_read_remote(c, off, (uint32_t)whole)) != 0)
					return err;
				want = (uint32_t)whole;
			}
			err = kv_item_check(c->read, want, key, klen, now, &voff, &vlen);
			if (err == ENOENT)
				continue;
			if (err == EAGAIN) {
				c->torn_retries++;
				retry = true;
				continue;
			}
			res->status = KV_OK;
			res->number = 0;
			res->value = c->read + voff;
			res->vlen = vlen;
			res->token = 0;
			return 0;
		}
		if (!retry) {
			res->status = KV_NOT_FOUND;
			res->value = NULL;
			res->vlen = 0;
			res->token = 0;
			return 0;
		}
	}
	return EAGAIN;
}

/* ---- the asynchronous one-sided GET ------------------------------------ */

/* READ len bytes at arena offset `off` into slot's buffer, for kvc_os_advance. */
static int post_aread(struct kv_client *c, unsigned slot, uint64_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(c->aread + (size_t)slot * KV_MSG_MAX), .length = len,
			       .lkey = c->aread_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_ID(WR_AREAD, slot), .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (off > c->hello.size || len > c->hello.size - off || len > KV_MSG_MAX)
		return EINVAL;
	wr.wr.rdma.remote_addr = c->hello.addr + off;
	wr.wr.rdma.rkey = c->hello.rkey;
	if (ibv_post_send(c->id->qp, &wr, &bad))
		return errno ? errno : EIO;
	c->sq_used++;
	return 0;
}

static void os_done(struct kv_client *c, unsigned slot, enum kv_status st)
{
	c->os[slot].status = st;
	c->ready[(c->ready_head + c->ready_count++) % KV_DEPTH] =
		(struct ready){ .slot = (uint8_t)slot, .one_sided = true };
	c->slot_id[slot] = ~0ull;       /* answered, not yet handed out */
}

/* Look at the bucket slots from o->cand on: READ the next candidate's
 * first 4 KiB, or finish (not found), or start over (a torn candidate). */
static void os_next_candidate(struct kv_client *c, unsigned slot)
{
	struct one_sided *o = &c->os[slot];

	for (; o->cand < KV_PROBE * KV_SLOTS && !o->retry; o->cand++) {
		struct kv_slot s = o->b[o->cand / KV_SLOTS].slot[o->cand % KV_SLOTS];
		uint64_t off = (uint64_t)s.off << 3;

		if (s.tag != kv_tag(o->hash) || off < c->table.slab_off || off >= c->hello.size)
			continue;
		o->off = off;
		o->want = c->hello.size - off < 4096 ? (uint32_t)(c->hello.size - off) : 4096;
		o->step = OS_ITEM;
		if (post_aread(c, slot, off, o->want))
			kvc_fail(c, EIO);
		return;
	}
	if (!o->retry) {
		os_done(c, slot, KV_NOT_FOUND);
		return;
	}
	/* As kv_get_one_sided: 64 lookups torn by SETs in a row is an error
	 * of the connection's caller to see (EAGAIN there, here the I/O
	 * error status: kv_result has no errno). */
	if (++o->attempts >= 64) {
		os_done(c, slot, KV_IO_ERROR);
		return;
	}
	o->retry = false;
	o->step = OS_BUCKETS;
	if (post_aread(c, slot, c->table.buckets_off + (uint64_t)kv_home_bucket(o->hash, c->table.nbuckets) * 64,
		       sizeof(o->b)))
		kvc_fail(c, EIO);
}

/* A READ of slot's lookup completed: the next step. */
void kvc_os_advance(struct kv_client *c, unsigned slot)
{
	struct one_sided *o = &c->os[slot];
	const uint8_t *buf = c->aread + (size_t)slot * KV_MSG_MAX;

	if (o->step == OS_BUCKETS) {
		memcpy(o->b, buf, sizeof(o->b));
		o->cand = 0;
		os_next_candidate(c, slot);
		return;
	}
	if (o->step == OS_ITEM) {
		struct kv_item hdr;
		memcpy(&hdr, buf, sizeof(hdr));
		uint64_t whole = sizeof(hdr) + (uint64_t)hdr.klen + hdr.vlen;
		if (hdr.klen <= KV_MAX_KEY && hdr.vlen <= KV_MAX_VALUE && whole > o->want &&
		    whole <= c->hello.size - o->off) {
			o->want = (uint32_t)whole;
			o->step = OS_WHOLE;
			if (post_aread(c, slot, o->off, o->want))
				kvc_fail(c, EIO);
			return;
		}
	}
	int err = kv_item_check(buf, o->want, o->key, o->klen, o->now, &o->voff, &o->vlen);
	if (err == 0) {
		os_done(c, slot, KV_OK);
		return;
	}
	if (err == EAGAIN) {
		c->torn_retries++;
		o->retry = true;
	}
	o->cand++;
	os_next_candidate(c, slot);
}

int kv_submit_get_one_sided(struct kv_client *c, const void *key, uint32_t klen, uint64_t now, uint64_t *token)
{
	unsigned slot;
	int e;

	if (!c->one_sided_ok)
		return EOPNOTSUPP;
	if (klen < 1 || klen > KV_MAX_KEY)
		return EINVAL;
	if ((e = kvc_take_slot_for(c, &slot, false)) != 0)
		return e;
	struct one_sided *o = &c->os[slot];
	memset(o, 0, sizeof(*o));
	memcpy(o->key, key, klen);
	o->klen = klen;
	o->hash = kv_hash(key, klen);
	o->now = now;
	o->id = ++c->next_id;
	o->step = OS_BUCKETS;
	e = post_aread(c, slot, c->table.buckets_off + (uint64_t)kv_home_bucket(o->hash, c->table.nbuckets) * 64,
		       sizeof(o->b));
	if (e)
		return e;
	c->slot_id[slot] = o->id;
	c->slot_os[slot] = true;
	c->in_flight++;
	*token = o->id;
	return 0;
}

uint64_t kv_torn_retries(const struct kv_client *c)
{
	return c->torn_retries;
}

int kv_probe_remote(struct kv_client *c, bool write, int64_t offset, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)c->read, .length = len, .lkey = c->read_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_ID(WR_READ, 0), .sg_list = &sge, .num_sge = 1,
				  .opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED };

	if (len > KV_MSG_MAX || !c->hello.rkey)
		return EINVAL;
	wr.wr.rdma.remote_addr = c->hello.addr + (uint64_t)offset;
	wr.wr.rdma.rkey = c->hello.rkey;
	return post_and_wait(c, &wr);
}
