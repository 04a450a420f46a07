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
 * Packets whose payload is passed by reference (rnic_tx.payload: headers
 * and pad in the queue, payload in "application memory") arrive the
 * same, alone and inside GSO runs mixed with copied ones, through the
 * batched and the unbatched (srt_udp_send) path; malformed shapes are
 * refused; the runtime offers them only with SOFTRNIC_TX_COPY=0.
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
	REQUIRE(srt_udp_open(u, err, sizeof(err)) == 0, "srt_udp_open: %s", err);
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

	REQUIRE(p != NULL, "no tx buffer");
	make_packet(p, len, id);
	memset(&tx, 0, sizeof(tx));
	srt_ipv4_to_gid(dst, &tx.dst);
	tx.ib = p;
	tx.ib_len = len;
	REQUIRE(srt_udp_queue(u, &tx) == 0, "queue");
	log[(*nlog)++] = (struct sent){ .len = len, .first = id };
}

/* "Application memory" that payloads by reference point into: it must
 * stay put until the flush. */
static uint8_t app_mem[MAX_PKTS][WIRE_MAX_IB_PACKET];
static unsigned app_next;

/* The same packet as make_packet, but sent as hdr_len header bytes and
 * `pad` pad bytes in the queue (or a stack buffer when !batched), the
 * payload by reference from app_mem. */
static void queue_ref_packet(struct srt_udp *u, struct in_addr dst, size_t len, size_t hdr_len, size_t pad,
			     uint8_t id, bool in_place, bool batched, struct sent *log, unsigned *nlog)
{
	uint8_t img[WIRE_MAX_IB_PACKET], tmp[64];
	size_t payload_len = len - hdr_len - pad - WIRE_ICRC_LEN;
	uint8_t *p = in_place ? srt_udp_tx_buffer(u) : tmp;
	uint8_t *mem = app_mem[app_next++ % MAX_PKTS];
	struct rnic_tx tx;

	REQUIRE(p != NULL, "no tx buffer");
	make_packet(img, len, id);
	memcpy(p, img, hdr_len);
	memcpy(p + hdr_len, img + hdr_len + payload_len, pad + WIRE_ICRC_LEN);
	memcpy(mem, img + hdr_len, payload_len);
	memset(&tx, 0, sizeof(tx));
	srt_ipv4_to_gid(dst, &tx.dst);
	tx.ib = p;
	tx.ib_len = hdr_len + pad + WIRE_ICRC_LEN;
	tx.payload = mem;
	tx.payload_len = payload_len;
	tx.hdr_len = hdr_len;
	REQUIRE((batched ? srt_udp_queue(u, &tx) : srt_udp_send(u, &tx)) == 0, "queue by reference");
	log[(*nlog)++] = (struct sent){ .len = len, .first = id };
}

/* Receive `n` packets (waiting up to 2 s) and check them against log. */
static void expect_packets(struct srt_udp *rx, const struct srt_udp *tx, const struct sent *log, unsigned n)
{
	static struct srt_rx_batch batch;
	unsigned got = 0;

	while (got < n) {
		struct pollfd pfd = { .fd = rx->fd, .events = POLLIN };
		REQUIRE(poll(&pfd, 1, 2000) == 1, "only %u of %u packets arrived", got, n);
		int k = srt_udp_recv(rx, &batch);
		REQUIRE(k >= 0, "srt_udp_recv: %s", strerror(-k));
		REQUIRE(batch.dropped == 0, "%u segments dropped", batch.dropped);
		for (int i = 0; i < k; i++, got++) {
			const struct srt_rx_pkt *p = &batch.pkt[i];
			struct wire_ip ip;

			REQUIRE(got < n, "more packets than sent");
			REQUIRE(!p->truncated && p->len == log[got].len, "packet %u: %zu bytes, sent %zu", got, p->len,
			      log[got].len);
			REQUIRE(p->data[11] == log[got].first, "packet %u out of order (%u)", got, p->data[11]);
			for (size_t b = 12; b < p->len - WIRE_ICRC_LEN; b++)
				REQUIRE(p->data[b] == (uint8_t)(log[got].first * 31u + b), "packet %u byte %zu", got, b);
			REQUIRE(!memcmp(p->src.raw, tx->gid.raw, 16), "source address");
			memset(&ip, 0, sizeof(ip));
			ip.version = 4;
			memcpy(ip.src, p->src.raw, 16);
			memcpy(ip.dst, p->dst.raw, 16);
			uint16_t id = 0xffff;
			int v = srt_icrc_verify_ipv4_hint(&ip, p->sport, p->data, p->len, p->seg_index, &id);
			REQUIRE(v == SRT_ICRC_OK, "packet %u (segment %u): ICRC %s", got, p->seg_index,
			      v == SRT_ICRC_BAD ? "bad" : "only matches another IPv4 ID");
			REQUIRE(id == p->seg_index, "IPv4 ID %u for segment %u", id, p->seg_index);
		}
	}
	struct pollfd pfd = { .fd = rx->fd, .events = POLLIN };
	REQUIRE(poll(&pfd, 1, 50) == 0, "more packets than sent");
}

static void run(bool gso)
{
	struct srt_udp a, b, c;
	static struct sent to_b[MAX_PKTS], to_c[MAX_PKTS];
	unsigned nb = 0, nc = 0;

	open_port(&a, gso);
	open_port(&b, gso);
	open_port(&c, gso);
	REQUIRE(a.gso == gso && a.gro == gso, "GSO %d/GRO %d, wanted %d (kernel without UDP GSO?)", a.gso, a.gro, gso);

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
	REQUIRE(srt_udp_flush(&a) == 0, "flush lost packets");
	uint64_t sends = a.tx_sends - sends0;
	if (gso) {
		/* FIRST | 14 MIDDLE + LAST | 3x2048 + 64 | 2048 | c | 2048 + 30 */
		REQUIRE(sends == 6, "%llu sends, expected 6", (unsigned long long)sends);
		REQUIRE(a.tx_gso_sends == 3, "%llu GSO sends, expected 3", (unsigned long long)a.tx_gso_sends);
	} else {
		REQUIRE(sends == nb + nc, "%llu sends for %u packets", (unsigned long long)sends, nb + nc);
		REQUIRE(a.tx_gso_sends == 0, "GSO used with SOFTRNIC_GSO=0");
	}
	expect_packets(&b, &a, to_b, nb);
	expect_packets(&c, &a, to_c, nc);

	/* 2. More than one flush holds (SRT_TX_MAX_PKTS): flushed on the way,
	 * nothing lost, order kept. */
	nb = 0;
	for (unsigned i = 0; i < 500; i++)
		queue_packet(&a, b.addr, 1036, (uint8_t)i, i % 3 == 0, to_b, &nb);
	REQUIRE(srt_udp_flush(&a) == 0, "flush lost packets");
	REQUIRE(a.tx_errors == 0, "%llu tx errors", (unsigned long long)a.tx_errors);
	expect_packets(&b, &a, to_b, nb);

	/* 3. Payloads by reference: a 64 KiB WRITE's shapes again (FIRST
	 * with RETH, MIDDLEs alternating in place / copied header, a LAST
	 * with pad), a copied packet in the middle of a run of referenced
	 * ones, another destination, then one sent unbatched. */
	nb = nc = 0;
	uint64_t gso0 = a.tx_gso_sends;
	sends0 = a.tx_sends;
	queue_ref_packet(&a, b.addr, 4128, 28, 0, id++, true, true, to_b, &nb);
	for (int i = 0; i < 6; i++)
		queue_ref_packet(&a, b.addr, 4112, 12, 0, id++, i % 2, true, to_b, &nb);
	queue_packet(&a, b.addr, 4112, id++, true, to_b, &nb);              /* copied, same run */
	for (int i = 0; i < 6; i++)
		queue_ref_packet(&a, b.addr, 4112, 12, 0, id++, true, true, to_b, &nb);
	queue_ref_packet(&a, b.addr, 1001 + 3, 12, 3, id++, true, true, to_b, &nb); /* LAST, 3 pad */
	queue_ref_packet(&a, c.addr, 2048, 16, 1, id++, false, true, to_c, &nc);
	REQUIRE(srt_udp_flush(&a) == 0, "flush lost packets");
	if (gso) {
		/* FIRST | 13 MIDDLE + LAST | c */
		REQUIRE(a.tx_sends - sends0 == 3, "%llu sends, expected 3", (unsigned long long)(a.tx_sends - sends0));
		REQUIRE(a.tx_gso_sends - gso0 == 1, "no GSO run by reference");
	}
	queue_ref_packet(&a, b.addr, 516, 16, 2, id++, false, false, to_b, &nb);   /* srt_udp_send */
	expect_packets(&b, &a, to_b, nb);
	expect_packets(&c, &a, to_c, nc);

	/* Shapes rnic.h rules out are refused, not sent. */
	struct rnic_tx bad;
	uint8_t hdr[32] = { 0 };
	memset(&bad, 0, sizeof(bad));
	srt_ipv4_to_gid(b.addr, &bad.dst);
	bad.ib = hdr;
	bad.payload = app_mem[0];
	bad.payload_len = 100;
	bad.hdr_len = 8;                /* shorter than a BTH */
	bad.ib_len = 12;
	REQUIRE(srt_udp_queue(&a, &bad) == EINVAL, "header shorter than BTH accepted");
	bad.hdr_len = 12;
	bad.ib_len = 12 + 5 + WIRE_ICRC_LEN;    /* 5 pad bytes */
	REQUIRE(srt_udp_queue(&a, &bad) == EINVAL, "5 pad bytes accepted");
	bad.ib_len = 16;
	bad.payload_len = WIRE_MAX_IB_PACKET;   /* too long */
	REQUIRE(srt_udp_send(&a, &bad) == EINVAL, "oversized packet accepted");
	bad.payload_len = 100;
	bad.payload = NULL;
	REQUIRE(srt_udp_queue(&a, &bad) == EINVAL, "NULL payload accepted");
	REQUIRE(!srt_udp_pending(&a), "refused packet queued");

	/* 4. An empty flush sends nothing. */
	sends0 = a.tx_sends;
	REQUIRE(srt_udp_flush(&a) == 0 && a.tx_sends == sends0, "empty flush sent something");

	srt_udp_close(&a);
	srt_udp_close(&b);
	srt_udp_close(&c);
}

int main(void)
{
	struct srt_udp u;
	char err[256];

	run(true);
	run(false);
	/* The offer (rnic_io.tx_payload_ref): off unless SOFTRNIC_TX_COPY=0. */
	static const char *const env[] = { NULL, "1", "0" };
	for (int i = 0; i < 3; i++) {
		if (env[i])
			setenv("SOFTRNIC_TX_COPY", env[i], 1);
		else
			unsetenv("SOFTRNIC_TX_COPY");
		REQUIRE(srt_udp_open(&u, err, sizeof(err)) == 0, "srt_udp_open: %s", err);
		REQUIRE(u.tx_payload_ref == (i == 2), "SOFTRNIC_TX_COPY=%s: by reference %d", env[i] ? env[i] : "(unset)",
		      u.tx_payload_ref);
		srt_udp_close(&u);
	}
	unsetenv("SOFTRNIC_TX_COPY");
	printf("test_udp_batch: ok\n");
	return 0;
}
