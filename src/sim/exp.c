/*
 * exp.c — the simulator's experiments (`softrnic sim exp NAME`, whose
 * command line is src/tools/sim_cli.c), each a small topology and
 * workload built on net.h, run to completion, and a CSV plus a summary
 * written to the output folder (sim_exp_run).  This file holds their
 * table and what they share (exp_int.h: the default hosts and switch, a
 * star, a run with progress, an output file); each family of experiments
 * is in its own file, named below.
 *
 *   gbn-loss     (exp_loss.c) one long RDMA WRITE across a switch; random loss on its
 *                links from 0 to 1%; goodput against loss with Go-Back-N
 *                (a lost packet costs everything sent after it) and with
 *                selective repeat (only what was lost is resent)
 *   incast-pfc   (exp_loss.c) 16 senders write to one receiver at once through one
 *                switch, PFC off (Go-Back-N, then selective repeat) and
 *                on: drops, retransmissions, pauses, goodput and p99 FCT
 *   dcqcn-fairness  (exp_dcqcn.c) 2, 4 and 8 long flows join one bottleneck one after
 *                another, DCQCN on and off (PFC on in both): each flow's
 *                throughput and the queue over time, Jain's fairness
 *                index, the time to converge, CNPs and pauses
 *   pfc-deadlock (exp_pfc.c) a ring of switches whose routes (every host reached
 *                clockwise) make a cyclic buffer dependency deadlocks
 *                under PFC; the watchdog breaks it; a leaf-spine with
 *                up/down routes never deadlocks
 *   ib-credit    (exp_loss.c) the incast of incast-pfc with PFC and in InfiniBand
 *                credit mode (no pauses, no drops by construction)
 *   pfc-storm    (exp_pfc.c) a receiver that pauses for ever, with and without the
 *                PFC watchdog: how far the pause spreads upstream and
 *                what it does to flows that never touch that receiver
 *   hpcc-workload  (exp_hpcc.c) the HPCC repository's own files run unchanged through
 *                `sim run` (data/hpcc: its 320-host fat-tree, the DCQCN
 *                config its run.py writes, a web-search flow file from its
 *                traffic_gen.py at 30% load), and the FCT slowdown by size
 *                as its analysis/fct_analysis.py computes it (fct.c)
 *   cc-compare   (exp_hpcc.c) the HPCC paper's comparison: that fat-tree under web
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
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/engine.h"
#include "sim/exp_int.h"
#include "sim/net.h"
#include "sim/progress.h"

const struct sim_host_opts EXP_HOSTS = { .dcqcn = false, .qp_timeout = 10, .mtu = 1024 };

const struct sim_switch_opts EXP_SWITCH = {
	.buffer_bytes = 4u << 20, .alpha = 1.0, .pfc = true, .ecn = false,
	.kmin_bytes = 100 * 1024, .kmax_bytes = 400 * 1024, .pmax = 0.2,
};

static void run_progress(void *ctx, const struct sim_net *n)
{
	sim_progress_update(ctx, sim_net_now(n), sim_net_events(n), sim_flows_running(n));
}

/* Run until every flow is done or `limit_ns` of simulated time passed,
 * with a progress line for a long run (progress.h). */
void exp_run_flows(struct sim_net *n, uint64_t limit_ns)
{
	struct sim_progress p;

	sim_progress_start(&p, "softrnic sim exp", limit_ns, sim_flows(n));
	sim_net_run(n, limit_ns, run_progress, &p);
	sim_progress_end(&p, sim_net_now(n), sim_net_events(n), sim_flows_running(n));
}

FILE *exp_open_out(const struct sim_exp_opts *o, const char *name)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", o->out, name);
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "softrnic sim: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

/* A star: `hosts` hosts on one switch, all links alike. */
struct sim_net *exp_star(struct sim_engine *e, uint64_t seed, unsigned hosts, const struct sim_link_opts *l,
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
