/*
 * test_cm_basic.c — the CM's protocol, case by case, over the seeded link:
 * connect / accept / RTU; consumer reject (reason 28 with private data); a
 * REQ for a service nobody listens on (REJ 8 at once); a REQ to a host
 * that never answers (REQ_TIMEOUT after exactly the configured retries, at
 * the computed time); disconnect from either side; every DREQ lost; MRA
 * (automatic on a duplicate REQ, explicit, and one that runs out);
 * duplicate REQ / REP / DREQ answered as IBTA says; SIDR (answer, unknown
 * service, timeout); cm_destroy_id in several states; cm_establish; and
 * the consumer calls' argument and state checks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_link.h"
#include "../check.h"

#define SID 0x0000000001064853ull       /* RDMA_PS_TCP port 18515 */
#define MS 1000000ull
#define US 1000ull

static int listen_tag;

/* ---- helpers -------------------------------------------------------------------- */

struct wait_arg {
	struct link *l;
	unsigned node;
};

static bool has_event(void *arg)
{
	struct wait_arg *w = arg;
	return link_pending_events(w->l, w->node) > 0;
}

/* Run until `node` has an event; pop it; it must be of type t. */
static bool expect_event(struct link *l, unsigned node, enum cm_event_type t, struct link_event *out)
{
	struct wait_arg w = { l, node };
	struct link_event tmp;
	if (!out)
		out = &tmp;
	if (link_run_until(l, has_event, &w, 100000 * MS) != LINK_DONE) {
		FAIL("node %u: no event (expected %s)", node, cm_event_name(t));
		return false;
	}
	link_pop_event(l, node, out);
	if (out->ev.type != t) {
		FAIL("node %u: event %s, expected %s", node, cm_event_name(out->ev.type), cm_event_name(t));
		return false;
	}
	return true;
}

static void no_events(struct link *l, unsigned node)
{
	struct link_event e;
	while (link_pop_event(l, node, &e))
		FAIL("node %u: unexpected event %s", node, cm_event_name(e.ev.type));
}

static struct cm_config test_config(void)
{
	struct cm_config c;
	cm_config_default(&c);
	c.timewait_ns = 10 * MS;
	c.cm_response_timeout = 12;     /* ~16.8 ms */
	c.max_cm_retries = 3;
	return c;
}

static void fill_pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static void req_param(struct link *l, unsigned from, unsigned to, struct cm_req_param *p, uint32_t qpn)
{
	cm_req_param_init(link_cm(l, from), p);
	memcpy(p->dgid, link_gid(l, to), 16);
	p->service_id = SID;
	p->qpn = qpn;
	p->starting_psn = 0x10000 + qpn;
	p->remote_cm_response_timeout = 10;     /* ~4.2 ms */
	p->local_cm_response_timeout = 10;
	p->max_cm_retries = 3;
}

static struct cm_rep_param rep_param(uint32_t qpn)
{
	struct cm_rep_param r = { .qpn = qpn, .starting_psn = 0x20000 + qpn, .responder_resources = 4,
				  .initiator_depth = 4, .rnr_retry_count = 7, .target_ack_delay = 10 };
	return r;
}

/* How far handshake() goes. */
enum hs_stage { HS_REQ, HS_REP, HS_ESTABLISHED };

/* The CM handshake from node 0 to node 1, each step's event checked, up to
 * `upto`: node 0 sends the REQ *p (*a) and node 1 receives it (*pa);
 * node 1 accepts with QPN p->qpn + 1 and node 0 receives the REP; node 0
 * sends the RTU and node 1 is established.  False, with the failure
 * reported, if a step fails. */
static bool handshake(struct link *l, const struct cm_req_param *p, enum hs_stage upto, struct cm_id **a,
		      struct cm_id **pa)
{
	struct link_event e;
	REQUIRE_RET(cm_connect(link_cm(l, 0), p, NULL, link_now(l), a) == 0, false);
	if (!expect_event(l, 1, CM_EV_REQ_RECEIVED, &e))
		return false;
	*pa = e.ev.id;
	if (upto == HS_REQ)
		return true;
	REQUIRE_RET(cm_accept(*pa, &(struct cm_rep_param){ .qpn = p->qpn + 1 }, link_now(l)) == 0, false);
	if (!expect_event(l, 0, CM_EV_REP_RECEIVED, NULL))
		return false;
	if (upto == HS_REP)
		return true;
	REQUIRE_RET(cm_send_rtu(*a, NULL, 0, link_now(l)) == 0, false);
	return expect_event(l, 1, CM_EV_ESTABLISHED, NULL);
}

struct conn {
	struct cm_id *a, *p;            /* active on node 0, passive on node 1 */
};

/* Connect node 0 -> node 1 and establish (both sides' events checked). */
static bool establish(struct link *l, struct conn *c, uint32_t qpn)
{
	struct cm_req_param p;
	struct link_event e;
	req_param(l, 0, 1, &p, qpn);
	if (!handshake(l, &p, HS_REQ, &c->a, &c->p))
		return false;
	struct cm_rep_param r = rep_param(qpn + 1);
	REQUIRE_RET(cm_accept(c->p, &r, link_now(l)) == 0, false);
	if (!expect_event(l, 0, CM_EV_REP_RECEIVED, &e))
		return false;
	REQUIRE_RET(cm_send_rtu(c->a, NULL, 0, link_now(l)) == 0, false);
	if (!expect_event(l, 1, CM_EV_ESTABLISHED, &e))
		return false;
	CHECK_EQ(cm_id_state(c->a), CM_ST_ESTABLISHED);
	CHECK_EQ(cm_id_state(c->p), CM_ST_ESTABLISHED);
	return true;
}

static struct link *setup(uint64_t seed, const struct cm_config *cfg, struct cm_listen **lis)
{
	struct cm_config c = cfg ? *cfg : test_config();
	struct link *l = link_create(seed, 2, &c);
	if (!l)
		return NULL;
	if (lis && cm_listen(link_cm(l, 1), SID, &listen_tag, lis) != 0) {
		link_destroy(l);
		return NULL;
	}
	return l;
}

/* Destroy what the test holds, let every timer run out, and check that
 * everything was freed and the counters add up. */
static void teardown(struct link *l, struct cm_id **ids, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (ids[i])
			cm_destroy_id(ids[i], link_now(l));
	link_run_until(l, NULL, NULL, 1000000 * MS);
	for (unsigned node = 0; node < 2; node++) {
		const struct cm_counters *c = cm_counters(link_cm(l, node));
		CHECK(link_counters_consistent(l, node));
		CHECK_EQ(c->ids_created, c->ids_freed);
		CHECK_EQ(cm_next_deadline(link_cm(l, node)), UINT64_MAX);
	}
	link_destroy(l);
}

/* ---- tap helpers ------------------------------------------------------------------ */

struct tap {
	uint32_t drop_kinds[LINK_MAX_NODES]; /* per sender: bit (attr - 0x10) */
	bool drop_all_to[LINK_MAX_NODES];
	uint8_t last[LK_NKINDS][256];   /* last MAD of each kind */
	unsigned seen[LK_NKINDS];
	uint64_t times[LK_NKINDS][32];
};

static bool tap_fn(void *arg, unsigned from, unsigned to, uint64_t now, uint8_t mad[256])
{
	struct tap *t = arg;
	unsigned attr = (unsigned)(mad[16] << 8 | mad[17]);
	if (attr >= 0x10 && attr < 0x10 + LK_NKINDS) {
		unsigned k = attr - 0x10;
		memcpy(t->last[k], mad, 256);
		if (t->seen[k] < 32)
			t->times[k][t->seen[k]] = now;
		t->seen[k]++;
		if (t->drop_kinds[from] & (1u << k))
			return false;
	}
	return !t->drop_all_to[to];
}

/* ---- cases ------------------------------------------------------------------------- */

static void test_connect_accept(void)
{
	check_begin("connect, accept, RTU, established; active disconnects");
	struct cm_listen *lis;
	struct link *l = setup(1, NULL, &lis);
	REQUIRE_RET(l, );
	struct cm_req_param p;
	struct link_event e;
	uint8_t req_pd[CM_REQ_PRIVATE_DATA_SIZE], rep_pd[CM_REP_PRIVATE_DATA_SIZE];
	fill_pattern(req_pd, sizeof(req_pd), 3);
	fill_pattern(rep_pd, sizeof(rep_pd), 9);

	req_param(l, 0, 1, &p, 0x111);
	p.responder_resources = 4;
	p.initiator_depth = 2;
	p.path_mtu = IBV_MTU_4096;
	p.rnr_retry_count = 6;
	p.retry_count = 5;
	p.local_ack_timeout = 15;
	p.flow_label = 0x12345;
	p.traffic_class = 0x20;
	p.srq = true;
	p.private_data = req_pd;
	p.private_data_len = sizeof(req_pd);
	struct cm_id *a = NULL, *pa = NULL;
	int user_a;
	REQUIRE_RET(cm_connect(link_cm(l, 0), &p, &user_a, link_now(l), &a) == 0, );
	CHECK_EQ(cm_id_state(a), CM_ST_REQ_SENT);
	CHECK(cm_id_get_user(a) == &user_a);
	CHECK(cm_id_local_comm_id(a) != 0);

	REQUIRE_RET(expect_event(l, 1, CM_EV_REQ_RECEIVED, &e), );
	pa = e.ev.id;
	CHECK(e.ev.listen_user == &listen_tag);
	CHECK(memcmp(e.ev.remote_gid, link_gid(l, 0), 16) == 0);
	CHECK_EQ(e.ev.remote_comm_id, cm_id_local_comm_id(a));
	CHECK_EQ(e.ev.u.req.service_id, SID);
	CHECK_EQ(e.ev.u.req.qpn, 0x111);
	CHECK_EQ(e.ev.u.req.starting_psn, 0x10111);
	CHECK_EQ(e.ev.u.req.responder_resources, 4);
	CHECK_EQ(e.ev.u.req.initiator_depth, 2);
	CHECK_EQ(e.ev.u.req.path_mtu, IBV_MTU_4096);
	CHECK_EQ(e.ev.u.req.rnr_retry_count, 6);
	CHECK_EQ(e.ev.u.req.retry_count, 5);
	CHECK_EQ(e.ev.u.req.local_ack_timeout, 15);
	CHECK_EQ(e.ev.u.req.flow_label, 0x12345);
	CHECK_EQ(e.ev.u.req.traffic_class, 0x20);
	CHECK_EQ(e.ev.u.req.hop_limit, 64);
	CHECK_EQ(e.ev.u.req.pkey, 0xffff);
	CHECK_EQ(e.ev.u.req.qp_type, IBV_QPT_RC);
	CHECK_EQ(e.ev.u.req.max_cm_retries, 3);
	CHECK(e.ev.u.req.srq);
	CHECK_EQ(e.ev.u.req.ca_guid, 0x1000);
	CHECK(memcmp(e.ev.u.req.primary_local_gid, link_gid(l, 0), 16) == 0);
	CHECK(memcmp(e.ev.u.req.primary_remote_gid, link_gid(l, 1), 16) == 0);
	CHECK_EQ(e.ev.private_data_len, CM_REQ_PRIVATE_DATA_SIZE);
	CHECK(memcmp(e.ev.private_data, req_pd, sizeof(req_pd)) == 0);
	CHECK_EQ(cm_id_state(pa), CM_ST_REQ_RCVD);
	CHECK(cm_id_get_user(pa) == NULL);
	CHECK_EQ(cm_id_service_id(pa), SID);

	struct cm_rep_param r = rep_param(0x333);
	r.responder_resources = 3;
	r.initiator_depth = 1;
	r.rnr_retry_count = 5;
	r.private_data = rep_pd;
	r.private_data_len = sizeof(rep_pd);
	REQUIRE_RET(cm_accept(pa, &r, link_now(l)) == 0, );
	CHECK_EQ(cm_id_state(pa), CM_ST_REP_SENT);

	REQUIRE_RET(expect_event(l, 0, CM_EV_REP_RECEIVED, &e), );
	CHECK(e.ev.id == a);
	CHECK(e.ev.user == &user_a);
	CHECK_EQ(e.ev.u.rep.qpn, 0x333);
	CHECK_EQ(e.ev.u.rep.starting_psn, 0x20333);
	CHECK_EQ(e.ev.u.rep.responder_resources, 3);
	CHECK_EQ(e.ev.u.rep.initiator_depth, 1);
	CHECK_EQ(e.ev.u.rep.rnr_retry_count, 5);
	CHECK_EQ(e.ev.u.rep.target_ack_delay, 10);
	CHECK_EQ(e.ev.u.rep.ca_guid, 0x1001);
	CHECK(memcmp(e.ev.private_data, rep_pd, sizeof(rep_pd)) == 0);
	CHECK_EQ(cm_id_state(a), CM_ST_REP_RCVD);
	CHECK_EQ(cm_id_remote_comm_id(a), cm_id_local_comm_id(pa));

	REQUIRE_RET(cm_send_rtu(a, "rtu!", 4, link_now(l)) == 0, );
	CHECK_EQ(cm_id_state(a), CM_ST_ESTABLISHED);
	REQUIRE_RET(expect_event(l, 1, CM_EV_ESTABLISHED, &e), );
	CHECK(e.ev.id == pa);
	CHECK(e.ev.private_data && memcmp(e.ev.private_data, "rtu!", 4) == 0);
	CHECK_EQ(cm_id_state(pa), CM_ST_ESTABLISHED);
	link_run_until(l, NULL, NULL, 1000 * MS);
	no_events(l, 0);
	no_events(l, 1);

	const struct cm_counters *c0 = cm_counters(link_cm(l, 0)), *c1 = cm_counters(link_cm(l, 1));
	CHECK_EQ(c0->tx_req, 1);
	CHECK_EQ(c0->tx_rtu, 1);
	CHECK_EQ(c0->rx_rep, 1);
	CHECK_EQ(c1->rx_req, 1);
	CHECK_EQ(c1->tx_rep, 1);
	CHECK_EQ(c1->rx_rtu, 1);
	CHECK_EQ(c0->retries + c1->retries, 0);

	/* The active side disconnects. */
	uint64_t t0 = link_now(l);
	REQUIRE_RET(cm_disconnect(a, "bye", 3, t0) == 0, );
	CHECK_EQ(cm_id_state(a), CM_ST_DREQ_SENT);
	REQUIRE_RET(expect_event(l, 1, CM_EV_DREQ_RECEIVED, &e), );
	CHECK(e.ev.private_data && memcmp(e.ev.private_data, "bye", 3) == 0);
	CHECK_EQ(cm_id_state(pa), CM_ST_TIMEWAIT);
	REQUIRE_RET(expect_event(l, 0, CM_EV_DISCONNECT_DONE, &e), );
	CHECK_EQ(e.ev.status, 0);
	CHECK_EQ(cm_id_state(a), CM_ST_TIMEWAIT);
	/* TimeWait lasts timewait_ns from entering it. */
	REQUIRE_RET(expect_event(l, 1, CM_EV_TIMEWAIT_EXIT, &e), );
	CHECK_EQ(e.time, t0 + 1 * US + 10 * MS);
	REQUIRE_RET(expect_event(l, 0, CM_EV_TIMEWAIT_EXIT, &e), );
	CHECK_EQ(e.time, t0 + 2 * US + 10 * MS);
	CHECK_EQ(cm_id_state(a), CM_ST_IDLE);
	CHECK_EQ(cm_id_state(pa), CM_ST_IDLE);
	CHECK_EQ(c0->tx_dreq, 1);
	CHECK_EQ(c1->tx_drep, 1);
	/* Idle ids are freed at once when destroyed. */
	uint64_t freed = c0->ids_freed;
	cm_destroy_id(a, link_now(l));
	CHECK_EQ(c0->ids_freed, freed + 1);
	cm_unlisten(lis);
	struct cm_id *ids[] = { pa };
	teardown(l, ids, 1);
	check_end_say(true);
}

static void test_disconnect_passive(void)
{
	check_begin("passive side disconnects");
	struct cm_listen *lis;
	struct link *l = setup(2, NULL, &lis);
	REQUIRE_RET(l, );
	struct conn c;
	struct link_event e;
	REQUIRE_RET(establish(l, &c, 0x200), );
	REQUIRE_RET(cm_disconnect(c.p, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_DREQ_RECEIVED, &e), );
	CHECK(e.ev.id == c.a);
	REQUIRE_RET(expect_event(l, 1, CM_EV_DISCONNECT_DONE, &e), );
	CHECK_EQ(e.ev.status, 0);
	CHECK_EQ(cm_id_state(c.a), CM_ST_TIMEWAIT);
	CHECK_EQ(cm_id_state(c.p), CM_ST_TIMEWAIT);
	/* A second disconnect is refused. */
	CHECK_EQ(cm_disconnect(c.p, NULL, 0, link_now(l)), EINVAL);
	REQUIRE_RET(expect_event(l, 0, CM_EV_TIMEWAIT_EXIT, NULL), );
	REQUIRE_RET(expect_event(l, 1, CM_EV_TIMEWAIT_EXIT, NULL), );
	struct cm_id *ids[] = { c.a, c.p };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_simultaneous_disconnect(void)
{
	check_begin("both sides disconnect at once");
	struct cm_listen *lis;
	struct link *l = setup(3, NULL, &lis);
	REQUIRE_RET(l, );
	struct conn c;
	struct link_event e;
	REQUIRE_RET(establish(l, &c, 0x300), );
	REQUIRE_RET(cm_disconnect(c.a, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(cm_disconnect(c.p, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_DISCONNECT_DONE, &e), );
	CHECK_EQ(e.ev.status, 0);
	REQUIRE_RET(expect_event(l, 1, CM_EV_DISCONNECT_DONE, &e), );
	CHECK_EQ(e.ev.status, 0);
	REQUIRE_RET(expect_event(l, 0, CM_EV_TIMEWAIT_EXIT, NULL), );
	REQUIRE_RET(expect_event(l, 1, CM_EV_TIMEWAIT_EXIT, NULL), );
	no_events(l, 0);
	no_events(l, 1);
	struct cm_id *ids[] = { c.a, c.p };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_reject(void)
{
	check_begin("consumer rejects: REJ 28 with private data");
	struct cm_listen *lis;
	struct link *l = setup(4, NULL, &lis);
	REQUIRE_RET(l, );
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a, *pa;
	req_param(l, 0, 1, &p, 0x400);
	REQUIRE_RET(handshake(l, &p, HS_REQ, &a, &pa), );
	uint8_t pd[CM_REJ_PRIVATE_DATA_SIZE];
	fill_pattern(pd, sizeof(pd), 0x55);
	REQUIRE_RET(cm_reject(pa, CM_REJ_CONSUMER_DEFINED, NULL, 0, pd, sizeof(pd), link_now(l)) == 0, );
	CHECK_EQ(cm_id_state(pa), CM_ST_TIMEWAIT);
	REQUIRE_RET(expect_event(l, 0, CM_EV_REJ_RECEIVED, &e), );
	CHECK_EQ(e.ev.rej_reason, CM_REJ_CONSUMER_DEFINED);
	CHECK_EQ(e.ev.rej_msg, WIRE_CM_MSG_REQ);
	CHECK(memcmp(e.ev.private_data, pd, sizeof(pd)) == 0);
	CHECK_EQ(cm_id_state(a), CM_ST_TIMEWAIT);
	CHECK_EQ(cm_accept(pa, &(struct cm_rep_param){ .qpn = 1 }, link_now(l)), EINVAL);
	REQUIRE_RET(expect_event(l, 1, CM_EV_TIMEWAIT_EXIT, NULL), );
	REQUIRE_RET(expect_event(l, 0, CM_EV_TIMEWAIT_EXIT, NULL), );
	no_events(l, 0);
	no_events(l, 1);
	CHECK_EQ(cm_counters(link_cm(l, 1))->tx_rej, 1);
	struct cm_id *ids[] = { a, pa };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_active_rejects_rep(void)
{
	check_begin("active side rejects the REP");
	struct cm_listen *lis;
	struct link *l = setup(5, NULL, &lis);
	REQUIRE_RET(l, );
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a, *pa;
	req_param(l, 0, 1, &p, 0x500);
	REQUIRE_RET(handshake(l, &p, HS_REQ, &a, &pa), );
	struct cm_rep_param r = rep_param(0x501);
	REQUIRE_RET(cm_accept(pa, &r, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_REP_RECEIVED, &e), );
	REQUIRE_RET(cm_reject(a, CM_REJ_INSUFFICIENT_RESP_RESOURCES, "ari", 3, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 1, CM_EV_REJ_RECEIVED, &e), );
	CHECK_EQ(e.ev.rej_reason, CM_REJ_INSUFFICIENT_RESP_RESOURCES);
	CHECK_EQ(e.ev.rej_msg, WIRE_CM_MSG_REP);
	CHECK_EQ(e.ev.ari_len, 3);
	CHECK(memcmp(e.ev.ari, "ari", 3) == 0);
	CHECK_EQ(cm_id_state(pa), CM_ST_TIMEWAIT);
	/* No REP retransmission after the REJ. */
	link_run_until(l, NULL, NULL, 1000 * MS);
	CHECK_EQ(cm_counters(link_cm(l, 1))->tx_rep, 1);
	struct link_event x;
	while (link_pop_event(l, 0, &x))
		CHECK_EQ(x.ev.type, CM_EV_TIMEWAIT_EXIT);
	while (link_pop_event(l, 1, &x))
		CHECK_EQ(x.ev.type, CM_EV_TIMEWAIT_EXIT);
	struct cm_id *ids[] = { a, pa };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_unlistened(void)
{
	check_begin("REQ for a service nobody listens on: REJ 8 at once");
	struct link *l = setup(6, NULL, NULL);
	REQUIRE_RET(l, );
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a;
	req_param(l, 0, 1, &p, 0x600);
	p.service_id = 0x4242;
	uint64_t t0 = link_now(l);
	REQUIRE_RET(cm_connect(link_cm(l, 0), &p, NULL, t0, &a) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_REJ_RECEIVED, &e), );
	CHECK_EQ(e.ev.rej_reason, CM_REJ_INVALID_SERVICE_ID);
	CHECK_EQ(e.ev.rej_msg, WIRE_CM_MSG_REQ);
	CHECK_EQ(e.time, t0 + 2 * US);  /* one round trip */
	const struct cm_counters *c1 = cm_counters(link_cm(l, 1));
	CHECK_EQ(c1->rej_invalid_service_id, 1);
	CHECK_EQ(c1->ids_created, 0);
	CHECK_EQ(c1->tx_rej, 1);
	CHECK_EQ(cm_counters(link_cm(l, 0))->tx_req, 1);
	no_events(l, 1);
	struct cm_id *ids[] = { a };
	teardown(l, ids, 1);
	check_end_say(true);
}

static void test_req_timeout(uint8_t timeout, uint8_t retries)
{
	check_begin("REQ to a silent host: REQ_TIMEOUT after %u retries, T = 4.096us*2^%u", retries, timeout);
	struct cm_listen *lis;
	struct link *l = setup(7, NULL, &lis);
	REQUIRE_RET(l, );
	struct tap t;
	memset(&t, 0, sizeof(t));
	t.drop_all_to[1] = true;
	link_set_tap(l, tap_fn, &t);
	link_run_for(l, 123 * US);      /* a non-zero start time */
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a;
	req_param(l, 0, 1, &p, 0x700);
	p.remote_cm_response_timeout = timeout;
	p.max_cm_retries = retries;
	uint64_t t0 = link_now(l), T = 4096ull << timeout;
	REQUIRE_RET(cm_connect(link_cm(l, 0), &p, NULL, t0, &a) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_REQ_TIMEOUT, &e), );
	CHECK_EQ(e.ev.status, ETIMEDOUT);
	CHECK_EQ(e.time, t0 + (uint64_t)(retries + 1) * T);
	const struct cm_counters *c0 = cm_counters(link_cm(l, 0));
	CHECK_EQ(c0->tx_req, retries + 1);
	CHECK_EQ(c0->retries, retries);
	CHECK_EQ(c0->req_timeouts, 1);
	CHECK_EQ(c0->tx_rej, 1);        /* REJ "timeout" to the silent host */
	CHECK_EQ(t.seen[LK_REQ], retries + 1);
	for (unsigned i = 0; i < t.seen[LK_REQ] && i < 32; i++)
		CHECK_EQ(t.times[LK_REQ][i], t0 + i * T);
	CHECK_EQ(cm_id_state(a), CM_ST_TIMEWAIT);
	no_events(l, 1);
	struct cm_id *ids[] = { a };
	teardown(l, ids, 1);
	check_end_say(true);
}

static void test_req_resent_identical(void)
{
	check_begin("a resent REQ is the same MAD (same TID)");
	struct cm_listen *lis;
	struct link *l = setup(8, NULL, &lis);
	REQUIRE_RET(l, );
	static uint8_t first[256];
	struct tap t;
	memset(&t, 0, sizeof(t));
	t.drop_all_to[1] = true;
	link_set_tap(l, tap_fn, &t);
	struct cm_req_param p;
	struct cm_id *a;
	req_param(l, 0, 1, &p, 0x800);
	p.max_cm_retries = 1;
	REQUIRE_RET(cm_connect(link_cm(l, 0), &p, NULL, link_now(l), &a) == 0, );
	memcpy(first, t.last[LK_REQ], 256);
	REQUIRE_RET(expect_event(l, 0, CM_EV_REQ_TIMEOUT, NULL), );
	CHECK_EQ(t.seen[LK_REQ], 2);
	CHECK(memcmp(first, t.last[LK_REQ], 256) == 0);
	struct cm_id *ids[] = { a };
	teardown(l, ids, 1);
	check_end_say(true);
}

static void test_dreq_lost(void)
{
	check_begin("every DREQ lost: DISCONNECT_DONE (ETIMEDOUT) after the retries; a later DREQ of the peer is answered in TimeWait");
	struct cm_listen *lis;
	struct cm_config cfg = test_config();
	cfg.timewait_ns = 10000 * MS;   /* long enough for the peer's DREQ */
	struct link *l = setup(9, &cfg, &lis);
	REQUIRE_RET(l, );
	struct tap t;
	memset(&t, 0, sizeof(t));
	t.drop_kinds[0] = 1u << LK_DREQ;
	link_set_tap(l, tap_fn, &t);
	struct conn c;
	struct link_event e;
	REQUIRE_RET(establish(l, &c, 0x900), );
	uint64_t t0 = link_now(l), T = 4096ull << 10;   /* remote_cm_response_timeout 10 */
	REQUIRE_RET(cm_disconnect(c.a, NULL, 0, t0) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_DISCONNECT_DONE, &e), );
	CHECK_EQ(e.ev.status, ETIMEDOUT);
	CHECK_EQ(e.time, t0 + 4 * T);   /* 1 + 3 retries */
	const struct cm_counters *c0 = cm_counters(link_cm(l, 0)), *c1 = cm_counters(link_cm(l, 1));
	CHECK_EQ(c0->tx_dreq, 4);
	CHECK_EQ(c0->dreq_timeouts, 1);
	CHECK_EQ(cm_id_state(c.a), CM_ST_TIMEWAIT);
	CHECK_EQ(cm_id_state(c.p), CM_ST_ESTABLISHED);
	no_events(l, 1);
	/* The passive side disconnects now: node 0, in TimeWait, answers. */
	REQUIRE_RET(cm_disconnect(c.p, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 1, CM_EV_DISCONNECT_DONE, &e), );
	CHECK_EQ(e.ev.status, 0);
	CHECK_EQ(c0->rx_dup_dreq, 1);
	CHECK_EQ(c0->tx_drep, 1);
	CHECK_EQ(c1->tx_dreq, 1);
	no_events(l, 0);
	struct cm_id *ids[] = { c.a, c.p };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_auto_mra(void)
{
	check_begin("slow consumer: a duplicate REQ gets an MRA; the connection is made after the plain REQ timeout");
	struct cm_listen *lis;
	struct cm_config cfg = test_config();
	cfg.cm_response_timeout = 14;   /* the MRA's service timeout, ~67 ms */
	struct link *l = setup(10, &cfg, &lis);
	REQUIRE_RET(l, );
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a, *pa;
	req_param(l, 0, 1, &p, 0xa00);
	p.remote_cm_response_timeout = 8;       /* ~1 ms */
	p.max_cm_retries = 2;                   /* gives up at ~3.1 ms without MRA */
	uint64_t t0 = link_now(l), T = 4096ull << 8;
	REQUIRE_RET(handshake(l, &p, HS_REQ, &a, &pa), );    /* at t0 */
	/* The consumer sits on it; the REQ comes again after T. */
	REQUIRE_RET(expect_event(l, 0, CM_EV_MRA_RECEIVED, &e), );
	CHECK_EQ(e.ev.mra_service_timeout, 14);
	CHECK_EQ(e.time, t0 + T + 2 * US);
	CHECK_EQ(cm_id_state(a), CM_ST_MRA_REQ_RCVD);
	CHECK_EQ(cm_id_state(pa), CM_ST_MRA_REQ_SENT);
	link_run_for(l, 20 * MS);
	no_events(l, 0);
	struct cm_rep_param r = rep_param(0xa01);
	REQUIRE_RET(cm_accept(pa, &r, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_REP_RECEIVED, NULL), );
	REQUIRE_RET(cm_send_rtu(a, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 1, CM_EV_ESTABLISHED, NULL), );
	const struct cm_counters *c0 = cm_counters(link_cm(l, 0)), *c1 = cm_counters(link_cm(l, 1));
	CHECK_EQ(c0->tx_req, 2);
	CHECK_EQ(c0->mra_extensions, 1);
	CHECK_EQ(c0->req_timeouts, 0);
	CHECK_EQ(c1->tx_mra, 1);
	CHECK_EQ(c1->rx_dup_req, 1);
	struct cm_id *ids[] = { a, pa };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_slow_active_consumer(void)
{
	check_begin("slow active consumer: a duplicate REP gets an MRA of mra_service_timeout; an RTU 1 s late still connects");
	struct cm_listen *lis;
	struct cm_config cfg = test_config();
	cfg.mra_service_timeout = 24;   /* librdmacm's: 68.7 s, the kernel's CMA_CM_MRA_SETTING */
	struct link *l = setup(13, &cfg, &lis);
	REQUIRE_RET(l, );
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a, *pa;
	req_param(l, 0, 1, &p, 0xd00);
	p.local_cm_response_timeout = 9;        /* the passive side's wait, ~2 ms */
	p.max_cm_retries = 2;                   /* gives up at ~6.3 ms without MRA */
	REQUIRE_RET(handshake(l, &p, HS_REP, &a, &pa), );
	/* The consumer sits on the REP; it comes again after T, and the MRA
	 * tells the passive side to wait. */
	REQUIRE_RET(expect_event(l, 1, CM_EV_MRA_RECEIVED, &e), );
	CHECK_EQ(e.ev.mra_service_timeout, 24);
	CHECK_EQ(cm_id_state(a), CM_ST_MRA_REP_SENT);
	CHECK_EQ(cm_id_state(pa), CM_ST_MRA_REP_RCVD);
	link_run_for(l, 1000 * MS);
	no_events(l, 1);
	REQUIRE_RET(cm_send_rtu(a, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 1, CM_EV_ESTABLISHED, NULL), );
	CHECK_EQ(cm_id_state(a), CM_ST_ESTABLISHED);
	const struct cm_counters *c0 = cm_counters(link_cm(l, 0)), *c1 = cm_counters(link_cm(l, 1));
	CHECK_EQ(c1->tx_rep, 2);
	CHECK_EQ(c1->rep_timeouts, 0);
	CHECK_EQ(c0->tx_mra, 1);
	CHECK_EQ(c0->rx_dup_rep, 1);
	struct cm_id *ids[] = { a, pa };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_explicit_mra(void)
{
	check_begin("cm_send_mra: the active side waits the service timeout");
	struct cm_listen *lis;
	struct link *l = setup(11, NULL, &lis);
	REQUIRE_RET(l, );
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a, *pa;
	req_param(l, 0, 1, &p, 0xb00);
	p.remote_cm_response_timeout = 8;
	p.max_cm_retries = 2;
	REQUIRE_RET(handshake(l, &p, HS_REQ, &a, &pa), );
	CHECK_EQ(cm_send_mra(pa, 32, link_now(l)), EINVAL);
	REQUIRE_RET(cm_send_mra(pa, 16, link_now(l)) == 0, );       /* ~268 ms */
	CHECK_EQ(cm_id_state(pa), CM_ST_MRA_REQ_SENT);
	REQUIRE_RET(expect_event(l, 0, CM_EV_MRA_RECEIVED, &e), );
	uint64_t t_mra = e.time;
	link_run_for(l, 200 * MS);
	no_events(l, 0);
	CHECK_EQ(cm_counters(link_cm(l, 0))->tx_req, 1);
	REQUIRE_RET(cm_accept(pa, &(struct cm_rep_param){ .qpn = 0xb01 }, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_REP_RECEIVED, NULL), );
	CHECK(link_now(l) > t_mra + 200 * MS);
	REQUIRE_RET(cm_send_rtu(a, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 1, CM_EV_ESTABLISHED, NULL), );
	struct cm_id *ids[] = { a, pa };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_mra_runs_out(void)
{
	check_begin("the MRA'd wait runs out: REQ resent, then REQ_TIMEOUT; the passive side gets REJ timeout");
	struct cm_listen *lis;
	struct link *l = setup(12, NULL, &lis);
	REQUIRE_RET(l, );
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a, *pa;
	req_param(l, 0, 1, &p, 0xc00);
	p.remote_cm_response_timeout = 8;
	p.max_cm_retries = 2;
	uint64_t t0 = link_now(l), T = 4096ull << 8, S = 4096ull << 9;
	REQUIRE_RET(handshake(l, &p, HS_REQ, &a, &pa), );    /* at t0 */
	REQUIRE_RET(cm_send_mra(pa, 9, link_now(l)) == 0, );
	/* MRA at t0+2us extends to +S+T; REQ #2 then; the passive side (MRA
	 * Sent) answers it with the MRA again: +S+T again; REQ #3; MRA;
	 * +S+T; out of retries. */
	for (int i = 0; i < 3; i++) {
		REQUIRE_RET(expect_event(l, 0, CM_EV_MRA_RECEIVED, &e), );
		CHECK_EQ(e.time, t0 + 2 * US + (uint64_t)i * (S + T + 2 * US));
	}
	REQUIRE_RET(expect_event(l, 0, CM_EV_REQ_TIMEOUT, &e), );
	CHECK_EQ(e.time, t0 + 2 * US + 2 * (S + T + 2 * US) + S + T);
	CHECK_EQ(cm_counters(link_cm(l, 0))->tx_req, 3);
	CHECK_EQ(cm_counters(link_cm(l, 1))->tx_mra, 3);
	REQUIRE_RET(expect_event(l, 1, CM_EV_REJ_RECEIVED, &e), );
	CHECK_EQ(e.ev.rej_reason, CM_REJ_TIMEOUT);
	CHECK_EQ(e.ev.ari_len, 8);
	CHECK(e.ev.ari && e.ev.ari[7] == 0x00 && e.ev.ari[6] == 0x10);  /* node 0's GUID 0x1000 */
	CHECK_EQ(cm_id_state(pa), CM_ST_TIMEWAIT);
	struct cm_id *ids[] = { a, pa };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_duplicates(void)
{
	check_begin("duplicates: REQ in REP Sent -> REP again; REP in Established -> RTU again; DREQ in TimeWait -> DREP again");
	struct cm_listen *lis;
	struct link *l = setup(13, NULL, &lis);
	REQUIRE_RET(l, );
	struct tap t;
	memset(&t, 0, sizeof(t));
	t.drop_kinds[0] = 1u << LK_RTU;         /* keep the passive side in REP Sent */
	link_set_tap(l, tap_fn, &t);
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a, *pa;
	static uint8_t req[256], rep[256], dreq[256];
	req_param(l, 0, 1, &p, 0xd00);
	p.remote_cm_response_timeout = 20;      /* no retransmissions meanwhile */
	p.local_cm_response_timeout = 20;
	REQUIRE_RET(cm_connect(link_cm(l, 0), &p, NULL, link_now(l), &a) == 0, );
	memcpy(req, t.last[LK_REQ], 256);
	REQUIRE_RET(expect_event(l, 1, CM_EV_REQ_RECEIVED, &e), );
	pa = e.ev.id;
	REQUIRE_RET(cm_accept(pa, &(struct cm_rep_param){ .qpn = 0xd01 }, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_REP_RECEIVED, NULL), );
	memcpy(rep, t.last[LK_REP], 256);
	REQUIRE_RET(cm_send_rtu(a, NULL, 0, link_now(l)) == 0, );
	link_run_for(l, 10 * US);
	CHECK_EQ(cm_id_state(pa), CM_ST_REP_SENT);

	const struct cm_counters *c0 = cm_counters(link_cm(l, 0)), *c1 = cm_counters(link_cm(l, 1));
	uint64_t rep_before = c1->tx_rep;
	link_inject(l, 0, 1, req, 256);
	CHECK_EQ(c1->tx_rep, rep_before + 1);
	CHECK_EQ(c1->rx_dup_req, 1);
	CHECK(memcmp(t.last[LK_REP], rep, 256) == 0);   /* the same REP */
	no_events(l, 1);
	/* That REP reaches node 0, established: RTU again (and still lost). */
	uint64_t rtu_before = c0->tx_rtu;
	link_run_for(l, 10 * US);
	CHECK_EQ(c0->tx_rtu, rtu_before + 1);
	CHECK_EQ(c0->rx_dup_rep, 1);
	link_inject(l, 1, 0, rep, 256);
	CHECK_EQ(c0->tx_rtu, rtu_before + 2);
	CHECK_EQ(c0->rx_dup_rep, 2);
	no_events(l, 0);

	/* Let an RTU through; then disconnect and replay the DREQ. */
	t.drop_kinds[0] = 0;
	link_inject(l, 1, 0, rep, 256);
	REQUIRE_RET(expect_event(l, 1, CM_EV_ESTABLISHED, NULL), );
	REQUIRE_RET(cm_disconnect(a, NULL, 0, link_now(l)) == 0, );
	memcpy(dreq, t.last[LK_DREQ], 256);
	REQUIRE_RET(expect_event(l, 1, CM_EV_DREQ_RECEIVED, NULL), );
	REQUIRE_RET(expect_event(l, 0, CM_EV_DISCONNECT_DONE, NULL), );
	uint64_t drep_before = c1->tx_drep;
	static uint8_t drep[256];
	memcpy(drep, t.last[LK_DREP], 256);
	link_inject(l, 0, 1, dreq, 256);
	CHECK_EQ(c1->tx_drep, drep_before + 1);
	CHECK_EQ(c1->rx_dup_dreq, 1);
	CHECK(memcmp(t.last[LK_DREP], drep, 256) == 0);
	/* A REQ duplicate in TimeWait: REJ stale connection. */
	uint64_t rej_before = c1->tx_rej;
	link_inject(l, 0, 1, req, 256);
	CHECK_EQ(c1->tx_rej, rej_before + 1);
	struct wire_cm_msg rej;
	CHECK(wire_cm_decode(t.last[LK_REJ], 256, &rej) >= 0);
	CHECK_EQ(rej.rej.reason, WIRE_CM_REJ_STALE_CONN);
	no_events(l, 1);
	link_run_for(l, 10 * US);
	/* The DREP and the REJ reached node 0 in TimeWait: dropped. */
	CHECK(c0->rx_dup_drep + c0->rx_drop_timewait >= 2);
	no_events(l, 0);
	CHECK(link_counters_consistent(l, 0));
	CHECK(link_counters_consistent(l, 1));
	struct link_event x;
	link_run_until(l, NULL, NULL, 1000 * MS);
	while (link_pop_event(l, 0, &x))
		CHECK_EQ(x.ev.type, CM_EV_TIMEWAIT_EXIT);
	while (link_pop_event(l, 1, &x))
		CHECK_EQ(x.ev.type, CM_EV_TIMEWAIT_EXIT);
	struct cm_id *ids[] = { a, pa };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_everything_twice(void)
{
	check_begin("every MAD delivered twice: each event still once");
	struct cm_listen *lis;
	struct link *l = setup(14, NULL, &lis);
	REQUIRE_RET(l, );
	struct link_faults f = { .dup = 1.0, .delay_ns = 1000, .jitter_ns = 500 };
	link_set_faults(l, &f);
	struct conn c;
	REQUIRE_RET(establish(l, &c, 0xe00), );
	link_run_for(l, 100 * US);
	no_events(l, 0);
	no_events(l, 1);
	REQUIRE_RET(cm_disconnect(c.p, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_DREQ_RECEIVED, NULL), );
	REQUIRE_RET(expect_event(l, 1, CM_EV_DISCONNECT_DONE, NULL), );
	link_run_for(l, 100 * US);
	no_events(l, 0);
	no_events(l, 1);
	const struct cm_counters *c0 = cm_counters(link_cm(l, 0)), *c1 = cm_counters(link_cm(l, 1));
	CHECK(c1->rx_dup_req >= 1);
	CHECK(c0->rx_dup_rep >= 1);
	CHECK(c0->rx_dup_dreq >= 1);
	REQUIRE_RET(expect_event(l, 0, CM_EV_TIMEWAIT_EXIT, NULL), );
	REQUIRE_RET(expect_event(l, 1, CM_EV_TIMEWAIT_EXIT, NULL), );
	struct cm_id *ids[] = { c.a, c.p };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_sidr(void)
{
	check_begin("SIDR: request, reply; duplicate answered again; unknown service; timeout");
	struct cm_listen *lis;
	struct link *l = setup(15, NULL, &lis);
	REQUIRE_RET(l, );
	struct tap t;
	memset(&t, 0, sizeof(t));
	link_set_tap(l, tap_fn, &t);
	struct link_event e;
	struct cm_id *a, *pa, *b, *c;
	int ua;
	REQUIRE_RET(cm_sidr_request(link_cm(l, 0), link_gid(l, 1), SID, "who", 3, 10, 3, &ua, link_now(l), &a) == 0, );
	CHECK_EQ(cm_id_state(a), CM_ST_SIDR_REQ_SENT);
	static uint8_t sreq[256];
	memcpy(sreq, t.last[LK_SIDR_REQ], 256);
	REQUIRE_RET(expect_event(l, 1, CM_EV_SIDR_REQ_RECEIVED, &e), );
	pa = e.ev.id;
	CHECK(e.ev.listen_user == &listen_tag);
	CHECK_EQ(e.ev.u.sidr_req.service_id, SID);
	CHECK(memcmp(e.ev.private_data, "who", 3) == 0);
	CHECK_EQ(cm_id_state(pa), CM_ST_SIDR_REQ_RCVD);
	/* A duplicate before the answer: dropped. */
	link_inject(l, 0, 1, sreq, 256);
	CHECK_EQ(cm_counters(link_cm(l, 1))->rx_dup_sidr_req, 1);
	no_events(l, 1);
	CHECK_EQ(cm_sidr_reply(pa, CM_SIDR_SUCCESS, 0x1000000, 0, NULL, 0, link_now(l)), EINVAL);
	REQUIRE_RET(cm_sidr_reply(pa, CM_SIDR_SUCCESS, 0x777, 0x11111111, "me", 2, link_now(l)) == 0, );
	CHECK_EQ(cm_id_state(pa), CM_ST_TIMEWAIT);
	REQUIRE_RET(expect_event(l, 0, CM_EV_SIDR_REP_RECEIVED, &e), );
	CHECK(e.ev.id == a && e.ev.user == &ua);
	CHECK_EQ(e.ev.u.sidr_rep.status, CM_SIDR_SUCCESS);
	CHECK_EQ(e.ev.u.sidr_rep.qpn, 0x777);
	CHECK_EQ(e.ev.u.sidr_rep.qkey, 0x11111111);
	CHECK_EQ(e.ev.u.sidr_rep.service_id, SID);
	CHECK(memcmp(e.ev.private_data, "me", 2) == 0);
	CHECK_EQ(cm_id_state(a), CM_ST_IDLE);
	/* A duplicate after the answer gets the same SIDR_REP. */
	uint64_t before = cm_counters(link_cm(l, 1))->tx_sidr_rep;
	link_inject(l, 0, 1, sreq, 256);
	CHECK_EQ(cm_counters(link_cm(l, 1))->tx_sidr_rep, before + 1);
	CHECK_EQ(cm_counters(link_cm(l, 1))->rx_dup_sidr_req, 2);
	link_run_for(l, 10 * US);
	CHECK_EQ(cm_counters(link_cm(l, 0))->rx_dup_sidr_rep, 1);
	no_events(l, 0);
	no_events(l, 1);

	/* Unknown service: SIDR_REP status 1 at once. */
	REQUIRE_RET(cm_sidr_request(link_cm(l, 0), link_gid(l, 1), 0x999, NULL, 0, 10, 3, NULL, link_now(l), &b) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_SIDR_REP_RECEIVED, &e), );
	CHECK_EQ(e.ev.u.sidr_rep.status, CM_SIDR_UNSUPPORTED);
	CHECK_EQ(cm_counters(link_cm(l, 1))->sidr_unsupported, 1);
	no_events(l, 1);

	/* Timeout. */
	t.drop_all_to[1] = true;
	uint64_t t0 = link_now(l);
	REQUIRE_RET(cm_sidr_request(link_cm(l, 0), link_gid(l, 1), SID, NULL, 0, 9, 2, NULL, t0, &c) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_SIDR_TIMEOUT, &e), );
	CHECK_EQ(e.time, t0 + 3 * (4096ull << 9));
	CHECK_EQ(cm_counters(link_cm(l, 0))->sidr_timeouts, 1);
	no_events(l, 1);
	struct cm_id *ids[] = { a, pa, b, c };
	teardown(l, ids, 4);
	check_end_say(true);
}

static void test_sidr_destroy(void)
{
	check_begin("SIDR: destroying an unanswered request replies \"rejected\"");
	struct cm_listen *lis;
	struct link *l = setup(16, NULL, &lis);
	REQUIRE_RET(l, );
	struct link_event e;
	struct cm_id *a;
	REQUIRE_RET(cm_sidr_request(link_cm(l, 0), link_gid(l, 1), SID, NULL, 0, 10, 3, NULL, link_now(l), &a) == 0, );
	REQUIRE_RET(expect_event(l, 1, CM_EV_SIDR_REQ_RECEIVED, &e), );
	cm_destroy_id(e.ev.id, link_now(l));
	REQUIRE_RET(expect_event(l, 0, CM_EV_SIDR_REP_RECEIVED, &e), );
	CHECK_EQ(e.ev.u.sidr_rep.status, CM_SIDR_REJECT);
	no_events(l, 1);
	struct cm_id *ids[] = { a };
	teardown(l, ids, 1);
	check_end_say(true);
}

static void test_destroy(void)
{
	check_begin("cm_destroy_id: REQ Sent -> REJ timeout; REQ Received -> REJ 28; Established -> DREQ; no events after");
	struct cm_listen *lis;
	struct link *l = setup(17, NULL, &lis);
	REQUIRE_RET(l, );
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a, *pa;

	/* Active destroyed in REQ Sent. */
	req_param(l, 0, 1, &p, 0xf00);
	REQUIRE_RET(handshake(l, &p, HS_REQ, &a, &pa), );
	cm_destroy_id(a, link_now(l));
	REQUIRE_RET(expect_event(l, 1, CM_EV_REJ_RECEIVED, &e), );
	CHECK_EQ(e.ev.rej_reason, CM_REJ_TIMEOUT);
	CHECK_EQ(cm_id_state(pa), CM_ST_TIMEWAIT);
	cm_destroy_id(pa, link_now(l));

	/* Passive destroyed in REQ Received. */
	req_param(l, 0, 1, &p, 0xf10);
	REQUIRE_RET(handshake(l, &p, HS_REQ, &a, &pa), );
	cm_destroy_id(pa, link_now(l));
	REQUIRE_RET(expect_event(l, 0, CM_EV_REJ_RECEIVED, &e), );
	CHECK_EQ(e.ev.rej_reason, CM_REJ_CONSUMER_DEFINED);
	cm_destroy_id(a, link_now(l));

	/* Established, destroyed on the active side: DREQ. */
	struct conn c;
	REQUIRE_RET(establish(l, &c, 0xf20), );
	cm_destroy_id(c.a, link_now(l));
	REQUIRE_RET(expect_event(l, 1, CM_EV_DREQ_RECEIVED, &e), );
	cm_destroy_id(c.p, link_now(l));

	/* Passive destroyed in REP Sent: REJ 28 to the active side, which is in
	 * REP Received. */
	req_param(l, 0, 1, &p, 0xf30);
	REQUIRE_RET(handshake(l, &p, HS_REP, &a, &pa), );
	cm_destroy_id(pa, link_now(l));
	REQUIRE_RET(expect_event(l, 0, CM_EV_REJ_RECEIVED, &e), );
	CHECK_EQ(e.ev.rej_reason, CM_REJ_CONSUMER_DEFINED);
	CHECK_EQ(cm_send_rtu(a, NULL, 0, link_now(l)), EINVAL);

	link_run_until(l, NULL, NULL, 1000 * MS);
	/* Only a's TimeWait exit: every other id was destroyed. */
	REQUIRE_RET(expect_event(l, 0, CM_EV_TIMEWAIT_EXIT, &e), );
	CHECK(e.ev.id == a);
	no_events(l, 0);
	no_events(l, 1);
	struct cm_id *ids[] = { a };
	teardown(l, ids, 1);
	check_end_say(true);
}

static void test_establish(void)
{
	check_begin("cm_establish before the RTU (COMM_EST); a late RTU is a duplicate");
	struct cm_listen *lis;
	struct link *l = setup(18, NULL, &lis);
	REQUIRE_RET(l, );
	struct tap t;
	memset(&t, 0, sizeof(t));
	t.drop_kinds[0] = 1u << LK_RTU;
	link_set_tap(l, tap_fn, &t);
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a, *pa;
	req_param(l, 0, 1, &p, 0x1100);
	REQUIRE_RET(handshake(l, &p, HS_REQ, &a, &pa), );
	CHECK_EQ(cm_establish(pa, link_now(l)), EINVAL);        /* REQ Received */
	REQUIRE_RET(cm_accept(pa, &(struct cm_rep_param){ .qpn = 0x1101 }, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_REP_RECEIVED, NULL), );
	REQUIRE_RET(cm_send_rtu(a, NULL, 0, link_now(l)) == 0, );
	link_run_for(l, 10 * US);
	CHECK_EQ(cm_id_state(pa), CM_ST_REP_SENT);
	REQUIRE_RET(cm_establish(pa, link_now(l)) == 0, );
	CHECK_EQ(link_pending_events(l, 1), 1);          /* reported inside the call */
	REQUIRE_RET(expect_event(l, 1, CM_EV_ESTABLISHED, &e), );
	CHECK_EQ(cm_id_state(pa), CM_ST_ESTABLISHED);
	CHECK_EQ(cm_establish(pa, link_now(l)), EISCONN);
	t.drop_kinds[0] = 0;
	link_inject(l, 0, 1, t.last[LK_RTU], 256);
	CHECK_EQ(cm_counters(link_cm(l, 1))->rx_dup_rtu, 1);
	no_events(l, 1);
	link_run_for(l, 100 * MS);
	CHECK_EQ(cm_counters(link_cm(l, 1))->tx_rep, 1);        /* no REP resent */
	struct cm_id *ids[] = { a, pa };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_rep_timeout(void)
{
	check_begin("every RTU lost: REP_TIMEOUT on the passive side, whose REJ ends the active side's connection");
	struct cm_listen *lis;
	struct link *l = setup(19, NULL, &lis);
	REQUIRE_RET(l, );
	struct tap t;
	memset(&t, 0, sizeof(t));
	t.drop_kinds[0] = 1u << LK_RTU;
	link_set_tap(l, tap_fn, &t);
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a, *pa;
	req_param(l, 0, 1, &p, 0x1200);
	p.local_cm_response_timeout = 9;        /* the passive side's wait */
	p.max_cm_retries = 2;
	REQUIRE_RET(handshake(l, &p, HS_REQ, &a, &pa), );
	uint64_t t0 = link_now(l), T = 4096ull << 9;
	REQUIRE_RET(cm_accept(pa, &(struct cm_rep_param){ .qpn = 0x1201 }, t0) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_REP_RECEIVED, NULL), );
	REQUIRE_RET(cm_send_rtu(a, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 1, CM_EV_REP_TIMEOUT, &e), );
	CHECK_EQ(e.time, t0 + 3 * T);
	CHECK_EQ(cm_counters(link_cm(l, 1))->tx_rep, 3);
	CHECK_EQ(cm_counters(link_cm(l, 0))->tx_rtu, 3);        /* one per REP */
	REQUIRE_RET(expect_event(l, 0, CM_EV_REJ_RECEIVED, &e), );
	CHECK_EQ(e.ev.rej_reason, CM_REJ_TIMEOUT);
	CHECK_EQ(cm_id_state(a), CM_ST_TIMEWAIT);
	struct cm_id *ids[] = { a, pa };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_api_checks(void)
{
	check_begin("consumer calls: arguments and states");
	struct cm_listen *lis, *lis2;
	struct link *l = setup(20, NULL, &lis);
	REQUIRE_RET(l, );
	struct cm *cm0 = link_cm(l, 0);
	CHECK_EQ(cm_listen(link_cm(l, 1), SID, NULL, &lis2), EADDRINUSE);
	struct cm_req_param p;
	struct cm_id *a = NULL;
	uint8_t big[256] = { 0 };
	req_param(l, 0, 1, &p, 0x1300);
	p.qp_type = IBV_QPT_UD;
	CHECK_EQ(cm_connect(cm0, &p, NULL, 0, &a), EINVAL);
	req_param(l, 0, 1, &p, 0x1000000);
	CHECK_EQ(cm_connect(cm0, &p, NULL, 0, &a), EINVAL);
	req_param(l, 0, 1, &p, 0x1300);
	p.private_data = big;
	p.private_data_len = CM_REQ_PRIVATE_DATA_SIZE + 1;
	CHECK_EQ(cm_connect(cm0, &p, NULL, 0, &a), EINVAL);
	p.private_data_len = 0;
	p.path_mtu = 0;
	CHECK_EQ(cm_connect(cm0, &p, NULL, 0, &a), EINVAL);
	p.path_mtu = IBV_MTU_1024;
	p.max_cm_retries = 16;
	CHECK_EQ(cm_connect(cm0, &p, NULL, 0, &a), EINVAL);
	CHECK_EQ(cm_counters(cm0)->ids_created, 0);
	CHECK_EQ(cm_counters(cm0)->tx_mads, 0);
	p.max_cm_retries = 3;
	p.qp_type = IBV_QPT_UC;
	REQUIRE_RET(cm_connect(cm0, &p, NULL, 0, &a) == 0, );
	CHECK_EQ(cm_send_rtu(a, NULL, 0, 0), EINVAL);
	CHECK_EQ(cm_accept(a, &(struct cm_rep_param){ .qpn = 1 }, 0), EINVAL);
	CHECK_EQ(cm_disconnect(a, NULL, 0, 0), EINVAL);
	CHECK_EQ(cm_send_mra(a, 10, 0), EINVAL);
	CHECK_EQ(cm_sidr_reply(a, CM_SIDR_SUCCESS, 1, 1, NULL, 0, 0), EINVAL);
	struct link_event e;
	REQUIRE_RET(expect_event(l, 1, CM_EV_REQ_RECEIVED, &e), );
	CHECK_EQ(e.ev.u.req.qp_type, IBV_QPT_UC);
	struct cm_id *pa = e.ev.id;
	CHECK_EQ(cm_accept(pa, &(struct cm_rep_param){ .qpn = 1, .private_data = big,
						       .private_data_len = CM_REP_PRIVATE_DATA_SIZE + 1 }, 0),
		 EINVAL);
	CHECK_EQ(cm_reject(pa, CM_REJ_CONSUMER_DEFINED, big, CM_REJ_ARI_LENGTH + 1, NULL, 0, 0), EINVAL);
	CHECK_EQ(cm_reject(pa, CM_REJ_CONSUMER_DEFINED, NULL, 0, big, CM_REJ_PRIVATE_DATA_SIZE + 1, 0), EINVAL);
	CHECK_EQ(cm_id_state(pa), CM_ST_REQ_RCVD);
	CHECK_EQ(cm_sidr_request(cm0, link_gid(l, 1), SID, big, CM_SIDR_REQ_PRIVATE_DATA_SIZE + 1, 10, 1, NULL, 0,
				 &a), EINVAL);
	cm_unlisten(lis);
	CHECK_EQ(cm_listen(link_cm(l, 1), SID, NULL, &lis2), 0);
	struct cm_id *ids[] = { a, pa };
	teardown(l, ids, 2);
	check_end_say(true);
}

struct trace_log {
	char lines[64][128];
	unsigned n;
};

static void trace_fn(void *ctx, const char *line)
{
	struct trace_log *t = ctx;
	if (t->n < 64)
		snprintf(t->lines[t->n++], sizeof(t->lines[0]), "%s", line);
}

static void test_self_connect(void)
{
	check_begin("one cm connects to itself (client and server in one process)");
	struct cm_config cfg = test_config();
	struct link *l = link_create(21, 2, &cfg);
	REQUIRE_RET(l, );
	struct cm *cm = link_cm(l, 0);
	static struct trace_log tr;
	memset(&tr, 0, sizeof(tr));
	cm_set_trace(cm, trace_fn, &tr);
	struct cm_listen *lis;
	REQUIRE_RET(cm_listen(cm, SID, &listen_tag, &lis) == 0, );
	struct cm_req_param p;
	struct link_event e;
	struct cm_id *a, *pa;
	req_param(l, 0, 0, &p, 0x1400);
	REQUIRE_RET(cm_connect(cm, &p, NULL, link_now(l), &a) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_REQ_RECEIVED, &e), );
	pa = e.ev.id;
	CHECK(pa != a);
	REQUIRE_RET(cm_accept(pa, &(struct cm_rep_param){ .qpn = 0x1401 }, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_REP_RECEIVED, &e), );
	CHECK(e.ev.id == a);
	REQUIRE_RET(cm_send_rtu(a, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_ESTABLISHED, &e), );
	CHECK(e.ev.id == pa);
	REQUIRE_RET(cm_disconnect(pa, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(expect_event(l, 0, CM_EV_DREQ_RECEIVED, &e), );
	CHECK(e.ev.id == a);
	REQUIRE_RET(expect_event(l, 0, CM_EV_DISCONNECT_DONE, &e), );
	CHECK(e.ev.id == pa);
	/* The trace names the IBTA states. */
	char want[96];
	snprintf(want, sizeof(want), "id 0x%08x REQ Sent -> REP Received (rx REP)", cm_id_local_comm_id(a));
	bool found = false;
	for (unsigned i = 0; i < tr.n; i++)
		found |= strcmp(tr.lines[i], want) == 0;
	CHECK(found);
	snprintf(want, sizeof(want), "id 0x%08x Established -> DREQ Received (rx DREQ)", cm_id_local_comm_id(a));
	found = false;
	for (unsigned i = 0; i < tr.n; i++)
		found |= strcmp(tr.lines[i], want) == 0;
	CHECK(found);
	cm_set_trace(cm, NULL, NULL);
	cm_unlisten(lis);
	struct cm_id *ids[] = { a, pa };
	teardown(l, ids, 2);
	check_end_say(true);
}

static void test_create_checks(void)
{
	check_begin("cm_create: arguments");
	struct cm_config c;
	cm_config_default(&c);
	struct cm_io io = { 0 };
	errno = 0;
	CHECK(cm_create(&c, &io) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(cm_timeout_ns(0), 4096);
	CHECK_EQ(cm_timeout_ns(20), 4096ull << 20);
	CHECK(strcmp(cm_state_name(CM_ST_MRA_REQ_RCVD), "MRA(REQ) Received") == 0);
	CHECK(strcmp(cm_event_name(CM_EV_DISCONNECT_DONE), "DISCONNECT_DONE") == 0);
	check_end_say(true);
}

int main(void)
{
	test_create_checks();
	test_connect_accept();
	test_disconnect_passive();
	test_simultaneous_disconnect();
	test_reject();
	test_active_rejects_rep();
	test_unlistened();
	test_req_timeout(10, 3);
	test_req_timeout(4, 0);
	test_req_timeout(16, 15);
	test_req_resent_identical();
	test_dreq_lost();
	test_auto_mra();
	test_slow_active_consumer();
	test_explicit_mra();
	test_mra_runs_out();
	test_duplicates();
	test_everything_twice();
	test_sidr();
	test_sidr_destroy();
	test_destroy();
	test_establish();
	test_rep_timeout();
	test_api_checks();
	test_self_connect();
	printf("%d cases, %d failures\n", check_cases, check_failures);
	return check_exit("cm_basic");
}
