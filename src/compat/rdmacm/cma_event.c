/*
 * cma_event.c — the events that tell a librdmacm program what happened.
 * The cm's events arrive with the device lock held (rcm_cm_event, the
 * callback cma.c gives the cm); they are copied into rcm_events and queued
 * on the event channel (cma_channel.c) of the rdma_cm_id they concern; a
 * REQ makes a new id for its listener.  rdma_get_cm_event then does, in
 * the program's thread, what rdma-core's librdmacm does there: on a REP
 * it moves the QP to RTR and RTS and sends the RTU before it reports
 * ESTABLISHED.  Synchronous ids wait for their events here
 * (rcm_wait_event).
 *
 * Mapping of cm events (as the kernel's cma.c maps ib_cm events):
 *   REQ received       -> CONNECT_REQUEST on a new id (listen_id set)
 *   REP received       -> ESTABLISHED (QP moved, RTU sent), or
 *                         CONNECT_RESPONSE when the id has no QP
 *   RTU / establish    -> ESTABLISHED
 *   REJ received       -> REJECTED, status = the REJ reason (8: nobody
 *                         listens on that port; 28: rdma_reject)
 *   REQ/REP timeout    -> UNREACHABLE, status -ETIMEDOUT
 *   DREQ received, our disconnect done -> DISCONNECTED
 *   SIDR REQ / REP     -> CONNECT_REQUEST / ESTABLISHED (param.ud)
 * TimeWait exits are not reported: no program here waits for them, and a
 * synchronous id would keep one unread.  Trade-off, named: the kernel
 * reports RDMA_CM_EVENT_TIMEWAIT_EXIT.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat/rdmacm/cma_int.h"
#include "wire/mad.h"

/* ---- cm events -> rdma_cm events (device lock held) ------------------------ */

static void copy_private(struct rcm_event *e, const struct cm_event *ev, size_t skip)
{
	if (!ev->private_data || ev->private_data_len <= skip)
		return;
	e->private_data_len = (uint8_t)(ev->private_data_len - skip);
	memcpy(e->private_data, ev->private_data + skip, e->private_data_len);
	e->ev.param.conn.private_data = e->private_data;
	e->ev.param.conn.private_data_len = e->private_data_len;
}

/* The QP attributes a REQ/REP exchange gave (cm_qp_attr_active /
 * _passive) into the id, where rdma_init_qp_attr reads them; the path MTU
 * no larger than our port's, the traffic class unless the program chose a
 * TOS. */
void rcm_take_qp_attr(struct rcm_id *id, const struct cm_qp_attr *a)
{
	id->remote_qpn = a->dest_qp_num;
	id->rq_psn = a->rq_psn;
	id->sq_psn = a->sq_psn;
	if (a->path_mtu < id->mtu)
		id->mtu = a->path_mtu;
	id->responder_resources = a->max_dest_rd_atomic > 128 ? 128 : a->max_dest_rd_atomic;
	id->initiator_depth = a->max_rd_atomic > 128 ? 128 : a->max_rd_atomic;
	id->ack_timeout = a->timeout;
	id->retry_count = a->retry_cnt;
	id->rnr_retry_count = a->rnr_retry;
	if (!id->tos_set)
		id->tos = a->traffic_class;
}

/* A REQ or SIDR_REQ for a listener: a new id, and CONNECT_REQUEST on the
 * listener's channel. */
static void request_received(const struct cm_event *ev)
{
	struct rcm_id *l = ev->listen_user;
	struct wire_cma_hdr hdr;
	struct rcm_channel *chan;
	struct rcm_id *id;
	struct rcm_event *e;
	bool sidr = ev->type == CM_EV_SIDR_REQ_RECEIVED;

	/* The client looked this host's port up just before (port_registry.c). */
	rcm_registry_drain();
	if (!l || l->state != RCM_LISTEN || !ev->private_data ||
	    wire_cma_hdr_decode(ev->private_data, ev->private_data_len, &hdr) != 0) {
		/* Not an RDMA-CM IP request (or nobody to give it to). */
		if (sidr)
			cm_sidr_reply(ev->id, CM_SIDR_REJECT, 0, 0, NULL, 0, srt_now());
		else
			cm_reject(ev->id, CM_REJ_INVALID_SERVICE_ID, NULL, 0, NULL, 0, srt_now());
		cm_destroy_id(ev->id, srt_now());
		return;
	}
	/* The listener of the request's IP version (a twin of the other
	 * family, or one that is not AFONLY, takes the rest). */
	sa_family_t want = hdr.ip_version == 6 ? AF_INET6 : AF_INET;
	if (rcm_listen_family(l) != want && l->twin && rcm_listen_family(l->twin) == want)
		l = l->twin;
	chan = l->sync ? rcm_channel_create(true) : l->chan;
	id = chan ? rcm_id_alloc(chan, l->sync, l->id.context, l->id.ps, l->id.qp_type) : NULL;
	e = id ? rcm_new_event(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0) : NULL;
	if (!e) {
		if (id) {
			rcm_id_unlink(id);
			free(id);
		}
		if (chan && l->sync)
			rcm_channel_destroy(chan);
		cm_reject(ev->id, CM_REJ_NO_RESOURCES, NULL, 0, NULL, 0, srt_now());
		cm_destroy_id(ev->id, srt_now());
		return;
	}
	id->cm = ev->id;
	id->listener = l;
	id->state = RCM_REQ_RCVD;
	cm_id_set_user(ev->id, id);
	memcpy(id->remote_gid, ev->remote_gid, 16);
	/* Addresses from the RDMA-CM header: the peer's is the source.
	 * IPv6 (ip_version 6) keeps all 16 bytes. */
	uint16_t ps, port = 0;
	bool have_port = wire_rdma_cm_service_id_parse(cm_id_service_id(ev->id), &ps, &port);
	if (hdr.ip_version == 6) {
		struct sockaddr_in6 *src6 = &id->id.route.addr.src_sin6, *dst6 = &id->id.route.addr.dst_sin6;
		memset(src6, 0, sizeof(*src6));
		memset(dst6, 0, sizeof(*dst6));
		src6->sin6_family = dst6->sin6_family = AF_INET6;
		memcpy(&src6->sin6_addr, hdr.dst_addr, 16);
		memcpy(&dst6->sin6_addr, hdr.src_addr, 16);
		if (have_port)
			src6->sin6_port = htobe16(port);
		dst6->sin6_port = htobe16(hdr.src_port);
	} else {
		struct sockaddr_in *src = &id->id.route.addr.src_sin, *dst = &id->id.route.addr.dst_sin;
		src->sin_family = AF_INET;
		memcpy(&src->sin_addr, hdr.dst_addr + 12, 4);
		if (have_port)
			src->sin_port = htobe16(port);
		dst->sin_family = AF_INET;
		memcpy(&dst->sin_addr, hdr.src_addr + 12, 4);
		dst->sin_port = htobe16(hdr.src_port);
	}
	id->tos = l->tos;
	id->tos_set = l->tos_set;
	id->ack_timeout = l->ack_timeout;

	e->ev.listen_id = &l->id;
	e->cm_type = ev->type;
	memcpy(e->remote_gid, ev->remote_gid, 16);
	if (sidr) {
		copy_private(e, ev, WIRE_CMA_HDR_LEN);
		e->ev.param.ud.private_data = e->ev.param.conn.private_data;
		e->ev.param.ud.private_data_len = e->ev.param.conn.private_data_len;
	} else {
		const struct cm_req_info *r = &ev->u.req;
		e->info.req = *r;
		id->peer_req = *r;
		/* Our QP from the REQ, and from a REP with what rdma_accept
		 * uses when the program gives no values (NULL or RDMA_MAX_*,
		 * as rdma-core keeps them): a program may move its QP before
		 * it accepts. */
		struct cm_rep_param rep = {
			.starting_psn = id->rq_psn,
			.responder_resources = r->initiator_depth > 128 ? 128 : r->initiator_depth,
			.initiator_depth = r->responder_resources > 128 ? 128 : r->responder_resources,
		};
		struct cm_qp_attr a;
		cm_qp_attr_passive(r, &rep, &a);
		rcm_take_qp_attr(id, &a);
		copy_private(e, ev, WIRE_CMA_HDR_LEN);
		/* From the receiver's point of view, as librdmacm reports it:
		 * the reads the peer will issue are our responder resources. */
		e->ev.param.conn.responder_resources = r->initiator_depth;
		e->ev.param.conn.initiator_depth = r->responder_resources;
		e->ev.param.conn.flow_control = r->flow_control;
		e->ev.param.conn.retry_count = r->retry_count;
		e->ev.param.conn.rnr_retry_count = r->rnr_retry_count;
		e->ev.param.conn.srq = r->srq;
		e->ev.param.conn.qp_num = r->qpn;
	}
	rcm_fill_route(id);     /* with the MTU and traffic class just taken */
	rcm_queue_event(l, e);
}

void rcm_cm_event(void *ctx, const struct cm_event *ev)
{
	struct rcm_id *id = ev->user;
	struct rcm_event *e;
	(void)ctx;

	if (ev->type == CM_EV_REQ_RECEIVED || ev->type == CM_EV_SIDR_REQ_RECEIVED) {
		request_received(ev);
		return;
	}
	if (!id || id->state == RCM_DESTROYING || ev->type == CM_EV_MRA_RECEIVED)
		return;
	/* A request refused because its peer on this host has not listened
	 * yet: send it again later (cma_early.c). */
	bool refused = (ev->type == CM_EV_REJ_RECEIVED && ev->rej_reason == CM_REJ_INVALID_SERVICE_ID &&
			ev->rej_msg == 0) ||
		       (ev->type == CM_EV_SIDR_REP_RECEIVED && ev->u.sidr_rep.status == CM_SIDR_UNSUPPORTED);
	if (refused && id->state == RCM_CONNECT && id->early_retries < RCM_EARLY_RETRIES) {
		id->early_retries++;
		rcm_set_retry(id, srt_now() + RCM_EARLY_RETRY_NS);
		return;
	}
	e = rcm_new_event(id, RDMA_CM_EVENT_CONNECT_ERROR, 0);
	if (!e)
		return;
	e->cm_type = ev->type;
	memcpy(e->remote_gid, ev->remote_gid, 16);
	switch (ev->type) {
	case CM_EV_REP_RECEIVED:
		e->info.rep = ev->u.rep;
		e->ev.event = RDMA_CM_EVENT_CONNECT_RESPONSE;   /* finished in rdma_get_cm_event */
		copy_private(e, ev, 0);
		break;
	case CM_EV_ESTABLISHED:
		e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
		copy_private(e, ev, 0);
		break;
	case CM_EV_REJ_RECEIVED:
		e->ev.event = RDMA_CM_EVENT_REJECTED;
		e->ev.status = ev->rej_reason;
		copy_private(e, ev, 0);
		break;
	case CM_EV_REQ_TIMEOUT:
	case CM_EV_REP_TIMEOUT:
	case CM_EV_SIDR_TIMEOUT:
		e->ev.event = RDMA_CM_EVENT_UNREACHABLE;
		e->ev.status = -ETIMEDOUT;
		break;
	case CM_EV_DREQ_RECEIVED:
		id->peer_disconnected = true;
		e->ev.event = RDMA_CM_EVENT_DISCONNECTED;
		copy_private(e, ev, 0);
		break;
	case CM_EV_DISCONNECT_DONE:
		e->ev.event = RDMA_CM_EVENT_DISCONNECTED;
		break;
	case CM_EV_TIMEWAIT_EXIT:
		/* The kernel's cma passes the IB CM's TimeWait exit on (after
		 * DREQ/DREP, a DREQ that timed out, or a REJ of a REP): the
		 * moment a program may reuse what the connection held; tgt
		 * frees an iSER connection only then. */
		e->ev.event = RDMA_CM_EVENT_TIMEWAIT_EXIT;
		break;
	case CM_EV_SIDR_REP_RECEIVED:
		e->sidr_status = ev->u.sidr_rep.status;
		e->sidr_qpn = ev->u.sidr_rep.qpn;
		e->sidr_qkey = ev->u.sidr_rep.qkey;
		if (ev->u.sidr_rep.status == CM_SIDR_SUCCESS) {
			e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
		} else {
			e->ev.event = RDMA_CM_EVENT_UNREACHABLE;
			e->ev.status = ev->u.sidr_rep.status;
		}
		copy_private(e, ev, 0);
		e->ev.param.ud.private_data = e->ev.param.conn.private_data;
		e->ev.param.ud.private_data_len = e->ev.param.conn.private_data_len;
		break;
	default:
		free(e);
		return;
	}
	rcm_queue_event(id, e);
}

/* ---- reading events ------------------------------------------------------ */

static void fill_ud_param(struct rcm_id *id, struct rcm_event *e)
{
	struct ibv_ah_attr *ah = &e->ev.param.ud.ah_attr;

	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	memcpy(ah->grh.dgid.raw, id->remote_gid, 16);
	ah->grh.hop_limit = 64;
	ah->grh.traffic_class = id->tos;
	e->ev.param.ud.qp_num = e->sidr_qpn;
	e->ev.param.ud.qkey = e->sidr_qkey;
}

/* The program's-thread part of an event (rdma-core's rdma_get_cm_event
 * does the same work there). */
static void finish_event(struct rcm_event *e)
{
	struct rcm_id *id = to_rcm_id(e->ev.id);
	uint64_t now;

	switch (e->ev.event) {
	case RDMA_CM_EVENT_CONNECT_RESPONSE: {
		const struct cm_rep_info *r = &e->info.rep;
		struct cm_qp_attr a;
		cm_qp_attr_active(&id->req, r, &a);
		rcm_take_qp_attr(id, &a);
		/* From the receiver's point of view, as librdmacm reports it. */
		e->ev.param.conn.responder_resources = r->initiator_depth;
		e->ev.param.conn.initiator_depth = r->responder_resources;
		e->ev.param.conn.rnr_retry_count = r->rnr_retry_count;
		e->ev.param.conn.srq = r->srq;
		e->ev.param.conn.qp_num = r->qpn;
		if (!id->id.qp) {
			id->state = RCM_CONNECT_RESPONSE;
			break;
		}
		int err = rcm_qp_to_rtr_rts(id);
		now = srt_now();
		srt_lock(rcm.dev);
		if (!id->cm) {
			err = ECONNABORTED;
		} else if (err) {
			cm_reject(id->cm, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0, now);
		} else {
			cm_send_rtu(id->cm, NULL, 0, now);
		}
		srt_unlock(rcm.dev);
		srt_kick(rcm.dev);
		if (err) {
			e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
			e->ev.status = -err;
			rcm_qp_to_error(id);
		} else {
			e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
			id->state = RCM_CONNECTED;
		}
		break;
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		if (e->cm_type == CM_EV_SIDR_REP_RECEIVED)
			fill_ud_param(id, e);
		id->state = RCM_CONNECTED;
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
		if (e->cm_type == CM_EV_SIDR_REP_RECEIVED || e->cm_type == CM_EV_SIDR_TIMEOUT)
			break;
		rcm_qp_to_error(id);
		id->state = RCM_DISCONNECTED;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* The QP is left alone, as rdma-core leaves it: the program
		 * answers with rdma_disconnect (which moves it to ERR), and may
		 * be destroying the QP in another thread right now (cmtime). */
		id->state = RCM_DISCONNECTED;
		break;
	default:
		break;
	}
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct rcm_event *e;
	int err;

	if (!channel || !event)
		return rcm_fail(EINVAL);
	err = rcm_channel_take((struct rcm_channel *)channel, &e);
	if (err)
		return rcm_fail(err);
	finish_event(e);
	*event = &e->ev;
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event)
		return rcm_fail(EINVAL);
	free(event);    /* struct rcm_event starts with it */
	return 0;
}

/* Synchronous ids: wait on the id's own channel for the event that ends
 * an operation; the previous one is freed, this one kept in id->event. */
int rcm_wait_event(struct rcm_id *id, enum rdma_cm_event_type want, struct rcm_event **out)
{
	struct rcm_event *e;
	int err;

	for (;;) {
		err = rcm_channel_take(id->chan, &e);
		if (err)
			return err;
		finish_event(e);
		if (e->ev.id == &id->id || e->ev.listen_id == &id->id)
			break;
		free(e);
	}
	free(id->sync_event);
	id->sync_event = e;
	id->id.event = &e->ev;
	if (out)
		*out = e;
	if (e->ev.event != want)
		return e->ev.event == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED :
		       e->ev.status < 0 ? -e->ev.status : ECONNABORTED;
	return 0;
}
