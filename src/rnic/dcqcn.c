/*
 * dcqcn.c — the DCQCN reaction point (the algorithm is described in
 * dcqcn.h; this file is its arithmetic and timers).
 *
 * Two timers only, both deadlines the caller polls: the pending cut at
 * the end of a rate-reduce monitor period, and the rate-increase timer.
 * α needs no timer: "α ← (1 − g)·α for every α period without a CNP" is
 * applied lazily, counting the whole periods since the last CNP whenever
 * α is read (alpha_catch_up).  ConnectX's α period is 1 µs, and a 1 µs
 * timer would keep the progress thread awake for nothing.
 */
#include "rnic/dcqcn.h"

#include <errno.h>
#include <string.h>

#define MBPS 1000000ull

/* ---- parameters ---------------------------------------------------------- */

void dcqcn_params_default(struct dcqcn_params *p, enum dcqcn_profile profile)
{
	memset(p, 0, sizeof(*p));
	/* NVIDIA ConnectX-4 and later, factory values of the roce_rp and
	 * roce_np parameters (docs/congestion.md cites the sources). */
	p->rpg_time_reset = 300;
	p->rpg_byte_reset = 32767;
	p->rpg_threshold = 1;
	p->rpg_ai_rate = 5;
	p->rpg_hai_rate = 50;
	p->rpg_min_rate = 1;
	p->rpg_max_rate = 0;
	p->rpg_gd = 11;
	p->rpg_min_dec_fac = 50;
	p->rate_to_set_on_first_cnp = 0;
	p->dce_tcp_g = 1019;
	p->dce_tcp_rtt = 1;
	p->initial_alpha_value = 1023;
	p->rate_reduce_monitor_period = 4;
	p->clamp_tgt_rate = 0;
	p->clamp_tgt_rate_after_time_inc = 1;
	p->min_time_between_cnps = 4;
	if (profile == DCQCN_PROFILE_PAPER) {
		/* The DCQCN paper's evaluation set, as its author's
		 * released simulator (bobzhuyb/ns3-rdma config.txt) and
		 * htsim's DCQCN carry it: timers of 55 µs, a 10 MB byte
		 * counter, F = 5, g = 1/256, R_AI 40 Mb/s, R_HAI 200 Mb/s;
		 * the NP sends at most one CNP per 50 µs per flow, and every
		 * CNP cuts (no monitor period). */
		p->rpg_time_reset = 55;
		p->rpg_byte_reset = 10000000;
		p->rpg_threshold = 5;
		p->rpg_ai_rate = 40;
		p->rpg_hai_rate = 200;
		p->dce_tcp_g = 1020;    /* g = 4/1024 */
		p->dce_tcp_rtt = 55;
		p->rpg_min_dec_fac = 50;
		p->rate_reduce_monitor_period = 0;
		p->clamp_tgt_rate = 1;
		p->min_time_between_cnps = 50;
	}
}

#define PARAM(field, unit, lo, hi) \
	{ #field, unit, offsetof(struct dcqcn_params, field), lo, hi }

const struct dcqcn_param_info dcqcn_param_table[] = {
	PARAM(rpg_time_reset, "us", 1, 100000000),
	PARAM(rpg_byte_reset, "bytes", 1, UINT32_MAX),
	PARAM(rpg_threshold, "stages", 0, 1000),
	PARAM(rpg_ai_rate, "Mb/s", 0, 1000000),
	PARAM(rpg_hai_rate, "Mb/s", 0, 1000000),
	PARAM(rpg_min_rate, "Mb/s", 1, 1000000),
	PARAM(rpg_max_rate, "Mb/s", 0, 1000000),
	PARAM(rpg_gd, "log2", 10, 30),
	PARAM(rpg_min_dec_fac, "%", 1, 100),
	PARAM(rate_to_set_on_first_cnp, "Mb/s", 0, 1000000),
	PARAM(dce_tcp_g, "1/1024", 0, 1024),
	PARAM(dce_tcp_rtt, "us", 1, 100000000),
	PARAM(initial_alpha_value, "1/1024", 0, 1024),
	PARAM(rate_reduce_monitor_period, "us", 0, 100000000),
	PARAM(clamp_tgt_rate, "bool", 0, 1),
	PARAM(clamp_tgt_rate_after_time_inc, "bool", 0, 1),
	PARAM(min_time_between_cnps, "us", 0, 100000000),
};
const size_t dcqcn_param_count = sizeof(dcqcn_param_table) / sizeof(dcqcn_param_table[0]);

static uint32_t *param_ptr(struct dcqcn_params *p, const struct dcqcn_param_info *info)
{
	return (uint32_t *)((char *)p + info->offset);
}

uint32_t dcqcn_param_get(const struct dcqcn_params *p, const struct dcqcn_param_info *info)
{
	return *(const uint32_t *)((const char *)p + info->offset);
}

int dcqcn_param_set(struct dcqcn_params *p, const char *name, uint64_t value)
{
	for (size_t i = 0; i < dcqcn_param_count; i++) {
		const struct dcqcn_param_info *info = &dcqcn_param_table[i];

		if (strcmp(info->name, name) != 0)
			continue;
		if (value < info->min || value > info->max)
			return ERANGE;
		*param_ptr(p, info) = (uint32_t)value;
		return 0;
	}
	return ENOENT;
}

/* ---- the reaction point -------------------------------------------------- */

static uint64_t us(uint32_t v)
{
	return (uint64_t)v * 1000u;
}

/* g in 1/1024.  ConnectX's dce_tcp_g is the weight α keeps, 1 − g: its
 * documentation gives α ← (G/1024)·α + (1 − G/1024) after a period with a
 * CNP and α ← (G/1024)·α after one without (NVIDIA community DOC-2790;
 * the mstflint text reads as if G were g itself, which with the factory
 * 1019 would make α jump to 1 and back to 0 every microsecond). */
static uint32_t gain(const struct dcqcn_params *p)
{
	return DCQCN_ALPHA_ONE - p->dce_tcp_g;
}

static uint64_t ceiling(const struct dcqcn_rp *rp)
{
	uint64_t max = (uint64_t)rp->p->rpg_max_rate * MBPS;

	return max && max < rp->line_rate ? max : rp->line_rate;
}

static uint64_t clamp_rate(const struct dcqcn_rp *rp, uint64_t rate)
{
	uint64_t lo = (uint64_t)rp->p->rpg_min_rate * MBPS, hi = ceiling(rp);

	if (lo > hi)
		lo = hi;
	return rate < lo ? lo : rate > hi ? hi : rate;
}

void dcqcn_init(struct dcqcn_rp *rp, const struct dcqcn_params *p, uint64_t line_rate)
{
	memset(rp, 0, sizeof(*rp));
	rp->p = p;
	rp->line_rate = line_rate;
	rp->rc = rp->rt = ceiling(rp);
	rp->alpha = p->initial_alpha_value << DCQCN_ALPHA_SHIFT;
	rp->cut_at = DCQCN_NO_DEADLINE;
	rp->timer_at = DCQCN_NO_DEADLINE;
}

/* α ← (1 − g)·α once for every whole α period since the last CNP.  Stops
 * early at 0 (at most a few thousand steps, for the smallest g). */
static void alpha_catch_up(struct dcqcn_rp *rp, uint64_t now)
{
	uint64_t period = us(rp->p->dce_tcp_rtt);
	uint64_t due;

	if (!rp->seen_cnp || now <= rp->alpha_anchor)
		return;
	due = (now - rp->alpha_anchor) / period;
	while (rp->alpha_decays < due && rp->alpha) {
		rp->alpha = (uint32_t)((uint64_t)rp->alpha * (DCQCN_ALPHA_ONE - gain(rp->p)) /
				       DCQCN_ALPHA_ONE);
		rp->alpha_decays++;
	}
	rp->alpha_decays = due;
}

uint32_t dcqcn_alpha(struct dcqcn_rp *rp, uint64_t now)
{
	alpha_catch_up(rp, now);
	return rp->alpha >> DCQCN_ALPHA_SHIFT;
}

/* The rate decrease of one CNP (or of the CNPs of one monitor period). */
static void cut(struct dcqcn_rp *rp, uint64_t now)
{
	const struct dcqcn_params *p = rp->p;
	bool first = !rp->congested;
	uint64_t rc = rp->rc, dec, floor;

	alpha_catch_up(rp, now);
	/* RT keeps the rate before the previous cut unless the rate grew
	 * since (ConnectX clamp_tgt_rate / _after_time_inc; the paper's
	 * Fig. 6 always sets RT ← RC, which clamp_tgt_rate = 1 gives). */
	if (first || p->clamp_tgt_rate || rp->byte_stage > 0 ||
	    (p->clamp_tgt_rate_after_time_inc && rp->time_stage > 0))
		rp->rt = rc;
	if (first && p->rate_to_set_on_first_cnp) {
		rc = (uint64_t)p->rate_to_set_on_first_cnp * MBPS;
	} else {
		/* RC·(1 − α/Gd) with Gd = 2^rpg_gd and α in 1/1024 (here
		 * 1/2^20): with rpg_gd 11 that is RC·(1 − α/2). */
		dec = (uint64_t)(((unsigned __int128)rc * rp->alpha) >> (p->rpg_gd + DCQCN_ALPHA_SHIFT));
		floor = rc / 100 * p->rpg_min_dec_fac;
		rc = rc - dec < floor ? floor : rc - dec;
	}
	rp->rc = clamp_rate(rp, rc);
	rp->rt = clamp_rate(rp, rp->rt);
	/* α ← (1 − g)·α + g: this cut's CNP is fresh feedback. */
	rp->alpha = (uint32_t)(((uint64_t)rp->alpha * (DCQCN_ALPHA_ONE - gain(p)) +
				(uint64_t)gain(p) * DCQCN_ALPHA_ONE_Q20) / DCQCN_ALPHA_ONE);
	rp->congested = true;
	rp->cut_pending = false;
	rp->cut_at = DCQCN_NO_DEADLINE;
	rp->last_cut = now;
	rp->time_stage = rp->byte_stage = 0;
	rp->bytes = 0;
	rp->timer_at = now + us(p->rpg_time_reset);
	rp->cuts++;
}

void dcqcn_on_cnp(struct dcqcn_rp *rp, uint64_t now)
{
	uint64_t period = us(rp->p->rate_reduce_monitor_period);

	dcqcn_advance(rp, now);
	rp->cnps++;
	if (!rp->seen_cnp) {
		/* The first CNP of the QP's life starts from
		 * initial_alpha_value; later ones from α as it decayed. */
		rp->seen_cnp = true;
		rp->alpha = rp->p->initial_alpha_value << DCQCN_ALPHA_SHIFT;
	} else {
		alpha_catch_up(rp, now);
	}
	rp->alpha_anchor = now;
	rp->alpha_decays = 0;
	if (!rp->congested || rp->last_cut + period <= now) {
		cut(rp, now);
	} else if (!rp->cut_pending) {
		rp->cut_pending = true;
		rp->cut_at = rp->last_cut + period;
	}
}

/* One increase event: the timer stage or the byte stage just grew. */
static void increase(struct dcqcn_rp *rp)
{
	const struct dcqcn_params *p = rp->p;
	uint32_t f = p->rpg_threshold;
	uint32_t hi = rp->time_stage > rp->byte_stage ? rp->time_stage : rp->byte_stage;
	uint32_t lo = rp->time_stage < rp->byte_stage ? rp->time_stage : rp->byte_stage;
	uint64_t top = ceiling(rp);

	if (hi <= f)
		;                                               /* fast recovery */
	else if (lo > f)
		rp->rt += (uint64_t)(lo - f) * p->rpg_hai_rate * MBPS;  /* hyper */
	else
		rp->rt += (uint64_t)p->rpg_ai_rate * MBPS;      /* additive */
	rp->rt = clamp_rate(rp, rp->rt);
	/* Round up, so RC reaches RT instead of stopping one short. */
	rp->rc = clamp_rate(rp, (rp->rt + rp->rc + 1) / 2);
	rp->increases++;
	if (rp->rc >= top && rp->rt >= top && !rp->cut_pending) {
		/* Recovered: back to the line rate, no timers. */
		rp->congested = false;
		rp->timer_at = DCQCN_NO_DEADLINE;
		rp->bytes = 0;
	}
}

void dcqcn_advance(struct dcqcn_rp *rp, uint64_t now)
{
	/* Events in time order: a pending cut and timer events may both
	 * be due after a long sleep. */
	for (;;) {
		if (rp->cut_pending && rp->cut_at <= now && rp->cut_at <= rp->timer_at) {
			cut(rp, rp->cut_at);
		} else if (rp->congested && rp->timer_at <= now) {
			uint64_t at = rp->timer_at;

			rp->time_stage++;
			rp->timer_at = at + us(rp->p->rpg_time_reset);
			increase(rp);
		} else {
			break;
		}
	}
}

void dcqcn_on_sent(struct dcqcn_rp *rp, uint64_t bytes, uint64_t now)
{
	if (!rp->congested)
		return;
	dcqcn_advance(rp, now);
	rp->bytes += bytes;
	while (rp->congested && rp->bytes >= rp->p->rpg_byte_reset) {
		rp->bytes -= rp->p->rpg_byte_reset;
		rp->byte_stage++;
		increase(rp);
	}
}

uint64_t dcqcn_next_deadline(const struct dcqcn_rp *rp)
{
	uint64_t d = rp->congested ? rp->timer_at : DCQCN_NO_DEADLINE;

	if (rp->cut_pending && rp->cut_at < d)
		d = rp->cut_at;
	return d;
}
