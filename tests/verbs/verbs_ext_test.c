/*
 * verbs_ext_test.c — the extended verbs of our libibverbs.so.1, compiled
 * against the system <infiniband/verbs.h> so that every call goes through
 * the inline wrappers and the function pointers they read, as in an
 * unmodified program: ibv_query_device_ex, the verbs_context query ops,
 * ibv_create_cq_ex with ibv_start_poll / ibv_next_poll / ibv_wc_read_*,
 * and ibv_create_qp_ex with the ibv_wr_* posting API.
 *
 * usage: verbs_ext_test [api|loopback]
 *   api       queries, creation rules and argument errors (no traffic)
 *   loopback  two RC QPs of one context connected over our own GID, all
 *             traffic posted with ibv_wr_* and reaped with the ibv_cq_ex
 *             iterator: SEND (SGE and inline), SEND with immediate and
 *             with invalidate, RDMA WRITE (+imm), RDMA READ, both atomics,
 *             batches, wr_flags / wr_id semantics, ibv_wr_abort,
 *             all-or-nothing ibv_wr_complete, and UD sends addressed with
 *             ibv_wr_set_ud_addr (needs the RC and UD transports)
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_test_util.h"

static struct ibv_context *open_softrnic(void)
{
	return vt_open_device(NULL);
}

#define RC_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |                    \
		IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE |               \
		IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |           \
		IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

static struct ibv_qp *create_qp_ex(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
				   enum ibv_qp_type type, uint64_t ops, uint32_t max_send_wr,
				   uint32_t max_sge, uint32_t max_inline)
{
	struct ibv_qp_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = pd;
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = type;
	a.send_ops_flags = ops;
	a.cap.max_send_wr = max_send_wr;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = max_sge;
	a.cap.max_recv_sge = 2;
	a.cap.max_inline_data = max_inline;
	return ibv_create_qp_ex(ctx, &a);
}

/* ---- api ------------------------------------------------------------------ */

static void test_query_device_ex(struct ibv_context *ctx)
{
	struct ibv_query_device_ex_input in = { .comp_mask = 0 };
	struct ibv_device_attr_ex dx, small;
	struct ibv_device_attr da;
	struct verbs_context *vctx;

	REQUIRE(ibv_query_device(ctx, &da) == 0);
	memset(&dx, 0xa5, sizeof(dx));
	CHECK(ibv_query_device_ex(ctx, &in, &dx) == 0);
	CHECK(memcmp(&dx.orig_attr, &da, sizeof(da)) == 0);
	CHECK(dx.comp_mask == 0);
	/* The legacy 32 flags, plus RDMA FLUSH (global, persistent) and
	 * ATOMIC WRITE, bits 38..40 (rdma-core's IB_UVERBS_DEVICE_*). */
	CHECK(dx.device_cap_flags_ex == ((uint32_t)da.device_cap_flags | 7ull << 38));
	CHECK(dx.phys_port_cnt_ex == 1);
	/* Nothing we do not have is claimed. */
	CHECK(dx.odp_caps.general_caps == (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT));
	CHECK(dx.odp_caps.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_SEND);
	CHECK(dx.xrc_odp_caps == 0);
	CHECK(dx.completion_timestamp_mask == 0 && dx.hca_core_clock == 0);
	CHECK(dx.tso_caps.max_tso == 0 && dx.rss_caps.max_rwq_indirection_tables == 0);
	CHECK(dx.max_wq_type_rq == 0);
	/* Packet pacing is real (rnic/cc.c; tests/verbs/rate_limit_test.c). */
	CHECK(dx.packet_pacing_caps.qp_rate_limit_min == 1 && dx.packet_pacing_caps.qp_rate_limit_max == 25000000);
	CHECK(dx.tm_caps.max_num_tags == 0 && dx.cq_mod_caps.max_cq_count == 0);
	CHECK(dx.max_dm_size == 0 && dx.raw_packet_caps == 0);
	CHECK(dx.pci_atomic_caps.fetch_add == 0);

	/* Memory windows: type 1 and 2B, as many as MRs (one key table). */
	CHECK(da.max_mw == da.max_mr);
	CHECK((da.device_cap_flags & (IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) ==
	      (IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B));
	CHECK(!(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A));

	/* rdma-core's input rules: a non-zero input comp_mask is EINVAL. */
	in.comp_mask = 1;
	CHECK(ibv_query_device_ex(ctx, &in, &dx) == EINVAL);

	/* The op honours the caller's struct size (an older header's): it
	 * fills what fits and does not write beyond it; smaller than the
	 * legacy part is EINVAL. */
	vctx = verbs_get_ctx_op(ctx, query_device_ex);
	REQUIRE(vctx);
	memset(&small, 0x5a, sizeof(small));
	CHECK(vctx->query_device_ex(ctx, NULL, &small, sizeof(small.orig_attr)) == 0);
	CHECK(memcmp(&small.orig_attr, &da, sizeof(da)) == 0);
	CHECK(small.phys_port_cnt_ex == 0x5a5a5a5a);
	CHECK(vctx->query_device_ex(ctx, NULL, &small, sizeof(small.orig_attr) - 1) == EINVAL);
}

static void test_query_port_gid(struct ibv_context *ctx)
{
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge;
	size_t part = offsetof(struct ibv_port_attr, max_msg_sz);

	REQUIRE(vctx);
	memset(&pa, 0x77, sizeof(pa));
	CHECK(vctx->query_port(ctx, 1, &pa, part) == 0);
	CHECK(pa.state == IBV_PORT_ACTIVE);
	CHECK(pa.max_msg_sz == 0x77777777u);   /* beyond port_attr_len: untouched */
	CHECK(vctx->query_port(ctx, 0, &pa, sizeof(pa)) == EINVAL);

	CHECK(ibv_query_gid_ex(ctx, 1, 0, &ge, 0) == 0);
	CHECK(ge.gid_type == IBV_GID_TYPE_ROCE_V2 && ge.port_num == 1);
	CHECK(ibv_query_gid_ex(ctx, 1, 0, &ge, 1) == EINVAL);     /* flags */
	CHECK(ibv_query_gid_ex(ctx, 2, 0, &ge, 0) == EINVAL);     /* port  */
	CHECK(ibv_query_gid_ex(ctx, 1, 1, &ge, 0) == EINVAL);     /* index beyond gid_tbl_len */
	CHECK(_ibv_query_gid_ex(ctx, 1, 0, &ge, 0, sizeof(ge) - 1) == EINVAL);
	CHECK(ibv_query_gid_table(ctx, &ge, 1, 1) == -EINVAL);
}

/* Memory windows: both types allocate with distinct, non-zero rkeys and
 * keep their type and PD; another type is EINVAL (the kernel's rule,
 * rdma-core's test_reg_mw_wrong_type); the PD is busy while they live. */
static void test_alloc_mw(struct ibv_pd *pd)
{
	struct ibv_mw *m1, *m2;

	m1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	m2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	REQUIRE(m1 && m2);
	CHECK(m1->type == IBV_MW_TYPE_1 && m2->type == IBV_MW_TYPE_2);
	CHECK(m1->pd == pd && m2->pd == pd && m1->context == pd->context);
	CHECK(m1->rkey && m2->rkey && (m1->rkey >> 8) != (m2->rkey >> 8));
	errno = 0;
	CHECK(ibv_alloc_mw(pd, (enum ibv_mw_type)3) == NULL && errno == EINVAL);
	CHECK(ibv_dealloc_pd(pd) == EBUSY);
	CHECK(ibv_dealloc_mw(m1) == 0);
	CHECK(ibv_dealloc_mw(m2) == 0);
}

static struct ibv_cq_ex *cq_ex_try(struct ibv_context *ctx, uint32_t cqe, uint64_t wc_flags,
				   uint32_t comp_mask, uint32_t flags)
{
	struct ibv_cq_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.cqe = cqe;
	a.wc_flags = wc_flags;
	a.comp_mask = comp_mask;
	a.flags = flags;
	errno = 0;
	return ibv_create_cq_ex(ctx, &a);
}

static void test_cq_ex_create(struct ibv_context *ctx)
{
	struct ibv_device_attr da;
	struct ibv_cq_init_attr_ex a;
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
	struct ibv_cq_ex *cqx;
	struct ibv_wc wc;

	REQUIRE(ibv_query_device(ctx, &da) == 0);

	/* Every standard flag alone and all together. */
	for (uint64_t f = IBV_WC_EX_WITH_BYTE_LEN; f <= IBV_WC_EX_WITH_DLID_PATH_BITS; f <<= 1) {
		cqx = cq_ex_try(ctx, 4, f, 0, 0);
		CHECK(cqx != NULL);
		if (cqx)
			CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)) == 0);
	}
	cqx = cq_ex_try(ctx, 8, IBV_WC_STANDARD_FLAGS, 0, 0);
	REQUIRE(cqx);
	CHECK(cqx->cqe >= 8);
	CHECK(cqx->read_completion_ts == NULL && cqx->read_cvlan == NULL);
	/* Empty: ENOENT, and end_poll must not follow.  Unknown poll
	 * attributes: EINVAL. */
	CHECK(ibv_start_poll(cqx, &pa) == ENOENT);
	pa.comp_mask = 1;
	CHECK(ibv_start_poll(cqx, &pa) == EINVAL);
	/* The ibv_cq inside works with the legacy verbs. */
	CHECK(ibv_poll_cq(ibv_cq_ex_to_cq(cqx), 1, &wc) == 0);
	CHECK(ibv_req_notify_cq(ibv_cq_ex_to_cq(cqx), 0) == 0);
	CHECK(ibv_resize_cq(ibv_cq_ex_to_cq(cqx), 32) == 0 && cqx->cqe >= 32);
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)) == 0);

	/* Features we lack: EOPNOTSUPP. */
	CHECK(!cq_ex_try(ctx, 4, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, 0, 0) && errno == EOPNOTSUPP);
	CHECK(!cq_ex_try(ctx, 4, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, 0, 0) &&
	      errno == EOPNOTSUPP);
	CHECK(!cq_ex_try(ctx, 4, IBV_WC_EX_WITH_CVLAN, 0, 0) && errno == EOPNOTSUPP);
	CHECK(!cq_ex_try(ctx, 4, IBV_WC_EX_WITH_FLOW_TAG, 0, 0) && errno == EOPNOTSUPP);
	CHECK(!cq_ex_try(ctx, 4, IBV_WC_EX_WITH_TM_INFO, 0, 0) && errno == EOPNOTSUPP);
	CHECK(!cq_ex_try(ctx, 4, 0, IBV_CQ_INIT_ATTR_MASK_FLAGS, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN) &&
	      errno == EOPNOTSUPP);
	/* MASK_PD without a parent domain is a bad argument (parent domains
	 * exist: mr_ex_test domains). */
	CHECK(!cq_ex_try(ctx, 4, 0, IBV_CQ_INIT_ATTR_MASK_PD, 0) && errno == EINVAL);
	/* A hint we may ignore: accepted. */
	cqx = cq_ex_try(ctx, 4, 0, IBV_CQ_INIT_ATTR_MASK_FLAGS, IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
	CHECK(cqx != NULL);
	if (cqx)
		CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)) == 0);
	/* Bad input: EINVAL. */
	CHECK(!cq_ex_try(ctx, 4, 0, 1u << 7, 0) && errno == EINVAL);   /* unknown comp_mask bit */
	CHECK(!cq_ex_try(ctx, (uint32_t)da.max_cqe + 1, 0, 0, 0) && errno == EINVAL);
	CHECK(!cq_ex_try(ctx, 0, 0, 0, 0) && errno == EINVAL);
	memset(&a, 0, sizeof(a));
	a.cqe = 4;
	a.comp_vector = (uint32_t)ctx->num_comp_vectors;
	errno = 0;
	CHECK(ibv_create_cq_ex(ctx, &a) == NULL && errno == EINVAL);
}

static void test_qp_ex_create(struct ibv_context *ctx, struct ibv_pd *pd)
{
	static const uint64_t unsupported[] = {
		IBV_QP_EX_WITH_TSO,
	};
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp_init_attr init;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	REQUIRE(cq);

	qp = create_qp_ex(ctx, pd, cq, IBV_QPT_RC, RC_OPS, 8, 1, 32);
	REQUIRE(qp);
	CHECK(ibv_qp_to_qp_ex(qp) == (struct ibv_qp_ex *)qp);
	CHECK(ibv_qp_to_qp_ex(qp)->wr_send != NULL && ibv_qp_to_qp_ex(qp)->wr_complete != NULL);
	CHECK(ibv_destroy_qp(qp) == 0);

	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		errno = 0;
		CHECK(create_qp_ex(ctx, pd, cq, IBV_QPT_RC, IBV_QP_EX_WITH_SEND | unsupported[i],
				   8, 1, 0) == NULL && errno == EOPNOTSUPP);
	}
	/* UC has RDMA WRITE but no READ or atomics (IBTA 9.4). */
	qp = create_qp_ex(ctx, pd, cq, IBV_QPT_UC,
			  IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, 8, 1, 0);
	CHECK(qp != NULL);
	if (qp)
		CHECK(ibv_destroy_qp(qp) == 0);
	errno = 0;
	CHECK(create_qp_ex(ctx, pd, cq, IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ, 8, 1, 0) == NULL &&
	      errno == EOPNOTSUPP);
	errno = 0;
	CHECK(create_qp_ex(ctx, pd, cq, IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, 8, 1, 0) ==
		      NULL && errno == EOPNOTSUPP);

	/* Without SEND_OPS_FLAGS (and from ibv_create_qp) there is no
	 * ibv_qp_ex to have. */
	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	a.pd = pd;
	a.send_cq = a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	qp = ibv_create_qp_ex(ctx, &a);
	REQUIRE(qp);
	CHECK(ibv_qp_to_qp_ex(qp) == NULL);
	CHECK(ibv_destroy_qp(qp) == 0);
	memset(&init, 0, sizeof(init));
	init.send_cq = init.recv_cq = cq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = init.cap.max_recv_wr = 4;
	init.cap.max_send_sge = init.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &init);
	REQUIRE(qp);
	CHECK(ibv_qp_to_qp_ex(qp) == NULL);
	CHECK(ibv_destroy_qp(qp) == 0);

	CHECK(ibv_destroy_cq(cq) == 0);
}

/* Errors a builder or setter records come back from ibv_wr_complete, and
 * nothing is posted.  A QP in RESET would fail any post it reached, so
 * these are the recorded errors, not the transport's. */
static void test_wr_errors(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_sge two[2] = { { .addr = 1, .length = 1 }, { .addr = 2, .length = 1 } };
	char big[64] = { 0 };
	struct ibv_qp_ex *qpx;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	REQUIRE(cq);
	qp = create_qp_ex(ctx, pd, cq, IBV_QPT_RC, IBV_QP_EX_WITH_SEND, 4, 1, 16);
	REQUIRE(qp);
	qpx = ibv_qp_to_qp_ex(qp);
	REQUIRE(qpx);

	CHECK(ibv_wr_complete(qpx) == EINVAL);               /* no ibv_wr_start */

	ibv_wr_start(qpx);
	ibv_wr_rdma_write(qpx, 1, 0x1000);                    /* not in send_ops_flags */
	ibv_wr_set_sge(qpx, 0, 0, 0);
	CHECK(ibv_wr_complete(qpx) == EINVAL);

	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge_list(qpx, 2, two);                     /* max_send_sge is 1 */
	CHECK(ibv_wr_complete(qpx) == EINVAL);

	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, big, 17);                 /* max_inline_data 16 */
	CHECK(ibv_wr_complete(qpx) == EINVAL);

	ibv_wr_start(qpx);
	ibv_wr_set_sge(qpx, 0, 0, 0);                         /* setter with no builder */
	CHECK(ibv_wr_complete(qpx) == EINVAL);

	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_ud_addr(qpx, NULL, 1, 1);                  /* RC QP */
	CHECK(ibv_wr_complete(qpx) == EINVAL);

	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, NULL, 0, NULL);                   /* not in send_ops_flags */
	CHECK(ibv_wr_complete(qpx) == EINVAL);
	ibv_wr_start(qpx);
	ibv_wr_local_inv(qpx, 5);
	CHECK(ibv_wr_complete(qpx) == EINVAL);

	ibv_wr_start(qpx);
	for (int i = 0; i < 5; i++) {                         /* max_send_wr is 4 */
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, 0, 0, 0);
	}
	CHECK(ibv_wr_complete(qpx) == ENOMEM);

	/* A well-formed batch reaches the rnic, which refuses a QP in RESET
	 * (IBTA 10.3.1) as ibv_post_send would. */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 0, 0, 0);
	CHECK(ibv_wr_complete(qpx) == EINVAL);

	/* An empty batch, and an abort, are fine; the lock was released
	 * each time or this would hang. */
	ibv_wr_start(qpx);
	CHECK(ibv_wr_complete(qpx) == 0);
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_abort(qpx);
	ibv_wr_abort(qpx);                                    /* not open: no-op */

	CHECK(ibv_destroy_qp(qp) == 0);
	CHECK(ibv_destroy_cq(cq) == 0);
}

static int run_api(void)
{
	struct ibv_context *ctx = open_softrnic();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	REQUIRE(pd);
	test_query_device_ex(ctx);
	test_query_port_gid(ctx);
	test_alloc_mw(pd);
	test_cq_ex_create(ctx);
	test_qp_ex_create(ctx, pd);
	test_wr_errors(ctx, pd);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	return check_failures ? 1 : 0;
}

/* ---- loopback ------------------------------------------------------------- */

enum { BUF = 1 << 16 };

struct side {
	struct ibv_cq_ex *cqx;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_mr *mr;
	char *buf;
};

/* One completion as read through the ibv_cq_ex accessors. */
struct excomp {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len, qp_num, src_qp, slid;
	unsigned int wc_flags;
	__be32 imm;
	uint8_t sl, dlid_path_bits;
	uint32_t vendor_err;
};

static void read_current(struct ibv_cq_ex *cqx, struct excomp *c)
{
	c->wr_id = cqx->wr_id;
	c->status = cqx->status;
	c->opcode = ibv_wc_read_opcode(cqx);
	c->vendor_err = ibv_wc_read_vendor_err(cqx);
	c->byte_len = ibv_wc_read_byte_len(cqx);
	c->qp_num = ibv_wc_read_qp_num(cqx);
	c->src_qp = ibv_wc_read_src_qp(cqx);
	c->wc_flags = ibv_wc_read_wc_flags(cqx);
	c->imm = ibv_wc_read_imm_data(cqx);
	c->slid = ibv_wc_read_slid(cqx);
	c->sl = ibv_wc_read_sl(cqx);
	c->dlid_path_bits = ibv_wc_read_dlid_path_bits(cqx);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reaps exactly n completions with start_poll/next_poll/end_poll (one
 * start/end pair per burst, as programs do); fails after 5 s. */
static void reap(struct ibv_cq_ex *cqx, int n, struct excomp *out)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	double deadline = now_s() + 5;
	int got = 0;

	while (got < n) {
		int ret = ibv_start_poll(cqx, &attr);

		if (ret == ENOENT) {
			REQUIRE(now_s() < deadline);
			continue;
		}
		REQUIRE(ret == 0);
		read_current(cqx, &out[got++]);
		while (got < n && (ret = ibv_next_poll(cqx)) == 0)
			read_current(cqx, &out[got++]);
		REQUIRE(ret == 0 || ret == ENOENT);
		ibv_end_poll(cqx);
	}
}

/* True if the CQ stays empty for `ms` milliseconds. */
static bool stays_empty(struct ibv_cq_ex *cqx, int ms)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	double deadline = now_s() + ms / 1000.0;

	while (now_s() < deadline) {
		if (ibv_start_poll(cqx, &attr) == 0) {
			ibv_end_poll(cqx);
			return false;
		}
		usleep(1000);
	}
	return true;
}

static void setup_side(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_comp_channel *ch,
		       struct side *s)
{
	struct ibv_cq_init_attr_ex ca;

	s->buf = aligned_alloc(64, BUF);
	REQUIRE(s->buf);
	memset(s->buf, 0, BUF);
	s->mr = ibv_reg_mr(pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	REQUIRE(s->mr);
	memset(&ca, 0, sizeof(ca));
	ca.cqe = 64;
	ca.cq_context = s;
	ca.channel = ch;
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	s->cqx = ibv_create_cq_ex(ctx, &ca);
	REQUIRE(s->cqx);
	s->qp = create_qp_ex(ctx, pd, ibv_cq_ex_to_cq(s->cqx), IBV_QPT_RC, RC_OPS, 16, 2, 64);
	REQUIRE(s->qp);
	s->qpx = ibv_qp_to_qp_ex(s->qp);
	REQUIRE(s->qpx);
}

/* Every RC operation toward the peer, 4 reads/atomics in flight; PSN
 * 200 both ways. */
static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *gid,
		       uint8_t timeout)
{
	const struct vt_rc_attr attr = {
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		.psn = 200,
		.rd_atomic = 4,
		.timeout = timeout,
	};

	vt_connect_rc(qp, dest_qpn, gid, &attr);
}

static void post_recv(struct side *s, uint64_t wr_id, size_t off, uint32_t len)
{
	vt_post_recv(s->qp, s->mr, s->buf + off, len, wr_id);
}

static void fill(char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(i * 31 + seed);
}

/* SEND from an SGE, then SEND with immediate from two inline buffers that
 * are overwritten before ibv_wr_complete (inline copies at set time). */
static void test_sends(struct side *a, struct side *b)
{
	struct excomp c[2];
	char part1[20], part2[30], expect[50];
	struct ibv_data_buf bufs[2] = { { part1, sizeof(part1) }, { part2, sizeof(part2) } };

	fill(a->buf, 3000, 1);
	post_recv(b, 101, 0, 4096);
	a->qpx->wr_id = 1;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_start(a->qpx);
	ibv_wr_send(a->qpx);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)a->buf, 3000);
	CHECK(ibv_wr_complete(a->qpx) == 0);
	reap(a->cqx, 1, c);
	CHECK(c[0].wr_id == 1 && c[0].status == IBV_WC_SUCCESS && c[0].opcode == IBV_WC_SEND);
	CHECK(c[0].qp_num == a->qp->qp_num && c[0].vendor_err == 0);
	reap(b->cqx, 1, c);
	CHECK(c[0].wr_id == 101 && c[0].status == IBV_WC_SUCCESS && c[0].opcode == IBV_WC_RECV);
	CHECK(c[0].byte_len == 3000 && c[0].qp_num == b->qp->qp_num);
	CHECK(c[0].src_qp == a->qp->qp_num);
	CHECK(!(c[0].wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)));
	CHECK(c[0].sl == 0 && c[0].slid == 0 && c[0].dlid_path_bits == 0);
	CHECK(memcmp(a->buf, b->buf, 3000) == 0);

	fill(part1, sizeof(part1), 7);
	fill(part2, sizeof(part2), 9);
	memcpy(expect, part1, sizeof(part1));
	memcpy(expect + sizeof(part1), part2, sizeof(part2));
	post_recv(b, 102, 8192, 4096);
	a->qpx->wr_id = 2;
	ibv_wr_start(a->qpx);
	ibv_wr_send_imm(a->qpx, htobe32(0x12345678));
	ibv_wr_set_inline_data_list(a->qpx, 2, bufs);
	memset(part1, 0, sizeof(part1));
	memset(part2, 0, sizeof(part2));
	CHECK(ibv_wr_complete(a->qpx) == 0);
	reap(a->cqx, 1, c);
	CHECK(c[0].wr_id == 2 && c[0].status == IBV_WC_SUCCESS && c[0].opcode == IBV_WC_SEND);
	reap(b->cqx, 1, c);
	CHECK(c[0].wr_id == 102 && c[0].status == IBV_WC_SUCCESS && c[0].byte_len == 50);
	CHECK((c[0].wc_flags & IBV_WC_WITH_IMM) && c[0].imm == htobe32(0x12345678));
	CHECK(memcmp(b->buf + 8192, expect, 50) == 0);

	/* SEND with invalidate: the responder reports the rkey (softrnic has
	 * nothing a remote may invalidate, see responder.c). */
	post_recv(b, 103, 0, 4096);
	a->qpx->wr_id = 3;
	ibv_wr_start(a->qpx);
	ibv_wr_send_inv(a->qpx, 0xabcd12);
	ibv_wr_set_inline_data(a->qpx, "hello", 5);
	CHECK(ibv_wr_complete(a->qpx) == 0);
	reap(a->cqx, 1, c);
	CHECK(c[0].wr_id == 3 && c[0].status == IBV_WC_SUCCESS);
	reap(b->cqx, 1, c);
	CHECK(c[0].wr_id == 103 && c[0].byte_len == 5 && (c[0].wc_flags & IBV_WC_WITH_INV));
	CHECK((uint32_t)c[0].imm == 0xabcd12);   /* ibv_wc_read_invalidated_rkey */
	CHECK(memcmp(b->buf, "hello", 5) == 0);
}

/* One batch: an unsignaled RDMA WRITE gathering two SGEs, a signaled
 * WRITE with immediate, a signaled READ.  wr_id and wr_flags are taken
 * per builder call.  Two completions only, in order. */
static void test_rdma_batch(struct side *a, struct side *b)
{
	struct ibv_sge two[2] = {
		{ .addr = (uintptr_t)a->buf + 100, .length = 1500, .lkey = a->mr->lkey },
		{ .addr = (uintptr_t)a->buf + 5000, .length = 2500, .lkey = a->mr->lkey },
	};
	struct excomp c[2];
	uint64_t rb = (uintptr_t)b->buf;

	fill(a->buf, 16384, 3);
	fill(b->buf + 40000, 6000, 5);
	memset(b->buf, 0, 20000);
	memset(a->buf + 30000, 0, 6000);
	post_recv(b, 201, 0, 16);

	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 10;
	a->qpx->wr_flags = 0;
	ibv_wr_rdma_write(a->qpx, b->mr->rkey, rb + 1000);
	ibv_wr_set_sge_list(a->qpx, 2, two);
	a->qpx->wr_id = 11;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(a->qpx, b->mr->rkey, rb + 10000, htobe32(77));
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)a->buf + 8000, 4000);
	a->qpx->wr_id = 12;
	ibv_wr_rdma_read(a->qpx, b->mr->rkey, rb + 40000);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)a->buf + 30000, 6000);
	CHECK(ibv_wr_complete(a->qpx) == 0);

	reap(a->cqx, 2, c);
	CHECK(c[0].wr_id == 11 && c[0].status == IBV_WC_SUCCESS && c[0].opcode == IBV_WC_RDMA_WRITE);
	CHECK(c[1].wr_id == 12 && c[1].status == IBV_WC_SUCCESS && c[1].opcode == IBV_WC_RDMA_READ);
	CHECK(c[1].byte_len == 6000);
	CHECK(stays_empty(a->cqx, 20));   /* the unsignaled WRITE: no completion */
	reap(b->cqx, 1, c);
	CHECK(c[0].wr_id == 201 && c[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK(c[0].byte_len == 4000 && (c[0].wc_flags & IBV_WC_WITH_IMM) && c[0].imm == htobe32(77));
	CHECK(memcmp(b->buf + 1000, a->buf + 100, 1500) == 0);
	CHECK(memcmp(b->buf + 2500, a->buf + 5000, 2500) == 0);
	CHECK(memcmp(b->buf + 10000, a->buf + 8000, 4000) == 0);
	CHECK(memcmp(a->buf + 30000, b->buf + 40000, 6000) == 0);
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
}

/* Fetch-and-add then two compare-and-swaps (one hit, one miss) on one
 * remote 64-bit word, one batch; each returns the prior value. */
static void test_atomics(struct side *a, struct side *b)
{
	uint64_t *remote = (uint64_t *)(b->buf + 64);
	uint64_t *orig = (uint64_t *)(a->buf + 512);
	struct excomp c[3];

	*remote = 100;
	memset(orig, 0xee, 3 * sizeof(*orig));
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 20;
	ibv_wr_atomic_fetch_add(a->qpx, b->mr->rkey, (uintptr_t)remote, 5);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)&orig[0], 8);
	a->qpx->wr_id = 21;
	ibv_wr_atomic_cmp_swp(a->qpx, b->mr->rkey, (uintptr_t)remote, 105, 7);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)&orig[1], 8);
	a->qpx->wr_id = 22;
	ibv_wr_atomic_cmp_swp(a->qpx, b->mr->rkey, (uintptr_t)remote, 1, 9);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)&orig[2], 8);
	CHECK(ibv_wr_complete(a->qpx) == 0);
	reap(a->cqx, 3, c);
	CHECK(c[0].wr_id == 20 && c[0].status == IBV_WC_SUCCESS &&
	      c[0].opcode == IBV_WC_FETCH_ADD && c[0].byte_len == 8);
	CHECK(c[1].wr_id == 21 && c[1].status == IBV_WC_SUCCESS && c[1].opcode == IBV_WC_COMP_SWAP);
	CHECK(c[2].wr_id == 22 && c[2].status == IBV_WC_SUCCESS && c[2].opcode == IBV_WC_COMP_SWAP);
	CHECK(orig[0] == 100 && orig[1] == 105 && orig[2] == 7);
	CHECK(*remote == 7);
}

/* ibv_wr_abort sends nothing: the receive stays posted and is consumed by
 * the next real SEND, whose bytes it then holds. */
static void test_abort(struct side *a, struct side *b)
{
	struct excomp c[1];

	post_recv(b, 301, 0, 64);
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 30;
	ibv_wr_send(a->qpx);
	ibv_wr_set_inline_data(a->qpx, "aborted!", 8);
	ibv_wr_abort(a->qpx);
	CHECK(stays_empty(a->cqx, 30) && stays_empty(b->cqx, 1));

	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 31;
	ibv_wr_send(a->qpx);
	ibv_wr_set_inline_data(a->qpx, "posted", 6);
	CHECK(ibv_wr_complete(a->qpx) == 0);
	reap(a->cqx, 1, c);
	CHECK(c[0].wr_id == 31);
	reap(b->cqx, 1, c);
	CHECK(c[0].wr_id == 301 && c[0].byte_len == 6 && memcmp(b->buf, "posted", 6) == 0);
}

/* The ibv_cq inside an ibv_cq_ex with a completion channel: arm, get the
 * event for this very CQ, and reap with the legacy ibv_poll_cq. */
static void test_cq_ex_events(struct ibv_comp_channel *ch, struct side *a, struct side *b)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *evcq;
	struct excomp c[1];
	struct ibv_wc wc;
	void *evctx;
	int got = 0;

	post_recv(b, 401, 0, 64);
	CHECK(ibv_req_notify_cq(ibv_cq_ex_to_cq(b->cqx), 0) == 0);
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 40;
	ibv_wr_send(a->qpx);
	ibv_wr_set_inline_data(a->qpx, "event", 5);
	CHECK(ibv_wr_complete(a->qpx) == 0);
	REQUIRE(poll(&pfd, 1, 5000) == 1);
	REQUIRE(ibv_get_cq_event(ch, &evcq, &evctx) == 0);
	CHECK(evcq == ibv_cq_ex_to_cq(b->cqx) && evctx == b);
	ibv_ack_cq_events(evcq, 1);
	for (int i = 0; i < 500 && !got; i++) {
		got = ibv_poll_cq(ibv_cq_ex_to_cq(b->cqx), 1, &wc);
		if (!got)
			usleep(1000);
	}
	CHECK(got == 1 && wc.wr_id == 401 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 5);
	reap(a->cqx, 1, c);
	CHECK(c[0].wr_id == 40);
}

/* All or nothing: with 10 WRs outstanding on a 16-deep send queue, a
 * batch of 10 fails with ENOMEM and posts none; a batch of 6 fits.
 * The QP talks to a QPN nobody has, with a 4 s retransmit timer, so
 * nothing completes until we move it to ERR, which flushes exactly what
 * was posted: 16. */
static void test_all_or_nothing(struct ibv_context *ctx, struct ibv_pd *pd,
				const union ibv_gid *gid)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct excomp c[17];
	struct ibv_cq_ex *cqx;
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qp;

	cqx = ibv_create_cq_ex(ctx, &ca);
	REQUIRE(cqx);
	qp = create_qp_ex(ctx, pd, ibv_cq_ex_to_cq(cqx), IBV_QPT_RC, IBV_QP_EX_WITH_SEND, 16, 1, 16);
	REQUIRE(qp);
	qpx = ibv_qp_to_qp_ex(qp);
	REQUIRE(qpx);
	connect_qp(qp, 0xfffffe, gid, 20);
	qpx->wr_flags = IBV_SEND_SIGNALED;

	ibv_wr_start(qpx);
	for (int i = 0; i < 10; i++) {
		qpx->wr_id = 1000 + i;
		ibv_wr_send(qpx);
		ibv_wr_set_inline_data(qpx, "x", 1);
	}
	CHECK(ibv_wr_complete(qpx) == 0);
	ibv_wr_start(qpx);
	for (int i = 0; i < 10; i++) {
		qpx->wr_id = 2000 + i;
		ibv_wr_send(qpx);
		ibv_wr_set_inline_data(qpx, "y", 1);
	}
	CHECK(ibv_wr_complete(qpx) == ENOMEM);
	ibv_wr_start(qpx);
	for (int i = 0; i < 6; i++) {
		qpx->wr_id = 3000 + i;
		ibv_wr_send(qpx);
		ibv_wr_set_inline_data(qpx, "z", 1);
	}
	CHECK(ibv_wr_complete(qpx) == 0);
	CHECK(stays_empty(cqx, 20));

	REQUIRE(ibv_modify_qp(qp, &qa, IBV_QP_STATE) == 0);
	reap(cqx, 16, c);
	for (int i = 0; i < 16; i++) {
		uint64_t want = i < 10 ? 1000 + (uint64_t)i : 3000 + (uint64_t)(i - 10);

		CHECK(c[i].wr_id == want && c[i].status == IBV_WC_WR_FLUSH_ERR);
	}
	CHECK(stays_empty(cqx, 20));   /* none of the 2000s */
	CHECK(ibv_destroy_qp(qp) == 0);
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)) == 0);
}

/* UD through ibv_wr_set_ud_addr: the address is per WR (an AH, the
 * remote QPN and Q_Key); a UD WR without one is refused whole.  The
 * receive buffer starts with the 40-byte GRH slot (IBTA 11.4.1.1). */
static void test_ud(struct ibv_context *ctx, struct ibv_pd *pd, const union ibv_gid *gid)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_qp *qp[2];
	struct ibv_qp_ex *qpx;
	struct ibv_cq_ex *cqx;
	struct excomp c[1];
	struct side r;
	struct ibv_ah *ah;

	cqx = ibv_create_cq_ex(ctx, &ca);
	REQUIRE(cqx);
	for (int i = 0; i < 2; i++) {
		qp[i] = create_qp_ex(ctx, pd, ibv_cq_ex_to_cq(cqx), IBV_QPT_UD,
				     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM, 8, 1, 64);
		REQUIRE(qp[i]);
		vt_ud_to_rts(qp[i], 0x11111111, 7);
	}
	/* UD has no RDMA: refused at creation. */
	errno = 0;
	CHECK(create_qp_ex(ctx, pd, ibv_cq_ex_to_cq(cqx), IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE,
			   8, 1, 0) == NULL && errno == EOPNOTSUPP);
	ah = vt_create_ah(pd, gid, 1);
	REQUIRE(ah);

	r.qp = qp[1];
	r.buf = aligned_alloc(64, 4096);
	REQUIRE(r.buf);
	r.mr = ibv_reg_mr(pd, r.buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(r.mr);
	post_recv(&r, 501, 0, 40 + 256);

	qpx = ibv_qp_to_qp_ex(qp[0]);
	REQUIRE(qpx);
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_start(qpx);                        /* no address: refused */
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, "lost", 4);
	CHECK(ibv_wr_complete(qpx) == EINVAL);
	ibv_wr_start(qpx);
	qpx->wr_id = 50;
	ibv_wr_send_imm(qpx, htobe32(0xfeed));
	ibv_wr_set_ud_addr(qpx, ah, qp[1]->qp_num, 0x11111111);
	ibv_wr_set_inline_data(qpx, "datagram", 8);
	CHECK(ibv_wr_complete(qpx) == 0);
	/* Both completions land on the shared CQ, in either order. */
	for (int seen = 0; seen != 3;) {
		reap(cqx, 1, c);
		if (c[0].wr_id == 50) {
			CHECK(c[0].status == IBV_WC_SUCCESS && c[0].opcode == IBV_WC_SEND);
			seen |= 1;
		} else {
			CHECK(c[0].wr_id == 501 && c[0].status == IBV_WC_SUCCESS);
			CHECK(c[0].opcode == IBV_WC_RECV && c[0].byte_len == 40 + 8);
			CHECK(c[0].src_qp == qp[0]->qp_num && c[0].qp_num == qp[1]->qp_num);
			CHECK((c[0].wc_flags & IBV_WC_GRH) && (c[0].wc_flags & IBV_WC_WITH_IMM));
			CHECK(c[0].imm == htobe32(0xfeed));
			CHECK(memcmp(r.buf + 40, "datagram", 8) == 0);
			seen |= 2;
		}
	}
	CHECK(stays_empty(cqx, 20));   /* the refused WR never went out */

	CHECK(ibv_destroy_qp(qp[0]) == 0);
	CHECK(ibv_destroy_qp(qp[1]) == 0);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(ibv_dereg_mr(r.mr) == 0);
	free(r.buf);
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)) == 0);
}

/* A CQ is locked from a successful ibv_start_poll to ibv_end_poll: a
 * second thread's start_poll waits, then gets the next completion. */
struct poller {
	struct ibv_cq_ex *cqx;
	int ret;
	uint64_t wr_id;
	int done;
};

static void *poll_in_thread(void *arg)
{
	struct poller *p = arg;
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };

	p->ret = ibv_start_poll(p->cqx, &attr);
	if (p->ret == 0) {
		p->wr_id = p->cqx->wr_id;
		ibv_end_poll(p->cqx);
	}
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_cq_ex_lock(struct side *a, struct side *b)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	struct poller p = { .cqx = b->cqx };
	struct excomp c[2];
	pthread_t t;
	double deadline;
	int ret;

	post_recv(b, 601, 0, 64);
	post_recv(b, 602, 64, 64);
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 60;
	ibv_wr_send(a->qpx);
	ibv_wr_set_inline_data(a->qpx, "one", 3);
	a->qpx->wr_id = 61;
	ibv_wr_send(a->qpx);
	ibv_wr_set_inline_data(a->qpx, "two", 3);
	CHECK(ibv_wr_complete(a->qpx) == 0);
	reap(a->cqx, 2, c);
	CHECK(c[0].wr_id == 60 && c[1].wr_id == 61);

	deadline = now_s() + 5;
	while ((ret = ibv_start_poll(b->cqx, &attr)) == ENOENT)
		REQUIRE(now_s() < deadline);
	REQUIRE(ret == 0);
	CHECK(b->cqx->wr_id == 601);
	REQUIRE(pthread_create(&t, NULL, poll_in_thread, &p) == 0);
	usleep(50000);
	CHECK(!__atomic_load_n(&p.done, __ATOMIC_ACQUIRE));   /* waits for end_poll */
	CHECK(b->cqx->wr_id == 601 && ibv_wc_read_byte_len(b->cqx) == 3);
	ibv_end_poll(b->cqx);
	REQUIRE(pthread_join(t, NULL) == 0);
	/* Both SENDs were acknowledged, so both receives had completed
	 * before we started: the thread found the second one. */
	CHECK(p.ret == 0 && p.wr_id == 602);
}

static int run_loopback(void)
{
	struct ibv_context *ctx = open_softrnic();
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	union ibv_gid gid;
	struct side a, b;

	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	ch = ibv_create_comp_channel(ctx);
	REQUIRE(ch);
	setup_side(ctx, pd, NULL, &a);
	setup_side(ctx, pd, ch, &b);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);
	connect_qp(a.qp, b.qp->qp_num, &gid, 14);
	connect_qp(b.qp, a.qp->qp_num, &gid, 14);

	test_sends(&a, &b);
	test_rdma_batch(&a, &b);
	test_atomics(&a, &b);
	test_abort(&a, &b);
	test_cq_ex_events(ch, &a, &b);
	test_cq_ex_lock(&a, &b);
	test_all_or_nothing(ctx, pd, &gid);
	test_ud(ctx, pd, &gid);

	CHECK(ibv_destroy_qp(a.qp) == 0);
	CHECK(ibv_destroy_qp(b.qp) == 0);
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(a.cqx)) == 0);
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(b.cqx)) == 0);
	CHECK(ibv_destroy_comp_channel(ch) == 0);
	CHECK(ibv_dereg_mr(a.mr) == 0);
	CHECK(ibv_dereg_mr(b.mr) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	free(a.buf);
	free(b.buf);
	return check_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct vt_mode modes[] = { { "api", run_api }, { "loopback", run_loopback } };

	return vt_main(argc, argv, modes, sizeof(modes) / sizeof(modes[0]));
}
