/*
 * responder.c — the responder: validates and executes incoming requests
 * (SEND, RDMA WRITE, RDMA READ, ATOMIC, ATOMIC WRITE, FLUSH) and answers
 * them with ACKs, NAKs, READ responses and ATOMIC ACKs (IBTA 9.7.4,
 * 9.7.5.1).
 *
 * State machine in the style of rxe's resp.c: a packet walks
 * CHECK_PSN -> CHECK_OP_SEQ -> CHECK_OP_VALID -> CHECK_RESOURCE ->
 * CHECK_LENGTH -> CHECK_RKEY -> EXECUTE -> ... and every check happens
 * before any byte is written to memory.  Errors branch to one state per
 * kind of NAK.
 *
 * Fatal request errors (invalid request, remote access, remote operation)
 * NAK the requester and move this QP to ERR (IBTA 9.9.3.1.2 / 10.8.3.2);
 * sequence errors NAK once per episode and RNR NAKs leave the QP as is.
 *
 * ACK coalescing: a request with AckReq is ACKed at once; otherwise every
 * RNIC_ACK_EVERY packets or when the delayed-ACK timer fires.  AETH credits
 * are always "invalid" (0x1f): softrnic does not do end-to-end credit flow
 * control, which IBTA allows a responder to signal this way (9.7.7.2), and
 * it is what rxe sends too.
 *
 * UC reuses the same states without ACKs, NAKs and duplicates: a gap or a
 * bad packet drops the message in progress (IBTA 9.8.2).
 *
 * Put-off reads (pull.c): a message-path WRITE Only is executed with its
 * payload's read put off to the end of the port's batch; the ACK that
 * falls due meanwhile waits, a NAK first settles the reads, and a read
 * that failed rewinds the QP to that WRITE (responder_pulls_settled).
 *
 * Selective repeat (rnic_int.h): from a requester that marks its packets,
 * a request past a hole is kept in the reorder buffer (selective.c) and
 * answered with a selective NAK; once the hole is filled, the kept packets
 * run through the same states in PSN order (reorder_drain).
 */
#include "rnic/rnic_int.h"

enum resp_state {
	RESP_CHECK_PSN,
	RESP_CHECK_OP_SEQ,
	RESP_CHECK_OP_VALID,
	RESP_CHECK_RESOURCE,
	RESP_CHECK_LENGTH,
	RESP_CHECK_RKEY,
	RESP_EXECUTE,
	RESP_READ_REPLY,
	RESP_ATOMIC_REPLY,
	RESP_PROCESS_FLUSH,
	RESP_COMPLETE,
	RESP_ACKNOWLEDGE,
	RESP_DUPLICATE,
	RESP_ERR_SEQ,
	RESP_ERR_RNR,
	RESP_ERR_INVALID,
	RESP_ERR_LENGTH,
	RESP_ERR_ACCESS,
	RESP_ERR_LOCAL,
	RESP_DROP_MESSAGE,      /* UC: abandon the message in progress */
	RESP_EXIT,
	RESP_NSTATES
};

static const char *const resp_state_names[RESP_NSTATES] = {
	[RESP_CHECK_PSN] = "CHECK_PSN",
	[RESP_CHECK_OP_SEQ] = "CHECK_OP_SEQ",
	[RESP_CHECK_OP_VALID] = "CHECK_OP_VALID",
	[RESP_CHECK_RESOURCE] = "CHECK_RESOURCE",
	[RESP_CHECK_LENGTH] = "CHECK_LENGTH",
	[RESP_CHECK_RKEY] = "CHECK_RKEY",
	[RESP_EXECUTE] = "EXECUTE",
	[RESP_READ_REPLY] = "READ_REPLY",
	[RESP_ATOMIC_REPLY] = "ATOMIC_REPLY",
	[RESP_PROCESS_FLUSH] = "PROCESS_FLUSH",
	[RESP_COMPLETE] = "COMPLETE",
	[RESP_ACKNOWLEDGE] = "ACKNOWLEDGE",
	[RESP_DUPLICATE] = "DUPLICATE",
	[RESP_ERR_SEQ] = "ERR_SEQ",
	[RESP_ERR_RNR] = "ERR_RNR",
	[RESP_ERR_INVALID] = "ERR_INVALID",
	[RESP_ERR_LENGTH] = "ERR_LENGTH",
	[RESP_ERR_ACCESS] = "ERR_ACCESS",
	[RESP_ERR_LOCAL] = "ERR_LOCAL",
	[RESP_DROP_MESSAGE] = "DROP_MESSAGE",
	[RESP_EXIT] = "EXIT",
};

const char *responder_state_name(int state)
{
	return state >= 0 && state < RESP_NSTATES ? resp_state_names[state] : "?";
}

struct resp_ctx {
	const struct wire_ib *pkt;
	uint16_t flags;                 /* opcode table flags */
	uint64_t now;
	struct rnic_mr *mr;             /* target of WRITE/READ/ATOMIC/FLUSH */
	uint64_t flush_va, flush_len;   /* FLUSH: the range it names      */
	enum ibv_wc_status status;      /* for ERR_LOCAL */
	bool wqe_taken;                 /* this packet took a WQE off the QP's own RQ */
	bool held;                      /* a SEND whose read is put off: its completion waits */
};

static bool is_rc(const struct rnic_qp *qp)
{
	return qp->type == IBV_QPT_RC;
}

/* ---- packets we send ---------------------------------------------------- */

/* An ACK-like packet; `selective`: a selective NAK, whose MSN field
 * carries `msn` = the PSN that arrived (rnic_int.h). */
static void send_aeth_as(struct rnic_qp *qp, uint8_t opcode, uint8_t syndrome, uint32_t psn, uint64_t atmack,
			 bool selective, uint32_t msn)
{
	struct wire_ib ib;
	int n;

	memset(&ib, 0, sizeof(ib));
	ib.bth.opcode = WIRE_TR_RC | opcode;
	ib.bth.pkey = RNIC_DEFAULT_PKEY;
	ib.bth.dqpn = qp->attr.dest_qp_num;
	ib.bth.psn = psn;
	ib.bth.selective = selective;
	ib.aeth.syndrome = syndrome;
	ib.aeth.msn = msn & 0xffffff;
	ib.atmack = atmack;
	n = wire_encode_ib(&ib, qp->r->tx, sizeof(qp->r->tx));
	if (n > 0)
		rnic_xmit(qp->r, qp, (size_t)n);
	/* Any ACK or NAK acknowledges everything before it. */
	qp->resp.unacked = 0;
	qp->resp.ack_deadline = RNIC_NO_DEADLINE;
}

static void send_aeth(struct rnic_qp *qp, uint8_t opcode, uint8_t syndrome, uint32_t psn, uint64_t atmack)
{
	send_aeth_as(qp, opcode, syndrome, psn, atmack, false, qp->resp.msn);
}

static void send_ack(struct rnic_qp *qp, uint32_t psn)
{
	qp->r->ctr.tx_acks++;
	send_aeth(qp, WIRE_OP_ACK, wire_aeth_syndrome(WIRE_AETH_ACK, WIRE_AETH_CREDIT_INVALID), psn, 0);
}

static void send_nak(struct rnic_qp *qp, uint8_t code, uint32_t psn)
{
	send_aeth(qp, WIRE_OP_ACK, wire_aeth_syndrome(WIRE_AETH_NAK, code), psn, 0);
}

/* We lack the expected PSN and hold `got`. */
static void send_selective_nak(struct rnic_qp *qp, uint32_t got)
{
	qp->r->ctr.tx_nak_selective++;
	send_aeth_as(qp, WIRE_OP_ACK, wire_aeth_syndrome(WIRE_AETH_NAK, WIRE_NAK_PSN_SEQ_ERR), qp->resp.epsn, 0,
		     true, got);
}

/* The MTU a request is cut by: the path MTU, or a message-path
 * requester's RNIC_MSG_MTU, which its BTH says (wire_bth.msg): each
 * direction of a QP chooses for itself (rnic_qp_set_message_path). */
static uint32_t request_mtu(const struct rnic_qp *qp, const struct wire_ib *p)
{
	return p->bth.msg && is_rc(qp) ? RNIC_MSG_MTU : qp->mtu;
}

static uint32_t read_packets(uint32_t mtu, uint32_t len)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

/* Send READ responses for [va, va+len) starting at `psn` (IBTA 9.7.4.1.5).
 * mr is NULL only for a zero-length READ.  Sent all at once: the MR's
 * bounds were checked, so the loop is bounded by the region's size. */
static void send_read_responses(struct rnic_qp *qp, struct rnic_mr *mr, uint64_t va, uint32_t len, uint32_t psn,
				uint32_t mtu, bool alone)
{
	uint32_t n = read_packets(mtu, len);

	for (uint32_t i = 0; i < n; i++) {
		uint32_t chunk = len < mtu ? len : mtu;
		struct wire_ib ib;
		uint8_t op;
		int enc;

		op = n == 1 ? WIRE_OP_READ_RESP_ONLY : i == 0 ? WIRE_OP_READ_RESP_FIRST :
		     i == n - 1 ? WIRE_OP_READ_RESP_LAST : WIRE_OP_READ_RESP_MIDDLE;
		memset(&ib, 0, sizeof(ib));
		ib.bth.opcode = WIRE_TR_RC | op;
		ib.bth.pkey = RNIC_DEFAULT_PKEY;
		ib.bth.dqpn = qp->attr.dest_qp_num;
		ib.bth.psn = wire_psn_add(psn, i);
		ib.aeth.syndrome = wire_aeth_syndrome(WIRE_AETH_ACK, WIRE_AETH_CREDIT_INVALID);
		ib.aeth.msn = qp->resp.msn & 0xffffff;
		const uint8_t *data = chunk ? rnic_mr_ptr(mr, va) : NULL;
		/* Zero copy when the port allows it: only the headers are
		 * built and the payload leaves from the MR (rnic_tx.payload;
		 * local writes to the range meanwhile give undefined data,
		 * as on hardware). */
		bool by_ref = data && qp->r->io.tx_payload_ref;
		/* The message path: more than a path MTU goes as one piece of
		 * the MR, which the requester reads (rnic_qp_set_message_path). */
		bool by_vec = chunk > RNIC_PKT_MAX_PAYLOAD;
		/* Encoded without its payload, which is then copied in from
		 * the MR (rnic_mem_copy) unless it goes by reference. */
		ib.payload = NULL;
		ib.payload_len = by_vec ? 0 : chunk;
		/* Built in the port's buffer if it has one (rnic_tx_buffer). */
		uint8_t *buf = rnic_tx_buffer(qp->r);
		enc = wire_encode_ib(&ib, buf, WIRE_MAX_IB_PACKET);
		/* A page of the region that went away since the READ was
		 * checked (resp_read_reply probed it): the rest of the
		 * response is not sent, as if lost; the requester asks again
		 * and the repeated READ is refused (resp_duplicate). */
		if (enc > 0 && data && !by_ref && !by_vec &&
		    !rnic_mem_copy(qp->r, buf + wire_payload_offset(ib.bth.opcode), data, chunk))
			break;
		if (enc > 0 && by_vec) {
			qp->r->tx_vec[0] = (struct wire_piece){ data, chunk };
			rnic_xmit_vec(qp->r, qp, buf, (size_t)enc, (size_t)wire_payload_offset(ib.bth.opcode),
				      qp->r->tx_vec, 1, chunk, alone);
		} else if (enc > 0 && by_ref)
			rnic_xmit_ref(qp->r, qp, buf, (size_t)enc, (size_t)wire_payload_offset(ib.bth.opcode), data,
				      chunk);
		else if (enc > 0)
			rnic_xmit_buf(qp->r, qp, buf, (size_t)enc);
		va += chunk;
		len -= chunk;
	}
	qp->resp.unacked = 0;
	qp->resp.ack_deadline = RNIC_NO_DEADLINE;
}

/* Remember a READ/ATOMIC for duplicate detection.  A ring of
 * max_dest_rd_atomic entries: the oldest is overwritten, which is safe
 * because a requester may not have more outstanding (IBTA 9.5). */
static void save_resource(struct rnic_qp *qp, bool atomic, uint32_t first, uint32_t last, uint64_t orig)
{
	struct rnic_resource *res;

	if (!qp->resp.res_cap)
		return;
	res = &qp->resp.res[qp->resp.res_next];
	qp->resp.res_next = (qp->resp.res_next + 1) % qp->resp.res_cap;
	res->valid = true;
	res->atomic = atomic;
	res->first_psn = first;
	res->last_psn = last;
	res->orig = orig;
}

static struct rnic_resource *find_resource(struct rnic_qp *qp, bool atomic, uint32_t psn)
{
	for (uint32_t i = 0; i < qp->resp.res_cap; i++) {
		struct rnic_resource *res = &qp->resp.res[i];
		if (res->valid && res->atomic == atomic && wire_psn_diff(psn, res->first_psn) >= 0 &&
		    wire_psn_diff(psn, res->last_psn) <= 0)
			return res;
	}
	return NULL;
}

/* ---- checks ------------------------------------------------------------- */

static enum resp_state resp_check_psn(struct rnic_qp *qp, struct resp_ctx *c)
{
	int32_t d = wire_psn_diff(c->pkt->bth.psn, qp->resp.epsn);

	if (!is_rc(qp)) {
		/* UC: a gap loses the message in progress; resynchronise. */
		if (d != 0) {
			if (qp->resp.seq != RESP_SEQ_NONE)
				qp->r->ctr.rx_drop_out_of_window++;
			qp->resp.seq = RESP_SEQ_NONE;
			qp->resp.recv_offset = 0;
			qp->resp.epsn = c->pkt->bth.psn;
		}
		return RESP_CHECK_OP_SEQ;
	}
	if (d > 0)
		return RESP_ERR_SEQ;
	if (d < 0)
		return RESP_DUPLICATE;
	return RESP_CHECK_OP_SEQ;
}

/* IBTA 9.8.3 / table 39: within a SEND only SEND MIDDLE/LAST may follow,
 * within a WRITE only WRITE MIDDLE/LAST; outside a message no MIDDLE or
 * LAST may arrive. */
static enum resp_state resp_check_op_seq(struct rnic_qp *qp, struct resp_ctx *c)
{
	bool cont = c->flags & (WIRE_F_MIDDLE | WIRE_F_LAST);
	bool ok;

	switch (qp->resp.seq) {
	case RESP_SEQ_SEND:
		ok = cont && (c->flags & WIRE_F_SEND);
		break;
	case RESP_SEQ_WRITE:
		ok = cont && (c->flags & WIRE_F_WRITE);
		break;
	default:
		ok = !cont;
		break;
	}
	if (ok)
		return RESP_CHECK_OP_VALID;
	if (is_rc(qp)) {
		qp->r->ctr.rx_drop_bad_opcode_seq++;
		return RESP_ERR_INVALID;
	}
	/* UC: a new FIRST/ONLY abandons the old message (counted as one
	 * drop: that message's) and starts afresh. */
	if (!cont) {
		qp->r->ctr.rx_drop_bad_opcode_seq++;
		qp->resp.seq = RESP_SEQ_NONE;
		qp->resp.recv_offset = 0;
		return RESP_CHECK_OP_VALID;
	}
	return RESP_DROP_MESSAGE;       /* counts this packet */
}

/* The access a FLUSH needs, of its QP and of its region: one right per
 * placement type it asks for (IBTA 1.5; rxe's check_qp_attr_access). */
static int flush_access(const struct wire_ib *p)
{
	return ((p->feth.placement & WIRE_FLUSH_GLOBAL) ? RNIC_ACCESS_FLUSH_GLOBAL : 0) |
	       ((p->feth.placement & WIRE_FLUSH_PERSISTENT) ? RNIC_ACCESS_FLUSH_PERSISTENT : 0);
}

static enum resp_state resp_check_op_valid(struct rnic_qp *qp, struct resp_ctx *c)
{
	int acc = qp->attr.qp_access_flags;

	/* FLUSH needs the QP's flush rights for its placement types, not
	 * remote read, and a responder resource like a READ. */
	if (c->flags & WIRE_F_FLUSH) {
		int need = flush_access(c->pkt);

		if ((acc & need) != need || !qp->resp.res_cap)
			return RESP_ERR_INVALID;
		return RESP_CHECK_RESOURCE;
	}

	/* Operations the QP did not enable are invalid requests (IBTA
	 * 9.7.5.2.2, as rxe does). */
	if ((c->flags & WIRE_F_WRITE) && !(acc & IBV_ACCESS_REMOTE_WRITE))
		return is_rc(qp) ? RESP_ERR_INVALID : RESP_DROP_MESSAGE;
	if ((c->flags & WIRE_F_READ) && (!(acc & IBV_ACCESS_REMOTE_READ) || !qp->resp.res_cap))
		return RESP_ERR_INVALID;
	if ((c->flags & WIRE_F_ATOMIC) && (!(acc & IBV_ACCESS_REMOTE_ATOMIC) || !qp->resp.res_cap))
		return RESP_ERR_INVALID;
	return RESP_CHECK_RESOURCE;
}

static enum resp_state resp_check_resource(struct rnic_qp *qp, struct resp_ctx *c)
{
	/* SENDs, and WRITE with immediate at its last packet, consume a
	 * receive WQE (IBTA 9.7.4.1.3 / 9.7.4.1.4.2). */
	bool needs_wqe = (c->flags & WIRE_F_SEND) ||
			 ((c->flags & WIRE_F_WRITE) && (c->flags & WIRE_F_IMM));

	if (!needs_wqe || qp->resp.have_wqe)
		return RESP_CHECK_LENGTH;
	if (qp->srq) {
		/* An empty SRQ is answered like an empty RQ (IBTA 10.2.9.2). */
		if (!rnic_srq_take(qp, &qp->resp.wqe))
			return is_rc(qp) ? RESP_ERR_RNR : RESP_DROP_MESSAGE;
	} else {
		if (qp->rq.tail == qp->rq.head)
			return is_rc(qp) ? RESP_ERR_RNR : RESP_DROP_MESSAGE;
		qp->resp.wqe = qp->rq.wqe[qp->rq.tail % qp->rq.cap];
		qp->rq.tail++;
		c->wqe_taken = true;
	}
	qp->resp.have_wqe = true;
	qp->resp.recv_offset = 0;
	return RESP_CHECK_LENGTH;
}

/* RDMA ATOMIC WRITE (RC 0x1d): a WRITE Only with special rules. */
static bool is_atomic_write(const struct wire_ib *p)
{
	return p->bth.opcode == (WIRE_TR_RC | WIRE_OP_ATOMIC_WRITE);
}

static enum resp_state resp_check_length(struct rnic_qp *qp, struct resp_ctx *c)
{
	const struct wire_ib *p = c->pkt;
	uint32_t len = p->payload_len;
	bool invalid;

	/* Packet sizes (IBTA 9.7.4.1.2 / C9-88): FIRST and MIDDLE carry
	 * exactly one MTU, nothing carries more. */
	uint32_t mtu = request_mtu(qp, p);

	if (len > mtu || ((c->flags & (WIRE_F_FIRST | WIRE_F_MIDDLE)) && len != mtu))
		return is_rc(qp) ? RESP_ERR_INVALID : RESP_DROP_MESSAGE;
	if (c->flags & WIRE_F_SEND) {
		if ((uint64_t)qp->resp.recv_offset + len > qp->resp.wqe.length)
			return is_rc(qp) ? RESP_ERR_LENGTH : RESP_DROP_MESSAGE;
		return RESP_CHECK_RKEY;
	}
	if (c->flags & WIRE_F_WRITE) {
		if (c->flags & (WIRE_F_FIRST | WIRE_F_ONLY)) {
			/* ONLY: the whole DMA length in one packet; FIRST: more
			 * than one packet's worth. */
			invalid = (c->flags & WIRE_F_ONLY) ? p->reth.dma_len != len : p->reth.dma_len <= len;
			if (p->reth.dma_len > RNIC_MAX_MSG)
				invalid = true;
		} else {
			/* MIDDLE must leave something for LAST; LAST must finish. */
			invalid = (c->flags & WIRE_F_LAST) ? len != qp->resp.resid : len >= qp->resp.resid;
		}
		/* ATOMIC WRITE: 8 bytes at an 8-byte aligned address, as for
		 * the other atomics (IBTA 9.4.5 C9-44; rxe). */
		if (is_atomic_write(p) && (len != 8 || (p->reth.va & 7)))
			invalid = true;
		if (invalid)
			return is_rc(qp) ? RESP_ERR_INVALID : RESP_DROP_MESSAGE;
		return RESP_CHECK_RKEY;
	}
	/* FLUSH: a placement type of global visibility and/or persistence
	 * and a selectivity of range or region; reserved values are invalid
	 * requests. */
	if (c->flags & WIRE_F_FLUSH) {
		if (!p->feth.placement || (p->feth.placement & ~(WIRE_FLUSH_GLOBAL | WIRE_FLUSH_PERSISTENT)) ||
		    (p->feth.selectivity != WIRE_FLUSH_RANGE && p->feth.selectivity != WIRE_FLUSH_MR))
			return RESP_ERR_INVALID;
		return RESP_CHECK_RKEY;
	}
	if (c->flags & WIRE_F_READ) {
		if (p->reth.dma_len > RNIC_MAX_MSG)
			return RESP_ERR_INVALID;
		return RESP_CHECK_RKEY;
	}
	/* ATOMIC: the target must be 8-byte aligned (IBTA 9.4.5 C9-44 ->
	 * invalid request). */
	if (p->atmeth.va & 7)
		return RESP_ERR_INVALID;
	return RESP_CHECK_RKEY;
}

static enum resp_state resp_check_rkey(struct rnic_qp *qp, struct resp_ctx *c)
{
	const struct wire_ib *p = c->pkt;
	struct rnic *r = qp->r;

	c->mr = NULL;
	if (c->flags & WIRE_F_SEND)
		return RESP_EXECUTE;
	if (c->flags & WIRE_F_WRITE) {
		if (c->flags & (WIRE_F_FIRST | WIRE_F_ONLY)) {
			qp->resp.va = p->reth.va;
			qp->resp.rkey = p->reth.rkey;
			qp->resp.resid = p->reth.dma_len;
			qp->resp.write_len = p->reth.dma_len;
			/* A zero-length WRITE touches no memory: no key check
			 * (IBTA 9.7.4.1.6 C9-87). */
			if (p->reth.dma_len == 0)
				return RESP_EXECUTE;
			if (!rnic_mr_check(r, qp->pd, p->reth.rkey, IBV_ACCESS_REMOTE_WRITE, p->reth.va, p->reth.dma_len))
				return is_rc(qp) ? RESP_ERR_ACCESS : RESP_DROP_MESSAGE;
		}
		if (p->payload_len == 0)
			return RESP_EXECUTE;
		/* Re-check every packet: the MR may have gone mid-message. */
		c->mr = rnic_mr_check(r, qp->pd, qp->resp.rkey, IBV_ACCESS_REMOTE_WRITE, qp->resp.va, p->payload_len);
		if (!c->mr)
			return is_rc(qp) ? RESP_ERR_ACCESS : RESP_DROP_MESSAGE;
		return RESP_EXECUTE;
	}
	if (c->flags & WIRE_F_FLUSH) {
		/* The region's flush rights for the placement asked; the
		 * range must lie inside it, unless the whole region is named
		 * (then the RETH's va and length are not read).  A zero-length
		 * range touches no memory and, like a zero-length READ, needs
		 * no key (C9-87). */
		if (p->feth.selectivity == WIRE_FLUSH_MR) {
			c->mr = rnic_mr_whole(r, qp->pd, p->reth.rkey, flush_access(p), &c->flush_va, &c->flush_len);
			return c->mr ? RESP_PROCESS_FLUSH : RESP_ERR_ACCESS;
		}
		c->flush_va = p->reth.va;
		c->flush_len = p->reth.dma_len;
		if (c->flush_len == 0)
			return RESP_PROCESS_FLUSH;
		c->mr = rnic_mr_check(r, qp->pd, p->reth.rkey, flush_access(p), c->flush_va, c->flush_len);
		return c->mr ? RESP_PROCESS_FLUSH : RESP_ERR_ACCESS;
	}
	if (c->flags & WIRE_F_READ) {
		if (p->reth.dma_len == 0)
			return RESP_READ_REPLY;
		c->mr = rnic_mr_check(r, qp->pd, p->reth.rkey, IBV_ACCESS_REMOTE_READ, p->reth.va, p->reth.dma_len);
		return c->mr ? RESP_READ_REPLY : RESP_ERR_ACCESS;
	}
	c->mr = rnic_mr_check(r, qp->pd, p->atmeth.rkey, IBV_ACCESS_REMOTE_ATOMIC, p->atmeth.va, 8);
	return c->mr ? RESP_ATOMIC_REPLY : RESP_ERR_ACCESS;
}

/* ---- execution ---------------------------------------------------------- */

static void next_psn(struct rnic_qp *qp, uint32_t n)
{
	qp->resp.epsn = wire_psn_add(qp->resp.epsn, n);
	qp->resp.nak_sent = false;
}

/* The 8 payload bytes land in one store, so no reader of that memory (a
 * CPU in this process) sees half of them.  Memory gets the bytes in wire
 * order, as rxe does.  A target that is not 8-byte aligned in host memory
 * (possible only with an iova unlike its address) falls back to a copy.
 * false: the page faulted (the port's mem_copy, which stores an aligned
 * 8 bytes at once too). */
static bool store_atomic_8(struct rnic *r, uint8_t *dst, const uint8_t *src)
{
	uint64_t v;

	memcpy(&v, src, sizeof(v));
	if (r->io.mem_copy)
		return rnic_mem_copy(r, dst, &v, sizeof(v));
	if (((uintptr_t)dst & 7) == 0)
		__atomic_store_n((uint64_t *)(void *)dst, v, __ATOMIC_RELEASE);
	else
		memcpy(dst, &v, sizeof(v));
	return true;
}

/* A message-path WRITE Only without immediate data: nothing but memory
 * and the PSN hang on it, so its payload may be read at the end of the
 * port's batch (pull.c).  Not with packets in the reorder buffer: those
 * would run right after it (reorder_drain), READs among them, and be
 * ACKed, before its payload is in. */
static bool put_off_read(struct rnic_qp *qp, const struct resp_ctx *c, uint8_t *dst)
{
	const struct wire_ib *p = c->pkt;

	return is_rc(qp) && qp->r->rx_remote && !p->payload && (c->flags & WIRE_F_ONLY) &&
	       !(c->flags & WIRE_F_IMM) && reorder_empty(qp) && !qp->resp.read_at_once &&
	       rnic_pull_put_off(qp, p->bth.psn, dst, p->payload_len);
}

/* May the message-path SEND Only pkt, taking receive WQE w off the QP's
 * own receive queue, have its read put off (pull.c)?  Its payload must
 * fit the WQE's first piece, which must take it (lkey, bounds, local
 * write): the region it lands in, or NULL.  The same answer before the
 * packet runs (joins_put_off_reads, with the WQE it will take) and while
 * it runs. */
static struct rnic_mr *send_put_off_mr(const struct rnic_qp *qp, const struct wire_ib *pkt,
				       const struct rnic_recv_wqe *w)
{
	struct rnic *r = qp->r;

	if (!is_rc(qp) || qp->srq || !r->io.pull_batch || !r->rx_remote || pkt->payload || !pkt->payload_len ||
	    qp->resp.read_at_once ||
	    pkt->bth.opcode != (WIRE_TR_RC | WIRE_OP_SEND_ONLY) || !reorder_empty(qp) || !w->num_sge ||
	    w->sge[0].length < pkt->payload_len)
		return NULL;
	return rnic_mr_check(r, qp->pd, w->sge[0].lkey, IBV_ACCESS_LOCAL_WRITE, w->sge[0].addr, pkt->payload_len);
}

static enum resp_state resp_execute(struct rnic_qp *qp, struct resp_ctx *c)
{
	const struct wire_ib *p = c->pkt;
	struct rnic_mr *recv_mr =
		(c->flags & WIRE_F_SEND) && c->wqe_taken ? send_put_off_mr(qp, p, &qp->resp.wqe) : NULL;

	/* Cannot fail: responder_receive made room (pull.c). */
	if (recv_mr)
		c->held = rnic_pull_put_off(qp, p->bth.psn, rnic_mr_ptr(recv_mr, qp->resp.wqe.sge[0].addr),
					    p->payload_len);
	if (c->held) {
		qp->resp.recv_offset += p->payload_len;
	} else if (c->flags & WIRE_F_SEND) {
		struct rnic_pd *pd = qp->srq ? qp->srq->pd : qp->pd;
		bool pulled;
		enum ibv_wc_status st = rnic_rx_scatter(qp->r, pd, qp->resp.wqe.sge, qp->resp.wqe.num_sge,
							qp->resp.recv_offset, p, &pulled);
		/* A message-path payload the sender's memory no longer holds:
		 * as if the packet were lost (the WQE stays taken for its
		 * resend). */
		if (!pulled)
			return RESP_EXIT;
		if (st != IBV_WC_SUCCESS) {
			c->status = st;
			return RESP_ERR_LOCAL;
		}
		qp->resp.recv_offset += p->payload_len;
	} else if (is_atomic_write(p)) {
		if (!store_atomic_8(qp->r, rnic_mr_ptr(c->mr, qp->resp.va), p->payload))
			return RESP_ERR_ACCESS;
		qp->resp.va += 8;
		qp->resp.resid -= 8;
	} else if (p->payload_len) {
		uint8_t *dst = rnic_mr_ptr(c->mr, qp->resp.va);

		/* A region whose pages went away after registration: the
		 * remote access error a NIC gives for memory it may not
		 * touch (IBTA 9.7.5.2.4), decided before anything moves.  (A
		 * read put off that meets it is a loss, after which this QP
		 * reads at once and its resend comes here: pull.c.) */
		if (!put_off_read(qp, c, dst)) {
			enum rnic_rx_copied got = rnic_rx_copy(qp->r, p, dst);

			if (got == RNIC_RX_FAULT)
				return is_rc(qp) ? RESP_ERR_ACCESS : RESP_DROP_MESSAGE;
			if (got == RNIC_RX_NOT_READ)
				return RESP_EXIT;       /* as above */
		}
		qp->resp.va += p->payload_len;
		qp->resp.resid -= p->payload_len;
	}
	if (c->flags & (WIRE_F_FIRST | WIRE_F_MIDDLE))
		qp->resp.seq = (c->flags & WIRE_F_SEND) ? RESP_SEQ_SEND : RESP_SEQ_WRITE;
	else
		qp->resp.seq = RESP_SEQ_NONE;
	next_psn(qp, 1);
	if (!(c->flags & (WIRE_F_LAST | WIRE_F_ONLY)))
		return RESP_ACKNOWLEDGE;
	qp->resp.msn++;
	if ((c->flags & WIRE_F_SEND) || (c->flags & WIRE_F_IMM))
		return RESP_COMPLETE;
	return RESP_ACKNOWLEDGE;
}

static enum resp_state resp_read_reply(struct rnic_qp *qp, struct resp_ctx *c)
{
	const struct wire_ib *p = c->pkt;
	uint32_t n = read_packets(request_mtu(qp, p), p->reth.dma_len);
	uint32_t first = p->bth.psn;

	/* The responses are read from the region as they are sent, some
	 * by the port after this returns: its pages must be there now
	 * (else a remote access error, as for a write). */
	if (c->mr && !rnic_mem_probe(qp->r, rnic_mr_ptr(c->mr, p->reth.va), p->reth.dma_len, false))
		return RESP_ERR_ACCESS;
	/* A READ consumes one PSN per response packet (IBTA 9.7.1). */
	save_resource(qp, false, first, wire_psn_add(first, n - 1), 0);
	next_psn(qp, n);
	qp->resp.msn++;
	/* Alone if the READ was (rnic_rx.alone): a requester waiting for
	 * this one answer. */
	send_read_responses(qp, c->mr, p->reth.va, p->reth.dma_len, first, request_mtu(qp, p), qp->r->rx_alone);
	return RESP_EXIT;
}

static enum resp_state resp_atomic_reply(struct rnic_qp *qp, struct resp_ctx *c)
{
	const struct wire_ib *p = c->pkt;
	uint8_t *ptr = rnic_mr_ptr(c->mr, p->atmeth.va);
	uint64_t orig, val;

	/* Atomic with respect to this rnic: all its calls are serialised.
	 * Memory holds the operand in host order (IBTA 9.4.5).  A page that
	 * faults on the load or on the store (nothing stored then) is a
	 * remote access error, before the PSN moves. */
	if (!rnic_mem_copy(qp->r, &orig, ptr, sizeof(orig)))
		return RESP_ERR_ACCESS;
	if ((p->bth.opcode & 0x1f) == WIRE_OP_CMP_SWAP)
		val = orig == p->atmeth.compare ? p->atmeth.swap_add : orig;
	else
		val = orig + p->atmeth.swap_add;
	if (!rnic_mem_copy(qp->r, ptr, &val, sizeof(val)))
		return RESP_ERR_ACCESS;
	save_resource(qp, true, p->bth.psn, p->bth.psn, orig);
	next_psn(qp, 1);
	qp->resp.msn++;
	send_aeth(qp, WIRE_OP_ATOMIC_ACK, wire_aeth_syndrome(WIRE_AETH_ACK, WIRE_AETH_CREDIT_INVALID),
		  p->bth.psn, orig);
	return RESP_EXIT;
}

/* RDMA FLUSH: make the range globally visible — everything this rnic
 * wrote before is, once this fence has passed — and, for the persistence
 * placement type, ask the port to make it persistent (msync in the
 * runtime).  Then answer as rxe does, with a zero-length READ response,
 * and keep the PSN as a READ resource so a duplicate is answered again.
 * Trade-off: the msync runs on the responder's thread, so a large
 * persistent flush of a file-backed region holds up this QP's other
 * packets meanwhile, as a flush on hardware holds up the QP. */
static enum resp_state resp_process_flush(struct rnic_qp *qp, struct resp_ctx *c)
{
	const struct wire_ib *p = c->pkt;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if ((p->feth.placement & WIRE_FLUSH_PERSISTENT) && c->mr && c->flush_len && qp->r->io.persist &&
	    qp->r->io.persist(qp->r->io.ctx, rnic_mr_ptr(c->mr, c->flush_va), (size_t)c->flush_len)) {
		qp->r->ctr.flush_failed++;
		c->status = IBV_WC_GENERAL_ERR;
		return RESP_ERR_LOCAL;
	}
	qp->r->ctr.flushes++;
	save_resource(qp, false, p->bth.psn, p->bth.psn, 0);
	next_psn(qp, 1);
	qp->resp.msn++;
	send_read_responses(qp, NULL, 0, 0, p->bth.psn, qp->mtu, false);
	return RESP_EXIT;
}

static enum resp_state resp_complete(struct rnic_qp *qp, struct resp_ctx *c)
{
	const struct wire_ib *p = c->pkt;
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = qp->resp.wqe.wr_id;
	wc.status = IBV_WC_SUCCESS;
	wc.qp_num = qp->qpn;
	wc.src_qp = qp->attr.dest_qp_num;
	if (c->flags & WIRE_F_WRITE) {
		wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		wc.byte_len = qp->resp.write_len;
	} else {
		wc.opcode = IBV_WC_RECV;
		wc.byte_len = qp->resp.recv_offset;
	}
	if (c->flags & WIRE_F_IMM) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = p->imm;
	}
	if (c->flags & WIRE_F_INV) {
		/* IBTA 10.6.7.2.4: a type 2 window bound through this QP is
		 * invalidated (mw.c).  Trade-off: any other key (a region, a
		 * key that is not ours) is only reported to the consumer,
		 * not NAKed; softrnic has no fast-register MRs, the other
		 * kind of key a remote may invalidate. */
		rnic_mw_remote_inv(qp, p->ieth);
		wc.wc_flags |= IBV_WC_WITH_INV;
		wc.invalidated_rkey = p->ieth;
	}
	qp->resp.have_wqe = false;
	if (c->held)
		rnic_pull_hold_completion(qp, &wc, p->bth.se);         /* written when the read is in */
	else
		rnic_cq_push(qp->recv_cq, &wc, p->bth.se);
	return RESP_ACKNOWLEDGE;
}

static enum resp_state resp_acknowledge(struct rnic_qp *qp, struct resp_ctx *c)
{
	if (!is_rc(qp))
		return RESP_EXIT;
	qp->resp.unacked++;
	if (c->pkt->bth.ackreq || qp->resp.unacked >= RNIC_ACK_EVERY) {
		/* Not before the reads put off have landed (pull.c). */
		if (qp->resp.pulls)
			qp->resp.ack_held = true;
		else
			send_ack(qp, wire_psn_add(qp->resp.epsn, WIRE_PSN_MASK));
	} else if (qp->resp.ack_deadline == RNIC_NO_DEADLINE) {
		qp->resp.ack_deadline = c->now + RNIC_DELAYED_ACK_NS;
		rnic_qp_timer_armed(qp, qp->resp.ack_deadline);
	}
	return RESP_EXIT;
}

/* Duplicates (IBTA 9.7.5.1.3): SEND/WRITE are ACKed again, not executed;
 * a READ is executed again for the PSN range asked; an ATOMIC is answered
 * from the saved result, never executed twice. */
static enum resp_state resp_duplicate(struct rnic_qp *qp, struct resp_ctx *c)
{
	const struct wire_ib *p = c->pkt;
	struct rnic *r = qp->r;
	struct rnic_resource *res;

	r->ctr.duplicate_requests++;
	/* A FLUSH already ran; its answer is sent again (a zero-length READ
	 * response), as for a zero-length READ. */
	if (c->flags & WIRE_F_FLUSH) {
		if (!find_resource(qp, false, p->bth.psn)) {
			r->ctr.rx_drop_out_of_window++;
			return RESP_EXIT;
		}
		send_read_responses(qp, NULL, 0, 0, p->bth.psn, qp->mtu, false);
		return RESP_EXIT;
	}
	if (c->flags & WIRE_F_READ) {
		struct rnic_mr *mr = NULL;
		uint32_t n = read_packets(request_mtu(qp, p), p->reth.dma_len);

		r->ctr.duplicate_reads++;
		res = find_resource(qp, false, p->bth.psn);
		/* The re-read must fit in the original READ's PSN range. */
		if (!res || wire_psn_diff(wire_psn_add(p->bth.psn, n - 1), res->last_psn) > 0 ||
		    p->reth.dma_len > RNIC_MAX_MSG) {
			r->ctr.rx_drop_out_of_window++;
			return RESP_EXIT;
		}
		if (p->reth.dma_len) {
			mr = rnic_mr_check(r, qp->pd, p->reth.rkey, IBV_ACCESS_REMOTE_READ, p->reth.va, p->reth.dma_len);
			if (!mr) {
				r->ctr.rx_drop_out_of_window++;
				return RESP_EXIT;
			}
			/* The region's pages went away since the READ ran:
			 * it cannot be answered again (resp_read_reply). */
			if (!rnic_mem_probe(r, rnic_mr_ptr(mr, p->reth.va), p->reth.dma_len, false))
				return RESP_ERR_ACCESS;
		}
		send_read_responses(qp, mr, p->reth.va, p->reth.dma_len, p->bth.psn, request_mtu(qp, p), false);
		return RESP_EXIT;
	}
	if (c->flags & WIRE_F_ATOMIC) {
		r->ctr.duplicate_atomics++;
		res = find_resource(qp, true, p->bth.psn);
		if (!res) {
			r->ctr.rx_drop_out_of_window++;
			return RESP_EXIT;
		}
		send_aeth(qp, WIRE_OP_ATOMIC_ACK,
			  wire_aeth_syndrome(WIRE_AETH_ACK, WIRE_AETH_CREDIT_INVALID), p->bth.psn, res->orig);
		return RESP_EXIT;
	}
	/* ACK with the latest PSN we have, which covers the duplicate. */
	if (p->bth.ackreq || (c->flags & (WIRE_F_LAST | WIRE_F_ONLY)))
		send_ack(qp, wire_psn_add(qp->resp.epsn, WIRE_PSN_MASK));
	return RESP_EXIT;
}

/* ---- errors ------------------------------------------------------------- */

/* A NAK acknowledges every PSN before it, so the reads put off for this
 * QP's WRITEs (pull.c) must have landed first.  False if one failed: the
 * expected PSN went back to that WRITE, and this packet, the next one
 * when it arrived, now lies past a hole. */
static bool settle_before_nak(struct rnic_qp *qp, const struct resp_ctx *c)
{
	if (!qp->resp.pulls)
		return true;
	rnic_pulls_settle(qp->r);
	return qp->resp.epsn == c->pkt->bth.psn;
}

static enum resp_state resp_err_seq(struct rnic_qp *qp, struct resp_ctx *c)
{
	/* Selective repeat, unless an RNR NAK is waiting to be answered (its
	 * wait must not be cut short): keep the packet for later and say
	 * what we lack and what came. */
	if (c->pkt->bth.selective && qp->r->cfg.selective_repeat && !qp->resp.nak_sent) {
		bool dup;

		if (reorder_store(qp, c->pkt, &dup) || dup)
			send_selective_nak(qp, c->pkt->bth.psn);
		else
			qp->r->ctr.rx_drop_reorder++;
		return RESP_EXIT;
	}
	qp->r->ctr.rx_drop_out_of_window++;
	/* One NAK per sequence-error episode (IBTA 9.7.5.2.1 C9-105). */
	if (!qp->resp.nak_sent) {
		qp->r->ctr.tx_nak_psn_seq++;
		send_nak(qp, WIRE_NAK_PSN_SEQ_ERR, qp->resp.epsn);
		qp->resp.nak_sent = true;
	}
	return RESP_EXIT;
}

static enum resp_state resp_err_rnr(struct rnic_qp *qp, struct resp_ctx *c)
{
	qp->r->ctr.tx_rnr_nak++;
	send_aeth(qp, WIRE_OP_ACK, wire_aeth_syndrome(WIRE_AETH_RNR_NAK, qp->attr.min_rnr_timer),
		  c->pkt->bth.psn, 0);
	/* Packets behind this one are dropped without a sequence NAK until
	 * the requester resends it, so the RNR wait is not cut short. */
	qp->resp.nak_sent = true;
	return RESP_EXIT;
}

/* Complete the receive WQE in use (if any) with `st`, then enter ERR. */
static void fatal(struct rnic_qp *qp, enum ibv_wc_status st, enum ibv_event_type ev)
{
	if (qp->resp.have_wqe) {
		struct ibv_wc wc;

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = qp->resp.wqe.wr_id;
		wc.status = st;
		wc.opcode = IBV_WC_RECV;
		wc.qp_num = qp->qpn;
		qp->resp.have_wqe = false;
		rnic_cq_push(qp->recv_cq, &wc, false);
	}
	rnic_qp_to_error(qp);
	rnic_async(qp->r, ev, qp->ctx);
}

static enum resp_state resp_err_invalid(struct rnic_qp *qp, struct resp_ctx *c)
{
	if (!settle_before_nak(qp, c))
		return RESP_ERR_SEQ;
	qp->r->ctr.tx_nak_invalid_req++;
	send_nak(qp, WIRE_NAK_INVALID_REQ, c->pkt->bth.psn);
	fatal(qp, IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_REQ_ERR);
	return RESP_EXIT;
}

static enum resp_state resp_err_length(struct rnic_qp *qp, struct resp_ctx *c)
{
	if (!settle_before_nak(qp, c))
		return RESP_ERR_SEQ;
	/* Message longer than the receive buffer: the receiver sees a local
	 * length error, the sender an invalid request (IBTA 9.9.3.1.2). */
	qp->r->ctr.tx_nak_invalid_req++;
	send_nak(qp, WIRE_NAK_INVALID_REQ, c->pkt->bth.psn);
	fatal(qp, IBV_WC_LOC_LEN_ERR, IBV_EVENT_QP_REQ_ERR);
	return RESP_EXIT;
}

static enum resp_state resp_err_access(struct rnic_qp *qp, struct resp_ctx *c)
{
	if (!settle_before_nak(qp, c))
		return RESP_ERR_SEQ;
	qp->r->ctr.tx_nak_remote_access++;
	send_nak(qp, WIRE_NAK_REM_ACCESS_ERR, c->pkt->bth.psn);
	fatal(qp, IBV_WC_LOC_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
	return RESP_EXIT;
}

static enum resp_state resp_err_local(struct rnic_qp *qp, struct resp_ctx *c)
{
	if (!settle_before_nak(qp, c))
		return RESP_ERR_SEQ;
	/* Our receive buffer failed (a bad lkey, or pages the program
	 * unmapped or protected after registering them, rnic_mem_copy):
	 * remote operational error for the sender, the local status for us
	 * (IBTA 9.9.3.1.3), IBV_WC_LOC_PROT_ERR for both kinds of buffer
	 * failure.  rxe NAKs the same and reports IBV_WC_LOC_QP_OP_ERR for
	 * any copy into the receive buffer that fails. */
	if (is_rc(qp)) {
		qp->r->ctr.tx_nak_remote_op++;
		send_nak(qp, WIRE_NAK_REM_OP_ERR, c->pkt->bth.psn);
	}
	fatal(qp, c->status, IBV_EVENT_QP_FATAL);
	return RESP_EXIT;
}

static enum resp_state resp_drop_message(struct rnic_qp *qp, struct resp_ctx *c)
{
	(void)c;
	/* UC: drop until the next FIRST/ONLY; a receive WQE already taken is
	 * reused for the next message. */
	qp->resp.seq = RESP_SEQ_NONE;
	qp->resp.recv_offset = 0;
	qp->r->ctr.rx_drop_bad_opcode_seq++;
	return RESP_EXIT;
}

typedef enum resp_state (*resp_fn)(struct rnic_qp *, struct resp_ctx *);

static const resp_fn resp_fns[RESP_NSTATES] = {
	[RESP_CHECK_PSN] = resp_check_psn,
	[RESP_CHECK_OP_SEQ] = resp_check_op_seq,
	[RESP_CHECK_OP_VALID] = resp_check_op_valid,
	[RESP_CHECK_RESOURCE] = resp_check_resource,
	[RESP_CHECK_LENGTH] = resp_check_length,
	[RESP_CHECK_RKEY] = resp_check_rkey,
	[RESP_EXECUTE] = resp_execute,
	[RESP_READ_REPLY] = resp_read_reply,
	[RESP_ATOMIC_REPLY] = resp_atomic_reply,
	[RESP_PROCESS_FLUSH] = resp_process_flush,
	[RESP_COMPLETE] = resp_complete,
	[RESP_ACKNOWLEDGE] = resp_acknowledge,
	[RESP_DUPLICATE] = resp_duplicate,
	[RESP_ERR_SEQ] = resp_err_seq,
	[RESP_ERR_RNR] = resp_err_rnr,
	[RESP_ERR_INVALID] = resp_err_invalid,
	[RESP_ERR_LENGTH] = resp_err_length,
	[RESP_ERR_ACCESS] = resp_err_access,
	[RESP_ERR_LOCAL] = resp_err_local,
	[RESP_DROP_MESSAGE] = resp_drop_message,
};

static void resp_run(struct rnic_qp *qp, const struct wire_ib *pkt, uint64_t now)
{
	const struct wire_opcode_info *info = wire_opcode_info(pkt->bth.opcode);
	struct resp_ctx c = { .pkt = pkt, .now = now };
	enum resp_state s = RESP_CHECK_PSN;

	if (!info)
		return;
	c.flags = info->flags;
	while (s != RESP_EXIT) {
		rnic_trace_step(qp, "resp", resp_state_names[s]);
		s = resp_fns[s](qp, &c);
	}
}

/* The expected PSN moved while packets wait in the reorder buffer: run
 * those that now follow in order, then tell the requester where we stand
 * (an ACK, or a selective NAK for the next hole). */
static void reorder_drain(struct rnic_qp *qp, uint64_t now)
{
	const struct wire_ib *p;

	while (rnic_qp_can_receive(qp) && (p = reorder_get(qp, qp->resp.epsn)) != NULL) {
		uint32_t psn = p->bth.psn;

		resp_run(qp, p, now);
		reorder_release(qp, psn);
		if (qp->resp.epsn == psn) {
			/* Not executed (an RNR NAK): the requester goes back
			 * to it and sends everything after it again. */
			reorder_flush(qp);
			return;
		}
	}
	/* Everything kept lies behind us (the expected PSN jumped over it: a
	 * peer that put a PSN inside a READ's range): nothing to wait for. */
	if (!rnic_qp_can_receive(qp) ||
	    (!reorder_empty(qp) && wire_psn_diff(reorder_high(qp), qp->resp.epsn) < 0)) {
		reorder_flush(qp);
		return;
	}
	if (!reorder_empty(qp))
		send_selective_nak(qp, reorder_high(qp));
	else if (qp->resp.unacked)
		send_ack(qp, wire_psn_add(qp->resp.epsn, WIRE_PSN_MASK));
}

/* May pkt be executed while reads are put off for this QP's earlier
 * WRITEs and SENDs (pull.c)?  Only the next WRITE Only of the message
 * path, or the next SEND Only whose read will be put off too, with
 * nothing in the reorder buffer: every other packet (a duplicate, one
 * past a hole, a SEND read at once, which would complete ahead of those
 * waiting) reads or answers state those reads decide. */
static bool joins_put_off_reads(const struct rnic_qp *qp, const struct wire_ib *pkt)
{
	if (!qp->r->rx_remote || pkt->payload || pkt->bth.psn != qp->resp.epsn || !reorder_empty(qp))
		return false;
	if (pkt->bth.opcode == (WIRE_TR_RC | WIRE_OP_WRITE_ONLY))
		return true;
	return !qp->resp.have_wqe && qp->rq.tail != qp->rq.head &&
	       send_put_off_mr(qp, pkt, &qp->rq.wqe[qp->rq.tail % qp->rq.cap]);
}

void responder_receive(struct rnic_qp *qp, const struct wire_ib *pkt, uint64_t now)
{
	/* Settled here, never half-way through a packet: a WRITE that
	 * joins the reads put off finds room for its own (pull.c). */
	if ((qp->resp.pulls && !joins_put_off_reads(qp, pkt)) || qp->r->npulls == RNIC_PULL_BATCH)
		rnic_pulls_settle(qp->r);

	uint32_t epsn = qp->resp.epsn;

	resp_run(qp, pkt, now);
	if (!reorder_empty(qp) && qp->resp.epsn != epsn)
		reorder_drain(qp, now);
}

void responder_pulls_settled(struct rnic_qp *qp)
{
	struct rnic_resp_state *s = &qp->resp;
	bool nak = false;

	s->pulls = 0;
	if (s->pull_failed) {
		uint32_t k = s->pull_dropped;

		/* As if that WRITE had been lost: expect it again.  Those
		 * after it arrived past the hole (resp_err_seq's count and
		 * its one NAK per episode). */
		s->pull_failed = false;
		s->epsn = s->pull_rewind_psn;
		s->msn -= k;
		s->unacked = s->unacked > k ? s->unacked - k : 0;
		if (k > 1) {
			qp->r->ctr.rx_drop_out_of_window += k - 1;
			if (!s->nak_sent && rnic_qp_can_receive(qp)) {
				qp->r->ctr.tx_nak_psn_seq++;
				send_nak(qp, WIRE_NAK_PSN_SEQ_ERR, s->epsn);
				s->nak_sent = true;
				nak = true;
			}
		}
	}
	if (s->ack_held) {
		s->ack_held = false;
		if (!nak && s->unacked && rnic_qp_can_receive(qp))
			send_ack(qp, wire_psn_add(s->epsn, WIRE_PSN_MASK));
	}
}

void responder_timer(struct rnic_qp *qp, uint64_t now)
{
	(void)now;
	qp->resp.ack_deadline = RNIC_NO_DEADLINE;
	if (qp->type == IBV_QPT_RC && rnic_qp_can_receive(qp) && qp->resp.unacked)
		send_ack(qp, wire_psn_add(qp->resp.epsn, WIRE_PSN_MASK));
}

void responder_reset(struct rnic_qp *qp)
{
	struct rnic_resource *res = qp->resp.res;
	uint32_t cap = qp->resp.res_cap;

	reorder_flush(qp);
	memset(&qp->resp, 0, sizeof(qp->resp));
	qp->resp.res = res;
	qp->resp.res_cap = cap;
	if (res)
		memset(res, 0, cap * sizeof(*res));
	qp->resp.ack_deadline = RNIC_NO_DEADLINE;
	qp->resp.seq = RESP_SEQ_NONE;
}
