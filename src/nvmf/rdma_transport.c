/*
 * rdma_transport.c — the target's NVMe/RDMA transport (rdma_transport.h),
 * on librdmacm and verbs, one thread.
 *
 * A queue is one rdma_cm connection.  Its CONNECT_REQUEST carries the
 * binding's private data (qid, host send queue size hsqsize, host receive
 * queue size hrqsize; NVMe-oF 1.1 §7.3.2): the queue gets hsqsize + 1
 * receive buffers of one SQE plus NVMF_INLINE_DATA bytes, as many command
 * contexts (a data buffer of NVMF_MAX_DATA and a response buffer each),
 * and the accept's private data says crqsize = hsqsize + 1.  A bad request
 * is rejected with the binding's reject private data (its status).
 *
 * A capsule received takes a free context (or waits in the queue's
 * pending list until one frees) and its receive buffer is posted again
 * at once; target.c's nvmf_req_prepare says what data moves.  Host to
 * controller: from the capsule (offset and length checked against what
 * arrived) or by an RDMA READ of the keyed SGL, then nvmf_req_execute.
 * Controller to host: nvmf_req_execute, then an RDMA WRITE of the data
 * and the response SEND behind it on the same send queue (RC keeps their
 * order).  The response is SEND with invalidate of the SGL's key when
 * the host set the Invalidate sub type.  A context frees when its SEND
 * completes.  An Asynchronous Event Request keeps its context.
 *
 * All queues share one completion queue and one completion channel.
 * Work request ids carry the queue's index and generation, so completions
 * of a queue already gone are recognised and dropped.  Every 100 ms the
 * target's keep-alive timers are checked (nvmf_target_tick) and the
 * queues of a dead controller are disconnected; an admin queue's going
 * takes its controller's I/O queues with it.
 */
#include "nvmf/rdma_transport.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "base/clock.h"

/* Queues at once, admin and I/O, of every host: a queue's index is 16
 * bits of its work request ids; 4 096 is 64 controllers of 63 I/O
 * queues, or 16 hosts of 255. */
#define MAX_QUEUES 4096u
/* The shared CQ's first size; it grows (ibv_resize_cq) as queues come,
 * to hold what every queue may have outstanding (3 * depth + 1 each). */
#define CQ_ENTRIES 16384
#define CAPSULE_BYTES (NVME_SQE_BYTES + NVMF_INLINE_DATA)
#define MAX_READS_IN_FLIGHT 16

/* Work request ids: generation (32) | queue index (16) | kind (4) | slot (12). */
enum { WR_RECV = 1, WR_READ = 2, WR_WRITE = 3, WR_SEND = 4 };
#define WR_ID(tq, kind, slot) ((uint64_t)(tq)->gen << 32 | (uint64_t)(tq)->index << 16 | (uint64_t)(kind) << 12 | (slot))

struct nvmf_rdma_stats nvmf_rdma_stats;

struct ctx {
	struct nvmf_req req;
	uint8_t *data;                  /* NVMF_MAX_DATA, in data_mr */
	uint8_t *rsp;                   /* NVME_CQE_BYTES, in rsp_mr */
	bool busy;
};

struct tqueue {
	struct rdma_cm_id *id;
	struct nvmf_queue q;
	uint32_t gen;
	uint16_t index;
	unsigned depth;                 /* receive buffers = contexts = hsqsize + 1 */
	uint8_t *capsules, *data, *rsps;
	struct ibv_mr *capsule_mr, *data_mr, *rsp_mr;
	struct ctx *ctx;
	unsigned *pending;              /* receive buffers waiting for a context (FIFO) */
	uint32_t *pending_len;
	unsigned pending_head, pending_count;
};

struct server {
	struct nvmf_target *t;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp;
	struct ibv_cq *cq;
	struct tqueue *queues[MAX_QUEUES];
	unsigned top;                   /* queues[top..] are all NULL: walks stop there */
	uint32_t next_gen;
	unsigned cq_budget;             /* CQ entries promised to the queues */
	unsigned cq_cap;                /* entries the CQ holds */
	bool verbose;
};

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static void tqueue_free(struct tqueue *tq)
{
	if (tq->id && tq->id->qp)
		rdma_destroy_qp(tq->id);
	if (tq->capsule_mr)
		ibv_dereg_mr(tq->capsule_mr);
	if (tq->data_mr)
		ibv_dereg_mr(tq->data_mr);
	if (tq->rsp_mr)
		ibv_dereg_mr(tq->rsp_mr);
	free(tq->capsules);
	free(tq->data);
	free(tq->rsps);
	free(tq->ctx);
	free(tq->pending);
	free(tq->pending_len);
	if (tq->id)
		rdma_destroy_id(tq->id);
	free(tq);
}

/* Take a queue out and free it; its controller learns of it. */
static void tqueue_drop(struct server *s, struct tqueue *tq, const char *why)
{
	s->queues[tq->index] = NULL;
	while (s->top && !s->queues[s->top - 1])
		s->top--;
	s->cq_budget -= 3 * tq->depth + 1;
	nvmf_rdma_stats.queues_closed++;
	if (s->verbose)
		fprintf(stderr, "nvmf: queue %u (qid %u, ctrl %u) closed: %s\n", tq->index, tq->q.qid,
			tq->q.ctrl ? tq->q.ctrl->cntlid : 0, why);
	nvmf_queue_gone(s->t, &tq->q);
	rdma_disconnect(tq->id);
	tqueue_free(tq);
}

/* Queues of dead controllers (keep-alive expired, admin queue gone) go. */
static void reap_dead(struct server *s)
{
	for (unsigned i = 0; i < s->top; i++)
		if (s->queues[i] && nvmf_queue_dead(&s->queues[i]->q))
			tqueue_drop(s, s->queues[i], "controller gone");
}

static struct tqueue *queue_of(struct server *s, uint64_t wr_id)
{
	unsigned index = (unsigned)(wr_id >> 16 & 0xffff);
	struct tqueue *tq = index < MAX_QUEUES ? s->queues[index] : NULL;

	return tq && tq->gen == (uint32_t)(wr_id >> 32) ? tq : NULL;
}

static int post_recv(struct tqueue *tq, unsigned slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(tq->capsules + (size_t)slot * CAPSULE_BYTES),
			       .length = CAPSULE_BYTES, .lkey = tq->capsule_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_ID(tq, WR_RECV, slot), .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(tq->id->qp, &wr, &bad);
}

/* The response of context c: the data first if any goes to the host,
 * then the SEND (with invalidate if asked).  0 or -1 (cannot post). */
static int respond(struct server *s, struct tqueue *tq, unsigned slot)
{
	struct ctx *c = &tq->ctx[slot];
	struct nvmf_req *r = &c->req;
	struct ibv_sge data_sge, rsp_sge;
	struct ibv_send_wr write_wr, send_wr, *bad, *first = &send_wr;

	if (r->held)
		return 0;
	nvmf_req_response(s->t, &tq->q, r, c->rsp);
	if (r->status && s->verbose)
		fprintf(stderr, "nvmf: qid %u cid %u opcode 0x%02x%s cdw10 0x%x nsid %u: status 0x%03x (%s)\n", tq->q.qid,
			r->cmd.cid, r->cmd.opcode, r->cmd.opcode == NVME_FABRICS_COMMAND ? " (fabrics)" : "", r->cmd.cdw10,
			r->cmd.nsid, NVME_SC_CODE(r->status), nvme_status_str(r->status));
	rsp_sge = (struct ibv_sge){ .addr = (uintptr_t)c->rsp, .length = NVME_CQE_BYTES, .lkey = tq->rsp_mr->lkey };
	memset(&send_wr, 0, sizeof(send_wr));
	send_wr.wr_id = WR_ID(tq, WR_SEND, slot);
	send_wr.sg_list = &rsp_sge;
	send_wr.num_sge = 1;
	send_wr.opcode = IBV_WR_SEND;
	send_wr.send_flags = IBV_SEND_SIGNALED;
	if (r->sgl.kind == NVMF_SGL_KEYED && r->sgl.invalidate) {
		send_wr.opcode = IBV_WR_SEND_WITH_INV;
		send_wr.invalidate_rkey = r->sgl.key;
		nvmf_rdma_stats.sends_with_invalidate++;
	}
	if (r->status == 0 && r->xfer == NVMF_XFER_FROM_CTRL && r->xfer_len) {
		data_sge = (struct ibv_sge){ .addr = (uintptr_t)c->data, .length = r->xfer_len,
					     .lkey = tq->data_mr->lkey };
		memset(&write_wr, 0, sizeof(write_wr));
		write_wr.wr_id = WR_ID(tq, WR_WRITE, slot);
		write_wr.sg_list = &data_sge;
		write_wr.num_sge = 1;
		write_wr.opcode = IBV_WR_RDMA_WRITE;
		write_wr.wr.rdma.remote_addr = r->sgl.addr;
		write_wr.wr.rdma.rkey = r->sgl.key;
		write_wr.next = &send_wr;
		first = &write_wr;
		nvmf_rdma_stats.rdma_writes++;
	}
	return ibv_post_send(tq->id->qp, first, &bad) ? -1 : 0;
}

static int execute_and_respond(struct server *s, struct tqueue *tq, unsigned slot)
{
	struct ctx *c = &tq->ctx[slot];

	nvmf_req_execute(s->t, &tq->q, &c->req, c->data, now_ns());
	return respond(s, tq, slot);
}

/* A capsule of len bytes in receive buffer rb, with a free context. */
static int start_command(struct server *s, struct tqueue *tq, unsigned rb, uint32_t len)
{
	const uint8_t *capsule = tq->capsules + (size_t)rb * CAPSULE_BYTES;
	unsigned slot = 0;

	while (tq->ctx[slot].busy)
		slot++;
	struct ctx *c = &tq->ctx[slot];
	struct nvmf_req *r = &c->req;
	c->busy = true;
	bool go = nvmf_req_prepare(s->t, &tq->q, capsule, r, now_ns());
	if (go && r->xfer == NVMF_XFER_TO_CTRL && r->sgl.kind == NVMF_SGL_IN_CAPSULE) {
		/* The data must have arrived with the capsule. */
		if (r->sgl.addr + r->xfer_len > len - NVME_SQE_BYTES) {
			r->status = NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR;
			go = false;
		} else {
			memcpy(c->data, capsule + NVME_SQE_BYTES + r->sgl.addr, r->xfer_len);
			nvmf_rdma_stats.in_capsule_writes++;
		}
	}
	/* The capsule is consumed: its buffer takes the next one. */
	if (post_recv(tq, rb))
		return -1;
	if (!go)
		return respond(s, tq, slot);
	if (r->xfer == NVMF_XFER_TO_CTRL && r->sgl.kind == NVMF_SGL_KEYED) {
		struct ibv_sge sge = { .addr = (uintptr_t)c->data, .length = r->xfer_len, .lkey = tq->data_mr->lkey };
		struct ibv_send_wr wr = { .wr_id = WR_ID(tq, WR_READ, slot), .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED }, *bad;
		wr.wr.rdma.remote_addr = r->sgl.addr;
		wr.wr.rdma.rkey = r->sgl.key;
		nvmf_rdma_stats.rdma_reads++;
		return ibv_post_send(tq->id->qp, &wr, &bad) ? -1 : 0;
	}
	return execute_and_respond(s, tq, slot);
}

static bool have_free_ctx(const struct tqueue *tq)
{
	for (unsigned i = 0; i < tq->depth; i++)
		if (!tq->ctx[i].busy)
			return true;
	return false;
}

static int on_capsule(struct server *s, struct tqueue *tq, unsigned rb, uint32_t len)
{
	if (len < NVME_SQE_BYTES) {
		/* No command to answer: counted, the buffer goes back. */
		nvmf_rdma_stats.short_capsules++;
		return post_recv(tq, rb);
	}
	if (tq->pending_count || !have_free_ctx(tq)) {
		unsigned at = (tq->pending_head + tq->pending_count) % tq->depth;
		tq->pending[at] = rb;
		tq->pending_len[at] = len;
		tq->pending_count++;
		return 0;
	}
	return start_command(s, tq, rb, len);
}

/* A context freed: a capsule waiting for one starts. */
static int run_pending(struct server *s, struct tqueue *tq)
{
	while (tq->pending_count && have_free_ctx(tq)) {
		unsigned rb = tq->pending[tq->pending_head];
		uint32_t len = tq->pending_len[tq->pending_head];
		tq->pending_head = (tq->pending_head + 1) % tq->depth;
		tq->pending_count--;
		if (start_command(s, tq, rb, len))
			return -1;
	}
	return 0;
}

/* Handles every completion there is; how many there were. */
static unsigned drain_cq(struct server *s)
{
	struct ibv_wc wc[32];
	unsigned done = 0;
	int n;

	while ((n = ibv_poll_cq(s->cq, 32, wc)) > 0) {
		done += (unsigned)n;
		for (int i = 0; i < n; i++) {
			struct tqueue *tq = queue_of(s, wc[i].wr_id);
			unsigned kind = (unsigned)(wc[i].wr_id >> 12 & 0xf), slot = (unsigned)(wc[i].wr_id & 0xfff);
			int err = 0;

			if (!tq || slot >= tq->depth)
				continue;       /* a queue already gone */
			if (wc[i].status != IBV_WC_SUCCESS) {
				/* The QP is in error: a transfer failed (a bad
				 * rkey, the host gone) or the queue is flushing. */
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					nvmf_rdma_stats.transfer_errors++;
				tqueue_drop(s, tq, ibv_wc_status_str(wc[i].status));
				continue;
			}
			switch (kind) {
			case WR_RECV:
				err = on_capsule(s, tq, slot, wc[i].byte_len);
				break;
			case WR_READ:
				err = execute_and_respond(s, tq, slot);
				break;
			case WR_SEND:
				tq->ctx[slot].busy = false;
				err = run_pending(s, tq);
				break;
			default:
				break;
			}
			if (err)
				tqueue_drop(s, tq, "cannot post");
		}
	}
	return done;
}

static int setup_device(struct server *s, struct ibv_context *verbs)
{
	if (s->verbs)
		return s->verbs == verbs ? 0 : EINVAL;
	s->verbs = verbs;
	s->pd = ibv_alloc_pd(verbs);
	s->comp = s->pd ? ibv_create_comp_channel(verbs) : NULL;
	s->cq = s->comp ? ibv_create_cq(verbs, CQ_ENTRIES, NULL, s->comp, 0) : NULL;
	if (!s->cq || ibv_req_notify_cq(s->cq, 0))
		return errno ? errno : ENOMEM;
	s->cq_cap = (unsigned)s->cq->cqe;
	return 0;
}

/* Room in the CQ for `more` entries beyond the budget: grow it by half
 * again when full.  0 or an errno. */
static int cq_room(struct server *s, unsigned more)
{
	unsigned need = s->cq_budget + more, want = s->cq_cap + s->cq_cap / 2;

	if (need <= s->cq_cap)
		return 0;
	if (ibv_resize_cq(s->cq, (int)(want > need ? want : need)))
		return ENOMEM;
	s->cq_cap = (unsigned)s->cq->cqe;
	return need <= s->cq_cap ? 0 : ENOMEM;
}

static void reject(struct rdma_cm_id *id, uint16_t status)
{
	uint8_t rej[NVMF_RDMA_CM_REJ_BYTES];

	nvmf_rdma_cm_rej_build(status, rej);
	rdma_reject(id, rej, sizeof(rej));
	rdma_destroy_id(id);
	nvmf_rdma_stats.queues_rejected++;
}

static void on_connect_request(struct server *s, struct rdma_cm_id *id, const struct rdma_conn_param *asked)
{
	struct nvmf_rdma_cm_req req;
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param param;
	uint8_t rep[NVMF_RDMA_CM_REP_BYTES];
	struct tqueue *tq;
	unsigned index = 0;

	if (nvmf_rdma_cm_req_parse(asked->private_data, asked->private_data_len, &req))
		return reject(id, NVMF_RDMA_CM_INVALID_LEN);
	if (req.recfmt != 0)
		return reject(id, NVMF_RDMA_CM_INVALID_RECFMT);
	if (req.qid > NVMF_MAX_IO_QUEUES)
		return reject(id, NVMF_RDMA_CM_INVALID_QID);
	if (req.hsqsize == 0 || req.hsqsize >= NVMF_RDMA_MAX_QUEUE_SIZE ||
	    (req.qid == 0 && req.hsqsize + 1u < NVMF_ADMIN_QUEUE_MIN))
		return reject(id, NVMF_RDMA_CM_INVALID_HSQSIZE);
	if (req.hrqsize == 0 || req.hrqsize > NVMF_RDMA_MAX_QUEUE_SIZE)
		return reject(id, NVMF_RDMA_CM_INVALID_HRQSIZE);
	while (index < MAX_QUEUES && s->queues[index])
		index++;
	unsigned depth = req.hsqsize + 1u;
	if (index == MAX_QUEUES || setup_device(s, id->verbs) || cq_room(s, 3 * depth + 1))
		return reject(id, NVMF_RDMA_CM_NO_RSC);
	tq = calloc(1, sizeof(*tq));
	if (!tq)
		return reject(id, NVMF_RDMA_CM_NO_RSC);
	tq->index = (uint16_t)index;
	tq->gen = ++s->next_gen;
	tq->depth = depth;
	nvmf_queue_init(&tq->q, req.qid, (uint16_t)depth);
	struct sockaddr *local = rdma_get_local_addr(id);
	if (local && local->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)local)->sin_addr, tq->q.traddr, sizeof(tq->q.traddr));
	tq->capsules = malloc((size_t)depth * CAPSULE_BYTES);
	tq->data = malloc((size_t)depth * NVMF_MAX_DATA);
	tq->rsps = calloc(depth, NVME_CQE_BYTES);
	tq->ctx = calloc(depth, sizeof(*tq->ctx));
	tq->pending = calloc(depth, sizeof(*tq->pending));
	tq->pending_len = calloc(depth, sizeof(*tq->pending_len));
	if (!tq->capsules || !tq->data || !tq->rsps || !tq->ctx || !tq->pending || !tq->pending_len)
		goto refuse;
	tq->capsule_mr = ibv_reg_mr(s->pd, tq->capsules, (size_t)depth * CAPSULE_BYTES, IBV_ACCESS_LOCAL_WRITE);
	tq->data_mr = ibv_reg_mr(s->pd, tq->data, (size_t)depth * NVMF_MAX_DATA, IBV_ACCESS_LOCAL_WRITE);
	tq->rsp_mr = ibv_reg_mr(s->pd, tq->rsps, (size_t)depth * NVME_CQE_BYTES, 0);
	if (!tq->capsule_mr || !tq->data_mr || !tq->rsp_mr)
		goto refuse;
	for (unsigned i = 0; i < depth; i++) {
		tq->ctx[i].data = tq->data + (size_t)i * NVMF_MAX_DATA;
		tq->ctx[i].rsp = tq->rsps + (size_t)i * NVME_CQE_BYTES;
	}
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 2 * depth + 1;     /* a READ or a WRITE, and the SEND, per context */
	qa.cap.max_recv_wr = depth;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	tq->id = id;
	if (rdma_create_qp(id, s->pd, &qa))
		goto refuse;
	for (unsigned i = 0; i < depth; i++)
		if (post_recv(tq, i))
			goto refuse;
	nvmf_rdma_cm_rep_build((uint16_t)depth, rep);
	memset(&param, 0, sizeof(param));
	param.private_data = rep;
	param.private_data_len = sizeof(rep);
	/* Our RDMA READs are limited by the host's responder resources. */
	param.initiator_depth = asked->initiator_depth < MAX_READS_IN_FLIGHT ? asked->initiator_depth
									      : MAX_READS_IN_FLIGHT;
	param.responder_resources = asked->responder_resources < MAX_READS_IN_FLIGHT ? asked->responder_resources
										      : MAX_READS_IN_FLIGHT;
	param.rnr_retry_count = 7;
	if (rdma_accept(id, &param))
		goto refuse;
	id->context = tq;
	s->queues[index] = tq;
	if (index >= s->top)
		s->top = index + 1;
	s->cq_budget += 3 * depth + 1;
	nvmf_rdma_stats.queues_accepted++;
	if (s->verbose)
		fprintf(stderr, "nvmf: queue %u accepted: qid %u, depth %u, host rq %u\n", index, req.qid, depth,
			req.hrqsize);
	return;
refuse:
	tq->id = NULL;
	if (id->qp)
		rdma_destroy_qp(id);
	tqueue_free(tq);
	reject(id, NVMF_RDMA_CM_NO_RSC);
}

static void handle_cm_events(struct server *s)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(s->ch, &ev) == 0) {
		struct rdma_cm_id *id = ev->id;
		enum rdma_cm_event_type type = ev->event;

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_conn_param asked = ev->param.conn;
			uint8_t pdata[256];
			if (asked.private_data)
				memcpy(pdata, asked.private_data, asked.private_data_len);
			asked.private_data = asked.private_data ? pdata : NULL;
			rdma_ack_cm_event(ev);
			on_connect_request(s, id, &asked);
			continue;
		}
		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_REJECTED ||
		    type == RDMA_CM_EVENT_CONNECT_ERROR || type == RDMA_CM_EVENT_UNREACHABLE) {
			struct tqueue *tq = id->context;
			if (tq && s->queues[tq->index] == tq)
				tqueue_drop(s, tq, "disconnected");
		}
	}
}

int nvmf_rdma_serve(struct nvmf_target *t, const struct nvmf_serve_opts *o, volatile sig_atomic_t *stop)
{
	struct server *s = calloc(1, sizeof(*s));
	struct rdma_addrinfo hints, *ai = NULL;
	char port[16];
	int err = 0;

	if (!s)
		return ENOMEM;
	s->t = t;
	s->verbose = o->verbose;
	snprintf(port, sizeof(port), "%u", o->port ? o->port : NVMF_RDMA_PORT);
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	s->ch = rdma_create_event_channel();
	if (!s->ch || rdma_getaddrinfo(o->addr, port, &hints, &ai) ||
	    rdma_create_id(s->ch, &s->listen, NULL, RDMA_PS_TCP) || rdma_bind_addr(s->listen, ai->ai_src_addr) ||
	    rdma_listen(s->listen, 64)) {
		err = errno ? errno : EINVAL;
		fprintf(stderr, "nvmf: cannot listen on %s:%s: %s\n", o->addr ? o->addr : "*", port, strerror(err));
		goto out;
	}
	fcntl(s->ch->fd, F_SETFL, fcntl(s->ch->fd, F_GETFL) | O_NONBLOCK);
	if (o->ready)
		o->ready(o->ready_ctx);
	uint64_t next_tick = 0, last_work = 0;
	/* After work the loop keeps polling the CQ, without sleeping, for
	 * spin_us: a host at queue depth 1 sends its next command within a
	 * few microseconds, and waking a sleeping thread costs more than
	 * that (SPDK's target polls for ever; this one sleeps when idle, so
	 * an idle target costs no CPU). */
	uint64_t spin_ns = (uint64_t)o->spin_us * 1000;
	while (!*stop) {
		struct pollfd fds[2] = { { .fd = s->ch->fd, .events = POLLIN }, { .fd = -1, .events = POLLIN } };
		if (s->comp)
			fds[1].fd = s->comp->fd;
		bool spinning = spin_ns && now_ns() - last_work < spin_ns;
		int r = poll(fds, 2, spinning ? 0 : 100);
		if (r < 0 && errno != EINTR) {
			err = errno;
			break;
		}
		if (fds[0].revents & POLLIN)
			handle_cm_events(s);
		if (s->comp && (fds[1].revents & POLLIN)) {
			struct ibv_cq *cq;
			void *ctx;
			if (ibv_get_cq_event(s->comp, &cq, &ctx) == 0) {
				ibv_ack_cq_events(cq, 1);
				ibv_req_notify_cq(cq, 0);
			}
		}
		uint64_t now = now_ns();
		if (s->cq && drain_cq(s))
			last_work = now;
		reap_dead(s);
		if (now >= next_tick) {
			next_tick = now + 100000000ull;
			if (nvmf_target_tick(t, now)) {
				if (s->verbose)
					fprintf(stderr, "nvmf: keep-alive timeout: controller torn down\n");
				reap_dead(s);
			}
		}
	}
out:
	for (unsigned i = 0; i < MAX_QUEUES; i++)
		if (s->queues[i])
			tqueue_drop(s, s->queues[i], "target stopping");
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->comp)
		ibv_destroy_comp_channel(s->comp);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->listen)
		rdma_destroy_id(s->listen);
	if (ai)
		rdma_freeaddrinfo(ai);
	if (s->ch)
		rdma_destroy_event_channel(s->ch);
	free(s);
	return err;
}
