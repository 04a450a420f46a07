/*
 * pint_test.c — HPCC-PINT's fabric side (sim/pint.c) against numbers
 * worked out by hand: the one-field encoding (within one power of the
 * base, the rounding unbiased, the extremes), and a port's U under
 * steady traffic (1000-byte packets back to back at 100 Gb/s: U → 1; the
 * same with a bandwidth-delay product queued: U → 2).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "../check.h"
#include "base/prng.h"
#include "sim/pint.h"

static void test_encoding(void)
{
	struct sim_pint p;
	uint64_t rng[4];
	static const double us[] = { 0.001, 0.01, 0.1, 0.5, 0.95, 1.0, 1.7, 10.0 };

	sim_pint_init(&p, 1.01, 10000);
	prng_seed(rng, 7);
	for (unsigned i = 0; i < sizeof(us) / sizeof(us[0]); i++) {
		double want = ceil(us[i] * 512) / 512, sum = 0;
		const int n = 200000;
		for (int k = 0; k < n; k++) {
			uint16_t f = sim_pint_encode(&p, us[i], (double)(prng_next(rng) >> 11) / 9007199254740992.0);
			double got = sim_pint_decode_q20(&p, f) / 1048576.0;
			/* always within one power of the base around u */
			CHECK(got >= want / 1.0101 && got <= want * 1.0101);
			sum += got;
		}
		/* unbiased: the mean within 0.1% of ceil(512 u)/512 */
		CHECK(fabs(sum / n - want) <= want * 0.001);
	}
	/* The rounding: a draw of 0 goes up, one just below 1 goes down;
	 * a power of the base exactly is its own field either way. */
	uint16_t up = sim_pint_encode(&p, 0.5, 0), down = sim_pint_encode(&p, 0.5, 0.999999);
	CHECK(up == down + 1);
	CHECK(sim_pint_encode(&p, 1.0 / 512, 0) == 0 && sim_pint_encode(&p, 1.0 / 512, 0.999) == 0);
	CHECK(sim_pint_encode(&p, 0, 0.5) == 0);                 /* nothing: the least value */
	CHECK(sim_pint_decode_q20(&p, 0) == 2048);              /* 1/512 */
	/* An absurd U is clamped (10^12/512): log_1.01(10^12) = 2776.9. */
	uint16_t huge = sim_pint_encode(&p, 1e30, 0.5);
	CHECK(huge == 2776 || huge == 2777);
	CHECK(sim_pint_decode_q20(&p, huge) == UINT32_MAX);
}

/* A port at 100 Gb/s (12.5 bytes/ns), T = 10 us: 1000-byte packets every
 * 80 ns.  Each adds 1000/(12.5·10^4) = 0.008 and U keeps (1 − 80/10^4) of
 * itself, so U → 0.008·10^4/80 = 1; a queue of 125 000 bytes (the BDP)
 * adds 80·125 000/(12.5·10^8) = 0.008 more: U → 2. */
static double steady(uint64_t qlen)
{
	struct sim_pint p;
	struct sim_pint_port port = { 0 };
	uint64_t now = 50000;
	double u = 0;

	sim_pint_init(&p, 1.01, 10000);
	for (int i = 0; i < 20000; i++, now += 80) {
		u = sim_pint_port_u(&p, &port, now, qlen, 100000000000ull);
		sim_pint_port_sent(&port, now, 1000);
	}
	return u;
}

static void test_port(void)
{
	struct sim_pint p;
	struct sim_pint_port port = { 0 };

	sim_pint_init(&p, 1.01, 10000);
	/* The first packet: no previous one, no queue: 0. */
	CHECK(sim_pint_port_u(&p, &port, 20000, 0, 100000000000ull) == 0);
	sim_pint_port_sent(&port, 20000, 1000);
	/* 80 ns later: the previous packet's 1000 bytes, 0.008 exactly. */
	CHECK(fabs(sim_pint_port_u(&p, &port, 20080, 0, 100000000000ull) - 0.008) < 1e-12);
	/* A queue under 256 bytes is not counted (HPCC's qlen >> 8). */
	struct sim_pint_port q = { .last_ts = 0, .last_bytes = 0 };
	CHECK(sim_pint_port_u(&p, &q, 10000, 255, 100000000000ull) == 0);
	/* An idle gap of T or more forgets U: only the packet's term stays. */
	port.u = 5;
	CHECK(fabs(sim_pint_port_u(&p, &port, 1000000, 0, 100000000000ull) - 0.008) < 1e-12);
	CHECK(fabs(steady(0) - 1.0) < 1e-6);
	CHECK(fabs(steady(125000) - 2.0) < 1e-6);
}

int main(void)
{
	test_encoding();
	test_port();
	if (check_failures)
		return check_exit("sim_pint_test");
	printf("sim pint: encoding and port utilisation ok\n");
	return 0;
}
