/*
 * check.h — the one way every C test of softrnic reports what it finds.
 *
 *   CHECK(cond [, fmt, ...])     a failed condition is printed with its
 *                                place (file:line), the condition and the
 *                                optional message, counted, and the test
 *                                goes on to find the next one;
 *   CHECK_EQ(a, b [, fmt, ...])  the same for two integers, printing both;
 *   REQUIRE(cond [, fmt, ...])   a precondition: printed and counted as
 *                                CHECK, then the process ends (check_exit);
 *   REQUIRE_RET(cond, ret [, fmt, ...])  the same, but it returns `ret`
 *                                from the calling function instead, for
 *                                tests whose other cases still run;
 *   REQUIRE_GOTO(cond, label [, fmt, ...])  or jumps to a cleanup label;
 *   FAIL(fmt, ...)               a failure found otherwise: the message;
 *   EXPECT_ERR(call, want)       call must fail as a system call does: -1
 *                                with errno `want`;
 *   EXPECT_OK(call)              call must return 0.
 *
 * A message, when given, begins with a string literal.  Failures go to
 * stderr as "FILE:LINE: CHECK failed: COND[: MESSAGE][ [CASE]][ (seed N)]".
 *
 * Cases (check_begin / check_end) name what is being run, so each failure
 * says which case it belongs to.  A seeded test calls check_seed(seed): every
 * failure line then ends with "(seed N)", and check_exit says how to replay
 * ("replay with SEED=N", or the test's own line set with check_replay).
 * check_exit(name) gives main's exit status: 0, or 1 after a summary.
 *
 * The state lives in weak definitions, so that a test made of several
 * files (a test and its helper library) shares one count without a
 * library of its own.
 */
#ifndef SOFTRNIC_TESTS_CHECK_H
#define SOFTRNIC_TESTS_CHECK_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Failures in this process, and in the current case; cases begun. */
__attribute__((weak)) int check_failures;
__attribute__((weak)) int check_case_failures;
__attribute__((weak)) int check_cases;
/* The current case ("seed 7, dcqcn"); empty outside cases. */
__attribute__((weak)) char check_case[160];
/* Printed before every failure when set ("child0" in a forked helper). */
__attribute__((weak)) const char *check_who;
/* Count failures without printing them (a run repeated to bisect). */
__attribute__((weak)) bool check_quiet;
/* Add errno's value, as it was when the condition failed, to each failure. */
__attribute__((weak)) bool check_with_errno;
/* The seed of a seeded test (check_seed), the first seed that failed,
 * the variable that replays a seed, and the test's own replay line. */
__attribute__((weak)) bool check_seeded, check_seed_failed;
__attribute__((weak)) unsigned long long check_seed_value, check_failed_seed;
__attribute__((weak)) const char *check_seed_env;
__attribute__((weak)) char check_replay_line[256];

/* At most this many failures of one case are printed: the later ones are
 * usually echoes of the first. */
#define CHECK_PRINT_PER_CASE 20

static inline void check_seed(uint64_t seed)
{
	check_seeded = true;
	check_seed_value = (unsigned long long)seed;
}

/* The line check_exit prints to replay a failure, instead of "replay with
 * SEED=N PROGRAM" (SEED: check_seed_env, when the test reads another). */
static inline void check_replay(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void check_replay(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(check_replay_line, sizeof(check_replay_line), fmt, ap);
	va_end(ap);
}

static inline void check_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void check_begin(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(check_case, sizeof(check_case), fmt, ap);
	va_end(ap);
	check_case_failures = 0;
	check_cases++;
}

/* Ends the case: prints "ok   CASE" (when `say_ok`) or "FAIL CASE (N failed
 * checks)"; returns 1 if it failed. */
static inline int check_end_say(bool say_ok)
{
	int failed = check_case_failures != 0;
	if (failed)
		printf("FAIL %s (%d failed checks)\n", check_case, check_case_failures);
	else if (say_ok)
		printf("ok   %s\n", check_case);
	fflush(stdout);
	check_case[0] = 0;
	check_case_failures = 0;
	return failed;
}
static inline int check_end(void)
{
	return check_end_say(false);
}

/* printf into a rotating static buffer: ", MESSAGE" (CHECK_EQ's message),
 * or "" for the format " " of a check without one. */
static inline const char *check_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline const char *check_fmt(const char *fmt, ...)
{
	static char bufs[4][256];
	static unsigned next;
	char *b = bufs[next++ % 4];
	if (!fmt[1]) {
		b[0] = 0;
		return b;
	}
	b[0] = ',';
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b + 1, sizeof(bufs[0]) - 1, fmt, ap);
	va_end(ap);
	return b;
}

/* Records one failure; `detail` is printf'd after the condition.  The
 * format always starts with a space (the macros add it), so that a check
 * without a message has a format that is not empty. */
static inline void check_fail(const char *file, int line_no, const char *kind, const char *cond, int err,
			      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static inline void check_fail(const char *file, int line_no, const char *kind, const char *cond, int err,
			      const char *fmt, ...)
{
	/* Threads of a test may fail at once: atomic counts, one write per line. */
	__atomic_add_fetch(&check_failures, 1, __ATOMIC_RELAXED);
	if (check_seeded && !check_seed_failed && !check_quiet) {
		check_seed_failed = true;
		check_failed_seed = check_seed_value;
	}
	int in_case = __atomic_add_fetch(&check_case_failures, 1, __ATOMIC_RELAXED);
	if (check_quiet || (check_case[0] && in_case > CHECK_PRINT_PER_CASE))
		return;
	char msg[512] = "", line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	size_t n = 0;
#define CHECK_ADD_(...) (n += (size_t)snprintf(line + n, n < sizeof(line) ? sizeof(line) - n : 0, __VA_ARGS__))
	CHECK_ADD_("%s%s%s:%d: ", check_who ? check_who : "", check_who ? ": " : "", file, line_no);
	if (cond[0])
		CHECK_ADD_("%s failed: %s%s%s", kind, cond, msg[1] ? ":" : "", msg[1] ? msg : "");
	else
		CHECK_ADD_("%s", msg + 1);
	if (check_with_errno)
		CHECK_ADD_(" (errno %d %s)", err, strerror(err));
	if (check_case[0])
		CHECK_ADD_(" [%s]", check_case);
	if (check_seeded)
		CHECK_ADD_(" (seed %llu)", check_seed_value);
#undef CHECK_ADD_
	fflush(stdout);
	fprintf(stderr, "%.*s\n", (int)(n < sizeof(line) ? n : sizeof(line) - 1), line);
}

/* 0, or 1 after "NAME: N failures" and the replay line on stderr. */
static inline int check_exit(const char *name)
{
	fflush(stdout);
	if (!check_failures)
		return 0;
	fprintf(stderr, "%s: %d failures\n", name, check_failures);
	if (check_replay_line[0])
		fprintf(stderr, "%s: replay with %s\n", name, check_replay_line);
	else if (check_seed_failed)
		fprintf(stderr, "%s: replay with %s=%llu %s\n", name, check_seed_env ? check_seed_env : "SEED",
			check_failed_seed, program_invocation_short_name);
	return 1;
}

#define CHECK(cond, ...)                                                                         \
	do {                                                                                     \
		if (!(cond))                                                                     \
			check_fail(__FILE__, __LINE__, "CHECK", #cond, errno, " " __VA_ARGS__);  \
	} while (0)

/* A failure found by other means than one condition: the message alone. */
#define FAIL(...) check_fail(__FILE__, __LINE__, "FAIL", "", errno, " " __VA_ARGS__)

#define CHECK_EQ(a, b, ...)                                                                      \
	do {                                                                                     \
		unsigned long long check_a_ = (unsigned long long)(a);                           \
		unsigned long long check_b_ = (unsigned long long)(b);                           \
		if (check_a_ != check_b_)                                                        \
			check_fail(__FILE__, __LINE__, "CHECK", #a " == " #b, errno,              \
				   " got %llu (0x%llx), expected %llu (0x%llx)%s", check_a_,      \
				   check_a_, check_b_, check_b_, check_fmt(" " __VA_ARGS__));     \
	} while (0)

#define REQUIRE(cond, ...)                                                                       \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			check_fail(__FILE__, __LINE__, "REQUIRE", #cond, errno, " " __VA_ARGS__); \
			check_exit(program_invocation_short_name);                               \
			exit(1);                                                                 \
		}                                                                                \
	} while (0)

#define REQUIRE_RET(cond, ret, ...)                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			check_fail(__FILE__, __LINE__, "REQUIRE", #cond, errno, " " __VA_ARGS__); \
			return ret;                                                              \
		}                                                                                \
	} while (0)

#define REQUIRE_GOTO(cond, label, ...)                                                           \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			check_fail(__FILE__, __LINE__, "REQUIRE", #cond, errno, " " __VA_ARGS__); \
			goto label;                                                              \
		}                                                                                \
	} while (0)

/* call (returning an integer) must fail as a system call does: -1 with
 * errno want.  Says "ok" or "FAIL" and the call on stdout. */
#define EXPECT_ERR(call, want)                                                                   \
	do {                                                                                     \
		errno = 0;                                                                       \
		long rc_ = (long)(call);                                                         \
		int e_ = errno;                                                                  \
		if (rc_ != -1 || e_ != (want)) {                                                 \
			printf("FAIL %-60s rc %ld errno %s, want -1 %s\n", #call, rc_,           \
			       strerror(e_), strerror(want));                                    \
			check_failures++;                                                        \
		} else {                                                                         \
			printf("ok   %-60s %s\n", #call, strerror(want));                        \
		}                                                                                \
	} while (0)

/* call must return 0; says "FAIL", the call and errno on stdout if not. */
#define EXPECT_OK(call)                                                                          \
	do {                                                                                     \
		int rc_ = (call);                                                                \
		if (rc_) {                                                                       \
			printf("FAIL %-60s rc %d errno %s, want 0\n", #call, rc_, strerror(errno)); \
			check_failures++;                                                        \
		}                                                                                \
	} while (0)

#endif
