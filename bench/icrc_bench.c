/*
 * icrc_bench.c — how fast the wire codec is: raw CRC-32 throughput on
 * 4 KiB buffers, wire_crc32 against libdeflate_crc32 (interleaved rounds,
 * medians), ICRC throughput on 4 KiB payloads (bytes/s), and packets/s for a full encode (IP + UDP + IB +
 * ICRC) and a full decode with ICRC verification, for 4 KiB and for
 * header-only (ACK) packets.  Not a test: numbers depend on the machine.
 *
 * usage: icrc_bench [SECONDS_PER_CASE]   (default 1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libdeflate.h>

#include "wire/crc32.h"
#include "wire/wire.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint8_t pkt_buf[WIRE_IPV6_LEN + WIRE_UDP_LEN + WIRE_MAX_IB_PACKET];
static uint8_t payload[4096];

static void make_pkt(struct wire_pkt *p, uint8_t opcode, uint32_t len)
{
	memset(p, 0, sizeof(*p));
	p->ip.version = 4;
	p->ip.ttl = 64;
	p->ip.df = true;
	p->ip.src[10] = p->ip.src[11] = p->ip.dst[10] = p->ip.dst[11] = 0xff;
	p->ip.src[12] = 127; p->ip.src[15] = 1;
	p->ip.dst[12] = 127; p->ip.dst[15] = 2;
	p->udp.sport = wire_udp_sport_rc(0x11, 0x12);
	p->ib.bth.opcode = opcode;
	p->ib.bth.pkey = 0xffff;
	p->ib.bth.dqpn = 0x12;
	p->ib.aeth.syndrome = 0x1f;
	p->ib.reth.dma_len = len;
	p->ib.payload = len ? payload : NULL;
	p->ib.payload_len = len;
}

/* Runs `fn` in batches until `secs` have passed; returns calls/s. */
static double rate(double secs, unsigned long (*fn)(unsigned long), unsigned long *sink)
{
	unsigned long n = 0, batch = 1000;
	double t0 = now(), t;
	do {
		*sink += fn(batch);
		n += batch;
		t = now();
	} while (t - t0 < secs);
	return n / (t - t0);
}

/* Raw CRC-32 over the 4 KiB payload; the initial value changes every call
 * so nothing is hoisted (writing into the buffer instead would measure
 * store-forwarding stalls). */
static unsigned long crc_wire(unsigned long n)
{
	uint32_t acc = 0;
	for (unsigned long i = 0; i < n; i++)
		acc += wire_crc32((uint32_t)i, payload, sizeof(payload));
	return acc;
}

static unsigned long crc_libdeflate(unsigned long n)
{
	uint32_t acc = 0;
	for (unsigned long i = 0; i < n; i++)
		acc += libdeflate_crc32((uint32_t)i, payload, sizeof(payload));
	return acc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* wire_crc32 and libdeflate_crc32 in alternating rounds, so that both see
 * the same machine (clock, neighbours); prints the medians and the ratio. */
static void crc_compare(double secs, unsigned long *sink)
{
	enum { ROUNDS = 11 };
	double w[ROUNDS], l[ROUNDS];
	for (int i = 0; i < ROUNDS; i++) {
		w[i] = rate(secs / ROUNDS, crc_wire, sink);
		l[i] = rate(secs / ROUNDS, crc_libdeflate, sink);
	}
	qsort(w, ROUNDS, sizeof(w[0]), cmp_double);
	qsort(l, ROUNDS, sizeof(l[0]), cmp_double);
	double wm = w[ROUNDS / 2] * sizeof(payload) / 1e9, lm = l[ROUNDS / 2] * sizeof(payload) / 1e9;
	printf("crc32  4 KiB buffer: wire_crc32 (%s) %.2f GB/s, libdeflate_crc32 %.2f GB/s: %.2fx\n",
	       wire_crc32_impl(), wm, lm, wm / lm);
}

static struct wire_pkt big, ack;
static int big_len, ack_len;

static unsigned long run_icrc(unsigned long n)
{
	unsigned long acc = 0;
	for (unsigned long i = 0; i < n; i++) {
		pkt_buf[100] = (uint8_t)i;           /* keep the compiler honest */
		acc += wire_icrc_ip(pkt_buf, (size_t)big_len - WIRE_ICRC_LEN);
	}
	return acc;
}

static unsigned long run_encode(unsigned long n, struct wire_pkt *p)
{
	unsigned long acc = 0;
	for (unsigned long i = 0; i < n; i++) {
		p->ib.bth.psn = (uint32_t)i & WIRE_PSN_MASK;
		acc += (unsigned long)wire_encode_ip(p, pkt_buf, sizeof(pkt_buf));
	}
	return acc;
}

static unsigned long run_decode(unsigned long n, int len)
{
	unsigned long acc = 0;
	struct wire_pkt out;
	for (unsigned long i = 0; i < n; i++)
		acc += (unsigned long)(wire_decode_ip(pkt_buf, (size_t)len, true, &out) == WIRE_OK);
	return acc;
}

static unsigned long enc_big(unsigned long n) { return run_encode(n, &big); }
static unsigned long enc_ack(unsigned long n) { return run_encode(n, &ack); }
static unsigned long dec_big(unsigned long n) { return run_decode(n, big_len); }
static unsigned long dec_ack(unsigned long n) { return run_decode(n, ack_len); }

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	unsigned long sink = 0;
	if (secs <= 0)
		secs = 1.0;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	make_pkt(&big, WIRE_OP_WRITE_ONLY, 4096);
	make_pkt(&ack, WIRE_OP_ACK, 0);
	ack_len = wire_encode_ip(&ack, pkt_buf, sizeof(pkt_buf));
	big_len = wire_encode_ip(&big, pkt_buf, sizeof(pkt_buf));
	if (big_len < 0 || ack_len < 0) {
		fprintf(stderr, "encode failed: %s\n", wire_strerror(big_len < 0 ? big_len : ack_len));
		return 1;
	}

	crc_compare(2 * secs, &sink);
	double r = rate(secs, run_icrc, &sink);
	printf("icrc   4 KiB payload (%d-byte IP packet): %10.0f pkt/s  %8.2f GB/s\n",
	       big_len, r, r * (big_len - WIRE_ICRC_LEN) / 1e9);
	r = rate(secs, enc_big, &sink);
	printf("encode 4 KiB WRITE_ONLY + ICRC:            %10.0f pkt/s  %8.2f GB/s\n", r, r * 4096 / 1e9);
	wire_encode_ip(&big, pkt_buf, sizeof(pkt_buf));
	r = rate(secs, dec_big, &sink);
	printf("decode 4 KiB WRITE_ONLY + ICRC check:      %10.0f pkt/s  %8.2f GB/s\n", r, r * 4096 / 1e9);
	r = rate(secs, enc_ack, &sink);
	printf("encode ACK + ICRC:                         %10.0f pkt/s\n", r);
	wire_encode_ip(&ack, pkt_buf, sizeof(pkt_buf));
	r = rate(secs, dec_ack, &sink);
	printf("decode ACK + ICRC check:                   %10.0f pkt/s\n", r);
	return sink == 42 ? 2 : 0;          /* use sink so work is not elided */
}
