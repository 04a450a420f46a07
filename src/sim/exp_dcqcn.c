/*
 * exp_dcqcn.c — the dcqcn-fairness experiment: 2, 4 and 8 long flows
 * join one bottleneck one after another, with DCQCN (mlx5's parameters
 * and the paper's) and without; each flow's throughput and the queue
 * sampled over time, Jain's index, the time to converge.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sim/exp_int.h"

/* Jain's index of n rates: 1 when all are equal, 1/n when one has all. */
static double jain(const double *x, unsigned n)
{
	double sum = 0, sq = 0;

	for (unsigned i = 0; i < n; i++) {
		sum += x[i];
		sq += x[i] * x[i];
	}
	return sq > 0 ? sum * sum / (n * sq) : 0;
}

#define MAX_FAIR_FLOWS 8
#define FAIR_WINDOW 10

struct fair_run {
	struct sim_net *n;
	unsigned flows, queue_node, queue_port;
	uint64_t period_ns, last_start_ns, end_ns;
	uint64_t prev[MAX_FAIR_FLOWS];
	FILE *csv;
	const char *label;
	/* After the last flow joined: */
	double jain_sum, queue_sum, rate_sum;
	unsigned samples;
	uint64_t max_queue, converged_ns;
	double window[MAX_FAIR_FLOWS][FAIR_WINDOW];
	unsigned wpos, good_streak;
};

static void fair_sample(void *ctx, uint64_t arg, uint64_t now)
{
	struct fair_run *r = ctx;
	double gbps[MAX_FAIR_FLOWS], avg[MAX_FAIR_FLOWS];
	uint64_t q = sim_port_queue_bytes(r->n, r->queue_node, r->queue_port);

	(void)arg;
	fprintf(r->csv, "%s,%" PRIu64 ",%" PRIu64, r->label, now / 1000, q);
	for (unsigned i = 0; i < r->flows; i++) {
		uint64_t d = sim_host_delivered(r->n, i + 1);
		gbps[i] = (double)(d - r->prev[i]) * 8 / (double)r->period_ns;
		r->prev[i] = d;
		r->window[i][r->wpos % FAIR_WINDOW] = gbps[i];
		fprintf(r->csv, ",%.2f", gbps[i]);
	}
	fprintf(r->csv, "\n");
	r->wpos++;
	if (now > r->last_start_ns) {
		double total = 0;
		for (unsigned i = 0; i < r->flows; i++) {
			avg[i] = 0;
			for (int k = 0; k < FAIR_WINDOW; k++)
				avg[i] += r->window[i][k] / FAIR_WINDOW;
			total += gbps[i];
		}
		/* Converged: the index over the last FAIR_WINDOW samples
		 * reaches 0.9 and stays there to the end. */
		if (jain(avg, r->flows) >= 0.9) {
			if (!r->good_streak++)
				r->converged_ns = now - r->last_start_ns;
		} else {
			r->good_streak = 0;
		}
		/* Averages over the second half after the last join. */
		if (now >= r->last_start_ns + (r->end_ns - r->last_start_ns) / 2) {
			r->jain_sum += jain(gbps, r->flows);
			r->queue_sum += (double)q;
			r->rate_sum += total;
			r->samples++;
		}
		if (q > r->max_queue)
			r->max_queue = q;
	}
	if (now + r->period_ns <= r->end_ns)
		sim_at(sim_net_engine(r->n), now + r->period_ns, fair_sample, r, 0);
}

int exp_dcqcn_fairness(const struct sim_exp_opts *o)
{
	static const unsigned counts[] = { 2, 4, 8 };
	uint64_t stagger = o->quick ? 500000 : 2000000, settle = o->quick ? 3000000 : 10000000;
	FILE *csv = exp_open_out(o, "dcqcn-fairness.csv"), *sum = exp_open_out(o, "summary.txt"),
	     *runs = exp_open_out(o, "dcqcn-fairness-runs.csv");

	if (!csv || !sum || !runs)
		return 2;
	fprintf(runs, "flows,dcqcn,jain,total_gbps,queue_mean_bytes,queue_max_bytes,cnps,rate_cuts,pauses,drops,"
		      "converged_ns\n");
	fprintf(csv, "run,t_us,queue_bytes");
	for (unsigned i = 0; i < MAX_FAIR_FLOWS; i++)
		fprintf(csv, ",flow%u_gbps", i);
	fprintf(csv, "\n");
	fprintf(sum, "dcqcn-fairness: N long RDMA WRITEs join one 100 Gb/s bottleneck every %.1f ms, then %.1f ms more;"
		     " ECN/RED Kmin 100 KB Kmax 400 KB Pmax 0.2 at enqueue, PFC on, seed %" PRIu64 "\n",
		(double)stagger / 1e6, (double)settle / 1e6, o->seed);
	fprintf(sum, "  (Jain index, rate and queue: means over the second half after the last flow joined;"
		     " converged: the index over %u samples reaches 0.9 and stays)\n", FAIR_WINDOW);
	for (unsigned c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		/* 1: DCQCN with mlx5's factory parameters, 2: the paper's, 0: none. */
		for (int v = 0; v < 3; v++) {
			int dcqcn = (v + 1) % 3;
			unsigned k = counts[c];
			if (o->quick && k == 8)
				continue;
			struct sim_engine e;
			struct sim_link_opts l = { .rate_bps = 100 * GBPS, .delay_ns = 1000 };
			struct sim_host_opts ho = EXP_HOSTS;
			struct sim_switch_opts so = EXP_SWITCH;
			struct fair_run r;
			char label[32];
			ho.dcqcn = dcqcn != 0;
			ho.dcqcn_paper = dcqcn == 2;
			so.ecn = dcqcn != 0;
			static const char *const names[] = { "off", "mlx5", "paper" };
			sim_engine_init(&e);
			memset(&r, 0, sizeof(r));
			r.n = exp_star(&e, o->seed + k, k + 1, &l, &ho, &so);
			r.last_start_ns = (uint64_t)(k - 1) * stagger;
			r.end_ns = r.last_start_ns + settle;
			uint64_t bytes = 100 * GBPS / 8 * (r.end_ns + 1000000) / 1000000000ull;
			for (unsigned i = 0; r.n && i < k; i++)
				if (sim_add_flow(r.n, i + 1, 0, bytes, (uint64_t)i * stagger) < 0)
					r.n = NULL;
			if (!r.n) {
				fprintf(stderr, "softrnic sim: cannot build dcqcn-fairness\n");
				return 2;
			}
			snprintf(label, sizeof(label), "%u-%s", k, names[dcqcn]);
			r.flows = k;
			r.label = label;
			r.csv = csv;
			r.period_ns = o->quick ? 20000 : 50000;
			r.queue_node = sim_switch_node(r.n, 0);
			r.queue_port = (unsigned)sim_port_to_host(r.n, r.queue_node, 0);
			sim_at(&e, r.period_ns, fair_sample, &r, 0);
			sim_run_until(&e, r.end_ns);
			const struct sim_net_stats *st = sim_net_stats(r.n);
			double s = r.samples ? r.samples : 1;
			fprintf(sum, "  %u flows, DCQCN %-5s: Jain %.3f, total %.1f Gb/s, queue mean %.0f KB max %.0f KB, "
				     "%" PRIu64 " CNPs, %" PRIu64 " rate cuts, %" PRIu64 " pauses, %" PRIu64 " drops; ",
				k, names[dcqcn], r.jain_sum / s, r.rate_sum / s, r.queue_sum / s / 1000,
				(double)r.max_queue / 1000, sim_rnic_counter(r.n, "cnp_sent"),
				sim_rnic_counter(r.n, "rate_decreases"), st->pauses_sent, st->drops + st->headroom_drops);
			fprintf(runs, "%u,%d,%.4f,%.2f,%.0f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
				k, dcqcn, r.jain_sum / s, r.rate_sum / s, r.queue_sum / s, r.max_queue,
				sim_rnic_counter(r.n, "cnp_sent"), sim_rnic_counter(r.n, "rate_decreases"), st->pauses_sent,
				st->drops + st->headroom_drops, r.good_streak ? r.converged_ns : 0);
			if (r.good_streak)
				fprintf(sum, "converged %.2f ms after the last join\n", (double)r.converged_ns / 1e6);
			else
				fprintf(sum, "not converged\n");
			sim_net_destroy(r.n);
			sim_engine_free(&e);
		}
	}
	fclose(csv);
	fclose(runs);
	fclose(sum);
	return 0;
}
