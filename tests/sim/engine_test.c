/*
 * engine_test.c — the event engine (src/sim/engine.c): events run in
 * (time, sequence) order, whether they waited in the timing wheel (due
 * within SIM_WHEEL_NS) or the heap (later), including events scheduled
 * from events, events scheduled with a sequence number reserved earlier
 * (sim_at_seq: they run among their time's events where that number
 * puts them), and events "in the past", which run now; sim_run_until
 * stops at its bound; sim_clear hands over every waiting event.  Each
 * event's due time and number are kept, and the run is checked against
 * them: every event runs once, at its time, in order.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"
#include "base/prng.h"
#include "sim/engine.h"

#define N 20000
#define MAX_EVENTS (4 * N)

static struct sim_engine e;
static uint64_t rng[4];
static uint64_t due[MAX_EVENTS];        /* by sequence number: when it must run */
static bool done[MAX_EVENTS];
static uint64_t last_at, last_seq, ran, scheduled;
/* Numbers reserved and not used yet, scheduled a few events later. */
static uint64_t held[8];
static unsigned nheld;

static void ev(void *ctx, uint64_t seq, uint64_t now);

static void schedule(uint64_t at, uint64_t seq)
{
	CHECK(seq < MAX_EVENTS);
	if (seq >= MAX_EVENTS)
		return;
	due[seq] = at < e.now ? e.now : at;
	scheduled++;
	CHECK(sim_at_seq(&e, at, seq, ev, NULL, seq) == 0);
}

static void ev(void *ctx, uint64_t seq, uint64_t now)
{
	(void)ctx;
	CHECK(now == due[seq]);
	CHECK(!done[seq]);
	done[seq] = true;
	CHECK(now > last_at || (now == last_at && seq > last_seq) || ran == 0);
	last_at = now;
	last_seq = seq;
	ran++;
	if (e.next_seq >= 3 * N)
		return;
	/* Now and then more: soon (the wheel), far (the heap), or with a
	 * number reserved earlier. */
	uint64_t r = prng_next(rng) % 16;
	if (r < 4)
		schedule(now + prng_next(rng) % 3, sim_reserve_seq(&e));
	else if (r < 6)
		schedule(now + prng_next(rng) % 20000, sim_reserve_seq(&e));
	else if (r < 8 && nheld < 8)
		held[nheld++] = sim_reserve_seq(&e);
	else if (r < 10 && nheld)
		schedule(now + 1 + prng_next(rng) % 5, held[--nheld]);
}

static void count_one(const struct sim_event *x, void *ctx)
{
	(void)x;
	++*(uint64_t *)ctx;
}

int main(void)
{
	prng_seed(rng, 5);
	sim_engine_init(&e);
	for (uint64_t i = 0; i < N; i++)
		schedule(prng_next(rng) % 20000, sim_reserve_seq(&e));
	sim_run_until(&e, 2500);
	CHECK(e.now == 2500);
	CHECK(sim_next_time(&e) > 2500);
	uint64_t before = ran;
	/* An event for the past runs at now, before the others due now. */
	schedule(10, sim_reserve_seq(&e));
	CHECK(sim_next_time(&e) == 2500);
	while (sim_step(&e))
		;
	while (nheld)                   /* numbers held when the run ran out */
		schedule(e.now + 1, held[--nheld]);
	while (sim_step(&e))
		;
	CHECK(ran > before && ran == scheduled);
	CHECK(sim_next_time(&e) == UINT64_MAX && sim_pending(&e) == 0);

	/* sim_clear: every waiting event, wheel and heap, once. */
	uint64_t count = 0;
	for (uint64_t i = 0; i < 100; i++)
		CHECK(sim_at(&e, e.now + i * 97, ev, NULL, 0) == 0);
	CHECK(sim_pending(&e) == 100);
	sim_clear(&e, count_one, &count);
	CHECK(count == 100 && sim_pending(&e) == 0 && !sim_step(&e));
	sim_engine_free(&e);
	if (check_failures)
		return check_exit("sim_engine_test");
	printf("sim engine: %llu events in order\n", (unsigned long long)ran);
	return 0;
}
