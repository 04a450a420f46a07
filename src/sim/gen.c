/*
 * gen.c — the inputs `softrnic sim run` reads, generated, in the HPCC
 * simulator's formats (hpcc.c); the command lines below are parsed in
 * src/tools/sim_cli.c:
 *
 *   softrnic sim topo fat-tree K [--rate R] [--core-rate R] [--delay D]
 *       a k-ary fat-tree (Al-Fares et al.): k pods of k/2 edge and k/2
 *       aggregation switches, (k/2)^2 cores, k^3/4 hosts; hosts are nodes
 *       0 .. k^3/4 - 1, then edge, aggregation and core switches
 *   softrnic sim topo leaf-spine LEAVES SPINES HOSTS_PER_LEAF [...]
 *       every leaf linked to every spine; hosts first, then leaves, spines
 *   softrnic sim topo dumbbell HOSTS_PER_SIDE [...]
 *       two switches and one link between them (--core-rate: the
 *       bottleneck), hosts 0 .. n-1 on one side, n .. 2n-1 on the other
 *   softrnic sim gen --cdf FILE --hosts N --load L [--bandwidth R]
 *       [--time S] [--seed N]
 *       flows whose sizes follow the CDF (data/cdf/, linear between
 *       points), arriving at each host as a Poisson process whose rate
 *       makes the offered load L of its link; destinations uniform among
 *       the other hosts; sorted by start time
 *
 * Both write to a FILE (the command writes to standard output).  The
 * generator's draws come from the seeded PRNG, so a seed gives the same
 * flow file.
 */
#include "sim/gen.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/prng.h"

#define MAX_CDF 64

static void switch_line(FILE *out, unsigned first, unsigned count)
{
	for (unsigned s = first; s < first + count; s++)
		fprintf(out, "%u%c", s, s + 1 == first + count ? '\n' : ' ');
}

static void link_line(FILE *out, unsigned a, unsigned b, const char *rate, const char *delay)
{
	fprintf(out, "%u %u %s %s 0\n", a, b, rate, delay);
}

/* A k-ary fat-tree (Al-Fares et al.): hosts 0 .. k^3/4 - 1, then the edge,
 * aggregation and core switches. */
static void fat_tree(FILE *out, unsigned k, const struct sim_topo *t)
{
	unsigned half = k / 2, hosts = k * k * k / 4, edges = k * half, aggs = k * half, cores = half * half;
	unsigned edge0 = hosts, agg0 = edge0 + edges, core0 = agg0 + aggs;
	unsigned links = hosts + k * half * half + aggs * half;
	const char *core = t->core_rate ? t->core_rate : t->rate;

	fprintf(out, "%u %u %u\n", hosts + edges + aggs + cores, edges + aggs + cores, links);
	switch_line(out, edge0, edges + aggs + cores);
	/* Host h under edge switch h / (k/2). */
	for (unsigned h = 0; h < hosts; h++)
		link_line(out, h, edge0 + h / half, t->rate, t->delay);
	/* Pod p: every edge switch to every aggregation switch of the pod. */
	for (unsigned p = 0; p < k; p++)
		for (unsigned e = 0; e < half; e++)
			for (unsigned a = 0; a < half; a++)
				link_line(out, edge0 + p * half + e, agg0 + p * half + a, t->rate, t->delay);
	/* Aggregation switch a of each pod to cores a*(k/2) .. a*(k/2)+k/2-1. */
	for (unsigned p = 0; p < k; p++)
		for (unsigned a = 0; a < half; a++)
			for (unsigned c = 0; c < half; c++)
				link_line(out, agg0 + p * half + a, core0 + a * half + c, core, t->delay);
}

/* Two tiers: every leaf to every spine.  Hosts 0 .. leaves*per_leaf - 1
 * (host h under leaf h / per_leaf), then the leaves, then the spines. */
static void leaf_spine(FILE *out, unsigned leaves, unsigned spines, unsigned per_leaf, const struct sim_topo *t)
{
	unsigned hosts = leaves * per_leaf, leaf0 = hosts, spine0 = leaf0 + leaves;
	const char *core = t->core_rate ? t->core_rate : t->rate;

	fprintf(out, "%u %u %u\n", hosts + leaves + spines, leaves + spines, hosts + leaves * spines);
	switch_line(out, leaf0, leaves + spines);
	for (unsigned h = 0; h < hosts; h++)
		link_line(out, h, leaf0 + h / per_leaf, t->rate, t->delay);
	for (unsigned l = 0; l < leaves; l++)
		for (unsigned s = 0; s < spines; s++)
			link_line(out, leaf0 + l, spine0 + s, core, t->delay);
}

/* Two switches joined by one link (the bottleneck: --core-rate), n hosts
 * on each: hosts 0 .. n-1 on the left, n .. 2n-1 on the right. */
static void dumbbell(FILE *out, unsigned n, const struct sim_topo *t)
{
	unsigned left = 2 * n, right = left + 1;
	const char *core = t->core_rate ? t->core_rate : t->rate;

	fprintf(out, "%u 2 %u\n", 2 * n + 2, 2 * n + 1);
	switch_line(out, left, 2);
	for (unsigned h = 0; h < 2 * n; h++)
		link_line(out, h, h < n ? left : right, t->rate, t->delay);
	link_line(out, left, right, core, t->delay);
}

int sim_topo_write(FILE *out, const struct sim_topo *t)
{
	switch (t->kind) {
	case SIM_TOPO_FAT_TREE:
		if (t->n[0] < 2 || t->n[0] > SIM_TOPO_MAX_K || t->n[0] % 2)
			return EINVAL;
		fat_tree(out, t->n[0], t);
		return 0;
	case SIM_TOPO_LEAF_SPINE:
		/* SIM_MAX_NODES bounds what sim run can load. */
		if (!t->n[0] || !t->n[1] || !t->n[2] ||
		    (uint64_t)t->n[0] * t->n[2] + t->n[0] + t->n[1] > SIM_TOPO_MAX_NODES)
			return EINVAL;
		leaf_spine(out, t->n[0], t->n[1], t->n[2], t);
		return 0;
	case SIM_TOPO_DUMBBELL:
		if (!t->n[0] || 2 * (uint64_t)t->n[0] + 2 > SIM_TOPO_MAX_NODES)
			return EINVAL;
		dumbbell(out, t->n[0], t);
		return 0;
	}
	return EINVAL;
}

struct cdf {
	unsigned n;
	double bytes[MAX_CDF], pct[MAX_CDF];
};

static int read_cdf(const char *path, struct cdf *c)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return errno;
	c->n = 0;
	while (c->n < MAX_CDF && fscanf(f, "%lf %lf", &c->bytes[c->n], &c->pct[c->n]) == 2) {
		if (c->n && (c->pct[c->n] < c->pct[c->n - 1] || c->bytes[c->n] < c->bytes[c->n - 1])) {
			fclose(f);
			return EINVAL;
		}
		c->n++;
	}
	fclose(f);
	return c->n >= 2 && c->pct[c->n - 1] == 100 ? 0 : EINVAL;
}

static double cdf_sample(const struct cdf *c, double u)   /* u in [0, 100) */
{
	for (unsigned i = 1; i < c->n; i++)
		if (u <= c->pct[i]) {
			double span = c->pct[i] - c->pct[i - 1];
			double t = span > 0 ? (u - c->pct[i - 1]) / span : 1;
			return c->bytes[i - 1] + t * (c->bytes[i] - c->bytes[i - 1]);
		}
	return c->bytes[c->n - 1];
}

static double cdf_mean(const struct cdf *c)
{
	double m = 0;

	for (unsigned i = 1; i < c->n; i++)
		m += (c->pct[i] - c->pct[i - 1]) / 100 * (c->bytes[i] + c->bytes[i - 1]) / 2;
	return m;
}

static double uniform01(uint64_t rng[4])
{
	return (double)(prng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

struct gen_flow {
	double start;
	unsigned src, dst;
	uint64_t size;
};

static int by_start(const void *a, const void *b)
{
	const struct gen_flow *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->src != y->src ? (x->src < y->src ? -1 : 1) : (x->dst > y->dst) - (x->dst < y->dst);
}

int sim_gen_write(FILE *out, const char *cdf_path, unsigned hosts, double load, double bandwidth,
		  double duration, uint64_t seed)
{
	uint64_t rng[4];
	struct cdf c;
	int e = read_cdf(cdf_path, &c);
	if (e) {
		fprintf(stderr, "softrnic sim gen: %s: %s\n", cdf_path,
			e == EINVAL ? "not a CDF (\"bytes percent\" lines, rising to 100)" : strerror(e));
		return 2;
	}
	/* Per host: flows per second that offer `load` of its link. */
	double mean = cdf_mean(&c), per_host = load * bandwidth / (8 * mean);
	size_t cap = (size_t)(per_host * duration * hosts * 1.5) + 1024, n = 0;
	struct gen_flow *f = malloc(cap * sizeof(*f));
	if (!f)
		return 2;
	prng_seed(rng, seed);
	for (unsigned h = 0; h < hosts; h++) {
		for (double t = -log(1 - uniform01(rng)) / per_host; t < duration;
		     t += -log(1 - uniform01(rng)) / per_host) {
			if (n == cap) {
				cap *= 2;
				struct gen_flow *g = realloc(f, cap * sizeof(*f));
				if (!g) {
					free(f);
					return 2;
				}
				f = g;
			}
			unsigned d = (unsigned)(prng_next(rng) % (hosts - 1));
			double size = cdf_sample(&c, uniform01(rng) * 100);
			f[n++] = (struct gen_flow){ .start = t, .src = h, .dst = d >= h ? d + 1 : d,
						    .size = size < 1 ? 1 : (uint64_t)(size + 0.5) };
		}
	}
	qsort(f, n, sizeof(*f), by_start);
	fprintf(out, "%zu\n", n);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%u %u 3 100 %" PRIu64 " %.9f\n", f[i].src, f[i].dst, f[i].size, f[i].start);
	fprintf(stderr, "softrnic sim gen: %zu flows, mean size %.0f bytes, %.1f flows/s per host\n", n, mean, per_host);
	free(f);
	return 0;
}
