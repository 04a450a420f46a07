/*
 * target.h — the NVMe over Fabrics target's controller logic, apart from
 * any transport: a discovery subsystem and one NVM subsystem (by NQN)
 * with one namespace, controllers made by Fabrics Connect on an admin
 * queue and joined by their I/O queues, properties (CAP, VS, CC, CSTS),
 * the admin commands a host needs, the NVM I/O commands, keep-alive.
 *
 * A command goes through two calls, with the transport between them:
 *   nvmf_req_prepare  parses the capsule and says which data must move
 *                     (none, host to controller, controller to host) and
 *                     how much, or answers at once with a status;
 *   nvmf_req_execute  runs it on the data (what the transport fetched
 *                     for host-to-controller commands; what it will send
 *                     back otherwise) and sets the status and result.
 * Time comes from the caller (now_ns), so the logic is deterministic and
 * testable in process (tests/nvmf/target_test.c) and fuzzable.
 */
#ifndef SOFTRNIC_NVMF_TARGET_H
#define SOFTRNIC_NVMF_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#include "nvmf/capsule.h"
#include "nvmf/namespace.h"

#define NVMF_MAX_CTRLS 64
#define NVMF_MAX_IO_QUEUES 1024                 /* per controller (Number of Queues grants up to it) */
#define NVMF_MDTS 5                              /* 2^5 pages of 4 KiB */
#define NVMF_MAX_DATA (4096u << NVMF_MDTS)       /* 128 KiB per command */
#define NVMF_INLINE_DATA 8192                    /* in-capsule data bytes after the SQE */
#define NVMF_ADMIN_QUEUE_MIN 32                  /* NVMe-oF: the admin queue holds at least 32 */
#define NVMF_AERL 3                              /* 0's based: 4 held requests */

struct nvmf_target_config {
	const char *nqn;                /* the NVM subsystem's NQN */
	const char *allow_host;         /* if set, the only host NQN allowed to connect */
	const char *serial;             /* default: made from the NQN */
	const char *traddr;             /* for the discovery log, when the queue has none */
	uint16_t port;
};

struct nvmf_ctrl {
	bool used;
	bool discovery;
	bool dead;                      /* keep-alive expired or admin queue gone */
	uint16_t cntlid;
	char hostnqn[NVMF_NQN_FIELD];
	uint8_t hostid[16];
	uint32_t kato_ms;               /* 0: no keep-alive timer */
	uint64_t ka_deadline_ns;
	uint32_t cc, csts;
	uint16_t io_queues;             /* granted by Set Features Number of Queues */
	uint32_t aen_cfg;
	unsigned aer_held;
	unsigned queues;                /* queues bound to it (admin included) */
	bool io_qid_used[NVMF_MAX_IO_QUEUES + 1];
};

/* One queue (one RDMA connection), the target's view. */
struct nvmf_queue {
	uint16_t cm_qid;                /* the qid of the RDMA CM private data */
	uint16_t size;                  /* entries (hsqsize + 1) */
	uint16_t qid;                   /* valid once connected */
	uint16_t sq_head;
	struct nvmf_ctrl *ctrl;         /* NULL until Connect succeeds */
	char traddr[64];                /* the address the host reached, for the discovery log */
};

struct nvmf_stats {
	uint64_t commands, errors;      /* every command; those answered with a non-zero status */
	uint64_t invalid_opcode, invalid_field, invalid_ns, sgl_invalid, lba_range, seq_error;
	uint64_t connects, connect_rejected;
	uint64_t reads, writes, read_bytes, write_bytes, flushes, write_zeroes, deallocates;
	uint64_t keep_alives, keep_alive_expired, aer_held;
	uint64_t ctrls_created, ctrls_freed;
};

struct nvmf_target {
	char nqn[NVMF_NQN_FIELD];
	char allow_host[NVMF_NQN_FIELD];
	char serial[21];
	char traddr[64];
	uint16_t port;
	struct nvmf_ns *ns;             /* namespace 1 */
	struct nvmf_ctrl ctrls[NVMF_MAX_CTRLS];
	uint16_t next_cntlid;
	struct nvmf_stats stats;
};

enum nvmf_xfer {
	NVMF_XFER_NONE,
	NVMF_XFER_TO_CTRL,              /* host -> controller: fetch before execute */
	NVMF_XFER_FROM_CTRL,            /* controller -> host: send after execute */
};

struct nvmf_req {
	struct nvme_cmd cmd;
	struct nvmf_sgl sgl;
	enum nvmf_xfer xfer;
	uint32_t xfer_len;              /* bytes of data, = sgl.len */
	uint16_t status;                /* Status Field (capsule.h) */
	uint64_t result;                /* completion Dword 0 and 1 */
	bool held;                      /* Asynchronous Event Request: no completion now */
};

/* 0, or EINVAL for an NQN that is empty or does not fit. */
int nvmf_target_init(struct nvmf_target *t, const struct nvmf_target_config *cfg, struct nvmf_ns *ns);

/* A new queue from the CM's private data (qid and size checked by the
 * transport: size 1..NVMF_RDMA_MAX_QUEUE_SIZE). */
void nvmf_queue_init(struct nvmf_queue *q, uint16_t cm_qid, uint16_t size);

/* Step 1: false if r->status is already the answer (no data moves). */
bool nvmf_req_prepare(struct nvmf_target *t, struct nvmf_queue *q, const uint8_t sqe[NVME_SQE_BYTES],
		      struct nvmf_req *r, uint64_t now_ns);
/* Step 2: data holds r->xfer_len bytes (in for TO_CTRL, out for FROM_CTRL). */
void nvmf_req_execute(struct nvmf_target *t, struct nvmf_queue *q, struct nvmf_req *r, uint8_t *data,
		      uint64_t now_ns);
/* The transport could not move the data: the answer is a data transfer error. */
void nvmf_req_fail_transfer(struct nvmf_target *t, struct nvmf_req *r);
/* The response capsule of r (counts errors; advances the SQ head). */
void nvmf_req_response(struct nvmf_target *t, struct nvmf_queue *q, const struct nvmf_req *r,
		       uint8_t cqe[NVME_CQE_BYTES]);

/* The queue is gone (disconnected): unbind it; the last queue of a
 * controller frees it; the admin queue's going marks it dead. */
void nvmf_queue_gone(struct nvmf_target *t, struct nvmf_queue *q);
/* Controllers whose keep-alive timer ran out are marked dead (counted);
 * true if any was.  The transport then disconnects their queues. */
bool nvmf_target_tick(struct nvmf_target *t, uint64_t now_ns);
static inline bool nvmf_queue_dead(const struct nvmf_queue *q)
{
	return q->ctrl && q->ctrl->dead;
}

#endif
