/*
 * hpcc.c — `softrnic sim run CONFIG`: an experiment described in the
 * files of the HPCC simulator (alibaba-edu/High-Precision-Congestion-
 * Control, and the ns-3 RDMA simulators derived from it), so that its
 * users' setups run unchanged, and its FCT file written the same way.
 *
 *   config.txt    "KEY value ..." lines.  Read: TOPOLOGY_FILE, FLOW_FILE,
 *                 ROUTE_FILE (softrnic's own: static routes, load_routes),
 *                 FCT_OUTPUT_FILE, SIMULATOR_STOP_TIME (s), CC_MODE (1
 *                 DCQCN, 3 HPCC, 7 TIMELY, 8 DCTCP, 10 HPCC-PINT:
 *                 softrnic's own dcqcn.c, hpcc_cc.c, timely.c, dctcp.c
 *                 in every host; PINT's switches in pint.c), ENABLE_QCN,
 *                 ENABLE_PFC, BUFFER_SIZE (MB), KMIN_MAP / KMAX_MAP
 *                 (KB) / PMAX_MAP per link rate, ERROR_RATE_PER_LINK,
 *                 PACKET_PAYLOAD_SIZE, and the DCQCN keys RATE_AI,
 *                 RATE_HAI, MIN_RATE, RP_TIMER (µs), EWMA_GAIN,
 *                 FAST_RECOVERY_TIMES, RATE_DECREASE_INTERVAL (µs),
 *                 ALPHA_RESUME_INTERVAL (µs), CLAMP_TARGET_RATE;
 *                 for TIMELY RATE_AI (δ), RATE_HAI and MIN_RATE (its
 *                 T_low, T_high, min RTT, α and β are not config keys in
 *                 HPCC either: their defaults, timely.h); for DCTCP
 *                 EWMA_GAIN (g), DCTCP_RATE_AI and MIN_RATE; for HPCC
 *                 RATE_AI (W_AI), MIN_RATE, U_TARGET (η), MI_THRESH
 *                 (maxStage), FAST_REACT, INT_MULTI (nothing to scale:
 *                 switch.c's INT records are full width), MULTI_RATE and
 *                 SAMPLE_FEEDBACK (only 0 is modelled); HAS_WIN (1:
 *                 a window of the largest path's BDP, max_bdp, scaled by
 *                 the rate as VAR_WIN 1 does); for HPCC-PINT the same
 *                 but FAST_REACT (it always reacts), with PINT_LOG_BASE
 *                 and PINT_PROB.  Other keys are listed in
 *                 the summary as not used.
 *   topology      "nodes switches links", the switch ids, then one
 *                 "a b rate delay error_rate" per link (rate 100Gbps,
 *                 delay 1000ns / 0.001ms).
 *   flows         the count, then "src dst priority dport size start_s"
 *                 (only the first `count` lines are read, as HPCC does).
 *   outputs       fct.txt (below), flows.csv, pfc.csv (pauses and paused
 *                 time per port that was paused), summary.txt, and with
 *                 --sample-us, queues.csv (every port holding packets or
 *                 paused, every sample) and throughput.csv (every flow
 *                 whose requests reached its destination in the sample:
 *                 their wire bytes, as Gb/s over the sample), together
 *                 at most --trace-limit-mb (1024 by default): the sample
 *                 that takes them past it is their last, and the summary
 *                 says when that was
 *   fct output    "sip dip sport dport size start_ns fct_ns standalone_ns"
 *                 with HPCC's addresses (0x0b000001 + id/256 << 16 +
 *                 id%256 << 8) in hex; sport is 10000 + the flow's index.
 *
 * Differences that remain (docs/experiments.md): ECN thresholds by port
 * rate from the maps (a rate not in them takes the fastest link's entry),
 * the MTU rounded to a power of two (1000 -> 1024), softrnic's own
 * transport and congestion control, not HPCC's rdma-hw.cc (its ACKs come
 * per AckReq, not per packet; DCTCP's ECN echo is a CNP), and the window
 * always scaled by the rate (VAR_WIN 0 is not modelled).
 */
#include "sim/hpcc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rnic/dcqcn.h"
#include "sim/engine.h"
#include "sim/fct.h"
#include "sim/net.h"
#include "sim/progress.h"

#define MAX_MAP 16

struct rate_map {
	unsigned n;
	uint64_t rate[MAX_MAP];
	double value[MAX_MAP];
};

struct hpcc_config {
	char topology[512], flows[512], fct_out[512], routes[512];
	int cc_mode;
	bool qcn, pfc;
	double stop_s, error_rate;
	uint64_t buffer_bytes;
	unsigned payload;
	struct rate_map kmin, kmax, pmax;
	struct dcqcn_params cc;
	struct dctcp_params dctcp;
	struct timely_params timely;
	struct hpcc_params hpcc;
	bool has_win, multi_rate, sample_feedback;
	double pint_log_base, pint_prob;
	char keys[2048];        /* every key in the file's order, the unknown
	                           ones marked with a leading '!' */
	char ignored[2048];
};

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
static uint64_t parse_rate(const char *s)
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
static uint64_t parse_delay(const char *s)
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
	return (uint32_t)(parse_rate(s) / 1000000);
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

static double map_at(const struct rate_map *m, uint64_t rate, double dflt)
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

static int read_config(const char *path, struct hpcc_config *c)
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

/* ROUTE_FILE (softrnic's key; HPCC computes its routes itself): the count,
 * then "switch host next_hop" lines in the topology's node ids — switch
 * `switch` sends everything for `host` to its neighbour `next_hop`,
 * replacing the shortest paths (sim_set_route).  How a routing loop, the
 * cyclic buffer dependency of a PFC deadlock, is built from files.
 * 0, or 2 with a message. */
static int load_routes(struct sim_net *n, const char *path, const bool *is_switch, const unsigned *host_of,
		       unsigned nodes)
{
	FILE *f = fopen(path, "r");
	unsigned count = 0, sw, host, next;
	int rc = 0;

	if (!f) {
		fprintf(stderr, "softrnic sim run: %s: %s\n", path, strerror(errno));
		return 2;
	}
	if (fscanf(f, "%u", &count) != 1)
		rc = 2;
	for (unsigned i = 0; !rc && i < count; i++) {
		int port;
		if (fscanf(f, "%u %u %u", &sw, &host, &next) != 3 || sw >= nodes || host >= nodes || next >= nodes ||
		    !is_switch[sw] || is_switch[host] || (port = sim_port_to_node(n, sw, next)) < 0 ||
		    sim_set_route(n, sw, host_of[host], (unsigned)port)) {
			fprintf(stderr, "softrnic sim run: %s: route line %u: not \"switch host neighbour\"\n", path, i + 1);
			rc = 2;
		}
	}
	if (!rc && count == 0)
		fprintf(stderr, "softrnic sim run: %s: no routes\n", path), rc = 2;
	fclose(f);
	return rc;
}

static uint32_t hpcc_ip(unsigned id)
{
	return 0x0b000001u + ((id / 256) << 16) + ((id % 256) << 8);
}

/* Every sample_ns: one queues.csv line per port holding packets, one
 * throughput.csv line per flow that moved. */
struct sampler {
	struct sim_net *n;
	FILE *f, *tput;
	uint64_t period_ns, stop_ns;
	uint64_t *last;                 /* sim_flow_arrived at the last sample */
	uint64_t written, limit;        /* bytes in both files; the bound */
	uint64_t cut_at_ns;             /* when the bound stopped them (0: never) */
};

static void sample_queues(void *ctx, uint64_t arg, uint64_t now)
{
	struct sampler *s = ctx;

	(void)arg;
	for (unsigned node = 0; node < sim_nodes(s->n); node++)
		for (unsigned p = 0; p < sim_node_ports(s->n, node); p++) {
			uint64_t q = sim_port_queue_bytes(s->n, node, p);
			bool paused = sim_port_is_paused(s->n, node, p);
			if (q || paused) {
				int w = fprintf(s->f, "%" PRIu64 ",%u,%u,%" PRIu64 ",%d\n", now / 1000, node, p, q, paused);
				s->written += w > 0 ? (uint64_t)w : 0;
			}
		}
	for (unsigned i = 0; s->tput && i < sim_flows(s->n); i++) {
		uint64_t a = sim_flow_arrived(s->n, i);
		if (a != s->last[i]) {
			int w = fprintf(s->tput, "%" PRIu64 ",%u,%.3f\n", now / 1000, i,
					(double)(a - s->last[i]) * 8 / (double)s->period_ns);
			s->written += w > 0 ? (uint64_t)w : 0;
		}
		s->last[i] = a;
	}
	/* The bound: a sample that took the files past it is the last. */
	if (s->limit && s->written >= s->limit) {
		s->cut_at_ns = now;
		return;
	}
	if (now + s->period_ns <= s->stop_ns && sim_flows_running(s->n))
		sim_at(sim_net_engine(s->n), now + s->period_ns, sample_queues, s, 0);
}

/* Every queue_sample_ns: the length of every switch egress queue holding
 * packets, into a histogram of 1 KiB bins (the last bin holds everything
 * from 64 MiB up; the maximum is kept exactly). */
#define QUEUE_BINS 65536u

struct queue_sampler {
	struct sim_net *n;
	uint64_t period_ns, stop_ns;
	uint64_t *bins, samples, max;
};

static void sample_switch_queues(void *ctx, uint64_t arg, uint64_t now)
{
	struct queue_sampler *s = ctx;

	(void)arg;
	for (unsigned node = 0; node < sim_nodes(s->n); node++) {
		if (sim_node_is_host(s->n, node))
			continue;
		for (unsigned p = 0; p < sim_node_ports(s->n, node); p++) {
			uint64_t q = sim_port_queue_bytes(s->n, node, p);
			if (!q)
				continue;
			s->bins[q / 1024 < QUEUE_BINS ? q / 1024 : QUEUE_BINS - 1]++;
			s->samples++;
			s->max = q > s->max ? q : s->max;
		}
	}
	if (now + s->period_ns <= s->stop_ns && sim_flows_running(s->n))
		sim_at(sim_net_engine(s->n), now + s->period_ns, sample_switch_queues, s, 0);
}

/* The upper edge of the bin holding the p-th percentile sample. */
static uint64_t queue_percentile(const struct queue_sampler *s, double p)
{
	uint64_t want = (uint64_t)((double)s->samples * p / 100), seen = 0;

	for (unsigned b = 0; b < QUEUE_BINS; b++) {
		seen += s->bins[b];
		if (seen > want)
			return b + 1 < QUEUE_BINS ? (uint64_t)(b + 1) * 1024 : s->max;
	}
	return s->max;
}

struct link_line {
	unsigned a, b;
	struct sim_link_opts l;
};

/* HPCC's window with HAS_WIN 1 and GLOBAL_T 1 (third.cc's maxBdp): the
 * largest bandwidth-delay product over host pairs, each path's RTT being
 * twice its propagation delay plus one packet's serialisation on every
 * hop, at the source host's link rate.  Paths are the fewest-hop ones
 * (breadth first, the first found), as the routes are.  0 on no memory. */
static uint64_t max_bdp(unsigned nodes, const bool *is_switch, const struct link_line *lk, unsigned links,
			unsigned packet_bytes, uint64_t *max_rtt)
{
	unsigned *queue = calloc(nodes, sizeof(unsigned));
	struct hop { bool seen; uint64_t delay, tx; } *h = calloc(nodes, sizeof(*h));
	uint64_t best = 0;

	for (unsigned src = 0; queue && h && src < nodes; src++) {
		uint64_t bw = 0;
		unsigned head = 0, tail = 0;

		if (is_switch[src])
			continue;
		memset(h, 0, nodes * sizeof(*h));
		h[src].seen = true;
		queue[tail++] = src;
		while (head < tail) {
			unsigned u = queue[head++];
			for (unsigned i = 0; i < links; i++) {
				unsigned v = lk[i].a == u ? lk[i].b : lk[i].b == u ? lk[i].a : nodes;
				if (v >= nodes || h[v].seen)
					continue;
				if (u == src && !bw)
					bw = lk[i].l.rate_bps;
				h[v].seen = true;
				h[v].delay = h[u].delay + lk[i].l.delay_ns;
				h[v].tx = h[u].tx + (uint64_t)packet_bytes * 8000000000ull / lk[i].l.rate_bps;
				if (is_switch[v])
					queue[tail++] = v;      /* hosts do not forward */
			}
		}
		for (unsigned d = 0; d < nodes; d++) {
			if (d == src || is_switch[d] || !h[d].seen)
				continue;
			uint64_t rtt = 2 * h[d].delay + h[d].tx, bdp = rtt * bw / 8000000000ull;
			best = bdp > best ? bdp : best;
			*max_rtt = rtt > *max_rtt ? rtt : *max_rtt;
		}
	}
	free(queue);
	free(h);
	return best;
}

/* ---- sim run, step by step ------------------------------------------------
 *
 * sim_run_hpcc reads the config (read_config), the topology
 * (read_topology), checks that every host has one port, derives the
 * hosts' and switches' options, builds the fabric (build_net: nodes,
 * links, sim_build, static routes), adds the flows (add_flows), starts
 * the samplers, runs (run_fabric) and writes the outputs.  Everything a
 * step makes is in struct run, freed at the end whichever step failed. */

/* The topology file: "nodes switches links", the switch ids, the links. */
struct topo_file {
	unsigned nodes, switches, links;
	bool *is_switch;
	unsigned *host_of;              /* node id -> host index */
	struct link_line *lk;
	uint64_t fastest;               /* the fastest link's rate */
};

struct run {
	const char *config, *out_dir;
	struct sim_run_opts *o;
	struct hpcc_config c;
	struct topo_file t;
	FILE *flows;                    /* opened with the topology, read by add_flows */
	struct sim_host_opts ho;
	struct sim_switch_opts so;
	struct sim_engine e;
	bool engine_live;
	struct sim_net *n;
	unsigned nflows, listed;        /* flows added; flows the file lists */
	unsigned *flow_src;             /* per flow: its source and destination node ids */
	uint64_t stop;
	struct sampler smp;
	struct queue_sampler qs;
};

/* Both input files opened, the topology read.  0, or 2 with a message. */
static int read_topology(struct run *r)
{
	struct hpcc_config *c = &r->c;
	struct topo_file *t = &r->t;
	FILE *topo = fopen(c->topology, "r");

	r->flows = fopen(c->flows, "r");
	if (!topo || !r->flows) {
		fprintf(stderr, "softrnic sim run: cannot open %s\n", topo ? c->flows : c->topology);
		if (topo)
			fclose(topo);
		return 2;
	}
	if (fscanf(topo, "%u %u %u", &t->nodes, &t->switches, &t->links) != 3 || t->nodes > SIM_MAX_NODES ||
	    t->switches > t->nodes) {
		fprintf(stderr, "softrnic sim run: %s: bad header (at most %u nodes)\n", c->topology, SIM_MAX_NODES);
		fclose(topo);
		return 2;
	}
	t->is_switch = calloc(t->nodes, sizeof(*t->is_switch));
	t->host_of = calloc(t->nodes, sizeof(*t->host_of));
	t->lk = calloc(t->links ? t->links : 1, sizeof(*t->lk));
	int rc = !t->is_switch || !t->host_of || !t->lk ? 2 : 0;
	for (unsigned i = 0; !rc && i < t->switches; i++) {
		unsigned id;
		if (fscanf(topo, "%u", &id) != 1 || id >= t->nodes)
			rc = 2;
		else
			t->is_switch[id] = true;
	}
	for (unsigned i = 0; !rc && i < t->links; i++) {
		struct link_line *l = &t->lk[i];
		char rate[64], delay[64];
		double err;
		if (fscanf(topo, "%u %u %63s %63s %lf", &l->a, &l->b, rate, delay, &err) != 5 || l->a >= t->nodes ||
		    l->b >= t->nodes || !parse_rate(rate)) {
			rc = 2;
			break;
		}
		l->l = (struct sim_link_opts){ .rate_bps = parse_rate(rate), .delay_ns = parse_delay(delay),
					       .loss = err > 0 ? err : c->error_rate };
		t->fastest = l->l.rate_bps > t->fastest ? l->l.rate_bps : t->fastest;
	}
	fclose(topo);
	if (rc)
		fprintf(stderr, "softrnic sim run: %s: unreadable switch list or link line\n", c->topology);
	return rc;
}

/* The hosts' options from the config: the MTU from the payload size, the
 * algorithm from CC_MODE, and for the window-based ones HPCC's window
 * and base RTT from the topology. */
static void host_opts_of(struct run *r)
{
	struct hpcc_config *c = &r->c;

	/* ENABLE_QCN turns the switches' ECN marking on or off; the hosts'
	 * reaction point follows it for the algorithms that hear marks
	 * (DCQCN, DCTCP), while HPCC and TIMELY, as in HPCC's simulator,
	 * react whatever it says. */
	r->ho = (struct sim_host_opts){ .dcqcn = c->qcn || c->cc_mode == 3 || c->cc_mode == 7 || c->cc_mode == 10,
					.cc = &c->cc, .qp_timeout = 10, .pint_log_base = c->pint_log_base,
					.pint_prob = c->pint_prob,
					.mtu = c->payload <= 256 ? 256 : c->payload <= 512 ? 512 : c->payload <= 1100 ? 1024
					       : c->payload <= 2100 ? 2048 : 4096,
					.dctcp = &c->dctcp, .timely = &c->timely, .hpcc = &c->hpcc };
	if (c->cc_mode != 1) {
		r->ho.cc_algo = c->cc_mode == 7 ? RNIC_CC_TIMELY : c->cc_mode == 8 ? RNIC_CC_DCTCP : RNIC_CC_HPCC;
		/* A packet on the wire: payload, IB headers, Ethernet/IP/UDP.
		 * HPCC's T is the largest base RTT (GLOBAL_T 1), and its W
		 * the BDP whether or not a window limits the sender. */
		uint64_t rtt = 0, bdp = max_bdp(r->t.nodes, r->t.is_switch, r->t.lk, r->t.links,
						r->ho.mtu + 48u + SIM_WIRE_OVERHEAD, &rtt);
		if (c->has_win)
			r->ho.cc_window = bdp;
		c->hpcc.base_rtt = rtt ? rtt : c->hpcc.base_rtt;
	}
}

/* The switches' options: buffer, PFC, and ECN with the thresholds of the
 * fastest link's rate, and every rate of the KMIN map with its KMAX and
 * PMAX. */
static void switch_opts_of(struct run *r)
{
	const struct hpcc_config *c = &r->c;

	r->so = (struct sim_switch_opts){
		.buffer_bytes = c->buffer_bytes, .alpha = 1.0 / 8, .pfc = c->pfc, .ecn = c->qcn,
		.kmin_bytes = (uint64_t)(map_at(&c->kmin, r->t.fastest, 400) * 1000),
		.kmax_bytes = (uint64_t)(map_at(&c->kmax, r->t.fastest, 1600) * 1000),
		.pmax = map_at(&c->pmax, r->t.fastest, 0.2),
	};
	for (unsigned i = 0; i < c->kmin.n && r->so.ecn_map_n < 8; i++)
		r->so.ecn_map[r->so.ecn_map_n++] = (struct sim_ecn_entry){
			.rate_bps = c->kmin.rate[i], .kmin_bytes = (uint64_t)(c->kmin.value[i] * 1000),
			.kmax_bytes = (uint64_t)(map_at(&c->kmax, c->kmin.rate[i], 1600) * 1000),
			.pmax = map_at(&c->pmax, c->kmin.rate[i], 0.2) };
}

/* A host here is one NIC with one port: say so of a topology whose hosts
 * have more (HPCC's own files never do; some of its derivatives'
 * multi-NIC hosts do), not just that it cannot be built.  0 or 2. */
static int check_host_ports(const struct run *r)
{
	const struct topo_file *t = &r->t;
	unsigned *degree = calloc(t->nodes ? t->nodes : 1, sizeof(unsigned));
	int rc = 0;

	for (unsigned i = 0; degree && i < t->links; i++) {
		degree[t->lk[i].a]++;
		degree[t->lk[i].b]++;
	}
	for (unsigned id = 0; degree && !rc && id < t->nodes; id++) {
		if (!t->is_switch[id] && degree[id] > 1) {
			fprintf(stderr, "softrnic sim run: %s: host %u has %u links; a host here has one NIC port "
					"(hosts with several NICs are not modelled)\n", r->c.topology, id, degree[id]);
			rc = 2;
		}
	}
	free(degree);
	return rc;
}

/* The fabric in o->partitions (or o->threads) partitions.  0, or 2 with a
 * message. */
static int set_partitions(struct run *r)
{
	const struct sim_run_opts *o = r->o;
	unsigned parts = o->partitions ? o->partitions : o->threads;
	bool samplers = o->sample_ns || o->queue_sample_ns;

	if (parts > 1 && (samplers || sim_net_set_partitions(r->n, parts, o->threads > 1))) {
		fprintf(stderr, "softrnic sim run: %u partitions: %s\n", parts,
			samplers ? "the samplers (--sample-us) need one" : "at most " SIM_MAX_PARTS_TEXT);
		return 2;
	}
	if (o->threads > 1 && o->partitions && o->partitions != o->threads) {
		fprintf(stderr, "softrnic sim run: --threads %u with --partitions %u: a thread per partition, or one\n",
			o->threads, o->partitions);
		return 2;
	}
	return 0;
}

/* The fabric: nodes in the files' order (our node ids are theirs), the
 * links, sim_build, then ROUTE_FILE's static routes.  0, or 2 with a
 * message. */
static int build_net(struct run *r)
{
	const struct topo_file *t = &r->t;
	int rc;

	sim_engine_init(&r->e);
	r->engine_live = true;
	if (!(r->n = sim_net_create(&r->e, r->o->seed, &r->ho, &r->so))) {
		fprintf(stderr, "softrnic sim run: cannot build the topology of %s\n", r->c.topology);
		return 2;
	}
	if ((rc = set_partitions(r)))
		return rc;
	for (unsigned id = 0; !rc && id < t->nodes; id++) {
		int x = t->is_switch[id] ? sim_add_switch(r->n) : sim_add_host(r->n);
		if (x < 0)
			rc = 2;
		else if (!t->is_switch[id])
			t->host_of[id] = (unsigned)x;
	}
	for (unsigned i = 0; !rc && i < t->links; i++)
		if (sim_link(r->n, t->lk[i].a, t->lk[i].b, &t->lk[i].l))
			rc = 2;
	if (rc || sim_build(r->n)) {
		fprintf(stderr, "softrnic sim run: cannot build the topology of %s%s\n", r->c.topology,
			sim_net_partitions(r->n) > 1 ? " in partitions (a link without delay between them?)" : "");
		return 2;
	}
	return r->c.routes[0] ? load_routes(r->n, r->c.routes, t->is_switch, t->host_of, t->nodes) : 0;
}

/* The flow file's flows (its first o->flow_limit, if set).  0, or 2 with
 * a message. */
static int add_flows(struct run *r)
{
	const struct topo_file *t = &r->t;
	unsigned limit = r->o->flow_limit;

	if (fscanf(r->flows, "%u", &r->listed) != 1)
		return 2;
	r->nflows = limit && r->listed > limit ? limit : r->listed;
	if (!(r->flow_src = calloc(r->nflows ? r->nflows : 1, sizeof(unsigned) * 2)))
		return 2;
	for (unsigned i = 0; i < r->nflows; i++) {
		unsigned s, d, pg, dport;
		uint64_t size;
		double start;
		if (fscanf(r->flows, "%u %u %u %u %" SCNu64 " %lf", &s, &d, &pg, &dport, &size, &start) != 6 ||
		    s >= t->nodes || d >= t->nodes || t->is_switch[s] || t->is_switch[d] ||
		    sim_add_flow(r->n, t->host_of[s], t->host_of[d], size, (uint64_t)(start * 1e9 + 0.5)) < 0) {
			fprintf(stderr, "softrnic sim run: %s: flow line %u unreadable or impossible\n", r->c.flows, i + 1);
			return 2;
		}
		r->flow_src[2 * i] = s;
		r->flow_src[2 * i + 1] = d;
	}
	return 0;
}

/* --sample-us's queues.csv and throughput.csv, and the switch queues'
 * histogram (queue_sample_ns); each a periodic event on the engine. */
static void start_samplers(struct run *r)
{
	char path[700];

	r->smp = (struct sampler){ .n = r->n, .period_ns = r->o->sample_ns, .stop_ns = r->stop,
				   .limit = r->o->trace_limit_bytes ? r->o->trace_limit_bytes : SIM_TRACE_LIMIT_DEFAULT };
	if (r->smp.period_ns) {
		snprintf(path, sizeof(path), "%s/queues.csv", r->out_dir);
		r->smp.f = fopen(path, "w");
		snprintf(path, sizeof(path), "%s/throughput.csv", r->out_dir);
		r->smp.tput = fopen(path, "w");
		r->smp.last = calloc(sim_flows(r->n) ? sim_flows(r->n) : 1, sizeof(*r->smp.last));
		if (r->smp.f && r->smp.tput && r->smp.last) {
			fprintf(r->smp.f, "t_us,node,port,queue_bytes,paused\n");
			fprintf(r->smp.tput, "t_us,flow,gbps\n");
			sim_at(&r->e, r->smp.period_ns, sample_queues, &r->smp, 0);
		}
	}
	r->qs = (struct queue_sampler){ .n = r->n, .period_ns = r->o->queue_sample_ns, .stop_ns = r->stop };
	if (r->qs.period_ns) {
		r->qs.bins = calloc(QUEUE_BINS, sizeof(*r->qs.bins));
		if (r->qs.bins)
			sim_at(&r->e, r->qs.period_ns, sample_switch_queues, &r->qs, 0);
	}
}

static void stop_samplers(struct run *r)
{
	if (r->smp.f)
		fclose(r->smp.f);
	if (r->smp.tput)
		fclose(r->smp.tput);
	r->smp.f = r->smp.tput = NULL;
	free(r->smp.last);
	r->smp.last = NULL;
}

/* sim_net_run's progress calls. */
static void run_progress(void *ctx, const struct sim_net *n)
{
	sim_progress_update(ctx, sim_net_now(n), sim_net_events(n), sim_flows_running(n));
}

/* Until every flow ended or the stop time, with a progress line.  0, or 2
 * with a message. */
static int run_fabric(struct run *r)
{
	struct sim_progress prog;
	int rc = 0;

	sim_progress_start(&prog, "softrnic sim run", r->stop, sim_flows(r->n));
	int err = sim_net_run(r->n, r->stop, run_progress, &prog);
	if (err) {
		fprintf(stderr, "softrnic sim run: %s\n", err == EAGAIN ? "cannot start its threads" : "out of memory");
		rc = 2;
	}
	sim_progress_end(&prog, sim_net_now(r->n), sim_net_events(r->n), sim_flows_running(r->n));
	return rc;
}

/* pfc.csv: pauses and paused time of every port that received a pause. */
static void write_pfc_csv(const struct run *r)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/pfc.csv", r->out_dir);
	FILE *pfc = fopen(path, "w");
	if (!pfc)
		return;
	fprintf(pfc, "node,port,is_host,pauses_received,paused_ns\n");
	for (unsigned node = 0; node < sim_nodes(r->n); node++)
		for (unsigned p = 0; p < sim_node_ports(r->n, node); p++)
			if (sim_port_pauses_received(r->n, node, p))
				fprintf(pfc, "%u,%u,%d,%" PRIu64 ",%" PRIu64 "\n", node, p, sim_node_is_host(r->n, node),
					sim_port_pauses_received(r->n, node, p), sim_port_paused_ns(r->n, node, p));
	fclose(pfc);
}

/* The flows done, for the summary's classes by size. */
struct done_flows {
	unsigned done, failed;
	double *slow;                   /* slowdowns, then scratch of the same size */
	uint64_t *sizes;
};

/* HPCC's FCT lines and our flows.csv, one line per flow; the finished
 * flows' sizes and slowdowns into d. */
static void write_flows(const struct run *r, FILE *fct, FILE *csv, struct done_flows *d)
{
	fprintf(csv, "flow,src,dst,bytes,start_ns,fct_ns,standalone_ns,slowdown,failed\n");
	for (unsigned i = 0; i < r->nflows; i++) {
		const struct sim_flow_result *f = sim_flow(r->n, i);
		uint64_t one_way = 0, rate = 0;
		sim_path(r->n, f->src, f->dst, &one_way, &rate);
		/* Alone on an idle path: the bytes with their headers at the
		 * path's slowest rate, and a round trip of propagation. */
		uint64_t pkts = (f->bytes + r->ho.mtu - 1) / r->ho.mtu;
		uint64_t wire = f->bytes + pkts * (48u + SIM_WIRE_OVERHEAD);
		uint64_t standalone = 2 * one_way + (rate ? wire * 8 * 1000000000ull / rate : 0);
		double sd = f->fct_ns && standalone ? (double)f->fct_ns / (double)standalone : 0;
		unsigned src = r->flow_src[2 * i], dst = r->flow_src[2 * i + 1];
		fprintf(csv, "%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%d\n", i, src, dst, f->bytes,
			f->start_ns, f->fct_ns, standalone, sd, f->failed);
		if (f->fct_ns && !f->failed) {
			fprintf(fct, "%08x %08x %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", hpcc_ip(src),
				hpcc_ip(dst), 10000 + i, 100u, f->bytes, f->start_ns, f->fct_ns, standalone);
			d->sizes[d->done] = f->bytes;
			d->slow[d->done++] = sd;
		}
		d->failed += f->failed;
	}
}

/* summary.txt's header and counters, and o->result's. */
static void write_summary_counts(struct run *r, FILE *sum, const struct done_flows *d)
{
	const struct hpcc_config *c = &r->c;
	const struct sim_run_opts *o = r->o;
	const struct sim_net_stats *st = sim_net_stats(r->n);

	fprintf(sum, "sim run %s: %u nodes (%u switches), %u links, %u flows", r->config, r->t.nodes, r->t.switches,
		r->t.links, r->nflows);
	if (r->nflows < r->listed)
		fprintf(sum, " (the first of the file's %u)", r->listed);
	if (sim_net_partitions(r->n) > 1)
		fprintf(sum, "; %u partitions on %u thread%s, windows of %" PRIu64 " ns", sim_net_partitions(r->n),
			o->threads > 1 ? o->threads : 1, o->threads > 1 ? "s" : "", sim_net_lookahead(r->n));
	if (c->cc_mode != 1)
		fprintf(sum, "; %s, window %" PRIu64 " bytes",
			c->cc_mode == 7 ? "TIMELY" : c->cc_mode == 3 ? "HPCC" : c->cc_mode == 10 ? "HPCC-PINT" : "DCTCP",
			r->ho.cc_window);
	fprintf(sum, "; seed %" PRIu64 "; %s %s, PFC %s, %u ECN map entries, buffer %" PRIu64 " bytes\n", o->seed,
		c->cc_mode == 1 ? "DCQCN" : "ECN", c->qcn ? "on" : "off", c->pfc ? "on" : "off", r->so.ecn_map_n,
		r->so.buffer_bytes);
	fprintf(sum, "  %u flows done, %u failed, %u unfinished at %.3f s simulated (%" PRIu64 " events, %" PRIu64
		     " packet-hops)\n", d->done, d->failed, r->nflows - d->done - d->failed,
		(double)sim_net_now(r->n) / 1e9, sim_net_events(r->n), st->packet_hops);
	fprintf(sum, "  %" PRIu64 " drops, %" PRIu64 " pauses, %" PRIu64 " ECN marks, %" PRIu64 " CNPs, %" PRIu64
		     " retransmitted packets\n",
		st->drops + st->headroom_drops, st->pauses_sent, st->ecn_marks, sim_rnic_counter(r->n, "cnp_sent"),
		sim_rnic_counter(r->n, "retransmits"));
	r->o->result = (struct sim_run_result){
		.flows = r->nflows, .done = d->done, .failed = d->failed,
		.drops = st->drops + st->headroom_drops, .pauses = st->pauses_sent, .ecn_marks = st->ecn_marks,
		.cnps = sim_rnic_counter(r->n, "cnp_sent"),
	};
}

/* The switch queues' percentiles (queue_sample_ns), into the summary and
 * o->result. */
static void write_summary_queues(struct run *r, FILE *sum)
{
	const struct queue_sampler *qs = &r->qs;
	struct sim_run_result *res = &r->o->result;

	if (!qs->bins || !qs->samples)
		return;
	res->queue_samples = qs->samples;
	res->queue_p50 = queue_percentile(qs, 50);
	res->queue_p95 = queue_percentile(qs, 95);
	res->queue_p99 = queue_percentile(qs, 99);
	res->queue_max = qs->max;
	fprintf(sum, "  switch egress queues holding packets, sampled every %" PRIu64 " us: %" PRIu64
		     " samples, p50 %" PRIu64 " KiB, p95 %" PRIu64 " KiB, p99 %" PRIu64 " KiB, max %" PRIu64 " KiB\n",
		qs->period_ns / 1000, qs->samples, res->queue_p50 / 1024, res->queue_p95 / 1024, res->queue_p99 / 1024,
		(qs->max + 1023) / 1024);
}

/* FCT slowdown by size, as HPCC's fct_analysis does by percentile. */
static void write_summary_sizes(struct run *r, FILE *sum, struct done_flows *d)
{
	static const uint64_t edges[] = SIM_RUN_SIZE_EDGES;
	uint64_t lo = 0;

	for (unsigned b = 0; b < sizeof(edges) / sizeof(edges[0]); lo = edges[b++]) {
		double *v = d->slow + d->done;  /* scratch past the slowdowns */
		unsigned k = 0;
		for (unsigned i = 0; i < d->done; i++)
			if (d->sizes[i] >= lo && d->sizes[i] < edges[b])
				v[k++] = d->slow[i];
		if (!k)
			continue;
		qsort(v, k, sizeof(v[0]), sim_cmp_double);
		char hi[24] = "";        /* the last range is open */
		if (edges[b] != UINT64_MAX)
			snprintf(hi, sizeof(hi), "%" PRIu64, edges[b]);
		fprintf(sum, "  sizes %" PRIu64 "..%s bytes: %u flows, slowdown p50 %.2f p95 %.2f p99 %.2f\n", lo, hi, k,
			v[k / 2], v[k * 95 / 100], v[k * 99 / 100]);
		r->o->result.by_size[b] = (struct sim_size_class){ k, v[k / 2], v[k * 95 / 100], v[k * 99 / 100] };
	}
}

/* The FCT file (named by FCT_OUTPUT_FILE, in out_dir), flows.csv and
 * summary.txt.  0, or 2 with a message. */
static int write_outputs(struct run *r)
{
	const char *name = r->c.fct_out[0] ? strrchr(r->c.fct_out, '/') ? strrchr(r->c.fct_out, '/') + 1 : r->c.fct_out
					   : "fct.txt";
	char path[700];
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", r->out_dir, name);
	snprintf(r->o->fct_path, sizeof(r->o->fct_path), "%s", path);
	FILE *fct = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/flows.csv", r->out_dir);
	FILE *csv = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/summary.txt", r->out_dir);
	FILE *sum = fopen(path, "w");
	struct done_flows d = {
		.slow = calloc(2 * (size_t)(r->nflows ? r->nflows : 1), sizeof(double)),
		.sizes = calloc(r->nflows ? r->nflows : 1, sizeof(uint64_t)),
	};
	if (!fct || !csv || !sum || !d.slow || !d.sizes) {
		fprintf(stderr, "softrnic sim run: cannot write in %s\n", r->out_dir);
		rc = 2;
	} else {
		write_flows(r, fct, csv, &d);
		write_summary_counts(r, sum, &d);
		write_summary_queues(r, sum);
		write_summary_sizes(r, sum, &d);
		if (r->smp.cut_at_ns)
			fprintf(sum, "  queues.csv and throughput.csv stop at %.3f ms: they reached %.3g MB "
				     "(--trace-limit-mb)\n", (double)r->smp.cut_at_ns / 1e6, (double)r->smp.limit / 1048576);
		if (r->c.ignored[0])
			fprintf(sum, "  keys of %s not used by this model: %s\n", r->config, r->c.ignored);
	}
	if (fct)
		fclose(fct);
	if (csv)
		fclose(csv);
	if (sum)
		fclose(sum);
	free(d.slow);
	free(d.sizes);
	return rc;
}

static void run_free(struct run *r)
{
	if (r->flows)
		fclose(r->flows);
	stop_samplers(r);
	free(r->qs.bins);
	free(r->flow_src);
	free(r->t.is_switch);
	free(r->t.host_of);
	free(r->t.lk);
	sim_net_destroy(r->n);
	if (r->engine_live)
		sim_engine_free(&r->e);
}

int sim_run_hpcc(const char *config, const char *out_dir, struct sim_run_opts *o)
{
	struct run r = { .config = config, .out_dir = out_dir, .o = o };
	int rc = read_config(config, &r.c);

	if (rc)
		return rc;
	rc = read_topology(&r);
	if (!rc) {
		host_opts_of(&r);
		switch_opts_of(&r);
		rc = check_host_ports(&r);
	}
	if (!rc)
		rc = build_net(&r);
	if (!rc)
		rc = add_flows(&r);
	if (!rc) {
		fclose(r.flows);
		r.flows = NULL;
		r.stop = (uint64_t)(r.c.stop_s * 1e9);
		start_samplers(&r);
		rc = run_fabric(&r);
		stop_samplers(&r);
		write_pfc_csv(&r);
		int wrc = write_outputs(&r);
		rc = rc ? rc : wrc;
	}
	run_free(&r);
	return rc ? 2 : 0;
}
