/*
 * flush.c — RDMA FLUSH (IBTA 1.5) over the seeded pair: the requester's
 * packet, the responder's rules and answer, and the completion.
 *
 * What must hold (the kernel's rxe is the reference for what the IBTA
 * leaves open):
 *   - a FLUSH leaves as one RC_FLUSH packet (opcode 0x1c) with a FETH that
 *     carries the placement type and selectivity, and a RETH with the
 *     range, and no AckReq; it is answered by a zero-length READ response
 *     and completes with opcode IBV_WC_FLUSH (8);
 *   - persistence asks the port to make the range persistent (the pair's
 *     persist log): the range of the RETH, or the whole region for the
 *     region selectivity, whatever the RETH says; global visibility alone
 *     asks nothing of the port;
 *   - the rules: the QP needs IBV_ACCESS_FLUSH_GLOBAL / _PERSISTENT for
 *     each placement type asked (else an invalid request NAK), the region
 *     needs them too and the range must lie in it (else a remote access
 *     NAK); a zero-length range needs no key;
 *   - a FLUSH counts against max_rd_atomic and is fenced like a READ;
 *   - lost answers: a dropped response makes the requester ask again and
 *     the responder answer again, without flushing twice;
 *   - bad work requests (UC QP, no placement type, unknown bits, a
 *     selectivity that is not range or region, SGEs) fail the post with
 *     EINVAL; a failing persist NAKs with a remote operation error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "wire/wire.h"

#define BUF 8192

static uint8_t target[BUF];

/* Regions a case registered, deregistered before its teardown (a PD with
 * regions cannot be freed). */
static struct rnic_mr *regs[8];
static int nregs;

static struct rnic_mr *reg(struct ht_side *side, void *buf, size_t len, int access)
{
	struct rnic_mr *mr = ht_reg(side, buf, len, access);

	if (mr && nregs < 8)
		regs[nregs++] = mr;
	return mr;
}

static void teardown(struct ht *h)
{
	while (nregs > 0)
		CHECK(rnic_mr_dereg(regs[--nregs]) == 0, "dereg");
	ht_teardown(h);
}

struct flush_tap {
	unsigned flush_packets, responses, zero_len_responses;
	unsigned drop_responses;        /* drop this many responses first */
	struct wire_ib last_flush;
	bool ackreq_seen;
};

static bool tap(void *arg, struct pair_packet *pkt)
{
	struct flush_tap *t = arg;
	struct wire_ib ib;

	if (wire_decode_ib(pkt->ib, pkt->ib_len, &ib) != WIRE_OK)
		return true;
	if (ib.bth.opcode == (WIRE_TR_RC | WIRE_OP_FLUSH)) {
		t->flush_packets++;
		t->last_flush = ib;
		t->ackreq_seen |= ib.bth.ackreq;
	}
	if (ib.bth.opcode == (WIRE_TR_RC | WIRE_OP_READ_RESP_ONLY)) {
		t->responses++;
		if (ib.payload_len == 0)
			t->zero_len_responses++;
		if (t->drop_responses) {
			t->drop_responses--;
			return false;
		}
	}
	return true;
}

static struct ibv_send_wr flush_wr(uint64_t id, struct rnic_mr *mr, uint64_t va, uint64_t len, unsigned placement,
				   unsigned level)
{
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = RNIC_WR_FLUSH;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = va;
	wr.wr.atomic.rkey = mr ? rnic_mr_rkey(mr) : 0x1234;
	wr.wr.atomic.compare_add = len;
	wr.wr.atomic.swap = placement | (uint64_t)level << 8;
	return wr;
}

static int post(struct ht *h, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	return rnic_post_send(h->side[0].qp, wr, &bad, pair_now(h->pair));
}

static bool setup(struct ht *h, uint64_t seed, int qp_access)
{
	struct ht_opts o;

	nregs = 0;      /* a case that stopped early left its regions behind */
	ht_default_opts(&o, seed);
	o.access = qp_access;
	return ht_setup(h, &o) == 0;
}

#define FLUSH_ACCESS (HT_ALL_ACCESS | RNIC_ACCESS_FLUSH_GLOBAL | RNIC_ACCESS_FLUSH_PERSISTENT)

/* Persistence of a range and of a region, global visibility, the packet. */
static void test_success(uint64_t seed)
{
	struct ht h;
	struct flush_tap t;
	struct ibv_wc wc;

	check_begin("seed %llu: FLUSH of a range, of a region, global only", (unsigned long long)seed);
	memset(&t, 0, sizeof(t));
	if (!setup(&h, seed, FLUSH_ACCESS))
		goto out;
	struct rnic_mr *mr = reg(&h.side[1], target, BUF, FLUSH_ACCESS);
	REQUIRE_RET(mr, , "target MR");
	struct pair_persisted *log = pair_persist_log(h.pair, 1);
	pair_set_tap(h.pair, tap, &t);

	/* A range, persistence. */
	struct ibv_send_wr wr = flush_wr(1, mr, (uintptr_t)target + 100, 1000, RNIC_FLUSH_PERSISTENT, RNIC_FLUSH_RANGE);
	CHECK_EQ(post(&h, &wr), 0, "post FLUSH range");
	REQUIRE_RET(ht_wait_wc(&h, h.side[0].scq, &wc, 100 * HT_MS), , "FLUSH completes");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS, "range status");
	CHECK_EQ(wc.opcode, RNIC_WC_FLUSH, "completion opcode IBV_WC_FLUSH");
	CHECK_EQ(wc.wr_id, 1, "wr_id");
	CHECK_EQ(t.flush_packets, 1, "one FLUSH packet");
	CHECK_EQ(t.last_flush.feth.placement, WIRE_FLUSH_PERSISTENT, "FETH placement");
	CHECK_EQ(t.last_flush.feth.selectivity, WIRE_FLUSH_RANGE, "FETH selectivity");
	CHECK_EQ(t.last_flush.reth.va, (uintptr_t)target + 100, "RETH va");
	CHECK_EQ(t.last_flush.reth.dma_len, 1000, "RETH length");
	CHECK_EQ(t.last_flush.reth.rkey, rnic_mr_rkey(mr), "RETH rkey");
	CHECK_EQ(t.last_flush.payload_len, 0, "no payload");
	CHECK(!t.ackreq_seen, "a FLUSH asks for no ACK: its response answers it");
	CHECK_EQ(t.zero_len_responses, 1, "answered by one zero-length READ response");
	CHECK_EQ(log->calls, 1, "persist asked once");
	CHECK(log->last_addr == target + 100 && log->last_len == 1000, "persisted the RETH's range");
	CHECK_EQ(rnic_counters(h.side[1].r)->flushes, 1, "responder counts the flush");

	/* The whole region: the RETH's va and length are not read. */
	wr = flush_wr(2, mr, 0xdead0000ull, 7, RNIC_FLUSH_PERSISTENT | RNIC_FLUSH_GLOBAL, RNIC_FLUSH_MR);
	CHECK_EQ(post(&h, &wr), 0, "post FLUSH region");
	REQUIRE_RET(ht_wait_wc(&h, h.side[0].scq, &wc, 100 * HT_MS), , "region FLUSH completes");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS, "region status");
	CHECK_EQ(log->calls, 2, "persist asked again");
	CHECK(log->last_addr == target && log->last_len == BUF, "persisted the whole region");

	/* Global visibility only: nothing for the port to persist. */
	wr = flush_wr(3, mr, (uintptr_t)target, 64, RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE);
	CHECK_EQ(post(&h, &wr), 0, "post FLUSH global");
	REQUIRE_RET(ht_wait_wc(&h, h.side[0].scq, &wc, 100 * HT_MS), , "global FLUSH completes");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS, "global status");
	CHECK_EQ(log->calls, 2, "global visibility persists nothing");

	/* A zero-length range needs no key (like a zero-length READ). */
	wr = flush_wr(4, NULL, 0, 0, RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE);
	CHECK_EQ(post(&h, &wr), 0, "post zero-length FLUSH");
	REQUIRE_RET(ht_wait_wc(&h, h.side[0].scq, &wc, 100 * HT_MS), , "zero-length FLUSH completes");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS, "zero-length status");
	CHECK_EQ(ht_drops(rnic_counters(h.side[0].r)) + ht_drops(rnic_counters(h.side[1].r)), 0, "nothing dropped");
out:
	teardown(&h);
	check_end();
}

/* One case of the responder's rules: the requester's completion status. */
static void rule_case(const char *what, int qp_access, int mr_access, uint64_t va_off, uint64_t len,
		      unsigned placement, unsigned level, enum ibv_wc_status want)
{
	struct ht h;
	struct ibv_wc wc;

	check_begin("rule: %s", what);
	if (!setup(&h, 7, qp_access))
		goto out;
	struct rnic_mr *mr = reg(&h.side[1], target, BUF, mr_access);
	REQUIRE_RET(mr, , "target MR");
	struct ibv_send_wr wr = flush_wr(9, mr, (uintptr_t)target + va_off, len, placement, level);
	CHECK_EQ(post(&h, &wr), 0, "post");
	REQUIRE_RET(ht_wait_wc(&h, h.side[0].scq, &wc, 200 * HT_MS), , "completion");
	if (wc.status != want)
		FAIL("status %s, expected %s", ht_wc_status_str(wc.status), ht_wc_status_str(want));
	CHECK_EQ(pair_persist_log(h.pair, 1)->calls, 0, "nothing persisted on a refused FLUSH");
out:
	teardown(&h);
	check_end();
}

static void test_rules(void)
{
	int mr_both = IBV_ACCESS_LOCAL_WRITE | RNIC_ACCESS_FLUSH_GLOBAL | RNIC_ACCESS_FLUSH_PERSISTENT;

	rule_case("QP without flush rights: invalid request", HT_ALL_ACCESS, mr_both, 0, 64,
		  RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE, IBV_WC_REM_INV_REQ_ERR);
	rule_case("QP with global only, persistence asked: invalid request",
		  HT_ALL_ACCESS | RNIC_ACCESS_FLUSH_GLOBAL, mr_both, 0, 64, RNIC_FLUSH_PERSISTENT,
		  RNIC_FLUSH_RANGE, IBV_WC_REM_INV_REQ_ERR);
	rule_case("region without flush rights: remote access", FLUSH_ACCESS, HT_ALL_ACCESS, 0, 64,
		  RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE, IBV_WC_REM_ACCESS_ERR);
	rule_case("region with persistent only, global asked: remote access", FLUSH_ACCESS,
		  IBV_ACCESS_LOCAL_WRITE | RNIC_ACCESS_FLUSH_PERSISTENT, 0, 64, RNIC_FLUSH_GLOBAL,
		  RNIC_FLUSH_RANGE, IBV_WC_REM_ACCESS_ERR);
	rule_case("range past the region's end: remote access", FLUSH_ACCESS, mr_both, BUF - 8, 64,
		  RNIC_FLUSH_PERSISTENT, RNIC_FLUSH_RANGE, IBV_WC_REM_ACCESS_ERR);
	rule_case("remote read/write rights are not flush rights", FLUSH_ACCESS, HT_ALL_ACCESS, 0, 0,
		  RNIC_FLUSH_GLOBAL, RNIC_FLUSH_MR, IBV_WC_REM_ACCESS_ERR);
	rule_case("region selectivity ignores a wild RETH", FLUSH_ACCESS, mr_both, 1ull << 40, 1u << 31,
		  RNIC_FLUSH_GLOBAL, RNIC_FLUSH_MR, IBV_WC_SUCCESS);
}

/* Bad work requests fail the post and queue nothing. */
static void test_post_errors(void)
{
	struct ht h;
	struct ibv_sge sge = { (uintptr_t)target, 8, 0 };

	check_begin("post: bad FLUSH work requests get EINVAL");
	if (!setup(&h, 3, FLUSH_ACCESS))
		goto out;
	struct rnic_mr *mr = reg(&h.side[1], target, BUF, FLUSH_ACCESS);
	REQUIRE_RET(mr, , "MR");
	uint32_t free_before = rnic_qp_sq_free(h.side[0].qp);
	struct ibv_send_wr wr = flush_wr(1, mr, (uintptr_t)target, 8, 0, RNIC_FLUSH_RANGE);
	CHECK_EQ(post(&h, &wr), EINVAL, "no placement type");
	wr = flush_wr(1, mr, (uintptr_t)target, 8, 4, RNIC_FLUSH_RANGE);
	CHECK_EQ(post(&h, &wr), EINVAL, "unknown placement bit");
	wr = flush_wr(1, mr, (uintptr_t)target, 8, RNIC_FLUSH_GLOBAL, 2);
	CHECK_EQ(post(&h, &wr), EINVAL, "selectivity 2");
	wr = flush_wr(1, mr, (uintptr_t)target, 1ull << 32, RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE);
	CHECK_EQ(post(&h, &wr), EINVAL, "length past 32 bits");
	wr = flush_wr(1, mr, (uintptr_t)target, 8, RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	CHECK_EQ(post(&h, &wr), EINVAL, "with an SGE");
	CHECK_EQ(rnic_qp_sq_free(h.side[0].qp), free_before, "nothing queued");
	CHECK_EQ(rnic_counters(h.side[0].r)->tx_packets, 0, "nothing sent");
out:
	teardown(&h);
	check_end();
}

/* A lost response: asked again, answered again, flushed once. */
static void test_lost_response(uint64_t seed)
{
	struct ht h;
	struct flush_tap t;
	struct ibv_wc wc;

	check_begin("seed %llu: the FLUSH response is lost twice", (unsigned long long)seed);
	memset(&t, 0, sizeof(t));
	t.drop_responses = 2;
	if (!setup(&h, seed, FLUSH_ACCESS))
		goto out;
	struct rnic_mr *mr = reg(&h.side[1], target, BUF, FLUSH_ACCESS);
	REQUIRE_RET(mr, , "MR");
	pair_set_tap(h.pair, tap, &t);
	struct ibv_send_wr wr = flush_wr(5, mr, (uintptr_t)target, 4096, RNIC_FLUSH_PERSISTENT, RNIC_FLUSH_RANGE);
	CHECK_EQ(post(&h, &wr), 0, "post");
	REQUIRE_RET(ht_wait_wc(&h, h.side[0].scq, &wc, 2000 * HT_MS), , "FLUSH completes after two losses");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS, "status");
	CHECK_EQ(wc.opcode, RNIC_WC_FLUSH, "opcode");
	CHECK_EQ(t.flush_packets, 3, "sent three times");
	CHECK_EQ(t.responses, 3, "answered three times");
	CHECK_EQ(pair_persist_log(h.pair, 1)->calls, 1, "flushed once: duplicates are answered, not run");
	CHECK_EQ(rnic_counters(h.side[1].r)->duplicate_requests, 2, "two duplicates seen");
out:
	teardown(&h);
	check_end();
}

/* max_rd_atomic 1: a FLUSH waits for an outstanding READ, and a READ for an
 * outstanding FLUSH. */
static void test_rd_atomic_limit(void)
{
	struct ht h;
	struct ht_opts o;
	struct flush_tap t;
	struct ibv_wc wc[3];
	static uint8_t local[64];

	check_begin("max_rd_atomic 1: FLUSH and READ take turns");
	memset(&t, 0, sizeof(t));
	nregs = 0;
	ht_default_opts(&o, 11);
	o.access = FLUSH_ACCESS;
	o.max_rd_atomic = 1;
	if (ht_setup(&h, &o) != 0)
		goto out;
	struct rnic_mr *mr = reg(&h.side[1], target, BUF, FLUSH_ACCESS);
	struct rnic_mr *lmr = reg(&h.side[0], local, sizeof(local), HT_ALL_ACCESS);
	REQUIRE_RET(mr && lmr, , "MRs");
	struct ibv_sge sge = { (uintptr_t)local, sizeof(local), rnic_mr_lkey(lmr) };
	struct ibv_send_wr rd;
	memset(&rd, 0, sizeof(rd));
	rd.wr_id = 20;
	rd.opcode = IBV_WR_RDMA_READ;
	rd.send_flags = IBV_SEND_SIGNALED;
	rd.sg_list = &sge;
	rd.num_sge = 1;
	rd.wr.rdma.remote_addr = (uintptr_t)target;
	rd.wr.rdma.rkey = rnic_mr_rkey(mr);
	struct ibv_send_wr fl = flush_wr(21, mr, (uintptr_t)target, 64, RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE);
	struct ibv_send_wr rd2 = rd;
	rd2.wr_id = 22;
	rd.next = &fl;
	fl.next = &rd2;
	pair_set_tap(h.pair, tap, &t);
	CHECK_EQ(post(&h, &rd), 0, "post READ, FLUSH, READ");
	CHECK_EQ(t.flush_packets, 0, "the FLUSH waits for the READ");
	for (int i = 0; i < 3; i++) {
		REQUIRE_RET(ht_wait_wc(&h, h.side[0].scq, &wc[i], 100 * HT_MS), , "completion %d", i);
		CHECK_EQ(wc[i].status, IBV_WC_SUCCESS, "status");
		CHECK_EQ(wc[i].wr_id, 20u + (unsigned)i, "in order");
	}
	CHECK_EQ(wc[1].opcode, RNIC_WC_FLUSH, "the middle one is the FLUSH");
out:
	teardown(&h);
	check_end();
}

/* The port fails to persist: a remote operation error for the requester,
 * the responder's QP in error (as for any responder fault). */
static void test_persist_fails(void)
{
	struct ht h;
	struct ibv_wc wc;

	check_begin("persist fails: remote operation error");
	if (!setup(&h, 5, FLUSH_ACCESS))
		goto out;
	struct rnic_mr *mr = reg(&h.side[1], target, BUF, FLUSH_ACCESS);
	REQUIRE_RET(mr, , "MR");
	pair_persist_log(h.pair, 1)->fail_with = EIO;
	struct ibv_send_wr wr = flush_wr(6, mr, (uintptr_t)target, 64, RNIC_FLUSH_PERSISTENT, RNIC_FLUSH_RANGE);
	CHECK_EQ(post(&h, &wr), 0, "post");
	REQUIRE_RET(ht_wait_wc(&h, h.side[0].scq, &wc, 200 * HT_MS), , "completion");
	if (wc.status != IBV_WC_REM_OP_ERR)
		FAIL("status %s, expected REM_OP_ERR", ht_wc_status_str(wc.status));
	CHECK_EQ(rnic_counters(h.side[1].r)->flush_failed, 1, "counted");
out:
	teardown(&h);
	check_end();
}

/* UC has no FLUSH (RC only, IBTA 1.5). */
static void test_uc_refused(void)
{
	struct ht h;
	struct ibv_qp_init_attr init;

	check_begin("UC QP: FLUSH refused at post");
	if (!setup(&h, 9, FLUSH_ACCESS))
		goto out;
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_UC;
	init.cap.max_send_wr = 4;
	init.cap.max_recv_wr = 4;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	struct rnic_qp *uc = rnic_qp_create(h.side[0].pd, h.side[0].scq, h.side[0].rcq, &init, NULL);
	REQUIRE_RET(uc, , "UC QP");
	struct rnic_mr *mr = reg(&h.side[1], target, BUF, FLUSH_ACCESS);
	struct ibv_send_wr wr = flush_wr(1, mr, (uintptr_t)target, 8, RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE), *bad;
	/* Only the attributes UC takes (IBTA 11.2.5 / rdma-core's table). */
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK(rnic_qp_modify(uc, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0) == 0,
	      "UC INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x99;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	memcpy(a.ah_attr.grh.dgid.raw, pair_gid(h.pair, 1)->raw, 16);
	CHECK(rnic_qp_modify(uc, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
			     0) == 0, "UC RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	CHECK(rnic_qp_modify(uc, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, 0) == 0, "UC RTS");
	CHECK_EQ(rnic_post_send(uc, &wr, &bad, 0), EINVAL, "UC FLUSH");
	CHECK(rnic_qp_destroy(uc) == 0, "destroy UC");
out:
	teardown(&h);
	check_end();
}

int main(int argc, char **argv)
{
	static const uint64_t defaults[] = { 1, 2, 3 };
	uint64_t seeds[64];
	size_t n = ht_seeds_from_args(argc, argv, seeds, 64, defaults, 3);

	for (size_t i = 0; i < n; i++) {
		check_seed(seeds[i]);
		test_success(seeds[i]);
		test_lost_response(seeds[i]);
	}
	check_seeded = false;
	test_rules();
	test_post_errors();
	test_rd_atomic_limit();
	test_persist_fails();
	test_uc_refused();
	if (check_failures)
		return check_exit("flush");
	printf("flush: FLUSH packet, rules, answers, losses and limits: ok\n");
	return 0;
}
