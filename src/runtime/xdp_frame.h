/*
 * xdp_frame.h — the Ethernet, IPv4 and UDP headers around a RoCEv2
 * packet, as the AF_XDP port (xdp_port.h, path_xdp.c) writes them into a
 * frame and reads them from one.  Pure code: no sockets, no kernel; the
 * parser takes any bytes (fuzz/fuzz_xdp_frame.c).
 *
 * What is written is what the kernel writes for softrnic's UDP socket
 * (udp_port.c): IPv4 without options, DF set and Identification 0, the
 * UDP checksum 0 (RoCEv2 over IPv4, IBTA A17.4.2), so that a packet's
 * ICRC is the same whichever of the two ports sent it.
 */
#ifndef SOFTRNIC_RUNTIME_XDP_FRAME_H
#define SOFTRNIC_RUNTIME_XDP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

#define SRT_XDP_HDR_LEN (WIRE_ETH_LEN + WIRE_IPV4_LEN + WIRE_UDP_LEN)

/* What a frame's headers say. */
struct srt_xdp_frame {
	uint8_t dst_mac[6], src_mac[6];
	uint32_t src, dst;              /* IPv4 addresses, network order */
	uint16_t sport, ip_id;
	uint8_t tos, ttl;
	uint32_t ib_off, ib_len;        /* the UDP payload: the RoCEv2 packet */
};

/* Why a frame was refused. */
enum srt_xdp_frame_err {
	SRT_XDP_FRAME_OK = 0,
	SRT_XDP_FRAME_NOT_ROCE = -1,    /* not IPv4 / UDP / port 4791 */
	SRT_XDP_FRAME_TRUNCATED = -2,   /* lengths that do not fit the frame */
	SRT_XDP_FRAME_BAD_HEADER = -3,  /* IPv4 version, options, checksum */
	SRT_XDP_FRAME_FRAGMENT = -4,    /* an IPv4 fragment */
};

/* Writes the SRT_XDP_HDR_LEN bytes of headers at f for a UDP payload of
 * ib_len bytes (the RoCEv2 packet, ICRC included) from f's fields
 * (ib_off and ib_len, ip_id are ignored: ID 0 is written). */
void srt_xdp_frame_write(uint8_t *f, const struct srt_xdp_frame *h, uint32_t ib_len);

/* Reads the headers of a frame of len bytes.  SRT_XDP_FRAME_OK and *out
 * filled (the payload lies at f + out->ib_off, out->ib_len bytes, inside
 * the frame), or a srt_xdp_frame_err.  The IPv4 header checksum is
 * checked; trailing bytes past the IP total length (Ethernet padding)
 * are ignored. */
int srt_xdp_frame_read(const uint8_t *f, size_t len, struct srt_xdp_frame *out);

/* AF_XDP's multi-buffer mode: a frame comes as a run of descriptors, each
 * a piece in its own chunk, every one but the last saying more follow
 * (XDP_PKT_CONTD).  srt_xdp_gather turns the pieces a receive peeked into
 * frames. */
struct srt_xdp_piece {
	const uint8_t *data;
	uint32_t len;
	bool more;                      /* the frame goes on in the next piece */
};

/* Where a gathered frame lies: in its piece's chunk when it had one
 * piece, else in a bounce buffer it was copied into. */
struct srt_xdp_gathered {
	const uint8_t *data;
	uint32_t len;
};

struct srt_xdp_gather_out {
	unsigned frames;                /* written to out[] */
	unsigned used;                  /* pieces taken (frames' and dropped ones') */
	unsigned multi;                 /* frames of several pieces among them */
	unsigned dropped;               /* frames longer than a bounce buffer */
};

/* Reads frames from the n pieces pc[], at most max of them, into out[];
 * a frame of several pieces is copied into bounce + i * cap (the i-th
 * frame's buffer: the caller gives max of cap bytes), one longer than cap
 * is dropped whole.  Pieces past the last whole frame read are not used
 * (a frame whose end is not among them is read when it is, or a frame
 * beyond max), except when the very first frame does not end within the
 * n pieces and full says no more could have been given (n was the most
 * the caller could read): it is longer than anything the caller takes,
 * and is dropped. */
struct srt_xdp_gather_out srt_xdp_gather(const struct srt_xdp_piece *pc, unsigned n, bool full, uint8_t *bounce,
					  size_t cap, struct srt_xdp_gathered *out, unsigned max);

#endif
