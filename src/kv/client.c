/*
 * client.c — the key-value client library: one connection to one server
 * through librdmacm (rdma_create_ep, a synchronous id), requests as SENDs
 * and answers into a receive buffer (proto.h).
 *
 * Synchronous: kv_call sends one request and waits for its answer, so the
 * library keeps one request in flight (the server allows KV_DEPTH).
 * Batched and asynchronous calls, sharding over several servers and the
 * one-sided GET are the next steps (issue 13).
 */
#include "kv/client.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "kv/proto.h"

struct kv_client {
	struct rdma_cm_id *id;
	uint8_t *send, *recv, *read;
	struct ibv_mr *send_mr, *recv_mr, *read_mr;
	struct kv_hello hello;
	struct kv_table_hdr table;      /* read once, for the one-sided GET */
	bool one_sided_ok;
	uint64_t next_id;
	uint64_t torn_retries;
};

void kv_close(struct kv_client *c)
{
	if (!c)
		return;
	if (c->id) {
		rdma_disconnect(c->id);
		if (c->send_mr)
			rdma_dereg_mr(c->send_mr);
		if (c->recv_mr)
			rdma_dereg_mr(c->recv_mr);
		if (c->read_mr)
			ibv_dereg_mr(c->read_mr);
		rdma_destroy_ep(c->id);
	}
	free(c->send);
	free(c->recv);
	free(c->read);
	free(c);
}

/* RDMA READ len bytes of the server's arena at offset `off` into c->read. */
static int read_remote(struct kv_client *c, uint64_t off, uint32_t len)
{
	struct ibv_wc wc;

	if (off > c->hello.size || len > c->hello.size - off || len > KV_MSG_MAX)
		return EINVAL;
	if (rdma_post_read(c->id, NULL, c->read, len, c->read_mr, 0, c->hello.addr + off, c->hello.rkey))
		return errno ? errno : EIO;
	if (rdma_get_send_comp(c->id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
		return EIO;
	return 0;
}

struct kv_client *kv_connect(const char *host, const char *port, int *err)
{
	struct rdma_addrinfo hints, *ai = NULL;
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param param;
	struct kv_client *c = calloc(1, sizeof(*c));
	int e = 0;

	if (!c) {
		*err = ENOMEM;
		return NULL;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(host, port, &hints, &ai)) {
		e = errno ? errno : EINVAL;
		goto fail;
	}
	memset(&qa, 0, sizeof(qa));
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	if (rdma_create_ep(&c->id, ai, NULL, &qa)) {
		e = errno ? errno : EINVAL;
		c->id = NULL;
		goto fail;
	}
	c->send = malloc(KV_MSG_MAX);
	c->recv = malloc(KV_MSG_MAX);
	if (!c->send || !c->recv) {
		e = ENOMEM;
		goto fail;
	}
	c->send_mr = rdma_reg_msgs(c->id, c->send, KV_MSG_MAX);
	c->recv_mr = rdma_reg_msgs(c->id, c->recv, KV_MSG_MAX);
	if (!c->send_mr || !c->recv_mr || rdma_post_recv(c->id, NULL, c->recv, KV_MSG_MAX, c->recv_mr)) {
		e = errno ? errno : ENOMEM;
		goto fail;
	}
	memset(&param, 0, sizeof(param));
	param.initiator_depth = 16;
	param.responder_resources = 0;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(c->id, &param)) {
		e = errno ? errno : ECONNREFUSED;
		goto fail;
	}
	/* The server's hello: where its table is; then the table's header,
	 * read once (for the one-sided GET). */
	if (c->id->event && c->id->event->param.conn.private_data_len >= sizeof(c->hello))
		memcpy(&c->hello, c->id->event->param.conn.private_data, sizeof(c->hello));
	c->read = malloc(KV_MSG_MAX);      /* where READs land: local write only */
	c->read_mr = c->read ? ibv_reg_mr(c->id->pd, c->read, KV_MSG_MAX, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (c->hello.magic == KV_PROTO_MAGIC && c->read_mr && read_remote(c, 0, sizeof(c->table)) == 0) {
		memcpy(&c->table, c->read, sizeof(c->table));
		c->one_sided_ok = c->table.magic == KV_TABLE_MAGIC && c->table.nbuckets;
	}
	rdma_freeaddrinfo(ai);
	return c;
fail:
	if (ai)
		rdma_freeaddrinfo(ai);
	kv_close(c);
	*err = e;
	return NULL;
}

/* Send `len` bytes already in c->send and read the answer to request id. */
static int exchange(struct kv_client *c, uint32_t len, uint64_t id, bool check_id, struct kv_result *res)
{
	struct ibv_wc wc;
	struct kv_resp resp;

	if (rdma_post_send(c->id, NULL, c->send, len, c->send_mr, 0))
		return errno ? errno : EIO;
	if (rdma_get_send_comp(c->id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
		return EIO;
	if (rdma_get_recv_comp(c->id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
		return EIO;
	if (wc.byte_len < sizeof(resp))
		return EPROTO;
	memcpy(&resp, c->recv, sizeof(resp));
	if (resp.magic != KV_PROTO_MAGIC || (check_id && resp.id != id) ||
	    sizeof(resp) + (uint64_t)resp.vlen > wc.byte_len)
		return EPROTO;
	res->status = (enum kv_status)resp.status;
	res->number = resp.number;
	res->vlen = resp.vlen;
	res->value = c->recv + sizeof(resp);    /* valid until the next call */
	/* The receive for the next answer; this one's bytes stay readable
	 * until then (the next answer lands only after the next request). */
	if (rdma_post_recv(c->id, NULL, c->recv, KV_MSG_MAX, c->recv_mr))
		return errno ? errno : EIO;
	return 0;
}

int kv_call_raw(struct kv_client *c, const void *msg, uint32_t len, struct kv_result *res)
{
	if (len > KV_MSG_MAX)
		return EINVAL;
	memcpy(c->send, msg, len);
	return exchange(c, len, 0, false, res);
}

int kv_call(struct kv_client *c, enum kv_op op, const void *key, uint32_t klen, const void *val, uint32_t vlen,
	    int64_t arg, struct kv_result *res)
{
	struct kv_req req = { .magic = KV_PROTO_MAGIC, .op = (uint8_t)op, .klen = (uint16_t)klen, .vlen = vlen,
			      .id = ++c->next_id, .arg = arg };
	if (klen > KV_MAX_KEY || vlen > KV_MAX_VALUE)
		return EINVAL;
	memcpy(c->send, &req, sizeof(req));
	if (klen)
		memcpy(c->send + sizeof(req), key, klen);
	if (vlen)
		memcpy(c->send + sizeof(req) + klen, val, vlen);
	return exchange(c, (uint32_t)sizeof(req) + klen + vlen, req.id, true, res);
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
	for (int attempt = 0; attempt < 64; attempt++) {
		bool retry = false;

		err = read_remote(c, c->table.buckets_off + (uint64_t)kv_home_bucket(h, c->table.nbuckets) * 64,
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
			if ((err = read_remote(c, off, want)) != 0)
				return err;
			/* Longer than the first read: read it whole (a header
			 * that is garbage fails the check below either way). */
			memcpy(&hdr, c->read, sizeof(hdr));
			uint64_t whole = sizeof(hdr) + (uint64_t)hdr.klen + hdr.vlen;
			if (hdr.klen <= KV_MAX_KEY && hdr.vlen <= KV_MAX_VALUE && whole > want &&
			    whole <= c->hello.size - off) {
				if ((err = read_remote(c, off, (uint32_t)whole)) != 0)
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
			return 0;
		}
		if (!retry) {
			res->status = KV_NOT_FOUND;
			res->value = NULL;
			res->vlen = 0;
			return 0;
		}
	}
	return EAGAIN;
}

uint64_t kv_torn_retries(const struct kv_client *c)
{
	return c->torn_retries;
}

int kv_probe_remote(struct kv_client *c, bool write, int64_t offset, uint32_t len)
{
	struct ibv_wc wc;
	uint64_t remote = c->hello.addr + (uint64_t)offset;
	int r;

	if (len > KV_MSG_MAX || !c->hello.rkey)
		return EINVAL;
	r = write ? rdma_post_write(c->id, NULL, c->read, len, c->read_mr, 0, remote, c->hello.rkey)
		  : rdma_post_read(c->id, NULL, c->read, len, c->read_mr, 0, remote, c->hello.rkey);
	if (r)
		return errno ? errno : EIO;
	if (rdma_get_send_comp(c->id, &wc) <= 0)
		return EIO;
	return wc.status == IBV_WC_SUCCESS ? 0 : wc.status == IBV_WC_REM_ACCESS_ERR ? EACCES : EIO;
}

int kv_mget(struct kv_client *c, unsigned n, const char *const *keys, struct kv_result *res,
	    const uint8_t **values, uint32_t *vlens)
{
	struct kv_req req = { .magic = KV_PROTO_MAGIC, .op = KV_OP_MGET, .id = ++c->next_id };
	uint32_t at = sizeof(req);
	int err;

	if (n < 1 || n > KV_MGET_MAX)
		return EINVAL;
	for (unsigned i = 0; i < n; i++) {
		size_t kl = strlen(keys[i]);
		uint16_t k16 = (uint16_t)kl;
		if (kl < 1 || kl > KV_MAX_KEY)
			return EINVAL;
		memcpy(c->send + at, &k16, 2);
		memcpy(c->send + at + 2, keys[i], kl);
		at += 2 + (uint32_t)kl;
	}
	req.vlen = at - (uint32_t)sizeof(req);
	memcpy(c->send, &req, sizeof(req));
	err = exchange(c, at, req.id, true, res);
	if (err || res->status != KV_OK)
		return err;
	/* One entry per key, each checked against the answer's length. */
	const uint8_t *p = res->value, *end = res->value + res->vlen;
	for (unsigned i = 0; i < n; i++) {
		uint32_t vl;
		if (end - p < 4)
			return EPROTO;
		memcpy(&vl, p, 4);
		p += 4;
		if (vl == KV_MGET_MISSING) {
			values[i] = NULL;
			vlens[i] = 0;
			continue;
		}
		if ((uint64_t)(end - p) < vl)
			return EPROTO;
		values[i] = p;
		vlens[i] = vl;
		p += vl;
	}
	return p == end ? 0 : EPROTO;
}
