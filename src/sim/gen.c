/*
 * gen.c — the inputs `softrnic sim run` reads, generated, in the HPCC
 * simulator's formats (hpcc.c):
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
 * Both write to standard output.  The generator's draws come from the
 * seeded PRNG, so a seed gives the same flow file.
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

static int topo_usage(void)
{
	fprintf(stderr, "usage: softrnic sim topo fat-tree K [options]       K even, 2..28\n"
			"       softrnic sim topo leaf-spine LEAVES SPINES HOSTS_PER_LEAF [options]\n"
			"       softrnic sim topo dumbbell HOSTS_PER_SIDE [options]\n"
			"options: --rate 100Gbps (host links) --core-rate R (switch-to-switch links;\n"
			"         default: --rate) --delay 1000ns (every link)\n");
	return 2;
}

struct topo_links {
	const char *rate, *core_rate, *delay;
};

static void switch_line(unsigned first, unsigned count)
{
	for (unsigned s = first; s < first + count; s++)
		printf("%u%c", s, s + 1 == first + count ? '\n' : ' ');
}

static void link_line(unsigned a, unsigned b, const char *rate, const char *delay)
{
	printf("%u %u %s %s 0\n", a, b, rate, delay);
}

/* A k-ary fat-tree (Al-Fares et al.): hosts 0 .. k^3/4 - 1, then the edge,
 * aggregation and core switches. */
static void fat_tree(unsigned k, const struct topo_links *t)
{
	unsigned half = k / 2, hosts = k * k * k / 4, edges = k * half, aggs = k * half, cores = half * half;
	unsigned edge0 = hosts, agg0 = edge0 + edges, core0 = agg0 + aggs;
	unsigned links = hosts + k * half * half + aggs * half;

	printf("%u %u %u\n", hosts + edges + aggs + cores, edges + aggs + cores, links);
	switch_line(edge0, edges + aggs + cores);
	/* Host h under edge switch h / (k/2). */
	for (unsigned h = 0; h < hosts; h++)
		link_line(h, edge0 + h / half, t->rate, t->delay);
	/* Pod p: every edge switch to every aggregation switch of the pod. */
	for (unsigned p = 0; p < k; p++)
		for (unsigned e = 0; e < half; e++)
			for (unsigned a = 0; a < half; a++)
				link_line(edge0 + p * half + e, agg0 + p * half + a, t->rate, t->delay);
	/* Aggregation switch a of each pod to cores a*(k/2) .. a*(k/2)+k/2-1. */
	for (unsigned p = 0; p < k; p++)
		for (unsigned a = 0; a < half; a++)
			for (unsigned c = 0; c < half; c++)
				link_line(agg0 + p * half + a, core0 + a * half + c, t->core_rate, t->delay);
}

/* Two tiers: every leaf to every spine.  Hosts 0 .. leaves*per_leaf - 1
 * (host h under leaf h / per_leaf), then the leaves, then the spines. */
static void leaf_spine(unsigned leaves, unsigned spines, unsigned per_leaf, const struct topo_links *t)
{
	unsigned hosts = leaves * per_leaf, leaf0 = hosts, spine0 = leaf0 + leaves;

	printf("%u %u %u\n", hosts + leaves + spines, leaves + spines, hosts + leaves * spines);
	switch_line(leaf0, leaves + spines);
	for (unsigned h = 0; h < hosts; h++)
		link_line(h, leaf0 + h / per_leaf, t->rate, t->delay);
	for (unsigned l = 0; l < leaves; l++)
		for (unsigned s = 0; s < spines; s++)
			link_line(leaf0 + l, spine0 + s, t->core_rate, t->delay);
}

/* Two switches joined by one link (the bottleneck: --core-rate), n hosts
 * on each: hosts 0 .. n-1 on the left, n .. 2n-1 on the right. */
static void dumbbell(unsigned n, const struct topo_links *t)
{
	unsigned left = 2 * n, right = left + 1;

	printf("%u 2 %u\n", 2 * n + 2, 2 * n + 1);
	switch_line(left, 2);
	for (unsigned h = 0; h < 2 * n; h++)
		link_line(h, h < n ? left : right, t->rate, t->delay);
	link_line(left, right, t->core_rate, t->delay);
}

int sim_topo_main(int argc, char **argv)
{
	struct topo_links t = { .rate = "100Gbps", .core_rate = NULL, .delay = "1000ns" };
	unsigned v[3] = { 0, 0, 0 }, nv;
	int i;

	if (argc < 3)
		return topo_usage();
	if (!strcmp(argv[1], "fat-tree") || !strcmp(argv[1], "dumbbell"))
		nv = 1;
	else if (!strcmp(argv[1], "leaf-spine"))
		nv = 3;
	else
		return topo_usage();
	for (i = 2; i < argc && (unsigned)(i - 2) < nv; i++) {
		char *end;
		unsigned long x = strtoul(argv[i], &end, 10);
		if (end == argv[i] || *end || x == 0 || x > 4096)
			return topo_usage();
		v[i - 2] = (unsigned)x;
	}
	if ((unsigned)(i - 2) < nv)
		return topo_usage();
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--rate") && i + 1 < argc)
			t.rate = argv[++i];
		else if (!strcmp(argv[i], "--core-rate") && i + 1 < argc)
			t.core_rate = argv[++i];
		else if (!strcmp(argv[i], "--delay") && i + 1 < argc)
			t.delay = argv[++i];
		else
			return topo_usage();
	}
	if (!t.core_rate)
		t.core_rate = t.rate;
	if (!strcmp(argv[1], "fat-tree")) {
		if (v[0] < 2 || v[0] > 28 || v[0] % 2)
			return topo_usage();
		fat_tree(v[0], &t);
	} else if (!strcmp(argv[1], "dumbbell")) {
		dumbbell(v[0], &t);
	} else {
		/* SIM_MAX_NODES bounds what sim run can load; say so here. */
		if ((uint64_t)v[0] * v[2] + v[0] + v[1] > 8192)
			return topo_usage();
		leaf_spine(v[0], v[1], v[2], &t);
	}
	return 0;
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

static int gen_usage(void)
{
	fprintf(stderr, "usage: softrnic sim gen --cdf FILE --hosts N --load L [--bandwidth 100Gbps] [--time 0.1]\n"
			"                        [--seed N]   (L in (0, 1]; the flow file on standard output)\n");
	return 2;
}

int sim_gen_main(int argc, char **argv)
{
	const char *cdf_path = NULL;
	unsigned hosts = 0;
	double load = 0, bandwidth = 100e9, duration = 0.1;
	uint64_t seed = 1;

	/* Every option takes a value: they come in pairs. */
	if (argc % 2 == 0)
		return gen_usage();
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *v = argv[i + 1];
		if (!strcmp(argv[i], "--cdf"))
			cdf_path = v;
		else if (!strcmp(argv[i], "--hosts"))
			hosts = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(argv[i], "--load"))
			load = strtod(v, NULL);
		else if (!strcmp(argv[i], "--bandwidth"))
			bandwidth = strtod(v, NULL) * (strchr(v, 'G') ? 1e9 : strchr(v, 'M') ? 1e6 : 1);
		else if (!strcmp(argv[i], "--time"))
			duration = strtod(v, NULL);
		else if (!strcmp(argv[i], "--seed"))
			seed = strtoull(v, NULL, 10);
		else
			return gen_usage();
	}
	if (!cdf_path || hosts < 2 || load <= 0 || load > 1 || bandwidth <= 0 || duration <= 0)
		return gen_usage();
	return sim_gen_write(stdout, cdf_path, hosts, load, bandwidth, duration, seed);
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
