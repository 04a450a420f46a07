/*
 * requester.c — the requester: turns send WQEs into request packets
 * (IBTA 9.7.2 / 9.7.3).
 *
 * A state machine in the style of rxe's req.c: each state is one small
 * function that returns the next state; requester_run() loops until a
 * state returns REQ_EXIT.  One pass emits at most one packet; the loop
 * sends until the SQ is empty or something holds it back (send window,
 * the pacer, fence, max_rd_atomic, RNR wait, QP state).
 *
 * PSNs: each WQE gets first_psn/last_psn when first sent (SEND/WRITE: one
 * PSN per packet; READ: one PSN per expected response packet; ATOMIC:
 * one).  Go-Back-N (requester_rewind) moves the send position back to an
 * older PSN and resends from there; WQE PSN ranges never change, so a
 * resent packet carries exactly the PSN it had the first time.
 *
 * Selective repeat (rnic_int.h): the completer queues the PSNs a peer
 * lacks on the scoreboard (selective.c); REQ_RESEND sends those first, one
 * packet each, from their WQEs, without moving the send position.
 *
 * Hand-offs are explicit: completer_on_sent() tells the completer a packet
 * left (it arms the retransmit timer); the completer calls
 * requester_rewind(), requester_rnr_wait() and requester_run().
 */
#include "rnic/rnic_int.h"

enum req_state {
	REQ_GET_WQE,            /* pick the WQE at the send position        */
	REQ_CHECK_WAIT,         /* RNR wait, send window, pacer             */
	REQ_CHECK_FENCE,        /* fence, max_rd_atomic (new WQEs only)     */
	REQ_CHECK_LOCAL,        /* local keys and lengths, assign PSNs      */
	REQ_BUILD_SEND,         /* build and transmit one packet            */
	REQ_LOCAL_ERROR,        /* the WQE failed locally                   */
	REQ_LOCAL_OP,           /* bind a window / local invalidate (mw.c)  */
	REQ_RESEND,             /* selective repeat: one PSN the peer lacks */
	REQ_EXIT,
	REQ_NSTATES
};

static const char *const req_state_names[REQ_NSTATES] = {
	[REQ_GET_WQE] = "GET_WQE",
	[REQ_CHECK_WAIT] = "CHECK_WAIT",
	[REQ_CHECK_FENCE] = "CHECK_FENCE",
	[REQ_CHECK_LOCAL] = "CHECK_LOCAL",
	[REQ_BUILD_SEND] = "BUILD_SEND",
	[REQ_LOCAL_ERROR] = "LOCAL_ERROR",
	[REQ_LOCAL_OP] = "LOCAL_OP",
	[REQ_RESEND] = "RESEND",
	[REQ_EXIT] = "EXIT",
};

const char *requester_state_name(int state)
{
	return state >= 0 && state < REQ_NSTATES ? req_state_names[state] : "?";
}

struct req_ctx {
	uint64_t now;
	struct rnic_send_wqe *wqe;
	enum ibv_wc_status error;
};

/* The operations the responder answers with a response of their own and
 * counts against its READ/ATOMIC resources (IBTA 9.5): FLUSH is one of
 * them, a zero-length READ in all but its effect. */
static bool is_read_or_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == RNIC_WR_FLUSH;
}

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static uint32_t packets_for(const struct rnic_qp *qp, const struct rnic_send_wqe *w)
{
	if (is_atomic(w->opcode) || w->length == 0)
		return 1;
	return (w->length + wqe_mtu(qp, w) - 1) / wqe_mtu(qp, w);
}

/* READs and ATOMICs sent and not yet completed (IBTA 9.5 initiator
 * depth).  A scan of the outstanding part of the SQ: it is at most the
 * send window long, and this keeps no counter to drift on rewinds.
 * READs retired whose response's read is put off count too (pull.c):
 * one that fails is asked again, and the responder answers a repeated
 * READ only from the resources it keeps for max_rd_atomic of them. */
static uint32_t rd_atomic_outstanding(struct rnic_qp *qp)
{
	uint32_t n = qp->comp.pulls;

	for (uint32_t i = qp->sq.comp; i != qp->sq.req; i++)
		if (is_read_or_atomic(sq_at(&qp->sq, i)->opcode))
			n++;
	return n;
}

/* ---- states ------------------------------------------------------------- */

static enum req_state req_get_wqe(struct rnic_qp *qp, struct req_ctx *c)
{
	if (qp->attr.qp_state != IBV_QPS_RTS && qp->attr.qp_state != IBV_QPS_SQD)
		return REQ_EXIT;
	/* What the peer lacks goes before anything new. */
	if (scoreboard_pending(qp) || qp->req.resend_one)
		return REQ_RESEND;
	/* A fast message goes first, alone: what was posted after it waits
	 * for its answer (fast.c), which may send it again as packets. */
	if (qp->sq.req == qp->sq.head || qp->fast.out)
		return REQ_EXIT;
	/* SQD: finish the message in progress, start no new one. */
	if (qp->attr.qp_state == IBV_QPS_SQD && qp->req.offset == 0)
		return REQ_EXIT;
	c->wqe = sq_at(&qp->sq, qp->sq.req);
	if (c->wqe->status != IBV_WC_SUCCESS) {
		c->error = c->wqe->status;
		return REQ_LOCAL_ERROR;
	}
	if (c->wqe->opcode == IBV_WR_BIND_MW || c->wqe->opcode == IBV_WR_LOCAL_INV)
		return REQ_LOCAL_OP;
	return REQ_CHECK_WAIT;
}

static enum req_state req_check_wait(struct rnic_qp *qp, struct req_ctx *c)
{
	if (qp->req.rnr_until != RNIC_NO_DEADLINE)
		return REQ_EXIT;
	if ((uint32_t)wire_psn_diff(qp->req.psn, qp->comp.psn) >= rnic_send_window(qp->r))
		return REQ_EXIT;

	/* The congestion window (DCTCP, TIMELY: ACKs reopen it, and the
	 * completer runs us then) and the pacer (the algorithm's rate, the
	 * application's rate limit: cc_advance runs us again at its time). */
	if (!cc_window_open(qp, (uint32_t)wire_psn_diff(qp->req.psn, qp->comp.psn)) || !cc_may_send(qp, c->now))
		return REQ_EXIT;
	/* A WQE (re)started from its first PSN, or a READ resumed mid-way,
	 * must pass the fence and rd_atomic checks again. */
	if (qp->req.offset == 0 || c->wqe->opcode == IBV_WR_RDMA_READ)
		return REQ_CHECK_FENCE;
	return REQ_BUILD_SEND;
}

static enum req_state req_check_fence(struct rnic_qp *qp, struct req_ctx *c)
{
	struct rnic_send_wqe *w = c->wqe;
	uint32_t outstanding = rd_atomic_outstanding(qp);

	/* IBV_SEND_FENCE: wait for all prior READs and ATOMICs (IBTA 10.8.3.3). */
	if ((w->send_flags & IBV_SEND_FENCE) && outstanding)
		return REQ_EXIT;
	if (is_read_or_atomic(w->opcode)) {
		if (qp->attr.max_rd_atomic == 0) {
			c->error = IBV_WC_LOC_QP_OP_ERR;
			return REQ_LOCAL_ERROR;
		}
		if (outstanding >= qp->attr.max_rd_atomic)
			return REQ_EXIT;
	}
	return qp->req.offset == 0 ? REQ_CHECK_LOCAL : REQ_BUILD_SEND;
}

static void uc_sent(struct rnic_qp *qp, struct rnic_send_wqe *w, bool done);

static enum req_state req_check_local(struct rnic_qp *qp, struct req_ctx *c)
{
	struct rnic_send_wqe *w = c->wqe;
	/* READ and ATOMIC write into local memory; SEND/WRITE only read it. */
	int access = is_read_or_atomic(w->opcode) ? IBV_ACCESS_LOCAL_WRITE : 0;

	if (w->too_long) {
		c->error = IBV_WC_LOC_LEN_ERR;
		return REQ_LOCAL_ERROR;
	}
	/* A UD message is one packet (IBTA 9.8.1).  C10-93.1.1: when it is
	 * longer than the port's MTU the CI emits no packet for it and
	 * reports no error: the send completes successfully, nothing is
	 * delivered and the QP stays in RTS (rxe fakes the same success). */
	if (qp->type == IBV_QPT_UD && w->length > qp->mtu) {
		qp->r->ctr.tx_drop_ud_over_mtu++;
		qp->sq.req++;
		uc_sent(qp, w, true);
		return REQ_GET_WQE;
	}
	/* ATOMIC WRITE carries exactly 8 bytes, like the other atomics. */
	if ((is_atomic(w->opcode) || w->opcode == IBV_WR_ATOMIC_WRITE) && w->length != 8) {
		c->error = IBV_WC_LOC_LEN_ERR;
		return REQ_LOCAL_ERROR;
	}
	for (uint32_t i = 0; i < w->num_sge; i++) {
		if (!w->sge[i].length)
			continue;
		if (!rnic_mr_check(qp->r, qp->pd, w->sge[i].lkey, access, w->sge[i].addr, w->sge[i].length)) {
			c->error = IBV_WC_LOC_PROT_ERR;
			return REQ_LOCAL_ERROR;
		}
	}
	w->first_psn = qp->req.psn;
	w->last_psn = wire_psn_add(qp->req.psn, packets_for(qp, w) - 1);
	w->psn_valid = true;
	return REQ_BUILD_SEND;
}

/* Where an inline WQE's payload lies: ATOMIC WRITE keeps its 8 bytes in
 * compare_add (post.c), every other opcode in inline_data. */
static const uint8_t *inline_payload(const struct rnic_send_wqe *w)
{
	return w->opcode == IBV_WR_ATOMIC_WRITE ? (const uint8_t *)&w->compare_add : w->inline_data;
}

/* The `len` payload bytes at message offset `off` as pieces where they
 * lie (the inline copy, or parts of SGEs whose lkeys hold), into out[]
 * (room for cfg.max_sge + 1), *n of them.  false: an SGE's key went
 * away, or the SGEs end first. */
static bool sge_pieces(struct rnic_qp *qp, const struct rnic_send_wqe *w, uint32_t off, uint32_t len,
		       struct wire_piece *out, unsigned *n)
{
	*n = 0;
	if (w->send_flags & IBV_SEND_INLINE) {
		out[(*n)++] = (struct wire_piece){ inline_payload(w) + off, len };
		return true;
	}
	for (uint32_t i = 0; i < w->num_sge && len; i++) {
		const struct rnic_sge *s = &w->sge[i];
		struct rnic_mr *mr;
		uint32_t k;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		k = s->length - off < len ? s->length - off : len;
		mr = rnic_mr_check(qp->r, qp->pd, s->lkey, 0, s->addr + off, k);
		if (!mr)
			return false;
		out[(*n)++] = (struct wire_piece){ rnic_mr_ptr(mr, s->addr + off), k };
		len -= k;
		off = 0;
	}
	return len == 0;
}

/* Copy `len` payload bytes at message offset `off` straight from the
 * source MRs (or the inline copy) into the packet.  The pieces are
 * listed in r->tx_vec, scratch here: r->tx_nvec stays as it was.  false
 * also when a page of an SGE faulted (rnic_mem_copy). */
static bool gather(struct rnic_qp *qp, const struct rnic_send_wqe *w, uint32_t off, uint8_t *dst, uint32_t len)
{
	unsigned n;

	if (!sge_pieces(qp, w, off, len, qp->r->tx_vec, &n))
		return false;
	for (unsigned i = 0; i < n; i++) {
		if (!rnic_mem_copy(qp->r, dst, qp->r->tx_vec[i].p, qp->r->tx_vec[i].len))
			return false;
		dst += qp->r->tx_vec[i].len;
	}
	return true;
}

/* Payload pieces the port reads after the rnic returns (by reference,
 * or by the receiver on the message path): their pages must be there
 * now (rnic_io.mem_probe).  The inline copy is the rnic's own. */
static bool pieces_readable(struct rnic *r, const struct rnic_send_wqe *w, const struct wire_piece *pc, unsigned n)
{
	if (w->send_flags & IBV_SEND_INLINE)
		return true;
	for (unsigned i = 0; i < n; i++)
		if (!rnic_mem_probe(r, pc[i].p, pc[i].len, false))
			return false;
	return true;
}

/* For a port that sends payloads by reference (rnic_tx.payload): where
 * the `len` payload bytes at message offset `off` lie when they are one
 * piece (the inline copy, or inside one SGE) in *piece; NULL when they
 * span SGEs (gather then copies them).  false: an SGE's key went away. */
static bool payload_piece(struct rnic_qp *qp, const struct rnic_send_wqe *w, uint32_t off, uint32_t len,
			  const uint8_t **piece)
{
	*piece = NULL;
	if (w->send_flags & IBV_SEND_INLINE) {
		*piece = inline_payload(w) + off;
		return true;
	}
	for (uint32_t i = 0; i < w->num_sge; i++) {
		const struct rnic_sge *s = &w->sge[i];
		struct rnic_mr *mr;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		if (s->length - off < len)
			return true;
		mr = rnic_mr_check(qp->r, qp->pd, s->lkey, 0, s->addr + off, len);
		if (!mr)
			return false;
		*piece = rnic_mr_ptr(mr, s->addr + off);
		return true;
	}
	return true;
}

/* Opcode for the packet at the current position (IBTA 9.8.3 table 39). */
static uint8_t choose_opcode(const struct rnic_send_wqe *w, bool first, bool last)
{
	if (w->opcode == RNIC_WR_FLUSH)
		return WIRE_OP_FLUSH;           /* one packet, no payload */
	switch (w->opcode) {
	case IBV_WR_SEND:
		return first && last ? WIRE_OP_SEND_ONLY : first ? WIRE_OP_SEND_FIRST :
		       last ? WIRE_OP_SEND_LAST : WIRE_OP_SEND_MIDDLE;
	case IBV_WR_SEND_WITH_IMM:
		return first && last ? WIRE_OP_SEND_ONLY_IMM : first ? WIRE_OP_SEND_FIRST :
		       last ? WIRE_OP_SEND_LAST_IMM : WIRE_OP_SEND_MIDDLE;
	case IBV_WR_SEND_WITH_INV:
		return first && last ? WIRE_OP_SEND_ONLY_INV : first ? WIRE_OP_SEND_FIRST :
		       last ? WIRE_OP_SEND_LAST_INV : WIRE_OP_SEND_MIDDLE;
	case IBV_WR_RDMA_WRITE:
		return first && last ? WIRE_OP_WRITE_ONLY : first ? WIRE_OP_WRITE_FIRST :
		       last ? WIRE_OP_WRITE_LAST : WIRE_OP_WRITE_MIDDLE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return first && last ? WIRE_OP_WRITE_ONLY_IMM : first ? WIRE_OP_WRITE_FIRST :
		       last ? WIRE_OP_WRITE_LAST_IMM : WIRE_OP_WRITE_MIDDLE;
	case IBV_WR_RDMA_READ:
		return WIRE_OP_READ_REQUEST;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return WIRE_OP_CMP_SWAP;
	case IBV_WR_ATOMIC_WRITE:
		return WIRE_OP_ATOMIC_WRITE;    /* one packet: 8 bytes < any MTU */
	default:
		return WIRE_OP_FETCH_ADD;
	}
}

static uint8_t transport_prefix(const struct rnic_qp *qp)
{
	return qp->type == IBV_QPT_UC ? WIRE_TR_UC : qp->type == IBV_QPT_UD ? WIRE_TR_UD : WIRE_TR_RC;
}

/* Build the packet of WQE `w` with PSN `psn` at message offset `off` (the
 * send position, or a PSN a selective NAK names: `resend`) into *out (the
 * port's buffer when it offers one: the payload is copied once, from the
 * MR straight into the batch that goes to the socket).  Returns the
 * encoded length, 0 for a local protection failure (an SGE's key went
 * away, or a page of it faulted). */
static size_t build_packet(struct rnic_qp *qp, const struct rnic_send_wqe *w, uint32_t psn, uint32_t off,
			   bool resend, uint32_t *psns_used, uint32_t *bytes, uint8_t **out, const uint8_t **ref)
{
	struct rnic *r = qp->r;
	/* UD packets leave through ud_xmit, which sends r->tx. */
	uint8_t *buf = qp->type == IBV_QPT_UD ? r->tx : rnic_tx_buffer(r);
	uint32_t remaining = w->length - off;
	uint32_t payload = 0;
	bool first = off == 0, last;
	struct wire_ib ib;
	int n;

	memset(&ib, 0, sizeof(ib));
	*psns_used = 1;
	if (w->opcode == RNIC_WR_FLUSH) {
		/* post.c keeps the length in compare_add, placement and
		 * selectivity in swap. */
		ib.feth.placement = (uint8_t)(w->swap & 0xff);
		ib.feth.selectivity = (uint8_t)((w->swap >> 8) & 0xff);
		ib.reth.va = w->remote_addr;
		ib.reth.rkey = w->rkey;
		ib.reth.dma_len = (uint32_t)w->compare_add;
		last = true;
	} else if (w->opcode == IBV_WR_RDMA_READ) {
		ib.reth.va = w->remote_addr + off;
		ib.reth.rkey = w->rkey;
		ib.reth.dma_len = remaining;
		*psns_used = (uint32_t)wire_psn_diff(w->last_psn, psn) + 1;
		last = true;
	} else if (is_atomic(w->opcode)) {
		ib.atmeth.va = w->remote_addr;
		ib.atmeth.rkey = w->rkey;
		if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			ib.atmeth.compare = w->compare_add;
			ib.atmeth.swap_add = w->swap;
		} else {
			ib.atmeth.swap_add = w->compare_add;
		}
		last = true;
	} else {
		payload = remaining < wqe_mtu(qp, w) ? remaining : wqe_mtu(qp, w);
		last = remaining <= wqe_mtu(qp, w);
		ib.reth.va = w->remote_addr;
		ib.reth.rkey = w->rkey;
		ib.reth.dma_len = w->length;
		ib.imm = w->imm;
		ib.ieth = w->invalidate_rkey;
	}
	ib.bth.opcode = transport_prefix(qp) | choose_opcode(w, first, last);
	ib.bth.se = last && (w->send_flags & IBV_SEND_SOLICITED) &&
		    (w->opcode == IBV_WR_SEND || w->opcode == IBV_WR_SEND_WITH_IMM ||
		     w->opcode == IBV_WR_SEND_WITH_INV || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM);
	ib.bth.pkey = RNIC_DEFAULT_PKEY;
	ib.bth.dqpn = qp->attr.dest_qp_num;
	ib.bth.psn = psn;
	ib.bth.selective = requester_selective(qp);
	ib.bth.msg = wqe_mtu(qp, w) == RNIC_MSG_MTU;
	if (qp->type == IBV_QPT_UD)
		ud_fill_deth(qp, w, &ib);       /* DestQP and DETH from the WR */
	/* Ask for an ACK at the end of each message and periodically in long
	 * ones (IBTA 9.7.2: the requester decides; responses answer READ and
	 * ATOMIC anyway). */
	ib.bth.ackreq = qp->type == IBV_QPT_RC && !is_read_or_atomic(w->opcode) &&
			(last || resend || qp->req.since_ackreq + 1 >= RNIC_ACKREQ_EVERY ||
			 /* the window is full after this one: ask now rather
			  * than wait for the responder's delayed ACK */
			 (uint32_t)wire_psn_diff(qp->req.psn, qp->comp.psn) + 1 >= rnic_send_window(r) ||
			 /* ... or congestion control needs it (cc.c) */
			 cc_wants_ackreq(qp, (uint32_t)wire_psn_diff(qp->req.psn, qp->comp.psn) + 1));
	/* More than a path MTU: the message path's one packet, its payload
	 * left where it lies for the receiver to read (rnic_tx.payload_vec). */
	bool by_vec = payload > RNIC_PKT_MAX_PAYLOAD;
	ib.payload = NULL;
	ib.payload_len = by_vec ? 0 : payload;
	n = wire_encode_ib(&ib, buf, WIRE_MAX_IB_PACKET);
	if (n < 0)
		return 0;
	/* Zero copy when the port allows it: the payload goes from the MR
	 * (or the inline copy) straight to the socket (rnic_tx.payload). */
	*ref = NULL;
	r->tx_nvec = 0;
	if (by_vec && !sge_pieces(qp, w, off, payload, r->tx_vec, &r->tx_nvec))
		return 0;
	if (!by_vec && payload && r->io.tx_payload_ref && qp->type != IBV_QPT_UD &&
	    !payload_piece(qp, w, off, payload, ref))
		return 0;
	/* A page of the source gone since the post (unmapped, protected):
	 * a local protection error, as a bad lkey (IBTA 10.6.3.3). */
	if (by_vec && !pieces_readable(r, w, r->tx_vec, r->tx_nvec)) {
		r->tx_nvec = 0;
		return 0;
	}
	if (*ref && !pieces_readable(r, w, &(struct wire_piece){ *ref, payload }, 1))
		return 0;
	if (payload && !by_vec && !*ref && !gather(qp, w, off, buf + wire_payload_offset(ib.bth.opcode), payload))
		return 0;
	*out = buf;
	if (!resend)
		qp->req.since_ackreq = ib.bth.ackreq ? 0 : qp->req.since_ackreq + 1;
	*bytes = payload;
	return (size_t)n;
}

/* UC has no ACKs: every packet counts as acknowledged once sent, and a
 * message completes when its last packet left (IBTA 9.8.2). */
static void uc_sent(struct rnic_qp *qp, struct rnic_send_wqe *w, bool done)
{
	qp->comp.psn = qp->req.psn;
	if (done) {
		rnic_qp_complete_send(qp, w, IBV_WC_SUCCESS);
		qp->sq.comp++;
	}
}

/* Hand a built RC/UC request to the port: the payload by reference when
 * build_packet left it in the MR (`ref`), else the packet as built. */
static void xmit_request(struct rnic_qp *qp, uint8_t *buf, size_t len, const uint8_t *ref, uint32_t bytes)
{
	/* Alone (rnic_tx.alone): every PSN before this one acknowledged,
	 * this work request the last posted, and the same when the QP's
	 * previous request left.  The previous one is what tells a QP that
	 * runs one message at a time from a stream: a program that posts
	 * one WR per call and lets its window drain (perftest's bandwidth
	 * loops, 128 at a time) also finds the queue empty and everything
	 * acknowledged at the first WR of each round, but not at the last
	 * of the round before.  Measured: with that first WR's 64 KiB in the
	 * ring (1 in 128), ib_send_bw lost 10-20%.  A hint only: the
	 * packet is the same either way. */
	bool now_alone = qp->req.psn == qp->comp.psn && qp->sq.head - qp->sq.req == 1;
	bool alone = now_alone && qp->req.last_alone;

	qp->req.last_alone = now_alone;
	if (qp->r->tx_nvec)
		rnic_xmit_vec(qp->r, qp, buf, len, (size_t)wire_payload_offset(buf[0]), qp->r->tx_vec, qp->r->tx_nvec,
			      bytes, alone);
	else if (ref)
		rnic_xmit_ref(qp->r, qp, buf, len, (size_t)wire_payload_offset(buf[0]), ref, bytes);
	else
		rnic_xmit_buf_alone(qp->r, qp, buf, len, alone);
}

static enum req_state req_build_send(struct rnic_qp *qp, struct req_ctx *c)
{
	struct rnic_send_wqe *w = c->wqe;
	uint32_t psns, bytes = 0, psn = qp->req.psn;
	uint8_t *buf = NULL;
	const uint8_t *ref = NULL;
	size_t len = build_packet(qp, w, psn, qp->req.offset, false, &psns, &bytes, &buf, &ref);
	bool done;

	if (!len) {
		c->error = IBV_WC_LOC_PROT_ERR;
		return REQ_LOCAL_ERROR;
	}
	bool first = wire_psn_diff(psn, qp->req.psn_high) >= 0;
	if (!first) {
		qp->r->ctr.retransmits++;
		qp->stats.retransmits++;
	}
	if (qp->type == IBV_QPT_UD)
		ud_xmit(qp, w, len);    /* each UD WQE has its own destination */
	else
		xmit_request(qp, buf, len, ref, bytes);
	cc_on_sent(qp, len + (qp->r->tx_nvec ? bytes : 0), c->now);

	qp->req.psn = wire_psn_add(qp->req.psn, psns);
	if (wire_psn_diff(qp->req.psn, qp->req.psn_high) > 0)
		qp->req.psn_high = qp->req.psn;
	done = w->opcode == IBV_WR_RDMA_READ || is_atomic(w->opcode) || qp->req.offset + bytes >= w->length;
	qp->req.offset = done ? 0 : qp->req.offset + bytes;
	if (done)
		qp->sq.req++;
	if (qp->type != IBV_QPT_RC) {
		uc_sent(qp, w, done);   /* UD too: complete once sent (9.8.1) */
	} else {
		scoreboard_sent(qp, psn, false);
		/* buf[8] bit 7: the BTH's AckReq (IBTA 9.2) */
		completer_on_sent(qp, psn, first, (buf[8] & 0x80) != 0, c->now);
	}
	return REQ_GET_WQE;
}

/* A memory window operation (IBTA 10.6.7.2): no packet, done here.
 * Trade-off: it waits until every older WQE has completed, like a fenced
 * WR.  That keeps completions in order with no extra bookkeeping, and a
 * bind after an RDMA op may rely on it (rxe orders them the same way). */
static enum req_state req_local_op(struct rnic_qp *qp, struct req_ctx *c)
{
	struct rnic_send_wqe *w = c->wqe;
	enum ibv_wc_status st;

	if (qp->sq.comp != qp->sq.req)
		return REQ_EXIT;        /* the completer runs us again */
	if (w->opcode == IBV_WR_BIND_MW)
		st = rnic_mw_bind_wqe(qp, w);
	else
		st = rnic_mw_local_inv(qp, w->invalidate_rkey);
	if (st != IBV_WC_SUCCESS) {
		c->error = st;
		return REQ_LOCAL_ERROR;
	}
	qp->sq.req++;
	rnic_qp_complete_send(qp, w, IBV_WC_SUCCESS);
	qp->sq.comp++;
	return REQ_GET_WQE;
}

/* The SQ index of the WQE whose PSN range holds `psn`, among those sent,
 * or sq.head if none does. */
static uint32_t wqe_index_of_psn(struct rnic_qp *qp, uint32_t psn)
{
	for (uint32_t i = qp->sq.comp; i != qp->sq.head; i++) {
		struct rnic_send_wqe *w = sq_at(&qp->sq, i);

		if (!w->psn_valid || wire_psn_diff(psn, w->first_psn) < 0)
			break;
		if (wire_psn_diff(psn, w->last_psn) <= 0)
			return i;
	}
	return qp->sq.head;
}

/* Where packet `psn` of `w` starts in the message: SEND/WRITE packets and
 * READ response packets each carry one MTU; an ATOMIC is one packet. */
static uint32_t offset_of_psn(const struct rnic_qp *qp, const struct rnic_send_wqe *w, uint32_t psn)
{
	return is_atomic(w->opcode) ? 0 : (uint32_t)wire_psn_diff(psn, w->first_psn) * wqe_mtu(qp, w);
}

/* Selective repeat: resend the one packet `psn` the peer lacks, as it was
 * first sent (SEND/WRITE: one MTU per PSN; a READ asks again for the rest
 * of its responses from that PSN on), with AckReq so that the answer comes
 * at once.  The send position does not move. */
static enum req_state req_resend(struct rnic_qp *qp, struct req_ctx *c)
{
	struct rnic_send_wqe *w;
	uint32_t psn, psns, bytes = 0;
	uint8_t *buf = NULL;
	const uint8_t *ref = NULL;
	size_t len;

	if (qp->req.rnr_until != RNIC_NO_DEADLINE || !cc_may_send(qp, c->now))
		return REQ_EXIT;
	if (qp->req.resend_one) {
		qp->req.resend_one = false;
		psn = qp->req.resend_psn;
		/* Acknowledged meanwhile, or not sent any more. */
		if (wire_psn_diff(psn, qp->comp.psn) < 0 || wire_psn_diff(psn, qp->req.psn) >= 0)
			return REQ_GET_WQE;
	} else if (!scoreboard_next(qp, &psn)) {
		return REQ_GET_WQE;
	}
	uint32_t i = wqe_index_of_psn(qp, psn);
	if (i == qp->sq.head)
		return REQ_GET_WQE;
	w = sq_at(&qp->sq, i);
	if (w->status != IBV_WC_SUCCESS)
		return REQ_GET_WQE;
	/* An ATOMIC the peer lacks was never executed: sending it again is
	 * safe (and a duplicate would be answered from the saved result). */
	len = build_packet(qp, w, psn, offset_of_psn(qp, w, psn), true, &psns, &bytes, &buf, &ref);
	if (!len)
		return REQ_GET_WQE;     /* the key went away: the timer's Go-Back-N reports it */
	qp->r->ctr.retransmits++;
	qp->stats.retransmits++;
	xmit_request(qp, buf, len, ref, bytes);
	cc_on_sent(qp, len + (qp->r->tx_nvec ? bytes : 0), c->now);
	scoreboard_sent(qp, psn, true);
	completer_on_sent(qp, psn, false, false, c->now);
	return REQ_GET_WQE;
}

static enum req_state req_local_error(struct rnic_qp *qp, struct req_ctx *c)
{
	c->wqe->status = c->error;
	/* Report in order: only once every older WQE has completed.  Until
	 * then the requester stays parked on this WQE; the completer calls
	 * requester_run() after each retirement. */
	if (qp->sq.comp != qp->sq.req)
		return REQ_EXIT;
	if (qp->type == IBV_QPT_UD) {
		ud_send_error(qp, c->error);
		return REQ_EXIT;
	}
	rnic_qp_complete_send(qp, c->wqe, c->error);
	qp->sq.comp++;
	qp->sq.req = qp->sq.comp;
	rnic_qp_to_error(qp);
	return REQ_EXIT;
}

typedef enum req_state (*req_fn)(struct rnic_qp *, struct req_ctx *);

static const req_fn req_fns[REQ_NSTATES] = {
	[REQ_GET_WQE] = req_get_wqe,
	[REQ_CHECK_WAIT] = req_check_wait,
	[REQ_CHECK_FENCE] = req_check_fence,
	[REQ_CHECK_LOCAL] = req_check_local,
	[REQ_BUILD_SEND] = req_build_send,
	[REQ_LOCAL_ERROR] = req_local_error,
	[REQ_LOCAL_OP] = req_local_op,
	[REQ_RESEND] = req_resend,
};

void requester_run(struct rnic_qp *qp, uint64_t now)
{
	struct req_ctx c = { .now = now };
	enum req_state s = REQ_GET_WQE;

	while (s != REQ_EXIT) {
		rnic_trace_step(qp, "req", req_state_names[s]);
		s = req_fns[s](qp, &c);
	}
	rnic_qp_check_drained(qp);
}

/* ---- hand-offs from the completer --------------------------------------- */

void requester_rewind(struct rnic_qp *qp, uint32_t psn)
{
	/* Everything from `psn` on goes again: nothing to resend singly. */
	scoreboard_clear(qp);
	qp->req.resend_one = false;
	uint32_t at = wqe_index_of_psn(qp, psn);
	if (at != qp->sq.head) {
		/* Restart mid-message where the PSN says. */
		qp->sq.req = at;
		qp->req.psn = psn;
		qp->req.offset = offset_of_psn(qp, sq_at(&qp->sq, at), psn);
		qp->req.since_ackreq = 0;
		return;
	}
	/* `psn` is past every assigned WQE: resume with the first new one. */
	for (uint32_t i = qp->sq.comp;; i++) {
		if (i == qp->sq.head || !sq_at(&qp->sq, i)->psn_valid) {
			qp->sq.req = i;
			break;
		}
	}
	qp->req.psn = psn;
	qp->req.offset = 0;
	qp->req.since_ackreq = 0;
}

void requester_resend_one(struct rnic_qp *qp, uint32_t psn)
{
	qp->req.resend_one = true;
	qp->req.resend_psn = psn;
}

void requester_rnr_wait(struct rnic_qp *qp, uint32_t psn, uint64_t until)
{
	requester_rewind(qp, psn);
	qp->req.rnr_until = until;
	rnic_qp_timer_armed(qp, until);
}

void requester_timer(struct rnic_qp *qp, uint64_t now)
{
	qp->req.rnr_until = RNIC_NO_DEADLINE;
	requester_run(qp, now);
}

void requester_reset(struct rnic_qp *qp)
{
	scoreboard_clear(qp);
	qp->req.offset = 0;
	qp->req.since_ackreq = 0;
	qp->req.rnr_until = RNIC_NO_DEADLINE;
	/* A fast message's WQE was flushed (ERR) or dropped (RESET) with
	 * the rest; an answer to it finds nothing outstanding. */
	qp->fast.out = false;
}
