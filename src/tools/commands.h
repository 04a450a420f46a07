/*
 * commands.h — the subcommands of the `softrnic` command-line tool.
 * Each lives in its own cmd_*.c file; softrnic.c dispatches by name.
 * Every command returns the process exit status.
 */
#ifndef SOFTRNIC_TOOLS_COMMANDS_H
#define SOFTRNIC_TOOLS_COMMANDS_H

int cmd_decode(int argc, char **argv);   /* cmd_decode.c: print a pcap's RoCEv2 packets */
int cmd_devices(int argc, char **argv);  /* cmd_stats.c: list devices and GIDs */
int cmd_stats(int argc, char **argv);    /* cmd_stats.c: counters of running devices */
int cmd_kv(int argc, char **argv);       /* cmd_kv.c: runs bin/softrnic-kv */
int cmd_nvmf(int argc, char **argv);     /* cmd_nvmf.c: runs bin/softrnic-nvmf */
int cmd_sim(int argc, char **argv);      /* cmd_sim.c: the fabric simulator (src/sim) */
int cmd_run(int argc, char **argv);      /* cmd_run.c: run a program on softrnic */

#endif
