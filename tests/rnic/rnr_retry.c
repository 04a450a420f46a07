/*
 * rnr_retry.c — RNR NAK flow control and the transport retry timer, timed
 * on the pair's simulated clock.
 *
 *   - A SEND to a QP with no receive posted draws RNR NAKs (IBTA 9.7.5.2.8);
 *     the requester waits at least the RNR timer the NAK carries (table 45)
 *     before each retry, and succeeds once a receive is posted.
 *   - With rnr_retry < 7 the requester gives up after rnr_retry retries:
 *     IBV_WC_RNR_RETRY_EXC_ERR (IBTA 9.7.5.2.8 / 10.8.3).
 *   - A link that drops every request (or every response) makes the
 *     requester retransmit retry_cnt times, one local ACK timeout
 *     (4.096 us * 2^timeout, IBTA 9.7.6.1.3) apart, then complete with
 *     IBV_WC_RETRY_EXC_ERR.
 *   - Losing the first transmissions (request or READ response) is
 *     recovered by the timer and the data arrive intact.
 *
 * A tap on the pair records the time and opcode of every request packet
 * node 0 sends, and drops packets by rule.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_REC 256

struct tap {
	/* recording: request packets sent by node 0 */
	size_t n;
	uint64_t time[MAX_REC];
	uint8_t opcode[MAX_REC];
	uint32_t psn[MAX_REC];
	/* dropping */
	bool drop_requests;         /* every packet 0 -> 1 */
	bool drop_responses;        /* every packet 1 -> 0 */
	int drop_first_requests;    /* the first N packets 0 -> 1 */
	int drop_first_responses;   /* the first N packets 1 -> 0 */
};

static bool tap_fn(void *arg, struct pair_packet *pkt)
{
	struct tap *t = arg;
	struct wire_ib ib;
	if (wire_decode_ib(pkt->ib, pkt->ib_len, &ib) != 0)
		return true;
	if (pkt->from == 0) {
		if (t->n < MAX_REC) {
			t->time[t->n] = pkt->now;
			t->opcode[t->n] = ib.bth.opcode;
			t->psn[t->n] = ib.bth.psn;
			t->n++;
		}
		if (t->drop_requests)
			return false;
		if (t->drop_first_requests > 0) {
			t->drop_first_requests--;
			return false;
		}
	} else {
		if (t->drop_responses)
			return false;
		if (t->drop_first_responses > 0) {
			t->drop_first_responses--;
			return false;
		}
	}
	return true;
}

static uint64_t timeout_ns(uint8_t code)
{
	return 4096ull << code; /* 4.096 us * 2^code */
}

static int post_send(struct ht *h, enum ibv_wr_opcode op, void *buf, uint32_t len, uint32_t lkey, uint64_t va,
		     uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	wr_send_1(&wr, &sge, op, wr_id, (uint64_t)(uintptr_t)buf, len, lkey);
	wr_remote(&wr, va, rkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	return rnic_post_send(h->side[0].qp, &wr, &bad, pair_now(h->pair));
}

/* ---- RNR ------------------------------------------------------------------ */

static int rnr_then_success(void)
{
	check_begin("RNR NAKs until a receive is posted, then success");
	struct ht h;
	struct ht_opts o;
	ht_default_opts(&o, 5);
	o.min_rnr_timer[1] = 14; /* the responder's RNR timer code */
	struct tap t = { 0 };
	uint8_t *sbuf = malloc(300), *rbuf = calloc(1, 512);
	for (int i = 0; i < 300; i++)
		sbuf[i] = (uint8_t)(i ^ 0x3c);
	if (ht_setup(&h, &o) == 0) {
		pair_set_tap(h.pair, tap_fn, &t);
		struct rnic_mr *smr = ht_reg(&h.side[0], sbuf, 300, IBV_ACCESS_LOCAL_WRITE);
		struct rnic_mr *rmr = ht_reg(&h.side[1], rbuf, 512, IBV_ACCESS_LOCAL_WRITE);
		uint64_t rnr_ns = (uint64_t)wire_rnr_timer_us(14) * 1000;
		int rc = post_send(&h, IBV_WR_SEND, sbuf, 300, rnic_mr_lkey(smr), 0, 0, 7);
		CHECK(rc == 0, "post_send: %s", strerror(rc));
		/* Long enough for several RNR rounds. */
		pair_run_for(h.pair, 6 * rnr_ns + 5 * HT_MS);
		struct ibv_wc wc;
		CHECK(rnic_cq_poll(h.side[0].scq, 1, &wc) == 0, "send completed (%s) with no receive posted",
		      ht_wc_status_str(wc.status));
		const struct rnic_counters *c0 = rnic_counters(h.side[0].r), *c1 = rnic_counters(h.side[1].r);
		CHECK(c1->tx_rnr_nak >= 3, "responder sent %llu RNR NAKs, expected several",
		      (unsigned long long)c1->tx_rnr_nak);
		CHECK(c0->rx_rnr_nak == c1->tx_rnr_nak, "requester counted %llu RNR NAKs of %llu sent",
		      (unsigned long long)c0->rx_rnr_nak, (unsigned long long)c1->tx_rnr_nak);
		CHECK(c0->rnr_retries >= 2, "requester rnr_retries %llu", (unsigned long long)c0->rnr_retries);
		/* Each retry waits at least the RNR timer after the previous try. */
		uint64_t span = 6 * rnr_ns + 5 * HT_MS;
		CHECK(t.n >= 3 && t.n <= span / rnr_ns + 1, "%zu SEND transmissions in %.1f ms with a %.2f ms RNR timer",
		      t.n, (double)span / 1e6, (double)rnr_ns / 1e6);
		for (size_t i = 1; i < t.n; i++) {
			CHECK(t.opcode[i] == WIRE_OP_SEND_ONLY, "packet %zu opcode 0x%x", i, t.opcode[i]);
			CHECK(t.psn[i] == t.psn[0], "RNR retry %zu has PSN 0x%x, first 0x%x", i, t.psn[i], t.psn[0]);
			CHECK(t.time[i] - t.time[i - 1] >= rnr_ns, "retry %zu only %.3f ms after the previous (timer %.3f ms)",
			      i, (double)(t.time[i] - t.time[i - 1]) / 1e6, (double)rnr_ns / 1e6);
		}
		struct ibv_sge rsge = { .addr = (uint64_t)(uintptr_t)rbuf, .length = 512, .lkey = rnic_mr_lkey(rmr) };
		struct ibv_recv_wr rwr = { .wr_id = 70, .sg_list = &rsge, .num_sge = 1 }, *rbad;
		CHECK(rnic_post_recv(h.side[1].qp, &rwr, &rbad) == 0, "post_recv");
		if (ht_wait_wc(&h, h.side[0].scq, &wc, 10 * rnr_ns))
			CHECK(wc.wr_id == 7 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND,
			      "send completion wr_id %llu status %s opcode %d", (unsigned long long)wc.wr_id,
			      ht_wc_status_str(wc.status), wc.opcode);
		else
			FAIL("send did not complete after the receive was posted");
		if (ht_wait_wc(&h, h.side[1].rcq, &wc, 10 * HT_MS)) {
			CHECK(wc.wr_id == 70 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 300,
			      "recv completion wr_id %llu status %s byte_len %u", (unsigned long long)wc.wr_id,
			      ht_wc_status_str(wc.status), wc.byte_len);
			CHECK(memcmp(rbuf, sbuf, 300) == 0, "received data differ");
		} else {
			FAIL("no receive completion");
		}
		rnic_mr_dereg(smr);
		rnic_mr_dereg(rmr);
	}
	ht_teardown(&h);
	free(sbuf);
	free(rbuf);
	return check_end();
}

static int rnr_exhausted(uint8_t rnr_retry)
{
	check_begin("rnr_retry %u exhausted", rnr_retry);
	struct ht h;
	struct ht_opts o;
	ht_default_opts(&o, 6);
	o.rnr_retry = rnr_retry;
	o.min_rnr_timer[1] = 4; /* a short RNR timer (table 45) */
	struct tap t = { 0 };
	uint8_t *sbuf = calloc(1, 64);
	if (ht_setup(&h, &o) == 0) {
		pair_set_tap(h.pair, tap_fn, &t);
		struct rnic_mr *smr = ht_reg(&h.side[0], sbuf, 64, IBV_ACCESS_LOCAL_WRITE);
		CHECK(post_send(&h, IBV_WR_SEND, sbuf, 64, rnic_mr_lkey(smr), 0, 0, 1) == 0, "post");
		CHECK(post_send(&h, IBV_WR_SEND, sbuf, 64, rnic_mr_lkey(smr), 0, 0, 2) == 0, "post");
		struct ibv_wc wc;
		if (ht_wait_wc(&h, h.side[0].scq, &wc, 1000 * HT_MS)) {
			CHECK(wc.wr_id == 1 && wc.status == IBV_WC_RNR_RETRY_EXC_ERR,
			      "completion wr_id %llu status %s, expected 1 RNR_RETRY_EXC_ERR",
			      (unsigned long long)wc.wr_id, ht_wc_status_str(wc.status));
		} else {
			FAIL("no completion");
		}
		if (ht_wait_wc(&h, h.side[0].scq, &wc, 100 * HT_MS))
			CHECK(wc.wr_id == 2 && wc.status == IBV_WC_WR_FLUSH_ERR, "second WR: wr_id %llu status %s",
			      (unsigned long long)wc.wr_id, ht_wc_status_str(wc.status));
		else
			FAIL("second WR never flushed");
		/* transmissions of the first SEND: the try plus rnr_retry retries */
		size_t first = 0;
		for (size_t i = 0; i < t.n; i++)
			if (t.psn[i] == t.psn[0])
				first++;
		CHECK(first == (size_t)rnr_retry + 1, "first SEND sent %zu times, expected 1 + rnr_retry = %u", first,
		      rnr_retry + 1);
		const struct rnic_counters *c0 = rnic_counters(h.side[0].r);
		CHECK(c0->rnr_retries == rnr_retry, "rnr_retries %llu", (unsigned long long)c0->rnr_retries);
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		rnic_qp_query(h.side[0].qp, &a, &ia);
		CHECK(a.qp_state == IBV_QPS_ERR, "requester QP state %d, expected ERR", a.qp_state);
		rnic_mr_dereg(smr);
	}
	ht_teardown(&h);
	free(sbuf);
	return check_end();
}

/* ---- transport timer ------------------------------------------------------ */

static int retry_exhausted(bool lose_requests, uint8_t retry_cnt)
{
	check_begin("retry_cnt %u exhausted, link drops every %s", retry_cnt,
		      lose_requests ? "request" : "response");
	struct ht h;
	struct ht_opts o;
	ht_default_opts(&o, 8);
	o.timeout = 10;
	o.retry_cnt = retry_cnt;
	struct tap t = { .drop_requests = lose_requests, .drop_responses = !lose_requests };
	uint8_t *buf = calloc(1, 4096), *tgt = calloc(1, 4096);
	if (ht_setup(&h, &o) == 0) {
		pair_set_tap(h.pair, tap_fn, &t);
		struct rnic_mr *lmr = ht_reg(&h.side[0], buf, 4096, IBV_ACCESS_LOCAL_WRITE);
		struct rnic_mr *tmr = ht_reg(&h.side[1], tgt, 4096, HT_ALL_ACCESS);
		uint64_t start = pair_now(h.pair);
		CHECK(post_send(&h, IBV_WR_RDMA_WRITE, buf, 100, rnic_mr_lkey(lmr), (uint64_t)(uintptr_t)tgt,
				rnic_mr_rkey(tmr), 11) == 0,
		      "post");
		struct ibv_wc wc;
		uint64_t T = timeout_ns(o.timeout);
		if (ht_wait_wc(&h, h.side[0].scq, &wc, 100 * T * (retry_cnt + 1u))) {
			CHECK(wc.wr_id == 11 && wc.status == IBV_WC_RETRY_EXC_ERR,
			      "completion wr_id %llu status %s, expected RETRY_EXC_ERR", (unsigned long long)wc.wr_id,
			      ht_wc_status_str(wc.status));
			CHECK(t.n == (size_t)retry_cnt + 1, "%zu transmissions, expected 1 + retry_cnt = %u", t.n,
			      retry_cnt + 1);
			/* IBTA 9.7.6.1.3: the timer fires no earlier than the
			 * programmed value; we allow up to 4x for coarse timers. */
			for (size_t i = 1; i < t.n; i++) {
				uint64_t gap = t.time[i] - t.time[i - 1];
				CHECK(gap >= T && gap <= 4 * T, "retransmission %zu after %.3f ms, timeout %.3f ms", i,
				      (double)gap / 1e6, (double)T / 1e6);
			}
			uint64_t done = pair_now(h.pair);
			if (t.n > 0)
				CHECK(done - t.time[t.n - 1] >= T && done - t.time[t.n - 1] <= 4 * T + HT_MS,
				      "error completion %.3f ms after the last try (timeout %.3f ms)",
				      (double)(done - t.time[t.n - 1]) / 1e6, (double)T / 1e6);
			(void)start;
		} else {
			FAIL("no completion within %u timeouts", 100 * (retry_cnt + 1u));
		}
		const struct rnic_counters *c0 = rnic_counters(h.side[0].r), *c1 = rnic_counters(h.side[1].r);
		CHECK(c0->retransmits == retry_cnt, "retransmits %llu, expected %u", (unsigned long long)c0->retransmits,
		      retry_cnt);
		CHECK(c0->retransmit_timeouts == (uint64_t)retry_cnt + 1, "retransmit_timeouts %llu, expected %u",
		      (unsigned long long)c0->retransmit_timeouts, retry_cnt + 1);
		if (!lose_requests)
			CHECK(c1->duplicate_requests == retry_cnt, "responder duplicate_requests %llu, expected %u",
			      (unsigned long long)c1->duplicate_requests, retry_cnt);
		rnic_mr_dereg(lmr);
		rnic_mr_dereg(tmr);
	}
	ht_teardown(&h);
	free(buf);
	free(tgt);
	return check_end();
}

/* The first transmissions are lost; the timer recovers, data intact. */
static int retry_recovers(enum ibv_wr_opcode op, int lose_req, int lose_resp)
{
	check_begin("%s recovers after losing %d request(s) and %d response(s)",
		      op == IBV_WR_RDMA_READ ? "READ" : "WRITE", lose_req, lose_resp);
	struct ht h;
	struct ht_opts o;
	ht_default_opts(&o, 9);
	o.timeout = 10;
	o.retry_cnt = 7;
	struct tap t = { .drop_first_requests = lose_req, .drop_first_responses = lose_resp };
	uint8_t *buf = calloc(1, 8192), *tgt = malloc(8192);
	for (int i = 0; i < 8192; i++) {
		tgt[i] = (uint8_t)(i * 13);
		buf[i] = (uint8_t)(i * 5 + 1);
	}
	if (ht_setup(&h, &o) == 0) {
		pair_set_tap(h.pair, tap_fn, &t);
		struct rnic_mr *lmr = ht_reg(&h.side[0], buf, 8192, IBV_ACCESS_LOCAL_WRITE);
		struct rnic_mr *tmr = ht_reg(&h.side[1], tgt, 8192, HT_ALL_ACCESS);
		/* 3000 bytes = 3 packets at MTU 1024 */
		CHECK(post_send(&h, op, buf, 3000, rnic_mr_lkey(lmr), (uint64_t)(uintptr_t)tgt + 100, rnic_mr_rkey(tmr),
				21) == 0,
		      "post");
		struct ibv_wc wc;
		uint64_t T = timeout_ns(o.timeout);
		if (ht_wait_wc(&h, h.side[0].scq, &wc, 40 * T)) {
			CHECK(wc.wr_id == 21 && wc.status == IBV_WC_SUCCESS, "completion wr_id %llu status %s",
			      (unsigned long long)wc.wr_id, ht_wc_status_str(wc.status));
			CHECK(memcmp(buf, tgt + 100, 3000) == 0, "data differ after recovery");
		} else {
			FAIL("no completion");
		}
		const struct rnic_counters *c0 = rnic_counters(h.side[0].r);
		CHECK(c0->retransmits >= 1, "retransmits %llu", (unsigned long long)c0->retransmits);
		CHECK(c0->completion_errors == 0, "completion errors");
		rnic_mr_dereg(lmr);
		rnic_mr_dereg(tmr);
	}
	ht_teardown(&h);
	free(buf);
	free(tgt);
	return check_end();
}

int main(void)
{
	int failed = 0;
	failed += rnr_then_success();
	failed += rnr_exhausted(0);
	failed += rnr_exhausted(2);
	failed += rnr_exhausted(5);
	failed += retry_exhausted(true, 3);
	failed += retry_exhausted(true, 0);
	failed += retry_exhausted(false, 3);
	failed += retry_exhausted(true, 7);
	failed += retry_recovers(IBV_WR_RDMA_WRITE, 2, 0);
	failed += retry_recovers(IBV_WR_RDMA_WRITE, 0, 2);
	failed += retry_recovers(IBV_WR_RDMA_READ, 1, 0);
	failed += retry_recovers(IBV_WR_RDMA_READ, 0, 1);
	failed += retry_recovers(IBV_WR_RDMA_READ, 0, 3);
	printf("%s: %d cases failed\n", failed ? "FAIL" : "PASS", failed);
	return failed ? 1 : 0;
}
