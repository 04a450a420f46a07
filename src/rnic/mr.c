/*
 * mr.c — memory regions and the key scheme.
 *
 * A key is (slot << 8) | generation: the slot indexes the device's MR
 * table, the 8-bit generation changes every time a slot is reused, so a key
 * kept after ibv_dereg_mr fails instead of reaching the next region in that
 * slot (until the generation wraps after 256 reuses — the same trade-off
 * hardware makes with its 8-bit key "variant").  lkey and rkey are equal.
 *
 * rnic_mr_check is the one gate every local or remote memory access goes
 * through: key, PD, access rights and bounds (IBTA 10.6.3.3, 9.7.4.1.6).
 */
#include <stdlib.h>

#include "rnic/rnic_int.h"

#define MR_KNOWN_ACCESS                                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |    \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |        \
	 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING)

static uint32_t find_free_slot(struct rnic *r)
{
	uint32_t n = r->cfg.max_mr;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t slot = 1 + (r->mr_next - 1 + i) % n;
		if (!r->mrs[slot]) {
			r->mr_next = slot % n + 1;
			return slot;
		}
	}
	return 0;
}

struct rnic_mr *rnic_mr_reg(struct rnic_pd *pd, void *addr, size_t len, uint64_t iova, int access)
{
	struct rnic_mr *mr;
	struct rnic *r;
	uint32_t slot;

	if (!pd || (!addr && len) || (access & ~MR_KNOWN_ACCESS)) {
		errno = EINVAL;
		return NULL;
	}
	/* Remote write or atomic requires local write (IBTA 10.6.3.1 C10-35). */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;
		return NULL;
	}
	if (iova + len < iova) {
		errno = EINVAL;
		return NULL;
	}
	r = pd->r;
	slot = find_free_slot(r);
	if (!slot) {
		errno = ENOMEM;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->pd = pd;
	mr->addr = addr;
	mr->len = len;
	mr->iova = iova;
	mr->access = access;
	r->mr_gen[slot]++;
	mr->key = slot << 8 | r->mr_gen[slot];
	r->mrs[slot] = mr;
	pd->refs++;
	r->n_mr++;
	return mr;
}

int rnic_mr_dereg(struct rnic_mr *mr)
{
	struct rnic *r;

	if (!mr)
		return EINVAL;
	r = mr->pd->r;
	r->mrs[mr->key >> 8] = NULL;
	mr->pd->refs--;
	r->n_mr--;
	free(mr);
	return 0;
}

uint32_t rnic_mr_lkey(const struct rnic_mr *mr)
{
	return mr->key;
}

uint32_t rnic_mr_rkey(const struct rnic_mr *mr)
{
	return mr->key;
}

struct rnic_mr *rnic_mr_check(struct rnic *r, struct rnic_pd *pd, uint32_t key, int access,
			      uint64_t iova, uint64_t len)
{
	uint32_t slot = key >> 8;
	struct rnic_mr *mr;

	if (slot == 0 || slot > r->cfg.max_mr)
		return NULL;
	mr = r->mrs[slot];
	if (!mr || mr->key != key || mr->pd != pd)
		return NULL;
	if ((mr->access & access) != access)
		return NULL;
	/* [iova, iova+len) inside [mr->iova, mr->iova+mr->len), overflow-safe. */
	if (iova < mr->iova || len > mr->len || iova - mr->iova > mr->len - len)
		return NULL;
	return mr;
}
