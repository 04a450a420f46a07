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
	uint64_t trace_limit_bytes;     /* those two files stop growing past this
					 * (0: SIM_TRACE_LIMIT_DEFAULT); the summary
					 * says when they were cut */
	unsigned flow_limit;    /* 0, or read at most this many of the flow file's
				 * flows (its first ones, as a smaller count on its
				 * first line would) */
	uint64_t queue_sample_ns;       /* 0, or how often `result` samples every
					 * switch egress queue */
	unsigned threads;       /* 0 or 1, or the fabric in this many partitions,
				 * a thread each (net.h, "partitions"; not with
				 * the samplers) */
	unsigned partitions;    /* 0: as threads; more with threads 0 or 1: that
				 * many partitions, run one after the other */
	char fct_path[768];     /* out: the FCT file written in out_dir */
	struct sim_run_result { /* out: what the summary says, as numbers */
		unsigned flows, done, failed;
		uint64_t drops, pauses, ecn_marks, cnps;
		/* Switch egress queues holding packets, over every sample
		 * (queue_sample_ns): how many, and their length in bytes at
		 * the median, p95, p99 (to 1 KiB) and at most. */
		uint64_t queue_samples, queue_p50, queue_p95, queue_p99, queue_max;
		/* FCT slowdown of the flows done, by size: below 10 KB,
		 * 10-100 KB, 100 KB-1 MB, 1-10 MB, from 10 MB
		 * (SIM_RUN_SIZE_EDGES). */
		struct sim_size_class {
			unsigned flows;
			double p50, p95, p99;
		} by_size[5];
	} result;
};

#define SIM_TRACE_LIMIT_DEFAULT (1024ull << 20)

/* The upper edges of result.by_size's classes, in bytes (the last open). */
#define SIM_RUN_SIZE_EDGES { 10000, 100000, 1000000, 10000000, UINT64_MAX }

int sim_run_hpcc(const char *config, const char *out_dir, struct sim_run_opts *o);

#endif
