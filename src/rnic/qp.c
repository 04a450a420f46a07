/*
 * qp.c — queue pairs: create, the state machine of IBTA 11.2.5 / 10.3
 * (RESET -> INIT -> RTR -> RTS <-> SQD, SQE, ERR), query, destroy, and the
 * flush of outstanding work requests when a QP enters ERR.
 *
 * ibv_modify_qp is validated the way the kernel validates it for every
 * provider (ib_modify_qp_is_ok): a table of legal transitions, each with
 * the attribute-mask bits required and allowed per QP type.  Validation
 * is done completely before anything changes, so a rejected modify leaves
 * the QP untouched.
 */
#include <stdlib.h>

#include "rnic/rnic_int.h"

/* ---- helpers shared with the state machines ---------------------------- */

uint32_t rnic_mtu_bytes(enum ibv_mtu mtu)
{
	switch (mtu) {
	case IBV_MTU_256: return 256;
	case IBV_MTU_512: return 512;
	case IBV_MTU_1024: return 1024;
	case IBV_MTU_2048: return 2048;
	case IBV_MTU_4096: return 4096;
	default: return 0;
	}
}

bool rnic_qp_can_send(const struct rnic_qp *qp)
{
	enum ibv_qp_state s = qp->attr.qp_state;

	return s == IBV_QPS_RTS || s == IBV_QPS_SQD;
}

bool rnic_qp_can_receive(const struct rnic_qp *qp)
{
	enum ibv_qp_state s = qp->attr.qp_state;

	return s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE;
}

enum ibv_wc_status rnic_scatter(struct rnic_qp *qp, const struct rnic_sge *sge, uint32_t num_sge,
				uint32_t offset, const uint8_t *src, uint32_t len)
{
	return rnic_scatter_pd(qp->r, qp->pd, sge, num_sge, offset, src, len);
}

enum ibv_wc_status rnic_scatter_pd(struct rnic *r, struct rnic_pd *pd, const struct rnic_sge *sge,
				   uint32_t num_sge, uint32_t offset, const uint8_t *src, uint32_t len)
{
	for (uint32_t i = 0; i < num_sge && len; i++) {
		struct rnic_mr *mr;
		uint32_t n;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		n = sge[i].length - offset;
		if (n > len)
			n = len;
		mr = rnic_mr_check(r, pd, sge[i].lkey, IBV_ACCESS_LOCAL_WRITE,
				   sge[i].addr + offset, n);
		if (!mr || !rnic_mem_copy(r, rnic_mr_ptr(mr, sge[i].addr + offset), src, n))
			return IBV_WC_LOC_PROT_ERR;
		src += n;
		len -= n;
		offset = 0;
	}
	return len ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

enum rnic_rx_copied rnic_rx_copy(struct rnic *r, const struct wire_ib *pkt, uint8_t *dst)
{
	if (pkt->payload || !r->rx_remote) {
		if (pkt->payload_len && !rnic_mem_copy(r, dst, pkt->payload, pkt->payload_len))
			return RNIC_RX_FAULT;
		return RNIC_RX_COPIED;
	}
	struct iovec iov = { .iov_base = dst, .iov_len = pkt->payload_len };
	if (r->rx_remote->read(r->rx_remote, &iov, 1) == 0)
		return RNIC_RX_COPIED;
	/* Which side failed: the port's read reports both alike. */
	if (!rnic_mem_probe(r, dst, pkt->payload_len, true))
		return RNIC_RX_FAULT;
	r->ctr.rx_drop_msg_pull++;
	return RNIC_RX_NOT_READ;
}

enum ibv_wc_status rnic_rx_scatter(struct rnic *r, struct rnic_pd *pd, const struct rnic_sge *sge, uint32_t num_sge,
				   uint32_t offset, const struct wire_ib *pkt, bool *pulled)
{
	uint32_t len = pkt->payload_len;
	unsigned n = 0;

	*pulled = true;
	if (pkt->payload || !r->rx_remote)
		return rnic_scatter_pd(r, pd, sge, num_sge, offset, pkt->payload, len);
	/* Every key checked before a byte is read; then one read. */
	for (uint32_t i = 0; i < num_sge && len && n < r->cfg.max_sge + 1; i++) {
		struct rnic_mr *mr;
		uint32_t k;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		k = sge[i].length - offset < len ? sge[i].length - offset : len;
		mr = rnic_mr_check(r, pd, sge[i].lkey, IBV_ACCESS_LOCAL_WRITE, sge[i].addr + offset, k);
		if (!mr)
			return IBV_WC_LOC_PROT_ERR;
		r->rx_iov[n++] = (struct iovec){ .iov_base = rnic_mr_ptr(mr, sge[i].addr + offset), .iov_len = k };
		len -= k;
		offset = 0;
	}
	if (len)
		return IBV_WC_LOC_LEN_ERR;
	if (r->rx_remote->read(r->rx_remote, r->rx_iov, n) != 0) {
		/* Which side failed: the port's read reports both alike. */
		for (unsigned i = 0; i < n; i++)
			if (!rnic_mem_probe(r, r->rx_iov[i].iov_base, r->rx_iov[i].iov_len, true))
				return IBV_WC_LOC_PROT_ERR;
		r->ctr.rx_drop_msg_pull++;
		*pulled = false;
	}
	return IBV_WC_SUCCESS;
}

static enum ibv_wc_opcode send_wc_opcode(enum ibv_wr_opcode op)
{
	if (op == RNIC_WR_FLUSH)
		return RNIC_WC_FLUSH;
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_WRITE: return IBV_WC_ATOMIC_WRITE;
	case IBV_WR_BIND_MW: return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV: return IBV_WC_LOCAL_INV;
	default: return IBV_WC_SEND;
	}
}

bool rnic_qp_send_wc(const struct rnic_qp *qp, const struct rnic_send_wqe *wqe, enum ibv_wc_status status,
		     struct ibv_wc *wc)
{
	/* Unsignaled WRs complete silently only when they succeed (IBTA
	 * 10.8.3.1: errors always generate a completion). */
	if (status == IBV_WC_SUCCESS && !wqe->signaled)
		return false;
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wqe->wr_id;
	wc->status = status;
	wc->opcode = send_wc_opcode(wqe->opcode);
	wc->byte_len = wqe->length;
	wc->qp_num = qp->qpn;
	return true;
}

void rnic_qp_complete_send(struct rnic_qp *qp, struct rnic_send_wqe *wqe, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	if (rnic_qp_send_wc(qp, wqe, status, &wc))
		rnic_cq_push(qp->send_cq, &wc, false);
}

static void flush_recv(struct rnic_qp *qp, const struct rnic_recv_wqe *wqe)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wqe->wr_id;
	wc.status = IBV_WC_WR_FLUSH_ERR;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = qp->qpn;
	rnic_cq_push(qp->recv_cq, &wc, false);
}

static void flush_queues(struct rnic_qp *qp)
{
	while (qp->sq.comp != qp->sq.head) {
		rnic_qp_complete_send(qp, sq_at(&qp->sq, qp->sq.comp), IBV_WC_WR_FLUSH_ERR);
		qp->sq.comp++;
	}
	qp->sq.req = qp->sq.head;
	qp->req.offset = 0;
	if (qp->resp.have_wqe) {
		flush_recv(qp, &qp->resp.wqe);
		qp->resp.have_wqe = false;
	}
	while (qp->rq.tail != qp->rq.head) {
		flush_recv(qp, &qp->rq.wqe[qp->rq.tail % qp->rq.cap]);
		qp->rq.tail++;
	}
}

void rnic_qp_to_error(struct rnic_qp *qp)
{
	qp->attr.qp_state = IBV_QPS_ERR;
	qp->attr.cur_qp_state = IBV_QPS_ERR;
	flush_queues(qp);
	requester_reset(qp);
	completer_reset(qp);
	reorder_flush(qp);
	qp->resp.ack_deadline = RNIC_NO_DEADLINE;
	rnic_srq_qp_error(qp);
}

/* ---- create / destroy ----------------------------------------------------- */

static uint32_t alloc_qpn(struct rnic *r)
{
	uint32_t base = r->cfg.qpn_span ? r->cfg.qpn_base : 0;
	uint32_t span = r->cfg.qpn_span ? r->cfg.qpn_span : WIRE_QPN_MASK + 1;

	for (uint32_t tries = 0; tries <= r->cfg.max_qp; tries++) {
		uint32_t qpn = r->next_qpn;

		r->next_qpn = base + (r->next_qpn - base + 1) % span;
		if (r->next_qpn < 2)
			r->next_qpn = 2;
		if (qpn < 2 || r->qps[qpn % r->cfg.max_qp])
			continue;
		return qpn;
	}
	return 0;
}

static void free_queues(struct rnic_qp *qp)
{
	free(qp->sq.wqe);
	free(qp->sq.sge_pool);
	free(qp->sq.inline_pool);
	free(qp->rq.wqe);
	free(qp->rq.sge_pool);
	free(qp->resp.res);
	selective_free(qp);
}

static int alloc_queues(struct rnic_qp *qp, const struct ibv_qp_cap *cap)
{
	/* A zero-depth queue still gets one slot so ring arithmetic never
	 * divides by zero; posting to it fails with ENOMEM at depth 0. */
	qp->sq.cap = cap->max_send_wr ? cap->max_send_wr : 1;
	qp->sq.max_sge = cap->max_send_sge ? cap->max_send_sge : 1;
	qp->sq.max_inline = cap->max_inline_data;
	/* One slot more than the depth: the WQE the responder is filling
	 * (resp.wqe points at its SGEs) stays intact while the consumer
	 * refills the queue behind it. */
	qp->rq.cap = cap->max_recv_wr + 1;
	qp->rq.max_sge = cap->max_recv_sge ? cap->max_recv_sge : 1;

	qp->sq.wqe = calloc(qp->sq.cap, sizeof(*qp->sq.wqe));
	qp->sq.sge_pool = calloc((size_t)qp->sq.cap * qp->sq.max_sge, sizeof(struct rnic_sge));
	if (qp->sq.max_inline)
		qp->sq.inline_pool = malloc((size_t)qp->sq.cap * qp->sq.max_inline);
	qp->rq.wqe = calloc(qp->rq.cap, sizeof(*qp->rq.wqe));
	qp->rq.sge_pool = calloc((size_t)qp->rq.cap * qp->rq.max_sge, sizeof(struct rnic_sge));
	if (!qp->sq.wqe || !qp->sq.sge_pool || (qp->sq.max_inline && !qp->sq.inline_pool) ||
	    !qp->rq.wqe || !qp->rq.sge_pool)
		return ENOMEM;
	for (uint32_t i = 0; i < qp->sq.cap; i++) {
		qp->sq.wqe[i].sge = &qp->sq.sge_pool[(size_t)i * qp->sq.max_sge];
		if (qp->sq.max_inline)
			qp->sq.wqe[i].inline_data = &qp->sq.inline_pool[(size_t)i * qp->sq.max_inline];
	}
	for (uint32_t i = 0; i < qp->rq.cap; i++)
		qp->rq.wqe[i].sge = &qp->rq.sge_pool[(size_t)i * qp->rq.max_sge];
	return 0;
}

static int check_caps(const struct rnic_config *cfg, const struct ibv_qp_cap *cap)
{
	if (cap->max_send_wr > cfg->max_qp_wr || cap->max_recv_wr > cfg->max_qp_wr ||
	    cap->max_send_sge > cfg->max_sge || cap->max_recv_sge > cfg->max_sge ||
	    cap->max_inline_data > cfg->max_inline)
		return EINVAL;
	return 0;
}

struct rnic_qp *rnic_qp_create(struct rnic_pd *pd, struct rnic_cq *send_cq, struct rnic_cq *recv_cq,
			       struct ibv_qp_init_attr *init, void *qp_context)
{
	struct rnic_qp *qp;
	struct rnic *r;
	int err;

	if (!pd || !send_cq || !recv_cq || !init || send_cq->r != pd->r || recv_cq->r != pd->r) {
		errno = EINVAL;
		return NULL;
	}
	r = pd->r;
	if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UC && init->qp_type != IBV_QPT_UD) {
		/* Types verbs defines but softrnic does not implement (raw
		 * packet, XRC, driver) are "not supported", which test suites
		 * treat as a skip; anything else is a bad argument. */
		bool known = init->qp_type == IBV_QPT_RAW_PACKET || init->qp_type == IBV_QPT_XRC_SEND ||
			     init->qp_type == IBV_QPT_XRC_RECV || init->qp_type == IBV_QPT_DRIVER;
		errno = known ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	err = check_caps(&r->cfg, &init->cap);
	if (err) {
		errno = err;
		return NULL;
	}
	if (r->n_qp >= r->cfg.max_qp) {
		errno = ENOMEM;
		return NULL;
	}
	if (r->n_qp == r->live_cap) {
		uint32_t cap = r->live_cap ? 2 * r->live_cap : 16;
		struct rnic_qp **live = realloc(r->live, cap * sizeof(*live));
		if (!live) {
			errno = ENOMEM;
			return NULL;
		}
		r->live = live;
		r->live_cap = cap;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->r = r;
	qp->pd = pd;
	qp->send_cq = send_cq;
	qp->recv_cq = recv_cq;
	qp->ctx = qp_context;
	qp->type = init->qp_type;
	qp->sq_sig_all = init->sq_sig_all != 0;
	/* As rxe sizes a send WQE: room for max_send_sge SGEs or the inline
	 * data, whichever is larger, and all of it usable for inline data
	 * (rxe_qp_init_req), so a QP asked for no inline data still takes
	 * 16 bytes per SGE inline — programs rely on it (rdma_xclient). */
	{
		uint32_t sge_room = (init->cap.max_send_sge ? init->cap.max_send_sge : 1) *
				    (uint32_t)sizeof(struct ibv_sge);
		if (init->cap.max_inline_data < sge_room)
			init->cap.max_inline_data = sge_room < r->cfg.max_inline ? sge_room : r->cfg.max_inline;
	}
	qp->cap = init->cap;
	err = alloc_queues(qp, &init->cap);
	if (err) {
		free_queues(qp);
		free(qp);
		errno = err;
		return NULL;
	}
	qp->qpn = alloc_qpn(r);
	qp->timer_key = RNIC_NO_DEADLINE;
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.path_mtu = IBV_MTU_1024;
	/* UD has no path MTU attribute: its messages may be as large as the
	 * port's MTU (rxe: get_mtu() for UD is the port's mtu_cap). */
	if (qp->type == IBV_QPT_UD) {
		qp->attr.path_mtu = r->cfg.max_mtu;
		qp->mtu = rnic_mtu_bytes(r->cfg.max_mtu);
	}
	qp->attr.port_num = 1;
	qp->attr.cap = init->cap;
	requester_reset(qp);
	completer_reset(qp);
	responder_reset(qp);
	cc_qp_reset(qp);
	r->qps[qp->qpn % r->cfg.max_qp] = qp;
	qp->live_idx = r->n_qp;
	r->live[r->n_qp++] = qp;
	pd->refs++;
	send_cq->refs++;
	recv_cq->refs++;
	return qp;
}

uint32_t rnic_qp_num(const struct rnic_qp *qp)
{
	return qp->qpn;
}

int rnic_qp_destroy(struct rnic_qp *qp)
{
	struct rnic *r;

	if (!qp)
		return EINVAL;
	r = qp->r;
	rnic_pulls_settle(r);           /* none may name this QP afterwards */
	r->qps[qp->qpn % r->cfg.max_qp] = NULL;
	r->live[qp->live_idx] = r->live[--r->n_qp];
	r->live[qp->live_idx]->live_idx = qp->live_idx;
	qp->pd->refs--;
	qp->send_cq->refs--;
	qp->recv_cq->refs--;
	rnic_srq_detach(qp);
	ud_detach_all(qp);
	free_queues(qp);
	free(qp);
	return 0;
}

/* ---- the modify table ----------------------------------------------------- */

enum { T_RC, T_UC, T_UD, T_NTYPES };

struct qp_transition {
	bool valid;
	int req[T_NTYPES];
	int opt[T_NTYPES];
};

#define NSTATES (IBV_QPS_ERR + 1)

/* Required / optional attribute masks, IBTA 11.2.5.2 table 94 as encoded
 * by the kernel's ib_modify_qp_is_ok.  Transitions to RESET and ERR take
 * no attributes.  Alternate-path attributes are accepted and ignored
 * (softrnic has one path). */
static const struct qp_transition transitions[NSTATES][NSTATES] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.req = {
				[T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[T_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[T_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
			},
		},
		[IBV_QPS_RTR] = {
			.valid = true,
			.req = {
				[T_RC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
				[T_UC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
			},
			.opt = {
				[T_RC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
				[T_UC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.req = {
				[T_RC] = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					 IBV_QP_MAX_QP_RD_ATOMIC,
				[T_UC] = IBV_QP_SQ_PSN,
				[T_UD] = IBV_QP_SQ_PSN,
			},
			.opt = {
				[T_RC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
				[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PATH_MIG_STATE,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
					 IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER,
				[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
					 IBV_QP_PATH_MIG_STATE,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
			},
		},
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
				[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PATH_MIG_STATE,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_AV | IBV_QP_ALT_PATH |
					 IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE | IBV_QP_TIMEOUT |
					 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
					 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
				[T_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_AV | IBV_QP_ALT_PATH |
					 IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};

static int type_index(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? T_RC : t == IBV_QPT_UC ? T_UC : T_UD;
}

/* IBV_ACCESS_ON_DEMAND is a property of MRs; programs (rdma-core's own
 * tests) pass their MR access mask to the QP as well, and kernel
 * providers ignore the bit there, so it is accepted and has no effect. */
#define QP_KNOWN_ACCESS                                                          \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND |      \
	 RNIC_ACCESS_FLUSH_GLOBAL | RNIC_ACCESS_FLUSH_PERSISTENT)

/* Check every attribute value named in the mask. */
static int check_values(const struct rnic_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	const struct rnic_config *cfg = &qp->r->cfg;

	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != qp->attr.qp_state)
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~QP_KNOWN_ACCESS))
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return EINVAL;          /* one P_Key table entry: 0xffff */
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return EINVAL;
	if ((mask & IBV_QP_AV) && qp->type != IBV_QPT_UD && !a->ah_attr.is_global)
		return EINVAL;          /* RoCEv2 routes by GID only */
	if ((mask & IBV_QP_PATH_MTU) && !rnic_mtu_bytes(a->path_mtu))
		return EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > cfg->max_rd_atomic)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > cfg->max_rd_atomic)
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > WIRE_QPN_MASK)
		return EINVAL;
	if ((mask & IBV_QP_RQ_PSN) && a->rq_psn > WIRE_PSN_MASK)
		return EINVAL;
	if ((mask & IBV_QP_SQ_PSN) && a->sq_psn > WIRE_PSN_MASK)
		return EINVAL;
	if (mask & IBV_QP_CAP)
		return EINVAL;          /* not modifiable here */
	return 0;
}

static int set_dest_rd_atomic(struct rnic_qp *qp, uint8_t n)
{
	struct rnic_resource *res = NULL;

	if (n) {
		res = calloc(n, sizeof(*res));
		if (!res)
			return ENOMEM;
	}
	free(qp->resp.res);
	qp->resp.res = res;
	qp->resp.res_cap = n;
	qp->resp.res_next = 0;
	qp->attr.max_dest_rd_atomic = n;
	return 0;
}

static int apply_values(struct rnic_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	const struct rnic_config *cfg = &qp->r->cfg;

	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
		int err = set_dest_rd_atomic(qp, a->max_dest_rd_atomic);
		if (err)
			return err;
	}
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		qp->attr.port_num = a->port_num;
	if (mask & IBV_QP_QKEY)
		qp->attr.qkey = a->qkey;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		qp->attr.en_sqd_async_notify = a->en_sqd_async_notify;
	if (mask & IBV_QP_AV) {
		qp->attr.ah_attr = a->ah_attr;
		memcpy(qp->dgid.raw, a->ah_attr.grh.dgid.raw, sizeof(qp->dgid.raw));
		qp->dscp = a->ah_attr.grh.traffic_class >> 2;
		qp->ttl = RNIC_ROUTE_TTL;  /* not grh.hop_limit: see rnic.h */
	}
	if (mask & IBV_QP_PATH_MTU) {
		/* Clamp to what the device supports, as rxe does. */
		enum ibv_mtu m = a->path_mtu < cfg->max_mtu ? a->path_mtu : cfg->max_mtu;
		qp->attr.path_mtu = m;
		qp->mtu = rnic_mtu_bytes(m);
	}
	if (mask & IBV_QP_TIMEOUT)
		qp->attr.timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->attr.retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->attr.rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_DEST_QPN)
		qp->attr.dest_qp_num = a->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		qp->attr.rq_psn = a->rq_psn;
	if (mask & IBV_QP_SQ_PSN)
		qp->attr.sq_psn = a->sq_psn;
	if (mask & IBV_QP_PATH_MIG_STATE)
		qp->attr.path_mig_state = a->path_mig_state;
	if (mask & IBV_QP_ALT_PATH) {
		qp->attr.alt_ah_attr = a->alt_ah_attr;
		qp->attr.alt_pkey_index = a->alt_pkey_index;
		qp->attr.alt_port_num = a->alt_port_num;
		qp->attr.alt_timeout = a->alt_timeout;
	}
	return 0;
}

static void reset_qp(struct rnic_qp *qp)
{
	qp->msg_min = 0;
	qp->fast.on = false;
	/* RESET discards everything without completions (IBTA 10.3.1).
	 * Completions already in the CQs that the program has not polled go
	 * too, as mlx5 does (rdma-core's tests reset a QP in error and expect
	 * its flushed completions gone); rxe leaves them, the spec does not
	 * say, and a program that resets a QP has given up on them. */
	rnic_cq_purge_qp(qp->send_cq, qp->qpn);
	if (qp->recv_cq != qp->send_cq)
		rnic_cq_purge_qp(qp->recv_cq, qp->qpn);
	qp->sq.head = qp->sq.req = qp->sq.comp = 0;
	qp->rq.head = qp->rq.tail = 0;
	qp->last_wqe_reported = false;
	requester_reset(qp);
	completer_reset(qp);
	responder_reset(qp);
	cc_qp_reset(qp);
}

static bool sq_drained(const struct rnic_qp *qp)
{
	/* READs retired with their reads put off are not done (pull.c). */
	return qp->sq.comp == qp->sq.req && qp->req.offset == 0 && !qp->comp.pulls;
}

/* Raise SQ_DRAINED once the SQD transition asked for it and nothing is
 * outstanding (IBTA 11.6.3.1). */
void rnic_qp_check_drained(struct rnic_qp *qp)
{
	if (qp->attr.qp_state == IBV_QPS_SQD && qp->drained_notify && sq_drained(qp)) {
		qp->drained_notify = false;
		rnic_async(qp->r, IBV_EVENT_SQ_DRAINED, qp->ctx);
	}
}

static void enter_state(struct rnic_qp *qp, enum ibv_qp_state from, enum ibv_qp_state to, uint64_t now)
{
	qp->attr.qp_state = to;
	qp->attr.cur_qp_state = to;
	switch (to) {
	case IBV_QPS_RESET:
		reset_qp(qp);
		break;
	case IBV_QPS_RTR:
		qp->resp.epsn = qp->attr.rq_psn;
		qp->sport = qp->type == IBV_QPT_UD ? wire_udp_sport_ud(qp->qpn) :
			    wire_udp_sport_rc(qp->qpn, qp->attr.dest_qp_num);
		break;
	case IBV_QPS_RTS:
		if (from == IBV_QPS_RTR) {
			qp->req.psn = qp->attr.sq_psn;
			qp->req.psn_high = qp->attr.sq_psn;
			qp->comp.psn = qp->attr.sq_psn;
		}
		qp->comp.retry_left = qp->attr.retry_cnt;
		qp->comp.rnr_left = qp->attr.rnr_retry;
		requester_run(qp, now);
		break;
	case IBV_QPS_SQD:
		qp->drained_notify = qp->attr.en_sqd_async_notify != 0;
		rnic_qp_check_drained(qp);
		break;
	case IBV_QPS_ERR:
		rnic_qp_to_error(qp);
		break;
	default:
		break;
	}
}

int rnic_qp_modify(struct rnic_qp *qp, const struct ibv_qp_attr *attr, int attr_mask, uint64_t now)
{
	enum ibv_qp_state cur, next;
	const struct qp_transition *t;
	bool rate_limit = false;
	int ti, err;

	if (qp)
		rnic_pulls_settle(qp->r);      /* the state changed is whole */

	if (!qp || !attr)
		return EINVAL;
	cur = qp->attr.qp_state;
	next = (attr_mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if ((unsigned)next >= NSTATES)
		return EINVAL;
	t = &transitions[cur][next];
	ti = type_index(qp->type);
	if (!t->valid)
		return EINVAL;
	/* IBV_QP_RATE_LIMIT (the pacer, cc.c) may come with any transition
	 * into RTR, RTS or SQD: the kernel's table allows it only for raw
	 * packet QPs, the ones mlx5 paces, but softrnic paces RC, UC and UD
	 * (perftest's --rate_limit_type=PP sets it on RTR -> RTS). */
	if (attr_mask & IBV_QP_RATE_LIMIT) {
		if (next != IBV_QPS_RTR && next != IBV_QPS_RTS && next != IBV_QPS_SQD)
			return EINVAL;
		attr_mask &= ~IBV_QP_RATE_LIMIT;
		rate_limit = true;
	}
	if ((attr_mask & t->req[ti]) != t->req[ti])
		return EINVAL;
	if (attr_mask & ~(t->req[ti] | t->opt[ti] | IBV_QP_STATE))
		return EINVAL;
	/* CUR_STATE is only meaningful leaving RTR, RTS, SQD or SQE. */
	if ((attr_mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
	    cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
		return EINVAL;
	err = check_values(qp, attr, attr_mask);
	if (err)
		return err;
	if (rate_limit && (err = cc_check_rate_limit(qp, attr->rate_limit)) != 0)
		return err;
	/* SQD -> SQD changes path attributes only once the SQ is drained. */
	if (cur == IBV_QPS_SQD && next == IBV_QPS_SQD && !sq_drained(qp))
		return EBUSY;
	err = apply_values(qp, attr, attr_mask);
	if (err)
		return err;
	if (rate_limit)
		cc_set_rate_limit(qp, attr->rate_limit, now);
	if (attr_mask & IBV_QP_STATE)
		enter_state(qp, cur, next, now);
	return 0;
}

int rnic_qp_set_message_path(struct rnic_qp *qp, uint32_t min_bytes)
{
	if (!qp || qp->type != IBV_QPT_RC ||
	    (qp->attr.qp_state != IBV_QPS_RTR && qp->attr.qp_state != IBV_QPS_RTS) ||
	    (min_bytes && min_bytes < RNIC_PKT_MAX_PAYLOAD))
		return EINVAL;
	if (qp->sq.head != qp->sq.comp)
		return EBUSY;   /* PSNs already counted by the other rule */
	qp->msg_min = min_bytes;
	return 0;
}

int rnic_qp_query(struct rnic_qp *qp, struct ibv_qp_attr *attr, struct ibv_qp_init_attr *init)
{
	if (!qp)
		return EINVAL;
	rnic_pulls_settle(qp->r);       /* its PSNs as they will stand */
	if (attr) {
		*attr = qp->attr;
		attr->cur_qp_state = qp->attr.qp_state;
		attr->cap = qp->cap;
		attr->sq_draining = qp->attr.qp_state == IBV_QPS_SQD && !sq_drained(qp);
	}
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_context = qp->ctx;
		init->qp_type = qp->type;
		init->cap = qp->cap;
		init->sq_sig_all = qp->sq_sig_all;
	}
	return 0;
}
