/*
 * flush_test.c — RDMA FLUSH through the verbs a program uses: the
 * capability bits of ibv_query_device_ex, IBV_QP_EX_WITH_FLUSH and
 * ibv_wr_flush, over two RC QPs of one context connected through
 * softrnic's own GID (real packets through the runtime).
 *
 * The system header may be older than the FLUSH API (Debian 12 ships
 * rdma-core 44; ibv_wr_flush came in 46), so the few names it lacks are
 * spelled out below with rdma-core's values, and ibv_wr_flush is called
 * through the struct layout newer headers have — as a program built
 * against them would.
 *
 * The target region is a file mapped MAP_SHARED: a persistent FLUSH must
 * reach it (softrnic msyncs the range), and the bytes an RDMA WRITE put
 * there are then read back through a separate file descriptor.
 *
 * usage: flush_test
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_test_util.h"

/* rdma-core 46's names (libibverbs/verbs.h, kernel-headers/rdma/ib_user_verbs.h). */
#define T_DEVICE_FLUSH_GLOBAL (1ull << 38)
#define T_DEVICE_FLUSH_PERSISTENT (1ull << 39)
#define T_DEVICE_ATOMIC_WRITE (1ull << 40)
#define T_QP_EX_WITH_FLUSH (1ull << 11)
#define T_ACCESS_FLUSH_GLOBAL (1 << 8)
#define T_ACCESS_FLUSH_PERSISTENT (1 << 9)
#define T_WR_FLUSH 14
#define T_WC_FLUSH 8
#define T_FLUSH_GLOBAL 1
#define T_FLUSH_PERSISTENT 2
#define T_FLUSH_RANGE 0
#define T_FLUSH_MR 1

/* struct ibv_qp_ex as rdma-core 46 has it: wr_flush after wr_atomic_write. */
struct qp_ex_46 {
	struct ibv_qp_ex base;
	void (*wr_flush)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len, uint8_t type,
			 uint8_t level);
};

static void wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, size_t len, uint8_t type, uint8_t level)
{
	((struct qp_ex_46 *)qpx)->wr_flush(qpx, rkey, addr, len, type, level);
}

#define LEN 65536

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;

static struct side make_side(uint64_t ops)
{
	struct ibv_qp_init_attr_ex a;
	struct side s;

	s.cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	REQUIRE(s.cq);
	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = pd;
	a.send_cq = s.cq;
	a.recv_cq = s.cq;
	a.qp_type = IBV_QPT_RC;
	a.send_ops_flags = ops;
	a.cap.max_send_wr = 32;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	s.qp = ibv_create_qp_ex(ctx, &a);
	REQUIRE(s.qp);
	s.qpx = ibv_qp_to_qp_ex(s.qp);
	REQUIRE(s.qpx);
	return s;
}

static void connect_pair(struct side *a, struct side *b, unsigned b_access)
{
	struct vt_rc_attr attr = { .access = IBV_ACCESS_REMOTE_WRITE, .psn = 300, .rd_atomic = 4, .timeout = 14 };

	vt_connect_rc(a->qp, b->qp->qp_num, &gid, &attr);
	attr.access = b_access;
	vt_connect_rc(b->qp, a->qp->qp_num, &gid, &attr);
}

static int reap(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	struct timespec t0, t;
	int got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		REQUIRE(r >= 0);
		got += r;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			break;
	}
	return got;
}

static void destroy_side(struct side *s)
{
	CHECK(ibv_destroy_qp(s->qp) == 0);
	CHECK(ibv_destroy_cq(s->cq) == 0);
}

static int run(void)
{
	struct ibv_device_attr_ex dx;
	char path[] = "/tmp/softrnic-flush-XXXXXX";
	uint8_t *src, *file_map, *back;
	struct ibv_wc wc[4];
	int fd;

	ctx = vt_open_device(NULL);
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);

	/* 1. The device says it has FLUSH of both kinds and ATOMIC WRITE. */
	memset(&dx, 0, sizeof(dx));
	REQUIRE(ibv_query_device_ex(ctx, NULL, &dx) == 0);
	CHECK(dx.device_cap_flags_ex & T_DEVICE_FLUSH_GLOBAL);
	CHECK(dx.device_cap_flags_ex & T_DEVICE_FLUSH_PERSISTENT);
	CHECK(dx.device_cap_flags_ex & T_DEVICE_ATOMIC_WRITE);

	/* The target: a file mapped shared, registered with both flush rights. */
	fd = mkstemp(path);
	REQUIRE(fd >= 0);
	unlink(path);
	REQUIRE(ftruncate(fd, LEN) == 0);
	file_map = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(file_map != MAP_FAILED);
	src = malloc(LEN);
	back = malloc(LEN);
	REQUIRE(src && back);
	for (int i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 13 + 7);
	struct ibv_mr *src_mr = ibv_reg_mr(pd, src, LEN, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dst_mr = ibv_reg_mr(pd, file_map, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					   T_ACCESS_FLUSH_GLOBAL | T_ACCESS_FLUSH_PERSISTENT);
	struct ibv_mr *plain_mr = ibv_reg_mr(pd, back, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(src_mr && dst_mr && plain_mr);

	struct side a = make_side(IBV_QP_EX_WITH_RDMA_WRITE | T_QP_EX_WITH_FLUSH);
	struct side b = make_side(IBV_QP_EX_WITH_RDMA_WRITE);
	connect_pair(&a, &b, IBV_ACCESS_REMOTE_WRITE | T_ACCESS_FLUSH_GLOBAL | T_ACCESS_FLUSH_PERSISTENT);

	/* 2. WRITE 64 KiB into the file, then FLUSH it to persistence, in
	 * one batch; the FLUSH completes after the WRITE, as IBV_WC_FLUSH. */
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 1;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(a.qpx, dst_mr->rkey, (uintptr_t)file_map);
	ibv_wr_set_sge(a.qpx, src_mr->lkey, (uintptr_t)src, LEN);
	a.qpx->wr_id = 2;
	wr_flush(a.qpx, dst_mr->rkey, (uintptr_t)file_map, LEN, T_FLUSH_PERSISTENT, T_FLUSH_RANGE);
	CHECK(ibv_wr_complete(a.qpx) == 0);
	REQUIRE(reap(a.cq, wc, 2) == 2);
	CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 1 && wc[0].opcode == IBV_WC_RDMA_WRITE);
	CHECK(wc[1].status == IBV_WC_SUCCESS && wc[1].wr_id == 2 && (int)wc[1].opcode == T_WC_FLUSH);
	CHECK(pread(fd, back, LEN, 0) == LEN && memcmp(back, src, LEN) == 0);

	/* 3. The whole region, global and persistent; the address is not read. */
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 3;
	wr_flush(a.qpx, dst_mr->rkey, 0x10, 0, T_FLUSH_GLOBAL | T_FLUSH_PERSISTENT, T_FLUSH_MR);
	CHECK(ibv_wr_complete(a.qpx) == 0);
	REQUIRE(reap(a.cq, wc, 1) == 1);
	CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 3 && (int)wc[0].opcode == T_WC_FLUSH);

	/* 4. Bad arguments fail ibv_wr_complete with EINVAL and post nothing;
	 * a QP created without IBV_QP_EX_WITH_FLUSH refuses it too. */
	ibv_wr_start(a.qpx);
	wr_flush(a.qpx, dst_mr->rkey, (uintptr_t)file_map, 8, 0, T_FLUSH_RANGE);
	CHECK(ibv_wr_complete(a.qpx) == EINVAL);
	ibv_wr_start(a.qpx);
	wr_flush(a.qpx, dst_mr->rkey, (uintptr_t)file_map, 8, T_FLUSH_GLOBAL, 5);
	CHECK(ibv_wr_complete(a.qpx) == EINVAL);
	ibv_wr_start(b.qpx);
	wr_flush(b.qpx, dst_mr->rkey, (uintptr_t)file_map, 8, T_FLUSH_GLOBAL, T_FLUSH_RANGE);
	CHECK(ibv_wr_complete(b.qpx) == EINVAL);
	CHECK(ibv_poll_cq(a.cq, 4, wc) == 0 && ibv_poll_cq(b.cq, 4, wc) == 0);

	/* 5. ibv_post_send has no FLUSH fields: the opcode is refused there,
	 * after the WR before it was posted. */
	{
		struct ibv_sge sge = { (uintptr_t)src, 64, src_mr->lkey };
		struct ibv_send_wr w1, w2, *bad = NULL;

		memset(&w1, 0, sizeof(w1));
		memset(&w2, 0, sizeof(w2));
		w1.wr_id = 10;
		w1.opcode = IBV_WR_RDMA_WRITE;
		w1.send_flags = IBV_SEND_SIGNALED;
		w1.sg_list = &sge;
		w1.num_sge = 1;
		w1.wr.rdma.remote_addr = (uintptr_t)file_map;
		w1.wr.rdma.rkey = dst_mr->rkey;
		w1.next = &w2;
		w2.wr_id = 11;
		w2.opcode = (enum ibv_wr_opcode)T_WR_FLUSH;
		CHECK(ibv_post_send(a.qp, &w1, &bad) == EINVAL && bad == &w2);
		CHECK(reap(a.cq, wc, 1) == 1 && wc[0].wr_id == 10 && wc[0].status == IBV_WC_SUCCESS);
	}

	/* 6. A region without flush rights: remote access error. */
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 4;
	wr_flush(a.qpx, plain_mr->rkey, (uintptr_t)back, 64, T_FLUSH_GLOBAL, T_FLUSH_RANGE);
	CHECK(ibv_wr_complete(a.qpx) == 0);
	REQUIRE(reap(a.cq, wc, 1) == 1);
	CHECK(wc[0].wr_id == 4 && wc[0].status == IBV_WC_REM_ACCESS_ERR);

	destroy_side(&a);
	destroy_side(&b);
	CHECK(ibv_dereg_mr(src_mr) == 0 && ibv_dereg_mr(dst_mr) == 0 && ibv_dereg_mr(plain_mr) == 0);
	CHECK(munmap(file_map, LEN) == 0);
	close(fd);
	free(src);
	free(back);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	return check_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct vt_mode modes[] = { { "flush", run } };

	return vt_main(argc, argv, modes, 1);
}
