/*
 * hpcc_cc.c — HPCC's sender (the algorithm and its sources are in
 * hpcc_cc.h; this file is its arithmetic).
 */
#include "rnic/hpcc_cc.h"

#include <string.h>

#define MBPS 1000000ull
#define ONE_Q20 (1ull << 20)

void hpcc_params_default(struct hpcc_params *p)
{
	memset(p, 0, sizeof(*p));
	/* The HPCC paper's and simulator's defaults: η = 95 %, maxStage 5,
	 * fast reaction on; W_AI and the floor as HPCC's run.py sets them
	 * at 100 Gb/s (RATE_AI 40 Mb/s, MIN_RATE 1000 Mb/s); T = 10 us. */
	p->eta = 950;
	p->max_stage = 5;
	p->rate_ai = 40;
	p->min_rate = 1000;
	p->fast_react = true;
	p->base_rtt = 10000;
}

void hpcc_init(struct hpcc_cc *s, const struct hpcc_params *p, uint64_t line_rate, uint64_t window)
{
	memset(s, 0, sizeof(*s));
	s->p = p;
	s->line_rate = line_rate;
	s->window = window ? window : line_rate / 8 * p->base_rtt / 1000000000u;
	if (!s->window)
		s->window = 1;
	s->rate = s->cur_rate = line_rate;
}

static uint64_t clamp(const struct hpcc_cc *s, uint64_t rate)
{
	uint64_t lo = (uint64_t)s->p->min_rate * MBPS;

	if (lo > s->line_rate)
		lo = s->line_rate;
	return rate < lo ? lo : rate > s->line_rate ? s->line_rate : rate;
}

/* u of one hop in 1/2^20, and its τ; false when the record has not moved. */
static bool hop_util(const struct hpcc_cc *s, const struct hpcc_int_hop *h, const struct hpcc_int_hop *prev,
		     uint64_t *u, uint64_t *tau)
{
	if (h->ts_ns <= prev->ts_ns || !h->rate_bps)
		return false;
	*tau = h->ts_ns - prev->ts_ns;
	uint64_t bytes = h->tx_bytes > prev->tx_bytes ? h->tx_bytes - prev->tx_bytes : 0;
	uint64_t q = h->qlen_bytes < prev->qlen_bytes ? h->qlen_bytes : prev->qlen_bytes;
	/* txRate/B = bytes·8·1e9/(τ·B) */
	unsigned __int128 tx = (unsigned __int128)bytes * 8000000000ull * ONE_Q20 / ((unsigned __int128)*tau * h->rate_bps);
	/* q·line_rate/(B·W) */
	unsigned __int128 qu = (unsigned __int128)q * s->line_rate * ONE_Q20 / ((unsigned __int128)h->rate_bps * s->window);
	unsigned __int128 sum = tx + qu;
	*u = sum > UINT32_MAX ? UINT32_MAX : (uint64_t)sum;
	return true;
}

/* The rate law on a utilisation u_q20 (1/2^20): R from R_c and the stage;
 * R_c and the stage move only on a full update. */
static void apply_utilisation(struct hpcc_cc *s, uint64_t u_q20, bool fast)
{
	const struct hpcc_params *p = s->p;
	/* k = U/η, in 1/2^20 */
	uint64_t eta = (uint64_t)p->eta * ONE_Q20 / 1000u;
	uint64_t k = eta ? u_q20 * ONE_Q20 / eta : ONE_Q20;
	uint64_t rate;
	uint32_t stage;

	if (k >= ONE_Q20 || s->inc_stage >= p->max_stage) {
		/* R_c/k + W_AI; k = 0 (an idle path) only with maxStage 0:
		 * the line rate. */
		rate = k ? (uint64_t)((unsigned __int128)s->cur_rate * ONE_Q20 / k) : s->line_rate;
		rate += (uint64_t)p->rate_ai * MBPS;
		stage = 0;
	} else {
		rate = s->cur_rate + (uint64_t)p->rate_ai * MBPS;
		stage = s->inc_stage + 1;
	}
	rate = clamp(s, rate);
	if (rate < s->rate)
		s->cuts++;
	s->rate = rate;
	if (!fast) {
		s->cur_rate = rate;
		s->inc_stage = stage;
	}
}

static void update(struct hpcc_cc *s, const struct hpcc_int *t, bool fast)
{
	const struct hpcc_params *p = s->p;
	uint64_t U = 0, dt = 0, T = p->base_rtt ? p->base_rtt : 1;
	bool any = false;

	for (uint32_t i = 0; i < t->nhop && i < HPCC_MAX_HOPS; i++) {
		uint64_t u, tau;
		if (i < s->last.nhop && hop_util(s, &t->hop[i], &s->last.hop[i], &u, &tau)) {
			any = true;
			if (u > U) {
				U = u;
				dt = tau;
			}
		}
		s->last.hop[i] = t->hop[i];
	}
	s->last.nhop = t->nhop;
	if (any) {
		if (dt > T)
			dt = T;
		s->u = (uint32_t)(((uint64_t)s->u * (T - dt) + U * dt) / T);
		apply_utilisation(s, s->u, fast);
	}
	if (fast)
		s->fast_reacts++;
	else
		s->updates++;
}

/* HPCC-PINT's sampled ACK (hpcc_cc.h). */
static void on_pint_ack(struct hpcc_cc *s, const struct hpcc_int *t, uint64_t ack_seq, uint64_t snd_nxt)
{
	if (!t->pint_u)
		return;
	if (!s->started) {
		s->started = true;
		s->update_end = snd_nxt;
		return;
	}
	bool full = ack_seq > s->update_end;
	s->u = t->pint_u;
	apply_utilisation(s, t->pint_u, !full);
	if (full) {
		s->updates++;
		if (snd_nxt > s->update_end)
			s->update_end = snd_nxt;
	} else {
		s->fast_reacts++;
	}
}

void hpcc_on_ack(struct hpcc_cc *s, const struct hpcc_int *t, uint64_t ack_seq, uint64_t snd_nxt)
{
	s->acks++;
	if (s->p->pint) {
		on_pint_ack(s, t, ack_seq, snd_nxt);
		return;
	}
	if (!t->nhop)
		return;
	if (!s->started) {
		/* The first ACK: the records to compare the next ones with. */
		s->started = true;
		s->update_end = snd_nxt;
		s->last = *t;
		return;
	}
	if (ack_seq > s->update_end) {
		update(s, t, false);
		if (snd_nxt > s->update_end)
			s->update_end = snd_nxt;
	} else if (s->p->fast_react) {
		update(s, t, true);
	}
	/* Without fast reaction the records in between are not kept: the
	 * next full update compares with the last one used, as HPCC's. */
}
