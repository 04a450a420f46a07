/*
 * srq.c — shared receive queues (IBTA 10.2.9, 11.2.3): one pool of receive
 * WQEs from which any number of RC/UC QPs take, the limit ("low
 * watermark") event, and the Last WQE Reached event of QPs attached to an
 * SRQ.
 *
 * The ring is the same structure as a QP's receive queue (struct rnic_rq).
 * The responder asks for a WQE with rnic_srq_take() at the first packet
 * of a message that needs one; the WQE, SGEs included, is copied into the
 * QP (qp->srq_sge), so the slot is free for the consumer to post into at
 * once and a resize of the SRQ cannot pull the SGEs from under a message
 * in progress.  A WQE taken belongs to that QP from then on: it completes
 * on the QP's receive CQ with the QP's number in wc.qp_num, or is flushed
 * there if the QP enters ERR (IBTA 10.2.9.5).
 */
#include <stdlib.h>

#include "rnic/rnic_int.h"

/* ---- ring helpers -------------------------------------------------------- */

static uint32_t srq_count(const struct rnic_srq *srq)
{
	return srq->rq.head - srq->rq.tail;
}

/* A ring of `cap` WQEs with `max_sge` SGEs each; 0 or ENOMEM. */
static int ring_alloc(struct rnic_rq *rq, uint32_t cap, uint32_t max_sge)
{
	memset(rq, 0, sizeof(*rq));
	rq->cap = cap;
	rq->max_sge = max_sge;
	rq->wqe = calloc(cap, sizeof(*rq->wqe));
	rq->sge_pool = calloc((size_t)cap * max_sge, sizeof(*rq->sge_pool));
	if (!rq->wqe || !rq->sge_pool) {
		free(rq->wqe);
		free(rq->sge_pool);
		return ENOMEM;
	}
	for (uint32_t i = 0; i < cap; i++)
		rq->wqe[i].sge = &rq->sge_pool[(size_t)i * max_sge];
	return 0;
}

static void ring_free(struct rnic_rq *rq)
{
	free(rq->wqe);
	free(rq->sge_pool);
	rq->wqe = NULL;
	rq->sge_pool = NULL;
}

static void copy_wqe(struct rnic_recv_wqe *dst, const struct rnic_recv_wqe *src)
{
	struct rnic_sge *sge = dst->sge;

	memcpy(sge, src->sge, src->num_sge * sizeof(*sge));
	*dst = *src;
	dst->sge = sge;
}

/* ---- create / destroy ------------------------------------------------------ */

static int check_init(const struct rnic_config *cfg, const struct ibv_srq_attr *a)
{
	if (a->max_wr < 1 || a->max_wr > cfg->max_srq_wr)
		return EINVAL;
	if (a->max_sge < 1 || a->max_sge > cfg->max_sge)
		return EINVAL;
	return 0;
}

struct rnic_srq *rnic_srq_create(struct rnic_pd *pd, struct ibv_srq_init_attr *attr, void *srq_context)
{
	struct rnic_srq *srq;
	struct rnic *r;
	int err;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	r = pd->r;
	err = check_init(&r->cfg, &attr->attr);
	if (err) {
		errno = err;
		return NULL;
	}
	if (r->n_srq >= r->cfg.max_srq) {
		errno = ENOMEM;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	if (ring_alloc(&srq->rq, attr->attr.max_wr, attr->attr.max_sge)) {
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	srq->r = r;
	srq->pd = pd;
	srq->ctx = srq_context;
	srq->max_wr = attr->attr.max_wr;
	/* ibv_create_srq(3): srq_limit is not used at creation; the SRQ
	 * starts disarmed.  Report what we have. */
	srq->limit = 0;
	attr->attr.srq_limit = 0;
	pd->refs++;
	r->n_srq++;
	return srq;
}

int rnic_srq_destroy(struct rnic_srq *srq)
{
	if (!srq)
		return EINVAL;
	if (srq->refs)
		return EBUSY;
	srq->pd->refs--;
	srq->r->n_srq--;
	ring_free(&srq->rq);
	free(srq);
	return 0;
}

/* ---- modify / query --------------------------------------------------------- */

/* Grow or shrink the ring to `max_wr`, keeping the queued WQEs in order. */
static int resize(struct rnic_srq *srq, uint32_t max_wr)
{
	struct rnic_rq nrq;
	uint32_t n = srq_count(srq);

	if (ring_alloc(&nrq, max_wr, srq->rq.max_sge))
		return ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		copy_wqe(&nrq.wqe[i], &srq->rq.wqe[(srq->rq.tail + i) % srq->rq.cap]);
	nrq.head = n;
	nrq.tail = 0;
	ring_free(&srq->rq);
	srq->rq = nrq;
	srq->max_wr = max_wr;
	return 0;
}

int rnic_srq_modify(struct rnic_srq *srq, const struct ibv_srq_attr *attr, int mask)
{
	uint32_t max_wr, limit;

	if (!srq || !attr || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	/* Validate everything first: a rejected modify changes nothing. */
	max_wr = (mask & IBV_SRQ_MAX_WR) ? attr->max_wr : srq->max_wr;
	limit = (mask & IBV_SRQ_LIMIT) ? attr->srq_limit : srq->limit;
	if (mask & IBV_SRQ_MAX_WR) {
		/* Never below what is queued (the WQEs would be lost). */
		if (max_wr < 1 || max_wr > srq->r->cfg.max_srq_wr || max_wr < srq_count(srq))
			return EINVAL;
	}
	/* A limit above the depth could never be reached from a full SRQ;
	 * an armed limit must also fit a resized SRQ (IBTA 11.2.3.3). */
	if (limit > max_wr)
		return EINVAL;
	if ((mask & IBV_SRQ_MAX_WR) && max_wr != srq->max_wr) {
		int err = resize(srq, max_wr);
		if (err)
			return err;
	}
	/* Arming only: the event fires when a WQE taken brings the count
	 * below the limit, as rxe does; arming an SRQ that is already below
	 * it waits for the next WQE taken. */
	if (mask & IBV_SRQ_LIMIT)
		srq->limit = limit;
	return 0;
}

int rnic_srq_query(struct rnic_srq *srq, struct ibv_srq_attr *attr)
{
	if (!srq || !attr)
		return EINVAL;
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

/* ---- posting ----------------------------------------------------------------- */

int rnic_post_srq_recv(struct rnic_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	int err = srq ? 0 : EINVAL;

	for (; wr && !err; wr = wr->next) {
		struct rnic_recv_wqe *w;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->rq.max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			err = EINVAL;
			break;
		}
		if (srq_count(srq) >= srq->max_wr) {
			err = ENOMEM;
			break;
		}
		w = &srq->rq.wqe[srq->rq.head % srq->rq.cap];
		rnic_recv_wqe_fill(w, wr);
		srq->rq.head++;
	}
	if (bad)
		*bad = err ? wr : NULL;
	return err;
}

/* ---- the responder's side ------------------------------------------------------ */

bool rnic_srq_take(struct rnic_qp *qp, struct rnic_recv_wqe *wqe)
{
	struct rnic_srq *srq = qp->srq;

	if (srq_count(srq) == 0)
		return false;
	wqe->sge = qp->srq_sge;
	copy_wqe(wqe, &srq->rq.wqe[srq->rq.tail % srq->rq.cap]);
	srq->rq.tail++;
	/* IBTA 10.2.9.3 / 11.6.3.1: once below the armed limit, one event,
	 * and the SRQ is disarmed until the consumer arms it again. */
	if (srq->limit && srq_count(srq) < srq->limit) {
		srq->limit = 0;
		rnic_async(srq->r, IBV_EVENT_SRQ_LIMIT_REACHED, srq->ctx);
	}
	return true;
}

void rnic_srq_detach(struct rnic_qp *qp)
{
	if (!qp->srq)
		return;
	qp->srq->refs--;
	qp->srq = NULL;
	free(qp->srq_sge);
	qp->srq_sge = NULL;
}

void rnic_srq_qp_error(struct rnic_qp *qp)
{
	/* rnic_qp_to_error flushed the WQE this QP was filling; it takes no
	 * more from the SRQ, so its last WQE has been reached. */
	if (!qp->srq || qp->last_wqe_reported)
		return;
	qp->last_wqe_reported = true;
	rnic_async(qp->r, IBV_EVENT_QP_LAST_WQE_REACHED, qp->ctx);
}

struct rnic_qp *rnic_qp_create_srq(struct rnic_pd *pd, struct rnic_cq *send_cq, struct rnic_cq *recv_cq,
				   struct rnic_srq *srq, struct ibv_qp_init_attr *init, void *qp_context)
{
	struct ibv_qp_init_attr own;
	struct rnic_sge *sge;
	struct rnic_qp *qp;

	if (!srq)
		return rnic_qp_create(pd, send_cq, recv_cq, init, qp_context);
	if (!pd || !init || srq->r != pd->r) {
		errno = EINVAL;
		return NULL;
	}
	/* The responder paths that take WQEs from an SRQ are RC's and UC's. */
	if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UC) {
		errno = init->qp_type == IBV_QPT_UD ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	sge = calloc(srq->rq.max_sge, sizeof(*sge));
	if (!sge) {
		errno = ENOMEM;
		return NULL;
	}
	/* The receive capacities of an SRQ QP are the SRQ's, not its own. */
	own = *init;
	own.cap.max_recv_wr = 0;
	own.cap.max_recv_sge = 0;
	qp = rnic_qp_create(pd, send_cq, recv_cq, &own, qp_context);
	if (!qp) {
		free(sge);
		return NULL;
	}
	qp->srq = srq;
	qp->srq_sge = sge;
	srq->refs++;
	init->cap.max_recv_wr = 0;
	init->cap.max_recv_sge = 0;
	return qp;
}
