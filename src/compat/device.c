/*
 * device.c — the device half of the verbs ABI: the device list (one
 * device, "softrnic0"), opening and closing a context, and the query verbs
 * (device, port, GID table, P_Key table, GUID).
 *
 * Opening a context takes a reference on the process's runtime device
 * (srt_open): that is where the UDP port is bound, so a port that cannot
 * be had makes ibv_open_device fail with the runtime's errno and message.
 *
 * The numbers reported are the rnic's configuration (rnic_get_config),
 * never made-up capabilities; where the rnic contract has no field (max_cq,
 * max_pd) we say so below.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "compat/compat.h"

struct ibv_device sr_the_device = {
	.node_type = IBV_NODE_CA,
	.transport_type = IBV_TRANSPORT_IB,
	.name = SR_DEVICE_NAME,
	.dev_name = SR_DEVICE_NAME,
	.dev_path = "/sys/class/infiniband_verbs/" SR_DEVICE_NAME,
	.ibdev_path = "/sys/class/infiniband/" SR_DEVICE_NAME,
};

/* ---- GUID ---------------------------------------------------------------
 * rxe builds its GUID from the netdev MAC (EUI-64).  We have an IPv4
 * address, not a MAC, so we take the locally administered MAC 02:00:a.b.c.d
 * and insert ff:fe in the middle the EUI-64 way:
 *   02 00 a ff fe b c d
 * Two processes on one host bind different 127.0.0.N and so get different
 * GUIDs. */
static __be64 guid_from_gid(const struct rnic_gid *gid)
{
	const uint8_t *ip = gid->raw + 12;
	uint8_t b[8] = { 0x02, 0x00, ip[0], 0xff, 0xfe, ip[1], ip[2], ip[3] };
	__be64 guid;

	memcpy(&guid, b, sizeof(guid));
	return guid;
}

__be64 ibv_get_device_guid_1_1(struct ibv_device *device)
{
	struct srt_device *dev;
	__be64 guid;

	if (device != &sr_the_device) {
		errno = EINVAL;
		return 0;
	}
	/* The address is chosen when the runtime device opens; this takes a
	 * reference (cheap if a context is already open). */
	dev = srt_open();
	if (!dev)
		return 0;
	guid = guid_from_gid(srt_gid(dev));
	srt_close(dev);
	return guid;
}
SR_EXPORT_1_1(ibv_get_device_guid);

/* ---- device list -------------------------------------------------------- */

struct ibv_device **ibv_get_device_list_1_1(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = &sr_the_device;
	if (num_devices)
		*num_devices = 1;
	return list;
}
SR_EXPORT_1_1(ibv_get_device_list);

void ibv_free_device_list_1_1(struct ibv_device **list)
{
	free(list);
}
SR_EXPORT_1_1(ibv_free_device_list);

const char *ibv_get_device_name_1_1(struct ibv_device *device)
{
	if (!device) {
		errno = EINVAL;
		return NULL;
	}
	return device->name;
}
SR_EXPORT_1_1(ibv_get_device_name);

/* No kernel device exists; our one device is index 0 of our own table. */
int ibv_get_device_index(struct ibv_device *device)
{
	return device == &sr_the_device ? 0 : -1;
}

/* ---- open / close ------------------------------------------------------- */

bool sr_is_our_context(struct ibv_context *ctx)
{
	return ctx && ctx->device == &sr_the_device &&
	       ctx->abi_compat == __VERBS_ABI_IS_EXTENDED;
}

static int sr_query_port_op(struct ibv_context *context, uint8_t port_num,
			    struct ibv_port_attr *port_attr, size_t port_attr_len);
static int sr_query_device_ex_op(struct ibv_context *context,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr, size_t attr_size);

static void install_ops(struct sr_context *ctx)
{
	struct ibv_context_ops *ops = &ctx->vctx.context.ops;

	/* The header's inline verbs read these directly. */
	ops->poll_cq = sr_poll_cq;
	ops->req_notify_cq = sr_req_notify_cq;
	ops->post_send = sr_post_send;
	ops->post_recv = sr_post_recv;
	ops->post_srq_recv = sr_post_srq_recv;
	/* Memory windows (mw.c). */
	ops->alloc_mw = sr_alloc_mw;
	ops->dealloc_mw = sr_dealloc_mw;
	ops->bind_mw = sr_bind_mw;
	/* Extended ops we support; verbs_get_ctx_op() sees NULL for the
	 * rest, so ibv_alloc_mw, ibv_alloc_dm, ... return EOPNOTSUPP. */
	ctx->vctx.query_port = sr_query_port_op;
	ctx->vctx.query_device_ex = sr_query_device_ex_op;
	ctx->vctx.modify_qp_rate_limit = sr_modify_qp_rate_limit;   /* objects.c */
	ctx->vctx.create_qp_ex = sr_create_qp_ex;
	ctx->vctx.create_cq_ex = sr_create_cq_ex;
	ctx->vctx.create_srq_ex = sr_create_srq_ex;   /* XRC/TM: EOPNOTSUPP */
	/* Parent and thread domains, prefetch advice (pd_ex.c). */
	ctx->vctx.alloc_parent_domain = sr_alloc_parent_domain;
	ctx->vctx.alloc_td = sr_alloc_td;
	ctx->vctx.dealloc_td = sr_dealloc_td;
	ctx->vctx.advise_mr = sr_advise_mr;
}

struct ibv_context *ibv_open_device_1_1(struct ibv_device *device)
{
	struct sr_context *ctx;
	struct srt_hooks hooks;
	int async_fd;

	if (device != &sr_the_device) {
		errno = ENODEV;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (async_fd < 0)
		goto err_free;
	ctx->dev = srt_open();
	if (!ctx->dev)
		goto err_fd;   /* srt_open set errno and printed the reason */

	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.context.device = device;
	/* No kernel to talk to, but programs dup() cmd_fd to share the
	 * context with ibv_import_device (pyverbs' shared-PD tests): a real
	 * descriptor lets that reach import's EOPNOTSUPP instead of failing
	 * on EBADF.  -1 if even /dev/null cannot be opened. */
	ctx->vctx.context.cmd_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ctx->vctx.context.async_fd = async_fd;
	ctx->vctx.context.num_comp_vectors = 1;
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	pthread_mutex_init(&ctx->async_lock, NULL);
	install_ops(ctx);

	hooks.ctx = ctx;
	hooks.cq_event = sr_hook_cq_event;
	hooks.async_event = sr_hook_async_event;
	ctx->hooks_handle = srt_add_hooks(ctx->dev, &hooks);
	if (ctx->hooks_handle < 0) {
		int err = errno ? errno : ENOMEM;

		srt_close(ctx->dev);
		pthread_mutex_destroy(&ctx->async_lock);
		pthread_mutex_destroy(&ctx->vctx.context.mutex);
		if (ctx->vctx.context.cmd_fd >= 0)
			close(ctx->vctx.context.cmd_fd);
		close(async_fd);
		free(ctx);
		errno = err;
		return NULL;
	}
	return &ctx->vctx.context;

err_fd: {
		int err = errno;

		close(async_fd);
		errno = err;
	}
err_free: {
		int err = errno;

		free(ctx);
		errno = err;
	}
	return NULL;
}
SR_EXPORT_1_1(ibv_open_device);

/* Like rdma-core, closing a context with live objects is the caller's
 * bug; we release what is ours and leave the objects to the rnic, which
 * outlives the context while other contexts hold the runtime device. */
int ibv_close_device_1_1(struct ibv_context *context)
{
	struct sr_context *ctx;

	if (!sr_is_our_context(context))
		return EINVAL;
	ctx = to_sr_ctx(context);
	srt_remove_hooks(ctx->dev, ctx->hooks_handle);
	srt_close(ctx->dev);
	sr_async_drain(ctx);
	close(context->async_fd);
	if (context->cmd_fd >= 0)
		close(context->cmd_fd);
	pthread_mutex_destroy(&ctx->async_lock);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}
SR_EXPORT_1_1(ibv_close_device);

/* ---- query device ------------------------------------------------------- */

void sr_fill_device_attr(struct sr_context *ctx, struct ibv_device_attr *attr)
{
	const struct rnic_config *cfg;
	__be64 guid;

	srt_lock(ctx->dev);
	cfg = rnic_get_config(srt_rnic(ctx->dev));
	guid = guid_from_gid(srt_gid(ctx->dev));

	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "%s", SR_FW_VERSION);
	attr->node_guid = guid;
	attr->sys_image_guid = guid;
	attr->max_mr_size = UINT64_MAX;          /* any mapped range, like rxe */
	attr->page_size_cap = ~(uint64_t)0xfff;  /* 4 KiB and up            */
	attr->vendor_id = SR_VENDOR_ID;
	attr->vendor_part_id = SR_VENDOR_PART_ID;
	attr->hw_ver = 0;
	attr->max_qp = (int)cfg->max_qp;
	attr->max_qp_wr = (int)cfg->max_qp_wr;
	/* Memory windows: type 1 and type 2B (bound to a QP), mw.c. */
	attr->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID |
				 IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_MEM_WINDOW |
				 IBV_DEVICE_MEM_WINDOW_TYPE_2B |
				 IBV_DEVICE_PORT_ACTIVE_EVENT;   /* link_monitor.h */
	attr->max_sge = (int)cfg->max_sge;
	attr->max_sge_rd = (int)cfg->max_sge;
	/* rnic_config has no CQ or PD limit: both live in lists sized only by
	 * memory, and every QP needs at least one of each, so max_qp is the
	 * honest lower bound we can promise. */
	attr->max_cq = (int)cfg->max_qp;
	attr->max_cqe = (int)cfg->max_cqe;
	attr->max_mr = (int)cfg->max_mr;
	attr->max_pd = (int)cfg->max_qp;
	attr->max_qp_rd_atom = (int)cfg->max_rd_atomic;
	attr->max_qp_init_rd_atom = (int)cfg->max_rd_atomic;
	attr->max_res_rd_atom = (int)(cfg->max_rd_atomic * cfg->max_qp);
	attr->atomic_cap = IBV_ATOMIC_HCA;
	/* Basic SRQs (no XRC: no IBV_DEVICE_XRC); SGEs as for a QP. */
	attr->max_srq = (int)cfg->max_srq;
	attr->max_srq_wr = (int)cfg->max_srq_wr;
	attr->max_srq_sge = (int)cfg->max_sge;
	/* UD address handles and multicast (ah.c).  Groups are per rnic
	 * and QPs per group per rnic, so the total is their product. */
	attr->max_ah = (int)cfg->max_ah;
	attr->max_mcast_grp = (int)cfg->max_mcast_grp;
	attr->max_mcast_qp_attach = (int)cfg->max_mcast_qp_attach;
	attr->max_total_mcast_qp_attach = (int)(cfg->max_mcast_grp * cfg->max_mcast_qp_attach);
	/* Memory windows share the MR key table (src/rnic/mw.c). */
	attr->max_mw = (int)cfg->max_mr;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;           /* same as rxe */
	attr->phys_port_cnt = 1;
	srt_unlock(ctx->dev);
}

int ibv_query_device_1_1(struct ibv_context *context, struct ibv_device_attr *attr)
{
	if (!sr_is_our_context(context) || !attr)
		return EINVAL;
	sr_fill_device_attr(to_sr_ctx(context), attr);
	return 0;
}
SR_EXPORT_1_1(ibv_query_device);

/* On-demand paging: softrnic never pins memory, and an ODP MR (explicit,
 * or implicit over the whole address space) is probed before each access
 * so an unmapped page is an access error, not a crash (src/rnic/odp.c).
 * Every operation of the transports softrnic has (RC, UC, UD) works on
 * ODP memory. */
static void fill_odp_caps(struct ibv_odp_caps *odp)
{
	const uint32_t rc_ops = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
				IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
				IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;

	odp->general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	odp->per_transport_caps.rc_odp_caps = rc_ops;
	/* UC has no READ or atomics (IBTA 9.7.1); UD only SEND/RECV. */
	odp->per_transport_caps.uc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
					      IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
	odp->per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
					      IBV_ODP_SUPPORT_SRQ_RECV;
}

/* The extended query: the legacy attributes plus the extension fields the
 * caller's struct has room for (attr_size is sizeof in the caller's
 * header, possibly older or newer than ours). */
static int sr_query_device_ex_op(struct ibv_context *context,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex full;

	if (!sr_is_our_context(context) || !attr)
		return EINVAL;
	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	/* Every extension left 0 says "not supported", truthfully (ODP and
	 * packet pacing are filled in below): no completion timestamps
	 * (completion_timestamp_mask and hca_core_clock 0), no TSO/RSS/tag
	 * matching/CQ moderation, no device memory (max_dm_size 0), no PCI
	 * atomics.
	 * The output comp_mask is 0: no optional field is valid beyond
	 * those. */
	memset(&full, 0, sizeof(full));
	sr_fill_device_attr(to_sr_ctx(context), &full.orig_attr);
	/* The 64-bit flags repeat the legacy 32 (rdma-core fills both), plus
	 * the IBTA 1.5 operations softrnic carries: RDMA FLUSH of both
	 * placement types and ATOMIC WRITE (rxe reports the same three). */
	full.device_cap_flags_ex = (uint32_t)full.orig_attr.device_cap_flags | RNIC_DEVICE_FLUSH_GLOBAL |
				   RNIC_DEVICE_FLUSH_PERSISTENT | RNIC_DEVICE_ATOMIC_WRITE;
	full.phys_port_cnt_ex = 1;
	fill_odp_caps(&full.odp_caps);
	/* The rnic's pacer (rnic/cc.c): 1 kb/s up to the line rate, on the
	 * QP types it paces. */
	full.packet_pacing_caps.qp_rate_limit_min = RNIC_RATE_LIMIT_MIN_KBPS;
	full.packet_pacing_caps.qp_rate_limit_max =
		(uint32_t)(rnic_get_config(srt_rnic(to_sr_ctx(context)->dev))->line_rate / 1000u);
	full.packet_pacing_caps.supported_qpts = 1u << IBV_QPT_RC | 1u << IBV_QPT_UC | 1u << IBV_QPT_UD;
	memcpy(attr, &full, attr_size < sizeof(full) ? attr_size : sizeof(full));
	if (attr_size > sizeof(full))
		memset((char *)attr + sizeof(full), 0, attr_size - sizeof(full));
	return 0;
}

/* ---- query port --------------------------------------------------------- */

static void fill_port_attr(struct sr_context *ctx, struct ibv_port_attr *pa)
{
	const struct rnic_config *cfg;

	memset(pa, 0, sizeof(*pa));
	srt_lock(ctx->dev);
	cfg = rnic_get_config(srt_rnic(ctx->dev));
	pa->max_mtu = cfg->max_mtu;
	pa->active_mtu = srt_active_mtu(ctx->dev);
	/* Follows the interface's link, as rxe's port follows its netdev. */
	pa->state = srt_port_state(ctx->dev, &pa->phys_state);
	srt_unlock(ctx->dev);

	pa->gid_tbl_len = 1;
	pa->port_cap_flags = IBV_PORT_CM_SUP;     /* what rxe reports */
	pa->max_msg_sz = 1u << 31;                /* IBTA: RC message <= 2^31 */
	pa->pkey_tbl_len = 1;
	pa->lid = 0;                              /* RoCE: no LIDs */
	pa->max_vl_num = 1;
	pa->active_width = 1;                     /* 1X ...            */
	pa->active_speed = 32;                    /* ... EDR: 25 Gb/s  */
	pa->link_layer = IBV_LINK_LAYER_ETHERNET;
	pa->flags = IBV_QPF_GRH_REQUIRED;         /* RoCE: every AH needs a GRH */
}

static int sr_query_port_op(struct ibv_context *context, uint8_t port_num,
			    struct ibv_port_attr *port_attr, size_t port_attr_len)
{
	struct ibv_port_attr full;

	if (!sr_is_our_context(context) || !port_attr)
		return EINVAL;
	if (port_num != SR_PORT_NUM)
		return EINVAL;
	fill_port_attr(to_sr_ctx(context), &full);
	memcpy(port_attr, &full, port_attr_len < sizeof(full) ? port_attr_len : sizeof(full));
	return 0;
}

/* The exported symbol, reached by programs built before the header
 * redirected ibv_query_port to the verbs_context op.  Their struct ends
 * after `flags` (then called `reserved`); copy no more than that. */
int (ibv_query_port_1_1)(struct ibv_context *context, uint8_t port_num,
		     struct _compat_ibv_port_attr *port_attr)
{
	return sr_query_port_op(context, port_num, (struct ibv_port_attr *)port_attr,
				offsetof(struct ibv_port_attr, port_cap_flags2));
}
SR_EXPORT_1_1(ibv_query_port);

/* ---- GID and P_Key tables ----------------------------------------------- */

/* One entry: index 0 is our IPv4-mapped address, a RoCE v2 GID. */
static int fill_gid_entry(struct ibv_context *context, uint32_t port_num,
			  uint32_t index, struct ibv_gid_entry *e)
{
	struct sr_context *ctx;

	if (!sr_is_our_context(context))
		return EINVAL;
	if (port_num != SR_PORT_NUM || index != 0)
		return EINVAL;
	ctx = to_sr_ctx(context);
	memset(e, 0, sizeof(*e));
	memcpy(e->gid.raw, srt_gid(ctx->dev)->raw, sizeof(e->gid.raw));
	e->gid_index = index;
	e->port_num = port_num;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = 0;
	return 0;
}

int ibv_query_gid_1_1(struct ibv_context *context, uint8_t port_num, int index,
		  union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	int ret;

	if (!gid || index < 0) {
		errno = EINVAL;
		return -1;
	}
	ret = fill_gid_entry(context, port_num, (uint32_t)index, &e);
	if (ret) {
		errno = ret;
		return -1;
	}
	*gid = e.gid;
	return 0;
}
SR_EXPORT_1_1(ibv_query_gid);

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
		      uint32_t gid_index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;
	int ret;

	if (!entry || flags || entry_size < sizeof(e))
		return EINVAL;
	ret = fill_gid_entry(context, port_num, gid_index, &e);
	if (ret)
		return ret;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;
	int ret;

	if (!entries || flags || entry_size < sizeof(e))
		return -EINVAL;
	if (max_entries < 1)
		return -EINVAL;   /* rdma-core: the table does not fit */
	ret = fill_gid_entry(context, SR_PORT_NUM, 0, &e);
	if (ret)
		return -ret;
	memcpy(entries, &e, sizeof(e));
	return 1;
}

/* rdma-core's private sysfs enum: 0 = "IB/RoCE v1", 1 = "RoCE v2". */
enum sr_gid_type_sysfs { SR_GID_TYPE_SYSFS_IB_ROCE_V1, SR_GID_TYPE_SYSFS_ROCE_V2 };

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum sr_gid_type_sysfs *type)
{
	struct ibv_gid_entry e;
	int ret;

	if (!type) {
		errno = EINVAL;
		return -1;
	}
	ret = fill_gid_entry(context, port_num, index, &e);
	if (ret) {
		errno = ret;
		return -1;
	}
	*type = SR_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

int ibv_query_pkey_1_1(struct ibv_context *context, uint8_t port_num, int index,
		   __be16 *pkey)
{
	if (!sr_is_our_context(context) || !pkey || port_num != SR_PORT_NUM || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(SR_PKEY_DEFAULT);
	return 0;
}
SR_EXPORT_1_1(ibv_query_pkey);

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (!sr_is_our_context(context) || port_num != SR_PORT_NUM) {
		errno = EINVAL;
		return -1;
	}
	/* IBTA 10.9.3: membership bit aside, 0x7fff and 0xffff are the
	 * same partition; we are a full member of the default one only. */
	if ((be16toh(pkey) & 0x7fff) == (SR_PKEY_DEFAULT & 0x7fff))
		return 0;
	errno = ENOENT;
	return -1;
}

/* For softrnic's librdmacm.so.1 (SOFTRNIC_PRIVATE_1 in libibverbs.map):
 * the runtime device behind a context this library opened, or NULL (and
 * errno EINVAL) for anything else. */
struct srt_device *softrnic_context_device(struct ibv_context *context);
struct srt_device *softrnic_context_device(struct ibv_context *context)
{
	if (!sr_is_our_context(context)) {
		errno = EINVAL;
		return NULL;
	}
	return to_sr_ctx(context)->dev;
}
