/*
 * qp_state.c — the RC QP state machine through rnic_qp_modify/rnic_qp_query.
 *
 * The attribute masks follow IBTA 11.2.5 (Modify QP, table of required and
 * optional attributes per transition) as rdma-core and the kernel encode it
 * (ib_modify_qp_is_ok):
 *   RESET->INIT  required PKEY_INDEX PORT ACCESS_FLAGS
 *   INIT->INIT   optional PKEY_INDEX PORT ACCESS_FLAGS
 *   INIT->RTR    required AV PATH_MTU DEST_QPN RQ_PSN MAX_DEST_RD_ATOMIC
 *                         MIN_RNR_TIMER; optional ALT_PATH ACCESS_FLAGS PKEY_INDEX
 *   RTR->RTS     required TIMEOUT RETRY_CNT RNR_RETRY SQ_PSN MAX_QP_RD_ATOMIC;
 *                optional CUR_STATE ALT_PATH ACCESS_FLAGS MIN_RNR_TIMER PATH_MIG_STATE
 *   RTS->RTS     optional CUR_STATE ACCESS_FLAGS ALT_PATH PATH_MIG_STATE MIN_RNR_TIMER
 *   any->RESET, any->ERR: no attributes
 * A missing required or a forbidden attribute is EINVAL and leaves the QP
 * unchanged; so is an out-of-range value.  Query returns what was set.
 * Finally, traffic across the 24-bit PSN wrap (IBTA 9.7.1), with loss.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

struct fixture {
	struct pair *pair;
	struct rnic *r;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_qp *qp;
};

static int fx_setup(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->pair = pair_create(99, 2, NULL);
	REQUIRE_RET(f->pair, -1, "pair_create: %s", strerror(errno));
	f->r = pair_rnic(f->pair, 0);
	f->pd = rnic_pd_alloc(f->r);
	f->cq = rnic_cq_create(f->r, 64, NULL);
	REQUIRE_RET(f->pd && f->cq, -1, "pd/cq: %s", strerror(errno));
	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 16;
	init.cap.max_recv_wr = 16;
	init.cap.max_send_sge = 2;
	init.cap.max_recv_sge = 2;
	f->qp = rnic_qp_create(f->pd, f->cq, f->cq, &init, NULL);
	REQUIRE_RET(f->qp, -1, "qp_create: %s", strerror(errno));
	CHECK(init.cap.max_send_wr >= 16 && init.cap.max_recv_wr >= 16 && init.cap.max_send_sge >= 2,
	      "qp_create returned caps below the request: %u/%u/%u", init.cap.max_send_wr, init.cap.max_recv_wr,
	      init.cap.max_send_sge);
	return 0;
}

static void fx_teardown(struct fixture *f)
{
	if (f->qp)
		rnic_qp_destroy(f->qp);
	if (f->cq)
		rnic_cq_destroy(f->cq);
	if (f->pd)
		rnic_pd_free(f->pd);
	pair_destroy(f->pair);
}

static enum ibv_qp_state state_of(struct rnic_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	memset(&a, 0, sizeof(a));
	if (rnic_qp_query(qp, &a, &ia) != 0)
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

/* Attributes for each transition, valid as a whole. */
static void init_attrs(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->port_num = 1;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
}
#define INIT_REQ (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)

static void rtr_attrs(struct fixture *f, struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_2048;
	a->dest_qp_num = 0x123456;
	a->rq_psn = 0xabcdef;
	a->max_dest_rd_atomic = 3;
	a->min_rnr_timer = 12;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.hop_limit = 64;
	memcpy(a->ah_attr.grh.dgid.raw, pair_gid(f->pair, 1)->raw, 16);
}
#define RTR_REQ (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | \
		 IBV_QP_MIN_RNR_TIMER)

static void rts_attrs(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = 0x654321;
	a->timeout = 17;
	a->retry_cnt = 5;
	a->rnr_retry = 6;
	a->max_rd_atomic = 2;
}
#define RTS_REQ (IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)

static const struct {
	int bit;
	const char *name;
} attr_bits[] = {
	{ IBV_QP_CUR_STATE, "CUR_STATE" },
	{ IBV_QP_EN_SQD_ASYNC_NOTIFY, "EN_SQD_ASYNC_NOTIFY" },
	{ IBV_QP_ACCESS_FLAGS, "ACCESS_FLAGS" },
	{ IBV_QP_PKEY_INDEX, "PKEY_INDEX" },
	{ IBV_QP_PORT, "PORT" },
	{ IBV_QP_QKEY, "QKEY" },
	{ IBV_QP_AV, "AV" },
	{ IBV_QP_PATH_MTU, "PATH_MTU" },
	{ IBV_QP_TIMEOUT, "TIMEOUT" },
	{ IBV_QP_RETRY_CNT, "RETRY_CNT" },
	{ IBV_QP_RNR_RETRY, "RNR_RETRY" },
	{ IBV_QP_RQ_PSN, "RQ_PSN" },
	{ IBV_QP_MAX_QP_RD_ATOMIC, "MAX_QP_RD_ATOMIC" },
	{ IBV_QP_ALT_PATH, "ALT_PATH" },
	{ IBV_QP_MIN_RNR_TIMER, "MIN_RNR_TIMER" },
	{ IBV_QP_SQ_PSN, "SQ_PSN" },
	{ IBV_QP_MAX_DEST_RD_ATOMIC, "MAX_DEST_RD_ATOMIC" },
	{ IBV_QP_PATH_MIG_STATE, "PATH_MIG_STATE" },
	{ IBV_QP_CAP, "CAP" },
	{ IBV_QP_DEST_QPN, "DEST_QPN" },
};
#define NBITS (sizeof(attr_bits) / sizeof(attr_bits[0]))

/* For one transition: dropping any required bit, or adding any bit that is
 * neither required nor optional, is EINVAL and leaves the state alone. */
static void mask_rules(struct rnic_qp *qp, const struct ibv_qp_attr *a, int required, int optional,
		       enum ibv_qp_state from, const char *tr)
{
	for (size_t i = 0; i < NBITS; i++) {
		int bit = attr_bits[i].bit;
		int mask;
		const char *how;
		if (required & bit) {
			mask = IBV_QP_STATE | (required & ~bit);
			how = "without required";
		} else if (!(optional & bit)) {
			mask = IBV_QP_STATE | required | bit;
			how = "with forbidden";
		} else {
			continue;
		}
		int rc = rnic_qp_modify(qp, a, mask, 0);
		CHECK(rc == EINVAL, "%s %s %s: returned %d (%s), expected EINVAL", tr, how, attr_bits[i].name, rc,
		      strerror(rc));
		CHECK(state_of(qp) == from, "%s %s %s changed the state to %d", tr, how, attr_bits[i].name,
		      state_of(qp));
	}
}

static void expect_einval(struct rnic_qp *qp, const struct ibv_qp_attr *a, int mask, enum ibv_qp_state from,
			  const char *what)
{
	int rc = rnic_qp_modify(qp, a, mask, 0);
	CHECK(rc == EINVAL, "%s: returned %d (%s), expected EINVAL", what, rc, strerror(rc));
	CHECK(state_of(qp) == from, "%s changed the state to %d", what, state_of(qp));
}

static int transitions_case(void)
{
	check_begin("modify_qp attribute masks and transitions");
	struct fixture f;
	if (fx_setup(&f) == 0) {
		struct rnic_qp *qp = f.qp;
		struct ibv_qp_attr a;
		CHECK(state_of(qp) == IBV_QPS_RESET, "new QP state %d, expected RESET", state_of(qp));

		/* invalid transitions out of RESET */
		rtr_attrs(&f, &a);
		expect_einval(qp, &a, IBV_QP_STATE | RTR_REQ, IBV_QPS_RESET, "RESET->RTR");
		rts_attrs(&a);
		expect_einval(qp, &a, IBV_QP_STATE | RTS_REQ, IBV_QPS_RESET, "RESET->RTS");

		init_attrs(&a);
		mask_rules(qp, &a, INIT_REQ, 0, IBV_QPS_RESET, "RESET->INIT");
		init_attrs(&a);
		a.port_num = 2;
		expect_einval(qp, &a, IBV_QP_STATE | INIT_REQ, IBV_QPS_RESET, "RESET->INIT with port 2");
		init_attrs(&a);
		a.pkey_index = 1000;
		expect_einval(qp, &a, IBV_QP_STATE | INIT_REQ, IBV_QPS_RESET, "RESET->INIT with pkey_index 1000");
		init_attrs(&a);
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE | INIT_REQ, 0) == 0, "RESET->INIT");
		CHECK(state_of(qp) == IBV_QPS_INIT, "state %d after RESET->INIT", state_of(qp));

		/* INIT->INIT with optional attributes */
		init_attrs(&a);
		a.qp_access_flags = HT_ALL_ACCESS;
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, 0) == 0, "INIT->INIT access flags");
		mask_rules(qp, &a, 0, INIT_REQ, IBV_QPS_INIT, "INIT->INIT");

		rts_attrs(&a);
		expect_einval(qp, &a, IBV_QP_STATE | RTS_REQ, IBV_QPS_INIT, "INIT->RTS");

		rtr_attrs(&f, &a);
		mask_rules(qp, &a, RTR_REQ, IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX, IBV_QPS_INIT,
			   "INIT->RTR");
		rtr_attrs(&f, &a);
		a.path_mtu = (enum ibv_mtu)6;
		expect_einval(qp, &a, IBV_QP_STATE | RTR_REQ, IBV_QPS_INIT, "INIT->RTR with path_mtu 6");
		rtr_attrs(&f, &a);
		a.path_mtu = (enum ibv_mtu)0;
		expect_einval(qp, &a, IBV_QP_STATE | RTR_REQ, IBV_QPS_INIT, "INIT->RTR with path_mtu 0");
		rtr_attrs(&f, &a);
		a.dest_qp_num = 0x1000000;
		expect_einval(qp, &a, IBV_QP_STATE | RTR_REQ, IBV_QPS_INIT, "INIT->RTR with a 25-bit dest_qp_num");
		rtr_attrs(&f, &a);
		a.rq_psn = 0x1000000;
		expect_einval(qp, &a, IBV_QP_STATE | RTR_REQ, IBV_QPS_INIT, "INIT->RTR with a 25-bit rq_psn");
		rtr_attrs(&f, &a);
		a.max_dest_rd_atomic = (uint8_t)(rnic_get_config(f.r)->max_rd_atomic + 1);
		expect_einval(qp, &a, IBV_QP_STATE | RTR_REQ, IBV_QPS_INIT, "INIT->RTR with max_dest_rd_atomic > device");
		rtr_attrs(&f, &a);
		a.min_rnr_timer = 32;
		expect_einval(qp, &a, IBV_QP_STATE | RTR_REQ, IBV_QPS_INIT, "INIT->RTR with min_rnr_timer 32");
		rtr_attrs(&f, &a);
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE | RTR_REQ, 0) == 0, "INIT->RTR");
		CHECK(state_of(qp) == IBV_QPS_RTR, "state %d after INIT->RTR", state_of(qp));

		rtr_attrs(&f, &a);
		expect_einval(qp, &a, IBV_QP_STATE, IBV_QPS_RTR, "RTR->RTR");

		rts_attrs(&a);
		mask_rules(qp, &a, RTS_REQ,
			   IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
				   IBV_QP_PATH_MIG_STATE,
			   IBV_QPS_RTR, "RTR->RTS");
		rts_attrs(&a);
		a.retry_cnt = 8;
		expect_einval(qp, &a, IBV_QP_STATE | RTS_REQ, IBV_QPS_RTR, "RTR->RTS with retry_cnt 8");
		rts_attrs(&a);
		a.rnr_retry = 8;
		expect_einval(qp, &a, IBV_QP_STATE | RTS_REQ, IBV_QPS_RTR, "RTR->RTS with rnr_retry 8");
		rts_attrs(&a);
		a.timeout = 32;
		expect_einval(qp, &a, IBV_QP_STATE | RTS_REQ, IBV_QPS_RTR, "RTR->RTS with a 6-bit timeout");
		rts_attrs(&a);
		a.sq_psn = 0x1000000;
		expect_einval(qp, &a, IBV_QP_STATE | RTS_REQ, IBV_QPS_RTR, "RTR->RTS with a 25-bit sq_psn");
		rts_attrs(&a);
		a.max_rd_atomic = (uint8_t)(rnic_get_config(f.r)->max_rd_atomic + 1);
		expect_einval(qp, &a, IBV_QP_STATE | RTS_REQ, IBV_QPS_RTR, "RTR->RTS with max_rd_atomic > device");
		rts_attrs(&a);
		a.cur_qp_state = IBV_QPS_INIT;
		expect_einval(qp, &a, IBV_QP_STATE | RTS_REQ | IBV_QP_CUR_STATE, IBV_QPS_RTR,
			      "RTR->RTS claiming cur_qp_state INIT");
		rts_attrs(&a);
		a.cur_qp_state = IBV_QPS_RTR;
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE | RTS_REQ | IBV_QP_CUR_STATE, 0) == 0, "RTR->RTS");
		CHECK(state_of(qp) == IBV_QPS_RTS, "state %d after RTR->RTS", state_of(qp));

		/* query returns what was set */
		struct ibv_qp_attr q;
		struct ibv_qp_init_attr qi;
		memset(&q, 0, sizeof(q));
		CHECK(rnic_qp_query(qp, &q, &qi) == 0, "query");
		CHECK_EQ(q.path_mtu, IBV_MTU_2048, "path_mtu");
		CHECK_EQ(q.dest_qp_num, 0x123456, "dest_qp_num");
		CHECK_EQ(q.rq_psn, 0xabcdef, "rq_psn");
		CHECK_EQ(q.sq_psn, 0x654321, "sq_psn");
		CHECK_EQ(q.max_dest_rd_atomic, 3, "max_dest_rd_atomic");
		CHECK_EQ(q.max_rd_atomic, 2, "max_rd_atomic");
		CHECK_EQ(q.min_rnr_timer, 12, "min_rnr_timer");
		CHECK_EQ(q.timeout, 17, "timeout");
		CHECK_EQ(q.retry_cnt, 5, "retry_cnt");
		CHECK_EQ(q.rnr_retry, 6, "rnr_retry");
		CHECK_EQ(q.qp_access_flags, HT_ALL_ACCESS, "qp_access_flags");
		CHECK_EQ(q.port_num, 1, "port_num");
		CHECK(memcmp(q.ah_attr.grh.dgid.raw, pair_gid(f.pair, 1)->raw, 16) == 0, "ah_attr dgid");
		CHECK_EQ(qi.qp_type, IBV_QPT_RC, "qp_type");
		CHECK(qi.cap.max_send_wr >= 16 && qi.cap.max_recv_wr >= 16, "query caps %u/%u", qi.cap.max_send_wr,
		      qi.cap.max_recv_wr);

		/* RTS->RTS: optional attributes only */
		rts_attrs(&a);
		a.min_rnr_timer = 3;
		a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_ACCESS_FLAGS, 0) == 0,
		      "RTS->RTS min_rnr_timer + access");
		memset(&q, 0, sizeof(q));
		rnic_qp_query(qp, &q, &qi);
		CHECK_EQ(q.min_rnr_timer, 3, "min_rnr_timer after RTS->RTS");
		CHECK_EQ(q.qp_access_flags, IBV_ACCESS_REMOTE_READ, "access after RTS->RTS");
		rts_attrs(&a);
		mask_rules(qp, &a, 0,
			   IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
				   IBV_QP_MIN_RNR_TIMER,
			   IBV_QPS_RTS, "RTS->RTS");
		init_attrs(&a);
		expect_einval(qp, &a, IBV_QP_STATE | INIT_REQ, IBV_QPS_RTS, "RTS->INIT");
		rtr_attrs(&f, &a);
		expect_einval(qp, &a, IBV_QP_STATE | RTR_REQ, IBV_QPS_RTS, "RTS->RTR");

		/* ->ERR, then only RESET or ERR */
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_ERR;
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE, 0) == 0, "RTS->ERR");
		CHECK(state_of(qp) == IBV_QPS_ERR, "state %d after ->ERR", state_of(qp));
		rts_attrs(&a);
		expect_einval(qp, &a, IBV_QP_STATE | RTS_REQ, IBV_QPS_ERR, "ERR->RTS");
		init_attrs(&a);
		expect_einval(qp, &a, IBV_QP_STATE | INIT_REQ, IBV_QPS_ERR, "ERR->INIT");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RESET;
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE, 0) == 0, "ERR->RESET");
		CHECK(state_of(qp) == IBV_QPS_RESET, "state %d after ->RESET", state_of(qp));
		a.qp_state = IBV_QPS_ERR;
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE, 0) == 0, "RESET->ERR");
		a.qp_state = IBV_QPS_RESET;
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE, 0) == 0, "ERR->RESET again");
		/* and the QP is reusable */
		init_attrs(&a);
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE | INIT_REQ, 0) == 0, "RESET->INIT after reset");
		rtr_attrs(&f, &a);
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE | RTR_REQ, 0) == 0, "INIT->RTR after reset");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RESET;
		CHECK(rnic_qp_modify(qp, &a, IBV_QP_STATE, 0) == 0, "RTR->RESET");
	}
	fx_teardown(&f);
	return check_end();
}

/* Posting: a send to a QP in RESET or INIT is refused (IBTA 11.4.1.1:
 * the SQ accepts WRs from RTS on), a WR with more SGEs than the caps is
 * EINVAL. */
static int post_rules_case(void)
{
	check_begin("post_send / post_recv state and size rules");
	struct fixture f;
	if (fx_setup(&f) == 0) {
		uint8_t buf[64];
		struct rnic_mr *mr = rnic_mr_reg(f.pd, buf, sizeof(buf), (uint64_t)(uintptr_t)buf,
						 IBV_ACCESS_LOCAL_WRITE);
		CHECK(mr != NULL, "mr_reg");
		struct ibv_sge sge[3];
		for (int i = 0; i < 3; i++)
			sge[i] = (struct ibv_sge){ .addr = (uint64_t)(uintptr_t)buf, .length = 8,
						   .lkey = mr ? rnic_mr_lkey(mr) : 0 };
		struct ibv_send_wr wr, *bad = NULL;
		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = sge;
		wr.num_sge = 1;
		int rc = rnic_post_send(f.qp, &wr, &bad, 0);
		CHECK(rc == EINVAL && bad == &wr, "post_send in RESET: %s, bad %p", strerror(rc), (void *)bad);
		struct ibv_qp_attr a;
		init_attrs(&a);
		CHECK(rnic_qp_modify(f.qp, &a, IBV_QP_STATE | INIT_REQ, 0) == 0, "RESET->INIT");
		rc = rnic_post_send(f.qp, &wr, &bad, 0);
		CHECK(rc == EINVAL, "post_send in INIT: %s", strerror(rc));
		struct ibv_recv_wr rwr = { .sg_list = sge, .num_sge = 3 }, *rbad = NULL;
		rc = rnic_post_recv(f.qp, &rwr, &rbad);
		CHECK(rc == EINVAL && rbad == &rwr, "post_recv with 3 SGEs on a 2-SGE QP: %s", strerror(rc));
		/* receives may be posted from INIT on (IBTA 11.4.1.2) */
		rwr.num_sge = 1;
		rc = rnic_post_recv(f.qp, &rwr, &rbad);
		CHECK(rc == 0, "post_recv in INIT: %s", strerror(rc));
		if (mr)
			rnic_mr_dereg(mr);
	}
	fx_teardown(&f);
	return check_end();
}

/* Traffic across the 24-bit PSN wrap, with loss so that retransmission and
 * the duplicate/invalid window arithmetic are exercised there. */
static int psn_wrap_case(uint32_t psn, double loss)
{
	check_begin("PSN wrap from 0x%06x, loss %.0f%%", psn, loss * 100);
	struct ht h;
	struct ht_opts o;
	ht_default_opts(&o, psn);
	o.mtu = IBV_MTU_256;
	o.psn[0] = psn;
	o.psn[1] = psn;
	o.timeout = 8;
	uint8_t *src = malloc(16384), *dst = calloc(1, 16384), *rbuf = calloc(1, 4096), *back = calloc(1, 4096);
	for (int i = 0; i < 16384; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	if (ht_setup(&h, &o) == 0) {
		struct pair_faults pf = { .delay_ns = 2000, .jitter_ns = 500, .loss = loss };
		pair_set_all_faults(h.pair, &pf);
		struct rnic_mr *smr = ht_reg(&h.side[0], src, 16384, IBV_ACCESS_LOCAL_WRITE);
		struct rnic_mr *bmr = ht_reg(&h.side[0], back, 4096, IBV_ACCESS_LOCAL_WRITE);
		struct rnic_mr *dmr = ht_reg(&h.side[1], dst, 16384, HT_ALL_ACCESS);
		struct rnic_mr *rmr = ht_reg(&h.side[1], rbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
		struct ibv_sge rs = { .addr = (uint64_t)(uintptr_t)rbuf, .length = 4096, .lkey = rnic_mr_lkey(rmr) };
		struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rbad;
		CHECK(rnic_post_recv(h.side[1].qp, &rwr, &rbad) == 0, "post_recv");
		/* SEND 2560 B (10 packets), WRITE 8000 B (32 packets), READ 4096 B
		 * back (16 packets): 58 PSNs, crossing the wrap */
		struct ibv_sge s1 = { .addr = (uint64_t)(uintptr_t)src, .length = 2560, .lkey = rnic_mr_lkey(smr) };
		struct ibv_sge s2 = { .addr = (uint64_t)(uintptr_t)(src + 4096), .length = 8000, .lkey = rnic_mr_lkey(smr) };
		struct ibv_sge s3 = { .addr = (uint64_t)(uintptr_t)back, .length = 4096, .lkey = rnic_mr_lkey(bmr) };
		struct ibv_send_wr w[3], *bad;
		memset(w, 0, sizeof(w));
		w[0] = (struct ibv_send_wr){ .wr_id = 1, .next = &w[1], .sg_list = &s1, .num_sge = 1,
					     .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
		w[1] = (struct ibv_send_wr){ .wr_id = 2, .next = &w[2], .sg_list = &s2, .num_sge = 1,
					     .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
		w[1].wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
		w[1].wr.rdma.rkey = rnic_mr_rkey(dmr);
		/* no fence needed: the responder executes requests in PSN order,
		 * so the READ returns what the WRITE wrote (IBTA 9.5) */
		w[2] = (struct ibv_send_wr){ .wr_id = 3, .sg_list = &s3, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
					     .send_flags = IBV_SEND_SIGNALED };
		w[2].wr.rdma.remote_addr = (uint64_t)(uintptr_t)(dst + 1000);
		w[2].wr.rdma.rkey = rnic_mr_rkey(dmr);
		int rc = rnic_post_send(h.side[0].qp, w, &bad, pair_now(h.pair));
		CHECK(rc == 0, "post_send: %s", strerror(rc));
		struct ibv_wc wc;
		for (uint64_t id = 1; id <= 3 && rc == 0; id++) {
			if (!ht_wait_wc(&h, h.side[0].scq, &wc, 10000 * HT_MS)) {
				FAIL("WR %llu never completed", (unsigned long long)id);
				break;
			}
			CHECK(wc.wr_id == id && wc.status == IBV_WC_SUCCESS, "completion wr_id %llu status %s, expected %llu",
			      (unsigned long long)wc.wr_id, ht_wc_status_str(wc.status), (unsigned long long)id);
		}
		if (ht_wait_wc(&h, h.side[1].rcq, &wc, 100 * HT_MS))
			CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 2560, "recv status %s byte_len %u",
			      ht_wc_status_str(wc.status), wc.byte_len);
		else
			FAIL("no receive completion");
		CHECK(memcmp(rbuf, src, 2560) == 0, "SEND data across the wrap differ");
		CHECK(memcmp(dst, src + 4096, 8000) == 0, "WRITE data across the wrap differ");
		CHECK(memcmp(back, src + 4096 + 1000, 4096) == 0, "READ data across the wrap differ");
		for (int i = 8000; i < 16384; i++)
			if (dst[i] != 0) {
				FAIL("WRITE wrote past its end at %d", i);
				break;
			}
		rnic_mr_dereg(smr);
		rnic_mr_dereg(bmr);
		rnic_mr_dereg(dmr);
		rnic_mr_dereg(rmr);
	}
	ht_teardown(&h);
	free(src);
	free(dst);
	free(rbuf);
	free(back);
	return check_end();
}

int main(void)
{
	int failed = 0;
	failed += transitions_case();
	failed += post_rules_case();
	failed += psn_wrap_case(0xffffff, 0);
	failed += psn_wrap_case(0xfffff0, 0);
	failed += psn_wrap_case(0xffffe0, 0.05);
	failed += psn_wrap_case(0xffffc8, 0.10);
	printf("%s: %d cases failed\n", failed ? "FAIL" : "PASS", failed);
	return failed ? 1 : 0;
}
