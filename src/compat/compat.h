/*
 * compat.h — private types of the libibverbs.so.1 ABI skin.
 *
 * Every verbs object an application sees (struct ibv_pd, ibv_mr, ibv_cq,
 * ibv_qp, ibv_comp_channel, ibv_context) is the first member of one of the
 * structs below, so the public pointer converts to ours with a cast (the
 * same embedding rdma-core's providers use).  The second member is the
 * matching rnic object; everything between the two is bookkeeping that the
 * verbs API demands but the transport does not care about: completion
 * channels, async event queues and the event counters ibv_destroy_* waits
 * on.
 *
 * Locking: calls into the rnic happen under srt_lock(ctx->dev).  Event
 * queues have their own mutex, always taken after (never around) the
 * device lock, because the runtime calls our hooks with the device lock
 * held.
 */
#ifndef SOFTRNIC_COMPAT_H
#define SOFTRNIC_COMPAT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "rnic/rnic.h"
#include "runtime/runtime.h"

#define SR_DEVICE_NAME "softrnic0"
#define SR_PORT_NUM 1
#define SR_FW_VERSION "softrnic 0.1"
/* Like rxe: the IEEE "no OUI" vendor id, part 0. */
#define SR_VENDOR_ID 0xFFFFFF
#define SR_VENDOR_PART_ID 0
#define SR_PKEY_DEFAULT 0xffff

/* A queued completion event: which CQ fired. */
struct sr_cq_event {
	struct sr_cq *cq;
	struct sr_cq_event *next;
};

/* Completion channel: a FIFO of fired CQs plus an eventfd (semaphore
 * mode) whose count equals the number of events queued, so the fd is
 * readable in poll/epoll exactly when ibv_get_cq_event has something. */
struct sr_channel {
	struct ibv_comp_channel ibv;
	pthread_mutex_t lock;
	struct sr_cq_event *head, *tail;
};

struct sr_async_event {
	struct ibv_async_event ev;
	struct sr_async_event *next;
};

struct sr_context {
	struct verbs_context vctx;      /* ibv_context lives at vctx.context */
	struct srt_device *dev;
	int hooks_handle;
	/* async events, delivered through context.async_fd (eventfd). */
	pthread_mutex_t async_lock;
	struct sr_async_event *async_head, *async_tail;
};

struct sr_pd {
	struct ibv_pd ibv;
	struct rnic_pd *pd;
	/* A parent domain (pd_ex.c) is an sr_pd whose `pd` is the rnic PD
	 * of the protection domain it wraps, so every verb that takes a PD
	 * takes it unchanged.  parent: that protection domain, NULL for a
	 * plain PD.  n_children: parent domains wrapping this PD (it cannot
	 * be freed before them). */
	struct sr_pd *parent;
	uint32_t n_children;
	/* Parent domains only: QPs, SRQs and CQs created on it (it cannot
	 * be freed before them, as with mlx5).  Under context->mutex. */
	uint32_t n_users;
};

struct sr_mr {
	struct ibv_mr ibv;
	struct rnic_mr *mr;
};

struct sr_cq {
	/* ibv_create_cq_ex hands out an ibv_cq_ex, whose leading fields are
	 * those of ibv_cq (ibv_cq_ex_to_cq is a cast): the union keeps `ibv`
	 * valid for both kinds, so every CQ verb works on either. */
	union {
		struct ibv_cq ibv;
		struct ibv_cq_ex ibv_ex;
	};
	struct rnic_cq *cq;
	/* Events handed to the application; ibv_destroy_cq waits until the
	 * application acknowledged as many (ibv_ack_cq_events). */
	uint32_t comp_events_reported;  /* under the channel lock */
	uint32_t async_events_reported; /* under the context async lock */
	/* Extended CQs only (cq_ex.c): the completion that start_poll /
	 * next_poll made current, read by the read_* ops, and the lock held
	 * from start_poll to end_poll (not taken if ex_single_threaded). */
	struct ibv_wc ex_cur;
	bool is_ex, ex_single_threaded;
	pthread_mutex_t ex_lock;
	/* The parent domain named by IBV_CQ_INIT_ATTR_MASK_PD, else NULL. */
	struct ibv_pd *parent_domain;
};

struct sr_wr_builder;

/* rdma-core 46 appended wr_flush (ibv_wr_flush) to struct ibv_qp_ex; the
 * header softrnic may be built against (Debian 12: rdma-core 44) ends at
 * wr_atomic_write.  Every QP has room for it, right where newer headers
 * look, so a program built against them finds softrnic's FLUSH. */
struct sr_qp_ex_flush {
	struct ibv_qp_ex ex;
	void (*wr_flush)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len, uint8_t type,
			 uint8_t level);
};
#define SR_QP_EX_WITH_FLUSH (1ull << 11)        /* IBV_QP_EX_WITH_FLUSH */

struct sr_qp {
	/* Likewise ibv_qp_ex starts with the ibv_qp (ibv_qp_to_qp_ex). */
	union {
		struct ibv_qp ibv;
		struct ibv_qp_ex ibv_ex;
		struct sr_qp_ex_flush ibv_ex_flush;
	};
	struct rnic_qp *qp;
	uint32_t events_reported;       /* under the context async lock */
	/* The ibv_wr_* posting state when created with
	 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS (qp_ex.c), else NULL. */
	struct sr_wr_builder *wrb;
};

struct sr_srq {
	struct ibv_srq ibv;
	struct rnic_srq *srq;
	uint32_t events_reported;       /* under the context async lock */
};

static inline struct sr_context *to_sr_ctx(struct ibv_context *c)
{
	return (struct sr_context *)((char *)c - offsetof(struct sr_context, vctx.context));
}
static inline struct sr_pd *to_sr_pd(struct ibv_pd *p) { return (struct sr_pd *)p; }
static inline struct sr_mr *to_sr_mr(struct ibv_mr *m) { return (struct sr_mr *)m; }
static inline struct sr_cq *to_sr_cq(struct ibv_cq *c) { return (struct sr_cq *)c; }
static inline struct sr_qp *to_sr_qp(struct ibv_qp *q) { return (struct sr_qp *)q; }
static inline struct sr_srq *to_sr_srq(struct ibv_srq *s) { return (struct sr_srq *)s; }
static inline struct sr_channel *to_sr_channel(struct ibv_comp_channel *c)
{
	return (struct sr_channel *)c;
}

/* Exporting the current version of a verb that also has a legacy
 * IBVERBS_1.0 entry (unsupported.c): the C function is NAME_1_1 and
 * becomes NAME@@IBVERBS_1.1, the default the linker binds new programs to.
 * The assertion keeps its signature equal to the header's prototype. */
#define SR_EXPORT_1_1(name)                                                    \
	__asm__(".symver " #name "_1_1, " #name "@@IBVERBS_1.1");              \
	_Static_assert(__builtin_types_compatible_p(__typeof__(name),          \
						    __typeof__(name##_1_1)),   \
		       #name ": signature differs from <infiniband/verbs.h>")

/* The one device this library offers (device.c). */
extern struct ibv_device sr_the_device;
bool sr_is_our_context(struct ibv_context *ctx);

/* Fills attr from the rnic configuration (device.c). */
void sr_fill_device_attr(struct sr_context *ctx, struct ibv_device_attr *attr);

/* Context ops implemented in objects.c, installed by ibv_open_device. */
int sr_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int sr_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int sr_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
/* mw.c: memory windows (context ops alloc_mw / dealloc_mw / bind_mw). */
struct ibv_mw *sr_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int sr_dealloc_mw(struct ibv_mw *mw);
int sr_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
int sr_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_qp *sr_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
/* Extended CQ (cq_ex.c). */
struct ibv_cq *ibv_create_cq_1_1(struct ibv_context *context, int cqe, void *cq_context,
				 struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *sr_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);
void sr_cq_ex_free(struct sr_cq *cq);
/* The ibv_qp_ex send-ops API (qp_ex.c): check the requested operations
 * before the QP exists, install the ops after, free with the QP. */
int sr_qp_ex_check_ops(enum ibv_qp_type type, uint64_t send_ops_flags);
int sr_qp_ex_setup(struct sr_qp *qp, const struct ibv_qp_init_attr_ex *attr);
void sr_qp_ex_free(struct sr_qp *qp);
int ibv_destroy_qp_1_1(struct ibv_qp *qp);
/* SRQ ops (srq.c). */
int sr_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_srq *sr_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr);

/* Parent and thread domains, ibv_advise_mr (pd_ex.c). */
struct ibv_pd *sr_alloc_parent_domain(struct ibv_context *context,
				      struct ibv_parent_domain_init_attr *attr);
struct ibv_td *sr_alloc_td(struct ibv_context *context, struct ibv_td_init_attr *attr);
int sr_dealloc_td(struct ibv_td *td);
/* Frees a parent domain (ibv_dealloc_pd on one): 0 or an errno. */
int sr_dealloc_parent_domain(struct sr_pd *pd);
/* A QP, SRQ or CQ was created on / destroyed from pd: counts the users of
 * a parent domain, nothing for a plain PD (its rnic PD counts). */
void sr_pd_use(struct ibv_pd *pd);
void sr_pd_unuse(struct ibv_pd *pd);
int sr_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		 struct ibv_sge *sg_list, uint32_t num_sge);

/* Event plumbing (events.c). */
void sr_hook_cq_event(void *ctx, struct rnic_cq *cq, void *cq_context);
void sr_hook_async_event(void *ctx, enum ibv_event_type type, void *user_obj);
/* Drop events not yet read for an object that is going away. */
void sr_channel_forget_cq(struct sr_cq *cq);
void sr_async_forget(struct sr_context *ctx, void *obj);
void sr_async_drain(struct sr_context *ctx);

/* Read the 8-byte count of an eventfd: 0, or -1 with errno (EAGAIN). */
int sr_eventfd_take(int fd);
void sr_eventfd_give(int fd);

/* objects.c: the verbs_context modify_qp_rate_limit op. */
int sr_modify_qp_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr);

#endif
