/*
 * capture.c — SOFTRNIC_PCAP: each packet the device sends or receives as
 * one pcap record of an Ethernet/IPv4/UDP frame (what the frames hold:
 * capture.h).
 *
 * The file is classic pcap with nanosecond timestamps (wire/pcap.c, magic
 * a1b23c4d): CLOCK_MONOTONIC at the moment of the record plus the
 * offset to CLOCK_REALTIME taken at open, so the records of one file never
 * go back in time even if the wall clock is stepped, and files of several
 * processes of one machine line up.
 *
 * Writing: frames are gathered in a 1 MiB buffer of our own and written
 * with write(2) when it fills, with each stats refresh of the progress
 * thread (100 ms), at close, and at exit (an atexit handler, for programs
 * that exit without closing the device).  Not stdio: a child of fork()
 * that calls exit() would flush a stdio copy of the parent's buffer into
 * the file a second time.  The handler and a forked child check the
 * owning pid, so a child never writes its parent's capture.
 *
 * Size: the file never grows past SOFTRNIC_PCAP_LIMIT.  The first record
 * that would pass it stops the capture (a line on stderr); every packet
 * from then on is counted in capture_dropped and not written.  Stopping
 * rather than rotating keeps the beginning of a run, where a connection
 * is set up, and a file that any tool reads whole.
 *
 * Cost when off: the callers test one pointer (udp_send.c, receive_path.c).
 * When on: per packet a clock read, the UDP checksum when the socket
 * sends one (one pass over the packet), and a copy into the buffer, all
 * under the device lock; and a write(2) per MiB.  Measured per 4 KiB
 * packet on the 2-vCPU VM: 170 ns for the frame and the copy, ~300 ns
 * more for the checksum, 1.4-3 us for the write into a tmpfs file; an
 * ib_write_bw of 64 KiB messages ran at about a third of its speed with
 * an unlimited capture into tmpfs (docs/capture_and_faults.md).  Past the
 * limit a packet costs one atomic increment.
 *
 * A process's first capture creates FILE, new (O_EXCL, mode 0600): an
 * existing file is an error naming it, unless SOFTRNIC_PCAP_OVERWRITE=1,
 * and then only a regular file of ours is truncated.  The last component
 * is never followed if it is a link (O_NOFOLLOW), and nothing waits on a
 * FIFO: a capture named in a shared directory (/tmp) cannot be turned
 * against another file, nor another user's file be clobbered by root.  A
 * later capture of the process to the same FILE (the program closed its
 * device and opened another: ibv_get_device_guid does that, before the
 * program's own open) appends to the file it made, so FILE is the whole
 * run.
 */
#include "runtime/capture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wire/pcap.h"

#define CAPTURE_BUF_BYTES (1u << 20)
#define PCAP_FILE_HEADER 24u
#define PCAP_RECORD_HEADER 16u
#define FRAME_HEADER (WIRE_ETH_LEN + WIRE_IPV4_LEN + WIRE_UDP_LEN)
#define FRAME_HEADER_V6 (WIRE_ETH_LEN + WIRE_IPV6_LEN + WIRE_UDP_LEN)

struct srt_capture {
	pthread_mutex_t lock;
	int fd;
	pid_t owner;
	char path[PATH_MAX];
	bool udp_csum;
	uint64_t limit;                 /* 0: none */
	uint64_t file_bytes;            /* written or buffered */
	bool stopped;                   /* past the limit, or a write failed
	                                   (atomic: read without the lock) */
	uint64_t packets;               /* under the lock */
	uint64_t dropped;               /* atomic */
	int64_t realtime_offset_ns;     /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	size_t used;
	uint8_t *buf;                   /* CAPTURE_BUF_BYTES */
};

/* ---- exit: flush what the program did not close ---------------------------- */

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srt_capture *live;        /* this process's open capture */
static pid_t live_pid;                  /* its owner (atomic) */
static bool exit_handler_set;
/* The file this process started (srt_capture_from_env). */
static pid_t started_pid;
static char started_path[PATH_MAX];
static dev_t started_dev;
static ino_t started_ino;

static void flush_locked(struct srt_capture *c);

static void flush_at_exit(void)
{
	/* Look before locking: in a child of fork() the locks may have been
	 * copied held, and the capture is not the child's anyway. */
	if (__atomic_load_n(&live_pid, __ATOMIC_ACQUIRE) != getpid())
		return;
	pthread_mutex_lock(&live_lock);
	if (live && live->owner == getpid()) {
		pthread_mutex_lock(&live->lock);
		flush_locked(live);
		pthread_mutex_unlock(&live->lock);
	}
	pthread_mutex_unlock(&live_lock);
}

/* ---- configuration ------------------------------------------------------------ */

/* FILE with every %p replaced by the pid. */
static int expand_path(const char *pattern, char *out, size_t cap)
{
	size_t n = 0;

	for (const char *s = pattern; *s; s++) {
		int w;
		if (s[0] == '%' && s[1] == 'p') {
			w = snprintf(out + n, cap - n, "%d", (int)getpid());
			s++;
		} else {
			w = snprintf(out + n, cap - n, "%c", *s);
		}
		if (w < 0 || (size_t)w >= cap - n)
			return ENAMETOOLONG;
		n += (size_t)w;
	}
	return 0;
}

/* Digits with an optional K, M or G (KiB, MiB, GiB).  0 or EINVAL. */
static int parse_limit(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (!(*p >= '0' && *p <= '9'))
		return EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	unsigned shift = 0;
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	default: break;
	}
	if (*p || (shift && v > UINT64_MAX >> shift))
		return EINVAL;
	*out = v << shift;
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the file ------------------------------------------------------------------- */

static bool write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		len -= (size_t)w;
	}
	return true;
}

static void flush_locked(struct srt_capture *c)
{
	if (!c->used || c->fd < 0)
		return;
	if (!write_all(c->fd, c->buf, c->used) && !c->stopped) {
		fprintf(stderr, "softrnic: capture %s: write failed (%s); capture stopped, packets from now on "
			"are counted in capture_dropped\n", c->path, strerror(errno));
		__atomic_store_n(&c->stopped, true, __ATOMIC_RELAXED);
	}
	c->used = 0;
}

/* SOFTRNIC_PCAP_OVERWRITE set and not 0. */
static bool overwrite_allowed(void)
{
	const char *v = getenv("SOFTRNIC_PCAP_OVERWRITE");

	return v && *v && strcmp(v, "0");
}

/* A regular file owned by us (what overwriting and appending accept). */
static bool ours(int fd, struct stat *st)
{
	return !fstat(fd, st) && S_ISREG(st->st_mode) && st->st_uid == geteuid();
}

/* Opens the capture's file (live_lock held): continues the one this
 * process started (again, and still that file), else creates it new, or
 * with SOFTRNIC_PCAP_OVERWRITE truncates a file of ours.  The descriptor,
 * *appended and the file's identity in *st; or -1 with err said. */
static int open_file(const char *pattern, const char *path, bool again, bool *appended, struct stat *st, char *err,
		     size_t errlen)
{
	int fd;

	*appended = false;
	if (again) {
		fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && ours(fd, st) && st->st_dev == started_dev && st->st_ino == started_ino) {
			*appended = true;
			return fd;
		}
		if (fd >= 0)    /* another file at the name now: as for a first capture */
			close(fd);
	}
	if (overwrite_allowed()) {
		fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
		if (fd < 0) {
			int e = errno;
			snprintf(err, errlen, "SOFTRNIC_PCAP=%s: cannot create %s: %s", pattern, path,
				 e == ELOOP ? "it is a symbolic link" : e == ENXIO ? "it is a FIFO" : strerror(e));
			errno = e;
			return -1;
		}
		if (!ours(fd, st)) {
			close(fd);
			snprintf(err, errlen, "SOFTRNIC_PCAP=%s: %s is not a regular file of ours: not overwritten", pattern,
				 path);
			errno = EPERM;
			return -1;
		}
		if (ftruncate(fd, 0)) {
			int e = errno;
			close(fd);
			snprintf(err, errlen, "SOFTRNIC_PCAP=%s: cannot truncate %s: %s", pattern, path, strerror(e));
			errno = e;
			return -1;
		}
		return fd;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		if (e == EEXIST)
			snprintf(err, errlen, "SOFTRNIC_PCAP=%s: %s exists; softrnic does not overwrite it (remove it, "
				 "put %%p in the name, or set SOFTRNIC_PCAP_OVERWRITE=1)", pattern, path);
		else
			snprintf(err, errlen, "SOFTRNIC_PCAP=%s: cannot create %s: %s", pattern, path, strerror(e));
		errno = e;
		return -1;
	}
	if (fstat(fd, st))
		memset(st, 0, sizeof(*st));
	return fd;
}

static void put(struct srt_capture *c, const void *p, size_t len)
{
	if (c->used + len > CAPTURE_BUF_BYTES)
		flush_locked(c);
	memcpy(c->buf + c->used, p, len);
	c->used += len;
}

int srt_capture_from_env(struct srt_capture **out, bool udp_csum, char *err, size_t errlen)
{
	const char *pattern = getenv("SOFTRNIC_PCAP");
	const char *limit_env = getenv("SOFTRNIC_PCAP_LIMIT");
	uint64_t limit = SRT_CAPTURE_DEFAULT_LIMIT;
	struct srt_capture *c;
	int e;

	*out = NULL;
	if (!pattern || !*pattern)
		return 0;
	if (limit_env && *limit_env && parse_limit(limit_env, &limit)) {
		snprintf(err, errlen, "SOFTRNIC_PCAP_LIMIT=%s: expected a size in bytes, optionally with K, M or G "
			 "(e.g. 100M); 0 for no limit", limit_env);
		return EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->buf = malloc(CAPTURE_BUF_BYTES))) {
		free(c);
		snprintf(err, errlen, "SOFTRNIC_PCAP: out of memory");
		return ENOMEM;
	}
	e = expand_path(pattern, c->path, sizeof(c->path));
	if (e) {
		snprintf(err, errlen, "SOFTRNIC_PCAP=%s: name too long", pattern);
		goto fail;
	}
	/* The first device of the process starts the file; a later one
	 * (the program closed its last context and opens another)
	 * continues it, so a capture is the whole run. */
	pthread_mutex_lock(&live_lock);
	bool again = started_pid == getpid() && !strcmp(started_path, c->path), appended;
	struct stat st;
	c->fd = open_file(pattern, c->path, again, &appended, &st, err, errlen);
	e = errno;
	if (c->fd >= 0 && appended && st.st_size >= (off_t)PCAP_FILE_HEADER)
		c->file_bytes = (uint64_t)st.st_size;
	if (c->fd >= 0) {
		started_pid = getpid();
		snprintf(started_path, sizeof(started_path), "%s", c->path);
		started_dev = st.st_dev;
		started_ino = st.st_ino;
	}
	pthread_mutex_unlock(&live_lock);
	if (c->fd < 0)
		goto fail;
	pthread_mutex_init(&c->lock, NULL);
	c->owner = getpid();
	c->udp_csum = udp_csum;
	c->limit = limit;
	c->realtime_offset_ns = (int64_t)(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC));

	/* The pcap file header (wire/pcap.c writes the same): nanosecond
	 * magic, version 2.4, zone 0, sigfigs 0, snaplen, Ethernet. */
	if (!c->file_bytes) {
		uint32_t head[6] = { 0xa1b23c4du, 0, 0, 0, PCAP_MAX_SNAPLEN, PCAP_LINKTYPE_ETHERNET };
		const uint16_t ver[2] = { 2, 4 };
		memcpy(&head[1], ver, sizeof(ver));     /* two u16 in host order */
		put(c, head, sizeof(head));
		c->file_bytes = sizeof(head);
	}

	pthread_mutex_lock(&live_lock);
	live = c;
	__atomic_store_n(&live_pid, c->owner, __ATOMIC_RELEASE);
	if (!exit_handler_set)
		exit_handler_set = atexit(flush_at_exit) == 0;
	pthread_mutex_unlock(&live_lock);
	*out = c;
	return 0;
fail:
	free(c->buf);
	free(c);
	return e;
}

void srt_capture_close(struct srt_capture *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&live_lock);
	if (live == c) {
		live = NULL;
		__atomic_store_n(&live_pid, 0, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&live_lock);
	if (c->owner == getpid()) {
		pthread_mutex_lock(&c->lock);
		flush_locked(c);
		pthread_mutex_unlock(&c->lock);
	}
	if (c->fd >= 0)
		close(c->fd);
	pthread_mutex_destroy(&c->lock);
	free(c->buf);
	free(c);
}

void srt_capture_close_inherited(struct srt_capture *c)
{
	if (c && c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
}

void srt_capture_flush(struct srt_capture *c)
{
	pthread_mutex_lock(&c->lock);
	flush_locked(c);
	pthread_mutex_unlock(&c->lock);
}

void srt_capture_stats(struct srt_capture *c, struct srt_capture_stats *out)
{
	pthread_mutex_lock(&c->lock);
	out->packets = c->packets;
	out->dropped = __atomic_load_n(&c->dropped, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->lock);
}

const char *srt_capture_path(const struct srt_capture *c)
{
	return c->path;
}

/* ---- frames ----------------------------------------------------------------------- */

/* RFC 1071 ones'-complement sum of p[0..n) as big-endian 16-bit words
 * from an even offset, folded to 16 bits.  Summed in the host's order 64
 * bits at a time (the sum of byte-swapped words is the byte-swapped sum,
 * RFC 1071 2.(B)) and swapped at the end on a little-endian host. */
static uint16_t sum16(const uint8_t *p, size_t n)
{
	uint64_t s = 0;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		s += (w & 0xffffffffu) + (w >> 32);
	}
	for (; i + 2 <= n; i += 2) {
		uint16_t w;
		memcpy(&w, p + i, 2);
		s += w;
	}
	if (i < n) {    /* the last byte is the high half of a big-endian word */
		uint8_t last[2] = { p[i], 0 };
		uint16_t w;
		memcpy(&w, last, 2);
		s += w;
	}
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	s = (s >> 8 | s << 8) & 0xffff;
#endif
	return (uint16_t)s;
}

static uint32_t add16(uint32_t a, uint16_t b)
{
	a += b;
	return (a & 0xffff) + (a >> 16);
}

/* The UDP checksum (RFC 768): pseudo-header, the UDP header with
 * checksum 0 (hdr, 8 bytes), the payload pieces; 0 computed is sent as
 * 0xffff. */
static uint16_t udp_checksum(const uint8_t *ip, const uint8_t *udp, const struct wire_piece *pc, unsigned n)
{
	uint32_t s = 0;
	size_t off = 0;

	if ((ip[0] >> 4) == 6)
		s = add16(s, sum16(ip + 8, 32));        /* IPv6 source, destination */
	else
		s = add16(s, sum16(ip + 12, 8));        /* source, destination */
	s = add16(s, 17);                               /* zero, protocol UDP */
	s = add16(s, (uint16_t)(udp[4] << 8 | udp[5])); /* UDP length */
	s = add16(s, sum16(udp, WIRE_UDP_LEN));
	for (unsigned i = 0; i < n; i++) {
		uint16_t part = sum16(pc[i].p, pc[i].len);
		/* A piece that starts at an odd offset contributes its sum
		 * byte-swapped (RFC 1071 2.(B)). */
		if (off & 1)
			part = (uint16_t)(part >> 8 | part << 8);
		s = add16(s, part);
		off += pc[i].len;
	}
	uint16_t csum = (uint16_t)~s;
	return csum ? csum : 0xffff;
}

static void put16be(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A fabricated MAC for an address given as a GID (capture.h, top): from
 * its last four bytes. */
static void mac_for(uint8_t mac[6], const uint8_t gid[16])
{
	const uint8_t *b = gid + 12;
	static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(gid, v4_prefix, 12)) {
		if (gid[0] == 0xff) {   /* IPv6 multicast: RFC 2464 7 */
			const uint8_t group[6] = { 0x33, 0x33, b[0], b[1], b[2], b[3] };
			memcpy(mac, group, 6);
		} else {
			const uint8_t local[6] = { 0x02, 0x00, b[0], b[1], b[2], b[3] };
			memcpy(mac, local, 6);
		}
		return;
	}
	if ((b[0] & 0xf0) == 0xe0) {    /* 224/4: RFC 1112 6.4 */
		const uint8_t group[6] = { 0x01, 0x00, 0x5e, (uint8_t)(b[1] & 0x7f), b[2], b[3] };
		memcpy(mac, group, 6);
	} else {                        /* locally administered, unicast */
		const uint8_t local[6] = { 0x02, 0x00, b[0], b[1], b[2], b[3] };
		memcpy(mac, local, 6);
	}
}

void srt_capture_packet(struct srt_capture *c, const struct srt_capture_hdr *hdr, const struct wire_piece *pc,
			unsigned n)
{
	uint8_t frame[FRAME_HEADER_V6];
	size_t udp_payload = 0;
	static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	bool v6 = memcmp(hdr->src, v4_prefix, 12) != 0;
	size_t header = v6 ? FRAME_HEADER_V6 : FRAME_HEADER;

	/* Stopped: only counted, without building the frame (read without
	 * the lock: it only ever turns true). */
	if (__atomic_load_n(&c->stopped, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&c->dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		udp_payload += pc[i].len;

	/* Ethernet II */
	mac_for(frame, hdr->dst);
	mac_for(frame + 6, hdr->src);
	put16be(frame + 12, v6 ? 0x86dd : 0x0800);
	uint8_t *ip = frame + WIRE_ETH_LEN;
	if (v6) {
		/* IPv6 as the kernel builds it (flow label left 0: the kernel's
		 * own is not visible to us; the ICRC masks it), UDP with its
		 * checksum, which IPv6 sockets always send (RFC 8200 8.1). */
		ip[0] = (uint8_t)(0x60 | hdr->tos >> 4);
		ip[1] = (uint8_t)(hdr->tos << 4);
		ip[2] = ip[3] = 0;
		put16be(ip + 4, (uint16_t)(WIRE_UDP_LEN + udp_payload));
		ip[6] = 17;
		ip[7] = hdr->ttl;
		memcpy(ip + 8, hdr->src, 16);
		memcpy(ip + 24, hdr->dst, 16);
		uint8_t *udp6 = ip + WIRE_IPV6_LEN;
		put16be(udp6, hdr->sport);
		put16be(udp6 + 2, WIRE_ROCEV2_UDP_PORT);
		put16be(udp6 + 4, (uint16_t)(WIRE_UDP_LEN + udp_payload));
		put16be(udp6 + 6, 0);
		put16be(udp6 + 6, udp_checksum(ip, udp6, pc, n));
		goto write;
	}
	/* IPv4 as the kernel builds it for our sockets (udp_port.c, top). */
	ip[0] = 0x45;
	ip[1] = hdr->tos;
	put16be(ip + 2, (uint16_t)(WIRE_IPV4_LEN + WIRE_UDP_LEN + udp_payload));
	put16be(ip + 4, hdr->ip_id);
	put16be(ip + 6, 0x4000);        /* DF */
	ip[8] = hdr->ttl;
	ip[9] = 17;
	put16be(ip + 10, 0);
	memcpy(ip + 12, hdr->src + 12, 4);
	memcpy(ip + 16, hdr->dst + 12, 4);
	put16be(ip + 10, (uint16_t)~sum16(ip, WIRE_IPV4_LEN));
	/* UDP */
	uint8_t *udp = ip + WIRE_IPV4_LEN;
	put16be(udp, hdr->sport);
	put16be(udp + 2, WIRE_ROCEV2_UDP_PORT);
	put16be(udp + 4, (uint16_t)(WIRE_UDP_LEN + udp_payload));
	put16be(udp + 6, 0);
	if (c->udp_csum)
		put16be(udp + 6, udp_checksum(ip, udp, pc, n));

write:;
	size_t len = header + udp_payload;

	pthread_mutex_lock(&c->lock);
	/* Read under the lock: the file's timestamps never go back. */
	uint64_t ts = clock_ns(CLOCK_MONOTONIC) + (uint64_t)c->realtime_offset_ns;
	uint32_t rec[4] = { (uint32_t)(ts / 1000000000u), (uint32_t)(ts % 1000000000u), (uint32_t)len,
			    (uint32_t)len };
	if (!c->stopped && c->limit && c->file_bytes + PCAP_RECORD_HEADER + len > c->limit) {
		fprintf(stderr, "softrnic: capture %s reached SOFTRNIC_PCAP_LIMIT=%llu bytes after %llu packets; "
			"the packets after are not captured (counted in capture_dropped)\n", c->path,
			(unsigned long long)c->limit, (unsigned long long)c->packets);
		__atomic_store_n(&c->stopped, true, __ATOMIC_RELAXED);
	}
	if (c->stopped) {
		__atomic_fetch_add(&c->dropped, 1, __ATOMIC_RELAXED);
	} else {
		put(c, rec, sizeof(rec));
		put(c, frame, header);
		for (unsigned i = 0; i < n; i++)
			put(c, pc[i].p, pc[i].len);
		c->file_bytes += PCAP_RECORD_HEADER + len;
		c->packets++;
	}
	pthread_mutex_unlock(&c->lock);
}
