/*
 * unsupported.c — exported verbs we do not (yet) implement, and the
 * symbols that exist only so the export list matches Debian's
 * libibverbs.so.1 (rdma-core 44) name for name and version for version.
 *
 * Three groups:
 *  1. Public verbs for objects we do not model yet (import of kernel
 *     objects, ECE, dma-buf MRs).  They fail cleanly with
 *     the errno the man pages use for "not supported" (EOPNOTSUPP).
 *  2. IBVERBS_1.0 duplicates: in rdma-core these serve binaries linked
 *     around 2006 against the pre-1.1 ABI, whose structs (ibv_device,
 *     ibv_context, ...) had another layout.  We export them under the same
 *     version (.symver) so such binaries still load and resolve, but every
 *     one fails with ENOSYS: reading an old-layout struct correctly is
 *     not worth the risk of reading it wrongly.
 *  3. IBVERBS_PRIVATE_34: the interface between rdma-core's libibverbs and
 *     its provider plugins (ibv_cmd_*, verbs_*).  We load no providers, so
 *     nobody legitimate calls them; they exist for the export list and fail
 *     with EOPNOTSUPP (ibv_query_gid_type, which perftest imports, is real
 *     and lives in device.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include <infiniband/verbs.h>

#include "compat/compat.h"

/* ---- 1. public verbs we do not support ----------------------------------- */

/* Import shares kernel objects between processes via the uverbs fd; we
 * have no kernel objects to share. */
struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context; (void)pd_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd; (void)mr_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context; (void)dm_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp; (void)ece;
	return EOPNOTSUPP;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp; (void)ece;
	return EOPNOTSUPP;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				 uint64_t iova, int fd, int access)
{
	(void)pd; (void)offset; (void)length; (void)iova; (void)fd; (void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

/* ---- 2. IBVERBS_1.0 (and the hidden IBVERBS_1.1 ibv_register_driver) ---- */

/* A pre-1.1 entry point: defined under a private name, exported only as
 * name@VERSION (a non-default version, as in rdma-core). */
#define LEGACY_PTR(name, ver)                                                  \
	void *sr_legacy_##name(void);                                          \
	void *sr_legacy_##name(void)                                           \
	{                                                                      \
		errno = ENOSYS;                                                \
		return NULL;                                                   \
	}                                                                      \
	__asm__(".symver sr_legacy_" #name ", " #name "@" ver)

#define LEGACY_INT(name, ver)                                                  \
	int sr_legacy_##name(void);                                            \
	int sr_legacy_##name(void)                                             \
	{                                                                      \
		errno = ENOSYS;                                                \
		return ENOSYS;                                                 \
	}                                                                      \
	__asm__(".symver sr_legacy_" #name ", " #name "@" ver)

#define LEGACY_VOID(name, ver)                                                 \
	void sr_legacy_##name(void);                                           \
	void sr_legacy_##name(void)                                            \
	{                                                                      \
		errno = ENOSYS;                                                \
	}                                                                      \
	__asm__(".symver sr_legacy_" #name ", " #name "@" ver)

LEGACY_VOID(ibv_ack_async_event, "IBVERBS_1.0");
LEGACY_VOID(ibv_ack_cq_events, "IBVERBS_1.0");
LEGACY_PTR(ibv_alloc_pd, "IBVERBS_1.0");
LEGACY_INT(ibv_attach_mcast, "IBVERBS_1.0");
LEGACY_INT(ibv_close_device, "IBVERBS_1.0");
LEGACY_PTR(ibv_create_ah, "IBVERBS_1.0");
LEGACY_PTR(ibv_create_cq, "IBVERBS_1.0");
LEGACY_PTR(ibv_create_qp, "IBVERBS_1.0");
LEGACY_PTR(ibv_create_srq, "IBVERBS_1.0");
LEGACY_INT(ibv_dealloc_pd, "IBVERBS_1.0");
LEGACY_INT(ibv_dereg_mr, "IBVERBS_1.0");
LEGACY_INT(ibv_destroy_ah, "IBVERBS_1.0");
LEGACY_INT(ibv_destroy_cq, "IBVERBS_1.0");
LEGACY_INT(ibv_destroy_qp, "IBVERBS_1.0");
LEGACY_INT(ibv_destroy_srq, "IBVERBS_1.0");
LEGACY_INT(ibv_detach_mcast, "IBVERBS_1.0");
LEGACY_VOID(ibv_free_device_list, "IBVERBS_1.0");
LEGACY_INT(ibv_get_async_event, "IBVERBS_1.0");
LEGACY_INT(ibv_get_cq_event, "IBVERBS_1.0");
LEGACY_PTR(ibv_get_device_guid, "IBVERBS_1.0");   /* returns 0 */
LEGACY_PTR(ibv_get_device_list, "IBVERBS_1.0");
LEGACY_PTR(ibv_get_device_name, "IBVERBS_1.0");
LEGACY_INT(ibv_modify_qp, "IBVERBS_1.0");
LEGACY_INT(ibv_modify_srq, "IBVERBS_1.0");
LEGACY_PTR(ibv_open_device, "IBVERBS_1.0");
LEGACY_INT(ibv_query_device, "IBVERBS_1.0");
LEGACY_INT(ibv_query_gid, "IBVERBS_1.0");
LEGACY_INT(ibv_query_pkey, "IBVERBS_1.0");
LEGACY_INT(ibv_query_port, "IBVERBS_1.0");
LEGACY_INT(ibv_query_qp, "IBVERBS_1.0");
LEGACY_INT(ibv_query_srq, "IBVERBS_1.0");
LEGACY_PTR(ibv_reg_mr, "IBVERBS_1.0");
LEGACY_INT(ibv_resize_cq, "IBVERBS_1.0");

/* Old out-of-tree providers registered themselves through this; we take
 * no providers, so say so once instead of failing silently. */
void sr_legacy_ibv_register_driver(const char *name, void *init_func);
void sr_legacy_ibv_register_driver(const char *name, void *init_func)
{
	(void)init_func;
	fprintf(stderr, "softrnic: ignoring provider '%s': this libibverbs has no plugins\n",
		name ? name : "?");
}
__asm__(".symver sr_legacy_ibv_register_driver, ibv_register_driver@IBVERBS_1.1");

/* ---- 3. IBVERBS_PRIVATE_34 ------------------------------------------------
 * Their real prototypes live in rdma-core's private driver.h, which is not
 * installed; a stub's C signature does not matter to callers beyond its
 * return register, so each is declared with the return kind its real
 * counterpart has: errno-style int, pointer (NULL) or void. */

#define PRIVATE_ERRNO(name)                                                    \
	int name(void);                                                        \
	int name(void)                                                         \
	{                                                                      \
		errno = EOPNOTSUPP;                                            \
		return EOPNOTSUPP;                                             \
	}
#define PRIVATE_PTR(name)                                                      \
	void *name(void);                                                      \
	void *name(void)                                                       \
	{                                                                      \
		errno = EOPNOTSUPP;                                            \
		return NULL;                                                   \
	}
#define PRIVATE_VOID(name)                                                     \
	void name(void);                                                       \
	void name(void)                                                        \
	{                                                                      \
	}

bool verbs_allow_disassociate_destroy;

PRIVATE_ERRNO(execute_ioctl)
PRIVATE_ERRNO(ibv_cmd_advise_mr)
PRIVATE_ERRNO(ibv_cmd_alloc_dm)
PRIVATE_ERRNO(ibv_cmd_alloc_mw)
PRIVATE_ERRNO(ibv_cmd_alloc_pd)
PRIVATE_ERRNO(ibv_cmd_attach_mcast)
PRIVATE_ERRNO(ibv_cmd_close_xrcd)
PRIVATE_ERRNO(ibv_cmd_create_ah)
PRIVATE_ERRNO(ibv_cmd_create_counters)
PRIVATE_ERRNO(ibv_cmd_create_cq)
PRIVATE_ERRNO(ibv_cmd_create_cq_ex)
PRIVATE_ERRNO(ibv_cmd_create_flow)
PRIVATE_ERRNO(ibv_cmd_create_flow_action_esp)
PRIVATE_ERRNO(ibv_cmd_create_qp)
PRIVATE_ERRNO(ibv_cmd_create_qp_ex)
PRIVATE_ERRNO(ibv_cmd_create_qp_ex2)
PRIVATE_ERRNO(ibv_cmd_create_rwq_ind_table)
PRIVATE_ERRNO(ibv_cmd_create_srq)
PRIVATE_ERRNO(ibv_cmd_create_srq_ex)
PRIVATE_ERRNO(ibv_cmd_create_wq)
PRIVATE_ERRNO(ibv_cmd_dealloc_mw)
PRIVATE_ERRNO(ibv_cmd_dealloc_pd)
PRIVATE_ERRNO(ibv_cmd_dereg_mr)
PRIVATE_ERRNO(ibv_cmd_destroy_ah)
PRIVATE_ERRNO(ibv_cmd_destroy_counters)
PRIVATE_ERRNO(ibv_cmd_destroy_cq)
PRIVATE_ERRNO(ibv_cmd_destroy_flow)
PRIVATE_ERRNO(ibv_cmd_destroy_flow_action)
PRIVATE_ERRNO(ibv_cmd_destroy_qp)
PRIVATE_ERRNO(ibv_cmd_destroy_rwq_ind_table)
PRIVATE_ERRNO(ibv_cmd_destroy_srq)
PRIVATE_ERRNO(ibv_cmd_destroy_wq)
PRIVATE_ERRNO(ibv_cmd_detach_mcast)
PRIVATE_ERRNO(ibv_cmd_free_dm)
PRIVATE_ERRNO(ibv_cmd_get_context)
PRIVATE_ERRNO(ibv_cmd_modify_cq)
PRIVATE_ERRNO(ibv_cmd_modify_flow_action_esp)
PRIVATE_ERRNO(ibv_cmd_modify_qp)
PRIVATE_ERRNO(ibv_cmd_modify_qp_ex)
PRIVATE_ERRNO(ibv_cmd_modify_srq)
PRIVATE_ERRNO(ibv_cmd_modify_wq)
PRIVATE_ERRNO(ibv_cmd_open_qp)
PRIVATE_ERRNO(ibv_cmd_open_xrcd)
PRIVATE_ERRNO(ibv_cmd_poll_cq)
PRIVATE_ERRNO(ibv_cmd_post_recv)
PRIVATE_ERRNO(ibv_cmd_post_send)
PRIVATE_ERRNO(ibv_cmd_post_srq_recv)
PRIVATE_ERRNO(ibv_cmd_query_context)
PRIVATE_ERRNO(ibv_cmd_query_device_any)
PRIVATE_ERRNO(ibv_cmd_query_mr)
PRIVATE_ERRNO(ibv_cmd_query_port)
PRIVATE_ERRNO(ibv_cmd_query_qp)
PRIVATE_ERRNO(ibv_cmd_query_srq)
PRIVATE_ERRNO(ibv_cmd_read_counters)
PRIVATE_ERRNO(ibv_cmd_reg_dm_mr)
PRIVATE_ERRNO(ibv_cmd_reg_dmabuf_mr)
PRIVATE_ERRNO(ibv_cmd_reg_mr)
PRIVATE_ERRNO(ibv_cmd_req_notify_cq)
PRIVATE_ERRNO(ibv_cmd_rereg_mr)
PRIVATE_ERRNO(ibv_cmd_resize_cq)
PRIVATE_ERRNO(verbs_init_cq)
PRIVATE_PTR(_verbs_init_and_alloc_context)
PRIVATE_PTR(verbs_open_device)
PRIVATE_VOID(verbs_register_driver_34)
PRIVATE_VOID(verbs_set_ops)
PRIVATE_VOID(verbs_uninit_context)
PRIVATE_VOID(__verbs_log)

/* Returns the attribute count it was given: with no ioctl there is
 * nothing to add (a count, not an errno). */
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	(void)link;
	return num_attrs;
}

int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fmt, ...);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fmt, ...)
{
	(void)buf; (void)size; (void)sysfs_dev; (void)fmt;
	errno = ENOENT;   /* we have no sysfs directory */
	return -1;
}
