/*
 * aof.h — the key-value server's append-only file (aof.c): every change
 * to the table as one record, replayed when the server starts again.
 *
 * A record: struct kv_aof_rec (24 bytes: magic, op, key and value
 * lengths, absolute expiry, CRC-32 of the rest), the key, the value.  SET
 * and DEL are logged; INCR is logged as the SET of its result, so a replay
 * needs no arithmetic.  A server writes the record before it answers the
 * request, so with fsync "always" an answered change survives a crash.
 *
 * Replay reads records in order and stops at the first one that is short
 * or fails its CRC (a crash in the middle of a write); the file is cut
 * there, so what is appended next follows the last whole record — the
 * same rule as Redis's aof-load-truncated.
 */
#ifndef SOFTRNIC_KV_AOF_H
#define SOFTRNIC_KV_AOF_H

#include <stdbool.h>
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

/* Open (create) `path`, replay it into t with `now` as the time, cut a
 * torn tail.  0 or an errno; *replayed and *cut_bytes say what happened. */
int kv_aof_open(struct kv_aof *a, const char *path, enum kv_fsync policy, struct kv_table *t, uint64_t now,
		uint64_t *replayed, uint64_t *cut_bytes);
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
 * written to PATH.rewrite, synced, renamed over PATH, the directory
 * synced; appends go on in the new file.  A crash at any point leaves
 * either the old log or the new one, both whole.  0 or an errno (the old
 * log then stays in use). */
int kv_aof_rewrite(struct kv_aof *a, const struct kv_table *t, uint64_t now);
/* Whether the log has grown enough to be worth rewriting: over min_bytes
 * and twice its size after the last rewrite (Redis's defaults are 64 MB
 * and 100%). */
bool kv_aof_wants_rewrite(const struct kv_aof *a, uint64_t min_bytes);

/* One record in buf (len bytes): its total length, 0 if buf holds no whole
 * valid record (short or CRC mismatch).  The decoding replay uses; pure. */
struct kv_aof_view {
	int op;
	const uint8_t *key, *val;
	uint32_t klen, vlen;
	uint64_t expire_ns;
};
uint32_t kv_aof_parse(const uint8_t *buf, uint64_t len, struct kv_aof_view *v);

#endif
