/*
 * exp.h — the simulator's experiments (exp.c), run by `softrnic sim exp
 * NAME` (src/tools/sim_cli.c) and by anything else that links src/sim.
 */
#ifndef SOFTRNIC_SIM_EXP_H
#define SOFTRNIC_SIM_EXP_H

#include <stdbool.h>
#include <stdint.h>

struct sim_exp_opts {
	bool quick;             /* the short form (tests/sim) */
	uint64_t seed;
	char out[512];          /* the output folder (made if missing) */
	char config[512];       /* hpcc-workload's config; "" for data/hpcc's */
	unsigned flows;         /* cc-compare: 0, or each flow file's first N */
};

/* The experiments' names, in the order docs/experiments.md gives them. */
unsigned sim_exp_count(void);
const char *sim_exp_name(unsigned i);       /* NULL past the last */
/* Run experiment `name` into o->out (summary.txt and its CSVs).  0, or 2
 * after a one-line message (an unknown name, an unwritable folder). */
int sim_exp_run(const char *name, const struct sim_exp_opts *o);
/* mkdir -p (errors are left to the open that follows). */
void sim_make_dirs(const char *path);

#endif
