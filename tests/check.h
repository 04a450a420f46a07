/*
 * check.h — the CHECK of the plain C tests (tests/kv, tests/sim): a
 * failed condition is said with its place and counted, and the test goes
 * on to find the next; check_exit gives main's exit status.  EXPECT_ERR,
 * for the tests of calls that fail as a system call does (tests/rdmacm),
 * counts the same failures.
 */
#ifndef SOFTRNIC_TESTS_CHECK_H
#define SOFTRNIC_TESTS_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                              \
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
			failures++;                                                              \
		} else {                                                                         \
			printf("ok   %-60s %s\n", #call, strerror(want));                        \
		}                                                                                \
	} while (0)

/* 0, or 1 after "NAME: N failures" on stderr. */
static inline int check_exit(const char *name)
{
	if (!failures)
		return 0;
	fprintf(stderr, "%s: %d failures\n", name, failures);
	return 1;
}

#endif
