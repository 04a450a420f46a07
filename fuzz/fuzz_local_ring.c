/*
 * fuzz_local_ring.c — libFuzzer target: the host-local ring's reader
 * (srt_local_recv, runtime/local_path.c) fed entries a peer process wrote.
 *
 * A ring's entries are written by other processes of the same user, so
 * they are hostile input like any datagram: a buggy or malicious sender
 * can put any bytes between the ring's tail and head.  Each input is laid
 * into the ring of one device opened once (its 8 MiB area in a file of
 * the runtime directory, mapped a second time here, as a sender maps
 * it): the first 8 bytes choose where the tail lies in the area (a 64-byte aligned offset),
 * how far ahead the head is, and how the rest is read: as the bytes
 * written from the tail on, or as entries laid the way a sender lays
 * them, with fuzzed lengths, flags, descriptions and places
 * (lay_entries).  Either way the bytes wrap at the area's end, as a
 * sender's entries never do.
 *
 * Checked for every packet srt_local_recv hands out, before the ring is
 * given back (a violation aborts): its bytes, its message-path
 * description with the pieces the reader counted, and an inline payload
 * all lie inside the area; an inline payload copies out
 * (srt_local_pull_inline) into a buffer of exactly its length, and a
 * destination of another length is refused.  The reader never moves past
 * the head it was given (or, for a head off the entries' alignment, the
 * next aligned position, which it sets the head to), and once a read
 * finds nothing the ring is empty.  Descriptions are not read (srt_local_pull would read the memory
 * of whatever pid the input names): the test_local_ring cases cover them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtime/local_path.h"
#include "runtime/runtime_dir.h"
#include "runtime/udp_port.h"

#define AREA (8u << 20)
/* struct ring's head and tail words (local_path.c: 64-byte aligned, at
 * 128 and 192 from the start; tests/runtime/test_local_ring.c writes them
 * the same way). */
#define HEAD_AT 128u
#define TAIL_AT 192u

#define FAIL(...)                                                       \
	do {                                                            \
		fprintf(stderr, "fuzz_local_ring: " __VA_ARGS__);       \
		fputc('\n', stderr);                                    \
		abort();                                                \
	} while (0)

static struct srt_local *ring;
static uint8_t *map;            /* the ring's file, mapped as a sender does */
static size_t map_bytes;
static const uint8_t *own_area; /* the area in the reader's own mapping,
                                   which its packets point into */
static struct srt_rx_batch *batch;

static void open_ring(void)
{
	struct stat st;
	struct in_addr a;

	unsetenv("SOFTRNIC_LOCAL");
	/* An address of our own per process: parallel fuzzing jobs do not
	 * share a ring. */
	a.s_addr = htonl(0x7f000000u | (0x10000u + ((unsigned)getpid() & 0xffffu)));
	/* The runtime directory stays open for the ring's (the process's) life. */
	ring = srt_local_open(srt_runtime_dir_open(true), a, 0, false, false, -1);
	if (!ring)
		FAIL("srt_local_open failed (no runtime directory, or no room in it?)");
	const char *path = srt_local_file(ring);
	int fd = open(path, O_RDWR);
	if (fd < 0 || fstat(fd, &st))
		FAIL("open %s", path);
	map_bytes = (size_t)st.st_size;
	map = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED || map_bytes < AREA + 256)
		FAIL("mmap");
	batch = malloc(sizeof(*batch));
	if (!batch)
		FAIL("malloc");
	/* The reader's mapping of the same file: the other one of its size
	 * in /proc/self/maps. */
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (strstr(line, path) && sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uint8_t *)lo != map &&
		    hi - lo >= map_bytes)
			own_area = (const uint8_t *)lo + map_bytes - AREA;
	}
	if (f)
		fclose(f);
	if (!own_area)
		FAIL("the reader's mapping of %s not found", path);
}

static void close_ring(void)
{
	srt_local_close(ring);          /* removes the file */
}

static bool inside(const uint8_t *area, const void *p, size_t len)
{
	const uint8_t *b = p;

	return b >= area && b <= area + AREA && len <= (size_t)(area + AREA - b);
}

static void check_packet(const uint8_t *area, const struct srt_rx_pkt *p)
{
	if (!inside(area, p->data, p->len))
		FAIL("a packet's %zu bytes lie outside the area", p->len);
	if (!p->remote) {
		if (p->remote_inline)
			FAIL("an inline payload without its entry's description");
		return;
	}
	if (!inside(area, p->remote, sizeof(*p->remote)))
		FAIL("a description outside the area");
	if (!p->remote_inline) {
		if (p->remote_nseg > SRT_LOCAL_REMOTE_SEGS ||
		    !inside(area, p->remote->seg, (size_t)p->remote_nseg * sizeof(struct srt_local_seg)))
			FAIL("a description's %u pieces outside the area", p->remote_nseg);
		return;
	}
	if (!p->remote_inline_len || !inside(area, p->remote_inline, p->remote_inline_len))
		FAIL("an inline payload of %u bytes outside the area", p->remote_inline_len);
	uint8_t *dst = malloc(p->remote_inline_len);
	if (!dst)
		FAIL("malloc");
	struct iovec d[2] = { { dst, p->remote_inline_len / 3 }, { dst + p->remote_inline_len / 3,
								 p->remote_inline_len - p->remote_inline_len / 3 } };
	if (srt_local_pull_inline(p->remote_inline, p->remote_inline_len, d, 2))
		FAIL("an inline payload that checked did not copy");
	if (memcmp(dst, p->remote_inline, p->remote_inline_len))
		FAIL("an inline payload copied other bytes");
	d[1].iov_len--;
	if (srt_local_pull_inline(p->remote_inline, p->remote_inline_len, d, 2) != -EINVAL)
		FAIL("a destination of another length was not refused");
	free(dst);
}

/* Bytes into the area at a position, wrapping at its end. */
static void put(uint8_t *area, uint64_t pos, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n;) {
		size_t at = (pos + i) % AREA, k = n - i < AREA - at ? n - i : AREA - at;
		memcpy(area + at, b + i, k);
		i += k;
	}
}

/* Structured mode: the input read as entries laid the way a sender lays
 * them (local_path.c's struct ring_entry: length at 0, flags at 12, data
 * at 16; a description at the headers' 8-byte aligned end: pid, piece
 * count, total, pieces; an inline payload on the next 64-byte line), 8
 * input bytes each — flags, length, one value for the description, a
 * skew of the next entry's place — so that most entries pass the
 * reader's first checks and the fuzzer reaches the later ones.  Returns
 * the position after the last. */
static uint64_t lay_entries(uint8_t *area, uint64_t pos, const uint8_t *in, size_t size)
{
	for (; size >= 8; in += 8, size -= 8) {
		uint8_t flags = in[0], skew = in[7], hdr[16] = { 0 };
		uint32_t len = (uint32_t)(in[1] | in[2] << 8) % 4400, value;
		memcpy(&value, in + 3, 4);
		memcpy(hdr, &len, 4);
		hdr[12] = flags;
		put(area, pos, hdr, sizeof(hdr));
		uint32_t desc_at = (len + 7u) & ~7u, bytes = len;
		if (flags & 4) {
			struct srt_local_remote d = { .pid = value, .nseg = value % 160u, .total = value };
			if (flags & 8) {
				d.pid = 0;
				d.nseg = 0;
				d.total = value & 0x80000000u ? value : value % (1u << 17);
				bytes = (((16u + desc_at + 16u + 63u) & ~63u) - 16u) + (uint32_t)d.total;
			} else {
				bytes = desc_at + 16u + d.nseg * 16u;
			}
			put(area, pos + 16 + desc_at, &d, sizeof(d));
		}
		pos += (16ull + bytes + 63u) & ~63ull;
		if (skew & 0x80)
			pos += skew & 0x3f;             /* off the alignment */
		else if (skew & 0x40)
			pos -= 64;                      /* overlapping */
	}
	return pos;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ring) {
		open_ring();
		atexit(close_ring);
	}
	if (size < 8)
		return 0;
	uint8_t *area = map + map_bytes - AREA;
	uint32_t t, ahead;
	memcpy(&t, data, 4);
	memcpy(&ahead, data + 4, 4);
	data += 8;
	size -= 8;
	/* Somewhere in the area, often near its end (wraps). */
	uint64_t tail = (uint64_t)(t % (AREA / 64)) * 64;
	if (t & 0x80000000u)
		tail = AREA - 64 * (1 + (t & 0xff));
	tail += (uint64_t)AREA * ((t >> 24) & 3);       /* a later lap */
	uint64_t head = tail + (ahead % (AREA + 1));
	if (ahead & 0x20000000u) {
		head = lay_entries(area, tail, data, size);
		if (ahead & 0x10000000u)
			head -= 64 * (ahead & 3);           /* short of the last */
	} else {
		if (ahead & 0x80000000u)
			head = tail + ((ahead & 0xffffu) + size);   /* near what was written */
		put(area, tail, data, size);
	}
	if (ahead & 0x40000000u)
		head += ahead & 63;                         /* unaligned */
	memcpy(map + TAIL_AT, &tail, 8);
	memcpy(map + HEAD_AT, &head, 8);

	for (unsigned round = 0;; round++) {
		int n = srt_local_recv(ring, batch);
		if (n < 0 || n > (int)SRT_RX_PKTS)
			FAIL("srt_local_recv returned %d", n);
		for (int i = 0; i < n; i++)
			check_packet(own_area, &batch->pkt[i]);
		srt_local_recv_done(ring);
		uint64_t now_tail, now_head;
		memcpy(&now_tail, map + TAIL_AT, 8);
		memcpy(&now_head, map + HEAD_AT, 8);
		/* Up to the head, or to the head a broken ring's reader set
		 * right: the next aligned position. */
		bool repaired = now_head != head && now_head % 64 == 0 && now_head - head < 64;
		if (now_tail - tail > head - tail && !(repaired && now_tail == now_head))
			FAIL("the reader moved to %llu, past the head %llu (tail was %llu)", (unsigned long long)now_tail,
			     (unsigned long long)head, (unsigned long long)tail);
		head = now_head;
		tail = now_tail;
		if (!n)
			break;
		if (round > AREA / 64)
			FAIL("the reader never reaches the head");
	}
	/* Whatever the bytes, a read that found nothing leaves the ring
	 * empty: all read, or the rest dropped as broken. */
	if (srt_local_pending(ring))
		FAIL("entries that were neither read nor dropped");
	return 0;
}
