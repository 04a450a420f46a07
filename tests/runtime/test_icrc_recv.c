/*
 * test_icrc_recv.c — the unknown-IPv4-ID ICRC check (runtime/icrc_recv.c)
 * against the kernel Soft-RoCE captures in tests/vectors/rxe.
 *
 * Every frame there has a valid ICRC computed over a hashed, non-zero IPv4
 * ID.  For each frame we strip Ethernet/IP/UDP as a socket would, forget
 * the ID, and check that the verification accepts the packet and recovers
 * exactly the ID that was on the wire.  Then we flip single bits of the UDP
 * payload (every bit of the first 96 and last 8 bytes of every frame, and
 * every bit of one frame of each distinct length) and check each flip is
 * rejected — except BTH byte 4, which the ICRC masks (IBTA A17.3.3).
 * Also: synthetic IDs round-trip, and a timing of both paths.
 *
 * usage: test_icrc_recv VECTORS_DIR
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "rt_util.h"
#include "runtime/icrc_recv.h"
#include "wire/pcap.h"

#define FULL_HEAD_BYTES 96u
#define FULL_TAIL_BYTES 8u
#define MAX_LENGTHS 8192

static bool length_done[MAX_LENGTHS];
static unsigned long frames, nonzero_ids, flips;

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The IP header as the receiving socket knows it: no ID. */
static struct wire_ip socket_view(const struct wire_pkt *pkt)
{
	struct wire_ip ip = pkt->ip;
	ip.id = 0;
	return ip;
}

static void check_flips(const char *file, unsigned frame, const struct wire_pkt *pkt, const uint8_t *ib, size_t len)
{
	static uint8_t copy[65536];
	struct wire_ip ip = socket_view(pkt);
	bool everything = !length_done[len];

	length_done[len] = true;
	memcpy(copy, ib, len);
	for (size_t byte = 0; byte < len; byte++) {
		if (!everything && byte >= FULL_HEAD_BYTES && byte + FULL_TAIL_BYTES < len)
			continue;
		if (byte == 4)  /* BTH resv8a: masked out of the ICRC */
			continue;
		for (int bit = 0; bit < 8; bit++) {
			uint16_t id = 0;
			copy[byte] ^= (uint8_t)(1u << bit);
			int r = srt_icrc_verify_ipv4(&ip, pkt->udp.sport, copy, len, &id);
			REQUIRE(r == SRT_ICRC_BAD, "%s frame %u: flipping byte %zu bit %d of %zu was accepted (id %#x)", file,
			      frame, byte, bit, len, id);
			copy[byte] ^= (uint8_t)(1u << bit);
			flips++;
		}
	}
	/* The masked byte really is masked. */
	copy[4] ^= 0xff;
	REQUIRE(srt_icrc_verify_ipv4(&ip, pkt->udp.sport, copy, len, NULL) != SRT_ICRC_BAD,
	      "%s frame %u: BTH byte 4 should be masked", file, frame);
}

static void check_file(const char *dir, const char *name)
{
	char path[1024];
	struct pcap_reader rd;
	struct pcap_record rec;
	static uint8_t buf[PCAP_MAX_SNAPLEN];
	unsigned frame = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	REQUIRE(pcap_open_read(&rd, path) == 0, "cannot read %s: %s", path, strerror(errno));
	while (pcap_read(&rd, &rec, buf, sizeof(buf)) == 1) {
		struct wire_pkt pkt;
		frame++;
		int e = wire_decode_eth(rec.data, rec.caplen, true, &pkt);
		REQUIRE(e == 0, "%s frame %u: wire_decode_eth: %s", name, frame, wire_strerror(e));
		REQUIRE(pkt.ip.version == 4, "%s frame %u: not IPv4", name, frame);

		/* What recvmsg would return: the UDP payload. */
		const uint8_t *ib = pkt.ip_start + WIRE_IPV4_LEN + WIRE_UDP_LEN;
		size_t len = (size_t)pkt.udp.len - WIRE_UDP_LEN;
		REQUIRE(len < MAX_LENGTHS, "%s frame %u: too long", name, frame);
		struct wire_ip ip = socket_view(&pkt);
		uint16_t id = 0xffff;
		int r = srt_icrc_verify_ipv4(&ip, pkt.udp.sport, ib, len, &id);
		REQUIRE(r != SRT_ICRC_BAD, "%s frame %u: valid kernel packet rejected", name, frame);
		REQUIRE(id == pkt.ip.id, "%s frame %u: recovered ID %#x, wire has %#x", name, frame, id, pkt.ip.id);
		REQUIRE(r == (pkt.ip.id ? SRT_ICRC_OK_ID : SRT_ICRC_OK), "%s frame %u: wrong result kind %d", name, frame, r);
		if (pkt.ip.id)
			nonzero_ids++;
		frames++;
		check_flips(name, frame, &pkt, ib, len);
	}
	pcap_close_read(&rd);
}

/* Re-sign packets as if sent with chosen IDs and recover them. */
static void check_synthetic(void)
{
	static const uint8_t dev[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 9 };
	uint8_t pkt[4200];
	struct wire_ip ip;

	memset(&ip, 0, sizeof(ip));
	ip.version = 4;
	ip.df = true;
	memcpy(ip.src, dev, 16);
	memcpy(ip.dst, dev, 16);
	fill(pkt, sizeof(pkt), 99);
	static const size_t lengths[] = { 16, 17, 64, 1100, 4160 };
	static const uint16_t ids[] = { 1, 0x8000, 0x1234, 0xffff, 0xbeef };
	for (size_t l = 0; l < 5; l++) {
		for (size_t k = 0; k < 5; k++) {
			size_t len = lengths[l];
			ip.id = ids[k];
			wire_icrc_store(pkt + len - 4, wire_icrc_udp_payload(&ip, 49152, pkt, len - 4));
			ip.id = 0;
			uint16_t got = 0;
			REQUIRE(srt_icrc_verify_ipv4(&ip, 49152, pkt, len, &got) == SRT_ICRC_OK_ID, "len %zu id %#x rejected",
			      len, ids[k]);
			REQUIRE(got == ids[k], "len %zu: recovered %#x, sent %#x", len, got, ids[k]);
			/* A different source port is a different packet. */
			REQUIRE(srt_icrc_verify_ipv4(&ip, 49153, pkt, len, &got) == SRT_ICRC_BAD, "sport not covered");
		}
		ip.id = 0;
		wire_icrc_store(pkt + lengths[l] - 4, wire_icrc_udp_payload(&ip, 4791, pkt, lengths[l] - 4));
		REQUIRE(srt_icrc_verify_ipv4(&ip, 4791, pkt, lengths[l], NULL) == SRT_ICRC_OK, "ID 0 fast path");
	}
	uint16_t got;
	REQUIRE(srt_icrc_solve_id(0, 100, &got) == 1 && got == 0, "zero syndrome is ID 0");
	REQUIRE(srt_icrc_verify_ipv4(&ip, 4791, pkt, 3, NULL) == SRT_ICRC_BAD, "shorter than an ICRC");
}

static void measure(void)
{
	uint8_t pkt[1100];
	struct wire_ip ip;
	enum { N = 20000 };

	memset(&ip, 0, sizeof(ip));
	ip.version = 4;
	ip.df = true;
	fill(pkt, sizeof(pkt), 5);
	ip.id = 0;
	wire_icrc_store(pkt + sizeof(pkt) - 4, wire_icrc_udp_payload(&ip, 4791, pkt, sizeof(pkt) - 4));
	uint64_t t0 = mono_ns();
	for (int i = 0; i < N; i++)
		REQUIRE(srt_icrc_verify_ipv4(&ip, 4791, pkt, sizeof(pkt), NULL) == SRT_ICRC_OK, "timing, ID 0");
	uint64_t t1 = mono_ns();
	ip.id = 0x4321;
	wire_icrc_store(pkt + sizeof(pkt) - 4, wire_icrc_udp_payload(&ip, 4791, pkt, sizeof(pkt) - 4));
	ip.id = 0;
	for (int i = 0; i < N; i++)
		REQUIRE(srt_icrc_verify_ipv4(&ip, 4791, pkt, sizeof(pkt), NULL) == SRT_ICRC_OK_ID, "timing, ID");
	uint64_t t2 = mono_ns();
	printf("1100-byte packet: ID 0 path %.0f ns, unknown-ID path %.0f ns per packet\n",
	       (double)(t1 - t0) / N, (double)(t2 - t1) / N);
}

int main(int argc, char **argv)
{
	REQUIRE(argc == 2, "usage: %s VECTORS_DIR", argv[0]);
	DIR *d = opendir(argv[1]);
	REQUIRE(d != NULL, "cannot open %s: %s", argv[1], strerror(errno));
	struct dirent *de;
	unsigned files = 0;
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		if (n > 5 && !strcmp(de->d_name + n - 5, ".pcap")) {
			check_file(argv[1], de->d_name);
			files++;
		}
	}
	closedir(d);
	REQUIRE(files >= 14, "expected the 14 rxe captures, found %u", files);
	REQUIRE(frames >= 1000 && nonzero_ids == frames, "frames %lu, with non-zero ID %lu", frames, nonzero_ids);
	check_synthetic();
	measure();
	printf("%u files, %lu frames: all IDs recovered; %lu single-bit flips all rejected\n", files, frames, flips);
	return 0;
}
