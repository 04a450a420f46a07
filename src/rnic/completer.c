/*
 * completer.c — the completer: matches ACKs, NAKs, READ responses and
 * ATOMIC ACKs to the send WQEs they answer, retires WQEs in order, and
 * runs the retransmit timer (IBTA 9.7.5.2, 9.9).
 *
 * State machine in the style of rxe's comp.c; one packet walks the states
 * from COMP_GET_WQE until COMP_EXIT.  A coalesced ACK retires several WQEs:
 * COMP_COMPLETE loops back to COMP_GET_WQE while the ACK's PSN lies past
 * the retired WQE.
 *
 * Hand-offs to the requester are explicit calls: requester_rewind() for
 * Go-Back-N (sequence NAK, retransmit timeout, lost READ responses),
 * requester_rnr_wait() for RNR NAKs, requester_run() after progress (the
 * send window, fences and the rd_atomic limit may now allow more).
 */
#include "rnic/rnic_int.h"

enum comp_state {
	COMP_GET_WQE,           /* oldest outstanding WQE                    */
	COMP_CHECK_PSN,         /* where the packet's PSN falls              */
	COMP_CHECK_ACK,         /* what kind of response it is               */
	COMP_READ,              /* READ response data -> local memory        */
	COMP_ATOMIC,            /* ATOMIC ACK original value -> local memory */
	COMP_ACK,               /* positive ACK                              */
	COMP_COMPLETE,          /* retire the oldest WQE successfully        */
	COMP_RETRY,             /* Go-Back-N from retry_psn                  */
	COMP_SELECTIVE,         /* selective NAK: resend what the peer lacks */
	COMP_RNR,               /* RNR NAK: wait, then resend                */
	COMP_NAK_ERROR,         /* fatal NAK: complete in error              */
	COMP_LOCAL_ERROR,       /* local failure: complete in error          */
	COMP_DROP,              /* not for any outstanding request           */
	COMP_EXIT,
	COMP_NSTATES
};

static const char *const comp_state_names[COMP_NSTATES] = {
	[COMP_GET_WQE] = "GET_WQE",
	[COMP_CHECK_PSN] = "CHECK_PSN",
	[COMP_CHECK_ACK] = "CHECK_ACK",
	[COMP_READ] = "READ",
	[COMP_ATOMIC] = "ATOMIC",
	[COMP_ACK] = "ACK",
	[COMP_COMPLETE] = "COMPLETE",
	[COMP_RETRY] = "RETRY",
	[COMP_SELECTIVE] = "SELECTIVE",
	[COMP_RNR] = "RNR",
	[COMP_NAK_ERROR] = "NAK_ERROR",
	[COMP_LOCAL_ERROR] = "LOCAL_ERROR",
	[COMP_DROP] = "DROP",
	[COMP_EXIT] = "EXIT",
};

const char *completer_state_name(int state)
{
	return state >= 0 && state < COMP_NSTATES ? comp_state_names[state] : "?";
}

struct comp_ctx {
	const struct wire_ib *pkt;      /* NULL when the timer runs us */
	uint64_t now;
	struct rnic_send_wqe *wqe;
	bool more;                      /* the packet may retire more WQEs */
	bool progress;
	bool rerun;                     /* the requester should resume */
	bool held;                      /* the READ's data and completion wait (pull.c) */
	uint32_t retry_psn;
	enum ibv_wc_status error;
};

/* Operations that only their own response completes (FLUSH: a
 * zero-length READ response). */
static bool is_read_or_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == RNIC_WR_FLUSH;
}

/* Local ACK timeout, IBTA 9.7.6.1.3: 4.096 us * 2^timeout; 0 = infinite. */
static uint64_t timeout_ns(const struct rnic_qp *qp)
{
	return qp->attr.timeout ? 4096ull << qp->attr.timeout : 0;
}

/* Selective repeat's short timeout.  Once the peer has shown that it does
 * selective repeat (we hold a scoreboard), a loss that no later packet
 * reveals (the last packets of a burst, or a resend lost with nothing sent
 * after it) is found by a probe, not by the QP's timeout: the oldest
 * unacknowledged packet is sent again, and the peer's answer (an ACK or a
 * selective NAK) says what it lacks.  Up to RNIC_SR_PROBES probes per
 * episode, each waiting twice as long as the one before (a probe or its
 * answer may be lost too), none counted against retry_cnt; then the QP's
 * timeout runs and its expiry is a Go-Back-N that counts.
 *
 * How long a probe waits follows the path: the RTO of RFC 6298 (SRTT +
 * 4·RTTVAR, from the RTT samples rtt_sample takes), never less than IRN's
 * two constants — RNIC_SR_PROBE_NS (its RTO_low) while at most
 * RNIC_SR_FEW PSNs are outstanding, when nothing later can reveal a loss,
 * and RNIC_SR_PROBE_MANY_NS (its RTO_high) otherwise, when a selective NAK
 * usually comes first.  A fixed 100 us fired all the time once packets
 * waited in an ordinary queue (300 packets at 1 Gbit/s are 2.4 ms): every
 * probe a wasted packet on the bottleneck.  With the RTT estimate a queue
 * of milliseconds costs none, and on a short path a loss is still found
 * 100 us after the last progress. */
#define RNIC_SR_PROBE_NS 100000u
#define RNIC_SR_PROBE_MANY_NS 320000u
#define RNIC_SR_FEW 3
#define RNIC_SR_PROBES 3u

static uint64_t probe_wait_ns(const struct rnic_qp *qp)
{
	bool few = wire_psn_diff(qp->req.psn_high, qp->comp.psn) <= RNIC_SR_FEW;
	uint64_t floor = few ? RNIC_SR_PROBE_NS : RNIC_SR_PROBE_MANY_NS;
	uint64_t rto = qp->comp.srtt + 4 * qp->comp.rttvar;

	return (rto > floor ? rto : floor) << qp->comp.probes;
}

static uint64_t retx_wait_ns(const struct rnic_qp *qp)
{
	uint64_t t = timeout_ns(qp);

	if (!qp->board || qp->comp.probes >= RNIC_SR_PROBES)
		return t;
	uint64_t probe = probe_wait_ns(qp);
	return probe < t ? probe : t;
}

/* RFC 6298 2.2-2.3 in nanoseconds: the first sample sets SRTT = R and
 * RTTVAR = R/2, later ones move them by 1/8 and 1/4.  Trade-off: the
 * gains are meant for one sample per RTT; with one per AckReq (16
 * packets) the estimate forgets faster, as RFC 7323 notes for
 * timestamps, which is what lets it follow a queue that builds up. */
static void rtt_sample(struct rnic_qp *qp, uint64_t r)
{
	struct rnic_comp_state *s = &qp->comp;

	if (r == 0)
		r = 1;
	if (s->srtt == 0) {
		s->srtt = r;
		s->rttvar = r / 2;
		return;
	}
	uint64_t dev = s->srtt > r ? s->srtt - r : r - s->srtt;
	s->rttvar = (3 * s->rttvar + dev) / 4;
	s->srtt = (7 * s->srtt + r) / 8;
}

/* An ACK or a selective NAK answered `psn`: if it was sent with AckReq
 * (completer_on_sent keeps those), the time since its first transmission
 * is a sample.  A single resend meanwhile (a probe, a selective NAK's)
 * leaves the mark: timed from the first copy, the sample can only come
 * out longer than the RTT of whichever copy was answered, never shorter —
 * the safe side for a timer that must not fire early.  Karn's algorithm
 * would drop it, and since a probe resends the oldest packet, a queue
 * that outgrew the estimate would then void the very samples that could
 * correct it.  A Go-Back-N (comp_retry) does drop every mark. */
static void rtt_mark_answered(struct rnic_qp *qp, uint32_t psn, uint64_t now)
{
	for (uint32_t i = 0; i < RNIC_RTT_MARKS; i++) {
		struct rnic_comp_state *s = &qp->comp;
		if (s->rtt_mark[i].valid && s->rtt_mark[i].psn == psn) {
			s->rtt_mark[i].valid = false;
			rtt_sample(qp, now - s->rtt_mark[i].sent);
			cc_on_rtt(qp, now - s->rtt_mark[i].sent, now);  /* TIMELY's input */
			return;
		}
	}
}

static void rtt_marks_clear(struct rnic_qp *qp)
{
	for (uint32_t i = 0; i < RNIC_RTT_MARKS; i++)
		qp->comp.rtt_mark[i].valid = false;
}

/* One retry of retry_cnt for a Go-Back-N or a timeout's probe; false
 * when none is left (IBV_WC_RETRY_EXC_ERR follows). */
static bool spend_retry(struct rnic_qp *qp)
{
	if (qp->comp.retry_left == 0)
		return false;
	qp->comp.retry_left--;
	return true;
}

/* (Re)start the retransmit timer from `now`. */
static void arm_retx(struct rnic_qp *qp, uint64_t now)
{
	qp->comp.retx_deadline = now + retx_wait_ns(qp);
	rnic_qp_timer_armed(qp, qp->comp.retx_deadline);
}

static bool outstanding(const struct rnic_qp *qp)
{
	return wire_psn_diff(qp->req.psn_high, qp->comp.psn) > 0;
}

/* Everything before `psn` is acknowledged (a NAK implies it too). */
static void ack_upto(struct rnic_qp *qp, struct comp_ctx *c, uint32_t psn)
{
	if (wire_psn_diff(psn, qp->comp.psn) > 0) {
		cc_on_ack(qp, (uint32_t)wire_psn_diff(psn, qp->comp.psn), c->now);
		qp->comp.psn = psn;
		c->progress = true;
	}
}

/* ---- states ------------------------------------------------------------- */

static enum comp_state comp_get_wqe(struct rnic_qp *qp, struct comp_ctx *c)
{
	if (!outstanding(qp) || qp->sq.comp == qp->sq.head)
		return c->progress ? COMP_EXIT : COMP_DROP;
	c->wqe = sq_at(&qp->sq, qp->sq.comp);
	if (!c->wqe->psn_valid)
		return c->progress ? COMP_EXIT : COMP_DROP;
	return COMP_CHECK_PSN;
}

static enum comp_state comp_check_psn(struct rnic_qp *qp, struct comp_ctx *c)
{
	uint32_t psn = c->pkt->bth.psn;

	if (wire_psn_diff(psn, qp->comp.psn) < 0)
		return c->progress ? COMP_EXIT : COMP_DROP;     /* stale */
	if (wire_psn_diff(psn, qp->req.psn_high) >= 0)
		return COMP_DROP;                               /* never sent */
	if (wire_psn_diff(psn, c->wqe->last_psn) > 0) {
		/* The responder got past this WQE.  SEND/WRITE: implicitly
		 * acknowledged (IBTA 9.7.5.1.1).  READ/ATOMIC: its response
		 * was lost, so ask again (9.7.5.2.x, implied NAK). */
		if (is_read_or_atomic(c->wqe->opcode)) {
			c->retry_psn = qp->comp.psn;
			return COMP_RETRY;
		}
		c->more = true;
		return COMP_COMPLETE;
	}
	return COMP_CHECK_ACK;
}

static enum ibv_wc_status nak_status(struct rnic *r, uint8_t code)
{
	switch (code) {
	case WIRE_NAK_INVALID_REQ:
		r->ctr.rx_nak_invalid_req++;
		return IBV_WC_REM_INV_REQ_ERR;
	case WIRE_NAK_REM_ACCESS_ERR:
		r->ctr.rx_nak_remote_access++;
		return IBV_WC_REM_ACCESS_ERR;
	case WIRE_NAK_INVALID_RD_REQ:
		r->ctr.rx_nak_invalid_req++;
		return IBV_WC_REM_INV_RD_REQ_ERR;
	default:
		r->ctr.rx_nak_remote_op++;
		return IBV_WC_REM_OP_ERR;
	}
}

static enum comp_state check_read_resp(struct rnic_qp *qp, struct comp_ctx *c)
{
	const struct rnic_send_wqe *w = c->wqe;
	uint32_t psn = c->pkt->bth.psn;
	uint8_t op = c->pkt->bth.opcode & 0x1f;
	uint32_t off, expect;
	bool last = psn == w->last_psn;

	/* ATOMIC WRITE: the kernel's rxe (6.2 on) answers it with a
	 * zero-length READ response, as it does FLUSH; softrnic's responder
	 * with an ACK.  Either completes it. */
	if (w->opcode == IBV_WR_ATOMIC_WRITE || w->opcode == RNIC_WR_FLUSH)
		return op == WIRE_OP_READ_RESP_ONLY && c->pkt->payload_len == 0 && last ? COMP_COMPLETE : COMP_DROP;
	if (w->opcode != IBV_WR_RDMA_READ)
		return COMP_DROP;
	if (psn != qp->comp.psn) {
		/* Earlier responses of this READ were lost: re-request. */
		c->retry_psn = qp->comp.psn;
		return COMP_RETRY;
	}
	/* A resumed READ restarts with FIRST/ONLY mid-WQE, so position is
	 * checked against "last or not", not against the WQE's first PSN. */
	if (last ? (op != WIRE_OP_READ_RESP_LAST && op != WIRE_OP_READ_RESP_ONLY) :
		   (op != WIRE_OP_READ_RESP_FIRST && op != WIRE_OP_READ_RESP_MIDDLE))
		return COMP_DROP;
	off = (uint32_t)wire_psn_diff(psn, w->first_psn) * wqe_mtu(qp, w);
	expect = last ? w->length - off : wqe_mtu(qp, w);
	if (c->pkt->payload_len != expect)
		return COMP_DROP;
	return COMP_READ;
}

static enum comp_state comp_check_ack(struct rnic_qp *qp, struct comp_ctx *c)
{
	const struct wire_ib *pkt = c->pkt;
	uint8_t op = pkt->bth.opcode & 0x1f;
	struct rnic *r = qp->r;

	switch (op) {
	case WIRE_OP_READ_RESP_FIRST:
	case WIRE_OP_READ_RESP_MIDDLE:
	case WIRE_OP_READ_RESP_LAST:
	case WIRE_OP_READ_RESP_ONLY:
		return check_read_resp(qp, c);
	case WIRE_OP_ATOMIC_ACK:
		if (c->wqe->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
		    c->wqe->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD)
			return COMP_DROP;
		return COMP_ATOMIC;
	case WIRE_OP_ACK:
		break;
	default:
		return COMP_DROP;
	}
	switch (wire_aeth_kind(&pkt->aeth)) {
	case WIRE_AETH_ACK:
		r->ctr.rx_acks++;
		return COMP_ACK;
	case WIRE_AETH_RNR_NAK:
		r->ctr.rx_rnr_nak++;
		return COMP_RNR;
	case WIRE_AETH_NAK:
		if (wire_aeth_value(&pkt->aeth) == WIRE_NAK_PSN_SEQ_ERR && pkt->bth.selective &&
		    requester_selective(qp)) {
			r->ctr.rx_nak_selective++;
			return COMP_SELECTIVE;
		}
		if (wire_aeth_value(&pkt->aeth) == WIRE_NAK_PSN_SEQ_ERR) {
			r->ctr.rx_nak_psn_seq++;
			ack_upto(qp, c, pkt->bth.psn);
			c->retry_psn = pkt->bth.psn;
			return COMP_RETRY;
		}
		c->error = nak_status(r, wire_aeth_value(&pkt->aeth));
		return COMP_NAK_ERROR;
	default:
		return COMP_DROP;       /* reserved syndrome */
	}
}

static enum comp_state comp_ack(struct rnic_qp *qp, struct comp_ctx *c)
{
	uint32_t psn = c->pkt->bth.psn;

	/* An ACK inside a READ/ATOMIC's range carries no data: the response
	 * itself is what completes it.  Nothing to do. */
	if (is_read_or_atomic(c->wqe->opcode))
		return COMP_EXIT;
	if (psn == c->wqe->last_psn)
		return COMP_COMPLETE;
	ack_upto(qp, c, wire_psn_add(psn, 1));
	return COMP_EXIT;
}

/* May the message-path READ response pkt have its read put off (pull.c)?
 * Only a READ Response Only that answers w, the oldest outstanding WQE,
 * whole, at the PSN expected, into w's first piece, which must take it
 * (lkey, bounds, local write): the region it lands in, or NULL.  The same
 * answer before the packet runs (joins_put_off_reads) and while it runs
 * (comp_read). */
static struct rnic_mr *read_put_off_mr(const struct rnic_qp *qp, const struct wire_ib *pkt,
				       const struct rnic_send_wqe *w)
{
	struct rnic *r = qp->r;

	if (!r->io.pull_batch || !r->rx_remote || pkt->payload || !pkt->payload_len || qp->comp.read_at_once ||
	    pkt->bth.opcode != (WIRE_TR_RC | WIRE_OP_READ_RESP_ONLY) || w->opcode != IBV_WR_RDMA_READ ||
	    !w->psn_valid || pkt->bth.psn != qp->comp.psn || pkt->bth.psn != w->first_psn ||
	    w->first_psn != w->last_psn || pkt->payload_len != w->length || !w->num_sge ||
	    w->sge[0].length < pkt->payload_len)
		return NULL;
	return rnic_mr_check(r, qp->pd, w->sge[0].lkey, IBV_ACCESS_LOCAL_WRITE, w->sge[0].addr, pkt->payload_len);
}

static enum comp_state comp_read(struct rnic_qp *qp, struct comp_ctx *c)
{
	const struct rnic_send_wqe *w = c->wqe;
	uint32_t psn = c->pkt->bth.psn;
	uint32_t off = (uint32_t)wire_psn_diff(psn, w->first_psn) * wqe_mtu(qp, w);
	struct rnic_mr *mr = read_put_off_mr(qp, c->pkt, w);
	enum ibv_wc_status st;
	bool pulled;

	/* The WQE retires now, its completion written once the bytes are
	 * in (pull.c). */
	if (mr && rnic_pull_put_off_read(qp, w, rnic_mr_ptr(mr, w->sge[0].addr), c->pkt->payload_len, c->now)) {
		c->held = true;
		return COMP_COMPLETE;
	}
	st = rnic_rx_scatter(qp->r, qp->pd, w->sge, w->num_sge, off, c->pkt, &pulled);
	/* A message-path response whose MR the responder let go before we
	 * read it: as if lost; the READ is asked again and the responder's
	 * rules answer it. */
	if (!pulled)
		return COMP_EXIT;
	if (st != IBV_WC_SUCCESS) {
		c->error = st;
		return COMP_LOCAL_ERROR;
	}
	ack_upto(qp, c, wire_psn_add(psn, 1));
	return psn == w->last_psn ? COMP_COMPLETE : COMP_EXIT;
}

static enum comp_state comp_atomic(struct rnic_qp *qp, struct comp_ctx *c)
{
	const struct rnic_send_wqe *w = c->wqe;
	uint8_t orig[8];
	enum ibv_wc_status st;

	/* The original remote value lands in local memory in host order,
	 * as verbs applications read it. */
	memcpy(orig, &c->pkt->atmack, sizeof(orig));
	st = rnic_scatter(qp, w->sge, w->num_sge, 0, orig, sizeof(orig));
	if (st != IBV_WC_SUCCESS) {
		c->error = st;
		return COMP_LOCAL_ERROR;
	}
	return COMP_COMPLETE;
}

static enum comp_state comp_complete(struct rnic_qp *qp, struct comp_ctx *c)
{
	struct rnic_send_wqe *w = c->wqe;

	if (!c->held)
		rnic_qp_complete_send(qp, w, IBV_WC_SUCCESS);
	qp->sq.comp++;
	ack_upto(qp, c, wire_psn_add(w->last_psn, 1));
	c->progress = true;
	return c->more ? COMP_GET_WQE : COMP_EXIT;
}

static enum comp_state comp_retry(struct rnic_qp *qp, struct comp_ctx *c)
{
	/* Already resending from here because of an earlier packet: the rest
	 * of that burst says nothing new. */
	if (c->pkt && qp->comp.retrying && qp->comp.retrying_psn == c->retry_psn)
		return COMP_EXIT;
	if (!spend_retry(qp)) {
		c->error = IBV_WC_RETRY_EXC_ERR;
		return COMP_LOCAL_ERROR;
	}
	qp->comp.retrying = true;
	qp->comp.timeout_probe = false;
	/* Samples of what is resent now would carry the whole episode. */
	rtt_marks_clear(qp);
	qp->comp.retrying_psn = c->retry_psn;
	requester_rewind(qp, c->retry_psn);
	qp->comp.retx_deadline = RNIC_NO_DEADLINE;
	c->rerun = true;
	return COMP_EXIT;
}

/* A selective NAK (rnic_int.h): the peer executed everything before the
 * NAK's PSN, lacks that one, and holds the PSN its MSN field names.  The
 * scoreboard queues what to resend.  Not counted against retry_cnt: a
 * peer that NAKs is alive, and one that stops answering is found by the
 * retransmit timer, whose Go-Back-N counts (a packet that can never get
 * through ends there too, once nothing after it is left to provoke NAKs). */
static enum comp_state comp_selective(struct rnic_qp *qp, struct comp_ctx *c)
{
	ack_upto(qp, c, c->pkt->bth.psn);
	if (qp->req.rnr_until != RNIC_NO_DEADLINE)
		return COMP_EXIT;
	/* The NAK answers the packet that arrived past the hole: a sample
	 * of the path as it is now, queue included. */
	rtt_mark_answered(qp, c->pkt->aeth.msn, c->now);
	scoreboard_on_nak(qp, c->pkt->bth.psn, c->pkt->aeth.msn);
	c->rerun = scoreboard_pending(qp);
	/* The peer is receiving and says what it lacks: what the probe would
	 * find out is known.  Its timer starts over, so a resend that waits
	 * in a queue behind everything sent before it is not probed for;
	 * once the NAKs stop (nothing left in flight to provoke them), the
	 * probe finds a lost resend. */
	if (qp->comp.retx_deadline != RNIC_NO_DEADLINE && timeout_ns(qp))
		arm_retx(qp, c->now);
	return COMP_EXIT;
}

static enum comp_state comp_rnr(struct rnic_qp *qp, struct comp_ctx *c)
{
	uint32_t psn = c->pkt->bth.psn;
	uint8_t code = wire_aeth_value(&c->pkt->aeth);

	ack_upto(qp, c, psn);
	/* rnr_retry 7 means retry forever (IBTA 9.7.5.2.8). */
	if (qp->comp.rnr_left == 0) {
		c->error = IBV_WC_RNR_RETRY_EXC_ERR;
		return COMP_LOCAL_ERROR;
	}
	if (qp->comp.rnr_left != 7)
		qp->comp.rnr_left--;
	qp->r->ctr.rnr_retries++;
	requester_rnr_wait(qp, psn, c->now + (uint64_t)wire_rnr_timer_us(code) * 1000u);
	qp->comp.retx_deadline = RNIC_NO_DEADLINE;
	return COMP_EXIT;
}

static enum comp_state comp_nak_error(struct rnic_qp *qp, struct comp_ctx *c)
{
	/* Packets before the NAKed PSN were executed (IBTA 9.7.5.2.2-4); if
	 * the NAK names a later WQE the loop already retired the older ones. */
	ack_upto(qp, c, c->pkt->bth.psn);
	return COMP_LOCAL_ERROR;
}

static enum comp_state comp_local_error(struct rnic_qp *qp, struct comp_ctx *c)
{
	/* The failing WQE completes with the error, the rest are flushed
	 * (IBTA 10.8.3: the QP enters the Error state). */
	rnic_qp_complete_send(qp, sq_at(&qp->sq, qp->sq.comp), c->error);
	qp->sq.comp++;
	rnic_qp_to_error(qp);
	return COMP_EXIT;
}

static enum comp_state comp_drop(struct rnic_qp *qp, struct comp_ctx *c)
{
	(void)c;
	qp->r->ctr.rx_drop_ghost_response++;
	return COMP_EXIT;
}

typedef enum comp_state (*comp_fn)(struct rnic_qp *, struct comp_ctx *);

static const comp_fn comp_fns[COMP_NSTATES] = {
	[COMP_GET_WQE] = comp_get_wqe,
	[COMP_CHECK_PSN] = comp_check_psn,
	[COMP_CHECK_ACK] = comp_check_ack,
	[COMP_READ] = comp_read,
	[COMP_ATOMIC] = comp_atomic,
	[COMP_ACK] = comp_ack,
	[COMP_COMPLETE] = comp_complete,
	[COMP_RETRY] = comp_retry,
	[COMP_SELECTIVE] = comp_selective,
	[COMP_RNR] = comp_rnr,
	[COMP_NAK_ERROR] = comp_nak_error,
	[COMP_LOCAL_ERROR] = comp_local_error,
	[COMP_DROP] = comp_drop,
};

/* After a packet or timer: reload retry counters on progress, move the
 * requester forward if an ACK overtook a rewind, re-arm the timer, and let
 * the requester send what is now allowed. */
static void comp_finish(struct rnic_qp *qp, struct comp_ctx *c)
{
	if (qp->attr.qp_state == IBV_QPS_ERR || qp->attr.qp_state == IBV_QPS_RESET)
		return;
	if (c->progress && qp->comp.timeout_probe) {
		/* The answer to a timeout's probe (completer_timer). */
		qp->comp.timeout_probe = false;
		if (qp->comp.psn == wire_psn_add(qp->comp.timeout_probe_psn, 1) && outstanding(qp))
			requester_rewind(qp, qp->comp.psn);
	}
	if (c->progress) {
		/* The newest packet acknowledged, if it asked for the ACK. */
		rtt_mark_answered(qp, wire_psn_add(qp->comp.psn, WIRE_PSN_MASK), c->now);
		qp->comp.retrying = false;
		qp->comp.retry_left = qp->attr.retry_cnt;
		qp->comp.rnr_left = qp->attr.rnr_retry;
		qp->comp.retx_deadline = RNIC_NO_DEADLINE;
		qp->comp.probes = 0;
		if (wire_psn_diff(qp->comp.psn, qp->req.psn) > 0 ||
		    (int32_t)(qp->sq.req - qp->sq.comp) < 0)
			requester_rewind(qp, qp->comp.psn);
		if (outstanding(qp) && qp->req.rnr_until == RNIC_NO_DEADLINE && timeout_ns(qp))
			arm_retx(qp, c->now);
	}
	if (c->progress || c->rerun)
		requester_run(qp, c->now);
}

static void comp_run(struct rnic_qp *qp, struct comp_ctx *c, enum comp_state s)
{
	while (s != COMP_EXIT) {
		rnic_trace_step(qp, "comp", comp_state_names[s]);
		s = comp_fns[s](qp, c);
	}
	comp_finish(qp, c);
}

/* May pkt be matched while reads are put off for this QP's READ
 * responses (pull.c)?  Only the next READ response whose read will be
 * put off too: every other packet retires or resends WQEs, whose
 * completions must not pass those held, or reads the state the reads
 * decide. */
static bool joins_put_off_reads(struct rnic_qp *qp, const struct wire_ib *pkt)
{
	return outstanding(qp) && qp->sq.comp != qp->sq.head &&
	       read_put_off_mr(qp, pkt, sq_at(&qp->sq, qp->sq.comp)) != NULL;
}

void completer_receive(struct rnic_qp *qp, const struct wire_ib *pkt, uint64_t now)
{
	struct comp_ctx c = { .pkt = pkt, .now = now };

	if (qp->type != IBV_QPT_RC) {
		qp->r->ctr.rx_drop_ghost_response++;
		return;
	}
	/* Settled here, never half-way through a packet: a response that
	 * joins the reads put off finds room for its own (pull.c). */
	if ((qp->comp.pulls && !joins_put_off_reads(qp, pkt)) || qp->r->npulls == RNIC_PULL_BATCH)
		rnic_pulls_settle(qp->r);
	comp_run(qp, &c, COMP_GET_WQE);
}

void completer_pulls_settled(struct rnic_qp *qp)
{
	struct rnic_comp_state *s = &qp->comp;
	struct comp_ctx c = { .now = s->pull_now };

	s->pulls = 0;
	if (!s->pull_failed) {
		/* READs they held back (rd_atomic_outstanding) may go now;
		 * or the send queue is drained now (SQD). */
		if (qp->sq.req != qp->sq.head)
			requester_run(qp, s->pull_now);
		else
			rnic_qp_check_drained(qp);
		return;
	}
	s->pull_failed = false;
	/* As if that READ's response had been lost, and those after it had
	 * come past the hole: they are outstanding again, and asked again
	 * from the first (an implied NAK, IBTA 9.7.5.2.x, counted against
	 * retry_cnt as comp_check_psn's).  What congestion control counted
	 * as acknowledged stays counted: a message-path QP is host-local. */
	qp->sq.comp -= s->pull_dropped;
	s->psn = s->pull_rewind_psn;
	if (qp->attr.qp_state == IBV_QPS_ERR || qp->attr.qp_state == IBV_QPS_RESET) {
		/* Flushed already: these are flushed too (IBTA 10.8.3). */
		while (s->pull_dropped--) {
			rnic_qp_complete_send(qp, sq_at(&qp->sq, qp->sq.comp), IBV_WC_WR_FLUSH_ERR);
			qp->sq.comp++;
		}
		return;
	}
	c.retry_psn = s->psn;
	comp_run(qp, &c, COMP_RETRY);
}

void completer_on_sent(struct rnic_qp *qp, uint32_t psn, bool first, bool ackreq, uint64_t now)
{
	if (first && ackreq) {
		struct rnic_comp_state *s = &qp->comp;
		uint32_t i = s->rtt_next++ % RNIC_RTT_MARKS;
		s->rtt_mark[i].psn = psn;
		s->rtt_mark[i].sent = now;
		s->rtt_mark[i].valid = true;
	}
	if (qp->comp.retx_deadline == RNIC_NO_DEADLINE && timeout_ns(qp))
		arm_retx(qp, now);
}

/* A fast message waits the QP's whole local ACK timeout for its answer,
 * never selective repeat's shorter probe time (retx_wait_ns): a probe
 * answers a loss, and the ring loses nothing; a peer that waits for a CPU
 * must not use up the retries in microseconds. */
void completer_fast_sent(struct rnic_qp *qp, uint64_t now)
{
	if (!timeout_ns(qp)) {
		qp->comp.retx_deadline = RNIC_NO_DEADLINE;
		return;
	}
	qp->comp.retx_deadline = now + timeout_ns(qp);
	rnic_qp_timer_armed(qp, qp->comp.retx_deadline);
}

void completer_fast_answered(struct rnic_qp *qp)
{
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.retx_deadline = RNIC_NO_DEADLINE;
}

void completer_timer(struct rnic_qp *qp, uint64_t now)
{
	struct comp_ctx c = { .now = now };

	qp->comp.retx_deadline = RNIC_NO_DEADLINE;
	if (qp->fast.out && rnic_qp_can_send(qp)) {
		/* A fast message with no answer (fast.c): the port carries
		 * it without loss, so nothing is sent again; the peer is
		 * slow, stuck or gone, and after the retry budget the WQE
		 * fails as a request no ACK answered (IBTA 9.7.6.1.3). */
		qp->r->ctr.retransmit_timeouts++;
		if (!spend_retry(qp)) {
			qp->fast.out = false;
			c.error = IBV_WC_RETRY_EXC_ERR;
			comp_run(qp, &c, COMP_LOCAL_ERROR);
			return;
		}
		completer_fast_sent(qp, now);        /* wait again */
		return;
	}
	if (!rnic_qp_can_send(qp) || !outstanding(qp) || qp->req.rnr_until != RNIC_NO_DEADLINE)
		return;
	if (retx_wait_ns(qp) != timeout_ns(qp)) {
		/* The selective-repeat probe (probe_wait_ns). */
		qp->r->ctr.retransmit_probes++;
		qp->comp.probes++;
		scoreboard_probe(qp, qp->comp.psn);
		arm_retx(qp, now);
		requester_run(qp, now);
		return;
	}
	/* Local ACK timeout (IBTA 9.7.6.1.3), counted against retry_cnt.
	 * RoCE NICs resend everything from the oldest unacknowledged PSN
	 * (Go-Back-N).  With timeout_probe, as TCP's F-RTO (RFC 5682), the
	 * oldest packet goes alone first, asking for an ACK, and the send
	 * position stays; the answer decides (comp_finish): an ACK past the
	 * probed packet shows the timeout was only a slow peer, and sending
	 * goes on; an ACK of exactly the probed packet, with more sent after
	 * it, or a NAK, shows a loss: Go-Back-N from there.  A peer that is
	 * only slow — the kernel's rxe in an emulated guest ACKed a
	 * 512-packet window after 160 ms, more than twice perftest's 67 ms
	 * timeout — got the whole window again each time, 512 duplicates to
	 * answer one by one, which made it slower still until the retries
	 * ran out. */
	qp->r->ctr.retransmit_timeouts++;
	if (qp->r->cfg.timeout_probe) {
		if (!spend_retry(qp)) {
			c.error = IBV_WC_RETRY_EXC_ERR;
			comp_run(qp, &c, COMP_LOCAL_ERROR);
			return;
		}
		qp->comp.timeout_probe = true;
		qp->comp.timeout_probe_psn = qp->comp.psn;
		requester_resend_one(qp, qp->comp.psn);
		if (timeout_ns(qp))
			arm_retx(qp, now);
		requester_run(qp, now);
		return;
	}
	c.retry_psn = qp->comp.psn;
	comp_run(qp, &c, COMP_RETRY);
}

void completer_reset(struct rnic_qp *qp)
{
	qp->comp.retx_deadline = RNIC_NO_DEADLINE;
	qp->comp.retrying = false;
	qp->comp.probes = 0;
	rtt_marks_clear(qp);
	qp->comp.srtt = qp->comp.rttvar = 0;
	qp->comp.timeout_probe = false;
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.read_at_once = false;
}
