/*
 * prng.h — the one seeded pseudo-random generator of softrnic's
 * deterministic layers: splitmix64 to spread a seed (and, alone, where a
 * single 64-bit state is enough: rnic QPNs and key generations), and
 * xoshiro256** to draw (ports/pair's faults, the CM's comm and transaction
 * IDs, the tests' links).  Header-only and pure: the state lives in the
 * caller's object, so one seed replays one sequence.
 */
#ifndef SOFTRNIC_BASE_PRNG_H
#define SOFTRNIC_BASE_PRNG_H

#include <stdint.h>

static inline uint64_t prng_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* xoshiro256** state s[4], filled from `seed` by splitmix64. */
static inline void prng_seed(uint64_t s[4], uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		s[i] = prng_splitmix64(&seed);
}

static inline uint64_t prng_rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* The next xoshiro256** draw. */
static inline uint64_t prng_next(uint64_t s[4])
{
	uint64_t result = prng_rotl64(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = prng_rotl64(s[3], 45);
	return result;
}

#endif
