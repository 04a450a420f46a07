/*
 * unit_loop.c — the rnic layer's own self-check: two rnics wired back to
 * back through a tiny in-test packet queue (xmit -> queue -> rnic_receive),
 * with a simulated clock and optional drop/duplicate hooks (the loop of
 * unit_util.c).  Exercises the RC transport end to end: SEND (multi-packet,
 * SGEs, immediate, inline), RDMA WRITE (+imm), RDMA READ, ATOMICs,
 * Go-Back-N after loss, RNR NAK and retry, duplicate ATOMIC replay, remote
 * errors, retry exhaustion, PSN wrap, and the modify-QP mask rules.
 *
 * Independent of ports/pair on purpose (the pair has its own, much larger
 * fault suite in tests/rnic); this one only needs wire + rnic.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/rnic.h"
#include "rnic/rnic_int.h"

#include "unit_util.h"

/* The packet loop (unit_util.h): queue depth and rnic seeds of this file. */
#define MAXQ 4096
#define SEED_BASE 100

/* ---- verbs-ish helpers ---------------------------------------------------- */

struct side {
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_qp *qp;
	uint8_t *buf;
	struct rnic_mr *mr;
};

#define BUFSZ (64 * 1024)

static void side_init(struct ut_loop *l, int i, struct side *s, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr init = {
		.qp_type = type,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 4,
			 .max_inline_data = 64 },
	};

	s->pd = rnic_pd_alloc(l->r[i]);
	s->cq = rnic_cq_create(l->r[i], 256, NULL);
	s->qp = rnic_qp_create(s->pd, s->cq, s->cq, &init, NULL);
	s->buf = calloc(1, BUFSZ);
	s->mr = rnic_mr_reg(s->pd, s->buf, BUFSZ, (uint64_t)(uintptr_t)s->buf,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(s->pd && s->cq && s->qp && s->buf && s->mr);
}

static void side_fini(struct side *s)
{
	CHECK(rnic_qp_destroy(s->qp) == 0);
	CHECK(rnic_mr_dereg(s->mr) == 0);
	CHECK(rnic_cq_destroy(s->cq) == 0);
	CHECK(rnic_pd_free(s->pd) == 0);
	free(s->buf);
}

static void pair_up(struct ut_loop *l, struct side *a, struct side *b, uint32_t psn_a, uint32_t psn_b)
{
	side_init(l, 0, a, IBV_QPT_RC);
	side_init(l, 1, b, IBV_QPT_RC);
	CHECK(ut_connect_rc(l, 0, a->qp, rnic_qp_num(b->qp), psn_a, psn_b, 10, 7, 7, NULL) == 0);
	CHECK(ut_connect_rc(l, 1, b->qp, rnic_qp_num(a->qp), psn_b, psn_a, 10, 7, 7, NULL) == 0);
}

static int post_recv(struct side *s, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(s->buf + off), .length = len, .lkey = rnic_mr_lkey(s->mr) };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return rnic_post_recv(s->qp, &wr, &bad);
}

static int post_one(struct ut_loop *l, struct side *s, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	wr->send_flags |= IBV_SEND_SIGNALED;
	return rnic_post_send(s->qp, wr, &bad, l->now);
}

static int poll1(struct side *s, struct ibv_wc *wc)
{
	return rnic_cq_poll(s->cq, 1, wc);
}

/* ---- tests ------------------------------------------------------------------ */

static int build_steps;
static void count_builds(void *ctx, const char *line)
{
	(void)ctx;
	if (strstr(line, " req BUILD_SEND"))
		build_steps++;
}

static void test_send(void)
{
	struct ut_loop l;
	struct side a, b;
	struct ibv_wc wc;
	struct ibv_sge sge[2];
	struct ibv_send_wr wr;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	pair_up(&l, &a, &b, 100, 200);
	rnic_set_trace(l.r[0], count_builds, NULL);
	/* 5000 bytes in two SGEs -> 5 packets at MTU 1024. */
	ut_fill(a.buf, 5000, 1);
	CHECK(post_recv(&b, 77, 8192, 8000) == 0);
	sge[0] = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = 3000, .lkey = rnic_mr_lkey(a.mr) };
	sge[1] = (struct ibv_sge){ .addr = (uintptr_t)a.buf + 3000, .length = 2000, .lkey = rnic_mr_lkey(a.mr) };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = 0x12345678;
	wr.sg_list = sge;
	wr.num_sge = 2;
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 1000);
	CHECK(poll1(&b, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 77 && wc.opcode == IBV_WC_RECV);
	CHECK(wc.byte_len == 5000 && (wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == 0x12345678);
	CHECK(memcmp(b.buf + 8192, a.buf, 5000) == 0);
	CHECK(poll1(&a, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1 && wc.opcode == IBV_WC_SEND);
	CHECK(rnic_counters(l.r[1])->rx_drop_out_of_window == 0);
	CHECK(build_steps == 5 && l.sent[0] == 5);
	rnic_set_trace(l.r[0], NULL, NULL);

	/* Inline send: the buffer may change right after posting. */
	{
		uint8_t msg[40];
		struct ibv_sge s;

		memset(msg, 0xab, sizeof(msg));
		CHECK(post_recv(&b, 78, 0, 100) == 0);
		wr_send_1(&wr, &s, IBV_WR_SEND, 2, (uintptr_t)msg, sizeof(msg), 0);
		wr.send_flags = IBV_SEND_INLINE;
		CHECK(post_one(&l, &a, &wr) == 0);
		memset(msg, 0, sizeof(msg));
		ut_loop_run(&l, 1000);
		CHECK(poll1(&b, &wc) == 1 && wc.byte_len == 40 && wc.wr_id == 78);
		CHECK(b.buf[0] == 0xab && b.buf[39] == 0xab && b.buf[40] == 0);
		CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	}
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);
}

static void test_write_read(void)
{
	struct ut_loop l;
	struct side a, b;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	pair_up(&l, &a, &b, 0xfffffe, 0xfffffd); /* PSNs wrap during the test */
	ut_fill(a.buf, 10000, 2);
	wr_send_1(&wr, &sge, IBV_WR_RDMA_WRITE, 10, (uintptr_t)a.buf, 10000, rnic_mr_lkey(a.mr));
	wr_remote(&wr, (uintptr_t)b.buf + 100, rnic_mr_rkey(b.mr));
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 1000);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE);
	CHECK(memcmp(b.buf + 100, a.buf, 10000) == 0);
	CHECK(poll1(&b, &wc) == 0); /* plain WRITE: no receive completion */

	/* WRITE with immediate consumes a receive WQE. */
	CHECK(post_recv(&b, 55, 0, 16) == 0);
	wr.wr_id = 11;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = 0xdeadbeef;
	sge.length = 3000;
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 1000);
	CHECK(poll1(&b, &wc) == 1 && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.wr_id == 55);
	CHECK(wc.byte_len == 3000 && wc.imm_data == 0xdeadbeef);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS);

	/* READ 9000 bytes back from b into a's buffer at 20000. */
	ut_fill(b.buf + 30000, 9000, 3);
	wr_send_1(&wr, &sge, IBV_WR_RDMA_READ, 12, (uintptr_t)a.buf + 20000, 9000, rnic_mr_lkey(a.mr));
	wr_remote(&wr, (uintptr_t)b.buf + 30000, rnic_mr_rkey(b.mr));
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 1000);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ);
	CHECK(memcmp(a.buf + 20000, b.buf + 30000, 9000) == 0);

	/* Atomics. */
	{
		uint64_t v = 40, *target = (uint64_t *)(void *)(b.buf + 40000), *res = (uint64_t *)(void *)(a.buf + 40000);

		memcpy(target, &v, 8);
		wr_send_1(&wr, &sge, IBV_WR_ATOMIC_FETCH_AND_ADD, 13, (uintptr_t)res, 8, rnic_mr_lkey(a.mr));
		wr_remote(&wr, (uintptr_t)target, rnic_mr_rkey(b.mr));
		wr.wr.atomic.compare_add = 2;
		CHECK(post_one(&l, &a, &wr) == 0);
		ut_loop_run(&l, 1000);
		CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FETCH_ADD);
		CHECK(*res == 40 && *target == 42);

		wr.wr_id = 14;
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 42;
		wr.wr.atomic.swap = 7;
		CHECK(post_one(&l, &a, &wr) == 0);
		ut_loop_run(&l, 1000);
		CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_COMP_SWAP);
		CHECK(*res == 42 && *target == 7);

		/* Compare fails: value unchanged, old value returned. */
		wr.wr_id = 15;
		CHECK(post_one(&l, &a, &wr) == 0);
		ut_loop_run(&l, 1000);
		CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
		CHECK(*res == 7 && *target == 7);

		/* Misaligned -> remote invalid request, QP to ERR. */
		wr.wr_id = 16;
		wr.wr.atomic.remote_addr = (uintptr_t)target + 4;
		CHECK(post_one(&l, &a, &wr) == 0);
		ut_loop_run(&l, 1000);
		CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_REM_INV_REQ_ERR && wc.wr_id == 16);
		{
			struct ibv_qp_attr qa;
			CHECK(rnic_qp_query(a.qp, &qa, NULL) == 0 && qa.qp_state == IBV_QPS_ERR);
			CHECK(rnic_qp_query(b.qp, &qa, NULL) == 0 && qa.qp_state == IBV_QPS_ERR);
		}
	}
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);
}

/* Drop the 3rd packet a sends, and the first ACK b sends. */
static bool drop_some(struct ut_loop *l, int from, uint64_t n, const uint8_t *ib, size_t len)
{
	(void)len;
	(void)l;
	(void)ib;
	return (from == 0 && (n == 2 || n == 9)) || (from == 1 && n == 0);
}

/* Returns a's retransmitted packets.  selective: both ends do selective
 * repeat (rnic_int.h), else Go-Back-N. */
static uint64_t test_loss(bool selective)
{
	struct ut_loop l;
	struct side a, b;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct rnic_config cfg;
	uint64_t retransmits;
	int got = 0;

	rnic_config_default(&cfg);
	cfg.selective_repeat = selective;
	ut_loop_init(&l, MAXQ, &cfg, SEED_BASE, false);
	l.drop = drop_some;
	pair_up(&l, &a, &b, 5, 6);
	ut_fill(a.buf, 20000, 4);
	for (int i = 0; i < 4; i++)
		CHECK(post_recv(&b, 100 + (uint64_t)i, (uint32_t)i * 5000, 5000) == 0);
	for (int i = 0; i < 4; i++) {
		wr_send_1(&wr, &sge, IBV_WR_SEND, (uint64_t)i, (uintptr_t)a.buf + (uint64_t)i * 5000, 5000, rnic_mr_lkey(a.mr));
		CHECK(post_one(&l, &a, &wr) == 0);
	}
	ut_loop_run(&l, 10000);
	for (int i = 0; i < 4; i++) {
		CHECK(poll1(&b, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 100 + (uint64_t)i);
		got += poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i;
	}
	CHECK(got == 4);
	CHECK(memcmp(a.buf, b.buf, 20000) == 0);
	retransmits = rnic_counters(l.r[0])->retransmits;
	CHECK(retransmits > 0);
	if (selective) {
		/* b kept what came after each hole and said so; a resent
		 * only the holes.  No Go-Back-N NAK either way. */
		CHECK(rnic_counters(l.r[1])->reorder_stored >= 1);
		CHECK(rnic_counters(l.r[1])->tx_nak_selective >= 1);
		CHECK(rnic_counters(l.r[0])->rx_nak_selective + rnic_counters(l.r[0])->retransmit_timeouts >= 1);
		CHECK(rnic_counters(l.r[1])->tx_nak_psn_seq == 0);
		CHECK(rnic_counters(l.r[0])->rx_nak_psn_seq == 0);
	} else {
		/* b NAKed the gap; that NAK itself was lost, so a's timer resent. */
		CHECK(rnic_counters(l.r[0])->rx_nak_psn_seq + rnic_counters(l.r[0])->retransmit_timeouts >= 1);
		CHECK(rnic_counters(l.r[1])->tx_nak_psn_seq >= 1);
		CHECK(rnic_counters(l.r[1])->reorder_stored == 0);
	}
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);
	return retransmits;
}

/* Drop all of b's READ responses the first time, and duplicate a's
 * atomic request. */
static bool drop_first_read_resp(struct ut_loop *l, int from, uint64_t n, const uint8_t *ib, size_t len)
{
	(void)len;
	(void)n;
	if (from == 1 && (ib[0] & 0x1f) >= WIRE_OP_READ_RESP_FIRST && (ib[0] & 0x1f) <= WIRE_OP_READ_RESP_ONLY &&
	    l->hook_state < 2) {
		l->hook_state++;
		return true;
	}
	return false;
}

/* Drop only the third READ response packet, once: the READ resumes
 * mid-way with a new request for the rest. */
static bool drop_third_read_resp(struct ut_loop *l, int from, uint64_t n, const uint8_t *ib, size_t len)
{
	(void)len;
	(void)n;
	if (from == 1 && (ib[0] & 0x1f) >= WIRE_OP_READ_RESP_FIRST && (ib[0] & 0x1f) <= WIRE_OP_READ_RESP_ONLY &&
	    ++l->hook_state == 3)
		return true;
	return false;
}

static void test_read_resume(void)
{
	struct ut_loop l;
	struct side a, b;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	l.drop = drop_third_read_resp;
	pair_up(&l, &a, &b, 0xfffffe, 2);
	ut_fill(b.buf, 6000, 11);
	wr_send_1(&wr, &sge, IBV_WR_RDMA_READ, 1, (uintptr_t)a.buf, 6000, rnic_mr_lkey(a.mr));
	wr_remote(&wr, (uintptr_t)b.buf, rnic_mr_rkey(b.mr));
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 10000);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	CHECK(memcmp(a.buf, b.buf, 6000) == 0);
	/* 6 responses, the 3rd lost; the re-request asks for packets 3..6. */
	CHECK(rnic_counters(l.r[1])->duplicate_reads == 1);
	CHECK(l.sent[1] == 6 + 4);
	CHECK(l.sent[0] == 2);
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);
}

static bool dup_atomic(struct ut_loop *l, int from, uint64_t n, const uint8_t *ib, size_t len)
{
	(void)len;
	(void)l;
	(void)n;
	return from == 0 && (ib[0] == WIRE_OP_FETCH_ADD);
}

static void test_read_retry_and_dup_atomic(void)
{
	struct ut_loop l;
	struct side a, b;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	uint64_t v = 1000, *target, *res;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	l.drop = drop_first_read_resp;
	l.dup = dup_atomic;
	pair_up(&l, &a, &b, 1, 2);
	ut_fill(b.buf, 4000, 5);
	wr_send_1(&wr, &sge, IBV_WR_RDMA_READ, 1, (uintptr_t)a.buf, 4000, rnic_mr_lkey(a.mr));
	wr_remote(&wr, (uintptr_t)b.buf, rnic_mr_rkey(b.mr));
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 10000);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ);
	CHECK(memcmp(a.buf, b.buf, 4000) == 0);
	CHECK(rnic_counters(l.r[1])->duplicate_reads >= 1);

	target = (uint64_t *)(void *)(b.buf + 8000);
	res = (uint64_t *)(void *)(a.buf + 8000);
	memcpy(target, &v, 8);
	sge = (struct ibv_sge){ .addr = (uintptr_t)res, .length = 8, .lkey = rnic_mr_lkey(a.mr) };
	wr.wr_id = 2;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = rnic_mr_rkey(b.mr);
	wr.wr.atomic.compare_add = 5;
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 10000);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	CHECK(*target == 1005 && *res == 1000);  /* executed exactly once */
	CHECK(rnic_counters(l.r[1])->duplicate_atomics == 1);
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);
}

static void test_rnr(void)
{
	struct ut_loop l;
	struct side a, b;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	pair_up(&l, &a, &b, 1, 2);
	wr_send_1(&wr, &sge, IBV_WR_SEND, 1, (uintptr_t)a.buf, 100, rnic_mr_lkey(a.mr));
	CHECK(post_one(&l, &a, &wr) == 0);
	/* Deliver the SEND and the RNR NAK, but let no timer fire yet. */
	while (l.qlen)
		ut_loop_step(&l);
	CHECK(rnic_counters(l.r[1])->tx_rnr_nak == 1);
	CHECK(rnic_counters(l.r[0])->rx_rnr_nak == 1);
	CHECK(poll1(&a, &wc) == 0);
	CHECK(post_recv(&b, 9, 0, 100) == 0);
	ut_loop_run(&l, 1000);
	CHECK(poll1(&b, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 100);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);

	/* rnr_retry = 0: the first RNR NAK fails the WR. */
	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	side_init(&l, 0, &a, IBV_QPT_RC);
	side_init(&l, 1, &b, IBV_QPT_RC);
	CHECK(ut_connect_rc(&l, 0, a.qp, rnic_qp_num(b.qp), 1, 2, 10, 7, 0, NULL) == 0);
	CHECK(ut_connect_rc(&l, 1, b.qp, rnic_qp_num(a.qp), 2, 1, 10, 7, 0, NULL) == 0);
	sge = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = 100, .lkey = rnic_mr_lkey(a.mr) };
	wr.sg_list = &sge;
	CHECK(post_one(&l, &a, &wr) == 0);
	wr.wr_id = 2;
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 1000);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_RNR_RETRY_EXC_ERR && wc.wr_id == 1);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 2);
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);
}

static bool drop_first_from_a(struct ut_loop *l, int from, uint64_t n, const uint8_t *ib, size_t len)
{
	(void)len;
	(void)l;
	(void)ib;
	return from == 0 && n == 0;
}

/* Selective repeat meets RNR: the first of four one-packet SENDs is lost,
 * b keeps the other three, and when the resend fills the hole b has one
 * receive WQE: the first SEND takes it, the kept second one finds none
 * (RNR NAK), and b drops what it kept (a resends it all after the RNR
 * wait, IBTA 9.7.5.2.8).  Once b posts receives, all four land in order,
 * each once. */
static void test_selective_rnr(void)
{
	struct ut_loop l;
	struct side a, b;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	l.drop = drop_first_from_a;
	pair_up(&l, &a, &b, 100, 200);
	ut_fill(a.buf, 400, 9);
	CHECK(post_recv(&b, 50, 0, 100) == 0);
	for (int i = 0; i < 4; i++) {
		wr_send_1(&wr, &sge, IBV_WR_SEND, (uint64_t)i, (uintptr_t)a.buf + (uint64_t)i * 100, 100, rnic_mr_lkey(a.mr));
		wr.send_flags = IBV_SEND_SIGNALED;
		CHECK(post_one(&l, &a, &wr) == 0);
	}
	/* Every packet and its answer, no timer: the selective NAKs bring
	 * the resend, the resend the RNR NAK. */
	while (l.qlen)
		ut_loop_step(&l);
	CHECK(rnic_counters(l.r[1])->reorder_stored == 3);
	CHECK(rnic_counters(l.r[1])->tx_nak_selective >= 3);
	CHECK(rnic_counters(l.r[1])->tx_rnr_nak == 1);
	CHECK(rnic_counters(l.r[0])->rx_rnr_nak == 1);
	CHECK(poll1(&b, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 50);
	CHECK(poll1(&b, &wc) == 0);
	for (int i = 1; i < 4; i++)
		CHECK(post_recv(&b, 50 + (uint64_t)i, (uint32_t)i * 100, 100) == 0);
	ut_loop_run(&l, 10000);
	for (int i = 1; i < 4; i++)
		CHECK(poll1(&b, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 50 + (uint64_t)i &&
		      wc.byte_len == 100);
	CHECK(poll1(&b, &wc) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i);
	CHECK(memcmp(a.buf, b.buf, 400) == 0);
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);
}

static bool drop_all_from_a(struct ut_loop *l, int from, uint64_t n, const uint8_t *ib, size_t len)
{
	(void)len;
	(void)l;
	(void)n;
	(void)ib;
	return from == 0;
}

static void test_errors(void)
{
	struct ut_loop l;
	struct side a, b;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	/* Bad rkey -> REM_ACCESS_ERR; b goes to ERR too. */
	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	pair_up(&l, &a, &b, 1, 2);
	wr_send_1(&wr, &sge, IBV_WR_RDMA_WRITE, 1, (uintptr_t)a.buf, 100, rnic_mr_lkey(a.mr));
	wr.wr.rdma.remote_addr = (uintptr_t)b.buf + BUFSZ - 50; /* runs past the MR */
	wr.wr.rdma.rkey = rnic_mr_rkey(b.mr);
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 1000);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_REM_ACCESS_ERR);
	CHECK(rnic_counters(l.r[1])->tx_nak_remote_access == 1);
	/* Posting in ERR flushes at once. */
	CHECK(post_one(&l, &a, &wr) == 0);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_WR_FLUSH_ERR);
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);

	/* Bad lkey -> LOC_PROT_ERR without sending anything. */
	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	pair_up(&l, &a, &b, 1, 2);
	sge = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = 100, .lkey = rnic_mr_lkey(a.mr) ^ 1 };
	wr.wr.rdma.remote_addr = (uintptr_t)b.buf;
	wr.wr.rdma.rkey = rnic_mr_rkey(b.mr);
	CHECK(post_one(&l, &a, &wr) == 0);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_LOC_PROT_ERR);
	CHECK(l.sent[0] == 0);
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);

	/* Receive buffer too small -> LOC_LEN_ERR at b, REM_INV_REQ_ERR at a. */
	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	pair_up(&l, &a, &b, 1, 2);
	CHECK(post_recv(&b, 5, 0, 10) == 0);
	sge = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = 100, .lkey = rnic_mr_lkey(a.mr) };
	wr.opcode = IBV_WR_SEND;
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 1000);
	CHECK(poll1(&b, &wc) == 1 && wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == 5);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_REM_INV_REQ_ERR);
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);

	/* Everything lost -> RETRY_EXC_ERR after retry_cnt retransmissions. */
	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	l.drop = drop_all_from_a;
	pair_up(&l, &a, &b, 1, 2);
	sge = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = 100, .lkey = rnic_mr_lkey(a.mr) };
	wr.wr.rdma.remote_addr = (uintptr_t)b.buf;
	wr.wr.rdma.rkey = rnic_mr_rkey(b.mr);
	wr.opcode = IBV_WR_RDMA_WRITE;
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 1000);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_RETRY_EXC_ERR);
	CHECK(rnic_counters(l.r[0])->retransmit_timeouts == 8);  /* retry_cnt 7 + the final one */
	CHECK(l.sent[0] == 8);
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);
}

static void test_modify_rules(void)
{
	struct ut_loop l;
	struct side a;
	struct ibv_qp_attr at;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	side_init(&l, 0, &a, IBV_QPT_RC);
	memset(&at, 0, sizeof(at));
	/* RESET -> RTR is not a transition. */
	at.qp_state = IBV_QPS_RTR;
	CHECK(rnic_qp_modify(a.qp, &at, IBV_QP_STATE, l.now) == EINVAL);
	/* RESET -> INIT without ACCESS_FLAGS. */
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	CHECK(rnic_qp_modify(a.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT, l.now) == EINVAL);
	/* Extra, not-allowed bit (SQ_PSN). */
	CHECK(rnic_qp_modify(a.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS |
			     IBV_QP_SQ_PSN, l.now) == EINVAL);
	/* Bad port. */
	at.port_num = 2;
	CHECK(rnic_qp_modify(a.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, l.now) == EINVAL);
	CHECK(rnic_qp_query(a.qp, &at, NULL) == 0 && at.qp_state == IBV_QPS_RESET);
	/* Posting a send in RESET fails. */
	{
		struct ibv_send_wr wr = { .opcode = IBV_WR_SEND }, *bad = NULL;
		CHECK(rnic_post_send(a.qp, &wr, &bad, l.now) == EINVAL && bad == &wr);
	}
	/* RTR needs is_global. */
	CHECK(ut_connect_rc(&l, 0, a.qp, 0x123, 1, 1, 10, 7, 7, NULL) == 0);
	CHECK(rnic_qp_query(a.qp, &at, NULL) == 0 && at.qp_state == IBV_QPS_RTS);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RESET;
	CHECK(rnic_qp_modify(a.qp, &at, IBV_QP_STATE, l.now) == 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	CHECK(rnic_qp_modify(a.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, l.now) == 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = 5;
	at.ah_attr.is_global = 0;
	CHECK(rnic_qp_modify(a.qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, l.now) == EINVAL);
	/* A QP type verbs defines but the rnic does not implement is "not
	 * supported"; a value verbs does not define is invalid (UD: unit_ud.c). */
	{
		struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_RAW_PACKET, .cap = { .max_send_wr = 1 } };
		CHECK(rnic_qp_create(a.pd, a.cq, a.cq, &init, NULL) == NULL && errno == EOPNOTSUPP);
		init.qp_type = (enum ibv_qp_type)77;
		CHECK(rnic_qp_create(a.pd, a.cq, a.cq, &init, NULL) == NULL && errno == EINVAL);
	}
	/* Stale key after dereg fails; PD busy while MR exists. */
	{
		uint32_t key = rnic_mr_lkey(a.mr);
		CHECK(rnic_pd_free(a.pd) == EBUSY);
		CHECK(rnic_cq_destroy(a.cq) == EBUSY);
		CHECK(rnic_mr_dereg(a.mr) == 0);
		a.mr = rnic_mr_reg(a.pd, a.buf, BUFSZ, (uintptr_t)a.buf, IBV_ACCESS_LOCAL_WRITE);
		CHECK(a.mr && rnic_mr_lkey(a.mr) != key);
		CHECK(rnic_mr_reg(a.pd, a.buf, 10, 0, IBV_ACCESS_REMOTE_WRITE) == NULL); /* needs LOCAL_WRITE */
	}
	side_fini(&a);
	ut_loop_fini(&l);
}

static void test_fence_and_unsignaled(void)
{
	struct ut_loop l;
	struct side a, b;
	struct ibv_wc wc[8];
	struct ibv_sge sge;
	struct ibv_send_wr wr[3], *bad;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	pair_up(&l, &a, &b, 1, 2);
	ut_fill(b.buf, 2000, 9);
	memset(wr, 0, sizeof(wr));
	sge = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = 2000, .lkey = rnic_mr_lkey(a.mr) };
	/* READ, then fenced unsignaled WRITE of the read data, then a
	 * signaled SEND-less WRITE; a chain of three posted at once. */
	wr[0].wr_id = 1;
	wr[0].opcode = IBV_WR_RDMA_READ;
	wr[0].sg_list = &sge;
	wr[0].num_sge = 1;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].wr.rdma.remote_addr = (uintptr_t)b.buf;
	wr[0].wr.rdma.rkey = rnic_mr_rkey(b.mr);
	wr[0].next = &wr[1];
	wr[1].wr_id = 2;
	wr[1].opcode = IBV_WR_RDMA_WRITE;
	wr[1].sg_list = &sge;
	wr[1].num_sge = 1;
	wr[1].send_flags = IBV_SEND_FENCE;
	wr[1].wr.rdma.remote_addr = (uintptr_t)b.buf + 10000;
	wr[1].wr.rdma.rkey = rnic_mr_rkey(b.mr);
	wr[1].next = &wr[2];
	wr[2] = wr[1];
	wr[2].wr_id = 3;
	wr[2].send_flags = IBV_SEND_SIGNALED;
	wr[2].next = NULL;
	CHECK(rnic_post_send(a.qp, wr, &bad, l.now) == 0);
	/* Only the READ may be on the wire until it completes. */
	CHECK(l.sent[0] == 1);
	ut_loop_run(&l, 1000);
	CHECK(rnic_cq_poll(a.cq, 8, wc) == 2);
	CHECK(wc[0].wr_id == 1 && wc[1].wr_id == 3 && wc[1].status == IBV_WC_SUCCESS);
	/* The fenced WRITE sent what the READ brought. */
	CHECK(memcmp(b.buf + 10000, b.buf, 2000) == 0);
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);
}

struct notify_count {
	int events;
};
static struct notify_count ncount;

static void count_event(void *ctx, struct rnic_cq *cq, void *cq_context)
{
	(void)ctx;
	(void)cq;
	(void)cq_context;
	ncount.events++;
}

/* UC SEND and WRITE (no ACKs), and solicited-only CQ notification. */
static void test_uc_and_solicited(void)
{
	struct ut_loop l;
	struct side a, b;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	ut_loop_init(&l, MAXQ, NULL, SEED_BASE, false);
	side_init(&l, 0, &a, IBV_QPT_UC);
	side_init(&l, 1, &b, IBV_QPT_UC);
	{
		/* Written out, not ut_connect_rc: the RTR step checks on the way
		 * that UC refuses an RC-only attribute. */
		struct ibv_qp_attr at;
		struct side *s[2] = { &a, &b };
		for (int i = 0; i < 2; i++) {
			memset(&at, 0, sizeof(at));
			at.qp_state = IBV_QPS_INIT;
			at.port_num = 1;
			at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			CHECK(rnic_qp_modify(s[i]->qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					     IBV_QP_ACCESS_FLAGS, l.now) == 0);
			memset(&at, 0, sizeof(at));
			at.qp_state = IBV_QPS_RTR;
			at.path_mtu = IBV_MTU_1024;
			at.dest_qp_num = rnic_qp_num(s[1 - i]->qp);
			at.rq_psn = 50;
			at.ah_attr.is_global = 1;
			memcpy(at.ah_attr.grh.dgid.raw, l.gid[1 - i].raw, 16);
			/* MAX_DEST_RD_ATOMIC is not allowed for UC. */
			CHECK(rnic_qp_modify(s[i]->qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC, l.now) == EINVAL);
			CHECK(rnic_qp_modify(s[i]->qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, l.now) == 0);
			memset(&at, 0, sizeof(at));
			at.qp_state = IBV_QPS_RTS;
			at.sq_psn = 50;
			CHECK(rnic_qp_modify(s[i]->qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN, l.now) == 0);
		}
	}
	ut_fill(a.buf, 3000, 7);
	CHECK(post_recv(&b, 1, 0, 4000) == 0);
	wr_send_1(&wr, &sge, IBV_WR_SEND, 3, (uintptr_t)a.buf, 3000, rnic_mr_lkey(a.mr));
	CHECK(post_one(&l, &a, &wr) == 0);
	/* UC completes the send as soon as it is on the wire. */
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 3);
	ut_loop_run(&l, 1000);
	CHECK(poll1(&b, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 3000);
	CHECK(memcmp(b.buf, a.buf, 3000) == 0);
	CHECK(l.sent[1] == 0);  /* no ACKs on UC */

	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)b.buf + 5000;
	wr.wr.rdma.rkey = rnic_mr_rkey(b.mr);
	CHECK(post_one(&l, &a, &wr) == 0);
	ut_loop_run(&l, 1000);
	CHECK(poll1(&a, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	CHECK(memcmp(b.buf + 5000, a.buf, 3000) == 0);
	/* READ is not a UC operation. */
	wr.opcode = IBV_WR_RDMA_READ;
	{
		struct ibv_send_wr *bad;
		CHECK(rnic_post_send(a.qp, &wr, &bad, l.now) == EINVAL);
	}
	side_fini(&a);
	side_fini(&b);
	ut_loop_fini(&l);
}

/* test_notify's rnic has no QP: nothing is ever sent. */
static void no_xmit(void *ctx, const struct rnic_tx *tx)
{
	(void)ctx;
	(void)tx;
}

/* Solicited-only notification fires for a solicited or failed completion
 * only, and once per arming. */
static void test_notify(void)
{
	struct rnic_config cfg;
	struct rnic_io io = { .xmit = no_xmit, .cq_event = count_event };
	struct rnic *r;
	struct rnic_cq *cq;
	struct ibv_wc wc, out[4];

	rnic_config_default(&cfg);
	r = rnic_create(&cfg, &io);
	cq = rnic_cq_create(r, 2, NULL);
	CHECK(r && cq);
	memset(&wc, 0, sizeof(wc));
	ncount.events = 0;
	CHECK(rnic_cq_req_notify(cq, true) == 0);
	CHECK(rnic_cq_push(cq, &wc, false));
	CHECK(ncount.events == 0);
	CHECK(rnic_cq_push(cq, &wc, true));
	CHECK(ncount.events == 1);
	CHECK(rnic_cq_poll(cq, 4, out) == 2);
	CHECK(rnic_cq_push(cq, &wc, true));     /* disarmed: no event */
	CHECK(ncount.events == 1);
	CHECK(rnic_cq_req_notify(cq, true) == 0);
	wc.status = IBV_WC_LOC_LEN_ERR;         /* errors always notify */
	CHECK(rnic_cq_push(cq, &wc, false));
	CHECK(ncount.events == 2);
	CHECK(!rnic_cq_push(cq, &wc, false));   /* full: overflow */
	CHECK(rnic_counters(r)->cq_overflows == 1);
	CHECK(rnic_cq_resize(cq, 1) == EINVAL); /* 2 queued */
	CHECK(rnic_cq_resize(cq, 8) == 0 && rnic_cq_capacity(cq) == 8);
	CHECK(rnic_cq_poll(cq, 4, out) == 2 && out[1].status == IBV_WC_LOC_LEN_ERR);
	CHECK(rnic_cq_destroy(cq) == 0);
	rnic_destroy(r);
}

int main(void)
{
	test_send();
	test_write_read();
	{
		uint64_t gbn = test_loss(false), sr = test_loss(true);

		/* Go-Back-N resends what followed each loss too. */
		CHECK(sr < gbn);
	}
	test_read_retry_and_dup_atomic();
	test_read_resume();
	test_rnr();
	test_selective_rnr();
	test_errors();
	test_modify_rules();
	test_fence_and_unsignaled();
	test_uc_and_solicited();
	test_notify();
	if (check_failures)
		return check_exit("rnic_unit_loop");
	printf("unit_loop: all checks passed\n");
	return 0;
}
