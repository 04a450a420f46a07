/*
 * unit_srq.c — shared receive queues, async events and UC message loss,
 * checked on two rnics wired back to back through an in-test packet queue
 * with a simulated clock (the loop of unit_util.c, shared with
 * unit_loop.c; only wire + rnic are needed).
 *
 * Cases: several QPs sharing one SRQ (wc.qp_num names the receiving QP,
 * every WQE used once, data intact), the SRQ limit event (once, then
 * disarmed), RNR NAK on an empty SRQ and recovery, Last WQE Reached (on
 * modify to ERR and on a fatal responder error, once per ERR), CQ overflow
 * -> IBV_EVENT_CQ_ERR, the SRQ verbs' argument rules (resize, limits,
 * EBUSY, ENOMEM), a UC SEND with no receive WQE dropped silently, and UC
 * under seeded random loss: a lost packet loses
 * exactly its message, the next FIRST/ONLY resynchronises, and the count
 * of delivered messages equals the count of messages whose packets all
 * arrived — with a private RQ and with an SRQ.
 *
 * Seeds for the loss case: argv[1] (one seed) or a fixed list.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/rnic.h"
#include "rnic/rnic_int.h"

#include "unit_util.h"

/* The packet loop (unit_util.h): queue depth and rnic seeds of this file;
 * async events are recorded. */
#define MAXQ 8192
#define SEED_BASE 200

/* ---- objects ------------------------------------------------------------------ */

#define BUFSZ (256 * 1024)

struct node {
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	uint8_t *buf;
	struct rnic_mr *mr;
};

static void node_init(struct ut_loop *l, int i, struct node *n, int cqe)
{
	n->pd = rnic_pd_alloc(l->r[i]);
	n->cq = rnic_cq_create(l->r[i], cqe, n);
	n->buf = calloc(1, BUFSZ);
	n->mr = rnic_mr_reg(n->pd, n->buf, BUFSZ, (uint64_t)(uintptr_t)n->buf,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(n->pd && n->cq && n->buf && n->mr);
}

static void node_fini(struct node *n)
{
	CHECK(rnic_mr_dereg(n->mr) == 0);
	CHECK(rnic_cq_destroy(n->cq) == 0);
	CHECK(rnic_pd_free(n->pd) == 0);
	free(n->buf);
}

static struct rnic_qp *make_qp(struct node *n, struct rnic_srq *srq, enum ibv_qp_type type, void *ctx)
{
	struct ibv_qp_init_attr init = {
		.qp_type = type,
		.cap = { .max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct rnic_qp *qp = rnic_qp_create_srq(n->pd, n->cq, n->cq, srq, &init, ctx);

	CHECK(qp != NULL);
	if (srq)
		CHECK(init.cap.max_recv_wr == 0 && init.cap.max_recv_sge == 0);
	return qp;
}

/* RESET -> INIT -> RTR -> RTS toward (gid, dqpn); PSNs from the QPNs so
 * both ends agree without being told.  RC gets a short RNR timer. */
/* Remote write only, a 256-byte MTU, no reads or atomics, no hop limit;
 * PSNs from the QP numbers. */
static int connect_qp(struct ut_loop *l, int side, struct rnic_qp *qp, uint32_t dqpn, uint8_t rnr_retry)
{
	const struct ut_rc_opts o = { .access = IBV_ACCESS_REMOTE_WRITE, .mtu = IBV_MTU_256 };

	return ut_connect_rc(l, side, qp, dqpn, rnic_qp_num(qp) & 0xffff, dqpn & 0xffff, 14, 7, rnr_retry, &o);
}

static void connect_pair(struct ut_loop *l, struct rnic_qp *a, struct rnic_qp *b, uint8_t rnr_retry)
{
	CHECK(connect_qp(l, 0, a, rnic_qp_num(b), rnr_retry) == 0);
	CHECK(connect_qp(l, 1, b, rnic_qp_num(a), rnr_retry) == 0);
}

static int srq_post(struct rnic_srq *srq, struct node *n, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(n->buf + off), .length = len, .lkey = rnic_mr_lkey(n->mr) };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return rnic_post_srq_recv(srq, &wr, &bad);
}

static int qp_post_recv(struct rnic_qp *qp, struct node *n, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(n->buf + off), .length = len, .lkey = rnic_mr_lkey(n->mr) };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return rnic_post_recv(qp, &wr, &bad);
}

static int send_msg(struct ut_loop *l, struct rnic_qp *qp, struct node *n, enum ibv_wr_opcode op, uint64_t wr_id,
		    uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;

	wr_send_1(&wr, &sge, op, wr_id, (uintptr_t)(n->buf + off), len, rnic_mr_lkey(n->mr));
	wr_remote(&wr, raddr, rkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = imm;
	return rnic_post_send(qp, &wr, &bad, l->now);
}

static struct rnic_srq *make_srq(struct node *n, uint32_t max_wr, uint32_t max_sge, void *ctx)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = max_wr, .max_sge = max_sge, .srq_limit = 5 } };
	struct rnic_srq *srq = rnic_srq_create(n->pd, &init, ctx);

	CHECK(srq != NULL);
	CHECK(init.attr.max_wr == max_wr && init.attr.srq_limit == 0);
	return srq;
}

/* ---- tests ------------------------------------------------------------------ */

/* Three QPs on node 1 share one SRQ; each peer on node 0 sends messages
 * of several packets.  Every completion names its QP, each WQE is used
 * exactly once, and every buffer holds what its sender sent. */
#define NQP 3
#define PER_QP 6
static void test_shared(void)
{
	struct ut_loop l;
	struct node a, b;
	struct rnic_qp *qa[NQP], *qb[NQP];
	struct rnic_srq *srq;
	struct ibv_wc wc;
	bool used[NQP * PER_QP] = { false };
	int got = 0;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, true);
	node_init(&l, 0, &a, 256);
	node_init(&l, 1, &b, 256);
	srq = make_srq(&b, NQP * PER_QP, 1, &b);
	for (int i = 0; i < NQP; i++) {
		qa[i] = make_qp(&a, NULL, IBV_QPT_RC, NULL);
		qb[i] = make_qp(&b, srq, IBV_QPT_RC, &qb[i]);
		connect_pair(&l, qa[i], qb[i], 7);
	}
	/* Posting to the private RQ of an SRQ QP is an error. */
	CHECK(qp_post_recv(qb[0], &b, 1, 0, 64) == EINVAL);
	for (int k = 0; k < NQP * PER_QP; k++)
		CHECK(srq_post(srq, &b, 1000 + (uint64_t)k, (uint32_t)k * 4096, 4096) == 0);
	for (int i = 0; i < NQP; i++)
		for (int m = 0; m < PER_QP; m++) {
			uint32_t off = (uint32_t)(i * PER_QP + m) * 1024, len = 300 + (uint32_t)(i * 97 + m * 211);

			ut_fill(a.buf + off, len, (uint32_t)(i * 16 + m));
			CHECK(send_msg(&l, qa[i], &a, IBV_WR_SEND, (uint64_t)(i * 100 + m), off, len, 0, 0, 0) == 0);
		}
	ut_loop_run(&l, 100000);
	while (rnic_cq_poll(b.cq, 1, &wc) == 1) {
		int k = (int)(wc.wr_id - 1000), qi = -1;
		uint8_t expect[4096];

		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV);
		CHECK(k >= 0 && k < NQP * PER_QP && !used[k]);
		if (k < 0 || k >= NQP * PER_QP || used[k])
			continue;
		used[k] = true;
		for (int i = 0; i < NQP; i++)
			if (wc.qp_num == rnic_qp_num(qb[i]))
				qi = i;
		CHECK(qi >= 0);
		if (qi < 0)
			continue;
		/* Messages of one QP arrive in order; find which one this is
		 * by its length (all lengths differ). */
		for (int m = 0; m < PER_QP; m++) {
			uint32_t len = 300 + (uint32_t)(qi * 97 + m * 211);
			if (wc.byte_len == len) {
				ut_fill(expect, len, (uint32_t)(qi * 16 + m));
				CHECK(memcmp(b.buf + (size_t)k * 4096, expect, len) == 0);
			}
		}
		got++;
	}
	CHECK(got == NQP * PER_QP);
	/* The SRQ may not go while QPs use it. */
	CHECK(rnic_srq_destroy(srq) == EBUSY);
	for (int i = 0; i < NQP; i++) {
		CHECK(rnic_qp_destroy(qa[i]) == 0);
		CHECK(rnic_qp_destroy(qb[i]) == 0);
	}
	CHECK(rnic_srq_destroy(srq) == 0);
	node_fini(&a);
	node_fini(&b);
	ut_loop_fini(&l);
}

/* Limit armed at 4 on an SRQ of 8: the event fires exactly when the fifth
 * WQE is taken (count 3 < 4), once, and the SRQ is disarmed. */
static void test_limit(void)
{
	struct ut_loop l;
	struct node a, b;
	struct rnic_qp *qa, *qb;
	struct rnic_srq *srq;
	struct ibv_srq_attr at;
	struct ibv_wc wc;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, true);
	node_init(&l, 0, &a, 64);
	node_init(&l, 1, &b, 64);
	srq = make_srq(&b, 8, 1, &b.buf);
	qa = make_qp(&a, NULL, IBV_QPT_RC, NULL);
	qb = make_qp(&b, srq, IBV_QPT_RC, NULL);
	connect_pair(&l, qa, qb, 7);
	for (int k = 0; k < 8; k++)
		CHECK(srq_post(srq, &b, (uint64_t)k, (uint32_t)k * 512, 512) == 0);
	CHECK(srq_post(srq, &b, 99, 0, 512) == ENOMEM);   /* full */
	memset(&at, 0, sizeof(at));
	at.srq_limit = 9;
	CHECK(rnic_srq_modify(srq, &at, IBV_SRQ_LIMIT) == EINVAL);   /* above max_wr */
	at.srq_limit = 4;
	CHECK(rnic_srq_modify(srq, &at, IBV_SRQ_LIMIT) == 0);
	CHECK(rnic_srq_query(srq, &at) == 0 && at.srq_limit == 4 && at.max_wr == 8 && at.max_sge == 1);
	/* An armed limit must fit a resize. */
	at.max_wr = 3;
	CHECK(rnic_srq_modify(srq, &at, IBV_SRQ_MAX_WR) == EINVAL);
	for (int m = 0; m < 6; m++) {
		CHECK(send_msg(&l, qa, &a, IBV_WR_SEND, (uint64_t)m, 0, 100, 0, 0, 0) == 0);
		ut_loop_run(&l, 10000);
		CHECK(rnic_cq_poll(b.cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
		/* after m+1 messages, 7-m WQEs remain; below 4 from m == 4 */
		CHECK(ut_count_events(&l, IBV_EVENT_SRQ_LIMIT_REACHED, &b.buf) == (m >= 4 ? 1 : 0));
	}
	CHECK(rnic_srq_query(srq, &at) == 0 && at.srq_limit == 0);
	/* Re-armed: fires again on the next WQE taken below it. */
	at.srq_limit = 3;
	CHECK(rnic_srq_modify(srq, &at, IBV_SRQ_LIMIT) == 0);
	CHECK(send_msg(&l, qa, &a, IBV_WR_SEND, 50, 0, 100, 0, 0, 0) == 0);
	ut_loop_run(&l, 10000);
	CHECK(ut_count_events(&l, IBV_EVENT_SRQ_LIMIT_REACHED, &b.buf) == 2);
	/* 1 WQE queued: a depth of 1 would hold it, but not an armed limit of 2. */
	at.srq_limit = 2;
	CHECK(rnic_srq_modify(srq, &at, IBV_SRQ_LIMIT) == 0);
	at.max_wr = 1;
	CHECK(rnic_srq_modify(srq, &at, IBV_SRQ_MAX_WR) == EINVAL);
	at.max_wr = 2;
	CHECK(rnic_srq_modify(srq, &at, IBV_SRQ_MAX_WR) == 0);
	CHECK(rnic_qp_destroy(qa) == 0);
	CHECK(rnic_qp_destroy(qb) == 0);
	CHECK(rnic_srq_destroy(srq) == 0);
	node_fini(&a);
	node_fini(&b);
	ut_loop_fini(&l);
}

/* An empty SRQ answers with RNR NAKs; once a WQE is posted the resend is
 * accepted and the message completes successfully. */
static void test_rnr(void)
{
	struct ut_loop l;
	struct node a, b;
	struct rnic_qp *qa, *qb;
	struct rnic_srq *srq;
	struct ibv_wc wc;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, true);
	node_init(&l, 0, &a, 64);
	node_init(&l, 1, &b, 64);
	srq = make_srq(&b, 4, 1, NULL);
	qa = make_qp(&a, NULL, IBV_QPT_RC, NULL);
	qb = make_qp(&b, srq, IBV_QPT_RC, NULL);
	connect_pair(&l, qa, qb, 7);
	ut_fill(a.buf, 700, 3);
	CHECK(send_msg(&l, qa, &a, IBV_WR_SEND, 7, 0, 700, 0, 0, 0) == 0);
	ut_loop_run(&l, 40);
	CHECK(rnic_counters(l.r[1])->tx_rnr_nak >= 1);
	CHECK(rnic_cq_poll(a.cq, 1, &wc) == 0);
	CHECK(srq_post(srq, &b, 77, 8192, 1024) == 0);
	ut_loop_run(&l, 10000);
	CHECK(rnic_cq_poll(a.cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 7);
	CHECK(rnic_cq_poll(b.cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 77 &&
	      wc.byte_len == 700 && wc.qp_num == rnic_qp_num(qb));
	CHECK(memcmp(b.buf + 8192, a.buf, 700) == 0);
	CHECK(rnic_qp_destroy(qa) == 0);
	CHECK(rnic_qp_destroy(qb) == 0);
	CHECK(rnic_srq_destroy(srq) == 0);
	node_fini(&a);
	node_fini(&b);
	ut_loop_fini(&l);
}

static bool drop_last_from_0(struct ut_loop *l, int from, uint64_t n, const uint8_t *ib, size_t len)
{
	(void)n;
	(void)l;
	(void)len;
	/* lose every SEND LAST: the message stays in progress on node 1 */
	return from == 0 && (ib[0] & 0x1f) == WIRE_OP_SEND_LAST;
}

/* Last WQE Reached: modify to ERR with a WQE half filled flushes that WQE
 * (on this QP's CQ) and raises the event once; the SRQ keeps its other
 * WQEs.  A fatal responder error (message longer than the buffer) raises
 * QP_REQ_ERR and Last WQE Reached on another QP. */
static void test_last_wqe(void)
{
	struct ut_loop l;
	struct node a, b;
	struct rnic_qp *qa, *qb, *qa2, *qb2;
	struct rnic_srq *srq;
	struct ibv_qp_attr at;
	struct ibv_srq_attr sa;
	struct ibv_wc wc;
	int n;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, true);
	node_init(&l, 0, &a, 64);
	node_init(&l, 1, &b, 64);
	srq = make_srq(&b, 8, 2, NULL);
	qa = make_qp(&a, NULL, IBV_QPT_RC, NULL);
	qb = make_qp(&b, srq, IBV_QPT_RC, &qb);
	qa2 = make_qp(&a, NULL, IBV_QPT_RC, NULL);
	qb2 = make_qp(&b, srq, IBV_QPT_RC, &qb2);
	connect_pair(&l, qa, qb, 7);
	connect_pair(&l, qa2, qb2, 7);
	for (int k = 0; k < 4; k++)
		CHECK(srq_post(srq, &b, 10 + (uint64_t)k, (uint32_t)k * 1024, 1024) == 0);

	l.drop = drop_last_from_0;
	CHECK(send_msg(&l, qa, &a, IBV_WR_SEND, 1, 0, 600, 0, 0, 0) == 0);   /* 3 packets */
	ut_loop_run(&l, 2);   /* FIRST and MIDDLE delivered */
	l.drop = NULL;
	CHECK(ut_count_events(&l, IBV_EVENT_QP_LAST_WQE_REACHED, &qb) == 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_ERR;
	CHECK(rnic_qp_modify(qb, &at, IBV_QP_STATE, l.now) == 0);
	CHECK(ut_count_events(&l, IBV_EVENT_QP_LAST_WQE_REACHED, &qb) == 1);
	n = rnic_cq_poll(b.cq, 1, &wc);
	CHECK(n == 1 && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 10 && wc.qp_num == rnic_qp_num(qb));
	CHECK(rnic_cq_poll(b.cq, 1, &wc) == 0);   /* the SRQ's WQEs are not flushed */
	CHECK(rnic_srq_query(srq, &sa) == 0);
	/* ERR -> ERR: no second event */
	CHECK(rnic_qp_modify(qb, &at, IBV_QP_STATE, l.now) == 0);
	CHECK(ut_count_events(&l, IBV_EVENT_QP_LAST_WQE_REACHED, &qb) == 1);

	/* Fatal responder error on qb2: 2000 bytes into a 1024-byte WQE. */
	CHECK(send_msg(&l, qa2, &a, IBV_WR_SEND, 2, 0, 2000, 0, 0, 0) == 0);
	ut_loop_run(&l, 10000);
	CHECK(ut_count_events(&l, IBV_EVENT_QP_REQ_ERR, &qb2) == 1);
	CHECK(ut_count_events(&l, IBV_EVENT_QP_LAST_WQE_REACHED, &qb2) == 1);
	CHECK(rnic_cq_poll(b.cq, 1, &wc) == 1 && wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == 11 &&
	      wc.qp_num == rnic_qp_num(qb2));
	CHECK(rnic_cq_poll(a.cq, 8, (struct ibv_wc[8]){ 0 }) >= 1);

	/* RESET and back: the QP takes from the SRQ again and a new ERR
	 * raises a new event. */
	at.qp_state = IBV_QPS_RESET;
	CHECK(rnic_qp_modify(qb, &at, IBV_QP_STATE, l.now) == 0);
	at.qp_state = IBV_QPS_ERR;
	CHECK(rnic_qp_modify(qb, &at, IBV_QP_STATE, l.now) == 0);
	CHECK(ut_count_events(&l, IBV_EVENT_QP_LAST_WQE_REACHED, &qb) == 2);

	CHECK(rnic_qp_destroy(qa) == 0);
	CHECK(rnic_qp_destroy(qb) == 0);
	CHECK(rnic_qp_destroy(qa2) == 0);
	CHECK(rnic_qp_destroy(qb2) == 0);
	CHECK(rnic_srq_destroy(srq) == 0);
	node_fini(&a);
	node_fini(&b);
	ut_loop_fini(&l);
}

/* A CQ of 2 entries receiving 4 completions: 2 are kept, the overflow is
 * counted and raises IBV_EVENT_CQ_ERR with the CQ's context. */
static void test_cq_overflow(void)
{
	struct ut_loop l;
	struct node a, b;
	struct rnic_qp *qa, *qb;
	struct ibv_wc wc[4];

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, true);
	node_init(&l, 0, &a, 64);
	node_init(&l, 1, &b, 2);
	qa = make_qp(&a, NULL, IBV_QPT_RC, NULL);
	qb = make_qp(&b, NULL, IBV_QPT_RC, NULL);
	connect_pair(&l, qa, qb, 7);
	for (int k = 0; k < 4; k++)
		CHECK(qp_post_recv(qb, &b, (uint64_t)k, (uint32_t)k * 512, 512) == 0);
	for (int m = 0; m < 4; m++)
		CHECK(send_msg(&l, qa, &a, IBV_WR_SEND, (uint64_t)m, 0, 64, 0, 0, 0) == 0);
	ut_loop_run(&l, 10000);
	CHECK(ut_count_events(&l, IBV_EVENT_CQ_ERR, &b) >= 1);
	CHECK(ut_count_events(&l, IBV_EVENT_CQ_ERR, &a) == 0);
	CHECK(rnic_counters(l.r[1])->cq_overflows == 2);
	CHECK(rnic_cq_poll(b.cq, 4, wc) == 2);
	CHECK(rnic_qp_destroy(qa) == 0);
	CHECK(rnic_qp_destroy(qb) == 0);
	node_fini(&a);
	node_fini(&b);
	ut_loop_fini(&l);
}

/* The SRQ verbs' argument rules, and a resize that keeps queued WQEs in
 * order (checked by consuming them afterwards). */
static void test_srq_args(void)
{
	struct ut_loop l;
	struct node a, b;
	struct rnic_qp *qa, *qb;
	struct rnic_srq *srq;
	struct ibv_srq_init_attr init;
	struct ibv_srq_attr at;
	struct ibv_sge sge[3];
	struct ibv_recv_wr wr, *bad;
	struct ibv_wc wc;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, true);
	node_init(&l, 0, &a, 64);
	node_init(&l, 1, &b, 64);
	memset(&init, 0, sizeof(init));
	CHECK(rnic_srq_create(b.pd, &init, NULL) == NULL && errno == EINVAL);   /* max_wr 0 */
	init.attr.max_wr = 4;
	init.attr.max_sge = 1000;
	CHECK(rnic_srq_create(b.pd, &init, NULL) == NULL && errno == EINVAL);
	init.attr.max_wr = 1u << 30;
	init.attr.max_sge = 1;
	CHECK(rnic_srq_create(b.pd, &init, NULL) == NULL && errno == EINVAL);
	CHECK(rnic_srq_create(NULL, &init, NULL) == NULL && errno == EINVAL);

	srq = make_srq(&b, 4, 2, NULL);
	CHECK(rnic_pd_free(b.pd) == EBUSY);
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = sge;
	wr.num_sge = 3;                                                   /* > max_sge */
	CHECK(rnic_post_srq_recv(srq, &wr, &bad) == EINVAL && bad == &wr);
	for (int k = 0; k < 3; k++)
		CHECK(srq_post(srq, &b, (uint64_t)k, (uint32_t)k * 1024, 1024) == 0);
	memset(&at, 0, sizeof(at));
	at.max_wr = 2;                                                    /* < queued */
	CHECK(rnic_srq_modify(srq, &at, IBV_SRQ_MAX_WR) == EINVAL);
	CHECK(rnic_srq_modify(srq, &at, 0x80) == EINVAL);                 /* unknown bit */
	at.max_wr = 16;
	CHECK(rnic_srq_modify(srq, &at, IBV_SRQ_MAX_WR) == 0);
	CHECK(rnic_srq_query(srq, &at) == 0 && at.max_wr == 16 && at.max_sge == 2);
	for (int k = 3; k < 16; k++)
		CHECK(srq_post(srq, &b, (uint64_t)k, (uint32_t)k * 1024, 1024) == 0);
	CHECK(srq_post(srq, &b, 99, 0, 1024) == ENOMEM);

	qa = make_qp(&a, NULL, IBV_QPT_RC, NULL);
	qb = make_qp(&b, srq, IBV_QPT_RC, NULL);
	connect_pair(&l, qa, qb, 7);
	for (int m = 0; m < 16; m++)
		CHECK(send_msg(&l, qa, &a, IBV_WR_SEND, (uint64_t)m, 0, 32, 0, 0, 0) == 0);
	ut_loop_run(&l, 100000);
	for (int k = 0; k < 16; k++)   /* FIFO across the resize */
		CHECK(rnic_cq_poll(b.cq, 1, &wc) == 1 && wc.wr_id == (uint64_t)k && wc.status == IBV_WC_SUCCESS);
	/* UD with an SRQ is not modelled here. */
	{
		struct ibv_qp_init_attr qi = { .qp_type = IBV_QPT_UD, .cap = { .max_send_wr = 1, .max_send_sge = 1 } };
		CHECK(rnic_qp_create_srq(b.pd, b.cq, b.cq, srq, &qi, NULL) == NULL);
	}
	CHECK(rnic_qp_destroy(qa) == 0);
	CHECK(rnic_qp_destroy(qb) == 0);
	CHECK(rnic_srq_destroy(srq) == 0);
	node_fini(&a);
	node_fini(&b);
	ut_loop_fini(&l);
}

/* UC with no receive WQE: the SEND is dropped silently (no RNR NAK, no
 * completion, IBTA 9.8.2); the next SEND, with a WQE posted, arrives. */
static void test_uc_no_wqe(bool use_srq)
{
	struct ut_loop l;
	struct node a, b;
	struct rnic_qp *qa, *qb;
	struct rnic_srq *srq = NULL;
	struct ibv_wc wc;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, true);
	node_init(&l, 0, &a, 64);
	node_init(&l, 1, &b, 64);
	if (use_srq)
		srq = make_srq(&b, 4, 1, NULL);
	qa = make_qp(&a, NULL, IBV_QPT_UC, NULL);
	qb = make_qp(&b, srq, IBV_QPT_UC, NULL);
	connect_pair(&l, qa, qb, 0);
	ut_fill(a.buf, 4096, 9);
	CHECK(send_msg(&l, qa, &a, IBV_WR_SEND, 1, 0, 600, 0, 0, 0) == 0);
	ut_loop_run(&l, 1000);
	CHECK(rnic_cq_poll(a.cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 1);
	CHECK(rnic_cq_poll(b.cq, 1, &wc) == 0);
	CHECK(l.sent[1] == 0);
	if (use_srq)
		CHECK(srq_post(srq, &b, 5, 8192, 1024) == 0);
	else
		CHECK(qp_post_recv(qb, &b, 5, 8192, 1024) == 0);
	CHECK(send_msg(&l, qa, &a, IBV_WR_SEND, 2, 1000, 700, 0, 0, 0) == 0);
	ut_loop_run(&l, 1000);
	CHECK(rnic_cq_poll(b.cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 5 &&
	      wc.byte_len == 700 && wc.qp_num == rnic_qp_num(qb));
	CHECK(memcmp(b.buf + 8192, a.buf + 1000, 700) == 0);
	CHECK(l.sent[1] == 0);
	CHECK(rnic_qp_destroy(qa) == 0);
	CHECK(rnic_qp_destroy(qb) == 0);
	if (srq)
		CHECK(rnic_srq_destroy(srq) == 0);
	node_fini(&a);
	node_fini(&b);
	ut_loop_fini(&l);
}

/* ---- UC under loss ---------------------------------------------------------- */

/* The drop hook tracks messages by their opcodes: a FIRST or ONLY from
 * node 0 starts the next message.  It records which messages lost a
 * packet. */
#define UC_MSGS 400
struct uc_loss {
	uint64_t prng;
	int cur;                        /* index of the message being sent */
	bool lost[UC_MSGS];
	uint32_t drop_per_mille;
};

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool uc_drop(struct ut_loop *l, int from, uint64_t n, const uint8_t *ib, size_t len)
{
	struct uc_loss *u = l->hook_ctx;
	const struct wire_opcode_info *info = wire_opcode_info(ib[0]);

	(void)n;
	(void)len;
	if (from != 0 || !info)
		return false;
	if (info->flags & (WIRE_F_FIRST | WIRE_F_ONLY))
		u->cur++;
	if (splitmix(&u->prng) % 1000 < u->drop_per_mille) {
		if (u->cur >= 0 && u->cur < UC_MSGS)
			u->lost[u->cur] = true;
		return true;
	}
	return false;
}

/* Messages alternate SEND and RDMA WRITE with immediate, 1..5 packets of
 * 256 bytes.  Expected on node 1: one completion per message none of whose
 * packets was lost, in order, with the right length, immediate and data;
 * none for the others.  The sender's WRs all complete successfully (UC has
 * no ACKs to report failure) and node 1 never transmits. */
static void test_uc_loss(uint64_t seed, bool use_srq)
{
	struct ut_loop l;
	struct node a, b;
	struct rnic_qp *qa, *qb;
	struct rnic_srq *srq = NULL;
	struct uc_loss *u = calloc(1, sizeof(*u));
	uint32_t lens[UC_MSGS];
	int expect_next = 0, delivered = 0, intact = 0, sends_done = 0, next_wr = 250;
	struct ibv_wc wc;
	uint64_t rng = seed;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, true);
	node_init(&l, 0, &a, 1024);
	node_init(&l, 1, &b, 1024);
	if (use_srq)
		srq = make_srq(&b, 512, 1, NULL);
	qa = make_qp(&a, NULL, IBV_QPT_UC, NULL);
	qb = make_qp(&b, srq, IBV_QPT_UC, NULL);
	connect_pair(&l, qa, qb, 0);
	u->prng = seed * 7919 + 1;
	u->cur = -1;
	u->drop_per_mille = 30 + (uint32_t)(seed % 5) * 20;
	l.drop = uc_drop;
	l.hook_ctx = u;

	ut_fill(a.buf, BUFSZ, (uint32_t)seed);
	/* Receive WQEs: the SEND data lands in a per-WQE 2 KiB slot; WRITEs
	 * into their own area at 128 KiB + msg * 256 (overlap is harmless: we
	 * only check delivered messages, right after they complete). */
	for (int k = 0; k < UC_MSGS; k++) {
		if (use_srq)
			CHECK(srq_post(srq, &b, (uint64_t)k, (uint32_t)(k % 60) * 2048, 2048) == 0);
		else if (k < 250)
			CHECK(qp_post_recv(qb, &b, (uint64_t)k, (uint32_t)(k % 60) * 2048, 2048) == 0);
	}
	for (int m = 0; m < UC_MSGS; m++) {
		uint32_t len = 1 + (uint32_t)(splitmix(&rng) % 1280);
		bool write = m & 1;

		lens[m] = len;
		CHECK(send_msg(&l, qa, &a, write ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND, (uint64_t)m,
			       (uint32_t)m * 64, len, (uint64_t)(uintptr_t)b.buf + 131072, rnic_mr_rkey(b.mr),
			       (uint32_t)m) == 0);
		while (rnic_cq_poll(a.cq, 1, &wc) == 1) {
			CHECK(wc.status == IBV_WC_SUCCESS);
			sends_done++;
		}
		ut_loop_run(&l, 100000);
		/* Check each delivery at once, before a later message reuses
		 * the buffer. */
		while (rnic_cq_poll(b.cq, 1, &wc) == 1) {
			const uint8_t *dst;

			CHECK(wc.status == IBV_WC_SUCCESS);
			while (expect_next < UC_MSGS && u->lost[expect_next])
				expect_next++;
			CHECK(expect_next == m);   /* only the message just sent */
			delivered++;
			if (expect_next & 1) {
				CHECK(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && (wc.wc_flags & IBV_WC_WITH_IMM) &&
				      wc.imm_data == (uint32_t)expect_next);
				dst = b.buf + 131072;
			} else {
				CHECK(wc.opcode == IBV_WC_RECV);
				dst = b.buf + (wc.wr_id % 60) * 2048;
			}
			CHECK(wc.byte_len == lens[expect_next]);
			if (wc.byte_len == lens[expect_next] &&
			    memcmp(dst, a.buf + (size_t)expect_next * 64, lens[expect_next]) == 0)
				intact++;
			expect_next++;
			/* Keep the private RQ topped up (the SRQ holds all). */
			if (!use_srq) {
				CHECK(qp_post_recv(qb, &b, (uint64_t)next_wr, (uint32_t)(next_wr % 60) * 2048, 2048) == 0);
				next_wr++;
			}
		}
	}
	{
		int whole = 0, lost = 0;

		for (int m = 0; m < UC_MSGS; m++)
			u->lost[m] ? lost++ : whole++;
		if (delivered != whole || intact != whole || lost == 0)
			fprintf(stderr, "uc loss seed %" PRIu64 " srq %d: %d whole, %d lost, %d delivered, %d intact\n",
				seed, use_srq, whole, lost, delivered, intact);
		CHECK(delivered == whole);
		CHECK(intact == whole);
		CHECK(lost > 0);        /* the seed must actually lose something */
	}
	CHECK(sends_done == UC_MSGS);
	CHECK(l.sent[1] == 0);
	CHECK(rnic_qp_destroy(qa) == 0);
	CHECK(rnic_qp_destroy(qb) == 0);
	if (srq)
		CHECK(rnic_srq_destroy(srq) == 0);
	node_fini(&a);
	node_fini(&b);
	ut_loop_fini(&l);
	free(u);
}

int main(int argc, char **argv)
{
	static const uint64_t seeds[] = { 1, 2, 3, 17, 42, 1234 };

	test_shared();
	test_limit();
	test_rnr();
	test_last_wqe();
	test_cq_overflow();
	test_srq_args();
	test_uc_no_wqe(false);
	test_uc_no_wqe(true);
	if (argc > 1) {
		uint64_t s = strtoull(argv[1], NULL, 0);
		test_uc_loss(s, false);
		test_uc_loss(s, true);
	} else {
		for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
			test_uc_loss(seeds[i], false);
			test_uc_loss(seeds[i], true);
		}
	}
	if (check_failures)
		return check_exit("rnic_unit_srq");
	printf("unit_srq: all passed\n");
	return 0;
}
