/*
 * timely.c — TIMELY's rate update (the algorithm and its sources are in
 * timely.h; this file is its arithmetic).
 */
#include "rnic/timely.h"

#include <string.h>

#define MBPS 1000000ull

void timely_params_default(struct timely_params *p)
{
	memset(p, 0, sizeof(*p));
	/* The TIMELY paper's values, which are also the HPCC simulator's
	 * defaults (TimelyTLow/THigh/MinRtt/Alpha/Beta). */
	p->t_low = 50000;
	p->t_high = 500000;
	p->min_rtt = 20000;
	p->alpha = 875;
	p->beta = 800;
	p->rate_ai = 10;
	p->rate_hai = 50;       /* 5δ: the paper's HAI multiplies δ by N */
	p->hai_after = 5;
	p->min_rate = 10;
}

void timely_init(struct timely_cc *s, const struct timely_params *p, uint64_t line_rate)
{
	memset(s, 0, sizeof(*s));
	s->p = p;
	s->line_rate = line_rate;
	s->rate = line_rate;
}

static uint64_t clamp(const struct timely_cc *s, uint64_t rate)
{
	uint64_t lo = (uint64_t)s->p->min_rate * MBPS;

	if (lo > s->line_rate)
		lo = s->line_rate;
	return rate < lo ? lo : rate > s->line_rate ? s->line_rate : rate;
}

/* rate · num / den, in 128 bits. */
static uint64_t scale(uint64_t rate, uint64_t num, uint64_t den)
{
	return (uint64_t)((unsigned __int128)rate * num / den);
}

void timely_on_rtt(struct timely_cc *s, uint64_t rtt, uint64_t ack_seq, uint64_t snd_nxt)
{
	const struct timely_params *p = s->p;

	s->samples++;
	if (s->started && ack_seq <= s->update_end)
		return;         /* not a round trip of new data yet */
	if (s->started) {
		int64_t new_diff = (int64_t)rtt - (int64_t)s->prev_rtt;
		int64_t diff = ((int64_t)(1000 - p->alpha) * s->diff + (int64_t)p->alpha * new_diff) / 1000;
		bool inc;

		s->diff = diff;
		s->updates++;
		if (rtt < p->t_low) {
			inc = true;
		} else if (rtt > p->t_high) {
			/* 1 − β(1 − T_high/rtt) = (1000·rtt − β·(rtt − T_high)) / (1000·rtt) */
			s->rate = scale(s->rate, 1000 * rtt - (uint64_t)p->beta * (rtt - p->t_high), 1000 * rtt);
			inc = false;
		} else if (diff <= 0) {
			inc = true;
		} else {
			/* 1 − β·diff/min_rtt, at least 0 */
			uint64_t num = 1000ull * p->min_rtt, cut = (uint64_t)p->beta * (uint64_t)diff;
			s->rate = scale(s->rate, num > cut ? num - cut : 0, num);
			inc = false;
		}
		if (inc) {
			s->rate += (uint64_t)(s->inc_stage < p->hai_after ? p->rate_ai : p->rate_hai) * MBPS;
			s->inc_stage++;
			s->increases++;
		} else {
			s->inc_stage = 0;
			s->cuts++;
		}
		s->rate = clamp(s, s->rate);
	}
	s->started = true;
	s->update_end = snd_nxt;
	s->prev_rtt = rtt;
}
