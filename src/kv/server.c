/*
 * server.c — the key-value server: one thread, one table (table.c) in a
 * registered arena, clients connected through librdmacm.
 *
 * The loop sleeps in poll() on two fds: the rdma_cm event channel
 * (connect requests, disconnects) and one completion channel shared by
 * every connection's CQ (or, with busy_poll, polls both without
 * sleeping).  Each connection has KV_DEPTH request slots and as many
 * response slots; a request in slot i is answered from response slot i.
 * The client picks the transport (proto.h): SENDs into receive buffers,
 * or WRITE-with-immediate into its request slots, which are registered
 * for remote write, for that connection only.  The arena is registered
 * for REMOTE_READ and its address and rkey go to every client in the
 * accept's private data, for the one-sided GET (table.h).
 *
 * With an append-only file (aof.h) every change is logged before it is
 * answered, and the log is replayed when the server starts; a log that
 * does not parse is refused, untouched (only a torn last record is cut).
 *
 * Faults.  A malformed request gets KV_BAD_REQUEST and the connection
 * goes on.  A connection is reclaimed — its QP, buffers and slot in
 * s->conns freed — when its client disconnects, when an answer cannot be
 * delivered (the client died: retries run out; or it stopped posting
 * receives: the RNR retries, finite on the server's side, run out), and
 * when a client that has been quiet for probe_ms does not acknowledge a
 * zero-length RDMA WRITE (a process killed between requests: no kernel
 * tells the server it has gone).  Work requests carry a connection's
 * index and generation, so a completion for a reclaimed connection is
 * recognised and dropped, even when its index has been reused.
 */
#include "kv/server.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "base/clock.h"
#include "kv/aof.h"
#include "kv/proto.h"

/* Connections at once: a connection's index is 16 bits of its work
 * request ids; the device's QPs (max_qp) and MRs (two per connection,
 * max_mr) may bound it lower: a connection the device cannot hold is
 * refused. */
#define MAX_CONNS 65535u
/* Completion queue entries a connection can have outstanding: its
 * KV_DEPTH receives, KV_DEPTH answers and a probe.  The shared CQ grows
 * (ibv_resize_cq) to hold them for every connection, so it cannot
 * overflow however many clients are connected. */
#define CQE_PER_CONN (2u * KV_DEPTH + 1u)
#define CQ_MIN 4096u
/* Work request ids: generation (32 bits) | connection index (16) | kind (8) | slot (8). */
enum { WR_REQUEST = 1, WR_ANSWER = 2, WR_PROBE = 3 };
#define WR_ID(c, kind, slot) ((uint64_t)(c)->gen << 32 | (uint64_t)(c)->index << 16 | (kind) << 8 | (slot))
/* The server's QP retries an answer the client cannot take (no receive
 * posted: RNR) this many times, then the connection is reclaimed.  Not 7,
 * which means "retry for ever" (ibv_modify_qp(3), rnr_retry).  The
 * connection manager would give our QP the RNR Retry Count of the
 * client's REQ (IBTA 12.6.5; the kernel's ib_cm does so), which a client
 * chooses, and 7 by default: so the QP is not the id's (rdma_create_qp),
 * and we move it to RTR and RTS ourselves (accept_qp). */
#define SERVER_RNR_RETRY 6

struct conn {
	struct rdma_cm_id *id;
	struct ibv_qp *qp;              /* ours, not the id's (SERVER_RNR_RETRY) */
	uint32_t gen;
	uint16_t index;
	enum kv_transport transport;
	uint8_t *req, *resp;            /* KV_DEPTH slots of KV_SLOT_BYTES */
	struct ibv_mr *req_mr, *resp_mr;
	uint64_t resp_addr;             /* KV_VIA_WRITE_IMM: the client's slots */
	uint32_t resp_rkey;
	uint64_t last_heard_ns;         /* a request or a probe's acknowledgement */
	unsigned live_pos;              /* where it is in s->live */
	bool probing;
};

struct server {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp;
	struct ibv_cq *cq;
	struct ibv_mr *arena_mr;
	uint8_t *arena;
	size_t arena_size;
	struct kv_table table;
	struct kv_aof aof;              /* fd -1: no log */
	struct conn **conns;            /* MAX_CONNS, by index (work request ids) */
	struct conn **live;             /* the nconns connections, packed: walks cost what is connected */
	uint16_t *free_idx;             /* indexes not in use, a stack: O(1) per connect */
	unsigned nfree;
	unsigned cq_cap;                /* entries the CQ holds */
	uint32_t next_gen;
	unsigned nconns;
	uint64_t requests, bad_requests, connections, reclaimed;
	uint64_t probe_ns;
	uint64_t aof_rewrite_min;
	bool verbose;
};

/* The table's clock: real time, so that TTLs outlive a restart. */
static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

static void conn_free(struct conn *c)
{
	if (c->qp)
		ibv_destroy_qp(c->qp);
	if (c->req_mr)
		ibv_dereg_mr(c->req_mr);
	if (c->resp_mr)
		ibv_dereg_mr(c->resp_mr);
	free(c->req);
	free(c->resp);
	if (c->id)
		rdma_destroy_id(c->id);
	free(c);
}

/* Take a connection out of the table and free it; `why` for -v. */
static void conn_drop(struct server *s, struct conn *c, bool reclaimed, const char *why)
{
	s->conns[c->index] = NULL;
	s->live[c->live_pos] = s->live[--s->nconns];
	s->live[c->live_pos]->live_pos = c->live_pos;
	s->free_idx[s->nfree++] = c->index;
	if (reclaimed)
		s->reclaimed++;
	if (s->verbose)
		fprintf(stderr, "kv: client %u gone (%s)\n", c->index, why);
	rdma_disconnect(c->id);
	conn_free(c);
}

static struct conn *conn_of(struct server *s, uint64_t wr_id)
{
	unsigned index = (unsigned)(wr_id >> 16 & 0xffff);
	struct conn *c = index < MAX_CONNS ? s->conns[index] : NULL;

	return c && c->gen == (uint32_t)(wr_id >> 32) ? c : NULL;
}

/* Our QP through INIT, RTR and RTS with what the connection request
 * says (rdma_init_qp_attr), but for our own RNR retry count
 * (SERVER_RNR_RETRY): what rdma_accept does for a QP that is the id's. */
static int accept_qp(struct rdma_cm_id *id, struct ibv_qp *qp)
{
	static const enum ibv_qp_state steps[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };

	for (unsigned i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct ibv_qp_attr attr = { .qp_state = steps[i] };
		int mask;

		if (rdma_init_qp_attr(id, &attr, &mask))
			return -1;
		if (steps[i] == IBV_QPS_RTS)
			attr.rnr_retry = SERVER_RNR_RETRY;
		if (ibv_modify_qp(qp, &attr, mask))
			return -1;
	}
	return 0;
}

static int post_recv(struct conn *c, unsigned slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(c->req + (size_t)slot * KV_SLOT_BYTES), .length = KV_MSG_MAX,
			       .lkey = c->req_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_ID(c, WR_REQUEST, slot), .sg_list = &sge, .num_sge = 1 }, *bad;

	if (c->transport == KV_VIA_WRITE_IMM)
		wr.num_sge = 0;         /* the request is written into its slot; this takes the immediate */
	return ibv_post_recv(c->qp, &wr, &bad);
}

/* The verbs objects every connection shares, made on the first request
 * (the listening id has no device until then). */
static int setup_device(struct server *s, struct ibv_context *verbs)
{
	if (s->verbs)
		return s->verbs == verbs ? 0 : EINVAL;
	s->verbs = verbs;
	s->pd = ibv_alloc_pd(verbs);
	s->comp = s->pd ? ibv_create_comp_channel(verbs) : NULL;
	s->cq = s->comp ? ibv_create_cq(verbs, CQ_MIN, NULL, s->comp, 0) : NULL;
	s->cq_cap = s->cq ? (unsigned)s->cq->cqe : 0;
	s->arena_mr = s->cq ? ibv_reg_mr(s->pd, s->arena, s->arena_size, IBV_ACCESS_LOCAL_WRITE |
									 IBV_ACCESS_REMOTE_READ)
			    : NULL;
	if (!s->arena_mr || ibv_req_notify_cq(s->cq, 0))
		return errno ? errno : ENOMEM;
	return 0;
}

/* Room in the CQ for one more connection's completions: grow it by
 * half again when full (the entries queued stay).  0 or an errno. */
static int cq_room_for_one_more(struct server *s)
{
	unsigned need = (s->nconns + 1) * CQE_PER_CONN;

	if (need <= s->cq_cap)
		return 0;
	unsigned want = s->cq_cap + s->cq_cap / 2;
	if (want < need)
		want = need;
	int e = ibv_resize_cq(s->cq, (int)want);
	if (e)
		return e;
	s->cq_cap = (unsigned)s->cq->cqe;
	return s->cq_cap >= need ? 0 : ENOMEM;
}

static void on_connect_request(struct server *s, struct rdma_cm_id *id, const struct rdma_conn_param *asked)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct kv_client_hello theirs = { 0 };
	struct ibv_qp_init_attr qa;
	struct kv_hello hello;
	struct rdma_conn_param param;
	unsigned index;

	if (!c || !s->nfree) {
		if (s->verbose)
			fprintf(stderr, "kv: refusing a client: %s\n", c ? "MAX_CONNS connected" : "out of memory");
		free(c);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	index = s->free_idx[s->nfree - 1];
	c->id = id;
	c->index = (uint16_t)index;
	c->gen = ++s->next_gen;
	/* The client's hello picks the transport; none (another program): SEND. */
	if (asked->private_data && asked->private_data_len >= sizeof(theirs))
		memcpy(&theirs, asked->private_data, sizeof(theirs));
	if (theirs.magic == KV_PROTO_MAGIC && theirs.transport == KV_VIA_WRITE_IMM) {
		c->transport = KV_VIA_WRITE_IMM;
		c->resp_addr = theirs.resp_addr;
		c->resp_rkey = theirs.resp_rkey;
	}
	if (setup_device(s, id->verbs) || cq_room_for_one_more(s))
		goto refuse;
	c->req = malloc((size_t)KV_DEPTH * KV_SLOT_BYTES);
	c->resp = malloc((size_t)KV_DEPTH * KV_SLOT_BYTES);
	if (!c->req || !c->resp)
		goto refuse;
	/* The request slots: remote write only for the transport that
	 * writes them, and this rkey is this connection's alone. */
	c->req_mr = ibv_reg_mr(s->pd, c->req, (size_t)KV_DEPTH * KV_SLOT_BYTES,
			       IBV_ACCESS_LOCAL_WRITE |
				       (c->transport == KV_VIA_WRITE_IMM ? IBV_ACCESS_REMOTE_WRITE : 0));
	c->resp_mr = ibv_reg_mr(s->pd, c->resp, (size_t)KV_DEPTH * KV_SLOT_BYTES, 0);
	if (!c->req_mr || !c->resp_mr)
		goto refuse;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = KV_DEPTH + 1;      /* the answers and a probe */
	qa.cap.max_recv_wr = KV_DEPTH;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	c->qp = ibv_create_qp(s->pd, &qa);
	if (!c->qp || accept_qp(id, c->qp))
		goto refuse;
	for (unsigned i = 0; i < KV_DEPTH; i++)
		if (post_recv(c, i))
			goto refuse;
	hello = (struct kv_hello){ .magic = KV_PROTO_MAGIC, .rkey = s->arena_mr->rkey,
				   .addr = (uintptr_t)s->arena, .size = s->arena_size,
				   .transport = c->transport };
	if (c->transport == KV_VIA_WRITE_IMM) {
		hello.req_rkey = c->req_mr->rkey;
		hello.req_addr = (uintptr_t)c->req;
	}
	memset(&param, 0, sizeof(param));
	param.private_data = &hello;
	param.private_data_len = sizeof(hello);
	param.responder_resources = 16;
	param.initiator_depth = 0;
	param.rnr_retry_count = 7;     /* the client's QP: wait for our receives */
	param.qp_num = c->qp->qp_num;
	if (rdma_accept(id, &param))
		goto refuse;
	id->context = c;
	c->last_heard_ns = clock_ns(CLOCK_MONOTONIC);
	s->conns[index] = c;
	s->nfree--;
	c->live_pos = s->nconns;
	s->live[s->nconns++] = c;
	s->connections++;
	if (s->verbose)
		fprintf(stderr, "kv: client %u connected (%s)\n", index,
			c->transport == KV_VIA_WRITE_IMM ? "write-imm" : "send");
	return;
refuse:
	if (s->verbose)
		fprintf(stderr, "kv: refusing a client: %s\n", strerror(errno ? errno : ENOMEM));
	rdma_reject(id, NULL, 0);
	conn_free(c);           /* the QP, the buffers and the id */
}

static uint64_t cpu_us(clockid_t clock)
{
	return clock_ns(clock) / 1000;
}

/* The counters, and the CPU time of the serving thread and of the whole
 * process (which includes the NIC's progress thread under softrnic; on a
 * hardware RNIC that work is in the NIC): `softrnic kv bench` reads them
 * before and after a run for the server's CPU per operation. */
static uint32_t stats_text(struct server *s, char *out, size_t cap)
{
	const struct kv_stats *st = &s->table.stats;
	int n = snprintf(out, cap,
			 "items %" PRIu64 "\nitem_bytes %" PRIu64 "\ngets %" PRIu64 "\nget_hits %" PRIu64
			 "\nsets %" PRIu64 "\ndels %" PRIu64 "\nincrs %" PRIu64 "\nevictions %" PRIu64
			 "\nexpired %" PRIu64 "\nset_failures %" PRIu64 "\nrequests %" PRIu64
			 "\nbad_requests %" PRIu64 "\nclients %u\nconnections %" PRIu64
			 "\nclients_reclaimed %" PRIu64 "\narena_bytes %zu\ncpu_server_thread_us %" PRIu64
			 "\ncpu_process_us %" PRIu64 "\naof_bytes %" PRIu64 "\naof_rewrites %" PRIu64 "\n",
			 st->items, st->item_bytes, st->gets, st->get_hits, st->sets, st->dels, st->incrs,
			 st->evictions, st->expired, st->set_failures, s->requests, s->bad_requests, s->nconns,
			 s->connections, s->reclaimed, s->arena_size, cpu_us(CLOCK_THREAD_CPUTIME_ID),
			 cpu_us(CLOCK_PROCESS_CPUTIME_ID), s->aof.bytes, s->aof.rewrites);
	return n < 0 ? 0 : (uint32_t)n;
}

/* Execute one well-formed request; the answer's value goes after *resp. */
static void execute(struct server *s, const struct kv_req *req, const uint8_t *in, uint8_t *out,
		    struct kv_resp *resp)
{
	uint64_t now = now_ns();
	const uint8_t *key = in + sizeof(*req), *val;
	uint32_t vlen = 0;
	int err;

	switch (req->op) {
	case KV_OP_GET:
		err = kv_get(&s->table, key, req->klen, now, &val, &vlen);
		if (!err)
			memcpy(out + sizeof(*resp), val, vlen);
		break;
	case KV_OP_SET:
		err = kv_set(&s->table, key, req->klen, key + req->klen, req->vlen,
			     req->arg ? now + (uint64_t)req->arg * 1000000ull : 0, now);
		break;
	case KV_OP_DEL:
		err = kv_del(&s->table, key, req->klen, now);
		break;
	case KV_OP_INCR:
		err = kv_incr(&s->table, key, req->klen, req->arg, now, &resp->number);
		break;
	case KV_OP_MGET: {
		/* Keys checked by kv_req_parse; answers packed until full. */
		const uint8_t *p = in + sizeof(*req), *end = p + req->vlen;
		uint8_t *o = out + sizeof(*resp), *oend = out + KV_MSG_MAX;
		err = 0;
		while (p < end && !err) {
			uint16_t kl;
			uint32_t vl, missing = KV_MGET_MISSING;
			memcpy(&kl, p, 2);
			if (kv_get(&s->table, p + 2, kl, now, &val, &vl) != 0) {
				memcpy(o, &missing, 4);
				o += 4;
			} else if ((size_t)(oend - o) < 4u + vl) {
				err = EINVAL;           /* the answer would not fit */
			} else {
				memcpy(o, &vl, 4);
				memcpy(o + 4, val, vl);
				o += 4 + vl;
			}
			p += 2 + kl;
		}
		vlen = (uint32_t)(o - (out + sizeof(*resp)));
		break;
	}
	default:        /* KV_OP_STATS */
		vlen = stats_text(s, (char *)out + sizeof(*resp), KV_MSG_MAX - sizeof(*resp));
		err = 0;
		break;
	}
	/* The change goes to the log before the answer goes out. */
	if (!err && s->aof.fd >= 0 && (req->op == KV_OP_SET || req->op == KV_OP_DEL || req->op == KV_OP_INCR)) {
		const uint8_t *v = key + req->klen;
		uint32_t vl = req->vlen;
		uint64_t expire = req->arg && req->op == KV_OP_SET ? now + (uint64_t)req->arg * 1000000ull : 0;
		if (req->op == KV_OP_INCR)
			kv_peek(&s->table, key, req->klen, now, &v, &vl, &expire);  /* INCR as its SET */
		if (kv_aof_append(&s->aof, req->op == KV_OP_DEL ? KV_AOF_DEL : KV_AOF_SET, key, req->klen, v, vl,
				  expire, now))
			err = EIO;
	}
	resp->status = err == 0 ? KV_OK : err == ENOENT ? KV_NOT_FOUND : err == ENOMEM ? KV_NO_MEMORY
		       : err == ERANGE ? KV_OUT_OF_RANGE : err == EIO ? KV_IO_ERROR
		       : req->op == KV_OP_INCR ? KV_NOT_INTEGER : KV_BAD_REQUEST;
	resp->vlen = resp->status == KV_OK ? vlen : 0;
}

/* Answer the request of `len` bytes in slot `slot`, from response slot
 * `slot`: a SEND, or a WRITE-with-immediate into the client's slot. */
static void serve_request(struct server *s, struct conn *c, unsigned slot, uint32_t len)
{
	const uint8_t *in = c->req + (size_t)slot * KV_SLOT_BYTES;
	uint8_t *out = c->resp + (size_t)slot * KV_SLOT_BYTES;
	struct kv_resp *resp = (struct kv_resp *)out;
	struct kv_req req;

	memset(resp, 0, sizeof(*resp));
	resp->magic = KV_PROTO_MAGIC;
	s->requests++;
	resp->status = (uint8_t)kv_req_parse(in, len, &req);
	if (resp->status != KV_OK) {
		s->bad_requests++;
		memcpy(&resp->id, in + 16, len >= 24 ? 8 : 0);
	} else {
		resp->id = req.id;
		execute(s, &req, in, out, resp);
	}
	uint32_t out_len = (uint32_t)sizeof(*resp) + resp->vlen;
	struct ibv_sge sge = { .addr = (uintptr_t)out, .length = out_len, .lkey = c->resp_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_ID(c, WR_ANSWER, slot), .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	if (c->transport == KV_VIA_WRITE_IMM) {
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(KV_IMM(slot, out_len));
		wr.wr.rdma.remote_addr = c->resp_addr + (uint64_t)slot * KV_SLOT_BYTES;
		wr.wr.rdma.rkey = c->resp_rkey;
	}
	/* The receive first: the client may send the next request as soon
	 * as this answer lands. */
	if (post_recv(c, slot) || ibv_post_send(c->qp, &wr, &bad))
		conn_drop(s, c, true, "cannot post");
}

/* A client quiet for probe_ns gets a zero-length RDMA WRITE (it touches
 * no memory, so its key is not checked: IBTA 9.7.4.1.6 C9-87): a live client's
 * NIC acknowledges it, a dead one's retries run out and the connection is
 * reclaimed through the failed completion. */
static void probe_quiet(struct server *s, uint64_t now)
{
	for (unsigned i = 0; i < s->nconns; i++) {
		struct conn *c = s->live[i];
		struct ibv_send_wr wr, *bad;

		if (c->probing || now - c->last_heard_ns < s->probe_ns)
			continue;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = WR_ID(c, WR_PROBE, 0);
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = c->resp_addr;
		wr.wr.rdma.rkey = c->resp_rkey;
		if (ibv_post_send(c->qp, &wr, &bad))
			conn_drop(s, c, true, "cannot probe"), i--;     /* the last one moved to i */
		else
			c->probing = true;
	}
}

static void drain_cq(struct server *s)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(s->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			struct conn *c = conn_of(s, wc[i].wr_id);
			unsigned kind = (unsigned)(wc[i].wr_id >> 8 & 0xff), slot = (unsigned)(wc[i].wr_id & 0xff);

			if (!c)
				continue;       /* a connection already reclaimed */
			if (wc[i].status != IBV_WC_SUCCESS) {
				/* Flushed (the connection is going) or failed:
				 * retries or RNR retries ran out, the client is
				 * dead or has stopped taking answers. */
				conn_drop(s, c, wc[i].status != IBV_WC_WR_FLUSH_ERR, ibv_wc_status_str(wc[i].status));
				continue;
			}
			c->last_heard_ns = clock_ns(CLOCK_MONOTONIC);
			if (kind == WR_PROBE) {
				c->probing = false;
				continue;
			}
			if (kind != WR_REQUEST)
				continue;       /* an answer went out */
			if (c->transport == KV_VIA_SEND) {
				serve_request(s, c, slot, wc[i].byte_len);
				continue;
			}
			/* WRITE-with-immediate: the slot and length are in the
			 * immediate; a bad one has no slot to answer in. */
			uint32_t imm = ntohl(wc[i].imm_data);
			if (wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM || KV_IMM_SLOT(imm) >= KV_DEPTH ||
			    KV_IMM_LEN(imm) > KV_MSG_MAX) {
				s->requests++;
				s->bad_requests++;
				if (post_recv(c, 0))
					conn_drop(s, c, true, "cannot post");
				continue;
			}
			serve_request(s, c, KV_IMM_SLOT(imm), KV_IMM_LEN(imm));
		}
	}
}

static void handle_cm_events(struct server *s)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(s->ch, &ev) == 0) {
		struct rdma_cm_id *id = ev->id;
		enum rdma_cm_event_type type = ev->event;

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_conn_param asked = ev->param.conn;
			uint8_t pdata[256];     /* private_data_len is a uint8_t */
			/* The private data lives in the event: copy it before the ack. */
			if (asked.private_data)
				memcpy(pdata, asked.private_data, asked.private_data_len);
			asked.private_data = pdata;
			rdma_ack_cm_event(ev);
			on_connect_request(s, id, &asked);
			continue;
		}
		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_REJECTED ||
		    type == RDMA_CM_EVENT_CONNECT_ERROR || type == RDMA_CM_EVENT_UNREACHABLE) {
			struct conn *c = id->context;
			if (c && s->conns[c->index] == c)
				conn_drop(s, c, false, "disconnected");
		}
	}
}

/* The bytes a log record of each live item takes (24-byte header). */
static void count_bytes(void *ctx, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen,
			uint64_t expire_ns)
{
	(void)key;
	(void)val;
	(void)expire_ns;
	*(uint64_t *)ctx += 24u + klen + vlen;
}

/* Rewrite the log when it has grown past aof_rewrite_min and twice its
 * size after the last rewrite; a failure keeps the old log (reported). */
static void maybe_rewrite(struct server *s)
{
	if (!kv_aof_wants_rewrite(&s->aof, s->aof_rewrite_min))
		return;
	uint64_t before = s->aof.bytes;
	int e = kv_aof_rewrite(&s->aof, &s->table, now_ns());
	if (e == EEXIST)
		fprintf(stderr, "kv: rewriting %s failed: %s.rewrite exists and is not a regular file of this user: "
			"left alone (the old log stays)\n", s->aof.path, s->aof.path);
	else if (e)
		fprintf(stderr, "kv: rewriting %s failed: %s (the old log stays)\n", s->aof.path, strerror(e));
	else if (s->verbose)
		fprintf(stderr, "kv: %s rewritten: %" PRIu64 " -> %" PRIu64 " bytes\n", s->aof.path, before,
			s->aof.bytes);
	if (e)
		s->aof.base_bytes = s->aof.bytes;       /* do not retry at every turn */
}

int kv_serve(const struct kv_server_opts *o, volatile sig_atomic_t *stop)
{
	struct server s;
	struct rdma_addrinfo hints, *ai = NULL;
	char port[16];
	int err = 0;

	memset(&s, 0, sizeof(s));
	s.aof.fd = -1;
	s.verbose = o->verbose;
	s.probe_ns = (uint64_t)(o->probe_ms ? o->probe_ms : 2000) * 1000000ull;
	s.arena_size = o->mem & ~(size_t)4095;
	s.arena = aligned_alloc(4096, s.arena_size);
	s.conns = calloc(MAX_CONNS, sizeof(*s.conns));
	s.live = calloc(MAX_CONNS, sizeof(*s.live));
	s.free_idx = calloc(MAX_CONNS, sizeof(*s.free_idx));
	if (!s.conns || !s.live || !s.free_idx) {
		fprintf(stderr, "kv: out of memory\n");
		free(s.conns);
		free(s.live);
		free(s.free_idx);
		free(s.arena);
		return ENOMEM;
	}
	/* Lowest index on top: the first clients get 0, 1, 2, ... */
	for (unsigned i = 0; i < MAX_CONNS; i++)
		s.free_idx[i] = (uint16_t)(MAX_CONNS - 1 - i);
	s.nfree = MAX_CONNS;
	if (!s.arena || kv_table_init(&s.table, s.arena, s.arena_size, 0)) {
		fprintf(stderr, "kv: cannot make a table of %zu bytes\n", o->mem);
		free(s.arena);
		free(s.conns);
		free(s.live);
		free(s.free_idx);
		return EINVAL;
	}
	if (o->aof_path) {
		struct kv_aof_check c;
		char what[512];
		err = kv_aof_open(&s.aof, o->aof_path, o->fsync, &s.table, now_ns(), &c);
		kv_aof_describe(&c, what, sizeof(what));
		if (err == EBADMSG && !c.records && !c.resync)
			fprintf(stderr, "kv: refusing to start: the log %s %s; it is left as it was (no whole record "
				"in it at all: is it a softrnic-kv log?)\n", o->aof_path, what);
		else if (err == EBADMSG)
			fprintf(stderr, "kv: refusing to start: the log %s %s; it is left as it was (softrnic kv "
				"check-aof --fix %s cuts it at byte %" PRIu64 ", keeping a copy)\n", o->aof_path, what,
				o->aof_path, c.good);
		else if (err)
			fprintf(stderr, "kv: cannot open the log %s: %s\n", o->aof_path, kv_aof_strerror(err));
		if (err) {
			free(s.arena);
			free(s.conns);
			free(s.live);
			free(s.free_idx);
			return err;
		}
		if (c.state == KV_AOF_TORN)
			fprintf(stderr, "kv: %s %s; cut %" PRIu64 " bytes at offset %" PRIu64 "\n", o->aof_path, what,
				c.size - c.good, c.good);
		fprintf(stderr, "kv: %s: %" PRIu64 " records replayed, %" PRIu64 " items%s\n", o->aof_path,
			c.records, s.table.stats.items, c.state == KV_AOF_TORN ? ", a torn last record cut" : "");
		err = 0;
		s.aof_rewrite_min = o->aof_rewrite_min ? o->aof_rewrite_min : 64ull << 20;
		/* A log mostly of overwritten records is compacted before
		 * serving: its size counts against twice the live data. */
		s.aof.base_bytes = 0;
		kv_table_foreach(&s.table, now_ns(), count_bytes, &s.aof.base_bytes);
		maybe_rewrite(&s);
	}
	snprintf(port, sizeof(port), "%u", o->port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	s.ch = rdma_create_event_channel();
	if (!s.ch || rdma_getaddrinfo(o->addr, port, &hints, &ai) ||
	    rdma_create_id(s.ch, &s.listen, NULL, RDMA_PS_TCP) || rdma_bind_addr(s.listen, ai->ai_src_addr) ||
	    rdma_listen(s.listen, 1024)) {
		err = errno ? errno : EINVAL;
		fprintf(stderr, "kv: cannot listen on %s:%u: %s\n", o->addr ? o->addr : "*", o->port, strerror(err));
		goto out;
	}
	/* The event channel non-blocking: the loop polls it. */
	fcntl(s.ch->fd, F_SETFL, fcntl(s.ch->fd, F_GETFL) | O_NONBLOCK);
	if (o->ready)
		o->ready(o->ready_ctx);
	uint64_t next_tick = 0, next_probe = 0;
	while (!*stop) {
		if (o->busy_poll && s.cq) {
			/* Spin on the CQ; the CM every millisecond. */
			drain_cq(&s);
			if (clock_ns(CLOCK_MONOTONIC) < next_tick)
				continue;
			handle_cm_events(&s);
		} else {
			struct pollfd fds[2] = { { .fd = s.ch->fd, .events = POLLIN }, { .fd = -1, .events = POLLIN } };
			if (s.comp)
				fds[1].fd = s.comp->fd;
			int r = poll(fds, 2, 200);
			if (r < 0 && errno != EINTR) {
				err = errno;
				break;
			}
			if (fds[0].revents & POLLIN)
				handle_cm_events(&s);
			if (s.comp && (fds[1].revents & POLLIN)) {
				struct ibv_cq *cq;
				void *ctx;
				if (ibv_get_cq_event(s.comp, &cq, &ctx) == 0) {
					ibv_ack_cq_events(cq, 1);
					ibv_req_notify_cq(cq, 0);
				}
			}
			if (s.cq)
				drain_cq(&s);
		}
		/* The housekeeping, at most once a millisecond in either mode:
		 * not per request.  probe_quiet walks every connection, so it
		 * runs every probe_ns / 16 (a quiet client is probed within
		 * 1/16 of --probe-ms late): with thousands of clients a walk
		 * every millisecond would take much of the serving thread. */
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		if (now < next_tick)
			continue;
		next_tick = now + 1000000;
		if (now >= next_probe) {
			next_probe = now + (s.probe_ns / 16 > 1000000 ? s.probe_ns / 16 : 1000000);
			probe_quiet(&s, now);
		}
		kv_aof_tick(&s.aof, now_ns());
		maybe_rewrite(&s);
	}
out:
	while (s.nconns)
		conn_drop(&s, s.live[0], false, "server stopping");
	if (s.arena_mr)
		ibv_dereg_mr(s.arena_mr);
	if (s.cq)
		ibv_destroy_cq(s.cq);
	if (s.comp)
		ibv_destroy_comp_channel(s.comp);
	if (s.pd)
		ibv_dealloc_pd(s.pd);
	if (s.listen)
		rdma_destroy_id(s.listen);
	if (ai)
		rdma_freeaddrinfo(ai);
	if (s.ch)
		rdma_destroy_event_channel(s.ch);
	kv_aof_close(&s.aof);
	free(s.arena);
	free(s.conns);
	free(s.live);
	free(s.free_idx);
	return err;
}
