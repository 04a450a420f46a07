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
 * delay or a serialization time ahead: O(1) each, where a heap's
 * sift-down per event costs a fifth of a 1 024-host run (its
 * data-dependent branches, not its cache lines: such a heap's 700 KB
 * fit).
 *
 * Partitions (struct sim_parts, below): a model split into up to
 * SIM_MAX_PARTS groups runs as that many engines, one per group, in
 * windows as long as the lookahead (the least time in which anything one
 * group does can reach another).  Within a window each engine runs its
 * own events, on its own thread or one after the other; an event for
 * another group waits in an outbox and is handed over between windows,
 * in an order fixed by the groups and the outboxes, so a run depends on
 * its inputs and the number of partitions, never on the threads'
 * timing.  One partition is one window as long as the run: the plain
 * engine, event for event.
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

/* ---- partitions: several engines in windows (above) ------------------- */

#define SIM_MAX_PARTS 8
#define SIM_MAX_PARTS_TEXT "8"

struct sim_outbox {
	struct sim_event *ev;           /* in the order posted (seq unused) */
	size_t len, cap;
};

struct sim_parts {
	unsigned n;
	bool threads;                   /* a thread per partition, else one after the other */
	uint64_t lookahead;             /* the windows' length (UINT64_MAX: one window) */
	struct sim_engine *eng[SIM_MAX_PARTS];  /* eng[0]: the caller's; the others own[q] */
	struct sim_engine own[SIM_MAX_PARTS];
	struct sim_outbox out[SIM_MAX_PARTS][SIM_MAX_PARTS];    /* [from][to] */
	int error[SIM_MAX_PARTS];       /* ENOMEM: an outbox of that partition could not grow */
};

/* The model's hooks, called by the run with every engine stopped, except
 * running (also in a lone partition's window, before each event). */
struct sim_parts_ops {
	/* After the outboxes were handed over: the model's own work between
	 * windows.  0, or an errno that ends the run. */
	int (*between)(void *ctx);
	/* False: the run is over.  A lone partition asks before each event,
	 * several between windows. */
	bool (*running)(void *ctx);
	/* The earliest event the model holds outside the engines (UINT64_MAX:
	 * none), so that a window starts no later than it. */
	uint64_t (*held_next)(void *ctx);
	/* The window [start, end) is about to run.  0, or an errno. */
	int (*window)(void *ctx, uint64_t start, uint64_t end);
	/* Between windows, and every 65 536 events of a lone partition. */
	void (*progress)(void *ctx);
};

/* One partition: `first`, one window as long as the run. */
void sim_parts_init(struct sim_parts *g, struct sim_engine *first);
/* n partitions (1 .. SIM_MAX_PARTS), on threads or not; EINVAL otherwise. */
int sim_parts_set(struct sim_parts *g, unsigned n, bool threads);
/* Free the outboxes and the engines of partitions 1 .. n-1 (not eng[0]). */
void sim_parts_free(struct sim_parts *g);
/* An event for partition `to` from an event of partition `from`: its own
 * engine's if the same, else the outbox (`at` at least a lookahead
 * ahead).  An outbox that cannot grow sets error[from]. */
void sim_parts_post(struct sim_parts *g, unsigned from, unsigned to, uint64_t at, sim_fn fn, void *ctx, uint64_t arg);
/* Remove every waiting event of every engine and outbox (sim_clear). */
void sim_parts_clear(struct sim_parts *g, void (*each)(const struct sim_event *ev, void *ctx), void *ctx);
/* Run in windows until ops->running says no or the next event is after
 * stop (< UINT64_MAX).  0, ENOMEM, EAGAIN (a thread could not start:
 * nothing ran), or the hooks' errno. */
int sim_parts_run(struct sim_parts *g, uint64_t stop, const struct sim_parts_ops *ops, void *ctx);
/* Events run and the latest clock, over the partitions. */
uint64_t sim_parts_events(const struct sim_parts *g);
uint64_t sim_parts_now(const struct sim_parts *g);

#endif
