/*
 * timely.h — TIMELY, RTT-gradient rate control (Mittal et al., "TIMELY:
 * RTT-based Congestion Control for the Datacenter", SIGCOMM 2015,
 * Algorithm 1), in the form the HPCC simulator runs it (alibaba-edu/
 * High-Precision-Congestion-Control, rdma-hw.cc, CC_MODE 7): one rate
 * update per round trip of data, from the RTT sample of the ACK that
 * completes it.
 *
 * A pure state machine like dcqcn.c: the input is an RTT sample with the
 * QP's acknowledged and sent positions (timely_on_rtt); the output is the
 * rate (timely_rate).  cc.c feeds it the completer's samples (the time
 * from a packet sent with AckReq to the ACK that answers it).
 *
 *   per sample, once ack_seq has passed the snd_nxt of the last update
 *   (the first sample only records its RTT):
 *     diff      ← (1 − α)·diff + α·(rtt − prev_rtt)     (EWMA, α = 0.875)
 *     gradient  =  diff / min_rtt
 *     rtt < T_low            increase
 *     rtt > T_high           rate ← rate·(1 − β·(1 − T_high/rtt))
 *     gradient ≤ 0           increase
 *     otherwise              rate ← rate·max(0, 1 − β·gradient)
 *     increase: rate ← rate + δ, or + δ_HAI once `hai_after` increases
 *     in a row have happened (the paper's HAI after N = 5 completions);
 *     any decrease restarts that count.  Rates are clamped to
 *     [min_rate, line rate].  prev_rtt ← rtt.
 *
 * Units: times in ns, rates in bits per second, α and β in 1/1000;
 * integer arithmetic only, so sequences replay exactly.
 */
#ifndef SOFTRNIC_RNIC_TIMELY_H
#define SOFTRNIC_RNIC_TIMELY_H

#include <stdbool.h>
#include <stdint.h>

struct timely_params {
	uint32_t t_low;         /* ns: below, always increase (50 µs)      */
	uint32_t t_high;        /* ns: above, always decrease (500 µs)     */
	uint32_t min_rtt;       /* ns: normalises the gradient (20 µs)     */
	uint32_t alpha;         /* 1/1000: EWMA weight of a new RTT diff (875) */
	uint32_t beta;          /* 1/1000: multiplicative decrease (800)   */
	uint32_t rate_ai;       /* Mb/s: δ, additive step (paper 10)        */
	uint32_t rate_hai;      /* Mb/s: hyper-active step (HPCC's RATE_HAI) */
	uint32_t hai_after;     /* increases in a row before HAI (5)        */
	uint32_t min_rate;      /* Mb/s floor                               */
};
void timely_params_default(struct timely_params *p);

struct timely_cc {
	const struct timely_params *p;
	uint64_t line_rate;     /* bits/s */
	uint64_t rate;          /* bits/s */
	bool started;
	uint64_t update_end;    /* ack_seq past this allows the next update */
	uint64_t prev_rtt;      /* ns */
	int64_t diff;           /* ns, the EWMA of RTT differences */
	uint32_t inc_stage;     /* increases in a row */
	/* counters */
	uint64_t samples, updates, cuts, increases;
};

void timely_init(struct timely_cc *s, const struct timely_params *p, uint64_t line_rate);
/* An RTT sample of rtt_ns; the peer has acknowledged ack_seq packets and
 * the QP has sent snd_nxt. */
void timely_on_rtt(struct timely_cc *s, uint64_t rtt_ns, uint64_t ack_seq, uint64_t snd_nxt);
static inline uint64_t timely_rate(const struct timely_cc *s)
{
	return s->rate;
}

#endif
