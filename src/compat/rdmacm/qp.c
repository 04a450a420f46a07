/*
 * qp.c — the QPs of rdma_cm ids: rdma_create_qp(_ex), rdma_destroy_qp,
 * rdma_create_srq(_ex), rdma_init_qp_attr, rdma_create_ep /
 * rdma_destroy_ep, and the RESET -> INIT -> RTR -> RTS walk the connection
 * manager does for the program.
 *
 * As in rdma-core, rdma_create_qp creates CQs (each with its own completion
 * channel) when the program passes none, takes the id's PD (or the
 * device's default PD), and moves the QP to INIT; a UD QP goes on to RTS at
 * once with the RDMA-CM Q_Key.  RTR/RTS follow from the REQ/REP exchange
 * (rcm_qp_to_rtr_rts).  Access flags: remote write, read and atomic from
 * INIT on — rdma-core first grants write only and adds read/atomic at RTR
 * when responder resources were agreed; softrnic grants them at once
 * (the peer's READs are limited by max_dest_rd_atomic anyway).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat/rdmacm/rdmacm_int.h"

#define RCM_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		    IBV_ACCESS_REMOTE_ATOMIC)

int rdma_init_qp_attr(struct rdma_cm_id *cmid, struct ibv_qp_attr *attr, int *mask)
{
	struct rcm_id *id = to_rcm_id(cmid);

	if (!cmid || !attr || !mask)
		return rcm_fail(EINVAL);
	enum ibv_qp_state want = attr->qp_state;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = want;
	switch (want) {
	case IBV_QPS_INIT:
		attr->pkey_index = 0;
		attr->port_num = 1;
		if (cmid->qp_type == IBV_QPT_UD) {
			attr->qkey = RDMA_UDP_QKEY;
			*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		} else {
			attr->qp_access_flags = RCM_ACCESS;
			*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		if (cmid->qp_type == IBV_QPT_UD) {
			*mask = IBV_QP_STATE;
			return 0;
		}
		if (id->state != RCM_CONNECT && id->state != RCM_CONNECT_RESPONSE && id->state != RCM_REQ_RCVD &&
		    id->state != RCM_ACCEPTED && id->state != RCM_CONNECTED)
			return rcm_fail(EINVAL);
		attr->path_mtu = id->mtu;
		attr->dest_qp_num = id->remote_qpn;
		attr->rq_psn = id->rq_psn;       /* what our REQ/REP announced */
		attr->max_dest_rd_atomic = id->responder_resources;
		/* 0.64 ms.  The kernel's ib_cm leaves 0, which the RNR timer code
		 * reads as 655.36 ms: a peer meeting an empty receive queue
		 * would wait that long per RNR NAK.  A deliberate difference. */
		attr->min_rnr_timer = 12;
		attr->ah_attr.is_global = 1;
		attr->ah_attr.port_num = 1;
		memcpy(attr->ah_attr.grh.dgid.raw, id->remote_gid, 16);
		attr->ah_attr.grh.hop_limit = 64;
		attr->ah_attr.grh.traffic_class = id->tos;
		attr->ah_attr.grh.sgid_index = 0;
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		attr->sq_psn = cmid->qp_type == IBV_QPT_UD ? 0 : id->sq_psn; /* the peer's announcement */
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (cmid->qp_type != IBV_QPT_UD) {
			attr->timeout = id->ack_timeout;
			attr->retry_cnt = id->retry_count;
			attr->rnr_retry = id->rnr_retry_count;
			attr->max_rd_atomic = id->initiator_depth;
			*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		return 0;
	default:
		return rcm_fail(EINVAL);
	}
}

static int modify_to(struct rcm_id *id, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr;
	int mask;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = state;
	if (rdma_init_qp_attr(&id->id, &attr, &mask))
		return errno;
	return ibv_modify_qp(id->id.qp, &attr, mask);
}

int rcm_qp_to_rtr_rts(struct rcm_id *id)
{
	int e;

	if (!id->id.qp)
		return 0;
	e = modify_to(id, IBV_QPS_RTR);
	if (!e)
		e = modify_to(id, IBV_QPS_RTS);
	return e;
}

int rcm_qp_to_error(struct rcm_id *id)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (!id->id.qp || id->id.qp_type == IBV_QPT_UD)
		return 0;
	return ibv_modify_qp(id->id.qp, &attr, IBV_QP_STATE);
}

static void destroy_own_cqs(struct rcm_id *id)
{
	struct rdma_cm_id *c = &id->id;

	if (!id->own_cqs)
		return;
	if (c->send_cq && c->send_cq != c->recv_cq)
		ibv_destroy_cq(c->send_cq);
	if (c->recv_cq)
		ibv_destroy_cq(c->recv_cq);
	if (c->send_cq_channel && c->send_cq_channel != c->recv_cq_channel)
		ibv_destroy_comp_channel(c->send_cq_channel);
	if (c->recv_cq_channel)
		ibv_destroy_comp_channel(c->recv_cq_channel);
	c->send_cq = c->recv_cq = NULL;
	c->send_cq_channel = c->recv_cq_channel = NULL;
	id->own_cqs = false;
}

/* rdma-core's ucma_create_cqs: one CQ and channel per direction. */
static int create_cqs(struct rcm_id *id, uint32_t send_size, uint32_t recv_size)
{
	struct rdma_cm_id *c = &id->id;

	id->own_cqs = true;
	c->recv_cq_channel = ibv_create_comp_channel(c->verbs);
	c->send_cq_channel = ibv_create_comp_channel(c->verbs);
	if (!c->recv_cq_channel || !c->send_cq_channel)
		goto fail;
	c->recv_cq = ibv_create_cq(c->verbs, (int)(recv_size ? recv_size : 1), c, c->recv_cq_channel, 0);
	c->send_cq = ibv_create_cq(c->verbs, (int)(send_size ? send_size : 1), c, c->send_cq_channel, 0);
	if (!c->recv_cq || !c->send_cq)
		goto fail;
	return 0;
fail:
	destroy_own_cqs(id);
	return ENOMEM;
}

int rdma_create_qp_ex(struct rdma_cm_id *cmid, struct ibv_qp_init_attr_ex *attr)
{
	struct rcm_id *id = to_rcm_id(cmid);
	struct ibv_qp *qp;
	int e;

	if (!cmid || !attr || cmid->qp)
		return rcm_fail(EINVAL);
	if (!cmid->verbs)
		return rcm_fail(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = cmid->pd ? cmid->pd : rcm.default_pd;
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (attr->qp_type != cmid->qp_type && !(cmid->ps == RDMA_PS_IB))
		return rcm_fail(EINVAL);
	if (!attr->send_cq && !attr->recv_cq) {
		e = create_cqs(id, attr->cap.max_send_wr, attr->cap.max_recv_wr);
		if (e)
			return rcm_fail(e);
		attr->send_cq = cmid->send_cq;
		attr->recv_cq = cmid->recv_cq;
	} else {
		cmid->send_cq = attr->send_cq;
		cmid->recv_cq = attr->recv_cq;
	}
	if (cmid->srq && !attr->srq)
		attr->srq = cmid->srq;
	qp = ibv_create_qp_ex(cmid->verbs, attr);
	if (!qp) {
		e = errno;
		destroy_own_cqs(id);
		return rcm_fail(e);
	}
	cmid->qp = qp;
	cmid->pd = attr->pd;
	e = modify_to(id, IBV_QPS_INIT);
	if (!e && cmid->qp_type == IBV_QPT_UD) {
		e = modify_to(id, IBV_QPS_RTR);
		if (!e)
			e = modify_to(id, IBV_QPS_RTS);
	}
	if (e) {
		ibv_destroy_qp(qp);
		cmid->qp = NULL;
		destroy_own_cqs(id);
		return rcm_fail(e);
	}
	return 0;
}

int rdma_create_qp(struct rdma_cm_id *cmid, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int e;

	if (!cmid || !qp_init_attr)
		return rcm_fail(EINVAL);
	if (pd && pd->context != cmid->verbs)
		return rcm_fail(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd ? pd : cmid->pd ? cmid->pd : rcm.default_pd;
	e = rdma_create_qp_ex(cmid, &ex);
	if (e)
		return e;
	qp_init_attr->cap = ex.cap;
	qp_init_attr->send_cq = ex.send_cq;
	qp_init_attr->recv_cq = ex.recv_cq;
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *cmid)
{
	if (!cmid || !cmid->qp)
		return;
	ibv_destroy_qp(cmid->qp);
	cmid->qp = NULL;
	destroy_own_cqs(to_rcm_id(cmid));
}

int rdma_create_srq_ex(struct rdma_cm_id *cmid, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (!cmid || !attr)
		return rcm_fail(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = cmid->pd ? cmid->pd : rcm.default_pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	srq = ibv_create_srq(attr->pd, (struct ibv_srq_init_attr *)attr);
	if (!srq)
		return -1;
	cmid->srq = srq;
	cmid->pd = attr->pd;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *cmid, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int e;

	if (!cmid || !attr)
		return rcm_fail(EINVAL);
	memset(&ex, 0, sizeof(ex));
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	ex.pd = pd ? pd : cmid->pd ? cmid->pd : rcm.default_pd;
	e = rdma_create_srq_ex(cmid, &ex);
	if (!e)
		attr->attr = ex.attr;
	return e;
}

void rdma_destroy_srq(struct rdma_cm_id *cmid)
{
	if (!cmid || !cmid->srq)
		return;
	ibv_destroy_srq(cmid->srq);
	cmid->srq = NULL;
}

/* ---- endpoints ----------------------------------------------------------- */

int rdma_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cmid;
	struct rcm_id *id;

	if (!out || !res)
		return rcm_fail(EINVAL);
	if (rcm_create_id2(NULL, &cmid, NULL, (enum rdma_port_space)res->ai_port_space,
			   (enum ibv_qp_type)res->ai_qp_type))
		return -1;
	id = to_rcm_id(cmid);
	/* As rdma-core: the QP type comes from the address info. */
	if (qp_init_attr)
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cmid, res->ai_src_addr))
			goto fail;
		if (qp_init_attr) {
			id->ep_qp_attr = malloc(sizeof(*qp_init_attr));
			if (!id->ep_qp_attr) {
				errno = ENOMEM;
				goto fail;
			}
			*id->ep_qp_attr = *qp_init_attr;
			id->ep_pd = pd;
		}
		*out = cmid;
		return 0;
	}
	if (rdma_resolve_addr(cmid, res->ai_src_addr, res->ai_dst_addr, 2000))
		goto fail;
	if (rdma_resolve_route(cmid, 2000))
		goto fail;
	if (qp_init_attr && rdma_create_qp(cmid, pd, qp_init_attr))
		goto fail;
	*out = cmid;
	return 0;
fail:;
	int e = errno;
	rdma_destroy_id(cmid);
	errno = e;
	return -1;
}

void rdma_destroy_ep(struct rdma_cm_id *cmid)
{
	if (!cmid)
		return;
	rdma_destroy_qp(cmid);
	rdma_destroy_srq(cmid);
	rdma_destroy_id(cmid);
}
