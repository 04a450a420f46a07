/*
 * exp.h — the simulator's command line (exp.c): `softrnic sim exp NAME`.
 */
#ifndef SOFTRNIC_SIM_EXP_H
#define SOFTRNIC_SIM_EXP_H

/* argv[0] is "sim"; the exit status (0, or 2 with a message). */
int sim_cli(int argc, char **argv);

#endif
