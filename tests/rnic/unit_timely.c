/*
 * unit_timely.c — TIMELY's rate update (rnic/timely.c) against sequences
 * computed by hand.
 *
 * Parameters: line rate 10 Gb/s, T_low 50 µs, T_high 500 µs, min RTT
 * 20 µs, α = 0.5 (500/1000), β = 0.8, δ = 100 Mb/s, HAI step 1000 Mb/s
 * after 2 increases in a row, floor 100 Mb/s.  diff is the EWMA of RTT
 * differences, diff ← (diff + new)/2 with α = 0.5.
 *
 *  rtt µs  ack nxt  what                                    rate
 *   60      1  10   first sample: recorded only             10e9
 *   70      5  10   ack ≤ 10: not a new round trip, skipped 10e9
 *   80     11  20   diff = (0 + 20000)/2 = 10000 > 0;
 *                   ×(1 − 0.8·10000/20000) = ×0.6           6e9
 *   70     21  30   diff = (10000 − 10000)/2 = 0 ≤ 0: +δ    6.1e9
 *   40     31  40   < T_low: +δ (2nd in a row)              6.2e9
 *   45     41  50   < T_low, 2 in a row: +HAI               7.2e9
 *  600     51  60   > T_high: ×(1 − 0.8·(1 − 500/600))
 *                   = ×520/600                              6.24e9
 *  300     61  70   diff = (275000 − 300000)/2 = −12500: +δ 6.34e9
 *  300     71  80   diff = −6250: +δ                        6.44e9
 *  400     81  90   diff = (−6250 + 100000)/2 = 46875:
 *                   1 − 0.8·46875/20000 < 0: ×0, floor      100e6
 */
#include <string.h>

#include "rnic/timely.h"
#include "unit_util.h"

#define US 1000ull
#define LINE 10000000000ull

static void test_params(struct timely_params *p)
{
	timely_params_default(p);
	p->t_low = 50000;
	p->t_high = 500000;
	p->min_rtt = 20000;
	p->alpha = 500;
	p->beta = 800;
	p->rate_ai = 100;
	p->rate_hai = 1000;
	p->hai_after = 2;
	p->min_rate = 100;
}

static void test_defaults(void)
{
	struct timely_params p;

	timely_params_default(&p);
	CHECK(p.t_low == 50000 && p.t_high == 500000 && p.min_rtt == 20000);
	CHECK(p.alpha == 875 && p.beta == 800 && p.rate_ai == 10 && p.hai_after == 5);
}

static void test_sequence(void)
{
	static const struct {
		uint64_t rtt_us, ack, nxt, rate;
	} seq[] = {
		{ 60, 1, 10, 10000000000ull },
		{ 70, 5, 10, 10000000000ull },
		{ 80, 11, 20, 6000000000ull },
		{ 70, 21, 30, 6100000000ull },
		{ 40, 31, 40, 6200000000ull },
		{ 45, 41, 50, 7200000000ull },
		{ 600, 51, 60, 6240000000ull },
		{ 300, 61, 70, 6340000000ull },
		{ 300, 71, 80, 6440000000ull },
		{ 400, 81, 90, 100000000ull },
	};
	static const int64_t diffs[] = { 0, 0, 10000, 0, -15000, -5000, 275000, -12500, -6250, 46875 };
	struct timely_params p;
	struct timely_cc s;

	test_params(&p);
	timely_init(&s, &p, LINE);
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		timely_on_rtt(&s, seq[i].rtt_us * US, seq[i].ack, seq[i].nxt);
		CHECK(timely_rate(&s) == seq[i].rate);
		CHECK(s.diff == diffs[i]);
		if (check_failures)
			fprintf(stderr, "  step %zu: rate %llu diff %lld\n", i, (unsigned long long)timely_rate(&s),
				(long long)s.diff);
	}
	CHECK(s.samples == 10 && s.updates == 8 && s.cuts == 3 && s.increases == 5);
	CHECK(s.inc_stage == 0);
}

/* Increases stop at the line rate; RTTs below T_low keep it there. */
static void test_line_rate(void)
{
	struct timely_params p;
	struct timely_cc s;

	test_params(&p);
	timely_init(&s, &p, LINE);
	for (uint64_t i = 0; i < 50; i++)
		timely_on_rtt(&s, 10 * US, i * 10 + 1, i * 10 + 10);
	CHECK(timely_rate(&s) == LINE && s.cuts == 0 && s.increases == 49);
}

/* Two machines fed the same samples agree bit for bit, within bounds. */
static void test_replay(void)
{
	struct timely_params p;
	struct timely_cc a, b;
	uint64_t x = 7;

	timely_params_default(&p);
	timely_init(&a, &p, 25000000000ull);
	timely_init(&b, &p, 25000000000ull);
	for (uint64_t i = 0; i < 5000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t rtt = 10 * US + (x >> 44) % (700 * US);
		timely_on_rtt(&a, rtt, i * 4 + 1, i * 4 + 4);
		timely_on_rtt(&b, rtt, i * 4 + 1, i * 4 + 4);
		CHECK(a.rate == b.rate && a.diff == b.diff);
		CHECK(a.rate >= 10000000ull && a.rate <= 25000000000ull);
	}
	CHECK(a.cuts > 10 && a.increases > 10);
}

int main(void)
{
	test_defaults();
	test_sequence();
	test_line_rate();
	test_replay();
	if (check_failures)
		return check_exit("rnic_unit_timely");
	printf("unit_timely: ok\n");
	return 0;
}
