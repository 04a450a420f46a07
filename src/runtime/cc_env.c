/*
 * cc_env.c — congestion control settings from the environment: ECN,
 * CNPs, DCQCN on or off, its parameter set and every DCQCN parameter
 * (docs/congestion.md lists them), and the loss recovery the transport
 * uses.  Read once, when the device opens.
 *
 *   SOFTRNIC_ECN=0          RC/UC packets leave Not-ECT (default: ECT(0))
 *   SOFTRNIC_CNP=0          CE marks are counted but not answered
 *   SOFTRNIC_DCQCN=0        CNPs are counted and ignored (no rate change)
 *   SOFTRNIC_CC=dcqcn|dctcp|timely   the reaction point's algorithm
 *                           (default dcqcn; rnic/dctcp.c, rnic/timely.c
 *                           with their default parameters).  DCTCP's echo
 *                           is the receiver's: both ends must say dctcp.
 *                           HPCC needs switches that write INT: the
 *                           simulator has them, a real network does not
 *   SOFTRNIC_TIMELY_T_LOW_US, _T_HIGH_US, _MIN_RTT_US=N, _RATE_AI_MBPS=N
 *                           TIMELY's thresholds, gradient scale and step
 *                           (the paper's 50, 500, 20 µs and 10 Mb/s by
 *                           default: a hardware NIC's round trips; a
 *                           software NIC's are ten times longer)
 *   SOFTRNIC_CC_PROFILE=mlx5|paper   the parameter set to start from
 *   SOFTRNIC_CC_<NAME>=N    one parameter, named after its ConnectX
 *                           counterpart: SOFTRNIC_CC_RPG_TIME_RESET=55, ...
 *   SOFTRNIC_LINE_RATE=MBPS the port's rate, made real: every QP is paced
 *                           to it, and DCQCN recovers to it (default: a
 *                           nominal 25000, not enforced)
 *   SOFTRNIC_SELECTIVE_REPEAT=0  RC loss recovery is always Go-Back-N
 *                           (default: selective repeat with softrnic
 *                           peers, rnic/selective.c)
 *
 * A value that does not parse or is out of range is reported on stderr
 * and ignored: a typo must not stop a program from running, but must not
 * pass silently either.
 */
#include "runtime/cc_env.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!s || !*s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static void flag(const char *name, bool *value)
{
	const char *s = getenv(name);
	uint64_t v;

	if (!s)
		return;
	if (parse_u64(s, &v) && v <= 1)
		*value = v == 1;
	else
		fprintf(stderr, "softrnic: warning: %s=%s is not 0 or 1; ignored\n", name, s);
}

/* A number in [lo, hi] from `name`, into *out scaled by `scale`. */
static void number(const char *name, uint64_t lo, uint64_t hi, uint64_t scale, uint32_t *out)
{
	const char *s = getenv(name);
	uint64_t v;

	if (!s)
		return;
	if (parse_u64(s, &v) && v >= lo && v <= hi)
		*out = (uint32_t)(v * scale);
	else
		fprintf(stderr, "softrnic: warning: %s=%s is not a number in [%llu, %llu]; ignored\n", name, s,
			(unsigned long long)lo, (unsigned long long)hi);
}

void srt_cc_from_env(struct rnic_config *cfg)
{
	const char *profile = getenv("SOFTRNIC_CC_PROFILE");
	char var[64];

	const char *line = getenv("SOFTRNIC_LINE_RATE");
	uint64_t mbps;

	if (line) {
		if (parse_u64(line, &mbps) && mbps >= 1 && mbps <= 1000000) {
			cfg->line_rate = mbps * 1000000ull;
			cfg->pace_line_rate = true;
		} else {
			fprintf(stderr, "softrnic: warning: SOFTRNIC_LINE_RATE=%s is not a rate in Mb/s (1..1000000); ignored\n",
				line);
		}
	}
	flag("SOFTRNIC_ECN", &cfg->ecn);
	flag("SOFTRNIC_CNP", &cfg->cnp);
	flag("SOFTRNIC_DCQCN", &cfg->dcqcn);
	flag("SOFTRNIC_SELECTIVE_REPEAT", &cfg->selective_repeat);
	number("SOFTRNIC_TIMELY_T_LOW_US", 1, 1000000, 1000, &cfg->timely.t_low);
	number("SOFTRNIC_TIMELY_T_HIGH_US", 1, 1000000, 1000, &cfg->timely.t_high);
	number("SOFTRNIC_TIMELY_MIN_RTT_US", 1, 1000000, 1000, &cfg->timely.min_rtt);
	number("SOFTRNIC_TIMELY_RATE_AI_MBPS", 1, 100000, 1, &cfg->timely.rate_ai);
	if (cfg->timely.t_low >= cfg->timely.t_high)
		fprintf(stderr, "softrnic: warning: TIMELY's T_low (%u us) is not below T_high (%u us)\n",
			cfg->timely.t_low / 1000, cfg->timely.t_high / 1000);
	const char *algo = getenv("SOFTRNIC_CC");
	if (algo) {
		if (strcmp(algo, "dcqcn") == 0)
			cfg->cc_algo = RNIC_CC_DCQCN;
		else if (strcmp(algo, "dctcp") == 0)
			cfg->cc_algo = RNIC_CC_DCTCP;
		else if (strcmp(algo, "timely") == 0)
			cfg->cc_algo = RNIC_CC_TIMELY;
		else
			fprintf(stderr, "softrnic: warning: SOFTRNIC_CC=%s is not dcqcn, dctcp or timely%s; ignored\n",
				algo, strcmp(algo, "hpcc") == 0 ? " (HPCC needs switches that write INT: softrnic sim only)" : "");
	}
	if (profile) {
		if (strcmp(profile, "mlx5") == 0)
			dcqcn_params_default(&cfg->cc, DCQCN_PROFILE_MLX5);
		else if (strcmp(profile, "paper") == 0)
			dcqcn_params_default(&cfg->cc, DCQCN_PROFILE_PAPER);
		else
			fprintf(stderr, "softrnic: warning: SOFTRNIC_CC_PROFILE=%s is not mlx5 or paper; ignored\n",
				profile);
	}
	for (size_t i = 0; i < dcqcn_param_count; i++) {
		const struct dcqcn_param_info *info = &dcqcn_param_table[i];
		const char *s;
		size_t k;
		uint64_t v;

		k = (size_t)snprintf(var, sizeof(var), "SOFTRNIC_CC_");
		for (const char *c = info->name; *c && k + 1 < sizeof(var); c++)
			var[k++] = (char)toupper((unsigned char)*c);
		var[k] = '\0';
		s = getenv(var);
		if (!s)
			continue;
		if (!parse_u64(s, &v) || dcqcn_param_set(&cfg->cc, info->name, v) != 0)
			fprintf(stderr, "softrnic: warning: %s=%s is not a number in [%u, %u] (%s); ignored\n", var,
				s, info->min, info->max, info->unit);
	}
}
