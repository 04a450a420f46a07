/*
 * protection.c — memory protection and error semantics of the RC transport.
 *
 * Node 0 (requester) aims RDMA WRITE / READ / atomics at an MR on node 1
 * with one thing wrong in each case: the R_Key, the bounds, the MR's or the
 * QP's access rights, atomic alignment, a key that went stale when its MR
 * was deregistered and the slot reused.  Each must be refused by the
 * responder with the NAK the IBTA prescribes (9.7.5.2.4 / table 43), which
 * the requester reports as the completion status of the WR:
 *   NAK Remote Access Error  -> IBV_WC_REM_ACCESS_ERR  (R_Key, bounds, rights)
 *   NAK Invalid Request      -> IBV_WC_REM_INV_REQ_ERR (misaligned atomic,
 *                               SEND longer than the receive buffer)
 * and local errors are caught by the requester: IBV_WC_LOC_PROT_ERR.
 *
 * In every case the target buffer — guard bytes before and after the MR,
 * and the MR itself — must be unchanged; the requester QP goes to the Error
 * state and the WRs behind the failed one, and any posted afterwards,
 * complete with IBV_WC_WR_FLUSH_ERR (IBTA 10.3.1, 11.4.1.1), signaled or
 * not.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define PAGE 4096u
#define GUARD PAGE
#define TGT_IOVA 0x40000000ull

struct env {
	struct ht h;
	uint8_t *tb;            /* node 1: GUARD | MR (PAGE) | GUARD */
	uint8_t *tb_copy;
	struct rnic_mr *tmr;
	uint8_t *lb;            /* node 0: local buffer */
	struct rnic_mr *lmr;
	uint8_t *rb;            /* node 1: receive buffer */
	struct rnic_mr *rmr;
};

static int env_setup(struct env *e, int tgt_access, int qp_access, uint32_t max_mr)
{
	memset(e, 0, sizeof(*e));
	struct ht_opts o;
	ht_default_opts(&o, 77);
	o.access = qp_access;
	o.max_mr = max_mr;
	o.timeout = 8;
	if (ht_setup(&e->h, &o))
		return -1;
	e->tb = malloc(GUARD + PAGE + GUARD);
	e->tb_copy = malloc(GUARD + PAGE + GUARD);
	e->lb = calloc(1, 2 * PAGE);
	e->rb = calloc(1, PAGE);
	REQUIRE_RET(e->tb && e->tb_copy && e->lb && e->rb, -1, "out of memory");
	for (size_t i = 0; i < GUARD + PAGE + GUARD; i++)
		e->tb[i] = (uint8_t)(i * 7 + 3);
	memcpy(e->tb_copy, e->tb, GUARD + PAGE + GUARD);
	for (size_t i = 0; i < 2 * PAGE; i++)
		e->lb[i] = (uint8_t)(0xc0 ^ i);
	e->tmr = rnic_mr_reg(e->h.side[1].pd, e->tb + GUARD, PAGE, TGT_IOVA, tgt_access);
	REQUIRE_RET(e->tmr, -1, "target mr_reg: %s", strerror(errno));
	e->lmr = ht_reg(&e->h.side[0], e->lb, 2 * PAGE, IBV_ACCESS_LOCAL_WRITE);
	e->rmr = ht_reg(&e->h.side[1], e->rb, PAGE, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE_RET(e->lmr && e->rmr, -1, "mr_reg");
	return 0;
}

static void env_teardown(struct env *e)
{
	if (e->tmr)
		rnic_mr_dereg(e->tmr);
	if (e->lmr)
		rnic_mr_dereg(e->lmr);
	if (e->rmr)
		rnic_mr_dereg(e->rmr);
	ht_teardown(&e->h);
	free(e->tb);
	free(e->tb_copy);
	free(e->lb);
	free(e->rb);
}

static void check_target_untouched(struct env *e)
{
	for (size_t i = 0; i < GUARD + PAGE + GUARD; i++)
		if (e->tb[i] != e->tb_copy[i]) {
			const char *where = i < GUARD ? "guard before the MR" : i < GUARD + PAGE ? "inside the MR" :
											 "guard after the MR";
			FAIL("target byte %zu (%s) changed: 0x%02x -> 0x%02x", i, where, e->tb_copy[i], e->tb[i]);
			return;
		}
}

/* A request to post: opcode + remote address + length + key. */
struct req {
	enum ibv_wr_opcode opcode;
	uint64_t va;
	uint32_t len;
	uint32_t rkey;
	uint32_t lkey;          /* 0 = the local MR's */
	uint64_t laddr;         /* 0 = start of the local buffer */
};

static void build(struct env *e, const struct req *q, uint64_t wr_id, bool signaled, struct ibv_sge *sge,
		  struct ibv_send_wr *wr)
{
	memset(wr, 0, sizeof(*wr));
	sge->addr = q->laddr ? q->laddr : (uint64_t)(uintptr_t)e->lb;
	sge->length = q->len;
	sge->lkey = q->lkey ? q->lkey : rnic_mr_lkey(e->lmr);
	wr->wr_id = wr_id;
	wr->opcode = q->opcode;
	wr->sg_list = sge;
	wr->num_sge = q->len || q->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || q->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? 1 : 0;
	wr->send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	if (q->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || q->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		sge->length = 8;
		wr->wr.atomic.remote_addr = q->va;
		wr->wr.atomic.rkey = q->rkey;
		wr->wr.atomic.compare_add = 5;
		wr->wr.atomic.swap = 6;
	} else {
		wr->wr.rdma.remote_addr = q->va;
		wr->wr.rdma.rkey = q->rkey;
	}
}

static bool expect_wc(struct env *e, uint64_t wr_id, enum ibv_wc_status status, const char *what)
{
	struct ibv_wc wc;
	if (!ht_wait_wc(&e->h, e->h.side[0].scq, &wc, 2000 * HT_MS)) {
		FAIL("%s: no completion for wr_id %llu (wanted %s)", what, (unsigned long long)wr_id,
			ht_wc_status_str(status));
		return false;
	}
	if (wc.wr_id != wr_id || wc.status != status) {
		FAIL("%s: completion wr_id %llu status %s, expected wr_id %llu status %s", what,
			(unsigned long long)wc.wr_id, ht_wc_status_str(wc.status), (unsigned long long)wr_id,
			ht_wc_status_str(status));
		return false;
	}
	return true;
}

/* Post the bad request followed by three good WRITEs (signaled, unsignaled,
 * signaled) in one chain; the bad one must fail with `want`, the rest
 * flush; a WR posted after the error flushes too. */
static void run_bad(struct env *e, const struct req *bad_req, enum ibv_wc_status want)
{
	struct ibv_sge sge[4];
	struct ibv_send_wr wr[4], *bad = NULL;
	build(e, bad_req, 1, true, &sge[0], &wr[0]);
	struct req good = { .opcode = IBV_WR_RDMA_WRITE, .va = TGT_IOVA, .len = 64, .rkey = rnic_mr_rkey(e->tmr) };
	for (int i = 1; i < 4; i++) {
		build(e, &good, (uint64_t)i + 1, i != 2, &sge[i], &wr[i]);
		wr[i - 1].next = &wr[i];
	}
	int rc = rnic_post_send(e->h.side[0].qp, wr, &bad, pair_now(e->h.pair));
	if (rc) {
		FAIL("post_send: %s (a bad key/address is reported in the completion, not at post)", strerror(rc));
		return;
	}
	expect_wc(e, 1, want, "the bad WR");
	for (uint64_t id = 2; id <= 4; id++)
		expect_wc(e, id, IBV_WC_WR_FLUSH_ERR, "WR behind the bad one");

	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	rc = rnic_qp_query(e->h.side[0].qp, &attr, &init);
	CHECK(rc == 0 && attr.qp_state == IBV_QPS_ERR, "requester QP state %d after the error, expected ERR (%d)",
	      attr.qp_state, IBV_QPS_ERR);

	/* Posting to a QP in the Error state completes with flush error. */
	build(e, &good, 9, false, &sge[0], &wr[0]);
	wr[0].next = NULL;
	rc = rnic_post_send(e->h.side[0].qp, wr, &bad, pair_now(e->h.pair));
	CHECK(rc == 0, "post_send on a QP in ERR returned %s, expected 0 and a flushed WR", strerror(rc));
	if (rc == 0)
		expect_wc(e, 9, IBV_WC_WR_FLUSH_ERR, "WR posted in ERR");

	pair_run_for(e->h.pair, 100 * HT_MS);
	check_target_untouched(e);
	struct ibv_wc wc;
	CHECK(rnic_cq_poll(e->h.side[0].scq, 1, &wc) == 0, "extra completion wr_id %llu status %s",
	      (unsigned long long)wc.wr_id, ht_wc_status_str(wc.status));
}

/* ---- the cases ---------------------------------------------------------- */

enum { ALL = HT_ALL_ACCESS };

static int remote_case(const char *name, int tgt_access, int qp_access, enum ibv_wr_opcode op, int64_t va_off,
		       uint32_t len, uint32_t rkey_xor, enum ibv_wc_status want)
{
	check_begin("%s", name);
	struct env e;
	if (env_setup(&e, tgt_access, qp_access, 0) == 0) {
		struct req q = {
			.opcode = op,
			.va = (uint64_t)((int64_t)TGT_IOVA + va_off),
			.len = len,
			.rkey = rnic_mr_rkey(e.tmr) ^ rkey_xor,
		};
		run_bad(&e, &q, want);
		const struct rnic_counters *c = rnic_counters(e.h.side[1].r);
		if (want == IBV_WC_REM_ACCESS_ERR)
			CHECK(c->tx_nak_remote_access >= 1, "responder tx_nak_remote_access = %llu",
			      (unsigned long long)c->tx_nak_remote_access);
		if (want == IBV_WC_REM_INV_REQ_ERR)
			CHECK(c->tx_nak_invalid_req >= 1, "responder tx_nak_invalid_req = %llu",
			      (unsigned long long)c->tx_nak_invalid_req);
	}
	env_teardown(&e);
	return check_end();
}

/* The R_Key of a deregistered MR must not reach the MR that reuses its slot
 * (the 8-bit key generation differs). */
static int stale_key_case(void)
{
	check_begin("stale rkey after re-registration in the same slot");
	struct env e;
	/* A tiny MR table so the freed slot is reused soon. */
	if (env_setup(&e, ALL, ALL, 4) == 0) {
		uint8_t *old_buf = calloc(1, PAGE);
		struct rnic_mr *old = rnic_mr_reg(e.h.side[1].pd, old_buf, PAGE, TGT_IOVA, ALL);
		uint32_t stale = old ? rnic_mr_rkey(old) : 0;
		CHECK(old && rnic_mr_dereg(old) == 0, "register/deregister the first MR");
		/* Re-register over the target until the stale key's slot is reused. */
		rnic_mr_dereg(e.tmr);
		e.tmr = NULL;
		struct rnic_mr *extra[8] = { 0 };
		int nextra = 0;
		for (int i = 0; i < 8; i++) {
			struct rnic_mr *m = rnic_mr_reg(e.h.side[1].pd, e.tb + GUARD, PAGE, TGT_IOVA, ALL);
			if (!m)
				break;
			if ((rnic_mr_rkey(m) >> 8) == (stale >> 8)) {
				e.tmr = m;
				break;
			}
			extra[nextra++] = m;
		}
		CHECK(e.tmr != NULL, "no registration reused slot %u of a 4-entry MR table", stale >> 8);
		if (e.tmr) {
			CHECK(rnic_mr_rkey(e.tmr) != stale, "re-registration returned the same key 0x%x", stale);
			struct req q = { .opcode = IBV_WR_RDMA_WRITE, .va = TGT_IOVA, .len = 32, .rkey = stale };
			run_bad(&e, &q, IBV_WC_REM_ACCESS_ERR);
		}
		for (int i = 0; i < nextra; i++)
			rnic_mr_dereg(extra[i]);
		free(old_buf);
	}
	env_teardown(&e);
	return check_end();
}

/* A valid key still works after the stale-key test's setup (so the
 * stale-key refusal is not just "every key fails"). */
static int good_key_case(void)
{
	check_begin("valid WRITE/READ/FETCH_ADD land exactly in the MR");
	struct env e;
	if (env_setup(&e, ALL, ALL, 0) == 0) {
		struct ibv_sge sge;
		struct ibv_send_wr wr, *bad;
		struct req q = { .opcode = IBV_WR_RDMA_WRITE, .va = TGT_IOVA + PAGE - 100, .len = 100,
				 .rkey = rnic_mr_rkey(e.tmr) };
		build(&e, &q, 1, true, &sge, &wr);
		int rc = rnic_post_send(e.h.side[0].qp, &wr, &bad, pair_now(e.h.pair));
		CHECK(rc == 0, "post: %s", strerror(rc));
		if (rc == 0 && expect_wc(&e, 1, IBV_WC_SUCCESS, "WRITE to the last 100 bytes")) {
			memcpy(e.tb_copy + GUARD + PAGE - 100, e.lb, 100);
			check_target_untouched(&e);
		}
		/* zero-length WRITE with a garbage R_Key: it moves no data, and
		 * the IBTA exempts zero-length RDMA requests from the R_Key/VA
		 * check (rxe and hardware RNICs accept them too). */
		q.len = 0;
		q.rkey = 0xdeadbe00;
		build(&e, &q, 2, true, &sge, &wr);
		rc = rnic_post_send(e.h.side[0].qp, &wr, &bad, pair_now(e.h.pair));
		CHECK(rc == 0, "post: %s", strerror(rc));
		if (rc == 0)
			expect_wc(&e, 2, IBV_WC_SUCCESS, "zero-length WRITE with an unchecked R_Key");
		check_target_untouched(&e);
	}
	env_teardown(&e);
	return check_end();
}

/* A SEND longer than the receive WQE: the responder completes the receive
 * with IBV_WC_LOC_LEN_ERR and NAKs Invalid Request (IBTA 9.7.5.2.4: length
 * errors are Invalid Request class), the requester sees REM_INV_REQ_ERR. */
static int send_too_long_case(void)
{
	check_begin("SEND longer than the receive buffer");
	struct env e;
	if (env_setup(&e, ALL, ALL, 0) == 0) {
		memset(e.rb, 0x11, PAGE);
		struct ibv_sge rsge = { .addr = (uint64_t)(uintptr_t)e.rb, .length = 100, .lkey = rnic_mr_lkey(e.rmr) };
		struct ibv_recv_wr rwr = { .wr_id = 50, .sg_list = &rsge, .num_sge = 1 }, *rbad;
		CHECK(rnic_post_recv(e.h.side[1].qp, &rwr, &rbad) == 0, "post_recv");
		struct req q = { .opcode = IBV_WR_SEND, .len = 200 };
		run_bad(&e, &q, IBV_WC_REM_INV_REQ_ERR);
		struct ibv_wc wc;
		if (ht_wait_wc(&e.h, e.h.side[1].rcq, &wc, 100 * HT_MS))
			CHECK(wc.wr_id == 50 && wc.status == IBV_WC_LOC_LEN_ERR,
			      "receive completion wr_id %llu status %s, expected 50 LOC_LEN_ERR",
			      (unsigned long long)wc.wr_id, ht_wc_status_str(wc.status));
		else
			FAIL("no receive completion for the overflowing SEND");
		for (size_t i = 100; i < PAGE; i++)
			if (e.rb[i] != 0x11) {
				FAIL("receive buffer byte %zu beyond the 100-byte SGE was written", i);
				break;
			}
	}
	env_teardown(&e);
	return check_end();
}

/* Local protection: the requester checks its own SGEs. */
static int local_case(const char *name, int lmr_access, uint32_t lkey_xor, uint64_t laddr_off, uint32_t len,
		      enum ibv_wr_opcode op)
{
	check_begin("%s", name);
	struct env e;
	if (env_setup(&e, ALL, ALL, 0) == 0) {
		if (lmr_access != IBV_ACCESS_LOCAL_WRITE) {
			rnic_mr_dereg(e.lmr);
			e.lmr = ht_reg(&e.h.side[0], e.lb, 2 * PAGE, lmr_access);
		}
		if (e.lmr) {
			struct req q = {
				.opcode = op,
				.va = TGT_IOVA,
				.len = len,
				.rkey = rnic_mr_rkey(e.tmr),
				.lkey = rnic_mr_lkey(e.lmr) ^ lkey_xor,
				.laddr = (uint64_t)(uintptr_t)e.lb + laddr_off,
			};
			run_bad(&e, &q, IBV_WC_LOC_PROT_ERR);
		}
	}
	env_teardown(&e);
	return check_end();
}

int main(void)
{
	int failed = 0;
	const int no_write = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	const int no_read = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	const int no_atomic = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	const enum ibv_wc_status acc = IBV_WC_REM_ACCESS_ERR;

	failed += good_key_case();
	/* wrong R_Key: another index, and the right index with another generation */
	failed += remote_case("WRITE wrong rkey index", ALL, ALL, IBV_WR_RDMA_WRITE, 0, 64, 0x100, acc);
	failed += remote_case("WRITE wrong rkey generation", ALL, ALL, IBV_WR_RDMA_WRITE, 0, 64, 0x01, acc);
	failed += remote_case("READ wrong rkey", ALL, ALL, IBV_WR_RDMA_READ, 0, 64, 0x100, acc);
	failed += remote_case("FETCH_ADD wrong rkey", ALL, ALL, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 0x100, acc);
	failed += remote_case("CMP_SWAP wrong rkey", ALL, ALL, IBV_WR_ATOMIC_CMP_AND_SWP, 0, 8, 0x100, acc);
	/* bounds (IBTA 10.6.3.2: the whole range must lie inside the region) */
	failed += remote_case("WRITE va before the MR", ALL, ALL, IBV_WR_RDMA_WRITE, -1, 16, 0, acc);
	failed += remote_case("WRITE va far before the MR", ALL, ALL, IBV_WR_RDMA_WRITE, -(int64_t)PAGE, 16, 0, acc);
	failed += remote_case("WRITE va after the MR", ALL, ALL, IBV_WR_RDMA_WRITE, PAGE, 1, 0, acc);
	failed += remote_case("WRITE length past the end", ALL, ALL, IBV_WR_RDMA_WRITE, PAGE - 100, 200, 0, acc);
	failed += remote_case("multi-packet WRITE past the end", ALL, ALL, IBV_WR_RDMA_WRITE, 100, PAGE, 0, acc);
	failed += remote_case("READ length past the end", ALL, ALL, IBV_WR_RDMA_READ, PAGE - 8, 16, 0, acc);
	failed += remote_case("READ va before the MR", ALL, ALL, IBV_WR_RDMA_READ, -64, 64, 0, acc);
	failed += remote_case("FETCH_ADD after the MR", ALL, ALL, IBV_WR_ATOMIC_FETCH_AND_ADD, PAGE, 8, 0, acc);
	/* rights of the MR (IBTA 10.6.3) */
	failed += remote_case("WRITE without REMOTE_WRITE", no_write, ALL, IBV_WR_RDMA_WRITE, 0, 64, 0, acc);
	failed += remote_case("READ without REMOTE_READ", no_read, ALL, IBV_WR_RDMA_READ, 0, 64, 0, acc);
	failed += remote_case("FETCH_ADD without REMOTE_ATOMIC", no_atomic, ALL, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 0, acc);
	failed += remote_case("CMP_SWAP without REMOTE_ATOMIC", no_atomic, ALL, IBV_WR_ATOMIC_CMP_AND_SWP, 0, 8, 0, acc);
	/* rights of the responder QP (qp_access_flags): an operation the QP
	 * did not enable is an Invalid Request (IBTA 9.7.5.2.2; rxe agrees),
	 * unlike a right missing on the MR */
	const enum ibv_wc_status inv = IBV_WC_REM_INV_REQ_ERR;
	failed += remote_case("WRITE to a QP without REMOTE_WRITE", ALL, no_write, IBV_WR_RDMA_WRITE, 0, 64, 0, inv);
	failed += remote_case("READ from a QP without REMOTE_READ", ALL, no_read, IBV_WR_RDMA_READ, 0, 64, 0, inv);
	failed += remote_case("atomic on a QP without REMOTE_ATOMIC", ALL, no_atomic, IBV_WR_ATOMIC_FETCH_AND_ADD, 0,
			      8, 0, inv);
	/* misaligned atomic: NAK Invalid Request (IBTA 9.4.5 / 9.7.5.2.4) */
	failed += remote_case("misaligned FETCH_ADD", ALL, ALL, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, 8, 0,
			      IBV_WC_REM_INV_REQ_ERR);
	failed += remote_case("misaligned CMP_SWAP", ALL, ALL, IBV_WR_ATOMIC_CMP_AND_SWP, 12, 8, 0,
			      IBV_WC_REM_INV_REQ_ERR);
	failed += stale_key_case();
	failed += send_too_long_case();
	/* local protection errors (IBTA 10.6.3.1, completion LOC_PROT_ERR) */
	failed += local_case("WRITE with a bad lkey", IBV_ACCESS_LOCAL_WRITE, 0x100, 0, 64, IBV_WR_RDMA_WRITE);
	failed += local_case("SEND with a stale-generation lkey", IBV_ACCESS_LOCAL_WRITE, 0x01, 0, 64, IBV_WR_SEND);
	failed += local_case("WRITE with an SGE past the local MR", IBV_ACCESS_LOCAL_WRITE, 0, 2 * PAGE - 10, 64,
			     IBV_WR_RDMA_WRITE);
	failed += local_case("READ into an MR without LOCAL_WRITE", IBV_ACCESS_REMOTE_READ, 0, 0, 64,
			     IBV_WR_RDMA_READ);
	printf("%s: %d cases failed\n", failed ? "FAIL" : "PASS", failed);
	return failed ? 1 : 0;
}
