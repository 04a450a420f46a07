/*
 * server.h — the key-value server (server.c): serve one table to clients
 * connected through librdmacm until *stop becomes non-zero.
 */
#ifndef SOFTRNIC_KV_SERVER_H
#define SOFTRNIC_KV_SERVER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kv_server_opts {
	const char *addr;               /* NULL: any */
	uint16_t port;                  /* the rdma_cm port */
	size_t mem;                     /* table arena bytes */
	bool verbose;
	const char *aof_path;           /* NULL: no append-only file */
	int fsync;                      /* enum kv_fsync (aof.h) */
	uint64_t aof_rewrite_min;       /* rewrite the log past this size and twice its
					   size after the last rewrite (0: 64 MiB) */
	bool busy_poll;                 /* spin on the CQ instead of sleeping in poll() */
	unsigned probe_ms;              /* probe a client quiet this long (0: 2000) */
	void (*ready)(void *ctx);       /* called once listening (may be NULL) */
	void *ready_ctx;
};

/* 0 when stopped, or an errno (cannot listen, no memory). */
int kv_serve(const struct kv_server_opts *o, volatile sig_atomic_t *stop);

#endif
