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
	 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING |      \
	 RNIC_ACCESS_FLUSH_GLOBAL | RNIC_ACCESS_FLUSH_PERSISTENT)

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

uint32_t rnic_key_slot_alloc(struct rnic *r)
{
	return find_free_slot(r);
}

int rnic_mr_reg_check(void *addr, size_t len, uint64_t iova, int access)
{
	if (access & ~MR_KNOWN_ACCESS)
		return EINVAL;
	/* A NULL address is only meaningful as implicit ODP: the whole
	 * address space, length SIZE_MAX (rdma-core's convention). */
	if (!addr && len && !(len == SIZE_MAX && (access & IBV_ACCESS_ON_DEMAND)))
		return EINVAL;
	/* Remote write or atomic requires local write (IBTA 10.6.3.1 C10-35). */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (iova + len < iova)
		return EINVAL;
	return 0;
}

struct rnic_mr *rnic_mr_reg(struct rnic_pd *pd, void *addr, size_t len, uint64_t iova, int access)
{
	struct rnic_mr *mr;
	struct rnic *r;
	uint32_t slot;
	int e = pd ? rnic_mr_reg_check(addr, len, iova, access) : EINVAL;

	if (e) {
		errno = e;
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

/* Re-registration (ibv_rereg_mr): the MR keeps its slot and its keys, as
 * mlx5 does when it can modify the key in place; rdma-core's own tests
 * rely on that (they exchange rkeys once, before re-registering).  Work
 * already posted with the key is judged against the new translation, PD
 * and access.  Everything is validated before anything changes: on error
 * the old registration stands untouched. */
int rnic_mr_rereg(struct rnic_mr *mr, int flags, struct rnic_pd *pd, void *addr, size_t len,
		  uint64_t iova, int access)
{
	if (!mr)
		return EINVAL;
	if (flags & RNIC_REREG_PD) {
		if (!pd || pd->r != mr->pd->r)
			return EINVAL;
	} else {
		pd = mr->pd;
	}
	if (flags & RNIC_REREG_TRANSLATION) {
		if (!addr || !len || iova + len < iova)
			return EINVAL;
	} else {
		addr = mr->addr;
		len = mr->len;
		iova = mr->iova;
	}
	if (flags & RNIC_REREG_ACCESS) {
		if (access & ~MR_KNOWN_ACCESS)
			return EINVAL;
		/* IBTA 10.6.3.1 C10-35, as at registration. */
		if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
		    !(access & IBV_ACCESS_LOCAL_WRITE))
			return EINVAL;
	} else {
		access = mr->access;
	}
	/* An implicit ODP MR (NULL, SIZE_MAX) cannot take a new translation
	 * without ODP, nor lose ODP while keeping its NULL address. */
	if (!addr && !(access & IBV_ACCESS_ON_DEMAND))
		return EINVAL;

	/* Windows bound to the old registration must not keep pointing
	 * into it (mw.c). */
	rnic_mw_unbind_all(mr);
	if (pd != mr->pd) {
		mr->pd->refs--;
		pd->refs++;
		mr->pd = pd;
	}
	mr->addr = addr;
	mr->len = len;
	mr->iova = iova;
	mr->access = access;
	return 0;
}

/* ibv_advise_mr prefetch of one SGE: the key must name an ODP MR of pd
 * covering the range (with local write for a write prefetch).  Faulting
 * the pages in is the probe itself; no_fault only validates. */
int rnic_mr_prefetch(struct rnic *r, struct rnic_pd *pd, uint32_t lkey, uint64_t addr,
		     uint64_t len, bool for_write, bool no_fault)
{
	uint32_t slot = lkey >> 8;
	struct rnic_mr *mr;

	if (slot == 0 || slot > r->cfg.max_mr)
		return EINVAL;
	mr = r->mrs[slot];
	if (!mr || mr->key != lkey || mr->pd != pd || !(mr->access & IBV_ACCESS_ON_DEMAND))
		return EINVAL;
	if (for_write && !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (addr < mr->iova || len > mr->len || addr - mr->iova > mr->len - len)
		return EINVAL;
	if (!no_fault && !rnic_odp_range_ok((uintptr_t)rnic_mr_ptr(mr, addr), len, for_write))
		return EFAULT;
	return 0;
}

int rnic_mr_dereg(struct rnic_mr *mr)
{
	struct rnic *r;

	if (!mr || mr->window)
		return EINVAL;
	r = mr->pd->r;
	/* Trade-off: rxe refuses (EINVAL) while windows are bound; we unbind
	 * them instead, so teardown in any order works and the windows'
	 * rkeys simply fail from now on. */
	rnic_mw_unbind_all(mr);
	r->mrs[mr->key >> 8] = NULL;
	mr->pd->refs--;
	r->n_mr--;
	free(mr);
	return 0;
}

int rnic_mr_access(const struct rnic_mr *mr)
{
	return mr->access;
}

uint32_t rnic_mr_lkey(const struct rnic_mr *mr)
{
	return mr->key;
}

uint32_t rnic_mr_rkey(const struct rnic_mr *mr)
{
	return mr->key;
}

struct rnic_mr *rnic_mr_whole(struct rnic *r, struct rnic_pd *pd, uint32_t key, int access, uint64_t *iova,
			      uint64_t *len)
{
	uint32_t slot = key >> 8;
	struct rnic_mr *mr;

	if (slot == 0 || slot > r->cfg.max_mr)
		return NULL;
	mr = r->mrs[slot];
	if (!mr || mr->key != key)
		return NULL;
	*iova = mr->iova;
	*len = mr->len;
	return rnic_mr_check(r, pd, key, access, mr->iova, mr->len);
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
	/* A window's rkey is for remote access only (IBTA 10.6.7). */
	if (mr->window && !(access & (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_ATOMIC)))
		return NULL;
	if ((mr->access & access) != access)
		return NULL;
	/* [iova, iova+len) inside [mr->iova, mr->iova+mr->len), overflow-safe. */
	if (iova < mr->iova || len > mr->len || iova - mr->iova > mr->len - len)
		return NULL;
	/* On-demand paging: the range may be unmapped; probe it so the caller
	 * completes with an access error instead of faulting (odp.c). */
	if ((mr->access & IBV_ACCESS_ON_DEMAND) &&
	    !rnic_odp_range_ok((uintptr_t)rnic_mr_ptr(mr, iova), len,
			       access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					 IBV_ACCESS_REMOTE_ATOMIC)))
		return NULL;
	return mr;
}
