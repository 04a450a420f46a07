/*
 * engine.h — the simulator's discrete-event engine (engine.c): "wake me
 * at t" (sim_at) and "run the next event" (sim_step), nothing else.
 *
 * Time is integer nanoseconds.  Events due at the same time run in the
 * order they were scheduled (a sequence number breaks ties), so a run is
 * a pure function of its inputs and seed: it replays bit for bit.  The
 * engine is an object, not a global: several simulations can live in one
 * process (tests run two and compare them).
 *
 * The queue is a 4-ary heap: O(log n) per event.  A calendar queue or a
 * ladder queue would be O(1) amortised for the near-uniform spacing of
 * packet events; the heap is kept because at 1 024 hosts some 17 000
 * events wait, 700 KB that stay in the caches (a heap of 16-byte keys,
 * four children to a cache line, measured no faster).  sim_step
 * prefetches the next event's ctx and arg: those are what miss.
 */
#ifndef SOFTRNIC_SIM_ENGINE_H
#define SOFTRNIC_SIM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*sim_fn)(void *ctx, uint64_t arg, uint64_t now);

struct sim_event {
	uint64_t at, seq;
	sim_fn fn;
	void *ctx;
	uint64_t arg;
};

struct sim_engine {
	uint64_t now;
	uint64_t next_seq;
	uint64_t events_run;
	struct sim_event *heap;
	size_t len, cap;
};

void sim_engine_init(struct sim_engine *e);
void sim_engine_free(struct sim_engine *e);
/* Call fn(ctx, arg, at) at time `at` (not before now).  0 or ENOMEM. */
int sim_at(struct sim_engine *e, uint64_t at, sim_fn fn, void *ctx, uint64_t arg);
/* A sequence number as sim_at would give an event now, for an event to
 * be scheduled later with sim_at_seq: it then runs, among events due at
 * the same time, where it would have run had it been scheduled now (a
 * caller can keep far-future events out of the heap until they near). */
uint64_t sim_reserve_seq(struct sim_engine *e);
int sim_at_seq(struct sim_engine *e, uint64_t at, uint64_t seq, sim_fn fn, void *ctx, uint64_t arg);
/* Take the earliest event out without running it (a second engine can
 * hold events back until they are due in the first); false when none. */
bool sim_pop(struct sim_engine *e, struct sim_event *out);
/* Run the earliest event; false when none is left. */
bool sim_step(struct sim_engine *e);
/* Run every event due at or before `until`, then set now = until. */
void sim_run_until(struct sim_engine *e, uint64_t until);
/* The earliest event's time (UINT64_MAX: none). */
uint64_t sim_next_time(const struct sim_engine *e);

#endif
