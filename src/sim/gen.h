/*
 * gen.h — the inputs of `softrnic sim run`, generated (gen.c): a
 * topology (fat-tree, leaf-spine, dumbbell) and a Poisson workload from
 * a flow-size CDF, in the HPCC simulator's file formats.  `softrnic sim
 * topo` and `softrnic sim gen` (src/tools/sim_cli.c) write them to
 * standard output.
 */
#ifndef SOFTRNIC_SIM_GEN_H
#define SOFTRNIC_SIM_GEN_H

#include <stdint.h>
#include <stdio.h>

#define SIM_TOPO_MAX_K 28               /* a fat-tree's K: even, 2 .. this */
#define SIM_TOPO_MAX_NODES 8192         /* SIM_MAX_NODES: what sim run loads */

enum sim_topo_kind { SIM_TOPO_FAT_TREE, SIM_TOPO_LEAF_SPINE, SIM_TOPO_DUMBBELL };

struct sim_topo {
	enum sim_topo_kind kind;
	/* fat-tree: K; leaf-spine: leaves, spines, hosts per leaf;
	 * dumbbell: hosts per side */
	unsigned n[3];
	const char *rate;               /* host links, as written ("100Gbps") */
	const char *core_rate;          /* switch-to-switch links (NULL: rate) */
	const char *delay;              /* every link ("1000ns") */
};

/* The topology file of t to out.  0, or EINVAL (nothing written) for a
 * shape out of range: an odd K or one above SIM_TOPO_MAX_K, a zero, more
 * than SIM_TOPO_MAX_NODES nodes. */
int sim_topo_write(FILE *out, const struct sim_topo *t);

/* The flow file of `sim gen` (flows from the CDF at `cdf_path`, Poisson
 * arrivals offering `load` of each of `hosts` links of `bandwidth` bit/s
 * for `duration` s, drawn from `seed`) written to `out`: 0, or 2 after a
 * message. */
int sim_gen_write(FILE *out, const char *cdf_path, unsigned hosts, double load, double bandwidth,
		  double duration, uint64_t seed);

#endif
