/*
 * hpcc_config.c — the config.txt of `softrnic sim run` (hpcc.c says which
 * keys are read and what they mean) into struct hpcc_config
 * (hpcc_int.h): HPCC's defaults first, each key's value checked, the
 * topology, flow and route files found where HPCC's layout puts them,
 * and the keys this model does not use listed for the summary.  Also the
 * rate and delay notations of HPCC's files and the per-rate ECN maps,
 * which the topology reader (hpcc_fabric.c) shares.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/hpcc_int.h"

/* Keys that only some CC_MODEs read (bit m: CC_MODE m); under the others
 * the summary names them as not used.  Keys not listed here are read by
 * every mode or by none. */
static const struct {
	const char *key;
	unsigned modes;
} mode_keys[] = {
	{ "RP_TIMER", 1u << 1 },
	{ "FAST_RECOVERY_TIMES", 1u << 1 },
	{ "RATE_DECREASE_INTERVAL", 1u << 1 },
	{ "ALPHA_RESUME_INTERVAL", 1u << 1 },
	{ "CLAMP_TARGET_RATE", 1u << 1 },
	{ "RATE_AI", 1u << 1 | 1u << 3 | 1u << 7 | 1u << 10 },
	{ "RATE_HAI", 1u << 1 | 1u << 7 },
	{ "EWMA_GAIN", 1u << 1 | 1u << 8 },
	{ "DCTCP_RATE_AI", 1u << 8 },
	{ "HAS_WIN", 1u << 3 | 1u << 7 | 1u << 8 | 1u << 10 },
	{ "U_TARGET", 1u << 3 | 1u << 10 },
	{ "MI_THRESH", 1u << 3 | 1u << 10 },
	{ "FAST_REACT", 1u << 3 },     /* HPCC-PINT reacts on every sampled ACK */
	{ "INT_MULTI", 1u << 3 },
	{ "MULTI_RATE", 1u << 3 },
	{ "SAMPLE_FEEDBACK", 1u << 3 },
	{ "PINT_LOG_BASE", 1u << 10 },
	{ "PINT_PROB", 1u << 10 },
};

/* The keys of c->keys that the run does not use, into c->ignored. */
static void list_ignored(struct hpcc_config *c)
{
	char copy[sizeof(c->keys)], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", c->keys);
	c->ignored[0] = 0;
	for (char *k = strtok_r(copy, " ", &save); k; k = strtok_r(NULL, " ", &save)) {
		bool unused = k[0] == '!';
		if (unused)
			k++;
		for (size_t i = 0; !unused && i < sizeof(mode_keys) / sizeof(mode_keys[0]); i++)
			if (!strcmp(k, mode_keys[i].key))
				unused = !(mode_keys[i].modes & (1u << (c->cc_mode & 31)));
		if (!unused)
			continue;
		size_t at = strlen(c->ignored);
		snprintf(c->ignored + at, sizeof(c->ignored) - at, "%s%s", at ? " " : "", k);
	}
}

/* "100Gbps", "40Gb/s", "25000000000" -> bits/s; 0 when unreadable. */
uint64_t simrun_parse_rate(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v <= 0)
		return 0;
	if (!strncasecmp(end, "G", 1))
		v *= 1e9;
	else if (!strncasecmp(end, "M", 1))
		v *= 1e6;
	else if (!strncasecmp(end, "K", 1))
		v *= 1e3;
	return (uint64_t)v;
}

/* "1000ns", "0.001ms", "1us", "2s" -> ns. */
uint64_t simrun_parse_delay(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (!strcmp(end, "ms"))
		v *= 1e6;
	else if (!strcmp(end, "us"))
		v *= 1e3;
	else if (!strcmp(end, "s"))
		v *= 1e9;
	return (uint64_t)(v + 0.5);
}

/* Mb/s from "50Mb/s" (RATE_AI and friends). */
static uint32_t parse_mbps(const char *s)
{
	return (uint32_t)(simrun_parse_rate(s) / 1000000);
}

static int read_map(FILE *f, struct rate_map *m)
{
	if (fscanf(f, "%u", &m->n) != 1 || m->n > MAX_MAP)
		return EINVAL;
	for (unsigned i = 0; i < m->n; i++)
		if (fscanf(f, "%" SCNu64 " %lf", &m->rate[i], &m->value[i]) != 2)
			return EINVAL;
	return 0;
}

double simrun_map_at(const struct rate_map *m, uint64_t rate, double dflt)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->rate[i] == rate)
			return m->value[i];
	return dflt;
}

static bool readable(const char *path)
{
	FILE *f = fopen(path, "r");

	if (f)
		fclose(f);
	return f != NULL;
}

/* Resolve `name` as given; else next to the config file; else in the
 * directory above it — HPCC's own layout, where run.py writes
 * mix/config_*.txt naming "mix/fat.txt" and runs from the directory that
 * holds mix/.  An unreadable name is kept as given, for the message. */
static void resolve(char *out, size_t cap, const char *name, const char *config_path)
{
	const char *slash = strrchr(config_path, '/');
	int dir_len = slash ? (int)(slash - config_path) : 0;

	snprintf(out, cap, "%s", name);
	if (readable(name) || name[0] == '/')
		return;
	snprintf(out, cap, "%.*s%s%s", dir_len, config_path, slash ? "/" : "", name);
	if (readable(out))
		return;
	/* The parent of the config's directory: "mix/.." is ".", "a/mix/.." is "a". */
	int up_len = dir_len;
	while (up_len > 0 && config_path[up_len - 1] != '/')
		up_len--;
	snprintf(out, cap, "%.*s%s", up_len, config_path, name);    /* up_len keeps its '/' */
	if (!readable(out))
		snprintf(out, cap, "%s", name);
}

int simrun_read_config(const char *path, struct hpcc_config *c)
{
	FILE *f = fopen(path, "r");
	char key[128], word[512];

	if (!f) {
		fprintf(stderr, "softrnic sim run: %s: %s\n", path, strerror(errno));
		return 2;
	}
	memset(c, 0, sizeof(*c));
	c->cc_mode = 1;
	c->qcn = c->pfc = true;
	c->stop_s = 10;
	c->buffer_bytes = 32u << 20;
	c->payload = 1000;
	dcqcn_params_default(&c->cc, DCQCN_PROFILE_PAPER);
	dctcp_params_default(&c->dctcp);
	timely_params_default(&c->timely);
	hpcc_params_default(&c->hpcc);
	c->hpcc.max_stage = 5;  /* third.cc's mi_thresh */
	c->has_win = true;
	c->pint_log_base = 1.01;        /* run.py's defaults */
	c->pint_prob = 1.0;
	while (fscanf(f, "%127s", key) == 1) {
		int ok = 1;
		if (key[0] == '#' || key[0] == '{' || key[0] == '}') {
			int ch;
			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			continue;
		}
#define WORD() (ok = fscanf(f, "%511s", word) == 1)
		if (!strcmp(key, "TOPOLOGY_FILE")) {
			if (WORD())
				resolve(c->topology, sizeof(c->topology), word, path);
		} else if (!strcmp(key, "FLOW_FILE")) {
			if (WORD())
				resolve(c->flows, sizeof(c->flows), word, path);
		} else if (!strcmp(key, "ROUTE_FILE")) {
			if (WORD())
				resolve(c->routes, sizeof(c->routes), word, path);
		} else if (!strcmp(key, "FCT_OUTPUT_FILE")) {
			if (WORD())
				snprintf(c->fct_out, sizeof(c->fct_out), "%s", word);
		} else if (!strcmp(key, "SIMULATOR_STOP_TIME")) {
			ok = fscanf(f, "%lf", &c->stop_s) == 1;
		} else if (!strcmp(key, "CC_MODE")) {
			ok = fscanf(f, "%d", &c->cc_mode) == 1;
		} else if (!strcmp(key, "ENABLE_QCN") || !strcmp(key, "ENABLE_PFC")) {
			int v;
			ok = fscanf(f, "%d", &v) == 1;
			*(key[7] == 'Q' ? &c->qcn : &c->pfc) = v != 0;
		} else if (!strcmp(key, "BUFFER_SIZE")) {
			double mb;
			ok = fscanf(f, "%lf", &mb) == 1;
			c->buffer_bytes = (uint64_t)(mb * 1024 * 1024);
		} else if (!strcmp(key, "ERROR_RATE_PER_LINK")) {
			ok = fscanf(f, "%lf", &c->error_rate) == 1;
		} else if (!strcmp(key, "PACKET_PAYLOAD_SIZE")) {
			ok = fscanf(f, "%u", &c->payload) == 1;
		} else if (!strcmp(key, "KMIN_MAP")) {
			ok = !read_map(f, &c->kmin);
		} else if (!strcmp(key, "KMAX_MAP")) {
			ok = !read_map(f, &c->kmax);
		} else if (!strcmp(key, "PMAX_MAP")) {
			ok = !read_map(f, &c->pmax);
		} else if (!strcmp(key, "RATE_AI")) {
			/* DCQCN's R_AI and TIMELY's δ (rdma-hw.cc's m_rai) */
			if (WORD())
				c->cc.rpg_ai_rate = c->timely.rate_ai = c->hpcc.rate_ai = parse_mbps(word);
		} else if (!strcmp(key, "RATE_HAI")) {
			if (WORD())
				c->cc.rpg_hai_rate = c->timely.rate_hai = parse_mbps(word);
		} else if (!strcmp(key, "MIN_RATE")) {
			if (WORD())
				c->cc.rpg_min_rate = c->dctcp.min_rate = c->timely.min_rate = c->hpcc.min_rate =
					parse_mbps(word) ? parse_mbps(word) : 1;
		} else if (!strcmp(key, "DCTCP_RATE_AI")) {
			if (WORD())
				c->dctcp.rate_ai = parse_mbps(word);
		} else if (!strcmp(key, "U_TARGET")) {
			double u;
			ok = fscanf(f, "%lf", &u) == 1 && u > 0 && u <= 10;
			c->hpcc.eta = (uint32_t)(u * 1000 + 0.5);
		} else if (!strcmp(key, "MI_THRESH")) {
			ok = fscanf(f, "%u", &c->hpcc.max_stage) == 1;
		} else if (!strcmp(key, "FAST_REACT") || !strcmp(key, "MULTI_RATE") ||
			   !strcmp(key, "SAMPLE_FEEDBACK")) {
			int v;
			ok = fscanf(f, "%d", &v) == 1;
			if (key[0] == 'F')
				c->hpcc.fast_react = v != 0;
			else
				*(key[0] == 'M' ? &c->multi_rate : &c->sample_feedback) = v != 0;
		} else if (!strcmp(key, "INT_MULTI")) {
			/* The unit of the tx-bytes field in HPCC's 8-byte INT
			 * hop; softrnic's records are full width beside the
			 * packet, so there is nothing to scale. */
			unsigned v;
			ok = fscanf(f, "%u", &v) == 1 && v > 0;
		} else if (!strcmp(key, "PINT_LOG_BASE")) {
			ok = fscanf(f, "%lf", &c->pint_log_base) == 1 && c->pint_log_base > 1 && c->pint_log_base < 2;
		} else if (!strcmp(key, "PINT_PROB")) {
			ok = fscanf(f, "%lf", &c->pint_prob) == 1 && c->pint_prob > 0 && c->pint_prob <= 1;
		} else if (!strcmp(key, "HAS_WIN")) {
			int v;
			ok = fscanf(f, "%d", &v) == 1;
			c->has_win = v != 0;
		} else if (!strcmp(key, "RP_TIMER")) {
			ok = fscanf(f, "%u", &c->cc.rpg_time_reset) == 1;
		} else if (!strcmp(key, "FAST_RECOVERY_TIMES")) {
			ok = fscanf(f, "%u", &c->cc.rpg_threshold) == 1;
		} else if (!strcmp(key, "RATE_DECREASE_INTERVAL")) {
			ok = fscanf(f, "%u", &c->cc.rate_reduce_monitor_period) == 1;
		} else if (!strcmp(key, "ALPHA_RESUME_INTERVAL")) {
			ok = fscanf(f, "%u", &c->cc.dce_tcp_rtt) == 1;
		} else if (!strcmp(key, "CLAMP_TARGET_RATE")) {
			ok = fscanf(f, "%u", &c->cc.clamp_tgt_rate) == 1;
		} else if (!strcmp(key, "EWMA_GAIN")) {
			double g;
			ok = fscanf(f, "%lf", &g) == 1 && g > 0 && g < 1;
			c->cc.dce_tcp_g = (uint32_t)(1024 * (1 - g) + 0.5);
			/* DCTCP's g too (rdma-hw.cc's m_g), at least 1/1024 */
			c->dctcp.g = g * 1024 < 1 ? 1 : (uint32_t)(1024 * g + 0.5);
		} else {
			/* Not a key the model shares: skip its values. */
			size_t at = strlen(c->keys);
			snprintf(c->keys + at, sizeof(c->keys) - at, "%s!%s", at ? " " : "", key);
			int ch;
			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			continue;
		}
#undef WORD
		size_t at = strlen(c->keys);
		snprintf(c->keys + at, sizeof(c->keys) - at, "%s%s", at ? " " : "", key);
		if (!ok) {
			fprintf(stderr, "softrnic sim run: %s: bad value for %s\n", path, key);
			fclose(f);
			return 2;
		}
	}
	fclose(f);
	if (!c->topology[0] || !c->flows[0]) {
		fprintf(stderr, "softrnic sim run: %s: TOPOLOGY_FILE and FLOW_FILE are needed\n", path);
		return 2;
	}
	if (c->cc_mode != 1 && c->cc_mode != 3 && c->cc_mode != 7 && c->cc_mode != 8 && c->cc_mode != 10) {
		fprintf(stderr, "softrnic sim run: CC_MODE %d: modelled here are 1 (DCQCN), 3 (HPCC), 7 (TIMELY), "
				"8 (DCTCP) and 10 (HPCC-PINT)\n", c->cc_mode);
		return 2;
	}
	c->hpcc.pint = c->cc_mode == 10;
	if (c->cc_mode == 3 && (c->multi_rate || c->sample_feedback)) {
		fprintf(stderr, "softrnic sim run: %s: HPCC with %s 1 is not modelled (one rate for the path, "
				"every record used: MULTI_RATE 0, SAMPLE_FEEDBACK 0)\n", path,
			c->multi_rate ? "MULTI_RATE" : "SAMPLE_FEEDBACK");
		return 2;
	}
	list_ignored(c);
	return 0;
}
