/*
 * nvmf_main.c — `softrnic-nvmf`, NVMe over Fabrics on softrnic (the
 * `softrnic nvmf ...` subcommand runs it): serve a target, discover,
 * perf.  The commands, their options and ranges are the table in
 * nvmf_cli.c, parsed by tools/cli_parse.c (`softrnic-nvmf COMMAND --help`).
 *
 * serve prints its counters to stderr when it stops (SIGINT/SIGTERM).
 * Exit status: 0 success; 1 perf ran but saw failed commands, verify
 * mismatches or a missing invalidation; 2 a refused argument or a failure
 * to connect or serve (a one-line message on stderr, with the NVMe status
 * if a command failed).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "nvmf/host.h"
#include "nvmf/namespace.h"
#include "nvmf/nvmf_cli.h"
#include "nvmf/perf.h"
#include "nvmf/rdma_transport.h"
#include "nvmf/target.h"
#include "tools/version.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
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

static int serve(const struct cli_args *a)
{
	struct nvmf_target_config cfg = { 0 };
	struct nvmf_serve_opts so = { .port = NVMF_RDMA_PORT, .spin_us = 50 };
	const char *file = cli_str(a, "--file", NULL);
	uint64_t mem = cli_uint(a, "--mem", 0), size = cli_uint(a, "--size", 0);
	uint64_t bs = cli_uint(a, "--block-size", 512);
	struct nvmf_ns ns;
	static struct nvmf_target t;
	struct sigaction sa;
	int e;

	so.verbose = cli_flag(a, "-v");
	so.addr = cli_str(a, "--addr", NULL);
	so.port = (uint16_t)cli_uint(a, "--port", NVMF_RDMA_PORT);
	so.spin_us = (unsigned)cli_uint(a, "--spin-us", 50);
	cfg.nqn = cli_str(a, "--nqn", NULL);
	cfg.allow_host = cli_str(a, "--allow-host", NULL);
	if (!cfg.nqn)
		return cli_error(a, "no --nqn given (the subsystem's NQN)");
	if (!file == !mem)
		return cli_error(a, file ? "--file and --mem: one namespace, one of them" :
				 "no namespace given (--file PATH or --mem SIZE)");
	if (size && !file)
		return cli_error(a, "--size %s: only with --file", cli_str(a, "--size", ""));
	unsigned shift = 9;

	while ((1ull << shift) < bs)
		shift++;
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

static void client_args(const struct cli_args *a, struct client_args *c)
{
	c->addr = cli_str(a, "--addr", "127.0.0.1");
	snprintf(c->port, sizeof(c->port), "%u", (unsigned)cli_uint(a, "--port", NVMF_RDMA_PORT));
	c->hostnqn = cli_str(a, "--hostnqn", NULL);
	c->kato_ms = (uint32_t)cli_uint(a, "--kato", c->kato_ms);
}

static int discover(const struct cli_args *a)
{
	struct client_args c = { .kato_ms = 0 };
	struct nvmf_host h;
	struct nvme_cpl cpl;
	uint16_t status;
	static uint8_t log[8192];

	if (!cli_get(a, "--addr") && !cli_get(a, "--port"))
		return cli_error(a, "no target given (--addr A and/or --port P)");
	client_args(a, &c);
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

static int perf(const struct cli_args *a)
{
	struct client_args c = { .kato_ms = 5000 };
	struct nvmf_perf_opts po = { .rw = PERF_RANDREAD, .bs = 4096, .qd = 8, .seconds = 2 };
	struct nvmf_perf_result res;
	struct nvmf_host h;
	uint16_t status;
	static const char *const rw_names[] = { "read", "write", "randread", "randwrite" };

	c.nqn = cli_str(a, "--nqn", NULL);
	if (!c.nqn)
		return cli_error(a, "no target given (--nqn NQN, with --addr and --port unless 127.0.0.1:4420)");
	client_args(a, &c);
	po.rw = (enum nvmf_perf_rw)cli_uint(a, "--rw", PERF_RANDREAD);
	po.bs = (uint32_t)cli_uint(a, "--bs", 4096);
	po.qd = (unsigned)cli_uint(a, "--qd", 8);
	unsigned queues = (unsigned)cli_uint(a, "--queues", 1);
	po.seconds = cli_double(a, "--time", 2);
	po.span = cli_uint(a, "--span", 0);
	po.seed = cli_uint(a, "--seed", 0);
	po.verify = cli_flag(a, "--verify");
	po.no_inline = cli_flag(a, "--no-inline");
	po.invalidate = cli_flag(a, "--invalidate");
	struct nvmf_host_opts o = { .addr = c.addr, .port = c.port, .subnqn = c.nqn, .hostnqn = c.hostnqn,
				    .kato_ms = c.kato_ms, .io_depth = (uint16_t)po.qd, .io_queues = (uint16_t)queues,
				    .connect_in_capsule = true };
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	if (nvmf_host_connect(&h, &o, &status)) {
		fprintf(stderr, "nvmf perf: %s\n", h.err);
		nvmf_host_close(&h);
		return 2;
	}
	double connect_ms = (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e6;
	fprintf(stderr, "nvmf perf: controller %u, namespace 1: %" PRIu64 " blocks of %u bytes, in-capsule up to %u; "
		"connected with %u I/O queue%s in %.1f ms\n", h.cntlid, h.ns_blocks, 1u << h.lba_shift, h.inline_max,
		h.n_io, h.n_io == 1 ? "" : "s", connect_ms);
	int rc = nvmf_perf_run(&h, &po, &res);
	printf("%s bs=%u qd=%u time=%.2fs ios=%" PRIu64 " iops=%.0f bw=%.1fMiB/s lat_p50=%.1fus lat_p99=%.1fus "
	       "lat_max=%.1fus errors=%" PRIu64 " verified=%" PRIu64 " verify_errors=%" PRIu64 "%s",
	       rw_names[po.rw], po.bs, po.qd, res.seconds, res.ios, res.iops, res.mib_s, res.p50_us, res.p99_us,
	       res.max_us, res.errors, res.verified, res.verify_errors,
	       po.invalidate ? (res.invalidations_missing ? " invalidate=missing" : " invalidate=ok") : "");
	if (queues > 1)
		printf(" queues=%u min_queue_ios=%" PRIu64 " idle_queues=%u", res.queues, res.min_queue_ios,
		       res.queues_idle);
	printf("\n");
	if (res.queues_idle)
		fprintf(stderr, "nvmf perf: %u of %u I/O queues completed no command\n", res.queues_idle, res.queues);
	if (res.errors)
		fprintf(stderr, "nvmf perf: first failed command: status 0x%03x (%s)\n",
			NVME_SC_CODE(res.first_error_status), nvme_status_str(res.first_error_status));
	if (rc)
		fprintf(stderr, "nvmf perf: %s\n", h.err);
	nvmf_host_close(&h);
	if (rc)
		return 2;
	return res.errors || res.verify_errors || res.invalidations_missing || res.queues_idle ? 1 : 0;
}

_Static_assert(NVMF_CLI_MAX_QD == NVMF_RDMA_MAX_QUEUE_SIZE - 1, "perf --qd's range is the queue size's");
_Static_assert(NVMF_CLI_MAX_QUEUES == NVMF_MAX_IO_QUEUES, "perf --queues's range is what a controller grants");

int main(int argc, char **argv)
{
	static const struct cli_cmd root = { "softrnic-nvmf", nvmf_cli_summary, NULL, 0, 0, NULL, nvmf_cli_commands,
					     nvmf_cli_details, 0, 0 };
	const char *slash = strrchr(argv[0], '/');
	struct cli_args a;
	int rc = cli_parse(&root, slash ? slash + 1 : argv[0], SOFTRNIC_VERSION, argc, argv, &a);

	if (rc != CLI_RUN)
		return rc;
	switch (a.cmd->id) {
	case NVMF_CMD_SERVE:
		return serve(&a);
	case NVMF_CMD_DISCOVER:
		return discover(&a);
	case NVMF_CMD_PERF:
		return perf(&a);
	}
	return cli_error(&a, "no such command");
}
