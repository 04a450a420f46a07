/*
 * cm_link.c — the seeded MAD link (see cm_link.h).
 *
 * Structure: every cm's io->send_mad lands in link_send(), which applies
 * the tap and the fault knobs and schedules each copy of the MAD as an
 * event of the simulator's engine (sim/engine.h), with the MAD's record
 * (struct link_msg, one allocation) as its argument; a test alarm is an
 * event without a record.  The engine runs events in (time, sequence)
 * order, FIFO among equal times, and its clock is the link's.
 * link_run_until() repeatedly picks the earlier of "next engine event"
 * (a MAD or an alarm; it wins a tie) and "earliest cm timer", moves the
 * clock there and delivers, stops or fires.  A MAD belongs to the engine
 * until its event runs and is freed once delivered; link_destroy frees
 * what is still in flight.  No real clock, no rand(): the seed is the
 * only source of variation.
 */
#include "cm_link.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/prng.h"
#include "cm_check.h"
#include "sim/engine.h"

/* A MAD in flight: the argument of its delivery event.  Its time and
 * sequence number are the engine's. */
struct link_msg {
	unsigned from, to;
	uint8_t mad[256];
};

struct link_node {
	struct link *l;
	unsigned idx;
	struct cm *cm;
	uint8_t gid[16];
	struct link_event *q;           /* event queue (ring) */
	unsigned qhead, qlen, qcap;
};

struct link {
	unsigned n;
	struct link_node node[LINK_MAX_NODES];
	struct link_faults faults[LINK_MAX_NODES][LINK_MAX_NODES];
	uint64_t fifo_tail[LINK_MAX_NODES][LINK_MAX_NODES];
	uint64_t rng[4];
	/* MADs in flight and test alarms, one event each; eng.now is the
	 * link's clock (cm timers move it too, through sim_run_until). */
	struct sim_engine eng;
	link_tap_fn tap;
	void *tap_arg;
	link_event_fn hook;
	void *hook_arg;
	bool trace_transitions, verbose;
	unsigned tracing_node;
	uint64_t hash;
	struct link_stats stats;
};

/* ---- PRNG (base/prng.h) ---------------------------------------------------- */

uint64_t link_random(struct link *l)
{
	return prng_next(l->rng);
}

uint64_t link_random_below(struct link *l, uint64_t n)
{
	return n ? link_random(l) % n : 0;
}

double link_random_unit(struct link *l)
{
	return (double)(link_random(l) >> 11) / (double)(1ull << 53);
}

/* ---- trace hash ----------------------------------------------------------------- */

static void hash_bytes(struct link *l, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		l->hash ^= b[i];
		l->hash *= 0x100000001b3ull;
	}
}

static void hash_u64(struct link *l, uint64_t v)
{
	hash_bytes(l, &v, sizeof(v));
}

/* ---- the cms' io ------------------------------------------------------------------ */

static _Noreturn void out_of_memory(void)
{
	fprintf(stderr, "cm_link: out of memory\n");
	abort();
}

static void on_arrival(void *ctx, uint64_t arg, uint64_t now);

static void schedule(struct link *l, unsigned from, unsigned to, const uint8_t *mad, bool copy)
{
	const struct link_faults *f = &l->faults[from][to];
	uint64_t t = l->eng.now + f->delay_ns + (f->jitter_ns ? link_random_below(l, f->jitter_ns + 1) : 0);
	if (t < l->fifo_tail[from][to])
		t = l->fifo_tail[from][to];
	if (!copy)
		l->fifo_tail[from][to] = t;
	if (f->reorder > 0 && link_random_unit(l) < f->reorder && f->reorder_ns) {
		t += 1 + link_random_below(l, f->reorder_ns);
		l->stats.reordered++;
	}
	struct link_msg *m = malloc(sizeof(*m));
	if (!m)
		out_of_memory();
	m->from = from;
	m->to = to;
	memcpy(m->mad, mad, 256);
	if (sim_at(&l->eng, t, on_arrival, l, (uint64_t)(uintptr_t)m))
		out_of_memory();
}

static void link_send(void *ctx, const uint8_t dgid[16], const uint8_t mad[256])
{
	struct link_node *nd = ctx;
	struct link *l = nd->l;
	unsigned to;
	l->stats.sent++;
	for (to = 0; to < l->n; to++)
		if (memcmp(l->node[to].gid, dgid, 16) == 0)
			break;
	if (to == l->n) {
		l->stats.no_route++;
		return;
	}
	uint8_t copy[256];
	memcpy(copy, mad, 256);
	if (l->tap && !l->tap(l->tap_arg, nd->idx, to, l->eng.now, copy)) {
		l->stats.tapped++;
		return;
	}
	const struct link_faults *f = &l->faults[nd->idx][to];
	unsigned attr = (unsigned)(copy[16] << 8 | copy[17]);
	double loss = attr >= 0x10 && attr < 0x10 + LK_NKINDS ? f->loss[attr - 0x10] : 0;
	if (loss > 0 && link_random_unit(l) < loss) {
		l->stats.lost++;
	} else {
		schedule(l, nd->idx, to, copy, false);
	}
	if (f->dup > 0 && link_random_unit(l) < f->dup) {
		l->stats.duplicated++;
		if (!(loss > 0 && link_random_unit(l) < loss))
			schedule(l, nd->idx, to, copy, true);
	}
}

static void link_event_cb(void *ctx, const struct cm_event *ev)
{
	struct link_node *nd = ctx;
	struct link *l = nd->l;
	struct link_event e;
	memset(&e, 0, sizeof(e));
	e.node = nd->idx;
	e.time = l->eng.now;
	e.ev = *ev;
	e.local_comm_id = cm_id_local_comm_id(ev->id);
	if (ev->private_data) {
		memcpy(e.priv, ev->private_data, ev->private_data_len);
		e.ev.private_data = e.priv;
	}
	if (ev->ari) {
		memcpy(e.ari, ev->ari, ev->ari_len);
		e.ev.ari = e.ari;
	}
	if (ev->type == CM_EV_SIDR_REP_RECEIVED && ev->u.sidr_rep.info) {
		memcpy(e.info, ev->u.sidr_rep.info, ev->u.sidr_rep.info_len);
		e.ev.u.sidr_rep.info = e.info;
	}
	hash_u64(l, l->eng.now);
	hash_u64(l, nd->idx);
	hash_u64(l, ev->type);
	hash_u64(l, e.local_comm_id);
	if (ev->private_data)
		hash_bytes(l, ev->private_data, ev->private_data_len);
	if (l->verbose)
		fprintf(stderr, "[%12llu] node %u event %s id 0x%08x\n", (unsigned long long)l->eng.now, nd->idx,
			cm_event_name(ev->type), e.local_comm_id);
	if (l->hook)
		l->hook(l->hook_arg, &e);
	if (nd->qlen == nd->qcap) {
		unsigned cap = nd->qcap ? nd->qcap * 2 : 32;
		struct link_event *q = malloc(cap * sizeof(*q));
		if (!q)
			abort();
		for (unsigned i = 0; i < nd->qlen; i++)
			q[i] = nd->q[(nd->qhead + i) % nd->qcap];
		free(nd->q);
		nd->q = q;
		nd->qhead = 0;
		nd->qcap = cap;
	}
	struct link_event *slot = &nd->q[(nd->qhead + nd->qlen++) % nd->qcap];
	*slot = e;
	/* re-aim the copies' pointers at the slot */
	if (e.ev.private_data)
		slot->ev.private_data = slot->priv;
	if (e.ev.ari)
		slot->ev.ari = slot->ari;
	if (e.ev.type == CM_EV_SIDR_REP_RECEIVED && e.ev.u.sidr_rep.info)
		slot->ev.u.sidr_rep.info = slot->info;
}

static void link_trace_cb(void *ctx, const char *line)
{
	struct link_node *nd = ctx;
	struct link *l = nd->l;
	if (l->trace_transitions) {
		hash_u64(l, nd->idx);
		hash_bytes(l, line, strlen(line));
	}
	if (l->verbose)
		fprintf(stderr, "[%12llu] node %u %s\n", (unsigned long long)l->eng.now, nd->idx, line);
}

/* ---- lifetime -------------------------------------------------------------------- */

struct link *link_create(uint64_t seed, unsigned n, const struct cm_config *cfg)
{
	if (n < 2 || n > LINK_MAX_NODES)
		return NULL;
	struct link *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->n = n;
	l->hash = 0xcbf29ce484222325ull;
	l->trace_transitions = true;
	prng_seed(l->rng, seed);
	sim_engine_init(&l->eng);
	struct link_faults clean = { .delay_ns = 1000 };
	link_set_faults(l, &clean);
	struct cm_config base;
	if (cfg)
		base = *cfg;
	else
		cm_config_default(&base);
	for (unsigned i = 0; i < n; i++) {
		struct link_node *nd = &l->node[i];
		nd->l = l;
		nd->idx = i;
		memset(nd->gid, 0, 16);
		nd->gid[10] = nd->gid[11] = 0xff;
		nd->gid[12] = 10;
		nd->gid[13] = 0;
		nd->gid[14] = 1;
		nd->gid[15] = (uint8_t)(i + 1);
		struct cm_config c = base;
		memcpy(c.gid, nd->gid, 16);
		c.ca_guid = 0x1000 + i;
		c.seed = (uint32_t)(base.seed * 0x9e3779b9u + i * 7919u + (uint32_t)seed);
		struct cm_io io = { .ctx = nd, .send_mad = link_send, .event = link_event_cb };
		nd->cm = cm_create(&c, &io);
		if (!nd->cm) {
			link_destroy(l);
			return NULL;
		}
		cm_set_trace(nd->cm, link_trace_cb, nd);
	}
	return l;
}

/* sim_clear's callback: a MAD still in flight (an alarm has no record). */
static void free_msg(const struct sim_event *ev, void *ctx)
{
	(void)ctx;
	free((struct link_msg *)(uintptr_t)ev->arg);
}

void link_destroy(struct link *l)
{
	if (!l)
		return;
	for (unsigned i = 0; i < l->n; i++) {
		cm_destroy(l->node[i].cm);
		free(l->node[i].q);
	}
	sim_clear(&l->eng, free_msg, NULL);
	sim_engine_free(&l->eng);
	free(l);
}

struct cm *link_cm(struct link *l, unsigned node)
{
	return l->node[node].cm;
}

const uint8_t *link_gid(const struct link *l, unsigned node)
{
	return l->node[node].gid;
}

void link_set_faults_dir(struct link *l, unsigned from, unsigned to, const struct link_faults *f)
{
	l->faults[from][to] = *f;
}

void link_set_faults(struct link *l, const struct link_faults *f)
{
	for (unsigned i = 0; i < LINK_MAX_NODES; i++)
		for (unsigned j = 0; j < LINK_MAX_NODES; j++)
			l->faults[i][j] = *f;
}

void link_set_tap(struct link *l, link_tap_fn fn, void *arg)
{
	l->tap = fn;
	l->tap_arg = arg;
}

void link_set_event_hook(struct link *l, link_event_fn fn, void *arg)
{
	l->hook = fn;
	l->hook_arg = arg;
}

void link_trace_transitions(struct link *l, bool on)
{
	l->trace_transitions = on;
}

void link_verbose(struct link *l, bool on)
{
	l->verbose = on;
}

uint64_t link_now(const struct link *l)
{
	return l->eng.now;
}

/* An alarm's event: nothing to do; its running is a step, after which
 * link_run_until asks the predicate again. */
static void on_alarm(void *ctx, uint64_t arg, uint64_t now)
{
	(void)ctx;
	(void)arg;
	(void)now;
}

void link_alarm(struct link *l, uint64_t t)
{
	if (sim_at(&l->eng, t, on_alarm, l, 0))
		out_of_memory();
}

uint64_t link_trace_hash(const struct link *l)
{
	return l->hash;
}

const struct link_stats *link_stats(const struct link *l)
{
	return &l->stats;
}

size_t link_in_flight(const struct link *l)
{
	return sim_pending(&l->eng);
}

bool link_pop_event(struct link *l, unsigned node, struct link_event *out)
{
	struct link_node *nd = &l->node[node];
	if (!nd->qlen)
		return false;
	*out = nd->q[nd->qhead];
	if (out->ev.private_data)
		out->ev.private_data = out->priv;
	if (out->ev.ari)
		out->ev.ari = out->ari;
	if (out->ev.type == CM_EV_SIDR_REP_RECEIVED && out->ev.u.sidr_rep.info)
		out->ev.u.sidr_rep.info = out->info;
	nd->qhead = (nd->qhead + 1) % nd->qcap;
	nd->qlen--;
	return true;
}

unsigned link_pending_events(const struct link *l, unsigned node)
{
	return l->node[node].qlen;
}

/* ---- running --------------------------------------------------------------------- */

static void deliver(struct link *l, unsigned from, unsigned to, const uint8_t *mad, size_t len)
{
	l->stats.delivered++;
	hash_u64(l, l->eng.now);
	hash_u64(l, from);
	hash_u64(l, to);
	hash_bytes(l, mad, len);
	if (l->verbose) {
		const char *name = len >= 18 ? wire_cm_attr_name((uint16_t)(mad[16] << 8 | mad[17])) : NULL;
		fprintf(stderr, "[%12llu] %u -> %u %s\n", (unsigned long long)l->eng.now, from, to, name ? name : "?");
	}
	cm_receive(l->node[to].cm, l->node[from].gid, mad, len, l->eng.now);
}

void link_inject(struct link *l, unsigned from, unsigned to, const uint8_t *mad, size_t len)
{
	deliver(l, from, to, mad, len);
}

static uint64_t next_timer(struct link *l, unsigned *who)
{
	uint64_t t = UINT64_MAX;
	for (unsigned i = 0; i < l->n; i++) {
		uint64_t d = cm_next_deadline(l->node[i].cm);
		if (d < t) {
			t = d;
			*who = i;
		}
	}
	return t;
}

/* A MAD's delivery event (the engine's argument: its record). */
static void on_arrival(void *ctx, uint64_t arg, uint64_t now)
{
	struct link *l = ctx;
	struct link_msg *m = (struct link_msg *)(uintptr_t)arg;
	(void)now;              /* the engine's clock, l->eng.now */
	deliver(l, m->from, m->to, m->mad, sizeof(m->mad));
	free(m);
}

/* One step: the engine's next event (a MAD or an alarm; it wins a tie)
 * or the earliest cm timer.  False when nothing is left or the next
 * thing is after `limit`. */
static bool step(struct link *l, uint64_t limit)
{
	unsigned who = 0;
	uint64_t tt = next_timer(l, &who);
	uint64_t te = sim_next_time(&l->eng);
	uint64_t t = te <= tt ? te : tt;
	if (t == UINT64_MAX || t > limit)
		return false;
	if (te <= tt) {
		sim_step(&l->eng);
	} else {
		/* No event is due by tt: this only moves the clock (a
		 * deadline in the past fires now). */
		sim_run_until(&l->eng, tt);
		hash_u64(l, l->eng.now);
		hash_u64(l, 0x7100 + who);
		cm_advance(l->node[who].cm, l->eng.now);
	}
	return true;
}

static uint64_t next_time(struct link *l)
{
	unsigned who = 0;
	uint64_t tt = next_timer(l, &who);
	uint64_t te = sim_next_time(&l->eng);
	return te < tt ? te : tt;
}

enum link_run link_run_until(struct link *l, bool (*pred)(void *arg), void *arg, uint64_t max_ns)
{
	uint64_t now = l->eng.now;
	uint64_t limit = now + max_ns < now ? UINT64_MAX : now + max_ns;
	for (;;) {
		if (pred && pred(arg))
			return LINK_DONE;
		if (step(l, limit))
			continue;
		/* Nothing left up to the limit; the predicate may still be
		 * satisfied, or start new work (then go on). */
		if (pred && pred(arg))
			return LINK_DONE;
		uint64_t t = next_time(l);
		if (t == UINT64_MAX)
			return LINK_IDLE;
		if (t > limit) {
			sim_run_until(&l->eng, limit);  /* nothing due: the clock only */
			return LINK_TIMEOUT;
		}
	}
}

void link_run_for(struct link *l, uint64_t ns)
{
	uint64_t limit = l->eng.now + ns;
	while (step(l, limit))
		;
	sim_run_until(&l->eng, limit);  /* nothing is due by then: the clock only */
}

bool link_counters_consistent(struct link *l, unsigned node)
{
	char msg[256];
	if (cm_check_counters(cm_counters(l->node[node].cm), msg, sizeof(msg)))
		return true;
	fprintf(stderr, "node %u counters: %s\n", node, msg);
	return false;
}
