/*
 * client.c — the key-value client library: one connection to one server
 * through librdmacm, KV_DEPTH request slots, one CQ for everything.
 *
 * A request goes out from slot i of c->req, as a SEND or as an RDMA
 * WRITE-with-immediate into the server's slot i (proto.h, the two
 * transports).  Its answer lands in c->resp: in any receive buffer for
 * KV_VIA_SEND (matched by id), in slot i for KV_VIA_WRITE_IMM (the slot is
 * in the immediate).  Completions are handled in one place (on_wc) and
 * finished answers wait in a small FIFO until kv_complete hands them out.
 * The buffer an answer was handed out in is held until the next
 * kv_complete, so its value stays readable.
 *
 * Waiting polls the CQ for spin_us, then arms the completion channel and
 * sleeps: a busy loop costs a core, a sleep costs a wake-up (several
 * microseconds on a VM), so short waits spin and long ones sleep.
 *
 * The GETs that READ the server's table instead of asking it are in
 * client_onesided.c; they share this connection, its slots, CQ and FIFO
 * (client_int.h).
 */
#include "kv/client.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "base/clock.h"
#include "kv/client_int.h"
#include "kv/proto.h"

void kv_close(struct kv_client *c)
{
	if (!c)
		return;
	if (c->id) {
		rdma_disconnect(c->id);
		if (c->id->qp)
			rdma_destroy_qp(c->id);
	}
	if (c->req_mr)
		ibv_dereg_mr(c->req_mr);
	if (c->resp_mr)
		ibv_dereg_mr(c->resp_mr);
	if (c->read_mr)
		ibv_dereg_mr(c->read_mr);
	if (c->aread_mr)
		ibv_dereg_mr(c->aread_mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->channel)
		ibv_destroy_comp_channel(c->channel);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_ep(c->id);
	free(c->req);
	free(c->resp);
	free(c->read);
	free(c->aread);
	free(c);
}

static int post_recv(struct kv_client *c, unsigned buf)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(c->resp + (size_t)buf * KV_SLOT_BYTES), .length = KV_MSG_MAX,
			       .lkey = c->resp_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_ID(WR_RECV, buf), .sg_list = &sge, .num_sge = 1 }, *bad;

	if (c->transport == KV_VIA_WRITE_IMM)
		wr.num_sge = 0;                 /* the immediate only: the data is in the slot */
	if (ibv_post_recv(c->id->qp, &wr, &bad))
		return errno ? errno : EIO;
	c->recv_posted++;
	return 0;
}

void kvc_fail(struct kv_client *c, int err)
{
	if (!c->failed)
		c->failed = err;
}

/* Queue a finished answer, found in receive buffer `buf` (or slot). */
static void answer_ready(struct kv_client *c, unsigned buf, uint32_t len, uint32_t imm_slot)
{
	struct kv_resp resp;
	unsigned slot = NO_SLOT;

	if (len < sizeof(resp) || len > KV_MSG_MAX) {
		kvc_fail(c, EPROTO);
		return;
	}
	memcpy(&resp, c->resp + (size_t)buf * KV_SLOT_BYTES, sizeof(resp));
	if (resp.magic != KV_PROTO_MAGIC || sizeof(resp) + (uint64_t)resp.vlen > len) {
		kvc_fail(c, EPROTO);
		return;
	}
	if (imm_slot != NO_SLOT) {
		if (c->slot_id[imm_slot] && !c->slot_os[imm_slot] &&
		    (c->slot_raw[imm_slot] || c->slot_id[imm_slot] == resp.id))
			slot = imm_slot;
	} else {
		for (unsigned i = 0; i < KV_DEPTH && slot == NO_SLOT; i++)
			if (c->slot_id[i] && !c->slot_raw[i] && !c->slot_os[i] && c->slot_id[i] == resp.id)
				slot = i;
		for (unsigned i = 0; i < KV_DEPTH && slot == NO_SLOT; i++)
			if (c->slot_id[i] && c->slot_raw[i])
				slot = i;
	}
	if (slot == NO_SLOT) {
		kvc_fail(c, EPROTO);        /* an answer to nothing we asked */
		return;
	}
	c->ready[(c->ready_head + c->ready_count++) % KV_DEPTH] =
		(struct ready){ .slot = (uint8_t)slot, .buf = (uint8_t)buf, .len = len };
	c->slot_raw[slot] = false;
	c->slot_id[slot] = ~0ull;       /* answered, not yet handed out */
}

/* Everything a completion means, in one place. */
static void on_wc(struct kv_client *c, const struct ibv_wc *wc)
{
	unsigned kind = (unsigned)(wc->wr_id >> 32), idx = (unsigned)(wc->wr_id & 0xffffffffu);

	if (kind == WR_AREAD) {
		c->sq_used--;
		if (wc->status != IBV_WC_SUCCESS || idx >= KV_DEPTH || !c->slot_os[idx])
			kvc_fail(c, wc->status == IBV_WC_REM_ACCESS_ERR ? EACCES : EIO);
		else
			kvc_os_advance(c, idx);
		return;
	}
	if (kind == WR_PROBE) {
		c->sq_used--;
		c->probing = false;
		if (wc->status != IBV_WC_SUCCESS)
			kvc_fail(c, EIO);           /* the server is gone */
		return;
	}
	if (kind == WR_REQUEST || kind == WR_READ) {
		c->sq_used--;
		if (kind == WR_READ) {
			c->read_done = true;
			c->read_status = wc->status;
			return;
		}
		if (wc->status != IBV_WC_SUCCESS)
			kvc_fail(c, EIO);
		return;
	}
	c->recv_posted--;
	if (wc->status != IBV_WC_SUCCESS) {
		kvc_fail(c, EIO);
		return;
	}
	if (c->transport == KV_VIA_WRITE_IMM) {
		uint32_t imm = ntohl(wc->imm_data);
		if (!(wc->wc_flags & IBV_WC_WITH_IMM) || KV_IMM_SLOT(imm) >= KV_DEPTH) {
			kvc_fail(c, EPROTO);
			return;
		}
		/* The receive carries no buffer: post it again at once. */
		if (post_recv(c, 0))
			kvc_fail(c, EIO);
		answer_ready(c, KV_IMM_SLOT(imm), KV_IMM_LEN(imm), KV_IMM_SLOT(imm));
	} else {
		answer_ready(c, idx, wc->byte_len, NO_SLOT);
	}
}

/* A second without an answer: a zero-length RDMA WRITE (no memory, no
 * key check) that the server's NIC must acknowledge.  If the server has
 * died after taking the request, its retries run out and the wait ends
 * with EIO instead of lasting for ever. */
static void probe_server(struct kv_client *c)
{
	struct ibv_send_wr wr = { .wr_id = WR_ID(WR_PROBE, 0), .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (c->probing || c->sq_used >= SQ_DEPTH)
		return;
	wr.wr.rdma.remote_addr = c->hello.req_addr;
	wr.wr.rdma.rkey = c->hello.req_rkey;
	if (ibv_post_send(c->id->qp, &wr, &bad) == 0) {
		c->sq_used++;
		c->probing = true;
	}
}

/* Handle one completion: 1, 0 if none (and !wait), or -errno. */
int kvc_progress(struct kv_client *c, bool wait)
{
	uint64_t spin_until = 0;
	struct ibv_wc wc;

	for (;;) {
		int n = ibv_poll_cq(c->cq, 1, &wc);
		if (n < 0)
			return -EIO;
		if (n == 1) {
			on_wc(c, &wc);
			return 1;
		}
		if (!wait)
			return 0;
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		if (!spin_until)
			spin_until = now + c->spin_ns;
		if (now < spin_until)
			continue;
		if (!c->armed) {
			if (ibv_req_notify_cq(c->cq, 0))
				return -EIO;
			c->armed = true;
			continue;       /* poll once more: a completion may have raced the arming */
		}
		struct pollfd p = { .fd = c->channel->fd, .events = POLLIN };
		int r = poll(&p, 1, 1000);
		if (r > 0) {
			struct ibv_cq *cq;
			void *ctx;
			if (ibv_get_cq_event(c->channel, &cq, &ctx) == 0)
				ibv_ack_cq_events(cq, 1);
			c->armed = false;
		} else if (r == 0) {
			probe_server(c);
		}
	}
}

/* Free what the last handed-out answer held. */
int kvc_release_held(struct kv_client *c)
{
	if (!c->holding)
		return 0;
	c->holding = false;
	c->slot_id[c->held.slot] = 0;
	c->in_flight--;
	if (c->held.one_sided) {
		c->slot_os[c->held.slot] = false;
		return 0;
	}
	if (c->transport == KV_VIA_SEND)
		return post_recv(c, c->held.buf);
	return 0;
}

int kv_complete(struct kv_client *c, struct kv_result *res, bool wait)
{
	int e = kvc_release_held(c);

	if (e)
		kvc_fail(c, e);
	while (!c->ready_count) {
		if (c->failed)
			return -c->failed;
		if (!c->in_flight)
			return 0;
		int n = kvc_progress(c, wait);
		if (n <= 0)
			return n;
	}
	struct ready r = c->ready[c->ready_head];
	c->ready_head = (c->ready_head + 1) % KV_DEPTH;
	c->ready_count--;
	c->held = r;
	c->holding = true;
	if (r.one_sided) {
		const struct one_sided *o = &c->os[r.slot];
		res->status = o->status;
		res->number = 0;
		res->vlen = o->status == KV_OK ? o->vlen : 0;
		res->value = o->status == KV_OK ? c->aread + (size_t)r.slot * KV_MSG_MAX + o->voff : NULL;
		res->token = o->id;
		return 1;
	}
	struct kv_resp resp;
	const uint8_t *buf = c->resp + (size_t)r.buf * KV_SLOT_BYTES;
	memcpy(&resp, buf, sizeof(resp));
	res->status = (enum kv_status)resp.status;
	res->number = resp.number;
	res->vlen = resp.vlen;
	res->value = buf + sizeof(resp);
	res->token = resp.id;
	return 1;
}

unsigned kv_in_flight(const struct kv_client *c)
{
	return c->in_flight - (c->holding ? 1u : 0u);
}

/* Room for one more request: a free slot, a send queue entry, and (SEND)
 * a posted receive for its answer (not for a one-sided GET, whose answer
 * is its READs).  Sets *slot. */
int kvc_take_slot_for(struct kv_client *c, unsigned *slot, bool needs_recv)
{
	if (c->failed)
		return c->failed;
	while (c->sq_used >= SQ_DEPTH) {
		int n = kvc_progress(c, true);
		if (n < 0)
			return -n;
	}
	if (needs_recv && c->transport == KV_VIA_SEND && c->in_flight >= c->recv_posted + (c->holding ? 1u : 0u))
		return EBUSY;
	for (unsigned i = 0; i < KV_DEPTH; i++) {
		if (!c->slot_id[i]) {
			*slot = i;
			return 0;
		}
	}
	return EBUSY;
}

static int take_slot(struct kv_client *c, unsigned *slot)
{
	return kvc_take_slot_for(c, slot, true);
}

/* Send the `len` bytes in request slot `slot` as request `id`. */
static int post_request(struct kv_client *c, unsigned slot, uint32_t len, uint64_t id, bool raw)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(c->req + (size_t)slot * KV_SLOT_BYTES), .length = len,
			       .lkey = c->req_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_ID(WR_REQUEST, slot), .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (c->transport == KV_VIA_WRITE_IMM) {
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(KV_IMM(slot, len));
		wr.wr.rdma.remote_addr = c->hello.req_addr + (uint64_t)slot * KV_SLOT_BYTES;
		wr.wr.rdma.rkey = c->hello.req_rkey;
	}
	if (ibv_post_send(c->id->qp, &wr, &bad))
		return errno ? errno : EIO;
	c->sq_used++;
	c->slot_id[slot] = id;
	c->slot_raw[slot] = raw;
	c->in_flight++;
	return 0;
}

int kv_submit(struct kv_client *c, enum kv_op op, const void *key, uint32_t klen, const void *val, uint32_t vlen,
	      int64_t arg, uint64_t *token)
{
	struct kv_req req = { .magic = KV_PROTO_MAGIC, .op = (uint8_t)op, .klen = (uint16_t)klen, .vlen = vlen,
			      .id = ++c->next_id, .arg = arg };
	unsigned slot;
	int e;

	if (klen > KV_MAX_KEY || vlen > KV_MAX_VALUE)
		return EINVAL;
	if ((e = take_slot(c, &slot)) != 0)
		return e;
	uint8_t *p = c->req + (size_t)slot * KV_SLOT_BYTES;
	memcpy(p, &req, sizeof(req));
	if (klen)
		memcpy(p + sizeof(req), key, klen);
	if (vlen)
		memcpy(p + sizeof(req) + klen, val, vlen);
	if ((e = post_request(c, slot, (uint32_t)sizeof(req) + klen + vlen, req.id, false)) != 0)
		return e;
	*token = req.id;
	return 0;
}

/* Wait for the answer to the only request in flight. */
static int wait_one(struct kv_client *c, struct kv_result *res)
{
	int n = kv_complete(c, res, true);

	return n == 1 ? 0 : n < 0 ? -n : EIO;
}

int kv_call(struct kv_client *c, enum kv_op op, const void *key, uint32_t klen, const void *val, uint32_t vlen,
	    int64_t arg, struct kv_result *res)
{
	uint64_t token;
	int e;

	if (kv_in_flight(c))
		return EBUSY;
	if ((e = kv_submit(c, op, key, klen, val, vlen, arg, &token)) != 0)
		return e;
	return wait_one(c, res);
}

int kv_call_raw(struct kv_client *c, const void *msg, uint32_t len, struct kv_result *res)
{
	unsigned slot;
	int e;

	if (len > KV_MSG_MAX)
		return EINVAL;
	if (kv_in_flight(c))
		return EBUSY;
	if ((e = take_slot(c, &slot)) != 0)
		return e;
	memcpy(c->req + (size_t)slot * KV_SLOT_BYTES, msg, len);
	if ((e = post_request(c, slot, len, ++c->next_id, true)) != 0)
		return e;
	return wait_one(c, res);
}

struct kv_client *kv_connect(const char *host, const char *port, int *err)
{
	struct kv_client_opts o = KV_CLIENT_DEFAULTS;

	return kv_connect_opts(host, port, &o, err);
}

struct kv_client *kv_connect_opts(const char *host, const char *port, const struct kv_client_opts *o, int *err)
{
	struct rdma_addrinfo hints, *ai = NULL;
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param param;
	struct kv_client_hello mine;
	struct kv_client *c = calloc(1, sizeof(*c));
	int e = 0;

	if (!c) {
		*err = ENOMEM;
		return NULL;
	}
	c->transport = o->transport;
	c->spin_ns = (uint64_t)o->spin_us * 1000;
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(host, port, &hints, &ai) || rdma_create_ep(&c->id, ai, NULL, NULL)) {
		e = errno ? errno : EINVAL;
		c->id = NULL;
		goto fail;
	}
	/* The verbs objects: one CQ with a channel for sends, READs and answers. */
	c->pd = ibv_alloc_pd(c->id->verbs);
	c->channel = c->pd ? ibv_create_comp_channel(c->id->verbs) : NULL;
	c->cq = c->channel ? ibv_create_cq(c->id->verbs, (int)(SQ_DEPTH + KV_DEPTH), NULL, c->channel, 0) : NULL;
	c->req = malloc((size_t)KV_DEPTH * KV_SLOT_BYTES);
	c->resp = malloc((size_t)KV_DEPTH * KV_SLOT_BYTES);
	c->read = malloc(KV_MSG_MAX);      /* where READs land: local write only */
	c->aread = malloc((size_t)KV_DEPTH * KV_MSG_MAX);
	if (!c->cq || !c->req || !c->resp || !c->read || !c->aread) {
		e = errno ? errno : ENOMEM;
		goto fail;
	}
	c->req_mr = ibv_reg_mr(c->pd, c->req, (size_t)KV_DEPTH * KV_SLOT_BYTES, 0);
	c->resp_mr = ibv_reg_mr(c->pd, c->resp, (size_t)KV_DEPTH * KV_SLOT_BYTES,
				IBV_ACCESS_LOCAL_WRITE |
					(c->transport == KV_VIA_WRITE_IMM ? IBV_ACCESS_REMOTE_WRITE : 0));
	c->read_mr = ibv_reg_mr(c->pd, c->read, KV_MSG_MAX, IBV_ACCESS_LOCAL_WRITE);
	c->aread_mr = ibv_reg_mr(c->pd, c->aread, (size_t)KV_DEPTH * KV_MSG_MAX, IBV_ACCESS_LOCAL_WRITE);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = SQ_DEPTH;
	qa.cap.max_recv_wr = KV_DEPTH;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!c->req_mr || !c->resp_mr || !c->read_mr || !c->aread_mr || rdma_create_qp(c->id, c->pd, &qa)) {
		e = errno ? errno : ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < KV_DEPTH; i++)
		if ((e = post_recv(c, i)) != 0)
			goto fail;
	mine = (struct kv_client_hello){ .magic = KV_PROTO_MAGIC, .transport = c->transport,
					 .resp_rkey = c->resp_mr->rkey, .resp_addr = (uintptr_t)c->resp };
	memset(&param, 0, sizeof(param));
	param.private_data = &mine;
	param.private_data_len = sizeof(mine);
	param.initiator_depth = 16;
	param.responder_resources = 0;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(c->id, &param)) {
		e = errno ? errno : ECONNREFUSED;
		goto fail;
	}
	/* The server's hello: where its table and our request slots are;
	 * then the table's header, read once (for the one-sided GET). */
	if (c->id->event && c->id->event->param.conn.private_data_len >= sizeof(c->hello))
		memcpy(&c->hello, c->id->event->param.conn.private_data, sizeof(c->hello));
	if (c->hello.magic != KV_PROTO_MAGIC || c->hello.transport != (uint32_t)c->transport) {
		e = EPROTO;             /* not a kv server, or one that refused the transport */
		goto fail;
	}
	if (kvc_read_remote(c, 0, sizeof(c->table)) == 0) {
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

enum kv_transport kv_client_transport(const struct kv_client *c)
{
	return c->transport;
}

int kv_mget(struct kv_client *c, unsigned n, const char *const *keys, struct kv_result *res,
	    const uint8_t **values, uint32_t *vlens)
{
	struct kv_req req = { .magic = KV_PROTO_MAGIC, .op = KV_OP_MGET };
	uint8_t *msg;
	uint32_t at = sizeof(req);
	unsigned slot;
	int err;

	if (n < 1 || n > KV_MGET_MAX)
		return EINVAL;
	if (kv_in_flight(c))
		return EBUSY;
	if ((err = take_slot(c, &slot)) != 0)
		return err;
	msg = c->req + (size_t)slot * KV_SLOT_BYTES;
	for (unsigned i = 0; i < n; i++) {
		size_t kl = strlen(keys[i]);
		uint16_t k16 = (uint16_t)kl;
		if (kl < 1 || kl > KV_MAX_KEY)
			return EINVAL;
		memcpy(msg + at, &k16, 2);
		memcpy(msg + at + 2, keys[i], kl);
		at += 2 + (uint32_t)kl;
	}
	req.vlen = at - (uint32_t)sizeof(req);
	req.id = ++c->next_id;
	memcpy(msg, &req, sizeof(req));
	if ((err = post_request(c, slot, at, req.id, false)) != 0 || (err = wait_one(c, res)) != 0)
		return err;
	if (res->status != KV_OK)
		return 0;
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
