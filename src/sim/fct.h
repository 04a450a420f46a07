/*
 * fct.h — FCT slowdown by flow size from an HPCC-format FCT file (fct.c),
 * by the rule of the HPCC repository's analysis/fct_analysis.py.
 */
#ifndef SOFTRNIC_SIM_FCT_H
#define SOFTRNIC_SIM_FCT_H

#include <stdint.h>
#include <stdio.h>

/* fct_analysis.py's default -T: flows that end after 3 s are left out. */
#define SIM_FCT_TIME_LIMIT_NS 3000000000ull

struct sim_fct_bucket {
	unsigned percentile;  /* the bucket's first percentile of the flows by size */
	uint64_t size;        /* the largest flow size in it */
	unsigned flows;
	double p50, p95, p99; /* slowdown */
};

/* Reads `path`; fills out[] (room for 100 buckets) and *n_out,
 * and *flows_out with the flows that counted.  0, or an errno (EINVAL for
 * a step outside 1..100). */
int sim_fct_analyze(const char *path, unsigned step, uint64_t time_limit_ns, struct sim_fct_bucket *out,
		    unsigned *n_out, unsigned *flows_out);

/* qsort's comparison of two doubles, ascending (hpcc.c's summary too). */
int sim_cmp_double(const void *a, const void *b);

#endif
