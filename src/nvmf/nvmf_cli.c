/*
 * nvmf_cli.c — softrnic-nvmf's commands and options as data
 * (nvmf_cli.h): what a target and a host take, with the ranges the
 * target and the host accept.
 */
#include "nvmf/nvmf_cli.h"

#define ADDR(what) { "--addr", 0, CLI_STRING, "A", what, 0, 0, 0, 0, 0, 0, 0 }
#define PORT(what) { "--port", 0, CLI_UINT, "P", what, 1, 65535, 0, 0, "a port", 0, 0 }
#define HOSTNQN { "--hostnqn", 0, CLI_STRING, "NQN", "this host's NQN (default: one made from a UUID)", \
		  0, 0, 0, 0, 0, 0, 0 }
#define KATO { "--kato", 0, CLI_UINT, "MS", "keep-alive timeout asked for (0: none)", 0, 3600000, 0, 0, \
	       "a time in ms", 0, 0 }

static const char *const rws[] = { "read", "write", "randread", "randwrite", NULL };

static const struct cli_opt serve_opts[] = {
	{ "--nqn", 0, CLI_STRING, "NQN", "the subsystem's NQN (required)", 0, 0, 0, 0, 0, 0, 0 },
	{ "--file", 0, CLI_STRING, "PATH", "the namespace is this file (or block device)", 0, 0, 0, 0, 0, 0, 0 },
	{ "--size", 0, CLI_SIZE, "SIZE", "with --file: make it this big", 1, 1ull << 44, 0, 0, 0, 0, 0 },
	{ "--mem", 0, CLI_SIZE, "SIZE", "the namespace is this much memory", 1, 1ull << 44, 0, 0, 0, 0,
	  CLI_PHYS_MEM },
	ADDR("listen on this address only (default: all)"),
	PORT("listen on this port (default 4420)"),
	{ "--block-size", 0, CLI_SIZE, "BYTES", "the namespace's block size: 512, 1k, 2k or 4k (default 512)", 512,
	  4096, 0, 0, "a block can be", 0, CLI_POW2 },
	{ "--allow-host", 0, CLI_STRING, "NQN", "accept only this host NQN", 0, 0, 0, 0, 0, 0, 0 },
	{ "--spin-us", 0, CLI_UINT, "N", "poll this long before sleeping (default 50)", 0, 1000000, 0, 0, 0, 0, 0 },
	{ "-v", 0, CLI_FLAG, NULL, "say each connection and command error", 0, 0, 0, 0, 0, 0, 0 },
	{ 0 }
};

static const struct cli_opt discover_opts[] = {
	ADDR("the target's address (default 127.0.0.1 when --port is given)"),
	PORT("the target's port (default 4420 when --addr is given)"),
	HOSTNQN, KATO,
	{ 0 }
};

static const struct cli_opt perf_opts[] = {
	{ "--nqn", 0, CLI_STRING, "NQN", "the subsystem to connect to (required)", 0, 0, 0, 0, 0, 0, 0 },
	ADDR("the target's address (default 127.0.0.1)"),
	PORT("the target's port (default 4420)"),
	{ "--rw", 0, CLI_CHOICE, NULL, "the workload (default randread)", 0, 0, 0, 0, 0, rws, 0 },
	{ "--bs", 0, CLI_SIZE, "SIZE", "bytes per I/O (default 4k; a multiple of the block size)", 1, 1u << 24, 0,
	  0, 0, 0, 0 },
	{ "--qd", 0, CLI_UINT, "N", "I/Os in flight per I/O queue (default 8)", 1, NVMF_CLI_MAX_QD, 0, 0, 0, 0, 0 },
	{ "--queues", 0, CLI_UINT, "N", "I/O queues, each its own RDMA connection (default 1)", 1,
	  NVMF_CLI_MAX_QUEUES, 0, 0, 0, 0, 0 },
	{ "--time", 0, CLI_DOUBLE, "SECONDS", "how long (default 2)", 0, 0, 0.001, 86400, "a time in s", 0, 0 },
	{ "--span", 0, CLI_SIZE, "SIZE", "use only the first SIZE bytes of the namespace", 1, 1ull << 44, 0, 0, 0,
	  0, 0 },
	{ "--verify", 0, CLI_FLAG, NULL, "write a pattern first, check every block read", 0, 0, 0, 0, 0, 0, 0 },
	KATO,
	{ "--no-inline", 0, CLI_FLAG, NULL, "writes by keyed SGL even when they fit in the capsule", 0, 0, 0, 0, 0,
	  0, 0 },
	{ "--invalidate", 0, CLI_FLAG, NULL, "ask for SEND with invalidate and check it comes", 0, 0, 0, 0, 0, 0,
	  0 },
	HOSTNQN,
	{ "--seed", 0, CLI_UINT, "N", "the random offsets' seed", 0, ~0ull, 0, 0, 0, 0, 0 },
	{ 0 }
};

const char nvmf_cli_summary[] = "NVMe over Fabrics (RDMA): a target, and a host (docs/nvmf.md)";
const char nvmf_cli_details[] =
	"Exit status: 0 success; 1 perf ran but saw failed commands, verify mismatches or a\n"
	"missing invalidation; 2 a refused argument, or a failure to connect or serve.";

const struct cli_cmd nvmf_cli_commands[] = {
	{ "serve", "serve a namespace (a file or memory) as a subsystem", "", 0, 0, serve_opts, 0,
	  "--nqn and one of --file and --mem are required.  The counters go to stderr when it stops\n"
	  "(SIGINT, SIGTERM).", NVMF_CMD_SERVE, 0 },
	{ "discover", "print a target's discovery log", "", 0, 0, discover_opts, 0,
	  "The target: --addr and/or --port.", NVMF_CMD_DISCOVER, 0 },
	{ "perf", "IOPS, bandwidth and latency against a subsystem", "", 0, 0, perf_opts, 0,
	  "The target: --nqn (with --addr and --port unless 127.0.0.1:4420).  --queues N connects N I/O\n"
	  "queues to one controller (qid 1..N, each with its Fabrics Connect) and keeps --qd commands\n"
	  "in flight on each; every queue must complete commands (exit 1 otherwise).", NVMF_CMD_PERF, 0 },
	{ 0 }
};
