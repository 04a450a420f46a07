/*
 * pd_ex.c — parent domains, thread domains and ibv_advise_mr: the verbs
 * that extend what a protection domain means.
 *
 * A parent domain (ibv_alloc_parent_domain) bundles a protection domain,
 * an optional thread domain and optional buffer allocators.  Here it is an
 * sr_pd whose rnic PD is the wrapped PD's, so create_qp, create_srq, reg_mr
 * and the MR/QP protection checks (same rnic PD) accept it with no change;
 * ibv_create_cq_ex accepts it under IBV_CQ_INIT_ATTR_MASK_PD.
 *
 * Trade-off: the user's alloc/free callbacks are validated and kept, but
 * not called.  They exist so a provider can place the rings the hardware
 * reads (WQ, CQ and SRQ buffers, doorbells) where the application wants;
 * softrnic's queues are private rnic structures that no DMA engine reads,
 * so placing them in the caller's memory would buy nothing.  Likewise a
 * thread domain is a promise of single-threaded use that lets hardware
 * providers skip a lock; softrnic keeps its device lock and only counts
 * the references so ibv_dealloc_td can answer EBUSY.
 *
 * ibv_advise_mr: softrnic never pins, so a prefetch is a validation of the
 * SGEs against ODP MRs of the PD plus a probe that faults the pages in
 * (rnic_mr_prefetch).  Synchronous and asynchronous requests are the same
 * thing here: the work is done before the call returns.
 */
#include <errno.h>
#include <stdlib.h>

#include "compat/compat.h"

struct sr_td {
	struct ibv_td ibv;
	uint32_t n_users;               /* parent domains using it */
};

/* What a parent domain keeps beyond its sr_pd (which comes first, so
 * to_sr_pd works on it). */
struct sr_parent_domain {
	struct sr_pd base;
	struct sr_td *td;
	void *pd_context;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
		       uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
};

/* ---- thread domains ----------------------------------------------------- */

struct ibv_td *sr_alloc_td(struct ibv_context *context, struct ibv_td_init_attr *attr)
{
	struct sr_td *td;

	if (!sr_is_our_context(context) || !attr || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->ibv.context = context;
	return &td->ibv;
}

int sr_dealloc_td(struct ibv_td *ibtd)
{
	struct sr_td *td = (struct sr_td *)ibtd;
	int busy;

	if (!ibtd || !sr_is_our_context(ibtd->context))
		return EINVAL;
	pthread_mutex_lock(&ibtd->context->mutex);
	busy = td->n_users != 0;
	pthread_mutex_unlock(&ibtd->context->mutex);
	if (busy)
		return EBUSY;
	free(td);
	return 0;
}

/* ---- parent domains ----------------------------------------------------- */

struct ibv_pd *sr_alloc_parent_domain(struct ibv_context *context,
				      struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct sr_parent_domain *pdom;
	struct sr_pd *protection;

	if (!sr_is_our_context(context) || !attr || !attr->pd || attr->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & ~known) {
		errno = EINVAL;
		return NULL;
	}
	protection = to_sr_pd(attr->pd);
	/* The wrapped domain must be a protection domain, not another parent. */
	if (protection->parent || (attr->td && attr->td->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	/* Allocators come in pairs. */
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (!attr->alloc != !attr->free)) {
		errno = EINVAL;
		return NULL;
	}
	pdom = calloc(1, sizeof(*pdom));
	if (!pdom) {
		errno = ENOMEM;
		return NULL;
	}
	pdom->base.ibv.context = context;
	pdom->base.ibv.handle = attr->pd->handle;
	pdom->base.pd = protection->pd;
	pdom->base.parent = protection;
	pdom->td = (struct sr_td *)attr->td;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pdom->pd_context = attr->pd_context;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pdom->alloc = attr->alloc;
		pdom->free = attr->free;
	}
	pthread_mutex_lock(&context->mutex);
	protection->n_children++;
	if (pdom->td)
		pdom->td->n_users++;
	pthread_mutex_unlock(&context->mutex);
	return &pdom->base.ibv;
}

void sr_pd_use(struct ibv_pd *ibpd)
{
	struct sr_pd *pd = to_sr_pd(ibpd);

	if (!pd->parent)
		return;
	pthread_mutex_lock(&ibpd->context->mutex);
	pd->n_users++;
	pthread_mutex_unlock(&ibpd->context->mutex);
}

void sr_pd_unuse(struct ibv_pd *ibpd)
{
	struct sr_pd *pd = to_sr_pd(ibpd);

	if (!pd->parent)
		return;
	pthread_mutex_lock(&ibpd->context->mutex);
	pd->n_users--;
	pthread_mutex_unlock(&ibpd->context->mutex);
}

int sr_dealloc_parent_domain(struct sr_pd *pd)
{
	struct sr_parent_domain *pdom = (struct sr_parent_domain *)pd;
	struct ibv_context *context = pd->ibv.context;

	pthread_mutex_lock(&context->mutex);
	if (pd->n_users) {
		pthread_mutex_unlock(&context->mutex);
		return EBUSY;
	}
	pd->parent->n_children--;
	if (pdom->td)
		pdom->td->n_users--;
	pthread_mutex_unlock(&context->mutex);
	free(pdom);
	return 0;
}

/* ---- ibv_advise_mr ------------------------------------------------------ */

int sr_advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice, uint32_t flags,
		 struct ibv_sge *sg_list, uint32_t num_sge)
{
	struct srt_device *dev;
	bool for_write, no_fault;
	int ret = 0;

	if (!ibpd || !sr_is_our_context(ibpd->context))
		return EINVAL;
	switch (advice) {
	case IBV_ADVISE_MR_ADVICE_PREFETCH:
	case IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE:
	case IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT:
		break;
	default:
		return EOPNOTSUPP;
	}
	if (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH)
		return EOPNOTSUPP;
	if (!sg_list || num_sge == 0)
		return EINVAL;
	for_write = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	no_fault = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	dev = to_sr_ctx(ibpd->context)->dev;
	srt_lock(dev);
	for (uint32_t i = 0; i < num_sge && !ret; i++)
		ret = rnic_mr_prefetch(srt_rnic(dev), to_sr_pd(ibpd)->pd, sg_list[i].lkey,
				       sg_list[i].addr, sg_list[i].length, for_write, no_fault);
	srt_unlock(dev);
	return ret;
}
