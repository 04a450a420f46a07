/*
 * kv_many_clients.c — many clients of one softrnic-kv server at once, end
 * to end, every answer checked.
 *
 *   kv_many_clients [-s HOST:PORT] [-n CLIENTS] [-p PROCS] [-r ROUNDS]
 *                   [-b VALUE_BYTES] [-t send|write] [-T TIMEOUT_S] [-k TAG]
 *
 * PROCS processes (forked; each has its own softrnic device, whose MRs —
 * four per client connection, max_mr 16 384 — bound one process to about
 * 4 000 clients) connect CLIENTS connections between them through the
 * client library (src/kv/client.c), one after another in each process,
 * each connect timed.  Once every process holds all its connections, the
 * server's STATS must count them all ("clients"); then every client runs
 * ROUNDS rounds of SET key=value, GET key (the value compared byte for
 * byte) and INCR counter (the number compared), keys and values its own,
 * all clients of a process in flight at once.  Keys start with TAG (default
 * the parent's PID), so runs against one server never share a key.  The connections stay open
 * until every process is done, so the server holds CLIENTS the whole time.
 *
 * Prints the connect time per client (mean, p50, p99, max, and the wall
 * time of all connects), the load's operations per second, the server's
 * resident memory if it runs on this host (-P PID), and the failures:
 * connects refused, transport errors, wrong answers.  Exit 0 only if
 * every client connected and every answer was right; 1 otherwise; 2 for a
 * bad argument.  bench/kv_many_clients.sh runs it against a server at
 * 5 000 clients; tests/kv/kv_many.sh at 500.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "kv/client.h"

/* What a process reports to the parent, twice: after connecting, after the load. */
struct report {
	unsigned connected, connect_failed;
	uint64_t connect_sum_ns, connect_max_ns, connect_p50_ns, connect_p99_ns;
	uint64_t connect_wall_ns;
	int first_connect_err;
	uint64_t ops, transport_errors, wrong_answers;
	uint64_t load_wall_ns;
	char first_wrong[160];
};

struct opts {
	char host[256];
	const char *port;
	unsigned clients, procs, rounds;
	uint32_t value_size;
	struct kv_client_opts copts;
	unsigned timeout_s;
	char tag[32];
};

/* One client's load: SET, GET, INCR per round, one request at a time. */
struct cl {
	struct kv_client *c;
	unsigned id;                    /* global client number */
	unsigned round, step;           /* step 0 SET, 1 GET, 2 INCR */
	bool in_flight, done, failed;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void value_of(uint8_t *v, uint32_t len, unsigned id, unsigned round)
{
	uint64_t x = (uint64_t)id << 32 | round;

	for (uint32_t i = 0; i < len; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = (uint8_t)(x >> 56);
	}
}

static bool write_all(int fd, const void *p, size_t n)
{
	return write(fd, p, n) == (ssize_t)n;
}

static bool read_all(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return false;
		}
		got += (size_t)r;
	}
	return true;
}

static void wrong(struct report *rep, const struct cl *l, const char *what)
{
	if (!rep->wrong_answers++)
		snprintf(rep->first_wrong, sizeof(rep->first_wrong), "client %u round %u step %u: %s", l->id,
			 l->round, l->step, what);
}

/* Submit the next request of l. */
static void submit_next(struct cl *l, const struct opts *o, uint8_t *value, struct report *rep)
{
	char key[64];
	uint64_t token;
	int klen, e;

	if (l->step == 2) {
		klen = snprintf(key, sizeof(key), "%s:%u:n", o->tag, l->id);
		e = kv_submit(l->c, KV_OP_INCR, key, (uint32_t)klen, NULL, 0, 1, &token);
	} else {
		klen = snprintf(key, sizeof(key), "%s:%u:%u", o->tag, l->id, l->round);
		if (l->step == 0)
			value_of(value, o->value_size, l->id, l->round);
		e = kv_submit(l->c, l->step == 0 ? KV_OP_SET : KV_OP_GET, key, (uint32_t)klen, value,
			      l->step == 0 ? o->value_size : 0, 0, &token);
	}
	if (e) {
		rep->transport_errors++;
		l->failed = l->done = true;
		return;
	}
	l->in_flight = true;
}

/* Check the answer r to l's request in flight, and move l on. */
static void check(struct cl *l, const struct opts *o, const struct kv_result *r, uint8_t *expect,
		  struct report *rep)
{
	l->in_flight = false;
	rep->ops++;
	if (r->status != KV_OK) {
		char what[64];
		snprintf(what, sizeof(what), "status %d", (int)r->status);
		wrong(rep, l, what);
	} else if (l->step == 1) {
		value_of(expect, o->value_size, l->id, l->round);
		if (r->vlen != o->value_size || memcmp(r->value, expect, o->value_size))
			wrong(rep, l, "the value read back differs from the one set");
	} else if (l->step == 2 && r->number != (int64_t)l->round + 1) {
		char what[96];
		snprintf(what, sizeof(what), "INCR gave %" PRId64 ", not %u", r->number, l->round + 1);
		wrong(rep, l, what);
	}
	if (++l->step == 3) {
		l->step = 0;
		if (++l->round == o->rounds)
			l->done = true;
	}
}

static void run_load(struct cl *cls, unsigned n, const struct opts *o, struct report *rep)
{
	uint8_t *value = malloc(o->value_size + 1), *expect = malloc(o->value_size + 1);
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), deadline = t0 + (uint64_t)o->timeout_s * 1000000000ull;
	unsigned left = 0;

	for (unsigned i = 0; i < n; i++)
		if (cls[i].c)
			left++;
		else
			cls[i].done = true;
	while (left && value && expect) {
		for (unsigned i = 0; i < n; i++) {
			struct cl *l = &cls[i];
			struct kv_result r;
			int got;

			if (l->done)
				continue;
			if (!l->in_flight)
				submit_next(l, o, value, rep);
			if (!l->done && (got = kv_complete(l->c, &r, false)) != 0) {
				if (got < 0) {
					rep->transport_errors++;
					l->failed = l->done = true;
				} else {
					check(l, o, &r, expect, rep);
				}
			}
			if (l->done)
				left--;
		}
		if (left && clock_ns(CLOCK_MONOTONIC) > deadline) {
			rep->transport_errors += left;      /* counted as failed: no answer in time */
			break;
		}
	}
	rep->load_wall_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	free(value);
	free(expect);
}

/* One process: connect [first, first + n), report, wait, load, report, wait, close. */
static int child(const struct opts *o, unsigned first, unsigned n, int to_parent, int from_parent)
{
	struct cl *cls = calloc(n, sizeof(*cls));
	uint64_t *lat = calloc(n, sizeof(*lat));
	struct report rep = { 0 };
	char go;

	if (!cls || !lat)
		return 1;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	for (unsigned i = 0; i < n; i++) {
		int err = 0;
		uint64_t s = clock_ns(CLOCK_MONOTONIC);
		cls[i].id = first + i;
		cls[i].c = kv_connect_opts(o->host, o->port, &o->copts, &err);
		uint64_t t = clock_ns(CLOCK_MONOTONIC) - s;
		if (!cls[i].c) {
			if (!rep.connect_failed++)
				rep.first_connect_err = err;
			continue;
		}
		lat[rep.connected++] = t;
		rep.connect_sum_ns += t;
	}
	rep.connect_wall_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	if (rep.connected) {
		qsort(lat, rep.connected, sizeof(*lat), cmp_u64);
		rep.connect_p50_ns = lat[rep.connected / 2];
		rep.connect_p99_ns = lat[(uint64_t)rep.connected * 99 / 100];
		rep.connect_max_ns = lat[rep.connected - 1];
	}
	if (!write_all(to_parent, &rep, sizeof(rep)) || !read_all(from_parent, &go, 1))
		return 1;
	run_load(cls, n, o, &rep);
	if (!write_all(to_parent, &rep, sizeof(rep)) || !read_all(from_parent, &go, 1))
		return 1;
	for (unsigned i = 0; i < n; i++)
		kv_close(cls[i].c);
	free(cls);
	free(lat);
	return 0;
}

/* The server's STATS field `name`, or -1. */
static long long server_stat(const struct opts *o, const char *name)
{
	int err;
	struct kv_client *c = kv_connect_opts(o->host, o->port, &o->copts, &err);
	struct kv_result r;
	long long v = -1;

	if (!c)
		return -1;
	if (kv_call(c, KV_OP_STATS, NULL, 0, NULL, 0, 0, &r) == 0 && r.status == KV_OK) {
		char buf[4096];
		size_t nl = strlen(name);
		snprintf(buf, sizeof(buf), "%.*s", (int)r.vlen, (const char *)r.value);
		for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
			if (!strncmp(p, name, nl) && p[nl] == ' ')
				v = strtoll(p + nl + 1, NULL, 10);
	}
	kv_close(c);
	return v;
}

/* VmRSS of pid in KiB, or -1. */
static long rss_kib(long pid)
{
	char path[64], line[256];
	long v = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static unsigned long arg_uint(const char *what, const char *s, unsigned long lo, unsigned long hi)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);

	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "kv_many_clients: %s %s: not a number in %lu..%lu\n", what, s, lo, hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct opts o = { .host = "127.0.0.1", .port = "18860", .clients = 5000, .procs = 0, .rounds = 4,
			  .value_size = 64, .copts = KV_CLIENT_DEFAULTS, .timeout_s = 600 };
	long server_pid = -1;
	int opt;

	while ((opt = getopt(argc, argv, "s:n:p:r:b:t:T:P:k:")) != -1) {
		switch (opt) {
		case 's': {
			const char *colon = strrchr(optarg, ':');
			snprintf(o.host, sizeof(o.host), "%.*s", colon ? (int)(colon - optarg) : (int)strlen(optarg),
				 optarg);
			if (colon)
				o.port = colon + 1;
			break;
		}
		case 'n': o.clients = (unsigned)arg_uint("-n", optarg, 1, 65535); break;
		case 'p': o.procs = (unsigned)arg_uint("-p", optarg, 1, 256); break;
		case 'r': o.rounds = (unsigned)arg_uint("-r", optarg, 1, 1000000); break;
		case 'b': o.value_size = (uint32_t)arg_uint("-b", optarg, 1, KV_MAX_VALUE); break;
		case 'T': o.timeout_s = (unsigned)arg_uint("-T", optarg, 1, 86400); break;
		case 'k':
			if (!*optarg || strlen(optarg) >= sizeof(o.tag)) {
				fprintf(stderr, "kv_many_clients: -k %s: 1 to %zu characters\n", optarg, sizeof(o.tag) - 1);
				return 2;
			}
			snprintf(o.tag, sizeof(o.tag), "%s", optarg);
			break;
		case 'P': server_pid = (long)arg_uint("-P", optarg, 1, 1ul << 31); break;
		case 't':
			if (!strcmp(optarg, "send"))
				o.copts.transport = KV_VIA_SEND;
			else if (strcmp(optarg, "write")) {
				fprintf(stderr, "kv_many_clients: -t %s: not send or write\n", optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: kv_many_clients [-s HOST:PORT] [-n CLIENTS] [-p PROCS] [-r ROUNDS] "
				"[-b VALUE_BYTES] [-t send|write] [-T TIMEOUT_S] [-P SERVER_PID] [-k TAG]\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "kv_many_clients: %s: no arguments besides the options\n", argv[optind]);
		return 2;
	}
	if (!*o.tag)
		snprintf(o.tag, sizeof(o.tag), "mc%ld", (long)getpid());
	if (!o.procs)
		o.procs = (o.clients + 1499) / 1500;    /* 1 500 a process: well under max_mr / 4 */
	if (o.procs > o.clients) {
		fprintf(stderr, "kv_many_clients: -p %u: more processes than the %u clients\n", o.procs, o.clients);
		return 2;
	}
	/* Each client holds a few fds (its CM event channel, its completion
	 * channel): lift the soft limit to the hard one. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	long rss0 = server_pid > 0 ? rss_kib(server_pid) : -1;
	pid_t *pids = calloc(o.procs, sizeof(*pids));
	int *up = calloc(o.procs, sizeof(*up)), *down = calloc(o.procs, sizeof(*down));
	if (!pids || !up || !down)
		return 1;
	fflush(stdout);
	for (unsigned p = 0, first = 0; p < o.procs; p++) {
		unsigned n = o.clients / o.procs + (p < o.clients % o.procs);
		int a[2], b[2];
		if (pipe(a) || pipe(b)) {
			perror("kv_many_clients: pipe");
			return 1;
		}
		pids[p] = fork();
		if (pids[p] < 0) {
			perror("kv_many_clients: fork");
			return 1;
		}
		if (pids[p] == 0) {
			close(a[0]);
			close(b[1]);
			_exit(child(&o, first, n, a[1], b[0]));
		}
		close(a[1]);
		close(b[0]);
		up[p] = a[0];
		down[p] = b[1];
		first += n;
	}
	/* Connected: every process's connects. */
	struct report all = { 0 }, r;
	uint64_t *p50 = calloc(o.procs, sizeof(*p50)), *p99 = calloc(o.procs, sizeof(*p99));
	bool lost = false;
	for (unsigned p = 0; p < o.procs; p++) {
		if (!read_all(up[p], &r, sizeof(r))) {
			lost = true;
			continue;
		}
		all.connected += r.connected;
		all.connect_failed += r.connect_failed;
		if (r.connect_failed && !all.first_connect_err)
			all.first_connect_err = r.first_connect_err;
		all.connect_sum_ns += r.connect_sum_ns;
		if (r.connect_max_ns > all.connect_max_ns)
			all.connect_max_ns = r.connect_max_ns;
		if (r.connect_wall_ns > all.connect_wall_ns)
			all.connect_wall_ns = r.connect_wall_ns;
		p50[p] = r.connect_p50_ns;
		p99[p] = r.connect_p99_ns;
	}
	qsort(p50, o.procs, sizeof(*p50), cmp_u64);
	qsort(p99, o.procs, sizeof(*p99), cmp_u64);
	long long held = server_stat(&o, "clients");       /* counts this STATS connection too */
	long rss1 = server_pid > 0 ? rss_kib(server_pid) : -1;
	printf("connect: %u of %u clients in %u processes in %.2f s; per connect mean %.0f us, p50 %.0f us, "
	       "p99 %.0f us (the processes' medians), max %.0f us; server holds %lld clients\n",
	       all.connected, o.clients, o.procs, (double)all.connect_wall_ns / 1e9,
	       all.connected ? (double)all.connect_sum_ns / all.connected / 1e3 : 0.0, (double)p50[o.procs / 2] / 1e3,
	       (double)p99[o.procs / 2] / 1e3, (double)all.connect_max_ns / 1e3, held >= 0 ? held - 1 : held);
	if (all.connect_failed)
		printf("connect: %u failed, the first with %s\n", all.connect_failed, strerror(all.first_connect_err));
	if (rss0 >= 0 && rss1 >= 0)
		printf("server: resident %ld KiB before, %ld KiB with the clients: %.1f KiB per client\n", rss0, rss1,
		       (double)(rss1 - rss0) / (all.connected ? all.connected : 1));
	fflush(stdout);
	/* The load, in every process at once. */
	long long req0 = server_stat(&o, "requests");
	for (unsigned p = 0; p < o.procs; p++)
		lost |= !write_all(down[p], "g", 1);
	uint64_t load_wall = 0, ops = 0, terr = 0, wrongs = 0;
	char first_wrong[160] = "";
	for (unsigned p = 0; p < o.procs; p++) {
		if (!read_all(up[p], &r, sizeof(r))) {
			lost = true;
			continue;
		}
		ops += r.ops;
		terr += r.transport_errors;
		if (r.wrong_answers && !wrongs)
			snprintf(first_wrong, sizeof(first_wrong), "%s", r.first_wrong);
		wrongs += r.wrong_answers;
		if (r.load_wall_ns > load_wall)
			load_wall = r.load_wall_ns;
	}
	long long req1 = server_stat(&o, "requests");
	for (unsigned p = 0; p < o.procs; p++) {
		lost |= !write_all(down[p], "c", 1);
		close(down[p]);
		close(up[p]);
	}
	for (unsigned p = 0; p < o.procs; p++) {
		int st;
		if (waitpid(pids[p], &st, 0) != pids[p] || !WIFEXITED(st) || WEXITSTATUS(st))
			lost = true;
	}
	uint64_t want = (uint64_t)all.connected * o.rounds * 3;
	printf("load: %u rounds of SET, GET (value of %u B checked), INCR (number checked) per client: %" PRIu64
	       " of %" PRIu64 " operations answered in %.2f s, %.0f ops/s; the server counted %lld requests\n",
	       o.rounds, o.value_size, ops, want, (double)load_wall / 1e9,
	       load_wall ? (double)ops * 1e9 / (double)load_wall : 0.0, req0 >= 0 && req1 >= 0 ? req1 - req0 - 1 : -1);
	bool ok = !lost && !all.connect_failed && all.connected == o.clients && ops == want && !terr && !wrongs &&
		  held - 1 == (long long)o.clients;
	printf("failures: %u connects, %" PRIu64 " transport errors, %" PRIu64 " wrong answers%s%s%s%s\n",
	       all.connect_failed, terr, wrongs, wrongs ? " (first: " : "", first_wrong, wrongs ? ")" : "",
	       lost ? "; a client process failed" : "");
	if (held >= 0 && held - 1 != (long long)o.clients)
		printf("failures: the server held %lld clients, not %u\n", held - 1, o.clients);
	printf("%s\n", ok ? "ok" : "FAILED");
	free(pids);
	free(up);
	free(down);
	free(p50);
	free(p99);
	return ok ? 0 : 1;
}
