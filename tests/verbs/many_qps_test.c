/*
 * many_qps_test.c — a device's QP limit as a program meets it: through
 * the system <infiniband/verbs.h> and our libibverbs.so.1, one process
 * creates as many RC QPs as ibv_query_device says it may (65 536), and:
 *
 *  - max_qp is 65 536, as the kernel's rxe offers;
 *  - every one of them is created, each with its own QP number;
 *  - one more fails with ENOMEM (rdma-core's errno for a full QP table)
 *    and leaves the others working;
 *  - with all of them there, QPs still connect and carry traffic: 64
 *    pairs (the first and the last created among them) RESET to RTS
 *    towards each other, a SEND on each arriving once with its bytes;
 *  - memory per idle RC QP is printed (resident set, before and after),
 *    and must stay under 16 KiB (a NIC's context is a few hundred bytes;
 *    ours holds its send and receive rings of one entry each here);
 *  - all of them are destroyed, and a new one can be made again.
 *
 * usage: many_qps_test
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_test_util.h"

#define PAIRS 64
#define MSG 64

static long resident_kib(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static struct ibv_qp *small_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &a);
}

static int run(void)
{
	struct ibv_context *ctx = vt_open_device(NULL);
	struct ibv_device_attr da;
	union ibv_gid gid;

	REQUIRE(ibv_query_device(ctx, &da) == 0);
	CHECK(da.max_qp == 65536);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 4 * PAIRS, NULL, NULL, 0);
	REQUIRE(pd && cq);

	unsigned max = (unsigned)da.max_qp;
	struct ibv_qp **qp = calloc(max, sizeof(*qp));
	REQUIRE(qp);
	long before = resident_kib();
	double t0 = seconds();
	unsigned made = 0;
	for (; made < max; made++) {
		qp[made] = small_rc_qp(pd, cq);
		if (!qp[made])
			break;
	}
	double t1 = seconds();
	CHECK(made == max);
	if (made < max)
		fprintf(stderr, "QP %u of %u: %s\n", made, max, strerror(errno));
	long after = resident_kib();
	double per_qp = made ? (double)(after - before) * 1024.0 / made : 0;
	printf("created %u RC QPs in %.2f s (%.2f us each); resident %ld -> %ld KiB: %.0f bytes per idle RC QP\n",
	       made, t1 - t0, made ? (t1 - t0) * 1e6 / made : 0, before, after, per_qp);
	CHECK(per_qp < 16 * 1024);

	/* Distinct QP numbers. */
	uint32_t *nums = malloc(made * sizeof(*nums));
	REQUIRE(nums);
	for (unsigned i = 0; i < made; i++)
		nums[i] = qp[i]->qp_num;
	qsort(nums, made, sizeof(*nums), cmp_u32);
	unsigned dup = 0;
	for (unsigned i = 0; i + 1 < made; i++)
		dup += nums[i] == nums[i + 1];
	CHECK(dup == 0);
	free(nums);

	/* One more: the table is full. */
	errno = 0;
	struct ibv_qp *extra = small_rc_qp(pd, cq);
	CHECK(extra == NULL && errno == ENOMEM);
	if (extra)
		ibv_destroy_qp(extra);

	/* Traffic among them: pairs (i, made - 1 - i). */
	static char buf[2 * PAIRS][MSG];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	struct vt_rc_attr ra = { .access = 0, .psn = 1, .rd_atomic = 1, .timeout = 14 };
	for (unsigned i = 0; i < PAIRS && made == max; i++) {
		struct ibv_qp *a = qp[i], *b = qp[made - 1 - i];
		vt_connect_rc(a, b->qp_num, &gid, &ra);
		vt_connect_rc(b, a->qp_num, &gid, &ra);
		vt_post_recv(b, mr, buf[PAIRS + i], MSG, 1000 + i);
		memset(buf[i], 'a' + (int)(i % 26), MSG);
		struct ibv_sge sge = { .addr = (uintptr_t)buf[i], .length = MSG, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		CHECK(ibv_post_send(a, &wr, &bad) == 0);
	}
	unsigned sends = 0, recvs = 0;
	double deadline = seconds() + 10;
	while (made == max && sends + recvs < 2 * PAIRS && seconds() < deadline) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(cq, 16, wc);
		for (int k = 0; k < n; k++) {
			CHECK(wc[k].status == IBV_WC_SUCCESS);
			if (wc[k].opcode == IBV_WC_RECV) {
				unsigned i = (unsigned)wc[k].wr_id - 1000;
				CHECK(wc[k].byte_len == MSG && !memcmp(buf[PAIRS + i], buf[i], MSG));
				recvs++;
			} else {
				sends++;
			}
		}
	}
	CHECK(sends == PAIRS && recvs == PAIRS);
	printf("%u SENDs over %u pairs among them: %u sent, %u received\n", PAIRS, PAIRS, sends, recvs);

	double t2 = seconds();
	for (unsigned i = 0; i < made; i++)
		CHECK(ibv_destroy_qp(qp[i]) == 0);
	printf("destroyed them in %.2f s\n", seconds() - t2);
	struct ibv_qp *again = small_rc_qp(pd, cq);
	CHECK(again != NULL);
	if (again)
		ibv_destroy_qp(again);
	free(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return check_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct vt_mode modes[] = { { "all", run } };

	return vt_main(argc, argv, modes, 1);
}
