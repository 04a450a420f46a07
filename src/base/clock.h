/*
 * clock.h — nanoseconds on a clock_gettime clock, for the layers that read
 * the time themselves (the key-value store's server, client and
 * benchmark; the deterministic layers take `now` from their caller).
 */
#ifndef SOFTRNIC_BASE_CLOCK_H
#define SOFTRNIC_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
