/*
 * sim_cli.h — the command line of `softrnic sim` (sim_cli.c), called by
 * cmd_sim.c.
 */
#ifndef SOFTRNIC_TOOLS_SIM_CLI_H
#define SOFTRNIC_TOOLS_SIM_CLI_H

struct cli_args;

/* Runs the command cli_parse reached under `sim` (a->cmd: run, topo, gen,
 * fct or exp) with its options and arguments; the exit status (0, or 2
 * after one line). */
int sim_cli(const struct cli_args *a);

#endif
