/*
 * kv_main.c — `softrnic-kv`, the key-value store's command line (the
 * `softrnic kv ...` subcommand runs it): serve, get, set, mget, del, incr,
 * stats, bench (bench.c) and check-aof.  The commands, their options and
 * ranges are the table in kv_cli.c, parsed by tools/cli_parse.c
 * (`softrnic-kv COMMAND --help`).
 *
 * --server takes a list, A[:P],B[:P],...: the keys are then sharded over
 * those servers by consistent hashing (cluster.h); stats prints each.
 * --transport send|write picks how requests travel (proto.h).
 *
 * Exit status: 0 success, 1 no such key (get, del) or a log that is not
 * valid (check-aof), 2 any error (with a one-line message on stderr).
 * Connections go through librdmacm, so the server may be on another host
 * as on loopback.  The default port is 18860.
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "kv/aof.h"
#include "kv/bench.h"
#include "kv/cli.h"
#include "kv/client.h"
#include "kv/cluster.h"
#include "kv/kv_cli.h"
#include "kv/server.h"
#include "tools/version.h"


static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void say_ready(void *ctx)
{
	const struct kv_server_opts *o = ctx;

	fprintf(stderr, "kv: serving %s:%u, %zu bytes\n", o->addr ? o->addr : "*", o->port, o->mem);
}

static int serve(const struct cli_args *a)
{
	struct kv_server_opts o = { .addr = NULL, .port = 18860, .mem = 64u << 20, .fsync = KV_FSYNC_EVERYSEC };
	static const enum kv_fsync fsyncs[] = { KV_FSYNC_ALWAYS, KV_FSYNC_EVERYSEC, KV_FSYNC_NO };
	struct sigaction sa;

	o.addr = cli_str(a, "--addr", NULL);
	o.port = (uint16_t)cli_uint(a, "--port", o.port);
	o.mem = (size_t)cli_uint(a, "--mem", o.mem);
	o.aof_path = cli_str(a, "--aof", NULL);
	o.fsync = fsyncs[cli_uint(a, "--appendfsync", 1)];
	o.aof_rewrite_min = cli_uint(a, "--aof-rewrite-min", 0);
	o.busy_poll = cli_flag(a, "--busy-poll");
	o.probe_ms = (unsigned)cli_uint(a, "--probe-ms", 0);
	o.verbose = cli_flag(a, "-v");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	o.ready = say_ready;
	o.ready_ctx = &o;
	int err = kv_serve(&o, &stop_flag);
	return err ? 2 : 0;
}

static const char *status_text(enum kv_status s)
{
	switch (s) {
	case KV_OK: return "ok";
	case KV_NOT_FOUND: return "no such key";
	case KV_BAD_REQUEST: return "bad request";
	case KV_NO_MEMORY: return "out of memory (nothing of that size to evict)";
	case KV_NOT_INTEGER: return "value is not an integer";
	case KV_OUT_OF_RANGE: return "increment would overflow";
	case KV_IO_ERROR: return "the change could not be logged";
	}
	return "unknown status";
}

/* Read all of stdin (at most KV_MAX_VALUE bytes). */
static uint8_t *read_stdin(uint32_t *len)
{
	uint8_t *buf = malloc(KV_MAX_VALUE + 1);
	size_t n = 0, r;

	if (!buf)
		return NULL;
	while (n <= KV_MAX_VALUE && (r = fread(buf + n, 1, KV_MAX_VALUE + 1 - n, stdin)) > 0)
		n += r;
	if (n > KV_MAX_VALUE) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	*len = (uint32_t)n;
	return buf;
}

/* --server's list (one server or several, cluster.h), or NULL after a
 * message. */
static struct kv_cluster *open_cluster(const char *servers, const struct kv_client_opts *o)
{
	struct kv_cluster *cl;
	int err = kv_cluster_open(&cl, servers, KV_DEFAULT_PORT, o);

	if (err) {
		fprintf(stderr, "softrnic-kv: --server %s: %s\n", servers,
			err == EINVAL ? "expected HOST[:PORT],... (each server once, at most 64)" : strerror(err));
		return NULL;
	}
	return cl;
}

/* stats of several servers: each under a "# host:port" line. */
static int stats_all(struct kv_cluster *cl)
{
	int rc = 0;

	for (unsigned i = 0; i < kv_cluster_size(cl); i++) {
		int err;
		struct kv_result res;
		struct kv_client *c = kv_cluster_client(cl, i, &err);
		if (c)
			err = kv_call(c, KV_OP_STATS, NULL, 0, NULL, 0, 0, &res);
		if (!c || err) {
			fprintf(stderr, "softrnic-kv: %s: %s\n", kv_cluster_name(cl, i), strerror(err));
			rc = 2;
			continue;
		}
		printf("# %s\n", kv_cluster_name(cl, i));
		fwrite(res.value, 1, res.vlen, stdout);
	}
	return rc;
}

/* The options every client command takes: --server LIST, --transport. */
static const char *client_options(const struct cli_args *a, struct kv_client_opts *o)
{
	if (cli_uint(a, "--transport", 1) == 0)
		o->transport = KV_VIA_SEND;
	return cli_str(a, "--server", "127.0.0.1");
}

/* mget: one round trip per server for up to KV_MGET_MAX keys. */
static int mget_cmd(const struct cli_args *a)
{
	const char *keys[KV_MGET_MAX];
	unsigned n = (unsigned)a->argc;
	struct kv_client_opts copts = KV_CLIENT_DEFAULTS;
	const char *servers = client_options(a, &copts);

	for (unsigned i = 0; i < n; i++)
		keys[i] = a->argv[i];
	struct kv_cluster *cl = open_cluster(servers, &copts);
	if (!cl)
		return 2;
	struct kv_result res;
	const uint8_t *vals[KV_MGET_MAX];
	uint32_t vls[KV_MGET_MAX];
	int err = kv_cluster_mget(cl, n, keys, &res, vals, vls);
	if (err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH || err == ETIMEDOUT) {
		fprintf(stderr, "softrnic-kv: cannot connect to a server of %s: %s\n", servers, strerror(err));
		kv_cluster_close(cl);
		return 2;
	}
	int rc = 0;
	if (err || res.status != KV_OK) {
		fprintf(stderr, "softrnic-kv: mget: %s\n", err ? strerror(err) : status_text(res.status));
		rc = 2;
	} else {
		for (unsigned i = 0; i < n; i++) {
			if (vals[i])
				fwrite(vals[i], 1, vls[i], stdout);
			else
				fputs("(nil)", stdout);
			putchar('\n');
		}
	}
	kv_cluster_close(cl);
	return rc;
}

static int client_cmd(const struct cli_args *a)
{
	static const enum kv_op ops[] = { [KV_CMD_GET] = KV_OP_GET, [KV_CMD_SET] = KV_OP_SET, [KV_CMD_DEL] = KV_OP_DEL,
					  [KV_CMD_INCR] = KV_OP_INCR, [KV_CMD_STATS] = KV_OP_STATS };
	const char *cmd = a->cmd->name;
	enum kv_op op = ops[a->cmd->id];
	struct kv_client_opts copts = KV_CLIENT_DEFAULTS;
	const char *servers = client_options(a, &copts);
	bool one_sided = op == KV_OP_GET && cli_flag(a, "--one-sided");
	long long ttl = op == KV_OP_SET ? (long long)cli_uint(a, "--ttl", 0) : 0;
	char *const *args = a->argv;
	int nargs = a->argc;

	const char *key = nargs ? args[0] : "";
	uint32_t klen = (uint32_t)strlen(key);
	if (op != KV_OP_STATS && (klen == 0 || klen > KV_MAX_KEY)) {
		fprintf(stderr, "softrnic-kv: a key is 1 to %u bytes\n", KV_MAX_KEY);
		return 2;
	}
	const uint8_t *val = NULL;
	uint8_t *owned = NULL;
	uint32_t vlen = 0;
	int64_t arg = 0;
	if (op == KV_OP_SET) {
		if (!strcmp(args[1], "-")) {
			owned = read_stdin(&vlen);
			if (!owned) {
				fprintf(stderr, "softrnic-kv: value: %s (at most %u bytes)\n", strerror(errno), KV_MAX_VALUE);
				return 2;
			}
			val = owned;
		} else {
			val = (const uint8_t *)args[1];
			vlen = (uint32_t)strlen(args[1]);
		}
		arg = ttl;
	} else if (op == KV_OP_INCR) {
		char *end;
		errno = 0;
		arg = nargs == 2 ? strtoll(args[1], &end, 10) : 1;
		if (nargs == 2 && (*end || end == args[1] || errno))
			return cli_error(a, "DELTA %s: not a whole number (%lld to %lld)", args[1], LLONG_MIN,
					 LLONG_MAX);
	}

	struct kv_cluster *cl = open_cluster(servers, &copts);
	if (!cl) {
		free(owned);
		return 2;
	}
	if (op == KV_OP_STATS && kv_cluster_size(cl) > 1) {
		int rc = stats_all(cl);
		kv_cluster_close(cl);
		return rc;
	}
	int err;
	unsigned shard = kv_cluster_server_of(cl, key, klen);
	struct kv_client *c = kv_cluster_client(cl, shard, &err);
	if (!c) {
		fprintf(stderr, "softrnic-kv: cannot connect to %s: %s\n", kv_cluster_name(cl, shard), strerror(err));
		kv_cluster_close(cl);
		free(owned);
		return 2;
	}
	struct kv_result res;
	if (one_sided) {
		err = kv_get_one_sided(c, key, klen, clock_ns(CLOCK_REALTIME), &res);
	} else {
		err = kv_call(c, op, key, klen, val, vlen, arg, &res);
	}
	free(owned);
	int rc = 0;
	if (err) {
		fprintf(stderr, "softrnic-kv: %s: %s\n", cmd, strerror(err));
		rc = 2;
	} else if (res.status == KV_NOT_FOUND && (op == KV_OP_GET || op == KV_OP_DEL)) {
		fprintf(stderr, "softrnic-kv: %s: no such key\n", key);
		rc = 1;
	} else if (res.status != KV_OK) {
		fprintf(stderr, "softrnic-kv: %s: %s\n", cmd, status_text(res.status));
		rc = 2;
	} else if (op == KV_OP_GET || op == KV_OP_STATS) {
		fwrite(res.value, 1, res.vlen, stdout);
		if (op == KV_OP_GET && isatty(1))
			putchar('\n');
	} else if (op == KV_OP_INCR) {
		printf("%lld\n", (long long)res.number);
	}
	kv_cluster_close(cl);
	return rc;
}

/* check-aof [--fix] FILE (the rules are aof.h's). */
static int check_aof(const struct cli_args *a)
{
	const char *path = a->argv[0];
	bool fix = cli_flag(a, "--fix");

	struct kv_aof_check c;
	char what[512], bak[4200] = "";
	uint64_t now = (uint64_t)time(NULL);
	int err = fix ? kv_aof_fix_path(path, now, &c, bak, sizeof(bak)) : kv_aof_check_path(path, &c);
	if (err == EEXIST) {
		fprintf(stderr, "softrnic-kv: check-aof: %s.bak-%" PRIu64 " exists: not overwritten; %s is left as "
			"it is (run it again in a second)\n", path, now, path);
		return 2;
	}
	if (fix && err && bak[0]) {
		fprintf(stderr, "softrnic-kv: check-aof: %s was copied to %s, but cutting it failed: %s\n", path, bak,
			strerror(err));
		return 2;
	}
	if (err) {
		fprintf(stderr, "softrnic-kv: check-aof: %s: %s%s\n", path, kv_aof_strerror(err),
			fix ? "; left as it is" : "");
		return 2;
	}
	kv_aof_describe(&c, what, sizeof(what));
	if (c.state == KV_AOF_VALID) {
		printf("%s %s%s\n", path, what, fix ? "; nothing to fix" : "");
		return 0;
	}
	if (fix) {
		printf("%s: kept %" PRIu64 " records (%" PRIu64 " bytes); dropped %" PRIu64 " bytes from byte %"
		       PRIu64 " (%s", path, c.records, c.good, c.size - c.good, c.good, c.why);
		if (c.resync)
			printf("; whole records start again at byte %" PRIu64 ", %" PRIu64 " in a row, dropped too",
			       c.resync, c.resync_records);
		printf("); the whole file as it was is in %s\n", bak);
		return 0;
	}
	printf("%s %s\n", path, what);
	if (c.state == KV_AOF_TORN)
		printf("%s: softrnic kv serve cuts the torn %" PRIu64 " bytes when it starts; check-aof --fix cuts "
		       "them now, keeping a copy\n", path, c.size - c.good);
	else if (!c.records && !c.resync)
		printf("%s: no whole record in it at all: is it a softrnic-kv log? (check-aof --fix leaves it)\n",
		       path);
	else
		printf("%s: softrnic kv serve refuses it; check-aof --fix keeps a copy and cuts it at byte %" PRIu64
		       " (dropping %" PRIu64 " bytes)\n", path, c.good, c.size - c.good);
	return 1;
}

int main(int argc, char **argv)
{
	static const struct cli_cmd root = { "softrnic-kv", kv_cli_summary, NULL, 0, 0, NULL, kv_cli_commands,
					     kv_cli_details, 0, 0 };
	const char *slash = strrchr(argv[0], '/');
	struct cli_args a;
	int rc = cli_parse(&root, slash ? slash + 1 : argv[0], SOFTRNIC_VERSION, argc, argv, &a);

	if (rc != CLI_RUN)
		return rc;
	switch (a.cmd->id) {
	case KV_CMD_SERVE:
		return serve(&a);
	case KV_CMD_MGET:
		return mget_cmd(&a);
	case KV_CMD_BENCH:
		return kv_bench_main(&a);
	case KV_CMD_CHECK_AOF:
		return check_aof(&a);
	case KV_CMD_GET:
	case KV_CMD_SET:
	case KV_CMD_DEL:
	case KV_CMD_INCR:
	case KV_CMD_STATS:
		return client_cmd(&a);
	}
	return cli_error(&a, "no such command");
}
