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
 */
#include "sim/engine.h"

#include <errno.h>
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
	 * with a thousand hosts they are rarely there, and these first
	 * loads were a third of a large run's time.  An argument below 2^32
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
