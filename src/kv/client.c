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
#include "kv/proto.h"

/* Work request ids: what completed, and which slot or buffer. */
enum { WR_REQUEST = 1, WR_READ = 2, WR_RECV = 3, WR_PROBE = 4, WR_AREAD = 5 };
#define WR_ID(kind, idx) ((uint64_t)(kind) << 32 | (uint32_t)(idx))
#define SQ_DEPTH (KV_DEPTH + 4u)
#define NO_SLOT 0xffu

/* An asynchronous one-sided GET (kv_submit_get_one_sided) in a request
 * slot: the same READs as kv_get_one_sided, one at a time, each posted
 * from the completion of the one before (on_wc -> os_step). */
enum os_step { OS_BUCKETS, OS_ITEM, OS_WHOLE };
struct one_sided {
	enum os_step step;
	uint8_t key[KV_MAX_KEY];
	uint32_t klen;
	uint64_t hash, now, id;
	struct kv_bucket b[KV_PROBE];
	unsigned cand;                  /* the bucket slot being looked at */
	uint64_t off;                   /* that candidate's item */
	uint32_t want;                  /* bytes of it being READ */
	bool retry;                     /* a candidate was torn: start over */
	unsigned attempts;
	enum kv_status status;          /* the result, once done */
	uint32_t voff, vlen;
};

struct kv_client {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	enum kv_transport transport;
	uint64_t spin_ns;
	uint8_t *req, *resp, *read;             /* KV_DEPTH slots each; read: one message */
	struct ibv_mr *req_mr, *resp_mr, *read_mr;
	uint8_t *aread;                         /* KV_DEPTH messages: async one-sided READs */
	struct ibv_mr *aread_mr;
	struct one_sided os[KV_DEPTH];
	bool slot_os[KV_DEPTH];                 /* slot i holds a one-sided GET */
	struct kv_hello hello;
	struct kv_table_hdr table;              /* read once, for the one-sided GET */
	bool one_sided_ok;
	int failed;                             /* an errno once the connection broke */
	bool armed;
	bool probing;                           /* a liveness probe is out */

	uint64_t next_id;
	uint64_t slot_id[KV_DEPTH];             /* the request in slot i; 0: free */
	bool slot_raw[KV_DEPTH];                /* kv_call_raw: match any answer */
	unsigned in_flight;
	unsigned sq_used;                       /* posted, not yet completed */
	unsigned recv_posted;
	uint32_t recv_free;                     /* KV_VIA_SEND: buffers to post again */
	/* Answers ready for kv_complete: FIFO of {slot, buffer, length}
	 * (one_sided: the result is in os[slot]). */
	struct ready { uint8_t slot, buf; uint32_t len; bool one_sided; } ready[KV_DEPTH];
	unsigned ready_head, ready_count;
	struct ready held;                      /* handed out last; freed on the next call */
	bool holding;
	bool read_done;
	enum ibv_wc_status read_status;
	uint64_t torn_retries;
};

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

static void fail(struct kv_client *c, int err)
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
		fail(c, EPROTO);
		return;
	}
	memcpy(&resp, c->resp + (size_t)buf * KV_SLOT_BYTES, sizeof(resp));
	if (resp.magic != KV_PROTO_MAGIC || sizeof(resp) + (uint64_t)resp.vlen > len) {
		fail(c, EPROTO);
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
		fail(c, EPROTO);        /* an answer to nothing we asked */
		return;
	}
	c->ready[(c->ready_head + c->ready_count++) % KV_DEPTH] =
		(struct ready){ .slot = (uint8_t)slot, .buf = (uint8_t)buf, .len = len };
	c->slot_raw[slot] = false;
	c->slot_id[slot] = ~0ull;       /* answered, not yet handed out */
}

static void os_advance(struct kv_client *c, unsigned slot);

/* Everything a completion means, in one place. */
static void on_wc(struct kv_client *c, const struct ibv_wc *wc)
{
	unsigned kind = (unsigned)(wc->wr_id >> 32), idx = (unsigned)(wc->wr_id & 0xffffffffu);

	if (kind == WR_AREAD) {
		c->sq_used--;
		if (wc->status != IBV_WC_SUCCESS || idx >= KV_DEPTH || !c->slot_os[idx])
			fail(c, wc->status == IBV_WC_REM_ACCESS_ERR ? EACCES : EIO);
		else
			os_advance(c, idx);
		return;
	}
	if (kind == WR_PROBE) {
		c->sq_used--;
		c->probing = false;
		if (wc->status != IBV_WC_SUCCESS)
			fail(c, EIO);           /* the server is gone */
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
			fail(c, EIO);
		return;
	}
	c->recv_posted--;
	if (wc->status != IBV_WC_SUCCESS) {
		fail(c, EIO);
		return;
	}
	if (c->transport == KV_VIA_WRITE_IMM) {
		uint32_t imm = ntohl(wc->imm_data);
		if (!(wc->wc_flags & IBV_WC_WITH_IMM) || KV_IMM_SLOT(imm) >= KV_DEPTH) {
			fail(c, EPROTO);
			return;
		}
		/* The receive carries no buffer: post it again at once. */
		if (post_recv(c, 0))
			fail(c, EIO);
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
static int progress(struct kv_client *c, bool wait)
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
static int release_held(struct kv_client *c)
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
	int e = release_held(c);

	if (e)
		fail(c, e);
	while (!c->ready_count) {
		if (c->failed)
			return -c->failed;
		if (!c->in_flight)
			return 0;
		int n = progress(c, wait);
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
static int take_slot_for(struct kv_client *c, unsigned *slot, bool needs_recv)
{
	if (c->failed)
		return c->failed;
	while (c->sq_used >= SQ_DEPTH) {
		int n = progress(c, true);
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
	return take_slot_for(c, slot, true);
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
		int n = progress(c, true);
		if (n < 0)
			return -n;
	}
	return c->read_status == IBV_WC_SUCCESS ? 0 : c->read_status == IBV_WC_REM_ACCESS_ERR ? EACCES : EIO;
}

/* RDMA READ len bytes of the server's arena at offset `off` into c->read
 * and wait for it. */
static int read_remote(struct kv_client *c, uint64_t off, uint32_t len)
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
	if (read_remote(c, 0, sizeof(c->table)) == 0) {
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
	if ((err = release_held(c)) != 0)
		return err;
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

/* READ len bytes at arena offset `off` into slot's buffer, for os_advance. */
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
			fail(c, EIO);
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
		fail(c, EIO);
}

/* A READ of slot's lookup completed: the next step. */
static void os_advance(struct kv_client *c, unsigned slot)
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
				fail(c, EIO);
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
	if ((e = take_slot_for(c, &slot, false)) != 0)
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
