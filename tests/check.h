/*
 * check.h — the CHECK of the plain C tests (tests/kv, tests/sim): a
 * failed condition is said with its place and counted, and the test goes
 * on to find the next; check_exit gives main's exit status.
 */
#ifndef SOFTRNIC_TESTS_CHECK_H
#define SOFTRNIC_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                              \
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
