/*
 * srq.c — the shared receive queue verbs: ibv_create_srq, the extended
 * ibv_create_srq_ex (basic SRQs only), ibv_modify_srq, ibv_query_srq,
 * ibv_destroy_srq, and the post_srq_recv op the header's inline
 * ibv_post_srq_recv calls through context->ops.
 *
 * The SRQ itself lives in the rnic (src/rnic/srq.c); this file wraps it in
 * the struct ibv_srq a program sees and keeps the async-event count that
 * ibv_destroy_srq waits on (IBV_EVENT_SRQ_LIMIT_REACHED / SRQ_ERR are
 * acked by ibv_ack_async_event, as in rdma-core).
 *
 * XRC and tag-matching SRQs are not modelled: ibv_create_srq_ex says
 * EOPNOTSUPP for them, and the device reports no IBV_DEVICE_XRC.
 */
#include <errno.h>
#include <stdlib.h>

#include "compat/compat.h"

static struct srt_device *dev_of(struct ibv_context *c)
{
	return to_sr_ctx(c)->dev;
}

struct ibv_srq *ibv_create_srq_1_1(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_context *context;
	struct srt_device *dev;
	struct sr_srq *srq;

	if (!pd || !attr || !sr_is_our_context(pd->context)) {
		errno = EINVAL;
		return NULL;
	}
	context = pd->context;
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	dev = dev_of(context);
	srt_lock(dev);
	srq->srq = rnic_srq_create(to_sr_pd(pd)->pd, attr, srq);
	srt_unlock(dev);
	if (!srq->srq) {
		int err = errno ? errno : EINVAL;

		free(srq);
		errno = err;
		return NULL;
	}
	srq->ibv.context = context;
	srq->ibv.srq_context = attr->srq_context;
	srq->ibv.pd = pd;
	sr_pd_use(pd);
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	return &srq->ibv;
}
SR_EXPORT_1_1(ibv_create_srq);

/* Reached through verbs_context.create_srq_ex for what the header's inline
 * ibv_create_srq_ex does not send to ibv_create_srq itself. */
struct ibv_srq *sr_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
			       IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	enum ibv_srq_type type;

	if (!attr || !sr_is_our_context(context)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & ~known) {
		errno = EINVAL;
		return NULL;
	}
	type = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? attr->srq_type : IBV_SRQT_BASIC;
	/* XRC and tag matching, or their attributes: not modelled. */
	if (type != IBV_SRQT_BASIC ||
	    (attr->comp_mask & (IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd || attr->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	/* ibv_srq_init_attr is the prefix of ibv_srq_init_attr_ex. */
	return ibv_create_srq_1_1(attr->pd, (struct ibv_srq_init_attr *)attr);
}

int ibv_modify_srq_1_1(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct srt_device *dev;
	int ret;

	if (!ibsrq || !attr || !sr_is_our_context(ibsrq->context))
		return EINVAL;
	dev = dev_of(ibsrq->context);
	srt_lock(dev);
	ret = rnic_srq_modify(to_sr_srq(ibsrq)->srq, attr, mask);
	srt_unlock(dev);
	return ret;
}
SR_EXPORT_1_1(ibv_modify_srq);

int ibv_query_srq_1_1(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct srt_device *dev;
	int ret;

	if (!ibsrq || !attr || !sr_is_our_context(ibsrq->context))
		return EINVAL;
	dev = dev_of(ibsrq->context);
	srt_lock(dev);
	ret = rnic_srq_query(to_sr_srq(ibsrq)->srq, attr);
	srt_unlock(dev);
	return ret;
}
SR_EXPORT_1_1(ibv_query_srq);

int ibv_destroy_srq_1_1(struct ibv_srq *ibsrq)
{
	struct sr_context *ctx;
	struct sr_srq *srq;
	uint32_t reported;
	int ret;

	if (!ibsrq || !sr_is_our_context(ibsrq->context))
		return EINVAL;
	srq = to_sr_srq(ibsrq);
	ctx = to_sr_ctx(ibsrq->context);
	srt_lock(ctx->dev);
	ret = rnic_srq_destroy(srq->srq);   /* EBUSY while a QP uses it */
	srt_unlock(ctx->dev);
	if (ret)
		return ret;

	/* No event can be raised for it any more: drop unread ones and wait
	 * until the program acked those it read (rdma-core semantics). */
	sr_async_forget(ctx, ibsrq);
	pthread_mutex_lock(&ctx->async_lock);
	reported = srq->events_reported;
	pthread_mutex_unlock(&ctx->async_lock);
	pthread_mutex_lock(&ibsrq->mutex);
	while (ibsrq->events_completed != reported)
		pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	pthread_mutex_unlock(&ibsrq->mutex);

	pthread_cond_destroy(&ibsrq->cond);
	pthread_mutex_destroy(&ibsrq->mutex);
	sr_pd_unuse(ibsrq->pd);
	free(srq);
	return 0;
}
SR_EXPORT_1_1(ibv_destroy_srq);

int sr_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct srt_device *dev = dev_of(ibsrq->context);
	struct ibv_recv_wr *scratch;
	int ret;

	if (!bad)
		bad = &scratch;
	srt_lock(dev);
	ret = rnic_post_srq_recv(to_sr_srq(ibsrq)->srq, wr, bad);
	srt_unlock(dev);
	return ret;
}
