/*
 * test_crc32.c — wire_crc32 (src/wire/crc32.c) against libdeflate_crc32
 * and a bit-at-a-time reference:
 *   - every length 0..5000 at every start alignment 0..63, from 0 and from
 *     a random CRC, each buffer allocated to end exactly where the data
 *     ends (and, under ASan, poisoned before it) so an over-read is caught;
 *   - chained calls over pieces split at random points;
 *   - a 1 MiB buffer (and 1 MiB + 13 bytes, misaligned);
 *   - first use from several threads at once;
 *   - the same again in child processes, with SOFTRNIC_CRC=vpclmulqdq-256
 *     (on a CPU with AVX-512 the 256-bit code is then the one tested) and
 *     with SOFTRNIC_CRC=generic.
 * Stops at the first mismatch, printing the case.
 *
 * usage: test_crc32            (runs the child itself)
 *        test_crc32 --child    (one mode only: the environment decides)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libdeflate.h>

#include "wire/crc32.h"

#include "../check.h"

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static unsigned long checked;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = rnd();
		memcpy(p + i, &v, n - i < 8 ? n - i : 8);
	}
}

/* wire_crc32's result must be the reference's; a mismatch ends the test
 * (later cases would only repeat it), naming the case's shape. */
#define REQUIRE_CRC(what, len, align, crc_in, got, want)                                          \
	REQUIRE((got) == (want), "(%s): len %zu, alignment %zu, initial crc 0x%08x: wire_crc32 0x%08x, " \
		"expected 0x%08x [impl %s, after %lu good cases]", (what), (size_t)(len), (size_t)(align), \
		(uint32_t)(crc_in), (uint32_t)(got), (uint32_t)(want), wire_crc32_impl(), checked)

static void check(const char *what, const uint8_t *p, size_t len, uint32_t crc_in)
{
	uint32_t got = wire_crc32(crc_in, p, len);
	uint32_t want = libdeflate_crc32(crc_in, p, len);
	REQUIRE_CRC(what, len, (uintptr_t)p % 64, crc_in, got, want);
	checked++;
}

/* Bit-at-a-time reflected CRC-32, independent of libdeflate. */
static uint32_t crc32_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

/* Every length 0..max_len at every start alignment 0..63. */
static void all_lengths(size_t max_len, size_t align_step)
{
	for (size_t align = 0; align < 64; align += align_step) {
		for (size_t len = 0; len <= max_len; len++) {
			uint8_t *base;
			REQUIRE(posix_memalign((void **)&base, 64, align + len + 1) == 0, "out of memory");
			uint8_t *p = base + align;
			fill(p, len);
			/* The allocation is one byte longer so len 0 has an
			 * address; poison it and the bytes before p. */
			POISON(base, align);
			POISON(p + len, 1);
			check("all lengths, crc 0", p, len, 0);
			check("all lengths, random crc", p, len, (uint32_t)rnd());
			UNPOISON(base, align + len + 1);
			free(base);
		}
	}
}

/* Random pieces of a buffer, chained. */
static void chained(unsigned rounds)
{
	enum { MAX = 20000 };
	uint8_t *buf = malloc(MAX);
	REQUIRE(buf);
	for (unsigned r = 0; r < rounds; r++) {
		size_t len = (size_t)(rnd() % MAX);
		size_t start = len ? (size_t)(rnd() % 64) % (MAX - len + 1) : 0;
		fill(buf + start, len);
		uint32_t crc_in = (r & 1) ? (uint32_t)rnd() : 0;
		uint32_t want = libdeflate_crc32(crc_in, buf + start, len);
		unsigned pieces = 1 + (unsigned)(rnd() % 6);
		uint32_t crc = crc_in;
		size_t off = 0;
		for (unsigned i = 0; i < pieces; i++) {
			size_t left = len - off;
			size_t n = i == pieces - 1 ? left : left ? (size_t)(rnd() % (left + 1)) : 0;
			/* favour pieces near the wide threshold and short tails */
			if (i != pieces - 1 && (rnd() & 3) == 0 && left > 0)
				n = (size_t)(rnd() % (left < 300 ? left + 1 : 300));
			crc = wire_crc32(crc, buf + start + off, n);
			off += n;
		}
		REQUIRE_CRC("chained pieces", len, start % 64, crc_in, crc, want);
		checked++;
	}
	free(buf);
}

static void large(void)
{
	size_t n = (1u << 20) + 64;
	uint8_t *buf = malloc(n);
	REQUIRE(buf);
	fill(buf, n);
	check("1 MiB", buf, 1u << 20, 0);
	check("1 MiB, random crc", buf, 1u << 20, (uint32_t)rnd());
	check("1 MiB + 13, misaligned", buf + 7, (1u << 20) + 13, 0);
	uint32_t ref = crc32_bitwise(0, buf, 1u << 20);
	uint32_t got = wire_crc32(0, buf, 1u << 20);
	REQUIRE_CRC("1 MiB vs bitwise", 1u << 20, 0, 0, got, ref);
	checked++;
	free(buf);
}

static void known_answers(void)
{
	static const char digits[] = "123456789";
	uint32_t got = wire_crc32(0, digits, 9);
	REQUIRE_CRC("\"123456789\"", 9, 0, 0, got, 0xcbf43926u);
	checked++;
	/* Long inputs against the bitwise reference, not only libdeflate. */
	uint8_t buf[4096 + 37];
	fill(buf, sizeof(buf));
	static const size_t lens[] = { 128, 255, 256, 257, 1000, 4096, 4096 + 37 };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint32_t ref = crc32_bitwise(0x12345678u, buf, lens[i]);
		got = wire_crc32(0x12345678u, buf, lens[i]);
		REQUIRE_CRC("bitwise reference", lens[i], (uintptr_t)buf % 64, 0x12345678u, got, ref);
		checked++;
	}
}

/* First use from several threads at once. */
static uint8_t thread_buf[4096];
struct thread_arg {
	uint32_t want, got;
	int bad;
};

static void *thread_main(void *arg)
{
	struct thread_arg *a = arg;
	for (int i = 0; i < 100 && !a->bad; i++) {
		a->got = wire_crc32(0, thread_buf, sizeof(thread_buf));
		a->bad = a->got != a->want;
	}
	return NULL;
}

static void threads_first_use(void)
{
	fill(thread_buf, sizeof(thread_buf));
	struct thread_arg arg[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		arg[i].want = libdeflate_crc32(0, thread_buf, sizeof(thread_buf));
		arg[i].bad = 0;
		REQUIRE(pthread_create(&t[i], NULL, thread_main, &arg[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		REQUIRE_CRC("threads, first use", sizeof(thread_buf), (uintptr_t)thread_buf % 64, 0, arg[i].got,
			     arg[i].want);
		checked += 100;
	}
}

/* All checks, in the implementation the environment selects. */
static void run_all(const char *mode)
{
	threads_first_use();
	known_answers();
	all_lengths(5000, 1);
	chained(20000);
	large();
	printf("test_crc32 [%s, impl %s]: %lu cases checked, all equal to libdeflate_crc32\n", mode,
	       wire_crc32_impl(), checked);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--child") == 0) {
		const char *env = getenv("SOFTRNIC_CRC");
		run_all(env ? env : "auto");
		/* generic is always that; the 256-bit code where the CPU has it. */
		if (env && strcmp(env, "generic") == 0 && strcmp(wire_crc32_impl(), "generic") != 0) {
			fprintf(stderr, "test_crc32: SOFTRNIC_CRC=generic but impl is %s\n", wire_crc32_impl());
			return 1;
		}
		if (env && strcmp(env, "vpclmulqdq-256") == 0 && strcmp(wire_crc32_impl(), "vpclmulqdq-512") == 0) {
			fprintf(stderr, "test_crc32: SOFTRNIC_CRC=vpclmulqdq-256 but impl is %s\n",
				wire_crc32_impl());
			return 1;
		}
		return 0;
	}

	/* This process: whatever the CPU offers.  On a CPU with the
	 * instructions, the widest code must be what gets tested. */
	if (getenv("SOFTRNIC_CRC") == NULL) {
		__builtin_cpu_init();
		int wide = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq") &&
			   __builtin_cpu_supports("pclmul");
		int wide512 = wide && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
		const char *want = wide512 ? "vpclmulqdq-512" : wide ? "vpclmulqdq-256" : "generic";
		run_all("auto");
		if (strcmp(wire_crc32_impl(), want) != 0) {
			fprintf(stderr, "test_crc32: this CPU calls for %s but impl is %s\n", want,
				wire_crc32_impl());
			return 1;
		}
		if (!wide)
			printf("test_crc32: note: this CPU lacks VPCLMULQDQ/AVX2, the wide code was not tested\n");
		else if (!wide512)
			printf("test_crc32: note: this CPU lacks AVX-512, the 512-bit code was not tested\n");
	} else {
		run_all(getenv("SOFTRNIC_CRC"));
	}

	/* Children with the overrides (the first use reads the environment). */
	static const char *const modes[] = { "vpclmulqdq-256", "generic" };
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			setenv("SOFTRNIC_CRC", modes[m], 1);
			execl("/proc/self/exe", argv[0], "--child", (char *)NULL);
			perror("exec");
			_exit(127);
		}
		int status;
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "test_crc32: the SOFTRNIC_CRC=%s run failed\n", modes[m]);
			return 1;
		}
	}
	return 0;
}
