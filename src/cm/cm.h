/*
 * cm.h — the InfiniBand Communication Manager (IBTA Vol 1 chapter 12) as a
 * pure, deterministic state machine: the contract between the protocol core
 * and whatever drives it (the runtime, where CM MADs arrive as UD packets on
 * QP1; librdmacm.so.1, which is written on top of this API; the tests).
 *
 *   inputs   consumer calls (cm_connect, cm_accept, cm_reject, cm_send_rtu,
 *            cm_disconnect, cm_destroy_id, cm_sidr_request, ...), MADs
 *            received (cm_receive), time passing (cm_advance);
 *   outputs  MADs to send (io->send_mad), events for the consumer
 *            (io->event), timers (cm_next_deadline).
 *
 * Like rnic/, the CM never reads a clock, opens a socket, sleeps or starts a
 * thread.  The caller passes `now` (nanoseconds on any monotonic clock) into
 * every call that can start or check a timer.  Transaction IDs and local
 * communication IDs come from a generator seeded by cm_config.seed, so one
 * seed and one sequence of inputs give one sequence of outputs.
 *
 * Concurrency: a cm is single-threaded; the caller serialises all calls on
 * one cm.  io->send_mad and io->event must not call back into the cm; they
 * may be called from inside any cm call, including the consumer's own calls
 * (e.g. cm_establish reports CM_EV_ESTABLISHED before it returns).
 *
 * What it covers: connection establishment for RC and UC (REQ, REP, RTU,
 * REJ, MRA; IBTA 12.6, 12.9), disconnection (DREQ, DREP) and TimeWait, and
 * Service ID Resolution for UD (SIDR_REQ, SIDR_REP; IBTA 12.11).  Not
 * covered: LAP/APR (alternate paths; the kernel does not support them on
 * RoCE either), peer-to-peer connection (REQ crossing REQ), RD, XRC.
 *
 * ---- timers and retries ----------------------------------------------------
 *
 * A timeout code t (5 bits, IBTA 12.6 "CM response timeout") means
 * 4.096 us * 2^t (cm_timeout_ns).  A request (REQ, REP, DREQ, SIDR_REQ) is
 * sent once and resent, byte for byte (same TID), every T ns until the
 * answer arrives or it has been resent max_cm_retries times; when the last
 * wait runs out the failure event is reported.  T is constant: it is not
 * doubled between resends (nor is it in the kernel's MAD layer, which
 * resends CM MADs with a fixed timeout_ms).  So with retries r the failure comes exactly (r + 1) * T
 * after the first send, after r + 1 copies.  T is:
 *   REQ, and DREQ from the active side:   cm_timeout_ns(remote_cm_response_timeout)
 *   REP, and DREQ from the passive side:  cm_timeout_ns(REQ's local_cm_response_timeout)
 *   SIDR_REQ:                             cm_timeout_ns(timeout_code)
 * Retries: the REQ's max_cm_retries on both sides (the passive takes it from
 * the REQ, as the kernel does); the SIDR request's own count.
 *
 * MRA (IBTA 12.6.6): an MRA for our REQ (or REP) replaces the running wait
 * by cm_timeout_ns(MRA service timeout) + T; when that runs out the request
 * is resent (it counts as a retry) and the normal wait resumes.  A further
 * MRA extends the wait again.  The passive side answers a duplicate REQ that
 * the consumer has not answered yet with an MRA (service timeout
 * cm_config.cm_response_timeout); the active side does the same for a
 * duplicate REP that the consumer has not answered (cm_send_rtu/cm_reject).
 *
 * TimeWait (IBTA 12.9): every connection ends in TimeWait — after a
 * disconnect, a REJ sent or received, or a timeout — and stays there for
 * cm_config.timewait_ns, then goes to Idle (CM_EV_TIMEWAIT_EXIT).  While an
 * id is in TimeWait its local comm ID is not reused and messages for it are
 * answered or dropped: a DREQ gets a DREP again, a duplicate REQ gets the
 * REJ we sent (or REJ "stale connection"), a REP of a connection we refused
 * gets our REJ again (a REJ is never retried, so this is how a lost one is
 * recovered), anything else is dropped and counted (rx_drop_timewait).
 * A passive SIDR id also waits in TimeWait after its answer (cm_sidr_reply).
 *
 * ---- ownership ---------------------------------------------------------------
 *
 * Every cm_id the consumer receives — from cm_connect / cm_sidr_request, or
 * in a CM_EV_REQ_RECEIVED / CM_EV_SIDR_REQ_RECEIVED event — belongs to the
 * consumer until it calls cm_destroy_id, in any state.  The CM never frees
 * an id the consumer holds: after a terminal event (timeout, REJ, disconnect,
 * TimeWait exit) the id stays, in TimeWait or Idle, until destroyed.
 * cm_destroy_id does what the kernel's ib_destroy_cm_id does in that state
 * (REJ for a pending connection, DREQ for an established one, SIDR_REP
 * "rejected" for an unanswered SIDR_REQ, ...) and keeps the id internally,
 * reporting no more events for it, until its DREQ retries and TimeWait are
 * over; then it is freed.
 *
 * Return values: functions returning int return 0 or a positive errno
 * (EINVAL bad argument or wrong state, EADDRINUSE, ENOMEM).
 */
#ifndef SOFTRNIC_CM_CM_H
#define SOFTRNIC_CM_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "wire/mad.h"

struct cm;
struct cm_id;
struct cm_listen;

/* Private data limits (IBTA 12.6: the size of each message's field). */
#define CM_REQ_PRIVATE_DATA_SIZE WIRE_CM_REQ_PRIVATE_DATA           /* 92 */
#define CM_MRA_PRIVATE_DATA_SIZE WIRE_CM_MRA_PRIVATE_DATA           /* 222 */
#define CM_REJ_PRIVATE_DATA_SIZE WIRE_CM_REJ_PRIVATE_DATA           /* 148 */
#define CM_REP_PRIVATE_DATA_SIZE WIRE_CM_REP_PRIVATE_DATA           /* 196 */
#define CM_RTU_PRIVATE_DATA_SIZE WIRE_CM_RTU_PRIVATE_DATA           /* 224 */
#define CM_DREQ_PRIVATE_DATA_SIZE WIRE_CM_DREQ_PRIVATE_DATA         /* 220 */
#define CM_DREP_PRIVATE_DATA_SIZE WIRE_CM_DREP_PRIVATE_DATA         /* 224 */
#define CM_SIDR_REQ_PRIVATE_DATA_SIZE WIRE_CM_SIDR_REQ_PRIVATE_DATA /* 216 */
#define CM_SIDR_REP_PRIVATE_DATA_SIZE WIRE_CM_SIDR_REP_PRIVATE_DATA /* 136 */
#define CM_REJ_ARI_LENGTH WIRE_CM_REJ_ARI_LEN                       /* 72 */

/* REJ reasons used here (IBTA 12.6, the REJ message's Reason field; the
 * kernel's enum ib_cm_rej_reason; wire/mad.h has them all). */
enum cm_rej_reason {
	CM_REJ_NO_QP = 1,
	CM_REJ_NO_RESOURCES = 3,
	CM_REJ_TIMEOUT = 4,
	CM_REJ_UNSUPPORTED = 5,
	CM_REJ_INVALID_COMM_ID = 6,
	CM_REJ_INVALID_SERVICE_ID = 8,
	CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	CM_REJ_STALE_CONN = 10,
	CM_REJ_INVALID_GID = 12,
	CM_REJ_INVALID_MTU = 26,
	CM_REJ_INSUFFICIENT_RESP_RESOURCES = 27,
	CM_REJ_CONSUMER_DEFINED = 28,
	CM_REJ_INVALID_RNR_RETRY = 29,
	CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	CM_REJ_INVALID_CLASS_VERSION = 31,
};

/* SIDR_REP status (IBTA 12.11, the SIDR_REP message's Status field). */
enum cm_sidr_status {
	CM_SIDR_SUCCESS = 0,
	CM_SIDR_UNSUPPORTED = 1,        /* service ID not supported */
	CM_SIDR_REJECT = 2,             /* rejected by the service */
	CM_SIDR_NO_QP = 3,
	CM_SIDR_REDIRECT = 4,
	CM_SIDR_UNSUPPORTED_VERSION = 5,
};

/* 4.096 us * 2^code, in ns (code is masked to 5 bits). */
static inline uint64_t cm_timeout_ns(uint8_t code)
{
	return wire_cm_timeout_ns(code);
}

/* ---- configuration -------------------------------------------------------- */

struct cm_config {
	uint8_t gid[16];                /* our GID (the source of our MADs)     */
	uint64_t ca_guid;               /* our CA GUID (non-zero), in REQ/REP
	                                   and in the ARI of REJ "timeout"      */
	uint32_t seed;                  /* comm IDs and transaction IDs         */
	uint8_t cm_response_timeout;    /* IBTA 5-bit code: the default for
	                                   cm_req_param_init's timeouts and, when
	                                   mra_service_timeout is 0, the service
	                                   timeout of automatic MRAs            */
	uint8_t mra_service_timeout;    /* IBTA 5-bit code: the service timeout
	                                   of the automatic MRA for a duplicate
	                                   REQ or REP the consumer has not yet
	                                   answered (12.6.6); 0: as
	                                   cm_response_timeout                  */
	uint8_t max_cm_retries;         /* default for cm_req_param_init (4 bits
	                                   on the wire: 0..15)                  */
	uint64_t timewait_ns;           /* time an id stays in TimeWait         */
	/* Local comm IDs (and SIDR request IDs) carry these bits: the bits
	 * of id_prefix_mask are id_prefix's, the rest drawn as usual.  A
	 * process sharing its host address puts its slot there, so that the
	 * kernel steers the answers to it (runtime/share_steer.h).  0, 0:
	 * the whole 32 bits are drawn. */
	uint32_t id_prefix, id_prefix_mask;
};
/* gid all zero, ca_guid 1, seed 1, cm_response_timeout 20 (~4.3 s) and
 * max_cm_retries 15 (librdmacm's CMA_CM_RESPONSE_TIMEOUT and
 * CMA_MAX_CM_RETRIES), mra_service_timeout 0, timewait 1 s. */
void cm_config_default(struct cm_config *cfg);

struct cm_event;

struct cm_io {
	void *ctx;
	/* Send one 256-byte MAD to QP1 of the host with GID dgid.  Must not
	 * call back into the cm. */
	void (*send_mad)(void *ctx, const uint8_t dgid[16], const uint8_t mad[256]);
	/* Report an event to the consumer; `ev` and what it points to are
	 * valid only during the call.  Must not call back into the cm.  May be
	 * NULL (events are then only counted). */
	void (*event)(void *ctx, const struct cm_event *ev);
};

/* NULL (errno EINVAL) for a zero ca_guid or a NULL send_mad. */
struct cm *cm_create(const struct cm_config *cfg, const struct cm_io *io);
/* Frees every id and listener at once; sends nothing. */
void cm_destroy(struct cm *cm);
const struct cm_config *cm_get_config(const struct cm *cm);

/* ---- listening -------------------------------------------------------------- */

/* Listen on service_id for REQ and SIDR_REQ.  EADDRINUSE if taken.  A REQ
 * for a service nobody listens on is answered at once with REJ reason 8
 * "invalid service ID" (a SIDR_REQ with SIDR_REP status 1). */
int cm_listen(struct cm *cm, uint64_t service_id, void *user, struct cm_listen **out);
/* Stop listening.  Ids created from this listener are not affected. */
void cm_unlisten(struct cm_listen *l);
void *cm_listen_get_user(const struct cm_listen *l);

/* ---- connection ids ------------------------------------------------------ */

/* IBTA 12.9 state diagrams (names from cm_state_name). */
enum cm_state {
	CM_ST_IDLE,
	CM_ST_REQ_SENT,
	CM_ST_MRA_REQ_RCVD,     /* MRA(REQ) Received: waiting longer for REP */
	CM_ST_REP_RCVD,
	CM_ST_MRA_REP_SENT,
	CM_ST_REQ_RCVD,
	CM_ST_MRA_REQ_SENT,     /* "MRA Sent" */
	CM_ST_REP_SENT,
	CM_ST_MRA_REP_RCVD,
	CM_ST_ESTABLISHED,
	CM_ST_DREQ_SENT,
	CM_ST_DREQ_RCVD,
	CM_ST_TIMEWAIT,
	CM_ST_SIDR_REQ_SENT,
	CM_ST_SIDR_REQ_RCVD,
	CM_NSTATES
};
const char *cm_state_name(enum cm_state s);

void cm_id_set_user(struct cm_id *id, void *user);
void *cm_id_get_user(const struct cm_id *id);
enum cm_state cm_id_state(const struct cm_id *id);
uint32_t cm_id_local_comm_id(const struct cm_id *id);
uint32_t cm_id_remote_comm_id(const struct cm_id *id);   /* 0 until known */
void cm_id_remote_gid(const struct cm_id *id, uint8_t gid[16]);
uint64_t cm_id_service_id(const struct cm_id *id);

/* ---- active side --------------------------------------------------------- */

struct cm_req_param {
	uint8_t dgid[16];               /* the passive side's GID              */
	uint64_t service_id;
	uint32_t qpn;                   /* our QP (24 bits)                    */
	enum ibv_qp_type qp_type;       /* IBV_QPT_RC or IBV_QPT_UC            */
	uint32_t starting_psn;          /* the PSN we expect first (our
	                                   rq_psn; the passive side sends from
	                                   it), 24 bits, as the kernel's ib_cm
	                                   reads the field (IBTA 12.6.5)     */
	uint8_t responder_resources;    /* RDMA READ/atomic we accept          */
	uint8_t initiator_depth;        /* RDMA READ/atomic we issue           */
	enum ibv_mtu path_mtu;
	uint8_t retry_count;            /* 3 bits */
	uint8_t rnr_retry_count;        /* 3 bits */
	uint8_t local_ack_timeout;      /* 5 bits */
	uint8_t remote_cm_response_timeout; /* how long we wait for the REP */
	uint8_t local_cm_response_timeout;  /* how long the passive side waits
	                                       for our RTU / DREP              */
	uint8_t max_cm_retries;         /* 4 bits */
	bool srq;
	bool flow_control;              /* end-to-end flow control            */
	uint16_t pkey;
	uint32_t flow_label;            /* 20 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;
	const void *private_data;       /* <= CM_REQ_PRIVATE_DATA_SIZE         */
	uint8_t private_data_len;
};
/* The local ACK timeout (IBTA 9.7.6.1.3: 4.096 us * 2^code) a connection
 * gets unless the program chooses one: 17, 537 ms, as the kernel's
 * rdma_cm gives a RoCE QP (a packet lifetime of 16, CMA_IBOE_PACKET_LIFETIME,
 * plus one, with the CA's ACK delay of 15 that softrnic reports, IBTA
 * 12.7.34).  softrnic's NIC is its process: a peer that waits for a CPU
 * ACKs nothing meanwhile, and retry_cnt 7 at 17 gives it 4.3 s where 14
 * gave 0.54 s, which a loaded host exceeded (tests/rdmacm/cm_stall.sh). */
#define CM_DEFAULT_ACK_TIMEOUT 17

/* Fill with the defaults: timeouts and retries from the cm's config, RC,
 * MTU 1024, retry 7, rnr retry 7, local ACK timeout CM_DEFAULT_ACK_TIMEOUT,
 * pkey 0xffff, hop limit 64, everything else 0. */
void cm_req_param_init(const struct cm *cm, struct cm_req_param *p);

/* Sends a REQ and creates the id in REQ Sent.  EINVAL for a bad parameter
 * (private data too long, QP type, QPN/PSN wider than 24 bits). */
int cm_connect(struct cm *cm, const struct cm_req_param *p, void *user, uint64_t now, struct cm_id **out);
/* After CM_EV_REP_RECEIVED (REP Received / MRA(REP) Sent): send the RTU ->
 * Established.  No event follows (the caller knows). */
int cm_send_rtu(struct cm_id *id, const void *priv, uint8_t len, uint64_t now);

/* ---- passive side -------------------------------------------------------- */

struct cm_rep_param {
	uint32_t qpn;                   /* our QP */
	uint32_t starting_psn;          /* the PSN we expect first (our
	                                   rq_psn; the active side sends from
	                                   it, IBTA 12.6.8)                  */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t rnr_retry_count;
	uint8_t target_ack_delay;       /* 5 bits */
	bool srq;
	bool flow_control;
	bool failover_accepted;         /* 2 bits on the wire; 0 = accepted */
	const void *private_data;       /* <= CM_REP_PRIVATE_DATA_SIZE */
	uint8_t private_data_len;
};

/* After CM_EV_REQ_RECEIVED (REQ Received / MRA Sent): send the REP, retried
 * until the RTU (CM_EV_ESTABLISHED) or the retries run out
 * (CM_EV_REP_TIMEOUT, and a REJ "timeout" to the peer). */
int cm_accept(struct cm_id *id, const struct cm_rep_param *p, uint64_t now);
/* Refuse a REQ (REQ Received / MRA Sent) or a REP (REP Received /
 * MRA(REP) Sent) -> TimeWait.  rdma_reject uses reason 28 "consumer
 * defined".  ari_len <= CM_REJ_ARI_LENGTH, len <= CM_REJ_PRIVATE_DATA_SIZE. */
int cm_reject(struct cm_id *id, enum cm_rej_reason reason, const void *ari, uint8_t ari_len,
	      const void *priv, uint8_t len, uint64_t now);
/* Send an MRA for the REQ (REQ Received) or REP (REP Received) now:
 * "processing will take up to cm_timeout_ns(service_timeout)". */
int cm_send_mra(struct cm_id *id, uint8_t service_timeout, uint64_t now);
/* The consumer saw data arrive on its QP before the RTU (IBV_EVENT_COMM_EST,
 * rdma_establish/rdma_notify): REP Sent / MRA(REP) Received -> Established,
 * reported as CM_EV_ESTABLISHED from inside this call.  EISCONN if already
 * established. */
int cm_establish(struct cm_id *id, uint64_t now);

/* ---- both sides ----------------------------------------------------------- */

/* Established -> DREQ Sent; the DREQ is retried; CM_EV_DISCONNECT_DONE on
 * the DREP (status 0) or when the retries run out (ETIMEDOUT), then
 * TimeWait.  len <= CM_DREQ_PRIVATE_DATA_SIZE.  On receiving a DREQ the cm
 * answers with a DREP itself and reports CM_EV_DREQ_RECEIVED, then TimeWait. */
int cm_disconnect(struct cm_id *id, const void *priv, uint8_t len, uint64_t now);
/* Hand the id back, in any state (see "ownership" above). */
void cm_destroy_id(struct cm_id *id, uint64_t now);

/* ---- SIDR (UD service ID resolution, IBTA 12.11) ------------------------------ */

/* Sends a SIDR_REQ, resent every cm_timeout_ns(timeout_code) up to
 * `retries` times: CM_EV_SIDR_REP_RECEIVED or CM_EV_SIDR_TIMEOUT; the id
 * is then Idle.  len <= CM_SIDR_REQ_PRIVATE_DATA_SIZE. */
int cm_sidr_request(struct cm *cm, const uint8_t dgid[16], uint64_t service_id, const void *priv,
		    uint8_t len, uint8_t timeout_code, uint8_t retries, void *user, uint64_t now,
		    struct cm_id **out);
/* After CM_EV_SIDR_REQ_RECEIVED: answer (status CM_SIDR_SUCCESS with our UD
 * QPN and Q_Key, or an error status).  The id then stays in TimeWait for
 * timewait_ns, answering duplicate SIDR_REQs with the same SIDR_REP.
 * len <= CM_SIDR_REP_PRIVATE_DATA_SIZE. */
int cm_sidr_reply(struct cm_id *id, enum cm_sidr_status status, uint32_t qpn, uint32_t qkey,
		  const void *priv, uint8_t len, uint64_t now);

/* ---- events ---------------------------------------------------------------- */

enum cm_event_type {
	CM_EV_REQ_RECEIVED,     /* passive: a new id (ev->id), listen_user set   */
	CM_EV_REQ_TIMEOUT,      /* active: no REP after the retries              */
	CM_EV_REP_RECEIVED,     /* active: answer with cm_send_rtu or cm_reject  */
	CM_EV_REP_TIMEOUT,      /* passive: no RTU after the retries             */
	CM_EV_REJ_RECEIVED,     /* either: the peer refused / gave up            */
	CM_EV_MRA_RECEIVED,     /* either: the peer needs more time (informative) */
	CM_EV_ESTABLISHED,      /* passive: RTU received, cm_establish, or a DREQ
	                           in REP Sent (the RTU was lost; a DREQ implies
	                           it, and DREQ_RECEIVED follows at once)       */
	CM_EV_DREQ_RECEIVED,    /* either: the peer disconnected (DREP sent)     */
	CM_EV_DISCONNECT_DONE,  /* either: our cm_disconnect finished            */
	CM_EV_TIMEWAIT_EXIT,    /* either: TimeWait over, the id is Idle
	                           (connection ids only, not SIDR)              */
	CM_EV_SIDR_REQ_RECEIVED, /* passive: a new id, answer with cm_sidr_reply */
	CM_EV_SIDR_REP_RECEIVED, /* active */
	CM_EV_SIDR_TIMEOUT,     /* active: no SIDR_REP after the retries         */
	CM_EV_NTYPES
};
const char *cm_event_name(enum cm_event_type t);

/* The fields of a REQ, as the peer sent them (not swapped to our point of
 * view, unlike the kernel's ib_cm: the resources *we* must provide to the
 * peer's READs are req.initiator_depth; starting_psn is the PSN the active
 * side expects first, so our QP's sq_psn). */
struct cm_req_info {
	uint64_t service_id;
	uint64_t ca_guid;               /* the active side's CA GUID */
	uint32_t qpn;                   /* the active side's QP */
	enum ibv_qp_type qp_type;
	uint32_t starting_psn;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	enum ibv_mtu path_mtu;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t local_ack_timeout;
	uint8_t remote_cm_response_timeout;
	uint8_t local_cm_response_timeout;
	uint8_t max_cm_retries;
	bool srq;
	bool flow_control;
	uint16_t pkey;
	uint32_t flow_label;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;
	uint8_t primary_local_gid[16];  /* the GIDs written in the REQ */
	uint8_t primary_remote_gid[16];
};

/* The fields of a REP, as the peer sent them (starting_psn: the PSN the
 * passive side expects first, so our QP's sq_psn). */
struct cm_rep_info {
	uint64_t ca_guid;
	uint32_t qpn;
	uint32_t starting_psn;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;
	uint8_t failover_accepted;
	uint8_t rnr_retry_count;
	bool srq;
	bool flow_control;
};

struct cm_event {
	enum cm_event_type type;
	struct cm_id *id;
	void *user;                     /* cm_id_get_user(id)                    */
	void *listen_user;              /* REQ/SIDR_REQ received: the listener's */
	uint8_t remote_gid[16];         /* the peer's GID                        */
	uint32_t remote_comm_id;
	/* REJ_RECEIVED: reason, message rejected (0 REQ, 1 REP, 2 other),
	 * ARI.  DISCONNECT_DONE after a REJ: reason too. */
	uint16_t rej_reason;
	uint8_t rej_msg;
	const uint8_t *ari;
	uint8_t ari_len;
	/* MRA_RECEIVED: the MRA's service timeout code. */
	uint8_t mra_service_timeout;
	/* DISCONNECT_DONE: 0 (DREP received, or the peer's DREQ crossed
	 * ours), ETIMEDOUT (retries ran out), ECONNRESET (a REJ came instead;
	 * rej_reason is set).  REQ/REP/SIDR timeouts: ETIMEDOUT. */
	int status;
	union {
		struct cm_req_info req;         /* REQ_RECEIVED   */
		struct cm_rep_info rep;         /* REP_RECEIVED   */
		struct {                        /* SIDR_REQ_RECEIVED */
			uint64_t service_id;
			uint16_t pkey;
		} sidr_req;
		struct {                        /* SIDR_REP_RECEIVED */
			enum cm_sidr_status status;
			uint32_t qpn;
			uint32_t qkey;
			uint64_t service_id;
			const uint8_t *info;    /* additional information */
			uint8_t info_len;
		} sidr_rep;
	} u;
	/* The private data of the message that caused the event (its full
	 * field, as IBTA does not carry a length), or NULL. */
	const uint8_t *private_data;
	uint8_t private_data_len;
};

/* ---- the QP a connection describes ---------------------------------------- */

/* The attributes a side's RC/UC QP takes at RTR and RTS from its
 * connection's REQ and REP (cm_qp_attr.c has the rules and their sources:
 * each side sends from the Starting PSN in the *peer's* message). */
struct cm_qp_attr {
	uint32_t dest_qp_num;           /* RTR */
	uint32_t rq_psn;                /* RTR: the PSN we expect first */
	uint32_t sq_psn;                /* RTS: the PSN we send first */
	enum ibv_mtu path_mtu;          /* RTR */
	uint8_t max_dest_rd_atomic;     /* RTR: the peer's READs/atomics we serve */
	uint8_t max_rd_atomic;          /* RTS: ours outstanding */
	uint8_t timeout;                /* RTS: local ACK timeout code */
	uint8_t retry_cnt;              /* RTS */
	uint8_t rnr_retry;              /* RTS */
	uint16_t pkey;                  /* the path's (RoCE: 0xffff) */
	uint8_t traffic_class;          /* the path's GRH / IP TOS */
	uint32_t flow_label;
	uint8_t hop_limit;
};
/* The passive side: from the REQ it received and the REP it sends. */
void cm_qp_attr_passive(const struct cm_req_info *req, const struct cm_rep_param *rep, struct cm_qp_attr *out);
/* The active side: from the REQ it sent and the REP it received. */
void cm_qp_attr_active(const struct cm_req_param *req, const struct cm_rep_info *rep, struct cm_qp_attr *out);

/* ---- MADs and time ----------------------------------------------------------- */

/* Feed one MAD received on QP1 from the host with GID src_gid.  len is the
 * UD payload length (256 for a CM MAD).  Malformed MADs, MADs for an
 * unknown comm ID and MADs unexpected in the id's state are dropped and
 * counted; duplicates are answered as IBTA says (REQ in REP Sent: REP again;
 * REP in Established: RTU again; DREQ in TimeWait: DREP again). */
void cm_receive(struct cm *cm, const uint8_t src_gid[16], const uint8_t *mad, size_t len, uint64_t now);

/* The earliest time at which cm_advance has work (a resend, a timeout, a
 * TimeWait exit), or UINT64_MAX. */
uint64_t cm_next_deadline(const struct cm *cm);
/* Fire every timer due at `now`, in deadline order (ties: id creation order). */
void cm_advance(struct cm *cm, uint64_t now);

/* ---- counters and tracing -------------------------------------------------- */

/* The counters add up:
 *   rx_mads = sum of rx_<message> + rx_drop_malformed + rx_drop_unsupported
 *     (every MAD received; unsupported: another class, LAP, APR, ...);
 *   sum of rx_<message> = rx_handled + sum of rx_dup_<message>
 *     + rx_drop_unknown_id + rx_drop_unexpected + rx_drop_timewait
 *     (what became of each decoded message: it moved a state or was
 *     answered; it was a duplicate, answered again or not; nobody knows
 *     its comm ID; it is not valid in its id's state, or arrived while
 *     out of memory; its id is in TimeWait);
 *   tx_mads = sum of tx_<message>;
 *   ids_created - ids_freed = ids alive (the consumer's and the destroyed
 *     ones still finishing); events = calls of io->event (+ ones with a
 *     NULL hook). */
#define CM_COUNTER_LIST(X)                                                     \
	X(tx_mads) X(rx_mads)                                                  \
	X(tx_req) X(tx_mra) X(tx_rej) X(tx_rep) X(tx_rtu) X(tx_dreq)           \
	X(tx_drep) X(tx_sidr_req) X(tx_sidr_rep)                               \
	X(rx_req) X(rx_mra) X(rx_rej) X(rx_rep) X(rx_rtu) X(rx_dreq)           \
	X(rx_drep) X(rx_sidr_req) X(rx_sidr_rep)                               \
	X(rx_handled)                                                          \
	X(rx_drop_malformed) X(rx_drop_unsupported) X(rx_drop_unknown_id)      \
	X(rx_drop_unexpected) X(rx_drop_timewait)                              \
	X(rx_dup_req) X(rx_dup_rep) X(rx_dup_rtu) X(rx_dup_mra) X(rx_dup_rej)  \
	X(rx_dup_dreq) X(rx_dup_drep) X(rx_dup_sidr_req) X(rx_dup_sidr_rep)    \
	X(retries) X(req_timeouts) X(rep_timeouts) X(dreq_timeouts)            \
	X(sidr_timeouts) X(mra_extensions)                                     \
	X(rej_invalid_service_id) X(rej_stale_conn) X(sidr_unsupported)        \
	X(ids_created) X(ids_freed) X(timewait_entered) X(timewait_exited)     \
	X(events)

struct cm_counters {
#define CM_COUNTER_FIELD(name) uint64_t name;
	CM_COUNTER_LIST(CM_COUNTER_FIELD)
#undef CM_COUNTER_FIELD
};
const struct cm_counters *cm_counters(const struct cm *cm);

/* Optional tracing: one line per state transition, e.g.
 * "cm id 0x1a2b3c4d REQ Sent -> REP Received (rx REP)".  fn NULL turns it
 * off. */
void cm_set_trace(struct cm *cm, void (*fn)(void *ctx, const char *line), void *ctx);

#endif
