/*
 * sim_cli.c — `softrnic sim`'s commands run, topo, gen, fct and exp,
 * from the words cli_parse (cli_parse.h) has already read against
 * cmd_sim.c's table, to the simulator's library (src/sim: hpcc.h, gen.h,
 * fct.h, exp.h), which does no parsing of its own.
 *
 * cli_parse answers --help, refuses unknown options, missing values,
 * wrong argument counts and numbers outside its ranges.  What it cannot
 * say is checked here, on its values: each subcommand is a row of
 * SUBCOMMANDS with a table of its options (struct opt: name, kind, where
 * the value goes in the subcommand's own struct, its range), so a rate
 * or a delay is one the files carry, a text fits its field, a number is
 * in the range the simulator takes; a refused value gets one line naming
 * it and why, exit 2.  The subcommand's positional arguments are
 * cli_parse's.
 */
#include "tools/sim_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/exp.h"
#include "sim/fct.h"
#include "sim/gen.h"
#include "sim/hpcc.h"
#include "tools/cli_parse.h"

/* ---- strict values -------------------------------------------------------- */

/* A whole number, all digits, no sign, no space, no overflow. */
static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*v = x;
	return true;
}

/* A finite decimal number, nothing after it. */
static bool parse_real(const char *s, double *v)
{
	char *end;

	if (!*s || *s == ' ' || *s == '\t')
		return false;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || *end || end == s || !isfinite(x))
		return false;
	*v = x;
	return true;
}

/* A link rate as the topology file carries it: a number > 0 and a unit
 * (G, M or K, then bps or b/s), or plain bits per second; the number in
 * bits per second into *bps if not NULL. */
static bool parse_rate_text(const char *s, double *bps)
{
	char *end;
	double v = strtod(s, &end);
	double scale = 1;

	if (end == s || !(v > 0) || !isfinite(v) || *s == ' ')
		return false;
	if (*end == 'G' || *end == 'M' || *end == 'K')
		scale = *end == 'G' ? 1e9 : *end == 'M' ? 1e6 : 1e3, end++;
	if (*end && strcmp(end, "bps") && strcmp(end, "b/s"))
		return false;
	if (bps)
		*bps = v * scale;
	return true;
}

/* A link delay as the topology file carries it: a number >= 0 and ns,
 * us, ms or s. */
static bool parse_delay_text(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	return end != s && v >= 0 && isfinite(v) && *s != ' ' &&
	       (!strcmp(end, "ns") || !strcmp(end, "us") || !strcmp(end, "ms") || !strcmp(end, "s"));
}

/* ---- option tables -------------------------------------------------------- */

enum opt_kind {
	OPT_FLAG,       /* bool, no value */
	OPT_U64,        /* uint64_t in [min, max] */
	OPT_UNSIGNED,   /* unsigned in [min, max] */
	OPT_REAL,       /* double in [min, max] (open at min when min_open) */
	OPT_TEXT,       /* char[size] */
	OPT_PATH,       /* const char * (the argument itself) */
	OPT_RATE,       /* const char *, a rate ("100Gbps") */
	OPT_DELAY,      /* const char *, a delay ("1000ns") */
};

struct opt {
	const char *name;
	enum opt_kind kind;
	size_t offset;                  /* of the value in the subcommand's options */
	size_t size;                    /* OPT_TEXT: the field's size */
	double min, max;                /* numbers: the range accepted */
	bool min_open;                  /* OPT_REAL: min itself refused */
};

#define END_OPTS { NULL, OPT_FLAG, 0, 0, 0, 0, false }

static const char *kind_says(const struct opt *o)
{
	switch (o->kind) {
	case OPT_U64:
	case OPT_UNSIGNED:
		return "not a whole number";
	case OPT_REAL:
		return "not a number";
	case OPT_RATE:
		return "not a rate (a number and Gbps, Mbps, Kbps or bps)";
	case OPT_DELAY:
		return "not a delay (a number and ns, us, ms or s)";
	default:
		return "not accepted";
	}
}

/* Store value `v` of option o into opts.  0, or 2 after one line. */
static int set_opt(const char *cmd, const struct opt *o, const char *v, void *opts)
{
	char *at = (char *)opts + o->offset;
	uint64_t u;
	double d;

	switch (o->kind) {
	case OPT_FLAG:
		*(bool *)at = true;
		return 0;
	case OPT_U64:
	case OPT_UNSIGNED:
		if (!parse_u64(v, &u)) {
			fprintf(stderr, "softrnic sim %s: %s %s: %s\n", cmd, o->name, v, kind_says(o));
			return 2;
		}
		if ((double)u < o->min || (double)u > o->max) {
			fprintf(stderr, "softrnic sim %s: %s %s: must be at %s %.0f\n", cmd, o->name, v,
				(double)u < o->min ? "least" : "most", (double)u < o->min ? o->min : o->max);
			return 2;
		}
		if (o->kind == OPT_U64)
			*(uint64_t *)at = u;
		else
			*(unsigned *)at = (unsigned)u;
		return 0;
	case OPT_REAL:
		if (!parse_real(v, &d)) {
			fprintf(stderr, "softrnic sim %s: %s %s: %s\n", cmd, o->name, v, kind_says(o));
			return 2;
		}
		if (d < o->min || (o->min_open && d == o->min) || d > o->max) {
			fprintf(stderr, "softrnic sim %s: %s %s: must be in %c%g, %g]\n", cmd, o->name, v,
				o->min_open ? '(' : '[', o->min, o->max);
			return 2;
		}
		*(double *)at = d;
		return 0;
	case OPT_TEXT:
		if (!*v || strlen(v) >= o->size) {
			fprintf(stderr, "softrnic sim %s: %s: %s\n", cmd, o->name, *v ? "too long" : "empty");
			return 2;
		}
		memcpy(at, v, strlen(v) + 1);
		return 0;
	case OPT_RATE:
	case OPT_DELAY:
		if (o->kind == OPT_RATE ? !parse_rate_text(v, NULL) : !parse_delay_text(v)) {
			fprintf(stderr, "softrnic sim %s: %s %s: %s\n", cmd, o->name, v, kind_says(o));
			return 2;
		}
		*(const char **)at = v;
		return 0;
	case OPT_PATH:
		if (!*v) {
			fprintf(stderr, "softrnic sim %s: %s: empty\n", cmd, o->name);
			return 2;
		}
		*(const char **)at = v;
		return 0;
	}
	return 2;
}

/* ---- subcommands ---------------------------------------------------------- */

struct subcommand {
	const char *name;
	const struct opt *opts;
	void (*defaults)(void *opts);
	int (*run)(void *opts, char **pos, unsigned npos);
};

static void print_summary(const char *dir)
{
	char path[600], line[1024];

	snprintf(path, sizeof(path), "%s/summary.txt", dir);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		fputs(line, stdout);
	if (f)
		fclose(f);
}

/* sim run CONFIG */
struct run_args {
	char out[512];
	uint64_t seed, sample_us;
	double trace_limit_mb;
	unsigned flows, threads, partitions;
};

static void run_defaults(void *p)
{
	struct run_args *a = p;

	snprintf(a->out, sizeof(a->out), "sim-out/run");
	a->seed = 1;
}

static int run_run(void *p, char **pos, unsigned npos)
{
	struct run_args *a = p;
	struct sim_run_opts ro = { .seed = a->seed, .sample_ns = a->sample_us * 1000, .flow_limit = a->flows,
				   .threads = a->threads, .partitions = a->partitions,
				   .trace_limit_bytes = (uint64_t)(a->trace_limit_mb * 1048576) };

	(void)npos;
	sim_make_dirs(a->out);
	int rc = sim_run_hpcc(pos[0], a->out, &ro);
	if (!rc)
		print_summary(a->out);
	return rc;
}

static const struct opt RUN_OPTS[] = {
	{ "--out", OPT_TEXT, offsetof(struct run_args, out), sizeof(((struct run_args *)0)->out), 0, 0, false },
	{ "--seed", OPT_U64, offsetof(struct run_args, seed), 0, 0, (double)UINT64_MAX, false },
	{ "--sample-us", OPT_U64, offsetof(struct run_args, sample_us), 0, 1, 1e12, false },
	{ "--trace-limit-mb", OPT_REAL, offsetof(struct run_args, trace_limit_mb), 0, 0, 1e9, true },
	{ "--flows", OPT_UNSIGNED, offsetof(struct run_args, flows), 0, 1, UINT32_MAX, false },
	{ "--threads", OPT_UNSIGNED, offsetof(struct run_args, threads), 0, 1, UINT32_MAX, false },
	{ "--partitions", OPT_UNSIGNED, offsetof(struct run_args, partitions), 0, 1, UINT32_MAX, false },
	END_OPTS,
};

/* sim topo KIND N... */
struct topo_args {
	const char *rate, *core_rate, *delay;
};

static void topo_defaults(void *p)
{
	struct topo_args *a = p;

	a->rate = "100Gbps";
	a->delay = "1000ns";
}

static int topo_run(void *p, char **pos, unsigned npos)
{
	static const struct {
		const char *name;
		enum sim_topo_kind kind;
		unsigned numbers;
		const char *what;
	} kinds[] = {
		{ "fat-tree", SIM_TOPO_FAT_TREE, 1, "K" },
		{ "leaf-spine", SIM_TOPO_LEAF_SPINE, 3, "LEAVES SPINES HOSTS_PER_LEAF" },
		{ "dumbbell", SIM_TOPO_DUMBBELL, 1, "HOSTS_PER_SIDE" },
	};
	const struct topo_args *a = p;
	struct sim_topo t = { .rate = a->rate, .core_rate = a->core_rate, .delay = a->delay };
	unsigned k = 0;

	while (k < 3 && strcmp(pos[0], kinds[k].name))
		k++;
	if (k == 3) {
		fprintf(stderr, "softrnic sim topo: %s: not a topology (fat-tree, leaf-spine or dumbbell)\n", pos[0]);
		return 2;
	}
	if (npos - 1 != kinds[k].numbers) {
		fprintf(stderr, "softrnic sim topo %s: takes %s\n", kinds[k].name, kinds[k].what);
		return 2;
	}
	t.kind = kinds[k].kind;
	for (unsigned i = 0; i < kinds[k].numbers; i++) {
		uint64_t v;
		if (!parse_u64(pos[1 + i], &v) || v == 0 || v > SIM_TOPO_MAX_NODES) {
			fprintf(stderr, "softrnic sim topo %s: %s: not a whole number in 1..%u\n", kinds[k].name, pos[1 + i],
				SIM_TOPO_MAX_NODES);
			return 2;
		}
		t.n[i] = (unsigned)v;
	}
	if (t.kind == SIM_TOPO_FAT_TREE && (t.n[0] % 2 || t.n[0] > SIM_TOPO_MAX_K)) {
		fprintf(stderr, "softrnic sim topo fat-tree: K %u: not even in 2..%u\n", t.n[0], SIM_TOPO_MAX_K);
		return 2;
	}
	if (sim_topo_write(stdout, &t)) {
		fprintf(stderr, "softrnic sim topo %s: more than %u nodes (what sim run loads)\n", kinds[k].name,
			SIM_TOPO_MAX_NODES);
		return 2;
	}
	return 0;
}

static const struct opt TOPO_OPTS[] = {
	{ "--rate", OPT_RATE, offsetof(struct topo_args, rate), 0, 0, 0, false },
	{ "--core-rate", OPT_RATE, offsetof(struct topo_args, core_rate), 0, 0, 0, false },
	{ "--delay", OPT_DELAY, offsetof(struct topo_args, delay), 0, 0, 0, false },
	END_OPTS,
};

/* sim gen */
struct gen_args {
	const char *cdf, *bandwidth;
	unsigned hosts;
	double load, time;
	uint64_t seed;
};

static void gen_defaults(void *p)
{
	struct gen_args *a = p;

	a->bandwidth = "100Gbps";
	a->time = 0.1;
	a->seed = 1;
}

static int gen_run(void *p, char **pos, unsigned npos)
{
	const struct gen_args *a = p;
	double bandwidth = 0;

	(void)pos;
	(void)npos;
	if (!a->cdf || !a->hosts || a->load == 0) {
		fprintf(stderr, "softrnic sim gen: %s is needed\n", !a->cdf ? "--cdf" : !a->hosts ? "--hosts" : "--load");
		return 2;
	}
	parse_rate_text(a->bandwidth, &bandwidth);
	return sim_gen_write(stdout, a->cdf, a->hosts, a->load, bandwidth, a->time, a->seed);
}

static const struct opt GEN_OPTS[] = {
	{ "--cdf", OPT_PATH, offsetof(struct gen_args, cdf), 0, 0, 0, false },
	{ "--hosts", OPT_UNSIGNED, offsetof(struct gen_args, hosts), 0, 2, SIM_TOPO_MAX_NODES, false },
	{ "--load", OPT_REAL, offsetof(struct gen_args, load), 0, 0, 1, true },
	{ "--bandwidth", OPT_RATE, offsetof(struct gen_args, bandwidth), 0, 0, 0, false },
	{ "--time", OPT_REAL, offsetof(struct gen_args, time), 0, 0, 1e6, true },
	{ "--seed", OPT_U64, offsetof(struct gen_args, seed), 0, 0, (double)UINT64_MAX, false },
	END_OPTS,
};

/* sim fct FCT_FILE */
struct fct_args {
	unsigned step;
	uint64_t time_limit;
};

static void fct_defaults(void *p)
{
	struct fct_args *a = p;

	a->step = 5;
	a->time_limit = SIM_FCT_TIME_LIMIT_NS;
}

static int fct_run(void *p, char **pos, unsigned npos)
{
	const struct fct_args *a = p;
	struct sim_fct_bucket b[100];
	unsigned nb, flows;

	(void)npos;
	int rc = sim_fct_analyze(pos[0], a->step, a->time_limit, b, &nb, &flows);
	if (rc) {
		fprintf(stderr, "softrnic sim fct: %s: %s\n", pos[0], strerror(rc));
		return 2;
	}
	if (!flows) {
		fprintf(stderr, "softrnic sim fct: %s: no finished flow with dport 100\n", pos[0]);
		return 2;
	}
	for (unsigned i = 0; i < nb; i++)
		printf("%.3f %" PRIu64 "\t%.3f %.3f %.3f\n", b[i].percentile / 100.0, b[i].size, b[i].p50, b[i].p95,
		       b[i].p99);
	return 0;
}

static const struct opt FCT_OPTS[] = {
	{ "--step", OPT_UNSIGNED, offsetof(struct fct_args, step), 0, 1, 100, false },
	{ "--time-limit", OPT_U64, offsetof(struct fct_args, time_limit), 0, 0, (double)UINT64_MAX, false },
	END_OPTS,
};

/* sim exp NAME */
static void exp_defaults(void *p)
{
	struct sim_exp_opts *a = p;

	a->seed = 1;
}

static int exp_run(void *p, char **pos, unsigned npos)
{
	struct sim_exp_opts *a = p;
	unsigned i = 0;

	(void)npos;
	while (sim_exp_name(i) && strcmp(sim_exp_name(i), pos[0]))
		i++;
	if (!sim_exp_name(i)) {
		fprintf(stderr, "softrnic sim exp: %s: no such experiment (softrnic sim exp --help lists them)\n", pos[0]);
		return 2;
	}
	if (!a->out[0])
		snprintf(a->out, sizeof(a->out), "sim-out/%s", pos[0]);
	int rc = sim_exp_run(pos[0], a);
	if (!rc)
		print_summary(a->out);
	return rc;
}

static const struct opt EXP_OPTS[] = {
	{ "--quick", OPT_FLAG, offsetof(struct sim_exp_opts, quick), 0, 0, 0, false },
	{ "--seed", OPT_U64, offsetof(struct sim_exp_opts, seed), 0, 0, (double)UINT64_MAX, false },
	{ "--out", OPT_TEXT, offsetof(struct sim_exp_opts, out), sizeof(((struct sim_exp_opts *)0)->out), 0, 0, false },
	{ "--config", OPT_TEXT, offsetof(struct sim_exp_opts, config), sizeof(((struct sim_exp_opts *)0)->config), 0,
	  0, false },
	{ "--flows", OPT_UNSIGNED, offsetof(struct sim_exp_opts, flows), 0, 1, UINT32_MAX, false },
	END_OPTS,
};

union any_args {
	struct run_args run;
	struct topo_args topo;
	struct gen_args gen;
	struct fct_args fct;
	struct sim_exp_opts exp;
};

static const struct subcommand SUBCOMMANDS[] = {
	{ "run", RUN_OPTS, run_defaults, run_run },
	{ "topo", TOPO_OPTS, topo_defaults, topo_run },
	{ "gen", GEN_OPTS, gen_defaults, gen_run },
	{ "fct", FCT_OPTS, fct_defaults, fct_run },
	{ "exp", EXP_OPTS, exp_defaults, exp_run },
};
#define NSUB (sizeof(SUBCOMMANDS) / sizeof(SUBCOMMANDS[0]))

int sim_cli(const struct cli_args *a)
{
	union any_args args;
	unsigned i = 0;

	while (i < NSUB && strcmp(a->cmd->name, SUBCOMMANDS[i].name))
		i++;
	if (i == NSUB) {
		fprintf(stderr, "softrnic sim: %s: not a command (run, topo, gen, fct or exp)\n", a->cmd->name);
		return 2;
	}
	const struct subcommand *c = &SUBCOMMANDS[i];
	memset(&args, 0, sizeof(args));
	c->defaults(&args);
	/* The options given, in the table's order (of a repeated option,
	 * cli_parse keeps the last). */
	for (const struct opt *o = c->opts; o->name; o++) {
		const struct cli_val *v = cli_get(a, o->name);
		if (v && set_opt(c->name, o, o->kind == OPT_FLAG ? "" : v->text, &args))
			return 2;
	}
	return c->run(&args, a->argv, (unsigned)a->argc);
}
