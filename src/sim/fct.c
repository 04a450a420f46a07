/*
 * fct.c — FCT slowdown by flow size, computed from an FCT file the way the
 * HPCC repository's analysis/fct_analysis.py does it for its paper's
 * Figure 11, so that a run of `softrnic sim run` and a run of HPCC's own
 * simulator are read by the same rule:
 *
 *   - lines "sip dip sport dport size start_ns fct_ns standalone_ns";
 *     only dport 100 (HPCC's ordinary flows; its incast flows use 200)
 *     and flows that finished before the time limit (start + fct, 3 s by
 *     default, HPCC's -T);
 *   - slowdown = fct / standalone, raised to 1 where below;
 *   - flows sorted by size (ties by slowdown; fct_analysis.py sorts the
 *     text lines, so its ties fall in line order), then cut into buckets
 *     of `step` percent of the flows; for each bucket the largest size in
 *     it and the 50th/95th/99th percentile slowdown, each taken as
 *     element int(len * p) of the sorted bucket.  (fct_analysis.py also
 *     loses the largest flow, splitting its text with [:-2]; this keeps
 *     it.)
 *
 * `softrnic sim fct FILE [--step N] [--time-limit NS]` (src/tools/sim_cli.c) prints HPCC's own
 * output lines ("0.050 7392\t1.000 1.227 2.047"); sim exp hpcc-workload
 * writes the same numbers as a CSV.
 */
#include "sim/fct.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct fct_flow {
	uint64_t size;
	double slowdown;
};

static int by_size(const void *a, const void *b)
{
	const struct fct_flow *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return x->slowdown < y->slowdown ? -1 : x->slowdown > y->slowdown;
}

int sim_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int sim_fct_analyze(const char *path, unsigned step, uint64_t time_limit_ns, struct sim_fct_bucket *out,
		    unsigned *n_out, unsigned *flows_out)
{
	FILE *f = fopen(path, "r");
	struct fct_flow *v = NULL;
	size_t n = 0, cap = 0;
	char line[512];

	*n_out = 0;
	*flows_out = 0;
	if (!f)
		return errno ? errno : EIO;
	if (step == 0 || step > 100) {
		fclose(f);
		return EINVAL;
	}
	while (fgets(line, sizeof(line), f)) {
		char sip[32], dip[32];
		unsigned sport, dport;
		uint64_t size, start, fct, standalone;
		if (sscanf(line, "%31s %31s %u %u %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, sip, dip, &sport,
			   &dport, &size, &start, &fct, &standalone) != 8)
			continue;
		if (dport != 100 || start + fct >= time_limit_ns || standalone == 0)
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 1024;
			struct fct_flow *nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				free(v);
				fclose(f);
				return ENOMEM;
			}
			v = nv;
			cap = ncap;
		}
		double sd = (double)fct / (double)standalone;
		v[n++] = (struct fct_flow){ .size = size, .slowdown = sd < 1 ? 1 : sd };
	}
	fclose(f);
	*flows_out = (unsigned)n;
	if (n == 0) {
		free(v);
		return 0;
	}
	qsort(v, n, sizeof(*v), by_size);
	double *s = malloc(n * sizeof(*s));
	if (!s) {
		free(v);
		return ENOMEM;
	}
	unsigned k = 0;
	for (unsigned pct = 0; pct < 100; pct += step) {
		size_t l = (size_t)pct * n / 100, r = (size_t)(pct + step > 100 ? 100 : pct + step) * n / 100;
		if (r <= l)
			continue;
		size_t m = r - l;
		for (size_t i = 0; i < m; i++)
			s[i] = v[l + i].slowdown;
		qsort(s, m, sizeof(*s), sim_cmp_double);
		out[k++] = (struct sim_fct_bucket){ .percentile = pct, .size = v[r - 1].size, .flows = (unsigned)m,
						    .p50 = s[(size_t)(m * 0.5)], .p95 = s[(size_t)(m * 0.95)],
						    .p99 = s[(size_t)(m * 0.99)] };
	}
	*n_out = k;
	free(s);
	free(v);
	return 0;
}
