/*
 * softrnic.c — entry point of the `softrnic` command-line tool: the table
 * of its commands (tools/cli_parse.h), from which argv is parsed, --help
 * and `help` are answered and bad values refused, then the command
 * reached is run.  The commands themselves live in cmd_*.c, one file
 * each; kv's and nvmf's tables are their programs' own (kv/kv_cli.c,
 * nvmf/nvmf_cli.c), so `softrnic kv ...` and softrnic-kv parse alike.
 */
#include <stdio.h>
#include <string.h>

#include "kv/kv_cli.h"
#include "nvmf/nvmf_cli.h"
#include "tools/commands.h"
#include "tools/version.h"

enum { CMD_RUN = 1, CMD_DECODE, CMD_DEVICES, CMD_STATS, CMD_SIM, CMD_KV, CMD_NVMF };

static const struct cli_opt run_opts[] = {
	{ "--no-shim", 0, CLI_FLAG, NULL, "only the library path (what LD_LIBRARY_PATH alone gives)", 0, 0, 0, 0, 0,
	  0, 0 },
	{ 0 }
};

static const struct cli_opt decode_opts[] = {
	{ "-q", 0, CLI_FLAG, NULL, "print only malformed packets and bad ICRCs, then the summary", 0, 0, 0, 0, 0, 0,
	  0 },
	{ 0 }
};

static const struct cli_opt stats_opts[] = {
	{ "--qp", 0, CLI_FLAG, NULL, "one line per QP: state, PSNs, retransmissions, rate, ECN/CNP counters", 0, 0,
	  0, 0, 0, 0, 0 },
	{ "--watch", 'w', CLI_FLAG, NULL, "print again every second", 0, 0, 0, 0, 0, 0, 0 },
	{ "--count", 'n', CLI_UINT, "COUNT", "with -w, stop after COUNT rounds", 1, 1u << 30, 0, 0, 0, 0, 0 },
	{ 0 }
};

static const struct cli_cmd commands[] = {
	{ "run", "run a program on softrnic (its libraries, /sys and /dev entries)", "CMD [ARGS]", 1, CLI_ANY,
	  run_opts, 0,
	  "Runs CMD with softrnic's libibverbs.so.1 and librdmacm.so.1 (from $SOFTRNIC_LIBDIR, else\n"
	  "../lib/softrnic or ../lib beside this program), and the /sys/class/infiniband and\n"
	  "/dev/infiniband entries middleware looks for.  Options end at CMD.",
	  CMD_RUN, CLI_STOP_AT_ARG },
	{ "decode", "print each RoCEv2 packet of a capture, check its ICRC", "FILE.pcap", 1, 1, decode_opts, 0,
	  "Exit 0 only if every RoCEv2 frame decoded and carried a correct ICRC.", CMD_DECODE, 0 },
	{ "devices", "list softrnic devices, addresses and GIDs", "", 0, 0, NULL, 0, 0, CMD_DEVICES, 0 },
	{ "stats", "show the counters (or the QPs) of running devices", "[PID]", 0, 1, stats_opts, 0,
	  "Without PID, every device of this user (root: of every user).", CMD_STATS, 0 },
	{ "sim", sim_cli_summary, NULL, 0, 0, NULL, sim_cli_commands, "See docs/experiments.md.", CMD_SIM, 0 },
	{ "kv", kv_cli_summary, NULL, 0, 0, NULL, kv_cli_commands, kv_cli_details, CMD_KV, 0 },
	{ "nvmf", nvmf_cli_summary, NULL, 0, 0, NULL, nvmf_cli_commands, nvmf_cli_details, CMD_NVMF, 0 },
	{ 0 }
};

int main(int argc, char **argv)
{
	static const struct cli_cmd root = {
		"softrnic", "a user-space RDMA NIC (RoCEv2 over UDP): its tools", NULL, 0, 0, NULL, commands,
		"The environment variables the library reads (SOFTRNIC_*) are in softrnic(1).", 0, 0 };
	struct cli_args a;
	int rc;

	rc = cli_parse(&root, "softrnic", SOFTRNIC_VERSION, argc, argv, &a);
	if (rc != CLI_RUN)
		return rc;
	switch (a.chain[1]->id) {
	case CMD_RUN: return cmd_run(&a);
	case CMD_DECODE: return cmd_decode(&a);
	case CMD_DEVICES: return cmd_devices(&a);
	case CMD_STATS: return cmd_stats(&a);
	case CMD_SIM: return cmd_sim(&a);
	case CMD_KV: return cmd_kv(&a);
	case CMD_NVMF: return cmd_nvmf(&a);
	}
	return cli_error(&a, "no such command");
}
