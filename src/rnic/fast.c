/*
 * fast.c — the host-local fast path (rnic.h, "the host-local fast path";
 * docs/architecture.md says which guarantee comes from where).
 *
 * Between two RC QPs whose port carries messages through shared memory,
 * reliably and in order (the runtime's ring), a small SEND or WRITE needs
 * none of the transport's machinery when nothing else is in flight: no
 * PSN to order it, no ACK to confirm it, no retransmission to repair it.
 * So it goes as one message, written by the port straight into the peer's
 * ring, and the peer's rnic executes it here in one step:
 *
 *   requester  rnic_fast_try: the send queue's next WQE, with nothing of
 *              its QP outstanding, goes by rnic_io.fast_send; the QP
 *              sends nothing else until the answer.
 *   responder  rnic_fast_receive: every rule a packet would meet is
 *              checked first (QP state and peer, no message of the QP
 *              half received, access, rkey and bounds, a receive WQE
 *              that holds the payload); if one fails, nothing is done
 *              and the verdict is REJECTED (OFF: not a QP of the fast
 *              path, and no message will be).  Else the payload is placed,
 *              the receive WQE completed, and the verdict is DONE.
 *   (port)     the answer goes back as one small entry in the sender's
 *              ring, riding like a plain ACK with what the receiving
 *              process sends next (runtime/send_path.c).
 *   completer  rnic_fast_answer: DONE completes the WQE; REJECTED hands
 *              it back to the requester, which sends it as packets, and
 *              the responder's own state machine then answers as the
 *              IBTA says (RNR NAK and retries, access and length errors,
 *              a QP in the wrong state) — the fast path never has to
 *              imitate an error.
 *
 * What keeps it correct: the message is executed once or not at all (a
 * REJECTED one left no trace but a partly written buffer, which the
 * packets' error leaves too), and it is never passed by another request of
 * its QP (it goes only when nothing is outstanding, and holds the
 * requester until answered), so ordering is the ring's.  A peer that never
 * answers costs the QP's retry budget and then IBV_WC_RETRY_EXC_ERR
 * (completer_timer), as a request no ACK answers.
 *
 * Trade-off: one message at a time per QP.  A stream sends its first
 * message fast and the rest as packets after it is answered (a round trip
 * later); a stream does not gain from the fast path anyway, whose point is
 * the cost of a message on its own (a ping-pong, a request and its reply).
 */
#include "rnic/rnic_int.h"

#include <string.h>

/* The send WQE's payload at most in this many pieces. */
#define FAST_PIECES 8u
/* After a rejection (a receive queue found empty, say) the next this many
 * messages that could go fast go as packets: a receiver that keeps
 * running dry would otherwise cost each message a fast try, its answer
 * and then the packets. */
#define FAST_SKIP 16u

static bool fast_opcode(unsigned op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE ||
	       op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static bool is_write(unsigned op)
{
	return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

/* Takes a receive WQE: SEND, SEND with immediate, WRITE with immediate. */
static bool takes_recv(unsigned op)
{
	return op != IBV_WR_RDMA_WRITE;
}

void rnic_qp_set_fast(struct rnic_qp *qp, bool on)
{
	if (!qp || qp->type != IBV_QPT_RC)
		return;
	if (on && !qp->fast.on) {
		qp->fast.seq = (uint32_t)rnic_random(qp->r);   /* no stale answer matches */
		qp->fast.skip = 0;
	}
	qp->fast.on = on;
}

/* Nothing of the QP is in flight or waiting: every WQE before the next
 * one answered, no packet unacknowledged, no RNR wait, no read put off. */
static bool requester_idle(const struct rnic_qp *qp)
{
	return qp->sq.comp == qp->sq.req && qp->sq.req != qp->sq.head && qp->req.psn == qp->comp.psn &&
	       qp->req.offset == 0 && qp->req.rnr_until == RNIC_NO_DEADLINE && !qp->req.resend_one &&
	       !qp->comp.pulls && !scoreboard_pending(qp);
}

/* The WQE's payload as pieces of region memory (or its inline copy);
 * false when it cannot go fast (a key the packets will report as a local
 * protection error, an on-demand region, too many pieces). */
static bool payload_pieces(struct rnic_qp *qp, const struct rnic_send_wqe *w, struct wire_piece *pc, unsigned *n)
{
	*n = 0;
	if (!w->length)
		return true;
	if (w->send_flags & IBV_SEND_INLINE) {
		pc[(*n)++] = (struct wire_piece){ w->inline_data, w->length };
		return true;
	}
	for (uint32_t i = 0; i < w->num_sge; i++) {
		const struct rnic_sge *s = &w->sge[i];
		struct rnic_mr *mr;

		if (!s->length)
			continue;
		mr = rnic_mr_check(qp->r, qp->pd, s->lkey, 0, s->addr, s->length);
		if (!mr || (mr->access & IBV_ACCESS_ON_DEMAND) || *n == FAST_PIECES)
			return false;
		pc[(*n)++] = (struct wire_piece){ rnic_mr_ptr(mr, s->addr), s->length };
	}
	return true;
}

void rnic_fast_try(struct rnic_qp *qp, uint64_t now)
{
	struct rnic *r = qp->r;
	struct wire_piece pc[FAST_PIECES];
	struct rnic_send_wqe *w;
	unsigned n;

	if (!qp->fast.on || qp->fast.out || !r->io.fast_send || qp->attr.qp_state != IBV_QPS_RTS ||
	    !requester_idle(qp))
		return;
	w = sq_at(&qp->sq, qp->sq.req);
	if (!fast_opcode(w->opcode) || w->status != IBV_WC_SUCCESS || w->too_long || w->length > RNIC_FAST_MAX ||
	    !payload_pieces(qp, w, pc, &n)) {
		r->ctr.fast_not_taken++;
		return;
	}
	if (qp->fast.skip) {
		qp->fast.skip--;
		r->ctr.fast_not_taken++;
		return;
	}
	struct rnic_fast_msg m = {
		.dqpn = qp->attr.dest_qp_num,
		.sqpn = qp->qpn,
		.seq = qp->fast.seq + 1,
		.opcode = (uint8_t)w->opcode,
		.se = (w->send_flags & IBV_SEND_SOLICITED) != 0,
		.imm = w->imm,
		.rkey = w->rkey,
		.va = w->remote_addr,
		.len = w->length,
	};
	if (r->io.fast_send(r->io.ctx, &qp->dgid, &m, pc, n)) {
		r->ctr.fast_not_taken++;
		return;
	}
	qp->fast.seq++;
	qp->fast.out = true;
	qp->sq.req++;
	r->ctr.fast_tx++;
	qp->stats.tx_packets++;
	qp->stats.tx_bytes += w->length;
	completer_fast_sent(qp, now);
}

/* The receive WQE a message would take: the QP's own queue's oldest, or
 * its SRQ's; NULL when there is none (the packets meet an RNR NAK). */
static const struct rnic_recv_wqe *next_recv(const struct rnic_qp *qp)
{
	const struct rnic_rq *rq = qp->srq ? &qp->srq->rq : &qp->rq;

	return rq->tail == rq->head ? NULL : &rq->wqe[rq->tail % rq->cap];
}

/* Every rule the packets would meet, before anything is done: 0, or
 * the verdict of a message that cannot be done here. */
static enum rnic_fast_verdict check(struct rnic_qp *qp, const struct rnic_fast_msg *m, const struct rnic_gid *src,
				    struct rnic_mr **mr)
{
	struct rnic *r = qp->r;

	*mr = NULL;
	if (qp->type != IBV_QPT_RC || !qp->fast.on)
		return RNIC_FAST_OFF;
	if (!rnic_qp_can_receive(qp) || qp->attr.dest_qp_num != m->sqpn ||
	    memcmp(src->raw, qp->dgid.raw, sizeof(src->raw)) != 0)
		return RNIC_FAST_REJECTED;
	/* A message of the QP half received, NAKed, out of order or with
	 * its read put off: the packets' state machine is in charge. */
	if (qp->resp.seq != RESP_SEQ_NONE || qp->resp.have_wqe || qp->resp.pulls || qp->resp.nak_sent ||
	    !reorder_empty(qp))
		return RNIC_FAST_REJECTED;
	if (is_write(m->opcode)) {
		if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE))
			return RNIC_FAST_REJECTED;
		if (m->len) {
			*mr = rnic_mr_check(r, qp->pd, m->rkey, IBV_ACCESS_REMOTE_WRITE, m->va, m->len);
			/* A window or an on-demand region: the packets' rules. */
			if (!*mr || (*mr)->window || ((*mr)->access & IBV_ACCESS_ON_DEMAND))
				return RNIC_FAST_REJECTED;
		}
	}
	if (takes_recv(m->opcode)) {
		const struct rnic_recv_wqe *rw = next_recv(qp);

		if (!rw || (!is_write(m->opcode) && rw->length < m->len))
			return RNIC_FAST_REJECTED;
	}
	return 0;
}

enum rnic_fast_verdict rnic_fast_receive(struct rnic *r, const struct rnic_fast_msg *m, const uint8_t *payload,
					 const struct rnic_gid *src, uint64_t now)
{
	struct rnic_qp *qp;
	struct rnic_mr *mr;

	(void)now;
	if (!fast_opcode(m->opcode) || m->len > RNIC_FAST_MAX) {
		r->ctr.rx_drop_malformed++;
		return 0;
	}
	r->ctr.fast_rx++;
	qp = rnic_qp_lookup(r, m->dqpn);
	enum rnic_fast_verdict no = qp ? check(qp, m, src, &mr) : RNIC_FAST_OFF;
	if (no) {
		r->ctr.fast_rejected++;
		return no;
	}
	if (mr && !rnic_mem_copy(r, rnic_mr_ptr(mr, m->va), payload, m->len)) {
		r->ctr.fast_rejected++;
		return RNIC_FAST_REJECTED;
	}
	if (takes_recv(m->opcode)) {
		const struct rnic_recv_wqe *rw = next_recv(qp);
		/* A receive WQE of an SRQ is checked against the SRQ's PD
		 * (IBTA 10.2.9). */
		struct rnic_pd *pd = qp->srq ? qp->srq->pd : qp->pd;
		uint64_t wr_id = rw->wr_id;
		struct ibv_wc wc;

		/* Filled where it lies, and taken only then: a failure leaves
		 * the WQE for the packets, which report the error. */
		if (!is_write(m->opcode) &&
		    rnic_scatter_pd(r, pd, rw->sge, rw->num_sge, 0, payload, m->len) != IBV_WC_SUCCESS) {
			r->ctr.fast_rejected++;
			return RNIC_FAST_REJECTED;
		}
		if (qp->srq) {
			struct rnic_recv_wqe taken;

			(void)rnic_srq_take(qp, &taken);        /* the SRQ's limit event, if due */
		} else {
			qp->rq.tail++;
		}
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr_id;
		wc.status = IBV_WC_SUCCESS;
		wc.qp_num = qp->qpn;
		wc.src_qp = qp->attr.dest_qp_num;
		wc.opcode = is_write(m->opcode) ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
		wc.byte_len = m->len;
		if (m->opcode != IBV_WR_SEND) {
			wc.wc_flags |= IBV_WC_WITH_IMM;
			wc.imm_data = m->imm;
		}
		rnic_cq_push(qp->recv_cq, &wc, m->se && m->opcode != IBV_WR_RDMA_WRITE);
	}
	qp->stats.rx_packets++;
	qp->stats.rx_bytes += m->len;
	return RNIC_FAST_DONE;
}

void rnic_fast_answer(struct rnic *r, uint32_t qpn, uint32_t src_qpn, const struct rnic_gid *src, uint32_t seq,
		      enum rnic_fast_verdict v, uint64_t now)
{
	struct rnic_qp *qp = rnic_qp_lookup(r, qpn);

	if (!qp || !qp->fast.out || seq != qp->fast.seq || qp->attr.dest_qp_num != src_qpn ||
	    memcmp(src->raw, qp->dgid.raw, sizeof(src->raw)) != 0 || !rnic_qp_can_send(qp) ||
	    v < RNIC_FAST_DONE || v > RNIC_FAST_OFF) {
		r->ctr.rx_drop_ghost_response++;
		return;
	}
	qp->fast.out = false;
	completer_fast_answered(qp);
	if (v == RNIC_FAST_DONE) {
		rnic_qp_complete_send(qp, sq_at(&qp->sq, qp->sq.comp), IBV_WC_SUCCESS);
		qp->sq.comp++;
		if (qp->sq.comp == qp->sq.head)
			rnic_qp_check_drained(qp);
	} else {
		/* Done nothing: as packets now, from its first byte; and
		 * the next few, or all of that kind, as packets too. */
		qp->sq.req = qp->sq.comp;
		if (v == RNIC_FAST_OFF)
			qp->fast.on = false;
		else
			qp->fast.skip = FAST_SKIP;
	}
	requester_run(qp, now);
}
