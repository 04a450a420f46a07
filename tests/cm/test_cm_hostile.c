/*
 * test_cm_hostile.c — hostile MADs fed straight into cm_receive.
 *
 * Two cms hold ids in several states (established, REQ Received with a
 * consumer that does not answer, REP Received likewise, a SIDR request
 * not answered yet, TimeWait).  Then both receive: random bytes of random
 * lengths; every truncation of every real MAD captured on the link; a
 * valid CM header over a random body, for every attribute; real MADs with
 * trailing bytes; well-formed messages with the right comm IDs that are
 * wrong for the state (RTU to an established active side, REP to a
 * passive side, DREQ naming another QP, a REJ whose Local Comm ID does not
 * match, MRA for the wrong message, ...).  None of that may change a state,
 * report an event (a random REQ or SIDR_REQ is refused at once without
 * one), or break the counters; every MAD is counted once.  Then the
 * connections still work: the established one disconnects cleanly, the
 * pending ones are accepted.
 *
 * Last, real MADs with a few random bytes changed: those can carry valid
 * comm IDs and are indistinguishable from the peer's own messages, so they
 * may legitimately move states; that round runs on its own and checks
 * only that nothing crashes, counters add up, and everything is freed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_link.h"
#include "../check.h"

#define SID 0x0000000001060001ull
#define MS 1000000ull
#define US 1000ull

struct capture {
	uint8_t mad[64][256];
	unsigned from[64];
	unsigned n;
};

static bool tap_capture(void *arg, unsigned from, unsigned to, uint64_t now, uint8_t mad[256])
{
	struct capture *c = arg;
	(void)to;
	(void)now;
	if (c->n < 64) {
		memcpy(c->mad[c->n], mad, 256);
		c->from[c->n] = from;
		c->n++;
	}
	return true;
}

struct held {
	struct cm_id *est_a, *est_p;    /* established */
	struct cm_id *reqrcvd_a, *reqrcvd_p; /* passive in REQ Received */
	struct cm_id *reprcvd_a, *reprcvd_p; /* active in REP Received */
	struct cm_id *sidr_a, *sidr_p;  /* SIDR REQ Received on node 1 */
	struct cm_id *tw_a, *tw_p;      /* TimeWait (rejected) */
	enum cm_state st[10];
};

struct wait {
	struct link *l;
	unsigned node;
};

static bool has_event(void *arg)
{
	struct wait *w = arg;
	return link_pending_events(w->l, w->node) > 0;
}

static bool next_event(struct link *l, unsigned node, enum cm_event_type t, struct link_event *e)
{
	struct wait w = { l, node };
	if (link_run_until(l, has_event, &w, 10000 * MS) != LINK_DONE)
		return false;
	link_pop_event(l, node, e);
	if (e->ev.type != t)
		FAIL("node %u: %s, expected %s", node, cm_event_name(e->ev.type), cm_event_name(t));
	return e->ev.type == t;
}

static struct cm_id *do_connect(struct link *l, uint32_t qpn, uint64_t sid, struct cm_id **passive)
{
	struct cm_req_param p;
	struct cm_id *a = NULL;
	struct link_event e;
	cm_req_param_init(link_cm(l, 0), &p);
	memcpy(p.dgid, link_gid(l, 1), 16);
	p.service_id = sid;
	p.qpn = qpn;
	p.remote_cm_response_timeout = 22;      /* no retransmissions during the test */
	p.local_cm_response_timeout = 22;
	if (cm_connect(link_cm(l, 0), &p, NULL, link_now(l), &a))
		return NULL;
	if (passive) {
		if (!next_event(l, 1, CM_EV_REQ_RECEIVED, &e))
			return NULL;
		*passive = e.ev.id;
	}
	return a;
}

static bool build(struct link *l, struct held *h)
{
	struct link_event e;
	/* established */
	h->est_a = do_connect(l, 0x100, SID, &h->est_p);
	REQUIRE_RET(h->est_a, false);
	REQUIRE_RET(cm_accept(h->est_p, &(struct cm_rep_param){ .qpn = 0x101 }, link_now(l)) == 0, false);
	REQUIRE_RET(next_event(l, 0, CM_EV_REP_RECEIVED, &e), false);
	REQUIRE_RET(cm_send_rtu(h->est_a, NULL, 0, link_now(l)) == 0, false);
	REQUIRE_RET(next_event(l, 1, CM_EV_ESTABLISHED, &e), false);
	/* REQ Received, unanswered */
	h->reqrcvd_a = do_connect(l, 0x200, SID, &h->reqrcvd_p);
	REQUIRE_RET(h->reqrcvd_a, false);
	/* REP Received, unanswered */
	h->reprcvd_a = do_connect(l, 0x300, SID, &h->reprcvd_p);
	REQUIRE_RET(h->reprcvd_a, false);
	REQUIRE_RET(cm_accept(h->reprcvd_p, &(struct cm_rep_param){ .qpn = 0x301 }, link_now(l)) == 0, false);
	REQUIRE_RET(next_event(l, 0, CM_EV_REP_RECEIVED, &e), false);
	/* SIDR REQ Received */
	REQUIRE_RET(cm_sidr_request(link_cm(l, 0), link_gid(l, 1), SID, NULL, 0, 22, 3, NULL, link_now(l), &h->sidr_a) == 0,
		false);
	REQUIRE_RET(next_event(l, 1, CM_EV_SIDR_REQ_RECEIVED, &e), false);
	h->sidr_p = e.ev.id;
	/* TimeWait */
	h->tw_a = do_connect(l, 0x400, SID, &h->tw_p);
	REQUIRE_RET(h->tw_a, false);
	REQUIRE_RET(cm_reject(h->tw_p, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0, link_now(l)) == 0, false);
	REQUIRE_RET(next_event(l, 0, CM_EV_REJ_RECEIVED, &e), false);
	link_run_for(l, 100 * US);
	return true;
}

static struct cm_id **ids_of(struct held *h, unsigned i)
{
	struct cm_id **all[] = { &h->est_a, &h->est_p, &h->reqrcvd_a, &h->reqrcvd_p, &h->reprcvd_a,
				 &h->reprcvd_p, &h->sidr_a, &h->sidr_p, &h->tw_a, &h->tw_p };
	return all[i];
}

static void snapshot(struct held *h)
{
	for (unsigned i = 0; i < 10; i++)
		h->st[i] = cm_id_state(*ids_of(h, i));
}

static void same_states(struct held *h, const char *after)
{
	for (unsigned i = 0; i < 10; i++)
		if (cm_id_state(*ids_of(h, i)) != h->st[i])
			FAIL("after %s: id %u went %s -> %s", after, i, cm_state_name(h->st[i]),
				cm_state_name(cm_id_state(*ids_of(h, i))));
}

static void no_events(struct link *l, const char *after)
{
	struct link_event e;
	for (unsigned n = 0; n < 2; n++)
		while (link_pop_event(l, n, &e))
			FAIL("after %s: node %u: event %s", after, n, cm_event_name(e.ev.type));
}

static void counters_ok(struct link *l, const char *after)
{
	for (unsigned n = 0; n < 2; n++)
		if (!link_counters_consistent(l, n))
			FAIL("after %s: node %u counters", after, n);
}

static uint64_t rx_total(struct link *l, unsigned n)
{
	return cm_counters(link_cm(l, n))->rx_mads;
}

/* Feed to both nodes, from the other one. */
static void feed(struct link *l, const uint8_t *mad, size_t len)
{
	cm_receive(link_cm(l, 0), link_gid(l, 1), mad, len, link_now(l));
	cm_receive(link_cm(l, 1), link_gid(l, 0), mad, len, link_now(l));
}

static void encode(const struct wire_cm_msg *m, uint8_t *mad)
{
	if (wire_cm_encode(m, mad, 256) != 256)
		FAIL("encode attr 0x%x", m->hdr.attr_id);
}

/* What the hostile and mutation rounds start from: two cms (timewait
 * timewait_ns), a listener on node 1, and the held ids built (build) with
 * every MAD of the build captured in *cap.  NULL if any step failed. */
static struct link *setup_held(uint64_t seed, uint64_t timewait_ns, struct capture *cap, struct held *h,
			       struct cm_listen **lis)
{
	struct cm_config cfg;
	cm_config_default(&cfg);
	cfg.timewait_ns = timewait_ns;
	struct link *l = link_create(seed, 2, &cfg);
	REQUIRE_RET(l, NULL);
	REQUIRE_RET(cm_listen(link_cm(l, 1), SID, NULL, lis) == 0, NULL);
	memset(cap, 0, sizeof(*cap));
	link_set_tap(l, tap_capture, cap);
	REQUIRE_RET(build(l, h), NULL);
	link_set_tap(l, NULL, NULL);
	return l;
}

static void test_hostile(uint64_t seed)
{
	check_begin("hostile MADs into cms with ids in several states (seed %llu)", (unsigned long long)seed);
	static struct capture cap;
	struct cm_listen *lis;
	struct held h;
	struct link *l = setup_held(seed, 100000 * MS, &cap, &h, &lis);
	REQUIRE_RET(l, );
	no_events(l, "set-up");
	snapshot(&h);
	CHECK_EQ(h.st[0], CM_ST_ESTABLISHED);
	CHECK_EQ(h.st[3], CM_ST_REQ_RCVD);
	CHECK_EQ(h.st[4], CM_ST_REP_RCVD);
	CHECK_EQ(h.st[7], CM_ST_SIDR_REQ_RCVD);
	CHECK_EQ(h.st[8], CM_ST_TIMEWAIT);
	uint8_t buf[512];

	/* 1. random bytes */
	uint64_t before = rx_total(l, 0);
	for (int i = 0; i < 20000; i++) {
		size_t len = (size_t)link_random_below(l, 320);
		for (size_t j = 0; j < len; j++)
			buf[j] = (uint8_t)link_random(l);
		feed(l, buf, len);
	}
	CHECK_EQ(rx_total(l, 0) - before, 20000);
	counters_ok(l, "random bytes");
	same_states(&h, "random bytes");
	link_run_for(l, 10 * US);
	no_events(l, "random bytes");

	/* 2. every truncation of every real MAD */
	uint64_t mal0 = cm_counters(link_cm(l, 0))->rx_drop_malformed;
	for (unsigned i = 0; i < cap.n; i++)
		for (size_t len = 0; len < 256; len++)
			cm_receive(link_cm(l, 0), link_gid(l, 1), cap.mad[i], len, link_now(l));
	CHECK_EQ(cm_counters(link_cm(l, 0))->rx_drop_malformed - mal0, cap.n * 256u);
	counters_ok(l, "truncations");
	same_states(&h, "truncations");

	/* 3. a valid CM header over a random body, every attribute */
	static const uint16_t attrs[] = { 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x01, 0x1b, 0xffff };
	for (int i = 0; i < 40000; i++) {
		for (size_t j = 0; j < 256; j++)
			buf[j] = (uint8_t)link_random(l);
		buf[0] = 1;
		buf[1] = WIRE_MAD_CLASS_CM;
		buf[2] = WIRE_CM_CLASS_VERSION;
		buf[3] = link_random_below(l, 8) ? WIRE_MAD_METHOD_SEND : (uint8_t)link_random(l);
		uint16_t a = attrs[link_random_below(l, sizeof(attrs) / sizeof(attrs[0]))];
		buf[16] = (uint8_t)(a >> 8);
		buf[17] = (uint8_t)a;
		feed(l, buf, 256);
	}
	counters_ok(l, "random bodies");
	same_states(&h, "random bodies");
	link_run_for(l, 10 * US);
	no_events(l, "random bodies");
	for (unsigned n = 0; n < 2; n++) {
		const struct cm_counters *c = cm_counters(link_cm(l, n));
		CHECK(c->rx_drop_unknown_id > 1000);
		CHECK(c->rx_drop_unsupported > 1000);
		CHECK(c->rx_drop_malformed > 1000);
	}
	printf("   node 1: random bodies: %llu REJ 8, %llu SIDR_REP 1, %llu malformed, %llu unknown id\n",
	       (unsigned long long)cm_counters(link_cm(l, 1))->rej_invalid_service_id,
	       (unsigned long long)cm_counters(link_cm(l, 1))->sidr_unsupported,
	       (unsigned long long)cm_counters(link_cm(l, 1))->rx_drop_malformed,
	       (unsigned long long)cm_counters(link_cm(l, 1))->rx_drop_unknown_id);
	CHECK(cm_counters(link_cm(l, 1))->rej_invalid_service_id > 100);
	CHECK(cm_counters(link_cm(l, 1))->sidr_unsupported > 100);

	/* 4. bytes after the MAD are ignored: a REQ and a SIDR_REQ for a
	 * service nobody listens on, 456 bytes long, are refused as usual. */
	struct wire_cm_msg m;
	uint64_t rej8 = cm_counters(link_cm(l, 1))->rej_invalid_service_id;
	uint64_t sidr1 = cm_counters(link_cm(l, 1))->sidr_unsupported;
	memset(&m, 0, sizeof(m));
	m.hdr = wire_cm_hdr(WIRE_CM_ATTR_REQ, 77);
	m.req.local_comm_id = 0x5151;
	m.req.service_id = 0x77;
	m.req.local_ca_guid = 0x9999;
	m.req.path_mtu = 3;
	encode(&m, buf);
	memset(buf + 256, 0xa5, 200);
	cm_receive(link_cm(l, 1), link_gid(l, 0), buf, 456, link_now(l));
	memset(&m, 0, sizeof(m));
	m.hdr = wire_cm_hdr(WIRE_CM_ATTR_SIDR_REQ, 78);
	m.sidr_req.request_id = 0x5252;
	m.sidr_req.service_id = 0x77;
	encode(&m, buf);
	memset(buf + 256, 0x5a, 200);
	cm_receive(link_cm(l, 1), link_gid(l, 0), buf, 456, link_now(l));
	CHECK_EQ(cm_counters(link_cm(l, 1))->rej_invalid_service_id, rej8 + 1);
	CHECK_EQ(cm_counters(link_cm(l, 1))->sidr_unsupported, sidr1 + 1);
	link_run_for(l, 10 * US);
	counters_ok(l, "long MADs");
	same_states(&h, "long MADs");
	no_events(l, "long MADs");

	/* 5. well-formed, the right comm IDs, wrong for the state */
	uint32_t ea = cm_id_local_comm_id(h.est_a), ep = cm_id_local_comm_id(h.est_p);
	uint32_t qa = cm_id_local_comm_id(h.reqrcvd_a), qp = cm_id_local_comm_id(h.reqrcvd_p);
	uint32_t ra = cm_id_local_comm_id(h.reprcvd_a), rp = cm_id_local_comm_id(h.reprcvd_p);
	struct {
		unsigned to;
		uint16_t attr;
		uint32_t local, remote;
		uint32_t extra;
	} bad[] = {
		{ 0, WIRE_CM_ATTR_RTU, ep, ea, 0 },             /* RTU to the active side */
		{ 1, WIRE_CM_ATTR_REP, ea, ep, 0 },             /* REP to the passive side */
		{ 0, WIRE_CM_ATTR_DREP, ep, ea, 0 },            /* DREP, no DREQ sent */
		{ 1, WIRE_CM_ATTR_DREP, ea, ep, 0 },
		{ 0, WIRE_CM_ATTR_DREQ, ep, ea, 0x999 },        /* DREQ naming another QP */
		{ 1, WIRE_CM_ATTR_DREQ, ea, ep, 0x998 },
		{ 0, WIRE_CM_ATTR_REJ, ep + 1, ea, 0 },         /* REJ, Local Comm ID wrong */
		{ 1, WIRE_CM_ATTR_REJ, ea + 1, ep, 0 },
		{ 0, WIRE_CM_ATTR_REP, ep + 1, ea, 0 },         /* REP from another comm ID */
		{ 0, WIRE_CM_ATTR_MRA, ep, ea, 1 },             /* MRA(REP) to an active side */
		{ 1, WIRE_CM_ATTR_MRA, qa, qp, 0 },             /* MRA(REQ) to a passive side */
		{ 1, WIRE_CM_ATTR_RTU, qa, qp, 0 },             /* RTU before any REP */
		{ 1, WIRE_CM_ATTR_DREQ, qa, qp, 0x200 },        /* DREQ before established */
		{ 0, WIRE_CM_ATTR_DREQ, rp, ra, 0x300 },
		{ 0, WIRE_CM_ATTR_RTU, rp, ra, 0 },
		{ 0, WIRE_CM_ATTR_SIDR_REP, 0, ea, 0 },         /* SIDR_REP for a connection id */
		{ 0, WIRE_CM_ATTR_DREQ, 0, ea, 0x100 },         /* remote comm ID 0 */
		{ 0, WIRE_CM_ATTR_RTU, ep, 0, 0 },              /* our comm ID 0 */
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&m, 0, sizeof(m));
		m.hdr = wire_cm_hdr(bad[i].attr, 0x1234);
		switch (bad[i].attr) {
		case WIRE_CM_ATTR_RTU: m.rtu.local_comm_id = bad[i].local; m.rtu.remote_comm_id = bad[i].remote; break;
		case WIRE_CM_ATTR_REP:
			m.rep.local_comm_id = bad[i].local;
			m.rep.remote_comm_id = bad[i].remote;
			m.rep.local_ca_guid = 0x1001;
			break;
		case WIRE_CM_ATTR_DREP: m.drep.local_comm_id = bad[i].local; m.drep.remote_comm_id = bad[i].remote; break;
		case WIRE_CM_ATTR_DREQ:
			m.dreq.local_comm_id = bad[i].local;
			m.dreq.remote_comm_id = bad[i].remote;
			m.dreq.remote_qpn_eecn = bad[i].extra;
			break;
		case WIRE_CM_ATTR_REJ:
			m.rej.local_comm_id = bad[i].local;
			m.rej.remote_comm_id = bad[i].remote;
			m.rej.reason = CM_REJ_CONSUMER_DEFINED;
			m.rej.message_rejected = WIRE_CM_MSG_OTHER;
			break;
		case WIRE_CM_ATTR_MRA:
			m.mra.local_comm_id = bad[i].local;
			m.mra.remote_comm_id = bad[i].remote;
			m.mra.message_mraed = (uint8_t)bad[i].extra;
			m.mra.service_timeout = 20;
			break;
		case WIRE_CM_ATTR_SIDR_REP: m.sidr_rep.request_id = bad[i].remote; break;
		default: break;
		}
		encode(&m, buf);
		unsigned to = bad[i].to;
		cm_receive(link_cm(l, to), link_gid(l, 1 - to), buf, 256, link_now(l));
		link_run_for(l, 10 * US);
		same_states(&h, "a wrong message");
		no_events(l, "a wrong message");
	}
	counters_ok(l, "wrong messages");
	/* A MAD with NULL bytes is counted, not read. */
	cm_receive(link_cm(l, 0), link_gid(l, 1), NULL, 256, link_now(l));
	counters_ok(l, "NULL");

	/* The connections still work. */
	struct link_event e;
	REQUIRE_RET(cm_disconnect(h.est_a, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(next_event(l, 1, CM_EV_DREQ_RECEIVED, &e), );
	REQUIRE_RET(next_event(l, 0, CM_EV_DISCONNECT_DONE, &e), );
	CHECK_EQ(e.ev.status, 0);
	REQUIRE_RET(cm_accept(h.reqrcvd_p, &(struct cm_rep_param){ .qpn = 0x201 }, link_now(l)) == 0, );
	REQUIRE_RET(next_event(l, 0, CM_EV_REP_RECEIVED, &e), );
	REQUIRE_RET(cm_send_rtu(h.reqrcvd_a, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(next_event(l, 1, CM_EV_ESTABLISHED, &e), );
	REQUIRE_RET(cm_send_rtu(h.reprcvd_a, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(next_event(l, 1, CM_EV_ESTABLISHED, &e), );
	REQUIRE_RET(cm_sidr_reply(h.sidr_p, CM_SIDR_SUCCESS, 0x55, 0x66, NULL, 0, link_now(l)) == 0, );
	REQUIRE_RET(next_event(l, 0, CM_EV_SIDR_REP_RECEIVED, &e), );
	CHECK_EQ(e.ev.u.sidr_rep.qpn, 0x55);
	counters_ok(l, "recovery");
	for (unsigned i = 0; i < 10; i++)
		cm_destroy_id(*ids_of(&h, i), link_now(l));
	link_run_until(l, NULL, NULL, 1000000 * MS);
	for (unsigned n = 0; n < 2; n++) {
		CHECK_EQ(cm_counters(link_cm(l, n))->ids_created, cm_counters(link_cm(l, n))->ids_freed);
		CHECK_EQ(cm_next_deadline(link_cm(l, n)), UINT64_MAX);
	}
	cm_unlisten(lis);
	link_destroy(l);
	check_end_say(true);
}

/* Round 6: real MADs, mutated.  They may move states; the consumer here
 * destroys every id it is handed and every id it made. */
static void test_mutations(uint64_t seed)
{
	check_begin("mutated real MADs (seed %llu)", (unsigned long long)seed);
	static struct capture cap;
	struct cm_listen *lis;
	struct held h;
	struct link *l = setup_held(seed, 50 * MS, &cap, &h, &lis);
	REQUIRE_RET(l, );
	static struct cm_id *extra[4096];
	unsigned nextra = 0;
	uint8_t buf[256];
	for (int i = 0; i < 30000; i++) {
		unsigned k = (unsigned)link_random_below(l, cap.n);
		memcpy(buf, cap.mad[k], 256);
		unsigned flips = 1 + (unsigned)link_random_below(l, 4);
		for (unsigned f = 0; f < flips; f++) {
			/* mostly the message body, where the fields are */
			size_t at = link_random_below(l, 4) ? 24 + link_random_below(l, 232) : link_random_below(l, 24);
			buf[at] ^= (uint8_t)(1 + link_random_below(l, 255));
		}
		unsigned to = cap.from[k] ? 0 : 1;
		cm_receive(link_cm(l, to), link_gid(l, cap.from[k]), buf, 256, link_now(l));
		if (i % 64 == 0)
			link_run_for(l, 1 * MS);
		struct link_event e;
		for (unsigned n = 0; n < 2; n++)
			while (link_pop_event(l, n, &e))
				if ((e.ev.type == CM_EV_REQ_RECEIVED || e.ev.type == CM_EV_SIDR_REQ_RECEIVED) &&
				    nextra < 4096)
					extra[nextra++] = e.ev.id;
		if (i % 1000 == 0)
			counters_ok(l, "mutations");
	}
	counters_ok(l, "mutations");
	for (unsigned i = 0; i < 10; i++)
		cm_destroy_id(*ids_of(&h, i), link_now(l));
	for (unsigned i = 0; i < nextra; i++)
		cm_destroy_id(extra[i], link_now(l));
	/* Destroyed ids answer what still comes, then go. */
	link_run_until(l, NULL, NULL, 100000000 * MS);
	struct link_event e;
	for (unsigned n = 0; n < 2; n++)
		while (link_pop_event(l, n, &e))
			if ((e.ev.type == CM_EV_REQ_RECEIVED || e.ev.type == CM_EV_SIDR_REQ_RECEIVED))
				cm_destroy_id(e.ev.id, link_now(l));
	link_run_until(l, NULL, NULL, 100000000 * MS);
	counters_ok(l, "mutation teardown");
	for (unsigned n = 0; n < 2; n++) {
		CHECK_EQ(cm_counters(link_cm(l, n))->ids_created, cm_counters(link_cm(l, n))->ids_freed);
		CHECK_EQ(cm_next_deadline(link_cm(l, n)), UINT64_MAX);
	}
	printf("   node 1: %llu REQs created ids from mutations, %llu malformed, %llu unknown id, %llu unexpected\n",
	       (unsigned long long)(cm_counters(link_cm(l, 1))->ids_created - 5),
	       (unsigned long long)cm_counters(link_cm(l, 1))->rx_drop_malformed,
	       (unsigned long long)cm_counters(link_cm(l, 1))->rx_drop_unknown_id,
	       (unsigned long long)cm_counters(link_cm(l, 1))->rx_drop_unexpected);
	cm_unlisten(lis);
	link_destroy(l);
	check_end_say(true);
}

int main(void)
{
	for (uint64_t s = 1; s <= 3; s++)
		test_hostile(s);
	for (uint64_t s = 1; s <= 3; s++)
		test_mutations(s);
	printf("%d cases, %d failures\n", check_cases, check_failures);
	return check_exit("cm_hostile");
}
