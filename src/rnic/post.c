/*
 * post.c — ibv_post_send / ibv_post_recv: check a work request, copy it
 * into the QP's ring (inline data is copied here, at post time, as verbs
 * promises), then let the requester start sending.
 *
 * What can be checked against the WR alone fails the post with EINVAL or
 * ENOMEM.  What needs memory keys (lkeys of the SGEs) is checked when the
 * requester or responder uses the WQE, and reported as a completion error
 * (IBV_WC_LOC_PROT_ERR / IBV_WC_LOC_LEN_ERR), because a key may be
 * deregistered between post and use.
 */
#include "rnic/rnic_int.h"

static bool opcode_allowed(enum ibv_qp_type type, enum ibv_wr_opcode op)
{
	if (op == RNIC_WR_FLUSH)
		return type == IBV_QPT_RC;      /* IBTA 1.5: RC only, as rxe */
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return type != IBV_QPT_UD;      /* UD: SEND only (IBTA 9.8.1) */
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		/* Memory window operations (IBTA 10.6.7): connected QPs. */
		return type == IBV_QPT_RC || type == IBV_QPT_UC;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_ATOMIC_WRITE:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return type == IBV_QPT_RC;
	default:
		return false;
	}
}

static int check_send_wr(const struct rnic_qp *qp, const struct ibv_send_wr *wr)
{
	if (!opcode_allowed(qp->type, wr->opcode))
		return EINVAL;
	/* Local operations carry no data: their SGE fields are not read. */
	if (wr->opcode == IBV_WR_LOCAL_INV)
		return 0;
	/* FLUSH (rnic.h for where its fields travel): a placement type of
	 * global visibility and/or persistence, a selectivity of range or
	 * whole region, no local data.  Its length is the RETH's 32 bits. */
	if (wr->opcode == RNIC_WR_FLUSH) {
		uint64_t placement = wr->wr.atomic.swap & 0xff, level = (wr->wr.atomic.swap >> 8) & 0xff;

		if (!placement || (placement & ~(uint64_t)(RNIC_FLUSH_GLOBAL | RNIC_FLUSH_PERSISTENT)) ||
		    (level != RNIC_FLUSH_RANGE && level != RNIC_FLUSH_MR) || (wr->wr.atomic.swap >> 16) ||
		    wr->wr.atomic.compare_add > UINT32_MAX || wr->num_sge || (wr->send_flags & IBV_SEND_INLINE))
			return EINVAL;
		return 0;
	}
	if (wr->opcode == IBV_WR_BIND_MW)
		return wr->bind_mw.mw ? 0 : EINVAL;
	if (qp->type == IBV_QPT_UD && ud_check_send_wr(qp, wr))
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint64_t total = 0;
		/* ATOMIC WRITE's 8 inline bytes travel in the WQE itself, not
		 * the inline pool, so max_inline_data does not limit them. */
		uint64_t limit = wr->opcode == IBV_WR_ATOMIC_WRITE ? 8 : qp->cap.max_inline_data;

		if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM &&
		    wr->opcode != IBV_WR_SEND_WITH_INV && wr->opcode != IBV_WR_RDMA_WRITE &&
		    wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM && wr->opcode != IBV_WR_ATOMIC_WRITE)
			return EINVAL;
		for (int i = 0; i < wr->num_sge; i++) {
			total += wr->sg_list[i].length;
			if (wr->sg_list[i].length && !wr->sg_list[i].addr)
				return EINVAL;
		}
		if (total > limit)
			return EINVAL;
	}
	return 0;
}

static void copy_send_wr(struct rnic_qp *qp, struct rnic_send_wqe *w, const struct ibv_send_wr *wr)
{
	uint64_t total = 0;

	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	w->imm = wr->imm_data;
	w->invalidate_rkey = wr->invalidate_rkey;
	w->remote_addr = 0;
	w->rkey = 0;
	w->compare_add = w->swap = 0;
	if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else if (wr->opcode == RNIC_WR_FLUSH) {
		/* compare_add: the length; swap: placement | selectivity << 8. */
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
		   wr->opcode == IBV_WR_RDMA_READ || wr->opcode == IBV_WR_ATOMIC_WRITE) {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	if (wr->opcode == IBV_WR_BIND_MW) {
		const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;

		/* The rnic knows its objects by key: the window by the rkey
		 * its ibv_mw has now, the region by its lkey (rnic.h). */
		w->bind_mw_rkey = wr->bind_mw.mw->rkey;
		w->bind_new_rkey = wr->bind_mw.rkey;
		w->bind_has_mr = bi->mr != NULL;
		w->bind_mr_lkey = bi->mr ? bi->mr->lkey : 0;
		w->bind_addr = bi->addr;
		w->bind_len = bi->length;
		w->bind_access = bi->mw_access_flags;
	}
	if (wr->opcode == IBV_WR_BIND_MW || wr->opcode == IBV_WR_LOCAL_INV) {
		w->num_sge = 0;
		w->send_flags &= ~(unsigned int)IBV_SEND_INLINE;
	} else if (wr->opcode == IBV_WR_ATOMIC_WRITE && (wr->send_flags & IBV_SEND_INLINE)) {
		uint8_t *dst = (uint8_t *)&w->compare_add;

		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(dst + total, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			total += wr->sg_list[i].length;
		}
		w->num_sge = 0;
	} else if (wr->send_flags & IBV_SEND_INLINE) {
		uint32_t off = 0;

		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(w->inline_data + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			off += wr->sg_list[i].length;
		}
		w->num_sge = 0;
		total = off;
	} else {
		for (int i = 0; i < wr->num_sge; i++) {
			w->sge[i].addr = wr->sg_list[i].addr;
			w->sge[i].length = wr->sg_list[i].length;
			w->sge[i].lkey = wr->sg_list[i].lkey;
			total += wr->sg_list[i].length;
		}
		w->num_sge = (uint32_t)wr->num_sge;
	}
	if (qp->type == IBV_QPT_UD)
		ud_copy_send_wr(w, wr);
	w->too_long = total > RNIC_MAX_MSG;
	w->length = w->too_long ? 0 : (uint32_t)total;
	w->psn_valid = false;
	w->status = IBV_WC_SUCCESS;
}

int rnic_post_send(struct rnic_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad, uint64_t now)
{
	enum ibv_qp_state s;
	int err = 0;

	if (!qp) {
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	/* READs retired with their reads put off (pull.c) must not have
	 * their send-queue slots taken before the reads are known good. */
	if (qp->comp.pulls)
		rnic_pulls_settle(qp->r);
	s = qp->attr.qp_state;
	/* Sends may be posted from RTS on (IBTA 10.3.1); in ERR they are
	 * accepted and flushed at once. */
	if (s == IBV_QPS_RESET || s == IBV_QPS_INIT || s == IBV_QPS_RTR)
		err = EINVAL;
	for (; wr && !err; wr = wr->next) {
		err = check_send_wr(qp, wr);
		if (err)
			break;
		if (qp->sq.head - qp->sq.comp >= qp->cap.max_send_wr) {
			err = ENOMEM;
			break;
		}
		copy_send_wr(qp, sq_at(&qp->sq, qp->sq.head), wr);
		qp->sq.head++;
		/* SQE (UD/UC send error) flushes new sends too (IBTA 10.3.1). */
		if (s == IBV_QPS_ERR || s == IBV_QPS_SQE) {
			rnic_qp_complete_send(qp, sq_at(&qp->sq, qp->sq.comp), IBV_WC_WR_FLUSH_ERR);
			qp->sq.comp = qp->sq.req = qp->sq.head;
		}
	}
	if (bad)
		*bad = err ? wr : NULL;
	if (s == IBV_QPS_RTS) {
		rnic_fast_try(qp, now);
		requester_run(qp, now);
	}
	return err;
}

uint32_t rnic_qp_sq_free(const struct rnic_qp *qp)
{
	uint32_t used = qp->sq.head - qp->sq.comp;

	return used >= qp->cap.max_send_wr ? 0 : qp->cap.max_send_wr - used;
}

/* Copy a receive work request (already checked: num_sge within the
 * queue's limit) into a receive WQE of an RQ or an SRQ. */
void rnic_recv_wqe_fill(struct rnic_recv_wqe *w, const struct ibv_recv_wr *wr)
{
	uint64_t total = 0;

	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	for (int i = 0; i < wr->num_sge; i++) {
		w->sge[i].addr = wr->sg_list[i].addr;
		w->sge[i].length = wr->sg_list[i].length;
		w->sge[i].lkey = wr->sg_list[i].lkey;
		total += wr->sg_list[i].length;
	}
	/* A receive buffer larger than any message just caps there. */
	w->length = total > RNIC_MAX_MSG ? RNIC_MAX_MSG : (uint32_t)total;
}

int rnic_post_recv(struct rnic_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	int err = 0;

	/* A QP attached to an SRQ has no receive queue of its own. */
	if (!qp || qp->attr.qp_state == IBV_QPS_RESET || qp->srq)
		err = EINVAL;
	for (; wr && !err; wr = wr->next) {
		struct rnic_recv_wqe *w;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			err = EINVAL;
			break;
		}
		if (qp->rq.head - qp->rq.tail >= qp->cap.max_recv_wr) {
			err = ENOMEM;
			break;
		}
		w = &qp->rq.wqe[qp->rq.head % qp->rq.cap];
		rnic_recv_wqe_fill(w, wr);
		qp->rq.head++;
		if (qp->attr.qp_state == IBV_QPS_ERR) {
			struct ibv_wc wc;

			memset(&wc, 0, sizeof(wc));
			wc.wr_id = w->wr_id;
			wc.status = IBV_WC_WR_FLUSH_ERR;
			wc.opcode = IBV_WC_RECV;
			wc.qp_num = qp->qpn;
			rnic_cq_push(qp->recv_cq, &wc, false);
			qp->rq.tail = qp->rq.head;
		}
	}
	if (bad)
		*bad = err ? wr : NULL;
	return err;
}
