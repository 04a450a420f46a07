/*
 * cm_int.h — what the files of src/cm/ share and nobody else sees: the cm
 * and cm_id structures, the input record every state function takes, and
 * the helpers cm.c provides to the state machines (sending, events, timers,
 * tables, tracing).
 *
 * How the pieces fit:
 *   cm.c       the cm object: ids and listeners, the comm ID / TID
 *              generator, the lookup tables, the timer heap, cm_receive's
 *              decode and dispatch, counters, events, tracing; and the
 *              step function that runs one input through an id's state.
 *   cm_msg.c   formatting of every message we send (REQ .. SIDR_REP) with
 *              wire/mad.h, and the stateless answers (REJ 8, SIDR_REP 1).
 *   cm_conn.c  the connection state machine (IBTA 12.9): one function per
 *              state, taking an input and returning the next state; and the
 *              consumer calls that feed it (cm_connect, cm_accept, ...).
 *   sidr.c     the SIDR state machine (IBTA 12.11) and its consumer calls.
 *
 * The state machines never call the consumer back except through
 * cm_emit(); they never free an id (cm_step does, once a destroyed id is
 * Idle).
 */
#ifndef SOFTRNIC_CM_CM_INT_H
#define SOFTRNIC_CM_CM_INT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm.h"
#include "wire/mad.h"

#define CM_NO_DEADLINE UINT64_MAX

/* A stored MAD: the request we resend on a timeout, or the last response
 * we resend when a duplicate arrives. */
struct cm_stored {
	bool valid;
	uint16_t attr;
	uint8_t mad[WIRE_MAD_LEN];
};

struct cm_id {
	struct cm *cm;
	uint64_t seq;                   /* creation order (timer tie-break)    */
	enum cm_state state;
	bool active;                    /* we sent the REQ / SIDR_REQ          */
	bool sidr;                      /* a SIDR id (12.11), not a connection */
	bool destroyed;                 /* the consumer gave it back           */
	void *user;

	uint32_t local_id;              /* our comm ID (SIDR: request ID)      */
	uint32_t remote_id;             /* the peer's, 0 until known           */
	uint64_t remote_ca_guid;        /* 0 until known                       */
	uint8_t remote_gid[16];
	uint64_t service_id;
	uint32_t local_qpn, remote_qpn;
	enum ibv_qp_type qp_type;
	uint64_t tid;                   /* TID of the REQ (or SIDR_REQ) the
	                                   connection was set up with          */

	/* Retransmission of the outstanding request (REQ, REP, DREQ,
	 * SIDR_REQ), IBTA 12.6 "CM response timeout". */
	uint64_t timeout_ns;            /* T: the wait per attempt             */
	uint8_t max_retries;            /* resends allowed                     */
	uint8_t retries;                /* resends done of the current request */
	uint64_t deadline;              /* CM_NO_DEADLINE when none            */
	size_t heap_idx;                /* position in cm->heap, or SIZE_MAX   */
	struct cm_stored req;           /* the request to resend               */
	struct cm_stored resp;          /* the answer to resend to duplicates  */

	/* Tables (cm.c). */
	struct cm_id *next_local;       /* local-ID hash chain                 */
	struct cm_id *next_remote;      /* remote hash chain                   */
	bool in_remote;
	/* The (remote CA GUID, remote QPN) index, for the stale-connection
	 * check on every REQ (cm.c); doubly linked so an id leaves it in
	 * O(1).  pprev_qpn NULL: not in it (SIDR, or neither known yet). */
	struct cm_id *next_qpn, **pprev_qpn;
	struct cm_id *prev, *next;      /* all ids, creation order             */
};

struct cm_listen {
	struct cm *cm;
	uint64_t service_id;
	void *user;
	struct cm_listen *next;
};

struct cm_hash {
	struct cm_id **b;
	size_t nb;                      /* buckets (power of 2)                */
	size_t count;
};

struct cm {
	struct cm_config cfg;
	struct cm_io io;
	struct cm_counters ctr;
	uint64_t rng[4];                /* xoshiro256**, seeded from cfg.seed  */
	uint32_t id_next;               /* comm IDs: counter ^ id_xor          */
	uint32_t id_xor;
	uint64_t id_seq;
	struct cm_id *first, *last;
	struct cm_listen *listeners;
	struct cm_hash by_local;
	struct cm_hash by_remote;
	struct cm_hash by_qpn;          /* connections by (remote CA GUID, QPN) */
	struct cm_id **heap;            /* timers: min-heap by (deadline, seq) */
	size_t heap_len, heap_cap;
	void (*trace)(void *ctx, const char *line);
	void *trace_ctx;
};

/* ---- the input of one state-machine step -------------------------------- */

enum cm_in_kind {
	CM_IN_CONNECT,          /* cm_connect: req                         */
	CM_IN_RX,               /* a MAD for this id: msg, src_gid         */
	CM_IN_TIMER,            /* the id's deadline has passed            */
	CM_IN_ACCEPT,           /* cm_accept: rep                          */
	CM_IN_REJECT,           /* cm_reject: rej_*                        */
	CM_IN_RTU,              /* cm_send_rtu: priv                       */
	CM_IN_MRA,              /* cm_send_mra: service_timeout            */
	CM_IN_ESTABLISH,        /* cm_establish                            */
	CM_IN_DISCONNECT,       /* cm_disconnect: priv                     */
	CM_IN_DESTROY,          /* cm_destroy_id                           */
	CM_IN_SIDR_REPLY,       /* cm_sidr_reply: sidr_*, priv             */
	CM_IN_SIDR_REQUEST,     /* cm_sidr_request: priv, sidr_timeout,
	                           sidr_retries                            */
};

/* What became of a received MAD; counted once per MAD (cm.c). */
enum cm_disp {
	CM_DISP_HANDLED,        /* it moved the state or was answered      */
	CM_DISP_DUP,            /* a duplicate (maybe answered again)      */
	CM_DISP_UNKNOWN,        /* no id matches                           */
	CM_DISP_UNEXPECTED,     /* not valid in the id's state             */
	CM_DISP_TIMEWAIT,       /* for an id in TimeWait, dropped          */
};

struct cm_in {
	enum cm_in_kind kind;
	uint64_t now;
	char why[32];                   /* set by cm_step: "rx REP", "timer" */
	/* CM_IN_RX */
	const struct wire_cm_msg *msg;
	const uint8_t *src_gid;
	enum cm_disp disp;              /* out */
	/* consumer calls */
	const struct cm_req_param *req;
	const struct cm_rep_param *rep;
	uint16_t rej_reason;
	const void *ari;
	uint8_t ari_len;
	const void *priv;
	uint8_t priv_len;
	uint8_t service_timeout;
	uint8_t sidr_status;
	uint32_t sidr_qpn, sidr_qkey;
	uint8_t sidr_timeout, sidr_retries;
	int result;                     /* out: the call's return value    */
};

typedef enum cm_state (*cm_state_fn)(struct cm_id *id, struct cm_in *in);

/* ---- cm.c: the machinery the state machines use ------------------------- */

/* Run one input through the id's state function, trace the transition,
 * free the id if it is destroyed and Idle.  Returns in->result. */
int cm_step(struct cm_id *id, struct cm_in *in);
/* A transition inside a step (traced); the state function's return value
 * is the final one.  State functions set the state this way before they
 * report an event, so the consumer sees the new state. */
void cm_set_state(struct cm_id *id, enum cm_state s, const char *why);
/* The state functions (cm_conn.c, sidr.c). */
enum cm_state cm_conn_state_fn(struct cm_id *id, struct cm_in *in);
enum cm_state cm_sidr_state_fn(struct cm_id *id, struct cm_in *in);

/* A new id (Idle, in the local table, with a fresh comm ID); NULL when out
 * of memory. */
struct cm_id *cm_id_new(struct cm *cm, bool active, bool sidr);
/* Unlink and free (cm_step does it for a destroyed id that is Idle). */
void cm_id_free(struct cm_id *id);
/* Record the remote identity (comm ID + CA GUID for a connection, request
 * ID + GID for SIDR) and index it for duplicate detection. */
bool cm_id_set_remote(struct cm_id *id, uint32_t remote_id, uint64_t remote_ca_guid);
/* After remote_qpn or remote_ca_guid changed: re-file the id by them. */
void cm_id_index_qpn(struct cm_id *id);
uint64_t cm_new_tid(struct cm *cm, uint32_t local_id);

/* Timers: one per id. */
void cm_timer_set(struct cm_id *id, uint64_t deadline);
void cm_timer_clear(struct cm_id *id);

/* Send a MAD to a GID (counted by its attribute). */
void cm_send(struct cm *cm, const uint8_t dgid[16], const uint8_t mad[WIRE_MAD_LEN]);
/* Encode msg into st (valid on success) and send it to the id's peer. */
int cm_send_stored(struct cm_id *id, struct cm_stored *st, const struct wire_cm_msg *msg);
void cm_resend(struct cm_id *id, const struct cm_stored *st);

/* Report an event for the id (nothing for a destroyed id).  Fills type,
 * id, user, remote_gid and remote_comm_id. */
void cm_emit(struct cm_id *id, struct cm_event *ev);

/* Enter TimeWait (IBTA 12.9): stop retrying, arm the TimeWait timer. */
void cm_enter_timewait(struct cm_id *id, uint64_t now, const char *why);

#define CM_COUNT(cm, name) ((cm)->ctr.name++)

/* ---- cm_msg.c: formatting --------------------------------------------------- */

void cm_fmt_req(const struct cm_id *id, const struct cm_req_param *p, struct wire_cm_msg *m);
void cm_fmt_rep(const struct cm_id *id, const struct cm_rep_param *p, struct wire_cm_msg *m);
void cm_fmt_rtu(const struct cm_id *id, const void *priv, uint8_t len, struct wire_cm_msg *m);
void cm_fmt_mra(const struct cm_id *id, uint8_t msg_mraed, uint8_t service_timeout, struct wire_cm_msg *m);
void cm_fmt_rej(const struct cm_id *id, uint8_t msg_rejected, uint16_t reason, const void *ari,
		uint8_t ari_len, const void *priv, uint8_t len, struct wire_cm_msg *m);
/* REJ "timeout" with our CA GUID as the ARI (IBTA 12.6, REJ; the kernel's
 * cm_destroy_id in REQ Sent). */
void cm_fmt_rej_timeout(const struct cm_id *id, uint8_t msg_rejected, struct wire_cm_msg *m);
void cm_fmt_dreq(const struct cm_id *id, uint64_t tid, const void *priv, uint8_t len, struct wire_cm_msg *m);
void cm_fmt_drep(const struct cm_id *id, uint64_t tid, struct wire_cm_msg *m);
void cm_fmt_sidr_req(const struct cm_id *id, const void *priv, uint8_t len, struct wire_cm_msg *m);
void cm_fmt_sidr_rep(const struct cm_id *id, uint8_t status, uint32_t qpn, uint32_t qkey, const void *priv,
		     uint8_t len, struct wire_cm_msg *m);
/* Stateless answers to a received message (no id): a REJ to a REQ
 * (reason 8, 9, 10) and a SIDR_REP (status 1). */
void cm_issue_rej(struct cm *cm, const uint8_t dgid[16], const struct wire_cm_msg *req, uint16_t reason);
void cm_issue_sidr_rep(struct cm *cm, const uint8_t dgid[16], const struct wire_cm_msg *sidr_req,
		       uint8_t status);

/* Private data of a received message: pointer and field size. */
const uint8_t *cm_msg_private_data(const struct wire_cm_msg *m, uint8_t *len);

#endif
