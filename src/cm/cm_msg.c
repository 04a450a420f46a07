/*
 * cm_msg.c — the messages the cm sends, filled from an id and the
 * consumer's parameters into wire/mad.h structures (the state machines
 * encode and send them with cm_send_stored, so each can be resent byte for
 * byte), and the stateless answers to messages no id owns.
 *
 * Transaction IDs (IBTA 13.4, the MAD header's TID): a request that starts
 * an exchange (REQ, DREQ, SIDR_REQ) gets a new TID; every answer carries
 * the TID of the message it answers.  As in the kernel (cm_format_rep,
 * cm_format_rtu, cm_format_mra, cm_format_rej), REP, RTU, MRA and REJ carry
 * the REQ's TID, DREP the DREQ's, SIDR_REP the SIDR_REQ's.
 */
#include "cm/cm_int.h"

static void put_priv(uint8_t *field, size_t cap, const void *priv, uint8_t len)
{
	if (priv && len)
		memcpy(field, priv, len <= cap ? len : cap);
}

void cm_fmt_req(const struct cm_id *id, const struct cm_req_param *p, struct wire_cm_msg *m)
{
	const struct cm *cm = id->cm;
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_REQ, id->tid);
	struct wire_cm_req *r = &m->req;
	r->local_comm_id = id->local_id;
	r->service_id = p->service_id;
	r->local_ca_guid = cm->cfg.ca_guid;
	r->local_qpn = p->qpn;
	r->responder_resources = p->responder_resources;
	r->initiator_depth = p->initiator_depth;
	r->remote_cm_response_timeout = p->remote_cm_response_timeout;
	r->transport_service_type = p->qp_type == IBV_QPT_UC ? 1 : 0;
	r->end_to_end_flow_control = p->flow_control;
	r->starting_psn = p->starting_psn;
	r->local_cm_response_timeout = p->local_cm_response_timeout;
	r->retry_count = p->retry_count;
	r->pkey = p->pkey;
	r->path_mtu = (uint8_t)p->path_mtu;
	r->rnr_retry_count = p->rnr_retry_count;
	r->max_cm_retries = p->max_cm_retries;
	r->srq = p->srq;
	/* RoCE has no LIDs: the kernel writes the permissive LID when the
	 * path is routed (hop limit > 1), 0 otherwise (cm_format_req). */
	bool local = p->hop_limit <= 1;
	r->primary.local_lid = local ? 0 : 0xffff;
	r->primary.remote_lid = local ? 0 : 0xffff;
	memcpy(r->primary.local_gid, cm->cfg.gid, 16);
	memcpy(r->primary.remote_gid, p->dgid, 16);
	r->primary.flow_label = p->flow_label;
	r->primary.traffic_class = p->traffic_class;
	r->primary.hop_limit = p->hop_limit;
	r->primary.sl = p->sl;
	r->primary.subnet_local = local;
	r->primary.local_ack_timeout = p->local_ack_timeout;
	put_priv(r->private_data, sizeof(r->private_data), p->private_data, p->private_data_len);
}

void cm_fmt_rep(const struct cm_id *id, const struct cm_rep_param *p, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_REP, id->tid);
	struct wire_cm_rep *r = &m->rep;
	r->local_comm_id = id->local_id;
	r->remote_comm_id = id->remote_id;
	r->local_qpn = p->qpn;
	r->starting_psn = p->starting_psn;
	r->responder_resources = p->responder_resources;
	r->initiator_depth = p->initiator_depth;
	r->target_ack_delay = p->target_ack_delay;
	r->failover_accepted = p->failover_accepted ? 1 : 0;
	r->end_to_end_flow_control = p->flow_control;
	r->rnr_retry_count = p->rnr_retry_count;
	r->srq = p->srq;
	r->local_ca_guid = id->cm->cfg.ca_guid;
	put_priv(r->private_data, sizeof(r->private_data), p->private_data, p->private_data_len);
}

void cm_fmt_rtu(const struct cm_id *id, const void *priv, uint8_t len, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_RTU, id->tid);
	m->rtu.local_comm_id = id->local_id;
	m->rtu.remote_comm_id = id->remote_id;
	put_priv(m->rtu.private_data, sizeof(m->rtu.private_data), priv, len);
}

void cm_fmt_mra(const struct cm_id *id, uint8_t msg_mraed, uint8_t service_timeout, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_MRA, id->tid);
	m->mra.local_comm_id = id->local_id;
	m->mra.remote_comm_id = id->remote_id;
	m->mra.message_mraed = msg_mraed;
	m->mra.service_timeout = service_timeout & 31;
}

void cm_fmt_rej(const struct cm_id *id, uint8_t msg_rejected, uint16_t reason, const void *ari,
		uint8_t ari_len, const void *priv, uint8_t len, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_REJ, id->tid);
	m->rej.local_comm_id = id->local_id;
	m->rej.remote_comm_id = id->remote_id;
	m->rej.message_rejected = msg_rejected;
	m->rej.reason = reason;
	if (ari && ari_len) {
		if (ari_len > WIRE_CM_REJ_ARI_LEN)
			ari_len = WIRE_CM_REJ_ARI_LEN;
		memcpy(m->rej.ari, ari, ari_len);
		m->rej.reject_info_length = ari_len;
	}
	put_priv(m->rej.private_data, sizeof(m->rej.private_data), priv, len);
}

void cm_fmt_rej_timeout(const struct cm_id *id, uint8_t msg_rejected, struct wire_cm_msg *m)
{
	uint8_t ari[8];
	uint64_t g = id->cm->cfg.ca_guid;
	for (int i = 7; i >= 0; i--, g >>= 8)
		ari[i] = (uint8_t)g;
	cm_fmt_rej(id, msg_rejected, WIRE_CM_REJ_TIMEOUT, ari, sizeof(ari), NULL, 0, m);
}

void cm_fmt_dreq(const struct cm_id *id, uint64_t tid, const void *priv, uint8_t len, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_DREQ, tid);
	m->dreq.local_comm_id = id->local_id;
	m->dreq.remote_comm_id = id->remote_id;
	m->dreq.remote_qpn_eecn = id->remote_qpn;
	put_priv(m->dreq.private_data, sizeof(m->dreq.private_data), priv, len);
}

void cm_fmt_drep(const struct cm_id *id, uint64_t tid, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_DREP, tid);
	m->drep.local_comm_id = id->local_id;
	m->drep.remote_comm_id = id->remote_id;
}

void cm_fmt_sidr_req(const struct cm_id *id, const void *priv, uint8_t len, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_SIDR_REQ, id->tid);
	m->sidr_req.request_id = id->local_id;
	m->sidr_req.pkey = WIRE_GSI_PKEY;
	m->sidr_req.service_id = id->service_id;
	put_priv(m->sidr_req.private_data, sizeof(m->sidr_req.private_data), priv, len);
}

void cm_fmt_sidr_rep(const struct cm_id *id, uint8_t status, uint32_t qpn, uint32_t qkey, const void *priv,
		     uint8_t len, struct wire_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr = wire_cm_hdr(WIRE_CM_ATTR_SIDR_REP, id->tid);
	m->sidr_rep.request_id = id->remote_id;
	m->sidr_rep.status = status;
	m->sidr_rep.qpn = qpn;
	m->sidr_rep.service_id = id->service_id;
	m->sidr_rep.qkey = qkey;
	put_priv(m->sidr_rep.private_data, sizeof(m->sidr_rep.private_data), priv, len);
}

/* The kernel's cm_issue_rej: the REJ's comm IDs are the REQ's swapped (our
 * Local Comm ID is then 0: no id was made), message rejected = REQ, the
 * REQ's TID. */
void cm_issue_rej(struct cm *cm, const uint8_t dgid[16], const struct wire_cm_msg *req, uint16_t reason)
{
	struct wire_cm_msg m;
	uint8_t mad[WIRE_MAD_LEN];
	memset(&m, 0, sizeof(m));
	m.hdr = wire_cm_hdr(WIRE_CM_ATTR_REJ, req->hdr.tid);
	m.rej.local_comm_id = 0;
	m.rej.remote_comm_id = req->req.local_comm_id;
	m.rej.message_rejected = WIRE_CM_MSG_REQ;
	m.rej.reason = reason;
	if (wire_cm_encode(&m, mad, sizeof(mad)) == (int)WIRE_MAD_LEN)
		cm_send(cm, dgid, mad);
}

void cm_issue_sidr_rep(struct cm *cm, const uint8_t dgid[16], const struct wire_cm_msg *sidr_req, uint8_t status)
{
	struct wire_cm_msg m;
	uint8_t mad[WIRE_MAD_LEN];
	memset(&m, 0, sizeof(m));
	m.hdr = wire_cm_hdr(WIRE_CM_ATTR_SIDR_REP, sidr_req->hdr.tid);
	m.sidr_rep.request_id = sidr_req->sidr_req.request_id;
	m.sidr_rep.status = status;
	m.sidr_rep.service_id = sidr_req->sidr_req.service_id;
	if (wire_cm_encode(&m, mad, sizeof(mad)) == (int)WIRE_MAD_LEN)
		cm_send(cm, dgid, mad);
}

const uint8_t *cm_msg_private_data(const struct wire_cm_msg *m, uint8_t *len)
{
	switch (m->hdr.attr_id) {
	case WIRE_CM_ATTR_REQ: *len = sizeof(m->req.private_data); return m->req.private_data;
	case WIRE_CM_ATTR_MRA: *len = sizeof(m->mra.private_data); return m->mra.private_data;
	case WIRE_CM_ATTR_REJ: *len = sizeof(m->rej.private_data); return m->rej.private_data;
	case WIRE_CM_ATTR_REP: *len = sizeof(m->rep.private_data); return m->rep.private_data;
	case WIRE_CM_ATTR_RTU: *len = sizeof(m->rtu.private_data); return m->rtu.private_data;
	case WIRE_CM_ATTR_DREQ: *len = sizeof(m->dreq.private_data); return m->dreq.private_data;
	case WIRE_CM_ATTR_DREP: *len = sizeof(m->drep.private_data); return m->drep.private_data;
	case WIRE_CM_ATTR_SIDR_REQ: *len = sizeof(m->sidr_req.private_data); return m->sidr_req.private_data;
	case WIRE_CM_ATTR_SIDR_REP: *len = sizeof(m->sidr_rep.private_data); return m->sidr_rep.private_data;
	default: *len = 0; return NULL;
	}
}
