/*
 * kv_net_test.c — one client of a running softrnic-kv server (run by
 * kv_net.sh, several at once):
 *
 *   model   N random SET/GET/DEL/INCR on keys of this client's own prefix,
 *           values 0 B to 64 KiB, checked against a local model (the
 *           server's memory is large enough that nothing is evicted);
 *           every other GET is one-sided (RDMA READs of the table)
 *   bad     malformed requests — too short, bad magic, unknown op, a key
 *           longer than 250 bytes, lengths that disagree with the message,
 *           a value on a GET — each answered KV_BAD_REQUEST, and the
 *           connection keeps serving
 *
 *   race    (mode race-writer / race-reader, two processes) the writer
 *           SETs one key over and over with values of 2-60 KiB whose
 *           bytes follow from a seed in their first word; the reader
 *           GETs it one-sided as fast as it can and checks every value it
 *           gets is one whole write: never torn by a concurrent SET
 *
 *   confine (mode confine) the rkey the server hands out reads the table
 *           and nothing else: a READ inside the arena works, a READ just
 *           before it, one across its end and any WRITE into it fail with
 *           a remote access error (each on a fresh connection: the error
 *           breaks the QP) and leave the table as it was
 *
 *   stall   (mode stall) a client that stops taking answers: a raw
 *           librdmacm connection (no kv library) that posts no receive,
 *           sends KV_DEPTH GETs and then sleeps OPS seconds; the server's
 *           answers meet RNR NAKs until its retries run out, and it must
 *           reclaim the connection (kv_net.sh watches its STATS)
 *
 *   idle    (mode idle) connect, SET one key, say "ready", sleep OPS
 *           seconds: kv_net.sh kills it with SIGKILL between requests
 *           and the server must find out by itself (its probe)
 *
 *   shard   (mode shard, HOST a list A:P,B:P,C:P, PORT unused) through
 *           the cluster client: SET OPS keys, read each back (every other
 *           one-sided), MGETs across shards; then each key is asked of
 *           every server directly: only the one the ring names has it
 *   shard-degraded (the last server of the list stopped) keys on the
 *           others are still served, keys on the stopped one fail
 *
 * The transport is KV_TEST_TRANSPORT from the environment: send or write
 * (the default).
 *
 *   fill / verify (kv_aof.sh) SET keys aof:0 .. aof:OPS-1 with values
 *           that follow from their number, printing each acknowledged
 *           number; verify checks keys 0 .. OPS-1 are all there
 *
 * usage: kv_net_test HOST PORT CLIENT_ID OPS [model|race-writer|race-reader|confine|stall|idle|shard|shard-degraded|fill|verify]
 */
#include <time.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "base/clock.h"
#include "base/prng.h"
#include "kv/cli.h"
#include "kv/client.h"
#include "kv/cluster.h"

#include "../check.h"

#define NKEYS 200
#define MAXV (64 * 1024)

static int who;

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)((seed * 2654435761u + i * 40503u) >> 11);
}

/* A race value: [seed][len] then fill(len - 8, seed). */
static uint32_t race_value(uint8_t *p, uint32_t len, uint32_t seed)
{
	memcpy(p, &seed, 4);
	memcpy(p + 4, &len, 4);
	fill(p + 8, len - 8, seed);
	return len;
}

static bool race_value_ok(const uint8_t *p, uint32_t len, uint8_t *scratch)
{
	uint32_t seed, l;

	if (len < 8)
		return false;
	memcpy(&seed, p, 4);
	memcpy(&l, p + 4, 4);
	if (l != len)
		return false;
	fill(scratch, len - 8, seed);
	return memcmp(p + 8, scratch, len - 8) == 0;
}

/* A GET's result against the model: the value (len bytes from seed) if
 * the key is present, else not found.  scratch: room for the value. */
static void check_get(const struct kv_result *r, bool present, uint32_t len, uint32_t seed, uint8_t *scratch)
{
	if (present) {
		CHECK(r->status == KV_OK && r->vlen == len);
		fill(scratch, len, seed);
		CHECK(r->vlen != len || memcmp(r->value, scratch, len) == 0);
	} else {
		CHECK(r->status == KV_NOT_FOUND);
	}
}

static int race(struct kv_client *c, bool writer, long ops)
{
	static uint8_t v[MAXV], scratch[MAXV];
	uint64_t rng[4];
	struct kv_result r;
	long seen = 0;

	prng_seed(rng, 99);
	for (long i = 0; i < ops; i++) {
		if (writer) {
			uint32_t len = 2048 + (uint32_t)(prng_next(rng) % (60 * 1024));
			race_value(v, len, (uint32_t)prng_next(rng));
			CHECK(kv_call(c, KV_OP_SET, "race", 4, v, len, 0, &r) == 0 && r.status == KV_OK);
		} else if (i % 2) {
			int e = kv_get_one_sided(c, "race", 4, clock_ns(CLOCK_REALTIME), &r);
			CHECK(e == 0 || e == EAGAIN);
			if (e == 0 && r.status == KV_OK) {
				seen++;
				CHECK(race_value_ok(r.value, r.vlen, scratch));
			}
		} else {
			/* KV_DEPTH asynchronous one-sided GETs at once: each
			 * whole too, each token answered once. */
			uint64_t tok[KV_DEPTH], got = 0;
			for (unsigned j = 0; j < KV_DEPTH; j++)
				CHECK(kv_submit_get_one_sided(c, "race", 4, clock_ns(CLOCK_REALTIME), &tok[j]) == 0);
			for (unsigned j = 0; j < KV_DEPTH; j++) {
				CHECK(kv_complete(c, &r, true) == 1);
				for (unsigned t = 0; t < KV_DEPTH; t++)
					if (r.token == tok[t])
						got |= 1ull << t;
				CHECK(r.status == KV_OK || r.status == KV_NOT_FOUND || r.status == KV_IO_ERROR);
				if (r.status == KV_OK) {
					seen++;
					CHECK(race_value_ok(r.value, r.vlen, scratch));
				}
			}
			CHECK(got == (1ull << KV_DEPTH) - 1);
			CHECK(kv_in_flight(c) == 0);
		}
		if (check_failures > 5)
			break;
	}
	if (!writer) {
		CHECK(seen > 0);
		printf("client %d: %ld one-sided reads of a key being rewritten, %ld values, all whole; %llu torn reads retried\n",
		       who, ops, seen, (unsigned long long)kv_torn_retries(c));
	} else {
		printf("client %d: %ld SETs of the raced key\n", who, ops);
	}
	return check_failures ? 1 : 0;
}

static struct kv_client *connect_client(const char *host, const char *port, int *err)
{
	struct kv_client_opts o = KV_CLIENT_DEFAULTS;
	const char *t = getenv("KV_TEST_TRANSPORT");

	if (t && !kv_cli_transport(t, &o.transport)) {
		fprintf(stderr, "KV_TEST_TRANSPORT: send or write\n");
		exit(2);
	}
	return kv_connect_opts(host, port, &o, err);
}

/* A client that stops taking answers (no receive posted), by hand. */
static int stall(const char *host, const char *port, long seconds)
{
	static uint8_t msg[KV_DEPTH][64];
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = KV_DEPTH, .max_recv_wr = 1, .max_send_sge = 1,
						.max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };
	struct rdma_cm_id *id;
	struct ibv_mr *mr;

	if (rdma_getaddrinfo(host, port, &hints, &ai) || rdma_create_ep(&id, ai, NULL, &qa) ||
	    !(mr = rdma_reg_msgs(id, msg, sizeof(msg))) || rdma_connect(id, NULL)) {
		perror("stall: connect");
		return 1;
	}
	for (unsigned i = 0; i < KV_DEPTH; i++) {
		struct kv_req req = { .magic = KV_PROTO_MAGIC, .op = KV_OP_GET, .klen = 5, .id = i + 1 };
		memcpy(msg[i], &req, sizeof(req));
		memcpy(msg[i] + sizeof(req), "stall", 5);
		if (rdma_post_send(id, NULL, msg[i], sizeof(req) + 5, mr, 0)) {
			perror("stall: send");
			return 1;
		}
	}
	printf("client %d: %u requests sent, no receive posted; sleeping\n", who, KV_DEPTH);
	fflush(stdout);
	sleep((unsigned)seconds);
	return 0;
}

static uint32_t shard_value(uint8_t *v, long i)
{
	uint32_t len = 1 + (uint32_t)(i % 700);
	fill(v, len, (uint32_t)i * 31u);
	return len;
}

static int shard(const char *list, long ops, bool degraded)
{
	static uint8_t v[1024];
	struct kv_client_opts o = KV_CLIENT_DEFAULTS;
	struct kv_cluster *cl;
	struct kv_result r;
	long served = 0, refused = 0;
	int err;

	CHECK(kv_cluster_open(&cl, list, "18860", &o) == 0);
	if (check_failures)
		return 1;
	unsigned n = kv_cluster_size(cl);
	for (long i = 0; i < ops && check_failures < 10; i++) {
		char key[32];
		uint32_t klen = (uint32_t)snprintf(key, sizeof(key), "s:%ld", i);
		uint32_t len = shard_value(v, i);
		unsigned where = kv_cluster_server_of(cl, key, klen);
		struct kv_client *c = kv_cluster_client(cl, where, &err);
		if (degraded && where == n - 1) {
			CHECK(c == NULL);
			refused++;
			continue;
		}
		CHECK(c != NULL);
		if (!c)
			break;
		if (!degraded)
			CHECK(kv_call(c, KV_OP_SET, key, klen, v, len, 0, &r) == 0 && r.status == KV_OK);
		if (i % 2)
			CHECK(kv_get_one_sided(c, key, klen, clock_ns(CLOCK_REALTIME), &r) == 0);
		else
			CHECK(kv_call(c, KV_OP_GET, key, klen, NULL, 0, 0, &r) == 0);
		CHECK(r.status == KV_OK && r.vlen == len && memcmp(r.value, v, len) == 0);
		served++;
	}
	if (!degraded) {
		/* MGETs of 20 keys spread over the shards. */
		for (int round = 0; round < 50; round++) {
			char names[20][32];
			const char *keys[20];
			const uint8_t *vals[20];
			uint32_t vls[20];
			for (int j = 0; j < 20; j++) {
				snprintf(names[j], sizeof(names[j]), "s:%ld", (round * 7919L + j * 104729L) % (ops + 50));
				keys[j] = names[j];
			}
			CHECK(kv_cluster_mget(cl, 20, keys, &r, vals, vls) == 0 && r.status == KV_OK);
			for (int j = 0; j < 20 && r.status == KV_OK; j++) {
				long i = atol(names[j] + 2);
				if (i >= ops) {
					CHECK(vals[j] == NULL);
					continue;
				}
				uint32_t len = shard_value(v, i);
				CHECK(vals[j] && vls[j] == len && memcmp(vals[j], v, len) == 0);
			}
		}
		/* Each key on its ring server only: ask every server directly. */
		unsigned per[KV_RING_MAX_SERVERS] = { 0 };
		for (long i = 0; i < ops && i < 600; i++) {
			char key[32];
			uint32_t klen = (uint32_t)snprintf(key, sizeof(key), "s:%ld", i);
			unsigned where = kv_cluster_server_of(cl, key, klen);
			for (unsigned s2 = 0; s2 < n; s2++) {
				struct kv_client *c = kv_cluster_client(cl, s2, &err);
				CHECK(c && kv_call(c, KV_OP_GET, key, klen, NULL, 0, 0, &r) == 0);
				CHECK(r.status == (s2 == where ? KV_OK : KV_NOT_FOUND));
			}
			per[where]++;
		}
		printf("client %d: %ld keys over %u servers; of the first 600: ", who, ops, n);
		for (unsigned s2 = 0; s2 < n; s2++)
			printf("%s%u on %s", s2 ? ", " : "", per[s2], kv_cluster_name(cl, s2));
		printf("; each only there\n");
		for (unsigned s2 = 0; s2 < n; s2++)
			CHECK(per[s2] > 100);
	} else {
		printf("client %d: with the last server stopped, %ld keys served, %ld refused (theirs)\n", who, served,
		       refused);
		CHECK(served > 0 && refused > 0);
	}
	kv_cluster_close(cl);
	return check_failures ? 1 : 0;
}

static void test_bad(struct kv_client *c)
{
	uint8_t msg[600];
	struct kv_req req;
	struct kv_result r;

	/* too short */
	memset(msg, 0, sizeof(msg));
	CHECK(kv_call_raw(c, msg, 10, &r) == 0 && r.status == KV_BAD_REQUEST);
	/* bad magic */
	req = (struct kv_req){ .magic = 0x12345678, .op = KV_OP_GET, .klen = 1 };
	memcpy(msg, &req, sizeof(req));
	msg[sizeof(req)] = 'k';
	CHECK(kv_call_raw(c, msg, sizeof(req) + 1, &r) == 0 && r.status == KV_BAD_REQUEST);
	/* unknown op */
	req = (struct kv_req){ .magic = KV_PROTO_MAGIC, .op = 99, .klen = 1 };
	memcpy(msg, &req, sizeof(req));
	CHECK(kv_call_raw(c, msg, sizeof(req) + 1, &r) == 0 && r.status == KV_BAD_REQUEST);
	/* a key of 251 bytes */
	req = (struct kv_req){ .magic = KV_PROTO_MAGIC, .op = KV_OP_GET, .klen = 251 };
	memcpy(msg, &req, sizeof(req));
	memset(msg + sizeof(req), 'x', 251);
	CHECK(kv_call_raw(c, msg, sizeof(req) + 251, &r) == 0 && r.status == KV_BAD_REQUEST);
	/* lengths that claim more than the message holds */
	req = (struct kv_req){ .magic = KV_PROTO_MAGIC, .op = KV_OP_SET, .klen = 4, .vlen = 1000 };
	memcpy(msg, &req, sizeof(req));
	CHECK(kv_call_raw(c, msg, sizeof(req) + 4 + 10, &r) == 0 && r.status == KV_BAD_REQUEST);
	/* a value on a GET */
	req = (struct kv_req){ .magic = KV_PROTO_MAGIC, .op = KV_OP_GET, .klen = 1, .vlen = 3 };
	memcpy(msg, &req, sizeof(req));
	CHECK(kv_call_raw(c, msg, sizeof(req) + 4, &r) == 0 && r.status == KV_BAD_REQUEST);
	/* an MGET whose key claims more bytes than the message holds */
	req = (struct kv_req){ .magic = KV_PROTO_MAGIC, .op = KV_OP_MGET, .vlen = 6 };
	memcpy(msg, &req, sizeof(req));
	uint16_t kl = 200;
	memcpy(msg + sizeof(req), &kl, 2);
	memcpy(msg + sizeof(req) + 2, "abcd", 4);
	CHECK(kv_call_raw(c, msg, sizeof(req) + 6, &r) == 0 && r.status == KV_BAD_REQUEST);
	/* ... and the connection still serves. */
	char key[32];
	int n = snprintf(key, sizeof(key), "c%d:after-bad", who);
	CHECK(kv_call(c, KV_OP_SET, key, (uint32_t)n, "fine", 4, 0, &r) == 0 && r.status == KV_OK);
	CHECK(kv_call(c, KV_OP_GET, key, (uint32_t)n, NULL, 0, 0, &r) == 0 && r.status == KV_OK && r.vlen == 4 &&
	      memcmp(r.value, "fine", 4) == 0);
}

int main(int argc, char **argv)
{
	static uint8_t val[MAXV];
	static bool present[NKEYS];
	static uint32_t lens[NKEYS], seeds[NKEYS];
	static int64_t counter[NKEYS];
	uint64_t rng[4];
	int err;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: %s HOST PORT CLIENT_ID OPS [model|race-writer|race-reader]\n", argv[0]);
		return 2;
	}
	const char *mode = argc == 6 ? argv[5] : "model";
	who = atoi(argv[3]);
	static char who_name[32];
	snprintf(who_name, sizeof(who_name), "client %d", who);
	check_who = who_name;
	long ops = atol(argv[4]);
	if (strcmp(mode, "stall") == 0)
		return stall(argv[1], argv[2], ops);
	if (strncmp(mode, "shard", 5) == 0)
		return shard(argv[1], ops, strcmp(mode, "shard-degraded") == 0);
	struct kv_client *c = connect_client(argv[1], argv[2], &err);
	if (!c) {
		fprintf(stderr, "client %d: connect: %s\n", who, strerror(err));
		return 1;
	}
	if (strcmp(mode, "idle") == 0) {
		struct kv_result r;
		CHECK(kv_call(c, KV_OP_SET, "idle", 4, "x", 1, 0, &r) == 0 && r.status == KV_OK);
		printf("ready\n");
		fflush(stdout);
		sleep((unsigned)ops);
		kv_close(c);
		return check_failures ? 1 : 0;
	}
	if (strcmp(mode, "fill") == 0 || strcmp(mode, "verify") == 0) {
		bool fill_mode = mode[0] == 'f';
		struct kv_result r;
		for (long i = 0; i < ops; i++) {
			char key[32];
			uint32_t klen = (uint32_t)snprintf(key, sizeof(key), "aof:%ld", i);
			uint32_t len = 100 + (uint32_t)(i % 3000);
			fill(val, len, (uint32_t)i);
			if (fill_mode) {
				if (kv_call(c, KV_OP_SET, key, klen, val, len, 0, &r) != 0 || r.status != KV_OK)
					break;
				printf("acked %ld\n", i);
				fflush(stdout);
			} else {
				CHECK(kv_call(c, KV_OP_GET, key, klen, NULL, 0, 0, &r) == 0 && r.status == KV_OK &&
				      r.vlen == len && memcmp(r.value, val, len) == 0);
			}
		}
		if (!fill_mode)
			printf("client %d: all %ld acknowledged SETs found after the restart\n", who, ops);
		kv_close(c);
		return check_failures ? 1 : 0;
	}
	if (strcmp(mode, "confine") == 0) {
		struct kv_result r;
		CHECK(kv_call(c, KV_OP_SET, "confined", 8, "intact", 6, 0, &r) == 0 && r.status == KV_OK);
		CHECK(kv_probe_remote(c, false, 0, 4096) == 0);        /* the table itself */
		kv_close(c);
		static const struct { bool write; int64_t off; uint32_t len; } probes[] = {
			{ false, -8, 16 }, { false, (int64_t)1 << 40, 64 }, { true, 0, 64 }, { true, 4096, 8 },
		};
		for (unsigned i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
			c = connect_client(argv[1], argv[2], &err);
			CHECK(c != NULL);
			if (!c)
				break;
			CHECK(kv_probe_remote(c, probes[i].write, probes[i].off, probes[i].len) == EACCES);
			kv_close(c);
		}
		c = connect_client(argv[1], argv[2], &err);
		CHECK(c != NULL);
		if (c) {
			CHECK(kv_call(c, KV_OP_GET, "confined", 8, NULL, 0, 0, &r) == 0 && r.status == KV_OK &&
			      r.vlen == 6 && memcmp(r.value, "intact", 6) == 0);
			kv_close(c);
		}
		printf("client %d: the rkey reads the table only: outside reads and every write refused\n", who);
		return check_failures ? 1 : 0;
	}
	if (strcmp(mode, "model") != 0) {
		int rc = race(c, strcmp(mode, "race-writer") == 0, ops);
		kv_close(c);
		return rc;
	}
	prng_seed(rng, (uint64_t)who * 7919 + 1);
	for (long op = 0; op < ops; op++) {
		int k = (int)(prng_next(rng) % NKEYS);
		unsigned what = (unsigned)(prng_next(rng) % 100);
		char key[48];
		uint32_t klen = (uint32_t)snprintf(key, sizeof(key), "c%d:key:%d", who, k);
		struct kv_result r;

		if (what < 35) {
			uint32_t len = (uint32_t)(prng_next(rng) % (prng_next(rng) % 4 ? 512 : MAXV));
			uint32_t s = (uint32_t)prng_next(rng);
			fill(val, len, s);
			CHECK(kv_call(c, KV_OP_SET, key, klen, val, len, 0, &r) == 0 && r.status == KV_OK);
			present[k] = true;
			lens[k] = len;
			seeds[k] = s;
		} else if (what < 75) {
			if (op % 2)
				CHECK(kv_get_one_sided(c, key, klen, clock_ns(CLOCK_REALTIME), &r) == 0);
			else
				CHECK(kv_call(c, KV_OP_GET, key, klen, NULL, 0, 0, &r) == 0);
			check_get(&r, present[k], lens[k], seeds[k], val);
		} else if (what < 80) {
			/* MGET of 5 keys (some present, some not) in one trip. */
			char names[5][48];
			const char *keys[5];
			const uint8_t *vals[5];
			uint32_t vls[5];
			int idx[5];
			for (int j = 0; j < 5; j++) {
				idx[j] = (int)(prng_next(rng) % NKEYS);
				snprintf(names[j], sizeof(names[j]), "c%d:key:%d", who, idx[j]);
				keys[j] = names[j];
			}
			int e = kv_mget(c, 5, keys, &r, vals, vls);
			CHECK(e == 0 && (r.status == KV_OK || r.status == KV_BAD_REQUEST));
			for (int j = 0; e == 0 && r.status == KV_OK && j < 5; j++) {
				if (!present[idx[j]]) {
					CHECK(vals[j] == NULL);
					continue;
				}
				CHECK(vals[j] && vls[j] == lens[idx[j]]);
				fill(val, lens[idx[j]], seeds[idx[j]]);
				CHECK(!vals[j] || vls[j] != lens[idx[j]] || memcmp(vals[j], val, vls[j]) == 0);
			}
		} else if (what < 90) {
			CHECK(kv_call(c, KV_OP_DEL, key, klen, NULL, 0, 0, &r) == 0);
			CHECK(r.status == (present[k] ? KV_OK : KV_NOT_FOUND));
			present[k] = false;
		} else {
			char nkey[48];
			uint32_t nlen = (uint32_t)snprintf(nkey, sizeof(nkey), "c%d:n:%d", who, k);
			int64_t d = (int64_t)(prng_next(rng) % 1000) - 500;
			CHECK(kv_call(c, KV_OP_INCR, nkey, nlen, NULL, 0, d, &r) == 0 && r.status == KV_OK);
			counter[k] += d;
			CHECK(r.number == counter[k]);
		}
		if (check_failures > 20)
			break;
	}
	/* Asynchronous GETs, one-sided and two-sided mixed, KV_DEPTH - 1 at a
	 * time (the answer handed out last holds its slot until the next
	 * kv_complete), against the model (this client's keys change only
	 * here). */
	for (int round = 0; round < 200 && check_failures < 20; round++) {
		enum { N = KV_DEPTH - 1 };
		int ks[N];
		uint64_t tok[N];
		for (unsigned j = 0; j < N; j++) {
			char key[48];
			ks[j] = (int)(prng_next(rng) % NKEYS);
			uint32_t klen = (uint32_t)snprintf(key, sizeof(key), "c%d:key:%d", who, ks[j]);
			if ((j + (unsigned)round) % 2)
				CHECK(kv_submit_get_one_sided(c, key, klen, clock_ns(CLOCK_REALTIME), &tok[j]) == 0);
			else
				CHECK(kv_submit(c, KV_OP_GET, key, klen, NULL, 0, 0, &tok[j]) == 0);
		}
		for (unsigned j = 0; j < N; j++) {
			struct kv_result r;
			unsigned which = N;
			CHECK(kv_complete(c, &r, true) == 1);
			for (unsigned t = 0; t < N; t++)
				if (r.token == tok[t])
					which = t;
			CHECK(which < N);
			if (which == N)
				continue;
			int k = ks[which];
			check_get(&r, present[k], lens[k], seeds[k], val);
		}
	}
	test_bad(c);
	kv_close(c);
	if (check_failures)
		return check_exit(check_who);
	printf("client %d: %ld operations ok\n", who, ops);
	return 0;
}
