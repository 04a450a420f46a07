/*
 * capture.h — SOFTRNIC_PCAP=FILE: the process writes every RoCEv2 packet
 * its device sends and receives to a pcap file, in the order it sent and
 * received them, as the Ethernet/IPv4/UDP frames that were on the wire:
 * a capture without root, without tcpdump, and without the GSO runs that
 * a capture on lo shows as one large datagram (docs/capture_and_faults.md).
 *
 * Where it sits: udp_port.c calls srt_capture_packet for each packet a
 * send system call accepted (each segment of a UDP GSO send on its own,
 * with the IPv4 ID the kernel gives it), receive_path.c for each packet it
 * hands to the ICRC check and the transport (after SOFTRNIC_FAULTS, so
 * the capture shows what the transport was given).  The capture has its
 * own lock, so any thread may write; in practice every caller holds the
 * device lock already and the capture's is never contended.
 *
 * Frames: IPv4 header as Linux builds it for our sockets (udp_port.c,
 * top): version 4, IHL 5, the TOS byte sent or received, ID as sent
 * (0, or k for segment k of a GSO send), DF, TTL as sent or received,
 * protocol UDP, the header checksum computed.  UDP: ports, length and a
 * checksum that is the real one over the datagram when the socket sends
 * checksums (SOFTRNIC_GSO on: the kernel, or the NIC, fills it in), 0
 * when it does not (SOFTRNIC_GSO=0, as kernel rxe).  Ethernet: fabricated
 * (a UDP socket never sees one): locally administered unicast MACs
 * 02:00:a:b:c:d made from the IPv4 address a.b.c.d, and for a multicast
 * destination the RFC 1112 group MAC 01:00:5e + the address's low 23
 * bits; ethertype IPv4.
 */
#ifndef SOFTRNIC_RUNTIME_CAPTURE_H
#define SOFTRNIC_RUNTIME_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>

#include "wire/wire.h"

/* Default SOFTRNIC_PCAP_LIMIT: 100 MiB. */
#define SRT_CAPTURE_DEFAULT_LIMIT (100ull << 20)

struct srt_capture;

/* The IP and UDP fields of one packet as they were on the wire. */
struct srt_capture_hdr {
	uint8_t src[16], dst[16];       /* as GIDs: IPv4-mapped for IPv4 */
	uint16_t sport;                 /* destination port: always 4791 */
	uint16_t ip_id;
	uint8_t tos, ttl;
};

struct srt_capture_stats {
	uint64_t packets;               /* frames written */
	uint64_t dropped;               /* not written: past the limit, or
	                                   the file could not be written */
};

/* Open the capture SOFTRNIC_PCAP names ("%p" replaced by the pid), with
 * the size limit SOFTRNIC_PCAP_LIMIT (bytes, optional suffix K, M or G
 * for KiB, MiB, GiB; 0 = none; default SRT_CAPTURE_DEFAULT_LIMIT).
 * udp_csum: the device's sockets send UDP checksums (capture.h, top).
 * SOFTRNIC_PCAP unset or empty: 0 and *out NULL.  Otherwise 0 and the
 * capture, or an errno value and a one-line explanation in err (a bad
 * limit, a file that cannot be created).  The process's first capture
 * creates the file, mode 0600, and refuses one that exists (EEXIST)
 * unless SOFTRNIC_PCAP_OVERWRITE=1, which truncates it if it is a regular
 * file of ours; a link at the name is never followed (capture.c).  A
 * later capture of the process to the same file (the program closed its
 * device and opened another) continues it. */
int srt_capture_from_env(struct srt_capture **out, bool udp_csum, char *err, size_t errlen);
/* Flush and close (NULL: nothing). */
void srt_capture_close(struct srt_capture *c);
/* In a child of fork() that opens a device of its own: close the
 * inherited file without writing the parent's buffered frames, and leave
 * the parent's memory alone (as device.c does with the sockets). */
void srt_capture_close_inherited(struct srt_capture *c);

/* Write one packet: hdr and the UDP payload (BTH .. ICRC) as n pieces
 * in order.  Past the limit it only counts the packet as dropped (once,
 * a line on stderr says so). */
void srt_capture_packet(struct srt_capture *c, const struct srt_capture_hdr *hdr, const struct wire_piece *pc,
			unsigned n);
/* Push buffered frames to the file (the progress thread does so with
 * each stats refresh, so a crash loses at most that much). */
void srt_capture_flush(struct srt_capture *c);
void srt_capture_stats(struct srt_capture *c, struct srt_capture_stats *out);
/* The file's name, after %p. */
const char *srt_capture_path(const struct srt_capture *c);

#endif
