/*
 * hpcc_report.c — the outputs of `softrnic sim run` once the fabric has
 * run: HPCC's FCT file (named by FCT_OUTPUT_FILE, in the output folder),
 * flows.csv, pfc.csv and summary.txt, and the same numbers into
 * sim_run_opts.result for the callers that compare runs (exp_hpcc.c's
 * cc-compare).  Each flow's standalone FCT, the slowdown's denominator,
 * is its bytes with their headers at the path's slowest rate plus a
 * round trip of propagation.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fct.h"
#include "sim/hpcc_int.h"

static uint32_t hpcc_ip(unsigned id)
{
	return 0x0b000001u + ((id / 256) << 16) + ((id % 256) << 8);
}

/* pfc.csv: pauses and paused time of every port that received a pause. */
void simrun_write_pfc_csv(const struct run *r)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/pfc.csv", r->out_dir);
	FILE *pfc = fopen(path, "w");
	if (!pfc)
		return;
	fprintf(pfc, "node,port,is_host,pauses_received,paused_ns\n");
	for (unsigned node = 0; node < sim_nodes(r->n); node++)
		for (unsigned p = 0; p < sim_node_ports(r->n, node); p++)
			if (sim_port_pauses_received(r->n, node, p))
				fprintf(pfc, "%u,%u,%d,%" PRIu64 ",%" PRIu64 "\n", node, p, sim_node_is_host(r->n, node),
					sim_port_pauses_received(r->n, node, p), sim_port_paused_ns(r->n, node, p));
	fclose(pfc);
}

/* The flows done, for the summary's classes by size. */
struct done_flows {
	unsigned done, failed;
	double *slow;                   /* slowdowns, then scratch of the same size */
	uint64_t *sizes;
};

/* HPCC's FCT lines and our flows.csv, one line per flow; the finished
 * flows' sizes and slowdowns into d. */
static void write_flows(const struct run *r, FILE *fct, FILE *csv, struct done_flows *d)
{
	fprintf(csv, "flow,src,dst,bytes,start_ns,fct_ns,standalone_ns,slowdown,failed\n");
	for (unsigned i = 0; i < r->nflows; i++) {
		const struct sim_flow_result *f = sim_flow(r->n, i);
		uint64_t one_way = 0, rate = 0;
		sim_path(r->n, f->src, f->dst, &one_way, &rate);
		/* Alone on an idle path: the bytes with their headers at the
		 * path's slowest rate, and a round trip of propagation. */
		uint64_t pkts = (f->bytes + r->ho.mtu - 1) / r->ho.mtu;
		uint64_t wire = f->bytes + pkts * (48u + SIM_WIRE_OVERHEAD);
		uint64_t standalone = 2 * one_way + (rate ? wire * 8 * 1000000000ull / rate : 0);
		double sd = f->fct_ns && standalone ? (double)f->fct_ns / (double)standalone : 0;
		unsigned src = r->flow_src[2 * i], dst = r->flow_src[2 * i + 1];
		fprintf(csv, "%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%d\n", i, src, dst, f->bytes,
			f->start_ns, f->fct_ns, standalone, sd, f->failed);
		if (f->fct_ns && !f->failed) {
			fprintf(fct, "%08x %08x %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", hpcc_ip(src),
				hpcc_ip(dst), 10000 + i, 100u, f->bytes, f->start_ns, f->fct_ns, standalone);
			d->sizes[d->done] = f->bytes;
			d->slow[d->done++] = sd;
		}
		d->failed += f->failed;
	}
}

/* summary.txt's header and counters, and o->result's. */
static void write_summary_counts(struct run *r, FILE *sum, const struct done_flows *d)
{
	const struct hpcc_config *c = &r->c;
	const struct sim_run_opts *o = r->o;
	const struct sim_net_stats *st = sim_net_stats(r->n);

	fprintf(sum, "sim run %s: %u nodes (%u switches), %u links, %u flows", r->config, r->t.nodes, r->t.switches,
		r->t.links, r->nflows);
	if (r->nflows < r->listed)
		fprintf(sum, " (the first of the file's %u)", r->listed);
	if (sim_net_partitions(r->n) > 1)
		fprintf(sum, "; %u partitions on %u thread%s, windows of %" PRIu64 " ns", sim_net_partitions(r->n),
			o->threads > 1 ? o->threads : 1, o->threads > 1 ? "s" : "", sim_net_lookahead(r->n));
	if (c->cc_mode != 1)
		fprintf(sum, "; %s, window %" PRIu64 " bytes",
			c->cc_mode == 7 ? "TIMELY" : c->cc_mode == 3 ? "HPCC" : c->cc_mode == 10 ? "HPCC-PINT" : "DCTCP",
			r->ho.cc_window);
	fprintf(sum, "; seed %" PRIu64 "; %s %s, PFC %s, %u ECN map entries, buffer %" PRIu64 " bytes\n", o->seed,
		c->cc_mode == 1 ? "DCQCN" : "ECN", c->qcn ? "on" : "off", c->pfc ? "on" : "off", r->so.ecn_map_n,
		r->so.buffer_bytes);
	fprintf(sum, "  %u flows done, %u failed, %u unfinished at %.3f s simulated (%" PRIu64 " events, %" PRIu64
		     " packet-hops)\n", d->done, d->failed, r->nflows - d->done - d->failed,
		(double)sim_net_now(r->n) / 1e9, sim_net_events(r->n), st->packet_hops);
	fprintf(sum, "  %" PRIu64 " drops, %" PRIu64 " pauses, %" PRIu64 " ECN marks, %" PRIu64 " CNPs, %" PRIu64
		     " retransmitted packets\n",
		st->drops + st->headroom_drops, st->pauses_sent, st->ecn_marks, sim_rnic_counter(r->n, "cnp_sent"),
		sim_rnic_counter(r->n, "retransmits"));
	r->o->result = (struct sim_run_result){
		.flows = r->nflows, .done = d->done, .failed = d->failed,
		.drops = st->drops + st->headroom_drops, .pauses = st->pauses_sent, .ecn_marks = st->ecn_marks,
		.cnps = sim_rnic_counter(r->n, "cnp_sent"),
	};
}

/* The switch queues' percentiles (queue_sample_ns), into the summary and
 * o->result. */
static void write_summary_queues(struct run *r, FILE *sum)
{
	const struct queue_sampler *qs = &r->qs;
	struct sim_run_result *res = &r->o->result;

	if (!qs->bins || !qs->samples)
		return;
	res->queue_samples = qs->samples;
	res->queue_p50 = simrun_queue_percentile(qs, 50);
	res->queue_p95 = simrun_queue_percentile(qs, 95);
	res->queue_p99 = simrun_queue_percentile(qs, 99);
	res->queue_max = qs->max;
	fprintf(sum, "  switch egress queues holding packets, sampled every %" PRIu64 " us: %" PRIu64
		     " samples, p50 %" PRIu64 " KiB, p95 %" PRIu64 " KiB, p99 %" PRIu64 " KiB, max %" PRIu64 " KiB\n",
		qs->period_ns / 1000, qs->samples, res->queue_p50 / 1024, res->queue_p95 / 1024, res->queue_p99 / 1024,
		(qs->max + 1023) / 1024);
}

/* FCT slowdown by size, as HPCC's fct_analysis does by percentile. */
static void write_summary_sizes(struct run *r, FILE *sum, struct done_flows *d)
{
	static const uint64_t edges[] = SIM_RUN_SIZE_EDGES;
	uint64_t lo = 0;

	for (unsigned b = 0; b < sizeof(edges) / sizeof(edges[0]); lo = edges[b++]) {
		double *v = d->slow + d->done;  /* scratch past the slowdowns */
		unsigned k = 0;
		for (unsigned i = 0; i < d->done; i++)
			if (d->sizes[i] >= lo && d->sizes[i] < edges[b])
				v[k++] = d->slow[i];
		if (!k)
			continue;
		qsort(v, k, sizeof(v[0]), sim_cmp_double);
		char hi[24] = "";        /* the last range is open */
		if (edges[b] != UINT64_MAX)
			snprintf(hi, sizeof(hi), "%" PRIu64, edges[b]);
		fprintf(sum, "  sizes %" PRIu64 "..%s bytes: %u flows, slowdown p50 %.2f p95 %.2f p99 %.2f\n", lo, hi, k,
			v[k / 2], v[k * 95 / 100], v[k * 99 / 100]);
		r->o->result.by_size[b] = (struct sim_size_class){ k, v[k / 2], v[k * 95 / 100], v[k * 99 / 100] };
	}
}

/* The FCT file (named by FCT_OUTPUT_FILE, in out_dir), flows.csv and
 * summary.txt.  0, or 2 with a message. */
int simrun_write_outputs(struct run *r)
{
	const char *name = r->c.fct_out[0] ? strrchr(r->c.fct_out, '/') ? strrchr(r->c.fct_out, '/') + 1 : r->c.fct_out
					   : "fct.txt";
	char path[700];
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", r->out_dir, name);
	snprintf(r->o->fct_path, sizeof(r->o->fct_path), "%s", path);
	FILE *fct = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/flows.csv", r->out_dir);
	FILE *csv = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/summary.txt", r->out_dir);
	FILE *sum = fopen(path, "w");
	struct done_flows d = {
		.slow = calloc(2 * (size_t)(r->nflows ? r->nflows : 1), sizeof(double)),
		.sizes = calloc(r->nflows ? r->nflows : 1, sizeof(uint64_t)),
	};
	if (!fct || !csv || !sum || !d.slow || !d.sizes) {
		fprintf(stderr, "softrnic sim run: cannot write in %s\n", r->out_dir);
		rc = 2;
	} else {
		write_flows(r, fct, csv, &d);
		write_summary_counts(r, sum, &d);
		write_summary_queues(r, sum);
		write_summary_sizes(r, sum, &d);
		if (r->smp.cut_at_ns)
			fprintf(sum, "  queues.csv and throughput.csv stop at %.3f ms: they reached %.3g MB "
				     "(--trace-limit-mb)\n", (double)r->smp.cut_at_ns / 1e6, (double)r->smp.limit / 1048576);
		if (r->c.ignored[0])
			fprintf(sum, "  keys of %s not used by this model: %s\n", r->config, r->c.ignored);
	}
	if (fct)
		fclose(fct);
	if (csv)
		fclose(csv);
	if (sum)
		fclose(sum);
	free(d.slow);
	free(d.sizes);
	return rc;
}
