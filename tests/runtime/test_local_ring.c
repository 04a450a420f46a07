/*
 * test_local_ring.c — the host-local path's ring (runtime/local_path.c)
 * on its own, two endpoints in one process, no socket traffic:
 *
 *  - a fresh ring's pages are there before traffic reaches them: no
 *    page fault for the sender or the receiver;
 *  - 60 000 packets of random sizes (a 12-byte ACK to the largest RoCE
 *    packet), sent in runs of 1-12 and drained at random moments, come
 *    out in order and byte for byte, with the sender's alone hint,
 *    across many wraps of the area;
 *  - the ICRC flag: a receiver without faults gets "no ICRC" entries, one
 *    with faults gets the ICRC the sender computed;
 *  - a ring left undrained fills: the sender counts tx_ring_full and
 *    loses nothing it had accepted; after a drain it sends again;
 *  - a broken entry (an impossible length written into the ring, as a
 *    buggy peer might) drops the rest of the ring, is counted, and the
 *    ring carries packets again afterwards; so does a head off the
 *    entries' alignment, which the reader sets right (it is not left
 *    pending forever);
 *  - srt_local_pending follows head and tail;
 *  - doorbells: a receiver about to sleep with packets waiting is told
 *    not to; one that sleeps gets one doorbell however many senders
 *    publish before it is up again, and one again after its next sleep;
 *  - the message path's entries: the headers in the ring, the payload's
 *    pieces described and read with process_vm_readv into pieces cut
 *    elsewhere, a destination of the wrong size refused, a buffer
 *    unmapped before the read failing it, and an impossible piece count
 *    dropped as a broken ring;
 *  - payloads in the ring: a message sent alone, up to the inline size,
 *    has its bytes copied into the entry when it is sent (a buffer
 *    written or unmapped afterwards does not change what arrives), read
 *    out into pieces cut elsewhere; one not alone, one over the size, or
 *    one into a ring already half full is described instead, and that
 *    is not counted as a full ring; an inline entry claiming more than
 *    any sender writes is a broken ring;
 *  - an entry, or a description, that would run past the end of the
 *    ring's area is a broken ring, never a read past the mapping.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_util.h"
#include "runtime/local_path.h"
#include "runtime/runtime_dir.h"
#include "runtime/udp_port.h"

#define RX_ADDR "127.0.0.91"
#define TX_ADDR "127.0.0.92"
#define DEST_QPN 0x000123u

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

/* Packet number seq of length len: a BTH to DEST_QPN, then bytes that
 * depend on seq and position. */
static void make_packet(uint8_t *p, uint32_t len, uint32_t seq)
{
	memset(p, 0, 12);
	p[0] = 0x04;    /* SEND only */
	p[5] = (uint8_t)(DEST_QPN >> 16);
	p[6] = (uint8_t)(DEST_QPN >> 8);
	p[7] = (uint8_t)DEST_QPN;
	memcpy(p + 8, &seq, 4);
	for (uint32_t i = 12; i < len; i++)
		p[i] = (uint8_t)(seq * 31u + i);
}

static uint32_t packet_len(void)
{
	/* Mostly small (ACKs, short sends), some of the largest size. */
	switch (next_rand() % 4) {
	case 0: return 16;
	case 1: return 12 + next_rand() % 200;
	case 2: return 4096 + 12 + 4 + 28;
	default: return 12 + next_rand() % 4200;
	}
}

struct sent {
	uint32_t len;
	uint32_t seq;
};

/* The user's runtime directory, where the rings go (runtime_dir.h). */
static int rundir(void)
{
	static int fd = -1;

	if (fd < 0)
		fd = srt_runtime_dir_open(true);
	REQUIRE(fd >= 0, "no runtime directory");
	return fd;
}

static struct srt_local *open_ring(const char *addr, bool wants_icrc)
{
	struct in_addr a;

	inet_pton(AF_INET, addr, &a);
	struct srt_local *l = srt_local_open(rundir(), a, 0, false, wants_icrc, -1);
	REQUIRE(l, "srt_local_open %s failed", addr);
	return l;
}

static bool send_one(struct srt_local *tx, uint8_t *pkt, uint32_t len, uint32_t seq, bool icrc)
{
	struct in_addr dst;
	struct srt_local_stats before, after;

	inet_pton(AF_INET, RX_ADDR, &dst);
	make_packet(pkt, len, seq);
	struct srt_local_peer *p = srt_local_route(tx, dst, pkt);
	REQUIRE(p, "no local route to %s", RX_ADDR);
	struct wire_piece pc = { pkt, len };
	srt_local_get_stats(tx, &before);
	srt_local_send(tx, p, 4791, 0, 64, &pc, 1, len, icrc, (seq & 1) != 0);
	srt_local_get_stats(tx, &after);
	return after.tx_ring_full == before.tx_ring_full;
}

/* Drains rx, checking each packet against the queue of sent ones. */
static unsigned drain(struct srt_local *rx, struct srt_rx_batch *b, const struct sent *q, unsigned *next,
		      unsigned end, bool want_no_icrc)
{
	unsigned got = 0;
	int n;
	uint8_t want[5000];

	while ((n = srt_local_recv(rx, b)) > 0) {
		for (int i = 0; i < n; i++) {
			const struct srt_rx_pkt *p = &b->pkt[i];
			REQUIRE(*next < end, "more packets than were sent");
			const struct sent *s = &q[(*next)++];
			make_packet(want, s->len, s->seq);
			REQUIRE(p->len == s->len, "packet %u: length %zu, sent %u", s->seq, p->len, s->len);
			REQUIRE(p->alone == ((s->seq & 1) != 0), "packet %u: the sender's alone hint not carried", s->seq);
			REQUIRE(!memcmp(p->data, want, s->len), "packet %u: bytes differ", s->seq);
			REQUIRE(p->no_icrc == want_no_icrc, "packet %u: no_icrc %d", s->seq, p->no_icrc);
			REQUIRE(p->sport == 4791 && p->ttl == 64 && !p->truncated, "packet %u: metadata", s->seq);
			got++;
		}
		srt_local_recv_done(rx);
	}
	srt_local_recv_done(rx);
	return got;
}

static void test_stream(struct srt_rx_batch *b)
{
	enum { N = 60000 };
	struct srt_local *rx = open_ring(RX_ADDR, false), *tx = open_ring(TX_ADDR, false);
	static struct sent q[N];
	static uint8_t pkt[5000];
	unsigned sent = 0, checked = 0;
	uint64_t bytes = 0;

	while (sent < N) {
		unsigned run = 1 + next_rand() % 12;
		for (unsigned k = 0; k < run && sent < N; k++) {
			uint32_t len = packet_len();
			REQUIRE(send_one(tx, pkt, len, sent, false), "ring full with the receiver draining");
			q[sent] = (struct sent){ len, sent };
			sent++;
			bytes += len;
		}
		srt_local_flush(tx);
		if (next_rand() % 3 == 0)
			drain(rx, b, q, &checked, sent, true);
	}
	drain(rx, b, q, &checked, sent, true);
	REQUIRE(checked == N, "received %u of %u", checked, N);
	REQUIRE(!srt_local_pending(rx), "pending after the drain");
	REQUIRE(bytes > 3ull * (8u << 20), "only %llu bytes: the area did not wrap", (unsigned long long)bytes);
	struct srt_local_stats s;
	srt_local_get_stats(rx, &s);
	REQUIRE(s.rx_packets == N && s.rx_ring_broken == 0, "rx stats %llu %llu", (unsigned long long)s.rx_packets,
	      (unsigned long long)s.rx_ring_broken);
	srt_local_close(tx);
	srt_local_close(rx);
}

/* The ring's pages are there before the first packet: a fresh ring's
 * sender and receiver take no page fault as traffic reaches new pages
 * (local_path.c, RING_POPULATE).  1 000 packets of 2 KiB fill 512 pages
 * of the area; touched as used, each faults for the sender, and the
 * receiver's mapping adds its own (measured 666 in all; populated: 1). */
static void test_populated(struct srt_rx_batch *b)
{
	enum { N = 1000, LEN = 2048 };
	struct srt_local *rx = open_ring(RX_ADDR, false), *tx = open_ring(TX_ADDR, false);
	static struct sent q[N];
	static uint8_t pkt[LEN];
	unsigned checked = 0;
	struct rusage before, after;

	/* The first packet maps the receiver's ring into the sender. */
	REQUIRE(send_one(tx, pkt, LEN, 0, false), "first packet");
	q[0] = (struct sent){ LEN, 0 };
	srt_local_flush(tx);
	drain(rx, b, q, &checked, 1, true);
	getrusage(RUSAGE_SELF, &before);
	for (unsigned i = 1; i < N; i++) {
		REQUIRE(send_one(tx, pkt, LEN, i, false), "ring full");
		q[i] = (struct sent){ LEN, i };
		if (i % 8 == 0) {
			srt_local_flush(tx);
			drain(rx, b, q, &checked, i + 1, true);
		}
	}
	srt_local_flush(tx);
	drain(rx, b, q, &checked, N, true);
	getrusage(RUSAGE_SELF, &after);
	REQUIRE(checked == N, "received %u of %u", checked, N);
	long faults = after.ru_minflt - before.ru_minflt;
	printf("local ring: %d packets of %d bytes into a fresh ring: %ld page faults\n", N, LEN, faults);
	/* Not 0: under AddressSanitizer the copies touch the shadow of
	 * both mappings, 1 page in 8 (132 faults measured). */
	REQUIRE(faults < 256, "%ld page faults while %d packets filled 512 fresh pages of the ring", faults, N);
	srt_local_close(tx);
	srt_local_close(rx);
}

static void test_icrc_flag(struct srt_rx_batch *b)
{
	struct srt_local *rx = open_ring(RX_ADDR, true), *tx = open_ring(TX_ADDR, false);
	struct in_addr dst;
	static uint8_t pkt[64];
	struct sent q[1] = { { 40, 7 } };
	unsigned next = 0;

	inet_pton(AF_INET, RX_ADDR, &dst);
	make_packet(pkt, 40, 7);
	struct srt_local_peer *p = srt_local_route(tx, dst, pkt);
	REQUIRE(p && srt_local_wants_icrc(p), "a receiver with faults must want the ICRC");
	REQUIRE(send_one(tx, pkt, 40, 7, true), "send");
	srt_local_flush(tx);
	REQUIRE(drain(rx, b, q, &next, 1, false) == 1, "one packet, with its ICRC");
	srt_local_close(tx);
	srt_local_close(rx);

	rx = open_ring(RX_ADDR, false);
	tx = open_ring(TX_ADDR, false);
	p = srt_local_route(tx, dst, pkt);
	REQUIRE(p && !srt_local_wants_icrc(p), "a receiver without faults does not want the ICRC");
	srt_local_close(tx);
	srt_local_close(rx);
}

static uint64_t doorbells(const struct srt_local *l)
{
	struct srt_local_stats st;

	srt_local_get_stats(l, &st);
	return st.doorbells_sent;
}

static void test_doorbells(struct srt_rx_batch *b)
{
	int fd1 = socket(AF_INET, SOCK_DGRAM, 0), fd2 = socket(AF_INET, SOCK_DGRAM, 0);
	struct in_addr a1, a2;
	static uint8_t pkt[64];
	struct sent q[4] = { { 40, 1 }, { 40, 2 }, { 40, 3 }, { 40, 4 } };
	unsigned next = 0;

	REQUIRE(fd1 >= 0 && fd2 >= 0, "socket: %s", strerror(errno));
	inet_pton(AF_INET, TX_ADDR, &a1);
	inet_pton(AF_INET, "127.0.0.93", &a2);
	struct srt_local *rx = open_ring(RX_ADDR, false);
	struct srt_local *tx1 = srt_local_open(rundir(), a1, 0, false, false, fd1);
	struct srt_local *tx2 = srt_local_open(rundir(), a2, 0, false, false, fd2);
	REQUIRE(tx1 && tx2, "srt_local_open of the senders failed");

	/* Packets waiting: the receiver may not sleep, and nobody rings. */
	REQUIRE(send_one(tx1, pkt, 40, 1, false), "send 1");
	srt_local_flush(tx1);
	REQUIRE(!srt_local_sleep(rx, true), "a receiver with packets waiting was let sleep");
	REQUIRE(doorbells(tx1) == 0, "a doorbell for a receiver that was awake");
	REQUIRE(drain(rx, b, q, &next, 4, true) == 1, "packet 1");

	/* Asleep: the first sender rings, the next ones do not. */
	REQUIRE(srt_local_sleep(rx, true), "an empty ring refused its receiver's sleep");
	REQUIRE(send_one(tx1, pkt, 40, 2, false), "send 2");
	srt_local_flush(tx1);
	REQUIRE(send_one(tx2, pkt, 40, 3, false), "send 3");
	srt_local_flush(tx2);
	REQUIRE(doorbells(tx1) == 1 && doorbells(tx2) == 0, "one sleep rang %llu + %llu doorbells, not 1",
	      (unsigned long long)doorbells(tx1), (unsigned long long)doorbells(tx2));
	srt_local_sleep(rx, false);
	REQUIRE(drain(rx, b, q, &next, 4, true) == 2, "packets 2 and 3");

	/* The next sleep is rung again, by whichever sender comes first. */
	REQUIRE(srt_local_sleep(rx, true), "an empty ring refused its receiver's sleep");
	REQUIRE(send_one(tx2, pkt, 40, 4, false), "send 4");
	srt_local_flush(tx2);
	REQUIRE(doorbells(tx1) == 1 && doorbells(tx2) == 1, "the second sleep rang %llu + %llu doorbells in all, not 2",
	      (unsigned long long)doorbells(tx1), (unsigned long long)doorbells(tx2));
	srt_local_sleep(rx, false);
	REQUIRE(drain(rx, b, q, &next, 4, true) == 1, "packet 4");

	srt_local_close(tx2);
	srt_local_close(tx1);
	srt_local_close(rx);
	close(fd2);
	close(fd1);
}

static void test_full(struct srt_rx_batch *b)
{
	enum { MAX = 20000 };
	struct srt_local *rx = open_ring(RX_ADDR, false), *tx = open_ring(TX_ADDR, false);
	static struct sent q[MAX];
	static uint8_t pkt[5000];
	unsigned sent = 0, checked = 0;
	const uint32_t len = 4096 + 44;

	while (sent < MAX && send_one(tx, pkt, len, sent, false)) {
		q[sent] = (struct sent){ len, sent };
		sent++;
	}
	srt_local_flush(tx);
	REQUIRE(sent < MAX && sent > 1000, "ring full after %u full-size packets", sent);
	struct srt_local_stats s;
	srt_local_get_stats(tx, &s);
	REQUIRE(s.tx_ring_full == 1, "tx_ring_full %llu", (unsigned long long)s.tx_ring_full);
	REQUIRE(drain(rx, b, q, &checked, sent, true) == sent, "every accepted packet comes out");
	REQUIRE(send_one(tx, pkt, 16, sent, false), "room again after the drain");
	q[sent] = (struct sent){ 16, sent };
	srt_local_flush(tx);
	REQUIRE(drain(rx, b, q, &checked, sent + 1, true) == 1, "the packet after the drain");
	srt_local_close(tx);
	srt_local_close(rx);
}

/* The receiver's ring file, as local_path.h names it, in the runtime
 * directory. */
static void *map_rx_file(size_t *bytes)
{
	char path[4096];
	struct stat st;
	struct in_addr a;

	inet_pton(AF_INET, RX_ADDR, &a);
	REQUIRE(!stat("/proc/self/ns/net", &st), "netns");
	snprintf(path, sizeof(path), "%s/softrnic-local-%u-%lx-%08x-0", srt_runtime_dir_path(), (unsigned)getuid(),
		 (unsigned long)st.st_ino, (unsigned)ntohl(a.s_addr));
	int fd = open(path, O_RDWR);
	REQUIRE(fd >= 0, "open %s", path);
	REQUIRE(!fstat(fd, &st), "fstat");
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	REQUIRE(m != MAP_FAILED, "mmap");
	*bytes = (size_t)st.st_size;
	return m;
}

/* What waits in rx's ring is not delivered, and counted as one more
 * broken ring than `before` (rx's stats before the damage). */
static void expect_broken(struct srt_local *rx, struct srt_rx_batch *b, const struct srt_local_stats *before,
			  const char *what)
{
	struct srt_local_stats after;

	REQUIRE(srt_local_recv(rx, b) == 0, "%s is not delivered", what);
	srt_local_recv_done(rx);
	srt_local_get_stats(rx, &after);
	REQUIRE(after.rx_ring_broken == before->rx_ring_broken + 1, "%s: counted as a broken ring", what);
}

static void test_broken(struct srt_rx_batch *b)
{
	struct srt_local *rx = open_ring(RX_ADDR, false), *tx = open_ring(TX_ADDR, false);
	static uint8_t pkt[5000];
	struct sent q[8];
	unsigned checked = 0;
	size_t bytes;

	REQUIRE(!srt_local_pending(rx), "a new ring is empty");
	for (unsigned i = 0; i < 3; i++)
		REQUIRE(send_one(tx, pkt, 100, i, false), "send");
	srt_local_flush(tx);
	REQUIRE(srt_local_pending(rx), "pending after sends");
	/* The first entry's length (the entry's first word, at the start of
	 * the area, which is the last 8 MiB of the file) made impossible. */
	uint8_t *m = map_rx_file(&bytes);
	uint32_t bad = 0xfffffff0u;
	memcpy(m + bytes - (8u << 20), &bad, 4);
	REQUIRE(srt_local_recv(rx, b) == 0, "a broken entry is not delivered");
	srt_local_recv_done(rx);
	REQUIRE(!srt_local_pending(rx), "the ring's rest is dropped");
	struct srt_local_stats s;
	srt_local_get_stats(rx, &s);
	REQUIRE(s.rx_ring_broken == 1, "rx_ring_broken %llu", (unsigned long long)s.rx_ring_broken);
	for (unsigned i = 0; i < 2; i++) {
		REQUIRE(send_one(tx, pkt, 60, 10 + i, false), "send after");
		q[i] = (struct sent){ 60, 10 + i };
	}
	srt_local_flush(tx);
	REQUIRE(drain(rx, b, q, &checked, 2, true) == 2, "the ring works after a broken entry");

	/* A head no sender writes, off the entries' alignment: dropped and
	 * set right, not pending forever; the ring carries packets again. */
	uint64_t head;
	memcpy(&head, m + 128, 8);
	head += 100;
	memcpy(m + 128, &head, 8);
	REQUIRE(srt_local_pending(rx), "an odd head looks pending");
	REQUIRE(srt_local_recv(rx, b) == 0, "nothing delivered from an odd head");
	srt_local_recv_done(rx);
	REQUIRE(!srt_local_pending(rx), "an odd head is set right, not pending forever");
	srt_local_get_stats(rx, &s);
	REQUIRE(s.rx_ring_broken == 2, "counted: rx_ring_broken %llu", (unsigned long long)s.rx_ring_broken);
	for (unsigned i = 0; i < 2; i++) {
		REQUIRE(send_one(tx, pkt, 70, 20 + i, false), "send after an odd head");
		q[2 + i] = (struct sent){ 70, 20 + i };
	}
	srt_local_flush(tx);
	REQUIRE(drain(rx, b, q, &checked, 4, true) == 2, "the ring works after an odd head");
	munmap(m, bytes);
	srt_local_close(tx);
	srt_local_close(rx);
}

/* Whether this machine lets a process read another's memory (Yama). */
static bool ptrace_open(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0;

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 1;
		fclose(f);
	}
	return scope == 0;
}

/* The message path's entries: headers in the ring, the payload described
 * and read with process_vm_readv; a description that does not add up; a
 * buffer unmapped before the read. */
static void test_remote(struct srt_rx_batch *b)
{
	struct srt_local *rx = open_ring(RX_ADDR, false), *tx = open_ring(TX_ADDR, false);
	static uint8_t hdr[16], src[3][20000], dst[60000];
	struct in_addr a;

	inet_pton(AF_INET, RX_ADDR, &a);
	make_packet(hdr, sizeof(hdr), 7);
	struct srt_local_peer *p = srt_local_route(tx, a, hdr);
	REQUIRE(p, "no local route");
	bool open = ptrace_open();
	REQUIRE(srt_local_message_path(tx, p) == open, "message path %d on a machine whose ptrace is %s",
	      srt_local_message_path(tx, p), open ? "open" : "restricted");
	if (!open) {
		printf("local ring: message path not available here (Yama ptrace_scope); its entries untested\n");
		srt_local_close(tx);
		srt_local_close(rx);
		return;
	}
	for (unsigned i = 0; i < 3; i++)
		for (unsigned k = 0; k < sizeof(src[i]); k++)
			src[i][k] = (uint8_t)(k * 13 + i * 101);
	struct wire_piece vec[3] = { { src[0], 20000 }, { src[1] + 5, 12345 }, { src[2], 1 } };
	size_t total = 20000 + 12345 + 1;
	srt_local_send_remote(tx, p, 4791, 0, 64, hdr, sizeof(hdr), vec, 3, false);
	srt_local_flush(tx);
	REQUIRE(srt_local_recv(rx, b) == 1, "one remote entry");
	const struct srt_rx_pkt *pk = &b->pkt[0];
	REQUIRE(pk->remote && pk->len == sizeof(hdr) && !memcmp(pk->data, hdr, sizeof(hdr)) && pk->no_icrc,
	      "the entry: headers here, the payload described");
	REQUIRE(pk->remote->total == total && pk->remote->nseg == 3, "total %llu", (unsigned long long)pk->remote->total);
	/* Read into pieces cut elsewhere than the sender's. */
	struct iovec d[2] = { { dst, 777 }, { dst + 1000, total - 777 } };
	REQUIRE(srt_local_pull(pk->remote, pk->remote_nseg, d, 2) == 0, "pull");
	REQUIRE(!memcmp(dst, src[0], 777) && !memcmp(dst + 1000, src[0] + 777, 20000 - 777) &&
	      !memcmp(dst + 1000 + 20000 - 777, src[1] + 5, 12345) && dst[1000 + total - 777 - 1] == src[2][0],
	      "the bytes read are the sender's");
	struct iovec shortd = { dst, total - 1 };
	REQUIRE(srt_local_pull(pk->remote, pk->remote_nseg, &shortd, 1) == -EINVAL, "a destination of another size is refused");
	srt_local_recv_done(rx);

	/* A buffer unmapped before the receiver reads it. */
	uint8_t *gone = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(gone != MAP_FAILED, "mmap");
	struct wire_piece gv = { gone, 8192 };
	srt_local_send_remote(tx, p, 4791, 0, 64, hdr, sizeof(hdr), &gv, 1, false);
	srt_local_flush(tx);
	munmap(gone, 8192);
	REQUIRE(srt_local_recv(rx, b) == 1, "the entry");
	struct iovec gd = { dst, 8192 };
	REQUIRE(srt_local_pull(b->pkt[0].remote, b->pkt[0].remote_nseg, &gd, 1) == -EFAULT, "an unmapped source fails the read");
	srt_local_recv_done(rx);

	/* A description whose piece count no sender writes: the ring's rest
	 * is dropped, as for any broken entry. */
	size_t bytes;
	uint8_t *m = map_rx_file(&bytes);
	struct srt_local_stats s0;
	srt_local_get_stats(rx, &s0);
	srt_local_send_remote(tx, p, 4791, 0, 64, hdr, sizeof(hdr), vec, 3, false);
	srt_local_flush(tx);
	/* The entry just written: the last description of this payload in
	 * the area (the first one above describes the same pieces). */
	struct srt_local_remote *r = NULL;
	uint8_t *area = m + bytes - (8u << 20);
	for (size_t off = 0; off + 64 <= (8u << 20); off += 64) {
		struct srt_local_remote *c = (struct srt_local_remote *)(void *)(area + off + 32);
		if (c->nseg == 3 && c->total == total && c->pid == (uint32_t)getpid() &&
		    !memcmp(area + off + 16, hdr, sizeof(hdr)))
			r = c;
	}
	REQUIRE(r, "the written description");
	r->nseg = 100000;
	expect_broken(rx, b, &s0, "a description with an impossible piece count");
	munmap(m, bytes);
	srt_local_close(tx);
	srt_local_close(rx);
}

/* Several payloads read together (srt_local_pull_many, the reads the
 * rnic put off): one call per run of one sender, and a read that fails
 * (an unmapped buffer, a sender that is gone, a size that does not add
 * up) fails alone: the reads after it still land. */
static void test_pull_many(struct srt_rx_batch *b)
{
	enum { N = 7, LEN = 9000 };
	struct srt_local *rx = open_ring(RX_ADDR, false), *tx = open_ring(TX_ADDR, false);
	static uint8_t hdr[16], src[N][LEN], dst[N][LEN];
	struct in_addr a;

	inet_pton(AF_INET, RX_ADDR, &a);
	make_packet(hdr, sizeof(hdr), 7);
	struct srt_local_peer *p = srt_local_route(tx, a, hdr);
	REQUIRE(p, "no local route");
	if (!ptrace_open()) {
		srt_local_close(tx);
		srt_local_close(rx);
		return;
	}
	uint8_t *gone = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(gone != MAP_FAILED, "mmap");
	for (unsigned i = 0; i < N; i++) {
		for (unsigned k = 0; k < LEN; k++)
			src[i][k] = (uint8_t)(k * 7 + i * 31);
		/* 2: unmapped before the read; the others in two pieces */
		struct wire_piece v[2] = { { i == 2 ? gone : src[i], 1000 }, { i == 2 ? gone + 1000 : src[i] + 1000, LEN - 1000 } };
		srt_local_send_remote(tx, p, 4791, 0, 64, hdr, sizeof(hdr), v, 2, false);
	}
	srt_local_flush(tx);
	munmap(gone, LEN);
	REQUIRE(srt_local_recv(rx, b) == N, "the entries");
	/* 4: a sender that is gone (no such pid); 5: a destination one byte
	 * short of the description. */
	((struct srt_local_remote *)(uintptr_t)b->pkt[4].remote)->pid = 0x3ffffff0u;
	struct srt_local_pull pl[N];
	memset(dst, 0, sizeof(dst));
	for (unsigned i = 0; i < N; i++)
		pl[i] = (struct srt_local_pull){ .desc = b->pkt[i].remote, .nseg = b->pkt[i].remote_nseg,
						 .dst = { dst[i], i == 5 ? LEN - 1 : LEN }, .ok = i == 2 };
	srt_local_pull_many(pl, N);
	for (unsigned i = 0; i < N; i++) {
		bool want = i != 2 && i != 4 && i != 5;
		REQUIRE(pl[i].ok == want, "read %u: ok %d", i, pl[i].ok);
		if (want)
			REQUIRE(!memcmp(dst[i], src[i], LEN), "read %u: the sender's bytes", i);
	}
	REQUIRE(dst[5][0] == 0, "a read that does not add up is not made");
	srt_local_recv_done(rx);
	srt_local_close(tx);
	srt_local_close(rx);
}

/* Payloads in the ring (local_path.h): copied when sent, read from the
 * entry; described instead when not alone, too large, or when the ring is
 * half full; an impossible inline length is a broken ring. */
static void test_inline(struct srt_rx_batch *b)
{
	struct srt_local *rx = open_ring(RX_ADDR, false), *tx = open_ring(TX_ADDR, false);
	static uint8_t hdr[16], src[3][20000], big[SRT_LOCAL_INLINE_MAX_BYTES + 1], dst[SRT_LOCAL_INLINE_MAX_BYTES + 1];
	struct srt_local_stats s0, s1;
	struct in_addr a;

	inet_pton(AF_INET, RX_ADDR, &a);
	make_packet(hdr, sizeof(hdr), 7);
	struct srt_local_peer *p = srt_local_route(tx, a, hdr);
	REQUIRE(p, "no local route");
	for (unsigned i = 0; i < 3; i++)
		for (unsigned k = 0; k < sizeof(src[i]); k++)
			src[i][k] = (uint8_t)(k * 11 + i * 53);
	uint8_t *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(gone != MAP_FAILED, "mmap");
	memset(gone, 0x5a, 4096);
	struct wire_piece vec[3] = { { src[0], 20000 }, { src[1] + 3, 9999 }, { gone, 4096 } };
	size_t total = 20000 + 9999 + 4096;

	srt_local_get_stats(tx, &s0);
	srt_local_send_remote(tx, p, 4791, 0, 64, hdr, sizeof(hdr), vec, 3, true);
	srt_local_flush(tx);
	srt_local_get_stats(tx, &s1);
	REQUIRE(s1.tx_inline == s0.tx_inline + 1, "a message sent alone goes in the ring");
	/* What the sender does with its buffers now changes nothing. */
	memset(src[0], 0, sizeof(src[0]));
	munmap(gone, 4096);
	REQUIRE(srt_local_recv(rx, b) == 1, "one entry");
	const struct srt_rx_pkt *pk = &b->pkt[0];
	REQUIRE(pk->remote && pk->remote_inline && pk->remote_inline_len == total && pk->len == sizeof(hdr) &&
		      !memcmp(pk->data, hdr, sizeof(hdr)) && pk->no_icrc,
	      "the entry: headers, then the payload itself (%u bytes)", pk->remote_inline_len);
	REQUIRE(((uintptr_t)pk->remote_inline & 63) == 0, "the payload starts a cache line");
	struct iovec d[2] = { { dst, 1234 }, { dst + 2000, total - 1234 } };
	REQUIRE(srt_local_pull_inline(pk->remote_inline, pk->remote_inline_len, d, 2) == 0, "read out");
	for (unsigned k = 0; k < 1234; k++)
		REQUIRE(dst[k] == (uint8_t)(k * 11), "byte %u: as it was when sent", k);
	uint8_t *rest = dst + 2000;
	for (unsigned k = 1234; k < 20000; k++)
		REQUIRE(rest[k - 1234] == (uint8_t)(k * 11), "byte %u: as it was when sent", k);
	REQUIRE(!memcmp(rest + 20000 - 1234, src[1] + 3, 9999), "the second piece");
	for (unsigned k = 0; k < 4096; k++)
		REQUIRE(rest[20000 - 1234 + 9999 + k] == 0x5a, "the unmapped piece, copied before it went");
	struct iovec shortd = { dst, total - 1 };
	REQUIRE(srt_local_pull_inline(pk->remote_inline, pk->remote_inline_len, &shortd, 1) == -EINVAL,
	      "a destination of another size is refused");
	srt_local_recv_done(rx);

	/* Not alone, or over the size: described, whatever the ring holds. */
	for (size_t k = 0; k < sizeof(big); k++)
		big[k] = (uint8_t)(k * 3);
	struct wire_piece bv = { big, SRT_LOCAL_INLINE_MAX_BYTES + 1 }, sv = { big, 100 };
	srt_local_send_remote(tx, p, 4791, 0, 64, hdr, sizeof(hdr), &sv, 1, false);
	srt_local_send_remote(tx, p, 4791, 0, 64, hdr, sizeof(hdr), &bv, 1, true);
	bv.len = SRT_LOCAL_INLINE_MAX_BYTES;
	srt_local_send_remote(tx, p, 4791, 0, 64, hdr, sizeof(hdr), &bv, 1, true);
	srt_local_flush(tx);
	REQUIRE(srt_local_recv(rx, b) == 3, "three entries");
	REQUIRE(!b->pkt[0].remote_inline && b->pkt[0].remote->nseg == 1 && !b->pkt[1].remote_inline &&
		      b->pkt[1].remote->total == SRT_LOCAL_INLINE_MAX_BYTES + 1,
	      "not alone, or past the size: described");
	REQUIRE(b->pkt[2].remote_inline && b->pkt[2].remote_inline_len == SRT_LOCAL_INLINE_MAX_BYTES,
	      "the size itself: in the ring");
	struct iovec bd = { dst, SRT_LOCAL_INLINE_MAX_BYTES };
	REQUIRE(!srt_local_pull_inline(b->pkt[2].remote_inline, b->pkt[2].remote_inline_len, &bd, 1) &&
		      !memcmp(dst, big, SRT_LOCAL_INLINE_MAX_BYTES),
	      "its bytes");
	srt_local_recv_done(rx);

	/* A ring the receiver leaves half full: described from then on, and
	 * not a full ring. */
	srt_local_get_stats(tx, &s0);
	unsigned sent = 0;
	for (; sent < 200; sent++) {
		struct srt_local_stats s;
		srt_local_send_remote(tx, p, 4791, 0, 64, hdr, sizeof(hdr), &bv, 1, true);
		srt_local_flush(tx);
		srt_local_get_stats(tx, &s);
		if (s.tx_inline == s0.tx_inline + sent)
			break;          /* this one was described */
	}
	srt_local_get_stats(tx, &s1);
	REQUIRE(sent > 50 && sent < 70, "in the ring until it was half full: %u of 64 KiB", sent);
	REQUIRE(s1.tx_ring_full == s0.tx_ring_full, "a payload described for want of room is not a full ring");
	int n = srt_local_recv(rx, b);
	REQUIRE(n == (int)sent + 1 && !b->pkt[sent].remote_inline && b->pkt[sent - 1].remote_inline,
	      "all delivered, the last described (%d)", n);
	srt_local_recv_done(rx);

	/* An inline entry whose length no sender writes. */
	size_t bytes;
	uint8_t *m = map_rx_file(&bytes);
	srt_local_get_stats(rx, &s0);
	sv.len = 100;
	srt_local_send_remote(tx, p, 4791, 0, 64, hdr, sizeof(hdr), &sv, 1, true);
	srt_local_flush(tx);
	uint8_t *area = m + bytes - (8u << 20);
	uint64_t tail;
	memcpy(&tail, m + 192, 8);
	struct srt_local_remote *r = (struct srt_local_remote *)(void *)(area + tail % (8u << 20) + 32);
	REQUIRE(r->total == 100 && r->pid == 0, "the entry written (total %llu)", (unsigned long long)r->total);
	r->total = (1u << 20) + 1;
	expect_broken(rx, b, &s0, "an inline entry longer than any sender writes");
	munmap(m, bytes);
	srt_local_close(tx);
	srt_local_close(rx);
}

/* An entry that claims to run past the end of the ring's area (no sender
 * writes one: they wrap) is a broken ring, not a read past the mapping;
 * the same for a message-path description that would lie past it. */
static void test_past_the_end(struct srt_rx_batch *b)
{
	/* plain; ENTRY_REMOTE; ENTRY_REMOTE | ENTRY_INLINE, whose payload
	 * (4096 bytes, written at the description's `total`) runs past */
	static const uint8_t kinds[3] = { 0, 4, 12 };
	static const uint32_t lens[3] = { 4000, 40, 8 };

	for (unsigned k = 0; k < 3; k++) {
		struct srt_local *rx = open_ring(RX_ADDR, false);
		size_t bytes;
		uint8_t *m = map_rx_file(&bytes);
		uint8_t *area = m + bytes - (8u << 20);
		uint64_t at = (8u << 20) - 64, head = at + 4096;
		struct srt_local_stats s;

		uint64_t inline_len = 4096;

		memcpy(area + at, &lens[k], 4);         /* ring_entry.len */
		area[at + 12] = kinds[k];               /* ring_entry.flags */
		memcpy(area + at + 16 + 8 + 8, &inline_len, 8);      /* srt_local_remote.total */
		/* tail and head (the header's 64-byte aligned words at 192
		 * and 128: local_path.c's struct ring) */
		memcpy(m + 192, &at, 8);
		memcpy(m + 128, &head, 8);
		REQUIRE(srt_local_recv(rx, b) == 0, "an entry past the area's end is not delivered (kind %u)", k);
		srt_local_recv_done(rx);
		srt_local_get_stats(rx, &s);
		REQUIRE(s.rx_ring_broken == 1, "counted as a broken ring (kind %u)", k);
		munmap(m, bytes);
		srt_local_close(rx);
	}
}

int main(void)
{
	struct srt_rx_batch *b = malloc(sizeof(*b));

	REQUIRE(b, "malloc");
	unsetenv("SOFTRNIC_LOCAL");
	test_populated(b);
	test_stream(b);
	test_icrc_flag(b);
	test_doorbells(b);
	test_full(b);
	test_broken(b);
	test_remote(b);
	test_pull_many(b);
	test_inline(b);
	test_past_the_end(b);
	free(b);
	printf("local ring: ok\n");
	return 0;
}
