/*
 * nvmf_main.c — `softrnic-nvmf`, NVMe over Fabrics on softrnic (the
 * `softrnic nvmf ...` subcommand runs it):
 *
 *   softrnic-nvmf serve --nqn NQN (--file PATH [--size SIZE] | --mem SIZE)
 *                       [--addr A] [--port P] [--block-size 512|4096]
 *                       [--allow-host NQN] [--spin-us N] [-v]
 *   softrnic-nvmf discover [--addr A] [--port P]
 *   softrnic-nvmf perf --nqn NQN [--addr A] [--port P] [--rw read|write|randread|randwrite]
 *                      [--bs SIZE] [--qd N] [--time SECONDS] [--span SIZE] [--verify]
 *                      [--kato MS] [--no-inline] [--invalidate] [--hostnqn NQN]
 *
 * serve prints its counters to stderr when it stops (SIGINT/SIGTERM).
 * Exit status: 0 success; 1 perf ran but saw failed commands, verify
 * mismatches or a missing invalidation; 2 usage or a failure to connect
 * or serve (a one-line message on stderr, with the NVMe status if a
 * command failed).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvmf/host.h"
#include "nvmf/namespace.h"
#include "nvmf/perf.h"
#include "nvmf/rdma_transport.h"
#include "nvmf/target.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: softrnic-nvmf serve --nqn NQN (--file PATH [--size SIZE] | --mem SIZE) [--addr A] [--port P]\n"
		"                           [--block-size 512|4096] [--allow-host NQN] [--spin-us N] [-v]\n"
		"       softrnic-nvmf discover [--addr A] [--port P]\n"
		"       softrnic-nvmf perf --nqn NQN [--addr A] [--port P] [--rw read|write|randread|randwrite]\n"
		"                          [--bs SIZE] [--qd N] [--time SECONDS] [--span SIZE] [--verify]\n"
		"                          [--kato MS] [--no-inline] [--invalidate] [--hostnqn NQN] [--seed N]\n"
		"  (default address 127.0.0.1 for discover and perf, port 4420)\n");
	return 2;
}

static bool parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned long long mul = 1;

	if (end == s)
		return false;
	if (*end == 'k' || *end == 'K')
		mul = 1ull << 10, end++;
	else if (*end == 'm' || *end == 'M')
		mul = 1ull << 20, end++;
	else if (*end == 'g' || *end == 'G')
		mul = 1ull << 30, end++;
	if (*end || v == 0 || v > (1ull << 44) / mul)
		return false;
	*out = v * mul;
	return true;
}

static bool parse_port(const char *s, uint16_t *port)
{
	char *end;
	long p = strtol(s, &end, 10);

	if (*end || p <= 0 || p > 65535)
		return false;
	*port = (uint16_t)p;
	return true;
}

/* A whole number 0..max, nothing after it. */
static bool parse_uint(const char *s, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (end == s || *end || *s == '-' || v > max)
		return false;
	*out = (unsigned)v;
	return true;
}

struct serve_ready {
	const char *addr;
	uint16_t port;
	const char *nqn;
	uint64_t bytes;
};

static void say_ready(void *ctx)
{
	const struct serve_ready *r = ctx;

	fprintf(stderr, "nvmf: serving %s on %s:%u, %" PRIu64 " bytes\n", r->nqn, r->addr ? r->addr : "*", r->port,
		r->bytes);
}

static void print_stats(const struct nvmf_target *t)
{
	const struct nvmf_stats *s = &t->stats;
	const struct nvmf_rdma_stats *x = &nvmf_rdma_stats;

	fprintf(stderr,
		"commands %" PRIu64 "\nerrors %" PRIu64 "\ninvalid_opcode %" PRIu64 "\ninvalid_field %" PRIu64
		"\ninvalid_ns %" PRIu64 "\nsgl_invalid %" PRIu64 "\nlba_range %" PRIu64 "\nseq_error %" PRIu64
		"\nconnects %" PRIu64 "\nconnect_rejected %" PRIu64 "\nreads %" PRIu64 "\nwrites %" PRIu64
		"\nread_bytes %" PRIu64 "\nwrite_bytes %" PRIu64 "\nflushes %" PRIu64 "\nwrite_zeroes %" PRIu64
		"\ndeallocates %" PRIu64 "\nkeep_alives %" PRIu64 "\nkeep_alive_expired %" PRIu64
		"\naer_held %" PRIu64 "\nctrls_created %" PRIu64 "\nctrls_freed %" PRIu64 "\nqueues_accepted %" PRIu64
		"\nqueues_rejected %" PRIu64 "\nqueues_closed %" PRIu64 "\nshort_capsules %" PRIu64
		"\ntransfer_errors %" PRIu64 "\nrdma_reads %" PRIu64 "\nrdma_writes %" PRIu64
		"\nin_capsule_writes %" PRIu64 "\nsends_with_invalidate %" PRIu64 "\n",
		s->commands, s->errors, s->invalid_opcode, s->invalid_field, s->invalid_ns, s->sgl_invalid,
		s->lba_range, s->seq_error, s->connects, s->connect_rejected, s->reads, s->writes, s->read_bytes,
		s->write_bytes, s->flushes, s->write_zeroes, s->deallocates, s->keep_alives, s->keep_alive_expired,
		s->aer_held, s->ctrls_created, s->ctrls_freed, x->queues_accepted, x->queues_rejected,
		x->queues_closed, x->short_capsules, x->transfer_errors, x->rdma_reads, x->rdma_writes,
		x->in_capsule_writes, x->sends_with_invalidate);
}

static int serve(int argc, char **argv)
{
	struct nvmf_target_config cfg = { 0 };
	struct nvmf_serve_opts so = { .port = NVMF_RDMA_PORT, .spin_us = 50 };
	const char *file = NULL;
	uint64_t mem = 0, size = 0, bs = 512;
	struct nvmf_ns ns;
	static struct nvmf_target t;
	struct sigaction sa;
	int e;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-v")) {
			so.verbose = true;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--nqn"))
			cfg.nqn = v;
		else if (!strcmp(a, "--file"))
			file = v;
		else if (!strcmp(a, "--mem") && parse_size(v, &mem))
			;
		else if (!strcmp(a, "--size") && parse_size(v, &size))
			;
		else if (!strcmp(a, "--addr"))
			so.addr = v;
		else if (!strcmp(a, "--port") && parse_port(v, &so.port))
			;
		else if (!strcmp(a, "--block-size") && parse_size(v, &bs) && (bs == 512 || bs == 4096))
			;
		else if (!strcmp(a, "--allow-host"))
			cfg.allow_host = v;
		else if (!strcmp(a, "--spin-us") && parse_uint(v, 1000000, &so.spin_us))
			;
		else
			return usage();
	}
	if (!cfg.nqn || !file == !mem)
		return usage();
	unsigned shift = bs == 4096 ? 12 : 9;
	e = file ? nvmf_ns_open_file(&ns, file, size, shift) : nvmf_ns_open_mem(&ns, mem, shift);
	if (e) {
		fprintf(stderr, "nvmf: cannot open the namespace %s: %s\n", file ? file : "(memory)", strerror(e));
		return 2;
	}
	cfg.traddr = so.addr;
	cfg.port = so.port;
	if (nvmf_target_init(&t, &cfg, &ns)) {
		fprintf(stderr, "nvmf: '%s' cannot be the subsystem NQN (empty, too long, or the discovery NQN)\n",
			cfg.nqn);
		nvmf_ns_close(&ns);
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	struct serve_ready ready = { so.addr, so.port, cfg.nqn, ns.blocks << ns.lba_shift };
	so.ready = say_ready;
	so.ready_ctx = &ready;
	e = nvmf_rdma_serve(&t, &so, &stop_flag);
	print_stats(&t);
	nvmf_ns_flush(&ns);
	nvmf_ns_close(&ns);
	return e ? 2 : 0;
}

/* Options common to discover and perf. */
struct client_args {
	const char *addr, *hostnqn, *nqn;
	char port[8];
	uint32_t kato_ms;
};

static int client_arg(struct client_args *c, const char *a, const char *v)
{
	uint16_t p;
	char *end;

	if (!strcmp(a, "--addr"))
		c->addr = v;
	else if (!strcmp(a, "--port") && parse_port(v, &p))
		snprintf(c->port, sizeof(c->port), "%u", p);
	else if (!strcmp(a, "--hostnqn"))
		c->hostnqn = v;
	else if (!strcmp(a, "--nqn"))
		c->nqn = v;
	else if (!strcmp(a, "--kato") && (c->kato_ms = (uint32_t)strtoul(v, &end, 10), !*end))
		;
	else
		return -1;
	return 0;
}

static int discover(int argc, char **argv)
{
	struct client_args c = { .addr = "127.0.0.1", .port = "4420" };
	struct nvmf_host h;
	struct nvme_cpl cpl;
	uint16_t status;
	static uint8_t log[8192];

	for (int i = 1; i < argc; i++)
		if (i + 1 >= argc || client_arg(&c, argv[i], argv[i + 1]))
			return usage();
		else
			i++;
	struct nvmf_host_opts o = { .addr = c.addr, .port = c.port, .subnqn = NVMF_DISCOVERY_NQN,
				    .hostnqn = c.hostnqn, .kato_ms = 0 };
	if (nvmf_host_connect(&h, &o, &status)) {
		fprintf(stderr, "nvmf discover: %s\n", h.err);
		nvmf_host_close(&h);
		return 2;
	}
	/* The header first, then the whole log (NVMe-oF 1.1 §5.3). */
	struct nvme_cmd cmd = { .opcode = NVME_ADMIN_GET_LOG_PAGE, .cdw10 = 0x70 | (1024 / 4 - 1) << 16 };
	if (nvmf_host_admin(&h, &cmd, log, 1024, false, &cpl) || cpl.status) {
		fprintf(stderr, "nvmf discover: get log page: status 0x%03x\n", cpl.status);
		nvmf_host_close(&h);
		return 2;
	}
	uint64_t numrec = get_le64(log + 8);
	uint32_t len = 1024u * (uint32_t)(1 + (numrec < 7 ? numrec : 7));
	cmd = (struct nvme_cmd){ .opcode = NVME_ADMIN_GET_LOG_PAGE, .cdw10 = 0x70 | (len / 4 - 1) << 16 };
	if (nvmf_host_admin(&h, &cmd, log, len, false, &cpl) || cpl.status) {
		fprintf(stderr, "nvmf discover: get log page: status 0x%03x\n", cpl.status);
		nvmf_host_close(&h);
		return 2;
	}
	printf("genctr %" PRIu64 " records %" PRIu64 "\n", get_le64(log), numrec);
	for (uint64_t i = 0; i < numrec && i < 7; i++) {
		const uint8_t *e = log + 1024 * (i + 1);
		printf("entry %" PRIu64 ": trtype %s adrfam %s subtype %s traddr %.256s trsvcid %.32s subnqn %.256s\n", i,
		       e[0] == 1 ? "rdma" : "other", e[1] == 1 ? "ipv4" : "other",
		       e[2] == 2 ? "nvm" : e[2] == 1 || e[2] == 3 ? "discovery" : "other", (const char *)e + 512,
		       (const char *)e + 32, (const char *)e + 256);
	}
	nvmf_host_close(&h);
	return 0;
}

static int perf(int argc, char **argv)
{
	struct client_args c = { .addr = "127.0.0.1", .port = "4420", .kato_ms = 5000 };
	struct nvmf_perf_opts po = { .rw = PERF_RANDREAD, .bs = 4096, .qd = 8, .seconds = 2 };
	struct nvmf_perf_result res;
	struct nvmf_host h;
	uint16_t status;
	static const char *const rw_names[] = { "read", "write", "randread", "randwrite" };

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;
		char *end;
		if (!strcmp(a, "--verify")) {
			po.verify = true;
			continue;
		}
		if (!strcmp(a, "--no-inline")) {
			po.no_inline = true;
			continue;
		}
		if (!strcmp(a, "--invalidate")) {
			po.invalidate = true;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!client_arg(&c, a, v))
			continue;
		if (!strcmp(a, "--rw")) {
			int k = -1;
			for (int j = 0; j < 4; j++)
				if (!strcmp(v, rw_names[j]))
					k = j;
			if (k < 0)
				return usage();
			po.rw = (enum nvmf_perf_rw)k;
		} else if (!strcmp(a, "--bs") && parse_size(v, &n) && n <= (1u << 24)) {
			po.bs = (uint32_t)n;
		} else if (!strcmp(a, "--qd") && (n = strtoull(v, &end, 10), !*end) && n >= 1 &&
			   n < NVMF_RDMA_MAX_QUEUE_SIZE) {
			po.qd = (unsigned)n;
		} else if (!strcmp(a, "--time") && (po.seconds = strtod(v, &end), !*end) && po.seconds > 0 &&
			   po.seconds <= 86400) {
			;
		} else if (!strcmp(a, "--span") && parse_size(v, &po.span)) {
			;
		} else if (!strcmp(a, "--seed") && (po.seed = strtoull(v, &end, 10), !*end)) {
			;
		} else {
			return usage();
		}
	}
	if (!c.nqn)
		return usage();
	struct nvmf_host_opts o = { .addr = c.addr, .port = c.port, .subnqn = c.nqn, .hostnqn = c.hostnqn,
				    .kato_ms = c.kato_ms, .io_depth = (uint16_t)po.qd, .connect_in_capsule = true };
	if (nvmf_host_connect(&h, &o, &status)) {
		fprintf(stderr, "nvmf perf: %s\n", h.err);
		nvmf_host_close(&h);
		return 2;
	}
	fprintf(stderr, "nvmf perf: controller %u, namespace 1: %" PRIu64 " blocks of %u bytes, in-capsule up to %u\n",
		h.cntlid, h.ns_blocks, 1u << h.lba_shift, h.inline_max);
	int rc = nvmf_perf_run(&h, &po, &res);
	printf("%s bs=%u qd=%u time=%.2fs ios=%" PRIu64 " iops=%.0f bw=%.1fMiB/s lat_p50=%.1fus lat_p99=%.1fus "
	       "lat_max=%.1fus errors=%" PRIu64 " verified=%" PRIu64 " verify_errors=%" PRIu64 "%s\n",
	       rw_names[po.rw], po.bs, po.qd, res.seconds, res.ios, res.iops, res.mib_s, res.p50_us, res.p99_us,
	       res.max_us, res.errors, res.verified, res.verify_errors,
	       po.invalidate ? (res.invalidations_missing ? " invalidate=missing" : " invalidate=ok") : "");
	if (res.errors)
		fprintf(stderr, "nvmf perf: first failed command: status 0x%03x (%s)\n",
			NVME_SC_CODE(res.first_error_status), nvme_status_str(res.first_error_status));
	if (rc)
		fprintf(stderr, "nvmf perf: %s\n", h.err);
	nvmf_host_close(&h);
	if (rc)
		return 2;
	return res.errors || res.verify_errors || res.invalidations_missing ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "serve"))
		return serve(argc - 1, argv + 1);
	if (!strcmp(argv[1], "perf"))
		return perf(argc - 1, argv + 1);
	if (!strcmp(argv[1], "discover"))
		return discover(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage();
		return 0;
	}
	return usage();
}
