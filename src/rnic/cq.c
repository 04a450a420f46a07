/*
 * cq.c — completion queues: a ring of ibv_wc, poll, resize, and the
 * notification rules of ibv_req_notify_cq (IBTA 11.4.2.2): an armed CQ
 * fires once for the next completion, or — when armed solicited-only — for
 * the next completion that is solicited or unsuccessful.  Firing disarms.
 *
 * Overflow (more completions than the CQ holds) is a CQ error in IBTA
 * (11.4.2.1); we drop the completion, count it and raise IBV_EVENT_CQ_ERR
 * rather than overwrite an entry the application has not read yet.
 */
#include <stdlib.h>

#include "rnic/rnic_int.h"

struct rnic_cq *rnic_cq_create(struct rnic *r, int cqe, void *cq_context)
{
	struct rnic_cq *cq;

	if (!r || cqe < 1 || (uint32_t)cqe > r->cfg.max_cqe) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->ring = calloc((size_t)cqe, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->r = r;
	cq->ctx = cq_context;
	cq->cap = (uint32_t)cqe;
	r->n_cq++;
	return cq;
}

int rnic_cq_destroy(struct rnic_cq *cq)
{
	if (!cq)
		return EINVAL;
	if (cq->refs)
		return EBUSY;
	cq->r->n_cq--;
	free(cq->ring);
	free(cq);
	return 0;
}

int rnic_cq_resize(struct rnic_cq *cq, int cqe)
{
	struct ibv_wc *ring;

	if (!cq || cqe < 1 || (uint32_t)cqe > cq->r->cfg.max_cqe || (uint32_t)cqe < cq->count)
		return EINVAL;
	ring = calloc((size_t)cqe, sizeof(*ring));
	if (!ring)
		return ENOMEM;
	for (uint32_t i = 0; i < cq->count; i++)
		ring[i] = cq->ring[(cq->head + i) % cq->cap];
	free(cq->ring);
	cq->ring = ring;
	cq->cap = (uint32_t)cqe;
	cq->head = 0;
	return 0;
}

int rnic_cq_capacity(const struct rnic_cq *cq)
{
	return (int)cq->cap;
}

int rnic_cq_poll(struct rnic_cq *cq, int n, struct ibv_wc *wc)
{
	int got = 0;

	if (!cq || n < 0 || (n > 0 && !wc))
		return 0;
	while (got < n && cq->count) {
		wc[got++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
	}
	return got;
}

void rnic_cq_purge_qp(struct rnic_cq *cq, uint32_t qpn)
{
	uint32_t kept = 0;

	/* Compact in place, oldest first, so the survivors keep their order. */
	for (uint32_t i = 0; i < cq->count; i++) {
		const struct ibv_wc *wc = &cq->ring[(cq->head + i) % cq->cap];

		if (wc->qp_num == qpn)
			continue;
		cq->ring[(cq->head + kept) % cq->cap] = *wc;
		kept++;
	}
	cq->count = kept;
}

int rnic_cq_req_notify(struct rnic_cq *cq, bool solicited_only)
{
	if (!cq)
		return EINVAL;
	/* Re-arming "next" over "solicited" widens the request; re-arming
	 * solicited over an armed "next" keeps "next" (the broader wins). */
	if (cq->armed)
		cq->solicited_only = cq->solicited_only && solicited_only;
	else
		cq->solicited_only = solicited_only;
	cq->armed = true;
	return 0;
}

bool rnic_cq_armed(const struct rnic_cq *cq)
{
	return cq->armed;
}

bool rnic_cq_push(struct rnic_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	struct rnic *r = cq->r;

	if (cq->count == cq->cap) {
		r->ctr.cq_overflows++;
		rnic_async(r, IBV_EVENT_CQ_ERR, cq->ctx);
		return false;
	}
	cq->ring[(cq->head + cq->count) % cq->cap] = *wc;
	cq->count++;
	r->ctr.completions++;
	if (wc->status != IBV_WC_SUCCESS)
		r->ctr.completion_errors++;     /* flushes too (completion_flushes says how many) */
	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		r->ctr.completion_flushes++;
	if (cq->armed && (!cq->solicited_only || solicited || wc->status != IBV_WC_SUCCESS)) {
		cq->armed = false;
		if (r->io.cq_event)
			r->io.cq_event(r->io.ctx, cq, cq->ctx);
	}
	return true;
}
