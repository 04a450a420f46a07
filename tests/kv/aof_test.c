/*
 * aof_test.c — the append-only file's load rules (src/kv/aof.c, aof.h),
 * in process, on logs written by kv_aof_append.
 *
 *   cuts      the log cut at every length: valid at a record boundary,
 *             otherwise torn at the start of the record cut, with the
 *             records before it replayed; the same for a log written
 *             before the header check existed (its byte 0)
 *   flips     every single-bit flip and every byte xor 0xff, at every
 *             byte of the log: never taken for a tear, corrupt at the
 *             start of the record hit (the only exception: a header check
 *             byte turned into 0, "no check", with the record intact);
 *             in an old-format log, flips in any record but the last
 *   headers   torn headers cut inside a field: torn only if the bytes
 *             present allow a valid record (a key length's low byte of
 *             0 or over 250, a DEL's value length, a wrong magic byte are
 *             corrupt); not a log at all; zeros after the last record; a
 *             short record with a whole record inside it
 *   files     kv_aof_open on a corrupt log: EBADMSG, the file unchanged
 *             (bytes and mtime); on a torn one: cut; through a symbolic
 *             link, on a FIFO, on a log another open holds: refused;
 *             check-aof --fix: a copy identical to the file, never over an
 *             existing one, then the cut; no copy for a valid log; a file
 *             with no record left alone; the rewrite's temporary name
 *             taken by a symbolic link, a FIFO or a directory: not
 *             written through, the rewrite fails; a stale regular file
 *             there is replaced
 *
 * usage: kv_aof_test
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check.h"
#include "kv/aof.h"

#define HEAD 24u
#define NREC 12

static char dir[64];
static uint64_t arena[(4 << 20) / 8];

/* One change of the log the tests write, and what replay gave back. */
struct change {
	int op;
	char key[16];
	uint32_t vlen;
	uint64_t expire_ns;
};
static struct change written[NREC];
static uint64_t starts[NREC + 1];       /* record i is [starts[i], starts[i + 1]) */

struct replayed {
	unsigned n;
	bool ok;                        /* each matched written[] */
};

static void value_of(unsigned i, uint8_t *v, uint32_t len)
{
	for (uint32_t j = 0; j < len; j++)
		v[j] = (uint8_t)(i * 37 + j * 11);
}

static void collect(void *ctx, const struct kv_aof_view *v)
{
	struct replayed *r = ctx;
	uint8_t want[4096];

	if (r->n >= NREC) {
		r->ok = false;
		return;
	}
	const struct change *w = &written[r->n];
	value_of(r->n, want, w->vlen);
	if (v->op != w->op || v->klen != strlen(w->key) || memcmp(v->key, w->key, v->klen) ||
	    v->vlen != w->vlen || memcmp(v->val, want, v->vlen) || v->expire_ns != w->expire_ns)
		r->ok = false;
	r->n++;
}

static char *path_of(const char *name)
{
	static char p[4][128];
	static unsigned k;
	char *out = p[k++ % 4];

	snprintf(out, sizeof(p[0]), "%s/%s", dir, name);
	return out;
}

static uint8_t *read_file(const char *path, uint64_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc(1 << 20);

	*len = f ? fread(buf, 1, 1 << 20, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

static void write_file(const char *path, const uint8_t *buf, uint64_t len)
{
	FILE *f = fopen(path, "wb");

	CHECK(f && fwrite(buf, 1, len, f) == len);
	if (f)
		fclose(f);
}

static bool same_file(const char *path, const uint8_t *buf, uint64_t len)
{
	uint64_t n;
	uint8_t *now = read_file(path, &n);
	bool same = n == len && memcmp(now, buf, len) == 0;

	free(now);
	return same;
}

/* The log: NREC changes through kv_aof_append, SETs of 0 to ~3000
 * bytes and DELs, some with an expiry.  Returns its bytes. */
static uint8_t *write_log(uint64_t *len)
{
	struct kv_table t;
	struct kv_aof a;
	struct kv_aof_check c;
	uint8_t v[4096];

	CHECK(kv_table_init(&t, arena, sizeof(arena), 0) == 0);
	unlink(path_of("log"));
	CHECK(kv_aof_open(&a, path_of("log"), KV_FSYNC_NO, &t, 1, &c) == 0 && c.state == KV_AOF_VALID);
	starts[0] = 0;
	for (unsigned i = 0; i < NREC; i++) {
		struct change *w = &written[i];
		w->op = i % 4 == 2 ? KV_AOF_DEL : KV_AOF_SET;
		snprintf(w->key, sizeof(w->key), "key-%u", i % 5);
		w->vlen = w->op == KV_AOF_DEL ? 0 : i == 1 ? 0 : (i * 277u) % 3000u + (i == 11 ? 300 : 0);
		w->expire_ns = i % 3 == 0 ? 0 : 1000000000ull * i;
		value_of(i, v, w->vlen);
		CHECK(kv_aof_append(&a, w->op, (const uint8_t *)w->key, (uint32_t)strlen(w->key), v, w->vlen,
				    w->expire_ns, 1) == 0);
		starts[i + 1] = starts[i] + HEAD + strlen(w->key) + w->vlen;
	}
	kv_aof_close(&a);
	uint8_t *buf = read_file(path_of("log"), len);
	CHECK(*len == starts[NREC]);
	return buf;
}

/* The same log as one written before the header check: byte 5 of each
 * record 0. */
static uint8_t *old_format(const uint8_t *buf, uint64_t len)
{
	uint8_t *old = malloc(len);

	memcpy(old, buf, len);
	for (unsigned i = 0; i < NREC; i++) {
		CHECK(old[starts[i] + 5] & 0x80);       /* the new records have a check */
		old[starts[i] + 5] = 0;
	}
	return old;
}

static unsigned record_at(uint64_t off)
{
	unsigned i = 0;

	while (starts[i + 1] <= off)
		i++;
	return i;
}

static void test_cuts(const uint8_t *log, uint64_t size, const char *what)
{
	struct kv_aof_check c;
	unsigned bad = 0;

	for (uint64_t len = 0; len <= size; len++) {
		struct replayed r = { 0, true };
		kv_aof_check(log, len, &c, collect, &r);
		unsigned i = len == size ? NREC : record_at(len);
		bool boundary = starts[i] == len;
		bool ok = r.ok && c.size == len && c.records == i && r.n == i && c.good == starts[i] &&
			  c.state == (boundary ? KV_AOF_VALID : KV_AOF_TORN) && c.resync == 0;
		if (ok && !boundary)
			ok = c.promised == (len - starts[i] >= HEAD ? starts[i + 1] - starts[i] : 0);
		if (!ok && bad++ < 5)
			fprintf(stderr, "%s: cut at %" PRIu64 ": state %d, %" PRIu64 " records, good %" PRIu64 ": %s\n",
				what, len, c.state, c.records, c.good, c.why);
	}
	CHECK(bad == 0);
	printf("kv_aof_test: %s: %" PRIu64 " cuts, each valid at a boundary or torn in the record cut\n", what,
	       size + 1);
}

/* Every single-bit flip and every byte xor 0xff. */
static void test_flips(const uint8_t *log, uint64_t size, bool old, const char *what)
{
	uint8_t *buf = malloc(size);
	struct kv_aof_check c;
	unsigned bad = 0, tried = 0, zeroed_checks = 0;

	for (uint64_t at = 0; at < size; at++) {
		unsigned i = record_at(at);
		if (old && i == NREC - 1)
			break;          /* an old log's last record: a longer length looks torn (aof.h) */
		for (unsigned f = 0; f < 9; f++) {
			uint8_t mask = f < 8 ? (uint8_t)(1u << f) : 0xff;
			struct replayed r = { 0, true };
			memcpy(buf, log, size);
			buf[at] ^= mask;
			kv_aof_check(buf, size, &c, collect, &r);
			tried++;
			bool ok = c.state == KV_AOF_CORRUPT && c.good == starts[i] && c.records == i && r.n == i && r.ok;
			/* A check byte turned into one that still fits (0, an
			 * old record's "no check", or by chance the right
			 * check): the record itself is whole and right. */
			if (!ok && at == starts[i] + 5 && c.state == KV_AOF_VALID && r.n == NREC && r.ok) {
				ok = true;
				zeroed_checks++;
			}
			if (!ok && bad++ < 5)
				fprintf(stderr, "%s: byte %" PRIu64 " ^ 0x%02x (record %u at %" PRIu64 "): state %d at %"
					PRIu64 ", %" PRIu64 " records: %s\n", what, at, mask, i, starts[i], c.state,
					c.good, c.records, c.why);
		}
	}
	CHECK(bad == 0);
	printf("kv_aof_test: %s: %u flips, each corrupt at its record (%u changed check bytes that still fit, records intact)\n",
	       what, tried, zeroed_checks);
	free(buf);
}

static enum kv_aof_state state_of(const void *buf, uint64_t len, struct kv_aof_check *c)
{
	kv_aof_check(buf, len, c, NULL, NULL);
	return c->state;
}

static void test_headers(const uint8_t *log, uint64_t size)
{
	struct kv_aof_check c;
	static const struct {
		const char *bytes;
		unsigned len;
		enum kv_aof_state want;
	} torn[] = {
		{ "A", 1, KV_AOF_TORN },
		{ "AOF", 3, KV_AOF_TORN },
		{ "AOX", 3, KV_AOF_CORRUPT },
		{ "AOF1\x03", 5, KV_AOF_CORRUPT },                      /* no such op */
		{ "AOF1\x01\x40", 6, KV_AOF_CORRUPT },                  /* check byte without 0x80 */
		{ "AOF1\x01\x00\x04", 7, KV_AOF_TORN },                 /* key length 4, or 260, ... */
		{ "AOF1\x01\x00\xfb", 7, KV_AOF_CORRUPT },              /* 251 at least: over 250 */
		{ "AOF1\x01\x00\xfa", 7, KV_AOF_TORN },                 /* 250 */
		{ "AOF1\x01\x00\x00", 7, KV_AOF_CORRUPT },              /* 0 or 256 at least */
		{ "AOF1\x01\x00\x04\x00\x00\x00\x10", 11, KV_AOF_TORN }, /* 1 MiB of value */
		{ "AOF1\x01\x00\x04\x00\x00\x00\x11", 11, KV_AOF_CORRUPT }, /* over 1 MiB */
		{ "AOF1\x01\x00\x04\x00\x01\x00\x10", 11, KV_AOF_CORRUPT }, /* 1 MiB + 1 at least */
		{ "AOF1\x02\x00\x04\x00\x00", 9, KV_AOF_TORN },         /* a DEL, no value so far */
		{ "AOF1\x02\x00\x04\x00\x00\x01", 10, KV_AOF_CORRUPT }, /* a DEL with a value */
		{ "AOF1\x01\x00\x04\x00\x40\x00\x00\x00garbage", 19, KV_AOF_TORN }, /* kv_aof.sh's, a header cut */
	};
	uint8_t *buf = malloc(size + 64);

	for (unsigned i = 0; i < sizeof(torn) / sizeof(torn[0]); i++) {
		/* After a whole log, and alone. */
		memcpy(buf, log, size);
		memcpy(buf + size, torn[i].bytes, torn[i].len);
		bool ok = state_of(buf, size + torn[i].len, &c) == torn[i].want && c.good == size && c.records == NREC;
		ok = ok && state_of(torn[i].bytes, torn[i].len, &c) == torn[i].want && c.good == 0;
		if (!ok)
			fprintf(stderr, "torn header %u: state %d: %s\n", i, c.state, c.why);
		CHECK(ok);
	}
	/* Not a log. */
	static const char readme[] = "# softrnic\n\nA software RDMA NIC in user space.\n";
	CHECK(state_of(readme, sizeof(readme) - 1, &c) == KV_AOF_CORRUPT && c.good == 0 && c.records == 0 &&
	      c.resync == 0 && strstr(c.why, "\"# so\""));
	/* Zeros after the last record (a file grown but not written). */
	memcpy(buf, log, size);
	memset(buf + size, 0, 64);
	CHECK(state_of(buf, size + 64, &c) == KV_AOF_CORRUPT && c.good == size && c.records == NREC);
	memset(buf + size, 0, 3);
	CHECK(state_of(buf, size + 3, &c) == KV_AOF_CORRUPT && c.good == size);
	free(buf);
}

/* A record whose value is itself a log record, cut after that inner
 * record: a whole record inside the bytes cut off, so not a tear
 * (aof.h: a value holding a log is refused, not cut). */
static void test_nested(void)
{
	struct kv_table t;
	struct kv_aof a;
	struct kv_aof_check c;
	uint8_t inner[512], *buf;
	uint64_t inner_len, len;

	CHECK(kv_table_init(&t, arena, sizeof(arena), 0) == 0);
	unlink(path_of("inner"));
	unlink(path_of("outer"));
	CHECK(kv_aof_open(&a, path_of("inner"), KV_FSYNC_NO, &t, 1, &c) == 0);
	CHECK(kv_aof_append(&a, KV_AOF_SET, (const uint8_t *)"in", 2, (const uint8_t *)"side", 4, 0, 1) == 0);
	kv_aof_close(&a);
	buf = read_file(path_of("inner"), &inner_len);
	memcpy(inner, buf, inner_len);
	free(buf);
	memset(inner + inner_len, 'x', 100);
	CHECK(kv_aof_open(&a, path_of("outer"), KV_FSYNC_NO, &t, 1, &c) == 0);
	CHECK(kv_aof_append(&a, KV_AOF_SET, (const uint8_t *)"out", 3, inner, (uint32_t)inner_len + 100, 0, 1) == 0);
	kv_aof_close(&a);
	buf = read_file(path_of("outer"), &len);
	CHECK(state_of(buf, len, &c) == KV_AOF_VALID);
	CHECK(state_of(buf, HEAD + 3 + inner_len / 2, &c) == KV_AOF_TORN);
	CHECK(state_of(buf, HEAD + 3 + inner_len + 10, &c) == KV_AOF_CORRUPT && c.good == 0 &&
	      c.resync == HEAD + 3);
	free(buf);
}

static bool same_mtime(const char *path, const struct stat *before)
{
	struct stat now;

	return stat(path, &now) == 0 && now.st_mtim.tv_sec == before->st_mtim.tv_sec &&
	       now.st_mtim.tv_nsec == before->st_mtim.tv_nsec && now.st_size == before->st_size;
}

static void test_files(const uint8_t *log, uint64_t size)
{
	struct kv_table t;
	struct kv_aof a, b;
	struct kv_aof_check c;
	struct stat st;
	uint8_t *bad = malloc(size);
	char bak[256];

	CHECK(kv_table_init(&t, arena, sizeof(arena), 0) == 0);
	/* Corrupt: refused, not a byte or the mtime changed. */
	memcpy(bad, log, size);
	bad[starts[3] + HEAD + 2] ^= 1;
	write_file(path_of("bad"), bad, size);
	CHECK(stat(path_of("bad"), &st) == 0);
	CHECK(kv_aof_open(&a, path_of("bad"), KV_FSYNC_ALWAYS, &t, 1, &c) == EBADMSG && a.fd == -1);
	CHECK(c.state == KV_AOF_CORRUPT && c.good == starts[3] && c.records == 3);
	CHECK(same_file(path_of("bad"), bad, size) && same_mtime(path_of("bad"), &st));
	CHECK(kv_aof_check_path(path_of("bad"), &c) == 0 && c.state == KV_AOF_CORRUPT && c.good == starts[3]);
	CHECK(same_file(path_of("bad"), bad, size) && same_mtime(path_of("bad"), &st));

	/* Torn: cut at the last whole record, appends go on after it. */
	write_file(path_of("torn"), log, size - 5);
	CHECK(kv_aof_open(&a, path_of("torn"), KV_FSYNC_ALWAYS, &t, 1, &c) == 0 && c.state == KV_AOF_TORN);
	CHECK(c.good == starts[NREC - 1] && a.bytes == starts[NREC - 1]);
	/* A second open of a log in use: refused, and it stays as it is. */
	CHECK(kv_aof_open(&b, path_of("torn"), KV_FSYNC_ALWAYS, &t, 1, &c) == EWOULDBLOCK);
	CHECK(kv_aof_fix_path(path_of("torn"), 1, &c, bak, sizeof(bak)) == EWOULDBLOCK);
	CHECK(kv_aof_append(&a, KV_AOF_SET, (const uint8_t *)"k", 1, (const uint8_t *)"v", 1, 0, 1) == 0);
	kv_aof_close(&a);
	CHECK(kv_aof_check_path(path_of("torn"), &c) == 0 && c.state == KV_AOF_VALID && c.records == NREC);

	/* Never through a symbolic link, never on what is not a file. */
	unlink(path_of("link"));
	CHECK(symlink(path_of("bad"), path_of("link")) == 0);
	CHECK(kv_aof_open(&a, path_of("link"), KV_FSYNC_ALWAYS, &t, 1, &c) == ELOOP);
	CHECK(kv_aof_check_path(path_of("link"), &c) == ELOOP);
	CHECK(kv_aof_fix_path(path_of("link"), 1, &c, bak, sizeof(bak)) == ELOOP);
	unlink(path_of("dangling"));
	CHECK(symlink(path_of("nothing-here"), path_of("dangling")) == 0);
	CHECK(kv_aof_open(&a, path_of("dangling"), KV_FSYNC_ALWAYS, &t, 1, &c) == ELOOP);
	CHECK(access(path_of("nothing-here"), F_OK) != 0);
	unlink(path_of("fifo"));
	CHECK(mkfifo(path_of("fifo"), 0600) == 0);
	CHECK(kv_aof_open(&a, path_of("fifo"), KV_FSYNC_ALWAYS, &t, 1, &c) == EINVAL);
	CHECK(same_file(path_of("bad"), bad, size) && same_mtime(path_of("bad"), &st));

	/* --fix: never over an existing copy. */
	snprintf(bak, sizeof(bak), "%s.bak-1000", path_of("bad"));
	write_file(bak, (const uint8_t *)"mine", 4);
	CHECK(kv_aof_fix_path(path_of("bad"), 1000, &c, bak, sizeof(bak)) == EEXIST && !bak[0]);
	CHECK(same_file(path_of("bad"), bad, size) && same_mtime(path_of("bad"), &st));
	snprintf(bak, sizeof(bak), "%s.bak-1000", path_of("bad"));
	CHECK(same_file(bak, (const uint8_t *)"mine", 4));
	/* ... nor through a symbolic link at the copy's name. */
	snprintf(bak, sizeof(bak), "%s.bak-1001", path_of("bad"));
	CHECK(symlink(path_of("victim"), bak) == 0);
	CHECK(kv_aof_fix_path(path_of("bad"), 1001, &c, bak, sizeof(bak)) == EEXIST);
	CHECK(access(path_of("victim"), F_OK) != 0 && same_file(path_of("bad"), bad, size));
	/* The fix: a copy with the file's bytes and mtime, then the cut. */
	CHECK(kv_aof_fix_path(path_of("bad"), 1002, &c, bak, sizeof(bak)) == 0);
	CHECK(c.state == KV_AOF_CORRUPT && c.good == starts[3] && c.records == 3 && c.resync == starts[4] &&
	      c.resync_records == NREC - 4);
	CHECK(strcmp(bak, path_of("bad.bak-1002")) == 0 && same_file(bak, bad, size) && same_mtime(bak, &st));
	CHECK(same_file(path_of("bad"), log, starts[3]));
	CHECK(kv_aof_fix_path(path_of("bad"), 1003, &c, bak, sizeof(bak)) == 0 && c.state == KV_AOF_VALID);
	CHECK(access(path_of("bad.bak-1003"), F_OK) != 0);
	/* A file with no record in it: left alone. */
	write_file(path_of("text"), (const uint8_t *)"just some text\n", 15);
	CHECK(kv_aof_fix_path(path_of("text"), 1000, &c, bak, sizeof(bak)) == ENOMSG);
	CHECK(same_file(path_of("text"), (const uint8_t *)"just some text\n", 15));
	CHECK(access(path_of("text.bak-1000"), F_OK) != 0);
	free(bad);
}

/* The rewrite's temporary name, PATH.rewrite, taken beforehand. */
static void test_rewrite_name(void)
{
	struct kv_table t;
	struct kv_aof a;
	struct kv_aof_check c;
	struct stat st;

	CHECK(kv_table_init(&t, arena, sizeof(arena), 0) == 0);
	unlink(path_of("rw"));
	CHECK(kv_aof_open(&a, path_of("rw"), KV_FSYNC_NO, &t, 1, &c) == 0);
	for (unsigned i = 0; i < 100; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%u", i % 10);
		CHECK(kv_set(&t, (const uint8_t *)key, (uint32_t)strlen(key), (const uint8_t *)"value", 5, 0, 1) == 0);
		CHECK(kv_aof_append(&a, KV_AOF_SET, (const uint8_t *)key, (uint32_t)strlen(key), (const uint8_t *)"value",
				    5, 0, 1) == 0);
	}
	write_file(path_of("victim"), (const uint8_t *)"precious", 8);
	CHECK(stat(path_of("victim"), &st) == 0);
	CHECK(symlink(path_of("victim"), path_of("rw.rewrite")) == 0);
	CHECK(kv_aof_rewrite(&a, &t, 1) == EEXIST && a.rewrites == 0);
	CHECK(same_file(path_of("victim"), (const uint8_t *)"precious", 8) && same_mtime(path_of("victim"), &st));
	CHECK(lstat(path_of("rw"), &st) == 0 && S_ISREG(st.st_mode));
	CHECK(lstat(path_of("rw.rewrite"), &st) == 0 && S_ISLNK(st.st_mode));
	unlink(path_of("rw.rewrite"));
	CHECK(mkfifo(path_of("rw.rewrite"), 0600) == 0);
	CHECK(kv_aof_rewrite(&a, &t, 1) == EEXIST);
	unlink(path_of("rw.rewrite"));
	CHECK(mkdir(path_of("rw.rewrite"), 0700) == 0);
	CHECK(kv_aof_rewrite(&a, &t, 1) == EEXIST);
	rmdir(path_of("rw.rewrite"));
	/* A regular file of ours: what a crashed rewrite leaves. */
	write_file(path_of("rw.rewrite"), (const uint8_t *)"stale", 5);
	CHECK(kv_aof_rewrite(&a, &t, 1) == 0 && a.rewrites == 1 && a.records == 10);
	CHECK(access(path_of("rw.rewrite"), F_OK) != 0);
	kv_aof_close(&a);
	CHECK(kv_aof_check_path(path_of("rw"), &c) == 0 && c.state == KV_AOF_VALID && c.records == 10);
}

int main(void)
{
	uint64_t size;

	snprintf(dir, sizeof(dir), "/tmp/kv_aof_test.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	uint8_t *log = write_log(&size);
	uint8_t *old = old_format(log, size);
	struct replayed r = { 0, true };
	struct kv_aof_check c;
	kv_aof_check(old, size, &c, collect, &r);
	CHECK(c.state == KV_AOF_VALID && r.n == NREC && r.ok);     /* a log from before the header check */
	test_cuts(log, size, "log");
	test_cuts(old, size, "old-format log");
	test_flips(log, size, false, "log");
	test_flips(old, size, true, "old-format log");
	test_headers(log, size);
	test_nested();
	test_files(log, size);
	test_rewrite_name();
	free(log);
	free(old);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "kv_aof_test: could not remove %s\n", dir);
	if (check_failures)
		return check_exit("kv_aof_test");
	printf("kv_aof_test: ok\n");
	return 0;
}
