/*
 * pd.c — protection domains.  A PD is only an identity that MRs and QPs
 * point at; access checks compare PD pointers (IBTA 10.2.3).  It keeps a
 * reference count so that freeing a PD still in use fails with EBUSY, as
 * ibv_dealloc_pd documents.
 */
#include <stdlib.h>

#include "rnic/rnic_int.h"

struct rnic_pd *rnic_pd_alloc(struct rnic *r)
{
	struct rnic_pd *pd;

	if (!r) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->r = r;
	r->n_pd++;
	return pd;
}

int rnic_pd_free(struct rnic_pd *pd)
{
	if (!pd)
		return EINVAL;
	if (pd->refs)
		return EBUSY;
	pd->r->n_pd--;
	free(pd);
	return 0;
}
