/*
 * pcap.c — classic libpcap file reader and writer (the "pcap" format, not
 * pcapng).  The only part of wire/ that touches files; used by tools,
 * tests and capture, never by the packet path itself.
 *
 * File = 24-byte global header (magic, version 2.4, snaplen, linktype)
 * followed by records of a 16-byte header (seconds, micro- or nanoseconds,
 * captured length, original length) and the captured bytes.  The magic
 * tells the byte order and the timestamp unit.  We write nanosecond files
 * in host order, which tcpdump, tshark and scapy all read.
 */
#include <errno.h>
#include <string.h>

#include "wire/pcap.h"

#define MAGIC_US 0xa1b2c3d4u
#define MAGIC_NS 0xa1b23c4du
#define MAGIC_US_SWAPPED 0xd4c3b2a1u
#define MAGIC_NS_SWAPPED 0x4d3cb2a1u

static uint32_t swap32(uint32_t v)
{
	return v >> 24 | (v >> 8 & 0xff00) | (v << 8 & 0xff0000) | v << 24;
}

static uint32_t field32(const struct pcap_reader *r, const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return r->swapped ? swap32(v) : v;
}

int pcap_open_read(struct pcap_reader *r, const char *path)
{
	uint8_t hdr[24];
	memset(r, 0, sizeof(*r));
	r->f = fopen(path, "rb");
	if (!r->f)
		return -1;
	if (fread(hdr, 1, sizeof(hdr), r->f) != sizeof(hdr))
		goto not_pcap;
	uint32_t magic;
	memcpy(&magic, hdr, 4);
	switch (magic) {
	case MAGIC_US: break;
	case MAGIC_NS: r->nanosecond = 1; break;
	case MAGIC_US_SWAPPED: r->swapped = 1; break;
	case MAGIC_NS_SWAPPED: r->swapped = 1; r->nanosecond = 1; break;
	default: goto not_pcap;
	}
	r->snaplen = field32(r, hdr + 16);
	r->linktype = field32(r, hdr + 20) & 0x0fffffff;  /* top bits: FCS info */
	return 0;
not_pcap:
	fclose(r->f);
	r->f = NULL;
	errno = EINVAL;
	return -1;
}

int pcap_read(struct pcap_reader *r, struct pcap_record *rec, uint8_t *buf, size_t cap)
{
	uint8_t hdr[16];
	if (!r->f)
		return -1;
	size_t n = fread(hdr, 1, sizeof(hdr), r->f);
	if (n == 0 && feof(r->f))
		return 0;
	if (n != sizeof(hdr)) {
		errno = EIO;
		return -1;            /* a record header cut short */
	}
	uint32_t sec = field32(r, hdr), frac = field32(r, hdr + 4);
	rec->caplen = field32(r, hdr + 8);
	rec->origlen = field32(r, hdr + 12);
	if (rec->caplen > PCAP_MAX_SNAPLEN || (r->nanosecond ? frac >= 1000000000u : frac >= 1000000u)) {
		errno = EINVAL;
		return -1;
	}
	if (rec->caplen > cap) {
		errno = ENOSPC;
		return -1;
	}
	if (fread(buf, 1, rec->caplen, r->f) != rec->caplen) {
		errno = EIO;
		return -1;
	}
	rec->ts_ns = (uint64_t)sec * 1000000000u + (r->nanosecond ? frac : (uint64_t)frac * 1000u);
	rec->data = buf;
	return 1;
}

void pcap_close_read(struct pcap_reader *r)
{
	if (r->f)
		fclose(r->f);
	r->f = NULL;
}

static int put_u32s(FILE *f, const uint32_t *v, size_t count)
{
	return fwrite(v, sizeof(*v), count, f) == count ? 0 : -1;
}

int pcap_open_write(struct pcap_writer *w, const char *path, uint32_t linktype)
{
	w->f = fopen(path, "wb");
	if (!w->f)
		return -1;
	/* magic, version 2.4 (two u16 in host order), thiszone, sigfigs,
	 * snaplen, linktype */
	uint16_t ver[2] = { 2, 4 };
	uint32_t head[1] = { MAGIC_NS };
	uint32_t tail[4] = { 0, 0, PCAP_MAX_SNAPLEN, linktype };
	if (put_u32s(w->f, head, 1) || fwrite(ver, sizeof(ver), 1, w->f) != 1 || put_u32s(w->f, tail, 4)) {
		fclose(w->f);
		w->f = NULL;
		return -1;
	}
	return 0;
}

int pcap_write(struct pcap_writer *w, uint64_t ts_ns, const uint8_t *data, uint32_t len)
{
	if (!w->f || len > PCAP_MAX_SNAPLEN) {
		errno = EINVAL;
		return -1;
	}
	uint32_t rec[4] = { (uint32_t)(ts_ns / 1000000000u), (uint32_t)(ts_ns % 1000000000u), len, len };
	if (put_u32s(w->f, rec, 4) || fwrite(data, 1, len, w->f) != len)
		return -1;
	return 0;
}

int pcap_write_pieces(struct pcap_writer *w, uint64_t ts_ns, const struct wire_piece *pc, unsigned n)
{
	size_t len = 0;

	for (unsigned i = 0; i < n; i++)
		len += pc[i].len;
	if (!w->f || len > PCAP_MAX_SNAPLEN) {
		errno = EINVAL;
		return -1;
	}
	uint32_t rec[4] = { (uint32_t)(ts_ns / 1000000000u), (uint32_t)(ts_ns % 1000000000u), (uint32_t)len,
			    (uint32_t)len };
	if (put_u32s(w->f, rec, 4))
		return -1;
	for (unsigned i = 0; i < n; i++)
		if (pc[i].len && fwrite(pc[i].p, 1, pc[i].len, w->f) != pc[i].len)
			return -1;
	return 0;
}

int pcap_close_write(struct pcap_writer *w)
{
	if (!w->f)
		return 0;
	int rc = fclose(w->f);
	w->f = NULL;
	return rc ? -1 : 0;
}
