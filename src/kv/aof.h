/*
 * aof.h — the key-value server's append-only file (aof.c): every change
 * to the table as one record, replayed when the server starts again, and
 * the checks that keep a damaged log from being mistaken for a short one.
 *
 * A record: a 24-byte header (struct kv_aof_rec in aof.c: the magic
 * "AOF1", op, a header check byte, key and value lengths, a CRC-32 of op,
 * lengths, expiry, key and value, the absolute expiry), then the key, then
 * the value, in the host's byte order.  SET and DEL are logged; INCR is
 * logged as the SET of its result, so a replay needs no arithmetic.  A
 * server writes the record before it answers the request, so with fsync
 * "always" an answered change survives a crash.
 *
 * The header check byte: 0x80 | the CRC-7 (x^7 + x^3 + 1) of the other 23
 * header bytes.  The CRC-32 can only be checked once the whole record is
 * there; the header check lets a reader trust a header's lengths while the
 * body is still missing, so a length damaged on disk is not taken for a
 * record a crash left short.  Logs written before it have 0 in that byte:
 * they still load (0 means "no header check"), and an older softrnic-kv
 * loads the new records (it never looked at that byte).
 *
 * Loading (kv_aof_check) sorts a log into one of three states:
 *   VALID    whole records, each with its CRC-32 (and header check) right,
 *            to the last byte;
 *   TORN     whole records, then the file ends inside one more record
 *            whose bytes so far are consistent: the magic's first bytes,
 *            a known op, lengths in range (of a field cut in the middle,
 *            the bytes present must allow such a length), a header check
 *            that matches once the header is whole, and no whole record
 *            anywhere in the bytes after its start.  That is what a crash
 *            in the middle of an append leaves; the server cuts it and
 *            says how many bytes at which offset (Redis's
 *            aof-load-truncated);
 *   CORRUPT  anything else: a bad magic, an unknown op, a length out of
 *            range, a header check or CRC-32 that does not match in a
 *            record that is all there, or a short record with a whole one
 *            after it.  The server refuses to start and leaves the file as
 *            it was; `softrnic-kv check-aof --fix` copies it aside and
 *            cuts it at the first bad record.
 */
#ifndef SOFTRNIC_KV_AOF_H
#define SOFTRNIC_KV_AOF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kv/table.h"

enum kv_fsync { KV_FSYNC_ALWAYS, KV_FSYNC_EVERYSEC, KV_FSYNC_NO };

struct kv_aof {
	int fd;
	enum kv_fsync policy;
	uint64_t last_sync_ns;
	bool dirty;                     /* written since the last sync */
	uint64_t records, bytes;
	char path[4096];
	uint64_t rewrites;
	uint64_t base_bytes;            /* the log's size after the last rewrite (or open) */
};

/* One record in buf (len bytes): its total length, 0 if buf holds no whole
 * valid record (short, bad header or CRC mismatch).  Pure. */
struct kv_aof_view {
	int op;
	const uint8_t *key, *val;
	uint32_t klen, vlen;
	uint64_t expire_ns;
};
uint32_t kv_aof_parse(const uint8_t *buf, uint64_t len, struct kv_aof_view *v);

/* What a whole log is (the rules above). */
enum kv_aof_state { KV_AOF_VALID, KV_AOF_TORN, KV_AOF_CORRUPT };
struct kv_aof_check {
	enum kv_aof_state state;
	uint64_t size;                  /* bytes looked at */
	uint64_t records;               /* whole valid records from the start */
	uint64_t good;                  /* their bytes: where the torn or bad record starts */
	uint64_t promised;              /* TORN: the record's length by its header (0: the header is cut) */
	uint64_t resync;                /* CORRUPT: where the next whole record starts (0: none after) */
	uint64_t resync_records;        /* CORRUPT: whole records in a row from there */
	char why[160];                  /* TORN, CORRUPT: what is at `good` */
};
/* Check buf (a whole log of len bytes), giving each whole valid record
 * before the first bad or torn one to apply (may be NULL).  Pure. */
void kv_aof_check(const uint8_t *buf, uint64_t len, struct kv_aof_check *c,
		  void (*apply)(void *ctx, const struct kv_aof_view *v), void *ctx);
/* c as the end of a sentence that starts with the file's name: "is valid:
 * ...", "ends in a torn record at byte ...", "is not valid at byte ...". */
void kv_aof_describe(const struct kv_aof_check *c, char *out, size_t cap);

/* Open (create) `path`, replay it into t with `now` as the time; *c says
 * what was found.  VALID: 0.  TORN: the torn bytes are cut, 0.  CORRUPT:
 * EBADMSG and nothing is written.  Or an errno: ELOOP for a symbolic link
 * (not followed), EINVAL for what is not a regular file, EWOULDBLOCK when
 * another process holds the log (flock), as it does while it serves. */
int kv_aof_open(struct kv_aof *a, const char *path, enum kv_fsync policy, struct kv_table *t, uint64_t now,
		struct kv_aof_check *c);
/* A message for kv_aof_open's, kv_aof_rewrite's and the check-aof
 * functions' errnos. */
const char *kv_aof_strerror(int err);
/* Append one change (op KV_AOF_SET or KV_AOF_DEL) and apply the fsync
 * policy.  0 or an errno (the change must then not be acknowledged). */
#define KV_AOF_SET 1
#define KV_AOF_DEL 2
int kv_aof_append(struct kv_aof *a, int op, const uint8_t *key, uint32_t klen, const uint8_t *val,
		  uint32_t vlen, uint64_t expire_ns, uint64_t now);
/* The "everysec" policy's background half: sync if a second has passed
 * since the last sync and something was written (the server calls it
 * from its loop, so an idle server's last writes are synced too). */
void kv_aof_tick(struct kv_aof *a, uint64_t now);
void kv_aof_close(struct kv_aof *a);
/* Rewrite the log as one SET per live item of t (Redis's BGREWRITEAOF,
 * done in place and synchronously: the server does not answer meanwhile):
 * written to PATH.rewrite (created O_EXCL|O_NOFOLLOW; a stale one is
 * removed first only if it is a regular file of this user, and anything
 * else there makes the rewrite fail with EEXIST, untouched), synced,
 * renamed over PATH, the directory synced; appends go on in the new file.
 * A crash at any point leaves either the old log or the new one, both
 * whole.  0 or an errno (the old log then stays in use). */
int kv_aof_rewrite(struct kv_aof *a, const struct kv_table *t, uint64_t now);
/* Whether the log has grown enough to be worth rewriting: over min_bytes
 * and twice its size after the last rewrite (Redis's defaults are 64 MB
 * and 100%). */
bool kv_aof_wants_rewrite(const struct kv_aof *a, uint64_t min_bytes);

/* check-aof: read `path` (not through a symbolic link) and check it into
 * *c.  0 or an errno. */
int kv_aof_check_path(const char *path, struct kv_aof_check *c);
/* check-aof --fix: check `path` with the log's lock held (EWOULDBLOCK if
 * a server has it); if it is not VALID, copy it whole to
 * PATH.bak-<unix_time> (created O_EXCL: EEXIST rather than overwrite
 * anything; named in bak), synced, then cut the log at c->good.  A log
 * with no whole record anywhere is not a log: ENOMSG, left alone.  0 or
 * an errno; the log is unchanged whenever it is not 0. */
int kv_aof_fix_path(const char *path, uint64_t unix_time, struct kv_aof_check *c, char *bak, size_t bak_cap);

#endif
