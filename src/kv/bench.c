/*
 * bench.c — `softrnic-kv bench`: load a server the way redis-benchmark
 * loads Redis, so bench/kv_vs_redis.sh can put the two side by side.
 *
 * N connections (served by T threads, default one, as redis-benchmark's
 * single thread serves its -c clients) issue GETs or SETs of
 * uniformly random keys "key:%012u" (16 bytes, redis-benchmark's
 * "key:__rand_int__" with -r) with values of a fixed size, each keeping
 * `pipeline` requests in flight (1: one at a time, as redis-benchmark's
 * default).  GETs go two-sided or, with --one-sided, as RDMA READs.
 * Every request's latency (submit to answer) is kept; the report is the
 * throughput over the whole run, p50 and p99, and the server's CPU per
 * operation from its STATS before and after (the serving thread, and the
 * whole process: under softrnic that includes the NIC's progress thread).
 *
 * A thread with many connections polls them in turn without sleeping; a
 * thread with one waits in the library (spins for --spin-us, then
 * sleeps).  One-sided GETs go the same way, as asynchronous chains of
 * READs (kv_submit_get_one_sided), so one thread serves every connection
 * for them too.
 */
#include "kv/bench.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/prng.h"
#include "kv/cli.h"
#include "kv/client.h"

struct bench {
	char host[256];
	const char *port;
	struct kv_client_opts copts;
	enum kv_op op;
	bool one_sided, preload;
	unsigned clients, threads, pipeline, keys;
	uint32_t value_size;
	uint64_t requests;              /* in all */
	bool csv;
	pthread_barrier_t start;
};

struct worker {
	struct bench *b;
	unsigned index, nconns;         /* connections index .. index + nconns - 1 */
	uint64_t n;                     /* this thread's requests */
	uint32_t *lat_ns;               /* one per request */
	uint64_t misses;
	int err;
	pthread_t thread;
};

static int key_of(char *key, unsigned k)
{
	return snprintf(key, 17, "key:%012u", k);
}

/* One connection of a worker. */
struct conn_load {
	struct kv_client *c;
	uint64_t quota, sent, done;
	uint64_t started[KV_DEPTH * 2]; /* submit time by token */
};

static void count(struct worker *w, const struct kv_result *r)
{
	if (r->status == KV_NOT_FOUND)
		w->misses++;
	else if (r->status != KV_OK && !w->err)
		w->err = EPROTO;
}

/* Keep `pipeline` requests (or one-sided GETs) in flight on each
 * connection and take answers as they come, one connection after another
 * (one thread serves many connections, as redis-benchmark does; with one
 * connection the wait spins and then sleeps in the library). */
static void run_load(struct worker *w, struct conn_load *cl, uint8_t *value, uint64_t rng[4])
{
	struct bench *b = w->b;
	uint64_t done = 0;
	char key[17];

	while (done < w->n && !w->err) {
		for (unsigned i = 0; i < w->nconns && !w->err; i++) {
			struct conn_load *l = &cl[i];
			struct kv_result r;
			while (l->sent < l->quota && l->sent - l->done < b->pipeline) {
				uint64_t token;
				int klen = key_of(key, (unsigned)(prng_next(rng) % b->keys));
				int e = b->one_sided ? kv_submit_get_one_sided(l->c, key, (uint32_t)klen,
									       clock_ns(CLOCK_REALTIME), &token)
						     : kv_submit(l->c, b->op, key, (uint32_t)klen, value,
								 b->op == KV_OP_SET ? b->value_size : 0, 0, &token);
				if (e == EBUSY)
					break;
				if (e) {
					w->err = e;
					break;
				}
				l->started[token % (KV_DEPTH * 2)] = clock_ns(CLOCK_MONOTONIC);
				l->sent++;
			}
			int n;
			while ((n = kv_complete(l->c, &r, w->nconns == 1)) == 1) {
				uint64_t t = clock_ns(CLOCK_MONOTONIC) - l->started[r.token % (KV_DEPTH * 2)];
				w->lat_ns[done++] = t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
				l->done++;
				count(w, &r);
				if (w->nconns == 1)
					break;
			}
			if (n < 0)
				w->err = -n;
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct bench *b = w->b;
	uint8_t *value = calloc(1, b->value_size ? b->value_size : 1);
	struct conn_load *cl = calloc(w->nconns, sizeof(*cl));
	uint64_t rng[4];

	prng_seed(rng, 1000 + w->index);
	for (unsigned i = 0; cl && i < w->nconns && !w->err; i++) {
		cl[i].c = kv_connect_opts(b->host, b->port, &b->copts, &w->err);
		cl[i].quota = w->n / w->nconns + (i < w->n % w->nconns);
	}
	pthread_barrier_wait(&b->start);
	if (!value || !cl) {
		w->err = ENOMEM;
	} else if (!w->err) {
		memset(value, 'x', b->value_size);
		run_load(w, cl, value, rng);
	}
	for (unsigned i = 0; cl && i < w->nconns; i++)
		kv_close(cl[i].c);
	free(cl);
	free(value);
	return NULL;
}

/* The server's STATS line `name`, or 0. */
static uint64_t stat_of(const char *text, uint32_t len, const char *name)
{
	char buf[4096];
	size_t nl = strlen(name);

	snprintf(buf, sizeof(buf), "%.*s", (int)len, text);
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, nl) && p[nl] == ' ')
			return strtoull(p + nl + 1, NULL, 10);
	return 0;
}

static int server_cpu(struct bench *b, uint64_t *thread_us, uint64_t *process_us, uint64_t *requests)
{
	int err;
	struct kv_client *c = kv_connect_opts(b->host, b->port, &b->copts, &err);
	struct kv_result r;

	if (!c)
		return err;
	err = kv_call(c, KV_OP_STATS, NULL, 0, NULL, 0, 0, &r);
	if (!err) {
		*thread_us = stat_of((const char *)r.value, r.vlen, "cpu_server_thread_us");
		*process_us = stat_of((const char *)r.value, r.vlen, "cpu_process_us");
		*requests = stat_of((const char *)r.value, r.vlen, "requests");
	}
	kv_close(c);
	return err;
}

/* SET every key once, pipelined, so GETs hit. */
static int preload(struct bench *b)
{
	int err;
	struct kv_client *c = kv_connect_opts(b->host, b->port, &b->copts, &err);
	uint8_t *value = calloc(1, b->value_size ? b->value_size : 1);
	struct kv_result r;
	char key[17];

	if (!c || !value) {
		free(value);
		kv_close(c);
		return c ? ENOMEM : err;
	}
	memset(value, 'x', b->value_size);
	err = 0;
	for (unsigned k = 0; k < b->keys && !err; k++) {
		int klen = key_of(key, k);
		err = kv_call(c, KV_OP_SET, key, (uint32_t)klen, value, b->value_size, 0, &r);
		if (!err && r.status != KV_OK)
			err = r.status == KV_NO_MEMORY ? ENOMEM : EPROTO;
	}
	free(value);
	kv_close(c);
	return err;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int kv_bench_main(const struct cli_args *a)
{
	struct bench b = { .host = "127.0.0.1", .port = KV_DEFAULT_PORT, .copts = KV_CLIENT_DEFAULTS,
			   .op = KV_OP_GET, .preload = true, .clients = 1, .pipeline = 1, .keys = 1000,
			   .value_size = 32, .requests = 100000 };
	const char *server = cli_str(a, "--server", NULL);

	if (server)
		kv_cli_server(server, b.host, sizeof(b.host), &b.port);
	if (cli_uint(a, "--op", 0) == 1)
		b.op = KV_OP_SET;
	if (cli_uint(a, "--transport", 1) == 0)
		b.copts.transport = KV_VIA_SEND;
	b.clients = (unsigned)cli_uint(a, "--clients", b.clients);
	b.threads = (unsigned)cli_uint(a, "--threads", 0);
	b.requests = cli_uint(a, "--requests", b.requests);
	b.keys = (unsigned)cli_uint(a, "--keys", b.keys);
	b.value_size = (uint32_t)cli_uint(a, "--value-size", b.value_size);
	b.pipeline = (unsigned)cli_uint(a, "--pipeline", b.pipeline);
	b.copts.spin_us = (unsigned)cli_uint(a, "--spin-us", b.copts.spin_us);
	b.one_sided = cli_flag(a, "--one-sided");
	b.preload = !cli_flag(a, "--no-preload");
	b.csv = cli_flag(a, "--csv");
	if (b.requests < b.clients)
		return cli_error(a, "--requests %llu: fewer than --clients %u", (unsigned long long)b.requests,
				 b.clients);
	if (b.threads > b.clients)
		return cli_error(a, "--threads %u: more than --clients %u", b.threads, b.clients);
	if (b.one_sided && b.op != KV_OP_GET)
		return cli_error(a, "--one-sided: GETs only");
	if (!b.threads)
		b.threads = 1;

	int err = b.preload && b.op == KV_OP_GET ? preload(&b) : 0;
	if (err) {
		fprintf(stderr, "softrnic-kv bench: preloading %u keys: %s\n", b.keys, strerror(err));
		return 2;
	}
	uint64_t thr0 = 0, proc0 = 0, req0 = 0, thr1 = 0, proc1 = 0, req1 = 0;
	if ((err = server_cpu(&b, &thr0, &proc0, &req0)) != 0) {
		fprintf(stderr, "softrnic-kv bench: cannot connect to %s:%s: %s\n", b.host, b.port, strerror(err));
		return 2;
	}
	struct worker *w = calloc(b.threads, sizeof(*w));
	uint32_t *lat = malloc(b.requests * sizeof(*lat));
	if (!w || !lat) {
		fprintf(stderr, "softrnic-kv bench: out of memory\n");
		return 2;
	}
	pthread_barrier_init(&b.start, NULL, b.threads + 1);
	uint64_t at = 0;
	for (unsigned i = 0, conn = 0; i < b.threads; i++) {
		unsigned nconns = b.clients / b.threads + (i < b.clients % b.threads);
		uint64_t n = 0;
		for (unsigned k = 0; k < nconns; k++)
			n += b.requests / b.clients + (conn + k < b.requests % b.clients);
		w[i] = (struct worker){ .b = &b, .index = conn, .nconns = nconns, .n = n, .lat_ns = lat + at };
		conn += nconns;
		at += n;
		pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
	}
	pthread_barrier_wait(&b.start);
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	uint64_t misses = 0;
	for (unsigned i = 0; i < b.threads; i++) {
		pthread_join(w[i].thread, NULL);
		misses += w[i].misses;
		if (w[i].err && !err)
			err = w[i].err;
	}
	uint64_t elapsed = clock_ns(CLOCK_MONOTONIC) - t0;
	pthread_barrier_destroy(&b.start);
	if (err) {
		fprintf(stderr, "softrnic-kv bench: a client failed: %s\n", strerror(err));
		free(w);
		free(lat);
		return 2;
	}
	server_cpu(&b, &thr1, &proc1, &req1);
	qsort(lat, b.requests, sizeof(*lat), cmp_u32);
	double rps = (double)b.requests * 1e9 / (double)elapsed;
	double p50 = lat[b.requests / 2] / 1000.0, p99 = lat[b.requests * 99 / 100] / 1000.0;
	/* The server's CPU per operation, less the STATS call itself. */
	double thr_us = (double)(thr1 - thr0) / (double)b.requests;
	double proc_us = (double)(proc1 - proc0) / (double)b.requests;
	const char *path = b.op == KV_OP_SET ? "set" : b.one_sided ? "get-one-sided" : "get";
	const char *tr = b.copts.transport == KV_VIA_SEND ? "send" : "write";
	if (b.csv)
		printf("%s,%s,%u,%u,%u,%" PRIu64 ",%.0f,%.2f,%.2f,%.3f,%.3f,%" PRIu64 "\n", path, tr, b.clients,
		       b.value_size, b.pipeline, b.requests, rps, p50, p99, thr_us, proc_us, req1 - req0);
	else
		printf("%s via %s: %u clients, %u B values, pipeline %u: %" PRIu64 " requests in %.2f s, "
		       "%.0f requests/s, p50 %.2f us, p99 %.2f us; server CPU per op %.3f us (serving thread), "
		       "%.3f us (process); %" PRIu64 " misses; the server saw %" PRIu64 " requests\n",
		       path, tr, b.clients, b.value_size, b.pipeline, b.requests, (double)elapsed / 1e9, rps, p50, p99,
		       thr_us, proc_us, misses, req1 - req0);
	free(w);
	free(lat);
	return 0;
}
