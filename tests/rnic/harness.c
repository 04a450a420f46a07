/*
 * harness.c — shared helpers for the transport tests (see harness.h).
 */
#include "harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Our own names: the tests must not link the system libibverbs (softrnic
 * builds its own). */
const char *ht_wc_status_str(int status)
{
	static const char *const names[] = {
		[IBV_WC_SUCCESS] = "SUCCESS",
		[IBV_WC_LOC_LEN_ERR] = "LOC_LEN_ERR",
		[IBV_WC_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR",
		[IBV_WC_LOC_EEC_OP_ERR] = "LOC_EEC_OP_ERR",
		[IBV_WC_LOC_PROT_ERR] = "LOC_PROT_ERR",
		[IBV_WC_WR_FLUSH_ERR] = "WR_FLUSH_ERR",
		[IBV_WC_MW_BIND_ERR] = "MW_BIND_ERR",
		[IBV_WC_BAD_RESP_ERR] = "BAD_RESP_ERR",
		[IBV_WC_LOC_ACCESS_ERR] = "LOC_ACCESS_ERR",
		[IBV_WC_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",
		[IBV_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR",
		[IBV_WC_REM_OP_ERR] = "REM_OP_ERR",
		[IBV_WC_RETRY_EXC_ERR] = "RETRY_EXC_ERR",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR_RETRY_EXC_ERR",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "LOC_RDD_VIOL_ERR",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "REM_INV_RD_REQ_ERR",
		[IBV_WC_REM_ABORT_ERR] = "REM_ABORT_ERR",
		[IBV_WC_INV_EECN_ERR] = "INV_EECN_ERR",
		[IBV_WC_INV_EEC_STATE_ERR] = "INV_EEC_STATE_ERR",
		[IBV_WC_FATAL_ERR] = "FATAL_ERR",
		[IBV_WC_RESP_TIMEOUT_ERR] = "RESP_TIMEOUT_ERR",
		[IBV_WC_GENERAL_ERR] = "GENERAL_ERR",
	};
	if (status >= 0 && (size_t)status < sizeof(names) / sizeof(names[0]) && names[status])
		return names[status];
	return "UNKNOWN_STATUS";
}

/* ---- setup ---------------------------------------------------------------- */

void ht_default_opts(struct ht_opts *o, uint64_t seed)
{
	memset(o, 0, sizeof(*o));
	o->seed = seed;
	o->mtu = IBV_MTU_1024;
	o->psn[0] = 0x1000;
	o->psn[1] = 0x2000;
	o->timeout = 12;                /* 4.096 us * 2^12 = 16.8 ms */
	o->retry_cnt = 7;
	o->rnr_retry = 7;               /* 7 = retry forever (IBTA 9.7.5.2.8) */
	o->min_rnr_timer[0] = 1;        /* 0.01 ms */
	o->min_rnr_timer[1] = 1;
	o->max_rd_atomic = 4;
	o->sq_depth = 128;
	o->rq_depth = 256;
	o->access = HT_ALL_ACCESS;
}

int ht_to_init(struct rnic_qp *qp, int access, uint64_t now)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = (unsigned)access;
	return rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, now);
}

int ht_to_rtr(struct rnic_qp *qp, const struct rnic_gid *dgid, uint32_t dqpn, uint32_t rq_psn,
	      enum ibv_mtu mtu, uint8_t max_dest_rd_atomic, uint8_t min_rnr_timer, uint64_t now)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = max_dest_rd_atomic;
	a.min_rnr_timer = min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = 0;
	memcpy(a.ah_attr.grh.dgid.raw, dgid->raw, 16);
	return rnic_qp_modify(qp, &a,
			      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			      now);
}

int ht_to_rts(struct rnic_qp *qp, uint32_t sq_psn, uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry,
	      uint8_t max_rd_atomic, uint64_t now)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = max_rd_atomic;
	return rnic_qp_modify(qp, &a,
			      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				      IBV_QP_MAX_QP_RD_ATOMIC,
			      now);
}

static int setup_side(struct ht *h, int i)
{
	struct ht_side *s = &h->side[i];
	s->r = pair_rnic(h->pair, (unsigned)i);
	s->pd = rnic_pd_alloc(s->r);
	REQUIRE_RET(s->pd, -1, "pd_alloc: %s", strerror(errno));
	s->scq = rnic_cq_create(s->r, 1024, NULL);
	s->rcq = rnic_cq_create(s->r, 1024, NULL);
	REQUIRE_RET(s->scq && s->rcq, -1, "cq_create: %s", strerror(errno));
	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.sq_sig_all = h->opts.sq_sig_all;
	init.cap.max_send_wr = h->opts.sq_depth;
	init.cap.max_recv_wr = h->opts.rq_depth;
	init.cap.max_send_sge = 4;
	init.cap.max_recv_sge = 4;
	init.cap.max_inline_data = 64;
	s->qp = rnic_qp_create(s->pd, s->scq, s->rcq, &init, NULL);
	REQUIRE_RET(s->qp, -1, "qp_create: %s", strerror(errno));
	s->qpn = rnic_qp_num(s->qp);
	s->max_inline = init.cap.max_inline_data;
	return 0;
}

int ht_setup(struct ht *h, const struct ht_opts *o)
{
	memset(h, 0, sizeof(*h));
	h->opts = *o;
	struct rnic_config cfg[2];
	for (int i = 0; i < 2; i++) {
		rnic_config_default(&cfg[i]);
		cfg[i].seed = (uint32_t)(o->seed * 2654435761u);
		if (o->max_mr)
			cfg[i].max_mr = o->max_mr;
		cfg[i].selective_repeat = !o->go_back_n[i];
	}
	h->pair = pair_create_each(o->seed, 2, cfg);
	REQUIRE_RET(h->pair, -1, "pair_create: %s", strerror(errno));
	for (int i = 0; i < 2; i++)
		if (setup_side(h, i))
			return -1;
	uint64_t now = pair_now(h->pair);
	for (int i = 0; i < 2; i++) {
		struct ht_side *s = &h->side[i], *peer = &h->side[1 - i];
		int rc = ht_to_init(s->qp, o->access, now);
		REQUIRE_RET(rc == 0, -1, "INIT: %s", strerror(rc));
		rc = ht_to_rtr(s->qp, pair_gid(h->pair, (unsigned)(1 - i)), peer->qpn, o->psn[1 - i], o->mtu,
			       o->max_rd_atomic, o->min_rnr_timer[i], now);
		REQUIRE_RET(rc == 0, -1, "RTR: %s", strerror(rc));
		if (o->message_path[i]) {
			/* every message over 4 KiB whole, to test the most */
			rc = rnic_qp_set_message_path(s->qp, RNIC_PKT_MAX_PAYLOAD);
			REQUIRE_RET(rc == 0, -1, "message path: %s", strerror(rc));
		}
		rc = ht_to_rts(s->qp, o->psn[i], o->timeout, o->retry_cnt, o->rnr_retry, o->max_rd_atomic, now);
		REQUIRE_RET(rc == 0, -1, "RTS: %s", strerror(rc));
	}
	return 0;
}

void ht_teardown(struct ht *h)
{
	for (int i = 0; i < 2; i++) {
		struct ht_side *s = &h->side[i];
		if (s->qp)
			rnic_qp_destroy(s->qp);
		if (s->scq)
			rnic_cq_destroy(s->scq);
		if (s->rcq)
			rnic_cq_destroy(s->rcq);
		/* MRs are the test's business; a PD still holding MRs reports
		 * EBUSY and is released with the rnic. */
		if (s->pd)
			rnic_pd_free(s->pd);
	}
	pair_destroy(h->pair);
	memset(h, 0, sizeof(*h));
}

/* ---- completions ------------------------------------------------------------ */

struct wait_one {
	struct rnic_cq *cq;
	struct ibv_wc *wc;
	bool got;
};

static bool poll_one(void *arg)
{
	struct wait_one *w = arg;
	if (!w->got)
		w->got = rnic_cq_poll(w->cq, 1, w->wc) == 1;
	return w->got;
}

bool ht_wait_wc(struct ht *h, struct rnic_cq *cq, struct ibv_wc *wc, uint64_t max_ns)
{
	struct wait_one w = { .cq = cq, .wc = wc };
	pair_run_until(h->pair, poll_one, &w, max_ns);
	return w.got;
}

int ht_poll(struct rnic_cq *cq, struct ibv_wc *wc, int n)
{
	return rnic_cq_poll(cq, n, wc);
}

struct rnic_mr *ht_reg(struct ht_side *s, void *buf, size_t len, int access)
{
	struct rnic_mr *mr = rnic_mr_reg(s->pd, buf, len, (uint64_t)(uintptr_t)buf, access);
	if (!mr)
		FAIL("mr_reg(len %zu, access 0x%x): %s", len, (unsigned)access, strerror(errno));
	return mr;
}

uint64_t ht_drops(const struct rnic_counters *c)
{
	return c->rx_drop_malformed + c->rx_drop_bad_icrc + c->rx_drop_unknown_qp + c->rx_drop_qp_state +
	       c->rx_drop_bad_opcode_seq + c->rx_drop_bad_pkey + c->rx_drop_bad_qkey + c->rx_drop_out_of_window +
	       c->rx_drop_ghost_response;
}

/* ---- seeds ------------------------------------------------------------------ */

size_t ht_seeds_from_args(int argc, char **argv, uint64_t *seeds, size_t cap, const uint64_t *defaults,
			  size_t ndefaults)
{
	check_seed_env = "SOFTRNIC_SEED";
	size_t n = 0;
	const char *env = getenv("SOFTRNIC_SEED");
	if (env && *env && n < cap)
		seeds[n++] = strtoull(env, NULL, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc && n < cap) {
			seeds[n++] = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
			/* A-B inclusive */
			char *end;
			uint64_t a = strtoull(argv[++i], &end, 0), b = a;
			if (*end == '-')
				b = strtoull(end + 1, NULL, 0);
			for (uint64_t s = a; s <= b && n < cap; s++)
				seeds[n++] = s;
		}
	}
	if (n == 0)
		for (size_t i = 0; i < ndefaults && n < cap; i++)
			seeds[n++] = defaults[i];
	return n;
}

int ht_replay_seeds(int argc, char **argv, size_t ndefaults, unsigned nvariants,
		    const char *const *variant_names, ht_seed_run run, void *ctx, size_t *nseeds)
{
	enum { CAP = 4096 };
	static uint64_t defaults[CAP], seeds[CAP];
	if (ndefaults > CAP)
		ndefaults = CAP;
	for (size_t i = 0; i < ndefaults; i++)
		defaults[i] = (uint64_t)i + 1;
	size_t n = ht_seeds_from_args(argc, argv, seeds, CAP, defaults, ndefaults);
	bool verbose = false;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-v"))
			verbose = true;
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		for (unsigned v = 0; v < nvariants; v++) {
			if (nvariants > 1)
				check_begin("seed %llu, %s", (unsigned long long)seeds[i], variant_names[v]);
			else
				check_begin("seed %llu", (unsigned long long)seeds[i]);
			check_seed(seeds[i]);
			struct ht_replay a = { 0 }, b = { 0 };
			if (run(ctx, seeds[i], v, true, verbose, &a) && run(ctx, seeds[i], v, false, false, &b) &&
			    (a.trace != b.trace || a.now != b.now))
				FAIL("replay differs: trace %016llx vs %016llx, end %llu vs %llu ns",
					(unsigned long long)a.trace, (unsigned long long)b.trace,
					(unsigned long long)a.now, (unsigned long long)b.now);
			if (check_end()) {
				printf("  replay: SOFTRNIC_SEED=%llu %s -v\n", (unsigned long long)seeds[i], argv[0]);
				check_replay("SOFTRNIC_SEED=%llu %s -v", (unsigned long long)seeds[i], argv[0]);
				failed++;
			}
		}
	}
	check_seeded = false;
	*nseeds = n;
	return failed;
}
