/*
 * sidr.c — Service ID Resolution (IBTA Vol 1 12.11): how a UD consumer
 * learns the QPN and Q_Key behind a service ID.  Two messages, no
 * connection: SIDR_REQ (retried like any request) and SIDR_REP.
 *
 * Same shape as cm_conn.c: one function per state, returning the next.
 *   active:  Idle -> SIDR REQ Sent -> Idle (SIDR_REP, or timeout)
 *   passive: (new id) SIDR REQ Received -> TimeWait -> Idle
 * The passive side's TimeWait is ours, not the spec's (12.11 goes straight
 * to Idle, and the kernel's cm_sidr_req_handler forgets the request once
 * answered): for cm_config.timewait_ns the id answers a duplicate SIDR_REQ
 * with the SIDR_REP it sent, so a duplicated or retried request does not
 * reach the consumer twice.  No CM_EV_TIMEWAIT_EXIT is reported for SIDR
 * ids.
 */
#include "cm/cm_int.h"

static enum cm_state other(struct cm_id *id, struct cm_in *in)
{
	if (in->kind == CM_IN_RX)
		in->disp = CM_DISP_UNEXPECTED;
	else if (in->kind != CM_IN_TIMER)
		in->result = EINVAL;
	return id->state;
}

static bool rx(const struct cm_in *in, uint16_t attr)
{
	return in->kind == CM_IN_RX && in->msg->hdr.attr_id == attr;
}

static enum cm_state st_idle(struct cm_id *id, struct cm_in *in)
{
	struct wire_cm_msg m;

	switch (in->kind) {
	case CM_IN_SIDR_REQUEST:
		cm_fmt_sidr_req(id, in->priv, in->priv_len, &m);
		id->retries = 0;
		cm_send_stored(id, &id->req, &m);
		if (!id->req.valid) {
			in->result = EINVAL;
			return CM_ST_IDLE;
		}
		cm_timer_set(id, in->now + id->timeout_ns);
		return CM_ST_SIDR_REQ_SENT;
	case CM_IN_DESTROY:
		return CM_ST_IDLE;
	default:
		/* A SIDR_REP after the answer or the timeout. */
		if (rx(in, WIRE_CM_ATTR_SIDR_REP)) {
			in->disp = CM_DISP_DUP;
			return CM_ST_IDLE;
		}
		return other(id, in);
	}
}

static enum cm_state st_sidr_req_sent(struct cm_id *id, struct cm_in *in)
{
	switch (in->kind) {
	case CM_IN_RX:
		if (rx(in, WIRE_CM_ATTR_SIDR_REP)) {
			const struct wire_cm_sidr_rep *r = &in->msg->sidr_rep;
			cm_timer_clear(id);
			id->req.valid = false;
			cm_set_state(id, CM_ST_IDLE, in->why);
			struct cm_event ev = { .type = CM_EV_SIDR_REP_RECEIVED };
			ev.u.sidr_rep.status = (enum cm_sidr_status)r->status;
			ev.u.sidr_rep.qpn = r->qpn;
			ev.u.sidr_rep.qkey = r->qkey;
			ev.u.sidr_rep.service_id = r->service_id;
			ev.u.sidr_rep.info = r->class_port_info;
			ev.u.sidr_rep.info_len = r->additional_info_length;
			ev.private_data = cm_msg_private_data(in->msg, &ev.private_data_len);
			cm_emit(id, &ev);
			return CM_ST_IDLE;
		}
		return other(id, in);
	case CM_IN_TIMER:
		if (id->retries < id->max_retries) {
			id->retries++;
			CM_COUNT(id->cm, retries);
			cm_resend(id, &id->req);
			cm_timer_set(id, in->now + id->timeout_ns);
			return CM_ST_SIDR_REQ_SENT;
		}
		CM_COUNT(id->cm, sidr_timeouts);
		id->req.valid = false;
		cm_set_state(id, CM_ST_IDLE, in->why);
		{
			struct cm_event ev = { .type = CM_EV_SIDR_TIMEOUT, .status = ETIMEDOUT };
			cm_emit(id, &ev);
		}
		return CM_ST_IDLE;
	case CM_IN_DESTROY:
		/* The kernel's cm_destroy_id in SIDR REQ Sent: cancel. */
		cm_timer_clear(id);
		return CM_ST_IDLE;
	default:
		return other(id, in);
	}
}

static enum cm_state reply(struct cm_id *id, struct cm_in *in, uint8_t status, uint32_t qpn, uint32_t qkey,
			   const void *priv, uint8_t len)
{
	struct wire_cm_msg m;
	cm_fmt_sidr_rep(id, status, qpn, qkey, priv, len, &m);
	cm_send_stored(id, &id->resp, &m);
	cm_enter_timewait(id, in->now, in->why);
	return CM_ST_TIMEWAIT;
}

static enum cm_state st_sidr_req_rcvd(struct cm_id *id, struct cm_in *in)
{
	switch (in->kind) {
	case CM_IN_RX:
		if (rx(in, WIRE_CM_ATTR_SIDR_REQ)) {
			/* Not answered yet: the consumer has it already (the
			 * kernel's cm_sidr_req_handler counts it, drops it). */
			in->disp = CM_DISP_DUP;
			return id->state;
		}
		return other(id, in);
	case CM_IN_SIDR_REPLY:
		return reply(id, in, in->sidr_status, in->sidr_qpn, in->sidr_qkey, in->priv, in->priv_len);
	case CM_IN_DESTROY:
		/* The kernel's cm_destroy_id: SIDR_REP "rejected". */
		return reply(id, in, CM_SIDR_REJECT, 0, 0, NULL, 0);
	default:
		return other(id, in);
	}
}

static enum cm_state st_timewait(struct cm_id *id, struct cm_in *in)
{
	switch (in->kind) {
	case CM_IN_RX:
		if (rx(in, WIRE_CM_ATTR_SIDR_REQ)) {
			cm_resend(id, &id->resp);
			in->disp = CM_DISP_DUP;
			return CM_ST_TIMEWAIT;
		}
		in->disp = CM_DISP_TIMEWAIT;
		return CM_ST_TIMEWAIT;
	case CM_IN_TIMER:
		CM_COUNT(id->cm, timewait_exited);
		return CM_ST_IDLE;
	case CM_IN_DESTROY:
		return CM_ST_TIMEWAIT;
	default:
		return other(id, in);
	}
}

enum cm_state cm_sidr_state_fn(struct cm_id *id, struct cm_in *in)
{
	switch (id->state) {
	case CM_ST_IDLE: return st_idle(id, in);
	case CM_ST_SIDR_REQ_SENT: return st_sidr_req_sent(id, in);
	case CM_ST_SIDR_REQ_RCVD: return st_sidr_req_rcvd(id, in);
	case CM_ST_TIMEWAIT: return st_timewait(id, in);
	default: return other(id, in);
	}
}

/* ---- consumer calls ----------------------------------------------------------------- */

int cm_sidr_request(struct cm *cm, const uint8_t dgid[16], uint64_t service_id, const void *priv, uint8_t len,
		    uint8_t timeout_code, uint8_t retries, void *user, uint64_t now, struct cm_id **out)
{
	if (!cm || !dgid || !out || timeout_code > 31 ||
	    len > CM_SIDR_REQ_PRIVATE_DATA_SIZE || (len && !priv))
		return EINVAL;
	struct cm_id *id = cm_id_new(cm, true, true);
	if (!id)
		return ENOMEM;
	id->user = user;
	memcpy(id->remote_gid, dgid, 16);
	id->service_id = service_id;
	id->tid = cm_new_tid(cm, id->local_id);
	id->timeout_ns = cm_timeout_ns(timeout_code);
	id->max_retries = retries;
	struct cm_in in = { .kind = CM_IN_SIDR_REQUEST, .now = now, .priv = priv, .priv_len = len };
	int rc = cm_step(id, &in);
	if (rc) {
		cm_id_free(id);
		return rc;
	}
	*out = id;
	return 0;
}

int cm_sidr_reply(struct cm_id *id, enum cm_sidr_status status, uint32_t qpn, uint32_t qkey, const void *priv,
		  uint8_t len, uint64_t now)
{
	if (!id || id->destroyed || !id->sidr || qpn > 0xffffff || (unsigned)status > 0xff ||
	    len > CM_SIDR_REP_PRIVATE_DATA_SIZE || (len && !priv))
		return EINVAL;
	struct cm_in in = { .kind = CM_IN_SIDR_REPLY, .now = now, .sidr_status = (uint8_t)status,
			    .sidr_qpn = qpn, .sidr_qkey = qkey, .priv = priv, .priv_len = len };
	return cm_step(id, &in);
}
