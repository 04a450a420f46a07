/*
 * rnic.h — the software RNIC's device model and transport: the contract
 * between the deterministic core and everything that drives it.
 *
 * The rnic layer owns PDs, MRs, CQs and QPs and runs the RC transport
 * (requester, responder, completer).  It is a deterministic state machine:
 *
 *   inputs   work requests posted (rnic_post_send / rnic_post_recv),
 *            packets received (rnic_receive), time passing (rnic_advance);
 *   outputs  packets to send (io->xmit), completions in CQs (and the
 *            io->cq_event notification), timers (rnic_next_deadline).
 *
 * It never reads a clock, opens a socket, sleeps, allocates on the packet
 * path beyond its own queues, or starts a thread.  The caller passes `now`
 * (nanoseconds on any monotonic clock) into every call that can start or
 * check a timer.  The same code runs under the UDP runtime (runtime/), in the
 * seeded in-memory link used by tests (ports/pair), and in the simulator.
 *
 * Concurrency: an rnic is single-threaded.  The caller serialises all calls
 * on one rnic (the runtime holds the device lock).
 *
 * Verbs structures (ibv_send_wr, ibv_recv_wr, ibv_wc, ibv_qp_attr, access
 * flags, enums) are used as the vocabulary of work requests and
 * completions: they are the semantics verbs programs speak, and using them
 * here avoids a second, drifting copy.
 */
#ifndef SOFTRNIC_RNIC_H
#define SOFTRNIC_RNIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <infiniband/verbs.h>

#include "rnic/dcqcn.h"
#include "rnic/dctcp.h"
#include "rnic/hpcc_cc.h"
#include "rnic/timely.h"
#include "wire/wire.h"

struct rnic;
struct rnic_pd;
struct rnic_mr;
struct rnic_cq;
struct rnic_qp;
struct rnic_srq;

/* ---- the outside world, as the rnic sees it --------------------------- */

/* An endpoint address: a 16-byte GID (IPv4 as ::ffff:a.b.c.d). */
struct rnic_gid {
	uint8_t raw[16];
};

/* The IP TTL every packet leaves with.  Like the kernel's RoCE providers
 * (ib_core resolves each RoCEv2 address vector through the route and
 * replaces the GRH hop limit with the route's, which is 64 by default),
 * softrnic does not send the AH's hop_limit: ibv_rc_pingpong and perftest
 * set it to 1, and packets with TTL 1 die at the first router.  The AH and
 * QP keep the value for ibv_query_qp. */
#define RNIC_ROUTE_TTL 64

/* One packet to send.  `ib` is the RoCEv2 UDP payload: BTH .. payload ..
 * pad .. 4 ICRC bytes, which the port fills (the ICRC depends on the IP
 * header that only the port knows).  The buffer is valid only during the
 * call. */
struct rnic_tx {
	struct rnic_gid dst;    /* destination GID                    */
	uint16_t sport;         /* UDP source port (flow entropy)     */
	uint8_t ecn;            /* IP ECN bits to send (ECT(0) = 2)    */
	uint8_t dscp;           /* IP DSCP (from the AH traffic class) */
	uint8_t ttl;            /* IP TTL / hop limit: RNIC_ROUTE_TTL  */
	const uint8_t *ib;
	size_t ib_len;
	/* Payload by reference (only from an rnic whose port set
	 * rnic_io.tx_payload_ref; 0/NULL otherwise).  When payload_len > 0
	 * the packet on the wire is
	 *     ib[0 .. hdr_len) ++ payload[0 .. payload_len) ++ ib[hdr_len .. ib_len)
	 * i.e. `ib` holds the headers, then the pad and the ICRC room, and
	 * the payload stays where it lies: in an MR, or in a WQE's inline
	 * copy.  RDMA semantics allow it: a send buffer is the adapter's
	 * until its completion; a READ response is read from the
	 * responder's MR while the remote side reads it (local writes to
	 * that range meanwhile give undefined data, as on hardware).  The
	 * memory stays valid until the rnic's caller lets the application
	 * run again (the runtime sends before releasing the device lock). */
	const uint8_t *payload;
	size_t payload_len;
	size_t hdr_len;
	/* A message-path packet (rnic_qp_set_message_path): its payload,
	 * larger than any path MTU, is these pieces where they lie (payload
	 * is then NULL, payload_len their sum, `ib` the headers and the 4
	 * ICRC bytes, no pad).  It cannot travel as a datagram: the port
	 * hands the receiver a description of the pieces, and the receiver
	 * copies them straight from this process's memory
	 * (rnic_rx.remote).  They stay valid as long as a payload by
	 * reference's do, and then as long as the message is outstanding
	 * (a request's buffer is the adapter's until its completion; a READ
	 * response comes from the responder's MR).  Trade-off: a responder
	 * that exits, or frees that memory, before the requester has read
	 * the response makes the read fail and the READ be asked again (a
	 * hardware NIC would have delivered it); a program cannot know when
	 * a READ of its memory is done, so this needs one that exits with
	 * READs against it outstanding. */
	const struct wire_piece *payload_vec;
	unsigned payload_nvec;
	/* A request sent alone: nothing of its QP's before it
	 * unacknowledged, no work request posted behind it, and the same
	 * for the QP's previous request — a QP that runs one message at a
	 * time (a ping-pong, a program that waits for each completion), not
	 * a stream (whose first request after a drained window is alone
	 * too, but not its predecessor).  A hint for the port: it may copy
	 * such a message-path payload along itself rather than leave it for
	 * the receiver to read (local_path.h: payloads in the ring), and may
	 * tell the peer, whose READ response is then sent alone too
	 * (rnic_rx.alone).  Set by the requester only. */
	bool alone;
};

/* The payload of a received message-path packet, still in the sender's
 * memory.  read() copies all `len` bytes into dst[0..n) (whose lengths
 * add up to len) and returns 0, or a negative errno when the sender's
 * memory cannot be read (it died, or unmapped the buffer): the rnic then
 * drops the packet as if it had been lost, and counts rx_drop_msg_pull. */
struct rnic_rx_remote {
	size_t len;
	int (*read)(const struct rnic_rx_remote *rem, const struct iovec *dst, unsigned n);
};

/* A read of a message-path payload put off to the end of the port's
 * batch (rnic_io.pull_batch): `rem`'s payload, all of it, into `dst`.
 * The port sets `ok` when it landed whole. */
struct rnic_pull {
	const struct rnic_rx_remote *rem;
	struct iovec dst;
	bool ok;
};

/* One packet received, ICRC already checked by the port. */
struct rnic_rx {
	struct rnic_gid src;    /* source GID (from the IP source address) */
	struct rnic_gid dst;    /* destination GID (our address, or the
	                           multicast group it was sent to)          */
	uint16_t sport;
	uint8_t ecn;            /* IP ECN bits as received (CE = 3)         */
	const uint8_t *ib;      /* BTH .. ICRC */
	size_t ib_len;
	/* The rest of the IP header, for the GRH a UD receive reports
	 * (IBTA 11.4.1.1 / rxe's rdma_network_hdr).  A port that does not
	 * know them leaves them 0; ttl 0 then reads as 64. */
	uint8_t dscp;           /* IP DSCP as received                      */
	uint8_t ttl;            /* IPv4 TTL / IPv6 hop limit                */
	uint16_t ip_id;         /* IPv4 identification                      */
	uint32_t flow_label;    /* IPv6 flow label                          */
	/* Non-NULL for a message-path packet: `ib` holds its headers and 4
	 * ICRC bytes, and the payload is read from the sender (above).
	 * Accepted only for RC requests and READ responses that carry more
	 * than a path MTU's payload, to a QP on the message path. */
	const struct rnic_rx_remote *remote;
	/* The sender's rnic_tx.alone, where the port can carry it (the
	 * host-local ring; false over UDP): a READ answered from this
	 * request sends its response alone. */
	bool alone;
};

struct rnic_fast_msg;

struct rnic_io {
	void *ctx;
	/* Send one packet.  Must not call back into the rnic. */
	void (*xmit)(void *ctx, const struct rnic_tx *tx);
	/* A completion was added to `cq` and a notification was armed for it
	 * (ibv_req_notify_cq: any, or solicited and this one is solicited).
	 * The notification is disarmed before this call.  May be NULL. */
	void (*cq_event)(void *ctx, struct rnic_cq *cq, void *cq_context);
	/* An affiliated or unaffiliated async event (ibv_async_event).  The
	 * element (qp / cq / srq) pointers are the rnic objects' user
	 * contexts.
	 * May be NULL. */
	void (*async_event)(void *ctx, enum ibv_event_type type, void *user_obj);
	/* Start (join = true) or stop receiving packets sent to multicast
	 * group `mgid`: called when the first QP of this rnic attaches to the
	 * group and when the last one detaches (rnic_attach_mcast).  Returns
	 * 0 or an errno, which fails the attach.  May be NULL (a port that
	 * delivers every packet anyway, e.g. a test loop). */
	int (*mcast)(void *ctx, const struct rnic_gid *mgid, bool join);
	/* Optional, for ports that batch: where the rnic should build its
	 * next packet (WIRE_MAX_IB_PACKET bytes, valid until the next call of
	 * any io hook).  An xmit whose tx->ib is that buffer hands the packet
	 * over without a copy.  NULL: the rnic builds in its own buffer. */
	uint8_t *(*tx_buffer)(void *ctx);
	/* The port takes payloads by reference (rnic_tx.payload): the rnic
	 * then builds only the headers of an RC/UC packet whose payload lies
	 * in one piece, and the port sends the payload from where it is. */
	bool tx_payload_ref;
	/* A MAD arrived for QP1 (gsi.c: a UD SEND ONLY to DestQP 1 with the
	 * GSI Q_Key and a 256-byte payload): src is the sender's GID,
	 * src_qpn its source QP (1 for the CM).  The bytes are valid only
	 * during the call; may call rnic_gsi_send.  NULL: MADs are dropped
	 * (rx_drop_gsi). */
	void (*gsi_receive)(void *ctx, const struct rnic_gid *src, uint32_t src_qpn, const uint8_t *mad,
			    size_t len);
	/* Make host memory [addr, addr+len) persistent, for an RDMA FLUSH
	 * with the persistence placement type: the runtime msyncs the pages
	 * (a region mapped from a file reaches the file).  Returns 0 or an
	 * errno; an error NAKs the FLUSH with a remote operation error.
	 * NULL: memory counts as persistent once globally visible (a test
	 * loop). */
	int (*persist)(void *ctx, void *addr, size_t len);
	/* Optional, for a port whose message-path reads cost a system call
	 * each: read pulls[0..n) (each its rem's whole payload into its
	 * dst), setting each one's `ok`; the port may join them into fewer
	 * calls.  With it, the rnic puts off the read of an RDMA WRITE's
	 * payload to rnic_receive_end (pull.c): the port must keep each
	 * packet's rnic_rx.remote valid until then.  NULL: every payload is
	 * read as its packet is received. */
	void (*pull_batch)(void *ctx, struct rnic_pull *pulls, unsigned n);
	/* Region memory may vanish under the rnic: a program may unmap or
	 * protect pages it registered (a NIC keeps them pinned; softrnic, in
	 * the process, would fault).  Every copy into or out of an MR goes
	 * through mem_copy, which returns false when a page of either side
	 * faulted (bytes before the fault may have been copied); an 8-byte
	 * copy to an 8-byte aligned dst must be one store (ATOMIC WRITE).
	 * mem_probe says whether [addr, addr+len) can be read, or written
	 * when `write`, now: the rnic asks it before it hands MR memory to
	 * someone else to read or fill later (a payload sent by reference, a
	 * READ response, a message-path read).  On false the rnic ends the
	 * access as a protection error at that point, before its state moves
	 * (remote access error NAK for a peer's request, IBTA 9.7.5.2.4;
	 * local protection error for a local SGE, IBTA 10.6.3.3) and counts
	 * mr_fault.  NULL: memcpy, and every range is accessible (ports
	 * whose regions never go away: the seeded pair, the simulator). */
	bool (*mem_copy)(void *ctx, void *dst, const void *src, size_t len);
	bool (*mem_probe)(void *ctx, const void *addr, size_t len, bool write);
	/* The fast path (rnic_qp_set_fast): hand message m, its payload the
	 * pieces pc[0..n) in region memory (copied before this returns), to
	 * the peer at dgid.  0, or an errno when it cannot go that way (no
	 * room, the peer's ring gone, a page of the payload gone): the
	 * message then goes as packets.  NULL: no fast path. */
	int (*fast_send)(void *ctx, const struct rnic_gid *dgid, const struct rnic_fast_msg *m,
			 const struct wire_piece *pc, unsigned n);
};

/* ---- device ----------------------------------------------------------- */

/* Congestion control algorithms of the reaction point (cc.c). */
enum rnic_cc_algo {
	RNIC_CC_DCQCN = 0,      /* dcqcn.c: CNPs cut the rate (default) */
	RNIC_CC_DCTCP,          /* dctcp.c: ECN echoes (CNPs), α per window */
	RNIC_CC_TIMELY,         /* timely.c: RTT gradient from ACK samples */
	RNIC_CC_HPCC,           /* hpcc_cc.c: INT echoed on ACKs (simulator) */
};

struct rnic_config {
	struct rnic_gid gid;            /* our RoCEv2 GID (GID index 0..)      */
	enum ibv_mtu max_mtu;           /* largest path MTU we accept          */
	uint32_t max_qp;                /* size of the QP table                */
	uint32_t max_qp_wr;             /* largest SQ/RQ depth                 */
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_sge;
	uint32_t max_inline;            /* max_inline_data                     */
	uint32_t max_rd_atomic;         /* max_qp_rd_atom / max_qp_init_rd_atom */
	uint32_t seed;                  /* first QPN / key seed (determinism)  */
	/* QPNs come from [qpn_base, qpn_base + qpn_span) (span 0: all of
	 * 2..2^24-1).  A process sharing its host address takes its slot's
	 * range, so that the kernel can steer by QPN (runtime/share_steer.h). */
	uint32_t qpn_base, qpn_span;
	uint32_t max_srq;               /* SRQs (0: none can be created)       */
	uint32_t max_srq_wr;            /* largest SRQ depth (SGEs: max_sge)   */
	uint32_t max_ah;                /* address handles                     */
	uint32_t max_mcast_grp;         /* multicast groups                    */
	uint32_t max_mcast_qp_attach;   /* QPs of this rnic per group          */
	/* Congestion control (cc.c, docs/congestion.md). */
	uint64_t line_rate;             /* bits/s: the port's rate, DCQCN's top */
	bool pace_line_rate;            /* even uncongested QPs leave no faster
	                                   than line_rate (a port with a real
	                                   rate: SOFTRNIC_LINE_RATE)          */
	bool ecn;                       /* RC/UC packets leave ECT(0)           */
	bool cnp;                       /* notification point: CE -> CNP        */
	bool dcqcn;                     /* reaction point: CNPs cut the rate    */
	struct dcqcn_params cc;         /* DCQCN and NP parameters              */
	/* The reaction point's algorithm for every RC/UC QP of the device
	 * (docs/congestion.md): DCQCN by default; DCTCP and TIMELY as the
	 * HPCC simulator runs them, with their parameters.  cc_window
	 * (bytes, 0: none) is the window in flight at the line rate that
	 * DCTCP and TIMELY scale with their rate (HPCC's HAS_WIN/VAR_WIN:
	 * the path's bandwidth-delay product). */
	enum rnic_cc_algo cc_algo;
	struct dctcp_params dctcp;
	struct timely_params timely;
	struct hpcc_params hpcc;
	uint64_t cc_window;
	/* Loss recovery of RC QPs (selective.c): selective repeat with a
	 * peer that does it too, Go-Back-N with anyone else; false: always
	 * Go-Back-N (IBTA 9.7.5.2). */
	bool selective_repeat;
	/* Request packets one QP keeps in flight at most (1 .. 512; 0: 512,
	 * RNIC_SEND_WINDOW).  IRN caps it at the path's bandwidth-delay
	 * product (its BDP-FC) so that a fabric without PFC overflows less;
	 * the simulator's experiments set it, the runtime keeps the default. */
	uint32_t send_window;
	/* After a retransmit timeout, resend the oldest packet alone and let
	 * the peer's answer decide whether the rest goes again (F-RTO,
	 * completer.c, completer_timer); false: Go-Back-N of the whole window
	 * at once, as RoCE NICs do (IBTA 9.7.6.1.3), which the simulator
	 * models. */
	bool timeout_probe;
};
void rnic_config_default(struct rnic_config *cfg);

/* HPCC's feedback: the INT records the switches wrote into a request of
 * QP `qpn` (of this rnic), echoed on the ACK that was just passed to
 * rnic_receive.  Only softrnic's simulator has switches that write them
 * (src/sim/net.c carries them beside its packets; no packet on a real
 * wire holds them): the runtime never calls this.  Ignored unless the
 * QP's algorithm is RNIC_CC_HPCC. */
void rnic_cc_telemetry(struct rnic *r, uint32_t qpn, const struct hpcc_int *t, uint64_t now);

struct rnic *rnic_create(const struct rnic_config *cfg, const struct rnic_io *io);
void rnic_destroy(struct rnic *r);
const struct rnic_config *rnic_get_config(const struct rnic *r);

/* ---- counters ----------------------------------------------------------- */

/* Everything that can go wrong is counted (like the kernel's hw_counters).
 * Plain uint64 fields so the runtime can copy them into shared memory and
 * the CLI can print them by name (RNIC_COUNTER_LIST). */
#define RNIC_COUNTER_LIST(X)                                                   \
	X(tx_packets) X(tx_bytes) X(rx_packets) X(rx_bytes)                     \
	X(rx_drop_malformed) X(rx_drop_bad_icrc) X(rx_drop_unknown_qp)          \
	X(rx_drop_qp_state) X(rx_drop_bad_opcode_seq) X(rx_drop_bad_pkey)       \
	X(rx_drop_bad_qkey) X(rx_drop_out_of_window) X(rx_drop_ghost_response)  \
	X(tx_nak_psn_seq) X(tx_nak_invalid_req) X(tx_nak_remote_access)         \
	X(tx_nak_remote_op) X(tx_rnr_nak)                                       \
	X(rx_nak_psn_seq) X(rx_nak_invalid_req) X(rx_nak_remote_access)         \
	X(rx_nak_remote_op) X(rx_rnr_nak)                                       \
	X(retransmits) X(retransmit_timeouts) X(rnr_retries)                    \
	X(duplicate_requests) X(duplicate_reads) X(duplicate_atomics)           \
	X(tx_acks) X(rx_acks) X(completions) X(completion_errors)               \
	X(cnp_sent) X(cnp_received) X(ecn_marked) X(rate_decreases)            \
	X(rx_drop_cnp)                                                          \
	X(rx_drop_bad_src) X(cq_overflows)                                      \
	X(rx_drop_no_recv_wqe) X(rx_drop_mcast_no_group)                       \
	X(tx_drop_ud_over_mtu) X(rx_gsi_mads) X(tx_gsi_mads) X(rx_drop_gsi)    \
	X(tx_nak_selective) X(rx_nak_selective) X(reorder_stored)               \
	X(rx_drop_reorder) X(retransmit_probes) X(flushes) X(flush_failed)    \
	X(tx_msg_packets) X(rx_msg_packets) X(rx_drop_msg_pull)                \
	X(rx_msg_pulls_put_off) X(rx_msg_pull_batches) X(rx_msg_sends_put_off) \
	X(rx_msg_reads_put_off) X(mr_fault) X(completion_flushes)               \
	X(fast_tx) X(fast_rx) X(fast_rejected) X(fast_not_taken) X(fast_unanswered)

struct rnic_counters {
#define RNIC_COUNTER_FIELD(name) uint64_t name;
	RNIC_COUNTER_LIST(RNIC_COUNTER_FIELD)
#undef RNIC_COUNTER_FIELD
};
const struct rnic_counters *rnic_counters(const struct rnic *r);

/* ---- objects -------------------------------------------------------------
 * Functions returning int return 0 or a positive errno value (EINVAL,
 * ENOMEM, EBUSY, ...) exactly as the matching verb documents; constructors
 * return NULL and set errno. */

struct rnic_pd *rnic_pd_alloc(struct rnic *r);
int rnic_pd_free(struct rnic_pd *pd);               /* EBUSY if in use */

/* addr/len: the process memory; iova: the address the peer uses (equal to
 * addr for ibv_reg_mr).  access: IBV_ACCESS_* (remote write/atomic need
 * local write: EINVAL otherwise).  Keys: index in the high 24 bits, an
 * 8-bit generation in the low bits, so a stale key fails. */
struct rnic_mr *rnic_mr_reg(struct rnic_pd *pd, void *addr, size_t len, uint64_t iova, int access);
/* rnic_mr_reg's argument checks alone (no state read): 0 or EINVAL.
 * Whether the memory is there is the port's to say (the runtime's
 * mem_guard.h) and goes after these, as the kernel checks the access
 * flags before it pins a page. */
int rnic_mr_reg_check(void *addr, size_t len, uint64_t iova, int access);
/* The access flags in force. */
int rnic_mr_access(const struct rnic_mr *mr);
int rnic_mr_dereg(struct rnic_mr *mr);
/* ibv_rereg_mr: flags is a mix of RNIC_REREG_* (the values of
 * IBV_REREG_MR_CHANGE_*); fields not named by a flag keep their value.
 * 0 or an errno (old registration untouched); the keys stay the same. */
#define RNIC_REREG_TRANSLATION 0x1
#define RNIC_REREG_PD 0x2
#define RNIC_REREG_ACCESS 0x4
int rnic_mr_rereg(struct rnic_mr *mr, int flags, struct rnic_pd *pd, void *addr, size_t len,
		  uint64_t iova, int access);
/* ibv_advise_mr prefetch of [addr, addr+len) through lkey: 0, EINVAL
 * (not an ODP MR of pd, out of range, no local write for a write
 * prefetch) or EFAULT (unmapped). */
int rnic_mr_prefetch(struct rnic *r, struct rnic_pd *pd, uint32_t lkey, uint64_t addr,
		     uint64_t len, bool for_write, bool no_fault);
uint32_t rnic_mr_lkey(const struct rnic_mr *mr);
uint32_t rnic_mr_rkey(const struct rnic_mr *mr);

/* Memory windows (IBTA 10.6.7): a remote-access view of part of an MR,
 * with its own rkey from the MR key space (index << 8 | key byte).
 * alloc: EINVAL for a type other than IBV_MW_TYPE_1/_2, ENOMEM when the
 * key table is full.  A window starts unbound (no access).  Binding is a
 * send WR: IBV_WR_BIND_MW with wr->bind_mw (the rnic reads only mw->rkey
 * and bind_info.mr->lkey, to find its objects); the new rkey must keep
 * the window's index (ibv_inc_rkey).  Type 2 windows are invalidated by
 * IBV_WR_LOCAL_INV (invalidate_rkey) or a peer's SEND with Invalidate.
 * Deregistering an MR unbinds its windows. */
struct rnic_mw;
struct rnic_mw *rnic_mw_alloc(struct rnic_pd *pd, enum ibv_mw_type type);
int rnic_mw_dealloc(struct rnic_mw *mw);
/* The rkey as of the last executed bind or invalidate. */
uint32_t rnic_mw_rkey(const struct rnic_mw *mw);

struct rnic_cq *rnic_cq_create(struct rnic *r, int cqe, void *cq_context);
int rnic_cq_destroy(struct rnic_cq *cq);            /* EBUSY if QPs use it */
int rnic_cq_resize(struct rnic_cq *cq, int cqe);    /* EINVAL if < queued */
int rnic_cq_capacity(const struct rnic_cq *cq);
/* Returns the number of completions written to wc (0..n). */
int rnic_cq_poll(struct rnic_cq *cq, int n, struct ibv_wc *wc);
int rnic_cq_req_notify(struct rnic_cq *cq, bool solicited_only);
/* Whether a notification is requested and not yet fired: the program
 * means to sleep on the CQ's channel (the runtime leaves the socket to
 * its progress thread then). */
bool rnic_cq_armed(const struct rnic_cq *cq);

/* Creates a QP in RESET.  init->send_cq/recv_cq/srq are ignored; pass the
 * rnic CQs.  Fills init->cap with the actual capacities. */
struct rnic_qp *rnic_qp_create(struct rnic_pd *pd, struct rnic_cq *send_cq, struct rnic_cq *recv_cq,
			       struct ibv_qp_init_attr *init, void *qp_context);
uint32_t rnic_qp_num(const struct rnic_qp *qp);
/* Validates attr_mask against the current and requested state (IBTA
 * 11.2.5 / rdma-core's ibv_modify_qp table): EINVAL for a wrong mask or
 * value.  Moving to ERR flushes outstanding WRs with IBV_WC_WR_FLUSH_ERR. */
int rnic_qp_modify(struct rnic_qp *qp, const struct ibv_qp_attr *attr, int attr_mask, uint64_t now);

/* The message path: between two softrnic devices that can read each
 * other's memory (the host-local path, runtime/local_path.h), an RC QP
 * carries each message, up to RNIC_MSG_MTU bytes, as one packet whose
 * payload the receiver copies from the sender (rnic_tx.payload_vec,
 * rnic_rx.remote): one PSN per message, one copy, and every rule of the
 * transport unchanged — the target still checks rkeys, bounds and
 * access, takes a receive WQE or answers RNR, executes atomics, and
 * acknowledges; the requester still retransmits what is not
 * acknowledged.  Only messages longer than min_bytes go whole (at least
 * RNIC_PKT_MAX_PAYLOAD; where a ring copy of MTU packets is faster than
 * the receiver's read, the port sets it higher), the rest stay ordinary
 * packets; 0 turns the path off.  It is a choice of the requester, per
 * message: the packets say so (wire_bth.msg, a reserved BTH bit), and the
 * responder checks their lengths and answers a READ by it, so each
 * direction of a connection chooses for itself (the port chooses when
 * the peer can read this process's memory).  Set by the port once the QP is in RTR, before it sends;
 * cleared by RESET.  EINVAL for a QP that is not RC or not in RTR or RTS,
 * or a min_bytes below RNIC_PKT_MAX_PAYLOAD; EBUSY with work outstanding. */
#define RNIC_MSG_MTU (1u << 30)
#define RNIC_PKT_MAX_PAYLOAD 4096u    /* the largest path MTU's payload */
int rnic_qp_set_message_path(struct rnic_qp *qp, uint32_t min_bytes);

/* ---- the host-local fast path (fast.c) -------------------------------- */

/* Between two RC QPs of softrnic devices on one host, whose port carries
 * messages through shared memory reliably and in order, a SEND, SEND with
 * immediate, RDMA WRITE or WRITE with immediate of up to RNIC_FAST_MAX
 * bytes, posted while its QP has nothing outstanding, goes as one message
 * (rnic_io.fast_send) with no PSN, no packet and no ACK: the peer's rnic
 * executes it (rnic_fast_receive) if nothing stands in the way, and its
 * port answers (rnic_fast_answer) DONE, which completes the work request,
 * or REJECTED, having done nothing: the requester then sends it as
 * ordinary packets, and the responder's own rules (RNR, access and length
 * errors, the QP's state) answer as the IBTA says.  Until the answer the
 * QP sends nothing else; no answer within the QP's retry budget
 * (timeout x retry_cnt) is IBV_WC_RETRY_EXC_ERR, as for packets. */
#define RNIC_FAST_MAX 4096u
struct rnic_fast_msg {
	uint32_t dqpn;                  /* the responder's QP                   */
	uint32_t sqpn;                  /* the requester's QP                   */
	uint32_t seq;                   /* the requester's number for it        */
	uint8_t opcode;                 /* enum ibv_wr_opcode: SEND, SEND_WITH_IMM,
	                                   RDMA_WRITE, RDMA_WRITE_WITH_IMM      */
	uint8_t se;                     /* solicited event                      */
	uint32_t imm;                   /* network order                        */
	uint32_t rkey;
	uint64_t va;
	uint32_t len;                   /* payload bytes                        */
};
enum rnic_fast_verdict {
	RNIC_FAST_DONE = 1,             /* executed: complete it                */
	RNIC_FAST_REJECTED = 2,         /* nothing done: send it as packets     */
	RNIC_FAST_OFF = 3,              /* nothing done, and the QP is not on the
	                                   fast path: all goes as packets      */
};
/* The port may carry fast messages between this QP and its peer (set once
 * the QP is in RTR towards a local peer, with the message path; cleared
 * by RESET).  Both ends must say so: a responder answers RNIC_FAST_OFF to
 * fast messages for a QP that is not on, and the requester then stops. */
void rnic_qp_set_fast(struct rnic_qp *qp, bool on);
/* A fast message from the QP whose address is `src`, payload[0..m->len).
 * The verdict the port answers with; 0 for one that cannot be answered
 * (malformed: dropped and counted). */
enum rnic_fast_verdict rnic_fast_receive(struct rnic *r, const struct rnic_fast_msg *m, const uint8_t *payload,
					 const struct rnic_gid *src, uint64_t now);
/* The peer's answer to fast message `seq` of our QP `qpn`, from `src`
 * whose QP is `src_qpn`.  Ignored unless it answers the one outstanding. */
void rnic_fast_answer(struct rnic *r, uint32_t qpn, uint32_t src_qpn, const struct rnic_gid *src, uint32_t seq,
		      enum rnic_fast_verdict v, uint64_t now);
int rnic_qp_query(struct rnic_qp *qp, struct ibv_qp_attr *attr, struct ibv_qp_init_attr *init);
int rnic_qp_destroy(struct rnic_qp *qp);

/* Post work requests.  On error returns an errno (EINVAL bad WR, ENOMEM
 * queue full) and sets *bad to the first WR not posted.  Sending starts
 * inside this call when the QP may send (progress in the caller's thread). */
int rnic_post_send(struct rnic_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad, uint64_t now);

/* RDMA FLUSH (IBTA 1.5; rdma-core's ibv_wr_flush).  The values are
 * rdma-core's (IBV_WR_FLUSH, IBV_WC_FLUSH, IBV_ACCESS_FLUSH_*,
 * IB_UVERBS_DEVICE_FLUSH_*); the headers of older rdma-core releases
 * (Debian 12 ships 44) do not have them yet, so softrnic names them here.
 * struct ibv_send_wr has no FLUSH fields: rnic_post_send reads a FLUSH
 * from its wr.atomic arm — remote_addr and rkey name the target,
 * compare_add is the length, swap the placement type (RNIC_FLUSH_GLOBAL |
 * RNIC_FLUSH_PERSISTENT) in bits 7..0 and the selectivity
 * (RNIC_FLUSH_RANGE / RNIC_FLUSH_MR) in bits 15..8; num_sge is 0. */
#define RNIC_WR_FLUSH ((enum ibv_wr_opcode)14)
#define RNIC_WC_FLUSH ((enum ibv_wc_opcode)8)
#define RNIC_ACCESS_FLUSH_GLOBAL (1 << 8)
#define RNIC_ACCESS_FLUSH_PERSISTENT (1 << 9)
#define RNIC_FLUSH_GLOBAL 1u
#define RNIC_FLUSH_PERSISTENT 2u
#define RNIC_FLUSH_RANGE 0u
#define RNIC_FLUSH_MR 1u
#define RNIC_DEVICE_FLUSH_GLOBAL (1ull << 38)
#define RNIC_DEVICE_FLUSH_PERSISTENT (1ull << 39)
#define RNIC_DEVICE_ATOMIC_WRITE (1ull << 40)
int rnic_post_recv(struct rnic_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/* Free send-queue slots: how many more WRs rnic_post_send accepts before
 * ENOMEM, so a caller can post a batch all-or-nothing (ibv_wr_complete). */
uint32_t rnic_qp_sq_free(const struct rnic_qp *qp);

/* ---- rate limits and congestion control, per QP (cc.c) -------------------
 * ibv_modify_qp_rate_limit: packets of the QP leave no faster than
 * rate_kbps (0 removes the limit), in bursts of at most max_burst_sz
 * bytes (0: the pacer's default); typical_pkt_sz is accepted and unused
 * (the pacer charges each packet its real size).  The same limit is set
 * by rnic_qp_modify with IBV_QP_RATE_LIMIT (attr->rate_limit, kb/s).
 * EINVAL outside [RNIC_RATE_LIMIT_MIN_KBPS, line rate] or for a QP type
 * other than RC, UC and UD. */
#define RNIC_RATE_LIMIT_MIN_KBPS 1u
int rnic_qp_set_rate_limit(struct rnic_qp *qp, uint32_t rate_kbps, uint32_t max_burst_sz,
			   uint16_t typical_pkt_sz, uint64_t now);

/* What `softrnic stats --qp` shows of one QP. */
struct rnic_qp_info {
	uint32_t qpn, dest_qpn;
	enum ibv_qp_type type;
	enum ibv_qp_state state;
	uint32_t sq_psn;                /* next PSN to send                 */
	uint32_t unacked_psn;           /* oldest unacknowledged PSN        */
	uint32_t rq_psn;                /* next PSN expected                */
	uint32_t outstanding;           /* send WQEs posted, not completed  */
	uint64_t retransmits;           /* packets sent again (Go-Back-N)   */
	uint64_t rate_bps;              /* the pacer's rate now (0: none)   */
	uint64_t rate_limit_bps;        /* the application's limit (0: none) */
	uint32_t alpha;                 /* DCQCN α, 1/1024                  */
	bool congested;                 /* DCQCN is holding the rate down   */
	uint64_t ce_received, cnp_sent, cnp_received, rate_decreases;
	uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes;
};
/* Fill *out for each QP in QPN order, at most `max`; returns how many
 * QPs there are (may exceed max). */
size_t rnic_qp_infos(struct rnic *r, struct rnic_qp_info *out, size_t max, uint64_t now);

/* ---- shared receive queues (IBTA 10.2.9) ---------------------------------
 * One pool of receive WQEs that any number of QPs consume from.  create:
 * attr->attr.max_wr (1..max_srq_wr) and max_sge (1..max_sge); srq_limit is
 * ignored at creation (the SRQ starts disarmed, as ibv_create_srq says);
 * attr->attr is set to the actual values.  modify: IBV_SRQ_MAX_WR resizes
 * (EINVAL below the WQEs queued or the armed limit), IBV_SRQ_LIMIT arms the
 * limit (0 disarms): when the number of queued WQEs drops below it, the
 * rnic raises IBV_EVENT_SRQ_LIMIT_REACHED once and disarms.  query reports
 * srq_limit 0 when disarmed.  destroy: EBUSY while a QP uses the SRQ. */
struct rnic_srq *rnic_srq_create(struct rnic_pd *pd, struct ibv_srq_init_attr *attr, void *srq_context);
int rnic_srq_modify(struct rnic_srq *srq, const struct ibv_srq_attr *attr, int attr_mask);
int rnic_srq_query(struct rnic_srq *srq, struct ibv_srq_attr *attr);
int rnic_srq_destroy(struct rnic_srq *srq);
int rnic_post_srq_recv(struct rnic_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/* rnic_qp_create with receive WQEs taken from `srq` (NULL: same as
 * rnic_qp_create).  init->cap.max_recv_wr/max_recv_sge are ignored and
 * reported as 0; rnic_post_recv on such a QP fails with EINVAL.  When the
 * QP enters ERR, IBV_EVENT_QP_LAST_WQE_REACHED follows the flush of the
 * last WQE it took from the SRQ (IBTA 11.6.3.1, 10.3.1). */
struct rnic_qp *rnic_qp_create_srq(struct rnic_pd *pd, struct rnic_cq *send_cq, struct rnic_cq *recv_cq,
				   struct rnic_srq *srq, struct ibv_qp_init_attr *init, void *qp_context);

/* ---- address handles and multicast (UD) ------------------------------- */

/* An address handle: where a UD send goes (IBTA 10.5).  RoCEv2 routes by
 * GID only, so ah_attr must be global (is_global, grh.dgid); the rest of
 * the GRH gives the IP DSCP (traffic_class >> 2) and TTL (hop_limit).
 *
 * `verbs` is first on purpose: the compat layer fills it and hands
 * &ah->verbs to the program as its struct ibv_ah, so rnic_post_send finds
 * the rnic_ah behind wr->wr.ud.ah with a cast, no lookup.  Callers that
 * are not compat (tests) pass &ah->verbs the same way.  The rnic never
 * reads `verbs`. */
struct rnic_ah {
	struct ibv_ah verbs;
	struct rnic_pd *pd;
	struct ibv_ah_attr attr;        /* as created */
	struct rnic_gid dgid;
	uint8_t dscp, ttl;
};
static inline struct rnic_ah *rnic_ah_from_ibv(struct ibv_ah *ah)
{
	return (struct rnic_ah *)ah;
}
/* EINVAL if attr is not global or names port != 1 or a zero dgid. */
struct rnic_ah *rnic_ah_create(struct rnic_pd *pd, const struct ibv_ah_attr *attr);
int rnic_ah_destroy(struct rnic_ah *ah);

/* Attach a UD QP to multicast group `gid` (IBTA 10.5.2.5): packets sent
 * to the group (IP destination = the group's address, BTH DestQP =
 * 0xFFFFFF) are then delivered to every attached QP.  A RoCEv2 group is a
 * multicast IP address: ff00::/8, or IPv4-mapped ::ffff:224.0.0.0/4.
 * EINVAL for another QP type or a non-multicast GID; attaching twice is a
 * no-op (as in the kernel).  `lid` is ignored (RoCE has no LIDs).
 * Detach: EINVAL if not attached. */
int rnic_attach_mcast(struct rnic_qp *qp, const struct rnic_gid *gid, uint16_t lid);
int rnic_detach_mcast(struct rnic_qp *qp, const struct rnic_gid *gid, uint16_t lid);
/* The multicast QPN (IBTA 10.5.2.5: DestQP 0xFFFFFF). */
#define RNIC_MCAST_QPN 0xffffffu

/* ---- QP1: management datagrams (gsi.c) -------------------------------- */

/* Send one MAD (len 256) from QP1 to QP dst_qpn (1 for the CM) of the host
 * with GID dst: a UD SEND ONLY with P_Key 0xFFFF and the GSI Q_Key
 * 0x80010000.  0 or EINVAL. */
int rnic_gsi_send(struct rnic *r, const struct rnic_gid *dst, uint32_t dst_qpn, const uint8_t *mad, size_t len);

/* ---- packets and time ------------------------------------------------- */

/* Feed one received packet.  Malformed or hostile packets are counted and
 * dropped or NAKed; they never touch memory outside an MR. */
void rnic_receive(struct rnic *r, const struct rnic_rx *rx, uint64_t now);
/* The port's batch of received packets is over: the payload reads the
 * rnic put off (rnic_io.pull_batch) happen now, and what waited for them
 * (the ACKs of those WRITEs, or the rewind of a QP whose read failed).
 * A port with pull_batch calls it after each batch, before it lets go of
 * the packets and before the application may use the rnic again. */
void rnic_receive_end(struct rnic *r);

/* The earliest absolute time (same clock as `now`) at which rnic_advance
 * has work to do (retransmit timer, RNR timer, delayed ACK), or UINT64_MAX. */
uint64_t rnic_next_deadline(const struct rnic *r);
/* Fire every timer due at `now`. */
void rnic_advance(struct rnic *r, uint64_t now);

/* Optional tracing for debugging: one line per state-machine step of any
 * QP, e.g. "qp 0x00012a req BUILD_SEND".  fn NULL turns it off. */
void rnic_set_trace(struct rnic *r, void (*fn)(void *ctx, const char *line), void *ctx);

#endif
