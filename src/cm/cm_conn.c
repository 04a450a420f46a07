/*
 * cm_conn.c — the connection state machine (IBTA Vol 1 12.9, its state
 * diagrams for the active and passive sides and for disconnection) and the
 * consumer calls that drive it.
 *
 * In the style of rnic/requester.c: one small function per state takes one
 * input (a MAD for this id, its timer, or a consumer call; struct cm_in)
 * and returns the next state; cm_step (cm.c) traces the transition.  Every
 * rule a state follows is in its function, so a state's behaviour can be
 * read against the spec's diagram in one place.  Rules the spec leaves
 * open follow the Linux kernel's drivers/infiniband/core/cm.c (cited by
 * function) or are stated in cm.h.
 *
 * The states, with the two sides' paths:
 *   active:  Idle -> REQ Sent [-> MRA(REQ) Received] -> REP Received
 *            [-> MRA(REP) Sent] -> Established
 *   passive: Idle -> REQ Received [-> MRA Sent] -> REP Sent
 *            [-> MRA(REP) Received] -> Established
 *   both:    Established -> DREQ Sent -> TimeWait, or
 *            Established -> DREQ Received -> TimeWait; TimeWait -> Idle.
 * Every failure (REJ sent or received, timeouts) also ends in TimeWait.
 *
 * The transitions (rx: a MAD for the id; call: a consumer call; T: the
 * request timer; S: an MRA's service timeout; an input a state does not
 * list is dropped as unexpected, or refused with EINVAL):
 *
 *   Idle           call connect        -> REQ Sent         send REQ, arm T
 *                  call destroy        (freed)
 *   REQ Sent       rx REP              -> REP Received     REP_RECEIVED
 *                  rx MRA(REQ)         -> MRA(REQ) Rcvd    wait S + T; MRA_RECEIVED
 *                  rx REJ              -> TimeWait         REJ_RECEIVED
 *                  T, retries left     -> REQ Sent         resend the REQ
 *                  T, none left        -> TimeWait         REJ(timeout); REQ_TIMEOUT
 *                  call destroy        -> TimeWait         REJ(timeout)
 *   MRA(REQ) Rcvd  as REQ Sent, but T with retries left resends -> REQ Sent
 *   REP Received   call RTU            -> Established      RTU (kept for duplicates)
 *                  call MRA, rx REP    -> MRA(REP) Sent    MRA(REP)
 *                  call reject         -> TimeWait         REJ(REP)
 *                  call destroy        -> TimeWait         REJ 28
 *                  rx REJ              -> TimeWait         REJ_RECEIVED
 *   MRA(REP) Sent  as REP Received; rx REP resends the MRA
 *   REQ Received   call accept         -> REP Sent         send REP, arm T
 *                  call MRA, rx REQ    -> MRA Sent         MRA(REQ)
 *                  call reject         -> TimeWait         REJ(REQ)
 *                  call destroy        -> TimeWait         REJ 28
 *                  rx REJ              -> TimeWait         REJ_RECEIVED
 *   MRA Sent       as REQ Received; rx REQ resends the MRA
 *   REP Sent       rx RTU, call establish -> Established   ESTABLISHED
 *                  rx REQ              (stays)             resend the REP
 *                  rx MRA(REP)         -> MRA(REP) Rcvd    wait S + T
 *                  rx DREQ             -> Established -> DREQ Received -> TimeWait:
 *                                      ESTABLISHED, DREP, DREQ_RECEIVED
 *                  rx REJ              -> TimeWait         REJ_RECEIVED
 *                  T, retries left     (stays)             resend the REP
 *                  T, none left        -> TimeWait         REJ(timeout); REP_TIMEOUT
 *                  call reject/destroy -> TimeWait         REJ
 *   MRA(REP) Rcvd  as REP Sent, but T with retries left resends -> REP Sent
 *   Established    call disconnect/destroy -> DREQ Sent    send DREQ, arm T
 *                  rx DREQ             -> DREQ Received -> TimeWait: DREP; DREQ_RECEIVED
 *                  rx REP (active)     (stays)             resend the RTU
 *                  rx REJ              -> TimeWait         REJ_RECEIVED
 *   DREQ Sent      rx DREP             -> TimeWait         DISCONNECT_DONE 0
 *                  rx DREQ             -> DREQ Received -> TimeWait: DREP; DISCONNECT_DONE 0
 *                  rx REJ              -> TimeWait         DISCONNECT_DONE ECONNRESET
 *                  T, retries left     (stays)             resend the DREQ
 *                  T, none left        -> TimeWait         DISCONNECT_DONE ETIMEDOUT
 *   TimeWait       rx DREQ             (stays)             DREP again
 *                  rx REQ              (stays)             our REJ again, or REJ 10
 *                  rx REP              (stays)             our REJ again, if we sent one
 *                  timewait_ns         -> Idle             TIMEWAIT_EXIT
 * (A destroyed id runs the same machine silently and is freed in Idle.)
 */
#include "cm/cm_int.h"

static uint16_t attr_of(const struct cm_in *in)
{
	return in->kind == CM_IN_RX ? in->msg->hdr.attr_id : 0;
}

static bool rx(const struct cm_in *in, uint16_t attr)
{
	return attr_of(in) == attr;
}

/* Anything a state does not handle: a consumer call in the wrong state is
 * EINVAL (as the kernel's ib_send_cm_* return -EINVAL); a MAD is dropped
 * and counted as unexpected; a timer cannot be pending in such a state. */
static enum cm_state other(struct cm_id *id, struct cm_in *in)
{
	if (in->kind == CM_IN_RX)
		in->disp = CM_DISP_UNEXPECTED;
	else if (in->kind != CM_IN_TIMER)
		in->result = EINVAL;
	return id->state;
}

static enum cm_state dup(struct cm_id *id, struct cm_in *in)
{
	in->disp = CM_DISP_DUP;
	return id->state;
}

/* The request timer ran out: resend the stored request if retries are
 * left (12.6 "CM response timeout": the same message, same TID) and wait
 * again; false when they are used up. */
static bool resend_request(struct cm_id *id, struct cm_in *in)
{
	if (id->retries >= id->max_retries || !id->req.valid)
		return false;
	id->retries++;
	CM_COUNT(id->cm, retries);
	cm_resend(id, &id->req);
	cm_timer_set(id, in->now + id->timeout_ns);
	return true;
}

/* Start a new request: send it, stored for resending, and arm the timer. */
static void start_request(struct cm_id *id, struct cm_in *in, const struct wire_cm_msg *m)
{
	id->retries = 0;
	cm_send_stored(id, &id->req, m);
	cm_timer_set(id, in->now + id->timeout_ns);
}

/* The service timeout of the MRA sent on its own for a consumer that has
 * not answered a REQ or REP that came again (12.6.6). */
static uint8_t auto_mra_timeout(const struct cm_id *id)
{
	const struct cm_config *cfg = &id->cm->cfg;
	return cfg->mra_service_timeout ? cfg->mra_service_timeout : cfg->cm_response_timeout;
}

/* Send a response (RTU, MRA, REJ, DREP), keeping it to answer duplicates. */
static void respond(struct cm_id *id, const struct wire_cm_msg *m)
{
	cm_send_stored(id, &id->resp, m);
}

/* An MRA for our outstanding request (12.6.6): wait the service timeout
 * plus one response timeout before resending.  Each MRA extends again (the
 * kernel ignores a second one; the spec lets the peer send it again for
 * every duplicate it sees, and ignoring it would time out a peer that is
 * only slow). */
static enum cm_state rx_mra(struct cm_id *id, struct cm_in *in, enum cm_state next)
{
	const struct wire_cm_mra *m = &in->msg->mra;
	cm_timer_set(id, in->now + cm_timeout_ns(m->service_timeout) + id->timeout_ns);
	CM_COUNT(id->cm, mra_extensions);
	cm_set_state(id, next, in->why);
	struct cm_event ev = { .type = CM_EV_MRA_RECEIVED, .mra_service_timeout = m->service_timeout };
	ev.private_data = cm_msg_private_data(in->msg, &ev.private_data_len);
	cm_emit(id, &ev);
	return next;
}

static void fill_rej(struct cm_event *ev, const struct cm_in *in)
{
	const struct wire_cm_rej *r = &in->msg->rej;
	ev->rej_reason = r->reason;
	ev->rej_msg = r->message_rejected;
	ev->ari = r->ari;
	ev->ari_len = r->reject_info_length;
	ev->private_data = cm_msg_private_data(in->msg, &ev->private_data_len);
}

/* A REJ ends the connection in every state that can get one (IBTA
 * 12.9; the kernel's cm_rej_handler): stop retrying, TimeWait, tell the
 * consumer. */
static enum cm_state rx_rej(struct cm_id *id, struct cm_in *in)
{
	cm_enter_timewait(id, in->now, in->why);
	struct cm_event ev = { .type = CM_EV_REJ_RECEIVED };
	fill_rej(&ev, in);
	cm_emit(id, &ev);
	return CM_ST_TIMEWAIT;
}

/* Send a REJ and go to TimeWait (cm_reject, cm_destroy_id, timeouts).  The
 * REJ is kept: a duplicate REQ in TimeWait gets it again. */
static enum cm_state send_rej(struct cm_id *id, struct cm_in *in, uint8_t msg_rejected, uint16_t reason,
			      const void *ari, uint8_t ari_len, const void *priv, uint8_t len)
{
	struct wire_cm_msg m;
	cm_fmt_rej(id, msg_rejected, reason, ari, ari_len, priv, len, &m);
	respond(id, &m);
	cm_enter_timewait(id, in->now, in->why);
	return CM_ST_TIMEWAIT;
}

static enum cm_state send_rej_timeout(struct cm_id *id, struct cm_in *in, uint8_t msg_rejected)
{
	struct wire_cm_msg m;
	cm_fmt_rej_timeout(id, msg_rejected, &m);
	respond(id, &m);
	cm_enter_timewait(id, in->now, in->why);
	return CM_ST_TIMEWAIT;
}

/* A DREQ for an established connection (IBTA 12.9): answer with a DREP
 * (the cm does it for the consumer, as rdma_cm does at once), DREQ
 * Received -> TimeWait, report `type` (DREQ_RECEIVED; DISCONNECT_DONE when
 * it crossed our own DREQ).  The DREQ must name our QP (the kernel's
 * cm_dreq_handler checks Remote QPN/EECN). */
static enum cm_state rx_dreq(struct cm_id *id, struct cm_in *in, enum cm_event_type type)
{
	const struct wire_cm_dreq *d = &in->msg->dreq;
	if (d->remote_qpn_eecn != id->local_qpn) {
		in->disp = CM_DISP_UNEXPECTED;
		return id->state;
	}
	struct wire_cm_msg m;
	cm_fmt_drep(id, in->msg->hdr.tid, &m);
	cm_set_state(id, CM_ST_DREQ_RCVD, in->why);
	respond(id, &m);
	cm_enter_timewait(id, in->now, in->why);
	struct cm_event ev = { .type = type };
	ev.private_data = cm_msg_private_data(in->msg, &ev.private_data_len);
	cm_emit(id, &ev);
	return CM_ST_TIMEWAIT;
}

/* Established -> DREQ Sent (cm_disconnect, cm_destroy_id). */
static enum cm_state send_dreq(struct cm_id *id, struct cm_in *in, const void *priv, uint8_t len)
{
	struct wire_cm_msg m;
	cm_fmt_dreq(id, cm_new_tid(id->cm, id->local_id), priv, len, &m);
	start_request(id, in, &m);
	return CM_ST_DREQ_SENT;
}

static enum cm_state established(struct cm_id *id, struct cm_in *in)
{
	cm_timer_clear(id);
	id->req.valid = false;
	cm_set_state(id, CM_ST_ESTABLISHED, in->why);
	struct cm_event ev = { .type = CM_EV_ESTABLISHED };
	if (rx(in, WIRE_CM_ATTR_RTU))
		ev.private_data = cm_msg_private_data(in->msg, &ev.private_data_len);
	cm_emit(id, &ev);
	return CM_ST_ESTABLISHED;
}

/* ---- Idle ------------------------------------------------------------------ */

static enum cm_state st_idle(struct cm_id *id, struct cm_in *in)
{
	const struct cm_req_param *p = in->req;
	struct wire_cm_msg m;

	switch (in->kind) {
	case CM_IN_CONNECT:
		/* IBTA 12.9, active side: send the REQ, wait for REP / MRA / REJ. */
		memcpy(id->remote_gid, p->dgid, 16);
		id->service_id = p->service_id;
		id->local_qpn = p->qpn;
		id->qp_type = p->qp_type;
		id->tid = cm_new_tid(id->cm, id->local_id);
		id->timeout_ns = cm_timeout_ns(p->remote_cm_response_timeout);
		id->max_retries = p->max_cm_retries;
		cm_fmt_req(id, p, &m);
		start_request(id, in, &m);
		if (!id->req.valid) {
			cm_timer_clear(id);
			in->result = EINVAL;
			return CM_ST_IDLE;
		}
		return CM_ST_REQ_SENT;
	case CM_IN_DESTROY:
		return CM_ST_IDLE;      /* cm_step frees it */
	default:
		return other(id, in);
	}
}

/* ---- active: REQ Sent, MRA(REQ) Received ------------------------------------ */

static void fill_rep_info(struct cm_rep_info *o, const struct wire_cm_rep *r)
{
	o->ca_guid = r->local_ca_guid;
	o->qpn = r->local_qpn;
	o->starting_psn = r->starting_psn;
	o->responder_resources = r->responder_resources;
	o->initiator_depth = r->initiator_depth;
	o->target_ack_delay = r->target_ack_delay;
	o->failover_accepted = r->failover_accepted;
	o->rnr_retry_count = r->rnr_retry_count;
	o->srq = r->srq;
	o->flow_control = r->end_to_end_flow_control;
}

/* The REP (IBTA 12.9, active side): learn the peer's comm ID, CA GUID and QP, stop the
 * REQ timer, let the consumer decide (cm_send_rtu / cm_reject).  A REP
 * whose (comm ID, CA GUID) another id already has is dropped (the kernel's
 * cm_rep_handler: "duplicate REP"). */
static enum cm_state rx_first_rep(struct cm_id *id, struct cm_in *in)
{
	const struct wire_cm_rep *r = &in->msg->rep;
	if (!cm_id_set_remote(id, r->local_comm_id, r->local_ca_guid)) {
		in->disp = CM_DISP_UNEXPECTED;
		return id->state;
	}
	id->remote_qpn = r->local_qpn;
	cm_id_index_qpn(id);
	cm_timer_clear(id);
	id->req.valid = false;
	cm_set_state(id, CM_ST_REP_RCVD, in->why);
	struct cm_event ev = { .type = CM_EV_REP_RECEIVED };
	fill_rep_info(&ev.u.rep, r);
	ev.private_data = cm_msg_private_data(in->msg, &ev.private_data_len);
	cm_emit(id, &ev);
	return CM_ST_REP_RCVD;
}

static enum cm_state st_req_sent(struct cm_id *id, struct cm_in *in)
{
	switch (in->kind) {
	case CM_IN_RX:
		if (rx(in, WIRE_CM_ATTR_REP))
			return rx_first_rep(id, in);
		if (rx(in, WIRE_CM_ATTR_REJ))
			return rx_rej(id, in);
		if (rx(in, WIRE_CM_ATTR_MRA) && in->msg->mra.message_mraed == WIRE_CM_MSG_REQ)
			return rx_mra(id, in, CM_ST_MRA_REQ_RCVD);
		return other(id, in);
	case CM_IN_TIMER:
		if (resend_request(id, in))
			return CM_ST_REQ_SENT;
		/* Out of retries: give up, and tell a passive side that may be
		 * holding a QP for us (REJ "timeout", ARI = our CA GUID). */
		CM_COUNT(id->cm, req_timeouts);
		send_rej_timeout(id, in, WIRE_CM_MSG_OTHER);
		{
			struct cm_event ev = { .type = CM_EV_REQ_TIMEOUT, .status = ETIMEDOUT };
			cm_emit(id, &ev);
		}
		return CM_ST_TIMEWAIT;
	case CM_IN_DESTROY:
		/* The kernel's cm_destroy_id: REJ "timeout" with our GUID. */
		return send_rej_timeout(id, in, WIRE_CM_MSG_OTHER);
	default:
		return other(id, in);
	}
}

/* MRA(REQ) Received: the passive side is working on it.  The same as REQ
 * Sent, except that when the extended wait runs out the REQ is resent and
 * the normal wait resumes in REQ Sent. */
static enum cm_state st_mra_req_rcvd(struct cm_id *id, struct cm_in *in)
{
	if (in->kind == CM_IN_TIMER && resend_request(id, in))
		return CM_ST_REQ_SENT;
	return st_req_sent(id, in);
}

/* ---- active: REP Received, MRA(REP) Sent ------------------------------------- */

static enum cm_state st_rep_rcvd(struct cm_id *id, struct cm_in *in)
{
	struct wire_cm_msg m;

	switch (in->kind) {
	case CM_IN_RX:
		if (rx(in, WIRE_CM_ATTR_REP)) {
			/* 12.6.6: the consumer has not answered and the REP
			 * came again: tell the passive side to wait (MRA). */
			if (id->state == CM_ST_REP_RCVD) {
				cm_fmt_mra(id, WIRE_CM_MSG_REP, auto_mra_timeout(id), &m);
				respond(id, &m);
				in->disp = CM_DISP_DUP;
				return CM_ST_MRA_REP_SENT;
			}
			cm_resend(id, &id->resp);
			return dup(id, in);
		}
		if (rx(in, WIRE_CM_ATTR_REJ))
			return rx_rej(id, in);
		return other(id, in);
	case CM_IN_RTU:
		cm_fmt_rtu(id, in->priv, in->priv_len, &m);
		respond(id, &m);        /* kept: a duplicate REP gets it again */
		return CM_ST_ESTABLISHED;
	case CM_IN_REJECT:
		return send_rej(id, in, WIRE_CM_MSG_REP, in->rej_reason, in->ari, in->ari_len, in->priv,
				in->priv_len);
	case CM_IN_MRA:
		cm_fmt_mra(id, WIRE_CM_MSG_REP, in->service_timeout, &m);
		respond(id, &m);
		return CM_ST_MRA_REP_SENT;
	case CM_IN_DESTROY:
		return send_rej(id, in, WIRE_CM_MSG_REP, WIRE_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
	default:
		return other(id, in);
	}
}

/* ---- passive: REQ Received, MRA Sent --------------------------------------------- */

static enum cm_state st_req_rcvd(struct cm_id *id, struct cm_in *in)
{
	struct wire_cm_msg m;

	switch (in->kind) {
	case CM_IN_RX:
		if (rx(in, WIRE_CM_ATTR_REQ)) {
			/* 12.6.6: a duplicate REQ before the consumer answered:
			 * MRA, so the active side waits instead of giving up
			 * (rdma_cm arms this with IB_CM_MRA_FLAG_DELAY). */
			if (id->state == CM_ST_REQ_RCVD) {
				cm_fmt_mra(id, WIRE_CM_MSG_REQ, auto_mra_timeout(id), &m);
				respond(id, &m);
				in->disp = CM_DISP_DUP;
				return CM_ST_MRA_REQ_SENT;
			}
			cm_resend(id, &id->resp);       /* the kernel's cm_dup_req_handler */
			return dup(id, in);
		}
		if (rx(in, WIRE_CM_ATTR_REJ))
			return rx_rej(id, in);
		return other(id, in);
	case CM_IN_ACCEPT: {
		const struct cm_rep_param *p = in->rep;
		id->local_qpn = p->qpn;
		cm_fmt_rep(id, p, &m);
		start_request(id, in, &m);
		if (!id->req.valid) {
			cm_timer_clear(id);
			in->result = EINVAL;
			return id->state;
		}
		return CM_ST_REP_SENT;
	}
	case CM_IN_REJECT:
		return send_rej(id, in, WIRE_CM_MSG_REQ, in->rej_reason, in->ari, in->ari_len, in->priv,
				in->priv_len);
	case CM_IN_MRA:
		cm_fmt_mra(id, WIRE_CM_MSG_REQ, in->service_timeout, &m);
		respond(id, &m);
		return CM_ST_MRA_REQ_SENT;
	case CM_IN_DESTROY:
		/* The kernel's cm_destroy_id in REQ Received: REJ 28. */
		return send_rej(id, in, WIRE_CM_MSG_REQ, WIRE_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
	default:
		return other(id, in);
	}
}

/* ---- passive: REP Sent, MRA(REP) Received -------------------------------------- */

static enum cm_state st_rep_sent(struct cm_id *id, struct cm_in *in)
{
	switch (in->kind) {
	case CM_IN_RX:
		if (rx(in, WIRE_CM_ATTR_RTU))
			return established(id, in);
		if (rx(in, WIRE_CM_ATTR_REQ)) {
			/* The REP was lost or is late: send it again (same
			 * bytes; not a retry of the count). */
			cm_resend(id, &id->req);
			return dup(id, in);
		}
		if (rx(in, WIRE_CM_ATTR_MRA) && in->msg->mra.message_mraed == WIRE_CM_MSG_REP)
			return rx_mra(id, in, CM_ST_MRA_REP_RCVD);
		if (rx(in, WIRE_CM_ATTR_REJ))
			return rx_rej(id, in);
		if (rx(in, WIRE_CM_ATTR_DREQ)) {
			/* The RTU was lost and the active side, established,
			 * already disconnects: a DREQ implies the RTU (only an
			 * established side sends one), so report ESTABLISHED
			 * first and every connection is established once. */
			if (in->msg->dreq.remote_qpn_eecn != id->local_qpn)
				return other(id, in);
			established(id, in);
			return rx_dreq(id, in, CM_EV_DREQ_RECEIVED);
		}
		return other(id, in);
	case CM_IN_TIMER:
		if (resend_request(id, in))
			return CM_ST_REP_SENT;
		/* No RTU after the retries (the kernel reports
		 * IB_CM_REP_ERROR): REJ "timeout" so that an active side that
		 * did establish tears down too. */
		CM_COUNT(id->cm, rep_timeouts);
		send_rej_timeout(id, in, WIRE_CM_MSG_OTHER);
		{
			struct cm_event ev = { .type = CM_EV_REP_TIMEOUT, .status = ETIMEDOUT };
			cm_emit(id, &ev);
		}
		return CM_ST_TIMEWAIT;
	case CM_IN_ESTABLISH:
		/* Data arrived before the RTU (IBV_EVENT_COMM_EST; the
		 * kernel's cm_establish). */
		return established(id, in);
	case CM_IN_REJECT:
		return send_rej(id, in, WIRE_CM_MSG_OTHER, in->rej_reason, in->ari, in->ari_len, in->priv,
				in->priv_len);
	case CM_IN_DESTROY:
		return send_rej(id, in, WIRE_CM_MSG_OTHER, WIRE_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
	default:
		return other(id, in);
	}
}

static enum cm_state st_mra_rep_rcvd(struct cm_id *id, struct cm_in *in)
{
	if (in->kind == CM_IN_TIMER && resend_request(id, in))
		return CM_ST_REP_SENT;
	return st_rep_sent(id, in);
}

/* ---- Established ------------------------------------------------------------------ */

static enum cm_state st_established(struct cm_id *id, struct cm_in *in)
{
	switch (in->kind) {
	case CM_IN_RX:
		if (rx(in, WIRE_CM_ATTR_DREQ))
			return rx_dreq(id, in, CM_EV_DREQ_RECEIVED);
		if (rx(in, WIRE_CM_ATTR_REP) && id->active) {
			/* Our RTU was lost (IBTA 12.9; the kernel's
			 * cm_dup_rep_handler): send it again. */
			cm_resend(id, &id->resp);
			return dup(id, in);
		}
		if (rx(in, WIRE_CM_ATTR_REQ) || rx(in, WIRE_CM_ATTR_RTU) || rx(in, WIRE_CM_ATTR_MRA))
			return dup(id, in);
		if (rx(in, WIRE_CM_ATTR_REJ))
			return rx_rej(id, in);
		return other(id, in);
	case CM_IN_DISCONNECT:
		return send_dreq(id, in, in->priv, in->priv_len);
	case CM_IN_ESTABLISH:
		in->result = EISCONN;
		return CM_ST_ESTABLISHED;
	case CM_IN_DESTROY:
		/* The kernel's cm_destroy_id: DREQ; here it is retried to the
		 * end (the id lives on, silently) before TimeWait. */
		return send_dreq(id, in, NULL, 0);
	default:
		return other(id, in);
	}
}

/* ---- DREQ Sent -------------------------------------------------------------------- */

static enum cm_state st_dreq_sent(struct cm_id *id, struct cm_in *in)
{
	struct cm_event ev = { .type = CM_EV_DISCONNECT_DONE };

	switch (in->kind) {
	case CM_IN_RX:
		if (rx(in, WIRE_CM_ATTR_DREP)) {
			cm_enter_timewait(id, in->now, in->why);
			ev.private_data = cm_msg_private_data(in->msg, &ev.private_data_len);
			cm_emit(id, &ev);
			return CM_ST_TIMEWAIT;
		}
		if (rx(in, WIRE_CM_ATTR_DREQ))          /* both sides disconnect */
			return rx_dreq(id, in, CM_EV_DISCONNECT_DONE);
		if (rx(in, WIRE_CM_ATTR_REJ)) {
			cm_enter_timewait(id, in->now, in->why);
			ev.status = ECONNRESET;
			fill_rej(&ev, in);
			cm_emit(id, &ev);
			return CM_ST_TIMEWAIT;
		}
		if (rx(in, WIRE_CM_ATTR_REP) || rx(in, WIRE_CM_ATTR_REQ) || rx(in, WIRE_CM_ATTR_RTU) ||
		    rx(in, WIRE_CM_ATTR_MRA))
			return dup(id, in);
		return other(id, in);
	case CM_IN_TIMER:
		if (resend_request(id, in))
			return CM_ST_DREQ_SENT;
		/* IBTA 12.9: no DREP after the retries; disconnected anyway
		 * (the kernel's IB_CM_DREQ_ERROR, then TimeWait). */
		CM_COUNT(id->cm, dreq_timeouts);
		cm_enter_timewait(id, in->now, in->why);
		ev.status = ETIMEDOUT;
		cm_emit(id, &ev);
		return CM_ST_TIMEWAIT;
	case CM_IN_DESTROY:
		return CM_ST_DREQ_SENT;         /* finish the DREQ silently */
	default:
		return other(id, in);
	}
}

/* ---- TimeWait ---------------------------------------------------------------------- */

static enum cm_state st_timewait(struct cm_id *id, struct cm_in *in)
{
	struct wire_cm_msg m;

	switch (in->kind) {
	case CM_IN_RX:
		if (rx(in, WIRE_CM_ATTR_DREQ)) {
			/* Our DREP was lost: again (the kernel's
			 * cm_dreq_handler in IB_CM_TIMEWAIT). */
			if (id->resp.valid && id->resp.attr == WIRE_CM_ATTR_DREP) {
				cm_resend(id, &id->resp);
			} else {
				cm_fmt_drep(id, in->msg->hdr.tid, &m);
				respond(id, &m);
			}
			return dup(id, in);
		}
		if (rx(in, WIRE_CM_ATTR_REQ)) {
			/* A duplicate REQ of a connection that is over: the
			 * REJ we sent, or "stale connection" (the kernel's
			 * cm_dup_req_handler in IB_CM_TIMEWAIT). */
			if (id->resp.valid && id->resp.attr == WIRE_CM_ATTR_REJ)
				cm_resend(id, &id->resp);
			else
				cm_issue_rej(id->cm, in->src_gid, in->msg, WIRE_CM_REJ_STALE_CONN);
			return dup(id, in);
		}
		if (rx(in, WIRE_CM_ATTR_REP) && id->resp.valid && id->resp.attr == WIRE_CM_ATTR_REJ) {
			/* A REJ is not retried (IBTA 12.9: only requests are); if
			 * ours was lost the peer resends its REP: answer it with
			 * the REJ again, so that it learns now instead of
			 * timing out (the kernel drops it). */
			cm_resend(id, &id->resp);
			return dup(id, in);
		}
		in->disp = CM_DISP_TIMEWAIT;
		return CM_ST_TIMEWAIT;
	case CM_IN_TIMER: {
		CM_COUNT(id->cm, timewait_exited);
		cm_set_state(id, CM_ST_IDLE, in->why);
		struct cm_event ev = { .type = CM_EV_TIMEWAIT_EXIT };
		cm_emit(id, &ev);
		return CM_ST_IDLE;
	}
	case CM_IN_DESTROY:
		return CM_ST_TIMEWAIT;          /* freed when TimeWait ends */
	default:
		return other(id, in);
	}
}

/* DREQ Received is left within the step that entered it (the DREP is sent
 * at once), so no input ever finds an id there. */
static enum cm_state st_dreq_rcvd(struct cm_id *id, struct cm_in *in)
{
	return other(id, in);
}

static const cm_state_fn conn_states[CM_NSTATES] = {
	[CM_ST_IDLE] = st_idle,
	[CM_ST_REQ_SENT] = st_req_sent,
	[CM_ST_MRA_REQ_RCVD] = st_mra_req_rcvd,
	[CM_ST_REP_RCVD] = st_rep_rcvd,
	[CM_ST_MRA_REP_SENT] = st_rep_rcvd,
	[CM_ST_REQ_RCVD] = st_req_rcvd,
	[CM_ST_MRA_REQ_SENT] = st_req_rcvd,
	[CM_ST_REP_SENT] = st_rep_sent,
	[CM_ST_MRA_REP_RCVD] = st_mra_rep_rcvd,
	[CM_ST_ESTABLISHED] = st_established,
	[CM_ST_DREQ_SENT] = st_dreq_sent,
	[CM_ST_DREQ_RCVD] = st_dreq_rcvd,
	[CM_ST_TIMEWAIT] = st_timewait,
};

enum cm_state cm_conn_state_fn(struct cm_id *id, struct cm_in *in)
{
	cm_state_fn fn = (unsigned)id->state < CM_NSTATES ? conn_states[id->state] : NULL;
	return fn ? fn(id, in) : other(id, in);
}

/* ---- consumer calls ------------------------------------------------------------------ */

void cm_req_param_init(const struct cm *cm, struct cm_req_param *p)
{
	memset(p, 0, sizeof(*p));
	p->qp_type = IBV_QPT_RC;
	p->path_mtu = IBV_MTU_1024;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	p->local_ack_timeout = CM_DEFAULT_ACK_TIMEOUT;
	p->remote_cm_response_timeout = cm->cfg.cm_response_timeout;
	p->local_cm_response_timeout = cm->cfg.cm_response_timeout;
	p->max_cm_retries = cm->cfg.max_cm_retries;
	p->pkey = 0xffff;
	p->hop_limit = 64;
}

static bool priv_ok(const void *priv, uint8_t len, size_t max)
{
	return len <= max && (len == 0 || priv);
}

static bool req_param_ok(const struct cm_req_param *p)
{
	return (p->qp_type == IBV_QPT_RC || p->qp_type == IBV_QPT_UC) && p->qpn <= 0xffffff &&
	       p->starting_psn <= 0xffffff && p->path_mtu >= IBV_MTU_256 && p->path_mtu <= IBV_MTU_4096 &&
	       p->retry_count <= 7 && p->rnr_retry_count <= 7 && p->local_ack_timeout <= 31 &&
	       p->remote_cm_response_timeout <= 31 && p->local_cm_response_timeout <= 31 &&
	       p->max_cm_retries <= 15 && p->flow_label <= 0xfffff && p->sl <= 15 &&
	       priv_ok(p->private_data, p->private_data_len, CM_REQ_PRIVATE_DATA_SIZE);
}

int cm_connect(struct cm *cm, const struct cm_req_param *p, void *user, uint64_t now, struct cm_id **out)
{
	if (!cm || !p || !out || !req_param_ok(p))
		return EINVAL;
	struct cm_id *id = cm_id_new(cm, true, false);
	if (!id)
		return ENOMEM;
	id->user = user;
	struct cm_in in = { .kind = CM_IN_CONNECT, .now = now, .req = p };
	int rc = cm_step(id, &in);
	if (rc) {
		cm_id_free(id);
		return rc;
	}
	*out = id;
	return 0;
}

int cm_send_rtu(struct cm_id *id, const void *priv, uint8_t len, uint64_t now)
{
	if (!id || id->destroyed || !priv_ok(priv, len, CM_RTU_PRIVATE_DATA_SIZE))
		return EINVAL;
	struct cm_in in = { .kind = CM_IN_RTU, .now = now, .priv = priv, .priv_len = len };
	return cm_step(id, &in);
}

int cm_accept(struct cm_id *id, const struct cm_rep_param *p, uint64_t now)
{
	if (!id || id->destroyed || !p || p->qpn > 0xffffff || p->starting_psn > 0xffffff ||
	    p->rnr_retry_count > 7 || p->target_ack_delay > 31 ||
	    !priv_ok(p->private_data, p->private_data_len, CM_REP_PRIVATE_DATA_SIZE))
		return EINVAL;
	struct cm_in in = { .kind = CM_IN_ACCEPT, .now = now, .rep = p };
	return cm_step(id, &in);
}

int cm_reject(struct cm_id *id, enum cm_rej_reason reason, const void *ari, uint8_t ari_len, const void *priv,
	      uint8_t len, uint64_t now)
{
	if (!id || id->destroyed || !priv_ok(ari, ari_len, CM_REJ_ARI_LENGTH) ||
	    !priv_ok(priv, len, CM_REJ_PRIVATE_DATA_SIZE) || (unsigned)reason > 0xffff)
		return EINVAL;
	struct cm_in in = { .kind = CM_IN_REJECT, .now = now, .rej_reason = (uint16_t)reason, .ari = ari,
			    .ari_len = ari_len, .priv = priv, .priv_len = len };
	return cm_step(id, &in);
}

int cm_send_mra(struct cm_id *id, uint8_t service_timeout, uint64_t now)
{
	if (!id || id->destroyed || service_timeout > 31)
		return EINVAL;
	struct cm_in in = { .kind = CM_IN_MRA, .now = now, .service_timeout = service_timeout };
	return cm_step(id, &in);
}

int cm_establish(struct cm_id *id, uint64_t now)
{
	if (!id || id->destroyed)
		return EINVAL;
	struct cm_in in = { .kind = CM_IN_ESTABLISH, .now = now };
	return cm_step(id, &in);
}

int cm_disconnect(struct cm_id *id, const void *priv, uint8_t len, uint64_t now)
{
	if (!id || id->destroyed || !priv_ok(priv, len, CM_DREQ_PRIVATE_DATA_SIZE))
		return EINVAL;
	struct cm_in in = { .kind = CM_IN_DISCONNECT, .now = now, .priv = priv, .priv_len = len };
	return cm_step(id, &in);
}

void cm_destroy_id(struct cm_id *id, uint64_t now)
{
	if (!id || id->destroyed)
		return;
	id->destroyed = true;
	struct cm_in in = { .kind = CM_IN_DESTROY, .now = now };
	cm_step(id, &in);
}
