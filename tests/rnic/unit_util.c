/*
 * unit_util.c — the two-node packet loop and helpers of the rnic unit
 * tests (see unit_util.h).
 */
#include "unit_util.h"

#include <stdlib.h>
#include <string.h>

static void enqueue(struct ut_loop *l, int to, const uint8_t *ib, size_t len)
{
	struct ut_pkt *p;

	REQUIRE(l->qlen < l->cap, "queue overflow");
	p = &l->q[(l->qhead + l->qlen) % l->cap];
	p->to = to;
	p->len = len;
	memcpy(p->data, ib, len);
	l->qlen++;
}

static void xmit(void *ctx, const struct rnic_tx *tx)
{
	struct ut_node *n = ctx;
	struct ut_loop *l = n->l;
	int to = 1 - n->id;
	uint64_t idx = l->sent[n->id]++;

	CHECK(memcmp(tx->dst.raw, l->gid[to].raw, 16) == 0);
	CHECK(tx->ib_len <= WIRE_MAX_IB_PACKET);
	/* The QPs of these tests have hop_limit 1 (as ibv_rc_pingpong sets
	 * it); the packets still leave with the route's TTL. */
	CHECK(tx->ttl == RNIC_ROUTE_TTL);
	if (l->drop && l->drop(l, n->id, idx, tx->ib, tx->ib_len))
		return;
	enqueue(l, to, tx->ib, tx->ib_len);
	if (l->dup && l->dup(l, n->id, idx, tx->ib, tx->ib_len))
		enqueue(l, to, tx->ib, tx->ib_len);
}

static void record_event(void *ctx, enum ibv_event_type type, void *obj)
{
	struct ut_loop *l = ((struct ut_node *)ctx)->l;

	if (l->nev < (int)(sizeof(l->ev) / sizeof(l->ev[0])))
		l->ev[l->nev++] = (struct ut_event){ type, obj };
}

int ut_count_events(const struct ut_loop *l, enum ibv_event_type type, void *obj)
{
	int n = 0;

	for (int i = 0; i < l->nev; i++)
		n += l->ev[i].type == type && l->ev[i].obj == obj;
	return n;
}

void ut_loop_init(struct ut_loop *l, size_t cap, const struct rnic_config *cfg, uint32_t seed_base,
		  bool record_events)
{
	memset(l, 0, sizeof(*l));
	l->q = calloc(cap, sizeof(*l->q));
	l->cap = cap;
	l->now = 1000;
	for (int i = 0; i < 2; i++) {
		struct rnic_io io = { .ctx = &l->node[i], .xmit = xmit,
				      .async_event = record_events ? record_event : NULL };
		struct rnic_config c;

		if (cfg)
			c = *cfg;
		else
			rnic_config_default(&c);
		c.seed = seed_base + (uint32_t)i;
		c.gid.raw[10] = c.gid.raw[11] = 0xff;
		c.gid.raw[12] = 10;
		c.gid.raw[15] = (uint8_t)(i + 1);
		l->gid[i] = c.gid;
		l->node[i].l = l;
		l->node[i].id = i;
		l->r[i] = rnic_create(&c, &io);
		CHECK(l->r[i] != NULL);
	}
}

void ut_loop_fini(struct ut_loop *l)
{
	rnic_destroy(l->r[0]);
	rnic_destroy(l->r[1]);
	free(l->q);
}

bool ut_loop_step(struct ut_loop *l)
{
	static struct ut_pkt tmp;

	if (l->qlen) {
		struct rnic_rx rx;

		tmp = l->q[l->qhead];   /* receive may xmit, which may reuse the slot */
		l->qhead = (l->qhead + 1) % l->cap;
		l->qlen--;
		l->now += 100;
		rx = (struct rnic_rx){ .src = l->gid[1 - tmp.to], .dst = l->gid[tmp.to],
				       .ib = tmp.data, .ib_len = tmp.len };
		rnic_receive(l->r[tmp.to], &rx, l->now);
		return true;
	}
	uint64_t d0 = rnic_next_deadline(l->r[0]), d1 = rnic_next_deadline(l->r[1]);
	uint64_t d = d0 < d1 ? d0 : d1;
	if (d == UINT64_MAX)
		return false;
	if (d > l->now)
		l->now = d;
	rnic_advance(l->r[0], l->now);
	rnic_advance(l->r[1], l->now);
	return true;
}

void ut_loop_run(struct ut_loop *l, int max_steps)
{
	while (max_steps-- > 0 && ut_loop_step(l))
		;
}

void ut_fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

const struct ut_rc_opts ut_rc_default = {
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	.mtu = IBV_MTU_1024,
	.rd_atomic = 4,
	.hop_limit = 1,
};

int ut_connect_rc(struct ut_loop *l, int i, struct rnic_qp *qp, uint32_t dqpn, uint32_t sq_psn, uint32_t rq_psn,
		  uint8_t timeout, uint8_t retry, uint8_t rnr_retry, const struct ut_rc_opts *opts)
{
	const struct ut_rc_opts *o = opts ? opts : &ut_rc_default;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	int mask, err;

	err = rnic_qp_query(qp, &a, &init);
	if (err)
		return err;
	bool rc = init.qp_type == IBV_QPT_RC;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = (unsigned int)o->access;
	err = rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, l->now);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = o->mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = o->rd_atomic;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = o->hop_limit;
	memcpy(a.ah_attr.grh.dgid.raw, l->gid[1 - i].raw, 16);
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (rc)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	err = rnic_qp_modify(qp, &a, mask, l->now);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = o->rd_atomic;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	return rnic_qp_modify(qp, &a, mask, l->now);
}
