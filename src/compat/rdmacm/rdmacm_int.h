/*
 * rdmacm_int.h — private types of softrnic's librdmacm.so.1.
 *
 * librdmacm.so.1 is the ABI skin of the connection manager: rdma-core's
 * <rdma/rdma_cma.h> API over the pure IB CM of src/cm, which it attaches to
 * the process's softrnic device as the device's agent (srt_set_agent):
 * CM MADs reach it from QP1 through the runtime, and leave through
 * rnic_gsi_send.  Everything that touches the cm runs under the device lock
 * (srt_lock); the cm's events are turned into rdma_cm events and queued on
 * the id's event channel under the channel's own mutex, always taken inside
 * (never around) the device lock.
 *
 * The work librdmacm does in the application's thread when an event is
 * read (moving the QP to RTR and RTS, sending the RTU) happens in
 * rdma_get_cm_event, as in rdma-core.
 *
 * Files: cma*.c (the cm, ids, channels and events, listen/connect/accept:
 * cma_int.h lists them and has what they share), addr.c (addresses,
 * routes, the loopback listener registry, getaddrinfo, devices), qp.c
 * (rdma_create_qp and friends, QP attributes), misc.c (strings, options).
 */
#ifndef SOFTRNIC_COMPAT_RDMACM_INT_H
#define SOFTRNIC_COMPAT_RDMACM_INT_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "cm/cm.h"
#include "rnic/rnic.h"
#include "runtime/runtime.h"

/* Exported by softrnic's libibverbs.so.1 (SOFTRNIC_PRIVATE_1). */
struct srt_device *softrnic_context_device(struct ibv_context *context);

/* One queued event: the rdma_cm_event the program reads, and what it
 * points to (private data copies). */
struct rcm_event {
	struct rdma_cm_event ev;        /* first: rdma_ack_cm_event casts back */
	struct rcm_event *next;
	enum cm_event_type cm_type;     /* what the cm reported */
	bool dead;                      /* its id went: skipped when read */
	/* Copied from the cm event (valid only during its callback). */
	union {
		struct cm_req_info req;
		struct cm_rep_info rep;
	} info;
	uint8_t remote_gid[16];
	uint32_t sidr_qpn, sidr_qkey;
	int sidr_status;
	uint8_t private_data[256];
	uint8_t private_data_len;
};

struct rcm_channel {
	struct rdma_event_channel ch;   /* ch.fd: an eventfd (semaphore mode) */
	pthread_mutex_t lock;
	struct rcm_event *head, *tail;
	bool internal;                  /* a synchronous id's own channel */
	struct rcm_channel *retired_next; /* destroyed by the program (cma_channel.c) */
	bool retired;                   /* so: a waiter blocks (under lock) */
};

enum rcm_id_state {
	RCM_IDLE,
	RCM_ADDR_BOUND,
	RCM_ADDR_RESOLVED,
	RCM_ROUTE_RESOLVED,
	RCM_LISTEN,
	RCM_CONNECT,            /* REQ / SIDR_REQ sent */
	RCM_CONNECT_RESPONSE,   /* REP read, no QP: rdma_establish sends the RTU */
	RCM_REQ_RCVD,           /* passive, before rdma_accept */
	RCM_ACCEPTED,           /* passive, REP sent, waiting for the RTU */
	RCM_CONNECTED,
	RCM_DISCONNECTED,
	RCM_DESTROYING,
};

struct rcm_id {
	struct rdma_cm_id id;           /* first: the program's pointer */
	struct rcm_channel *chan;
	bool sync;                      /* created with a NULL channel */
	enum rcm_id_state state;
	struct cm_id *cm;               /* the cm's id, NULL when none */
	struct cm_listen *listen;
	uint64_t service_id;            /* listening ids: what listen registered */
	struct rcm_id *listener;        /* passive ids: the listening id */
	int backlog;
	bool registered;                /* holds its port in the loopback port space */
	/* The family of the address the program bound (an IPv6 "any" on an
	 * IPv4 device is kept as IPv4 in the route, but the program listens
	 * for IPv6), and RDMA_OPTION_ID_AFONLY. */
	sa_family_t bound_family;
	bool afonly;
	/* Two listeners on one port, one per family, both AFONLY (the
	 * kernel's cma_check_port allows it): they share the cm's listen,
	 * held by one of them, and each REQ goes to the one of its IP
	 * version. */
	struct rcm_id *twin;
	/* Connection parameters. */
	/* The QP's attributes, set from the REQ and REP by cm_qp_attr_active
	 * / _passive (cm/cm_qp_attr.c has the rules: the Starting PSN a side
	 * writes in its REQ or REP is the one it expects, so it sends from the
	 * peer's).  rq_psn is drawn when the id is made and goes in our
	 * REQ/REP; the rest arrives with the peer's message. */
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t remote_qpn, remote_qkey;
	uint8_t responder_resources, initiator_depth; /* max_dest_rd_atomic, max_rd_atomic */
	uint8_t retry_count, rnr_retry_count;
	struct cm_req_info peer_req;    /* passive ids: the REQ received */
	enum ibv_mtu mtu;
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout;            /* local ACK timeout code */
	uint8_t remote_gid[16];
	bool peer_disconnected;         /* a DREQ came (DREP already sent) */
	/* The request as sent, so it can be sent again (cma_early.c, "early
	 * REQs"): REQ parameters, or the SIDR service ID, and the private
	 * data both point into. */
	bool local_peer;                /* the destination is on this host (loopback) */
	struct cm_req_param req;
	uint64_t sidr_service_id;
	uint8_t req_private[256];
	uint8_t req_private_len;
	unsigned early_retries;         /* REQs sent again so far */
	uint64_t retry_at;              /* when to send it again, 0: not pending */
	/* rdma_create_ep on a passive id: QPs for the ids it accepts. */
	struct ibv_qp_init_attr *ep_qp_attr;
	struct ibv_pd *ep_pd;
	/* Synchronous ids: the last event read, acked at the next call. */
	struct rcm_event *sync_event;
	/* CQs and channels rdma_create_qp made (destroyed with the QP). */
	bool own_cqs;
	/* Multicast groups joined (misc.c): leaving one not joined is
	 * EADDRNOTAVAIL, as in rdma-core. */
	struct rcm_mc *mc;
	/* Every id (registry cleanup at exit): doubly linked, so
	 * rdma_destroy_id unlinks in O(1) — a walk cost 65 us per id at
	 * 50 000 ids (cmtime's destroy step). */
	struct rcm_id *next_all, *prev_all;
	/* Ids whose request waits to be sent again (retry_at set), in
	 * deadline order (cma_early.c): the head is the next one. */
	struct rcm_id *next_early, *prev_early;
};

struct rcm_mc {
	struct rcm_mc *next;
	union ibv_gid mgid;
	bool attached;                  /* the id's QP is attached to it */
};

static inline struct rcm_id *to_rcm_id(struct rdma_cm_id *id)
{
	return (struct rcm_id *)id;
}

/* The process-wide state (cma.c). */
struct rcm_global {
	pthread_mutex_t lock;           /* init, the id list */
	bool ready;
	struct ibv_device **dev_list;
	struct ibv_context *verbs;
	struct srt_device *dev;
	struct ibv_pd *default_pd;
	struct cm *cm;
	struct rcm_id *all;
	int max_resp_res, max_init_depth; /* the device's max_qp_rd_atom / _init_rd_atom */
	unsigned n_early;               /* ids with retry_at set (device lock) */
	struct rcm_id *early_head, *early_tail; /* those ids, by retry_at (device lock) */
};
extern struct rcm_global rcm;

/* cma.c */
int rcm_init(void);             /* 0 or an errno */
/* cma_id.c: rdma-core's rdma_create_id2 (rdma_create_ep): the QP type
 * as asked, checked against the port space as the kernel does.  -1 /
 * errno. */
int rcm_create_id2(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
		   enum rdma_port_space ps, enum ibv_qp_type qp_type);
/* cma_channel.c */
void rcm_queue_event(struct rcm_id *id, struct rcm_event *e);
struct rcm_event *rcm_new_event(struct rcm_id *id, enum rdma_cm_event_type type, int status);
/* cma_event.c */
int rcm_wait_event(struct rcm_id *id, enum rdma_cm_event_type want, struct rcm_event **out);
/* Sets errno and returns -1 (librdmacm's error convention). */
static inline int rcm_fail(int e)
{
	errno = e;
	return -1;
}

/* addr.c */
int rcm_bind(struct rcm_id *id, const struct sockaddr *addr);
int rcm_resolve_dst(struct rcm_id *id, const struct sockaddr *dst, uint8_t dgid[16]);
int rcm_register_listener(struct rcm_id *id);
void rcm_unregister_listener(struct rcm_id *id);
void rcm_fill_route(struct rcm_id *id);
uint16_t rcm_src_port(const struct rcm_id *id);
uint16_t rcm_dst_port(const struct rcm_id *id);
uint16_t rcm_ps(const struct rcm_id *id);

/* port_registry.c: the host's loopback port space, kept in abstract Unix
 * socket names (the file's comment says how). */
int rcm_registry_listen(uint16_t ps, uint16_t port, uint32_t device_ip);
void rcm_registry_unlisten(uint16_t ps, uint16_t port, uint32_t device_ip);
bool rcm_registry_lookup(uint16_t ps, uint16_t port, uint32_t *device_ip);
bool rcm_registry_port_free(uint16_t ps, uint16_t port);
/* Empties the queues lookups leave on this process's names. */
void rcm_registry_drain(void);

/* misc.c: forget the groups the id joined (rdma_destroy_id). */
void rcm_leave_all(struct rcm_id *id);

/* qp.c */
int rcm_qp_to_rtr_rts(struct rcm_id *id);
int rcm_qp_to_error(struct rcm_id *id);

#endif
