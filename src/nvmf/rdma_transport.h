/*
 * rdma_transport.h — the NVMe/RDMA transport of the target: listens
 * through librdmacm, one RC queue pair per NVMe queue, command capsules
 * received into posted buffers, data moved by RDMA READ / WRITE against
 * the host's keyed SGLs (or taken from the capsule), responses SENT (with
 * invalidate when the host asked).  The controller logic is target.c's.
 */
#ifndef SOFTRNIC_NVMF_RDMA_TRANSPORT_H
#define SOFTRNIC_NVMF_RDMA_TRANSPORT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "nvmf/target.h"

struct nvmf_serve_opts {
	const char *addr;               /* NULL: every address */
	uint16_t port;                  /* default 4420 */
	bool verbose;
	unsigned spin_us;               /* poll the CQ this long after the last work before sleeping */
	void (*ready)(void *ctx);       /* called once listening */
	void *ready_ctx;
};

/* Serve until *stop; 0 or an errno (cannot listen). */
int nvmf_rdma_serve(struct nvmf_target *t, const struct nvmf_serve_opts *o, volatile sig_atomic_t *stop);

/* The transport's own counters, printed with the target's at exit. */
struct nvmf_rdma_stats {
	uint64_t queues_accepted, queues_rejected, queues_closed, short_capsules, transfer_errors;
	uint64_t sends_with_invalidate, rdma_reads, rdma_writes, in_capsule_writes;
};
extern struct nvmf_rdma_stats nvmf_rdma_stats;

#endif
