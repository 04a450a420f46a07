/*
 * flow.c — the flows of the simulated fabric: an RDMA WRITE of some bytes
 * from one host to another on an RC QP pair of its own, from its start
 * time until its last WRITE completes (its FCT).
 *
 * A flow's QP pair exists only while it runs (a host's rnic looks at
 * every QP for its next deadline: idle ones would cost every event).
 * Making the pair touches both hosts, which may be in different
 * partitions: with one partition a flow's start is an event of its own
 * (flow_start) that makes the pair and posts the WRITEs; with several,
 * the pairs of the flows that start in a window are made before it,
 * every engine stopped (flows_window), and the WRITEs posted at the
 * start time in the source's partition.  Likewise at the end: the
 * source's partition destroys the destination's QP at once if it is its
 * own, else between windows (qp_doom, flows_between).
 */
#include <string.h>

#include "sim/net_int.h"

static int connect_qp(struct sim_net *n, struct rnic_qp *qp, unsigned peer, uint32_t peer_qpn, uint64_t now)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, now))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = n->ho.mtu >= 4096 ? IBV_MTU_4096 : n->ho.mtu >= 2048 ? IBV_MTU_2048
		     : n->ho.mtu >= 1024 ? IBV_MTU_1024 : n->ho.mtu >= 512 ? IBV_MTU_512 : IBV_MTU_256;
	a.dest_qp_num = peer_qpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = 26 << 2;  /* DSCP 26: the RoCE priority */
	gid_of_host(peer, (struct rnic_gid *)a.ah_attr.grh.dgid.raw);
	if (rnic_qp_modify(qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			   now))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = n->ho.qp_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return rnic_qp_modify(qp, &a,
			      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				      IBV_QP_MAX_QP_RD_ATOMIC,
			      now);
}

/* A flow's QP pair, created and connected at `now` (0, or -1: failed,
 * and counted as done in partition P). */
static int flow_setup(struct sim_net *n, struct part *P, uint32_t id, uint64_t now)
{
	struct flow *f = &n->flows[id];
	struct host *src = n->hosts[f->r.src], *dst = n->hosts[f->r.dst];
	struct ibv_qp_init_attr init;

	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = (uint32_t)(f->r.bytes / HOST_BUF + 2);
	init.cap.max_recv_wr = 1;
	init.cap.max_send_sge = init.cap.max_recv_sge = 1;
	f->qp_src = rnic_qp_create(src->pd, src->cq, src->cq, &init, NULL);
	f->qp_dst = rnic_qp_create(dst->pd, dst->cq, dst->cq, &init, NULL);
	if (!f->qp_src || !f->qp_dst || connect_qp(n, f->qp_src, f->r.dst, rnic_qp_num(f->qp_dst), now) ||
	    connect_qp(n, f->qp_dst, f->r.src, rnic_qp_num(f->qp_src), now)) {
		f->r.failed = true;
		f->r.fct_ns = 1;
		P->done++;
		return -1;
	}
	uint32_t qpn = rnic_qp_num(f->qp_dst);
	dst->slot_qpn[qpn % dst->slots] = qpn;
	dst->slot_flow[qpn % dst->slots] = id + 1;
	/* The sender's QP too: HPCC's ACKs find their flow by it. */
	qpn = rnic_qp_num(f->qp_src);
	src->slot_qpn[qpn % src->slots] = qpn;
	src->slot_flow[qpn % src->slots] = id + 1;
	return 0;
}

/* Post the flow as WRITEs of at most HOST_BUF bytes; the last signaled. */
static void flow_post(struct sim_net *n, uint32_t id, uint64_t now)
{
	struct flow *f = &n->flows[id];
	struct host *src = n->hosts[f->r.src], *dst = n->hosts[f->r.dst];
	uint64_t left = f->r.bytes;

	while (left) {
		uint32_t len = left > HOST_BUF ? HOST_BUF : (uint32_t)left;
		struct ibv_sge sge = { .addr = (uintptr_t)src->buf, .length = len, .lkey = rnic_mr_lkey(src->mr) };
		struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE },
				   *bad;
		left -= len;
		if (!left)
			wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)dst->buf;
		wr.wr.rdma.rkey = rnic_mr_rkey(dst->mr);
		if (rnic_post_send(f->qp_src, &wr, &bad, now)) {
			f->r.failed = true;
			f->r.fct_ns = 1;
			src->node->part->done++;
			break;
		}
	}
	host_after(src);
}

/* Put the earliest waiting start into the engine (a flow's own event). */
static int arm_next_start(struct sim_net *n)
{
	struct sim_event ev;

	if (!sim_pop(&n->starts, &ev))
		return 0;
	n->armed = (int64_t)ev.arg;
	n->armed_at = ev.at;
	n->armed_seq = ev.seq;
	return sim_at_seq(n->eng, ev.at, ev.seq, ev.fn, ev.ctx, ev.arg);
}

/* One partition: a flow starts, its QPs made and its WRITEs posted now. */
static void flow_start(void *ctx, uint64_t arg, uint64_t now)
{
	struct sim_net *n = ctx;
	if ((int64_t)arg == n->armed) {
		n->armed = -1;
		if (arm_next_start(n))
			n->armed = -1;  /* out of memory: later flows never start */
	}
	struct flow *f = &n->flows[arg];

	f->r.start_ns = now;
	f->arrived = 0;
	if (!flow_setup(n, n->hosts[f->r.src]->node->part, (uint32_t)arg, now))
		flow_post(n, (uint32_t)arg, now);
}

/* Several partitions: its QPs were made before the window (flows_window),
 * its WRITEs are posted now, in the source's partition. */
static void flow_post_event(void *ctx, uint64_t arg, uint64_t now)
{
	flow_post(ctx, (uint32_t)arg, now);
}

int sim_add_flow(struct sim_net *n, unsigned src, unsigned dst, uint64_t bytes, uint64_t start_ns)
{
	if (src >= n->nhosts || dst >= n->nhosts || src == dst || !bytes || !n->hosts[src]->rnic)
		return -1;
	if (n->nflows == n->capflows) {
		unsigned cap = n->capflows ? n->capflows * 2 : 64;
		struct flow *f = realloc(n->flows, cap * sizeof(*f));
		if (!f)
			return -1;
		n->flows = f;
		n->capflows = cap;
	}
	struct flow *f = &n->flows[n->nflows];
	memset(f, 0, sizeof(*f));
	f->r = (struct sim_flow_result){ .src = src, .dst = dst, .bytes = bytes, .start_ns = start_ns };
	uint64_t at = start_ns < n->eng->now ? n->eng->now : start_ns, seq = sim_reserve_seq(n->eng);
	uint32_t id = n->nflows++;
	if (sim_at_seq(&n->starts, at, seq, flow_start, n, id)) {
		n->nflows--;
		return -1;
	}
	/* One partition: every waiting start comes after the armed one; one
	 * that comes before it goes into the engine at once, beside it. */
	bool first = n->armed < 0 || at < n->armed_at || (at == n->armed_at && seq < n->armed_seq);
	if (!n->starts_in_windows && first && arm_next_start(n)) {
		n->nflows--;
		return -1;
	}
	n->added++;
	return (int)id;
}

/* Several partitions, every engine stopped before the window [start,
 * end): the flows that start in it get their QPs (the only moment both
 * hosts' partitions may be touched; a pair exists up to a lookahead
 * early, idle), their WRITEs an event at their time in the source's
 * partition.  0 or ENOMEM. */
int flows_window(struct sim_net *n, uint64_t start, uint64_t end)
{
	struct sim_event ev;

	while (n->starts_in_windows && sim_next_time(&n->starts) < end && sim_pop(&n->starts, &ev)) {
		struct flow *f = &n->flows[ev.arg];
		struct part *S = n->hosts[f->r.src]->node->part;
		f->r.start_ns = ev.at;
		f->arrived = 0;
		if (!flow_setup(n, S, (uint32_t)ev.arg, start) && sim_at(S->eng, ev.at, flow_post_event, n, ev.arg))
			return ENOMEM;
	}
	return 0;
}

/* The earliest start held for a window (UINT64_MAX: none, or one
 * partition, whose starts are engine events). */
uint64_t flows_held_next(const struct sim_net *n)
{
	return n->starts_in_windows ? sim_next_time(&n->starts) : UINT64_MAX;
}

/* A QP of another partition's host, destroyed between windows.  If the
 * list cannot grow the run stops with ENOMEM (flows_between) and the QP
 * goes with its rnic at sim_net_destroy. */
static void qp_doom(struct part *P, struct rnic_qp *qp)
{
	if (P->ndead == P->capdead) {
		size_t cap = P->capdead ? 2 * P->capdead : 64;
		struct rnic_qp **v = realloc(P->dead, cap * sizeof(*v));
		if (!v) {
			P->error = ENOMEM;
			return;
		}
		P->dead = v;
		P->capdead = cap;
	}
	P->dead[P->ndead++] = qp;
}

/* Between windows: the QPs doomed by other partitions' hosts destroyed.
 * 0, or the first partition's error. */
int flows_between(struct sim_net *n)
{
	for (unsigned p = 0; p < n->nparts; p++) {
		struct part *P = &n->parts[p];
		for (size_t i = 0; i < P->ndead; i++)
			rnic_qp_destroy(P->dead[i]);
		P->ndead = 0;
		if (P->error)
			return P->error;
	}
	return 0;
}

/* A completion at a flow's source (its last WRITE, or an error): the
 * flow is done.  Done well, every byte is acknowledged and the pair can
 * go (a late duplicate finds no QP and is counted): the destination's QP
 * at once if its host is in P, else between windows. */
void flow_completed(struct sim_net *n, struct part *P, const struct ibv_wc *wc)
{
	struct flow *f = &n->flows[wc->wr_id];

	if (f->r.fct_ns)
		return;
	f->r.fct_ns = P->eng->now - f->r.start_ns;
	f->r.failed = wc->status != IBV_WC_SUCCESS;
	P->done++;
	if (!f->r.failed) {
		rnic_qp_destroy(f->qp_src);
		if (n->hosts[f->r.dst]->node->part == P)
			rnic_qp_destroy(f->qp_dst);
		else
			qp_doom(P, f->qp_dst);
		f->qp_src = f->qp_dst = NULL;
	}
}

/* At sim_net_destroy: the QPs of flows still running, and those doomed. */
void flows_free(struct sim_net *n)
{
	for (unsigned q = 0; q < n->nparts; q++) {
		struct part *P = &n->parts[q];
		for (size_t i = 0; i < P->ndead; i++)
			rnic_qp_destroy(P->dead[i]);
		free(P->dead);
	}
	for (unsigned i = 0; i < n->nflows; i++) {
		if (n->flows[i].qp_src)
			rnic_qp_destroy(n->flows[i].qp_src);
		if (n->flows[i].qp_dst)
			rnic_qp_destroy(n->flows[i].qp_dst);
	}
	free(n->flows);
}

/* ---- flows seen from outside (net.h) ------------------------------------ */

unsigned sim_flows(const struct sim_net *n)
{
	return n->nflows;
}

const struct sim_flow_result *sim_flow(const struct sim_net *n, unsigned i)
{
	return i < n->nflows ? &n->flows[i].r : NULL;
}

unsigned sim_flows_running(const struct sim_net *n)
{
	unsigned done = 0;

	for (unsigned q = 0; q < n->nparts; q++)
		done += n->parts[q].done;
	return n->added - done;
}

uint64_t sim_flow_arrived(const struct sim_net *n, unsigned i)
{
	return i < n->nflows ? n->flows[i].arrived : 0;
}
