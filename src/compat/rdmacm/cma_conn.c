/*
 * cma_conn.c — a connection's calls: rdma_connect builds the REQ (or a UD
 * id's SIDR_REQ) with the RDMA-CM header and keeps it in the id, where
 * cma_early.c finds it to send it again; rdma_accept answers a REQ with a
 * REP (the QP moved to RTR and RTS first) or a SIDR_REP; rdma_reject,
 * rdma_establish (an id without a QP), rdma_notify, rdma_disconnect.  What
 * the peer's answers do is in cma_event.c.
 */
#include <errno.h>
#include <string.h>

#include "compat/rdmacm/cma_int.h"
#include "wire/mad.h"

/* A READ/atomic depth the program asked for: RDMA_MAX_RESP_RES /
 * RDMA_MAX_INIT_DEPTH (0xFF) mean "the default" (`dflt`); at most the
 * device's 128. */
static uint8_t rd_depth(uint8_t v, uint8_t dflt)
{
	if (v == 0xFF)
		return dflt;
	return v > 128 ? 128 : v;
}

/* rdma-core's ucma_valid_param, for the TCP port space only: no QP needs
 * a conn_param, and a READ depth above the device's maximum (other than
 * RDMA_MAX_*, "the default") is EINVAL, not clamped. */
static bool valid_param(const struct rcm_id *id, const struct rdma_conn_param *p)
{
	if (id->id.ps != RDMA_PS_TCP)
		return true;
	if (!p)
		return id->id.qp != NULL;
	if (p->responder_resources != RDMA_MAX_RESP_RES && p->responder_resources > rcm.max_resp_res)
		return false;
	if (p->initiator_depth != RDMA_MAX_INIT_DEPTH && p->initiator_depth > rcm.max_init_depth)
		return false;
	return true;
}

/* Device lock held: send the REQ (or SIDR_REQ) saved in the id. */
int rcm_send_request(struct rcm_id *id, uint64_t now)
{
	if (id->id.qp_type == IBV_QPT_UD)
		return cm_sidr_request(rcm.cm, id->remote_gid, id->sidr_service_id, id->req_private,
				       id->req_private_len, cm_get_config(rcm.cm)->cm_response_timeout,
				       cm_get_config(rcm.cm)->max_cm_retries, id, now, &id->cm);
	return cm_connect(rcm.cm, &id->req, id, now, &id->cm);
}

int rdma_connect(struct rdma_cm_id *cmid, struct rdma_conn_param *conn_param)
{
	struct rcm_id *id = to_rcm_id(cmid);
	/* Room for the larger of the two: SIDR_REQ (216) and REQ (92). */
	uint8_t buf[WIRE_CM_SIDR_REQ_PRIVATE_DATA];
	size_t max_user = (cmid && cmid->qp_type == IBV_QPT_UD ? WIRE_CM_SIDR_REQ_PRIVATE_DATA
							       : WIRE_CM_REQ_PRIVATE_DATA) - WIRE_CMA_HDR_LEN;
	uint64_t now;
	int e;

	if (!cmid || id->state != RCM_ROUTE_RESOLVED || !valid_param(id, conn_param))
		return rcm_fail(EINVAL);
	if (conn_param && conn_param->private_data_len > max_user)
		return rcm_fail(EINVAL);
	/* The RDMA-CM header (the kernel's cma_hdr): IPv4 addresses in the
	 * last 4 bytes, IPv6 ones whole, with ip_version saying which. */
	bool v6 = id->id.route.addr.src_sin6.sin6_family == AF_INET6;
	struct wire_cma_hdr hdr = { .cma_version = WIRE_CMA_VERSION, .ip_version = v6 ? 6 : 4,
				    .src_port = rcm_src_port(id) };
	if (v6) {
		memcpy(hdr.src_addr, &id->id.route.addr.src_sin6.sin6_addr, 16);
		memcpy(hdr.dst_addr, &id->id.route.addr.dst_sin6.sin6_addr, 16);
	} else {
		memcpy(hdr.src_addr + 12, &id->id.route.addr.src_sin.sin_addr, 4);
		memcpy(hdr.dst_addr + 12, &id->id.route.addr.dst_sin.sin_addr, 4);
	}
	memset(buf, 0, sizeof(buf));
	wire_cma_hdr_encode(&hdr, buf, WIRE_CMA_HDR_LEN);
	size_t len = WIRE_CMA_HDR_LEN;
	if (conn_param && conn_param->private_data_len) {
		memcpy(buf + len, conn_param->private_data, conn_param->private_data_len);
		len += conn_param->private_data_len;
	}
	uint64_t sid = wire_rdma_cm_service_id(rcm_ps(id), rcm_dst_port(id));
	memcpy(id->req_private, buf, len);
	id->req_private_len = (uint8_t)len;
	id->early_retries = 0;
	if (cmid->qp_type == IBV_QPT_UD) {
		id->sidr_service_id = sid;
	} else {
		struct cm_req_param *p = &id->req;
		if (!cmid->qp && !(conn_param && conn_param->qp_num))
			return rcm_fail(EINVAL);
		cm_req_param_init(rcm.cm, p);
		memcpy(p->dgid, id->remote_gid, 16);
		p->service_id = sid;
		p->qpn = cmid->qp ? cmid->qp->qp_num : conn_param->qp_num;
		p->qp_type = IBV_QPT_RC;
		p->starting_psn = id->rq_psn;
		id->responder_resources = conn_param ? rd_depth(conn_param->responder_resources, 128) : 128;
		id->initiator_depth = conn_param ? rd_depth(conn_param->initiator_depth, 128) : 128;
		p->responder_resources = id->responder_resources;
		p->initiator_depth = id->initiator_depth;
		p->path_mtu = id->mtu;
		/* The retry counts we ask the passive side to use; our own QP's
		 * RNR retry count comes with the REP. */
		if (conn_param) {
			id->retry_count = conn_param->retry_count > 7 ? 7 : conn_param->retry_count;
			id->rnr_retry_count = conn_param->rnr_retry_count > 7 ? 7 : conn_param->rnr_retry_count;
			p->flow_control = conn_param->flow_control;
			p->srq = cmid->qp ? cmid->qp->srq != NULL : conn_param->srq;
		}
		p->retry_count = id->retry_count;
		p->rnr_retry_count = id->rnr_retry_count;
		p->local_ack_timeout = id->ack_timeout;
		p->traffic_class = id->tos;
		p->private_data = id->req_private;
		p->private_data_len = id->req_private_len;
	}
	now = srt_now();
	srt_lock(rcm.dev);
	/* Before sending: the answer may be handled before we return. */
	id->state = RCM_CONNECT;
	e = rcm_send_request(id, now);
	if (e)
		id->state = RCM_ROUTE_RESOLVED;
	srt_unlock(rcm.dev);
	srt_kick(rcm.dev);
	if (e)
		return rcm_fail(e);
	if (id->sync) {
		e = rcm_wait_event(id, RDMA_CM_EVENT_ESTABLISHED, NULL);
		if (e)
			return rcm_fail(e);
	}
	return 0;
}

int rdma_accept(struct rdma_cm_id *cmid, struct rdma_conn_param *conn_param)
{
	struct rcm_id *id = to_rcm_id(cmid);
	uint64_t now;
	int e;

	if (!cmid || id->state != RCM_REQ_RCVD || !id->cm || !valid_param(id, conn_param))
		return rcm_fail(EINVAL);
	if (cmid->qp_type == IBV_QPT_UD) {
		uint32_t qpn = cmid->qp ? cmid->qp->qp_num : conn_param ? conn_param->qp_num : 0;
		if (conn_param && conn_param->private_data_len > WIRE_CM_SIDR_REP_PRIVATE_DATA)
			return rcm_fail(EINVAL);
		srt_lock(rcm.dev);
		e = cm_sidr_reply(id->cm, CM_SIDR_SUCCESS, qpn, RDMA_UDP_QKEY,
				  conn_param ? conn_param->private_data : NULL,
				  conn_param ? conn_param->private_data_len : 0, srt_now());
		srt_unlock(rcm.dev);
		srt_kick(rcm.dev);
		if (e)
			return rcm_fail(e);
		id->state = RCM_CONNECTED;
		return 0;
	}
	if (conn_param && conn_param->private_data_len > WIRE_CM_REP_PRIVATE_DATA)
		return rcm_fail(EINVAL);
	if (!cmid->qp && !(conn_param && conn_param->qp_num))
		return rcm_fail(EINVAL);
	/* What we give the peer's READs and our own READs: the program's
	 * values, or the REQ's (rdma-core keeps them for RDMA_MAX_*). */
	uint8_t rr = conn_param ? rd_depth(conn_param->responder_resources, id->responder_resources)
				: id->responder_resources;
	uint8_t id_depth = conn_param ? rd_depth(conn_param->initiator_depth, id->initiator_depth)
				      : id->initiator_depth;
	struct cm_rep_param p = {
		.qpn = cmid->qp ? cmid->qp->qp_num : conn_param->qp_num,
		.starting_psn = id->rq_psn,
		.responder_resources = rr,
		.initiator_depth = id_depth,
		/* What we ask the active side to use (rdma-core's default
		 * 7); our own QP keeps the REQ's. */
		.rnr_retry_count = conn_param ? (conn_param->rnr_retry_count > 7 ? 7 : conn_param->rnr_retry_count) : 7,
		.target_ack_delay = 0,
		.srq = cmid->qp ? cmid->qp->srq != NULL : conn_param && conn_param->srq,
		.flow_control = conn_param ? conn_param->flow_control : 1,
		.private_data = conn_param ? conn_param->private_data : NULL,
		.private_data_len = conn_param ? conn_param->private_data_len : 0,
	};
	struct cm_qp_attr a;
	cm_qp_attr_passive(&id->peer_req, &p, &a);
	rcm_take_qp_attr(id, &a);
	if (cmid->qp) {
		e = rcm_qp_to_rtr_rts(id);
		if (e) {
			rdma_reject(cmid, NULL, 0);
			return rcm_fail(e);
		}
	}
	now = srt_now();
	srt_lock(rcm.dev);
	e = cm_accept(id->cm, &p, now);
	srt_unlock(rcm.dev);
	srt_kick(rcm.dev);
	if (e)
		return rcm_fail(e);
	id->state = RCM_ACCEPTED;
	if (id->sync) {
		e = rcm_wait_event(id, RDMA_CM_EVENT_ESTABLISHED, NULL);
		if (e)
			return rcm_fail(e);
	}
	return 0;
}

int rdma_reject(struct rdma_cm_id *cmid, const void *private_data, uint8_t private_data_len)
{
	struct rcm_id *id = to_rcm_id(cmid);
	int e;

	if (!cmid || !id->cm)
		return rcm_fail(EINVAL);
	srt_lock(rcm.dev);
	if (cmid->qp_type == IBV_QPT_UD)
		e = cm_sidr_reply(id->cm, CM_SIDR_REJECT, 0, 0, private_data, private_data_len, srt_now());
	else
		e = cm_reject(id->cm, CM_REJ_CONSUMER_DEFINED, NULL, 0, private_data, private_data_len, srt_now());
	srt_unlock(rcm.dev);
	srt_kick(rcm.dev);
	if (e)
		return rcm_fail(e);
	id->state = RCM_DISCONNECTED;
	return 0;
}

int rdma_establish(struct rdma_cm_id *cmid)
{
	struct rcm_id *id = to_rcm_id(cmid);
	int e;

	/* rdma-core: only an id without a QP establishes by hand. */
	if (!cmid || cmid->qp || !id->cm)
		return rcm_fail(EINVAL);
	if (id->state == RCM_CONNECT_RESPONSE) {
		srt_lock(rcm.dev);
		e = cm_send_rtu(id->cm, NULL, 0, srt_now());
		srt_unlock(rcm.dev);
	} else {
		srt_lock(rcm.dev);
		e = cm_establish(id->cm, srt_now());
		srt_unlock(rcm.dev);
	}
	srt_kick(rcm.dev);
	if (e && e != EISCONN)
		return rcm_fail(e);
	id->state = RCM_CONNECTED;
	return 0;
}

int rdma_notify(struct rdma_cm_id *cmid, enum ibv_event_type event)
{
	struct rcm_id *id = to_rcm_id(cmid);
	int e;

	if (!cmid)
		return rcm_fail(EINVAL);
	if (event != IBV_EVENT_COMM_EST)
		return 0;
	if (!id->cm || id->state != RCM_ACCEPTED)
		return 0;
	srt_lock(rcm.dev);
	e = cm_establish(id->cm, srt_now());
	srt_unlock(rcm.dev);
	if (e && e != EISCONN)
		return rcm_fail(e);
	return 0;
}

int rdma_disconnect(struct rdma_cm_id *cmid)
{
	struct rcm_id *id = to_rcm_id(cmid);
	int e = 0;

	if (!cmid)
		return rcm_fail(EINVAL);
	rcm_qp_to_error(id);
	if (!id->cm)
		return rcm_fail(EINVAL);
	srt_lock(rcm.dev);
	/* The kernel's rdma_disconnect sends a DREQ, or else a DREP, and
	 * returns 0 whatever the cm's state once the id has a cm id: a
	 * DREQ_RCVD id's DREP went with the DREQ's event here already, and an
	 * id not yet established is refused by its destroy. */
	if (cm_id_state(id->cm) == CM_ST_ESTABLISHED)
		e = cm_disconnect(id->cm, NULL, 0, srt_now());
	srt_unlock(rcm.dev);
	srt_kick(rcm.dev);
	if (e)
		return rcm_fail(e);
	return 0;
}
