/*
 * flows.c — several senders writing to one receiver over the seeded pair
 * (see flows.h).
 */
#include "flows.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int flows_build(struct flows *w, enum ibv_mtu mtu)
{
	struct rnic *rr = pair_rnic(w->pair, w->receiver);
	w->rpd = rnic_pd_alloc(rr);
	w->rcq = rnic_cq_create(rr, 64, NULL);
	REQUIRE_RET(w->rpd && w->rcq, -1, "%s", "receiver pd/cq");
	for (unsigned i = 0; i < w->nflows; i++) {
		struct flow *f = &w->f[i];
		struct rnic *r = pair_rnic(w->pair, i);
		struct ibv_qp_init_attr init;

		w->pd[i] = rnic_pd_alloc(r);
		f->cq = rnic_cq_create(r, 64, NULL);
		REQUIRE_RET(w->pd[i] && f->cq, -1, "%s", "sender pd/cq");
		memset(&init, 0, sizeof(init));
		init.qp_type = IBV_QPT_RC;
		init.cap.max_send_wr = 32;
		init.cap.max_recv_wr = 4;
		init.cap.max_send_sge = init.cap.max_recv_sge = 1;
		f->qp = rnic_qp_create(w->pd[i], f->cq, f->cq, &init, NULL);
		f->peer = rnic_qp_create(w->rpd, w->rcq, w->rcq, &init, NULL);
		REQUIRE_RET(f->qp && f->peer, -1, "%s", "qp_create");
		f->src = calloc(1, FLOWS_BUF);
		f->dst = calloc(1, FLOWS_BUF);
		REQUIRE_RET(f->src && f->dst, -1, "%s", "buffers");
		f->src_mr = rnic_mr_reg(w->pd[i], f->src, FLOWS_BUF, FLOWS_SRC_IOVA, IBV_ACCESS_LOCAL_WRITE);
		f->dst_mr = rnic_mr_reg(w->rpd, f->dst, FLOWS_BUF, FLOWS_DST_IOVA(i),
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		REQUIRE_RET(f->src_mr && f->dst_mr, -1, "%s", "mr_reg");
		REQUIRE_RET(ht_to_init(f->qp, HT_ALL_ACCESS, 0) == 0 && ht_to_init(f->peer, HT_ALL_ACCESS, 0) == 0,
			    -1, "%s", "init");
		REQUIRE_RET(ht_to_rtr(f->qp, pair_gid(w->pair, w->receiver), rnic_qp_num(f->peer), 0, mtu, 0, 0, 0) == 0,
			    -1, "%s", "rtr");
		REQUIRE_RET(ht_to_rtr(f->peer, pair_gid(w->pair, i), rnic_qp_num(f->qp), 0, mtu, 0, 0, 0) == 0, -1,
			    "%s", "rtr");
		/* timeout 14: 67 ms, the QP's own timer */
		REQUIRE_RET(ht_to_rts(f->qp, 0, 14, 7, 7, 0, 0) == 0 && ht_to_rts(f->peer, 0, 14, 7, 7, 0, 0) == 0, -1,
			    "%s", "rts");
	}
	return 0;
}

void flows_destroy(struct flows *w)
{
	/* Objects in dependency order; pair_destroy frees the rnics. */
	for (unsigned i = 0; i < w->nflows; i++) {
		struct flow *f = &w->f[i];

		if (f->qp)
			rnic_qp_destroy(f->qp);
		if (f->peer)
			rnic_qp_destroy(f->peer);
		if (f->src_mr)
			rnic_mr_dereg(f->src_mr);
		if (f->dst_mr)
			rnic_mr_dereg(f->dst_mr);
		if (f->cq)
			rnic_cq_destroy(f->cq);
		if (w->pd[i])
			rnic_pd_free(w->pd[i]);
		free(f->src);
		free(f->dst);
	}
	if (w->rcq)
		rnic_cq_destroy(w->rcq);
	if (w->rpd)
		rnic_pd_free(w->rpd);
	pair_destroy(w->pair);
}

void flows_post_write(struct flows *w, struct flow *f, uint32_t len)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad = NULL;

	wr_send_1(&wr, &sge, IBV_WR_RDMA_WRITE, f->posted++, FLOWS_SRC_IOVA, len, rnic_mr_lkey(f->src_mr));
	wr_remote(&wr, FLOWS_DST_IOVA(f - w->f), rnic_mr_rkey(f->dst_mr));
	wr.send_flags = IBV_SEND_SIGNALED;
	if (rnic_post_send(f->qp, &wr, &bad, pair_now(w->pair)) == 0)
		f->outstanding++;
	else
		f->error = true;
}

unsigned flows_reap(struct flow *f)
{
	struct ibv_wc wc[16];
	unsigned done = 0;
	int n;

	while ((n = rnic_cq_poll(f->cq, 16, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS)
				f->error = true;
			f->outstanding--;
			f->completed++;
		}
		done += (unsigned)n;
	}
	return done;
}
