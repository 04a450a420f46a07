/*
 * rate_limit_test.c — packet pacing through the verbs API: the device's
 * packet_pacing_caps, ibv_modify_qp_rate_limit and IBV_QP_RATE_LIMIT
 * (rnic/cc.c's pacer).
 *
 *   api    caps as ibv_query_device_ex reports them; EINVAL for an unknown
 *          comp_mask bit or a rate above the maximum; IBV_QP_RATE_LIMIT on
 *          RTR -> RTS is accepted and read back by ibv_query_qp, refused
 *          on RESET -> INIT.
 *   pace   two RC QPs of one device connected to each other: 4 MiB of
 *          RDMA WRITEs limited to 200 Mb/s cannot finish sooner than the
 *          limit allows (a lower bound, robust on a loaded machine), and
 *          the same transfer with the limit removed (rate 0) is several
 *          times faster.  The data arrives intact both times.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "verbs_test_util.h"

#define MSG (64u * 1024)
#define TOTAL (4u * 1024 * 1024)
#define LIMIT_KBPS 200000u              /* 200 Mb/s */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run_api(void)
{
	struct ibv_context *ctx = vt_open_device(NULL);
	struct ibv_device_attr_ex attr;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	union ibv_gid gid;

	REQUIRE(pd && cq);
	memset(&attr, 0, sizeof(attr));
	REQUIRE(ibv_query_device_ex(ctx, NULL, &attr) == 0);
	CHECK(attr.packet_pacing_caps.qp_rate_limit_min == 1);
	CHECK(attr.packet_pacing_caps.qp_rate_limit_max == 25000000);   /* the 25 Gb/s port */
	CHECK(attr.packet_pacing_caps.supported_qpts & (1u << IBV_QPT_RC));
	CHECK(attr.packet_pacing_caps.supported_qpts & (1u << IBV_QPT_UD));

	struct ibv_qp *qp = vt_create_rc_qp(pd, cq, cq, NULL);
	struct ibv_qp_rate_limit_attr rl = { .rate_limit = 1000 };
	rl.comp_mask = 1;
	CHECK(ibv_modify_qp_rate_limit(qp, &rl) == EINVAL);
	rl.comp_mask = 0;
	rl.rate_limit = 25000001;
	CHECK(ibv_modify_qp_rate_limit(qp, &rl) == EINVAL);
	rl.rate_limit = 1000;
	rl.max_burst_sz = 8192;
	CHECK(ibv_modify_qp_rate_limit(qp, &rl) == 0);
	rl.rate_limit = 0;
	CHECK(ibv_modify_qp_rate_limit(qp, &rl) == 0);

	/* IBV_QP_RATE_LIMIT with modify_qp: not on RESET -> INIT ... */
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.rate_limit = 5000;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS |
					     IBV_QP_RATE_LIMIT) == EINVAL);
	/* ... but on the way to RTS, and ibv_query_qp reads it back. */
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);
	const struct vt_rc_attr rc = { .access = IBV_ACCESS_REMOTE_WRITE, .psn = 1, .rd_atomic = 1, .timeout = 14 };
	vt_connect_rc(qp, qp->qp_num, &gid, &rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.rate_limit = 5000;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT) == 0);
	struct ibv_qp_init_attr init;
	memset(&a, 0, sizeof(a));
	CHECK(ibv_query_qp(qp, &a, IBV_QP_RATE_LIMIT, &init) == 0);
	CHECK(a.rate_limit == 5000);
	a.rate_limit = 30000000;
	a.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT) == EINVAL);
	/* A refused modify changes nothing, the limit included. */
	a.rate_limit = 7000;
	a.qkey = 1;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT | IBV_QP_QKEY) == EINVAL);
	memset(&a, 0, sizeof(a));
	CHECK(ibv_query_qp(qp, &a, IBV_QP_RATE_LIMIT, &init) == 0);
	CHECK(a.rate_limit == 5000);

	CHECK(ibv_destroy_qp(qp) == 0);
	CHECK(ibv_destroy_cq(cq) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	return check_failures ? 1 : 0;
}

/* 4 MiB from a to b in 64 KiB WRITEs, 8 in flight; returns seconds. */
static double transfer(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *src, struct ibv_mr *dst)
{
	unsigned posted = 0, done = 0, total = TOTAL / MSG;
	double t0 = now_s(), deadline = t0 + 30;

	while (done < total) {
		while (posted < total && posted - done < 8) {
			struct ibv_sge sge;
			struct ibv_send_wr wr, *bad;

			wr_send_1(&wr, &sge, IBV_WR_RDMA_WRITE, posted, (uintptr_t)src->addr + (posted % 16) * MSG, MSG, src->lkey);
			wr_remote(&wr, (uintptr_t)dst->addr + (posted % 16) * MSG, dst->rkey);
			wr.send_flags = IBV_SEND_SIGNALED;
			REQUIRE(ibv_post_send(qp, &wr, &bad) == 0);
			posted++;
		}
		struct ibv_wc wc[8];
		int n = ibv_poll_cq(cq, 8, wc);
		REQUIRE(n >= 0);
		for (int i = 0; i < n; i++)
			REQUIRE(wc[i].status == IBV_WC_SUCCESS);
		done += (unsigned)n;
		REQUIRE(now_s() < deadline);
	}
	return now_s() - t0;
}

static int run_pace(void)
{
	struct ibv_context *ctx = vt_open_device(NULL);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	static char src_buf[16 * MSG], dst_buf[16 * MSG];
	union ibv_gid gid;

	REQUIRE(pd && cq);
	for (size_t i = 0; i < sizeof(src_buf); i++)
		src_buf[i] = (char)(i * 7 + 3);
	struct ibv_mr *src = ibv_reg_mr(pd, src_buf, sizeof(src_buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dst = ibv_reg_mr(pd, dst_buf, sizeof(dst_buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(src && dst);
	struct ibv_qp *a = vt_create_rc_qp(pd, cq, cq, NULL);
	struct ibv_qp *b = vt_create_rc_qp(pd, cq, cq, NULL);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);
	const struct vt_rc_attr rc = { .access = IBV_ACCESS_REMOTE_WRITE, .psn = 7, .rd_atomic = 1, .timeout = 14 };
	vt_connect_rc(a, b->qp_num, &gid, &rc);
	vt_connect_rc(b, a->qp_num, &gid, &rc);

	struct ibv_qp_rate_limit_attr rl = { .rate_limit = LIMIT_KBPS };
	REQUIRE(ibv_modify_qp_rate_limit(a, &rl) == 0);
	double limited = transfer(a, cq, src, dst);
	CHECK(memcmp(src_buf, dst_buf, sizeof(src_buf)) == 0);
	memset(dst_buf, 0, sizeof(dst_buf));
	rl.rate_limit = 0;
	REQUIRE(ibv_modify_qp_rate_limit(a, &rl) == 0);
	double free_run = transfer(a, cq, src, dst);
	CHECK(memcmp(src_buf, dst_buf, sizeof(src_buf)) == 0);

	/* The payload alone at 200 Mb/s: 4 MiB · 8 / 2e8 = 168 ms; the pacer
	 * charges headers too, and may let a 50 µs burst go early. */
	double floor = (double)TOTAL * 8 / (LIMIT_KBPS * 1000.0) * 0.95;
	printf("rate_limit: 4 MiB at %u kb/s took %.3f s (no less than %.3f s); unlimited %.3f s\n", LIMIT_KBPS,
	       limited, floor, free_run);
	CHECK(limited >= floor);
	CHECK(limited <= floor * 4);    /* the limit paces, it does not stall */
	CHECK(free_run * 3 < limited);

	CHECK(ibv_destroy_qp(a) == 0);
	CHECK(ibv_destroy_qp(b) == 0);
	CHECK(ibv_dereg_mr(src) == 0);
	CHECK(ibv_dereg_mr(dst) == 0);
	CHECK(ibv_destroy_cq(cq) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	return check_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct vt_mode modes[] = { { "api", run_api }, { "pace", run_pace } };

	return vt_main(argc, argv, modes, sizeof(modes) / sizeof(modes[0]));
}
