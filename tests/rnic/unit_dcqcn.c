/*
 * unit_dcqcn.c — the DCQCN reaction point (rnic/dcqcn.c) against
 * sequences computed by hand.
 *
 * A test parameter set with round numbers: line rate 10 Gb/s, g = 1/4
 * (dce_tcp_g = 768, the weight α keeps), initial α = 1/2 (512), α period K = 10 µs, monitor period
 * 4 µs, timer T = 100 µs, byte counter B = 1 000 000 bytes, F = 2,
 * R_AI = 100 Mb/s, R_HAI = 1000 Mb/s, RT ← RC on every cut.
 *
 * The arithmetic, written out once (rates in bits/s, α in 1/1024):
 *   cut 1 at t=1 µs:  RT = 10e9, RC = 10e9·(1 − 512/2048) = 7.5e9,
 *                     α = (512·768 + 256·1024)/1024 = 640
 *   cut 2 at 5 µs:    RT = 7.5e9, RC = 7.5e9 − ⌊7.5e9·640/2048⌋
 *                     = 5 156 250 000, α = (640·768 + 262144)/1024 = 736
 *   increases (RC ← ⌈(RT + RC)/2⌉):
 *     T=1 B=0  fast recovery      RT 7.5e9   RC 6 328 125 000
 *     T=2 B=0  fast recovery      RT 7.5e9   RC 6 914 062 500
 *     T=2 B=1  fast recovery      RT 7.5e9   RC 7 207 031 250
 *     T=3 B=1  additive (+100M)   RT 7.6e9   RC 7 403 515 625
 *     T=3 B=2  additive           RT 7.7e9   RC 7 551 757 813
 *     T=3 B=3  hyper (+1·1000M)   RT 8.7e9   RC 8 125 878 907
 *   (max(T, B) ≤ F is fast recovery: F events of it, as in htsim's
 *   DCQCN and HPCC's ns-3.)
 *   α decay from 640, three periods: 480, 360, 270.
 */
#include <errno.h>
#include <string.h>

#include "rnic/dcqcn.h"
#include "unit_util.h"

#define US 1000ull
#define LINE 10000000000ull

static void test_params(struct dcqcn_params *p)
{
	dcqcn_params_default(p, DCQCN_PROFILE_MLX5);
	p->dce_tcp_g = 768;
	p->initial_alpha_value = 512;
	p->rpg_gd = 11;
	p->rpg_min_dec_fac = 1;
	p->rpg_min_rate = 1;
	p->rpg_max_rate = 0;
	p->rpg_time_reset = 100;
	p->rpg_byte_reset = 1000000;
	p->rpg_threshold = 2;
	p->rpg_ai_rate = 100;
	p->rpg_hai_rate = 1000;
	p->rate_reduce_monitor_period = 4;
	p->dce_tcp_rtt = 10;
	p->clamp_tgt_rate = 1;
	p->clamp_tgt_rate_after_time_inc = 1;
	p->rate_to_set_on_first_cnp = 0;
}

static void test_uncongested(void)
{
	struct dcqcn_params p;
	struct dcqcn_rp rp;

	test_params(&p);
	dcqcn_init(&rp, &p, LINE);
	CHECK(dcqcn_rate(&rp) == LINE);
	CHECK(dcqcn_next_deadline(&rp) == DCQCN_NO_DEADLINE);
	/* Bytes sent while uncongested change nothing. */
	dcqcn_on_sent(&rp, 50000000, 10 * US);
	dcqcn_advance(&rp, 1000 * US);
	CHECK(dcqcn_rate(&rp) == LINE && rp.increases == 0 && !rp.congested);
}

static void test_first_cnp_and_monitor_period(void)
{
	struct dcqcn_params p;
	struct dcqcn_rp rp;

	test_params(&p);
	dcqcn_init(&rp, &p, LINE);
	dcqcn_on_cnp(&rp, 1 * US);
	CHECK(rp.rc == 7500000000ull && rp.rt == LINE && dcqcn_alpha(&rp, 1 * US) == 640);
	CHECK(dcqcn_rate(&rp) == 7500000000ull);
	CHECK(rp.cuts == 1 && rp.congested);
	CHECK(dcqcn_next_deadline(&rp) == 101 * US);        /* the increase timer */

	/* Two more CNPs inside the 4 µs monitor period: one cut, at its end. */
	dcqcn_on_cnp(&rp, 3 * US);
	dcqcn_on_cnp(&rp, 4 * US);
	CHECK(rp.cuts == 1 && rp.rc == 7500000000ull);
	CHECK(dcqcn_next_deadline(&rp) == 5 * US);
	dcqcn_advance(&rp, 5 * US - 1);
	CHECK(rp.cuts == 1);
	dcqcn_advance(&rp, 5 * US);
	CHECK(rp.cuts == 2 && rp.rc == 5156250000ull && rp.rt == 7500000000ull && dcqcn_alpha(&rp, 5 * US) == 736);
	CHECK(dcqcn_next_deadline(&rp) == 105 * US);
	CHECK(rp.cnps == 3);

	/* A CNP a whole period after the last cut cuts at once. */
	dcqcn_on_cnp(&rp, 9 * US);
	CHECK(rp.cuts == 3);
}

static void test_alpha_decay(void)
{
	struct dcqcn_params p;
	struct dcqcn_rp rp;

	test_params(&p);
	dcqcn_init(&rp, &p, LINE);
	dcqcn_on_cnp(&rp, 1 * US);
	CHECK(dcqcn_alpha(&rp, 10 * US) == 640);    /* less than one K */
	CHECK(dcqcn_alpha(&rp, 11 * US) == 480);
	CHECK(dcqcn_alpha(&rp, 31 * US - 1) == 360);
	CHECK(dcqcn_alpha(&rp, 31 * US) == 270);
	/* Reading again at the same time decays nothing more. */
	CHECK(dcqcn_alpha(&rp, 31 * US) == 270);
	/* A CNP resets the α period: 270 → cut uses 270, then +g. */
	dcqcn_on_cnp(&rp, 35 * US);
	CHECK(dcqcn_alpha(&rp, 35 * US) == (270u * 768 + 256 * 1024) / 1024);
	CHECK(dcqcn_alpha(&rp, 44 * US) == (270u * 768 + 256 * 1024) / 1024);
	/* Long silence: α reaches 0 and stays there. */
	CHECK(dcqcn_alpha(&rp, 100000 * US) == 0);
}

static void test_increase_stages(void)
{
	struct dcqcn_params p;
	struct dcqcn_rp rp;

	test_params(&p);
	dcqcn_init(&rp, &p, LINE);
	dcqcn_on_cnp(&rp, 1 * US);
	dcqcn_on_cnp(&rp, 3 * US);
	dcqcn_advance(&rp, 5 * US);
	CHECK(rp.rc == 5156250000ull && rp.rt == 7500000000ull);

	dcqcn_advance(&rp, 105 * US);                       /* T=1: fast recovery */
	CHECK(rp.time_stage == 1 && rp.rt == 7500000000ull && rp.rc == 6328125000ull);
	dcqcn_advance(&rp, 205 * US);                       /* T=2: fast recovery */
	CHECK(rp.time_stage == 2 && rp.rt == 7500000000ull && rp.rc == 6914062500ull);
	dcqcn_on_sent(&rp, 999999, 206 * US);               /* B not yet */
	CHECK(rp.byte_stage == 0);
	dcqcn_on_sent(&rp, 1, 206 * US);                    /* B=1: fast recovery */
	CHECK(rp.byte_stage == 1 && rp.rt == 7500000000ull && rp.rc == 7207031250ull);
	/* A send after the timer was due runs the timer first: T=3, then
	 * the two byte stages this send completes (additive, hyper). */
	dcqcn_on_sent(&rp, 2000000, 305 * US);
	CHECK(rp.time_stage == 3 && rp.byte_stage == 3);
	CHECK(rp.rt == 8700000000ull && rp.rc == 8125878907ull);
	CHECK(rp.increases == 6);
}

static void test_recovery_to_line_rate(void)
{
	struct dcqcn_params p;
	struct dcqcn_rp rp;
	uint64_t t;

	test_params(&p);
	dcqcn_init(&rp, &p, LINE);
	dcqcn_on_cnp(&rp, 0);
	/* Fast recovery towards RT = line rate: RC halves the gap each
	 * step and reaches it exactly (rounding up). */
	for (t = 100 * US; rp.congested && t < 100000 * US; t += 100 * US)
		dcqcn_advance(&rp, t);
	CHECK(!rp.congested);
	CHECK(rp.rc == LINE && dcqcn_rate(&rp) == LINE);
	CHECK(dcqcn_next_deadline(&rp) == DCQCN_NO_DEADLINE);
	/* 2.5e9 gap: after k steps ⌈2.5e9/2^k⌉; 1 bit/s left after 32. */
	CHECK(rp.increases >= 30 && rp.increases <= 34);
}

static void test_clamps(void)
{
	struct dcqcn_params p;
	struct dcqcn_rp rp;

	/* Floor: α = 1 and no byte/timer progress: every cut halves, down
	 * to rpg_min_rate and no further. */
	test_params(&p);
	p.initial_alpha_value = 1024;
	p.rpg_min_rate = 100;
	p.rate_reduce_monitor_period = 0;
	dcqcn_init(&rp, &p, LINE);
	for (int i = 0; i < 40; i++)
		dcqcn_on_cnp(&rp, (uint64_t)i);
	CHECK(rp.rc == 100000000ull && rp.cuts == 40);

	/* rpg_min_dec_fac 90: one CNP takes at most 10 %. */
	test_params(&p);
	p.initial_alpha_value = 1024;
	p.rpg_min_dec_fac = 90;
	dcqcn_init(&rp, &p, LINE);
	dcqcn_on_cnp(&rp, 0);
	CHECK(rp.rc == 9000000000ull);

	/* rpg_max_rate below the line rate is the ceiling, also after
	 * hyper increases. */
	test_params(&p);
	p.rpg_max_rate = 8000;
	p.rpg_threshold = 0;
	dcqcn_init(&rp, &p, LINE);
	CHECK(dcqcn_rate(&rp) == 8000000000ull);
	dcqcn_on_cnp(&rp, 0);
	CHECK(rp.rc == 6000000000ull && rp.rt == 8000000000ull);
	dcqcn_on_sent(&rp, 5000000, 1);
	CHECK(rp.rt <= 8000000000ull && rp.rc <= 8000000000ull);

	/* rate_to_set_on_first_cnp: the first cut sets RC to it. */
	test_params(&p);
	p.rate_to_set_on_first_cnp = 1000;
	dcqcn_init(&rp, &p, LINE);
	dcqcn_on_cnp(&rp, 0);
	CHECK(rp.rc == 1000000000ull && rp.rt == LINE);
}

static void test_target_clamping(void)
{
	struct dcqcn_params p;
	struct dcqcn_rp rp;

	/* clamp_tgt_rate 0: a second cut with no increase since keeps RT at
	 * the rate before the first cut. */
	test_params(&p);
	p.clamp_tgt_rate = 0;
	dcqcn_init(&rp, &p, LINE);
	dcqcn_on_cnp(&rp, 1 * US);
	dcqcn_on_cnp(&rp, 6 * US);
	CHECK(rp.cuts == 2 && rp.rt == LINE && rp.rc == 5156250000ull);
	/* After a timer increase (and _after_time_inc 1) the next cut
	 * does set RT ← RC. */
	dcqcn_advance(&rp, 106 * US);
	CHECK(rp.time_stage == 1);
	uint64_t rc = rp.rc;
	dcqcn_on_cnp(&rp, 107 * US);
	CHECK(rp.rt == rc);
	/* With _after_time_inc 0 a timer increase does not count. */
	p.clamp_tgt_rate_after_time_inc = 0;
	dcqcn_init(&rp, &p, LINE);
	dcqcn_on_cnp(&rp, 1 * US);
	dcqcn_advance(&rp, 101 * US);
	dcqcn_on_cnp(&rp, 102 * US);
	CHECK(rp.rt == LINE);
}

static void test_param_table(void)
{
	struct dcqcn_params p;

	/* The ConnectX factory set (docs/congestion.md cites each). */
	dcqcn_params_default(&p, DCQCN_PROFILE_MLX5);
	CHECK(p.rpg_time_reset == 300 && p.rpg_byte_reset == 32767);
	CHECK(p.rpg_ai_rate == 5 && p.rpg_hai_rate == 50 && p.rpg_gd == 11);
	CHECK(p.dce_tcp_g == 1019 && p.initial_alpha_value == 1023);
	CHECK(p.rate_reduce_monitor_period == 4 && p.rpg_min_rate == 1);
	/* The paper's set. */
	dcqcn_params_default(&p, DCQCN_PROFILE_PAPER);
	CHECK(p.rpg_time_reset == 55 && p.dce_tcp_rtt == 55 && p.rpg_threshold == 5 && p.dce_tcp_g == 1020);

	CHECK(dcqcn_param_set(&p, "rpg_ai_rate", 7) == 0 && p.rpg_ai_rate == 7);
	CHECK(dcqcn_param_set(&p, "rpg_gd", 9) == ERANGE && p.rpg_gd == 11);
	CHECK(dcqcn_param_set(&p, "dce_tcp_g", 1025) == ERANGE);
	CHECK(dcqcn_param_set(&p, "no_such_thing", 1) == ENOENT);
	/* Every entry reads back what it set. */
	for (size_t i = 0; i < dcqcn_param_count; i++) {
		const struct dcqcn_param_info *info = &dcqcn_param_table[i];

		CHECK(dcqcn_param_set(&p, info->name, info->min) == 0);
		CHECK(dcqcn_param_get(&p, info) == info->min);
	}
}

/* Same inputs, same outputs: a long random-looking run twice. */
static void test_replay(void)
{
	struct dcqcn_params p;
	struct dcqcn_rp a, b;
	uint64_t x = 12345;

	dcqcn_params_default(&p, DCQCN_PROFILE_MLX5);
	dcqcn_init(&a, &p, 25000000000ull);
	dcqcn_init(&b, &p, 25000000000ull);
	for (uint64_t t = 0; t < 50000 * US; t += 7 * US) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		struct dcqcn_rp *both[2] = { &a, &b };
		for (int k = 0; k < 2; k++) {
			if ((x >> 60) == 0)
				dcqcn_on_cnp(both[k], t);
			dcqcn_on_sent(both[k], 4096, t);
			dcqcn_advance(both[k], t);
		}
		CHECK(a.rc == b.rc && a.rt == b.rt && a.alpha == b.alpha);
		CHECK(a.rc >= 1000000ull && a.rc <= 25000000000ull && a.rc <= a.rt);
	}
	CHECK(a.cuts > 10 && a.increases > 10);
}

int main(void)
{
	test_uncongested();
	test_first_cnp_and_monitor_period();
	test_alpha_decay();
	test_increase_stages();
	test_recovery_to_line_rate();
	test_clamps();
	test_target_clamping();
	test_param_table();
	test_replay();
	if (check_failures)
		return check_exit("rnic_unit_dcqcn");
	printf("unit_dcqcn: ok\n");
	return 0;
}
