/*
 * dctcp.h — a DCTCP-style ECN reaction for RDMA QPs, as the HPCC
 * simulator (alibaba-edu/High-Precision-Congestion-Control, rdma-hw.cc,
 * CC_MODE 8) runs it: DCTCP's α (Alizadeh et al., SIGCOMM 2010) over a
 * sending rate, with the in-flight window following the rate.
 *
 * A pure state machine like dcqcn.c: no clock, no I/O.  Inputs are ECN
 * echoes (dctcp_on_mark) and acknowledgements (dctcp_on_ack), both with
 * the QP's send position; the output is the rate (dctcp_rate).  cc.c
 * turns the rate into the pacer's rate and into a window of
 * cc_window · rate / line_rate bytes in flight (HPCC's VAR_WIN), so a
 * cut of the rate by α/2 is a cut of the window by α/2.
 *
 * Sequences count packets: snd_nxt is how many packets the QP has sent
 * (new ones, not resends), ack_seq how many the peer has acknowledged.
 *
 *   echo      marks ← marks + 1; when not in CWR: rate ← rate·(1 − α/2)
 *             (never below min_rate), CWR until ack_seq passes the
 *             snd_nxt of the cut (one cut per window of data)
 *   ack       when ack_seq passes the end of the previous window (one
 *             "batch" of data per round trip):
 *                 α ← (1 − g)·α + g·min(1, marks / batch), marks ← 0,
 *                 the next window ends at snd_nxt, batch = packets in
 *                 flight + 1 (the first window only starts the count);
 *             CWR ends when ack_seq passes its snd_nxt;
 *             outside CWR, once per window: rate ← rate + rate_ai
 *             (additive increase), never above the line rate.
 *
 * Units: rates in bits per second, α and g in 1/1024 at the interface
 * and 1/2^20 inside (as dcqcn.h), integer arithmetic only.
 */
#ifndef SOFTRNIC_RNIC_DCTCP_H
#define SOFTRNIC_RNIC_DCTCP_H

#include <stdbool.h>
#include <stdint.h>

struct dctcp_params {
	uint32_t g;             /* EWMA gain of α, 1/1024 (DCTCP: 1/16 = 64) */
	uint32_t rate_ai;       /* Mb/s added per window without marks
	                           (HPCC's DCTCP_RATE_AI, 1000)              */
	uint32_t min_rate;      /* Mb/s floor (HPCC's MIN_RATE)              */
	uint32_t initial_alpha; /* 1/1024: α before the first update (1024)  */
};
void dctcp_params_default(struct dctcp_params *p);

struct dctcp_cc {
	const struct dctcp_params *p;
	uint64_t line_rate;     /* bits/s */
	uint64_t rate;          /* bits/s */
	uint32_t alpha;         /* 1/2^20 */
	bool started;           /* the first window has been opened */
	uint64_t window_end;    /* ack_seq past this closes a window */
	uint64_t batch;         /* packets the current window holds */
	uint64_t marks;         /* echoes in the current window */
	bool cwr;               /* cut, waiting for ack_seq > cwr_end */
	uint64_t cwr_end;
	/* counters */
	uint64_t echoes, cuts, increases;
};

void dctcp_init(struct dctcp_cc *s, const struct dctcp_params *p, uint64_t line_rate);
/* An ECN echo (a CNP: softrnic's receiver sends one per CE packet for a
 * DCTCP QP) arrived while the QP had sent snd_nxt packets. */
void dctcp_on_mark(struct dctcp_cc *s, uint64_t snd_nxt);
/* The peer acknowledged ack_seq packets; the QP has sent snd_nxt. */
void dctcp_on_ack(struct dctcp_cc *s, uint64_t ack_seq, uint64_t snd_nxt);
static inline uint64_t dctcp_rate(const struct dctcp_cc *s)
{
	return s->rate;
}
/* α in 1/1024. */
static inline uint32_t dctcp_alpha(const struct dctcp_cc *s)
{
	return s->alpha >> 10;
}

#endif
