/*
 * exp.c — the simulator's experiments (`softrnic sim exp NAME`, whose
 * command line is src/tools/sim_cli.c), each a small topology and
 * workload built on net.h, run to completion, and a CSV plus a summary
 * written to the output folder (sim_exp_run).
 *
 *   gbn-loss     one long RDMA WRITE across a switch; random loss on its
 *                links from 0 to 1%; goodput against loss with Go-Back-N
 *                (a lost packet costs everything sent after it) and with
 *                selective repeat (only what was lost is resent)
 *   incast-pfc   16 senders write to one receiver at once through one
 *                switch, PFC off (Go-Back-N, then selective repeat) and
 *                on: drops, retransmissions, pauses, goodput and p99 FCT
 *   dcqcn-fairness  2, 4 and 8 long flows join one bottleneck one after
 *                another, DCQCN on and off (PFC on in both): each flow's
 *                throughput and the queue over time, Jain's fairness
 *                index, the time to converge, CNPs and pauses
 *   pfc-deadlock a ring of switches whose routes (every host reached
 *                clockwise) make a cyclic buffer dependency deadlocks
 *                under PFC; the watchdog breaks it; a leaf-spine with
 *                up/down routes never deadlocks
 *   ib-credit    the incast of incast-pfc with PFC and in InfiniBand
 *                credit mode (no pauses, no drops by construction)
 *   pfc-storm    a receiver that pauses for ever, with and without the
 *                PFC watchdog: how far the pause spreads upstream and
 *                what it does to flows that never touch that receiver
 *   hpcc-workload  the HPCC repository's own files run unchanged through
 *                `sim run` (data/hpcc: its 320-host fat-tree, the DCQCN
 *                config its run.py writes, a web-search flow file from its
 *                traffic_gen.py at 30% load), and the FCT slowdown by size
 *                as its analysis/fct_analysis.py computes it (fct.c)
 *   cc-compare   the HPCC paper's comparison: that fat-tree under web
 *                search at 30% and 50% load with DCQCN, HPCC, TIMELY and
 *                DCTCP (and HPCC-PINT, not in --quick) as HPCC's run.py
 *                configures them: FCT slowdown by size, switch queue
 *                percentiles, pauses
 *
 * Every run is a function of the seed: the same seed gives the same
 * files, byte for byte (tests/sim checks).
 */
#include "sim/exp.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/engine.h"
#include "sim/fct.h"
#include "sim/gen.h"
#include "sim/hpcc.h"
#include "sim/net.h"
#include "sim/progress.h"

#define GBPS 1000000000ull

static const struct sim_host_opts HOSTS = { .dcqcn = false, .qp_timeout = 10, .mtu = 1024 };

static const struct sim_switch_opts SWITCH = {
	.buffer_bytes = 4u << 20, .alpha = 1.0, .pfc = true, .ecn = false,
	.kmin_bytes = 100 * 1024, .kmax_bytes = 400 * 1024, .pmax = 0.2,
};

static void run_progress(void *ctx, const struct sim_net *n)
{
	sim_progress_update(ctx, sim_net_now(n), sim_net_events(n), sim_flows_running(n));
}

/* Run until every flow is done or `limit_ns` of simulated time passed,
 * with a progress line for a long run (progress.h). */
static void run_flows(struct sim_net *n, uint64_t limit_ns)
{
	struct sim_progress p;

	sim_progress_start(&p, "softrnic sim exp", limit_ns, sim_flows(n));
	sim_net_run(n, limit_ns, run_progress, &p);
	sim_progress_end(&p, sim_net_now(n), sim_net_events(n), sim_flows_running(n));
}

static FILE *open_out(const struct sim_exp_opts *o, const char *name)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", o->out, name);
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "softrnic sim: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

/* A star: `hosts` hosts on one switch, all links alike. */
static struct sim_net *star(struct sim_engine *e, uint64_t seed, unsigned hosts, const struct sim_link_opts *l,
			    const struct sim_host_opts *ho, const struct sim_switch_opts *so)
{
	struct sim_net *n = sim_net_create(e, seed, ho, so);
	int sw = n ? sim_add_switch(n) : -1;

	if (sw < 0)
		goto fail;
	for (unsigned i = 0; i < hosts; i++) {
		int h = sim_add_host(n);
		if (h < 0 || sim_link(n, sim_host_node(n, (unsigned)h), sim_switch_node(n, (unsigned)sw), l))
			goto fail;
	}
	if (sim_build(n))
		goto fail;
	return n;
fail:
	sim_net_destroy(n);
	return NULL;
}

static int exp_gbn_loss(const struct sim_exp_opts *o)
{
	static const double losses[] = { 0, 0.00001, 0.0001, 0.001, 0.01 };
	static const char *const modes[] = { "go-back-n", "selective" };
	uint64_t bytes = o->quick ? 4u << 20 : 64u << 20;
	FILE *csv = open_out(o, "gbn-loss.csv"), *sum = open_out(o, "summary.txt");

	if (!csv || !sum)
		return 2;
	fprintf(csv, "recovery,loss,bytes,fct_ns,goodput_gbps,retransmits,timeouts,probes,link_losses,packets_sent,"
		     "max_nic_queue_bytes\n");
	fprintf(sum, "gbn-loss: one %" PRIu64 "-byte RDMA WRITE, 100 Gb/s links, 1 us each, seed %" PRIu64
		     ", Go-Back-N and selective repeat\n", bytes, o->seed);
	for (unsigned m = 0; m < 2; m++) {
		for (unsigned i = 0; i < sizeof(losses) / sizeof(losses[0]); i++) {
			struct sim_engine e;
			struct sim_link_opts l = { .rate_bps = 100 * GBPS, .delay_ns = 1000, .loss = losses[i] };
			struct sim_host_opts ho = HOSTS;

			ho.selective_repeat = m == 1;
			sim_engine_init(&e);
			/* The same seed for both modes: the same links. */
			struct sim_net *n = star(&e, o->seed + i, 2, &l, &ho, &SWITCH);
			if (!n || sim_add_flow(n, 0, 1, bytes, 0) < 0) {
				fprintf(stderr, "softrnic sim: cannot build gbn-loss\n");
				return 2;
			}
			run_flows(n, 60ull * 1000000000ull);
			const struct sim_flow_result *f = sim_flow(n, 0);
			const struct sim_net_stats *st = sim_net_stats(n);
			double gbps = f->fct_ns && !f->failed ? (double)bytes * 8 / (double)f->fct_ns : 0;
			fprintf(csv, "%s,%g,%" PRIu64 ",%" PRIu64 ",%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
				     ",%" PRIu64 ",%" PRIu64 "\n",
				modes[m], losses[i], bytes, f->fct_ns, gbps, sim_rnic_counter(n, "retransmits"),
				sim_rnic_counter(n, "retransmit_timeouts"), sim_rnic_counter(n, "retransmit_probes"),
				st->link_losses, st->packets_sent, st->max_host_queue_bytes);
			fprintf(sum, "  %-9s loss %-8g goodput %7.2f Gb/s (%5.1f%% of the link), %" PRIu64
				     " retransmitted packets, %" PRIu64 " timeouts, %" PRIu64 " probes%s\n",
				modes[m], losses[i], gbps, gbps, sim_rnic_counter(n, "retransmits"),
				sim_rnic_counter(n, "retransmit_timeouts"), sim_rnic_counter(n, "retransmit_probes"),
				f->fct_ns ? "" : " (did not finish)");
			sim_net_destroy(n);
			sim_engine_free(&e);
		}
	}
	fclose(csv);
	fclose(sum);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The 16:1 incast under each flow-control mode: 0 none (lossy), 1 PFC,
 * 2 InfiniBand credits, 3 none with selective repeat in the hosts, 4 none
 * with IRN (selective repeat and a window of one bandwidth-delay product,
 * IRN_WINDOW).  Files NAME.csv, NAME-flows.csv, summary.txt. */
static const char *const MODE_NAMES[] = { "lossy", "pfc", "ib", "lossy-sr", "lossy-irn" };
/* The star's BDP in packets: 100 Gb/s x a round trip of four 1 us links
 * plus a full packet's serialization at each of them, over 1 KiB
 * packets, rounded up (IRN's BDP-FC). */
#define IRN_WINDOW 52u

static int run_incast(const struct sim_exp_opts *o, const char *name, const int *modes, unsigned nmodes)
{
	unsigned senders = 16;
	uint64_t bytes = o->quick ? 256u << 10 : 2u << 20;
	char csv_name[64], flows_name[64];
	snprintf(csv_name, sizeof(csv_name), "%s.csv", name);
	snprintf(flows_name, sizeof(flows_name), "%s-flows.csv", name);
	FILE *csv = open_out(o, csv_name), *sum = open_out(o, "summary.txt"), *flows = open_out(o, flows_name);

	if (!csv || !sum || !flows)
		return 2;
	fprintf(csv, "mode,senders,bytes_each,done_ns,goodput_gbps,fct_p50_ns,fct_p99_ns,drops,headroom_drops,"
		     "retransmits,timeouts,pauses_sent,pauses_received,max_buffer_bytes\n");
	fprintf(flows, "mode,flow,src,dst,bytes,start_ns,fct_ns\n");
	fprintf(sum, "%s: %u senders x %" PRIu64 " bytes to one receiver through one switch "
		     "(4 MiB shared buffer), 100 Gb/s links, 1 us each, seed %" PRIu64 "\n",
		name, senders, bytes, o->seed);
	for (unsigned m = 0; m < nmodes; m++) {
		const char *mode = MODE_NAMES[modes[m]];
		struct sim_engine e;
		struct sim_link_opts l = { .rate_bps = 100 * GBPS, .delay_ns = 1000 };
		struct sim_switch_opts so = SWITCH;
		struct sim_host_opts ho = HOSTS;
		so.pfc = modes[m] == 1;
		so.ib_credits = modes[m] == 2;
		ho.selective_repeat = modes[m] == 3 || modes[m] == 4;
		ho.send_window = modes[m] == 4 ? IRN_WINDOW : 0;
		sim_engine_init(&e);
		struct sim_net *n = star(&e, o->seed, senders + 1, &l, &ho, &so);
		for (unsigned s = 1; n && s <= senders; s++)
			if (sim_add_flow(n, s, 0, bytes, 0) < 0)
				n = NULL;
		if (!n) {
			fprintf(stderr, "softrnic sim: cannot build incast-pfc\n");
			return 2;
		}
		run_flows(n, 60ull * 1000000000ull);
		uint64_t fct[64], done = 0;
		unsigned finished = 0;
		for (unsigned i = 0; i < sim_flows(n); i++) {
			const struct sim_flow_result *f = sim_flow(n, i);
			fprintf(flows, "%s,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", mode, i, f->src, f->dst, f->bytes,
				f->start_ns, f->fct_ns);
			if (f->fct_ns && !f->failed) {
				fct[finished++] = f->fct_ns;
				done = f->start_ns + f->fct_ns > done ? f->start_ns + f->fct_ns : done;
			}
		}
		qsort(fct, finished, sizeof(fct[0]), cmp_u64);
		const struct sim_net_stats *st = sim_net_stats(n);
		double gbps = done ? (double)bytes * finished * 8 / (double)done : 0;
		uint64_t p50 = finished ? fct[finished / 2] : 0, p99 = finished ? fct[(finished * 99) / 100] : 0;
		fprintf(csv, "%s,%u,%" PRIu64 ",%" PRIu64 ",%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			     ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
			mode, senders, bytes, done, gbps, p50, p99, st->drops, st->headroom_drops,
			sim_rnic_counter(n, "retransmits"), sim_rnic_counter(n, "retransmit_timeouts"), st->pauses_sent,
			st->pauses_received, st->max_buffer_bytes);
		fprintf(sum, "  %-9s  %u/%u flows done, goodput %.1f Gb/s, FCT p50 %.1f us p99 %.1f us, %" PRIu64
			     " drops, %" PRIu64 " retransmitted packets, %" PRIu64 " timeouts, %" PRIu64
			     " pauses sent, %" PRIu64 " credit waits, buffer peak %" PRIu64 " bytes\n",
			mode, finished, senders, gbps, (double)p50 / 1000, (double)p99 / 1000,
			st->drops + st->headroom_drops, sim_rnic_counter(n, "retransmits"),
			sim_rnic_counter(n, "retransmit_timeouts"), st->pauses_sent, st->credit_stalls,
			st->max_buffer_bytes);
		sim_net_destroy(n);
		sim_engine_free(&e);
	}
	fclose(csv);
	fclose(flows);
	fclose(sum);
	return 0;
}

static int exp_incast_pfc(const struct sim_exp_opts *o)
{
	static const int modes[] = { 0, 3, 4, 1 };

	return run_incast(o, "incast-pfc", modes, 4);
}

static int exp_ib_credit(const struct sim_exp_opts *o)
{
	static const int modes[] = { 1, 2 };

	return run_incast(o, "ib-credit", modes, 2);
}

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

static int exp_dcqcn_fairness(const struct sim_exp_opts *o)
{
	static const unsigned counts[] = { 2, 4, 8 };
	uint64_t stagger = o->quick ? 500000 : 2000000, settle = o->quick ? 3000000 : 10000000;
	FILE *csv = open_out(o, "dcqcn-fairness.csv"), *sum = open_out(o, "summary.txt"),
	     *runs = open_out(o, "dcqcn-fairness-runs.csv");

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
			struct sim_host_opts ho = HOSTS;
			struct sim_switch_opts so = SWITCH;
			struct fair_run r;
			char label[32];
			ho.dcqcn = dcqcn != 0;
			ho.dcqcn_paper = dcqcn == 2;
			so.ecn = dcqcn != 0;
			static const char *const names[] = { "off", "mlx5", "paper" };
			sim_engine_init(&e);
			memset(&r, 0, sizeof(r));
			r.n = star(&e, o->seed + k, k + 1, &l, &ho, &so);
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

/* pfc-storm: hosts 0-3 on switch A, hosts 4 and 5 on switch B, A and B
 * linked.  Hosts 0 and 1 write to host 5, hosts 2 and 3 to host 4.  From
 * storm_ns on, host 5's NIC pauses its port for ever.  Without the
 * watchdog the pause spreads upstream (B's port to 5 fills, B pauses A,
 * A pauses every sender) and stops the innocent flows to host 4 too; with
 * it, B's queue to host 5 is declared stormed and dropped, and the rest
 * flows again. */
static int exp_pfc_storm(const struct sim_exp_opts *o)
{
	uint64_t storm_ns = o->quick ? 500000 : 2000000, end_ns = o->quick ? 8000000 : 30000000;
	uint64_t detect = o->quick ? 1000000 : 5000000;
	FILE *csv = open_out(o, "pfc-storm.csv"), *sum = open_out(o, "summary.txt");

	if (!csv || !sum)
		return 2;
	fprintf(csv, "watchdog,innocent_gbps_before,innocent_gbps_after,storm_port_paused,a_to_b_paused,"
		     "sender_nic_paused_mean,storms_detected,watchdog_drops,pauses_sent\n");
	fprintf(sum, "pfc-storm: 4 senders on switch A, 2 receivers on switch B, 100 Gb/s, 1 us links; "
		     "receiver 5 pauses for ever from %.1f ms; watchdog detection and restoration %.1f ms "
		     "(SONiC's default 200 ms, scaled to the run); %.1f ms simulated, seed %" PRIu64 "\n",
		(double)storm_ns / 1e6, (double)detect / 1e6, (double)end_ns / 1e6, o->seed);
	fprintf(sum, "  (paused: the share of the time after the storm began that the egress stood paused)\n");
	for (int wd = 0; wd <= 1; wd++) {
		struct sim_engine e;
		struct sim_link_opts l = { .rate_bps = 100 * GBPS, .delay_ns = 1000 };
		struct sim_switch_opts so = SWITCH;
		so.wd_detect_ns = wd ? detect : 0;
		so.wd_restore_ns = detect;
		sim_engine_init(&e);
		struct sim_net *n = sim_net_create(&e, o->seed, &HOSTS, &so);
		int a = n ? sim_add_switch(n) : -1, b = n ? sim_add_switch(n) : -1;
		bool ok = a >= 0 && b >= 0;
		for (unsigned h = 0; ok && h < 6; h++) {
			int id = sim_add_host(n);
			ok = id >= 0 && !sim_link(n, sim_host_node(n, (unsigned)id), sim_switch_node(n, h < 4 ? (unsigned)a : (unsigned)b), &l);
		}
		ok = ok && !sim_link(n, sim_switch_node(n, (unsigned)a), sim_switch_node(n, (unsigned)b), &l) && !sim_build(n);
		uint64_t bytes = 100 * GBPS / 8 * (end_ns / 1000000 + 1) / 1000;
		for (unsigned s = 0; ok && s < 4; s++)
			ok = sim_add_flow(n, s, s < 2 ? 5 : 4, bytes, 0) >= 0;
		ok = ok && !sim_host_storm(n, 5, storm_ns);
		if (!ok) {
			fprintf(stderr, "softrnic sim: cannot build pfc-storm\n");
			sim_net_destroy(n);
			return 2;
		}
		sim_run_until(&e, storm_ns);
		uint64_t before = sim_host_delivered(n, 2) + sim_host_delivered(n, 3);
		uint64_t p_storm0 = sim_port_paused_ns(n, sim_switch_node(n, (unsigned)b),
						       (unsigned)sim_port_to_host(n, sim_switch_node(n, (unsigned)b), 5));
		unsigned a_node = sim_switch_node(n, (unsigned)a);
		unsigned a_to_b = (unsigned)sim_port_to_node(n, a_node, sim_switch_node(n, (unsigned)b));
		uint64_t p_ab0 = sim_port_paused_ns(n, a_node, a_to_b), p_nic0 = 0;
		for (unsigned s = 0; s < 4; s++)
			p_nic0 += sim_port_paused_ns(n, sim_host_node(n, s), 0);
		sim_run_until(&e, end_ns);
		uint64_t after = sim_host_delivered(n, 2) + sim_host_delivered(n, 3) - before;
		double span = (double)(end_ns - storm_ns);
		double storm_port = (double)(sim_port_paused_ns(n, sim_switch_node(n, (unsigned)b),
					 (unsigned)sim_port_to_host(n, sim_switch_node(n, (unsigned)b), 5)) - p_storm0) / span;
		double ab = (double)(sim_port_paused_ns(n, a_node, a_to_b) - p_ab0) / span, nic = 0;
		for (unsigned s = 0; s < 4; s++)
			nic += (double)sim_port_paused_ns(n, sim_host_node(n, s), 0);
		nic = (nic - (double)p_nic0) / 4 / span;
		const struct sim_net_stats *st = sim_net_stats(n);
		double g_before = (double)before * 8 / (double)storm_ns, g_after = (double)after * 8 / span;
		fprintf(csv, "%d,%.2f,%.2f,%.3f,%.3f,%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", wd, g_before, g_after,
			storm_port, ab, nic, st->storms_detected, st->watchdog_drops, st->pauses_sent);
		fprintf(sum, "  watchdog %-3s innocent flows %.1f Gb/s before the storm, %.1f Gb/s after; paused: "
			     "B->storming host %.0f%%, A->B %.0f%%, senders' NICs %.0f%% (mean); %" PRIu64
			     " storms detected, %" PRIu64 " packets dropped by the watchdog\n",
			wd ? "on" : "off", g_before, g_after, 100 * storm_port, 100 * ab, 100 * nic, st->storms_detected,
			st->watchdog_drops);
		sim_net_destroy(n);
		sim_engine_free(&e);
	}
	fclose(csv);
	fclose(sum);
	return 0;
}

/* pfc-deadlock: three switches in a ring, one host on each.  Host i
 * writes to host i+1 (one hop) and to host i+2, routed the long way
 * round (two hops clockwise, static routes) so that every ring link
 * carries three flows and each switch's buffer for the next waits on the
 * next switch's: a cyclic buffer dependency.  Once every ring port is
 * paused, nothing drains and the pauses are refreshed for ever: a
 * deadlock, detected here as a millisecond in which no byte arrives
 * anywhere while every ring egress stands paused.  The watchdog breaks
 * it.  The same host pairs on a leaf-spine with up/down (shortest) routes
 * have no cycle and never stop. */
struct dl_result {
	uint64_t formed_ns;             /* the first millisecond with nothing delivered */
	uint64_t stalled_ms, progress_after;
	bool cycle_paused;              /* in a stall, every ring egress stood paused */
	bool deadlocked_at_end;
};

static uint64_t delivered_all(const struct sim_net *n, unsigned hosts)
{
	uint64_t d = 0;

	for (unsigned h = 0; h < hosts; h++)
		d += sim_host_delivered(n, h);
	return d;
}

static void run_deadlock(struct sim_engine *e, struct sim_net *n, unsigned hosts, uint64_t end_ns,
			 const unsigned (*ring)[2], unsigned nring, struct dl_result *r)
{
	uint64_t last = delivered_all(n, hosts);

	memset(r, 0, sizeof(*r));
	for (uint64_t t = 1000000; t <= end_ns; t += 1000000) {
		sim_run_until(e, t);
		uint64_t d = delivered_all(n, hosts);
		bool all_paused = nring > 0;
		for (unsigned i = 0; i < nring; i++)
			if (!sim_port_is_paused(n, ring[i][0], ring[i][1]))
				all_paused = false;
		bool stalled = d == last && sim_flows_running(n);
		if (stalled) {
			r->stalled_ms++;
			if (!r->formed_ns)
				r->formed_ns = t;
			r->cycle_paused |= all_paused;
		} else if (r->formed_ns) {
			r->progress_after += d - last;
		}
		r->deadlocked_at_end = stalled;
		last = d;
	}
}

static int exp_pfc_deadlock(const struct sim_exp_opts *o)
{
	uint64_t end_ns = o->quick ? 20000000 : 100000000, detect = o->quick ? 1000000 : 2000000;
	FILE *csv = open_out(o, "pfc-deadlock.csv"), *sum = open_out(o, "summary.txt");
	struct sim_switch_opts so = SWITCH;
	struct sim_link_opts l = { .rate_bps = 100 * GBPS, .delay_ns = 1000 };

	if (!csv || !sum)
		return 2;
	/* A small buffer and a low threshold, as on a shallow-buffer switch. */
	so.buffer_bytes = 1u << 20;
	so.alpha = 0.125;
	fprintf(csv, "topology,watchdog,first_stall_ns,stalled_ms,cycle_paused,stalled_at_end,bytes_after_first_stall,"
		     "storms_detected,watchdog_drops,pauses_sent,flows_done,flows_failed,flows\n");
	fprintf(sum, "pfc-deadlock: a 3-switch ring with routes the long way round, against a 3-leaf, "
		     "2-spine leaf-spine with up/down routes; the same 6 flows; 1 MiB buffer, alpha 1/8; "
		     "watchdog %.0f ms; %.0f ms simulated, seed %" PRIu64 "\n",
		(double)detect / 1e6, (double)end_ns / 1e6, o->seed);
	for (int topo = 0; topo <= 1; topo++) {
		for (int wd = 0; wd <= 1; wd++) {
			if (topo == 1 && wd == 1)
				continue;               /* nothing for a watchdog to do */
			struct sim_engine e;
			struct sim_switch_opts s2 = so;
			unsigned ring[3][2], nring = 0;
			s2.wd_detect_ns = wd ? detect : 0;
			s2.wd_restore_ns = detect;
			sim_engine_init(&e);
			/* The transport's timeout (16.8 ms) longer than the
			 * watchdog's detection, as on hardware (SONiC's 200 ms
			 * against retries that run for seconds): a deadlock the
			 * watchdog breaks costs the flows a timeout, not their
			 * life. */
			struct sim_host_opts ho = HOSTS;
			ho.qp_timeout = 12;
			struct sim_net *n = sim_net_create(&e, o->seed, &ho, &s2);
			bool ok = n != NULL;
			if (topo == 0) {
				/* Switch i: host i, and links to switches i+1 and
				 * i-1 (which port is which depends on the order
				 * the links were made: asked, not assumed). */
				for (unsigned i = 0; ok && i < 3; i++)
					ok = sim_add_switch(n) >= 0 && sim_add_host(n) >= 0;
				for (unsigned i = 0; ok && i < 3; i++)
					ok = !sim_link(n, sim_host_node(n, i), sim_switch_node(n, i), &l);
				for (unsigned i = 0; ok && i < 3; i++)
					ok = !sim_link(n, sim_switch_node(n, i), sim_switch_node(n, (i + 1) % 3), &l);
				ok = ok && !sim_build(n);
				/* Every host is reached clockwise: out of the port
				 * towards switch i+1, except at its own. */
				for (unsigned i = 0; ok && i < 3; i++) {
					int next = sim_port_to_node(n, sim_switch_node(n, i), sim_switch_node(n, (i + 1) % 3));
					ok = next >= 0;
					for (unsigned h = 0; ok && h < 3; h++)
						if (h != i)
							ok = !sim_set_route(n, sim_switch_node(n, i), h, (unsigned)next);
					ring[i][0] = sim_switch_node(n, i);
					ring[i][1] = (unsigned)next;
				}
				nring = 3;
			} else {
				int leaf[3], spine[2];
				for (unsigned i = 0; ok && i < 3; i++)
					ok = (leaf[i] = sim_add_switch(n)) >= 0 && sim_add_host(n) >= 0;
				for (unsigned i = 0; ok && i < 2; i++)
					ok = (spine[i] = sim_add_switch(n)) >= 0;
				for (unsigned i = 0; ok && i < 3; i++)
					ok = !sim_link(n, sim_host_node(n, i), sim_switch_node(n, (unsigned)leaf[i]), &l);
				for (unsigned i = 0; ok && i < 3; i++)
					for (unsigned j = 0; ok && j < 2; j++)
						ok = !sim_link(n, sim_switch_node(n, (unsigned)leaf[i]),
							       sim_switch_node(n, (unsigned)spine[j]), &l);
				ok = ok && !sim_build(n);
			}
			uint64_t bytes = o->quick ? 4u << 20 : 16u << 20;
			/* Two flows from each host to the host two switches on:
			 * on the ring every packet in a switch's buffer from
			 * the previous switch waits for the next ring link
			 * (with one-hop flows beside them, whose packets leave
			 * to the local host, the buffers drain and this ring
			 * does not lock up). */
			for (unsigned i = 0; ok && i < 3; i++)
				ok = sim_add_flow(n, i, (i + 2) % 3, bytes, 0) >= 0 &&
				     sim_add_flow(n, i, (i + 2) % 3, bytes, 0) >= 0;
			if (!ok) {
				fprintf(stderr, "softrnic sim: cannot build pfc-deadlock\n");
				sim_net_destroy(n);
				return 2;
			}
			struct dl_result r;
			run_deadlock(&e, n, 3, end_ns, (const unsigned (*)[2])ring, nring, &r);
			const struct sim_net_stats *st = sim_net_stats(n);
			unsigned done = 0, failed = 0;
			for (unsigned i = 0; i < sim_flows(n); i++) {
				const struct sim_flow_result *f = sim_flow(n, i);
				done += f->fct_ns && !f->failed;
				failed += f->failed;
			}
			const char *tname = topo ? "leaf-spine" : "ring";
			fprintf(csv, "%s,%d,%" PRIu64 ",%" PRIu64 ",%d,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%u,%u,%u\n",
				tname, wd, r.formed_ns, r.stalled_ms, r.cycle_paused, r.deadlocked_at_end, r.progress_after,
				st->storms_detected, st->watchdog_drops, st->pauses_sent, done, failed, sim_flows(n));
			fprintf(sum, "  %-10s watchdog %-3s ", tname, wd ? "on" : "off");
			if (r.formed_ns)
				fprintf(sum, "stopped at %.0f ms%s; %" PRIu64 " of %.0f ms without a byte delivered; %s; "
					     "%.1f MB delivered after the first stop",
					(double)r.formed_ns / 1e6,
					r.cycle_paused ? " with every ring port paused (deadlock)" : "", r.stalled_ms,
					(double)end_ns / 1e6, r.deadlocked_at_end ? "still stopped at the end" : "moving at the end",
					(double)r.progress_after / 1e6);
			else
				fprintf(sum, "never stopped");
			fprintf(sum, "; %" PRIu64 " storms detected, %" PRIu64 " packets dropped by the watchdog; "
				     "%u/%u flows done, %u failed (retries exhausted)\n",
				st->storms_detected, st->watchdog_drops, done, sim_flows(n), failed);
			sim_net_destroy(n);
			sim_engine_free(&e);
		}
	}
	fclose(csv);
	fclose(sum);
	return 0;
}

/* The files of data/hpcc/SOURCES.md: HPCC's fat.txt, the config its run.py
 * writes for `--cc dcqcn --bw 100 --topo fat`, and a flow file of its
 * traffic_gen.py (web search, 320 hosts, 30% load, 100 Gb/s, 50 ms). */
#define HPCC_CONFIG "/hpcc/mix/config_fat_websearch_l30_t50ms_dcqcn.txt"
#define HPCC_QUICK_FLOWS 1000   /* the file's first ~1.4 ms of arrivals */

static int exp_hpcc_workload(const struct sim_exp_opts *o)
{
	char config[600];
	struct sim_run_opts ro = { .seed = o->seed, .flow_limit = o->quick ? HPCC_QUICK_FLOWS : 0 };

	if (o->config[0])
		snprintf(config, sizeof(config), "%s", o->config);
	else
		snprintf(config, sizeof(config), "%s%s", SOFTRNIC_DATA_DIR, HPCC_CONFIG);
	int rc = sim_run_hpcc(config, o->out, &ro);
	if (rc)
		return rc;

	struct sim_fct_bucket b[100];
	unsigned nb, flows;
	rc = sim_fct_analyze(ro.fct_path, 5, SIM_FCT_TIME_LIMIT_NS, b, &nb, &flows);
	if (rc) {
		fprintf(stderr, "softrnic sim: %s: %s\n", ro.fct_path, strerror(rc));
		return 2;
	}
	FILE *csv = open_out(o, "fct_analysis.csv");
	char path[600];
	snprintf(path, sizeof(path), "%s/summary.txt", o->out);
	FILE *sum = fopen(path, "a");
	if (!csv || !sum) {
		if (csv)
			fclose(csv);
		if (sum)
			fclose(sum);
		return 2;
	}
	fprintf(csv, "percentile,size,flows,p50,p95,p99\n");
	fprintf(sum, "  FCT slowdown by size as HPCC's analysis/fct_analysis.py computes it (%u flows in 5%% buckets;\n"
		     "  each bucket's largest size, then p50 p95 p99):\n", flows);
	for (unsigned i = 0; i < nb; i++) {
		fprintf(csv, "%.2f,%" PRIu64 ",%u,%.3f,%.3f,%.3f\n", b[i].percentile / 100.0, b[i].size, b[i].flows,
			b[i].p50, b[i].p95, b[i].p99);
		fprintf(sum, "    %.2f %9" PRIu64 "  %6.2f %6.2f %6.2f\n", b[i].percentile / 100.0, b[i].size, b[i].p50,
			b[i].p95, b[i].p99);
	}
	fclose(csv);
	fclose(sum);
	return 0;
}

/* cc-compare: the HPCC paper's comparison (Li et al., SIGCOMM'19, §5.2,
 * Figure 11) on its own fat-tree: data/hpcc's 320 hosts under web search
 * at 30% load (the HPCC repository's flow file) and at 50% (a draw of
 * `sim gen` from the same distribution and the seed), each under DCQCN,
 * HPCC, TIMELY and DCTCP (and HPCC-PINT but in --quick) configured as
 * the HPCC repository's run.py configures them at 100 Gb/s (the keys
 * below over its DCQCN config). */
struct cc_setting {
	const char *name;       /* run.py's --cc, as in its file names */
	const char *label;
	const char *keys;       /* replace the DCQCN config's lines */
};

static const struct cc_setting CC_SETTINGS[] = {
	{ "dcqcn", "DCQCN", "" },
	{ "hp95", "HPCC",
	  "CC_MODE 3\nRATE_AI 40Mb/s\nRATE_HAI 40Mb/s\nHAS_WIN 1\nVAR_WIN 1\nFAST_REACT 1\nINT_MULTI 4\n"
	  "ACK_HIGH_PRIO 0\n" },
	{ "timely", "TIMELY", "CC_MODE 7\nRATE_AI 100Mb/s\nRATE_HAI 500Mb/s\n" },
	{ "dctcp", "DCTCP",
	  "CC_MODE 8\nRATE_AI 10Mb/s\nRATE_HAI 10Mb/s\nDCTCP_RATE_AI 615Mb/s\nEWMA_GAIN 0.0625\nHAS_WIN 1\n"
	  "VAR_WIN 1\nACK_HIGH_PRIO 0\nKMAX_MAP 2 100000000000 300 400000000000 1200\n"
	  "KMIN_MAP 2 100000000000 300 400000000000 1200\nPMAX_MAP 2 100000000000 1.00 400000000000 1.00\n" },
	/* Not in the short form: HPCC's own comparison is the four above. */
	{ "hpccPint95", "HPCC-PINT",
	  "CC_MODE 10\nRATE_AI 40Mb/s\nRATE_HAI 40Mb/s\nHAS_WIN 1\nVAR_WIN 1\nFAST_REACT 1\nINT_MULTI 4\n"
	  "ACK_HIGH_PRIO 0\nPINT_LOG_BASE 1.01\nPINT_PROB 1.0\n" },
};
#define CC_QUICK_SETTINGS 4     /* the short form runs the first four */

#define CC_QUICK_FLOWS 600      /* the 30% file's first ~0.8 ms of arrivals */
#define CC_QUEUE_SAMPLE_NS 10000

/* The value `keys` gives `key` ("" if none), into val. */
static bool override_of(const char *keys, const char *key, char *val, size_t cap)
{
	size_t klen = strlen(key);

	for (const char *l = keys; *l;) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);
		if (len > klen && !strncmp(l, key, klen) && l[klen] == ' ') {
			snprintf(val, cap, "%.*s", (int)(len - klen - 1), l + klen + 1);
			return true;
		}
		l += len + (end ? 1 : 0);
	}
	return false;
}

/* Writes `path`: the DCQCN config with the setting's keys and our files. */
static int write_cc_config(const char *path, const struct cc_setting *cc, const char *flows, const char *fct)
{
	char base[600], line[512], key[64], val[256];
	snprintf(base, sizeof(base), "%s%s", SOFTRNIC_DATA_DIR, HPCC_CONFIG);
	FILE *in = fopen(base, "r"), *out = fopen(path, "w");

	if (!in || !out) {
		fprintf(stderr, "softrnic sim: cannot read %s or write %s\n", base, path);
		if (in)
			fclose(in);
		if (out)
			fclose(out);
		return 2;
	}
	while (fgets(line, sizeof(line), in)) {
		if (sscanf(line, "%63s", key) != 1) {
			fputs(line, out);
			continue;
		}
		if (!strcmp(key, "TOPOLOGY_FILE"))
			fprintf(out, "TOPOLOGY_FILE %s/hpcc/mix/fat.txt\n", SOFTRNIC_DATA_DIR);
		else if (!strcmp(key, "FLOW_FILE"))
			fprintf(out, "FLOW_FILE %s\n", flows);
		else if (!strcmp(key, "FCT_OUTPUT_FILE"))
			fprintf(out, "FCT_OUTPUT_FILE %s\n", fct);
		else if (override_of(cc->keys, key, val, sizeof(val)))
			fprintf(out, "%s %s\n", key, val);
		else
			fputs(line, out);
	}
	fclose(in);
	return fclose(out) ? 2 : 0;
}

static int exp_cc_compare(const struct sim_exp_opts *o)
{
	static const unsigned loads[] = { 30, 50 };
	unsigned nloads = o->quick ? 1 : 2, limit = o->flows ? o->flows : o->quick ? CC_QUICK_FLOWS : 0;
	char flows[2][700], path[900], dir[800];
	int rc = 0;

	snprintf(flows[0], sizeof(flows[0]), "%s/hpcc/mix/websearch_l30_t50ms.txt", SOFTRNIC_DATA_DIR);
	snprintf(flows[1], sizeof(flows[1]), "%s/websearch_l50_t50ms.txt", o->out);
	if (nloads > 1) {
		char cdf[600];
		snprintf(cdf, sizeof(cdf), "%s/cdf/websearch.txt", SOFTRNIC_DATA_DIR);
		FILE *f = fopen(flows[1], "w");
		if (!f)
			return 2;
		rc = sim_gen_write(f, cdf, 320, 0.5, 100e9, 0.05, o->seed);
		if (fclose(f) || rc)
			return 2;
	}
	FILE *fct_csv = open_out(o, "cc-compare.csv"), *runs = open_out(o, "runs.csv");
	snprintf(path, sizeof(path), "%s/summary.txt", o->out);
	FILE *sum = fopen(path, "w");
	if (!fct_csv || !runs || !sum) {
		rc = 2;
		goto out;
	}
	fprintf(fct_csv, "load,cc,percentile,size,flows,p50,p95,p99\n");
	fprintf(runs, "load,cc,flows,done,failed,drops,pauses,ecn_marks,cnps,queue_samples,queue_p50,queue_p95,"
		      "queue_p99,queue_max");
	static const char *const classes[] = { "lt10k", "10k_100k", "100k_1m", "1m_10m", "ge10m" };
	for (unsigned c = 0; c < 5; c++)
		fprintf(runs, ",%s_flows,%s_p50,%s_p95,%s_p99", classes[c], classes[c], classes[c], classes[c]);
	fprintf(runs, "\n");
	fprintf(sum, "cc-compare: HPCC's 320-host fat-tree under web search, seed %" PRIu64 "%s", o->seed,
		limit ? "" : "\n");
	if (limit)
		fprintf(sum, ", the first %u flows of each flow file\n", limit);
	for (unsigned li = 0; li < nloads; li++) {
		fprintf(sum, "  load %u%%: FCT slowdown p95 / p99 by size; switch queues p99 / max (KiB); pauses\n"
			     "    %-9s %13s %13s %13s %13s %13s %15s %8s\n", loads[li], "", "<10KB", "10-100KB",
			"100KB-1MB", "1-10MB", ">=10MB", "queue p99/max", "pauses");
		unsigned nccs = o->quick ? CC_QUICK_SETTINGS : sizeof(CC_SETTINGS) / sizeof(CC_SETTINGS[0]);
		for (unsigned ci = 0; ci < nccs; ci++) {
			const struct cc_setting *cc = &CC_SETTINGS[ci];
			char config[900], fct[900];
			snprintf(dir, sizeof(dir), "%s/l%u_%s", o->out, loads[li], cc->name);
			sim_make_dirs(dir);
			snprintf(config, sizeof(config), "%s/config.txt", dir);
			snprintf(fct, sizeof(fct), "%s/fct.txt", dir);
			if ((rc = write_cc_config(config, cc, flows[li], fct)))
				goto out;
			struct sim_run_opts ro = { .seed = o->seed, .flow_limit = limit,
						   .queue_sample_ns = CC_QUEUE_SAMPLE_NS };
			if ((rc = sim_run_hpcc(config, dir, &ro)))
				goto out;
			const struct sim_run_result *r = &ro.result;
			struct sim_fct_bucket b[100];
			unsigned nb, counted;
			if ((rc = sim_fct_analyze(ro.fct_path, 5, SIM_FCT_TIME_LIMIT_NS, b, &nb, &counted))) {
				fprintf(stderr, "softrnic sim: %s: %s\n", ro.fct_path, strerror(rc));
				rc = 2;
				goto out;
			}
			for (unsigned i = 0; i < nb; i++)
				fprintf(fct_csv, "%u,%s,%.2f,%" PRIu64 ",%u,%.3f,%.3f,%.3f\n", loads[li], cc->label,
					b[i].percentile / 100.0, b[i].size, b[i].flows, b[i].p50, b[i].p95, b[i].p99);
			fprintf(runs, "%u,%s,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
				      ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
				loads[li], cc->label, r->flows, r->done, r->failed, r->drops, r->pauses, r->ecn_marks, r->cnps,
				r->queue_samples, r->queue_p50, r->queue_p95, r->queue_p99, r->queue_max);
			fprintf(sum, "    %-9s", cc->label);
			for (unsigned c = 0; c < 5; c++) {
				const struct sim_size_class *k = &r->by_size[c];
				fprintf(runs, ",%u,%.3f,%.3f,%.3f", k->flows, k->p50, k->p95, k->p99);
				if (k->flows)
					fprintf(sum, " %6.2f/%-6.2f", k->p95, k->p99);
				else
					fprintf(sum, " %13s", "-");
			}
			fprintf(runs, "\n");
			fprintf(sum, " %7" PRIu64 "/%-7" PRIu64 " %8" PRIu64 "%s\n", r->queue_p99 / 1024,
				(r->queue_max + 1023) / 1024, r->pauses,
				r->done + r->failed < r->flows || r->failed ? "  (not every flow done)" : "");
		}
	}
out:
	if (fct_csv)
		fclose(fct_csv);
	if (runs)
		fclose(runs);
	if (sum)
		fclose(sum);
	return rc;
}

static const struct {
	const char *name;
	int (*run)(const struct sim_exp_opts *o);
} EXPERIMENTS[] = {
	{ "gbn-loss", exp_gbn_loss },
	{ "incast-pfc", exp_incast_pfc },
	{ "dcqcn-fairness", exp_dcqcn_fairness },
	{ "pfc-storm", exp_pfc_storm },
	{ "ib-credit", exp_ib_credit },
	{ "pfc-deadlock", exp_pfc_deadlock },
	{ "hpcc-workload", exp_hpcc_workload },
	{ "cc-compare", exp_cc_compare },
};

void sim_make_dirs(const char *path)
{
	char dir[PATH_MAX];

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return;         /* too long: the open that follows says so */
	for (char *p = dir + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(dir, 0777);
			*p = '/';
		}
	mkdir(dir, 0777);
}

unsigned sim_exp_count(void)
{
	return sizeof(EXPERIMENTS) / sizeof(EXPERIMENTS[0]);
}

const char *sim_exp_name(unsigned i)
{
	return i < sim_exp_count() ? EXPERIMENTS[i].name : NULL;
}

int sim_exp_run(const char *name, const struct sim_exp_opts *o)
{
	for (unsigned i = 0; i < sim_exp_count(); i++) {
		if (strcmp(name, EXPERIMENTS[i].name))
			continue;
		sim_make_dirs(o->out);
		return EXPERIMENTS[i].run(o);
	}
	fprintf(stderr, "softrnic sim exp: no experiment %s\n", name);
	return 2;
}
