/*
 * unit_hpcc.c — HPCC's sender (rnic/hpcc_cc.c) against sequences
 * computed by hand.
 *
 * Parameters: line rate 100 Gb/s, one hop at 100 Gb/s, W = 125 000 bytes
 * (10 us at the line rate), T = 10 us, η = 0.5, W_AI 100 Mb/s, floor
 * 1000 Mb/s, maxStage 2, fast reaction on.  U and k in 1/2^20; with
 * η = 0.5, k = 2U.
 *
 *  ack nxt  record (ts ns, tx B, q B)  what
 *   1  10   1000, 0, 0                 first: kept, window ends at 10
 *  11  20   6000, 62 500, 25 000       full update.  τ 5000, 62 500 B in
 *                                      5 us = the line rate: u = 2^20
 *                                      (queue term: min(25 000, 0) = 0);
 *                                      U = (0·5000 + 2^20·5000)/10^4 =
 *                                      524 288, k = 2^20 ≥ 1: R = R_c/1
 *                                      + 100M, capped at 100 Gb/s
 *  15  25   8000, 87 500, 50 000       15 ≤ 20: fast reaction.  τ 2000,
 *                                      25 000 B: 2^20; queue min(50 000,
 *                                      25 000)·line/(B·W) = 0.2: 209 715;
 *                                      u = 1 258 291; U = (524 288·8000 +
 *                                      1 258 291·2000)/10^4 = 671 088;
 *                                      k = 1 342 176: R = 10^11·2^20/k +
 *                                      10^8 = 78 225 074 505; R_c stays
 *  21  30   13000, 150 000, 0          full: u = 2^20 (62 500 B in 5 us,
 *                                      queue min(0, ·) = 0); U = (671 088
 *                                      + 2^20)/2 = 859 832, k = 1 719 664:
 *                                      R = R_c(10^11)/k + 10^8 =
 *                                      61 075 632 449 = R_c, stage 0
 *  31  40   23000, 165 000, 0          full: τ 10 000 = T, 15 000 B:
 *                                      u = 125 829 = U; k = 251 658 < 1
 *                                      and stage 0 < 2: R = R_c + 10^8 =
 *                                      61 175 632 449, stage 1
 *  41  50   23000, 165 000, 0          the same record: no news, no change
 */
#include <string.h>

#include "rnic/hpcc_cc.h"
#include "unit_util.h"

#define LINE 100000000000ull

static void test_params(struct hpcc_params *p)
{
	hpcc_params_default(p);
	p->eta = 500;
	p->max_stage = 2;
	p->rate_ai = 100;
	p->min_rate = 1000;
	p->fast_react = true;
	p->base_rtt = 10000;
}

static struct hpcc_int one_hop(uint64_t ts, uint64_t tx, uint64_t q)
{
	struct hpcc_int t;

	memset(&t, 0, sizeof(t));
	t.nhop = 1;
	t.hop[0] = (struct hpcc_int_hop){ .ts_ns = ts, .tx_bytes = tx, .qlen_bytes = q, .rate_bps = LINE };
	return t;
}

static void test_defaults(void)
{
	struct hpcc_params p;
	struct hpcc_cc s;

	hpcc_params_default(&p);
	CHECK(p.eta == 950 && p.max_stage == 5 && p.fast_react);
	hpcc_init(&s, &p, LINE, 0);
	/* W defaults to the line rate times T: 100 Gb/s · 10 us. */
	CHECK(s.window == 125000 && hpcc_rate(&s) == LINE);
}

static void test_sequence(void)
{
	struct hpcc_params p;
	struct hpcc_cc s;
	struct hpcc_int t;

	test_params(&p);
	hpcc_init(&s, &p, LINE, 125000);

	t = one_hop(1000, 0, 0);
	hpcc_on_ack(&s, &t, 1, 10);
	CHECK(s.started && s.update_end == 10 && hpcc_rate(&s) == LINE);

	t = one_hop(6000, 62500, 25000);
	hpcc_on_ack(&s, &t, 11, 20);
	CHECK(s.u == 524288);
	CHECK(hpcc_rate(&s) == LINE && s.cur_rate == LINE && s.inc_stage == 0);
	CHECK(s.update_end == 20 && s.updates == 1);

	t = one_hop(8000, 87500, 50000);
	hpcc_on_ack(&s, &t, 15, 25);
	CHECK(s.u == 671088);
	CHECK(hpcc_rate(&s) == 78225074505ull);
	CHECK(s.cur_rate == LINE && s.inc_stage == 0 && s.fast_reacts == 1 && s.update_end == 20);

	t = one_hop(13000, 150000, 0);
	hpcc_on_ack(&s, &t, 21, 30);
	CHECK(s.u == 859832);
	CHECK(hpcc_rate(&s) == 61075632449ull && s.cur_rate == 61075632449ull && s.inc_stage == 0);

	t = one_hop(23000, 165000, 0);
	hpcc_on_ack(&s, &t, 31, 40);
	CHECK(s.u == 125829);
	CHECK(hpcc_rate(&s) == 61175632449ull && s.cur_rate == 61175632449ull && s.inc_stage == 1);

	hpcc_on_ack(&s, &t, 41, 50);
	CHECK(hpcc_rate(&s) == 61175632449ull && s.inc_stage == 1 && s.u == 125829);
	CHECK(s.cuts == 2);
}

/* Without fast reaction, ACKs inside the window change nothing. */
static void test_no_fast_react(void)
{
	struct hpcc_params p;
	struct hpcc_cc s;
	struct hpcc_int t;

	test_params(&p);
	p.fast_react = false;
	hpcc_init(&s, &p, LINE, 125000);
	t = one_hop(1000, 0, 0);
	hpcc_on_ack(&s, &t, 1, 10);
	t = one_hop(6000, 62500, 25000);
	hpcc_on_ack(&s, &t, 5, 12);
	CHECK(hpcc_rate(&s) == LINE && s.u == 0 && s.fast_reacts == 0);
	/* The next full update compares with the first record: τ 7000,
	 * 87 500 B = the line rate, queue min(50 000, 0) = 0: u = 2^20,
	 * U = 2^20·7000/10^4 = 734 003, k = 1 468 006. */
	t = one_hop(8000, 87500, 50000);
	hpcc_on_ack(&s, &t, 11, 20);
	CHECK(s.u == 734003);
	CHECK(hpcc_rate(&s) == (uint64_t)((unsigned __int128)LINE * 1048576 / 1468006) + 100000000ull);
}

/* The floor, and the multiplicative step forced by maxStage. */
static void test_clamps_and_stages(void)
{
	struct hpcc_params p;
	struct hpcc_cc s;
	struct hpcc_int t;
	uint64_t ts = 1000, tx = 0;

	test_params(&p);
	hpcc_init(&s, &p, LINE, 125000);
	t = one_hop(ts, tx, 0);
	hpcc_on_ack(&s, &t, 1, 1);
	/* A queue of 100 W: k far above 1, the rate falls to the floor. */
	for (uint64_t i = 2; i < 10; i++) {
		ts += 10000;
		tx += 125000;
		t = one_hop(ts, tx, 12500000);
		hpcc_on_ack(&s, &t, i, i);
	}
	CHECK(hpcc_rate(&s) == 1000000000ull);
	/* The queue gone and the link a tenth used (u = 0.1 once τ = T):
	 * k = 0.2, additive steps, and after maxStage (2) of them a
	 * multiplicative one, R_c/k: 1.2e9 / 0.2 = 6e9 and more. */
	for (uint64_t i = 10; i < 13; i++) {
		ts += 10000;
		tx += 12500;
		t = one_hop(ts, tx, 0);
		hpcc_on_ack(&s, &t, i, i);
		CHECK(s.u == 104857);   /* 0.1 */
	}
	CHECK(s.inc_stage == 0);
	CHECK(hpcc_rate(&s) == (uint64_t)((unsigned __int128)1200000000ull * 1048576 / 209714) + 100000000ull);
	/* An idle path reads u = 0, which moves nothing (HPCC takes the
	 * hop with the largest u, and τ only with it). */
	uint64_t before = hpcc_rate(&s);
	ts += 10000;
	t = one_hop(ts, tx, 0);
	hpcc_on_ack(&s, &t, 13, 13);
	CHECK(s.u == 104857 && hpcc_rate(&s) == before + 100000000ull);
	CHECK(hpcc_rate(&s) <= LINE);
}

/* HPCC-PINT (hpcc_params.pint): U arrives decoded in pint_u, no EWMA,
 * and every sampled ACK between full updates is a fast reaction even with
 * FAST_REACT off.  η = 0.5 (k = 2U), W_AI 100 Mb/s, maxStage 2:
 *
 *  ack nxt  U      what
 *   1  10   0.5    first: the window ends at 10, nothing else
 *  11  20   1.0    full: k = 2 ≥ 1: R = 10^11/2 + 10^8 = 50.1 G = R_c
 *  15  25   0.75   fast: k = 1.5: R = 50.1 G/1.5 + 10^8 = 33.5 G, R_c kept
 *  21  30   0.25   full: k = 0.5 < 1, stage 0 < 2: R = 50.1 G + 0.1 G,
 *                  stage 1
 *  31  40   0.25   full: stage 1 < 2: R = 50.3 G, stage 2
 *  41  50   0.25   full: stage 2 = maxStage: R = 50.3 G/0.5 + 0.1 G,
 *                  capped at the line rate, stage 0
 *  51  60   none   pint_u 0: no feedback, no change
 */
static void test_pint_sequence(void)
{
	struct hpcc_params p;
	struct hpcc_cc s;
	struct hpcc_int t;

	test_params(&p);
	p.pint = true;
	p.fast_react = false;
	hpcc_init(&s, &p, LINE, 125000);
	memset(&t, 0, sizeof(t));

	t.pint_u = 1u << 19;
	hpcc_on_ack(&s, &t, 1, 10);
	CHECK(s.started && s.update_end == 10 && hpcc_rate(&s) == LINE && s.updates == 0);
	t.pint_u = 1u << 20;
	hpcc_on_ack(&s, &t, 11, 20);
	CHECK(hpcc_rate(&s) == 50100000000ull && s.cur_rate == 50100000000ull && s.inc_stage == 0);
	CHECK(s.update_end == 20 && s.updates == 1);
	t.pint_u = 3u << 18;
	hpcc_on_ack(&s, &t, 15, 25);
	CHECK(hpcc_rate(&s) == 33500000000ull && s.cur_rate == 50100000000ull && s.fast_reacts == 1);
	CHECK(s.update_end == 20);
	t.pint_u = 1u << 18;
	hpcc_on_ack(&s, &t, 21, 30);
	CHECK(hpcc_rate(&s) == 50200000000ull && s.cur_rate == 50200000000ull && s.inc_stage == 1);
	CHECK(s.update_end == 30);
	hpcc_on_ack(&s, &t, 31, 40);
	CHECK(hpcc_rate(&s) == 50300000000ull && s.inc_stage == 2);
	hpcc_on_ack(&s, &t, 41, 50);
	CHECK(hpcc_rate(&s) == LINE && s.cur_rate == LINE && s.inc_stage == 0 && s.update_end == 50);
	t.pint_u = 0;
	hpcc_on_ack(&s, &t, 51, 60);
	CHECK(hpcc_rate(&s) == LINE && s.update_end == 50 && s.updates == 4 && s.acks == 7);
	CHECK(s.cuts == 2);
}

int main(void)
{
	test_defaults();
	test_sequence();
	test_no_fast_react();
	test_clamps_and_stages();
	test_pint_sequence();
	if (check_failures)
		return check_exit("rnic_unit_hpcc");
	printf("unit_hpcc: ok\n");
	return 0;
}
