/*
 * hpcc_int.h — the parts of `softrnic sim run CONFIG` (sim_run_hpcc,
 * hpcc.h) shared by its files, internal to src/sim:
 *   hpcc.c         the run, step by step, and the file formats it reads
 *   hpcc_config.c  config.txt into struct hpcc_config
 *   hpcc_fabric.c  the topology file, the hosts' and switches' options,
 *                  the fabric built, ROUTE_FILE's routes, the flow file
 *   hpcc_sample.c  the samplers during the run (queues.csv,
 *                  throughput.csv, the switch queues' histogram)
 *   hpcc_report.c  the outputs: the FCT file, flows.csv, pfc.csv,
 *                  summary.txt and sim_run_opts.result
 */
#ifndef SOFTRNIC_SIM_HPCC_INT_H
#define SOFTRNIC_SIM_HPCC_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rnic/dcqcn.h"
#include "sim/engine.h"
#include "sim/hpcc.h"
#include "sim/net.h"

/* ---- config.txt (hpcc_config.c) ------------------------------------------ */

#define MAX_MAP 16

struct rate_map {
	unsigned n;
	uint64_t rate[MAX_MAP];
	double value[MAX_MAP];
};

struct hpcc_config {
	char topology[512], flows[512], fct_out[512], routes[512];
	int cc_mode;
	bool qcn, pfc;
	double stop_s, error_rate;
	uint64_t buffer_bytes;
	unsigned payload;
	struct rate_map kmin, kmax, pmax;
	struct dcqcn_params cc;
	struct dctcp_params dctcp;
	struct timely_params timely;
	struct hpcc_params hpcc;
	bool has_win, multi_rate, sample_feedback;
	double pint_log_base, pint_prob;
	char keys[2048];        /* every key in the file's order, the unknown
	                           ones marked with a leading '!' */
	char ignored[2048];
};

/* config.txt at `path` into c (its defaults first; the file names
 * resolved as HPCC's layout places them).  0, or 2 after a one-line
 * message. */
int simrun_read_config(const char *path, struct hpcc_config *c);
/* "100Gbps", "40Gb/s", "25000000000" -> bits/s; 0 when unreadable. */
uint64_t simrun_parse_rate(const char *s);
/* "1000ns", "0.001ms", "1us", "2s" -> ns. */
uint64_t simrun_parse_delay(const char *s);
/* The map's value for `rate`, or dflt if the map has none. */
double simrun_map_at(const struct rate_map *m, uint64_t rate, double dflt);

/* ---- the samplers (hpcc_sample.c) ---------------------------------------- */

/* Every sample_ns: one queues.csv line per port holding packets, one
 * throughput.csv line per flow that moved. */
struct sampler {
	struct sim_net *n;
	FILE *f, *tput;
	uint64_t period_ns, stop_ns;
	uint64_t *last;                 /* sim_flow_arrived at the last sample */
	uint64_t written, limit;        /* bytes in both files; the bound */
	uint64_t cut_at_ns;             /* when the bound stopped them (0: never) */
};

/* Every queue_sample_ns: the length of every switch egress queue holding
 * packets, into a histogram of 1 KiB bins (the last bin holds everything
 * from 64 MiB up; the maximum is kept exactly). */
#define QUEUE_BINS 65536u

struct queue_sampler {
	struct sim_net *n;
	uint64_t period_ns, stop_ns;
	uint64_t *bins, samples, max;
};

/* ---- sim run, step by step ------------------------------------------------
 *
 * sim_run_hpcc (hpcc.c) reads the config (simrun_read_config), the topology
 * (simrun_read_topology), checks that every host has one port, derives the
 * hosts' and switches' options, builds the fabric (simrun_build_net: nodes,
 * links, sim_build, static routes), adds the flows (simrun_add_flows), starts
 * the samplers, runs (run_fabric) and writes the outputs.  Everything a
 * step makes is in struct run, freed at the end whichever step failed. */

struct link_line {
	unsigned a, b;
	struct sim_link_opts l;
};

/* The topology file: "nodes switches links", the switch ids, the links. */
struct topo_file {
	unsigned nodes, switches, links;
	bool *is_switch;
	unsigned *host_of;              /* node id -> host index */
	struct link_line *lk;
	uint64_t fastest;               /* the fastest link's rate */
};

struct run {
	const char *config, *out_dir;
	struct sim_run_opts *o;
	struct hpcc_config c;
	struct topo_file t;
	FILE *flows;                    /* opened with the topology, read by simrun_add_flows */
	struct sim_host_opts ho;
	struct sim_switch_opts so;
	struct sim_engine e;
	bool engine_live;
	struct sim_net *n;
	unsigned nflows, listed;        /* flows added; flows the file lists */
	unsigned *flow_src;             /* per flow: its source and destination node ids */
	uint64_t stop;
	struct sampler smp;
	struct queue_sampler qs;
};

/* hpcc_fabric.c */
int simrun_read_topology(struct run *r);
void simrun_host_opts(struct run *r);
void simrun_switch_opts(struct run *r);
int simrun_check_host_ports(const struct run *r);
int simrun_build_net(struct run *r);
int simrun_add_flows(struct run *r);

/* hpcc_sample.c */
void simrun_start_samplers(struct run *r);
void simrun_stop_samplers(struct run *r);
uint64_t simrun_queue_percentile(const struct queue_sampler *s, double p);

/* hpcc_report.c */
void simrun_write_pfc_csv(const struct run *r);
int simrun_write_outputs(struct run *r);

#endif
