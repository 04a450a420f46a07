/*
 * test_capture.c — SOFTRNIC_PCAP's writer (runtime/capture.c) without
 * sockets: "%p" becomes the pid; every frame read back with wire/pcap.c
 * decodes as Ethernet/IPv4/UDP/RoCEv2 (wire_decode_eth: IPv4 header
 * checksum, lengths, a non-zero UDP checksum, and the ICRC over the
 * frame's real IP header, so the IPv4 ID, ports and addresses written are
 * the ones the ICRC was computed for), with the UDP checksum right when
 * the socket sends one (payloads split into pieces at odd offsets) and 0
 * when not; MACs are the documented fabricated ones (unicast and a
 * multicast group); a second device of the process continues the file
 * its first one started; timestamps are nanoseconds and never go back; the
 * size limit stops the capture and counts what it leaves out; malformed
 * SOFTRNIC_PCAP_LIMIT and an uncreatable file are refused.
 *
 * The end-to-end run with unmodified programs and tshark is
 * capture_e2e.sh.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_util.h"
#include "runtime/capture.h"
#include "runtime/udp_port.h"
#include "wire/pcap.h"

static char dir[] = "/tmp/test_capture.XXXXXX";

/* A RoCEv2 SEND ONLY of `len` bytes whose ICRC is right for the IP
 * header {src, dst, id, DF} and the UDP source port. */
static size_t make_packet(uint8_t *pkt, size_t len, uint32_t psn, struct in_addr src, struct in_addr dst,
			  uint16_t sport, uint16_t ip_id)
{
	struct wire_ib ib;
	static uint8_t payload[4096];
	struct wire_ip ip;

	memset(&ib, 0, sizeof(ib));
	ib.bth.opcode = WIRE_OP_SEND_ONLY;
	ib.bth.pkey = 0xffff;
	ib.bth.dqpn = 0x000abc;
	ib.bth.psn = psn;
	for (size_t k = 0; k < sizeof(payload); k++)
		payload[k] = (uint8_t)(k * 7 + psn);
	ib.payload = payload;
	ib.payload_len = (uint32_t)(len - WIRE_BTH_LEN - WIRE_ICRC_LEN);
	int n = wire_encode_ib(&ib, pkt, 8192);
	REQUIRE(n == (int)len, "encode %d", n);
	memset(&ip, 0, sizeof(ip));
	ip.version = 4;
	ip.df = true;
	ip.id = ip_id;
	srt_ipv4_to_gid(src, (struct rnic_gid *)ip.src);
	srt_ipv4_to_gid(dst, (struct rnic_gid *)ip.dst);
	wire_icrc_store(pkt + n - 4, wire_icrc_udp_payload(&ip, sport, pkt, (size_t)n - 4));
	return (size_t)n;
}

static struct srt_capture *open_capture(const char *pattern, const char *limit, bool csum)
{
	char err[256] = "";
	struct srt_capture *c;

	setenv("SOFTRNIC_PCAP", pattern, 1);
	if (limit)
		setenv("SOFTRNIC_PCAP_LIMIT", limit, 1);
	else
		unsetenv("SOFTRNIC_PCAP_LIMIT");
	REQUIRE(srt_capture_from_env(&c, csum, err, sizeof(err)) == 0 && c, "open %s: %s", pattern, err);
	return c;
}

/* Write `count` packets of growing size, split into 1..3 pieces at odd
 * offsets; half to a multicast group. */
static void write_packets(struct srt_capture *c, unsigned count)
{
	static uint8_t pkt[8192];
	struct in_addr a, b, g;

	inet_pton(AF_INET, "127.9.8.7", &a);
	inet_pton(AF_INET, "127.9.8.6", &b);
	inet_pton(AF_INET, "239.1.2.3", &g);
	for (unsigned i = 0; i < count; i++) {
		size_t len = 20 + 4 * (i % 1000);
		struct in_addr dst = i % 2 ? g : b;
		uint16_t id = (uint16_t)(i % 5);
		size_t n = make_packet(pkt, len, i, a, dst, (uint16_t)(0xc000 + i), id);
		struct srt_capture_hdr h = { .sport = (uint16_t)(0xc000 + i), .ip_id = id,
					     .tos = (uint8_t)(i % 4 == 0 ? 0x02 : 0x03), .ttl = (uint8_t)(64 - i % 3) };
		h.src[10] = h.src[11] = h.dst[10] = h.dst[11] = 0xff;   /* IPv4-mapped */
		memcpy(h.src + 12, &a.s_addr, 4);
		memcpy(h.dst + 12, &dst.s_addr, 4);
		struct wire_piece pc[3];
		unsigned np = 1 + i % 3;
		size_t cut1 = 13, cut2 = n - 7;
		if (np == 1)
			pc[0] = (struct wire_piece){ pkt, n };
		else if (np == 2)
			pc[0] = (struct wire_piece){ pkt, cut1 }, pc[1] = (struct wire_piece){ pkt + cut1, n - cut1 };
		else
			pc[0] = (struct wire_piece){ pkt, cut1 }, pc[1] = (struct wire_piece){ pkt + cut1, cut2 - cut1 },
			pc[2] = (struct wire_piece){ pkt + cut2, n - cut2 };
		srt_capture_packet(c, &h, pc, np);
	}
}

/* Read `path` back: every frame must decode and be frame n % period of
 * write_packets; returns the frame count. */
static unsigned check_file(const char *path, bool csum, unsigned period)
{
	struct pcap_reader r;
	struct pcap_record rec;
	static uint8_t buf[PCAP_MAX_SNAPLEN];
	uint64_t last_ts = 0;
	unsigned n = 0;
	int st;

	REQUIRE(pcap_open_read(&r, path) == 0, "pcap_open_read %s: %s", path, strerror(errno));
	REQUIRE(r.nanosecond && r.linktype == PCAP_LINKTYPE_ETHERNET, "not a ns Ethernet pcap");
	while ((st = pcap_read(&r, &rec, buf, sizeof(buf))) == 1) {
		struct wire_pkt pkt;
		int e = wire_decode_eth(rec.data, rec.caplen, true, &pkt);
		REQUIRE(e == WIRE_OK, "frame %u: decode error %d", n + 1, e);
		REQUIRE(rec.origlen == rec.caplen, "frame %u: cut", n + 1);
		REQUIRE(rec.ts_ns >= last_ts, "frame %u: time went back", n + 1);
		last_ts = rec.ts_ns;
		unsigned i = n % period;
		REQUIRE(pkt.ib.bth.psn == i, "frame %u: psn %u (order)", n + 1, pkt.ib.bth.psn);
		REQUIRE(pkt.udp.sport == (uint16_t)(0xc000 + i) && pkt.ip.id == i % 5 && pkt.ip.df &&
		      pkt.ip.ttl == 64 - i % 3 && pkt.ip.ecn == (i % 4 == 0 ? 2 : 3),
		      "frame %u: header fields", n + 1);
		if (csum)
			REQUIRE(wire_udp_csum_state(&pkt) == WIRE_UDP_CSUM_OK, "frame %u: UDP checksum", n + 1);
		else
			REQUIRE(pkt.udp.csum == 0, "frame %u: UDP checksum should be 0", n + 1);
		static const uint8_t src_mac[6] = { 0x02, 0x00, 127, 9, 8, 7 }, uni[6] = { 0x02, 0x00, 127, 9, 8, 6 },
				     group[6] = { 0x01, 0x00, 0x5e, 1, 2, 3 };
		REQUIRE(!memcmp(rec.data + 6, src_mac, 6), "frame %u: source MAC", n + 1);
		REQUIRE(!memcmp(rec.data, i % 2 ? group : uni, 6), "frame %u: destination MAC", n + 1);
		n++;
	}
	REQUIRE(st == 0, "damaged file after %u frames", n);
	pcap_close_read(&r);
	return n;
}

int main(void)
{
	char pattern[128], path[128], err[256];
	struct srt_capture_stats cs;
	struct stat sb;

	REQUIRE(mkdtemp(dir), "mkdtemp");

	/* %p, UDP checksums on. */
	snprintf(pattern, sizeof(pattern), "%s/a-%%p.pcap", dir);
	snprintf(path, sizeof(path), "%s/a-%d.pcap", dir, (int)getpid());
	struct srt_capture *c = open_capture(pattern, NULL, true);
	REQUIRE(!strcmp(srt_capture_path(c), path), "path %s, expected %s", srt_capture_path(c), path);
	write_packets(c, 3000);        /* ~6 MB: several buffer flushes */
	srt_capture_stats(c, &cs);
	REQUIRE(cs.packets == 3000 && cs.dropped == 0, "stats %llu/%llu", (unsigned long long)cs.packets,
	      (unsigned long long)cs.dropped);
	srt_capture_close(c);
	REQUIRE(check_file(path, true, 3000) == 3000, "frames with checksums");

	/* A second device of the same process continues the file. */
	c = open_capture(pattern, NULL, true);
	write_packets(c, 3000);
	srt_capture_close(c);
	REQUIRE(check_file(path, true, 3000) == 6000, "a reopened capture does not continue the file");

	/* No checksums (SOFTRNIC_GSO=0); a live flush shows the frames
	 * before close. */
	snprintf(path, sizeof(path), "%s/b.pcap", dir);
	c = open_capture(path, "0", false);
	write_packets(c, 50);
	srt_capture_flush(c);
	REQUIRE(check_file(path, false, 1000) == 50, "frames flushed before close");
	srt_capture_close(c);

	/* The limit: the file stays under it, the rest is counted. */
	snprintf(path, sizeof(path), "%s/c.pcap", dir);
	c = open_capture(path, "64K", true);
	write_packets(c, 1000);
	srt_capture_stats(c, &cs);
	srt_capture_close(c);
	REQUIRE(stat(path, &sb) == 0 && sb.st_size <= 65536 && sb.st_size > 60000, "limited file is %lld bytes",
	      (long long)sb.st_size);
	unsigned got = check_file(path, true, 1000);
	REQUIRE(got == cs.packets && cs.packets + cs.dropped == 1000 && cs.dropped > 0,
	      "limit: %u frames in the file, stats %llu written %llu dropped", got, (unsigned long long)cs.packets,
	      (unsigned long long)cs.dropped);
	printf("limit 64K: %u frames written, %llu not (file %lld bytes)\n", got, (unsigned long long)cs.dropped,
	       (long long)sb.st_size);

	/* Refusals. */
	static const char *const bad_limits[] = { "abc", "10X", "-5", "", "1T", "99999999999999999999G" };
	for (size_t i = 0; i < sizeof(bad_limits) / sizeof(bad_limits[0]); i++) {
		setenv("SOFTRNIC_PCAP", path, 1);
		setenv("SOFTRNIC_PCAP_LIMIT", bad_limits[i], 1);
		int e = srt_capture_from_env(&c, true, err, sizeof(err));
		if (!*bad_limits[i]) {  /* empty: the default */
			REQUIRE(e == 0 && c, "empty limit refused");
			srt_capture_close(c);
			continue;
		}
		REQUIRE(e == EINVAL && !c && strstr(err, "SOFTRNIC_PCAP_LIMIT"), "limit \"%s\" accepted (%s)",
		      bad_limits[i], err);
	}
	unsetenv("SOFTRNIC_PCAP_LIMIT");
	setenv("SOFTRNIC_PCAP", "/nonexistent-dir/x.pcap", 1);
	REQUIRE(srt_capture_from_env(&c, true, err, sizeof(err)) == ENOENT && !c && strstr(err, "cannot create"),
	      "uncreatable file: %s", err);
	unsetenv("SOFTRNIC_PCAP");
	REQUIRE(srt_capture_from_env(&c, true, err, sizeof(err)) == 0 && !c, "unset SOFTRNIC_PCAP opened a capture");

	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	REQUIRE(system(cmd) == 0, "cleanup");
	printf("capture: ok\n");
	return 0;
}
