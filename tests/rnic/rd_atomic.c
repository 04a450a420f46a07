/*
 * rd_atomic.c — outstanding RDMA READs and atomics at the device limit.
 *
 * softrnic advertises max_qp_rd_atom = max_qp_init_rd_atom = 128, as the
 * kernel's rxe does, because perftest (and any program that exchanges the
 * limits) gives each QP the peer's value: a QP is asked for 128 and must
 * take it.  These cases check that a QP accepts 128 in both directions and
 * refuses 129 (EINVAL), that 128 READ/atomic requests really leave before
 * the first response (and the 129th waits), and that all of them complete
 * with the right data under loss, where the responder's 128-entry replay
 * table answers duplicates of the oldest request.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define LIMIT 128
#define OPS 300
#define LEN 64

struct tap {
	unsigned requests_before_response;  /* 0 -> 1 requests seen before any 1 -> 0 response */
	bool response_seen;
};

static bool count_requests(void *arg, struct pair_packet *pkt)
{
	struct tap *t = arg;
	if (pkt->from == 1)
		t->response_seen = true;
	else if (!t->response_seen)
		t->requests_before_response++;
	return true;
}

struct run {
	struct ht h;
	uint8_t *src, *dst;
	uint64_t *counter, *fetched;
	struct rnic_mr *src_mr, *dst_mr, *ctr_mr, *fetch_mr;
};

static void test_limits(void)
{
	struct ht h;
	struct ht_opts o;
	struct ibv_qp_attr a;

	check_begin("limit: 128 accepted, 129 refused");
	ht_default_opts(&o, 1);
	o.max_rd_atomic = LIMIT;
	if (ht_setup(&h, &o) == 0) {
		CHECK_EQ(rnic_get_config(h.side[0].r)->max_rd_atomic, LIMIT, "device limit");
		memset(&a, 0, sizeof(a));
		a.max_rd_atomic = LIMIT + 1;
		CHECK_EQ(rnic_qp_modify(h.side[0].qp, &a, IBV_QP_MAX_QP_RD_ATOMIC, 0), EINVAL, "max_rd_atomic 129");
		struct ibv_qp_init_attr init;
		memset(&a, 0, sizeof(a));
		CHECK(rnic_qp_query(h.side[0].qp, &a, &init) == 0, "query");
		CHECK_EQ(a.max_rd_atomic, LIMIT, "query max_rd_atomic");
		CHECK_EQ(a.max_dest_rd_atomic, LIMIT, "query max_dest_rd_atomic");
	}
	ht_teardown(&h);
	check_end();
}

static void run_ops(uint64_t seed, double loss)
{
	struct ht h;
	struct ht_opts o;
	struct tap t = { 0, false };
	static uint8_t src[OPS * LEN], dst[OPS * LEN];
	static uint64_t counter, fetched[OPS];
	struct ibv_wc wc;

	check_begin("seed %llu loss %.2f: %d READ/FAA with max_rd_atomic %d",
		      (unsigned long long)seed, loss, OPS, LIMIT);
	ht_default_opts(&o, seed);
	o.max_rd_atomic = LIMIT;
	o.sq_depth = OPS;
	if (ht_setup(&h, &o) != 0)
		goto out;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + seed);
	memset(dst, 0, sizeof(dst));
	memset(fetched, 0xff, sizeof(fetched));
	counter = 1000;
	struct rnic_mr *src_mr = ht_reg(&h.side[1], src, sizeof(src), HT_ALL_ACCESS);
	struct rnic_mr *ctr_mr = ht_reg(&h.side[1], &counter, sizeof(counter), HT_ALL_ACCESS);
	struct rnic_mr *dst_mr = ht_reg(&h.side[0], dst, sizeof(dst), HT_ALL_ACCESS);
	struct rnic_mr *fetch_mr = ht_reg(&h.side[0], fetched, sizeof(fetched), HT_ALL_ACCESS);
	REQUIRE_RET(src_mr && ctr_mr && dst_mr && fetch_mr, , "MRs");

	if (loss > 0) {
		struct pair_faults f = { .loss = loss, .delay_ns = 1000 };
		pair_set_all_faults(h.pair, &f);
	} else {
		pair_set_tap(h.pair, count_requests, &t);
	}
	/* Every third op a FETCH_AND_ADD of 1, the rest 64-byte READs. */
	for (unsigned i = 0; i < OPS; i++) {
		struct ibv_sge sge;
		struct ibv_send_wr wr, *bad;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (i % 3 == 2) {
			sge = (struct ibv_sge){ (uintptr_t)&fetched[i], 8, rnic_mr_lkey(fetch_mr) };
			wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr.wr.atomic.remote_addr = (uintptr_t)&counter;
			wr.wr.atomic.rkey = rnic_mr_rkey(ctr_mr);
			wr.wr.atomic.compare_add = 1;
		} else {
			sge = (struct ibv_sge){ (uintptr_t)&dst[i * LEN], LEN, rnic_mr_lkey(dst_mr) };
			wr.opcode = IBV_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = (uintptr_t)&src[i * LEN];
			wr.wr.rdma.rkey = rnic_mr_rkey(src_mr);
		}
		REQUIRE_RET(rnic_post_send(h.side[0].qp, &wr, &bad, pair_now(h.pair)) == 0, , "post %u", i);
	}
	unsigned done = 0, fadds = 0;
	while (done < OPS) {
		if (!ht_wait_wc(&h, h.side[0].scq, &wc, 20000 * HT_MS)) {
			FAIL("only %u of %d completions", done, OPS);
			break;
		}
		CHECK(wc.status == IBV_WC_SUCCESS, "wr %llu status %s", (unsigned long long)wc.wr_id,
		      ht_wc_status_str(wc.status));
		CHECK_EQ(wc.wr_id, done, "completion order");
		done++;
	}
	for (unsigned i = 0; i < OPS; i++) {
		if (i % 3 == 2) {
			/* Each FAA applied once, in order: the k-th fetched 1000 + k. */
			CHECK_EQ(fetched[i], 1000 + fadds, "fetched value");
			fadds++;
		} else {
			CHECK(memcmp(&dst[i * LEN], &src[i * LEN], LEN) == 0, "READ %u data", i);
		}
	}
	CHECK_EQ(counter, 1000 + fadds, "counter applied once per FAA");
	if (loss == 0)
		CHECK_EQ(t.requests_before_response, LIMIT, "requests in flight before the first response");
	else
		CHECK(pair_stats(h.pair)->lost > 0, "%s", "loss happened");
	CHECK(rnic_mr_dereg(src_mr) == 0 && rnic_mr_dereg(ctr_mr) == 0 && rnic_mr_dereg(dst_mr) == 0 &&
	      rnic_mr_dereg(fetch_mr) == 0, "dereg");
out:
	ht_teardown(&h);
	check_end();
}

int main(int argc, char **argv)
{
	static const uint64_t defaults[] = { 1, 2, 3, 4, 5, 6 };
	uint64_t seeds[64];
	size_t n = ht_seeds_from_args(argc, argv, seeds, 64, defaults, 6);

	test_limits();
	run_ops(1, 0);
	for (size_t i = 0; i < n; i++) {
		check_seed(seeds[i]);
		run_ops(seeds[i], 0.05);
	}
	check_seeded = false;
	if (!check_failures)
		printf("rd_atomic: ok\n");
	return check_exit("rd_atomic");
}
