/*
 * kv_main.c — `softrnic-kv`, the key-value store's command line (the
 * `softrnic kv ...` subcommand runs it):
 *
 *   softrnic-kv serve [--addr A] [--port P] [--mem SIZE] [--aof FILE
 *                     [--appendfsync always|everysec|no] [--aof-rewrite-min SIZE]]
 *                     [--busy-poll] [--probe-ms MS] [-v]
 *   softrnic-kv get   [--server A[:P]] [--one-sided] KEY    value to stdout
 *                     (--one-sided: RDMA READs of the table, no server CPU)
 *   softrnic-kv set   [--server A[:P]] [--ttl MS] KEY VALUE   (VALUE "-": stdin)
 *   softrnic-kv mget  [--server A[:P]] KEY...         one line per key, (nil) if missing
 *   softrnic-kv del   [--server A[:P]] KEY
 *   softrnic-kv incr  [--server A[:P]] KEY [DELTA]    new value to stdout
 *   softrnic-kv stats [--server A[:P]]
 *   softrnic-kv bench [--server A[:P]] ...            (bench.c)
 *   softrnic-kv check-aof [--fix] FILE                 is FILE a whole log (aof.h)?
 *                     --fix: copy it to FILE.bak-<unix time>, then cut
 *                     it at its first bad record
 *   softrnic-kv [COMMAND] --help                       the usage, on stdout
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
#include "kv/server.h"


static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* The usage on out: stdout for --help (exit 0), stderr after a mistake (exit 2). */
static int usage_to(FILE *out, int rc)
{
	fprintf(out, "usage: softrnic-kv serve [--addr A] [--port P] [--mem SIZE[k|m|g]] [--aof FILE\n"
			"                         [--appendfsync always|everysec|no] [--aof-rewrite-min SIZE]]\n"
			"                         [--busy-poll] [--probe-ms MS] [-v]\n"
			"       softrnic-kv get [--server A[:P]] [--one-sided] KEY\n"
			"       softrnic-kv mget [--server A[:P]] KEY...\n"
			"       softrnic-kv del [--server A[:P]] KEY\n"
			"       softrnic-kv set [--server A[:P]] [--ttl MS] KEY VALUE|-\n"
			"       softrnic-kv incr [--server A[:P]] KEY [DELTA]\n"
			"       softrnic-kv stats [--server A[:P]]\n"
			"       softrnic-kv bench [--server A[:P]] ... (softrnic-kv bench --help)\n"
			"       softrnic-kv check-aof [--fix] FILE (softrnic-kv check-aof --help)\n"
			"  client commands also take --transport send|write (default write)\n");
	return rc;
}

static int usage(void)
{
	return usage_to(stderr, 2);
}

static bool parse_size(const char *s, size_t *out)
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
	if (*end || v == 0 || v > (1ull << 40) / mul)
		return false;
	*out = (size_t)(v * mul);
	return true;
}

static void say_ready(void *ctx)
{
	const struct kv_server_opts *o = ctx;

	fprintf(stderr, "kv: serving %s:%u, %zu bytes\n", o->addr ? o->addr : "*", o->port, o->mem);
}

static int serve(int argc, char **argv)
{
	struct kv_server_opts o = { .addr = NULL, .port = 18860, .mem = 64u << 20, .fsync = KV_FSYNC_EVERYSEC };
	struct sigaction sa;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			return usage_to(stdout, 0);
		} else if (!strcmp(argv[i], "--addr") && i + 1 < argc) {
			o.addr = argv[++i];
		} else if (!strcmp(argv[i], "--port") && i + 1 < argc) {
			long p = strtol(argv[++i], NULL, 10);
			if (p <= 0 || p > 65535)
				return usage();
			o.port = (uint16_t)p;
		} else if (!strcmp(argv[i], "--mem") && i + 1 < argc) {
			if (!parse_size(argv[++i], &o.mem))
				return usage();
		} else if (!strcmp(argv[i], "--aof") && i + 1 < argc) {
			o.aof_path = argv[++i];
		} else if (!strcmp(argv[i], "--appendfsync") && i + 1 < argc) {
			const char *p = argv[++i];
			o.fsync = !strcmp(p, "always") ? KV_FSYNC_ALWAYS : !strcmp(p, "everysec") ? KV_FSYNC_EVERYSEC
				: !strcmp(p, "no") ? KV_FSYNC_NO : -1;
			if (o.fsync < 0)
				return usage();
		} else if (!strcmp(argv[i], "--aof-rewrite-min") && i + 1 < argc) {
			size_t m;
			if (!parse_size(argv[++i], &m))
				return usage();
			o.aof_rewrite_min = m;
		} else if (!strcmp(argv[i], "--busy-poll")) {
			o.busy_poll = true;
		} else if (!strcmp(argv[i], "--probe-ms") && i + 1 < argc) {
			long ms = strtol(argv[++i], NULL, 10);
			if (ms <= 0 || ms > 3600000)
				return usage();
			o.probe_ms = (unsigned)ms;
		} else if (!strcmp(argv[i], "-v")) {
			o.verbose = true;
		} else {
			return usage();
		}
	}
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

/* The options every client command takes: --server LIST, --transport.
 * 1 when argv[*i] was one (and *i moved past its value), 0 when it is
 * not, -1 for a bad transport. */
static int client_option(int argc, char **argv, int *i, const char **servers, struct kv_client_opts *o)
{
	if (*i + 1 >= argc)
		return 0;
	if (!strcmp(argv[*i], "--server")) {
		*servers = argv[++*i];
		return 1;
	}
	if (!strcmp(argv[*i], "--transport"))
		return kv_cli_transport(argv[++*i], &o->transport) ? 1 : -1;
	return 0;
}

/* mget: one round trip per server for up to KV_MGET_MAX keys. */
static int mget_cmd(int argc, char **argv)
{
	const char *servers = "127.0.0.1";
	const char *keys[KV_MGET_MAX];
	unsigned n = 0;
	struct kv_client_opts copts = KV_CLIENT_DEFAULTS;

	for (int i = 1; i < argc; i++) {
		int opt = client_option(argc, argv, &i, &servers, &copts);
		if (opt < 0)
			return usage();
		if (opt)
			continue;
		if (n < KV_MGET_MAX) {
			keys[n++] = argv[i];
		} else {
			fprintf(stderr, "softrnic-kv: mget takes at most %u keys\n", KV_MGET_MAX);
			return 2;
		}
	}
	if (!n)
		return usage();
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

static int client_cmd(const char *cmd, int argc, char **argv)
{
	const char *servers = "127.0.0.1";
	long long ttl = 0;
	bool one_sided = false;
	const char *args[3];
	int nargs = 0;
	enum kv_op op;
	struct kv_client_opts copts = KV_CLIENT_DEFAULTS;

	for (int i = 1; i < argc; i++) {
		int opt = client_option(argc, argv, &i, &servers, &copts);
		if (opt < 0)
			return usage();
		if (opt)
			continue;
		if (!strcmp(argv[i], "--one-sided")) {
			one_sided = true;
		} else if (!strcmp(argv[i], "--ttl") && i + 1 < argc) {
			ttl = strtoll(argv[++i], NULL, 10);
			if (ttl <= 0)
				return usage();
		} else if (nargs < 3) {
			args[nargs++] = argv[i];
		} else {
			return usage();
		}
	}
	if (!strcmp(cmd, "get") && nargs == 1)
		op = KV_OP_GET;
	else if (!strcmp(cmd, "set") && nargs == 2)
		op = KV_OP_SET;
	else if (!strcmp(cmd, "del") && nargs == 1)
		op = KV_OP_DEL;
	else if (!strcmp(cmd, "incr") && (nargs == 1 || nargs == 2))
		op = KV_OP_INCR;
	else if (!strcmp(cmd, "stats") && nargs == 0)
		op = KV_OP_STATS;
	else
		return usage();
	if (one_sided && op != KV_OP_GET)
		return usage();

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
		arg = nargs == 2 ? strtoll(args[1], &end, 10) : 1;
		if (nargs == 2 && (*end || end == args[1]))
			return usage();
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

static int check_aof_usage(FILE *out, int rc)
{
	fprintf(out, "usage: softrnic-kv check-aof [--fix] FILE\n"
		     "  Checks that FILE, a softrnic-kv append-only file, is whole records to its end.\n"
		     "  Exit 0: it is; 1: it is not, and the offset of its first bad record (or of a torn\n"
		     "  last record, which serve cuts) and how much before it is valid are printed.\n"
		     "  --fix: if it is not valid, first copy it to FILE.bak-<unix time> (a new file,\n"
		     "  never over an existing one), then cut FILE at its first bad record, and say\n"
		     "  what was kept and what dropped.  Exit 0 when FILE is valid after it.\n"
		     "  Exit 2: FILE could not be read, or fixed (a server holding it, a copy that could\n"
		     "  not be made, a file with no log record in it at all): then it is left as it is.\n");
	return rc;
}

/* check-aof [--fix] FILE (the rules are aof.h's). */
static int check_aof(int argc, char **argv)
{
	const char *path = NULL;
	bool fix = false, options = true;

	for (int i = 1; i < argc; i++) {
		if (options && !strcmp(argv[i], "--help"))
			return check_aof_usage(stdout, 0);
		else if (options && !strcmp(argv[i], "--fix"))
			fix = true;
		else if (options && !strcmp(argv[i], "--"))
			options = false;
		else if (!path && (!options || argv[i][0] != '-'))
			path = argv[i];
		else
			return check_aof_usage(stderr, 2);
	}
	if (!path)
		return check_aof_usage(stderr, 2);

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
	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
		return usage_to(stdout, 0);
	if (!strcmp(argv[1], "check-aof"))
		return check_aof(argc - 1, argv + 1);
	/* A client command's first word is --help: its usage (not a key). */
	if (argc > 2 && !strcmp(argv[2], "--help") && strcmp(argv[1], "bench"))
		return usage_to(stdout, 0);
	if (!strcmp(argv[1], "serve"))
		return serve(argc - 1, argv + 1);
	if (!strcmp(argv[1], "mget"))
		return mget_cmd(argc - 1, argv + 1);
	if (!strcmp(argv[1], "bench"))
		return kv_bench_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "get") || !strcmp(argv[1], "set") || !strcmp(argv[1], "del") ||
	    !strcmp(argv[1], "incr") || !strcmp(argv[1], "stats"))
		return client_cmd(argv[1], argc - 1, argv + 1);
	return usage();
}
