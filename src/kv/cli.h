/*
 * cli.h — what softrnic-kv's commands (kv_main.c) and its benchmark
 * (bench.c) parse the same way: --server and --transport.
 */
#ifndef SOFTRNIC_KV_CLI_H
#define SOFTRNIC_KV_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kv/proto.h"

#define KV_DEFAULT_PORT "18860"

/* --server HOST[:PORT]: the host into host[cap]; the port, if given,
 * points into arg. */
static inline void kv_cli_server(const char *arg, char *host, size_t cap, const char **port)
{
	const char *colon = strrchr(arg, ':');

	snprintf(host, cap, "%.*s", colon ? (int)(colon - arg) : (int)strlen(arg), arg);
	if (colon)
		*port = colon + 1;
}

/* --transport send|write: false for anything else. */
static inline bool kv_cli_transport(const char *arg, enum kv_transport *t)
{
	if (!strcmp(arg, "send"))
		*t = KV_VIA_SEND;
	else if (!strcmp(arg, "write"))
		*t = KV_VIA_WRITE_IMM;
	else
		return false;
	return true;
}

#endif
