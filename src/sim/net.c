/*
 * net.c — the simulated fabric of net.h as one object: created with its
 * options, built once its nodes and links are added (sim_build: placement,
 * buffers, routes, watchdog, credits, rnics), run (sim_net_run: the
 * engine's partitioned windows, engine.h, with flow.c's hooks between
 * them), summed up (sim_net_stats) and destroyed.  The components are in
 * files of their own (net_int.h lists them).
 */
#include <string.h>

#include "sim/net_int.h"
#include "wire/wire.h"

struct sim_net *sim_net_create(struct sim_engine *eng, uint64_t seed, const struct sim_host_opts *ho,
			       const struct sim_switch_opts *so)
{
	struct sim_net *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->eng = eng;
	n->seed = seed;
	sim_parts_init(&n->parts_eng, eng);
	n->nparts = 1;
	n->parts[0].net = n;
	n->parts[0].eng = eng;
	prng_seed(n->parts[0].rng, seed);
	n->armed = -1;
	sim_engine_init(&n->starts);
	n->ho = *ho;
	if (ho->cc_algo == RNIC_CC_HPCC && ho->hpcc && ho->hpcc->pint) {
		n->pint_on = true;
		sim_pint_init(&n->pint, ho->pint_log_base, ho->hpcc->base_rtt);
	}
	n->so = *so;
	if (!n->ho.mtu)
		n->ho.mtu = 1024;
	if (!n->ho.qp_timeout)
		n->ho.qp_timeout = 10;
	return n;
}

int sim_net_set_partitions(struct sim_net *n, unsigned parts, bool threads)
{
	if (n->nhosts || n->nswitches || sim_parts_set(&n->parts_eng, parts, threads))
		return EINVAL;
	for (unsigned i = 1; i < parts; i++) {
		struct part *P = &n->parts[i];
		P->net = n;
		P->index = i;
		P->eng = n->parts_eng.eng[i];
		prng_seed(P->rng, n->seed ^ (0x9e3779b97f4a7c15ull * i));
	}
	n->nparts = parts;
	n->starts_in_windows = parts > 1;
	return 0;
}

unsigned sim_net_partitions(const struct sim_net *n)
{
	return n->nparts;
}

uint64_t sim_net_lookahead(const struct sim_net *n)
{
	return n->nparts > 1 ? n->parts_eng.lookahead : 0;
}

/* Each partition's hosts' MR, receive scratch and delivery counters. */
static int parts_alloc(struct sim_net *n)
{
	for (unsigned q = 0; q < n->nparts; q++) {
		struct part *P = &n->parts[q];
		if (!(P->host_buf = calloc(1, HOST_BUF)) || !(P->rx_buf = calloc(1, WIRE_MAX_IB_PACKET)) ||
		    !(P->delivered = calloc(n->nhosts ? n->nhosts : 1, sizeof(uint64_t))))
			return ENOMEM;
	}
	return 0;
}

int sim_build(struct sim_net *n)
{
	int rc;

	if (nodes_place(n))
		return EINVAL;
	if ((rc = parts_alloc(n)) || (rc = routes_compute(n)) || (rc = watchdog_arm(n)))
		return rc;
	credits_init(n);
	return hosts_create_rnics(n);
}

/* ---- running: the engine's windows with the flows' hooks ----------------- */

struct run_ctx {
	struct sim_net *n;
	sim_net_progress_fn progress;
	void *ctx;
};

static int run_between(void *ctx)
{
	return flows_between(((struct run_ctx *)ctx)->n);
}

static bool run_running(void *ctx)
{
	return sim_flows_running(((struct run_ctx *)ctx)->n) != 0;
}

static uint64_t run_held_next(void *ctx)
{
	return flows_held_next(((struct run_ctx *)ctx)->n);
}

static int run_window(void *ctx, uint64_t start, uint64_t end)
{
	return flows_window(((struct run_ctx *)ctx)->n, start, end);
}

static void run_progress(void *ctx)
{
	struct run_ctx *r = ctx;

	if (r->progress)
		r->progress(r->ctx, r->n);
}

int sim_net_run(struct sim_net *n, uint64_t stop, sim_net_progress_fn progress, void *ctx)
{
	static const struct sim_parts_ops ops = { .between = run_between, .running = run_running,
						  .held_next = run_held_next, .window = run_window,
						  .progress = run_progress };
	struct run_ctx r = { .n = n, .progress = progress, .ctx = ctx };

	return sim_parts_run(&n->parts_eng, stop, &ops, &r);
}

struct sim_engine *sim_net_engine(const struct sim_net *n)
{
	return n->eng;
}

uint64_t sim_net_events(const struct sim_net *n)
{
	return sim_parts_events(&n->parts_eng);
}

uint64_t sim_net_now(const struct sim_net *n)
{
	return sim_parts_now(&n->parts_eng);
}

const struct sim_net_stats *sim_net_stats(struct sim_net *n)
{
	/* The partitions' counters together (their peaks: the largest), and
	 * paused_ns summed up to each partition's clock. */
	struct sim_net_stats *t = &n->stats;
	memset(t, 0, sizeof(*t));
	for (unsigned q = 0; q < n->nparts; q++) {
		const struct sim_net_stats *s = &n->parts[q].stats;
		t->packets_sent += s->packets_sent;
		t->packet_hops += s->packet_hops;
		t->link_losses += s->link_losses;
		t->drops += s->drops;
		t->headroom_drops += s->headroom_drops;
		t->ecn_marks += s->ecn_marks;
		t->pauses_sent += s->pauses_sent;
		t->resumes_sent += s->resumes_sent;
		t->pauses_received += s->pauses_received;
		t->storms_detected += s->storms_detected;
		t->storms_restored += s->storms_restored;
		t->watchdog_drops += s->watchdog_drops;
		t->credit_stalls += s->credit_stalls;
		if (s->max_buffer_bytes > t->max_buffer_bytes)
			t->max_buffer_bytes = s->max_buffer_bytes;
		if (s->max_host_queue_bytes > t->max_host_queue_bytes)
			t->max_host_queue_bytes = s->max_host_queue_bytes;
	}
	for (unsigned i = 0; i < n->nnodes; i++)
		for (unsigned p = 0; p < n->nodes[i]->nports; p++)
			for (int q = 0; q < SIM_PRIOS; q++)
				t->paused_ns += paused_ns(n->nodes[i]->ports[p], q, n->nodes[i]->part->eng->now);
	return t;
}

static void free_in_flight(const struct sim_event *ev, void *ctx)
{
	(void)ctx;
	if (ev->fn == arrive)
		free((void *)(uintptr_t)ev->arg);
}

void sim_net_destroy(struct sim_net *n)
{
	if (!n)
		return;
	/* Packets on the wire live in the engines' arrival events and the
	 * outboxes: free them, and leave no event that points into the net. */
	sim_parts_clear(&n->parts_eng, free_in_flight, NULL);
	flows_free(n);
	for (unsigned h = 0; h < n->nhosts; h++)
		host_free(n->hosts[h]);
	for (unsigned q = 0; q < n->nparts; q++) {
		free(n->parts[q].host_buf);
		free(n->parts[q].rx_buf);
		free(n->parts[q].delivered);
	}
	sim_parts_free(&n->parts_eng);
	sim_engine_free(&n->starts);
	for (unsigned i = 0; i < n->nnodes; i++)
		node_free(n->nodes[i]);
	free(n->hosts);
	free(n->host_nodes);
	free(n->switch_nodes);
	free(n);
}
