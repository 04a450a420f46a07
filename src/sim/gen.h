/*
 * gen.h — `softrnic sim topo` and `softrnic sim gen` (gen.c): a fat-tree
 * topology and a Poisson workload from a flow-size CDF, in the HPCC
 * simulator's file formats, for `softrnic sim run`.
 */
#ifndef SOFTRNIC_SIM_GEN_H
#define SOFTRNIC_SIM_GEN_H

/* argv[0] is "topo" / "gen"; the exit status (0, or 2 with a message). */
int sim_topo_main(int argc, char **argv);
int sim_gen_main(int argc, char **argv);

#endif
