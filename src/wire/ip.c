/*
 * ip.c — the IPv4/IPv6 + UDP wrapping of RoCEv2 (IBTA A17.4) and the
 * Ethernet framing found in pcap files.
 *
 * Decoding checks, in this order, so that foreign traffic is recognised
 * as such before it could be called malformed: IP version, IPv4 header
 * (IHL, checksum, fragmentation), protocol = UDP, UDP destination port =
 * 4791, then the lengths (IP total / payload length against the buffer,
 * UDP length against IP), the UDP checksum if one was sent, and finally
 * the IB transport packet and optionally its ICRC.
 *
 * A UDP checksum that is wrong is refused (WIRE_E_UDP_CSUM) even when it is
 * only the partial sum checksum offload leaves (a receiver must refuse it);
 * wire_udp_csum_state tells such a capture artefact apart, for tools.
 *
 * Trade-off: bytes after the IP packet are ignored, because Ethernet pads
 * short frames to 60 bytes; a buffer shorter than the IP length says is
 * WIRE_E_TRUNCATED (a cut capture and a lying length look the same).
 */
#include <string.h>

#include "wire/bytes.h"
#include "wire/wire.h"

#define ETHERTYPE_IPV4 0x0800u
#define ETHERTYPE_IPV6 0x86ddu
#define ETHERTYPE_VLAN 0x8100u
#define IPPROTO_UDP_ 17u

/* RFC 1071 ones-complement sum, not yet folded or inverted. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Ones-complement sum of the UDP pseudo-header (RFC 768 / RFC 8200 8.1),
 * not yet folded. */
static uint32_t udp_pseudo_sum(const struct wire_ip *ip, uint16_t udp_len)
{
	uint32_t sum = 0;
	if (ip->version == 4) {
		sum = csum_add(sum, ip->src + 12, 4);
		sum = csum_add(sum, ip->dst + 12, 4);
	} else {
		sum = csum_add(sum, ip->src, 16);
		sum = csum_add(sum, ip->dst, 16);
	}
	return sum + IPPROTO_UDP_ + udp_len;
}

/* UDP checksum check: the sum over pseudo-header, UDP header and data,
 * checksum included, folds to 0xffff. */
static bool udp_csum_ok(const struct wire_ip *ip, const uint8_t *udp, uint16_t udp_len)
{
	return csum_fold(csum_add(udp_pseudo_sum(ip, udp_len), udp, udp_len)) == 0xffff;
}

enum wire_udp_csum_state wire_udp_csum_state(const struct wire_pkt *pkt)
{
	if (!pkt || !pkt->ip_start || (pkt->ip.version != 4 && pkt->ip.version != 6))
		return WIRE_UDP_CSUM_BAD;
	size_t hl = pkt->ip.version == 4 ? WIRE_IPV4_LEN : WIRE_IPV6_LEN;
	uint16_t udp_len = pkt->udp.len;
	if (pkt->ip_len < hl + WIRE_UDP_LEN || udp_len != pkt->ip_len - hl)
		return WIRE_UDP_CSUM_BAD;
	const uint8_t *udp = pkt->ip_start + hl;
	uint16_t csum = get16(udp + 6);
	if (csum == 0)
		return WIRE_UDP_CSUM_NONE;
	if (udp_csum_ok(&pkt->ip, udp, udp_len))
		return WIRE_UDP_CSUM_OK;
	/* Offload: the field holds the pseudo-header sum the NIC starts from
	 * (Linux: not inverted; the inverted form too, for other stacks). */
	uint16_t pseudo = csum_fold(udp_pseudo_sum(&pkt->ip, udp_len));
	uint16_t inverted = (uint16_t)~pseudo;
	if (csum == pseudo || csum == inverted)
		return WIRE_UDP_CSUM_PARTIAL;
	return WIRE_UDP_CSUM_BAD;
}

static void ipv4_mapped(uint8_t out[16], const uint8_t *v4)
{
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, v4, 4);
}

/* Parses the IPv4 header; sets *payload_off and *total. */
static int decode_ipv4(const uint8_t *buf, size_t len, struct wire_ip *ip, size_t *payload_off, size_t *total)
{
	if (len < WIRE_IPV4_LEN)
		return WIRE_E_TRUNCATED;
	/* softrnic accepts no IPv4 options (rxe sends none). */
	if ((buf[0] & 0xf) != 5)
		return WIRE_E_IP_HEADER;
	if (csum_fold(csum_add(0, buf, WIRE_IPV4_LEN)) != 0xffff)
		return WIRE_E_IP_HEADER;
	uint16_t frag = get16(buf + 6);
	/* Reserved flag, MF and a fragment offset are all refused: RoCEv2
	 * packets are never fragmented (A17.4.3 sends with DF). */
	if (frag & 0xbfff)
		return WIRE_E_IP_HEADER;
	if (buf[9] != IPPROTO_UDP_)
		return WIRE_E_NOT_UDP;
	ip->version = 4;
	ip->dscp = buf[1] >> 2;
	ip->ecn = buf[1] & 3;
	ip->id = get16(buf + 4);
	ip->df = (frag & 0x4000) != 0;
	ip->ttl = buf[8];
	ipv4_mapped(ip->src, buf + 12);
	ipv4_mapped(ip->dst, buf + 16);
	*payload_off = WIRE_IPV4_LEN;
	*total = get16(buf + 2);
	if (*total < WIRE_IPV4_LEN)
		return WIRE_E_LENGTH;
	return WIRE_OK;
}

static int decode_ipv6(const uint8_t *buf, size_t len, struct wire_ip *ip, size_t *payload_off, size_t *total)
{
	if (len < WIRE_IPV6_LEN)
		return WIRE_E_TRUNCATED;
	/* No extension headers: UDP must follow directly. */
	if (buf[6] != IPPROTO_UDP_)
		return WIRE_E_NOT_UDP;
	uint32_t w0 = get32(buf);
	uint8_t tclass = (uint8_t)(w0 >> 20);
	ip->version = 6;
	ip->dscp = tclass >> 2;
	ip->ecn = tclass & 3;
	ip->flow_label = w0 & 0xfffff;
	ip->ttl = buf[7];
	memcpy(ip->src, buf + 8, 16);
	memcpy(ip->dst, buf + 24, 16);
	*payload_off = WIRE_IPV6_LEN;
	*total = WIRE_IPV6_LEN + (size_t)get16(buf + 4);
	return WIRE_OK;
}

int wire_decode_ip(const uint8_t *buf, size_t len, bool verify_icrc, struct wire_pkt *out)
{
	if (!buf || !out)
		return WIRE_E_FIELD;
	memset(out, 0, sizeof(*out));
	if (len < 1)
		return WIRE_E_TRUNCATED;
	size_t off = 0, total = 0;
	int err;
	switch (buf[0] >> 4) {
	case 4: err = decode_ipv4(buf, len, &out->ip, &off, &total); break;
	case 6: err = decode_ipv6(buf, len, &out->ip, &off, &total); break;
	default: return WIRE_E_IP_VERSION;
	}
	if (err)
		return err;

	/* UDP ports first: a UDP packet for another port is not RoCE at
	 * all, whatever its lengths say. */
	if (len < off + WIRE_UDP_LEN)
		return WIRE_E_TRUNCATED;
	const uint8_t *udp = buf + off;
	out->udp.sport = get16(udp);
	out->udp.dport = get16(udp + 2);
	out->udp.len = get16(udp + 4);
	out->udp.csum = get16(udp + 6);
	if (out->udp.dport != WIRE_ROCEV2_UDP_PORT)
		return WIRE_E_NOT_ROCE;

	if (total < off + WIRE_UDP_LEN)
		return WIRE_E_LENGTH;
	if (total > len)
		return WIRE_E_TRUNCATED;
	if (out->udp.len != total - off)
		return WIRE_E_UDP_LENGTH;
	out->ip_start = buf;
	out->ip_len = total;
	if (out->udp.csum && !udp_csum_ok(&out->ip, udp, out->udp.len))
		return WIRE_E_UDP_CSUM;

	err = wire_decode_ib(udp + WIRE_UDP_LEN, out->udp.len - WIRE_UDP_LEN, &out->ib);
	if (err)
		return err;
	if (verify_icrc && wire_icrc_ip(buf, total - WIRE_ICRC_LEN) != out->ib.icrc)
		return WIRE_E_ICRC;
	return WIRE_OK;
}

static int check_ip_fields(const struct wire_pkt *pkt)
{
	const struct wire_ip *ip = &pkt->ip;
	if (ip->version != 4 && ip->version != 6)
		return WIRE_E_IP_VERSION;
	if (ip->dscp > 63 || ip->ecn > 3 || ip->flow_label > 0xfffff)
		return WIRE_E_FIELD;
	/* RoCEv2 always goes to 4791; 0 means "the default". */
	if (pkt->udp.dport != 0 && pkt->udp.dport != WIRE_ROCEV2_UDP_PORT)
		return WIRE_E_FIELD;
	return WIRE_OK;
}

/* Writes the IP header for a packet whose IP payload (UDP) is udp_len
 * bytes.  IPv4 addresses are taken from the last 4 bytes of the mapped
 * address; the ::ffff: prefix is not checked. */
static size_t encode_ip_header(const struct wire_ip *ip, size_t udp_len, uint8_t *p)
{
	uint8_t tos = (uint8_t)(ip->dscp << 2 | ip->ecn);
	if (ip->version == 4) {
		p[0] = 0x45;
		p[1] = tos;
		put16(p + 2, (uint16_t)(WIRE_IPV4_LEN + udp_len));
		put16(p + 4, ip->id);
		put16(p + 6, ip->df ? 0x4000 : 0);
		p[8] = ip->ttl;
		p[9] = IPPROTO_UDP_;
		put16(p + 10, 0);
		memcpy(p + 12, ip->src + 12, 4);
		memcpy(p + 16, ip->dst + 12, 4);
		put16(p + 10, (uint16_t)~csum_fold(csum_add(0, p, WIRE_IPV4_LEN)));
		return WIRE_IPV4_LEN;
	}
	put32(p, 6u << 28 | (uint32_t)tos << 20 | ip->flow_label);
	put16(p + 4, (uint16_t)udp_len);
	p[6] = IPPROTO_UDP_;
	p[7] = ip->ttl;
	memcpy(p + 8, ip->src, 16);
	memcpy(p + 24, ip->dst, 16);
	return WIRE_IPV6_LEN;
}

int wire_encode_ip(const struct wire_pkt *pkt, uint8_t *buf, size_t cap)
{
	if (!pkt || !buf)
		return WIRE_E_FIELD;
	int err = check_ip_fields(pkt);
	if (err)
		return err;
	size_t ip_hlen = pkt->ip.version == 4 ? WIRE_IPV4_LEN : WIRE_IPV6_LEN;
	size_t off = ip_hlen + WIRE_UDP_LEN;
	if (cap < off)
		return WIRE_E_NOSPACE;
	int ib_len = wire_encode_ib(&pkt->ib, buf + off, cap - off);
	if (ib_len < 0)
		return ib_len;
	size_t udp_len = WIRE_UDP_LEN + (size_t)ib_len;

	encode_ip_header(&pkt->ip, udp_len, buf);
	uint8_t *udp = buf + ip_hlen;
	put16(udp, pkt->udp.sport);
	put16(udp + 2, WIRE_ROCEV2_UDP_PORT);
	put16(udp + 4, (uint16_t)udp_len);
	put16(udp + 6, pkt->udp.csum);

	size_t total = off + (size_t)ib_len;
	wire_icrc_store(buf + total - WIRE_ICRC_LEN, wire_icrc_ip(buf, total - WIRE_ICRC_LEN));
	return (int)total;
}

int wire_decode_eth(const uint8_t *frame, size_t len, bool verify_icrc, struct wire_pkt *out)
{
	if (!frame || !out)
		return WIRE_E_FIELD;
	memset(out, 0, sizeof(*out));
	if (len < WIRE_ETH_LEN)
		return WIRE_E_TRUNCATED;
	size_t off = WIRE_ETH_LEN;
	uint16_t type = get16(frame + 12);
	if (type == ETHERTYPE_VLAN) {           /* one 802.1Q tag */
		if (len < WIRE_ETH_LEN + 4)
			return WIRE_E_TRUNCATED;
		type = get16(frame + 16);
		off += 4;
	}
	unsigned want;
	if (type == ETHERTYPE_IPV4)
		want = 4;
	else if (type == ETHERTYPE_IPV6)
		want = 6;
	else
		return WIRE_E_ETHERTYPE;
	if (len > off && (frame[off] >> 4) != want)
		return WIRE_E_IP_VERSION;
	return wire_decode_ip(frame + off, len - off, verify_icrc, out);
}

int wire_encode_eth(const uint8_t eth_hdr[14], const struct wire_pkt *pkt, uint8_t *buf, size_t cap)
{
	if (!eth_hdr || !pkt || !buf)
		return WIRE_E_FIELD;
	if (cap < WIRE_ETH_LEN)
		return WIRE_E_NOSPACE;
	int n = wire_encode_ip(pkt, buf + WIRE_ETH_LEN, cap - WIRE_ETH_LEN);
	if (n < 0)
		return n;
	memmove(buf, eth_hdr, 12);            /* eth_hdr may point into buf */
	put16(buf + 12, pkt->ip.version == 4 ? ETHERTYPE_IPV4 : ETHERTYPE_IPV6);
	return WIRE_ETH_LEN + n;
}
