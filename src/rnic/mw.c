/*
 * mw.c — memory windows (IBTA Vol 1 10.6.7): remote-access views of part
 * of a memory region, with rkeys of their own.
 *
 * A window lives in the MR key table: its entry is `view`, a struct
 * rnic_mr describing the window (PD, bound range, remote access, rkey),
 * so the responder's one gate, rnic_mr_check, resolves a window rkey with
 * the same PD, access and bounds checks as a region's (mr.c only adds that
 * a window is never a local key).  The view points into the bound MR's
 * memory; when that MR is deregistered or re-registered, its windows are
 * unbound first (rnic_mw_unbind_all), so a view never outlives its memory.
 *
 * Keys: the index (high 24 bits) is the table slot and never changes; the
 * low 8 bits change at every bind (IBTA 10.6.7.2: the consumer owns the
 * "key" byte of a type 2 window, ibv_inc_rkey; for type 1 the compat
 * layer picks the next one), so an rkey handed out before a rebind or an
 * invalidation fails afterwards.
 *
 * Types: type 1 is bound through ibv_bind_mw and invalidated by binding
 * it again with length 0; type 2 (2B in IBTA terms: bound to the QP it
 * was bound through) by a BIND_MW WR, and invalidated by LOCAL_INV or a
 * peer's SEND with Invalidate.  Both are executed by the requester, in
 * send-queue order (requester.c).
 *
 * Trade-off: type 2B also says only the QP a window was bound through may
 * use it.  That is enforced for remote invalidation, not for RDMA access:
 * rnic_mr_check knows the PD, not the QP, and every window access still
 * passes the PD check.
 */
#include <stdlib.h>

#include "rnic/rnic_int.h"

#define MW_REMOTE_ACCESS (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)
/* What a bind may ask for: remote rights, plus LOCAL_WRITE, which says
 * nothing about the window and is ignored (rdma-core's tests pass it). */
#define MW_BIND_ACCESS (MW_REMOTE_ACCESS | IBV_ACCESS_LOCAL_WRITE)

struct rnic_mw *rnic_mw_alloc(struct rnic_pd *pd, enum ibv_mw_type type)
{
	struct rnic_mw *mw;
	struct rnic *r;
	uint32_t slot;

	if (!pd || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)) {
		errno = EINVAL;
		return NULL;
	}
	r = pd->r;
	slot = rnic_key_slot_alloc(r);
	if (!slot) {
		errno = ENOMEM;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	mw->type = type;
	mw->view.pd = pd;
	mw->view.window = mw;
	r->mr_gen[slot]++;
	mw->view.key = slot << 8 | r->mr_gen[slot];
	r->mrs[slot] = &mw->view;
	pd->refs++;
	r->n_mr++;
	return mw;
}

static void unbind(struct rnic_mw *mw)
{
	if (mw->mr)
		mw->mr->bound_windows--;
	mw->mr = NULL;
	mw->view.addr = NULL;
	mw->view.len = 0;
	mw->view.iova = 0;
	mw->view.access = 0;
}

int rnic_mw_dealloc(struct rnic_mw *mw)
{
	struct rnic *r;

	if (!mw)
		return EINVAL;
	r = mw->view.pd->r;
	unbind(mw);
	r->mrs[mw->view.key >> 8] = NULL;
	mw->view.pd->refs--;
	r->n_mr--;
	free(mw);
	return 0;
}

uint32_t rnic_mw_rkey(const struct rnic_mw *mw)
{
	return mw->view.key;
}

/* The window whose index `rkey` carries (any key byte), or NULL. */
static struct rnic_mw *mw_by_index(struct rnic *r, uint32_t rkey)
{
	uint32_t slot = rkey >> 8;

	if (slot == 0 || slot > r->cfg.max_mr || !r->mrs[slot])
		return NULL;
	return r->mrs[slot]->window;
}

/* The region `lkey` names exactly (not a window), or NULL. */
static struct rnic_mr *mr_by_key(struct rnic *r, uint32_t lkey)
{
	uint32_t slot = lkey >> 8;
	struct rnic_mr *mr;

	if (slot == 0 || slot > r->cfg.max_mr)
		return NULL;
	mr = r->mrs[slot];
	return mr && !mr->window && mr->key == lkey ? mr : NULL;
}

/* The checks of a bind (IBTA 10.6.7.2; the same set rxe makes).  Any
 * failure is a memory window bind error. */
static enum ibv_wc_status bind_check(struct rnic_qp *qp, const struct rnic_send_wqe *w,
				     struct rnic_mw *mw, struct rnic_mr **out_mr)
{
	struct rnic_mr *mr = NULL;

	*out_mr = NULL;
	if (!mw || mw->view.pd != qp->pd)
		return IBV_WC_MW_BIND_ERR;
	/* The window keeps its index; only the key byte may change (the
	 * ibv_mw's rkey may lag a type 2 bind, so only its index counts). */
	if ((w->bind_new_rkey >> 8) != (mw->view.key >> 8))
		return IBV_WC_MW_BIND_ERR;
	/* A type 2 window must be invalidated before it is bound again. */
	if (mw->type == IBV_MW_TYPE_2 && mw->mr)
		return IBV_WC_MW_BIND_ERR;
	if (w->bind_access & ~(unsigned int)MW_BIND_ACCESS)
		return IBV_WC_MW_BIND_ERR;
	if (!w->bind_has_mr)
		return w->bind_len == 0 && mw->type == IBV_MW_TYPE_1 ? IBV_WC_SUCCESS : IBV_WC_MW_BIND_ERR;
	mr = mr_by_key(qp->r, w->bind_mr_lkey);
	if (!mr || mr->pd != mw->view.pd || !(mr->access & IBV_ACCESS_MW_BIND))
		return IBV_WC_MW_BIND_ERR;
	/* Remote write or atomic through a window needs local write on the
	 * region (IBTA 10.6.7.2.2, as for registration C10-35). */
	if ((w->bind_access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return IBV_WC_MW_BIND_ERR;
	if (w->bind_addr < mr->iova || w->bind_len > mr->len || w->bind_addr - mr->iova > mr->len - w->bind_len)
		return IBV_WC_MW_BIND_ERR;
	*out_mr = mr;
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status rnic_mw_bind_wqe(struct rnic_qp *qp, const struct rnic_send_wqe *w)
{
	struct rnic_mw *mw = mw_by_index(qp->r, w->bind_mw_rkey);
	struct rnic_mr *mr;
	enum ibv_wc_status st = bind_check(qp, w, mw, &mr);

	if (st != IBV_WC_SUCCESS)
		return st;
	unbind(mw);
	mw->view.key = w->bind_new_rkey;
	if (mr) {
		mw->mr = mr;
		mr->bound_windows++;
		mw->view.addr = (uint8_t *)rnic_mr_ptr(mr, w->bind_addr);
		mw->view.iova = w->bind_addr;
		mw->view.len = w->bind_len;
		/* The region's on-demand flag goes along so the window's
		 * accesses are probed like the region's (mr.c). */
		mw->view.access = (int)(w->bind_access & MW_REMOTE_ACCESS) |
				  (mr->access & IBV_ACCESS_ON_DEMAND);
	}
	mw->qpn = qp->qpn;
	return IBV_WC_SUCCESS;
}

/* A bound type 2 window of qp's PD whose current rkey is exactly `rkey`.
 * IBTA 10.6.7.2.4: only type 2 windows (and fast-registered regions,
 * which softrnic lacks) can be invalidated. */
static struct rnic_mw *invalidatable(struct rnic_qp *qp, uint32_t rkey)
{
	struct rnic_mw *mw = mw_by_index(qp->r, rkey);

	if (!mw || mw->type != IBV_MW_TYPE_2 || mw->view.key != rkey || mw->view.pd != qp->pd || !mw->mr)
		return NULL;
	return mw;
}

enum ibv_wc_status rnic_mw_local_inv(struct rnic_qp *qp, uint32_t rkey)
{
	struct rnic_mw *mw = invalidatable(qp, rkey);

	if (!mw)
		return IBV_WC_LOC_QP_OP_ERR;    /* as rxe */
	unbind(mw);
	return IBV_WC_SUCCESS;
}

bool rnic_mw_can_remote_inv(struct rnic_qp *qp, uint32_t rkey)
{
	struct rnic_mw *mw = invalidatable(qp, rkey);

	/* Type 2B: only through the QP the window was bound through. */
	return mw && mw->qpn == qp->qpn;
}

void rnic_mw_remote_inv(struct rnic_qp *qp, uint32_t rkey)
{
	if (rnic_mw_can_remote_inv(qp, rkey))
		unbind(invalidatable(qp, rkey));
}

void rnic_mw_unbind_all(struct rnic_mr *mr)
{
	struct rnic *r = mr->pd->r;

	/* A scan of the key table, only when windows are bound: binding is
	 * rare next to data transfer, so no per-region list is kept. */
	for (uint32_t slot = 1; mr->bound_windows && slot <= r->cfg.max_mr; slot++) {
		struct rnic_mr *e = r->mrs[slot];

		if (e && e->window && e->window->mr == mr)
			unbind(e->window);
	}
}
