/*
 * cm_test.h — failure reporting for the tests in tests/cm: named cases,
 * CHECK (record and go on) and REQUIRE (record and return), each failure
 * printed with the case name (which carries the seed to replay).
 *
 * Every test binary has its own main(), runs its cases, and exits non-zero
 * if any failed.
 */
#ifndef SOFTRNIC_TESTS_CM_TEST_H
#define SOFTRNIC_TESTS_CM_TEST_H

#include <stdarg.h>
#include <stdio.h>

static char ct_case[160];
static int ct_failures, ct_case_failures, ct_cases;

static inline void ct_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void ct_begin(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ct_case, sizeof(ct_case), fmt, ap);
	va_end(ap);
	ct_case_failures = 0;
	ct_cases++;
}

static inline void ct_end(void)
{
	printf("%s %s\n", ct_case_failures ? "FAIL" : "ok  ", ct_case);
	fflush(stdout);
}

static inline int ct_exit(void)
{
	printf("%d cases, %d failures\n", ct_cases, ct_failures);
	return ct_failures ? 1 : 0;
}

#define CT_FAIL(...)                                                           \
	do {                                                                   \
		ct_failures++;                                                 \
		ct_case_failures++;                                            \
		if (ct_case_failures <= 20) {                                  \
			printf("FAIL [%s] %s:%d: ", ct_case, __FILE__, __LINE__); \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
		}                                                              \
	} while (0)

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			CT_FAIL("check failed: %s", #cond);                    \
	} while (0)
#define REQUIRE(cond, ret)                                                     \
	do {                                                                   \
		if (!(cond)) {                                                 \
			CT_FAIL("requirement failed: %s", #cond);              \
			return ret;                                            \
		}                                                              \
	} while (0)
#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		unsigned long long ct_a_ = (unsigned long long)(a);            \
		unsigned long long ct_b_ = (unsigned long long)(b);            \
		if (ct_a_ != ct_b_)                                            \
			CT_FAIL("%s == %s: got %llu (0x%llx), expected %llu (0x%llx)", #a, #b, ct_a_, ct_a_, ct_b_, ct_b_); \
	} while (0)

#endif
