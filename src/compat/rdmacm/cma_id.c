/*
 * cma_id.c — rdma_cm ids: made (rdma_create_id, rcm_create_id2 for
 * rdma_create_ep, and one per connection request in cma_event.c) with
 * their connection defaults, kept on the process's list (rcm.all, walked
 * at exit and for listening twins), and destroyed: the cm's id and
 * listen, the port held in the loopback port space, the id's queued
 * events (connection requests waiting for a listener that goes are
 * refused), its multicast groups.  A synchronous id (NULL channel) gets an
 * internal channel of its own.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>

#include "compat/rdmacm/cma_int.h"
#include "runtime/share_steer.h"

struct rcm_id *rcm_id_alloc(struct rcm_channel *chan, bool sync, void *context, enum rdma_port_space ps,
			       enum ibv_qp_type qp_type)
{
	struct rcm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->chan = chan;
	id->sync = sync;
	id->id.channel = &chan->ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qp_type;
	id->id.verbs = rcm.verbs;
	id->id.port_num = 1;
	/* As rdma-core: an id on a device carries that device's default PD. */
	id->id.pd = rcm.default_pd;
	id->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
	/* The PSN we expect first, announced in our REQ or REP, known from
	 * the start: a program that moves its own QP (rdma_init_qp_attr) may
	 * do so before rdma_accept / the REP. */
	id->rq_psn = (uint32_t)((srt_now() ^ (uintptr_t)id) * 2654435761u) & 0xffffff;
	id->retry_count = 7;
	id->rnr_retry_count = 7;
	id->ack_timeout = CM_DEFAULT_ACK_TIMEOUT;
	id->mtu = srt_active_mtu(rcm.dev);
	pthread_mutex_lock(&rcm_list_lock);
	id->prev_all = NULL;
	id->next_all = rcm.all;
	if (rcm.all)
		rcm.all->prev_all = id;
	rcm.all = id;
	pthread_mutex_unlock(&rcm_list_lock);
	return id;
}

void rcm_id_unlink(struct rcm_id *id)
{
	pthread_mutex_lock(&rcm_list_lock);
	if (id->prev_all)
		id->prev_all->next_all = id->next_all;
	else
		rcm.all = id->next_all;
	if (id->next_all)
		id->next_all->prev_all = id->prev_all;
	pthread_mutex_unlock(&rcm_list_lock);
}

/* The QP type of an id, as the kernel's ucma_get_qp_type decides it: TCP
 * is RC and UDP / IPoIB are UD whatever the caller asked; the IB port
 * space takes the caller's type; any other port space is EINVAL. */
static int qp_type_of(enum rdma_port_space ps, enum ibv_qp_type asked, enum ibv_qp_type *out)
{
	switch (ps) {
	case RDMA_PS_TCP:
		*out = IBV_QPT_RC;
		return 0;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		*out = IBV_QPT_UD;
		return 0;
	case RDMA_PS_IB:
		*out = asked;
		return 0;
	default:
		return EINVAL;
	}
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
		   enum rdma_port_space ps)
{
	/* rdma-core: UDP and IPoIB ids are UD, every other one RC. */
	return rcm_create_id2(channel, out, context, ps,
			      ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC);
}

int rcm_create_id2(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
		   enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct rcm_channel *chan;
	struct rcm_id *id;
	int e;

	if (!out)
		return rcm_fail(EINVAL);
	e = qp_type_of(ps, qp_type, &qp_type);
	if (e)
		return rcm_fail(e);
	e = rcm_init();
	if (e)
		return rcm_fail(e);
	chan = channel ? (struct rcm_channel *)channel : rcm_channel_create(true);
	if (!chan)
		return rcm_fail(ENOMEM);
	id = rcm_id_alloc(chan, channel == NULL, context, ps, qp_type);
	if (!id) {
		if (!channel)
			rcm_channel_destroy(chan);
		return rcm_fail(ENOMEM);
	}
	*out = &id->id;
	return 0;
}

/* Kills the queued events of `id` (the id is going): they stay in the
 * queue, counted, and rcm_channel_take skips them.  Connection requests queued
 * for a listener that goes are refused. */
static void purge_events(struct rcm_id *id)
{
	struct rcm_channel *c = id->chan;
	struct rcm_id *refuse[64];
	unsigned n = 0;

	pthread_mutex_lock(&c->lock);
	for (struct rcm_event *e = c->head; e; e = e->next) {
		if (e->dead || (e->ev.id != &id->id && e->ev.listen_id != &id->id))
			continue;
		e->dead = true;
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.listen_id == &id->id &&
		    n < sizeof(refuse) / sizeof(refuse[0]))
			refuse[n++] = to_rcm_id(e->ev.id);
	}
	pthread_mutex_unlock(&c->lock);
	for (unsigned i = 0; i < n; i++) {
		rdma_reject(&refuse[i]->id, NULL, 0);
		rdma_destroy_id(&refuse[i]->id);
	}
}

int rdma_destroy_id(struct rdma_cm_id *cmid)
{
	struct rcm_id *id;

	if (!cmid)
		return rcm_fail(EINVAL);
	id = to_rcm_id(cmid);
	srt_lock(rcm.dev);
	id->state = RCM_DESTROYING;
	rcm_set_retry(id, 0);
	if (id->cm) {
		cm_id_set_user(id->cm, NULL);
		cm_destroy_id(id->cm, srt_now());
		id->cm = NULL;
	}
	bool was_listening = id->listen != NULL;
	struct rcm_id *twin = id->twin;
	if (twin) {
		/* The twin goes on listening alone, with the cm's listen. */
		twin->twin = NULL;
		id->twin = NULL;
		if (id->listen) {
			cm_unlisten(id->listen);
			id->listen = NULL;
			if (cm_listen(rcm.cm, id->service_id, twin, &twin->listen) == 0)
				was_listening = false;  /* the steering stays the twin's */
		}
	}
	if (id->listen) {
		cm_unlisten(id->listen);
		id->listen = NULL;
	}
	srt_unlock(rcm.dev);
	if (was_listening)
		srt_share_listen(rcm.dev, id->service_id, false);
	srt_kick(rcm.dev);
	if (id->registered)
		rcm_unregister_listener(id);
	purge_events(id);
	free(id->sync_event);
	rcm_leave_all(id);
	free(id->ep_qp_attr);
	free(id->id.route.path_rec);
	rcm_id_unlink(id);
	if (id->chan->internal)
		rcm_channel_destroy(id->chan);
	free(id);
	return 0;
}
