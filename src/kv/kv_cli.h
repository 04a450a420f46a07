/*
 * kv_cli.h — the command table of softrnic-kv (kv_cli.c): its commands,
 * their options and value ranges, for tools/cli_parse.h.  Both
 * softrnic-kv (kv_main.c runs the commands) and `softrnic` (which answers
 * `softrnic kv ... --help` and refuses bad values itself, then runs
 * softrnic-kv) are built with it.
 */
#ifndef SOFTRNIC_KV_KV_CLI_H
#define SOFTRNIC_KV_KV_CLI_H

#include "tools/cli_parse.h"

enum kv_cmd_id {
	KV_CMD_SERVE = 1,
	KV_CMD_GET,
	KV_CMD_SET,
	KV_CMD_MGET,
	KV_CMD_DEL,
	KV_CMD_INCR,
	KV_CMD_STATS,
	KV_CMD_BENCH,
	KV_CMD_CHECK_AOF,
};

extern const struct cli_cmd kv_cli_commands[];   /* ended by { 0 } */
extern const char kv_cli_summary[];
extern const char kv_cli_details[];

#endif
