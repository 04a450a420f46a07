/*
 * engine.c — the event heap of engine.h: a 4-ary heap (half the depth of
 * a binary one, and a node's children share a cache line or two, which
 * is what a pop pays for: the profile of a 128-host run had a quarter of
 * its time here with the binary heap).
 */
#include "sim/engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sim_engine_init(struct sim_engine *e)
{
	memset(e, 0, sizeof(*e));
}

void sim_engine_free(struct sim_engine *e)
{
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

int sim_at_seq(struct sim_engine *e, uint64_t at, uint64_t seq, sim_fn fn, void *ctx, uint64_t arg)
{
	if (e->len == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 1024;
		struct sim_event *h = realloc(e->heap, cap * sizeof(*h));
		if (!h)
			return ENOMEM;
		e->heap = h;
		e->cap = cap;
	}
	struct sim_event ev = { .at = at < e->now ? e->now : at, .seq = seq, .fn = fn, .ctx = ctx, .arg = arg };
	size_t i = e->len++;
	while (i > 0) {
		size_t parent = (i - 1) / 4;
		if (!before(&ev, &e->heap[parent]))
			break;
		e->heap[i] = e->heap[parent];
		i = parent;
	}
	e->heap[i] = ev;
	return 0;
}

static struct sim_event pop(struct sim_engine *e)
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

bool sim_pop(struct sim_engine *e, struct sim_event *out)
{
	if (!e->len)
		return false;
	*out = pop(e);
	return true;
}

bool sim_step(struct sim_engine *e)
{
	if (!e->len)
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
	if (e->len) {
		__builtin_prefetch(e->heap[0].ctx);
		if (e->heap[0].arg >> 32)
			__builtin_prefetch((const void *)(uintptr_t)e->heap[0].arg);
	}
	ev.fn(ev.ctx, ev.arg, ev.at);
	return true;
}

void sim_run_until(struct sim_engine *e, uint64_t until)
{
	while (e->len && e->heap[0].at <= until)
		sim_step(e);
	if (e->now < until)
		e->now = until;
}

uint64_t sim_next_time(const struct sim_engine *e)
{
	return e->len ? e->heap[0].at : UINT64_MAX;
}
