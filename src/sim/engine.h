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
 * Two stores, one order.  Events due within SIM_WHEEL_NS of now wait in
 * a timing wheel: a slot per nanosecond, each a FIFO (events of one
 * slot share their time, and sim_at's sequence numbers only grow, so
 * appending keeps them in order), found through a bitmap of the slots
 * in use.  Later events (timers, flows' starts) wait in a 4-ary heap.
 * The next event is the earlier of the two fronts.  Nearly every event
 * of a fabric is a packet's arrival or a port's next turn, a link's
 * delay or a serialization time ahead: O(1) each, where the heap's
 * sift-down was a fifth of a 1 024-host run (its data-dependent
 * branches, not its cache lines: the heap's 700 KB fit).
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

#define SIM_WHEEL_NS 4096u             /* the wheel's span: a power of two */

struct sim_wheel_slot {
	struct sim_event *ev;           /* FIFO: ev[head .. head+len) */
	uint32_t head, len, cap;
};

struct sim_engine {
	uint64_t now;
	uint64_t next_seq;
	uint64_t events_run;
	/* Events due at or after now + SIM_WHEEL_NS when scheduled. */
	struct sim_event *heap;
	size_t len, cap;
	/* Events due before then: slot at % SIM_WHEEL_NS (allocated at the
	 * first such event), and a bit per slot in use. */
	struct sim_wheel_slot *wheel;
	uint64_t wheel_bits[SIM_WHEEL_NS / 64];
	size_t wheel_len;
	uint64_t wheel_min;             /* the wheel's earliest time, while wheel_len */
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
/* Events waiting. */
size_t sim_pending(const struct sim_engine *e);
/* Remove every waiting event, calling each(ev, ctx) on it first (to free
 * what its argument points to). */
void sim_clear(struct sim_engine *e, void (*each)(const struct sim_event *ev, void *ctx), void *ctx);

#endif
