/*
 * ah.c — address handles and multicast verbs: ibv_create_ah,
 * ibv_destroy_ah, ibv_init_ah_from_wc, ibv_create_ah_from_wc,
 * ibv_attach_mcast, ibv_detach_mcast.
 *
 * The rnic's struct rnic_ah begins with the struct ibv_ah the program
 * sees (rnic.h), so the handle we return is the rnic object itself and
 * ibv_post_send's wr.ud.ah reaches the rnic without a lookup.
 *
 * ibv_init_ah_from_wc answers a received UD message: it reads the 40-byte
 * GRH area at the start of the receive buffer.  On RoCEv2 that area holds
 * either an IPv6 header or, in its last 20 bytes, an IPv4 header (the rnic
 * writes it the way the kernel's rxe does, see rnic/ud.c), and verbs has no
 * flag saying which.  We decide as rdma-core does: IP version nibble of
 * byte 0 not 6 -> IPv4 if byte 20 says version 4; version 6 in byte 0 ->
 * still IPv4 if bytes 20.. are a well-formed 20-byte IPv4 header with a
 * correct checksum (byte 0 of an IPv4 GRH area is 0, but an IPv6 header's
 * traffic class may make byte 20 look like anything), else IPv6.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "compat/compat.h"

static struct srt_device *dev_of(struct ibv_context *c)
{
	return to_sr_ctx(c)->dev;
}

/* ---- create / destroy ------------------------------------------------------ */

struct ibv_ah *ibv_create_ah_1_1(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct srt_device *dev;
	struct rnic_ah *ah;

	if (!pd || !attr || !sr_is_our_context(pd->context)) {
		errno = EINVAL;
		return NULL;
	}
	dev = dev_of(pd->context);
	srt_lock(dev);
	ah = rnic_ah_create(to_sr_pd(pd)->pd, attr);
	srt_unlock(dev);
	if (!ah)
		return NULL;            /* errno from the rnic */
	ah->verbs.context = pd->context;
	ah->verbs.pd = pd;
	ah->verbs.handle = 0;           /* no kernel object behind it */
	return &ah->verbs;
}
SR_EXPORT_1_1(ibv_create_ah);

int ibv_destroy_ah_1_1(struct ibv_ah *ah)
{
	struct srt_device *dev;
	int ret;

	if (!ah || !sr_is_our_context(ah->context))
		return EINVAL;
	dev = dev_of(ah->context);
	srt_lock(dev);
	ret = rnic_ah_destroy(rnic_ah_from_ibv(ah));
	srt_unlock(dev);
	return ret;
}
SR_EXPORT_1_1(ibv_destroy_ah);

/* ---- from a received work completion -------------------------------------- */

/* One's-complement sum over a 20-byte IPv4 header: 0xffff when valid. */
static bool ipv4_header_ok(const uint8_t *ip)
{
	uint32_t sum = 0;

	if (ip[0] != 0x45)              /* version 4, 20 bytes: what RoCEv2 sends */
		return false;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/* 4, 6, or 0 if the area holds neither (see the top of this file). */
static int grh_ip_version(const uint8_t *area)
{
	const uint8_t *ip4 = area + 20;

	if (area[0] >> 4 != 6)
		return ip4[0] >> 4 == 4 ? 4 : 0;
	return ipv4_header_ok(ip4) ? 4 : 6;
}

/* Our GID table has one entry (index 0): the address we receive on. */
static int our_gid_index(struct ibv_context *context, const uint8_t gid[16])
{
	const struct rnic_gid *ours = srt_gid(dev_of(context));

	return memcmp(ours->raw, gid, 16) == 0 ? 0 : -1;
}

static void ipv4_mapped(uint8_t gid[16], const uint8_t addr[4])
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, addr, 4);
}

/* Reply to an IPv4 sender: its address becomes our destination; the
 * packet's destination must be our own unicast address (a reply to a
 * multicast group member is addressed to the sender, but the group is
 * not a GID of ours: EINVAL, as rdma-core answers). */
static int ah_from_ipv4(struct ibv_context *context, const uint8_t *ip, struct ibv_ah_attr *ah)
{
	uint8_t dgid[16];

	if ((ip[16] & 0xf0) == 0xe0) {
		errno = EINVAL;
		return -1;
	}
	ipv4_mapped(dgid, ip + 16);
	if (our_gid_index(context, dgid) < 0) {
		errno = ENOENT;
		return -1;
	}
	ipv4_mapped(ah->grh.dgid.raw, ip + 12);
	ah->grh.sgid_index = 0;
	ah->grh.hop_limit = ip[8];      /* the TTL it arrived with */
	ah->grh.traffic_class = ip[1];  /* TOS */
	ah->grh.flow_label = 0;
	return 0;
}

static int ah_from_ipv6(struct ibv_context *context, const uint8_t *grh, struct ibv_ah_attr *ah)
{
	uint32_t vtf = (uint32_t)grh[0] << 24 | (uint32_t)grh[1] << 16 | (uint32_t)grh[2] << 8 | grh[3];

	if (our_gid_index(context, grh + 24) < 0) {
		errno = ENOENT;
		return -1;
	}
	memcpy(ah->grh.dgid.raw, grh + 8, 16);  /* reply to the source */
	ah->grh.sgid_index = 0;
	ah->grh.flow_label = vtf & 0xfffff;
	ah->grh.traffic_class = (uint8_t)(vtf >> 20);
	ah->grh.hop_limit = 0xff;               /* as rdma-core for IPv6 */
	return 0;
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	if (!sr_is_our_context(context) || !wc || !ah_attr || port_num != SR_PORT_NUM) {
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;       /* RoCE cannot route this; ibv_create_ah says so */
	if (!grh) {
		errno = EINVAL;
		return -1;
	}
	ah_attr->is_global = 1;
	switch (grh_ip_version((const uint8_t *)grh)) {
	case 4:
		return ah_from_ipv4(context, (const uint8_t *)grh + 20, ah_attr);
	case 6:
		return ah_from_ipv6(context, (const uint8_t *)grh, ah_attr);
	default:
		errno = EPROTONOSUPPORT;
		return -1;
	}
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah_1_1(pd, &attr);
}

/* ---- multicast -------------------------------------------------------------- */

static int mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid, bool attach)
{
	struct srt_device *dev;
	struct rnic_gid g;
	int ret;

	if (!qp || !gid || !sr_is_our_context(qp->context))
		return EINVAL;
	memcpy(g.raw, gid->raw, sizeof(g.raw));
	dev = dev_of(qp->context);
	srt_lock(dev);
	ret = attach ? rnic_attach_mcast(to_sr_qp(qp)->qp, &g, lid) : rnic_detach_mcast(to_sr_qp(qp)->qp, &g, lid);
	srt_unlock(dev);
	srt_kick(dev);          /* the progress thread polls a new socket set */
	return ret;
}

int ibv_attach_mcast_1_1(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcast(qp, gid, lid, true);
}
SR_EXPORT_1_1(ibv_attach_mcast);

int ibv_detach_mcast_1_1(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcast(qp, gid, lid, false);
}
SR_EXPORT_1_1(ibv_detach_mcast);
