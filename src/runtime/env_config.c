/*
 * env_config.c — the table of every SOFTRNIC_* environment variable
 * (env_config.h) and the check of the environment against it, made once
 * when a device is opened (create_device in device.c).
 *
 * Each entry's rule is its reader's (named in the entry): the check
 * accepts exactly what the reader understands, and refuses what the
 * reader would ignore, fall back from or misread.  Where a reader is
 * looser (SOFTRNIC_GSO takes anything but "0" as on), the table takes
 * only the documented spellings: a typo is refused rather than read as
 * the opposite of what was meant.
 */
#include "runtime/env_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/dcqcn.h"
#include "runtime/faults.h"

extern char **environ;

static const char *const local_modes[] = { "1", "0", "packets", NULL };
static const char *const sport_modes[] = { "flow", "fixed", NULL };
static const char *const cc_algos[] = { "dcqcn", "dctcp", "timely", NULL };
static const char *const cc_profiles[] = { "mlx5", "paper", NULL };
static const char *const crc_impls[] = { "generic", "vpclmulqdq-256", NULL };
static const char *const xdp_modes[] = { "auto", "native", "generic", NULL };

#define T(n, k, lo, hi, ch, what, reader) { "SOFTRNIC_" n, SRT_ENV_##k, lo, hi, ch, what, reader }
#define TEST(n, what) T(n, NOT_LIB, 0, 0, NULL, what, "tests, scripts")

const struct srt_env_var srt_env_table[] = {
	/* The port: runtime/udp_port.c, host_share.c, runtime_dir.c */
	T("ADDR", TEXT, 0, 0, NULL, "the address to bind (IPv4, or IPv6 with %interface if link-local)",
	  "runtime/udp_port.c"),
	T("IFACE", TEXT, 0, 0, NULL, "bind this interface's address", "runtime/udp_port.c"),
	T("GSO", BOOL, 0, 0, NULL, "0: one datagram per packet, UDP checksum 0 (as kernel rxe)",
	  "runtime/udp_port.c"),
	T("TX_COPY", BOOL, 0, 0, NULL, "0: send payloads by reference instead of copying them", "runtime/udp_port.c"),
	T("SPORT", CHOICE, 0, 0, sport_modes, "UDP source port: one per flow (default) or fixed 4791",
	  "runtime/udp_port.c"),
	T("SHARE", BOOL, 0, 0, NULL, "0: bind the address alone, not shared through softrnic-hostd",
	  "runtime/udp_port.c"),
	T("XDP", TEXT, 0, 0, NULL, "send and receive RoCEv2 through an AF_XDP socket on this interface",
	  "runtime/paths.c"),
	T("XDP_MODE", CHOICE, 0, 0, xdp_modes, "the XDP program's mode: the driver's (native) or generic",
	  "runtime/paths.c"),
	T("HOSTD", TEXT, 0, 0, NULL, "the softrnic-hostd program to start", "runtime/host_share.c"),
	T("RUNTIME_DIR", TEXT, 0, 0, NULL, "the folder of the stats files and rings", "runtime/runtime_dir.c"),
	/* The host-local path: runtime/local_path.c */
	T("LOCAL", CHOICE, 0, 0, local_modes, "the host-local path: on (1, default), off (0), packets only",
	  "runtime/local_path.c"),
	T("LOCAL_INLINE_MAX", NUMBER, 0, 1u << 20, NULL, "bytes copied into a ring entry rather than read across",
	  "runtime/local_path.c"),
	T("LOCAL_MSG_MIN", NUMBER, 4096, 1u << 30, NULL, "the smallest message moved as one (bytes)",
	  "runtime/local_path.c"),
	T("LOCAL_FAST", BOOL, 0, 0, NULL, "0: small messages between local QPs as packets, not fast messages",
	  "runtime/paths.c"),
	/* Captures and faults: runtime/capture.c, device.c */
	T("PCAP", TEXT, 0, 0, NULL, "capture every packet into this file (%p: the pid)", "runtime/capture.c"),
	T("PCAP_LIMIT", SIZE, 0, 0, NULL, "the capture's size limit, with K, M or G (0: none)", "runtime/capture.c"),
	T("PCAP_OVERWRITE", BOOL, 0, 0, NULL, "1: truncate an existing capture file of ours", "runtime/capture.c"),
	T("FAULTS", FAULTS, 0, 0, NULL, "drop, duplicate, delay, corrupt packets (docs/faults.md)",
	  "runtime/device.c"),
	T("STATS_AT_EXIT", BOOL, 0, 0, NULL, "1: print the counters on stderr when the device closes",
	  "runtime/device.c"),
	/* Congestion control: runtime/cc_env.c */
	T("ECN", NUMBER, 0, 1, NULL, "0: packets leave Not-ECT", "runtime/cc_env.c"),
	T("CNP", NUMBER, 0, 1, NULL, "0: CE marks are counted, not answered", "runtime/cc_env.c"),
	T("DCQCN", NUMBER, 0, 1, NULL, "0: CNPs are counted and ignored", "runtime/cc_env.c"),
	T("SELECTIVE_REPEAT", NUMBER, 0, 1, NULL, "0: RC loss recovery is always Go-Back-N", "runtime/cc_env.c"),
	T("CC", CHOICE, 0, 0, cc_algos, "the reaction point's algorithm", "runtime/cc_env.c"),
	T("CC_PROFILE", CHOICE, 0, 0, cc_profiles, "DCQCN's parameter set to start from", "runtime/cc_env.c"),
	T("CC_<NAME>", DCQCN, 0, 0, NULL, "one DCQCN parameter, named after its ConnectX counterpart",
	  "runtime/cc_env.c"),
	T("LINE_RATE", NUMBER, 1, 1000000, NULL, "the port's rate in Mb/s, enforced", "runtime/cc_env.c"),
	T("TIMELY_T_LOW_US", NUMBER, 1, 1000000, NULL, "TIMELY's low threshold (us)", "runtime/cc_env.c"),
	T("TIMELY_T_HIGH_US", NUMBER, 1, 1000000, NULL, "TIMELY's high threshold (us)", "runtime/cc_env.c"),
	T("TIMELY_MIN_RTT_US", NUMBER, 1, 1000000, NULL, "TIMELY's gradient scale (us)", "runtime/cc_env.c"),
	T("TIMELY_RATE_AI_MBPS", NUMBER, 1, 100000, NULL, "TIMELY's additive step (Mb/s)", "runtime/cc_env.c"),
	/* The ICRC: wire/crc32.c */
	T("CRC", CHOICE, 0, 0, crc_impls, "the CRC32 code (default: the fastest the CPU has)", "wire/crc32.c"),
	/* librdmacm, rsockets: compat/rdmacm, compat/rspreload */
	T("CM_RESPONSE_TIMEOUT", NUMBER, 0, 31, NULL, "the CM's response timeout (4.096 us * 2^N)",
	  "compat/rdmacm/cma.c"),
	T("CM_RETRIES", NUMBER, 0, 15, NULL, "the CM's retries", "compat/rdmacm/cma.c"),
	T("CM_TRACE", NUMBER, 0, 1, NULL, "1: one line per CM state transition on stderr", "compat/rdmacm/cma.c"),
	T("RSOCKET_CONF", TEXT, 0, 0, NULL, "the folder of rsocket's defaults", "compat/rdmacm/rsocket.c"),
	T("RSPRELOAD_DGRAM", BOOL, 0, 0, NULL, "1: datagram sockets become rsockets too",
	  "compat/rspreload/rspreload.c"),
	/* The tool and the simulator */
	T("LIBDIR", TEXT, 0, 0, NULL, "softrnic run: the folder of softrnic's libraries", "tools/cmd_run.c"),
	T("SIM_PROGRESS", BOOL, 0, 0, NULL, "0: no progress lines from softrnic sim", "sim/progress.c"),
	/* Read by the tests and scripts only */
	TEST("PRELOAD", "a sanitizer runtime the test scripts preload"),
	TEST("SEED", "one seed for a randomized test to replay"),
	TEST("LOSS", "tests/rnic/fault_mix: a fixed loss rate"),
	TEST("DUP", "tests/rnic/fault_mix: a fixed duplication rate"),
	TEST("REORDER", "tests/rnic/fault_mix: reordering"),
	TEST("CORRUPT", "tests/rnic/fault_mix: a fixed corruption rate"),
	TEST("RSPRELOAD_EXPECT", "the rspreload tests' expectation"),
	TEST("INTEROP_DIR", "tests/interop: its cache and logs"),
	TEST("INTEROP_ACCEL", "tests/interop: tcg or kvm"),
	TEST("INTEROP_BUDGET", "tests/interop: seconds for the cases"),
	TEST("INTEROP_FAKE_STALL", "tests/interop: pretend a case's NIC stalled"),
	TEST("INTEROP_MIRROR", "tests/interop: the Debian mirror"),
	{ 0 }
};

/* The families the library owns: an unknown name in one is a typo. */
static const char *const families[] = {
	"SOFTRNIC_CC_", "SOFTRNIC_LOCAL_", "SOFTRNIC_PCAP_", "SOFTRNIC_TIMELY_", "SOFTRNIC_CM_",
	"SOFTRNIC_RSPRELOAD_", "SOFTRNIC_SIM_", NULL,
};

/* cc_env.c's parse_u64: digits first, then strtoull base 0, all of it. */
static bool parse_number(const char *s, uint64_t *out)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

/* capture.c's parse_limit: decimal digits, then K, M or G. */
static bool parse_size(const char *s)
{
	uint64_t v = 0;
	unsigned shift = 0;

	if (!isdigit((unsigned char)*s))
		return false;
	for (; isdigit((unsigned char)*s); s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (*s == 'k' || *s == 'K')
		shift = 10, s++;
	else if (*s == 'm' || *s == 'M')
		shift = 20, s++;
	else if (*s == 'g' || *s == 'G')
		shift = 30, s++;
	return !*s && !(shift && v > UINT64_MAX >> shift);
}

/* The DCQCN parameter SOFTRNIC_CC_<NAME> names, or NULL. */
static const struct dcqcn_param_info *dcqcn_param(const char *name)
{
	const char *suffix = name + strlen("SOFTRNIC_CC_");

	if (strncmp(name, "SOFTRNIC_CC_", strlen("SOFTRNIC_CC_")))
		return NULL;
	for (size_t i = 0; i < dcqcn_param_count; i++) {
		const char *p = dcqcn_param_table[i].name, *q = suffix;
		while (*p && *q && toupper((unsigned char)*p) == *q)
			p++, q++;
		if (!*p && !*q)
			return &dcqcn_param_table[i];
	}
	return NULL;
}

static const struct srt_env_var *lookup(const char *name)
{
	for (const struct srt_env_var *v = srt_env_table; v->name; v++)
		if (v->kind != SRT_ENV_DCQCN && !strcmp(v->name, name))
			return v;
	return NULL;
}

static void list_choices(const char *const *choices, char *why, size_t cap)
{
	snprintf(why, cap, "not one of");
	for (unsigned i = 0; choices[i]; i++)
		snprintf(why + strlen(why), cap - strlen(why), "%s %s", i ? "," : "", choices[i]);
}

bool srt_env_value_ok(const char *name, const char *value, char *why, size_t cap)
{
	const struct srt_env_var *v = lookup(name);
	const struct dcqcn_param_info *info;
	uint64_t n;

	if (!v && (info = dcqcn_param(name)) != NULL) {
		if (parse_number(value, &n) && n >= info->min && n <= info->max)
			return true;
		snprintf(why, cap, "not a number in %u-%u (%s)", info->min, info->max, info->unit);
		return false;
	}
	if (!v) {
		if (strncmp(name, "SOFTRNIC_", 9))
			return true;
		for (unsigned i = 0; families[i]; i++)
			if (!strncmp(name, families[i], strlen(families[i]))) {
				snprintf(why, cap, "unknown variable (softrnic(1) lists the %s* it reads)", families[i]);
				return false;
			}
		return true;
	}
	/* Empty is the default for every reader but cc_env.c, which warns
	 * that "" is not a value. */
	if (!*value && strcmp(v->reader, "runtime/cc_env.c"))
		return true;
	switch (v->kind) {
	case SRT_ENV_BOOL:
		if (!strcmp(value, "0") || !strcmp(value, "1"))
			return true;
		snprintf(why, cap, "not one of 0, 1");
		return false;
	case SRT_ENV_NUMBER:
		if (parse_number(value, &n) && n >= v->min && n <= v->max)
			return true;
		snprintf(why, cap, "not a number in %llu-%llu", (unsigned long long)v->min,
			 (unsigned long long)v->max);
		return false;
	case SRT_ENV_SIZE:
		if (parse_size(value))
			return true;
		snprintf(why, cap, "not a size in bytes, with K, M or G (e.g. 100M; 0 for no limit)");
		return false;
	case SRT_ENV_CHOICE:
		for (unsigned i = 0; v->choices[i]; i++)
			if (!strcmp(value, v->choices[i]))
				return true;
		list_choices(v->choices, why, cap);
		if (v->choices == cc_algos && !strcmp(value, "hpcc"))
			snprintf(why + strlen(why), cap - strlen(why), " (HPCC needs switches that write INT: softrnic sim only)");
		return false;
	case SRT_ENV_FAULTS: {
		struct srt_faults_config cfg;
		return srt_faults_parse(value, &cfg, why, cap) == 0;
	}
	case SRT_ENV_TEXT:
	case SRT_ENV_DCQCN:
	case SRT_ENV_NOT_LIB:
		return true;
	}
	return true;
}

int srt_env_check(void)
{
	int bad = 0;

	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[128], why[256];

		if (strncmp(*e, "SOFTRNIC_", 9) || !eq || (size_t)(eq - *e) >= sizeof(name))
			continue;
		memcpy(name, *e, (size_t)(eq - *e));
		name[eq - *e] = 0;
		if (!srt_env_value_ok(name, eq + 1, why, sizeof(why))) {
			/* A fault spec in quotes, as docs/capture_and_faults.md shows it. */
			const struct srt_env_var *v = lookup(name);
			const char *q = v && v->kind == SRT_ENV_FAULTS ? "\"" : "";
			fprintf(stderr, "softrnic: %s=%s%s%s: %s\n", name, q, eq + 1, q, why);
			bad++;
		}
	}
	if (bad) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}
