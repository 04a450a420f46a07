/*
 * env_config.h — every SOFTRNIC_* environment variable softrnic knows, in
 * one table (env_config.c): its kind and accepted values, and who reads
 * it.  srt_env_check() holds the whole environment against the table
 * when a device is opened (runtime/device.c), so a value the library
 * would not understand — SOFTRNIC_LOCAL=banana, SOFTRNIC_CC=bogus, a
 * mistyped SOFTRNIC_CC_RPG_TIMERESET — fails the open with its name
 * instead of being ignored or half-used.
 *
 * The parse rules are the readers' own (each entry names its reader),
 * which keep reading the variables themselves: the table decides only
 * whether a value is one of theirs.
 *
 * Names in a family the library owns (SOFTRNIC_CC_*, SOFTRNIC_LOCAL_*,
 * SOFTRNIC_PCAP_*, SOFTRNIC_TIMELY_*, SOFTRNIC_CM_*, SOFTRNIC_RSPRELOAD_*,
 * SOFTRNIC_SIM_*) that are not in the table are refused as unknown;
 * other SOFTRNIC_* names are left alone (the test scripts', a user's).
 */
#ifndef SOFTRNIC_RUNTIME_ENV_CONFIG_H
#define SOFTRNIC_RUNTIME_ENV_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum srt_env_kind {
	SRT_ENV_BOOL,      /* 0 or 1 (empty: the default) */
	SRT_ENV_NUMBER,    /* a whole number in [min, max]: decimal, 0x hex or 0 octal, digits first */
	SRT_ENV_SIZE,      /* bytes: digits, then K, M or G */
	SRT_ENV_CHOICE,    /* one of choices[] (empty: the default) */
	SRT_ENV_TEXT,      /* any text: a path, an address, an interface (its reader checks it) */
	SRT_ENV_FAULTS,    /* SOFTRNIC_FAULTS' language (faults.h) */
	SRT_ENV_DCQCN,     /* SOFTRNIC_CC_<NAME>: a DCQCN parameter in its range (rnic/dcqcn.h) */
	SRT_ENV_NOT_LIB,   /* known, read by the tests or scripts, not the library: any value */
};

struct srt_env_var {
	const char *name;               /* "SOFTRNIC_LOCAL"; for SRT_ENV_DCQCN, "SOFTRNIC_CC_<NAME>" */
	enum srt_env_kind kind;
	uint64_t min, max;              /* SRT_ENV_NUMBER */
	const char *const *choices;     /* SRT_ENV_CHOICE: NULL-terminated */
	const char *what;               /* one line: what it does */
	const char *reader;             /* the file that reads it */
};

extern const struct srt_env_var srt_env_table[];   /* ended by { 0 } */

/* Every SOFTRNIC_* variable of the environment against the table: 0, or
 * -1 with errno EINVAL after one line on stderr for each refused one,
 * "softrnic: NAME=VALUE: why". */
int srt_env_check(void);

/* One variable: true if `value` is one `name` accepts (or `name` is not
 * ours); else false, with the reason in why. */
bool srt_env_value_ok(const char *name, const char *value, char *why, size_t cap);

#endif
