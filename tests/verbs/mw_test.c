/*
 * mw_test.c — memory windows and RDMA ATOMIC WRITE through the verbs API
 * (the system <infiniband/verbs.h> over our libibverbs.so.1), on two RC
 * QPs of one device in loopback.
 *
 * Modes:
 *   mw            type 1 (ibv_bind_mw) and type 2 (IBV_WR_BIND_MW and
 *                 ibv_wr_bind_mw) windows over a region that has no
 *                 remote rights of its own: RDMA WRITE and READ through
 *                 the window, its bounds, local invalidation, SEND with
 *                 Invalidate, and the remote access error afterwards.
 *   atomic_write  ibv_wr_atomic_write: 8 bytes land, completion opcode
 *                 IBV_WC_ATOMIC_WRITE; a misaligned target is an invalid
 *                 request.
 */
#include <string.h>
#include <time.h>

#include "verbs_test_util.h"

enum { BUF = 1 << 14 };

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static const struct vt_rc_attr rc = {
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	.psn = 7,
	.rd_atomic = 1,
	.timeout = 14,
};

static void setup(struct ibv_context *ctx, struct ibv_pd *pd, struct side *s, unsigned int mr_access,
		  uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex a;

	s->buf = calloc(1, BUF);
	REQUIRE(s->buf);
	s->mr = ibv_reg_mr(pd, s->buf, BUF, (int)mr_access);
	REQUIRE(s->mr);
	s->cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	REQUIRE(s->cq);
	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	a.send_cq = s->cq;
	a.recv_cq = s->cq;
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.pd = pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = send_ops;
	s->qp = ibv_create_qp_ex(ctx, &a);
	REQUIRE(s->qp);
	s->qpx = ibv_qp_to_qp_ex(s->qp);
	REQUIRE(s->qpx);
}

static void pair(struct ibv_context *ctx, struct side *a, struct side *b)
{
	union ibv_gid gid;

	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);
	vt_connect_rc(a->qp, b->qp->qp_num, &gid, &rc);
	vt_connect_rc(b->qp, a->qp->qp_num, &gid, &rc);
}

static void teardown(struct side *s)
{
	CHECK(ibv_destroy_qp(s->qp) == 0);
	CHECK(ibv_destroy_cq(s->cq) == 0);
	CHECK(ibv_dereg_mr(s->mr) == 0);
	free(s->buf);
}

/* One completion from cq within 5 s; exits if none comes. */
static struct ibv_wc poll_one(struct ibv_cq *cq)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		REQUIRE(n >= 0);
		if (n == 1)
			return wc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		REQUIRE(t.tv_sec - t0.tv_sec < 5);
	}
}

static int post_rdma(struct side *a, enum ibv_wr_opcode op, uint32_t rkey, uint64_t raddr, uint32_t off,
		     uint32_t len)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;

	wr_send_1(&wr, &sge, op, op, (uintptr_t)a->buf + off, len, a->mr->lkey);
	wr_remote(&wr, raddr, rkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	return ibv_post_send(a->qp, &wr, &bad);
}

/* RDMA op a -> b, returns the completion status. */
static enum ibv_wc_status rdma(struct side *a, enum ibv_wr_opcode op, uint32_t rkey, uint64_t raddr,
			       uint32_t off, uint32_t len)
{
	REQUIRE(post_rdma(a, op, rkey, raddr, off, len) == 0);
	return poll_one(a->cq).status;
}

#define MW_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE | \
		IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)

static int run_mw(void)
{
	struct ibv_context *ctx = vt_open_device("softrnic0");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mw *m1, *m2;
	struct ibv_mw_bind bind;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	struct side a, b;
	uint64_t rb;
	uint32_t k2, old;

	REQUIRE(pd);
	setup(ctx, pd, &a, IBV_ACCESS_LOCAL_WRITE, MW_OPS);
	/* b's region: no remote rights; windows give them. */
	setup(ctx, pd, &b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, MW_OPS);
	pair(ctx, &a, &b);
	rb = (uintptr_t)b.buf;
	for (int i = 0; i < BUF; i++)
		a.buf[i] = (uint8_t)(i * 5 + 3);

	/* Type 1: ibv_bind_mw posts a bind; the rkey's key byte moves. */
	m1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	REQUIRE(m1);
	old = m1->rkey;
	memset(&bind, 0, sizeof(bind));
	bind.wr_id = 31;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info.mr = b.mr;
	bind.bind_info.addr = rb;
	bind.bind_info.length = 4096;
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	CHECK(ibv_bind_mw(b.qp, m1, &bind) == 0);
	CHECK(m1->rkey == ibv_inc_rkey(old));
	wc = poll_one(b.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 31);
	CHECK(rdma(&a, IBV_WR_RDMA_WRITE, m1->rkey, rb + 100, 0, 1000) == IBV_WC_SUCCESS);
	CHECK(memcmp(b.buf + 100, a.buf, 1000) == 0);
	CHECK(rdma(&a, IBV_WR_RDMA_READ, m1->rkey, rb + 100, 8192, 1000) == IBV_WC_SUCCESS);
	CHECK(memcmp(a.buf + 8192, a.buf, 1000) == 0);
	/* ibv_bind_mw refuses a type 2 window (verbs.h) and a foreign PD. */
	m2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	REQUIRE(m2);
	CHECK(ibv_bind_mw(b.qp, m2, &bind) == EINVAL);
	CHECK(ibv_dealloc_mw(m1) == 0);

	/* Type 2 through ibv_wr_bind_mw: the consumer picks the key byte. */
	k2 = ibv_inc_rkey(m2->rkey);
	ibv_wr_start(b.qpx);
	b.qpx->wr_id = 32;
	b.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(b.qpx, m2, k2, &bind.bind_info);
	CHECK(ibv_wr_complete(b.qpx) == 0);
	wc = poll_one(b.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 32);
	CHECK(rdma(&a, IBV_WR_RDMA_WRITE, k2, rb + 2000, 2000, 500) == IBV_WC_SUCCESS);
	CHECK(memcmp(b.buf + 2000, a.buf + 2000, 500) == 0);

	/* Local invalidate, then bind again with IBV_WR_BIND_MW. */
	ibv_wr_start(b.qpx);
	b.qpx->wr_id = 33;
	b.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(b.qpx, k2);
	CHECK(ibv_wr_complete(b.qpx) == 0);
	wc = poll_one(b.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV && wc.wr_id == 33);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 34;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = m2;
	wr.bind_mw.rkey = ibv_inc_rkey(k2);
	wr.bind_mw.bind_info = bind.bind_info;
	wr.bind_mw.bind_info.length = 1024;
	CHECK(ibv_post_send(b.qp, &wr, &bad) == 0);
	wc = poll_one(b.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 34);
	k2 = ibv_inc_rkey(k2);

	/* SEND with Invalidate a -> b invalidates the window. */
	vt_post_recv(b.qp, b.mr, b.buf + 12000, 64, 35);
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 36;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(a.qpx, k2);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf, 16);
	CHECK(ibv_wr_complete(a.qpx) == 0);
	wc = poll_one(a.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 36);
	wc = poll_one(b.cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 35 && (wc.wc_flags & IBV_WC_WITH_INV) &&
	      wc.invalidated_rkey == k2);
	/* The invalidated key fails at the responder: remote access error. */
	CHECK(rdma(&a, IBV_WR_RDMA_WRITE, k2, rb, 0, 64) == IBV_WC_REM_ACCESS_ERR);

	CHECK(ibv_dealloc_mw(m2) == 0);
	teardown(&a);
	teardown(&b);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	return check_failures ? 1 : 0;
}

static enum ibv_wc_status atomic_write(struct side *a, uint32_t rkey, uint64_t raddr, const void *val,
				       struct ibv_wc *out)
{
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 77;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(a->qpx, rkey, raddr, val);
	REQUIRE(ibv_wr_complete(a->qpx) == 0);
	*out = poll_one(a->cq);
	return out->status;
}

static int run_atomic_write(void)
{
	struct ibv_context *ctx = vt_open_device("softrnic0");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	const uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE;
	uint8_t val[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct side a, b;
	struct ibv_wc wc;
	uint64_t rb;

	REQUIRE(pd);
	setup(ctx, pd, &a, IBV_ACCESS_LOCAL_WRITE, ops);
	setup(ctx, pd, &b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, ops);
	pair(ctx, &a, &b);
	rb = (uintptr_t)b.buf;
	memset(b.buf, 0xee, 64);

	CHECK(atomic_write(&a, b.mr->rkey, rb + 16, val, &wc) == IBV_WC_SUCCESS);
	CHECK(wc.opcode == IBV_WC_ATOMIC_WRITE && wc.wr_id == 77);
	memset(val, 0, sizeof(val));   /* copied at post: reuse is safe */
	CHECK(b.buf[16] == 1 && b.buf[23] == 8);
	CHECK(b.buf[15] == 0xee && b.buf[24] == 0xee);   /* exactly 8 bytes */

	/* Not 8-byte aligned: invalid request (IBTA 9.4.5 rule, as rxe). */
	CHECK(atomic_write(&a, b.mr->rkey, rb + 20, val, &wc) == IBV_WC_REM_INV_REQ_ERR);
	CHECK(b.buf[20] == 5);

	teardown(&a);
	teardown(&b);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	return check_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct vt_mode modes[] = { { "mw", run_mw }, { "atomic_write", run_atomic_write } };

	return vt_main(argc, argv, modes, sizeof(modes) / sizeof(modes[0]));
}
