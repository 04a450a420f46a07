/*
 * nvmf_cli.h — the command table of softrnic-nvmf (nvmf_cli.c) for
 * tools/cli_parse.h; built into softrnic-nvmf (nvmf_main.c runs the
 * commands) and into `softrnic`, which answers `softrnic nvmf ... --help`
 * and refuses bad values itself, then runs softrnic-nvmf.
 */
#ifndef SOFTRNIC_NVMF_NVMF_CLI_H
#define SOFTRNIC_NVMF_NVMF_CLI_H

#include "tools/cli_parse.h"

enum nvmf_cmd_id {
	NVMF_CMD_SERVE = 1,
	NVMF_CMD_DISCOVER,
	NVMF_CMD_PERF,
};

/* perf --qd: below the transport's queue size (capsule.h,
 * NVMF_RDMA_MAX_QUEUE_SIZE; nvmf_main.c checks they agree). */
#define NVMF_CLI_MAX_QD 127
/* perf --queues: the I/O queues a controller grants (target.h,
 * NVMF_MAX_IO_QUEUES; nvmf_main.c checks they agree). */
#define NVMF_CLI_MAX_QUEUES 1024

extern const struct cli_cmd nvmf_cli_commands[];   /* ended by { 0 } */
extern const char nvmf_cli_summary[];
extern const char nvmf_cli_details[];

#endif
