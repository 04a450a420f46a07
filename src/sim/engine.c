/*
 * engine.c — the event queue of engine.h: a timing wheel for what is due
 * soon, a 4-ary heap for the rest, popped in one (time, sequence) order.
 *
 * The wheel holds only events due in [now, now + SIM_WHEEL_NS): two of
 * them in one slot are then due at the same nanosecond, and a slot is a
 * FIFO kept in sequence order.  sim_at appends (its sequence numbers only
 * grow); sim_at_seq, whose number may be older, inserts in place.  An
 * event is in the heap when it was scheduled SIM_WHEEL_NS or more ahead;
 * it stays there when its time nears, and pop compares the heap's front
 * with the wheel's, so nothing ever moves between the two.
 *
 * The heap is 4-ary: half the depth of a binary one, and a node's
 * children share a cache line or two.
 *
 * At the end, the partitions' windows (engine.h, struct sim_parts): the
 * outboxes, the hand-over between windows, the threads and the barrier
 * they meet at.
 */
#include "sim/engine.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define WHEEL_MASK (SIM_WHEEL_NS - 1)
#define WHEEL_WORDS (SIM_WHEEL_NS / 64)

void sim_engine_init(struct sim_engine *e)
{
	memset(e, 0, sizeof(*e));
}

void sim_engine_free(struct sim_engine *e)
{
	if (e->wheel)
		for (size_t i = 0; i < SIM_WHEEL_NS; i++)
			free(e->wheel[i].ev);
	free(e->wheel);
	free(e->heap);
	memset(e, 0, sizeof(*e));
}

static bool before(const struct sim_event *a, const struct sim_event *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

uint64_t sim_reserve_seq(struct sim_engine *e)
{
	return e->next_seq++;
}

int sim_at(struct sim_engine *e, uint64_t at, sim_fn fn, void *ctx, uint64_t arg)
{
	return sim_at_seq(e, at, e->next_seq++, fn, ctx, arg);
}

static int heap_push(struct sim_engine *e, const struct sim_event *ev)
{
	if (e->len == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 1024;
		struct sim_event *h = realloc(e->heap, cap * sizeof(*h));
		if (!h)
			return ENOMEM;
		e->heap = h;
		e->cap = cap;
	}
	size_t i = e->len++;
	while (i > 0) {
		size_t parent = (i - 1) / 4;
		if (!before(ev, &e->heap[parent]))
			break;
		e->heap[i] = e->heap[parent];
		i = parent;
	}
	e->heap[i] = *ev;
	return 0;
}

static struct sim_event heap_pop(struct sim_engine *e)
{
	struct sim_event top = e->heap[0], last = e->heap[--e->len];
	size_t i = 0;

	for (;;) {
		size_t first = 4 * i + 1, c = first;
		if (first >= e->len)
			break;
		for (size_t k = first + 1; k < first + 4 && k < e->len; k++)
			if (before(&e->heap[k], &e->heap[c]))
				c = k;
		if (!before(&e->heap[c], &last))
			break;
		e->heap[i] = e->heap[c];
		i = c;
	}
	if (e->len)
		e->heap[i] = last;
	return top;
}

static int wheel_push(struct sim_engine *e, const struct sim_event *ev)
{
	if (!e->wheel && !(e->wheel = calloc(SIM_WHEEL_NS, sizeof(*e->wheel))))
		return ENOMEM;
	size_t idx = ev->at & WHEEL_MASK;
	struct sim_wheel_slot *s = &e->wheel[idx];
	if (s->head + s->len == s->cap) {
		if (s->head) {
			/* Room at the front: slide down first. */
			memmove(s->ev, s->ev + s->head, s->len * sizeof(*s->ev));
			s->head = 0;
		} else {
			uint32_t cap = s->cap ? s->cap * 2 : 16;
			struct sim_event *v = realloc(s->ev, cap * sizeof(*v));
			if (!v)
				return ENOMEM;
			s->ev = v;
			s->cap = cap;
		}
	}
	/* In sequence order: at the end, unless an older number (sim_at_seq)
	 * belongs further up. */
	struct sim_event *v = s->ev + s->head;
	uint32_t i = s->len;
	while (i > 0 && v[i - 1].seq > ev->seq) {
		v[i] = v[i - 1];
		i--;
	}
	v[i] = *ev;
	if (!s->len++)
		e->wheel_bits[idx / 64] |= 1ull << (idx % 64);
	if (!e->wheel_len++ || ev->at < e->wheel_min)
		e->wheel_min = ev->at;
	return 0;
}

/* The slot of the wheel's earliest event, or NULL.  The engine keeps its
 * time (wheel_min) rather than looking for it at every call: the search
 * runs only when a slot empties (wheel_pop), once per simulated time. */
static struct sim_wheel_slot *wheel_front(const struct sim_engine *e)
{
	return e->wheel_len ? &e->wheel[e->wheel_min & WHEEL_MASK] : NULL;
}

/* After the slot of time `at` emptied: the wheel's next time.  Its
 * events are due in (at, at + SIM_WHEEL_NS): the first slot in use after
 * at's, going round, holds them. */
static uint64_t wheel_next_after(const struct sim_engine *e, uint64_t at)
{
	size_t start = at & WHEEL_MASK, word = start / 64;
	uint64_t w = e->wheel_bits[word] & (~0ull << (start % 64));
	for (size_t n = 0; n <= WHEEL_WORDS; n++) {
		if (w) {
			size_t idx = word * 64 + (size_t)__builtin_ctzll(w);
			return at + ((idx - start) & WHEEL_MASK);
		}
		word = (word + 1) % WHEEL_WORDS;
		w = e->wheel_bits[word];
	}
	return UINT64_MAX;      /* not reached: wheel_len counts the bits' events */
}

static struct sim_event wheel_pop(struct sim_engine *e, struct sim_wheel_slot *s)
{
	struct sim_event ev = s->ev[s->head];

	e->wheel_len--;
	if (--s->len) {
		s->head++;
	} else {
		s->head = 0;
		size_t idx = (size_t)(s - e->wheel);
		e->wheel_bits[idx / 64] &= ~(1ull << (idx % 64));
		if (e->wheel_len)
			e->wheel_min = wheel_next_after(e, ev.at);
	}
	return ev;
}

int sim_at_seq(struct sim_engine *e, uint64_t at, uint64_t seq, sim_fn fn, void *ctx, uint64_t arg)
{
	struct sim_event ev = { .at = at < e->now ? e->now : at, .seq = seq, .fn = fn, .ctx = ctx, .arg = arg };

	return ev.at - e->now < SIM_WHEEL_NS ? wheel_push(e, &ev) : heap_push(e, &ev);
}

/* The earliest event's place: its wheel slot, or NULL for the heap's
 * front.  Only with an event waiting. */
static struct sim_wheel_slot *front(const struct sim_engine *e)
{
	struct sim_wheel_slot *s = wheel_front(e);

	return s && (!e->len || before(&s->ev[s->head], &e->heap[0])) ? s : NULL;
}

static struct sim_event pop(struct sim_engine *e)
{
	struct sim_wheel_slot *s = front(e);

	return s ? wheel_pop(e, s) : heap_pop(e);
}

size_t sim_pending(const struct sim_engine *e)
{
	return e->len + e->wheel_len;
}

bool sim_pop(struct sim_engine *e, struct sim_event *out)
{
	if (!sim_pending(e))
		return false;
	*out = pop(e);
	return true;
}

bool sim_step(struct sim_engine *e)
{
	if (!sim_pending(e))
		return false;
	struct sim_event ev = pop(e);
	e->now = ev.at;
	e->events_run++;
	/* The next event's object (a port) and argument (most often a
	 * packet) start on their way into the cache while this one runs:
	 * with a thousand hosts they are rarely there, and without the
	 * prefetch these first loads take a third of a large run's time.  An argument below 2^32
	 * is a number, not an address (a prefetch would not fault, but
	 * could walk the page tables for nothing). */
	if (sim_pending(e)) {
		struct sim_wheel_slot *s = front(e);
		const struct sim_event *next = s ? &s->ev[s->head] : &e->heap[0];
		__builtin_prefetch(next->ctx);
		if (next->arg >> 32)
			__builtin_prefetch((const void *)(uintptr_t)next->arg);
	}
	ev.fn(ev.ctx, ev.arg, ev.at);
	return true;
}

uint64_t sim_next_time(const struct sim_engine *e)
{
	if (!sim_pending(e))
		return UINT64_MAX;
	struct sim_wheel_slot *s = front(e);
	return s ? s->ev[s->head].at : e->heap[0].at;
}

void sim_run_until(struct sim_engine *e, uint64_t until)
{
	while (sim_next_time(e) <= until)
		sim_step(e);
	if (e->now < until)
		e->now = until;
}

void sim_clear(struct sim_engine *e, void (*each)(const struct sim_event *ev, void *ctx), void *ctx)
{
	for (size_t i = 0; i < e->len; i++)
		each(&e->heap[i], ctx);
	e->len = 0;
	for (size_t i = 0; e->wheel && i < SIM_WHEEL_NS; i++) {
		struct sim_wheel_slot *s = &e->wheel[i];
		for (uint32_t k = 0; k < s->len; k++)
			each(&s->ev[s->head + k], ctx);
		s->head = s->len = 0;
	}
	memset(e->wheel_bits, 0, sizeof(e->wheel_bits));
	e->wheel_len = 0;
}

/* ---- partitions: the windows (engine.h, "Partitions") ------------------ */

#define PROGRESS_EVERY 65536u

void sim_parts_init(struct sim_parts *g, struct sim_engine *first)
{
	memset(g, 0, sizeof(*g));
	g->n = 1;
	g->lookahead = UINT64_MAX;
	g->eng[0] = first;
}

int sim_parts_set(struct sim_parts *g, unsigned n, bool threads)
{
	if (!n || n > SIM_MAX_PARTS)
		return EINVAL;
	for (unsigned q = 1; q < n; q++) {
		sim_engine_init(&g->own[q]);
		g->eng[q] = &g->own[q];
	}
	g->n = n;
	g->threads = threads;
	return 0;
}

void sim_parts_free(struct sim_parts *g)
{
	for (unsigned p = 0; p < SIM_MAX_PARTS; p++)
		for (unsigned q = 0; q < SIM_MAX_PARTS; q++) {
			free(g->out[p][q].ev);
			g->out[p][q] = (struct sim_outbox){ 0 };
		}
	for (unsigned q = 1; q < g->n; q++)
		sim_engine_free(&g->own[q]);
}

void sim_parts_post(struct sim_parts *g, unsigned from, unsigned to, uint64_t at, sim_fn fn, void *ctx, uint64_t arg)
{
	if (from == to) {
		sim_at(g->eng[to], at, fn, ctx, arg);
		return;
	}
	struct sim_outbox *o = &g->out[from][to];
	if (o->len == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 1024;
		struct sim_event *v = realloc(o->ev, cap * sizeof(*v));
		if (!v) {
			g->error[from] = ENOMEM;
			return;
		}
		o->ev = v;
		o->cap = cap;
	}
	o->ev[o->len++] = (struct sim_event){ .at = at, .fn = fn, .ctx = ctx, .arg = arg };
}

void sim_parts_clear(struct sim_parts *g, void (*each)(const struct sim_event *ev, void *ctx), void *ctx)
{
	for (unsigned p = 0; p < g->n; p++) {
		sim_clear(g->eng[p], each, ctx);
		for (unsigned q = 0; q < SIM_MAX_PARTS; q++) {
			for (size_t i = 0; i < g->out[p][q].len; i++)
				each(&g->out[p][q].ev[i], ctx);
			g->out[p][q].len = 0;
		}
	}
}

uint64_t sim_parts_events(const struct sim_parts *g)
{
	uint64_t e = 0;

	for (unsigned q = 0; q < g->n; q++)
		e += g->eng[q]->events_run;
	return e;
}

uint64_t sim_parts_now(const struct sim_parts *g)
{
	uint64_t t = 0;

	for (unsigned q = 0; q < g->n; q++)
		t = g->eng[q]->now > t ? g->eng[q]->now : t;
	return t;
}

/* Threads meet here twice a window.  They spin (a window is some
 * thousands of events: microseconds to milliseconds of work), yielding
 * after a while in case there are fewer cores than threads. */
struct spin_barrier {
	_Atomic unsigned count, gen;
	unsigned n;
};

static void barrier_wait(struct spin_barrier *b)
{
	unsigned gen = atomic_load_explicit(&b->gen, memory_order_acquire);

	if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 == b->n) {
		atomic_store_explicit(&b->count, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&b->gen, 1, memory_order_release);
		return;
	}
	for (unsigned spins = 0; atomic_load_explicit(&b->gen, memory_order_acquire) == gen; spins++) {
		if (spins > 4096)
			sched_yield();
#if defined(__x86_64__) || defined(__i386__)
		else
			__builtin_ia32_pause();
#endif
	}
}

struct windows {
	struct sim_parts *g;
	struct spin_barrier bar;
	uint64_t end;                   /* this window: events before it */
	bool over;
};

struct worker {
	struct windows *w;
	struct sim_engine *eng;
};

/* One partition's share of a window, among several: every event before
 * its end. */
static void run_window(struct sim_engine *e, uint64_t end)
{
	while (sim_next_time(e) < end)
		sim_step(e);
}

/* A lone partition's window: nothing runs beside it, so it can stop at
 * the very event after which the model says the run is over, and report
 * progress as it goes. */
static void run_lone_window(struct sim_engine *e, uint64_t end, const struct sim_parts_ops *ops, void *ctx)
{
	unsigned countdown = PROGRESS_EVERY;

	while (sim_next_time(e) < end && ops->running(ctx)) {
		sim_step(e);
		if (!--countdown) {
			countdown = PROGRESS_EVERY;
			if (ops->progress)
				ops->progress(ctx);
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker *k = arg;

	for (;;) {
		barrier_wait(&k->w->bar);
		if (k->w->over)
			return NULL;
		run_window(k->eng, k->w->end);
		barrier_wait(&k->w->bar);
	}
}

/* Between windows, everything stopped: the outboxes into the engines, by
 * destination, then by source partition, each in its order: the same
 * every run. */
static int hand_over(struct sim_parts *g)
{
	for (unsigned q = 0; q < g->n; q++)
		for (unsigned p = 0; p < g->n; p++) {
			struct sim_outbox *o = &g->out[p][q];
			for (size_t i = 0; i < o->len; i++)
				if (sim_at(g->eng[q], o->ev[i].at, o->ev[i].fn, o->ev[i].ctx, o->ev[i].arg))
					return ENOMEM;
			o->len = 0;
		}
	for (unsigned p = 0; p < g->n; p++)
		if (g->error[p])
			return g->error[p];
	return 0;
}

int sim_parts_run(struct sim_parts *g, uint64_t stop, const struct sim_parts_ops *ops, void *ctx)
{
	bool threads = g->threads && g->n > 1;
	struct windows w = { .g = g, .bar = { .n = threads ? g->n : 1 } };
	struct worker k[SIM_MAX_PARTS];
	pthread_t th[SIM_MAX_PARTS];
	unsigned started = 1;
	int rc = 0;

	if (stop == UINT64_MAX)
		stop--;         /* a window ends at stop + 1 */
	for (; threads && started < g->n; started++) {
		k[started] = (struct worker){ .w = &w, .eng = g->eng[started] };
		if (pthread_create(&th[started], NULL, worker_main, &k[started]))
			break;
	}
	if (threads && started < g->n) {
		/* No thread for every partition: nothing runs (the ones that
		 * started are let go below); the caller may ask for fewer. */
		rc = EAGAIN;
		w.bar.n = started;
	}
	uint64_t t = 0;
	while (!rc) {
		if ((rc = hand_over(g)) || (ops->between && (rc = ops->between(ctx))))
			break;
		if (!ops->running(ctx))
			break;
		uint64_t next = ops->held_next ? ops->held_next(ctx) : UINT64_MAX;
		for (unsigned q = 0; q < g->n; q++) {
			uint64_t nt = sim_next_time(g->eng[q]);
			next = nt < next ? nt : next;
		}
		if (next == UINT64_MAX || next > stop)
			break;
		t = next > t ? next : t;
		uint64_t end = g->lookahead > stop - t ? stop + 1 : t + g->lookahead;
		if (ops->window && (rc = ops->window(ctx, t, end)))
			break;
		if (ops->progress)
			ops->progress(ctx);
		w.end = end;
		if (g->n == 1) {
			run_lone_window(g->eng[0], end, ops, ctx);
		} else if (threads) {
			barrier_wait(&w.bar);
			run_window(g->eng[0], end);
			barrier_wait(&w.bar);
		} else {
			for (unsigned q = 0; q < g->n; q++)
				run_window(g->eng[q], end);
		}
		t = end;
	}
	w.over = true;
	if (threads)
		barrier_wait(&w.bar);
	for (unsigned q = 1; q < started; q++)
		pthread_join(th[q], NULL);
	return rc;
}
