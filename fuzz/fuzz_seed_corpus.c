/*
 * fuzz_seed_corpus.c — splits pcap captures into seed corpora for the
 * fuzz targets: whole frames (eth/), IP packets prefixed by the
 * verify-ICRC byte (ip/), and UDP payloads (ib/).  Used by fuzz/run.sh.
 *
 * usage: fuzz_seed_corpus OUTDIR FILE.pcap...
 */
#include <stdio.h>

#include "wire/pcap.h"
#include "wire/wire.h"

static int write_file(const char *dir, const char *kind, unsigned long n, const uint8_t *pre, size_t pre_len,
		      const uint8_t *d, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s/seed-%06lu", dir, kind, n);
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		return -1;
	}
	fwrite(pre, 1, pre_len, f);
	fwrite(d, 1, len, f);
	return fclose(f);
}

int main(int argc, char **argv)
{
	static uint8_t buf[PCAP_MAX_SNAPLEN];
	unsigned long n = 0;
	if (argc < 3) {
		fprintf(stderr, "usage: %s OUTDIR FILE.pcap...\n", argv[0]);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		struct pcap_reader r;
		struct pcap_record rec;
		if (pcap_open_read(&r, argv[i]) < 0) {
			perror(argv[i]);
			return 1;
		}
		while (pcap_read(&r, &rec, buf, sizeof(buf)) == 1) {
			struct wire_pkt pkt;
			if (wire_decode_eth(rec.data, rec.caplen, true, &pkt) != WIRE_OK)
				continue;
			n++;
			uint8_t verify = (uint8_t)(n & 1);
			size_t hl = pkt.ip.version == 4 ? WIRE_IPV4_LEN : WIRE_IPV6_LEN;
			if (write_file(argv[1], "eth", n, NULL, 0, rec.data, rec.caplen) ||
			    write_file(argv[1], "ip", n, &verify, 1, pkt.ip_start, pkt.ip_len) ||
			    write_file(argv[1], "ib", n, NULL, 0, pkt.ip_start + hl + WIRE_UDP_LEN,
				       pkt.ip_len - hl - WIRE_UDP_LEN)) {
				pcap_close_read(&r);
				return 1;
			}
		}
		pcap_close_read(&r);
	}
	printf("%lu seeds\n", n);
	return 0;
}
