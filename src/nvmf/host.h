/*
 * host.h — an NVMe over Fabrics host (initiator) of softrnic's own, on
 * librdmacm and verbs: queues connected with the RDMA binding's private
 * data, command capsules SENT with keyed SGLs (or data in the capsule),
 * completions received.  `softrnic nvmf perf` and `discover` (perf.c,
 * nvmf_main.c) and the tests are built on it.
 */
#ifndef SOFTRNIC_NVMF_HOST_H
#define SOFTRNIC_NVMF_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "nvmf/capsule.h"

struct rdma_cm_id;
struct ibv_pd;
struct ibv_cq;
struct ibv_mr;
struct ibv_comp_channel;

/* One queue: depth command slots (cid = slot), as many receive buffers. */
struct nvmf_host_queue {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	uint16_t qid, depth;
	uint32_t inline_max;            /* in-capsule data bytes the controller takes */
	uint8_t *sqes, *cqes;           /* depth capsules (SQE + inline_max), depth responses */
	struct ibv_mr *sqe_mr, *cqe_mr;
	bool own_pd;                    /* the PD is this queue's (else its host's) */
	bool failed;                    /* the QP went to error: every later call fails */
};

/* A completion as the host got it. */
struct nvmf_host_cpl {
	struct nvme_cpl cpl;
	bool invalidated;               /* arrived by SEND with invalidate */
	uint32_t invalidated_rkey;
};

/* A controller: its admin queue and (optionally) I/O queues: io is qid
 * 1, more_io[i] qid i + 2 (nvmf_host_ioq). */
struct nvmf_host {
	struct nvmf_host_queue admin, io;
	struct nvmf_host_queue *more_io;
	uint16_t n_io;                  /* I/O queues connected */
	uint16_t cntlid;
	uint32_t kato_ms;
	uint8_t *buf;                   /* the admin commands' data, registered */
	struct ibv_mr *buf_mr;
	uint8_t id_ctrl[4096];
	uint32_t mdts_bytes;            /* 0: no limit reported */
	uint32_t inline_max;            /* from IOCCSZ */
	uint64_t ns_blocks;
	unsigned lba_shift;
	char err[256];                  /* what failed, for the caller's message */
};

struct nvmf_host_opts {
	const char *addr, *port;        /* the target */
	const char *subnqn;
	const char *hostnqn;            /* default: a softrnic NQN */
	uint32_t kato_ms;               /* 0: no keep-alive */
	uint16_t io_depth;              /* 0: admin queue only; else the I/O queues' sqsize (0's based: depth) */
	uint16_t io_queues;             /* with io_depth: how many I/O queues (0 or 1: one) */
	bool connect_in_capsule;        /* the I/O queue's Connect data in the capsule */
};

/* Connect: the admin queue, Connect, CAP, CC.EN and CSTS.RDY, Identify
 * Controller; with io_depth, Number of Queues (io_queues asked; fewer
 * granted is a failure), Identify Namespace 1 and the I/O queues, each
 * its own RDMA connection and Fabrics Connect with its qid.  0; or -1 with h->err set and, when a command failed,
 * its status in *status (else 0). */
int nvmf_host_connect(struct nvmf_host *h, const struct nvmf_host_opts *o, uint16_t *status);
void nvmf_host_close(struct nvmf_host *h);
/* I/O queue i (0 .. n_io - 1): qid i + 1. */
static inline struct nvmf_host_queue *nvmf_host_ioq(struct nvmf_host *h, unsigned i)
{
	return i ? &h->more_io[i - 1] : &h->io;
}

/* One admin command, synchronously: data (len bytes, to the controller or
 * from it) through the host's registered buffer with a keyed SGL.  0 and
 * *cpl, or -1 (transport failure, timeout). */
int nvmf_host_admin(struct nvmf_host *h, struct nvme_cmd *cmd, void *data, uint32_t len, bool to_ctrl,
		    struct nvme_cpl *cpl);

/* The queue level, for perf: connect a queue (private data qid, hsqsize =
 * depth - 1, hrqsize = depth; in pd, or a PD of its own if NULL); send the command in slot cmd->cid (with
 * inline_len bytes of data in the capsule); wait up to timeout_ms for
 * completions (at most max): their number, or -1 on failure. */
int nvmf_host_queue_connect(struct nvmf_host_queue *q, struct ibv_pd *pd, const char *addr, const char *port,
			    uint16_t qid, uint16_t depth, uint32_t inline_max, char *err, size_t errlen);
void nvmf_host_queue_close(struct nvmf_host_queue *q);
int nvmf_host_submit(struct nvmf_host_queue *q, const struct nvme_cmd *cmd, const void *inline_data,
		     uint32_t inline_len);
int nvmf_host_poll(struct nvmf_host_queue *q, struct nvmf_host_cpl *out, int max, int timeout_ms);

/* Register memory for data in h's protection domain (remote read and write). */
struct ibv_mr *nvmf_host_reg(struct nvmf_host *h, void *addr, size_t len);
uint32_t nvmf_mr_rkey(const struct ibv_mr *mr);

#endif
