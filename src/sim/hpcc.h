/*
 * hpcc.h — `softrnic sim run CONFIG` (hpcc.c): a run described by the
 * HPCC simulator's config.txt, topology and flow files, with its FCT file
 * written beside our CSV and summary.
 */
#ifndef SOFTRNIC_SIM_HPCC_H
#define SOFTRNIC_SIM_HPCC_H

#include <stdint.h>

/* 0, or 2 after a one-line message (unreadable files, an unsupported
 * CC_MODE, a topology over SIM_MAX_NODES). */
struct sim_run_opts {
	uint64_t seed;
	uint64_t sample_ns;     /* 0, or the period of queues.csv and throughput.csv */
	unsigned flow_limit;    /* 0, or read at most this many of the flow file's
				 * flows (its first ones, as a smaller count on its
				 * first line would) */
	char fct_path[768];     /* out: the FCT file written in out_dir */
};

int sim_run_hpcc(const char *config, const char *out_dir, struct sim_run_opts *o);

#endif
