/*
 * exp_hpcc.c — the experiments that run the HPCC repository's own files
 * (data/hpcc) through `sim run` (hpcc.h): hpcc-workload (its fat-tree and
 * DCQCN config, then the FCT slowdown by size as its fct_analysis.py
 * computes it, fct.h) and cc-compare (the HPCC paper's comparison of
 * congestion controls, each configured as its run.py does).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "sim/exp_int.h"
#include "sim/fct.h"
#include "sim/gen.h"
#include "sim/hpcc.h"

/* The files of data/hpcc/SOURCES.md: HPCC's fat.txt, the config its run.py
 * writes for `--cc dcqcn --bw 100 --topo fat`, and a flow file of its
 * traffic_gen.py (web search, 320 hosts, 30% load, 100 Gb/s, 50 ms). */
#define HPCC_CONFIG "/hpcc/mix/config_fat_websearch_l30_t50ms_dcqcn.txt"
#define HPCC_QUICK_FLOWS 1000   /* the file's first ~1.4 ms of arrivals */

int exp_hpcc_workload(const struct sim_exp_opts *o)
{
	char config[600];
	struct sim_run_opts ro = { .seed = o->seed, .flow_limit = o->quick ? HPCC_QUICK_FLOWS : 0 };

	if (o->config[0])
		snprintf(config, sizeof(config), "%s", o->config);
	else
		snprintf(config, sizeof(config), "%s%s", SOFTRNIC_DATA_DIR, HPCC_CONFIG);
	int rc = sim_run_hpcc(config, o->out, &ro);
	if (rc)
		return rc;

	struct sim_fct_bucket b[100];
	unsigned nb, flows;
	rc = sim_fct_analyze(ro.fct_path, 5, SIM_FCT_TIME_LIMIT_NS, b, &nb, &flows);
	if (rc) {
		fprintf(stderr, "softrnic sim: %s: %s\n", ro.fct_path, strerror(rc));
		return 2;
	}
	FILE *csv = exp_open_out(o, "fct_analysis.csv");
	char path[600];
	snprintf(path, sizeof(path), "%s/summary.txt", o->out);
	FILE *sum = fopen(path, "a");
	if (!csv || !sum) {
		if (csv)
			fclose(csv);
		if (sum)
			fclose(sum);
		return 2;
	}
	fprintf(csv, "percentile,size,flows,p50,p95,p99\n");
	fprintf(sum, "  FCT slowdown by size as HPCC's analysis/fct_analysis.py computes it (%u flows in 5%% buckets;\n"
		     "  each bucket's largest size, then p50 p95 p99):\n", flows);
	for (unsigned i = 0; i < nb; i++) {
		fprintf(csv, "%.2f,%" PRIu64 ",%u,%.3f,%.3f,%.3f\n", b[i].percentile / 100.0, b[i].size, b[i].flows,
			b[i].p50, b[i].p95, b[i].p99);
		fprintf(sum, "    %.2f %9" PRIu64 "  %6.2f %6.2f %6.2f\n", b[i].percentile / 100.0, b[i].size, b[i].p50,
			b[i].p95, b[i].p99);
	}
	fclose(csv);
	fclose(sum);
	return 0;
}

/* cc-compare: the HPCC paper's comparison (Li et al., SIGCOMM'19, §5.2,
 * Figure 11) on its own fat-tree: data/hpcc's 320 hosts under web search
 * at 30% load (the HPCC repository's flow file) and at 50% (a draw of
 * `sim gen` from the same distribution and the seed), each under DCQCN,
 * HPCC, TIMELY and DCTCP (and HPCC-PINT but in --quick) configured as
 * the HPCC repository's run.py configures them at 100 Gb/s (the keys
 * below over its DCQCN config). */
struct cc_setting {
	const char *name;       /* run.py's --cc, as in its file names */
	const char *label;
	const char *keys;       /* replace the DCQCN config's lines */
};

static const struct cc_setting CC_SETTINGS[] = {
	{ "dcqcn", "DCQCN", "" },
	{ "hp95", "HPCC",
	  "CC_MODE 3\nRATE_AI 40Mb/s\nRATE_HAI 40Mb/s\nHAS_WIN 1\nVAR_WIN 1\nFAST_REACT 1\nINT_MULTI 4\n"
	  "ACK_HIGH_PRIO 0\n" },
	{ "timely", "TIMELY", "CC_MODE 7\nRATE_AI 100Mb/s\nRATE_HAI 500Mb/s\n" },
	{ "dctcp", "DCTCP",
	  "CC_MODE 8\nRATE_AI 10Mb/s\nRATE_HAI 10Mb/s\nDCTCP_RATE_AI 615Mb/s\nEWMA_GAIN 0.0625\nHAS_WIN 1\n"
	  "VAR_WIN 1\nACK_HIGH_PRIO 0\nKMAX_MAP 2 100000000000 300 400000000000 1200\n"
	  "KMIN_MAP 2 100000000000 300 400000000000 1200\nPMAX_MAP 2 100000000000 1.00 400000000000 1.00\n" },
	/* Not in the short form: HPCC's own comparison is the four above. */
	{ "hpccPint95", "HPCC-PINT",
	  "CC_MODE 10\nRATE_AI 40Mb/s\nRATE_HAI 40Mb/s\nHAS_WIN 1\nVAR_WIN 1\nFAST_REACT 1\nINT_MULTI 4\n"
	  "ACK_HIGH_PRIO 0\nPINT_LOG_BASE 1.01\nPINT_PROB 1.0\n" },
};
#define CC_QUICK_SETTINGS 4     /* the short form runs the first four */

#define CC_QUICK_FLOWS 600      /* the 30% file's first ~0.8 ms of arrivals */
#define CC_QUEUE_SAMPLE_NS 10000

/* The value `keys` gives `key` ("" if none), into val. */
static bool override_of(const char *keys, const char *key, char *val, size_t cap)
{
	size_t klen = strlen(key);

	for (const char *l = keys; *l;) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);
		if (len > klen && !strncmp(l, key, klen) && l[klen] == ' ') {
			snprintf(val, cap, "%.*s", (int)(len - klen - 1), l + klen + 1);
			return true;
		}
		l += len + (end ? 1 : 0);
	}
	return false;
}

/* Writes `path`: the DCQCN config with the setting's keys and our files. */
static int write_cc_config(const char *path, const struct cc_setting *cc, const char *flows, const char *fct)
{
	char base[600], line[512], key[64], val[256];
	snprintf(base, sizeof(base), "%s%s", SOFTRNIC_DATA_DIR, HPCC_CONFIG);
	FILE *in = fopen(base, "r"), *out = fopen(path, "w");

	if (!in || !out) {
		fprintf(stderr, "softrnic sim: cannot read %s or write %s\n", base, path);
		if (in)
			fclose(in);
		if (out)
			fclose(out);
		return 2;
	}
	while (fgets(line, sizeof(line), in)) {
		if (sscanf(line, "%63s", key) != 1) {
			fputs(line, out);
			continue;
		}
		if (!strcmp(key, "TOPOLOGY_FILE"))
			fprintf(out, "TOPOLOGY_FILE %s/hpcc/mix/fat.txt\n", SOFTRNIC_DATA_DIR);
		else if (!strcmp(key, "FLOW_FILE"))
			fprintf(out, "FLOW_FILE %s\n", flows);
		else if (!strcmp(key, "FCT_OUTPUT_FILE"))
			fprintf(out, "FCT_OUTPUT_FILE %s\n", fct);
		else if (override_of(cc->keys, key, val, sizeof(val)))
			fprintf(out, "%s %s\n", key, val);
		else
			fputs(line, out);
	}
	fclose(in);
	return fclose(out) ? 2 : 0;
}

int exp_cc_compare(const struct sim_exp_opts *o)
{
	static const unsigned loads[] = { 30, 50 };
	unsigned nloads = o->quick ? 1 : 2, limit = o->flows ? o->flows : o->quick ? CC_QUICK_FLOWS : 0;
	char flows[2][700], path[900], dir[800];
	int rc = 0;

	snprintf(flows[0], sizeof(flows[0]), "%s/hpcc/mix/websearch_l30_t50ms.txt", SOFTRNIC_DATA_DIR);
	snprintf(flows[1], sizeof(flows[1]), "%s/websearch_l50_t50ms.txt", o->out);
	if (nloads > 1) {
		char cdf[600];
		snprintf(cdf, sizeof(cdf), "%s/cdf/websearch.txt", SOFTRNIC_DATA_DIR);
		FILE *f = fopen(flows[1], "w");
		if (!f)
			return 2;
		rc = sim_gen_write(f, cdf, 320, 0.5, 100e9, 0.05, o->seed);
		if (fclose(f) || rc)
			return 2;
	}
	FILE *fct_csv = exp_open_out(o, "cc-compare.csv"), *runs = exp_open_out(o, "runs.csv");
	snprintf(path, sizeof(path), "%s/summary.txt", o->out);
	FILE *sum = fopen(path, "w");
	if (!fct_csv || !runs || !sum) {
		rc = 2;
		goto out;
	}
	fprintf(fct_csv, "load,cc,percentile,size,flows,p50,p95,p99\n");
	fprintf(runs, "load,cc,flows,done,failed,drops,pauses,ecn_marks,cnps,queue_samples,queue_p50,queue_p95,"
		      "queue_p99,queue_max");
	static const char *const classes[] = { "lt10k", "10k_100k", "100k_1m", "1m_10m", "ge10m" };
	for (unsigned c = 0; c < 5; c++)
		fprintf(runs, ",%s_flows,%s_p50,%s_p95,%s_p99", classes[c], classes[c], classes[c], classes[c]);
	fprintf(runs, "\n");
	fprintf(sum, "cc-compare: HPCC's 320-host fat-tree under web search, seed %" PRIu64 "%s", o->seed,
		limit ? "" : "\n");
	if (limit)
		fprintf(sum, ", the first %u flows of each flow file\n", limit);
	for (unsigned li = 0; li < nloads; li++) {
		fprintf(sum, "  load %u%%: FCT slowdown p95 / p99 by size; switch queues p99 / max (KiB); pauses\n"
			     "    %-9s %13s %13s %13s %13s %13s %15s %8s\n", loads[li], "", "<10KB", "10-100KB",
			"100KB-1MB", "1-10MB", ">=10MB", "queue p99/max", "pauses");
		unsigned nccs = o->quick ? CC_QUICK_SETTINGS : sizeof(CC_SETTINGS) / sizeof(CC_SETTINGS[0]);
		for (unsigned ci = 0; ci < nccs; ci++) {
			const struct cc_setting *cc = &CC_SETTINGS[ci];
			char config[900], fct[900];
			snprintf(dir, sizeof(dir), "%s/l%u_%s", o->out, loads[li], cc->name);
			sim_make_dirs(dir);
			snprintf(config, sizeof(config), "%s/config.txt", dir);
			snprintf(fct, sizeof(fct), "%s/fct.txt", dir);
			if ((rc = write_cc_config(config, cc, flows[li], fct)))
				goto out;
			struct sim_run_opts ro = { .seed = o->seed, .flow_limit = limit,
						   .queue_sample_ns = CC_QUEUE_SAMPLE_NS };
			if ((rc = sim_run_hpcc(config, dir, &ro)))
				goto out;
			const struct sim_run_result *r = &ro.result;
			struct sim_fct_bucket b[100];
			unsigned nb, counted;
			if ((rc = sim_fct_analyze(ro.fct_path, 5, SIM_FCT_TIME_LIMIT_NS, b, &nb, &counted))) {
				fprintf(stderr, "softrnic sim: %s: %s\n", ro.fct_path, strerror(rc));
				rc = 2;
				goto out;
			}
			for (unsigned i = 0; i < nb; i++)
				fprintf(fct_csv, "%u,%s,%.2f,%" PRIu64 ",%u,%.3f,%.3f,%.3f\n", loads[li], cc->label,
					b[i].percentile / 100.0, b[i].size, b[i].flows, b[i].p50, b[i].p95, b[i].p99);
			fprintf(runs, "%u,%s,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
				      ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
				loads[li], cc->label, r->flows, r->done, r->failed, r->drops, r->pauses, r->ecn_marks, r->cnps,
				r->queue_samples, r->queue_p50, r->queue_p95, r->queue_p99, r->queue_max);
			fprintf(sum, "    %-9s", cc->label);
			for (unsigned c = 0; c < 5; c++) {
				const struct sim_size_class *k = &r->by_size[c];
				fprintf(runs, ",%u,%.3f,%.3f,%.3f", k->flows, k->p50, k->p95, k->p99);
				if (k->flows)
					fprintf(sum, " %6.2f/%-6.2f", k->p95, k->p99);
				else
					fprintf(sum, " %13s", "-");
			}
			fprintf(runs, "\n");
			fprintf(sum, " %7" PRIu64 "/%-7" PRIu64 " %8" PRIu64 "%s\n", r->queue_p99 / 1024,
				(r->queue_max + 1023) / 1024, r->pauses,
				r->done + r->failed < r->flows || r->failed ? "  (not every flow done)" : "");
		}
	}
out:
	if (fct_csv)
		fclose(fct_csv);
	if (runs)
		fclose(runs);
	if (sum)
		fclose(sum);
	return rc;
}
