/*
 * misc.c — the small parts of librdmacm.so.1: event names, rdma_set_option,
 * multicast joins (UD), and the calls softrnic answers "not supported"
 * (ECE).  Stream rsockets are in rsocket*.c; riomap, riounmap and riowrite
 * are stand-ins generated from stubs/rdmacm.list that fail with ENOSYS
 * (docs/rdmacm.md).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "compat/rdmacm/rdmacm_int.h"

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};
	if ((unsigned)event < sizeof(names) / sizeof(names[0]) && names[event])
		return names[event];
	return "UNKNOWN EVENT";
}

/* As the kernel's ucma_set_option: an unknown level or option name is
 * ENOSYS, a wrong optlen EINVAL, an option the id's state or QP type does
 * not allow EINVAL (rdma_set_reuseaddr, _afonly, _ack_timeout); optval is
 * copied first, so a NULL one with a length is EFAULT. */
int rdma_set_option(struct rdma_cm_id *cmid, int level, int optname, void *optval, size_t optlen)
{
	struct rcm_id *id = to_rcm_id(cmid);

	if (!cmid)
		return rcm_fail(EINVAL);
	if (optlen && !optval)
		return rcm_fail(EFAULT);
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
			if (optlen != sizeof(uint8_t))
				return rcm_fail(EINVAL);
			id->tos = *(uint8_t *)optval;
			id->tos_set = true;
			return 0;
		case RDMA_OPTION_ID_REUSEADDR:
			if (optlen != sizeof(int))
				return rcm_fail(EINVAL);
			/* Set on an idle id, or turned on before it listens. */
			if (!((*(int *)optval && id->state != RCM_LISTEN) || id->state == RCM_IDLE))
				return rcm_fail(EINVAL);
			return 0;       /* ports are not held after close */
		case RDMA_OPTION_ID_AFONLY:
			if (optlen != sizeof(int))
				return rcm_fail(EINVAL);
			if (id->state != RCM_IDLE && id->state != RCM_ADDR_BOUND)
				return rcm_fail(EINVAL);
			id->afonly = *(int *)optval != 0;
			return 0;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (optlen != sizeof(uint8_t))
				return rcm_fail(EINVAL);
			if (cmid->qp_type != IBV_QPT_RC)
				return rcm_fail(EINVAL);
			id->ack_timeout = *(uint8_t *)optval & 31;
			return 0;
		default:
			return rcm_fail(ENOSYS);
		}
	}
	if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
		/* The kernel's ucma_set_ib_path checks the records first. */
		if (!optlen || optlen % sizeof(struct ibv_path_data))
			return rcm_fail(EINVAL);
		return rcm_fail(ENOSYS);   /* no SA: paths are local on RoCE */
	}
	return rcm_fail(ENOSYS);
}

/* ---- multicast (UD) ---------------------------------------------------------
 * On RoCE a multicast group is a multicast IP address and needs no SA: the
 * MGID is ::ffff:a.b.c.d and joining is attaching the id's QP to it (the
 * runtime joins the IP group).  The MULTICAST_JOIN event carries what a
 * sender needs, as rdma-core reports it: an AH to the group, QPN 0xFFFFFF,
 * the RDMA-CM Q_Key, and the program's context as private_data. */

static int mgid_of(const struct sockaddr *addr, union ibv_gid *mgid)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)addr;

	/* An IPv6 group is its own MGID (the runtime joins it on a device
	 * bound to IPv6, and refuses it on one bound to IPv4). */
	if (addr && addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)addr;

		if (!IN6_IS_ADDR_MULTICAST(&s6->sin6_addr))
			return EINVAL;
		memcpy(mgid->raw, &s6->sin6_addr, 16);
		return 0;
	}
	if (!addr || addr->sa_family != AF_INET || !IN_MULTICAST(be32toh(sin->sin_addr.s_addr)))
		return EINVAL;  /* rdma-core: a family it does not know */
	memset(mgid, 0, sizeof(*mgid));
	mgid->raw[10] = mgid->raw[11] = 0xff;
	memcpy(mgid->raw + 12, &sin->sin_addr, 4);
	return 0;
}

static int join(struct rdma_cm_id *cmid, struct sockaddr *addr, void *context, bool send_only)
{
	struct rcm_id *id = to_rcm_id(cmid);
	union ibv_gid mgid;
	struct rcm_event *e;
	int err;

	/* The kernel's rdma_join_multicast: a UD id with a device, bound or
	 * resolved (not idle, connecting or listening). */
	if (!cmid || cmid->qp_type != IBV_QPT_UD || !cmid->verbs ||
	    (id->state != RCM_ADDR_BOUND && id->state != RCM_ADDR_RESOLVED))
		return rcm_fail(EINVAL);
	err = mgid_of(addr, &mgid);
	if (err)
		return rcm_fail(err);
	struct rcm_mc *mc = calloc(1, sizeof(*mc));
	if (!mc)
		return rcm_fail(ENOMEM);
	mc->mgid = mgid;
	/* A send-only member receives nothing: no attach; nor an id without a
	 * QP (rdma-core attaches only an id's QP). */
	if (!send_only && cmid->qp) {
		if (ibv_attach_mcast(cmid->qp, &mgid, 0)) {
			free(mc);
			return -1;
		}
		mc->attached = true;
	}
	e = rcm_new_event(id, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (!e) {
		if (mc->attached)
			ibv_detach_mcast(cmid->qp, &mgid, 0);
		free(mc);
		return rcm_fail(ENOMEM);
	}
	mc->next = id->mc;
	id->mc = mc;
	struct ibv_ah_attr *ah = &e->ev.param.ud.ah_attr;
	ah->is_global = 1;
	ah->port_num = 1;
	ah->grh.dgid = mgid;
	ah->grh.hop_limit = 64;
	ah->grh.traffic_class = id->tos;
	e->ev.param.ud.qp_num = 0xffffff;
	e->ev.param.ud.qkey = RDMA_UDP_QKEY;
	e->ev.param.ud.private_data = context;
	rcm_queue_event(id, e);
	if (id->sync) {
		err = rcm_wait_event(id, RDMA_CM_EVENT_MULTICAST_JOIN, NULL);
		if (err)
			return rcm_fail(err);
	}
	return 0;
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	return join(id, addr, context, false);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	if (!mc_join_attr || !(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS))
		return rcm_fail(EINVAL);
	if (mc_join_attr->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
	    mc_join_attr->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return rcm_fail(EINVAL);
	return join(id, mc_join_attr->addr, context,
		    mc_join_attr->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER);
}

int rdma_leave_multicast(struct rdma_cm_id *cmid, struct sockaddr *addr)
{
	struct rcm_id *id = to_rcm_id(cmid);
	union ibv_gid mgid;
	int err;

	if (!cmid)
		return rcm_fail(EINVAL);
	err = mgid_of(addr, &mgid);
	if (err)
		return rcm_fail(err);
	struct rcm_mc **p = &id->mc;
	while (*p && memcmp(&(*p)->mgid, &mgid, sizeof(mgid)))
		p = &(*p)->next;
	if (!*p)
		return rcm_fail(EADDRNOTAVAIL);   /* rdma-core: not joined */
	struct rcm_mc *mc = *p;
	*p = mc->next;
	if (mc->attached && cmid->qp)
		(void)ibv_detach_mcast(cmid->qp, &mgid, 0);
	free(mc);
	return 0;
}

/* The id goes: its records go (as rdma-core's ucma_free_id); the QP, if
 * still there, stays attached until it is destroyed — it may already be
 * gone by ibv_destroy_qp, so it is not touched. */
void rcm_leave_all(struct rcm_id *id)
{
	while (id->mc) {
		struct rcm_mc *mc = id->mc;
		id->mc = mc->next;
		free(mc);
	}
}

/* Enhanced connection establishment: a vendor extension (mlx5); softrnic
 * has no options to negotiate. */
int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	return rcm_fail(EOPNOTSUPP);
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	return rcm_fail(EOPNOTSUPP);
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}
