/*
 * crc32.c — CRC-32 (zlib/gzip, reflected polynomial 0xEDB88320) folded with
 * 256-bit carry-less multiplies (VPCLMULQDQ on AVX2 registers).
 *
 * What for: the RoCEv2 ICRC (icrc.c) is this CRC over every packet, sent
 * and received; at 4 KiB MTU it was ~14% of a sending process's CPU with
 * libdeflate_crc32, whose x86 code (1.14, like ISA-L 2.30) folds 128 bits
 * at a time with PCLMULQDQ and stays near 9 GB/s here.  CPUs with
 * VPCLMULQDQ but no AVX-512 (AMD Zen 3) can multiply two 128-bit lanes per
 * instruction; this file does that.  Here a 256-bit VPCLMULQDQ issues every
 * 2 cycles, like the 128-bit one, so twice libdeflate is the ceiling.
 *
 * How: the input is a polynomial over GF(2); every 32-byte block is kept in
 * one of NACC 256-bit accumulators, and each round multiplies an accumulator
 * by x^(NACC*256) mod P (one constant per 64-bit half, see fold_const) and
 * adds the next block, so the accumulators stay congruent to the input
 * while the multiplies of different accumulators overlap.  At the end they
 * are folded into one, its two lanes into one 128-bit value, the remaining
 * 16-byte block and the last partial block are folded in, and the 128-bit
 * remainder is reduced to 32 bits (two folds, then Barrett reduction).
 * The constants are x^k mod P computed once, bit by bit, at first use.
 *
 * Trade-off: inputs shorter than CRC_WIDE_MIN bytes go to libdeflate (its
 * setup is cheaper than ours for them), as does everything on CPUs without
 * the instructions or when the environment says SOFTRNIC_CRC=generic (read
 * once).  The wide function is compiled for avx2+vpclmulqdq by a target
 * attribute only, so the rest of the library keeps the baseline ISA.
 *
 * Measured (EPYC Zen 3, 2 shared cores, bench/icrc_bench, 4 KiB buffers,
 * medians of interleaved rounds): 16-19 GB/s against libdeflate's 8.5-9.7,
 * 1.9-2.0x in every run; the ICRC of a 4 KiB packet went from 8-9 GB/s to
 * 13.5-19.5 GB/s.
 *
 * Where the CPU also has AVX-512 (Zen 4 and 5, Intel since Ice Lake), a
 * second function folds 512-bit registers, four 128-bit lanes a multiply
 * (crc32_vpclmul512).  On EPYC Zen 5 (bench/icrc_bench, interleaved): a
 * 4 KiB buffer 38-46 GB/s against 22-23 with 256 bits, the ICRC of a 4 KiB
 * packet 29 GB/s against 17.5.  There, over UDP, the CRC had been a
 * quarter of ib_write_bw's receiving process and a seventh of its sender.
 * SOFTRNIC_CRC=vpclmulqdq-256 keeps the 256-bit function (for tests and
 * A/B runs).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <immintrin.h>
#include <libdeflate.h>

#include "wire/crc32.h"

/* Below this many bytes libdeflate is as fast (measured: equal at 32-56
 * bytes, the wide code 1.2x at 64, 1.3x at 128, 1.4x at 256).  Must be at
 * least 32 for the wide function. */
#ifndef CRC_WIDE_MIN
#define CRC_WIDE_MIN 64
#endif
/* 256-bit accumulators folded in parallel.  On Zen 3 a 256-bit VPCLMULQDQ
 * has a latency of 4 cycles and issues every 2 (measured), so one fold is
 * 4 cycles of multiplier and 6 of latency: 2 accumulators would do, 4
 * leave a margin (2, 3, 4, 6, 8 measured the same). */
#ifndef CRC_NACC
#define CRC_NACC 4
#endif

typedef uint32_t (*crc_fn)(uint32_t crc, const void *buf, size_t len);

/* ---- constants -------------------------------------------------------- */

/* Representation.  A 16-byte block loaded little-endian into a 128-bit
 * register has bit i (bit i%8 of byte i/8) as the coefficient of x^(127-i):
 * the reflected CRC takes bit 0 of the first byte as the highest power.
 * So the low 64-bit half H holds the high-order terms and the block is
 * H*x^64 + L.  A 64-bit multiplier operand likewise has bit j as the
 * coefficient of x^(63-j), and the 128-bit carry-less product of such
 * operands a and b then stands for a*b*x (its bit 127, the x^0 term, is
 * always 0): the fold constants carry one power of x less to make up for
 * it. */

#define CRC_POLY 0x104C11DB7ull       /* P, normal order, x^32 = bit 32 */

static uint32_t bitrev32(uint32_t v)
{
	uint32_t r = 0;
	for (int i = 0; i < 32; i++)
		r |= ((v >> i) & 1u) << (31 - i);
	return r;
}

/* x^n mod P, normal order (bit i = coefficient of x^i). */
static uint32_t xpow_mod(unsigned n)
{
	uint64_t v = 1;
	while (n--) {
		v <<= 1;
		if (v >> 32)
			v ^= CRC_POLY;
	}
	return (uint32_t)v;
}

/* A remainder (degree < 32) as a 64-bit multiplier operand: the
 * coefficient of x^i goes to bit 63-i. */
static uint64_t operand(uint32_t rem)
{
	return (uint64_t)bitrev32(rem) << 32;
}

/* A 33-bit polynomial p (normal order) times x^31 as an operand: the
 * coefficient of x^i goes to bit 32-i. */
static uint64_t operand33(uint64_t p)
{
	uint64_t r = 0;
	for (int i = 0; i <= 32; i++)
		r |= ((p >> i) & 1u) << (32 - i);
	return r;
}

static struct {
	/* fold[j] moves a 128-bit block forward by j*256 bits (j = 1..NACC):
	 * {x^(D+63) mod P for H, x^(D-1) mod P for L}, D = j*256. */
	uint64_t fold[CRC_NACC + 1][2];
	uint64_t fold128[2];          /* the same for D = 128 */
	/* fold512[j]: the same for D = j*512 (j = 1..NACC), for the 512-bit
	 * loop's accumulators. */
	uint64_t fold512[CRC_NACC + 1][2];
	uint64_t x95;                 /* 128 -> 96 bits: H*x^96 */
	uint64_t x63;                 /* 96 -> 64 bits: top 32 bits * x^64 */
	uint64_t mu;                  /* floor(x^64 / P) * x^31 */
	uint64_t poly;                /* P * x^31 */
} K;

static void fold_const(uint64_t k[2], unsigned d)
{
	k[0] = operand(xpow_mod(d + 63));
	k[1] = operand(xpow_mod(d - 1));
}

static void init_constants(void)
{
	for (unsigned j = 1; j <= CRC_NACC; j++)
		fold_const(K.fold[j], 256 * j);
	fold_const(K.fold128, 128);
	for (unsigned j = 1; j <= CRC_NACC; j++)
		fold_const(K.fold512[j], 512 * j);
	K.x95 = operand(xpow_mod(95));
	K.x63 = operand(xpow_mod(63));
	/* mu = floor(x^64 / P) by long division: the first step (x^64 by
	 * x^32 * P) is done by hand so the remainder fits 64 bits. */
	uint64_t q = 1ull << 32, rem = (CRC_POLY ^ (1ull << 32)) << 32;
	for (int i = 63; i >= 32; i--) {
		if ((rem >> i) & 1u) {
			q |= 1ull << (i - 32);
			rem ^= CRC_POLY << (i - 32);
		}
	}
	K.mu = operand33(q);
	K.poly = operand33(CRC_POLY);
}

/* ---- the wide function ------------------------------------------------ */

#define CRC_TARGET __attribute__((target("avx2,pclmul,vpclmulqdq")))

/* a*x^D + d for each 128-bit lane of a, k = fold constants for D. */
CRC_TARGET static inline __m256i fold256(__m256i a, __m256i k, __m256i d)
{
	__m256i hi = _mm256_clmulepi64_epi128(a, k, 0x00);
	__m256i lo = _mm256_clmulepi64_epi128(a, k, 0x11);
	return _mm256_xor_si256(_mm256_xor_si256(hi, d), lo);
}

CRC_TARGET static inline __m128i fold128(__m128i a, __m128i k, __m128i d)
{
	__m128i hi = _mm_clmulepi64_si128(a, k, 0x00);
	__m128i lo = _mm_clmulepi64_si128(a, k, 0x11);
	return _mm_xor_si128(_mm_xor_si128(hi, d), lo);
}

CRC_TARGET static inline __m256i kload256(const uint64_t k[2])
{
	return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)k));
}

/* pshufb controls for the last partial block (see below): bytes 0..15,
 * then 16 zeroing bytes, then 0..15 again. */
static const uint8_t shuf_tbl[48] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
};

CRC_TARGET static uint32_t crc_finish(__m256i a, const uint8_t *p, size_t len);

/* len >= 32.  Reads exactly buf[0 .. len-1]. */
CRC_TARGET static uint32_t crc32_vpclmul(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	/* The running CRC is added to the first 32 bits of the input. */
	__m256i a = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p),
				     _mm256_castsi128_si256(_mm_cvtsi32_si128((int)~crc)));

	if (len >= CRC_NACC * 32) {
		__m256i acc[CRC_NACC];
		acc[0] = a;
		for (int i = 1; i < CRC_NACC; i++)
			acc[i] = _mm256_loadu_si256((const __m256i *)(p + 32 * i));
		p += CRC_NACC * 32;
		len -= CRC_NACC * 32;
		const __m256i k = kload256(K.fold[CRC_NACC]);
		while (len >= CRC_NACC * 32) {
			for (int i = 0; i < CRC_NACC; i++)
				acc[i] = fold256(acc[i], k, _mm256_loadu_si256((const __m256i *)(p + 32 * i)));
			p += CRC_NACC * 32;
			len -= CRC_NACC * 32;
		}
		/* Accumulator i is (NACC-1-i)*256 bits before the last one. */
		a = acc[CRC_NACC - 1];
		for (int i = 0; i < CRC_NACC - 1; i++)
			a = fold256(acc[i], kload256(K.fold[CRC_NACC - 1 - i]), a);
	} else {
		p += 32;
		len -= 32;
	}
	return crc_finish(a, p, len);
}

/* The end of either wide function: a is congruent to the input before p,
 * and len bytes remain at p.  Folds them in and reduces to the CRC. */
CRC_TARGET static uint32_t crc_finish(__m256i a, const uint8_t *p, size_t len)
{
	const __m256i k1 = kload256(K.fold[1]);
	while (len >= 32) {
		a = fold256(a, k1, _mm256_loadu_si256((const __m256i *)p));
		p += 32;
		len -= 32;
	}

	const __m128i k128 = _mm_loadu_si128((const __m128i *)K.fold128);
	__m128i x = fold128(_mm256_castsi256_si128(a), k128, _mm256_extracti128_si256(a, 1));
	if (len >= 16) {
		x = fold128(x, k128, _mm_loadu_si128((const __m128i *)p));
		p += 16;
		len -= 16;
	}
	if (len) {
		/* r = len bytes remain.  The input so far is congruent to the
		 * 16 bytes of x; x followed by the r bytes splits into x's first
		 * r bytes (moved to the end of an otherwise zero block, which
		 * is then folded by 128) and the last 16 bytes: x's last 16-r
		 * bytes then the tail.  The tail is read as the last 16 bytes of
		 * the buffer, whose first 16-r bytes (already counted) are
		 * replaced by x's. */
		const __m128i last = _mm_loadu_si128((const __m128i *)(p + len - 16));
		const __m128i c_rest = _mm_loadu_si128((const __m128i *)(shuf_tbl + len));
		const __m128i c_head = _mm_loadu_si128((const __m128i *)(shuf_tbl + 16 + len));
		__m128i head = _mm_shuffle_epi8(x, c_head);
		__m128i rest = _mm_blendv_epi8(_mm_shuffle_epi8(x, c_rest), last, c_rest);
		x = fold128(head, k128, rest);
	}

	/* x*x^32 mod P.  x = H*x^64 + L: H*(x^96 mod P) + L*x^32 has at most
	 * 96 bits, in bits 32..127; L moves there by a 32-bit shift, which also
	 * brings H's last 32 bits into bits 0..31: those are cleared. */
	__m128i s = _mm_xor_si128(_mm_clmulepi64_si128(x, _mm_cvtsi64_si128((long long)K.x95), 0x00),
				  _mm_blend_epi32(_mm_srli_si128(x, 4), _mm_setzero_si128(), 0x1));
	/* Its top 32 terms (bits 32..63) times x^64 mod P: now 64 bits, in
	 * bits 64..127. */
	__m128i t = _mm_clmulepi64_si128(s, _mm_cvtsi64_si128((long long)K.x63), 0x00);
	__m128i u = _mm_xor_si128(t, s);
	/* Barrett: u = U1*x^32 + U0 (U1 in bits 64..95); q = floor(U1*mu /
	 * x^32) lands in bits 0..63; q*P's low 32 terms land in bits 64..95,
	 * where U0 lands after moving down by 32 bits. */
	const __m128i barrett = _mm_set_epi64x((long long)K.poly, (long long)K.mu);
	__m128i q = _mm_clmulepi64_si128(_mm_slli_epi64(u, 32), barrett, 0x01);
	__m128i qp = _mm_clmulepi64_si128(q, barrett, 0x10);
	uint32_t r = (uint32_t)_mm_extract_epi32(_mm_xor_si128(qp, _mm_srli_si128(u, 4)), 2);
	return ~r;
}

/* ---- the 512-bit function -------------------------------------------- */

/* On CPUs with AVX-512 and VPCLMULQDQ (Intel Ice Lake on, AMD Zen 4 on) a
 * multiply covers four 128-bit lanes.  The same folding as above with
 * NACC 512-bit accumulators, 64*NACC bytes a round; at the end they are
 * folded into one, its two 256-bit halves into one, and crc_finish does
 * the rest.  Measured on Zen 5 (bench/icrc_bench, 4 KiB buffers): see
 * the top of this file. */

#define CRC512_TARGET __attribute__((target("avx512f,avx512vl,avx2,pclmul,vpclmulqdq")))
/* Below this many bytes the 256-bit function does as well (one round of
 * the 512-bit loop needs 64*NACC bytes). */
#define CRC512_MIN (CRC_NACC * 64)

/* a*x^D + d for each 128-bit lane of a (one three-way XOR). */
CRC512_TARGET static inline __m512i fold512(__m512i a, __m512i k, __m512i d)
{
	__m512i hi = _mm512_clmulepi64_epi128(a, k, 0x00);
	__m512i lo = _mm512_clmulepi64_epi128(a, k, 0x11);
	return _mm512_ternarylogic_epi64(hi, lo, d, 0x96);
}

CRC512_TARGET static inline __m512i kload512(const uint64_t k[2])
{
	return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)k));
}

/* len >= 32.  Reads exactly buf[0 .. len-1]. */
CRC512_TARGET static uint32_t crc32_vpclmul512(uint32_t crc, const void *buf, size_t len)
{
	if (len < CRC512_MIN)
		return crc32_vpclmul(crc, buf, len);
	const uint8_t *p = buf;
	__m512i acc[CRC_NACC];
	acc[0] = _mm512_xor_si512(_mm512_loadu_si512((const void *)p),
				  _mm512_castsi128_si512(_mm_cvtsi32_si128((int)~crc)));
	for (int i = 1; i < CRC_NACC; i++)
		acc[i] = _mm512_loadu_si512((const void *)(p + 64 * i));
	p += CRC_NACC * 64;
	len -= CRC_NACC * 64;
	const __m512i k = kload512(K.fold512[CRC_NACC]);
	while (len >= CRC_NACC * 64) {
		for (int i = 0; i < CRC_NACC; i++)
			acc[i] = fold512(acc[i], k, _mm512_loadu_si512((const void *)(p + 64 * i)));
		p += CRC_NACC * 64;
		len -= CRC_NACC * 64;
	}
	/* Accumulator i is (NACC-1-i)*512 bits before the last one. */
	__m512i z = acc[CRC_NACC - 1];
	for (int i = 0; i < CRC_NACC - 1; i++)
		z = fold512(acc[i], kload512(K.fold512[CRC_NACC - 1 - i]), z);
	/* The low half is 256 bits before the high half. */
	__m256i a = fold256(_mm512_castsi512_si256(z), kload256(K.fold[1]), _mm512_extracti64x4_epi64(z, 1));
	return crc_finish(a, p, len);
}

/* ---- dispatch --------------------------------------------------------- */

static _Atomic(crc_fn) wide_fn;
static pthread_once_t wide_once = PTHREAD_ONCE_INIT;

static int cpu_has_vpclmul(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") &&
	       __builtin_cpu_supports("vpclmulqdq");
}

static int cpu_has_vpclmul512(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && cpu_has_vpclmul();
}

static void resolve(void)
{
	const char *env = getenv("SOFTRNIC_CRC");
	bool generic = env && strcmp(env, "generic") == 0;
	bool only256 = env && strcmp(env, "vpclmulqdq-256") == 0;
	crc_fn f = libdeflate_crc32;
	if (!generic && cpu_has_vpclmul()) {
		init_constants();
		f = !only256 && cpu_has_vpclmul512() ? crc32_vpclmul512 : crc32_vpclmul;
	}
	atomic_store_explicit(&wide_fn, f, memory_order_release);
}

static crc_fn get_wide(void)
{
	crc_fn f = atomic_load_explicit(&wide_fn, memory_order_acquire);
	if (__builtin_expect(f == NULL, 0)) {
		pthread_once(&wide_once, resolve);
		f = atomic_load_explicit(&wide_fn, memory_order_acquire);
	}
	return f;
}

uint32_t wire_crc32(uint32_t crc, const void *buf, size_t len)
{
	if (len < CRC_WIDE_MIN)
		return libdeflate_crc32(crc, buf, len);
	return get_wide()(crc, buf, len);
}

const char *wire_crc32_impl(void)
{
	crc_fn f = get_wide();
	return f == crc32_vpclmul512 ? "vpclmulqdq-512" : f == crc32_vpclmul ? "vpclmulqdq-256" : "generic";
}
