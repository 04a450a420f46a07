/*
 * kv_cli.c — softrnic-kv's commands and options as data (kv_cli.h): the
 * ranges here are the ones the server and client accept, so that a bad
 * value is refused on the command line with its reason rather than deep
 * in a connection.
 */
#include "kv/kv_cli.h"

#include "kv/proto.h"

#define SERVER { "--server", 0, CLI_STRING, "A[:P],...", \
		 "the server (default 127.0.0.1:18860); a list shards the keys over them", 0, 0, 0, 0, 0, 0, 0 }
#define TRANSPORT { "--transport", 0, CLI_CHOICE, NULL, "how requests travel (default write)", \
		    0, 0, 0, 0, 0, transports, 0 }

static const char *const transports[] = { "send", "write", NULL };
static const char *const fsyncs[] = { "always", "everysec", "no", NULL };
static const char *const ops[] = { "get", "set", NULL };

static const struct cli_opt serve_opts[] = {
	{ "--addr", 0, CLI_STRING, "A", "listen on this address only (default: all)", 0, 0, 0, 0, 0, 0, 0 },
	{ "--port", 0, CLI_UINT, "P", "listen on this port (default 18860)", 1, 65535, 0, 0, "a port", 0, 0 },
	{ "--mem", 0, CLI_SIZE, "SIZE", "the table's memory, with k, m, g or t (default 64m)", 1, 1ull << 40,
	  0, 0, "it serves", 0, CLI_PHYS_MEM },
	{ "--aof", 0, CLI_STRING, "FILE", "log every change to FILE and load it at start", 0, 0, 0, 0, 0, 0, 0 },
	{ "--appendfsync", 0, CLI_CHOICE, NULL, "when the log is synced (default everysec)", 0, 0, 0, 0, 0, fsyncs,
	  0 },
	{ "--aof-rewrite-min", 0, CLI_SIZE, "SIZE", "rewrite the log once it is this big and twice the table", 1,
	  1ull << 40, 0, 0, 0, 0, 0 },
	{ "--busy-poll", 0, CLI_FLAG, NULL, "poll the completion queue without sleeping", 0, 0, 0, 0, 0, 0, 0 },
	{ "--probe-ms", 0, CLI_UINT, "MS", "probe idle clients this often", 1, 3600000, 0, 0, "a time in ms", 0, 0 },
	{ "-v", 0, CLI_FLAG, NULL, "say each connection and disconnection", 0, 0, 0, 0, 0, 0, 0 },
	{ 0 }
};

static const struct cli_opt get_opts[] = {
	SERVER, TRANSPORT,
	{ "--one-sided", 0, CLI_FLAG, NULL, "RDMA READs of the table: no server CPU", 0, 0, 0, 0, 0, 0, 0 },
	{ 0 }
};

static const struct cli_opt set_opts[] = {
	SERVER, TRANSPORT,
	{ "--ttl", 0, CLI_UINT, "MS", "the key expires after MS milliseconds", 1, 1ull << 62, 0, 0,
	  "a time in ms", 0, 0 },
	{ 0 }
};

static const struct cli_opt client_opts[] = { SERVER, TRANSPORT, { 0 } };

static const struct cli_opt bench_opts[] = {
	{ "--server", 0, CLI_STRING, "A[:P]", "the server (default 127.0.0.1:18860)", 0, 0, 0, 0, 0, 0, 0 },
	{ "--op", 0, CLI_CHOICE, NULL, "the request (default get)", 0, 0, 0, 0, 0, ops, 0 },
	{ "--one-sided", 0, CLI_FLAG, NULL, "GETs as RDMA READs of the table", 0, 0, 0, 0, 0, 0, 0 },
	{ "--clients", 0, CLI_UINT, "N", "connections (default 1)", 1, 256, 0, 0, 0, 0, 0 },
	{ "--threads", 0, CLI_UINT, "T", "threads serving them (default 1; at most N)", 1, 256, 0, 0, 0, 0, 0 },
	{ "--requests", 0, CLI_UINT, "R", "requests in all (default 100000; at least N)", 1, 1ull << 40, 0, 0, 0,
	  0, 0 },
	{ "--keys", 0, CLI_UINT, "K", "over K keys (default 1000)", 1, 100000000, 0, 0, 0, 0, 0 },
	{ "--value-size", 0, CLI_UINT, "BYTES", "value size (default 32)", 0, KV_MAX_VALUE, 0, 0, 0, 0, 0 },
	{ "--pipeline", 0, CLI_UINT, "D", "requests in flight per connection (default 1)", 1, KV_DEPTH, 0, 0, 0,
	  0, 0 },
	TRANSPORT,
	{ "--spin-us", 0, CLI_UINT, "U", "spin this long before sleeping for a completion", 0, 10000000, 0, 0, 0,
	  0, 0 },
	{ "--no-preload", 0, CLI_FLAG, NULL, "GETs of keys not stored first", 0, 0, 0, 0, 0, 0, 0 },
	{ "--csv", 0, CLI_FLAG, NULL, "one CSV line", 0, 0, 0, 0, 0, 0, 0 },
	{ 0 }
};

static const struct cli_opt check_aof_opts[] = {
	{ "--fix", 0, CLI_FLAG, NULL, "copy FILE to FILE.bak-<unix time>, then cut it at its first bad record", 0,
	  0, 0, 0, 0, 0, 0 },
	{ 0 }
};

const char kv_cli_summary[] = "the RDMA key-value store (docs/kv.md)";
const char kv_cli_details[] =
	"Exit status: 0 success, 1 no such key (get, del) or a log that is not valid\n"
	"(check-aof), 2 any error (with a one-line message on stderr).";

const struct cli_cmd kv_cli_commands[] = {
	{ "serve", "serve a table in memory (until SIGINT or SIGTERM)", "", 0, 0, serve_opts, 0,
	  "The log's records are checked as it loads; 'check-aof' says what is wrong with one.", KV_CMD_SERVE, 0 },
	{ "get", "print a key's value", "KEY", 1, 1, get_opts, 0, 0, KV_CMD_GET, 0 },
	{ "set", "store a value (VALUE - reads it from stdin)", "KEY VALUE|-", 2, 2, set_opts, 0, 0, KV_CMD_SET,
	  0 },
	{ "mget", "print several keys' values, one a line, (nil) if missing", "KEY...", 1, KV_MGET_MAX,
	  client_opts, 0, 0, KV_CMD_MGET, 0 },
	{ "del", "delete a key", "KEY", 1, 1, client_opts, 0, 0, KV_CMD_DEL, 0 },
	{ "incr", "add DELTA (default 1) to a number and print it", "KEY [DELTA]", 1, 2, client_opts, 0, 0,
	  KV_CMD_INCR, 0 },
	{ "stats", "print the servers' counters", "", 0, 0, client_opts, 0, 0, KV_CMD_STATS, 0 },
	{ "bench", "requests/s and latency of GETs or SETs", "", 0, 0, bench_opts, 0,
	  "N connections served by T threads; R requests over K keys, D in flight per connection;\n"
	  "GETs preload the keys.  Prints requests/s, p50 and p99 latency, and the server's CPU per\n"
	  "operation.", KV_CMD_BENCH, 0 },
	{ "check-aof", "is FILE a whole append-only log? (--fix cuts it at its first bad record)", "FILE", 1, 1,
	  check_aof_opts, 0,
	  "Exit 0: FILE is whole records to its end; 1: it is not, and the offset of its first bad\n"
	  "record (or of a torn last record, which serve cuts) and how much before it is valid are\n"
	  "printed.  --fix: if it is not valid, first copy it to FILE.bak-<unix time> (a new file,\n"
	  "never over an existing one), then cut FILE at its first bad record, and say what was kept\n"
	  "and what dropped; exit 0 when FILE is valid after it.  Exit 2: FILE could not be read or\n"
	  "fixed: then it is left as it is.", KV_CMD_CHECK_AOF, 0 },
	{ 0 }
};
