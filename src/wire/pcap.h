/*
 * pcap.h — read and write classic libpcap files (linktype Ethernet), the
 * format of the kernel captures in tests/vectors and of softrnic's own
 * capture option (runtime/capture.c, SOFTRNIC_PCAP).  Self-contained (no
 * libpcap dependency); this is the only file of wire/ that does I/O, and
 * it is used by tools, tests and that opt-in capture, never by the packet
 * path itself.
 */
#ifndef SOFTRNIC_WIRE_PCAP_H
#define SOFTRNIC_WIRE_PCAP_H

#include <stdint.h>
#include <stdio.h>

#include "wire/wire.h"

#define PCAP_LINKTYPE_ETHERNET 1u
#define PCAP_MAX_SNAPLEN 262144u

struct pcap_reader {
	FILE *f;
	int swapped;            /* file written on the other endianness */
	int nanosecond;         /* timestamps in ns (magic a1b23c4d) */
	uint32_t linktype;
	uint32_t snaplen;
};

struct pcap_record {
	uint64_t ts_ns;         /* timestamp, ns since the epoch */
	uint32_t caplen;        /* bytes in data */
	uint32_t origlen;       /* bytes on the wire */
	const uint8_t *data;    /* valid until the next pcap_read */
};

/* Returns 0, or -1 with errno set (EINVAL for a file that is not pcap). */
int pcap_open_read(struct pcap_reader *r, const char *path);
/* Returns 1 for a record, 0 at end of file, -1 on a damaged file. */
int pcap_read(struct pcap_reader *r, struct pcap_record *rec, uint8_t *buf, size_t cap);
void pcap_close_read(struct pcap_reader *r);

struct pcap_writer {
	FILE *f;
};
int pcap_open_write(struct pcap_writer *w, const char *path, uint32_t linktype);
int pcap_write(struct pcap_writer *w, uint64_t ts_ns, const uint8_t *data, uint32_t len);
/* One record whose bytes are the n pieces in order (a frame header built
 * apart from the packet, say).  Bytes in a record: 16 + their sum. */
int pcap_write_pieces(struct pcap_writer *w, uint64_t ts_ns, const struct wire_piece *pc, unsigned n);
int pcap_close_write(struct pcap_writer *w);

#endif
