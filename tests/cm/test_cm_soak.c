/*
 * test_cm_soak.c — many seeds of random CM traffic between three cms on a
 * faulty link: per-kind loss of 0-20%, duplication, reordering, jitter.
 *
 * Each seed draws a dozen connection attempts (random direction, start
 * time, and a plan for each side's consumer: accept now or late, MRA then
 * accept, reject, destroy instead of answering; send the RTU now or late,
 * reject the REP, destroy early; then disconnect from either or both sides
 * or destroy an established id), a few SIDR requests, and a REQ for a
 * service nobody listens on.  The run goes until nothing is left to
 * happen; then every id still held is destroyed and the cms must be empty.
 *
 * Checked per connection: each side's events form a valid sequence for its
 * plan (every id gets exactly one outcome; a connection is established at
 * most once per side); the two sides agree (the passive side is
 * established only if the active side sent the RTU; if the active side is
 * established the passive side is too, or timed out and said so); when no
 * consumer refused or destroyed anything, both sides end established and
 * disconnected unless a timeout event explains it.  Globally: no event for
 * an id after cm_destroy_id; the counters add up; every id is freed; the
 * same seed gives the same trace hash twice; and timeouts stay rare (with
 * 15 retries at <= 20% loss they should not happen at all).
 *
 * usage: cm_soak [-v] [FIRST_SEED [COUNT]]   (default 1 1000; -v prints the
 * transitions, deliveries and events of the run)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_link.h"
#include "../check.h"

#define MS 1000000ull
#define US 1000ull
#define NNODES 3
#define NCONN 12
#define NSIDR 4
#define SID_BASE 0x0000000001060000ull  /* + node: RDMA_PS_TCP port node */
#define SID_NONE 0x0000000001069999ull
#define MAXEV 24

enum pplan { P_ACCEPT, P_ACCEPT_LATE, P_MRA_ACCEPT, P_REJECT, P_DESTROY, P_NPLANS };
enum aplan { A_RTU, A_RTU_LATE, A_REJECT, A_DESTROY_EARLY, A_NPLANS };
enum eplan { E_DISC_ACTIVE, E_DISC_PASSIVE, E_DISC_BOTH, E_DESTROY_ACTIVE, E_DESTROY_PASSIVE, E_NPLANS };
enum splan { S_REPLY, S_REPLY_ERROR, S_DESTROY, S_UNLISTENED, S_NPLANS };

struct conn;
struct sidr;

struct side {
	struct conn *c;                 /* one of c / s */
	struct sidr *s;
	bool passive;
	unsigned node;
	struct cm_id *id;
	uint32_t comm_id;
	bool destroyed;
	enum cm_event_type seq[MAXEV];
	int status[MAXEV];
	uint16_t reason[MAXEV];
	unsigned n;
};

struct conn {
	unsigned idx, from, to;
	bool unlistened;
	enum pplan pp;
	enum aplan ap;
	enum eplan ep;
	uint64_t start, pdelay, adelay, hold, destroy_at;
	struct side a, p;
	bool rtu_sent;
	unsigned eplan_tries;
};

struct sidr {
	unsigned idx, from, to;
	enum splan plan;
	uint64_t start;
	struct side a, p;
};

enum act_kind { ACT_CONNECT, ACT_ACCEPT, ACT_RTU, ACT_DESTROY_A, ACT_EPLAN, ACT_SIDR };

struct action {
	uint64_t time;
	enum act_kind kind;
	unsigned idx;
	bool done;
};

struct soak {
	uint64_t seed;
	struct link *l;
	struct cm_listen *lis[NNODES];
	struct conn conn[NCONN + 1];    /* + one for an unlistened service */
	unsigned nconn;
	struct sidr sidr[NSIDR];
	struct action act[4 * (NCONN + 1) + NSIDR + 16];
	unsigned nact;
	/* destroyed comm IDs per node (checked when an event comes) */
	uint32_t destroyed[NNODES][64];
	unsigned ndestroyed[NNODES];
	uint64_t events_seen[NNODES];
	/* results */
	unsigned established, timeouts, mras, failures_explained;
};

/* global tallies over all seeds, for the coverage checks */
static struct tally {
	unsigned seeds, attempts, established, timeouts, mras, rejects, sidr_ok;
	uint64_t dups, retries, lost, duplicated, reordered;
} tally;

/* ---- helpers ------------------------------------------------------------------ */

static void record(struct side *s, const struct link_event *e)
{
	if (s->n < MAXEV) {
		s->seq[s->n] = e->ev.type;
		s->status[s->n] = e->ev.status;
		s->reason[s->n] = e->ev.rej_reason;
	}
	s->n++;
}

static void add_action(struct soak *k, uint64_t t, enum act_kind kind, unsigned idx)
{
	unsigned i;
	for (i = 0; i < k->nact && !k->act[i].done; i++)
		;
	if (i == k->nact) {
		if (k->nact >= sizeof(k->act) / sizeof(k->act[0])) {
			FAIL("seed %llu: action table full", (unsigned long long)k->seed);
			return;
		}
		k->nact++;
	}
	k->act[i] = (struct action){ .time = t, .kind = kind, .idx = idx };
	link_alarm(k->l, t);
}

static void destroy_side(struct soak *k, struct side *s)
{
	if (!s->id || s->destroyed)
		return;
	s->destroyed = true;
	if (k->ndestroyed[s->node] < 64)
		k->destroyed[s->node][k->ndestroyed[s->node]++] = s->comm_id;
	cm_destroy_id(s->id, link_now(k->l));
}

static uint64_t below(struct soak *k, uint64_t n)
{
	return link_random_below(k->l, n);
}

/* Called from inside the cm's event callback: only checks, no cm calls. */
static void event_hook(void *arg, const struct link_event *e)
{
	struct soak *k = arg;
	k->events_seen[e->node]++;
	for (unsigned i = 0; i < k->ndestroyed[e->node]; i++)
		if (k->destroyed[e->node][i] == e->local_comm_id)
			FAIL("seed %llu: node %u: event %s for destroyed id 0x%08x", (unsigned long long)k->seed,
				e->node, cm_event_name(e->ev.type), e->local_comm_id);
}

/* ---- the consumers -------------------------------------------------------------- */

static void accept_now(struct soak *k, struct conn *c)
{
	struct cm_rep_param r = { .qpn = 0x2000 + c->idx * 2 + 1, .starting_psn = 0x333, .responder_resources = 1,
				  .initiator_depth = 1, .rnr_retry_count = 7 };
	/* Late: the connection may have been given up meanwhile. */
	int rc = cm_accept(c->p.id, &r, link_now(k->l));
	if (rc && rc != EINVAL)
		FAIL("seed %llu conn %u: cm_accept %d", (unsigned long long)k->seed, c->idx, rc);
}

static void send_rtu(struct soak *k, struct conn *c)
{
	if (cm_send_rtu(c->a.id, NULL, 0, link_now(k->l)) == 0) {
		c->rtu_sent = true;
		add_action(k, link_now(k->l) + c->hold, ACT_EPLAN, c->idx);
	}
}

static void on_event(struct soak *k, struct link_event *e)
{
	struct side *s = e->ev.user;
	const uint8_t *pd = e->ev.private_data;

	if (e->ev.type == CM_EV_REQ_RECEIVED || e->ev.type == CM_EV_SIDR_REQ_RECEIVED) {
		bool is_sidr = e->ev.type == CM_EV_SIDR_REQ_RECEIVED;
		unsigned idx = pd ? (unsigned)(pd[1] | pd[2] << 8) : 9999;
		if (!pd || pd[0] != (is_sidr ? 'S' : 'C') || idx >= (is_sidr ? NSIDR : k->nconn)) {
			FAIL("seed %llu: %s with foreign private data", (unsigned long long)k->seed,
				cm_event_name(e->ev.type));
			cm_destroy_id(e->ev.id, link_now(k->l));
			return;
		}
		s = is_sidr ? &k->sidr[idx].p : &k->conn[idx].p;
		if (s->id) {
			FAIL("seed %llu: %s %u received twice", (unsigned long long)k->seed, is_sidr ? "SIDR" : "conn",
				idx);
			cm_destroy_id(e->ev.id, link_now(k->l));
			return;
		}
		s->id = e->ev.id;
		s->comm_id = e->local_comm_id;
		cm_id_set_user(s->id, s);
	}
	if (!s) {
		FAIL("seed %llu: node %u: event %s without a user", (unsigned long long)k->seed, e->node,
			cm_event_name(e->ev.type));
		return;
	}
	record(s, e);
	uint64_t now = link_now(k->l);

	if (s->s) {                     /* SIDR */
		struct sidr *r = s->s;
		if (e->ev.type == CM_EV_SIDR_REQ_RECEIVED) {
			if (r->plan == S_REPLY)
				cm_sidr_reply(s->id, CM_SIDR_SUCCESS, 0x5000 + r->idx, 0x1234, "ok", 2, now);
			else if (r->plan == S_REPLY_ERROR)
				cm_sidr_reply(s->id, CM_SIDR_NO_QP, 0, 0, NULL, 0, now);
			else
				destroy_side(k, s);
		} else if (e->ev.type == CM_EV_SIDR_REP_RECEIVED) {
			static const uint8_t want[S_NPLANS] = { CM_SIDR_SUCCESS, CM_SIDR_NO_QP, CM_SIDR_REJECT,
								CM_SIDR_UNSUPPORTED };
			if (e->ev.u.sidr_rep.status != want[r->plan])
				FAIL("seed %llu sidr %u: status %u, expected %u", (unsigned long long)k->seed, r->idx,
					e->ev.u.sidr_rep.status, want[r->plan]);
			if (r->plan == S_REPLY && (e->ev.u.sidr_rep.qpn != 0x5000 + r->idx ||
						   e->ev.u.sidr_rep.qkey != 0x1234 || !pd || memcmp(pd, "ok", 2)))
				FAIL("seed %llu sidr %u: wrong answer", (unsigned long long)k->seed, r->idx);
			if (r->plan == S_REPLY)
				tally.sidr_ok++;
		}
		return;
	}

	struct conn *c = s->c;
	if (s->passive) {
		switch (e->ev.type) {
		case CM_EV_REQ_RECEIVED:
			switch (c->pp) {
			case P_ACCEPT: accept_now(k, c); break;
			case P_ACCEPT_LATE: add_action(k, now + c->pdelay, ACT_ACCEPT, c->idx); break;
			case P_MRA_ACCEPT:
				if (cm_send_mra(s->id, 14, now))
					FAIL("seed %llu conn %u: cm_send_mra", (unsigned long long)k->seed, c->idx);
				add_action(k, now + c->pdelay, ACT_ACCEPT, c->idx);
				break;
			case P_REJECT: {
				uint8_t no[3] = { 'n', 'o', (uint8_t)c->idx };
				if (cm_reject(s->id, CM_REJ_CONSUMER_DEFINED, NULL, 0, no, 3, now))
					FAIL("seed %llu conn %u: cm_reject", (unsigned long long)k->seed, c->idx);
				break;
			}
			case P_DESTROY: destroy_side(k, s); break;
			default: break;
			}
			break;
		default:
			break;
		}
		return;
	}
	switch (e->ev.type) {
	case CM_EV_REP_RECEIVED:
		if (e->ev.u.rep.qpn != 0x2000 + c->idx * 2 + 1)
			FAIL("seed %llu conn %u: REP QPN 0x%x", (unsigned long long)k->seed, c->idx, e->ev.u.rep.qpn);
		switch (c->ap) {
		case A_RTU: send_rtu(k, c); break;
		case A_RTU_LATE: add_action(k, now + c->adelay, ACT_RTU, c->idx); break;
		case A_REJECT: cm_reject(s->id, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0, now); break;
		default: break;
		}
		break;
	case CM_EV_REJ_RECEIVED:
		if (c->pp == P_REJECT && e->ev.rej_reason == CM_REJ_CONSUMER_DEFINED &&
		    (!pd || pd[0] != 'n' || pd[1] != 'o' || pd[2] != (uint8_t)c->idx))
			FAIL("seed %llu conn %u: REJ private data", (unsigned long long)k->seed, c->idx);
		break;
	default:
		break;
	}
}

static void run_eplan(struct soak *k, struct conn *c)
{
	uint64_t now = link_now(k->l);
	enum cm_state ps = c->p.id ? cm_id_state(c->p.id) : CM_ST_IDLE;
	enum cm_state as = cm_id_state(c->a.id);
	bool needs_passive = c->ep == E_DISC_PASSIVE || c->ep == E_DISC_BOTH || c->ep == E_DESTROY_PASSIVE;
	/* The passive side may not have the RTU yet: try again later, until
	 * it is established or the connection ended otherwise. */
	if (needs_passive && !c->p.destroyed && ps != CM_ST_ESTABLISHED) {
		bool pending = c->p.id && ps != CM_ST_TIMEWAIT && ps != CM_ST_IDLE;
		if ((pending || !c->p.id) && c->eplan_tries++ < 200)
			add_action(k, now + 1 * MS, ACT_EPLAN, c->idx);
		return;
	}
	switch (c->ep) {
	case E_DISC_ACTIVE:
		if (as == CM_ST_ESTABLISHED && cm_disconnect(c->a.id, NULL, 0, now))
			FAIL("seed %llu conn %u: cm_disconnect active", (unsigned long long)k->seed, c->idx);
		break;
	case E_DISC_PASSIVE:
		if (cm_disconnect(c->p.id, "pd", 2, now))
			FAIL("seed %llu conn %u: cm_disconnect passive", (unsigned long long)k->seed, c->idx);
		break;
	case E_DISC_BOTH:
		if (as == CM_ST_ESTABLISHED)
			cm_disconnect(c->a.id, NULL, 0, now);
		cm_disconnect(c->p.id, NULL, 0, now);
		break;
	case E_DESTROY_ACTIVE: destroy_side(k, &c->a); break;
	case E_DESTROY_PASSIVE: destroy_side(k, &c->p); break;
	default: break;
	}
}

static void run_action(struct soak *k, struct action *a)
{
	uint64_t now = link_now(k->l);
	if (a->kind == ACT_SIDR) {
		struct sidr *r = &k->sidr[a->idx];
		uint8_t pd[3] = { 'S', (uint8_t)r->idx, 0 };
		uint64_t sid = r->plan == S_UNLISTENED ? SID_NONE : SID_BASE + r->to;
		if (cm_sidr_request(link_cm(k->l, r->from), link_gid(k->l, r->to), sid, pd, 3, 10, 15, &r->a, now,
				    &r->a.id))
			FAIL("seed %llu: cm_sidr_request", (unsigned long long)k->seed);
		else
			r->a.comm_id = cm_id_local_comm_id(r->a.id);
		return;
	}
	struct conn *c = &k->conn[a->idx];
	switch (a->kind) {
	case ACT_CONNECT: {
		struct cm_req_param p;
		uint8_t pd[3] = { 'C', (uint8_t)c->idx, 0 };
		cm_req_param_init(link_cm(k->l, c->from), &p);
		memcpy(p.dgid, link_gid(k->l, c->to), 16);
		p.service_id = c->unlistened ? SID_NONE : SID_BASE + c->to;
		p.qpn = 0x2000 + c->idx * 2;
		p.starting_psn = 0x222;
		p.remote_cm_response_timeout = 12;      /* ~16.8 ms */
		p.local_cm_response_timeout = 12;
		p.max_cm_retries = 15;
		p.private_data = pd;
		p.private_data_len = 3;
		if (cm_connect(link_cm(k->l, c->from), &p, &c->a, now, &c->a.id)) {
			FAIL("seed %llu: cm_connect", (unsigned long long)k->seed);
			return;
		}
		c->a.comm_id = cm_id_local_comm_id(c->a.id);
		if (c->ap == A_DESTROY_EARLY)
			add_action(k, now + c->destroy_at, ACT_DESTROY_A, c->idx);
		break;
	}
	case ACT_ACCEPT: accept_now(k, c); break;
	case ACT_RTU: send_rtu(k, c); break;
	case ACT_DESTROY_A: destroy_side(k, &c->a); break;
	case ACT_EPLAN: run_eplan(k, c); break;
	default: break;
	}
}

static bool drive(void *arg)
{
	struct soak *k = arg;
	struct link_event e;
	bool again = true;
	while (again) {
		again = false;
		for (unsigned n = 0; n < NNODES; n++)
			while (link_pop_event(k->l, n, &e)) {
				on_event(k, &e);
				again = true;
			}
		for (unsigned i = 0; i < k->nact; i++) {
			if (!k->act[i].done && k->act[i].time <= link_now(k->l)) {
				k->act[i].done = true;
				run_action(k, &k->act[i]);
				again = true;
			}
		}
	}
	return false;
}

/* ---- the plans ------------------------------------------------------------------- */

static void draw(struct soak *k)
{
	struct link *l = k->l;
	k->nconn = NCONN + 1;
	for (unsigned i = 0; i < k->nconn; i++) {
		struct conn *c = &k->conn[i];
		memset(c, 0, sizeof(*c));
		c->idx = i;
		c->from = (unsigned)below(k, NNODES);
		c->to = (c->from + 1 + (unsigned)below(k, NNODES - 1)) % NNODES;
		c->unlistened = i == NCONN;
		unsigned r = (unsigned)below(k, 100);
		c->pp = r < 55 ? P_ACCEPT : r < 70 ? P_ACCEPT_LATE : r < 80 ? P_MRA_ACCEPT : r < 92 ? P_REJECT : P_DESTROY;
		r = (unsigned)below(k, 100);
		c->ap = r < 80 || c->unlistened ? A_RTU : r < 90 ? A_RTU_LATE : r < 95 ? A_REJECT : A_DESTROY_EARLY;
		c->ep = (enum eplan)below(k, E_NPLANS);
		c->start = below(k, 50 * MS);
		/* Up to 400 ms: past the 16 x 16.8 ms a REQ (or REP) is
		 * retried for, so a late answer needs the MRAs. */
		c->pdelay = below(k, 400 * MS);
		c->adelay = below(k, 400 * MS);
		c->hold = below(k, 30 * MS);
		c->destroy_at = below(k, 3 * MS);
		c->a = (struct side){ .c = c, .node = c->from };
		c->p = (struct side){ .c = c, .passive = true, .node = c->to };
		add_action(k, c->start, ACT_CONNECT, i);
	}
	for (unsigned i = 0; i < NSIDR; i++) {
		struct sidr *r = &k->sidr[i];
		memset(r, 0, sizeof(*r));
		r->idx = i;
		r->from = (unsigned)below(k, NNODES);
		r->to = (r->from + 1 + (unsigned)below(k, NNODES - 1)) % NNODES;
		r->plan = (enum splan)below(k, S_NPLANS);
		r->start = below(k, 50 * MS);
		r->a = (struct side){ .s = r, .node = r->from };
		r->p = (struct side){ .s = r, .passive = true, .node = r->to };
		add_action(k, r->start, ACT_SIDR, i);
	}
	for (unsigned f = 0; f < NNODES; f++) {
		for (unsigned t = 0; t < NNODES; t++) {
			struct link_faults lf = { 0 };
			for (unsigned kind = 0; kind < LK_NKINDS; kind++)
				lf.loss[kind] = (double)below(k, 21) / 100.0;
			lf.dup = (double)below(k, 11) / 100.0;
			lf.reorder = (double)below(k, 21) / 100.0;
			lf.reorder_ns = 1 + below(k, 3 * MS);
			lf.delay_ns = 1 * US + below(k, 50 * US);
			lf.jitter_ns = below(k, 20 * US);
			link_set_faults_dir(l, f, t, &lf);
		}
	}
}

/* ---- the verdicts ------------------------------------------------------------------ */

static unsigned count(const struct side *s, enum cm_event_type t)
{
	unsigned n = 0;
	for (unsigned i = 0; i < s->n && i < MAXEV; i++)
		n += s->seq[i] == t;
	return n;
}

static int find(const struct side *s, enum cm_event_type t)
{
	for (unsigned i = 0; i < s->n && i < MAXEV; i++)
		if (s->seq[i] == t)
			return (int)i;
	return -1;
}

static const char *seq_str(const struct side *s)
{
	static char buf[2][512];
	static int which;
	char *b = buf[which ^= 1];
	size_t off = 0;
	b[0] = 0;
	for (unsigned i = 0; i < s->n && i < MAXEV; i++)
		off += (size_t)snprintf(b + off, sizeof(buf[0]) - off, "%s%s", i ? "," : "", cm_event_name(s->seq[i]));
	return b;
}

#define VFAIL(c, ...)                                                                                   \
	do {                                                                                            \
		FAIL(__VA_ARGS__);                                                                   \
		printf("   conn %u %u->%u plans p%d a%d e%d: active [%s] passive [%s]\n", (c)->idx, (c)->from, \
		       (c)->to, (c)->pp, (c)->ap, (c)->ep, seq_str(&(c)->a), seq_str(&(c)->p));         \
	} while (0)

static bool is_timeout_event(const struct side *s, unsigned i)
{
	return s->seq[i] == CM_EV_REQ_TIMEOUT || s->seq[i] == CM_EV_REP_TIMEOUT ||
	       (s->seq[i] == CM_EV_DISCONNECT_DONE && s->status[i] == ETIMEDOUT);
}

static unsigned timeouts_of(const struct side *s)
{
	unsigned n = 0;
	for (unsigned i = 0; i < s->n && i < MAXEV; i++)
		n += is_timeout_event(s, i);
	return n;
}

/* Every outcome event at most once; TimeWait exit exactly once for an id
 * that was not destroyed (every connection ends in TimeWait), last. */
static void check_side_shape(struct soak *k, struct conn *c, const struct side *s, bool may_be_open)
{
	static const enum cm_event_type once[] = { CM_EV_REQ_RECEIVED, CM_EV_REQ_TIMEOUT, CM_EV_REP_RECEIVED,
						   CM_EV_REP_TIMEOUT, CM_EV_REJ_RECEIVED, CM_EV_ESTABLISHED,
						   CM_EV_DREQ_RECEIVED, CM_EV_DISCONNECT_DONE, CM_EV_TIMEWAIT_EXIT };
	if (s->n > MAXEV) {
		VFAIL(c, "seed %llu conn %u: %u events", (unsigned long long)k->seed, c->idx, s->n);
		return;
	}
	for (unsigned i = 0; i < sizeof(once) / sizeof(once[0]); i++)
		if (count(s, once[i]) > 1)
			VFAIL(c, "seed %llu conn %u: %s %s %u times", (unsigned long long)k->seed, c->idx,
			      s->passive ? "passive" : "active", cm_event_name(once[i]), count(s, once[i]));
	/* Exactly one outcome of the set-up phase. */
	unsigned outcomes = s->passive ? count(s, CM_EV_ESTABLISHED) + count(s, CM_EV_REP_TIMEOUT)
				       : count(s, CM_EV_REP_RECEIVED) + count(s, CM_EV_REQ_TIMEOUT);
	int rej = find(s, CM_EV_REJ_RECEIVED);
	int est = find(s, s->passive ? CM_EV_ESTABLISHED : CM_EV_REP_RECEIVED);
	if (outcomes > 1)
		VFAIL(c, "seed %llu conn %u: two set-up outcomes", (unsigned long long)k->seed, c->idx);
	int tw = find(s, CM_EV_TIMEWAIT_EXIT);
	if (!s->destroyed && s->id && tw != (int)s->n - 1 && !(tw < 0 && may_be_open))
		VFAIL(c, "seed %llu conn %u: %s: TimeWait exit not last / missing", (unsigned long long)k->seed, c->idx,
		      s->passive ? "passive" : "active");
	if (s->destroyed && tw >= 0 && tw != (int)s->n - 1)
		VFAIL(c, "seed %llu conn %u: events after TimeWait exit", (unsigned long long)k->seed, c->idx);
	/* After an end (REJ, DREQ, disconnect done, timeouts) nothing but the
	 * TimeWait exit. */
	for (unsigned i = 0; i < s->n; i++) {
		enum cm_event_type t = s->seq[i];
		bool end = t == CM_EV_REJ_RECEIVED || t == CM_EV_DREQ_RECEIVED || t == CM_EV_DISCONNECT_DONE ||
			   t == CM_EV_REQ_TIMEOUT || t == CM_EV_REP_TIMEOUT;
		if (end && i + 1 < s->n && !(i + 2 == s->n && s->seq[i + 1] == CM_EV_TIMEWAIT_EXIT))
			VFAIL(c, "seed %llu conn %u: events after %s", (unsigned long long)k->seed, c->idx,
			      cm_event_name(t));
	}
	/* A REJ after establishment only when the passive side timed out. */
	(void)rej;
	(void)est;
}

static void check_conn(struct soak *k, struct conn *c)
{
	const struct side *a = &c->a, *p = &c->p;
	/* A side can still be open (established, waiting for the teardown's
	 * destroy) only if its peer gave up on it: the peer's DREQs, or its
	 * REJ after a REP timeout, were all lost. */
	check_side_shape(k, c, a, timeouts_of(p) > 0);
	check_side_shape(k, c, p, timeouts_of(a) > 0);
	bool a_rep = count(a, CM_EV_REP_RECEIVED) > 0;
	bool p_est = count(p, CM_EV_ESTABLISHED) > 0;
	unsigned to = timeouts_of(a) + timeouts_of(p);
	if (to && getenv("CM_SOAK_SHOW_TIMEOUTS"))
		printf("   timeout: seed %llu conn %u %u->%u plans p%d a%d e%d: active [%s] passive [%s]\n",
		       (unsigned long long)k->seed, c->idx, c->from, c->to, c->pp, c->ap, c->ep, seq_str(a), seq_str(p));
	k->timeouts += to;
	tally.timeouts += to;
	tally.mras += count(a, CM_EV_MRA_RECEIVED) + count(p, CM_EV_MRA_RECEIVED);
	tally.rejects += count(a, CM_EV_REJ_RECEIVED);
	tally.attempts++;

	if (p->id && p->n && p->seq[0] != CM_EV_REQ_RECEIVED)
		VFAIL(c, "seed %llu conn %u: passive did not start with REQ_RECEIVED", (unsigned long long)k->seed, c->idx);
	if (p_est && !c->rtu_sent)
		VFAIL(c, "seed %llu conn %u: passive established without an RTU", (unsigned long long)k->seed, c->idx);
	if (c->unlistened) {
		if (p->id)
			VFAIL(c, "seed %llu: unlistened REQ reached a consumer", (unsigned long long)k->seed);
		if (!(a->n >= 1 && ((a->seq[0] == CM_EV_REJ_RECEIVED && a->reason[0] == CM_REJ_INVALID_SERVICE_ID) ||
				    a->seq[0] == CM_EV_REQ_TIMEOUT)))
			VFAIL(c, "seed %llu: unlistened: no REJ 8", (unsigned long long)k->seed);
		return;
	}
	if (a_rep && c->pp != P_ACCEPT && c->pp != P_ACCEPT_LATE && c->pp != P_MRA_ACCEPT)
		VFAIL(c, "seed %llu conn %u: REP although the consumer refused", (unsigned long long)k->seed, c->idx);

	if (c->ap == A_DESTROY_EARLY) {
		/* Anything consistent: the passive side learns by REJ, or
		 * times out its REP if the REQ overtook the REJ. */
		if (p_est)
			VFAIL(c, "seed %llu conn %u: established after an early destroy", (unsigned long long)k->seed, c->idx);
		return;
	}
	if (c->pp == P_REJECT || c->pp == P_DESTROY) {
		int r = find(a, CM_EV_REJ_RECEIVED);
		if (r < 0 && !count(a, CM_EV_REQ_TIMEOUT))
			VFAIL(c, "seed %llu conn %u: refused but no REJ", (unsigned long long)k->seed, c->idx);
		if (r >= 0 && a->reason[r] != CM_REJ_CONSUMER_DEFINED)
			VFAIL(c, "seed %llu conn %u: REJ reason %u", (unsigned long long)k->seed, c->idx, a->reason[r]);
		return;
	}
	/* Accepted. */
	if (c->ap == A_REJECT) {
		if (p_est || (!count(p, CM_EV_REJ_RECEIVED) && !count(p, CM_EV_REP_TIMEOUT) && p->id))
			VFAIL(c, "seed %llu conn %u: REP rejected, passive disagrees", (unsigned long long)k->seed, c->idx);
		return;
	}
	/* Accepted and RTU'd: established on both sides, once, unless a
	 * timeout says why not. */
	if (c->rtu_sent && !p_est) {
		if (!count(p, CM_EV_REP_TIMEOUT))
			VFAIL(c, "seed %llu conn %u: RTU sent, passive neither established nor timed out",
			      (unsigned long long)k->seed, c->idx);
		else
			k->failures_explained++;
		return;
	}
	if (!c->rtu_sent) {
		if (!to)
			VFAIL(c, "seed %llu conn %u: not established and no timeout", (unsigned long long)k->seed, c->idx);
		else
			k->failures_explained++;
		return;
	}
	k->established++;
	tally.established++;
	/* The end of an established connection. */
	int a_end = -1, p_end = -1;
	for (unsigned i = 0; i < a->n; i++)
		if (a->seq[i] == CM_EV_DREQ_RECEIVED || a->seq[i] == CM_EV_DISCONNECT_DONE || a->seq[i] == CM_EV_REJ_RECEIVED)
			a_end = (int)i;
	for (unsigned i = 0; i < p->n; i++)
		if (p->seq[i] == CM_EV_DREQ_RECEIVED || p->seq[i] == CM_EV_DISCONNECT_DONE)
			p_end = (int)i;
	enum cm_event_type want_a = CM_EV_NTYPES, want_p = CM_EV_NTYPES;
	switch (c->ep) {
	case E_DISC_ACTIVE: want_a = CM_EV_DISCONNECT_DONE; want_p = CM_EV_DREQ_RECEIVED; break;
	case E_DISC_PASSIVE: want_a = CM_EV_DREQ_RECEIVED; want_p = CM_EV_DISCONNECT_DONE; break;
	case E_DISC_BOTH: want_a = CM_EV_DISCONNECT_DONE; want_p = CM_EV_DISCONNECT_DONE; break;
	case E_DESTROY_ACTIVE: want_p = CM_EV_DREQ_RECEIVED; break;
	case E_DESTROY_PASSIVE: want_a = CM_EV_DREQ_RECEIVED; break;
	default: break;
	}
	/* A side whose DREQs were all lost ends with DISCONNECT_DONE
	 * ETIMEDOUT while the other stays established until teardown. */
	bool a_gave_up = a_end >= 0 && a->seq[a_end] == CM_EV_DISCONNECT_DONE && a->status[a_end] == ETIMEDOUT;
	bool p_gave_up = p_end >= 0 && p->seq[p_end] == CM_EV_DISCONNECT_DONE && p->status[p_end] == ETIMEDOUT;
	if (want_a != CM_EV_NTYPES && !(a_end >= 0 && a->seq[a_end] == want_a) && !p_gave_up)
		VFAIL(c, "seed %llu conn %u: active should end with %s", (unsigned long long)k->seed, c->idx,
		      cm_event_name(want_a));
	if (want_p != CM_EV_NTYPES && !(p_end >= 0 && p->seq[p_end] == want_p) && !a_gave_up)
		VFAIL(c, "seed %llu conn %u: passive should end with %s", (unsigned long long)k->seed, c->idx,
		      cm_event_name(want_p));
}

static void check_sidr(struct soak *k, struct sidr *r)
{
	unsigned rep = 0, tmo = 0, req = 0;
	for (unsigned i = 0; i < r->a.n; i++) {
		rep += r->a.seq[i] == CM_EV_SIDR_REP_RECEIVED;
		tmo += r->a.seq[i] == CM_EV_SIDR_TIMEOUT;
	}
	for (unsigned i = 0; i < r->p.n; i++)
		req += r->p.seq[i] == CM_EV_SIDR_REQ_RECEIVED;
	if (rep + tmo != 1 || r->a.n != 1)
		FAIL("seed %llu sidr %u: active events [%s]", (unsigned long long)k->seed, r->idx, seq_str(&r->a));
	if (req > 1 || r->p.n > 1)
		FAIL("seed %llu sidr %u: passive events [%s]", (unsigned long long)k->seed, r->idx, seq_str(&r->p));
	if (r->plan == S_UNLISTENED && req)
		FAIL("seed %llu sidr %u: unlistened reached the consumer", (unsigned long long)k->seed, r->idx);
	if (tmo)
		k->timeouts++, tally.timeouts++;
}

/* ---- one seed ----------------------------------------------------------------------- */

struct outcome {
	uint64_t hash;
	unsigned established;
};

static struct outcome run_seed(uint64_t seed, bool verbose)
{
	static struct soak k;
	struct outcome out = { 0 };
	memset(&k, 0, sizeof(k));
	k.seed = seed;
	struct cm_config cfg;
	cm_config_default(&cfg);
	cfg.timewait_ns = 5000 * MS;    /* longer than any retry window */
	cfg.cm_response_timeout = 14;   /* automatic MRAs: ~67 ms */
	k.l = link_create(seed, NNODES, &cfg);
	if (!k.l) {
		FAIL("seed %llu: link_create", (unsigned long long)seed);
		return out;
	}
	link_verbose(k.l, verbose);
	link_set_event_hook(k.l, event_hook, &k);
	for (unsigned n = 0; n < NNODES; n++)
		if (cm_listen(link_cm(k.l, n), SID_BASE + n, NULL, &k.lis[n]))
			FAIL("seed %llu: cm_listen", (unsigned long long)seed);
	draw(&k);
	enum link_run r = link_run_until(k.l, drive, &k, 3600000 * MS);
	if (r != LINK_IDLE)
		FAIL("seed %llu: run ended %d, not idle", (unsigned long long)seed, r);

	for (unsigned i = 0; i < k.nconn; i++)
		check_conn(&k, &k.conn[i]);
	for (unsigned i = 0; i < NSIDR; i++)
		check_sidr(&k, &k.sidr[i]);

	/* Teardown: destroy everything still held; all must be freed. */
	for (unsigned i = 0; i < k.nconn; i++) {
		destroy_side(&k, &k.conn[i].a);
		destroy_side(&k, &k.conn[i].p);
	}
	for (unsigned i = 0; i < NSIDR; i++) {
		destroy_side(&k, &k.sidr[i].a);
		destroy_side(&k, &k.sidr[i].p);
	}
	link_run_until(k.l, drive, &k, 3600000 * MS);
	for (unsigned n = 0; n < NNODES; n++) {
		const struct cm_counters *c = cm_counters(link_cm(k.l, n));
		if (!link_counters_consistent(k.l, n))
			FAIL("seed %llu node %u: counters do not add up", (unsigned long long)seed, n);
		if (c->ids_created != c->ids_freed)
			FAIL("seed %llu node %u: %llu ids created, %llu freed", (unsigned long long)seed, n,
				(unsigned long long)c->ids_created, (unsigned long long)c->ids_freed);
		if (c->events != k.events_seen[n])
			FAIL("seed %llu node %u: %llu events counted, %llu seen", (unsigned long long)seed, n,
				(unsigned long long)c->events, (unsigned long long)k.events_seen[n]);
		if (cm_next_deadline(link_cm(k.l, n)) != UINT64_MAX)
			FAIL("seed %llu node %u: a timer is left", (unsigned long long)seed, n);
		tally.dups += c->rx_dup_req + c->rx_dup_rep + c->rx_dup_dreq + c->rx_dup_rtu + c->rx_dup_mra +
			      c->rx_dup_sidr_req;
		tally.retries += c->retries;
		cm_unlisten(k.lis[n]);
	}
	const struct link_stats *st = link_stats(k.l);
	tally.lost += st->lost;
	tally.duplicated += st->duplicated;
	tally.reordered += st->reordered;
	out.hash = link_trace_hash(k.l);
	out.established = k.established;
	link_destroy(k.l);
	return out;
}

int main(int argc, char **argv)
{
	uint64_t first = 1, n = 1000;
	bool verbose = false;
	int ai = 1;
	if (ai < argc && strcmp(argv[ai], "-v") == 0) {
		verbose = true;
		ai++;
	}
	if (ai < argc)
		first = strtoull(argv[ai++], NULL, 0);
	if (ai < argc)
		n = strtoull(argv[ai++], NULL, 0);

	check_begin("soak: seeds %llu..%llu, 3 nodes, %u connections + %u SIDR each, loss 0-20%% per kind, dup, reorder",
		 (unsigned long long)first, (unsigned long long)(first + n - 1), NCONN + 1, NSIDR);
	unsigned replay_mismatch = 0;
	for (uint64_t s = first; s < first + n; s++) {
		int before = check_failures;
		check_seed(s);
		struct outcome o1 = run_seed(s, verbose);
		if (check_failures != before) {
			printf("   replay with: cm_soak -v %llu 1\n", (unsigned long long)s);
			check_replay("cm_soak -v %llu 1", (unsigned long long)s);
			continue;
		}
		/* The same seed again: the same run. */
		struct tally saved = tally;
		struct outcome o2 = run_seed(s, false);
		tally = saved;
		if (o1.hash != o2.hash || o1.established != o2.established) {
			replay_mismatch++;
			FAIL("seed %llu: replay differs (hash %016llx vs %016llx)", (unsigned long long)s,
				(unsigned long long)o1.hash, (unsigned long long)o2.hash);
			check_replay("cm_soak -v %llu 1", (unsigned long long)s);
		}
		tally.seeds++;
	}
	check_seeded = false;
	printf("   %u seeds: %u connection attempts, %u established, %u rejected, %u timeouts, %u MRAs, %u SIDR answers\n",
	       tally.seeds, tally.attempts, tally.established, tally.rejects, tally.timeouts, tally.mras, tally.sidr_ok);
	printf("   MADs lost %llu, duplicated %llu, reordered %llu; cm duplicates %llu, retries %llu\n",
	       (unsigned long long)tally.lost, (unsigned long long)tally.duplicated, (unsigned long long)tally.reordered,
	       (unsigned long long)tally.dups, (unsigned long long)tally.retries);
	/* The soak must exercise what it claims to, and timeouts must stay
	 * rare: 15 retries at <= 20% loss per message. */
	if (n >= 50) {
		CHECK(tally.established > tally.attempts / 3);
		CHECK(tally.mras > 0);
		CHECK(tally.dups > 0);
		CHECK(tally.retries > 0);
		CHECK(tally.reordered > 0);
		CHECK(tally.sidr_ok > 0);
		CHECK(tally.timeouts * 200 < tally.attempts + 200);
	}
	check_end_say(true);
	printf("%d cases, %d failures\n", check_cases, check_failures);
	return check_exit("cm_soak");
}
