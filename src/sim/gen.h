/*
 * gen.h — `softrnic sim topo` and `softrnic sim gen` (gen.c): a fat-tree
 * topology and a Poisson workload from a flow-size CDF, in the HPCC
 * simulator's file formats, for `softrnic sim run`.
 */
#ifndef SOFTRNIC_SIM_GEN_H
#define SOFTRNIC_SIM_GEN_H

#include <stdint.h>
#include <stdio.h>

/* argv[0] is "topo" / "gen"; the exit status (0, or 2 with a message). */
int sim_topo_main(int argc, char **argv);
int sim_gen_main(int argc, char **argv);

/* The flow file of `sim gen` (flows from the CDF at `cdf_path`, Poisson
 * arrivals offering `load` of each of `hosts` links of `bandwidth` bit/s
 * for `duration` s, drawn from `seed`) written to `out`: 0, or 2 after a
 * message. */
int sim_gen_write(FILE *out, const char *cdf_path, unsigned hosts, double load, double bandwidth,
		  double duration, uint64_t seed);

#endif
