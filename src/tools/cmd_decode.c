/*
 * cmd_decode.c — `softrnic decode [-q] FILE.pcap`: print every RoCEv2
 * packet of a capture on one line and check its ICRC.
 *
 * Frames that are not RoCEv2 at all (other ethertypes, other protocols,
 * UDP to other ports) are skipped and counted.  A RoCEv2 frame that fails
 * validation prints the error instead of the decode.  The exit status is
 * 0 only if every RoCEv2 frame decoded and carried a correct ICRC, so the
 * command doubles as a capture checker in tests and CI.
 *
 * A UDP checksum that holds only the pseudo-header sum is what a capture
 * on a sending host with checksum offload shows (the NIC fills it in
 * later): such a frame is decoded and its ICRC checked as any other, and
 * the line ends in "udp-csum-partial"; it is not counted as bad.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/commands.h"
#include "wire/pcap.h"
#include "wire/wire.h"

struct decode_counts {
	unsigned long frames, ok, bad, skipped;
};

static bool is_foreign(int err)
{
	return err == WIRE_E_ETHERTYPE || err == WIRE_E_NOT_UDP || err == WIRE_E_NOT_ROCE;
}

/* Decodes a packet whose UDP checksum wire_decode_eth refused, if the
 * checksum is a partial (offload) one: from a copy with the field zeroed
 * ("not computed"), which changes nothing else, since the ICRC masks the
 * UDP checksum (IBTA A17.3.3).  pkt then points into the copy. */
static int decode_partial_csum(struct wire_pkt *pkt, bool *partial)
{
	static uint8_t copy[PCAP_MAX_SNAPLEN];
	if (wire_udp_csum_state(pkt) != WIRE_UDP_CSUM_PARTIAL || pkt->ip_len > sizeof(copy))
		return WIRE_E_UDP_CSUM;
	size_t csum_at = (pkt->ip.version == 4 ? WIRE_IPV4_LEN : WIRE_IPV6_LEN) + 6;
	uint16_t csum = pkt->udp.csum;
	size_t len = pkt->ip_len;
	memcpy(copy, pkt->ip_start, len);
	copy[csum_at] = copy[csum_at + 1] = 0;
	int err = wire_decode_ip(copy, len, false, pkt);
	pkt->udp.csum = csum;
	*partial = err == WIRE_OK;
	return err;
}

static void decode_frame(unsigned long frame_no, const struct pcap_record *rec, bool quiet, struct decode_counts *c)
{
	struct wire_pkt pkt;
	char line[512];
	bool partial = false;
	int err = wire_decode_eth(rec->data, rec->caplen, false, &pkt);
	if (err == WIRE_E_UDP_CSUM)
		err = decode_partial_csum(&pkt, &partial);
	if (is_foreign(err)) {
		c->skipped++;
		return;
	}
	if (err) {
		c->bad++;
		printf("%lu malformed %s (%s)\n", frame_no, wire_err_name(err), wire_strerror(err));
		return;
	}
	bool icrc_ok = wire_icrc_ip(pkt.ip_start, pkt.ip_len - WIRE_ICRC_LEN) == pkt.ib.icrc;
	if (icrc_ok)
		c->ok++;
	else
		c->bad++;
	if (quiet && icrc_ok)
		return;
	wire_format_pkt(&pkt, line, sizeof(line));
	printf("%lu %s %s%s\n", frame_no, line, icrc_ok ? "icrc-ok" : "icrc-BAD", partial ? " udp-csum-partial" : "");
}

int cmd_decode(const struct cli_args *a)
{
	bool quiet = cli_flag(a, "-q");
	const char *path = a->argv[0];
	struct pcap_reader r;
	if (pcap_open_read(&r, path) < 0) {
		fprintf(stderr, "softrnic decode: %s: %s\n", path,
			errno == EINVAL ? "not a pcap file" : strerror(errno));
		return 1;
	}
	if (r.linktype != PCAP_LINKTYPE_ETHERNET) {
		fprintf(stderr, "softrnic decode: %s: linktype %u is not Ethernet\n", path, r.linktype);
		pcap_close_read(&r);
		return 1;
	}

	static uint8_t buf[PCAP_MAX_SNAPLEN];
	struct decode_counts c = { 0 };
	struct pcap_record rec;
	int rc;
	while ((rc = pcap_read(&r, &rec, buf, sizeof(buf))) == 1)
		decode_frame(++c.frames, &rec, quiet, &c);
	pcap_close_read(&r);
	if (rc < 0)
		fprintf(stderr, "softrnic decode: %s: damaged record after frame %lu\n", path, c.frames);

	printf("summary: frames %lu, packets %lu, ok %lu, bad %lu, skipped %lu\n",
	       c.frames, c.ok + c.bad, c.ok, c.bad, c.skipped);
	return (c.bad || rc < 0) ? 1 : 0;
}
