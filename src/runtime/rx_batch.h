/*
 * rx_batch.h — a batch of received packets, as every path hands them to
 * the device's receive path (path.h): where each packet lies, what its IP
 * and UDP headers said, and for a host-local message its payload's
 * description (local_path.h).  Valid until the path's recv_done.
 */
#ifndef SOFTRNIC_RUNTIME_RX_BATCH_H
#define SOFTRNIC_RUNTIME_RX_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rnic/rnic.h"
#include "wire/wire.h"

struct srt_local_remote;

/* A batch of received packets.  Without GRO: up to SRT_RX_BATCH
 * datagrams of up to SRT_RX_BUFSZ bytes.  With GRO: up to SRT_RX_GRO_MSGS
 * datagrams of up to 64 KiB, each a run of segments (packets) that a
 * sender's GSO made, or the kernel coalesced; SRT_RX_MAX_SEGS per
 * datagram at most (the kernel's own GRO limit), more are dropped. */
#define SRT_RX_BATCH 16
#define SRT_RX_BUFSZ (WIRE_MAX_IB_PACKET + 64)
#define SRT_RX_GRO_MSGS 4
#define SRT_RX_GRO_MSG_BYTES 65536u
#define SRT_RX_BUF_BYTES (SRT_RX_GRO_MSGS * SRT_RX_GRO_MSG_BYTES)
#define SRT_RX_MAX_SEGS 64
#define SRT_RX_PKTS (SRT_RX_GRO_MSGS * SRT_RX_MAX_SEGS)
struct srt_rx_pkt {
	size_t len;
	bool truncated;                 /* larger than SRT_RX_BUFSZ        */
	struct rnic_gid src;            /* IPv4-mapped for IPv4            */
	struct rnic_gid dst;            /* IP destination (IP_PKTINFO): our
	                                   address or a multicast group    */
	uint16_t sport;
	uint8_t tos;                    /* DSCP | ECN as received (IPv6: the
	                                   traffic class)                  */
	uint8_t ttl;                    /* IP TTL (IPv6: hop limit)        */
	uint16_t seg_index;             /* position in a GRO'd datagram: the
	                                   IPv4 ID a GSO sender gave it    */
	bool no_icrc;                   /* from a local ring, ICRC not computed
	                                   (local_path.h)                  */
	/* A message-path packet from a local ring (local_path.h): its
	 * payload's description; NULL for every other packet. */
	const struct srt_local_remote *remote;
	uint32_t remote_nseg;           /* its piece count, as checked */
	/* Or the payload itself, carried in the ring entry (an inline
	 * message-path entry: remote is set too, and this is not NULL). */
	const uint8_t *remote_inline;
	uint32_t remote_inline_len;     /* its length, as checked */
	bool alone;                     /* the sender's rnic_tx.alone (a ring's
	                                   packet only) */
	/* Not a packet: a ring's fast message or its answer (SRT_RX_FAST,
	 * SRT_RX_ANSWER; local_path.h), 0 for a packet. */
	uint8_t ring_kind;
	uint8_t *data;
};
#define SRT_RX_FAST 1u
#define SRT_RX_ANSWER 2u
struct srt_rx_batch {
	uint32_t dropped;               /* segments past SRT_RX_MAX_SEGS   */
	/* The last srt_udp_recv read fewer datagrams than it asked for: the
	 * socket's queue was empty when it returned (another read now would
	 * most likely be an empty system call). */
	bool drained;
	struct srt_rx_pkt pkt[SRT_RX_PKTS];
	uint8_t buf[SRT_RX_BUF_BYTES];
};

#endif
