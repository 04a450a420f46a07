/*
 * cmd_sim.c — `softrnic sim ...`: the fabric simulator (src/sim), linked
 * into the tool: it needs nothing but the rnic it runs on simulated time.
 *
 * The table below describes sim's commands (run, topo, gen, fct, exp)
 * and their options for tools/cli_parse.h: softrnic.c's parse answers
 * their --help and refuses a bad value (`sim exp gbn-loss --seed abc`)
 * with one line before the simulator runs; sim_cli (sim_cli.c) takes
 * the parsed values (cli_args), checks what this table cannot say (a
 * rate's units, a text's length, the simulator's own ranges) and runs
 * the command.
 */
#include "tools/commands.h"
#include "tools/sim_cli.h"

#define SEED { "--seed", 0, CLI_UINT, "N", "the random seed (default 1)", 0, ~0ull, 0, 0, 0, 0, 0 }
#define OUT(what) { "--out", 0, CLI_STRING, "DIR", what, 0, 0, 0, 0, 0, 0, 0 }

static const struct cli_opt run_opts[] = {
	OUT("where the results go (default sim-out/run)"),
	SEED,
	{ "--sample-us", 0, CLI_UINT, "N", "sample the queues every N us", 0, 1000000000, 0, 0, 0, 0, 0 },
	{ "--trace-limit-mb", 0, CLI_DOUBLE, "N", "cap the trace files at N MiB (default 1024)", 0, 0, 0, 1e9,
	  "a size in MiB", 0, 0 },
	{ "--flows", 0, CLI_UINT, "N", "only the first N flows of the flow file", 0, 1u << 31, 0, 0, 0, 0, 0 },
	{ "--threads", 0, CLI_UINT, "N", "simulate on N threads (default 1)", 0, 1024, 0, 0, 0, 0, 0 },
	{ "--partitions", 0, CLI_UINT, "N", "cut the fabric into N partitions", 0, 1u << 20, 0, 0, 0, 0, 0 },
	{ 0 }
};

static const struct cli_opt fct_opts[] = {
	{ "--step", 0, CLI_UINT, "PERCENT", "the flow-size buckets' step (default 5)", 1, 100, 0, 0, 0, 0, 0 },
	{ "--time-limit", 0, CLI_UINT, "NS", "flows that end later are not counted", 0, ~0ull, 0, 0, 0, 0, 0 },
	{ 0 }
};

static const struct cli_opt topo_opts[] = {
	{ "--rate", 0, CLI_STRING, "R", "host links' rate (default 100Gbps)", 0, 0, 0, 0, 0, 0, 0 },
	{ "--core-rate", 0, CLI_STRING, "R", "switch-to-switch links' rate (default: --rate)", 0, 0, 0, 0, 0, 0,
	  0 },
	{ "--delay", 0, CLI_STRING, "D", "every link's delay (default 1000ns)", 0, 0, 0, 0, 0, 0, 0 },
	{ 0 }
};

static const struct cli_opt gen_opts[] = {
	{ "--cdf", 0, CLI_STRING, "FILE", "the flow-size distribution (required)", 0, 0, 0, 0, 0, 0, 0 },
	{ "--hosts", 0, CLI_UINT, "N", "hosts (required)", 1, 1u << 24, 0, 0, 0, 0, 0 },
	{ "--load", 0, CLI_DOUBLE, "L", "the load, in (0, 1] (required)", 0, 0, 1e-9, 1, "a load in", 0, 0 },
	{ "--bandwidth", 0, CLI_STRING, "R", "the hosts' rate (default 100Gbps)", 0, 0, 0, 0, 0, 0, 0 },
	{ "--time", 0, CLI_DOUBLE, "S", "seconds of arrivals (default 0.1)", 0, 0, 1e-9, 1e6, "a time in s", 0, 0 },
	SEED,
	{ 0 }
};

static const struct cli_opt exp_opts[] = {
	{ "--quick", 0, CLI_FLAG, NULL, "a short run", 0, 0, 0, 0, 0, 0, 0 },
	SEED,
	OUT("where the results go (default sim-out/NAME)"),
	{ "--config", 0, CLI_STRING, "FILE", "hpcc-workload: the HPCC config.txt", 0, 0, 0, 0, 0, 0, 0 },
	{ "--flows", 0, CLI_UINT, "N", "cc-compare: this many flows", 1, 1u << 31, 0, 0, 0, 0, 0 },
	{ 0 }
};

const char sim_cli_summary[] = "the fabric simulator: experiments, HPCC runs and their inputs";

const struct cli_cmd sim_cli_commands[] = {
	{ "run", "run an HPCC config.txt", "CONFIG", 1, 1, run_opts, 0,
	  "The options follow CONFIG.  The summary is printed at the end.", 0, 0 },
	{ "topo", "write a topology file", "fat-tree K | leaf-spine LEAVES SPINES HOSTS_PER_LEAF | dumbbell N", 2,
	  4, topo_opts, 0, "fat-tree: K even, 2..28.", 0, 0 },
	{ "gen", "write a flow file (on stdout) from a flow-size distribution", "", 0, 0, gen_opts, 0, 0, 0, 0 },
	{ "fct", "flow completion times of an FCT file (HPCC's fct_analysis.py)", "FCT_FILE", 1, 1, fct_opts, 0, 0,
	  0, 0 },
	{ "exp", "run one of the experiments of docs/experiments.md", "NAME", 1, 1, exp_opts, 0,
	  "NAME: gbn-loss incast-pfc dcqcn-fairness pfc-storm ib-credit pfc-deadlock hpcc-workload\n"
	  "cc-compare.", 0, 0 },
	{ 0 }
};

int cmd_sim(const struct cli_args *a)
{
	return sim_cli(a);
}
