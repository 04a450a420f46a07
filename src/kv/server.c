/*
 * server.c — the key-value server: one thread, one table (table.c) in a
 * registered arena, clients connected through librdmacm.
 *
 * The loop sleeps in poll() on two fds: the rdma_cm event channel
 * (connect requests, disconnects) and one completion channel shared by
 * every connection's CQ.  Each connection has KV_DEPTH receive slots and
 * as many send slots; a request that arrives in receive slot i is answered
 * from send slot i (two-sided, HERD-style; a client keeps at most KV_DEPTH
 * requests in flight, so slot i is free again by the time a request can
 * land in it).  The arena is registered for REMOTE_READ and its address
 * and rkey go to every client in the accept's private data, for the
 * one-sided GET (table.h); nothing is registered for remote write.
 *
 * With an append-only file (aof.h) every change is logged before it is
 * answered, and the log is replayed when the server starts.
 *
 * A malformed request gets KV_BAD_REQUEST and the connection goes on; a
 * client that disconnects or dies (its QP errors) loses its connection
 * and its buffers, and the others are not disturbed.
 *
 * Trade-off, measured later (issue 13): requests come as SENDs into
 * receive slots polled through a CQ; the alternative is WRITE-with-
 * immediate into per-client slots, which saves the receive WQE.
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

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "kv/aof.h"
#include "kv/proto.h"

/* Slots start 64-byte aligned (the headers are read as structs). */
#define SLOT_BYTES (((size_t)KV_MSG_MAX + 63) & ~(size_t)63)

struct conn {
	struct rdma_cm_id *id;
	uint8_t *recv, *send;           /* KV_DEPTH slots of SLOT_BYTES */
	struct ibv_mr *recv_mr, *send_mr;
	struct conn *next;
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
	struct conn *conns;
	uint64_t requests, bad_requests;
	bool verbose;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);     /* TTLs outlive a restart */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void conn_free(struct conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->recv_mr)
		ibv_dereg_mr(c->recv_mr);
	if (c->send_mr)
		ibv_dereg_mr(c->send_mr);
	free(c->recv);
	free(c->send);
	if (c->id)
		rdma_destroy_id(c->id);
	free(c);
}

static int post_recv(struct conn *c, unsigned slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(c->recv + (size_t)slot * SLOT_BYTES), .length = KV_MSG_MAX,
			       .lkey = c->recv_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)c | slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(c->id->qp, &wr, &bad);
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
	s->cq = s->comp ? ibv_create_cq(verbs, 1024, NULL, s->comp, 0) : NULL;
	s->arena_mr = s->cq ? ibv_reg_mr(s->pd, s->arena, s->arena_size, IBV_ACCESS_LOCAL_WRITE |
									 IBV_ACCESS_REMOTE_READ)
			    : NULL;
	if (!s->arena_mr || ibv_req_notify_cq(s->cq, 0))
		return errno ? errno : ENOMEM;
	return 0;
}

static void on_connect_request(struct server *s, struct rdma_cm_id *id)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct ibv_qp_init_attr qa;
	struct kv_hello hello;
	struct rdma_conn_param param;

	if (!c) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	c->id = id;
	if (setup_device(s, id->verbs))
		goto refuse;
	c->recv = malloc((size_t)KV_DEPTH * SLOT_BYTES);
	c->send = malloc((size_t)KV_DEPTH * SLOT_BYTES);
	if (!c->recv || !c->send)
		goto refuse;
	c->recv_mr = ibv_reg_mr(s->pd, c->recv, (size_t)KV_DEPTH * SLOT_BYTES, IBV_ACCESS_LOCAL_WRITE);
	c->send_mr = ibv_reg_mr(s->pd, c->send, (size_t)KV_DEPTH * SLOT_BYTES, 0);
	if (!c->recv_mr || !c->send_mr)
		goto refuse;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = KV_DEPTH;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, s->pd, &qa))
		goto refuse;
	for (unsigned i = 0; i < KV_DEPTH; i++)
		if (post_recv(c, i))
			goto refuse;
	hello = (struct kv_hello){ .magic = KV_PROTO_MAGIC, .rkey = s->arena_mr->rkey,
				   .addr = (uintptr_t)s->arena, .size = s->arena_size };
	memset(&param, 0, sizeof(param));
	param.private_data = &hello;
	param.private_data_len = sizeof(hello);
	param.responder_resources = 16;
	param.initiator_depth = 0;
	param.rnr_retry_count = 7;
	if (rdma_accept(id, &param))
		goto refuse;
	id->context = c;
	c->next = s->conns;
	s->conns = c;
	if (s->verbose)
		fprintf(stderr, "kv: client connected\n");
	return;
refuse:
	rdma_reject(id, NULL, 0);
	conn_free(c);           /* the QP, the buffers and the id */
}

static void on_disconnect(struct server *s, struct rdma_cm_id *id)
{
	for (struct conn **p = &s->conns; *p; p = &(*p)->next) {
		if ((*p)->id == id) {
			struct conn *c = *p;
			*p = c->next;
			conn_free(c);
			if (s->verbose)
				fprintf(stderr, "kv: client gone\n");
			return;
		}
	}
}

static bool conn_alive(struct server *s, struct conn *c)
{
	for (struct conn *p = s->conns; p; p = p->next)
		if (p == c)
			return true;
	return false;
}

static uint32_t stats_text(struct server *s, char *out, size_t cap)
{
	const struct kv_stats *st = &s->table.stats;
	int n = snprintf(out, cap,
			 "items %" PRIu64 "\nitem_bytes %" PRIu64 "\ngets %" PRIu64 "\nget_hits %" PRIu64
			 "\nsets %" PRIu64 "\ndels %" PRIu64 "\nincrs %" PRIu64 "\nevictions %" PRIu64
			 "\nexpired %" PRIu64 "\nset_failures %" PRIu64 "\nrequests %" PRIu64
			 "\nbad_requests %" PRIu64 "\narena_bytes %zu\n",
			 st->items, st->item_bytes, st->gets, st->get_hits, st->sets, st->dels, st->incrs,
			 st->evictions, st->expired, st->set_failures, s->requests, s->bad_requests, s->arena_size);
	return n < 0 ? 0 : (uint32_t)n;
}

/* Execute the request in receive slot `slot` and send the answer. */
static void serve_request(struct server *s, struct conn *c, unsigned slot, uint32_t len)
{
	const uint8_t *in = c->recv + (size_t)slot * SLOT_BYTES;
	uint8_t *out = c->send + (size_t)slot * SLOT_BYTES;
	struct kv_resp *resp = (struct kv_resp *)out;
	struct kv_req req;
	uint64_t now = now_ns();
	const uint8_t *key = in + sizeof(req), *val;
	uint32_t vlen = 0;
	int err;

	memset(resp, 0, sizeof(*resp));
	resp->magic = KV_PROTO_MAGIC;
	s->requests++;
	resp->status = (uint8_t)kv_req_parse(in, len, &req);
	if (resp->status != KV_OK) {
		s->bad_requests++;
		memcpy(&resp->id, in + 16, len >= 24 ? 8 : 0);
		goto send;
	}
	resp->id = req.id;
	switch (req.op) {
	case KV_OP_GET:
		err = kv_get(&s->table, key, req.klen, now, &val, &vlen);
		if (!err)
			memcpy(out + sizeof(*resp), val, vlen);
		break;
	case KV_OP_SET:
		err = kv_set(&s->table, key, req.klen, key + req.klen, req.vlen,
			     req.arg ? now + (uint64_t)req.arg * 1000000ull : 0, now);
		break;
	case KV_OP_DEL:
		err = kv_del(&s->table, key, req.klen, now);
		break;
	case KV_OP_INCR:
		err = kv_incr(&s->table, key, req.klen, req.arg, now, &resp->number);
		break;
	case KV_OP_MGET: {
		/* Keys checked by kv_req_parse; answers packed until full. */
		const uint8_t *p = in + sizeof(req), *end = p + req.vlen;
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
	if (!err && s->aof.fd >= 0 && (req.op == KV_OP_SET || req.op == KV_OP_DEL || req.op == KV_OP_INCR)) {
		const uint8_t *v = key + req.klen;
		uint32_t vl = req.vlen;
		uint64_t expire = req.arg && req.op == KV_OP_SET ? now + (uint64_t)req.arg * 1000000ull : 0;
		if (req.op == KV_OP_INCR)
			kv_peek(&s->table, key, req.klen, now, &v, &vl, &expire);  /* INCR as its SET */
		if (kv_aof_append(&s->aof, req.op == KV_OP_DEL ? KV_AOF_DEL : KV_AOF_SET, key, req.klen, v, vl,
				  expire, now))
			err = EIO;
	}
	resp->status = err == 0 ? KV_OK : err == ENOENT ? KV_NOT_FOUND : err == ENOMEM ? KV_NO_MEMORY
		       : err == ERANGE ? KV_OUT_OF_RANGE : err == EIO ? KV_IO_ERROR
		       : req.op == KV_OP_INCR ? KV_NOT_INTEGER : KV_BAD_REQUEST;
	resp->vlen = resp->status == KV_OK ? vlen : 0;
send:;
	struct ibv_sge sge = { .addr = (uintptr_t)out, .length = (uint32_t)sizeof(*resp) + resp->vlen,
			       .lkey = c->send_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	/* The receive slot first: the client may send the next request as
	 * soon as this answer lands. */
	if (post_recv(c, slot) || ibv_post_send(c->id->qp, &wr, &bad))
		rdma_disconnect(c->id);
}

static void drain_cq(struct server *s)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(s->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].opcode != IBV_WC_RECV)
				continue;       /* a send completed (or failed: the disconnect follows) */
			struct conn *c = (struct conn *)(uintptr_t)(wc[i].wr_id & ~(uint64_t)(KV_DEPTH - 1));
			unsigned slot = (unsigned)(wc[i].wr_id & (KV_DEPTH - 1));
			if (wc[i].status != IBV_WC_SUCCESS || !conn_alive(s, c))
				continue;       /* flushed: the connection is going */
			serve_request(s, c, slot, wc[i].byte_len);
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
			rdma_ack_cm_event(ev);
			on_connect_request(s, id);
			continue;
		}
		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_REJECTED ||
		    type == RDMA_CM_EVENT_CONNECT_ERROR || type == RDMA_CM_EVENT_UNREACHABLE) {
			rdma_disconnect(id);
			on_disconnect(s, id);
		}
	}
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
	s.arena_size = o->mem & ~(size_t)4095;
	s.arena = aligned_alloc(4096, s.arena_size);
	if (!s.arena || kv_table_init(&s.table, s.arena, s.arena_size, 0)) {
		fprintf(stderr, "kv: cannot make a table of %zu bytes\n", o->mem);
		free(s.arena);
		return EINVAL;
	}
	if (o->aof_path) {
		uint64_t replayed, cut;
		err = kv_aof_open(&s.aof, o->aof_path, o->fsync, &s.table, now_ns(), &replayed, &cut);
		if (err) {
			fprintf(stderr, "kv: cannot open the log %s: %s\n", o->aof_path, strerror(err));
			free(s.arena);
			return err;
		}
		fprintf(stderr, "kv: %s: %" PRIu64 " records replayed, %" PRIu64 " items%s\n", o->aof_path, replayed,
			s.table.stats.items, cut ? ", a torn last record cut" : "");
		err = 0;
	}
	snprintf(port, sizeof(port), "%u", o->port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	s.ch = rdma_create_event_channel();
	if (!s.ch || rdma_getaddrinfo(o->addr, port, &hints, &ai) ||
	    rdma_create_id(s.ch, &s.listen, NULL, RDMA_PS_TCP) || rdma_bind_addr(s.listen, ai->ai_src_addr) ||
	    rdma_listen(s.listen, 16)) {
		err = errno ? errno : EINVAL;
		fprintf(stderr, "kv: cannot listen on %s:%u: %s\n", o->addr ? o->addr : "*", o->port, strerror(err));
		goto out;
	}
	/* The event channel non-blocking: the loop polls it. */
	fcntl(s.ch->fd, F_SETFL, fcntl(s.ch->fd, F_GETFL) | O_NONBLOCK);
	if (o->ready)
		o->ready(o->ready_ctx);
	while (!*stop) {
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
		kv_aof_tick(&s.aof, now_ns());
	}
out:
	while (s.conns) {
		struct conn *c = s.conns;
		s.conns = c->next;
		rdma_disconnect(c->id);
		conn_free(c);
	}
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
	return err;
}
