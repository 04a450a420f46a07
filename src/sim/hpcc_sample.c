/*
 * hpcc_sample.c — the samplers of `softrnic sim run`, periodic events on
 * the run's engine: with --sample-us, queues.csv (every port holding
 * packets or paused) and throughput.csv (every flow that moved), bounded
 * by --trace-limit-mb; with queue_sample_ns, a histogram of the switch
 * egress queues whose percentiles the summary gives (hpcc_report.c).
 * A sampler only reads the fabric: the run is the same with or without.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/hpcc_int.h"

static void sample_queues(void *ctx, uint64_t arg, uint64_t now)
{
	struct sampler *s = ctx;

	(void)arg;
	for (unsigned node = 0; node < sim_nodes(s->n); node++)
		for (unsigned p = 0; p < sim_node_ports(s->n, node); p++) {
			uint64_t q = sim_port_queue_bytes(s->n, node, p);
			bool paused = sim_port_is_paused(s->n, node, p);
			if (q || paused) {
				int w = fprintf(s->f, "%" PRIu64 ",%u,%u,%" PRIu64 ",%d\n", now / 1000, node, p, q, paused);
				s->written += w > 0 ? (uint64_t)w : 0;
			}
		}
	for (unsigned i = 0; s->tput && i < sim_flows(s->n); i++) {
		uint64_t a = sim_flow_arrived(s->n, i);
		if (a != s->last[i]) {
			int w = fprintf(s->tput, "%" PRIu64 ",%u,%.3f\n", now / 1000, i,
					(double)(a - s->last[i]) * 8 / (double)s->period_ns);
			s->written += w > 0 ? (uint64_t)w : 0;
		}
		s->last[i] = a;
	}
	/* The bound: a sample that took the files past it is the last. */
	if (s->limit && s->written >= s->limit) {
		s->cut_at_ns = now;
		return;
	}
	if (now + s->period_ns <= s->stop_ns && sim_flows_running(s->n))
		sim_at(sim_net_engine(s->n), now + s->period_ns, sample_queues, s, 0);
}

static void sample_switch_queues(void *ctx, uint64_t arg, uint64_t now)
{
	struct queue_sampler *s = ctx;

	(void)arg;
	for (unsigned node = 0; node < sim_nodes(s->n); node++) {
		if (sim_node_is_host(s->n, node))
			continue;
		for (unsigned p = 0; p < sim_node_ports(s->n, node); p++) {
			uint64_t q = sim_port_queue_bytes(s->n, node, p);
			if (!q)
				continue;
			s->bins[q / 1024 < QUEUE_BINS ? q / 1024 : QUEUE_BINS - 1]++;
			s->samples++;
			s->max = q > s->max ? q : s->max;
		}
	}
	if (now + s->period_ns <= s->stop_ns && sim_flows_running(s->n))
		sim_at(sim_net_engine(s->n), now + s->period_ns, sample_switch_queues, s, 0);
}

/* The upper edge of the bin holding the p-th percentile sample. */
uint64_t simrun_queue_percentile(const struct queue_sampler *s, double p)
{
	uint64_t want = (uint64_t)((double)s->samples * p / 100), seen = 0;

	for (unsigned b = 0; b < QUEUE_BINS; b++) {
		seen += s->bins[b];
		if (seen > want)
			return b + 1 < QUEUE_BINS ? (uint64_t)(b + 1) * 1024 : s->max;
	}
	return s->max;
}

/* --sample-us's queues.csv and throughput.csv, and the switch queues'
 * histogram (queue_sample_ns); each a periodic event on the engine. */
void simrun_start_samplers(struct run *r)
{
	char path[700];

	r->smp = (struct sampler){ .n = r->n, .period_ns = r->o->sample_ns, .stop_ns = r->stop,
				   .limit = r->o->trace_limit_bytes ? r->o->trace_limit_bytes : SIM_TRACE_LIMIT_DEFAULT };
	if (r->smp.period_ns) {
		snprintf(path, sizeof(path), "%s/queues.csv", r->out_dir);
		r->smp.f = fopen(path, "w");
		snprintf(path, sizeof(path), "%s/throughput.csv", r->out_dir);
		r->smp.tput = fopen(path, "w");
		r->smp.last = calloc(sim_flows(r->n) ? sim_flows(r->n) : 1, sizeof(*r->smp.last));
		if (r->smp.f && r->smp.tput && r->smp.last) {
			fprintf(r->smp.f, "t_us,node,port,queue_bytes,paused\n");
			fprintf(r->smp.tput, "t_us,flow,gbps\n");
			sim_at(&r->e, r->smp.period_ns, sample_queues, &r->smp, 0);
		}
	}
	r->qs = (struct queue_sampler){ .n = r->n, .period_ns = r->o->queue_sample_ns, .stop_ns = r->stop };
	if (r->qs.period_ns) {
		r->qs.bins = calloc(QUEUE_BINS, sizeof(*r->qs.bins));
		if (r->qs.bins)
			sim_at(&r->e, r->qs.period_ns, sample_switch_queues, &r->qs, 0);
	}
}

void simrun_stop_samplers(struct run *r)
{
	if (r->smp.f)
		fclose(r->smp.f);
	if (r->smp.tput)
		fclose(r->smp.tput);
	r->smp.f = r->smp.tput = NULL;
	free(r->smp.last);
	r->smp.last = NULL;
}
