/*
 * aof.c — the append-only file: appending, replay, rewriting, and the
 * checks of check-aof (rules and format: aof.h).
 *
 * Replay reads the whole file into memory first: simple, and bounded by
 * what the file holds (the log is rewritten as it grows, kv_aof_rewrite).
 * Nothing here writes to a log it could not parse: the only cut is of a
 * torn last record (aof.h says what that is), and check-aof --fix cuts
 * only after a synced copy of the whole file exists beside it.
 *
 * Every file opened here is opened O_CLOEXEC|O_NOFOLLOW, and those the
 * store creates beside the log (PATH.rewrite, PATH.bak-T) O_EXCL, so a
 * symbolic link or another file at one of those names is never written
 * through.  The log is flock()ed while a server has it: a second server,
 * or check-aof --fix, cannot write it meanwhile.
 */
#include "kv/aof.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "wire/crc32.h"

#define AOF_MAGIC 0x31464f41u   /* "AOF1" in the bytes of a little-endian host */
#define HEAD_CHECKED 0x80u      /* in head_check: the low 7 bits are the header's CRC-7 */

struct kv_aof_rec {
	uint32_t magic;
	uint8_t op;
	uint8_t head_check;     /* 0 (written before the check existed), or HEAD_CHECKED | CRC-7 */
	uint16_t klen;
	uint32_t vlen;
	uint32_t crc;           /* of op, lengths, expiry, key, value */
	uint64_t expire_ns;
};
#define HEAD ((uint64_t)sizeof(struct kv_aof_rec))
_Static_assert(sizeof(struct kv_aof_rec) == 24, "record header");
_Static_assert(offsetof(struct kv_aof_rec, op) == 4 && offsetof(struct kv_aof_rec, head_check) == 5 &&
	       offsetof(struct kv_aof_rec, klen) == 6 && offsetof(struct kv_aof_rec, vlen) == 8,
	       "the byte offsets rec_look checks one by one");

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

/* CRC-7, polynomial x^7 + x^3 + 1 (the one of SD cards' commands), most
 * significant bit first: crc7_step[(crc << 1) ^ byte] is the CRC after one
 * more byte.  It finds every error confined to 7 bits in a row (so every
 * single-bit error), 63 in 64 of 8 bits in a row, 127 in 128 of others. */
static const uint8_t crc7_step[256] = {
	0x00, 0x09, 0x12, 0x1b, 0x24, 0x2d, 0x36, 0x3f, 0x48, 0x41, 0x5a, 0x53, 0x6c, 0x65, 0x7e, 0x77,
	0x19, 0x10, 0x0b, 0x02, 0x3d, 0x34, 0x2f, 0x26, 0x51, 0x58, 0x43, 0x4a, 0x75, 0x7c, 0x67, 0x6e,
	0x32, 0x3b, 0x20, 0x29, 0x16, 0x1f, 0x04, 0x0d, 0x7a, 0x73, 0x68, 0x61, 0x5e, 0x57, 0x4c, 0x45,
	0x2b, 0x22, 0x39, 0x30, 0x0f, 0x06, 0x1d, 0x14, 0x63, 0x6a, 0x71, 0x78, 0x47, 0x4e, 0x55, 0x5c,
	0x64, 0x6d, 0x76, 0x7f, 0x40, 0x49, 0x52, 0x5b, 0x2c, 0x25, 0x3e, 0x37, 0x08, 0x01, 0x1a, 0x13,
	0x7d, 0x74, 0x6f, 0x66, 0x59, 0x50, 0x4b, 0x42, 0x35, 0x3c, 0x27, 0x2e, 0x11, 0x18, 0x03, 0x0a,
	0x56, 0x5f, 0x44, 0x4d, 0x72, 0x7b, 0x60, 0x69, 0x1e, 0x17, 0x0c, 0x05, 0x3a, 0x33, 0x28, 0x21,
	0x4f, 0x46, 0x5d, 0x54, 0x6b, 0x62, 0x79, 0x70, 0x07, 0x0e, 0x15, 0x1c, 0x23, 0x2a, 0x31, 0x38,
	0x41, 0x48, 0x53, 0x5a, 0x65, 0x6c, 0x77, 0x7e, 0x09, 0x00, 0x1b, 0x12, 0x2d, 0x24, 0x3f, 0x36,
	0x58, 0x51, 0x4a, 0x43, 0x7c, 0x75, 0x6e, 0x67, 0x10, 0x19, 0x02, 0x0b, 0x34, 0x3d, 0x26, 0x2f,
	0x73, 0x7a, 0x61, 0x68, 0x57, 0x5e, 0x45, 0x4c, 0x3b, 0x32, 0x29, 0x20, 0x1f, 0x16, 0x0d, 0x04,
	0x6a, 0x63, 0x78, 0x71, 0x4e, 0x47, 0x5c, 0x55, 0x22, 0x2b, 0x30, 0x39, 0x06, 0x0f, 0x14, 0x1d,
	0x25, 0x2c, 0x37, 0x3e, 0x01, 0x08, 0x13, 0x1a, 0x6d, 0x64, 0x7f, 0x76, 0x49, 0x40, 0x5b, 0x52,
	0x3c, 0x35, 0x2e, 0x27, 0x18, 0x11, 0x0a, 0x03, 0x74, 0x7d, 0x66, 0x6f, 0x50, 0x59, 0x42, 0x4b,
	0x17, 0x1e, 0x05, 0x0c, 0x33, 0x3a, 0x21, 0x28, 0x5f, 0x56, 0x4d, 0x44, 0x7b, 0x72, 0x69, 0x60,
	0x0e, 0x07, 0x1c, 0x15, 0x2a, 0x23, 0x38, 0x31, 0x46, 0x4f, 0x54, 0x5d, 0x62, 0x6b, 0x70, 0x79,
};

/* The header check of the 24 header bytes at h: their CRC-7, with the
 * check byte itself taken as 0. */
static uint8_t head_crc7(const uint8_t *h)
{
	uint8_t c = 0;

	for (unsigned i = 0; i < HEAD; i++)
		c = crc7_step[(uint8_t)(c << 1) ^ (i == offsetof(struct kv_aof_rec, head_check) ? 0 : h[i])];
	return c;
}

/* Whether an unsigned field of `size` bytes, of which only the first
 * `have` are in the file (the rest cut off by its end), can hold a value
 * in [lo, hi]: what the bytes present allow. */
static bool field_may_be(const uint8_t *p, unsigned have, unsigned size, uint64_t lo, uint64_t hi)
{
	uint64_t known = 0;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* The low bytes are here: the field is known + k * step, k < 2^(missing bits). */
	for (unsigned i = 0; i < have; i++)
		known |= (uint64_t)p[i] << (8 * i);
	uint64_t step = 1ull << (8 * have), k_max = (1ull << (8 * (size - have))) - 1;
	uint64_t k = lo > known ? (lo - known + step - 1) / step : 0;
	return k <= k_max && known + k * step <= hi;
#else
	/* The high bytes are here: the field is in [low, low + 2^(missing bits)). */
	for (unsigned i = 0; i < have; i++)
		known = known << 8 | p[i];
	uint64_t low = known << (8 * (size - have)), high = low + (1ull << (8 * (size - have))) - 1;
	return low <= hi && high >= lo;
#endif
}

/* What the bytes at buf are: a whole valid record, the start of one that
 * the end of buf cuts (its bytes so far consistent: aof.h), or not a
 * record.  *total: a whole record's length, or the length a short one's
 * whole header promises (0 if its header is cut too).  why (may be NULL)
 * says what is wrong with a record that is not whole. */
enum rec_shape { REC_WHOLE, REC_SHORT, REC_BAD };

static enum rec_shape say(enum rec_shape s, char *why, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static enum rec_shape say(enum rec_shape s, char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (why) {
		va_start(ap, fmt);
		vsnprintf(why, cap, fmt, ap);
		va_end(ap);
	}
	return s;
}

/* Up to 4 bytes as text for a message: printable ASCII as itself, the rest as \xNN. */
static const char *shown(const uint8_t *p, unsigned n, char out[20])
{
	char *o = out;

	for (unsigned i = 0; i < n; i++)
		o += p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\' ? sprintf(o, "%c", p[i])
										   : sprintf(o, "\\x%02x", p[i]);
	return out;
}

static enum rec_shape rec_look(const uint8_t *buf, uint64_t len, struct kv_aof_view *v, uint64_t *total,
			       char *why, size_t cap)
{
	const uint32_t magic_word = AOF_MAGIC;
	const uint8_t *magic = (const uint8_t *)&magic_word;
	unsigned have = len < HEAD ? (unsigned)len : (unsigned)HEAD;
	struct kv_aof_rec r;
	char text[20];

	*total = 0;
	for (unsigned i = 0; i < 4 && i < have; i++)
		if (buf[i] != magic[i])
			return say(REC_BAD, why, cap, "not a record: it starts \"%s\" where a record starts \"%s\"",
				   shown(buf, have < 4 ? have : 4, text), "AOF1");
	if (have > 4 && buf[4] != KV_AOF_SET && buf[4] != KV_AOF_DEL)
		return say(REC_BAD, why, cap, "unknown operation %u (a record is a SET, 1, or a DEL, 2)", buf[4]);
	if (have > 5 && buf[5] != 0 && !(buf[5] & HEAD_CHECKED))
		return say(REC_BAD, why, cap, "header check byte 0x%02x (it is 0, or 0x80 and the header's CRC-7)",
			   buf[5]);
	if (have > 6 && !field_may_be(buf + 6, have >= 8 ? 2 : have - 6, 2, 1, KV_MAX_KEY)) {
		if (have < 8)
			return say(REC_BAD, why, cap, "a key length that cannot be 1 to %u", KV_MAX_KEY);
		uint16_t klen;
		memcpy(&klen, buf + 6, 2);
		return say(REC_BAD, why, cap, "key length %u (it is 1 to %u)", klen, KV_MAX_KEY);
	}
	uint32_t vmax = have > 4 && buf[4] == KV_AOF_DEL ? 0 : KV_MAX_VALUE;
	if (have > 8 && !field_may_be(buf + 8, have >= 12 ? 4 : have - 8, 4, 0, vmax)) {
		if (have < 12)
			return say(REC_BAD, why, cap, "a value length that cannot be 0 to %u", vmax);
		uint32_t vlen;
		memcpy(&vlen, buf + 8, 4);
		return say(REC_BAD, why, cap, "%s %u (it is 0 to %u)",
			   buf[4] == KV_AOF_DEL ? "a DEL with a value length of" : "value length", vlen, vmax);
	}
	if (have < HEAD)
		return say(REC_SHORT, why, cap, "the file ends %u bytes into a record's %u-byte header", have,
			   (unsigned)HEAD);
	memcpy(&r, buf, sizeof(r));
	if (r.head_check && (r.head_check & 0x7f) != head_crc7(buf))
		return say(REC_BAD, why, cap, "header check 0x%02x does not match the header (0x%02x)",
			   r.head_check, HEAD_CHECKED | head_crc7(buf));
	*total = HEAD + r.klen + r.vlen;
	if (*total > len)
		return say(REC_SHORT, why, cap, "the file ends %" PRIu64 " bytes into a record of %" PRIu64 " bytes",
			   len, *total);
	if (rec_crc(&r, buf + HEAD, buf + HEAD + r.klen) != r.crc)
		return say(REC_BAD, why, cap, "CRC-32 mismatch in a whole record of %" PRIu64 " bytes", *total);
	v->op = r.op;
	v->key = buf + HEAD;
	v->klen = r.klen;
	v->val = buf + HEAD + r.klen;
	v->vlen = r.vlen;
	v->expire_ns = r.expire_ns;
	return REC_WHOLE;
}

uint32_t kv_aof_parse(const uint8_t *buf, uint64_t len, struct kv_aof_view *v)
{
	uint64_t total;

	return rec_look(buf, len, v, &total, NULL, 0) == REC_WHOLE ? (uint32_t)total : 0;
}

/* The first offset from `from` on where a whole valid record starts, 0 if
 * none does; *count: the whole records in a row from there. */
static uint64_t next_whole(const uint8_t *buf, uint64_t len, uint64_t from, uint64_t *count)
{
	const uint32_t magic = AOF_MAGIC;
	struct kv_aof_view v;
	uint64_t total;

	*count = 0;
	for (uint64_t at = from; at + HEAD <= len; at++) {
		const uint8_t *hit = memmem(buf + at, len - at, &magic, 4);
		if (!hit)
			break;
		at = (uint64_t)(hit - buf);
		if (rec_look(buf + at, len - at, &v, &total, NULL, 0) != REC_WHOLE)
			continue;
		for (uint64_t p = at; p < len && rec_look(buf + p, len - p, &v, &total, NULL, 0) == REC_WHOLE;
		     p += total)
			++*count;
		return at;
	}
	return 0;
}

void kv_aof_check(const uint8_t *buf, uint64_t len, struct kv_aof_check *c,
		  void (*apply)(void *ctx, const struct kv_aof_view *v), void *ctx)
{
	uint64_t off = 0, total;

	memset(c, 0, sizeof(*c));
	c->size = len;
	while (off < len) {
		struct kv_aof_view v;
		enum rec_shape s = rec_look(buf + off, len - off, &v, &total, c->why, sizeof(c->why));
		if (s == REC_WHOLE) {
			if (apply)
				apply(ctx, &v);
			off += total;
			c->records++;
			continue;
		}
		c->good = off;
		c->resync = next_whole(buf, len, off + 1, &c->resync_records);
		if (s == REC_SHORT && !c->resync) {
			c->state = KV_AOF_TORN;
			c->promised = total;
			return;
		}
		/* A record that runs past the end, with a whole one inside
		 * it, is not a crash's half-written last record: its length
		 * is wrong. */
		if (s == REC_SHORT)
			snprintf(c->why, sizeof(c->why), "its header gives a length of %" PRIu64 " bytes, past the "
				 "end of the file, yet whole records lie inside that", total);
		c->state = KV_AOF_CORRUPT;
		return;
	}
	c->good = len;
	c->state = KV_AOF_VALID;
}

void kv_aof_describe(const struct kv_aof_check *c, char *out, size_t cap)
{
	switch (c->state) {
	case KV_AOF_VALID:
		snprintf(out, cap, "is valid: %" PRIu64 " records, %" PRIu64 " bytes", c->records, c->size);
		break;
	case KV_AOF_TORN:
		snprintf(out, cap, "ends in a torn record at byte %" PRIu64 " (%s; a crash while appending): the %"
			 PRIu64 " records before it (%" PRIu64 " bytes) are valid, the last %" PRIu64 " bytes are torn",
			 c->good, c->why, c->records, c->good, c->size - c->good);
		break;
	case KV_AOF_CORRUPT:
		if (c->resync)
			snprintf(out, cap, "is not valid at byte %" PRIu64 ": %s; the %" PRIu64 " records before it (%"
				 PRIu64 " bytes) are valid; whole records start again at byte %" PRIu64 " (%" PRIu64
				 " in a row)", c->good, c->why, c->records, c->good, c->resync, c->resync_records);
		else
			snprintf(out, cap, "is not valid at byte %" PRIu64 ": %s; the %" PRIu64 " records before it (%"
				 PRIu64 " bytes) are valid; no whole record after it", c->good, c->why, c->records,
				 c->good);
		break;
	}
}

const char *kv_aof_strerror(int err)
{
	switch (err) {
	case ELOOP:
		return "it is a symbolic link (not followed: name the file itself)";
	case EINVAL:
		return "not a regular file";
	case EWOULDBLOCK:
		return "another process holds it as its log (a server running on it?)";
	case EBADMSG:
		return "not a valid log";
	case ENOMSG:
		return "no whole record anywhere in it: not a softrnic-kv log";
	default:
		return strerror(err);
	}
}

/* Open a log (never through a symbolic link) and make sure it is a
 * regular file.  0 or an errno. */
static int open_log(const char *path, int flags, int *fd, struct stat *st)
{
	*fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (*fd < 0)
		return errno;
	int e = fstat(*fd, st) != 0 ? errno : !S_ISREG(st->st_mode) ? EINVAL : 0;
	if (e) {
		close(*fd);
		*fd = -1;
	}
	return e;
}

/* The whole file into *buf (NULL for an empty file).  0 or an errno. */
static int read_all(int fd, uint64_t size, uint8_t **buf)
{
	*buf = NULL;
	if (!size)
		return 0;
	*buf = malloc(size);
	if (!*buf)
		return ENOMEM;
	for (uint64_t got = 0; got < size;) {
		ssize_t r = pread(fd, *buf + got, size - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? errno : EIO;        /* 0: the file shrank under us */
			free(*buf);
			*buf = NULL;
			return e;
		}
		got += (uint64_t)r;
	}
	return 0;
}

static int write_all(int fd, const uint8_t *p, uint64_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		p += w;
		len -= (uint64_t)w;
	}
	return 0;
}

/* Make a new name in path's directory durable. */
static void sync_dir_of(const char *path)
{
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	int dfd = open(slash ? (dir[0] ? dir : "/") : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
}

struct replay {
	struct kv_table *t;
	uint64_t now;
};

static void replay_one(void *ctx, const struct kv_aof_view *v)
{
	struct replay *r = ctx;

	if (v->op == KV_AOF_SET)
		kv_set(r->t, v->key, v->klen, v->val, v->vlen, v->expire_ns, r->now);  /* expired: dropped on read */
	else
		kv_del(r->t, v->key, v->klen, r->now);
}

int kv_aof_open(struct kv_aof *a, const char *path, enum kv_fsync policy, struct kv_table *t, uint64_t now,
		struct kv_aof_check *c)
{
	struct replay r = { t, now };
	struct stat st;
	uint8_t *buf;
	int e;

	memset(a, 0, sizeof(*a));
	memset(c, 0, sizeof(*c));
	a->policy = policy;
	e = open_log(path, O_RDWR | O_CREAT, &a->fd, &st);
	if (e)
		return e;
	if (flock(a->fd, LOCK_EX | LOCK_NB) != 0) {
		e = errno;
		goto fail;
	}
	e = read_all(a->fd, (uint64_t)st.st_size, &buf);
	if (e)
		goto fail;
	kv_aof_check(buf, (uint64_t)st.st_size, c, replay_one, &r);
	free(buf);
	if (c->state == KV_AOF_CORRUPT) {
		e = EBADMSG;            /* not a byte written */
		goto fail;
	}
	/* A torn last record is cut, so what is appended next follows the
	 * last whole one. */
	if (c->state == KV_AOF_TORN && (ftruncate(a->fd, (off_t)c->good) != 0 || fdatasync(a->fd) != 0)) {
		e = errno;
		goto fail;
	}
	if (lseek(a->fd, (off_t)c->good, SEEK_SET) < 0) {
		e = errno;
		goto fail;
	}
	a->records = c->records;
	a->bytes = a->base_bytes = c->good;
	a->last_sync_ns = now;
	snprintf(a->path, sizeof(a->path), "%s", path);
	return 0;
fail:
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
	r.head_check = (uint8_t)(HEAD_CHECKED | head_crc7((const uint8_t *)&r));
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

/* The rewrite's file at tmp_path, new (O_EXCL: nothing at that name is
 * written through), with the log's permissions and locked like the log.
 * A stale one is removed first only if it is a regular file of this user
 * (a rewrite that crashed); anything else there: EEXIST, left alone. */
static int create_rewrite_file(const char *tmp_path, mode_t mode, int *fd)
{
	struct stat st;

	*fd = -1;
	if (lstat(tmp_path, &st) == 0) {
		if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
			return EEXIST;
		if (unlink(tmp_path) != 0 && errno != ENOENT)
			return errno;
	} else if (errno != ENOENT) {
		return errno;
	}
	*fd = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (*fd < 0)
		return errno;
	if (fchmod(*fd, mode & 0777) != 0 || flock(*fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		close(*fd);
		*fd = -1;
		unlink(tmp_path);
		return e;
	}
	return 0;
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
	char tmp_path[4200];
	struct rewrite_ctx r = { .now = now };
	struct stat st;
	int e;

	if (a->fd < 0)
		return EBADF;
	if (fstat(a->fd, &st) != 0)
		return errno;
	snprintf(tmp_path, sizeof(tmp_path), "%s.rewrite", a->path);
	e = create_rewrite_file(tmp_path, st.st_mode, &r.tmp.fd);
	if (e)
		return e;
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
	sync_dir_of(a->path);
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

int kv_aof_check_path(const char *path, struct kv_aof_check *c)
{
	struct stat st;
	uint8_t *buf;
	int fd, e;

	memset(c, 0, sizeof(*c));
	e = open_log(path, O_RDONLY, &fd, &st);
	if (e)
		return e;
	e = read_all(fd, (uint64_t)st.st_size, &buf);
	close(fd);
	if (e)
		return e;
	kv_aof_check(buf, (uint64_t)st.st_size, c, NULL, NULL);
	free(buf);
	return 0;
}

/* A copy of the log's bytes at bak, new (O_EXCL), with the log's
 * permissions and times, synced, its name too.  0 or an errno (then no
 * copy is left). */
static int write_copy(const char *bak, const uint8_t *buf, uint64_t len, const struct stat *st)
{
	int fd = open(bak, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int e;

	if (fd < 0)
		return errno;
	e = write_all(fd, buf, len);
	if (!e && fchmod(fd, st->st_mode & 0777) != 0)
		e = errno;
	if (!e && futimens(fd, (const struct timespec[2]){ st->st_atim, st->st_mtim }) != 0)
		e = errno;
	if (!e && fsync(fd) != 0)
		e = errno;
	close(fd);
	if (e) {
		unlink(bak);
		return e;
	}
	sync_dir_of(bak);
	return 0;
}

int kv_aof_fix_path(const char *path, uint64_t unix_time, struct kv_aof_check *c, char *bak, size_t bak_cap)
{
	struct stat st;
	uint8_t *buf = NULL;
	int fd, e;

	memset(c, 0, sizeof(*c));
	bak[0] = '\0';
	e = open_log(path, O_RDWR, &fd, &st);
	if (e)
		return e;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		e = errno;
		goto out;
	}
	e = read_all(fd, (uint64_t)st.st_size, &buf);
	if (e)
		goto out;
	kv_aof_check(buf, (uint64_t)st.st_size, c, NULL, NULL);
	if (c->state == KV_AOF_VALID)
		goto out;
	if (c->state == KV_AOF_CORRUPT && !c->records && !c->resync) {
		e = ENOMSG;
		goto out;
	}
	if ((size_t)snprintf(bak, bak_cap, "%s.bak-%" PRIu64, path, unix_time) >= bak_cap) {
		e = ENAMETOOLONG;
		goto out;
	}
	e = write_copy(bak, buf, (uint64_t)st.st_size, &st);
	if (e) {
		bak[0] = '\0';
		goto out;
	}
	if (ftruncate(fd, (off_t)c->good) != 0 || fsync(fd) != 0)
		e = errno;
out:
	free(buf);
	close(fd);
	return e;
}
