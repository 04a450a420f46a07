/*
 * objects.c — PD, MR, CQ and QP verbs, and the data-path ops the header's
 * inline verbs call through context->ops (post_send, post_recv, poll_cq,
 * req_notify_cq).
 *
 * Each verb checks its arguments, wraps the rnic object in the verbs
 * struct the program sees, and calls the rnic under the device lock.  The
 * rnic returns errno values exactly as the verbs document them, so most
 * verbs pass its answer through unchanged.
 *
 * Posting sends from the caller's thread (the rnic starts transmitting
 * inside rnic_post_send); srt_post_send wakes the progress thread only
 * when posting armed a timer it must see.  Polling an empty CQ drives
 * receive and timers from the caller's thread (srt_poll_cq).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat/compat.h"
#include "runtime/mem_guard.h"

static struct srt_device *dev_of(struct ibv_context *c)
{
	return to_sr_ctx(c)->dev;
}

/* ---- protection domains ------------------------------------------------- */

struct ibv_pd *ibv_alloc_pd_1_1(struct ibv_context *context)
{
	struct sr_pd *pd;
	struct srt_device *dev;

	if (!sr_is_our_context(context)) {
		errno = EINVAL;
		return NULL;
	}
	dev = dev_of(context);
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	srt_lock(dev);
	pd->pd = rnic_pd_alloc(srt_rnic(dev));
	srt_unlock(dev);
	if (!pd->pd) {
		int err = errno ? errno : ENOMEM;

		free(pd);
		errno = err;
		return NULL;
	}
	pd->ibv.context = context;
	return &pd->ibv;
}
SR_EXPORT_1_1(ibv_alloc_pd);

int ibv_dealloc_pd_1_1(struct ibv_pd *ibpd)
{
	struct srt_device *dev;
	int ret;

	if (!ibpd || !sr_is_our_context(ibpd->context))
		return EINVAL;
	if (to_sr_pd(ibpd)->parent)
		return sr_dealloc_parent_domain(to_sr_pd(ibpd));
	pthread_mutex_lock(&ibpd->context->mutex);
	ret = to_sr_pd(ibpd)->n_children ? EBUSY : 0;   /* parent domains wrap it */
	pthread_mutex_unlock(&ibpd->context->mutex);
	if (ret)
		return ret;
	dev = dev_of(ibpd->context);
	srt_lock(dev);
	ret = rnic_pd_free(to_sr_pd(ibpd)->pd);   /* EBUSY while in use */
	srt_unlock(dev);
	if (ret)
		return ret;
	free(to_sr_pd(ibpd));
	return 0;
}
SR_EXPORT_1_1(ibv_dealloc_pd);

/* ---- memory regions ----------------------------------------------------- */

/* The kernel pins every page of a region when it is registered
 * (ib_umem_get), for writing when the access may write (ib_access_
 * writable: memory window binds count), and so refuses with EFAULT a
 * range with a page that is not mapped, PROT_NONE, or read-only where it
 * would be written.  softrnic pins nothing but gives the same answers
 * (srt_mem_check), after the argument checks the kernel makes first.
 * ODP regions are not pinned by the kernel either: no check. */
static int check_pinnable(void *addr, size_t length, uint64_t iova, unsigned int access)
{
	const unsigned int writes = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
				    IBV_ACCESS_MW_BIND;
	int e;

	if (access & IBV_ACCESS_ON_DEMAND)
		return 0;
	e = rnic_mr_reg_check(addr, length, iova, (int)access);
	return e ? e : srt_mem_check(addr, length, (access & writes) != 0);
}

static struct ibv_mr *reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			     uint64_t iova, unsigned int access)
{
	struct srt_device *dev;
	struct sr_mr *mr;

	if (!ibpd || !sr_is_our_context(ibpd->context)) {
		errno = EINVAL;
		return NULL;
	}
	/* IBV_ACCESS_ON_DEMAND is accepted: softrnic never pins, and the
	 * rnic probes ODP ranges before touching them (src/rnic/odp.c).
	 * Implicit ODP is (NULL, SIZE_MAX).  Any other region must be
	 * there (check_pinnable). */
	/* The optional range (relaxed ordering, ...) is best effort by
	 * definition: a device that cannot honour a bit ignores it. */
	access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	int e = check_pinnable(addr, length, iova, access);
	if (e) {
		errno = e;
		return NULL;
	}

	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	dev = dev_of(ibpd->context);
	srt_lock(dev);
	mr->mr = rnic_mr_reg(to_sr_pd(ibpd)->pd, addr, length, iova, (int)access);
	if (mr->mr) {
		mr->ibv.lkey = rnic_mr_lkey(mr->mr);
		mr->ibv.rkey = rnic_mr_rkey(mr->mr);
	}
	srt_unlock(dev);
	if (!mr->mr) {
		int err = errno ? errno : EINVAL;

		free(mr);
		errno = err;
		return NULL;
	}
	mr->ibv.context = ibpd->context;
	mr->ibv.pd = ibpd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	return &mr->ibv;
}

struct ibv_mr *(ibv_reg_mr_1_1)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}
SR_EXPORT_1_1(ibv_reg_mr);

struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t iova, int access)
{
	return reg_mr(pd, addr, length, iova, (unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

int ibv_dereg_mr_1_1(struct ibv_mr *ibmr)
{
	struct srt_device *dev;
	int ret;

	if (!ibmr || !sr_is_our_context(ibmr->context))
		return EINVAL;
	dev = dev_of(ibmr->context);
	srt_lock(dev);
	ret = rnic_mr_dereg(to_sr_mr(ibmr)->mr);
	srt_unlock(dev);
	if (ret)
		return ret;
	free(to_sr_mr(ibmr));
	return 0;
}
SR_EXPORT_1_1(ibv_dereg_mr);

/* Re-registration in place: the ibv_mr the program holds stays, with new
 * keys.  Return codes as ibv_rereg_mr(3) defines them: 0, or
 * IBV_REREG_MR_ERR_INPUT with errno for anything we reject, in which case
 * the old registration is still valid (the rnic changes nothing unless
 * every check passed).  Being library and "kernel" at once, softrnic has
 * no command stage that can fail after validation, so
 * IBV_REREG_MR_ERR_CMD and the fork-related codes never occur. */
int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd, void *addr,
		 size_t length, int access)
{
	const int known = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
			  IBV_REREG_MR_CHANGE_ACCESS;
	struct rnic_pd *new_pd = NULL;
	struct srt_device *dev;
	struct sr_mr *mr;
	int ret;

	_Static_assert(IBV_REREG_MR_CHANGE_TRANSLATION == RNIC_REREG_TRANSLATION &&
		       IBV_REREG_MR_CHANGE_PD == RNIC_REREG_PD &&
		       IBV_REREG_MR_CHANGE_ACCESS == RNIC_REREG_ACCESS,
		       "rnic rereg flags mirror the verbs ones");
	if (!ibmr || !sr_is_our_context(ibmr->context) || !flags || (flags & ~known)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	/* As rdma-core: an access mask without CHANGE_ACCESS is a mistake. */
	if (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		if (!ibpd || ibpd->context != ibmr->context) {
			errno = EINVAL;
			return IBV_REREG_MR_ERR_INPUT;
		}
		new_pd = to_sr_pd(ibpd)->pd;
	}
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		access &= ~IBV_ACCESS_OPTIONAL_RANGE;   /* best effort, as in reg_mr */

	mr = to_sr_mr(ibmr);
	/* A new translation is pinned anew: the rule of registration (a
	 * range the kernel cannot pin fails the command with EFAULT; here
	 * it is found before anything changes, so the old registration
	 * stands, which is what IBV_REREG_MR_ERR_INPUT promises). */
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		int e = check_pinnable(addr, length, (uintptr_t)addr,
				       (unsigned int)((flags & IBV_REREG_MR_CHANGE_ACCESS) ? access
										: rnic_mr_access(mr->mr)));
		if (e) {
			errno = e;
			return IBV_REREG_MR_ERR_INPUT;
		}
	}
	dev = dev_of(ibmr->context);
	srt_lock(dev);
	ret = rnic_mr_rereg(mr->mr, flags, new_pd, addr, length, (uintptr_t)addr, access);
	if (!ret) {
		ibmr->lkey = rnic_mr_lkey(mr->mr);
		ibmr->rkey = rnic_mr_rkey(mr->mr);
	}
	srt_unlock(dev);
	if (ret) {
		errno = ret;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		ibmr->pd = ibpd;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		ibmr->addr = addr;
		ibmr->length = length;
	}
	return 0;
}

/* ---- completion queues -------------------------------------------------- */

struct ibv_cq *ibv_create_cq_1_1(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct srt_device *dev;
	struct sr_cq *cq;

	if (!sr_is_our_context(context) || cqe < 1 ||
	    comp_vector < 0 || comp_vector >= context->num_comp_vectors ||
	    (channel && channel->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	dev = dev_of(context);
	srt_lock(dev);
	cq->cq = rnic_cq_create(srt_rnic(dev), cqe, cq);
	if (cq->cq)
		cq->ibv.cqe = rnic_cq_capacity(cq->cq);
	srt_unlock(dev);
	if (!cq->cq) {
		int err = errno ? errno : EINVAL;

		free(cq);
		errno = err;
		return NULL;
	}
	cq->ibv.context = context;
	cq->ibv.channel = channel;
	cq->ibv.cq_context = cq_context;
	pthread_mutex_init(&cq->ibv.mutex, NULL);
	pthread_cond_init(&cq->ibv.cond, NULL);
	if (channel) {
		pthread_mutex_lock(&context->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&context->mutex);
	}
	return &cq->ibv;
}
SR_EXPORT_1_1(ibv_create_cq);

int ibv_resize_cq_1_1(struct ibv_cq *ibcq, int cqe)
{
	struct srt_device *dev;
	struct sr_cq *cq;
	int ret;

	if (!ibcq || !sr_is_our_context(ibcq->context) || cqe < 1)
		return EINVAL;
	cq = to_sr_cq(ibcq);
	dev = dev_of(ibcq->context);
	srt_lock(dev);
	ret = rnic_cq_resize(cq->cq, cqe);
	if (!ret)
		ibcq->cqe = rnic_cq_capacity(cq->cq);
	srt_unlock(dev);
	return ret;
}
SR_EXPORT_1_1(ibv_resize_cq);

int ibv_destroy_cq_1_1(struct ibv_cq *ibcq)
{
	struct ibv_comp_channel *channel;
	struct srt_device *dev;
	struct sr_cq *cq;
	uint32_t comp_reported, async_reported;
	int ret;

	if (!ibcq || !sr_is_our_context(ibcq->context))
		return EINVAL;
	cq = to_sr_cq(ibcq);
	dev = dev_of(ibcq->context);
	srt_lock(dev);
	ret = rnic_cq_destroy(cq->cq);   /* EBUSY while a QP uses it */
	srt_unlock(dev);
	if (ret)
		return ret;

	/* No hook can fire for it any more; drop unread events and wait
	 * for the program to ack the ones it read (rdma-core semantics). */
	sr_channel_forget_cq(cq);
	sr_async_forget(to_sr_ctx(ibcq->context), ibcq);
	channel = ibcq->channel;
	if (channel) {
		pthread_mutex_lock(&to_sr_channel(channel)->lock);
		comp_reported = cq->comp_events_reported;
		pthread_mutex_unlock(&to_sr_channel(channel)->lock);
	} else {
		comp_reported = 0;
	}
	pthread_mutex_lock(&to_sr_ctx(ibcq->context)->async_lock);
	async_reported = cq->async_events_reported;
	pthread_mutex_unlock(&to_sr_ctx(ibcq->context)->async_lock);

	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != comp_reported ||
	       ibcq->async_events_completed != async_reported)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);

	if (channel) {
		pthread_mutex_lock(&ibcq->context->mutex);
		channel->refcnt--;
		pthread_mutex_unlock(&ibcq->context->mutex);
	}
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	sr_cq_ex_free(cq);
	free(cq);
	return 0;
}
SR_EXPORT_1_1(ibv_destroy_cq);

int sr_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct srt_device *dev = dev_of(ibcq->context);
	int got;

	if (n < 0 || (n > 0 && !wc)) {
		errno = EINVAL;
		return -1;
	}
	if (n == 0)
		return 0;
	/* An empty CQ makes this thread receive and run timers itself, so a
	 * busy-polling program needs no hand-off to the progress thread
	 * (runtime.h, "Who reads the socket"). */
	got = srt_poll_cq(dev, to_sr_cq(ibcq)->cq, n, wc);
	return got;
}

int sr_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct srt_device *dev = dev_of(ibcq->context);
	int ret;

	/* Also hands the socket back to the progress thread: the program
	 * is about to sleep. */
	ret = srt_req_notify_cq(dev, to_sr_cq(ibcq)->cq, solicited_only != 0);
	return ret;
}

/* ---- queue pairs -------------------------------------------------------- */

static struct ibv_qp *create_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *init)
{
	struct ibv_context *context;
	struct srt_device *dev;
	struct sr_qp *qp;

	if (!ibpd || !init || !sr_is_our_context(ibpd->context)) {
		errno = EINVAL;
		return NULL;
	}
	context = ibpd->context;
	if (!init->send_cq || !init->recv_cq ||
	    init->send_cq->context != context || init->recv_cq->context != context) {
		errno = EINVAL;
		return NULL;
	}
	if (init->srq && init->srq->context != context) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	dev = dev_of(context);
	srt_lock(dev);
	qp->qp = rnic_qp_create_srq(to_sr_pd(ibpd)->pd, to_sr_cq(init->send_cq)->cq,
				    to_sr_cq(init->recv_cq)->cq,
				    init->srq ? to_sr_srq(init->srq)->srq : NULL, init, qp);
	if (qp->qp)
		qp->ibv.qp_num = rnic_qp_num(qp->qp);
	srt_unlock(dev);
	if (!qp->qp) {
		int err = errno ? errno : EINVAL;

		free(qp);
		errno = err;
		return NULL;
	}
	qp->ibv.context = context;
	qp->ibv.qp_context = init->qp_context;
	qp->ibv.pd = ibpd;
	sr_pd_use(ibpd);
	qp->ibv.send_cq = init->send_cq;
	qp->ibv.recv_cq = init->recv_cq;
	qp->ibv.srq = init->srq;
	qp->ibv.state = IBV_QPS_RESET;
	qp->ibv.qp_type = init->qp_type;
	pthread_mutex_init(&qp->ibv.mutex, NULL);
	pthread_cond_init(&qp->ibv.cond, NULL);
	return &qp->ibv;
}

struct ibv_qp *ibv_create_qp_1_1(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	return create_qp(pd, init);
}
SR_EXPORT_1_1(ibv_create_qp);

/* The extended create: the legacy attributes (plus create_flags 0) and
 * the ibv_qp_ex send-ops API (IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, qp_ex.c). */
struct ibv_qp *sr_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t supported = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
				   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	bool send_ops;
	struct ibv_qp *qp;
	int err;

	if (!attr || !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & ~supported) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	send_ops = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	if (send_ops && (err = sr_qp_ex_check_ops(attr->qp_type, attr->send_ops_flags))) {
		errno = err;
		return NULL;
	}
	/* ibv_qp_init_attr is the prefix of ibv_qp_init_attr_ex. */
	qp = create_qp(attr->pd, (struct ibv_qp_init_attr *)attr);
	if (qp && send_ops && (err = sr_qp_ex_setup(to_sr_qp(qp), attr))) {
		ibv_destroy_qp_1_1(qp);
		errno = err;
		return NULL;
	}
	return qp;
}

int ibv_modify_qp_1_1(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct srt_device *dev;
	int ret;

	if (!ibqp || !attr || !sr_is_our_context(ibqp->context))
		return EINVAL;
	dev = dev_of(ibqp->context);
	srt_lock(dev);
	ret = rnic_qp_modify(to_sr_qp(ibqp)->qp, attr, attr_mask, srt_now());
	if (!ret && (attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR)
		srt_qp_choose_path(dev, to_sr_qp(ibqp)->qp);
	srt_unlock(dev);
	if (ret)
		return ret;
	if (attr_mask & IBV_QP_STATE)
		ibqp->state = attr->qp_state;
	srt_kick(dev);   /* a new state may arm or cancel timers */
	return 0;
}
SR_EXPORT_1_1(ibv_modify_qp);

/* ibv_modify_qp_rate_limit (verbs_context op): the QP's packets pass the
 * rnic's pacer at rate_limit kb/s (rnic/cc.c).  EINVAL for a comp_mask
 * bit we do not know or a rate outside packet_pacing_caps, as mlx5. */
int sr_modify_qp_rate_limit(struct ibv_qp *ibqp, struct ibv_qp_rate_limit_attr *attr)
{
	struct srt_device *dev;
	int ret;

	if (!ibqp || !attr || !sr_is_our_context(ibqp->context) || attr->comp_mask)
		return EINVAL;
	dev = dev_of(ibqp->context);
	srt_lock(dev);
	ret = rnic_qp_set_rate_limit(to_sr_qp(ibqp)->qp, attr->rate_limit, attr->max_burst_sz,
				     attr->typical_pkt_sz, srt_now());
	srt_unlock(dev);
	srt_kick(dev);   /* the pacer's wake-up may have moved */
	return ret;
}

int ibv_query_qp_1_1(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init)
{
	struct ibv_qp_init_attr scratch;
	struct srt_device *dev;
	int ret;

	if (!ibqp || !attr || !sr_is_our_context(ibqp->context))
		return EINVAL;
	if (!init)
		init = &scratch;
	dev = dev_of(ibqp->context);
	srt_lock(dev);
	ret = rnic_qp_query(to_sr_qp(ibqp)->qp, attr, init);
	srt_unlock(dev);
	if (ret)
		return ret;
	/* The rnic knows its own CQs; the program wants its verbs objects. */
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->qp_type = ibqp->qp_type;
	if (attr_mask & IBV_QP_STATE)
		ibqp->state = attr->qp_state;
	return 0;
}
SR_EXPORT_1_1(ibv_query_qp);

int ibv_destroy_qp_1_1(struct ibv_qp *ibqp)
{
	struct sr_context *ctx;
	struct srt_device *dev;
	struct sr_qp *qp;
	uint32_t reported;
	int ret;

	if (!ibqp || !sr_is_our_context(ibqp->context))
		return EINVAL;
	qp = to_sr_qp(ibqp);
	ctx = to_sr_ctx(ibqp->context);
	dev = ctx->dev;
	srt_lock(dev);
	ret = rnic_qp_destroy(qp->qp);
	srt_unlock(dev);
	if (ret)
		return ret;

	sr_async_forget(ctx, ibqp);
	pthread_mutex_lock(&ctx->async_lock);
	reported = qp->events_reported;
	pthread_mutex_unlock(&ctx->async_lock);
	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != reported)
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);

	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&ibqp->mutex);
	sr_pd_unuse(ibqp->pd);
	sr_qp_ex_free(qp);
	free(qp);
	return 0;
}
SR_EXPORT_1_1(ibv_destroy_qp);

int sr_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct srt_device *dev = dev_of(ibqp->context);
	struct ibv_send_wr *scratch;
	int ret;

	if (!bad)
		bad = &scratch;
	/* IBV_WR_FLUSH has no fields in struct ibv_send_wr: rdma-core posts
	 * it only through ibv_wr_flush (qp_ex.c).  Here it is refused like
	 * an opcode the QP cannot carry — the WRs before it are posted, and
	 * *bad names it. */
	for (struct ibv_send_wr *w = wr; w; w = w->next) {
		if (w->opcode != RNIC_WR_FLUSH)
			continue;
		for (struct ibv_send_wr *p = wr; p != w; p = p->next) {
			if (p->next != w)
				continue;
			p->next = NULL;
			ret = srt_post_send(dev, to_sr_qp(ibqp)->qp, wr, bad);
			p->next = w;
			if (ret)
				return ret;
		}
		*bad = w;
		return EINVAL;
	}
	/* Wakes the progress thread only if posting armed an earlier timer. */
	ret = srt_post_send(dev, to_sr_qp(ibqp)->qp, wr, bad);
	return ret;
}

int sr_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct srt_device *dev = dev_of(ibqp->context);
	struct ibv_recv_wr *scratch;
	int ret;

	if (!bad)
		bad = &scratch;
	srt_lock(dev);
	ret = rnic_post_recv(to_sr_qp(ibqp)->qp, wr, bad);
	srt_unlock(dev);
	return ret;
}

/* 0 ("not guaranteed") is always a correct answer; promising in-order
 * placement is left until the transport documents that it holds. */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp; (void)op; (void)flags;
	return 0;
}
