/*
 * dctcp.c — the DCTCP-style reaction point (the algorithm and its
 * source are in dctcp.h; this file is its arithmetic).
 */
#include "rnic/dctcp.h"

#include <string.h>

#define MBPS 1000000ull
#define ONE_Q20 (1u << 20)

void dctcp_params_default(struct dctcp_params *p)
{
	memset(p, 0, sizeof(*p));
	p->g = 64;              /* 1/16, the DCTCP paper's g */
	p->rate_ai = 1000;      /* HPCC's DctcpRateAI default */
	p->min_rate = 100;      /* HPCC's config.txt MIN_RATE */
	p->initial_alpha = 1024;
}

void dctcp_init(struct dctcp_cc *s, const struct dctcp_params *p, uint64_t line_rate)
{
	memset(s, 0, sizeof(*s));
	s->p = p;
	s->line_rate = line_rate;
	s->rate = line_rate;
	s->alpha = p->initial_alpha << 10;
}

static uint64_t floor_rate(const struct dctcp_cc *s)
{
	uint64_t lo = (uint64_t)s->p->min_rate * MBPS;

	return lo < s->line_rate ? lo : s->line_rate;
}

void dctcp_on_mark(struct dctcp_cc *s, uint64_t snd_nxt)
{
	s->echoes++;
	s->marks++;
	if (s->cwr)
		return;
	/* rate·(1 − α/2) */
	uint64_t dec = (uint64_t)(((unsigned __int128)s->rate * s->alpha) >> 21);
	s->rate -= dec;
	if (s->rate < floor_rate(s))
		s->rate = floor_rate(s);
	s->cwr = true;
	s->cwr_end = snd_nxt;
	s->cuts++;
}

void dctcp_on_ack(struct dctcp_cc *s, uint64_t ack_seq, uint64_t snd_nxt)
{
	bool new_window = false;

	if (!s->started || ack_seq > s->window_end) {
		new_window = true;
		if (s->started) {
			/* frac = min(1, marks / batch), in 1/2^20 */
			uint64_t frac = s->marks >= s->batch ? ONE_Q20 : (s->marks << 20) / s->batch;
			s->alpha = (uint32_t)(((uint64_t)s->alpha * (1024u - s->p->g) + frac * s->p->g) / 1024u);
			s->marks = 0;
			s->batch = snd_nxt - ack_seq + 1;
		} else {
			s->batch = snd_nxt + 1;
		}
		s->started = true;
		s->window_end = snd_nxt;
	}
	if (s->cwr && ack_seq > s->cwr_end)
		s->cwr = false;
	if (!s->cwr && new_window && s->rate < s->line_rate) {
		s->rate += (uint64_t)s->p->rate_ai * MBPS;
		if (s->rate > s->line_rate)
			s->rate = s->line_rate;
		s->increases++;
	}
}
