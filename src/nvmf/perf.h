/*
 * perf.h — `softrnic nvmf perf`: reads or writes through softrnic's own
 * NVMe/RDMA host (host.h) against a target, at a block size and queue
 * depth, for a time; IOPS, bandwidth and latency percentiles; with
 * verify, a pattern written first and every block checked.
 */
#ifndef SOFTRNIC_NVMF_PERF_H
#define SOFTRNIC_NVMF_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include "nvmf/host.h"

enum nvmf_perf_rw { PERF_READ, PERF_WRITE, PERF_RANDREAD, PERF_RANDWRITE };

struct nvmf_perf_opts {
	enum nvmf_perf_rw rw;
	uint32_t bs;                    /* bytes, a multiple of the block size */
	unsigned qd;
	double seconds;
	uint64_t span;                  /* bytes of the namespace used (0: all) */
	bool verify;
	bool no_inline;                 /* writes by keyed SGL even when they fit in the capsule */
	bool invalidate;                /* ask for SEND with invalidate, and check it came */
	uint64_t seed;
};

struct nvmf_perf_result {
	uint64_t ios, errors, verify_errors, verified, invalidations_missing;
	unsigned queues, queues_idle;   /* I/O queues; of them, those that completed no timed command */
	uint64_t min_queue_ios;         /* the fewest timed commands one queue completed */
	double seconds, iops, mib_s, p50_us, p99_us, max_us;
	uint16_t first_error_status;
};

/* Run on a connected host (with h->n_io I/O queues of depth > qd, qd
 * commands in flight on each); 0, or -1
 * with h->err set when the run could not go on (a transport failure). */
int nvmf_perf_run(struct nvmf_host *h, const struct nvmf_perf_opts *o, struct nvmf_perf_result *res);

#endif
