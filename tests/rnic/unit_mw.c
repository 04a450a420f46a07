/*
 * unit_mw.c — memory windows in the rnic alone (src/rnic/mw.c), over the
 * two-node packet loop of unit_util.c.
 *
 * Node 1 ("b") owns a region registered for local write and window
 * binding only, so every remote access in these tests goes through a
 * window: bind (type 1 and type 2), the window's bounds and rights, the
 * rkey changing at each bind, local invalidation, remote invalidation by
 * SEND with Invalidate, a region deregistered under its window, bind
 * errors (IBV_WC_MW_BIND_ERR), and that a window key is never a local key.
 * Also RDMA ATOMIC WRITE (RC opcode 0x1d), which arrived with windows:
 * 8 bytes through a region or a window, and its length and rights rules.
 * Each scenario builds a fresh connected pair, because an error moves the
 * QPs to the Error state.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/rnic.h"

#include "unit_util.h"

#define MAXQ 1024
#define BUFSZ 8192

struct side {
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_qp *qp;
	uint8_t *buf;
	struct rnic_mr *mr;
	struct ibv_mr ibmr;             /* what a bind names: only lkey is read */
};

struct pair {
	struct ut_loop l;
	struct side a, b;
};

static void side_init(struct ut_loop *l, int i, struct side *s, int mr_access)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 2, .max_recv_sge = 2 },
	};

	s->pd = rnic_pd_alloc(l->r[i]);
	s->cq = rnic_cq_create(l->r[i], 64, NULL);
	s->qp = rnic_qp_create(s->pd, s->cq, s->cq, &init, NULL);
	s->buf = calloc(1, BUFSZ);
	s->mr = rnic_mr_reg(s->pd, s->buf, BUFSZ, (uint64_t)(uintptr_t)s->buf, mr_access);
	CHECK(s->pd && s->cq && s->qp && s->buf && s->mr);
	memset(&s->ibmr, 0, sizeof(s->ibmr));
	if (s->mr)
		s->ibmr.lkey = rnic_mr_lkey(s->mr);
}

/* Remote write and read (no atomics), 3 retries. */
static void connect_qp(struct ut_loop *l, int i, struct side *s, uint32_t dqpn)
{
	struct ut_rc_opts o = ut_rc_default;

	o.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	CHECK(ut_connect_rc(l, i, s->qp, dqpn, 100, 100, 10, 3, 3, &o) == 0);
}

/* b's region: local write and window binding, no remote rights of its own. */
static void pair_init(struct pair *p, uint32_t seed, int b_access)
{
	ut_loop_init(&p->l, MAXQ, NULL, seed, false);
	side_init(&p->l, 0, &p->a, IBV_ACCESS_LOCAL_WRITE);
	side_init(&p->l, 1, &p->b, b_access);
	connect_qp(&p->l, 0, &p->a, rnic_qp_num(p->b.qp));
	connect_qp(&p->l, 1, &p->b, rnic_qp_num(p->a.qp));
}

static void side_fini(struct side *s)
{
	CHECK(rnic_qp_destroy(s->qp) == 0);
	if (s->mr)
		CHECK(rnic_mr_dereg(s->mr) == 0);
	CHECK(rnic_cq_destroy(s->cq) == 0);
	CHECK(rnic_pd_free(s->pd) == 0);
	free(s->buf);
}

static void pair_fini(struct pair *p)
{
	side_fini(&p->a);
	side_fini(&p->b);
	ut_loop_fini(&p->l);
}

/* One signaled WR, run the loop, return the completion status on s's CQ
 * (-1 if none). */
static int run_one(struct pair *p, struct side *s, struct ibv_send_wr *wr, struct ibv_wc *out)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (rnic_post_send(s->qp, wr, &bad, p->l.now) != 0)
		return -2;
	ut_loop_run(&p->l, 100000);
	if (rnic_cq_poll(s->cq, 1, &wc) != 1)
		return -1;
	if (out)
		*out = wc;
	return (int)wc.status;
}

/* Bind window `mw` (its verbs face: rkey) on b's QP to [off, off+len) of
 * b's region with `access`, new rkey `rkey`. */
static int bind(struct pair *p, struct ibv_mw *mw, uint32_t rkey, uint32_t off, uint32_t len, int access,
		struct ibv_wc *out)
{
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = &p->b.ibmr;
	wr.bind_mw.bind_info.addr = (uintptr_t)p->b.buf + off;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = (unsigned int)access;
	return run_one(p, &p->b, &wr, out);
}

/* a writes `len` bytes of its buffer to b at offset `off` through `rkey`. */
static int write_to_b(struct pair *p, uint32_t rkey, uint32_t off, uint32_t len)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	wr_send_1(&wr, &sge, IBV_WR_RDMA_WRITE, 1, (uintptr_t)p->a.buf, len, rnic_mr_lkey(p->a.mr));
	wr_remote(&wr, (uintptr_t)p->b.buf + off, rkey);
	return run_one(p, &p->a, &wr, NULL);
}

static int read_from_b(struct pair *p, uint32_t rkey, uint32_t off, uint32_t len)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	wr_send_1(&wr, &sge, IBV_WR_RDMA_READ, 2, (uintptr_t)p->a.buf + 4096, len, rnic_mr_lkey(p->a.mr));
	wr_remote(&wr, (uintptr_t)p->b.buf + off, rkey);
	return run_one(p, &p->a, &wr, NULL);
}

#define B_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)

static void test_alloc(void)
{
	struct pair p;
	struct rnic_mw *m1, *m2;

	pair_init(&p, 10, B_ACCESS);
	errno = 0;
	CHECK(rnic_mw_alloc(p.b.pd, (enum ibv_mw_type)3) == NULL && errno == EINVAL);
	CHECK(rnic_mw_alloc(NULL, IBV_MW_TYPE_1) == NULL && errno == EINVAL);
	m1 = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_1);
	m2 = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_2);
	CHECK(m1 && m2);
	/* Keys from the MR key space, distinct from each other and the MR. */
	CHECK(rnic_mw_rkey(m1) >> 8 != rnic_mw_rkey(m2) >> 8);
	CHECK(rnic_mw_rkey(m1) >> 8 != rnic_mr_rkey(p.b.mr) >> 8);
	CHECK(rnic_pd_free(p.b.pd) == EBUSY);
	/* An unbound window grants nothing. */
	CHECK(write_to_b(&p, rnic_mw_rkey(m2), 0, 16) == IBV_WC_REM_ACCESS_ERR);
	/* A window cannot be deregistered as a region. */
	CHECK(rnic_mr_dereg((struct rnic_mr *)m1) == EINVAL);
	CHECK(rnic_mw_dealloc(m1) == 0);
	CHECK(rnic_mw_dealloc(m2) == 0);
	CHECK(rnic_mw_dealloc(NULL) == EINVAL);
	pair_fini(&p);
}

/* Type 2: bind, access inside the window only, local invalidation. */
static void test_type2_bind_and_local_inv(void)
{
	struct pair p;
	struct rnic_mw *mw;
	struct ibv_mw ibmw;
	struct ibv_send_wr inv;
	struct ibv_wc wc;
	uint32_t key;

	pair_init(&p, 20, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_2);
	if (!mw) {
		CHECK(mw != NULL);
		pair_fini(&p);
		return;
	}
	memset(&ibmw, 0, sizeof(ibmw));
	ibmw.rkey = rnic_mw_rkey(mw);
	ibmw.type = IBV_MW_TYPE_2;
	key = ibv_inc_rkey(ibmw.rkey);
	CHECK(bind(&p, &ibmw, key, 1024, 2048, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &wc) ==
	      IBV_WC_SUCCESS);
	CHECK(wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 7);
	CHECK(rnic_mw_rkey(mw) == key);

	ut_fill(p.a.buf, 512, 3);
	CHECK(write_to_b(&p, key, 1024 + 100, 512) == IBV_WC_SUCCESS);
	CHECK(memcmp(p.b.buf + 1024 + 100, p.a.buf, 512) == 0);
	CHECK(read_from_b(&p, key, 1024 + 100, 512) == IBV_WC_SUCCESS);
	CHECK(memcmp(p.a.buf + 4096, p.a.buf, 512) == 0);

	/* Local invalidate through b's own QP. */
	memset(&inv, 0, sizeof(inv));
	inv.wr_id = 9;
	inv.opcode = IBV_WR_LOCAL_INV;
	inv.invalidate_rkey = key;
	CHECK(run_one(&p, &p.b, &inv, &wc) == IBV_WC_SUCCESS);
	CHECK(wc.opcode == IBV_WC_LOCAL_INV && wc.wr_id == 9);
	/* Invalidated: the key no longer reaches memory. */
	CHECK(write_to_b(&p, key, 1024, 16) == IBV_WC_REM_ACCESS_ERR);
	CHECK(rnic_mw_dealloc(mw) == 0);
	pair_fini(&p);
}

/* Bounds and rights of a window, and a stale key after a rebind. */
static void test_window_limits(void)
{
	struct pair p;
	struct rnic_mw *mw;
	struct ibv_mw ibmw;
	uint32_t k1, k2;

	/* Past the end of the window. */
	pair_init(&p, 30, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mw != NULL);
	memset(&ibmw, 0, sizeof(ibmw));
	ibmw.rkey = rnic_mw_rkey(mw);
	k1 = ibv_inc_rkey(ibmw.rkey);
	CHECK(bind(&p, &ibmw, k1, 0, 1024, IBV_ACCESS_REMOTE_WRITE, NULL) == IBV_WC_SUCCESS);
	CHECK(write_to_b(&p, k1, 1000, 24) == IBV_WC_SUCCESS);
	CHECK(write_to_b(&p, k1, 1000, 25) == IBV_WC_REM_ACCESS_ERR);
	rnic_mw_dealloc(mw);
	pair_fini(&p);

	/* Rights: a write-only window does not serve a READ. */
	pair_init(&p, 31, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_1);
	ibmw.rkey = rnic_mw_rkey(mw);
	k1 = ibv_inc_rkey(ibmw.rkey);
	CHECK(bind(&p, &ibmw, k1, 0, 1024, IBV_ACCESS_REMOTE_WRITE, NULL) == IBV_WC_SUCCESS);
	CHECK(read_from_b(&p, k1, 0, 8) == IBV_WC_REM_ACCESS_ERR);
	rnic_mw_dealloc(mw);
	pair_fini(&p);

	/* Type 1 rebind: the old key fails, the new one works; rebinding
	 * with length 0 invalidates (as rdma-core's test does). */
	pair_init(&p, 32, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_1);
	ibmw.rkey = rnic_mw_rkey(mw);
	k1 = ibv_inc_rkey(ibmw.rkey);
	k2 = ibv_inc_rkey(k1);
	CHECK(bind(&p, &ibmw, k1, 0, 1024, IBV_ACCESS_REMOTE_WRITE, NULL) == IBV_WC_SUCCESS);
	ibmw.rkey = k1;
	CHECK(bind(&p, &ibmw, k2, 0, 1024, IBV_ACCESS_REMOTE_WRITE, NULL) == IBV_WC_SUCCESS);
	CHECK(write_to_b(&p, k2, 0, 64) == IBV_WC_SUCCESS);
	ibmw.rkey = k2;
	CHECK(bind(&p, &ibmw, ibv_inc_rkey(k2), 0, 0, 0, NULL) == IBV_WC_SUCCESS);
	CHECK(write_to_b(&p, ibv_inc_rkey(k2), 0, 64) == IBV_WC_REM_ACCESS_ERR);
	rnic_mw_dealloc(mw);
	pair_fini(&p);

	pair_init(&p, 33, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_1);
	ibmw.rkey = rnic_mw_rkey(mw);
	k1 = ibv_inc_rkey(ibmw.rkey);
	CHECK(bind(&p, &ibmw, k1, 0, 1024, IBV_ACCESS_REMOTE_WRITE, NULL) == IBV_WC_SUCCESS);
	ibmw.rkey = k1;
	CHECK(bind(&p, &ibmw, ibv_inc_rkey(k1), 0, 1024, IBV_ACCESS_REMOTE_WRITE, NULL) == IBV_WC_SUCCESS);
	CHECK(write_to_b(&p, k1, 0, 64) == IBV_WC_REM_ACCESS_ERR);    /* stale key */
	rnic_mw_dealloc(mw);
	pair_fini(&p);
}

/* SEND with Invalidate from a invalidates b's type 2 window. */
static void test_remote_inv(void)
{
	struct pair p;
	struct rnic_mw *mw;
	struct ibv_mw ibmw;
	struct ibv_sge sge, rsge;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint32_t key;

	pair_init(&p, 40, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_2);
	CHECK(mw != NULL);
	memset(&ibmw, 0, sizeof(ibmw));
	ibmw.rkey = rnic_mw_rkey(mw);
	key = ibv_inc_rkey(ibmw.rkey);
	CHECK(bind(&p, &ibmw, key, 0, 4096, IBV_ACCESS_REMOTE_WRITE, NULL) == IBV_WC_SUCCESS);
	CHECK(write_to_b(&p, key, 0, 32) == IBV_WC_SUCCESS);

	rsge = (struct ibv_sge){ .addr = (uintptr_t)p.b.buf + 6000, .length = 64, .lkey = rnic_mr_lkey(p.b.mr) };
	rwr = (struct ibv_recv_wr){ .wr_id = 55, .sg_list = &rsge, .num_sge = 1 };
	CHECK(rnic_post_recv(p.b.qp, &rwr, &rbad) == 0);
	wr_send_1(&wr, &sge, IBV_WR_SEND_WITH_INV, 0, (uintptr_t)p.a.buf, 8, rnic_mr_lkey(p.a.mr));
	wr.invalidate_rkey = key;
	CHECK(run_one(&p, &p.a, &wr, NULL) == IBV_WC_SUCCESS);
	CHECK(rnic_cq_poll(p.b.cq, 1, &wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 55 && (wc.wc_flags & IBV_WC_WITH_INV) &&
	      wc.invalidated_rkey == key);
	CHECK(write_to_b(&p, key, 0, 32) == IBV_WC_REM_ACCESS_ERR);
	rnic_mw_dealloc(mw);
	pair_fini(&p);
}

/* Deregistering the region unbinds its windows. */
static void test_dereg_under_window(void)
{
	struct pair p;
	struct rnic_mw *mw;
	struct ibv_mw ibmw;
	uint32_t key;

	pair_init(&p, 50, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_2);
	CHECK(mw != NULL);
	memset(&ibmw, 0, sizeof(ibmw));
	ibmw.rkey = rnic_mw_rkey(mw);
	key = ibv_inc_rkey(ibmw.rkey);
	CHECK(bind(&p, &ibmw, key, 0, 4096, IBV_ACCESS_REMOTE_WRITE, NULL) == IBV_WC_SUCCESS);
	CHECK(rnic_mr_dereg(p.b.mr) == 0);
	p.b.mr = NULL;
	CHECK(write_to_b(&p, key, 0, 32) == IBV_WC_REM_ACCESS_ERR);
	rnic_mw_dealloc(mw);
	pair_fini(&p);
}

/* Binds that must fail with IBV_WC_MW_BIND_ERR (and a window key used
 * as a local key, which must fail locally). */
static void test_bind_errors(void)
{
	struct pair p;
	struct rnic_mw *mw;
	struct ibv_mw ibmw;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	/* The new key must keep the window's index. */
	pair_init(&p, 60, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_2);
	memset(&ibmw, 0, sizeof(ibmw));
	ibmw.rkey = rnic_mw_rkey(mw);
	CHECK(bind(&p, &ibmw, ibmw.rkey + 0x100, 0, 64, IBV_ACCESS_REMOTE_WRITE, NULL) == IBV_WC_MW_BIND_ERR);
	rnic_mw_dealloc(mw);
	pair_fini(&p);

	/* The region must allow window binding. */
	pair_init(&p, 61, IBV_ACCESS_LOCAL_WRITE);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_2);
	ibmw.rkey = rnic_mw_rkey(mw);
	CHECK(bind(&p, &ibmw, ibv_inc_rkey(ibmw.rkey), 0, 64, IBV_ACCESS_REMOTE_WRITE, NULL) ==
	      IBV_WC_MW_BIND_ERR);
	rnic_mw_dealloc(mw);
	pair_fini(&p);

	/* The window must lie inside the region. */
	pair_init(&p, 62, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_2);
	ibmw.rkey = rnic_mw_rkey(mw);
	CHECK(bind(&p, &ibmw, ibv_inc_rkey(ibmw.rkey), BUFSZ - 64, 65, IBV_ACCESS_REMOTE_WRITE, NULL) ==
	      IBV_WC_MW_BIND_ERR);
	rnic_mw_dealloc(mw);
	pair_fini(&p);

	/* A bound type 2 window must be invalidated before a new bind. */
	pair_init(&p, 63, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_2);
	ibmw.rkey = rnic_mw_rkey(mw);
	CHECK(bind(&p, &ibmw, ibv_inc_rkey(ibmw.rkey), 0, 64, IBV_ACCESS_REMOTE_WRITE, NULL) == IBV_WC_SUCCESS);
	CHECK(bind(&p, &ibmw, ibv_inc_rkey(ibv_inc_rkey(ibmw.rkey)), 0, 64, IBV_ACCESS_REMOTE_WRITE, NULL) ==
	      IBV_WC_MW_BIND_ERR);
	rnic_mw_dealloc(mw);
	pair_fini(&p);

	/* Local invalidate of a region's key: not allowed (IBTA 10.6.7.2.4). */
	pair_init(&p, 64, B_ACCESS);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = rnic_mr_rkey(p.b.mr);
	CHECK(run_one(&p, &p.b, &wr, NULL) == IBV_WC_LOC_QP_OP_ERR);
	pair_fini(&p);

	/* A window's key is remote only: as an lkey it fails. */
	pair_init(&p, 65, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_2);
	ibmw.rkey = rnic_mw_rkey(mw);
	CHECK(bind(&p, &ibmw, ibv_inc_rkey(ibmw.rkey), 0, 64, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		   NULL) == IBV_WC_SUCCESS);
	wr_send_1(&wr, &sge, IBV_WR_SEND, 0, (uintptr_t)p.b.buf, 8, rnic_mw_rkey(mw));
	CHECK(run_one(&p, &p.b, &wr, NULL) == IBV_WC_LOC_PROT_ERR);
	rnic_mw_dealloc(mw);
	pair_fini(&p);

	/* A bad post: BIND_MW without a window. */
	pair_init(&p, 66, B_ACCESS);
	{
		struct ibv_send_wr *bad;

		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_BIND_MW;
		CHECK(rnic_post_send(p.b.qp, &wr, &bad, p.l.now) == EINVAL && bad == &wr);
	}
	pair_fini(&p);
}

static int atomic_write(struct pair *p, uint32_t rkey, uint32_t off, uint32_t len, bool inl)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	int st;

	wr_send_1(&wr, &sge, IBV_WR_ATOMIC_WRITE, 3, (uintptr_t)p->a.buf, len, rnic_mr_lkey(p->a.mr));
	wr_remote(&wr, (uintptr_t)p->b.buf + off, rkey);
	wr.send_flags = inl ? IBV_SEND_INLINE : 0;
	st = run_one(p, &p->a, &wr, &wc);
	if (st == IBV_WC_SUCCESS)
		CHECK(wc.opcode == IBV_WC_ATOMIC_WRITE);
	return st;
}

static void test_atomic_write(void)
{
	struct pair p;
	struct rnic_mw *mw;
	struct ibv_mw ibmw;
	uint32_t key;

	/* Through the region, from an SGE and inline (the QP has no inline
	 * room: ATOMIC WRITE's 8 bytes do not need it). */
	pair_init(&p, 70, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ut_fill(p.a.buf, 8, 9);
	memset(p.b.buf, 0xaa, 64);
	CHECK(atomic_write(&p, rnic_mr_rkey(p.b.mr), 8, 8, false) == IBV_WC_SUCCESS);
	CHECK(memcmp(p.b.buf + 8, p.a.buf, 8) == 0 && p.b.buf[7] == 0xaa && p.b.buf[16] == 0xaa);
	ut_fill(p.a.buf, 8, 10);
	CHECK(atomic_write(&p, rnic_mr_rkey(p.b.mr), 32, 8, true) == IBV_WC_SUCCESS);
	CHECK(memcmp(p.b.buf + 32, p.a.buf, 8) == 0);
	/* Not 8 bytes: a local length error before anything is sent. */
	CHECK(atomic_write(&p, rnic_mr_rkey(p.b.mr), 32, 4, false) == IBV_WC_LOC_LEN_ERR);
	pair_fini(&p);

	/* Inline with more than 8 bytes: refused at post. */
	pair_init(&p, 71, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(atomic_write(&p, rnic_mr_rkey(p.b.mr), 0, 16, true) == -2);
	pair_fini(&p);

	/* A region without remote write: remote access error. */
	pair_init(&p, 72, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(atomic_write(&p, rnic_mr_rkey(p.b.mr), 0, 8, false) == IBV_WC_REM_ACCESS_ERR);
	pair_fini(&p);

	/* Through a write window. */
	pair_init(&p, 73, B_ACCESS);
	mw = rnic_mw_alloc(p.b.pd, IBV_MW_TYPE_2);
	memset(&ibmw, 0, sizeof(ibmw));
	ibmw.rkey = rnic_mw_rkey(mw);
	key = ibv_inc_rkey(ibmw.rkey);
	CHECK(bind(&p, &ibmw, key, 64, 64, IBV_ACCESS_REMOTE_WRITE, NULL) == IBV_WC_SUCCESS);
	ut_fill(p.a.buf, 8, 11);
	CHECK(atomic_write(&p, key, 64 + 56, 8, false) == IBV_WC_SUCCESS);
	CHECK(memcmp(p.b.buf + 120, p.a.buf, 8) == 0);
	CHECK(atomic_write(&p, key, 64 + 64, 8, false) == IBV_WC_REM_ACCESS_ERR);   /* past the window */
	rnic_mw_dealloc(mw);
	pair_fini(&p);
}

int main(void)
{
	test_alloc();
	test_type2_bind_and_local_inv();
	test_window_limits();
	test_remote_inv();
	test_dereg_under_window();
	test_bind_errors();
	test_atomic_write();
	if (check_failures)
		return check_exit("rnic_unit_mw");
	printf("unit_mw: ok\n");
	return 0;
}
