/*
 * exp_int.h — what the experiments of `softrnic sim exp` (exp.h) share,
 * internal to src/sim: the hosts and switches they start from, a star
 * topology, a run to completion with a progress line, an output file
 * opened in the output folder, and each experiment's entry point for
 * exp.c's table.  The experiments, by family:
 *   exp_loss.c   gbn-loss, incast-pfc, ib-credit: loss, and the lossless
 *                remedies, on one switch
 *   exp_dcqcn.c  dcqcn-fairness
 *   exp_pfc.c    pfc-storm, pfc-deadlock: what PFC's pauses do, and the
 *                watchdog
 *   exp_hpcc.c   hpcc-workload, cc-compare: runs of HPCC's own files
 *                through `sim run` (hpcc.h)
 */
#ifndef SOFTRNIC_SIM_EXP_INT_H
#define SOFTRNIC_SIM_EXP_INT_H

#include <stdint.h>
#include <stdio.h>

#include "sim/engine.h"
#include "sim/exp.h"
#include "sim/net.h"

#define GBPS 1000000000ull

/* Hosts without DCQCN, 1 KiB MTU; a 4 MiB shared-buffer switch with PFC,
 * ECN off (its RED thresholds set for those that turn it on). */
extern const struct sim_host_opts EXP_HOSTS;
extern const struct sim_switch_opts EXP_SWITCH;

/* Run until every flow is done or `limit_ns` of simulated time passed,
 * with a progress line for a long run (progress.h). */
void exp_run_flows(struct sim_net *n, uint64_t limit_ns);
/* NAME in the output folder, opened for writing; NULL after a message. */
FILE *exp_open_out(const struct sim_exp_opts *o, const char *name);
/* A star: `hosts` hosts on one switch, all links alike; NULL on failure. */
struct sim_net *exp_star(struct sim_engine *e, uint64_t seed, unsigned hosts, const struct sim_link_opts *l,
		     const struct sim_host_opts *ho, const struct sim_switch_opts *so);

/* The experiments: 0, or 2 after a one-line message. */
int exp_gbn_loss(const struct sim_exp_opts *o);
int exp_incast_pfc(const struct sim_exp_opts *o);
int exp_ib_credit(const struct sim_exp_opts *o);
int exp_dcqcn_fairness(const struct sim_exp_opts *o);
int exp_pfc_storm(const struct sim_exp_opts *o);
int exp_pfc_deadlock(const struct sim_exp_opts *o);
int exp_hpcc_workload(const struct sim_exp_opts *o);
int exp_cc_compare(const struct sim_exp_opts *o);

#endif
