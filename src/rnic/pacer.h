/*
 * pacer.h — a per-QP packet pacer: packets leave no faster than a rate,
 * with a bounded burst.  Serves DCQCN (the rate it computes becomes real
 * on the wire) and ibv_modify_qp_rate_limit / IBV_QP_RATE_LIMIT.
 *
 * A token bucket written as GCRA (the "virtual scheduling" form of ATM's
 * generic cell rate algorithm): `tat` is when the line would be free if
 * every packet so far had left exactly at the rate.  A packet may leave
 * at `now` if tat ≤ now + burst (the bucket holds `burst` worth of
 * tokens); sending moves tat on by the packet's time at the rate.  One
 * number of state and no per-tick refill, so it works on the rnic's
 * caller-supplied clock, and a late wake-up (the runtime sleeps in
 * ppoll, tens of µs of slack) is made up by the burst instead of lost.
 *
 * The rate may change between packets (DCQCN does, every few µs).  Each
 * packet is charged at the rate in force when it leaves, and what is still
 * owed when the rate changes is rescaled to the new rate (pacer_set_rate):
 * a packet charged 33 ms at 1 Mb/s must not hold the QP for 33 ms after
 * the rate is back at 20 Gb/s.
 */
#ifndef SOFTRNIC_RNIC_PACER_H
#define SOFTRNIC_RNIC_PACER_H

#include <stdbool.h>
#include <stdint.h>

struct pacer {
	uint64_t tat;           /* theoretical arrival time, ns */
	uint64_t rate;          /* bits/s the debt (tat − now) was charged at */
};

/* Nanoseconds `bytes` take at `rate_bps` (rounded up; at least 1). */
static inline uint64_t pacer_cost(uint64_t bytes, uint64_t rate_bps)
{
	/* bytes·8·10^9 / rate without overflow for any packet size and
	 * rates down to 1 b/s: 64 KiB · 8e9 < 2^63. */
	uint64_t ns = (bytes * 8000000000ull + rate_bps - 1) / rate_bps;

	return ns ? ns : 1;
}

/* The rate is `rate_bps` from `now` on: rescale the debt. */
static inline void pacer_set_rate(struct pacer *p, uint64_t now, uint64_t rate_bps)
{
	if (p->rate == rate_bps)
		return;
	if (p->tat > now && p->rate) {
		/* debt · old / new, in 128 bits: debts reach seconds at
		 * low rates, rates reach 10^11. */
		unsigned __int128 debt = (unsigned __int128)(p->tat - now) * p->rate / rate_bps;
		p->tat = now + (uint64_t)debt;
	}
	p->rate = rate_bps;
}

/* May a packet leave at `now`, given a burst allowance of burst_ns? */
static inline bool pacer_ready(const struct pacer *p, uint64_t now, uint64_t burst_ns)
{
	return p->tat <= now + burst_ns;
}

/* When the next packet may leave. */
static inline uint64_t pacer_ready_at(const struct pacer *p, uint64_t burst_ns)
{
	return p->tat > burst_ns ? p->tat - burst_ns : 0;
}

/* A packet of `bytes` left at `now` at rate `rate_bps`. */
static inline void pacer_sent(struct pacer *p, uint64_t now, uint64_t bytes, uint64_t rate_bps)
{
	uint64_t from;

	pacer_set_rate(p, now, rate_bps);
	from = p->tat > now ? p->tat : now;
	p->tat = from + pacer_cost(bytes, rate_bps);
}

#endif
