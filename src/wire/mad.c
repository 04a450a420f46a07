/*
 * mad.c — encode and decode Communication Manager MADs (IBTA Vol 1 chapter
 * 12) and the common MAD header (13.4.2), the first layer of a connection
 * manager for softrnic; plus the RDMA-CM private-data header and service
 * IDs.  See mad.h for the contract.
 *
 * Positions: every CM message body starts after the 24-byte MAD header;
 * the offsets below are counted from there, as in the kernel's
 * include/rdma/ibta_vol1_c12.h, whose CM_FIELD macros give a byte offset
 * and a width with the field's most significant bit first (IBTA's
 * Byte[Bit] notation: bit 7 is the top bit of the byte).  A 24-bit field at
 * offset n is bytes n..n+2 with byte n+3 for the next field; a 5-bit field
 * "at n" is the top 5 bits of byte n.
 *
 * One check function per message serves both directions: the decoder runs
 * it on what it read (where the field widths hold by construction and only
 * the forbidden values can fail), the encoder on what it was given before
 * writing a byte.
 */
#include <string.h>

#include "wire/bytes.h"
#include "wire/mad.h"

#define D WIRE_MAD_HDR_LEN      /* where the message body starts */

static bool fits(uint64_t v, unsigned bits)
{
	return bits >= 64 || v < (1ull << bits);
}

/* ---- header ---------------------------------------------------------- */

static void decode_hdr(const uint8_t *p, struct wire_mad_hdr *h)
{
	h->base_version = p[0];
	h->mgmt_class = p[1];
	h->class_version = p[2];
	h->method = p[3];
	h->status = get16(p + 4);
	h->class_specific = get16(p + 6);
	h->tid = get64(p + 8);
	h->attr_id = get16(p + 16);
	h->attr_mod = get32(p + 20);     /* bytes 18..19 reserved */
}

static void encode_hdr(const struct wire_mad_hdr *h, uint8_t *p)
{
	p[0] = h->base_version;
	p[1] = h->mgmt_class;
	p[2] = h->class_version;
	p[3] = h->method;
	put16(p + 4, h->status);
	put16(p + 6, h->class_specific);
	put64(p + 8, h->tid);
	put16(p + 16, h->attr_id);
	put16(p + 18, 0);
	put32(p + 20, h->attr_mod);
}

int wire_mad_decode_hdr(const uint8_t *mad, size_t len, struct wire_mad_hdr *out)
{
	if (!mad || !out)
		return WIRE_E_FIELD;
	memset(out, 0, sizeof(*out));
	if (len < WIRE_MAD_LEN)
		return WIRE_E_TRUNCATED;
	decode_hdr(mad, out);
	return out->base_version == WIRE_MAD_BASE_VERSION ? WIRE_OK : WIRE_E_MAD_VERSION;
}

/* Whether the header is one of a CM message this codec handles. */
static int check_hdr(const struct wire_mad_hdr *h)
{
	if (h->base_version != WIRE_MAD_BASE_VERSION)
		return WIRE_E_MAD_VERSION;
	if (h->mgmt_class != WIRE_MAD_CLASS_CM)
		return WIRE_E_MAD_CLASS;
	if (h->class_version != WIRE_CM_CLASS_VERSION)
		return WIRE_E_MAD_VERSION;
	switch (h->attr_id) {
	case WIRE_CM_ATTR_REQ: case WIRE_CM_ATTR_MRA: case WIRE_CM_ATTR_REJ:
	case WIRE_CM_ATTR_REP: case WIRE_CM_ATTR_RTU: case WIRE_CM_ATTR_DREQ:
	case WIRE_CM_ATTR_DREP: case WIRE_CM_ATTR_SIDR_REQ: case WIRE_CM_ATTR_SIDR_REP:
		break;
	default:
		return WIRE_E_MAD_ATTR;
	}
	/* Every CM message is sent with method Send (the kernel's
	 * cm_format_mad_hdr; ClassPortInfo would be Get/GetResp). */
	return h->method == WIRE_MAD_METHOD_SEND ? WIRE_OK : WIRE_E_FIELD;
}

/* ---- REQ (table 106) --------------------------------------------------- */

/* A path is 44 bytes: at 52 (primary) and 96 (alternate). */
static void decode_path(const uint8_t *p, struct wire_cm_path *x)
{
	x->local_lid = get16(p);
	x->remote_lid = get16(p + 2);
	memcpy(x->local_gid, p + 4, 16);
	memcpy(x->remote_gid, p + 20, 16);
	x->flow_label = get32(p + 36) >> 12;    /* 20 bits, 6 reserved, */
	x->packet_rate = p[39] & 0x3f;          /* 6 bits packet rate  */
	x->traffic_class = p[40];
	x->hop_limit = p[41];
	x->sl = p[42] >> 4;
	x->subnet_local = (p[42] >> 3) & 1;     /* 3 bits reserved */
	x->local_ack_timeout = p[43] >> 3;      /* 3 bits reserved (REQ
	                                           alternate: SAP at bit 5) */
}

static void encode_path(const struct wire_cm_path *x, uint8_t *p)
{
	put16(p, x->local_lid);
	put16(p + 2, x->remote_lid);
	memcpy(p + 4, x->local_gid, 16);
	memcpy(p + 20, x->remote_gid, 16);
	put32(p + 36, x->flow_label << 12 | x->packet_rate);
	p[40] = x->traffic_class;
	p[41] = x->hop_limit;
	p[42] = (uint8_t)(x->sl << 4 | (x->subnet_local ? 0x08 : 0));
	p[43] = (uint8_t)(x->local_ack_timeout << 3);
}

static bool path_fits(const struct wire_cm_path *x)
{
	return fits(x->flow_label, 20) && fits(x->packet_rate, 6) && fits(x->sl, 4) &&
	       fits(x->local_ack_timeout, 5);
}

static void decode_req(const uint8_t *d, struct wire_cm_req *m)
{
	m->local_comm_id = get32(d);            /* 4..7 reserved */
	m->service_id = get64(d + 8);
	m->local_ca_guid = get64(d + 16);       /* 24..27 reserved */
	m->local_qkey = get32(d + 28);
	m->local_qpn = get24(d + 32);
	m->responder_resources = d[35];
	m->local_eecn = get24(d + 36);
	m->initiator_depth = d[39];
	m->remote_eecn = get24(d + 40);
	m->remote_cm_response_timeout = d[43] >> 3;
	m->transport_service_type = (d[43] >> 1) & 3;
	m->end_to_end_flow_control = d[43] & 1;
	m->starting_psn = get24(d + 44);
	m->local_cm_response_timeout = d[47] >> 3;
	m->retry_count = d[47] & 7;
	m->pkey = get16(d + 48);
	m->path_mtu = d[50] >> 4;
	m->rdc_exists = (d[50] >> 3) & 1;
	m->rnr_retry_count = d[50] & 7;
	m->max_cm_retries = d[51] >> 4;
	m->srq = (d[51] >> 3) & 1;
	m->extended_transport_type = d[51] & 7;
	decode_path(d + 52, &m->primary);
	decode_path(d + 96, &m->alternate);
	m->sap_supported = (d[139] >> 2) & 1;
	memcpy(m->private_data, d + 140, WIRE_CM_REQ_PRIVATE_DATA);
}

static void encode_req(const struct wire_cm_req *m, uint8_t *d)
{
	put32(d, m->local_comm_id);
	put64(d + 8, m->service_id);
	put64(d + 16, m->local_ca_guid);
	put32(d + 28, m->local_qkey);
	put24(d + 32, m->local_qpn);
	d[35] = m->responder_resources;
	put24(d + 36, m->local_eecn);
	d[39] = m->initiator_depth;
	put24(d + 40, m->remote_eecn);
	d[43] = (uint8_t)(m->remote_cm_response_timeout << 3 | m->transport_service_type << 1 |
			  (m->end_to_end_flow_control ? 1 : 0));
	put24(d + 44, m->starting_psn);
	d[47] = (uint8_t)(m->local_cm_response_timeout << 3 | m->retry_count);
	put16(d + 48, m->pkey);
	d[50] = (uint8_t)(m->path_mtu << 4 | (m->rdc_exists ? 0x08 : 0) | m->rnr_retry_count);
	d[51] = (uint8_t)(m->max_cm_retries << 4 | (m->srq ? 0x08 : 0) | m->extended_transport_type);
	encode_path(&m->primary, d + 52);
	encode_path(&m->alternate, d + 96);
	if (m->sap_supported)
		d[139] |= 0x04;
	memcpy(d + 140, m->private_data, WIRE_CM_REQ_PRIVATE_DATA);
}

static int check_req(const struct wire_cm_req *m)
{
	if (!fits(m->local_qpn, 24) || !fits(m->local_eecn, 24) || !fits(m->remote_eecn, 24) ||
	    !fits(m->starting_psn, 24) || !fits(m->remote_cm_response_timeout, 5) ||
	    !fits(m->local_cm_response_timeout, 5) || !fits(m->transport_service_type, 2) ||
	    !fits(m->retry_count, 3) || !fits(m->rnr_retry_count, 3) || !fits(m->max_cm_retries, 4) ||
	    !fits(m->extended_transport_type, 3) || !path_fits(&m->primary) || !path_fits(&m->alternate))
		return WIRE_E_FIELD;
	/* Path MTU codes 1..5 = 256..4096 bytes (verbs' enum ibv_mtu); the
	 * rest are reserved. */
	if (m->path_mtu < 1 || m->path_mtu > 5)
		return WIRE_E_FIELD;
	/* Transport service type 3 means "see the extended transport type",
	 * of which only 1 (XRC) is defined (the kernel's cm_req_get_qp_type). */
	if (m->transport_service_type == 3 && m->extended_transport_type != 1)
		return WIRE_E_FIELD;
	return WIRE_OK;
}

/* ---- MRA (107), REJ (108) ------------------------------------------------ */

static void decode_mra(const uint8_t *d, struct wire_cm_mra *m)
{
	m->local_comm_id = get32(d);
	m->remote_comm_id = get32(d + 4);
	m->message_mraed = d[8] >> 6;
	m->service_timeout = d[9] >> 3;
	memcpy(m->private_data, d + 10, WIRE_CM_MRA_PRIVATE_DATA);
}

static void encode_mra(const struct wire_cm_mra *m, uint8_t *d)
{
	put32(d, m->local_comm_id);
	put32(d + 4, m->remote_comm_id);
	d[8] = (uint8_t)(m->message_mraed << 6);
	d[9] = (uint8_t)(m->service_timeout << 3);
	memcpy(d + 10, m->private_data, WIRE_CM_MRA_PRIVATE_DATA);
}

static int check_mra(const struct wire_cm_mra *m)
{
	if (!fits(m->service_timeout, 5))
		return WIRE_E_FIELD;
	return m->message_mraed <= WIRE_CM_MSG_OTHER ? WIRE_OK : WIRE_E_FIELD;
}

static void decode_rej(const uint8_t *d, struct wire_cm_rej *m)
{
	m->local_comm_id = get32(d);
	m->remote_comm_id = get32(d + 4);
	m->message_rejected = d[8] >> 6;
	m->reject_info_length = d[9] >> 1;
	m->reason = get16(d + 10);
	memcpy(m->ari, d + 12, WIRE_CM_REJ_ARI_LEN);
	memcpy(m->private_data, d + 84, WIRE_CM_REJ_PRIVATE_DATA);
}

static void encode_rej(const struct wire_cm_rej *m, uint8_t *d)
{
	put32(d, m->local_comm_id);
	put32(d + 4, m->remote_comm_id);
	d[8] = (uint8_t)(m->message_rejected << 6);
	d[9] = (uint8_t)(m->reject_info_length << 1);
	put16(d + 10, m->reason);
	memcpy(d + 12, m->ari, WIRE_CM_REJ_ARI_LEN);
	memcpy(d + 84, m->private_data, WIRE_CM_REJ_PRIVATE_DATA);
}

static int check_rej(const struct wire_cm_rej *m)
{
	if (m->message_rejected > WIRE_CM_MSG_OTHER || !fits(m->reject_info_length, 7))
		return WIRE_E_FIELD;
	return m->reject_info_length <= WIRE_CM_REJ_ARI_LEN ? WIRE_OK : WIRE_E_LENGTH;
}

/* ---- REP (110), RTU (111), DREQ (112), DREP (113) ------------------------ */

static void decode_rep(const uint8_t *d, struct wire_cm_rep *m)
{
	m->local_comm_id = get32(d);
	m->remote_comm_id = get32(d + 4);
	m->local_qkey = get32(d + 8);
	m->local_qpn = get24(d + 12);           /* 15 reserved */
	m->local_eecn = get24(d + 16);          /* 19 reserved */
	m->starting_psn = get24(d + 20);        /* 23 reserved */
	m->responder_resources = d[24];
	m->initiator_depth = d[25];
	m->target_ack_delay = d[26] >> 3;
	m->failover_accepted = (d[26] >> 1) & 3;
	m->end_to_end_flow_control = d[26] & 1;
	m->rnr_retry_count = d[27] >> 5;
	m->srq = (d[27] >> 4) & 1;              /* 4 bits reserved */
	m->local_ca_guid = get64(d + 28);
	memcpy(m->private_data, d + 36, WIRE_CM_REP_PRIVATE_DATA);
}

static void encode_rep(const struct wire_cm_rep *m, uint8_t *d)
{
	put32(d, m->local_comm_id);
	put32(d + 4, m->remote_comm_id);
	put32(d + 8, m->local_qkey);
	put24(d + 12, m->local_qpn);
	put24(d + 16, m->local_eecn);
	put24(d + 20, m->starting_psn);
	d[24] = m->responder_resources;
	d[25] = m->initiator_depth;
	d[26] = (uint8_t)(m->target_ack_delay << 3 | m->failover_accepted << 1 |
			  (m->end_to_end_flow_control ? 1 : 0));
	d[27] = (uint8_t)(m->rnr_retry_count << 5 | (m->srq ? 0x10 : 0));
	put64(d + 28, m->local_ca_guid);
	memcpy(d + 36, m->private_data, WIRE_CM_REP_PRIVATE_DATA);
}

static int check_rep(const struct wire_cm_rep *m)
{
	bool ok = fits(m->local_qpn, 24) && fits(m->local_eecn, 24) && fits(m->starting_psn, 24) &&
		  fits(m->target_ack_delay, 5) && fits(m->failover_accepted, 2) && fits(m->rnr_retry_count, 3);
	return ok ? WIRE_OK : WIRE_E_FIELD;
}

/* RTU and DREP: the two comm IDs and private data from byte 8. */
static void decode_ids(const uint8_t *d, uint32_t *local, uint32_t *remote)
{
	*local = get32(d);
	*remote = get32(d + 4);
}

static void encode_ids(uint8_t *d, uint32_t local, uint32_t remote)
{
	put32(d, local);
	put32(d + 4, remote);
}

/* ---- SIDR_REQ (119), SIDR_REP (120) -------------------------------------- */

static void decode_sidr_req(const uint8_t *d, struct wire_cm_sidr_req *m)
{
	m->request_id = get32(d);
	m->pkey = get16(d + 4);                 /* 6..7 reserved */
	m->service_id = get64(d + 8);
	memcpy(m->private_data, d + 16, WIRE_CM_SIDR_REQ_PRIVATE_DATA);
}

static void encode_sidr_req(const struct wire_cm_sidr_req *m, uint8_t *d)
{
	put32(d, m->request_id);
	put16(d + 4, m->pkey);
	put64(d + 8, m->service_id);
	memcpy(d + 16, m->private_data, WIRE_CM_SIDR_REQ_PRIVATE_DATA);
}

static void decode_sidr_rep(const uint8_t *d, struct wire_cm_sidr_rep *m)
{
	m->request_id = get32(d);
	m->status = d[4];
	m->additional_info_length = d[5];       /* 6..7 reserved */
	m->qpn = get24(d + 8);                  /* 11 reserved */
	m->service_id = get64(d + 12);
	m->qkey = get32(d + 20);
	memcpy(m->class_port_info, d + 24, WIRE_CM_SIDR_REP_INFO_LEN);
	memcpy(m->private_data, d + 96, WIRE_CM_SIDR_REP_PRIVATE_DATA);
}

static void encode_sidr_rep(const struct wire_cm_sidr_rep *m, uint8_t *d)
{
	put32(d, m->request_id);
	d[4] = m->status;
	d[5] = m->additional_info_length;
	put24(d + 8, m->qpn);
	put64(d + 12, m->service_id);
	put32(d + 20, m->qkey);
	memcpy(d + 24, m->class_port_info, WIRE_CM_SIDR_REP_INFO_LEN);
	memcpy(d + 96, m->private_data, WIRE_CM_SIDR_REP_PRIVATE_DATA);
}

static int check_sidr_rep(const struct wire_cm_sidr_rep *m)
{
	if (!fits(m->qpn, 24))
		return WIRE_E_FIELD;
	return m->additional_info_length <= WIRE_CM_SIDR_REP_INFO_LEN ? WIRE_OK : WIRE_E_LENGTH;
}

/* ---- the message as a whole ---------------------------------------------- */

static int check_msg(const struct wire_cm_msg *m)
{
	int err = check_hdr(&m->hdr);
	if (err)
		return err;
	switch (m->hdr.attr_id) {
	case WIRE_CM_ATTR_REQ: return check_req(&m->req);
	case WIRE_CM_ATTR_MRA: return check_mra(&m->mra);
	case WIRE_CM_ATTR_REJ: return check_rej(&m->rej);
	case WIRE_CM_ATTR_REP: return check_rep(&m->rep);
	case WIRE_CM_ATTR_DREQ: return fits(m->dreq.remote_qpn_eecn, 24) ? WIRE_OK : WIRE_E_FIELD;
	case WIRE_CM_ATTR_SIDR_REP: return check_sidr_rep(&m->sidr_rep);
	default: return WIRE_OK;        /* RTU, DREP, SIDR_REQ: any value fits */
	}
}

int wire_cm_decode(const uint8_t *mad, size_t len, struct wire_cm_msg *out)
{
	if (!mad || !out)
		return WIRE_E_FIELD;
	memset(out, 0, sizeof(*out));
	if (len < WIRE_MAD_LEN)
		return WIRE_E_TRUNCATED;
	decode_hdr(mad, &out->hdr);
	int err = check_hdr(&out->hdr);
	if (err)
		return err;
	const uint8_t *d = mad + D;
	switch (out->hdr.attr_id) {
	case WIRE_CM_ATTR_REQ: decode_req(d, &out->req); break;
	case WIRE_CM_ATTR_MRA: decode_mra(d, &out->mra); break;
	case WIRE_CM_ATTR_REJ: decode_rej(d, &out->rej); break;
	case WIRE_CM_ATTR_REP: decode_rep(d, &out->rep); break;
	case WIRE_CM_ATTR_RTU:
		decode_ids(d, &out->rtu.local_comm_id, &out->rtu.remote_comm_id);
		memcpy(out->rtu.private_data, d + 8, WIRE_CM_RTU_PRIVATE_DATA);
		break;
	case WIRE_CM_ATTR_DREQ:
		decode_ids(d, &out->dreq.local_comm_id, &out->dreq.remote_comm_id);
		out->dreq.remote_qpn_eecn = get24(d + 8);       /* 11 reserved */
		memcpy(out->dreq.private_data, d + 12, WIRE_CM_DREQ_PRIVATE_DATA);
		break;
	case WIRE_CM_ATTR_DREP:
		decode_ids(d, &out->drep.local_comm_id, &out->drep.remote_comm_id);
		memcpy(out->drep.private_data, d + 8, WIRE_CM_DREP_PRIVATE_DATA);
		break;
	case WIRE_CM_ATTR_SIDR_REQ: decode_sidr_req(d, &out->sidr_req); break;
	case WIRE_CM_ATTR_SIDR_REP: decode_sidr_rep(d, &out->sidr_rep); break;
	}
	return check_msg(out);
}

int wire_cm_encode(const struct wire_cm_msg *msg, uint8_t *out, size_t cap)
{
	if (!msg || !out)
		return WIRE_E_FIELD;
	if (cap < WIRE_MAD_LEN)
		return WIRE_E_NOSPACE;
	int err = check_msg(msg);
	if (err)
		return err;
	memset(out, 0, WIRE_MAD_LEN);
	encode_hdr(&msg->hdr, out);
	uint8_t *d = out + D;
	switch (msg->hdr.attr_id) {
	case WIRE_CM_ATTR_REQ: encode_req(&msg->req, d); break;
	case WIRE_CM_ATTR_MRA: encode_mra(&msg->mra, d); break;
	case WIRE_CM_ATTR_REJ: encode_rej(&msg->rej, d); break;
	case WIRE_CM_ATTR_REP: encode_rep(&msg->rep, d); break;
	case WIRE_CM_ATTR_RTU:
		encode_ids(d, msg->rtu.local_comm_id, msg->rtu.remote_comm_id);
		memcpy(d + 8, msg->rtu.private_data, WIRE_CM_RTU_PRIVATE_DATA);
		break;
	case WIRE_CM_ATTR_DREQ:
		encode_ids(d, msg->dreq.local_comm_id, msg->dreq.remote_comm_id);
		put24(d + 8, msg->dreq.remote_qpn_eecn);
		memcpy(d + 12, msg->dreq.private_data, WIRE_CM_DREQ_PRIVATE_DATA);
		break;
	case WIRE_CM_ATTR_DREP:
		encode_ids(d, msg->drep.local_comm_id, msg->drep.remote_comm_id);
		memcpy(d + 8, msg->drep.private_data, WIRE_CM_DREP_PRIVATE_DATA);
		break;
	case WIRE_CM_ATTR_SIDR_REQ: encode_sidr_req(&msg->sidr_req, d); break;
	case WIRE_CM_ATTR_SIDR_REP: encode_sidr_rep(&msg->sidr_rep, d); break;
	}
	return (int)WIRE_MAD_LEN;
}

/* ---- names ----------------------------------------------------------------- */

const char *wire_cm_attr_name(uint16_t attr_id)
{
	static const char *const names[] = {
		"REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP", "SIDR_REQ", "SIDR_REP", "LAP", "APR",
	};
	if (attr_id == WIRE_CM_ATTR_CLASS_PORT_INFO)
		return "ClassPortInfo";
	if (attr_id >= WIRE_CM_ATTR_REQ && attr_id <= WIRE_CM_ATTR_APR)
		return names[attr_id - WIRE_CM_ATTR_REQ];
	return NULL;
}

const char *wire_cm_rej_reason_name(uint16_t reason)
{
	static const char *const names[] = {
		[WIRE_CM_REJ_NO_QP] = "no-QP",
		[WIRE_CM_REJ_NO_EEC] = "no-EEC",
		[WIRE_CM_REJ_NO_RESOURCES] = "no-resources",
		[WIRE_CM_REJ_TIMEOUT] = "timeout",
		[WIRE_CM_REJ_UNSUPPORTED] = "unsupported-request",
		[WIRE_CM_REJ_INVALID_COMM_ID] = "invalid-comm-ID",
		[WIRE_CM_REJ_INVALID_COMM_INSTANCE] = "invalid-comm-instance",
		[WIRE_CM_REJ_INVALID_SERVICE_ID] = "invalid-service-ID",
		[WIRE_CM_REJ_INVALID_TRANSPORT_TYPE] = "invalid-transport-service-type",
		[WIRE_CM_REJ_STALE_CONN] = "stale-connection",
		[WIRE_CM_REJ_RDC_NOT_EXIST] = "RDC-does-not-exist",
		[WIRE_CM_REJ_INVALID_GID] = "invalid-GID",
		[WIRE_CM_REJ_INVALID_LID] = "invalid-LID",
		[WIRE_CM_REJ_INVALID_SL] = "invalid-SL",
		[WIRE_CM_REJ_INVALID_TRAFFIC_CLASS] = "invalid-traffic-class",
		[WIRE_CM_REJ_INVALID_HOP_LIMIT] = "invalid-hop-limit",
		[WIRE_CM_REJ_INVALID_PACKET_RATE] = "invalid-packet-rate",
		[WIRE_CM_REJ_INVALID_ALT_GID] = "invalid-alt-GID",
		[WIRE_CM_REJ_INVALID_ALT_LID] = "invalid-alt-LID",
		[WIRE_CM_REJ_INVALID_ALT_SL] = "invalid-alt-SL",
		[WIRE_CM_REJ_INVALID_ALT_TRAFFIC_CLASS] = "invalid-alt-traffic-class",
		[WIRE_CM_REJ_INVALID_ALT_HOP_LIMIT] = "invalid-alt-hop-limit",
		[WIRE_CM_REJ_INVALID_ALT_PACKET_RATE] = "invalid-alt-packet-rate",
		[WIRE_CM_REJ_PORT_CM_REDIRECT] = "port-and-CM-redirection",
		[WIRE_CM_REJ_PORT_REDIRECT] = "port-redirection",
		[WIRE_CM_REJ_INVALID_MTU] = "invalid-path-MTU",
		[WIRE_CM_REJ_INSUFFICIENT_RESP_RESOURCES] = "insufficient-responder-resources",
		[WIRE_CM_REJ_CONSUMER_DEFINED] = "consumer-defined",
		[WIRE_CM_REJ_INVALID_RNR_RETRY] = "invalid-RNR-retry-count",
		[WIRE_CM_REJ_DUPLICATE_LOCAL_COMM_ID] = "duplicate-local-comm-ID",
		[WIRE_CM_REJ_INVALID_CLASS_VERSION] = "invalid-class-version",
		[WIRE_CM_REJ_INVALID_FLOW_LABEL] = "invalid-primary-flow-label",
		[WIRE_CM_REJ_INVALID_ALT_FLOW_LABEL] = "invalid-alt-flow-label",
		[WIRE_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED] = "vendor-option-not-supported",
	};
	return reason < sizeof(names) / sizeof(names[0]) ? names[reason] : NULL;
}

/* ---- RDMA-CM --------------------------------------------------------------- */

bool wire_rdma_cm_service_id_parse(uint64_t sid, uint16_t *ps, uint16_t *port)
{
	if (sid >> 32)
		return false;
	uint16_t space = (uint16_t)(sid >> 16);
	switch (space) {
	case WIRE_RDMA_PS_IPOIB: case WIRE_RDMA_PS_TCP: case WIRE_RDMA_PS_UDP: case WIRE_RDMA_PS_IB:
		break;
	default:
		return false;
	}
	if (ps)
		*ps = space;
	if (port)
		*port = (uint16_t)sid;
	return true;
}

static int check_cma_hdr(const struct wire_cma_hdr *h)
{
	if (h->cma_version != WIRE_CMA_VERSION)
		return WIRE_E_FIELD;
	return h->ip_version == 4 || h->ip_version == 6 ? WIRE_OK : WIRE_E_FIELD;
}

int wire_cma_hdr_decode(const uint8_t *pd, size_t len, struct wire_cma_hdr *out)
{
	if (!pd || !out)
		return WIRE_E_FIELD;
	memset(out, 0, sizeof(*out));
	if (len < WIRE_CMA_HDR_LEN)
		return WIRE_E_TRUNCATED;
	out->cma_version = pd[0];
	out->ip_version = pd[1] >> 4;           /* low nibble reserved */
	out->src_port = get16(pd + 2);
	memcpy(out->src_addr, pd + 4, 16);
	memcpy(out->dst_addr, pd + 20, 16);
	return check_cma_hdr(out);
}

int wire_cma_hdr_encode(const struct wire_cma_hdr *h, uint8_t *out, size_t cap)
{
	if (!h || !out)
		return WIRE_E_FIELD;
	if (cap < WIRE_CMA_HDR_LEN)
		return WIRE_E_NOSPACE;
	int err = check_cma_hdr(h);
	if (err)
		return err;
	out[0] = h->cma_version;
	out[1] = (uint8_t)(h->ip_version << 4);
	put16(out + 2, h->src_port);
	memcpy(out + 4, h->src_addr, 16);
	memcpy(out + 20, h->dst_addr, 16);
	return (int)WIRE_CMA_HDR_LEN;
}
