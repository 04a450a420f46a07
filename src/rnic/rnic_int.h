/*
 * rnic_int.h — private structures of the rnic layer, shared by its .c files.
 *
 * Nothing outside src/rnic/ (and the rnic unit tests) includes this file;
 * the public contract is rnic.h.  The layout follows rxe: a device object
 * owning tables of QPs and MRs, and per QP three independent state
 * machines — the requester (requester.c) turns send WQEs into packets, the
 * responder (responder.c) executes incoming requests, the completer
 * (completer.c) matches ACKs and responses to send WQEs and retires them.
 * The requester and completer talk only through the functions declared
 * below (completer_on_sent, requester_rewind, requester_run), never
 * through shared flags.
 */
#ifndef SOFTRNIC_RNIC_INT_H
#define SOFTRNIC_RNIC_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "rnic/pacer.h"
#include "rnic/rnic.h"

/* ---- tunables (trade-offs, not spec values) ----------------------------- */

/* Largest number of unacknowledged request packets a requester keeps in
 * flight.  Bounds how much Go-Back-N resends and how much one post_send
 * call transmits.  It must cover the time the peer's progress thread may
 * wait for a CPU, but a big one costs too: over loopback the bytes in
 * flight are socket-buffer memory that the sender's kernel writes and the
 * receiver reads, and with 8 MiB of it (2048 packets) about half of the
 * ib_write_bw runs found that memory cold: the kernel's copy into socket
 * buffers took 3x the time for the same bytes (perf: 786-834 samples
 * against 237-270) and the run fell to ~1200 MB/s.  Measured, ib_write_bw
 * 64 KiB, Release, bench/perf_ab.sh, 2026-11-29: window 2048 -> 512,
 * medians 1220 -> 1813 MiB/s (10 rounds, 512 ahead in 8), ib_send_bw
 * 1864 -> 2179 (8 rounds); 256 did about as well as 512, 128 worse (1393
 * against 1761 for 256), as did 128 with the older progress model (~250
 * MB/s).  Trade-off: a peer whose progress thread waits long for a CPU
 * stalls the sender sooner; an adaptive window (grow while ACKs come back
 * fast, as TCP's autotuning does) would fit both. */
#define RNIC_SEND_WINDOW 512u
/* ...but all QPs of a device together keep at most this many packets in
 * flight, shared evenly (rnic_send_window): a receiver's socket buffer
 * holds only so much, and 1000 QPs with full windows would overflow it
 * (drops, Go-Back-N, collapse).  Trade-off: idle QPs count too, so many
 * idle QPs shrink the window of a busy one. */
#define RNIC_DEVICE_WINDOW 512u
#define RNIC_MIN_SEND_WINDOW 2u
/* The requester asks for an ACK (BTH.AckReq) on the last packet of every
 * message and on every Nth packet of a long message. */
#define RNIC_ACKREQ_EVERY 16u
/* The responder ACKs after this many unacknowledged request packets even
 * without AckReq, and otherwise after the delayed-ACK timer. */
#define RNIC_ACK_EVERY 16u
#define RNIC_DELAYED_ACK_NS 20000u
/* Message-path WRITE payload reads put off and joined at most (pull.c). */
#define RNIC_PULL_BATCH 16u
/* P_Key we send; we accept any full- or limited-member default P_Key
 * (low 15 bits 0x7fff), IBTA 10.9.1.2. */
#define RNIC_DEFAULT_PKEY 0xffffu
#define RNIC_NO_DEADLINE UINT64_MAX
/* Selective repeat (selective.c): PSNs a responder's reorder buffer and a
 * requester's scoreboard cover, from the oldest unacknowledged one; the
 * send window never exceeds it. */
#define RNIC_SR_WINDOW RNIC_SEND_WINDOW
/* AckReq packets a QP remembers for RTT samples (completer.c): a send
 * window's worth at one AckReq per RNIC_ACKREQ_EVERY packets. */
#define RNIC_RTT_MARKS 32u
/* Bytes of out-of-order packets all QPs of one device hold together.
 * Beyond it they are dropped (and resent later), so a peer cannot make us
 * hold more than this however it orders its PSNs. */
#define RNIC_SR_BUDGET (64u << 20)
/* Largest message (IBTA 9.4: 2^31 bytes). */
#define RNIC_MAX_MSG (1u << 31)

/* ---- device ------------------------------------------------------------- */

struct rnic_timer_entry {
	uint64_t at;
	uint32_t qpn;
};

struct rnic {
	struct rnic_config cfg;
	struct rnic_io io;
	struct rnic_counters ctr;
	uint64_t prng;                  /* splitmix64 state, from cfg.seed */

	struct rnic_qp **qps;           /* slot = qpn % cfg.max_qp */
	struct rnic_qp **live;          /* the n_qp QPs, densely (qp->live_idx), for walks */
	uint32_t live_cap;
	uint32_t next_qpn;
	struct rnic_mr **mrs;           /* slot = key >> 8 (slot 0 unused) */
	uint8_t *mr_gen;                /* generation per slot */
	uint32_t mr_next;               /* where the next free-slot search starts */

	uint32_t n_pd, n_mr, n_cq, n_qp, n_srq, n_ah;
	struct rnic_mcast_group *mcast;  /* cfg.max_mcast_grp slots (ud.c) */
	void (*trace)(void *ctx, const char *line);
	void *trace_ctx;
	uint32_t gsi_psn;               /* PSN of the next MAD QP1 sends (gsi.c) */
	uint64_t reorder_bytes;         /* held by reorder buffers (selective.c) */
	/* No QP timer is due before this (rnic_next_deadline): lowered by
	 * rnic_qp_timer_armed whenever one is armed, made exact again by each
	 * rnic_advance, never later than the true earliest. */
	uint64_t deadline_bound;
	/* The QPs' timers (timers.c): a min-heap of (time, QPN), and the
	 * slots due at one advance; timer_scan_all when the heap could not
	 * grow and the QP table is scanned instead. */
	struct rnic_timer_entry *timer_heap;
	size_t timer_n, timer_cap;
	uint32_t *timer_due;
	uint32_t timer_due_cap;
	bool timer_scan_all;
	uint64_t timer_visits;          /* QPs looked at by rnic_advance (tests) */
	/* The message path (rnic_qp_set_message_path): the payload pieces
	 * of the packet being sent (cfg.max_sge of them), and the payload of
	 * the packet being received, NULL when it is in the packet. */
	struct wire_piece *tx_vec;
	unsigned tx_nvec;               /* pieces of the request built last */
	struct iovec *rx_iov;
	const struct rnic_rx_remote *rx_remote;
	bool rx_alone;                  /* the packet being received: rnic_rx.alone */
	/* Message-path WRITE and SEND payloads, and READ responses, whose
	 * read waits for the end of the port's batch (pull.c), in the order
	 * received; pull_qp[i] is the QP of pull[i], pull_psn[i] its PSN (a
	 * READ response's: its WQE's first PSN).  A SEND's receive
	 * completion waits with it (pull_send[i]: pull_wc[i], solicited
	 * pull_se[i]); a READ's send completion too (pull_read[i], and
	 * pull_wc_held[i] unless it is unsignaled). */
	struct rnic_pull pull[RNIC_PULL_BATCH];
	struct rnic_qp *pull_qp[RNIC_PULL_BATCH];
	uint32_t pull_psn[RNIC_PULL_BATCH];
	bool pull_send[RNIC_PULL_BATCH];
	bool pull_read[RNIC_PULL_BATCH];
	bool pull_wc_held[RNIC_PULL_BATCH];
	bool pull_se[RNIC_PULL_BATCH];
	struct ibv_wc pull_wc[RNIC_PULL_BATCH];
	unsigned npulls;
	uint8_t tx[WIRE_MAX_IB_PACKET]; /* every packet is built here */
};

/* A packet for QP1 (gsi.c): true if pkt was addressed to QP1 (it is then
 * consumed: delivered or dropped and counted). */
bool gsi_receive(struct rnic *r, const struct wire_ib *pkt, const struct rnic_rx *rx);

uint64_t rnic_random(struct rnic *r);
/* timers.c.  Every write of a QP timer (retransmit, RNR, delayed ACK,
 * pacer, DCQCN) to a time `at` must tell the device, so that
 * rnic_next_deadline stays O(1) and rnic_advance finds the QP. */
void rnic_qp_timer_armed(struct rnic_qp *qp, uint64_t at);
uint64_t rnic_qp_deadline(const struct rnic_qp *qp);
void rnic_timers_free(struct rnic *r);
/* The send window of each QP now (see RNIC_DEVICE_WINDOW). */
static inline uint32_t rnic_send_window(const struct rnic *r)
{
	uint32_t w = RNIC_DEVICE_WINDOW / (r->n_qp ? r->n_qp : 1u);
	uint32_t cap = r->cfg.send_window ? r->cfg.send_window : RNIC_SEND_WINDOW;

	if (w > cap)
		w = cap;
	return w < RNIC_MIN_SEND_WINDOW ? RNIC_MIN_SEND_WINDOW : w;
}
/* Hand one built packet (r->tx, len bytes) to the port. */
void rnic_xmit(struct rnic *r, struct rnic_qp *qp, size_t len);
/* Where to build a bulk packet (payload-carrying: requests, READ
 * responses): the port's own buffer if it offers one (rnic_io.tx_buffer,
 * saves a copy of every payload byte), else r->tx.  Send it with
 * rnic_xmit_buf. */
uint8_t *rnic_tx_buffer(struct rnic *r);
void rnic_xmit_buf(struct rnic *r, struct rnic_qp *qp, const uint8_t *buf, size_t len);
/* The same for a packet encoded in buf (len bytes) with its payload_len
 * payload bytes left unwritten at hdr_len (wire_encode_ib, payload NULL):
 * sent with the payload by reference from `payload`.  Only when
 * rnic_io.tx_payload_ref is set (rnic_tx). */
struct rnic_sge;
/* A message-path packet: `buf` holds its headers and ICRC room (len
 * bytes), the payload is vec[0..nvec) (rnic_tx.payload_vec); alone as
 * rnic_tx.alone. */
void rnic_xmit_vec(struct rnic *r, struct rnic_qp *qp, uint8_t *buf, size_t len, size_t hdr_len,
		   const struct wire_piece *vec, unsigned nvec, size_t payload_len, bool alone);
/* rnic_xmit_buf, with rnic_tx.alone as given. */
void rnic_xmit_buf_alone(struct rnic *r, struct rnic_qp *qp, const uint8_t *buf, size_t len, bool alone);
/* Region memory, through the port's guarded hooks (rnic_io.mem_copy,
 * mem_probe): false when a page faulted (counted in mr_fault).  Every
 * load or store of MR memory in the rnic goes through one of these. */
static inline bool rnic_mem_copy(struct rnic *r, void *dst, const void *src, size_t len)
{
	if (!r->io.mem_copy) {
		memcpy(dst, src, len);
		return true;
	}
	if (r->io.mem_copy(r->io.ctx, dst, src, len))
		return true;
	r->ctr.mr_fault++;
	return false;
}
static inline bool rnic_mem_probe(struct rnic *r, const void *addr, size_t len, bool write)
{
	if (!r->io.mem_probe || !len || r->io.mem_probe(r->io.ctx, addr, len, write))
		return true;
	r->ctr.mr_fault++;
	return false;
}
/* The received packet's payload into dst (MR memory the caller checked):
 * copied from the packet, or read from the sender on the message path. */
enum rnic_rx_copied {
	RNIC_RX_COPIED,
	RNIC_RX_NOT_READ,       /* the sender's memory could not be read: drop
	                           the packet as if lost (counted) */
	RNIC_RX_FAULT,          /* dst faulted (mr_fault): a protection error */
};
enum rnic_rx_copied rnic_rx_copy(struct rnic *r, const struct wire_ib *pkt, uint8_t *dst);
/* rnic_scatter_pd of the received packet's payload (a page of the SGEs
 * that faults is IBV_WC_LOC_PROT_ERR, as a bad key).  *pulled false: the
 * sender's memory could not be read, as for rnic_rx_copy (the status is
 * then meaningless). */
enum ibv_wc_status rnic_rx_scatter(struct rnic *r, struct rnic_pd *pd, const struct rnic_sge *sge, uint32_t num_sge,
				   uint32_t offset, const struct wire_ib *pkt, bool *pulled);
void rnic_xmit_ref(struct rnic *r, struct rnic_qp *qp, uint8_t *buf, size_t len, size_t hdr_len,
		   const uint8_t *payload, size_t payload_len);
void rnic_async(struct rnic *r, enum ibv_event_type type, void *obj);
/* Report one state-machine step ("req", "resp", "comp") if tracing. */
void rnic_trace_step(const struct rnic_qp *qp, const char *machine, const char *state);

/* ---- PD, MR ------------------------------------------------------------- */

struct rnic_pd {
	struct rnic *r;
	uint32_t refs;                  /* MRs + QPs using it */
};

struct rnic_mr {
	struct rnic_pd *pd;
	uint8_t *addr;
	size_t len;
	uint64_t iova;
	int access;
	uint32_t key;                   /* lkey == rkey */
	/* Memory windows (mw.c): non-NULL when this table entry is the
	 * remote view of a window rather than a region; the count of
	 * windows bound to this region otherwise. */
	struct rnic_mw *window;
	uint32_t bound_windows;
};

/* A memory window (IBTA 10.6.7).  `view` is first: the MR table holds
 * &mw->view under the window's rkey, so rnic_mr_check resolves a window
 * exactly like a region (PD, access, bounds) and rnic_mr_ptr works on it.
 * Unbound, the view has length 0 and no access. */
struct rnic_mw {
	struct rnic_mr view;
	enum ibv_mw_type type;
	struct rnic_mr *mr;             /* bound to, or NULL */
	uint32_t qpn;                   /* type 2: the QP it was bound through */
};
/* Bind or invalidate through a send WQE (requester.c): an ibv_wc_status. */
struct rnic_send_wqe;
enum ibv_wc_status rnic_mw_bind_wqe(struct rnic_qp *qp, const struct rnic_send_wqe *w);
enum ibv_wc_status rnic_mw_local_inv(struct rnic_qp *qp, uint32_t rkey);
/* SEND with Invalidate (responder.c): does rkey name a type 2 window of
 * qp's PD bound through qp?  rnic_mw_remote_inv invalidates it. */
bool rnic_mw_can_remote_inv(struct rnic_qp *qp, uint32_t rkey);
void rnic_mw_remote_inv(struct rnic_qp *qp, uint32_t rkey);
/* The region's translation or life is ending: unbind its windows. */
void rnic_mw_unbind_all(struct rnic_mr *mr);

/* A free slot of the MR key table (shared by regions and windows), or 0. */
uint32_t rnic_key_slot_alloc(struct rnic *r);
/* Look up a key and check it against pd, required access, and the byte
 * range [iova, iova+len).  Returns the MR or NULL. */
struct rnic_mr *rnic_mr_check(struct rnic *r, struct rnic_pd *pd, uint32_t key, int access,
			      uint64_t iova, uint64_t len);
/* The same checks for a whole region named by its key (a FLUSH of the
 * region): its iova and length are returned in *iova and *len. */
struct rnic_mr *rnic_mr_whole(struct rnic *r, struct rnic_pd *pd, uint32_t key, int access, uint64_t *iova,
			      uint64_t *len);
/* Host pointer for iova inside mr (range already checked). */
static inline uint8_t *rnic_mr_ptr(const struct rnic_mr *mr, uint64_t iova)
{
	/* Integer arithmetic: an implicit ODP MR has addr NULL, and an
	 * offset added to a null pointer is undefined behaviour in C. */
	return (uint8_t *)((uintptr_t)mr->addr + (uintptr_t)(iova - mr->iova));
}
/* ODP MRs (odp.c): can [va, va+len) be read, or written if want_write,
 * without a fault?  Probes through process_vm_readv/writev. */
bool rnic_odp_range_ok(uint64_t va, uint64_t len, bool want_write);

/* ---- CQ ----------------------------------------------------------------- */

struct rnic_cq {
	struct rnic *r;
	void *ctx;
	struct ibv_wc *ring;
	uint32_t cap, head, count;
	bool armed, solicited_only;
	uint32_t refs;                  /* QPs using it */
};

/* Add a completion; `solicited` says whether it may fire a solicited-only
 * notification.  Returns false if the CQ overflowed (completion lost). */
bool rnic_cq_push(struct rnic_cq *cq, const struct ibv_wc *wc, bool solicited);
/* Drop the completions of QP qpn not yet polled (a QP moved to RESET). */
void rnic_cq_purge_qp(struct rnic_cq *cq, uint32_t qpn);

/* ---- work queues -------------------------------------------------------- */

struct rnic_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct rnic_send_wqe {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t imm;                   /* network order */
	uint32_t invalidate_rkey;       /* SEND_WITH_INV, LOCAL_INV */
	/* BIND_MW: the window (by its rkey at post time), the new rkey and
	 * the ibv_mw_bind_info, with the MR named by its lkey. */
	uint32_t bind_mw_rkey, bind_new_rkey, bind_mr_lkey;
	bool bind_has_mr;
	uint64_t bind_addr, bind_len;
	unsigned int bind_access;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add, swap;
	uint32_t num_sge;
	struct rnic_sge *sge;           /* into the QP's SGE pool */
	uint8_t *inline_data;           /* into the QP's inline pool, or NULL */
	uint32_t length;                /* total message bytes */
	/* Set by the requester when it first transmits the WQE. */
	uint32_t first_psn, last_psn;
	bool psn_valid;                 /* first/last_psn assigned */
	bool signaled;
	bool too_long;                  /* SGE lengths add up past 2^31 */
	/* A local error the requester found; the completer reports it when
	 * this WQE is the oldest (completions stay in order). */
	enum ibv_wc_status status;
	/* UD: the destination, copied from the AH at post time (ud.c), so
	 * destroying the AH later cannot leave a dangling pointer. */
	struct rnic_gid ud_dgid;
	uint8_t ud_dscp, ud_ttl;
	uint32_t ud_qpn, ud_qkey;
};

struct rnic_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct rnic_sge *sge;
	uint32_t length;
};
void rnic_recv_wqe_fill(struct rnic_recv_wqe *w, const struct ibv_recv_wr *wr);


/* Free-running counters; slot = counter % cap.  comp <= req <= head. */
struct rnic_sq {
	struct rnic_send_wqe *wqe;
	struct rnic_sge *sge_pool;
	uint8_t *inline_pool;
	uint32_t cap, max_sge, max_inline;
	uint32_t head;                  /* next to post */
	uint32_t req;                   /* next the requester sends */
	uint32_t comp;                  /* oldest not yet retired */
};

struct rnic_rq {
	struct rnic_recv_wqe *wqe;
	struct rnic_sge *sge_pool;
	uint32_t cap, max_sge;
	uint32_t head, tail;            /* tail = oldest */
};

static inline struct rnic_send_wqe *sq_at(struct rnic_sq *sq, uint32_t i)
{
	return &sq->wqe[i % sq->cap];
}

/* ---- the three state machines' per-QP state ----------------------------- */

struct rnic_req_state {
	uint32_t psn;                   /* next PSN to send */
	uint32_t psn_high;              /* one past the highest PSN ever sent */
	uint32_t offset;                /* bytes of sq->req already sent */
	uint32_t since_ackreq;          /* packets since the last AckReq */
	uint64_t rnr_until;             /* RNR wait, RNIC_NO_DEADLINE if none */
	/* One PSN to send again before anything else (requester_resend_one:
	 * the retransmit timeout's probe). */
	bool resend_one;
	uint32_t resend_psn;
	/* The previous request left alone (xmit_request: nothing before
	 * it unacknowledged, nothing posted behind it). */
	bool last_alone;
};

struct rnic_comp_state {
	uint32_t psn;                   /* oldest unacknowledged PSN */
	uint32_t retry_left;            /* IBTA retry_cnt */
	uint32_t rnr_left;              /* rnr_retry (7 = infinite) */
	uint64_t retx_deadline;         /* retransmit timer */
	/* A packet-triggered Go-Back-N is done once per episode: further
	 * out-of-order responses for the same PSN are dropped until progress
	 * is made or the retransmit timer fires. */
	bool retrying;
	uint32_t retrying_psn;
	uint32_t probes;                /* selective repeat: probes this episode (completer.c) */
	/* A retransmit timeout's probe is out (completer_timer): the PSN it
	 * resent, which the next progress judges. */
	bool timeout_probe;
	uint32_t timeout_probe_psn;
	/* The path's round-trip time (completer.c, RFC 6298), sampled on
	 * the packets sent with AckReq, which the responder answers at once:
	 * the latest RNIC_RTT_MARKS of them by PSN and first send time. */
	struct {
		uint32_t psn;
		bool valid;
		uint64_t sent;
	} rtt_mark[RNIC_RTT_MARKS];
	uint32_t rtt_next;              /* the mark written next (ring) */
	uint64_t srtt, rttvar;          /* ns; srtt 0 until the first sample */
	/* READs retired whose response's read is put off (pull.c): they are
	 * the last `pulls` WQEs before sq.comp, their completions held.
	 * pull_failed marks, while they are settled, that one failed: it
	 * and the `pull_dropped` after it go back to the send queue, and
	 * comp.psn to its first PSN; pull_now is when the last of them
	 * arrived (the time the settling acts at). */
	uint32_t pulls;
	bool pull_failed;
	uint32_t pull_rewind_psn;
	uint32_t pull_dropped;
	uint64_t pull_now;
	/* A read put off faulted in our own buffer: READ responses are read
	 * as they come from now on (pull.c), where the fault is a local
	 * protection error. */
	bool read_at_once;
};

/* A recent READ or ATOMIC, kept so a duplicate is answered correctly
 * (IBTA 9.7.5.1.3 / 9.7.5.1.4). */
struct rnic_resource {
	bool valid;
	bool atomic;
	uint32_t first_psn, last_psn;
	uint64_t orig;                  /* atomic: value before the operation */
};

enum resp_seq { RESP_SEQ_NONE, RESP_SEQ_SEND, RESP_SEQ_WRITE };

struct rnic_resp_state {
	uint32_t epsn;                  /* expected PSN */
	uint32_t msn;
	bool nak_sent;                  /* one NAK per sequence-error episode */
	uint32_t unacked;               /* request packets not yet ACKed */
	uint64_t ack_deadline;          /* delayed ACK */
	enum resp_seq seq;              /* message in progress (IBTA 9.8.3) */
	/* SEND in progress */
	bool have_wqe;
	struct rnic_recv_wqe wqe;       /* copy of the consumed receive WQE */
	uint32_t recv_offset;
	/* RDMA WRITE in progress */
	uint64_t va;
	uint32_t rkey;
	uint32_t resid;                 /* bytes the RETH still allows */
	uint32_t write_len;             /* RETH DMA length */
	/* READ/ATOMIC resources */
	struct rnic_resource *res;
	uint32_t res_cap, res_next;
	/* WRITEs and SENDs executed whose payload read is put off (pull.c):
	 * their PSNs are the last `pulls` before epsn, and each such SEND
	 * took the next receive WQE.  Meanwhile an ACK that falls due waits
	 * (ack_held); pull_failed marks, while they are settled, that one of
	 * them failed. */
	uint32_t pulls;
	bool ack_held;
	bool pull_failed;
	uint32_t pull_rewind_psn;       /* the first failed one's PSN */
	uint32_t pull_dropped;          /* it and every later one      */
	/* A read put off faulted in our own buffer: payloads are read as
	 * they come from now on (pull.c), where the fault is an access
	 * error. */
	bool read_at_once;
};

/* Congestion control and rate limiting of one QP (cc.c). */
struct rnic_cc_state {
	struct dcqcn_rp rp;             /* reaction point (DCQCN)           */
	/* ... or, by cfg.cc_algo, DCTCP or TIMELY, which count the QP's
	 * packets: `acked` is how many the peer has acknowledged, and
	 * acked + (psn_high − comp.psn) how many were sent (cc.c, snd_nxt). */
	struct dctcp_cc dctcp;
	struct timely_cc timely;
	struct hpcc_cc hpcc;
	uint64_t acked;                 /* packets acknowledged so far     */
	struct pacer pacer;
	uint64_t limit_bps;             /* rate limit, 0 = none             */
	uint32_t limit_burst;           /* bytes, 0 = default               */
	uint64_t pace_until;            /* requester waits for the pacer    */
	uint64_t last_cnp;              /* NP: when the last CNP left       */
	bool cnp_ever;                  /* ... and whether one ever did     */
	uint64_t ce_received, cnp_sent, cnp_received;
};

/* Per-QP traffic counters (the live view, rnic_qp_infos). */
struct rnic_qp_stats {
	uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes, retransmits;
};

/* ---- QP ----------------------------------------------------------------- */

struct rnic_qp {
	struct rnic *r;
	struct rnic_pd *pd;
	struct rnic_cq *send_cq, *recv_cq;
	void *ctx;
	enum ibv_qp_type type;
	uint32_t qpn;
	uint64_t timer_key;             /* its earliest entry in the device's timer heap (timers.c) */
	uint32_t live_idx;              /* its place in r->live */
	bool sq_sig_all;
	struct ibv_qp_cap cap;
	struct ibv_qp_attr attr;        /* as set by modify (qp_state is live) */
	uint32_t mtu;                   /* path MTU in bytes */
	/* The message path (rnic_qp_set_message_path): a message longer than
	 * this goes whole (wqe_mtu); 0: off. */
	uint32_t msg_min;
	struct rnic_gid dgid;
	uint8_t dscp, ttl;
	uint16_t sport;
	bool drained_notify;            /* SQD: raise SQ_DRAINED when empty */
	/* Receive WQEs come from here when set (srq.c), not from rq. */
	struct rnic_srq *srq;
	struct rnic_sge *srq_sge;       /* private copy of the WQE in use */
	bool last_wqe_reported;         /* LAST_WQE_REACHED raised in this ERR */

	struct rnic_sq sq;
	struct rnic_rq rq;
	struct rnic_req_state req;
	struct rnic_comp_state comp;
	struct rnic_resp_state resp;
	struct rnic_cc_state cc;
	struct rnic_qp_stats stats;
	/* Selective repeat (selective.c), allocated on the first loss. */
	struct rnic_reorder *reorder;   /* responder: packets past a hole */
	struct rnic_scoreboard *board;  /* requester: what the peer has    */
	/* The host-local fast path (fast.c): on (rnic_qp_set_fast); out,
	 * the oldest send WQE went as a fast message numbered seq and is
	 * not answered yet (the requester waits meanwhile). */
	struct {
		bool on, out;
		uint32_t seq;
		uint32_t skip;          /* messages to send as packets after a
		                           rejection (fast.c, FAST_SKIP) */
	} fast;
};

/* What our requester cuts WQE w by, and the completer reads its READ
 * responses by: the path MTU, or RNIC_MSG_MTU for a message the message
 * path carries whole (rnic_qp_set_message_path), whose packets say so in
 * the BTH (wire_bth.msg) for the responder. */
static inline uint32_t wqe_mtu(const struct rnic_qp *qp, const struct rnic_send_wqe *w)
{
	return qp->msg_min && w->length > qp->msg_min ? RNIC_MSG_MTU : qp->mtu;
}

/* ---- SRQ (srq.c) -------------------------------------------------------- */

struct rnic_srq {
	struct rnic *r;
	struct rnic_pd *pd;
	void *ctx;
	struct rnic_rq rq;              /* the shared ring, as a QP's RQ */
	uint32_t max_wr;                /* what the consumer asked for */
	uint32_t limit;                 /* armed limit, 0 = disarmed */
	uint32_t refs;                  /* QPs using it */
};

/* Take the oldest WQE of qp's SRQ into *wqe (its SGEs copied into
 * qp->srq_sge, so the SRQ slot may be reused at once).  Raises
 * SRQ_LIMIT_REACHED if this took the count below an armed limit.  Returns
 * false if the SRQ is empty. */
bool rnic_srq_take(struct rnic_qp *qp, struct rnic_recv_wqe *wqe);
/* qp is going away: drop its reference on the SRQ. */
void rnic_srq_detach(struct rnic_qp *qp);
/* qp entered ERR and flushed: raise LAST_WQE_REACHED once (IBTA 11.6.3.1). */
void rnic_srq_qp_error(struct rnic_qp *qp);

struct rnic_qp *rnic_qp_lookup(struct rnic *r, uint32_t qpn);
/* Move to ERR and flush both queues (IBTA 10.3.1, 10.8.3). */
void rnic_qp_to_error(struct rnic_qp *qp);
void rnic_qp_check_drained(struct rnic_qp *qp);
/* Complete one send WQE (signaled or error) and retire it. */
void rnic_qp_complete_send(struct rnic_qp *qp, struct rnic_send_wqe *wqe, enum ibv_wc_status status);
/* The completion rnic_qp_complete_send writes, into wc; false if none
 * (an unsignaled WR that succeeded). */
bool rnic_qp_send_wc(const struct rnic_qp *qp, const struct rnic_send_wqe *wqe, enum ibv_wc_status status,
		     struct ibv_wc *wc);
uint32_t rnic_mtu_bytes(enum ibv_mtu mtu);
bool rnic_qp_can_send(const struct rnic_qp *qp);
bool rnic_qp_can_receive(const struct rnic_qp *qp);
/* Scatter `len` bytes into a list of SGEs starting at byte `offset` of
 * the list, checking every lkey (local write).  Returns an ibv_wc_status
 * (IBV_WC_SUCCESS, IBV_WC_LOC_LEN_ERR or IBV_WC_LOC_PROT_ERR: a bad key,
 * or a page that faulted, rnic_mem_copy). */
enum ibv_wc_status rnic_scatter(struct rnic_qp *qp, const struct rnic_sge *sge, uint32_t num_sge,
				uint32_t offset, const uint8_t *src, uint32_t len);
/* The same, checking lkeys against `pd` (a receive WQE from an SRQ is
 * checked against the SRQ's PD, IBTA 10.2.9). */
enum ibv_wc_status rnic_scatter_pd(struct rnic *r, struct rnic_pd *pd, const struct rnic_sge *sge,
				   uint32_t num_sge, uint32_t offset, const uint8_t *src, uint32_t len);

/* ---- UD and multicast (ud.c) --------------------------------------------- */

/* One multicast group and the QPs of this rnic attached to it. */
struct rnic_mcast_group {
	bool used;
	struct rnic_gid gid;
	uint32_t nqp;
	struct rnic_qp **qps;           /* cfg.max_mcast_qp_attach slots */
};

int ud_init(struct rnic *r);
void ud_fini(struct rnic *r);
/* post.c: check / copy the UD part of a send WR. */
int ud_check_send_wr(const struct rnic_qp *qp, const struct ibv_send_wr *wr);
void ud_copy_send_wr(struct rnic_send_wqe *w, const struct ibv_send_wr *wr);
/* requester.c: BTH DestQP and the DETH of the UD packet for `w`. */
void ud_fill_deth(const struct rnic_qp *qp, const struct rnic_send_wqe *w, struct wire_ib *ib);
/* Hand the UD packet of `w` to the port (its own destination). */
void ud_xmit(struct rnic_qp *qp, const struct rnic_send_wqe *w, size_t len);
/* rnic.c: a UD packet for `qp`, or for multicast QPN 0xFFFFFF. */
void ud_receive(struct rnic_qp *qp, const struct wire_ib *pkt, const struct rnic_rx *rx);
void ud_receive_mcast(struct rnic *r, const struct wire_ib *pkt, const struct rnic_rx *rx);
/* qp.c: a destroyed QP leaves every group. */
void ud_detach_all(struct rnic_qp *qp);
/* A send-queue error of a UD QP: complete `w` with `st`, flush the rest
 * and enter SQE (IBTA 10.3.1 / 11.6.2: a UD send error does not stop
 * receives; ibv_modify_qp SQE -> RTS resumes). */
void ud_send_error(struct rnic_qp *qp, enum ibv_wc_status st);

/* ---- congestion control (cc.c) ------------------------------------------ */

/* Wire bytes the pacer charges per packet beyond the UDP payload:
 * Ethernet 14 + IPv4 20 + UDP 8 (preamble, FCS and gap left out, as
 * perftest's and the kernel's byte counts leave them out). */
#define RNIC_PACER_OVERHEAD 42u
/* The pacer's default burst: this long at the current rate, and never
 * less than two full packets.  It absorbs the runtime's late wake-ups
 * (ppoll slack) without letting a QP dump a queue-full at once. */
#define RNIC_PACER_BURST_NS 50000u

/* Start a QP's congestion state afresh (create, RESET). */
void cc_qp_reset(struct rnic_qp *qp);
/* The IP ECN bits this QP's packets leave with (CNPs: cc_send_cnp). */
uint8_t cc_tx_ecn(const struct rnic_qp *qp);
/* requester: may the next packet leave now?  If not, the pacer's wake-up
 * is set (rnic_next_deadline) and the requester stops. */
bool cc_may_send(struct rnic_qp *qp, uint64_t now);
/* requester: may one more packet go, with `in_flight` packets sent and
 * not yet acknowledged?  (DCTCP and TIMELY's window; always true for
 * DCQCN.)  ACKs reopen it: the completer runs the requester then. */
bool cc_window_open(const struct rnic_qp *qp, uint32_t in_flight);
/* requester: should the next packet carry AckReq, with `in_flight`
 * packets out once it has left?  TIMELY and HPCC: often, for RTT
 * samples and INT echoes (the HPCC simulator ACKs every packet); DCTCP:
 * the packet that fills the window (its ACK reopens it). */
bool cc_wants_ackreq(const struct rnic_qp *qp, uint32_t in_flight);
/* completer: `psns` more packets were acknowledged. */
void cc_on_ack(struct rnic_qp *qp, uint32_t psns, uint64_t now);
/* completer: an RTT sample (ns) of a packet sent with AckReq. */
void cc_on_rtt(struct rnic_qp *qp, uint64_t rtt_ns, uint64_t now);
/* requester: a request packet of `wire_bytes` (UDP payload) left. */
void cc_on_sent(struct rnic_qp *qp, size_t wire_bytes, uint64_t now);
/* rnic_receive: a packet for connected QP `qp` arrived with IP ECN bits
 * `ecn` (notification point). */
void cc_on_receive(struct rnic_qp *qp, const struct rnic_rx *rx, uint64_t now);
/* rnic_receive: a CNP (reaction point). */
void cc_receive_cnp(struct rnic *r, const struct wire_ib *pkt, const struct rnic_rx *rx, uint64_t now);
uint64_t cc_next_deadline(const struct rnic_qp *qp);
void cc_advance(struct rnic_qp *qp, uint64_t now);
/* IBV_QP_RATE_LIMIT in rnic_qp_modify: checked with the other values,
 * set once the modify can no longer fail. */
int cc_check_rate_limit(const struct rnic_qp *qp, uint32_t rate_kbps);
void cc_set_rate_limit(struct rnic_qp *qp, uint32_t rate_kbps, uint64_t now);

/* ---- selective repeat (selective.c) --------------------------------------
 *
 * IRN-style loss recovery between two softrnic peers (Mittal et al.,
 * "Revisiting network support for RDMA", SIGCOMM'18), negotiated per
 * packet by the BTH bit wire_bth.selective:
 *
 *   - a requester that does selective repeat sets the bit on every request;
 *   - a responder that sees it keeps a request that arrives past a hole
 *     (its reorder buffer), executes nothing out of order, and answers each
 *     such packet with a selective NAK: a PSN sequence error NAK for the
 *     hole's PSN with the bit set, whose AETH MSN field carries the PSN that
 *     arrived (which a plain NAK's requester would read as the MSN);
 *   - a requester that gets a selective NAK resends only the PSNs the
 *     peer lacks, not everything after the hole.
 *
 * A requester without the bit gets Go-Back-N NAKs; a responder that never
 * sets the bit on a NAK gets Go-Back-N from us.  READ responses are
 * recovered by Go-Back-N either way (the requester asks again from the
 * first missing one), and so is a retransmit timeout. */

/* responder: keep `pkt` (past the expected PSN), copying its payload.
 * false: not kept (outside the window, over the budget, or held already). */
bool reorder_store(struct rnic_qp *qp, const struct wire_ib *pkt, bool *dup);
/* The kept packet for `psn`, or NULL; reorder_release frees it. */
const struct wire_ib *reorder_get(struct rnic_qp *qp, uint32_t psn);
void reorder_release(struct rnic_qp *qp, uint32_t psn);
bool reorder_empty(const struct rnic_qp *qp);
/* The highest PSN kept (only when not empty). */
uint32_t reorder_high(const struct rnic_qp *qp);
/* Drop everything kept (RESET, ERR, a Go-Back-N from the requester). */
void reorder_flush(struct rnic_qp *qp);

/* requester: the peer lacks `hole` and has `got` (a selective NAK).
 * Queues for resending each PSN in [hole, got) the peer lacks, unless it
 * was resent so shortly before `got` was last sent that the resend may
 * still be on its way. */
void scoreboard_on_nak(struct rnic_qp *qp, uint32_t hole, uint32_t got);
/* Next PSN to resend (not acknowledged, not held by the peer): false if
 * none. */
bool scoreboard_next(struct rnic_qp *qp, uint32_t *psn);
/* Request packet `psn` left, for the first time or as a resend (the order
 * of transmissions tells a lost resend, selective.c). */
void scoreboard_sent(struct rnic_qp *qp, uint32_t psn, bool resend);
/* Queue `psn` for resending whatever the scoreboard says (a probe). */
void scoreboard_probe(struct rnic_qp *qp, uint32_t psn);
bool scoreboard_pending(const struct rnic_qp *qp);
/* Forget everything (Go-Back-N, RESET, ERR). */
void scoreboard_clear(struct rnic_qp *qp);
/* qp is being destroyed. */
void selective_free(struct rnic_qp *qp);

/* ---- the state machines ------------------------------------------------- */

/* requester.c: send as many packets as the QP may (window, fences,
 * rd_atomic limit, RNR wait). */
void requester_run(struct rnic_qp *qp, uint64_t now);
/* Go back to `psn` (oldest unacked or the PSN a NAK names) and resend from
 * there (Go-Back-N, IBTA 9.7.5.2.1). */
void requester_rewind(struct rnic_qp *qp, uint32_t psn);
/* Hold off until `until` (RNR NAK), then resend from `psn`. */
void requester_rnr_wait(struct rnic_qp *qp, uint32_t psn, uint64_t until);
/* Send the packet of `psn` again, alone and asking for an ACK, before
 * anything new; the send position stays (completer_timer's probe). */
void requester_resend_one(struct rnic_qp *qp, uint32_t psn);
void requester_reset(struct rnic_qp *qp);
/* Does this QP's requester do selective repeat (and mark its requests)? */
static inline bool requester_selective(const struct rnic_qp *qp)
{
	return qp->type == IBV_QPT_RC && qp->r->cfg.selective_repeat;
}
void requester_timer(struct rnic_qp *qp, uint64_t now);
const char *requester_state_name(int state);

/* completer.c */
void completer_receive(struct rnic_qp *qp, const struct wire_ib *pkt, uint64_t now);
/* The requester transmitted request packet `psn` at `now` (arms the
 * retransmit timer). */
/* `first`: the PSN's first transmission (not a resend or a rewind's);
 * `ackreq`: the packet asks for an ACK. */
void completer_on_sent(struct rnic_qp *qp, uint32_t psn, bool first, bool ackreq, uint64_t now);
void completer_timer(struct rnic_qp *qp, uint64_t now);
/* The fast path (fast.c): a fast message left (its answer is awaited
 * under the retransmit timer), or its answer came (the retry counters
 * are reloaded and the timer stopped). */
void completer_fast_sent(struct rnic_qp *qp, uint64_t now);
void completer_fast_answered(struct rnic_qp *qp);
/* fast.c: send the send queue's next WQE as a fast message if it may go
 * so (rnic_post_send, before the requester). */
void rnic_fast_try(struct rnic_qp *qp, uint64_t now);
void completer_reset(struct rnic_qp *qp);
/* The reads put off for qp's READ responses are done (pull.c): a failed
 * one is asked again, as if its response had been lost. */
void completer_pulls_settled(struct rnic_qp *qp);
const char *completer_state_name(int state);

/* responder.c */
void responder_receive(struct rnic_qp *qp, const struct wire_ib *pkt, uint64_t now);
void responder_timer(struct rnic_qp *qp, uint64_t now);
void responder_reset(struct rnic_qp *qp);
/* The reads put off for qp's WRITEs are done (pull.c): rewind to the
 * first that failed, send what waited for them. */
void responder_pulls_settled(struct rnic_qp *qp);

/* pull.c: put off the read of the WRITE Only or SEND Only at `psn` being
 * executed (its payload, r->rx_remote, into dst); false if the port reads
 * at once.  rnic_pull_hold_completion keeps a SEND's receive completion
 * with its read (the one put off last), to be written only if the read
 * succeeds.  rnic_pulls_settle does the reads put off, if any (every
 * entry point that may look at a responder's state calls it first). */
bool rnic_pull_put_off(struct rnic_qp *qp, uint32_t psn, uint8_t *dst, size_t len);
void rnic_pull_hold_completion(struct rnic_qp *qp, const struct ibv_wc *wc, bool solicited);
/* The completer's: put off the read of the READ response that answers
 * WQE w whole (into dst); false if the port reads at once.  The WQE's
 * send completion, if any, waits with it. */
bool rnic_pull_put_off_read(struct rnic_qp *qp, const struct rnic_send_wqe *w, uint8_t *dst, size_t len,
			    uint64_t now);
void rnic_pulls_settle(struct rnic *r);
const char *responder_state_name(int state);

#endif
