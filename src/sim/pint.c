/*
 * pint.c — HPCC-PINT's per-port utilisation and its one-field encoding
 * (the rules and their source are in pint.h).
 */
#include "sim/pint.h"

#include <math.h>

#define PINT_SCALE 512.0        /* HPCC's Pint::max_concurrent */

void sim_pint_init(struct sim_pint *p, double log_base, uint64_t T_ns)
{
	p->log_base = log_base > 1 ? log_base : 1.01;
	p->log_factor = 1 / log(p->log_base);
	p->T_ns = T_ns ? (double)T_ns : 1;
}

double sim_pint_port_u(const struct sim_pint *p, struct sim_pint_port *s, uint64_t now, uint64_t qlen,
		       uint64_t rate_bps)
{
	double T = p->T_ns, dt = (double)(now - s->last_ts), B = (double)rate_bps / 8e9;   /* bytes/ns */
	double u = 0;

	if (dt > T)
		dt = T;
	if (B <= 0)
		return s->u;
	if (qlen >= 256)
		u += dt * (double)qlen / (B * T * T);
	if (s->last_bytes)
		u += (double)s->last_bytes / (B * T);
	if (T > dt && s->u > 0)
		u += (T - dt) * s->u / T;
	s->u = u;
	return u;
}

void sim_pint_port_sent(struct sim_pint_port *s, uint64_t now, uint32_t bytes)
{
	s->last_ts = now;
	s->last_bytes = bytes;
}

uint16_t sim_pint_encode(const struct sim_pint *p, double u, double uniform01)
{
	double scaled = ceil(u * PINT_SCALE);
	if (scaled < 1)
		scaled = 1;
	if (scaled > 1e12)
		scaled = 1e12;
	double power = log(scaled) * p->log_factor;
	double hi_p = ceil(power), lo_p = floor(power);
	double hi = pow(p->log_base, hi_p), lo = pow(p->log_base, lo_p);
	if (hi_p == lo_p)
		hi *= p->log_base;
	double f = uniform01 < (scaled - lo) / (hi - lo) ? hi_p : lo_p;
	return f > 65535 ? 65535 : (uint16_t)f;
}

uint32_t sim_pint_decode_q20(const struct sim_pint *p, uint16_t field)
{
	double u = pow(p->log_base, field) / PINT_SCALE * 1048576.0;
	return u < 1 ? 1 : u > 4294967295.0 ? UINT32_MAX : (uint32_t)u;
}
