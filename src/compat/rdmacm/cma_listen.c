/*
 * cma_listen.c — the passive side's listen: rdma_listen takes the port in
 * the loopback port space (addr.c, port_registry.c), the service's
 * steering on a shared host address, and the cm's listen.  Two AFONLY
 * listeners of different families may share one port as twins (the
 * kernel's cma_check_port allows it); cma_event.c gives each REQ to the
 * twin of its IP version.  rdma_get_request is the synchronous listener's
 * wait for a connection request.
 */
#include <errno.h>

#include "compat/rdmacm/cma_int.h"
#include "runtime/share_steer.h"
#include "wire/mad.h"

/* The family a listener takes requests for. */
sa_family_t rcm_listen_family(const struct rcm_id *id)
{
	return id->bound_family == AF_INET6 ? AF_INET6 : AF_INET;
}

/* A listener of this process on service_id that id may share the port
 * with: as the kernel's cma_check_port, both set AFONLY and bound
 * addresses of different families (tgt listens on 0.0.0.0 and [::] so). */
static struct rcm_id *listening_twin_candidate(uint64_t service_id, const struct rcm_id *id)
{
	struct rcm_id *found = NULL;

	pthread_mutex_lock(&rcm_list_lock);
	for (struct rcm_id *o = rcm.all; o && !found; o = o->next_all)
		if (o != id && o->state == RCM_LISTEN && o->service_id == service_id && !o->twin &&
		    o->afonly && id->afonly && rcm_listen_family(o) != rcm_listen_family(id))
			found = o;
	pthread_mutex_unlock(&rcm_list_lock);
	return found;
}

static bool pair_with_twin(struct rcm_id *id, struct rcm_id *other)
{
	srt_lock(rcm.dev);
	id->twin = other;
	other->twin = id;
	srt_unlock(rcm.dev);
	return true;
}

int rdma_listen(struct rdma_cm_id *cmid, int backlog)
{
	struct rcm_id *id = to_rcm_id(cmid);
	int e;

	/* The kernel's rdma_listen: an idle id is bound to the any address
	 * first; only a bound one may listen (a resolved, connecting or
	 * listening one is EINVAL). */
	if (!cmid || (id->state != RCM_IDLE && id->state != RCM_ADDR_BOUND))
		return rcm_fail(EINVAL);
	if (id->state == RCM_IDLE) {
		struct sockaddr_in any = { .sin_family = AF_INET };
		if (rcm_bind(id, (struct sockaddr *)&any))
			return -1;
	}
	e = rcm_register_listener(id);
	if (e)
		return rcm_fail(e);
	rcm_registry_drain();
	uint64_t service_id = wire_rdma_cm_service_id(rcm_ps(id), rcm_src_port(id));
	/* On a shared host address, REQs for the service must come to us:
	 * another process of the host listening on it is EADDRINUSE, as
	 * for a port bound twice. */
	struct rcm_id *other = listening_twin_candidate(service_id, id);
	e = other ? 0 : srt_share_listen(rcm.dev, service_id, true);
	if (e) {
		rcm_unregister_listener(id);
		return rcm_fail(e);
	}
	srt_lock(rcm.dev);
	e = cm_listen(rcm.cm, service_id, id, &id->listen);
	srt_unlock(rcm.dev);
	if (e == EADDRINUSE && other && pair_with_twin(id, other)) {
		/* The twin holds the cm's listen and the shared steering. */
		id->service_id = service_id;
		id->backlog = backlog;
		id->state = RCM_LISTEN;
		return 0;
	}
	if (e) {
		if (!other)
			srt_share_listen(rcm.dev, service_id, false);
		rcm_unregister_listener(id);
		return rcm_fail(e);
	}
	id->service_id = service_id;
	id->backlog = backlog;
	id->state = RCM_LISTEN;
	return 0;
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **out)
{
	struct rcm_id *l = to_rcm_id(listen);
	struct rcm_event *e;
	int err;

	if (!listen || !out || l->state != RCM_LISTEN)
		return rcm_fail(EINVAL);
	if (!l->sync)
		return rcm_fail(EINVAL);
	err = rcm_wait_event(l, RDMA_CM_EVENT_CONNECT_REQUEST, &e);
	if (err)
		return rcm_fail(err);
	struct rcm_id *child = to_rcm_id(e->ev.id);
	/* rdma_create_ep's QP settings apply to the ids it accepts. */
	if (l->ep_qp_attr) {
		struct ibv_qp_init_attr attr = *l->ep_qp_attr;
		if (rdma_create_qp(&child->id, l->ep_pd, &attr)) {
			err = errno;
			rdma_reject(&child->id, NULL, 0);
			rdma_destroy_id(&child->id);
			return rcm_fail(err);
		}
	}
	child->id.event = &e->ev;
	/* The event stays the child's (acked when it goes or at its next
	 * synchronous call). */
	l->sync_event = NULL;
	l->id.event = NULL;
	child->sync_event = e;
	*out = &child->id;
	return 0;
}
