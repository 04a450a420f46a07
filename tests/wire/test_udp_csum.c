/*
 * test_udp_csum.c — wire_udp_csum_state: how `softrnic decode` tells a UDP
 * checksum left partial by checksum offload (the pseudo-header sum only, as
 * a capture on the sending host shows it) from a wrong one.  The
 * checksums here are computed by this file's own ones'-complement code
 * over a frame of rc_write.pcap re-encoded as IPv4 and as IPv6; the
 * decoder must still refuse the partial ones (a receiver must), and report
 * the rest of the packet as it does for the same packet with checksum 0.
 *
 * usage: test_udp_csum VECTOR_DIR
 */
#include "wire_test.h"

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static uint32_t sum16(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

/* Pseudo-header sum (folded, not inverted) of the IP packet at `ip`. */
static uint16_t pseudo(const uint8_t *ip, int version, uint16_t udp_len)
{
	uint32_t s = version == 4 ? sum16(0, ip + 12, 8) : sum16(0, ip + 8, 32);
	return fold(s + 17 + udp_len);
}

static void set_csum(uint8_t *udp, uint16_t v)
{
	udp[6] = (uint8_t)(v >> 8);
	udp[7] = (uint8_t)v;
}

static void check_packet(const uint8_t *orig, size_t len, int version)
{
	size_t hl = version == 4 ? WIRE_IPV4_LEN : WIRE_IPV6_LEN;
	uint8_t b[WIRE_IPV6_LEN + WIRE_UDP_LEN + WIRE_MAX_IB_PACKET];
	memcpy(b, orig, len);
	uint8_t *udp = b + hl;
	uint16_t udp_len = (uint16_t)(udp[4] << 8 | udp[5]);
	uint16_t ph = pseudo(b, version, udp_len), ph_inv = (uint16_t)~ph;
	struct wire_pkt p, zero;

	set_csum(udp, 0);
	CHECK_ERR(wire_decode_ip(b, len, true, &zero), WIRE_OK);
	CHECK(wire_udp_csum_state(&zero) == WIRE_UDP_CSUM_NONE);

	/* Full checksum: inverted sum over pseudo-header and the datagram. */
	uint16_t full = (uint16_t)~fold(sum16(ph, udp, udp_len));
	if (full == 0)
		full = 0xffff;
	set_csum(udp, full);
	CHECK_ERR(wire_decode_ip(b, len, true, &p), WIRE_OK);
	CHECK(wire_udp_csum_state(&p) == WIRE_UDP_CSUM_OK);

	/* Partial, as Linux leaves it (not inverted) and inverted: refused by
	 * the decoder, with everything before the IB part already decoded. */
	const uint16_t partial[] = { ph, ph_inv };
	for (int k = 0; k < 2; k++) {
		set_csum(udp, partial[k]);
		CHECK_ERR(wire_decode_ip(b, len, true, &p), WIRE_E_UDP_CSUM);
		CHECK(p.ip_start == b && p.ip_len == len && p.udp.csum == partial[k]);
		CHECK(p.ip.version == version && !memcmp(p.ip.src, zero.ip.src, 16));
		CHECK(wire_udp_csum_state(&p) == WIRE_UDP_CSUM_PARTIAL);
	}
	/* Wrong in other ways. */
	const uint16_t wrong[] = { (uint16_t)(ph + 1), (uint16_t)(full ^ 0x0100), 0x1234 };
	for (int k = 0; k < 3; k++) {
		if (wrong[k] == full || wrong[k] == ph || wrong[k] == ph_inv)
			continue;
		set_csum(udp, wrong[k]);
		CHECK_ERR(wire_decode_ip(b, len, true, &p), WIRE_E_UDP_CSUM);
		CHECK(wire_udp_csum_state(&p) == WIRE_UDP_CSUM_BAD);
	}
	/* A packet that was not decoded (no ip_start) is BAD, not a crash. */
	struct wire_pkt none = { 0 };
	CHECK(wire_udp_csum_state(&none) == WIRE_UDP_CSUM_BAD);
	CHECK(wire_udp_csum_state(NULL) == WIRE_UDP_CSUM_BAD);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s VECTOR_DIR\n", argv[0]);
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/rc_write.pcap", argv[1]);
	struct capture cap = load_capture(path);
	size_t done = 0;
	for (size_t i = 0; i < cap.count && i < 4; i++) {
		struct wire_pkt p;
		if (wire_decode_eth(cap.frames[i].data, cap.frames[i].len, true, &p) != WIRE_OK)
			continue;
		check_packet(p.ip_start, p.ip_len, 4);
		/* The same packet over IPv6 (the encoder computes the ICRC). */
		static uint8_t v6[WIRE_IPV6_LEN + WIRE_UDP_LEN + WIRE_MAX_IB_PACKET];
		p.ip.version = 6;
		p.ip.flow_label = 0x12345;
		p.udp.csum = 0;
		int n = wire_encode_ip(&p, v6, sizeof(v6));
		CHECK(n > 0);
		if (n > 0)
			check_packet(v6, (size_t)n, 6);
		done++;
	}
	CHECK(done == 4);
	free_capture(&cap);
	return check_exit("test_udp_csum");
}
