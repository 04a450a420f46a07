/*
 * hpcc_cc.h — HPCC, congestion control from in-network telemetry (Li et
 * al., "HPCC: High Precision Congestion Control", SIGCOMM 2019, Alg. 1),
 * in the form the HPCC simulator runs it (alibaba-edu/High-Precision-
 * Congestion-Control, rdma-hw.cc, CC_MODE 3, one rate for the whole path:
 * MULTI_RATE 0, SAMPLE_FEEDBACK 0).  The file is hpcc_cc.c because
 * src/sim/hpcc.c is the simulator's reader of HPCC's config files.
 *
 * Every switch on the path appends an INT record to each data packet
 * (its egress port's queue length, bytes sent so far, a timestamp and
 * the link's rate); the receiver echoes the records on its ACK; the
 * sender, per ACK:
 *
 *   first ACK     keeps the records, and the window's end (snd_nxt).
 *   each hop i    τ = ts − ts', txRate = (tx − tx')·8/τ,
 *                 u_i = txRate/B_i + min(q, q')·line_rate/(B_i·W)
 *                 (' the previous record; W the BDP window at line rate)
 *   U             the largest u_i, with its τ (clamped to T, the base RTT):
 *                 U_ewma ← (U_ewma·(T − τ) + U·τ) / T
 *   k             = U_ewma/η (η = U_TARGET)
 *   rate          k ≥ 1 or stage ≥ maxStage:  R = R_c/k + W_AI, stage 0
 *                 otherwise:                  R = R_c + W_AI,  stage + 1
 *                 (W_AI as a rate: RATE_AI), clamped to [min, line rate]
 *   once per RTT  (ack_seq past the window's end): R_c ← R, the stage
 *                 kept, the window's end ← snd_nxt.  Between those ACKs,
 *                 with FAST_REACT, the rate follows R from R_c each ACK
 *                 (R_c and the stage unchanged): the fast reaction.
 *
 * The sending window follows the rate (cc.c: W·R/line_rate, HPCC's
 * VAR_WIN).  A hop whose record has not moved (τ = 0: the same packet's
 * records echoed twice) brings no news and is skipped.
 *
 * Units: time in ns, rates in bits per second, bytes; U and η with 20
 * fractional bits (η given in 1/1000).  Integer arithmetic only.
 */
#ifndef SOFTRNIC_RNIC_HPCC_CC_H
#define SOFTRNIC_RNIC_HPCC_CC_H

#include <stdbool.h>
#include <stdint.h>

/* One switch's INT record (what HPCC's IntHop carries; here at full
 * width: softrnic's simulator carries it beside the packet, not in it). */
#define HPCC_MAX_HOPS 5
struct hpcc_int_hop {
	uint64_t ts_ns;         /* when the packet left the egress port */
	uint64_t tx_bytes;      /* bytes that port had sent before it */
	uint64_t qlen_bytes;    /* bytes queued behind it at that port */
	uint64_t rate_bps;      /* the port's link rate */
};
struct hpcc_int {
	uint32_t nhop;
	struct hpcc_int_hop hop[HPCC_MAX_HOPS];
	/* HPCC-PINT (CC_MODE 10) instead of the records: the largest
	 * utilisation on the path in 1/2^20, as the fabric's one-field INT
	 * carried it (sim/pint.c encodes and decodes it); 0: none. */
	uint32_t pint_u;
};

struct hpcc_params {
	uint32_t eta;           /* U_TARGET, 1/1000 (950)                  */
	uint32_t max_stage;     /* MI_THRESH: additive steps before a
	                           multiplicative one (HPCC's default 5)   */
	uint32_t rate_ai;       /* Mb/s: W_AI as a rate (RATE_AI)          */
	uint32_t min_rate;      /* Mb/s floor (MIN_RATE)                   */
	bool fast_react;        /* FAST_REACT: react on every ACK          */
	uint64_t base_rtt;      /* ns: T, the EWMA's horizon (GLOBAL_T: the
	                           largest base RTT of the fabric)         */
	bool pint;              /* HPCC-PINT: U from pint_u, see below     */
};
void hpcc_params_default(struct hpcc_params *p);

struct hpcc_cc {
	const struct hpcc_params *p;
	uint64_t line_rate;     /* bits/s */
	uint64_t window;        /* W: bytes in flight at the line rate */
	uint64_t rate;          /* bits/s: the sending rate now */
	uint64_t cur_rate;      /* R_c: the reference rate, once per RTT */
	uint32_t inc_stage;
	uint32_t u;             /* U_ewma, 1/2^20 */
	bool started;
	uint64_t update_end;    /* the window's end (snd_nxt at the last update) */
	struct hpcc_int last;   /* the previous records */
	/* counters */
	uint64_t acks, updates, fast_reacts, cuts;
};

/* HPCC-PINT (Ben Basat et al., "PINT: Probabilistic In-band Network
 * Telemetry", SIGCOMM 2020; HPCC's simulator, rdma-hw.cc, CC_MODE 10):
 * the switches keep U per egress port themselves and a data packet
 * carries only the largest along its path, log-encoded in one field; the
 * receiver echoes it, and the sender samples a share of the ACKs
 * (PINT_PROB: the simulator drops the others before they get here).  Per
 * sampled ACK with pint_u = U:
 *
 *   first ACK     the window's end ← snd_nxt, nothing else
 *   k             = U/η (no EWMA at the sender: the switch's U is one)
 *   rate          k ≥ 1 or stage ≥ maxStage:  R = R_c/k + W_AI, stage 0
 *                 otherwise:                  R = R_c + W_AI,  stage + 1
 *   once per RTT  (ack_seq past the window's end) R_c ← R, stage kept,
 *                 the window's end ← snd_nxt; between those ACKs the
 *                 rate follows R from R_c on every sampled ACK, whatever
 *                 FAST_REACT says (as HPCC's HandleAckHpPint).
 */

/* window: W in bytes (0: line_rate × base_rtt). */
void hpcc_init(struct hpcc_cc *s, const struct hpcc_params *p, uint64_t line_rate, uint64_t window);
/* An ACK echoing `t`; the peer has acknowledged ack_seq packets, the QP
 * has sent snd_nxt. */
void hpcc_on_ack(struct hpcc_cc *s, const struct hpcc_int *t, uint64_t ack_seq, uint64_t snd_nxt);
static inline uint64_t hpcc_rate(const struct hpcc_cc *s)
{
	return s->rate;
}

#endif
