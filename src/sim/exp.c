/*
 * exp.c — `softrnic sim exp NAME`: the simulator's experiments, each a
 * small topology and workload built on net.h, run to completion, and a
 * CSV plus a summary written to --out (default sim-out/NAME).
 *
 *   gbn-loss     one long RDMA WRITE across a switch; random loss on its
 *                links from 0 to 1%; goodput against loss (Go-Back-N: a
 *                lost packet costs everything sent after it)
 *   incast-pfc   16 senders write to one receiver at once through one
 *                switch, PFC off and on: drops, retransmissions, pauses,
 *                goodput and p99 FCT
 *
 * Every run is a function of the seed: the same seed gives the same
 * files, byte for byte (tests/sim checks).
 */
#include "sim/exp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/engine.h"
#include "sim/net.h"

#define GBPS 1000000000ull

struct exp_opts {
	bool quick;
	uint64_t seed;
	char out[512];
};

static const struct sim_host_opts HOSTS = { .dcqcn = false, .qp_timeout = 10, .mtu = 1024 };

static const struct sim_switch_opts SWITCH = {
	.buffer_bytes = 4u << 20, .alpha = 1.0, .pfc = true, .ecn = false,
	.kmin_bytes = 100 * 1024, .kmax_bytes = 400 * 1024, .pmax = 0.2,
};

/* Run until every flow is done or `limit_ns` of simulated time passed. */
static void run_flows(struct sim_engine *e, struct sim_net *n, uint64_t limit_ns)
{
	while (sim_flows_running(n) && sim_next_time(e) <= limit_ns && sim_step(e))
		;
}

static FILE *open_out(const struct exp_opts *o, const char *name)
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
	if (sim_route(n))
		goto fail;
	return n;
fail:
	sim_net_destroy(n);
	return NULL;
}

static int exp_gbn_loss(const struct exp_opts *o)
{
	static const double losses[] = { 0, 0.00001, 0.0001, 0.001, 0.01 };
	uint64_t bytes = o->quick ? 4u << 20 : 64u << 20;
	FILE *csv = open_out(o, "gbn-loss.csv"), *sum = open_out(o, "summary.txt");

	if (!csv || !sum)
		return 2;
	fprintf(csv, "loss,bytes,fct_ns,goodput_gbps,retransmits,timeouts,link_losses,packets_sent,max_nic_queue_bytes\n");
	fprintf(sum, "gbn-loss: one %" PRIu64 "-byte RDMA WRITE, 100 Gb/s links, 1 us each, seed %" PRIu64
		     ", Go-Back-N\n", bytes, o->seed);
	for (unsigned i = 0; i < sizeof(losses) / sizeof(losses[0]); i++) {
		struct sim_engine e;
		struct sim_link_opts l = { .rate_bps = 100 * GBPS, .delay_ns = 1000, .loss = losses[i] };
		sim_engine_init(&e);
		struct sim_net *n = star(&e, o->seed + i, 2, &l, &HOSTS, &SWITCH);
		if (!n || sim_add_flow(n, 0, 1, bytes, 0) < 0) {
			fprintf(stderr, "softrnic sim: cannot build gbn-loss\n");
			return 2;
		}
		run_flows(&e, n, 60ull * 1000000000ull);
		const struct sim_flow_result *f = sim_flow(n, 0);
		double gbps = f->fct_ns && !f->failed ? (double)bytes * 8 / (double)f->fct_ns : 0;
		fprintf(csv, "%g,%" PRIu64 ",%" PRIu64 ",%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
			losses[i], bytes, f->fct_ns, gbps, sim_rnic_counter(n, "retransmits"),
			sim_rnic_counter(n, "retransmit_timeouts"), sim_net_stats(n)->link_losses,
			sim_net_stats(n)->packets_sent, sim_net_stats(n)->max_host_queue_bytes);
		fprintf(sum, "  loss %-8g goodput %7.2f Gb/s (%5.1f%% of the link), %" PRIu64 " retransmitted packets, %"
			     PRIu64 " timeouts%s\n",
			losses[i], gbps, gbps, sim_rnic_counter(n, "retransmits"),
			sim_rnic_counter(n, "retransmit_timeouts"), f->fct_ns ? "" : " (did not finish)");
		sim_net_destroy(n);
		sim_engine_free(&e);
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

static int exp_incast_pfc(const struct exp_opts *o)
{
	unsigned senders = 16;
	uint64_t bytes = o->quick ? 256u << 10 : 2u << 20;
	FILE *csv = open_out(o, "incast-pfc.csv"), *sum = open_out(o, "summary.txt"),
	     *flows = open_out(o, "incast-pfc-flows.csv");

	if (!csv || !sum || !flows)
		return 2;
	fprintf(csv, "pfc,senders,bytes_each,done_ns,goodput_gbps,fct_p50_ns,fct_p99_ns,drops,headroom_drops,"
		     "retransmits,timeouts,pauses_sent,pauses_received,max_buffer_bytes\n");
	fprintf(flows, "pfc,flow,src,dst,bytes,start_ns,fct_ns\n");
	fprintf(sum, "incast-pfc: %u senders x %" PRIu64 " bytes to one receiver through one switch "
		     "(4 MiB shared buffer), 100 Gb/s links, 1 us each, seed %" PRIu64 "\n",
		senders, bytes, o->seed);
	for (int pfc = 0; pfc <= 1; pfc++) {
		struct sim_engine e;
		struct sim_link_opts l = { .rate_bps = 100 * GBPS, .delay_ns = 1000 };
		struct sim_switch_opts so = SWITCH;
		so.pfc = pfc;
		sim_engine_init(&e);
		struct sim_net *n = star(&e, o->seed, senders + 1, &l, &HOSTS, &so);
		for (unsigned s = 1; n && s <= senders; s++)
			if (sim_add_flow(n, s, 0, bytes, 0) < 0)
				n = NULL;
		if (!n) {
			fprintf(stderr, "softrnic sim: cannot build incast-pfc\n");
			return 2;
		}
		run_flows(&e, n, 60ull * 1000000000ull);
		uint64_t fct[64], done = 0;
		unsigned finished = 0;
		for (unsigned i = 0; i < sim_flows(n); i++) {
			const struct sim_flow_result *f = sim_flow(n, i);
			fprintf(flows, "%d,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", pfc, i, f->src, f->dst, f->bytes,
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
		fprintf(csv, "%d,%u,%" PRIu64 ",%" PRIu64 ",%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			     ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
			pfc, senders, bytes, done, gbps, p50, p99, st->drops, st->headroom_drops,
			sim_rnic_counter(n, "retransmits"), sim_rnic_counter(n, "retransmit_timeouts"), st->pauses_sent,
			st->pauses_received, st->max_buffer_bytes);
		fprintf(sum, "  PFC %-3s  %u/%u flows done, goodput %.1f Gb/s, FCT p50 %.1f us p99 %.1f us, %" PRIu64
			     " drops, %" PRIu64 " retransmitted packets, %" PRIu64 " timeouts, %" PRIu64
			     " pauses sent, buffer peak %" PRIu64 " bytes\n",
			pfc ? "on" : "off", finished, senders, gbps, (double)p50 / 1000, (double)p99 / 1000,
			st->drops + st->headroom_drops, sim_rnic_counter(n, "retransmits"),
			sim_rnic_counter(n, "retransmit_timeouts"), st->pauses_sent, st->max_buffer_bytes);
		sim_net_destroy(n);
		sim_engine_free(&e);
	}
	fclose(csv);
	fclose(flows);
	fclose(sum);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(const struct exp_opts *o);
} EXPERIMENTS[] = {
	{ "gbn-loss", exp_gbn_loss },
	{ "incast-pfc", exp_incast_pfc },
};

static int usage(void)
{
	fprintf(stderr, "usage: softrnic sim exp NAME [--quick] [--seed N] [--out DIR]\n  NAME:");
	for (unsigned i = 0; i < sizeof(EXPERIMENTS) / sizeof(EXPERIMENTS[0]); i++)
		fprintf(stderr, " %s", EXPERIMENTS[i].name);
	fprintf(stderr, "\n  (the others of docs/experiments.md are not built yet)\n");
	return 2;
}

int sim_cli(int argc, char **argv)
{
	struct exp_opts o = { .seed = 1 };
	const char *name = NULL;

	if (argc < 2 || strcmp(argv[1], "exp"))
		return usage();
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			o.quick = true;
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			o.seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			snprintf(o.out, sizeof(o.out), "%s", argv[++i]);
		else if (!name && argv[i][0] != '-')
			name = argv[i];
		else
			return usage();
	}
	if (!name)
		return usage();
	for (unsigned i = 0; i < sizeof(EXPERIMENTS) / sizeof(EXPERIMENTS[0]); i++) {
		if (strcmp(name, EXPERIMENTS[i].name))
			continue;
		if (!o.out[0])
			snprintf(o.out, sizeof(o.out), "sim-out/%s", name);
		char dir[512];
		snprintf(dir, sizeof(dir), "%s", o.out);
		for (char *p = dir + 1; *p; p++)
			if (*p == '/') {
				*p = '\0';
				mkdir(dir, 0777);
				*p = '/';
			}
		mkdir(dir, 0777);
		int rc = EXPERIMENTS[i].run(&o);
		if (rc == 0) {
			char path[600];
			snprintf(path, sizeof(path), "%s/summary.txt", o.out);
			FILE *f = fopen(path, "r");
			char line[512];
			while (f && fgets(line, sizeof(line), f))
				fputs(line, stdout);
			if (f)
				fclose(f);
		}
		return rc;
	}
	return usage();
}
