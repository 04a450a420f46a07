/*
 * verbs_helpers.h — the work request with one SGE that most tests post,
 * built in one call instead of field by field.  The ibv_send_wr and
 * ibv_recv_wr structures are the same for the verbs tests (ibv_post_send
 * through our libibverbs.so.1) and the rnic tests (rnic_post_send), so the
 * builders serve both; post_send_1 / post_recv_1 also post, for the verbs
 * tests.
 */
#ifndef SOFTRNIC_TESTS_VERBS_HELPERS_H
#define SOFTRNIC_TESTS_VERBS_HELPERS_H

#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

/* *wr zeroed, then carrying one SGE, *sge = [addr, addr + len) under lkey,
 * with opcode op and wr_id; unsignaled, no remote address (wr_remote).
 * Returns wr. */
static inline struct ibv_send_wr *wr_send_1(struct ibv_send_wr *wr, struct ibv_sge *sge, enum ibv_wr_opcode op,
					    uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	*sge = (struct ibv_sge){ .addr = addr, .length = len, .lkey = lkey };
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->opcode = op;
	wr->sg_list = sge;
	wr->num_sge = 1;
	return wr;
}

/* The remote address and rkey of an RDMA or atomic operation (wr.atomic
 * for the atomics, wr.rdma for the others). */
static inline void wr_remote(struct ibv_send_wr *wr, uint64_t remote_addr, uint32_t rkey)
{
	if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr->wr.atomic.remote_addr = remote_addr;
		wr->wr.atomic.rkey = rkey;
	} else {
		wr->wr.rdma.remote_addr = remote_addr;
		wr->wr.rdma.rkey = rkey;
	}
}

/* *wr zeroed, then receiving into one SGE, *sge = [addr, addr + len) under
 * lkey.  Returns wr. */
static inline struct ibv_recv_wr *wr_recv_1(struct ibv_recv_wr *wr, struct ibv_sge *sge, uint64_t wr_id, uint64_t addr,
					    uint32_t len, uint32_t lkey)
{
	*sge = (struct ibv_sge){ .addr = addr, .length = len, .lkey = lkey };
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	return wr;
}

/* Posts op on qp from [addr, addr + len) of mr, with send_flags `flags`,
 * toward remote_addr / rkey (0 for a SEND).  ibv_post_send's result. */
static inline int post_send_1(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mr *mr, const void *addr,
			      uint32_t len, uint64_t wr_id, unsigned int flags, uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	wr_send_1(&wr, &sge, op, wr_id, (uint64_t)(uintptr_t)addr, len, mr->lkey);
	wr.send_flags = flags;
	if (remote_addr || rkey)
		wr_remote(&wr, remote_addr, rkey);
	return ibv_post_send(qp, &wr, &bad);
}

/* Posts a receive of [addr, addr + len) of mr on qp.  ibv_post_recv's
 * result. */
static inline int post_recv_1(struct ibv_qp *qp, struct ibv_mr *mr, const void *addr, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge;
	struct ibv_recv_wr wr, *bad;
	wr_recv_1(&wr, &sge, wr_id, (uint64_t)(uintptr_t)addr, len, mr->lkey);
	return ibv_post_recv(qp, &wr, &bad);
}

#endif
