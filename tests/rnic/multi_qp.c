/*
 * multi_qp.c — many RC connections at once over a three-node pair network.
 *
 * fault_mix.c checks one connection in depth; this test checks that
 * connections do not disturb each other: three rnics, five connections
 * (two in parallel between the same two nodes), every QP sending and
 * responding at once, one shared send CQ and one shared receive CQ per
 * node, and a lossy, duplicating, reordering network.  The rnic must
 * demultiplex packets by destination QPN (IBTA 9.6.1.5), keep PSN spaces,
 * MSNs and retransmission per QP, and report each completion with the
 * right qp_num.  Checks per QP: send completions in order with the right
 * wr_id/opcode; receives in order with the right bytes; each WRITE's bytes
 * land in its own slot of the peer's target; READs return the untouched
 * pattern; FETCH_ADD returns exactly the running sum (atomics applied once)
 * and the counter ends at the total.
 *
 * Usage: rnic_multi_qp [--seed N | --seeds A-B]; SOFTRNIC_SEED=N.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NODES 3
#define CONNS 5
#define OPS 48                  /* per QP */
#define SLOT 3072u              /* per WRITE / SEND payload */
#define RO_LEN 4096u            /* read-only pattern in every target */

enum kind { K_SEND, K_WRITE, K_READ, K_FADD };

struct op {
	enum kind kind;
	uint32_t len;
	uint64_t add;
	bool signaled;
};

/* One QP: its node, its peer QP, what it sends and what it must see. */
struct qpx {
	int node;
	struct rnic_qp *qp;
	uint32_t qpn;
	struct qpx *peer;
	struct op ops[OPS];
	size_t posted;
	long done;                      /* last completed op index */
	size_t recv_seen;               /* receives completed here */
	size_t consumers[OPS];          /* peer ops (indexes) that are SENDs */
	size_t nconsumers;
	/* memory at this node */
	uint8_t *src;                   /* OPS * SLOT: payload of my op i */
	uint8_t *dst;                   /* OPS * SLOT: READ results, atomic results */
	uint8_t *tgt;                   /* OPS * SLOT write slots + RO pattern + counter */
	uint8_t *rbuf;                  /* OPS * SLOT receive slots */
	struct rnic_mr *src_mr, *dst_mr, *tgt_mr, *rbuf_mr;
	uint64_t fadd_sum;              /* model of the counter at the PEER */
	uint64_t expect_old[OPS];
};

struct world {
	struct pair *pair;
	struct rnic_pd *pd[NODES];
	struct rnic_cq *scq[NODES], *rcq[NODES];
	struct qpx q[2 * CONNS];
	bool failed;
};

static const int conn_nodes[CONNS][2] = { { 0, 1 }, { 0, 1 }, { 0, 2 }, { 1, 2 }, { 2, 0 } };

#define TGT_LEN ((size_t)OPS * SLOT + RO_LEN + 8)
#define COUNTER_OFF ((size_t)OPS * SLOT + RO_LEN)

/* Stop the run: a failure was reported (FAIL) and the rest would echo it. */
static void stop_failed(struct world *w)
{
	w->failed = true;
}

static struct qpx *by_qpn(struct world *w, int node, uint32_t qpn)
{
	for (int i = 0; i < 2 * CONNS; i++)
		if (w->q[i].node == node && w->q[i].qpn == qpn)
			return &w->q[i];
	return NULL;
}

static int setup_qp(struct world *w, struct qpx *x, int node)
{
	x->node = node;
	x->done = -1;
	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = OPS;
	init.cap.max_recv_wr = OPS;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	x->qp = rnic_qp_create(w->pd[node], w->scq[node], w->rcq[node], &init, x);
	REQUIRE_RET(x->qp, -1, "qp_create: %s", strerror(errno));
	x->qpn = rnic_qp_num(x->qp);
	x->src = malloc((size_t)OPS * SLOT);
	x->dst = calloc(OPS, SLOT);
	x->tgt = calloc(1, TGT_LEN);
	x->rbuf = calloc(OPS, SLOT);
	REQUIRE_RET(x->src && x->dst && x->tgt && x->rbuf, -1, "out of memory");
	for (size_t i = 0; i < (size_t)OPS * SLOT; i++)
		x->src[i] = (uint8_t)pair_random(w->pair);
	for (size_t i = 0; i < RO_LEN; i++)
		x->tgt[(size_t)OPS * SLOT + i] = (uint8_t)(i * 11 + (uint8_t)x->qpn);
	struct rnic_pd *pd = w->pd[node];
	x->src_mr = rnic_mr_reg(pd, x->src, (size_t)OPS * SLOT, (uint64_t)(uintptr_t)x->src, IBV_ACCESS_LOCAL_WRITE);
	x->dst_mr = rnic_mr_reg(pd, x->dst, (size_t)OPS * SLOT, (uint64_t)(uintptr_t)x->dst, IBV_ACCESS_LOCAL_WRITE);
	x->tgt_mr = rnic_mr_reg(pd, x->tgt, TGT_LEN, (uint64_t)(uintptr_t)x->tgt, HT_ALL_ACCESS);
	x->rbuf_mr = rnic_mr_reg(pd, x->rbuf, (size_t)OPS * SLOT, (uint64_t)(uintptr_t)x->rbuf, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE_RET(x->src_mr && x->dst_mr && x->tgt_mr && x->rbuf_mr, -1, "mr_reg: %s", strerror(errno));
	return 0;
}

static void gen_ops(struct world *w, struct qpx *x)
{
	for (size_t i = 0; i < OPS; i++) {
		struct op *o = &x->ops[i];
		o->kind = (enum kind)pair_random_below(w->pair, 4);
		o->len = (uint32_t)pair_random_below(w->pair, SLOT + 1);
		if (o->kind == K_READ && o->len > RO_LEN)
			o->len = RO_LEN;
		if (o->kind == K_FADD)
			o->len = 8;
		o->add = 1 + pair_random_below(w->pair, 1u << 20);
		o->signaled = pair_random_below(w->pair, 2) || i % 8 == 7 || i == OPS - 1;
		if (o->kind == K_SEND)
			x->peer->consumers[x->peer->nconsumers++] = i;
	}
}

static int connect_qp(struct world *w, struct qpx *x)
{
	uint64_t now = pair_now(w->pair);
	/* each side's initial PSN derives from its QPN, so the peer knows it */
	uint32_t psn = (uint32_t)(x->qpn * 7919u) & WIRE_PSN_MASK;
	uint32_t peer_psn = (uint32_t)(x->peer->qpn * 7919u) & WIRE_PSN_MASK;
	int rc = ht_to_init(x->qp, HT_ALL_ACCESS, now);
	if (!rc)
		rc = ht_to_rtr(x->qp, pair_gid(w->pair, (unsigned)x->peer->node), x->peer->qpn, peer_psn, IBV_MTU_1024,
			       4, 1, now);
	if (!rc)
		rc = ht_to_rts(x->qp, psn, 10, 7, 7, 4, now);
	REQUIRE_RET(rc == 0, -1, "connect qp %u: %s", x->qpn, strerror(rc));
	/* all receives this QP will need */
	for (size_t k = 0; k < x->nconsumers; k++) {
		struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)(x->rbuf + k * SLOT), .length = SLOT,
				       .lkey = rnic_mr_lkey(x->rbuf_mr) };
		struct ibv_recv_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1 }, *bad;
		rc = rnic_post_recv(x->qp, &wr, &bad);
		REQUIRE_RET(rc == 0, -1, "post_recv: %s", strerror(rc));
	}
	return 0;
}

static void post_all(struct world *w, struct qpx *x)
{
	struct qpx *p = x->peer;
	while (x->posted < OPS) {
		size_t i = x->posted;
		struct op *o = &x->ops[i];
		struct ibv_sge sge = { .length = o->len };
		struct ibv_send_wr wr, *bad;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = ((uint64_t)x->qpn << 32) | i;
		wr.sg_list = &sge;
		wr.num_sge = o->len ? 1 : 0;
		wr.send_flags = o->signaled ? IBV_SEND_SIGNALED : 0;
		switch (o->kind) {
		case K_SEND:
		case K_WRITE:
			sge.addr = (uint64_t)(uintptr_t)(x->src + i * SLOT);
			sge.lkey = rnic_mr_lkey(x->src_mr);
			wr.opcode = o->kind == K_SEND ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
			wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(p->tgt + i * SLOT);
			wr.wr.rdma.rkey = rnic_mr_rkey(p->tgt_mr);
			break;
		case K_READ:
			sge.addr = (uint64_t)(uintptr_t)(x->dst + i * SLOT);
			sge.lkey = rnic_mr_lkey(x->dst_mr);
			wr.opcode = IBV_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(p->tgt + (size_t)OPS * SLOT);
			wr.wr.rdma.rkey = rnic_mr_rkey(p->tgt_mr);
			break;
		case K_FADD:
			sge.addr = (uint64_t)(uintptr_t)(x->dst + i * SLOT);
			sge.lkey = rnic_mr_lkey(x->dst_mr);
			wr.num_sge = 1;
			wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)(p->tgt + COUNTER_OFF);
			wr.wr.atomic.rkey = rnic_mr_rkey(p->tgt_mr);
			wr.wr.atomic.compare_add = o->add;
			x->expect_old[i] = x->fadd_sum;
			x->fadd_sum += o->add;
			break;
		}
		int rc = rnic_post_send(x->qp, &wr, &bad, pair_now(w->pair));
		if (rc) {
			FAIL("qp %u: post_send op %zu: %s", x->qpn, i, strerror(rc));
			stop_failed(w);
			return;
		}
		x->posted++;
	}
}

static void check_done_through(struct world *w, struct qpx *x, size_t upto)
{
	struct qpx *p = x->peer;
	for (size_t j = (size_t)(x->done + 1); j <= upto; j++) {
		struct op *o = &x->ops[j];
		if (o->kind == K_READ && memcmp(x->dst + j * SLOT, p->tgt + (size_t)OPS * SLOT, o->len) != 0) {
			FAIL("qp %u op %zu: READ data differ", x->qpn, j);
			stop_failed(w);
		}
		if (o->kind == K_FADD) {
			uint64_t got;
			memcpy(&got, x->dst + j * SLOT, 8);
			if (got != x->expect_old[j]) {
				FAIL("qp %u op %zu: FETCH_ADD returned %llu, expected %llu", x->qpn, j,
					(unsigned long long)got, (unsigned long long)x->expect_old[j]);
				stop_failed(w);
			}
		}
	}
}

static void on_send_wc(struct world *w, int node, const struct ibv_wc *wc)
{
	struct qpx *x = by_qpn(w, node, wc->qp_num);
	if (!x || (wc->wr_id >> 32) != x->qpn) {
		FAIL("node %d: send completion for qp_num %u carries wr_id of qp %llu", node, wc->qp_num,
			(unsigned long long)(wc->wr_id >> 32));
		stop_failed(w);
		return;
	}
	size_t i = (size_t)(wc->wr_id & 0xffffffffu);
	size_t next = (size_t)(x->done + 1);
	while (next < OPS && !x->ops[next].signaled)
		next++;
	if (wc->status != IBV_WC_SUCCESS || i != next) {
		FAIL("qp %u: send completion op %zu status %s, expected op %zu SUCCESS", x->qpn, i,
			ht_wc_status_str(wc->status), next);
		stop_failed(w);
		return;
	}
	static const enum ibv_wc_opcode want[] = { IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD };
	if (wc->opcode != want[x->ops[i].kind]) {
		FAIL("qp %u op %zu: opcode %d, expected %d", x->qpn, i, wc->opcode, want[x->ops[i].kind]);
		stop_failed(w);
	}
	check_done_through(w, x, i);
	x->done = (long)i;
}

static void on_recv_wc(struct world *w, int node, const struct ibv_wc *wc)
{
	struct qpx *x = by_qpn(w, node, wc->qp_num);
	if (!x) {
		FAIL("node %d: receive completion for unknown qp_num %u", node, wc->qp_num);
		stop_failed(w);
		return;
	}
	size_t k = x->recv_seen;
	if (wc->status != IBV_WC_SUCCESS || wc->wr_id != k || k >= x->nconsumers) {
		FAIL("qp %u: receive wr_id %llu status %s, expected %zu SUCCESS", x->qpn,
			(unsigned long long)wc->wr_id, ht_wc_status_str(wc->status), k);
		stop_failed(w);
		return;
	}
	size_t i = x->consumers[k];
	const struct op *o = &x->peer->ops[i];
	if (wc->byte_len != o->len || memcmp(x->rbuf + k * SLOT, x->peer->src + i * SLOT, o->len) != 0) {
		FAIL("qp %u receive %zu (peer op %zu): byte_len %u (expected %u) or data differ", x->qpn, k, i,
			wc->byte_len, o->len);
		stop_failed(w);
	}
	x->recv_seen++;
}

static bool step(void *arg)
{
	struct world *w = arg;
	struct ibv_wc wc[16];
	for (int n = 0; n < NODES && !w->failed; n++) {
		int got = rnic_cq_poll(w->scq[n], 16, wc);
		for (int k = 0; k < got; k++)
			on_send_wc(w, n, &wc[k]);
		got = rnic_cq_poll(w->rcq[n], 16, wc);
		for (int k = 0; k < got; k++)
			on_recv_wc(w, n, &wc[k]);
	}
	if (w->failed)
		return true;
	for (int i = 0; i < 2 * CONNS; i++)
		if (w->q[i].done != OPS - 1 || w->q[i].recv_seen != w->q[i].nconsumers)
			return false;
	return true;
}

static void final_checks(struct world *w)
{
	for (int i = 0; i < 2 * CONNS; i++) {
		struct qpx *x = &w->q[i], *p = x->peer;
		/* my target holds exactly the peer's WRITEs, each in its slot */
		for (size_t j = 0; j < OPS; j++) {
			const struct op *o = &p->ops[j];
			uint32_t written = o->kind == K_WRITE ? o->len : 0;
			if (memcmp(x->tgt + j * SLOT, p->src + j * SLOT, written) != 0) {
				FAIL("qp %u: slot %zu does not hold the peer's WRITE", x->qpn, j);
				break;
			}
			for (size_t b = written; b < SLOT; b++)
				if (x->tgt[j * SLOT + b]) {
					FAIL("qp %u: slot %zu byte %zu written by someone", x->qpn, j, b);
					j = OPS;
					break;
				}
		}
		uint64_t counter;
		memcpy(&counter, x->tgt + COUNTER_OFF, 8);
		if (counter != p->fadd_sum)
			FAIL("qp %u: counter %llu, expected the peer's total %llu", x->qpn, (unsigned long long)counter,
				(unsigned long long)p->fadd_sum);
	}
}

static bool run_seed(uint64_t seed)
{
	int before = check_failures;
	struct world *w = calloc(1, sizeof(*w));
	if (!w)
		return false;
	struct rnic_config cfg;
	rnic_config_default(&cfg);
	cfg.seed = (uint32_t)seed;
	w->pair = pair_create(seed, NODES, &cfg);
	if (!w->pair) {
		FAIL("pair_create: %s", strerror(errno));
		free(w);
		return false;
	}
	struct pair_faults f = { .delay_ns = 3000, .jitter_ns = 1000, .loss = 0.04, .dup = 0.02, .reorder = 0.05,
				 .reorder_ns = 20000, .corrupt = 0.005 };
	pair_set_all_faults(w->pair, &f);
	for (int n = 0; n < NODES; n++) {
		struct rnic *r = pair_rnic(w->pair, (unsigned)n);
		w->pd[n] = rnic_pd_alloc(r);
		w->scq[n] = rnic_cq_create(r, 4096, NULL);
		w->rcq[n] = rnic_cq_create(r, 4096, NULL);
		if (!w->pd[n] || !w->scq[n] || !w->rcq[n]) {
			FAIL("pd/cq: %s", strerror(errno));
			goto out;
		}
	}
	for (int c = 0; c < CONNS; c++) {
		struct qpx *a = &w->q[2 * c], *b = &w->q[2 * c + 1];
		if (setup_qp(w, a, conn_nodes[c][0]) || setup_qp(w, b, conn_nodes[c][1]))
			goto out;
		a->peer = b;
		b->peer = a;
	}
	for (int i = 0; i < 2 * CONNS; i++)
		gen_ops(w, &w->q[i]);
	for (int i = 0; i < 2 * CONNS; i++)
		if (connect_qp(w, &w->q[i]))
			goto out;
	for (int i = 0; i < 2 * CONNS; i++)
		post_all(w, &w->q[i]);
	enum pair_run_result rr = pair_run_until(w->pair, step, w, 60000 * HT_MS);
	if (!w->failed && rr != PAIR_DONE) {
		FAIL("not finished (result %d) after %.1f ms simulated", rr, (double)pair_now(w->pair) / 1e6);
		for (int i = 0; i < 2 * CONNS; i++)
			printf("  qp %u (node %d): done through %ld of %d, receives %zu/%zu\n", w->q[i].qpn, w->q[i].node,
			       w->q[i].done, OPS, w->q[i].recv_seen, w->q[i].nconsumers);
	}
	if (!w->failed && rr == PAIR_DONE) {
		pair_run_for(w->pair, 100 * HT_MS);
		struct ibv_wc wc;
		for (int n = 0; n < NODES; n++)
			if (rnic_cq_poll(w->scq[n], 1, &wc) || rnic_cq_poll(w->rcq[n], 1, &wc))
				FAIL("node %d: extra completion qp %u wr_id %llx status %s", n, wc.qp_num,
					(unsigned long long)wc.wr_id, ht_wc_status_str(wc.status));
		final_checks(w);
	}
out:
	for (int i = 0; i < 2 * CONNS; i++) {
		struct qpx *x = &w->q[i];
		if (x->qp)
			rnic_qp_destroy(x->qp);
		struct rnic_mr *mrs[] = { x->src_mr, x->dst_mr, x->tgt_mr, x->rbuf_mr };
		for (int m = 0; m < 4; m++)
			if (mrs[m])
				rnic_mr_dereg(mrs[m]);
		free(x->src);
		free(x->dst);
		free(x->tgt);
		free(x->rbuf);
	}
	for (int n = 0; n < NODES; n++) {
		if (w->scq[n])
			rnic_cq_destroy(w->scq[n]);
		if (w->rcq[n])
			rnic_cq_destroy(w->rcq[n]);
		if (w->pd[n])
			rnic_pd_free(w->pd[n]);
	}
	pair_destroy(w->pair);
	free(w);
	return check_failures == before;
}

int main(int argc, char **argv)
{
	static const uint64_t defaults[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	uint64_t seeds[4096];
	size_t n = ht_seeds_from_args(argc, argv, seeds, 4096, defaults, sizeof(defaults) / sizeof(defaults[0]));
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		check_begin("multi-QP seed %llu", (unsigned long long)seeds[i]);
		check_seed(seeds[i]);
		run_seed(seeds[i]);
		if (check_end()) {
			printf("  replay: SOFTRNIC_SEED=%llu %s\n", (unsigned long long)seeds[i], argv[0]);
			failed++;
		}
	}
	check_seeded = false;
	printf("%s: %zu seeds, %d failed\n", failed ? "FAIL" : "PASS", n, failed);
	check_exit("multi_qp");
	return failed ? 1 : 0;
}
