/*
 * test_udp_batch.c — the runtime's batched UDP path (udp_port.c): packets
 * queued with srt_udp_queue (or built in place in srt_udp_tx_buffer) leave
 * in one srt_udp_flush, equal-sized runs to one destination as UDP GSO
 * sends; the receiving socket takes such runs whole (UDP GRO) and
 * srt_udp_recv splits them again.
 *
 * Checked over real loopback sockets: every packet arrives once, in order,
 * byte for byte; every ICRC verifies with all 32 bits (the sender numbers
 * the IPv4 IDs of a GSO run 0, 1, 2..., the receiver expects exactly that,
 * srt_icrc_verify_ipv4_hint); GSO was really used where it may be and not
 * where it may not (shorter packet in the middle of a run, other
 * destination); a queue larger than one flush holds is flushed on the way;
 * and with SOFTRNIC_GSO=0 the same traffic goes one datagram per packet.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "rt_util.h"
#include "runtime/icrc_recv.h"
#include "runtime/udp_port.h"

#define MAX_PKTS 600

struct sent {
	size_t len;
	uint8_t first;          /* first payload byte, identifies the packet */
};

static void open_port(struct srt_udp *u, bool gso)
{
	char err[256];

	if (gso)
		unsetenv("SOFTRNIC_GSO");
	else
		setenv("SOFTRNIC_GSO", "0", 1);
	CHECK(srt_udp_open(u, err, sizeof(err)) == 0, "srt_udp_open: %s", err);
	unsetenv("SOFTRNIC_GSO");
}

/* A RoCE-like packet of `len` bytes (multiple of 4, ICRC room included):
 * a 12-byte BTH-shaped header and a payload pattern from `id`. */
static void make_packet(uint8_t *p, size_t len, uint8_t id)
{
	memset(p, 0, len);
	p[0] = 0x0a;            /* RC RDMA WRITE MIDDLE: any opcode will do */
	p[11] = id;
	for (size_t i = 12; i < len - WIRE_ICRC_LEN; i++)
		p[i] = (uint8_t)(id * 31u + i);
}

static void queue_packet(struct srt_udp *u, struct in_addr dst, size_t len, uint8_t id, bool in_place,
			 struct sent *log, unsigned *nlog)
{
	uint8_t tmp[WIRE_MAX_IB_PACKET];
	uint8_t *p = in_place ? srt_udp_tx_buffer(u) : tmp;
	struct rnic_tx tx;

	CHECK(p != NULL, "no tx buffer");
	make_packet(p, len, id);
	memset(&tx, 0, sizeof(tx));
	srt_ipv4_to_gid(dst, &tx.dst);
	tx.ib = p;
	tx.ib_len = len;
	CHECK(srt_udp_queue(u, &tx) == 0, "queue");
	log[(*nlog)++] = (struct sent){ .len = len, .first = id };
}

/* Receive `n` packets (waiting up to 2 s) and check them against log. */
static void expect_packets(struct srt_udp *rx, const struct srt_udp *tx, const struct sent *log, unsigned n)
{
	static struct srt_rx_batch batch;
	unsigned got = 0;

	while (got < n) {
		struct pollfd pfd = { .fd = rx->fd, .events = POLLIN };
		CHECK(poll(&pfd, 1, 2000) == 1, "only %u of %u packets arrived", got, n);
		int k = srt_udp_recv(rx, &batch);
		CHECK(k >= 0, "srt_udp_recv: %s", strerror(-k));
		CHECK(batch.dropped == 0, "%u segments dropped", batch.dropped);
		for (int i = 0; i < k; i++, got++) {
			const struct srt_rx_pkt *p = &batch.pkt[i];
			struct wire_ip ip;

			CHECK(got < n, "more packets than sent");
			CHECK(!p->truncated && p->len == log[got].len, "packet %u: %zu bytes, sent %zu", got, p->len,
			      log[got].len);
			CHECK(p->data[11] == log[got].first, "packet %u out of order (%u)", got, p->data[11]);
			for (size_t b = 12; b < p->len - WIRE_ICRC_LEN; b++)
				CHECK(p->data[b] == (uint8_t)(log[got].first * 31u + b), "packet %u byte %zu", got, b);
			CHECK(p->src.s_addr == tx->addr.s_addr, "source address");
			memset(&ip, 0, sizeof(ip));
			ip.version = 4;
			srt_ipv4_to_gid(p->src, (struct rnic_gid *)ip.src);
			srt_ipv4_to_gid(p->dst, (struct rnic_gid *)ip.dst);
			uint16_t id = 0xffff;
			int v = srt_icrc_verify_ipv4_hint(&ip, p->sport, p->data, p->len, p->seg_index, &id);
			CHECK(v == SRT_ICRC_OK, "packet %u (segment %u): ICRC %s", got, p->seg_index,
			      v == SRT_ICRC_BAD ? "bad" : "only matches another IPv4 ID");
			CHECK(id == p->seg_index, "IPv4 ID %u for segment %u", id, p->seg_index);
		}
	}
	struct pollfd pfd = { .fd = rx->fd, .events = POLLIN };
	CHECK(poll(&pfd, 1, 50) == 0, "more packets than sent");
}

static void run(bool gso)
{
	struct srt_udp a, b, c;
	static struct sent to_b[MAX_PKTS], to_c[MAX_PKTS];
	unsigned nb = 0, nc = 0;

	open_port(&a, gso);
	open_port(&b, gso);
	open_port(&c, gso);
	CHECK(a.gso == gso && a.gro == gso, "GSO %d/GRO %d, wanted %d (kernel without UDP GSO?)", a.gso, a.gro, gso);

	/* 1. A 64 KiB WRITE's shapes: FIRST (longer: RETH), 14 MIDDLE, a
	 * shorter LAST; then a run ended by a shorter packet, one cut by
	 * another destination, and an odd-sized last packet; half of them
	 * built in place. */
	uint8_t id = 1;
	queue_packet(&a, b.addr, 4128, id++, false, to_b, &nb);
	for (int i = 0; i < 14; i++)
		queue_packet(&a, b.addr, 4112, id++, i % 2, to_b, &nb);
	queue_packet(&a, b.addr, 1000, id++, true, to_b, &nb);
	for (int i = 0; i < 3; i++)
		queue_packet(&a, b.addr, 2048, id++, false, to_b, &nb);
	queue_packet(&a, b.addr, 64, id++, false, to_b, &nb);     /* ends that run */
	queue_packet(&a, b.addr, 2048, id++, false, to_b, &nb);   /* new run      */
	queue_packet(&a, c.addr, 2048, id++, true, to_c, &nc);    /* other host   */
	queue_packet(&a, b.addr, 2048, id++, false, to_b, &nb);
	queue_packet(&a, b.addr, 30, id++, false, to_b, &nb);     /* not 4-aligned */
	uint64_t sends0 = a.tx_sends;
	CHECK(srt_udp_flush(&a) == 0, "flush lost packets");
	uint64_t sends = a.tx_sends - sends0;
	if (gso) {
		/* FIRST | 14 MIDDLE + LAST | 3x2048 + 64 | 2048 | c | 2048 + 30 */
		CHECK(sends == 6, "%llu sends, expected 6", (unsigned long long)sends);
		CHECK(a.tx_gso_sends == 3, "%llu GSO sends, expected 3", (unsigned long long)a.tx_gso_sends);
	} else {
		CHECK(sends == nb + nc, "%llu sends for %u packets", (unsigned long long)sends, nb + nc);
		CHECK(a.tx_gso_sends == 0, "GSO used with SOFTRNIC_GSO=0");
	}
	expect_packets(&b, &a, to_b, nb);
	expect_packets(&c, &a, to_c, nc);

	/* 2. More than one flush holds (SRT_TX_MAX_PKTS): flushed on the way,
	 * nothing lost, order kept. */
	nb = 0;
	for (unsigned i = 0; i < 500; i++)
		queue_packet(&a, b.addr, 1036, (uint8_t)i, i % 3 == 0, to_b, &nb);
	CHECK(srt_udp_flush(&a) == 0, "flush lost packets");
	CHECK(a.tx_errors == 0, "%llu tx errors", (unsigned long long)a.tx_errors);
	expect_packets(&b, &a, to_b, nb);

	/* 3. An empty flush sends nothing. */
	sends0 = a.tx_sends;
	CHECK(srt_udp_flush(&a) == 0 && a.tx_sends == sends0, "empty flush sent something");

	srt_udp_close(&a);
	srt_udp_close(&b);
	srt_udp_close(&c);
}

int main(void)
{
	run(true);
	run(false);
	printf("test_udp_batch: ok\n");
	return 0;
}
