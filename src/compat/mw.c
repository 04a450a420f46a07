/*
 * mw.c — the memory window verbs: ibv_alloc_mw, ibv_dealloc_mw and the
 * type 1 ibv_bind_mw (the header's inline verbs call the context ops
 * installed in device.c).
 *
 * The window itself lives in the rnic (src/rnic/mw.c).  A type 1 bind is
 * an ordinary IBV_WR_BIND_MW work request on the QP, as in rxe: it
 * executes in send-queue order and completes like any WR.  Its new rkey
 * is the current one with the next key byte (ibv_inc_rkey), stored in the
 * ibv_mw at post time, as ibv_bind_mw(3) says the verb does.  Type 2
 * windows are bound with IBV_WR_BIND_MW / ibv_wr_bind_mw, where the
 * consumer picks the rkey.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat/compat.h"

struct sr_mw {
	struct ibv_mw ibv;
	struct rnic_mw *mw;
};

struct ibv_mw *sr_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct srt_device *dev;
	struct sr_mw *mw;
	int err;

	if (!ibpd || !sr_is_our_context(ibpd->context)) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	dev = to_sr_ctx(ibpd->context)->dev;
	srt_lock(dev);
	/* EINVAL for a type that is neither 1 nor 2 (rdma-core's
	 * test_reg_mw_wrong_type, and the kernel's uverbs check). */
	mw->mw = rnic_mw_alloc(to_sr_pd(ibpd)->pd, type);
	err = errno;
	if (mw->mw)
		mw->ibv.rkey = rnic_mw_rkey(mw->mw);
	srt_unlock(dev);
	if (!mw->mw) {
		free(mw);
		errno = err ? err : EINVAL;
		return NULL;
	}
	mw->ibv.context = ibpd->context;
	mw->ibv.pd = ibpd;
	mw->ibv.handle = mw->ibv.rkey >> 8;
	mw->ibv.type = type;
	return &mw->ibv;
}

int sr_dealloc_mw(struct ibv_mw *ibmw)
{
	struct sr_mw *mw = (struct sr_mw *)ibmw;
	struct srt_device *dev;
	int ret;

	if (!ibmw || !sr_is_our_context(ibmw->context))
		return EINVAL;
	dev = to_sr_ctx(ibmw->context)->dev;
	srt_lock(dev);
	ret = rnic_mw_dealloc(mw->mw);
	srt_unlock(dev);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

/* ibv_bind_mw has already checked the type (1), the PD of the MR, and
 * that an unbind names no range. */
int sr_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *ibmw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr, *bad = NULL;
	int ret;

	if (!ibqp || !ibmw || !mw_bind || ibqp->context != ibmw->context)
		return EINVAL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = ibmw;
	wr.bind_mw.rkey = ibv_inc_rkey(ibmw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = srt_post_send(to_sr_ctx(ibqp->context)->dev, to_sr_qp(ibqp)->qp, &wr, &bad);
	if (ret)
		return ret;
	ibmw->rkey = wr.bind_mw.rkey;
	return 0;
}
