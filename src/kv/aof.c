/*
 * aof.c — the append-only file (rules and format: aof.h).
 *
 * Replay reads the whole file into memory first: simple, and bounded by
 * what the file holds (a log that outgrows memory needs the rewrite Redis
 * does, BGREWRITEAOF, which is not here yet).
 */
#include "kv/aof.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "wire/crc32.h"

#define AOF_MAGIC 0x31464f41u   /* "AOF1" */

struct kv_aof_rec {
	uint32_t magic;
	uint8_t op;
	uint8_t reserved;
	uint16_t klen;
	uint32_t vlen;
	uint32_t crc;           /* of op, lengths, expiry, key, value */
	uint64_t expire_ns;
};
_Static_assert(sizeof(struct kv_aof_rec) == 24, "record header");

static uint32_t rec_crc(const struct kv_aof_rec *r, const uint8_t *key, const uint8_t *val)
{
	uint8_t head[16];
	uint32_t c;

	memcpy(head, &r->op, 1);
	memcpy(head + 1, &r->klen, 2);
	memcpy(head + 3, &r->vlen, 4);
	memcpy(head + 7, &r->expire_ns, 8);
	head[15] = 0;
	c = wire_crc32(0, head, sizeof(head));
	c = wire_crc32(c, key, r->klen);
	return wire_crc32(c, val, r->vlen);
}

uint32_t kv_aof_parse(const uint8_t *buf, uint64_t len, struct kv_aof_view *v)
{
	struct kv_aof_rec r;
	uint64_t total;

	if (len < sizeof(r))
		return 0;
	memcpy(&r, buf, sizeof(r));
	if (r.magic != AOF_MAGIC || (r.op != KV_AOF_SET && r.op != KV_AOF_DEL) || r.klen < 1 ||
	    r.klen > KV_MAX_KEY || r.vlen > KV_MAX_VALUE || (r.op == KV_AOF_DEL && r.vlen))
		return 0;
	total = sizeof(r) + (uint64_t)r.klen + r.vlen;
	if (total > len)
		return 0;
	if (rec_crc(&r, buf + sizeof(r), buf + sizeof(r) + r.klen) != r.crc)
		return 0;
	v->op = r.op;
	v->key = buf + sizeof(r);
	v->klen = r.klen;
	v->val = buf + sizeof(r) + r.klen;
	v->vlen = r.vlen;
	v->expire_ns = r.expire_ns;
	return (uint32_t)total;
}

int kv_aof_open(struct kv_aof *a, const char *path, enum kv_fsync policy, struct kv_table *t, uint64_t now,
		uint64_t *replayed, uint64_t *cut_bytes)
{
	struct stat st;
	uint8_t *buf = NULL;
	uint64_t off = 0, n = 0;

	memset(a, 0, sizeof(*a));
	a->policy = policy;
	a->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (a->fd < 0 || fstat(a->fd, &st) != 0)
		goto fail;
	if (st.st_size > 0) {
		buf = malloc((size_t)st.st_size);
		if (!buf) {
			errno = ENOMEM;
			goto fail;
		}
		for (off_t got = 0; got < st.st_size;) {
			ssize_t r = pread(a->fd, buf + got, (size_t)(st.st_size - got), got);
			if (r <= 0)
				goto fail;
			got += r;
		}
		off = 0;
		for (;;) {
			struct kv_aof_view v;
			uint32_t len = kv_aof_parse(buf + off, (uint64_t)st.st_size - off, &v);
			if (!len)
				break;
			if (v.op == KV_AOF_SET)
				kv_set(t, v.key, v.klen, v.val, v.vlen, v.expire_ns, now);     /* expired: dropped on read */
			else
				kv_del(t, v.key, v.klen, now);
			off += len;
			n++;
		}
		free(buf);
		buf = NULL;
	}
	*replayed = n;
	*cut_bytes = (uint64_t)st.st_size - off;
	if (*cut_bytes && ftruncate(a->fd, (off_t)off) != 0)
		goto fail;
	if (lseek(a->fd, (off_t)off, SEEK_SET) < 0)
		goto fail;
	a->records = n;
	a->bytes = a->base_bytes = off;
	a->last_sync_ns = now;
	snprintf(a->path, sizeof(a->path), "%s", path);
	return 0;
fail:;
	int e = errno ? errno : EIO;
	free(buf);
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
	return e;
}

int kv_aof_append(struct kv_aof *a, int op, const uint8_t *key, uint32_t klen, const uint8_t *val,
		  uint32_t vlen, uint64_t expire_ns, uint64_t now)
{
	struct kv_aof_rec r = { .magic = AOF_MAGIC, .op = (uint8_t)op, .klen = (uint16_t)klen, .vlen = vlen,
				.expire_ns = expire_ns };
	struct iovec iov[3] = { { &r, sizeof(r) }, { (void *)key, klen }, { (void *)val, vlen } };
	size_t total = sizeof(r) + klen + vlen, done = 0;

	if (a->fd < 0)
		return 0;
	r.crc = rec_crc(&r, key, val);
	/* writev may write part: finish it, or the log gets a torn record
	 * that replay would stop at. */
	while (done < total) {
		ssize_t w = writev(a->fd, iov, 3);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		done += (size_t)w;
		for (int i = 0; i < 3 && w > 0; i++) {
			size_t take = (size_t)w < iov[i].iov_len ? (size_t)w : iov[i].iov_len;
			iov[i].iov_base = (uint8_t *)iov[i].iov_base + take;
			iov[i].iov_len -= take;
			w -= (ssize_t)take;
		}
	}
	a->records++;
	a->bytes += total;
	a->dirty = true;
	if (a->policy == KV_FSYNC_ALWAYS ||
	    (a->policy == KV_FSYNC_EVERYSEC && now - a->last_sync_ns >= 1000000000ull)) {
		if (fdatasync(a->fd) != 0)
			return errno;
		a->last_sync_ns = now;
		a->dirty = false;
	}
	return 0;
}

void kv_aof_tick(struct kv_aof *a, uint64_t now)
{
	if (a->fd >= 0 && a->dirty && a->policy == KV_FSYNC_EVERYSEC && now - a->last_sync_ns >= 1000000000ull &&
	    fdatasync(a->fd) == 0) {
		a->last_sync_ns = now;
		a->dirty = false;
	}
}

void kv_aof_close(struct kv_aof *a)
{
	if (a->fd >= 0) {
		if (a->policy != KV_FSYNC_NO)
			fdatasync(a->fd);
		close(a->fd);
	}
	a->fd = -1;
}

bool kv_aof_wants_rewrite(const struct kv_aof *a, uint64_t min_bytes)
{
	return a->fd >= 0 && a->bytes > min_bytes && a->bytes > 2 * a->base_bytes;
}

struct rewrite_ctx {
	struct kv_aof tmp;
	uint64_t now;
	int err;
};

static void rewrite_one(void *ctx, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen,
			uint64_t expire_ns)
{
	struct rewrite_ctx *r = ctx;

	if (!r->err)
		r->err = kv_aof_append(&r->tmp, KV_AOF_SET, key, klen, val, vlen, expire_ns, r->now);
}

int kv_aof_rewrite(struct kv_aof *a, const struct kv_table *t, uint64_t now)
{
	char tmp_path[4200], dir[4096];
	struct rewrite_ctx r = { .now = now };

	if (a->fd < 0)
		return EBADF;
	snprintf(tmp_path, sizeof(tmp_path), "%s.rewrite", a->path);
	r.tmp.fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (r.tmp.fd < 0)
		return errno;
	r.tmp.policy = KV_FSYNC_NO;     /* one sync at the end */
	kv_table_foreach(t, now, rewrite_one, &r);
	if (!r.err && fdatasync(r.tmp.fd) != 0)
		r.err = errno;
	if (!r.err && rename(tmp_path, a->path) != 0)
		r.err = errno;
	if (r.err) {
		close(r.tmp.fd);
		unlink(tmp_path);
		return r.err;
	}
	/* The rename is durable once the directory is synced. */
	snprintf(dir, sizeof(dir), "%s", a->path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	/* Appends go on through the new file's descriptor, at its end. */
	close(a->fd);
	a->fd = r.tmp.fd;
	a->records = r.tmp.records;
	a->bytes = a->base_bytes = r.tmp.bytes;
	a->dirty = false;
	a->last_sync_ns = now;
	a->rewrites++;
	return 0;
}
