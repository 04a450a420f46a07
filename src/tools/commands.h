/*
 * commands.h — the subcommands of the `softrnic` command-line tool.
 * Each lives in its own cmd_*.c file; softrnic.c holds the command table
 * (tools/cli_parse.h), parses argv with it and runs the command reached,
 * its options and arguments already checked.  Every command returns the
 * process exit status.
 */
#ifndef SOFTRNIC_TOOLS_COMMANDS_H
#define SOFTRNIC_TOOLS_COMMANDS_H

#include "tools/cli_parse.h"

int cmd_decode(const struct cli_args *a);   /* cmd_decode.c: print a pcap's RoCEv2 packets */
int cmd_devices(const struct cli_args *a);  /* cmd_stats.c: list devices and GIDs */
int cmd_stats(const struct cli_args *a);    /* cmd_stats.c: counters of running devices */
int cmd_kv(const struct cli_args *a);       /* cmd_kv.c: runs bin/softrnic-kv */
int cmd_nvmf(const struct cli_args *a);     /* cmd_nvmf.c: runs bin/softrnic-nvmf */
int cmd_sim(const struct cli_args *a);      /* cmd_sim.c: the fabric simulator (src/sim) */
int cmd_run(const struct cli_args *a);      /* cmd_run.c: run a program on softrnic */

/* The tables of the commands that live in other files (their cmd_*.c). */
extern const struct cli_cmd sim_cli_commands[];    /* cmd_sim.c */
extern const char sim_cli_summary[];

#endif
