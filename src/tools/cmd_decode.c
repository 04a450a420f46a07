/*
 * cmd_decode.c — `softrnic decode [-q] FILE.pcap`: print every RoCEv2
 * packet of a capture on one line and check its ICRC.
 *
 * Frames that are not RoCEv2 at all (other ethertypes, other protocols,
 * UDP to other ports) are skipped and counted.  A RoCEv2 frame that fails
 * validation prints the error instead of the decode.  The exit status is
 * 0 only if every RoCEv2 frame decoded and carried a correct ICRC, so the
 * command doubles as a capture checker in tests and CI.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

static void decode_frame(unsigned long frame_no, const struct pcap_record *rec, bool quiet, struct decode_counts *c)
{
	struct wire_pkt pkt;
	char line[512];
	int err = wire_decode_eth(rec->data, rec->caplen, false, &pkt);
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
	printf("%lu %s %s\n", frame_no, line, icrc_ok ? "icrc-ok" : "icrc-BAD");
}

static void decode_usage(void)
{
	fprintf(stderr, "usage: softrnic decode [-q] FILE.pcap\n"
			"  -q  print only malformed packets and bad ICRCs, then the summary\n");
}

int cmd_decode(int argc, char **argv)
{
	bool quiet = false;
	int opt;
	optind = 1;
	while ((opt = getopt(argc, argv, "qh")) != -1) {
		if (opt == 'q') {
			quiet = true;
		} else {
			decode_usage();
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind != argc - 1) {
		decode_usage();
		return 2;
	}
	const char *path = argv[optind];
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
