/*
 * unit_dctcp.c — the DCTCP-style reaction point (rnic/dctcp.c) against
 * sequences computed by hand.
 *
 * Parameters with round numbers: line rate 10 Gb/s, g = 1/4 (256/1024),
 * α starts at 1, additive step 500 Mb/s, floor 100 Mb/s.  Sequences
 * count packets.  α is kept in 1/2^20.
 *
 *   ack 1, snd_nxt 10   first window opens: it ends at 10, batch 11
 *   echo (snd_nxt 12)   cut: 10e9·(1 − 1/2) = 5e9; CWR until ack > 12
 *   echo (snd_nxt 13)   counted, no cut (CWR)
 *   ack 11, nxt 20      11 > 10: window ends.  frac = 2/11 =
 *                       ⌊2·2^20/11⌋ = 190 650; α = (2^20·768 +
 *                       190 650·256)/1024 = 834 094; batch 20−11+1 = 10,
 *                       next window ends at 20; still CWR (11 ≤ 12):
 *                       no increase
 *   ack 13, nxt 22      CWR ends (13 > 12); not a new window: no increase
 *   ack 21, nxt 30      window ends, no echo: α = 834 094·768/1024 =
 *                       625 570; +500 Mb/s: 5.5e9
 *   echo (nxt 31)       cut by α/2: 5.5e9 − ⌊5.5e9·625 570/2^21⌋ =
 *                       5.5e9 − 1 640 622 615 = 3 859 377 385
 */
#include <string.h>

#include "rnic/dctcp.h"
#include "unit_util.h"

#define LINE 10000000000ull

static void test_params(struct dctcp_params *p)
{
	dctcp_params_default(p);
	p->g = 256;
	p->rate_ai = 500;
	p->min_rate = 100;
	p->initial_alpha = 1024;
}

static void test_defaults(void)
{
	struct dctcp_params p;
	struct dctcp_cc s;

	dctcp_params_default(&p);
	CHECK(p.g == 64 && p.rate_ai == 1000 && p.initial_alpha == 1024);
	dctcp_init(&s, &p, LINE);
	CHECK(dctcp_rate(&s) == LINE && dctcp_alpha(&s) == 1024);
	/* ACKs without echoes at the line rate change nothing. */
	for (uint64_t i = 1; i < 100; i++)
		dctcp_on_ack(&s, i * 10, i * 10 + 20);
	CHECK(dctcp_rate(&s) == LINE && s.cuts == 0 && s.increases == 0);
	/* α decays by (1 − g) per window: 1024 → 960 after one window. */
	CHECK(dctcp_alpha(&s) < 1024);
}

static void test_sequence(void)
{
	struct dctcp_params p;
	struct dctcp_cc s;

	test_params(&p);
	dctcp_init(&s, &p, LINE);
	dctcp_on_ack(&s, 1, 10);
	CHECK(s.started && s.window_end == 10 && s.batch == 11);
	CHECK(dctcp_rate(&s) == LINE);

	dctcp_on_mark(&s, 12);
	CHECK(dctcp_rate(&s) == 5000000000ull);
	CHECK(s.cwr && s.cwr_end == 12 && s.cuts == 1);
	dctcp_on_mark(&s, 13);
	CHECK(dctcp_rate(&s) == 5000000000ull && s.cuts == 1 && s.marks == 2);

	dctcp_on_ack(&s, 11, 20);
	CHECK(s.alpha == 834094);
	CHECK(s.batch == 10 && s.window_end == 20 && s.marks == 0);
	CHECK(s.cwr && dctcp_rate(&s) == 5000000000ull);

	dctcp_on_ack(&s, 13, 22);
	CHECK(!s.cwr && dctcp_rate(&s) == 5000000000ull && s.increases == 0);

	dctcp_on_ack(&s, 21, 30);
	CHECK(s.alpha == 625570 && dctcp_alpha(&s) == 610);
	CHECK(dctcp_rate(&s) == 5500000000ull && s.increases == 1);

	dctcp_on_mark(&s, 31);
	CHECK(dctcp_rate(&s) == 3859377385ull && s.cuts == 2);
	CHECK(s.echoes == 3);
}

/* Every packet of a window marked: α → 1 and stays there (frac ≤ 1). */
static void test_all_marked(void)
{
	struct dctcp_params p;
	struct dctcp_cc s;

	test_params(&p);
	p.initial_alpha = 0;
	dctcp_init(&s, &p, LINE);
	dctcp_on_ack(&s, 0, 9);         /* batch 10 */
	for (int i = 0; i < 15; i++)
		dctcp_on_mark(&s, 9);   /* more echoes than packets */
	dctcp_on_ack(&s, 10, 19);
	/* α = (0·768 + 2^20·256)/1024 = 262 144 */
	CHECK(s.alpha == 262144);
	/* With α = 0 the first cut took nothing off. */
	CHECK(dctcp_rate(&s) == LINE && s.cuts == 1);
}

/* The floor: min_rate, and at most the line rate when it is lower. */
static void test_clamps(void)
{
	struct dctcp_params p;
	struct dctcp_cc s;

	test_params(&p);
	dctcp_init(&s, &p, 150000000ull);
	dctcp_on_mark(&s, 1);           /* 150M·(1 − 1/2) = 75M < 100M */
	CHECK(dctcp_rate(&s) == 100000000ull);
	dctcp_on_ack(&s, 2, 3);         /* first window, CWR over: +500M, capped */
	CHECK(dctcp_rate(&s) == 150000000ull);

	p.min_rate = 1000;              /* floor above the line rate */
	dctcp_init(&s, &p, 150000000ull);
	dctcp_on_mark(&s, 1);
	CHECK(dctcp_rate(&s) == 150000000ull);
}

/* Two machines fed the same events agree bit for bit. */
static void test_replay(void)
{
	struct dctcp_params p;
	struct dctcp_cc a, b;
	uint64_t x = 99, nxt = 0, ack = 0;

	dctcp_params_default(&p);
	dctcp_init(&a, &p, 25000000000ull);
	dctcp_init(&b, &p, 25000000000ull);
	for (int i = 0; i < 5000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		nxt += 1 + (x >> 61);
		if ((x >> 59 & 3) == 0) {
			dctcp_on_mark(&a, nxt);
			dctcp_on_mark(&b, nxt);
		} else {
			/* The peer is up to 3 packets behind. */
			if (nxt - (x >> 62) > ack)
				ack = nxt - (x >> 62);
			dctcp_on_ack(&a, ack, nxt);
			dctcp_on_ack(&b, ack, nxt);
		}
		CHECK(a.rate == b.rate && a.alpha == b.alpha);
		CHECK(a.rate >= 100000000ull && a.rate <= 25000000000ull);
	}
	if (a.cuts <= 10 || a.increases <= 10)
		fprintf(stderr, "  replay: %llu cuts, %llu increases\n", (unsigned long long)a.cuts,
			(unsigned long long)a.increases);
	CHECK(a.cuts > 10 && a.increases > 10);
}

int main(void)
{
	test_defaults();
	test_sequence();
	test_all_marked();
	test_clamps();
	test_replay();
	if (check_failures)
		return check_exit("rnic_unit_dctcp");
	printf("unit_dctcp: ok\n");
	return 0;
}
