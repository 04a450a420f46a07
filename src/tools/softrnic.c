/*
 * softrnic.c — entry point of the `softrnic` command-line tool: finds the
 * subcommand by name and runs it.  The commands themselves live in
 * cmd_*.c, one file each.
 */
#include <stdio.h>
#include <string.h>

#include "tools/commands.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
};

static const struct command commands[] = {
	{ "run", cmd_run, "run [--no-shim] [--] CMD [ARGS]  run a program on softrnic (libraries, /sys and /dev entries)" },
	{ "decode", cmd_decode, "decode [-q] FILE.pcap   print each RoCEv2 packet, check its ICRC" },
	{ "devices", cmd_devices, "devices                 list softrnic devices, addresses and GIDs" },
	{ "stats", cmd_stats, "stats [--qp] [PID]      show the counters (or the QPs) of running devices" },
	{ "sim", cmd_sim, "sim exp NAME [--quick] [--seed N] [--out DIR]  the fabric simulator (docs/experiments.md)" },
	{ "kv", cmd_kv, "kv serve|get|set|del|incr|stats|check-aof ...  the RDMA key-value store (softrnic kv for help)" },
	{ "nvmf", cmd_nvmf, "nvmf serve|discover|perf ...  NVMe over Fabrics (RDMA) target and host (softrnic nvmf for help)" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: softrnic COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %s\n", commands[i].usage);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "softrnic: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
