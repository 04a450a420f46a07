/*
 * timers.c — when the device's QP timers are due, at the cost of the QPs
 * that have them.
 *
 * A QP has four timers (the completer's retransmit, the requester's RNR
 * wait, the responder's delayed ACK, and congestion control's pacer and
 * rate timers, cc_next_deadline).  The device keeps a binary min-heap of
 * (time, QPN) entries: every write of a timer goes through
 * rnic_qp_timer_armed, which pushes an entry when the time is earlier than
 * the QP's earliest entry (qp->timer_key).  Entries are never updated or
 * removed in place: a timer moved later or cleared, or a QP destroyed,
 * leaves its entry to be found stale when it comes up (the QP is looked at,
 * nothing of it is due, and its true deadline is pushed again).  So the
 * heap holds about one entry per QP with a timer, plus the stale ones of
 * the last round, and rnic_advance costs O(k log n) for k due QPs instead
 * of a scan of the QP table — what lets a device offer 65 536 QPs.
 *
 * The QPs due at one advance are run in the order of their table slots, as
 * the table scan this replaces ran them: the simulator's runs stay the same
 * for the same seed.  If the heap cannot grow (no memory), the device falls
 * back to that scan until an advance has rebuilt the heap.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rnic/rnic_int.h"

/* The earliest time any of the QP's timers fires. */
uint64_t rnic_qp_deadline(const struct rnic_qp *qp)
{
	uint64_t best = qp->comp.retx_deadline;

	if (qp->req.rnr_until < best)
		best = qp->req.rnr_until;
	if (qp->resp.ack_deadline < best)
		best = qp->resp.ack_deadline;
	uint64_t cc = cc_next_deadline(qp);
	return cc < best ? cc : best;
}

static bool entry_before(const struct rnic_timer_entry *a, const struct rnic_timer_entry *b)
{
	return a->at < b->at || (a->at == b->at && a->qpn < b->qpn);
}

static bool heap_push(struct rnic *r, uint64_t at, uint32_t qpn)
{
	struct rnic_timer_entry *h;
	size_t i;

	if (r->timer_n == r->timer_cap) {
		size_t cap = r->timer_cap ? 2 * r->timer_cap : 64;
		h = realloc(r->timer_heap, cap * sizeof(*h));
		if (!h)
			return false;
		r->timer_heap = h;
		r->timer_cap = cap;
	}
	h = r->timer_heap;
	i = r->timer_n++;
	h[i] = (struct rnic_timer_entry){ .at = at, .qpn = qpn };
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!entry_before(&h[i], &h[parent]))
			break;
		struct rnic_timer_entry t = h[i];
		h[i] = h[parent];
		h[parent] = t;
		i = parent;
	}
	return true;
}

static struct rnic_timer_entry heap_pop(struct rnic *r)
{
	struct rnic_timer_entry *h = r->timer_heap, top = h[0];
	size_t i = 0, n = --r->timer_n;

	h[0] = h[n];
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && entry_before(&h[l], &h[m]))
			m = l;
		if (l + 1 < n && entry_before(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			break;
		struct rnic_timer_entry t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
	return top;
}

void rnic_qp_timer_armed(struct rnic_qp *qp, uint64_t at)
{
	struct rnic *r = qp->r;

	if (at < r->deadline_bound)
		r->deadline_bound = at;
	if (at >= qp->timer_key || r->timer_scan_all)
		return;
	if (heap_push(r, at, qp->qpn))
		qp->timer_key = at;
	else
		r->timer_scan_all = true;
}

/* The earliest time any QP's timer may be due.  O(1): a lower bound (so
 * it may be early, after a timer was moved later or cleared, and the
 * caller's advance then finds nothing due and makes it exact again), never
 * late.  Sanitizer builds (RNIC_CHECK_DEADLINES) check the bound against a
 * scan of every QP on every call: a timer armed without
 * rnic_qp_timer_armed aborts them. */
uint64_t rnic_next_deadline(const struct rnic *r)
{
#ifdef RNIC_CHECK_DEADLINES
	for (uint32_t i = 0; i < r->n_qp; i++) {
		const struct rnic_qp *qp = r->live[i];
		if (rnic_qp_deadline(qp) < r->deadline_bound) {
			fprintf(stderr, "rnic: QP 0x%06x has a timer at %llu before the bound %llu\n",
				(unsigned)qp->qpn, (unsigned long long)rnic_qp_deadline(qp),
				(unsigned long long)r->deadline_bound);
			abort();
		}
		if (!r->timer_scan_all && rnic_qp_deadline(qp) < qp->timer_key) {
			fprintf(stderr, "rnic: QP 0x%06x has a timer at %llu before its heap entry %llu\n",
				(unsigned)qp->qpn, (unsigned long long)rnic_qp_deadline(qp),
				(unsigned long long)qp->timer_key);
			abort();
		}
	}
#endif
	return r->deadline_bound;
}

/* Fires the QP's timers that are due. */
static void fire(struct rnic_qp *qp, uint64_t now)
{
	qp->r->timer_visits++;
	if (qp->resp.ack_deadline <= now)
		responder_timer(qp, now);
	if (qp->req.rnr_until <= now)
		requester_timer(qp, now);
	if (qp->comp.retx_deadline <= now)
		completer_timer(qp, now);
	if (cc_next_deadline(qp) <= now)
		cc_advance(qp, now);
}

static int by_slot(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The table scan: every QP once, in slot order; rebuilds the heap. */
static void advance_all(struct rnic *r, uint64_t now)
{
	uint32_t seen = 0;

	r->timer_n = 0;
	r->timer_scan_all = false;
	for (uint32_t i = 0; i < r->cfg.max_qp && seen < r->n_qp; i++) {
		struct rnic_qp *qp = r->qps[i];
		if (!qp)
			continue;
		seen++;
		fire(qp, now);
		qp->timer_key = RNIC_NO_DEADLINE;
		rnic_qp_timer_armed(qp, rnic_qp_deadline(qp));
	}
}

/* Fire what is due and make the bound exact.  A timer creates and
 * destroys no QP, and each QP due is run once: one re-armed for `now`
 * keeps the bound at `now`, and the caller advances again. */
void rnic_advance(struct rnic *r, uint64_t now)
{
	uint32_t n = 0;

	rnic_pulls_settle(r);           /* a delayed ACK must not run ahead */
	r->deadline_bound = RNIC_NO_DEADLINE;
	if (r->timer_scan_all) {
		advance_all(r, now);
		goto bound;
	}
	/* The QPs whose earliest entry is due, by slot, each once. */
	while (r->timer_n && r->timer_heap[0].at <= now) {
		struct rnic_timer_entry e = heap_pop(r);
		struct rnic_qp *qp = r->qps[e.qpn % r->cfg.max_qp];

		if (!qp || qp->qpn != e.qpn || qp->timer_key == RNIC_NO_DEADLINE)
			continue;       /* gone, or already taken this round */
		qp->timer_key = RNIC_NO_DEADLINE;
		if (n == r->timer_due_cap) {
			uint32_t cap = r->timer_due_cap ? 2 * r->timer_due_cap : 64;
			uint32_t *d = realloc(r->timer_due, cap * sizeof(*d));
			if (!d) {
				/* Put it back as the table scan will find it. */
				r->timer_scan_all = true;
				advance_all(r, now);
				goto bound;
			}
			r->timer_due = d;
			r->timer_due_cap = cap;
		}
		r->timer_due[n++] = e.qpn % r->cfg.max_qp;
	}
	if (n > 1)
		qsort(r->timer_due, n, sizeof(*r->timer_due), by_slot);
	for (uint32_t i = 0; i < n; i++) {
		struct rnic_qp *qp = r->qps[r->timer_due[i]];
		fire(qp, now);
		rnic_qp_timer_armed(qp, rnic_qp_deadline(qp));
	}
bound:
	/* Stale entries at the top would make the bound early (a wake-up for
	 * nothing): take them off until the top is some QP's true deadline,
	 * which every other QP's is then not before.  The bound is exact, as
	 * the table scan's was. */
	while (!r->timer_scan_all && r->timer_n) {
		struct rnic_timer_entry e = r->timer_heap[0];
		struct rnic_qp *qp = r->qps[e.qpn % r->cfg.max_qp];
		bool live = qp && qp->qpn == e.qpn;
		uint64_t d = live ? rnic_qp_deadline(qp) : RNIC_NO_DEADLINE;

		if (live && e.at >= d)
			break;
		heap_pop(r);
		if (live) {
			qp->timer_key = RNIC_NO_DEADLINE;
			rnic_qp_timer_armed(qp, d);
		}
	}
	if (r->timer_n && r->timer_heap[0].at < r->deadline_bound)
		r->deadline_bound = r->timer_heap[0].at;
	if (r->timer_scan_all) {
		/* Without the heap the bound comes from every QP. */
		for (uint32_t i = 0; i < r->n_qp; i++) {
			uint64_t d = rnic_qp_deadline(r->live[i]);
			if (d < r->deadline_bound)
				r->deadline_bound = d;
		}
	}
}

void rnic_timers_free(struct rnic *r)
{
	free(r->timer_heap);
	free(r->timer_due);
	r->timer_heap = NULL;
	r->timer_due = NULL;
	r->timer_n = r->timer_cap = 0;
	r->timer_due_cap = 0;
}
