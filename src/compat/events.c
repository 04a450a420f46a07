/*
 * events.c — completion channels and async events.
 *
 * The kernel hands a verbs program two kinds of events through file
 * descriptors: completion events on a channel fd, async events on the
 * context's async_fd.  Programs poll/epoll those fds and may set
 * O_NONBLOCK on them, so we give them real fds: an eventfd in semaphore
 * mode per channel / context, whose count is the number of queued events.
 * A blocking read waits for an event, a non-blocking one fails with
 * EAGAIN, poll sees POLLIN exactly when an event is waiting.
 *
 * The runtime calls our hooks (sr_hook_*) with the device lock held, from
 * its progress thread or from a posting thread; they only queue.
 *
 * Event accounting follows rdma-core: each event handed to the program is
 * counted as reported on its CQ/QP/SRQ; ibv_ack_*_events counts completed;
 * ibv_destroy_cq/qp/srq wait until both match, and drop events that were
 * queued but never read (as the kernel does when an object goes away).
 *
 * Port events: the runtime watches the link of the interface our address
 * lives on (runtime/link_monitor.h) and, like rxe with its netdev, raises
 * IBV_EVENT_PORT_ERR when it goes down (set down, carrier lost, address
 * removed) and IBV_EVENT_PORT_ACTIVE when it comes back, with user_obj
 * NULL; every open context gets them, element.port_num = 1.  Nothing is
 * raised at ibv_open_device: the port's state then is what
 * ibv_query_port reports.  On loopback (the default) the port never goes
 * down.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "compat/compat.h"

int sr_eventfd_take(int fd)
{
	uint64_t v;
	ssize_t n = read(fd, &v, sizeof(v));

	if (n == (ssize_t)sizeof(v))
		return 0;
	if (n >= 0)
		errno = EIO;
	return -1;
}

void sr_eventfd_give(int fd)
{
	uint64_t one = 1;
	ssize_t n;

	do
		n = write(fd, &one, sizeof(one));
	while (n < 0 && errno == EINTR);
}

/* ---- completion channels ------------------------------------------------ */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct sr_channel *ch;

	if (!sr_is_our_context(context)) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ibv.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ch->ibv.fd < 0) {
		int err = errno;

		free(ch);
		errno = err;
		return NULL;
	}
	ch->ibv.context = context;
	ch->ibv.refcnt = 0;
	pthread_mutex_init(&ch->lock, NULL);
	return &ch->ibv;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct ibv_context *context;
	struct sr_channel *ch;
	struct sr_cq_event *e;

	if (!channel)
		return EINVAL;
	context = channel->context;
	ch = to_sr_channel(channel);
	pthread_mutex_lock(&context->mutex);
	if (channel->refcnt) {           /* CQs still use it */
		pthread_mutex_unlock(&context->mutex);
		return EBUSY;
	}
	pthread_mutex_unlock(&context->mutex);
	while ((e = ch->head)) {
		ch->head = e->next;
		free(e);
	}
	close(channel->fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

void sr_hook_cq_event(void *hook_ctx, struct rnic_cq *rcq, void *cq_context)
{
	struct sr_context *ctx = hook_ctx;
	struct sr_cq *cq = cq_context;
	struct sr_channel *ch;
	struct sr_cq_event *e;

	(void)rcq;
	/* Every opener's hooks may see every CQ: take only our own. */
	if (!cq || cq->ibv.context != &ctx->vctx.context || !cq->ibv.channel)
		return;
	ch = to_sr_channel(cq->ibv.channel);
	e = malloc(sizeof(*e));
	if (!e)
		return;   /* trade-off: an event lost under OOM beats blocking the engine */
	e->cq = cq;
	e->next = NULL;
	pthread_mutex_lock(&ch->lock);
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	pthread_mutex_unlock(&ch->lock);
	sr_eventfd_give(ch->ibv.fd);
}

int ibv_get_cq_event_1_1(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	struct sr_channel *ch;
	struct sr_cq_event *e;

	if (!channel || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	ch = to_sr_channel(channel);
	/* This thread may sleep now: the progress thread must be the one
	 * that reads the socket (runtime.h, "Who reads the socket"). */
	if (sr_is_our_context(channel->context))
		srt_will_sleep(to_sr_ctx(channel->context)->dev);
	for (;;) {
		/* Blocks unless the program set O_NONBLOCK on channel->fd. */
		if (sr_eventfd_take(channel->fd))
			return -1;
		pthread_mutex_lock(&ch->lock);
		e = ch->head;
		if (e) {
			ch->head = e->next;
			if (!ch->head)
				ch->tail = NULL;
			e->cq->comp_events_reported++;
			*cq = &e->cq->ibv;
			*cq_context = e->cq->ibv.cq_context;
		}
		pthread_mutex_unlock(&ch->lock);
		if (e) {
			free(e);
			return 0;
		}
		/* The count belonged to an event of a destroyed CQ: wait on. */
	}
}
SR_EXPORT_1_1(ibv_get_cq_event);

void ibv_ack_cq_events_1_1(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
SR_EXPORT_1_1(ibv_ack_cq_events);

void sr_channel_forget_cq(struct sr_cq *cq)
{
	struct sr_channel *ch;
	struct sr_cq_event **pp, *e;

	if (!cq->ibv.channel)
		return;
	ch = to_sr_channel(cq->ibv.channel);
	pthread_mutex_lock(&ch->lock);
	ch->tail = NULL;
	pp = &ch->head;
	while ((e = *pp)) {
		if (e->cq == cq) {
			*pp = e->next;
			free(e);
		} else {
			ch->tail = e;
			pp = &e->next;
		}
	}
	pthread_mutex_unlock(&ch->lock);
}

/* ---- async events ------------------------------------------------------- */

static bool is_qp_event(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return true;
	default:
		return false;
	}
}

static bool is_srq_event(enum ibv_event_type t)
{
	return t == IBV_EVENT_SRQ_ERR || t == IBV_EVENT_SRQ_LIMIT_REACHED;
}

static bool is_port_event(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_DEVICE_FATAL:
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		return true;
	default:
		return false;
	}
}

void sr_hook_async_event(void *hook_ctx, enum ibv_event_type type, void *user_obj)
{
	struct sr_context *ctx = hook_ctx;
	struct ibv_context *ibctx = &ctx->vctx.context;
	struct sr_async_event *e;
	struct ibv_async_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.event_type = type;
	if (is_qp_event(type)) {
		struct sr_qp *qp = user_obj;

		if (!qp || qp->ibv.context != ibctx)
			return;
		ev.element.qp = &qp->ibv;
	} else if (type == IBV_EVENT_CQ_ERR) {
		struct sr_cq *cq = user_obj;

		if (!cq || cq->ibv.context != ibctx)
			return;
		ev.element.cq = &cq->ibv;
	} else if (is_srq_event(type)) {
		struct sr_srq *srq = user_obj;

		if (!srq || srq->ibv.context != ibctx)
			return;
		ev.element.srq = &srq->ibv;
	} else if (is_port_event(type)) {
		ev.element.port_num = SR_PORT_NUM;
	} else {
		return;   /* WQ events: we create no such objects */
	}

	e = malloc(sizeof(*e));
	if (!e)
		return;
	e->ev = ev;
	e->next = NULL;
	pthread_mutex_lock(&ctx->async_lock);
	if (ctx->async_tail)
		ctx->async_tail->next = e;
	else
		ctx->async_head = e;
	ctx->async_tail = e;
	pthread_mutex_unlock(&ctx->async_lock);
	sr_eventfd_give(ibctx->async_fd);
}

int ibv_get_async_event_1_1(struct ibv_context *context, struct ibv_async_event *event)
{
	struct sr_context *ctx;
	struct sr_async_event *e;

	if (!sr_is_our_context(context) || !event) {
		errno = EINVAL;
		return -1;
	}
	ctx = to_sr_ctx(context);
	for (;;) {
		if (sr_eventfd_take(context->async_fd))
			return -1;
		pthread_mutex_lock(&ctx->async_lock);
		e = ctx->async_head;
		if (e) {
			ctx->async_head = e->next;
			if (!ctx->async_head)
				ctx->async_tail = NULL;
			*event = e->ev;
			if (is_qp_event(e->ev.event_type))
				to_sr_qp(e->ev.element.qp)->events_reported++;
			else if (e->ev.event_type == IBV_EVENT_CQ_ERR)
				to_sr_cq(e->ev.element.cq)->async_events_reported++;
			else if (is_srq_event(e->ev.event_type))
				to_sr_srq(e->ev.element.srq)->events_reported++;
		}
		pthread_mutex_unlock(&ctx->async_lock);
		if (e) {
			free(e);
			return 0;
		}
	}
}
SR_EXPORT_1_1(ibv_get_async_event);

void ibv_ack_async_event_1_1(struct ibv_async_event *event)
{
	if (!event)
		return;
	if (is_qp_event(event->event_type)) {
		struct ibv_qp *qp = event->element.qp;

		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_signal(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
	} else if (event->event_type == IBV_EVENT_CQ_ERR) {
		struct ibv_cq *cq = event->element.cq;

		pthread_mutex_lock(&cq->mutex);
		cq->async_events_completed++;
		pthread_cond_signal(&cq->cond);
		pthread_mutex_unlock(&cq->mutex);
	} else if (is_srq_event(event->event_type)) {
		struct ibv_srq *srq = event->element.srq;

		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_cond_signal(&srq->cond);
		pthread_mutex_unlock(&srq->mutex);
	}
}
SR_EXPORT_1_1(ibv_ack_async_event);

static bool event_is_for(const struct ibv_async_event *ev, void *obj)
{
	if (is_qp_event(ev->event_type))
		return (void *)ev->element.qp == obj;
	if (ev->event_type == IBV_EVENT_CQ_ERR)
		return (void *)ev->element.cq == obj;
	if (is_srq_event(ev->event_type))
		return (void *)ev->element.srq == obj;
	return false;
}

void sr_async_forget(struct sr_context *ctx, void *obj)
{
	struct sr_async_event **pp, *e;

	pthread_mutex_lock(&ctx->async_lock);
	ctx->async_tail = NULL;
	pp = &ctx->async_head;
	while ((e = *pp)) {
		if (event_is_for(&e->ev, obj)) {
			*pp = e->next;
			free(e);
		} else {
			ctx->async_tail = e;
			pp = &e->next;
		}
	}
	pthread_mutex_unlock(&ctx->async_lock);
}

void sr_async_drain(struct sr_context *ctx)
{
	struct sr_async_event *e;

	pthread_mutex_lock(&ctx->async_lock);
	while ((e = ctx->async_head)) {
		ctx->async_head = e->next;
		free(e);
	}
	ctx->async_tail = NULL;
	pthread_mutex_unlock(&ctx->async_lock);
}
