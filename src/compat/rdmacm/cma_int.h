/*
 * cma_int.h — what the files of librdmacm's rdma_cm API (cma*.c) share
 * among themselves; rdmacm_int.h has the types, and what the rest of the
 * library calls.
 *
 *   cma.c          the process's cm: made on first use, attached to the
 *                  device as its agent (QP1's MADs, deadlines, counters);
 *                  DREQs at exit
 *   cma_early.c    early REQs: a refused request sent again while a
 *                  listener on this host may yet appear
 *   cma_channel.c  event channels: the queue of events and its eventfd,
 *                  retired channels, rdma_migrate_id
 *   cma_id.c       ids: made, listed, destroyed
 *   cma_event.c    cm events to rdma_cm events (device lock held), and
 *                  reading them (rdma_get_cm_event's work in the program's
 *                  thread)
 *   cma_listen.c   rdma_listen (twins on one port, the steering of a
 *                  shared address), rdma_get_request
 *   cma_conn.c     rdma_connect, rdma_accept, rdma_reject, rdma_establish,
 *                  rdma_notify, rdma_disconnect
 */
#ifndef SOFTRNIC_COMPAT_RDMACM_CMA_INT_H
#define SOFTRNIC_COMPAT_RDMACM_CMA_INT_H

#include "compat/rdmacm/rdmacm_int.h"

/* cma.c: guards rcm.all; taken inside the device lock (ids are made in
 * cm events). */
extern pthread_mutex_t rcm_list_lock;

/* cma_early.c (its comment says why): a refused request is sent again
 * every RCM_EARLY_RETRY_NS, up to RCM_EARLY_RETRIES times. */
#define RCM_EARLY_RETRY_NS (2ull * 1000 * 1000)
#define RCM_EARLY_RETRIES 50
/* Device lock held: arm (at > 0) or disarm (0) an id's resend. */
void rcm_set_retry(struct rcm_id *id, uint64_t at);
/* Device lock held: the next resend's deadline (UINT64_MAX: none). */
uint64_t rcm_early_deadline(void);
/* Device lock held: send the due requests again. */
void rcm_early_retry(uint64_t now);

/* cma_channel.c */
struct rcm_channel *rcm_channel_create(bool internal);
void rcm_channel_destroy(struct rcm_channel *c);
/* The first live event of the channel: 0, or an errno (EAGAIN when the
 * fd is non-blocking and none is there). */
int rcm_channel_take(struct rcm_channel *c, struct rcm_event **out);

/* cma_id.c */
struct rcm_id *rcm_id_alloc(struct rcm_channel *chan, bool sync, void *context, enum rdma_port_space ps,
			    enum ibv_qp_type qp_type);
void rcm_id_unlink(struct rcm_id *id);

/* cma_event.c */
/* The cm's event callback (struct cm_io), device lock held. */
void rcm_cm_event(void *ctx, const struct cm_event *ev);
/* The QP attributes a REQ/REP exchange gave, into the id. */
void rcm_take_qp_attr(struct rcm_id *id, const struct cm_qp_attr *a);

/* cma_listen.c: the family a listener takes requests for. */
sa_family_t rcm_listen_family(const struct rcm_id *id);

/* cma_conn.c: device lock held: send the REQ (or SIDR_REQ) saved in the
 * id. */
int rcm_send_request(struct rcm_id *id, uint64_t now);

#endif
