/*
 * sim_cli.h — the command line of `softrnic sim` (sim_cli.c), called by
 * cmd_sim.c.
 */
#ifndef SOFTRNIC_TOOLS_SIM_CLI_H
#define SOFTRNIC_TOOLS_SIM_CLI_H

/* argv[0] is "sim"; the exit status (0, or 2 after one line). */
int sim_cli(int argc, char **argv);

#endif
