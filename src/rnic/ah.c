/*
 * ah.c — address handles: where a UD send goes (IBTA 10.5, 11.2.2).
 *
 * RoCEv2 addresses by IP, so an AH is a destination GID plus the two IP
 * header fields the GRH of ibv_ah_attr controls: DSCP (traffic_class >> 2,
 * the low two bits being ECN, which the transport owns) and TTL
 * (hop_limit).  Like rxe we require a global AH: without a GRH there is no
 * address to send to.
 *
 * Port 1 and GID index 0 are the only ones there are.
 *
 * The AH is only read when a send WR is posted (ud.c copies the
 * destination into the WQE), so destroying an AH with sends still queued
 * is safe here, even though verbs leaves that undefined.
 */
#include <stdlib.h>

#include "rnic/rnic_int.h"

static bool gid_is_zero(const uint8_t raw[16])
{
	for (int i = 0; i < 16; i++)
		if (raw[i])
			return false;
	return true;
}

struct rnic_ah *rnic_ah_create(struct rnic_pd *pd, const struct ibv_ah_attr *attr)
{
	struct rnic_ah *ah;

	if (!pd || !attr || !attr->is_global || gid_is_zero(attr->grh.dgid.raw) ||
	    attr->port_num != 1 || attr->grh.sgid_index != 0) {
		errno = EINVAL;
		return NULL;
	}
	if (pd->r->n_ah >= pd->r->cfg.max_ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->pd = pd;
	ah->attr = *attr;
	memcpy(ah->dgid.raw, attr->grh.dgid.raw, sizeof(ah->dgid.raw));
	ah->dscp = attr->grh.traffic_class >> 2;
	/* Not attr->grh.hop_limit: the route's (RNIC_ROUTE_TTL, rnic.h). */
	ah->ttl = RNIC_ROUTE_TTL;
	pd->refs++;
	pd->r->n_ah++;
	return ah;
}

int rnic_ah_destroy(struct rnic_ah *ah)
{
	if (!ah || !ah->pd)
		return EINVAL;
	ah->pd->refs--;
	ah->pd->r->n_ah--;
	ah->pd = NULL;
	free(ah);
	return 0;
}
