/*
 * path.h — the contract every way a packet can leave and arrive
 * implements.  A device has a set of paths (paths.h), in order of
 * preference; paths.c is the one place that chooses the path of a QP and
 * of each packet, and the device, its progress loop and its receive path
 * talk to the set, never to a path by name.
 *
 * The paths:
 *   udp      (path_udp.c, udp_port.h)      RoCEv2 datagrams through the
 *            kernel: any destination of the port's family;
 *   ring     (path_ring.c, local_path.h)   a softrnic device on this host:
 *            its packets as entries of the peer's shared-memory ring;
 *   message  (path_message.c, local_path.h) an RC QP whose peer is on this
 *            host: each message as one ring entry whose payload the peer
 *            reads from our memory (or carried in the entry).
 *
 * A packet is handed over as pieces (its headers and payload as they lie,
 * tx_queue.h) with its metadata; the path computes the ICRC where its
 * receiver checks it (needs_icrc), holds it back for a batch if it likes,
 * and sends at flush at the latest.  What arrives comes as a batch of
 * packets (srt_rx_batch) that stays valid until recv_done.  A path that
 * has nothing of a kind leaves the operation NULL.  tests/runtime/
 * test_path_contract.c runs one table of checks against every path.
 */
#ifndef SOFTRNIC_RUNTIME_PATH_H
#define SOFTRNIC_RUNTIME_PATH_H

#include <stdbool.h>
#include <stdint.h>

#include "rnic/rnic.h"
#include "runtime/capture.h"
#include "wire/wire.h"

struct srt_rx_batch;

/* A packet's metadata: what its IP and UDP headers say. */
struct srt_tx_meta {
	struct rnic_gid dst;
	uint16_t sport;                 /* the flow's source port: 0, none chosen */
	uint8_t tos, ttl;
	bool plain_ack;                 /* may go after the path's other packets */
	bool alone;                     /* rnic_tx.alone, told to a local peer */
};

/* What every path counts; each fills what it has (the rest stays 0). */
struct srt_path_stats {
	uint64_t tx_packets, rx_packets;
	uint64_t tx_errors;             /* lost on the way out (a full socket buffer) */
	uint64_t tx_dropped;            /* no room at the destination (a full ring) */
	uint64_t tx_unroutable;
	uint64_t tx_mr_fault;           /* not sent: a page of its payload faulted */
	uint64_t tx_sends, tx_gso_sends;        /* system calls that sent */
	uint64_t tx_inline;             /* message payloads carried in the entry */
	uint64_t rx_broken;             /* input the path could not parse */
	uint64_t tx_chunked, rx_chunked;        /* frames in several chunks (AF_XDP multi-buffer) */
	uint64_t rx_lost;               /* dropped by the kernel before we saw them (the
	                                   XDP socket's full rings, bad descriptors) */
	uint64_t doorbells;             /* wake-ups sent to sleeping peers */
	uint64_t sport_fallbacks;
	unsigned sport_sockets;
};

/* A tap sees every packet a path sent, as it left (SOFTRNIC_PCAP). */
struct srt_path_tap {
	void (*packet)(void *ctx, const struct srt_capture_hdr *h, const struct wire_piece *pc, unsigned n);
	void *ctx;
};

struct srt_path;
struct srt_path_ops {
	const char *name;
	/* A handle for sending to dst (bth: the packet's BTH, for its
	 * destination QPN), or NULL: this path does not carry it.  fresh:
	 * look again whatever a cache holds.  Valid until the next route or
	 * flush. */
	void *(*route)(struct srt_path *p, const struct rnic_gid *dst, const uint8_t *bth, bool fresh);
	/* Does that destination check ICRCs?  If not, send may carry packets
	 * whose ICRC bytes were never computed. */
	bool (*needs_icrc)(struct srt_path *p, void *dest);
	/* One packet: pieces up to its ICRC, then `icrc`, 4 writable bytes
	 * (the path stores the ICRC there if it needs one).  The pieces stay
	 * valid until flush.  0, or an errno: EFAULT, a piece faulted
	 * (region memory, mem_guard.h), nothing sent. */
	int (*send)(struct srt_path *p, void *dest, const struct srt_tx_meta *m, const struct wire_piece *pc,
		    unsigned npc, uint8_t *icrc);
	/* A whole message: `hdr` its headers with ICRC room, the payload's
	 * pieces described, not copied (rnic_tx.payload_vec). */
	int (*send_message)(struct srt_path *p, void *dest, const struct srt_tx_meta *m, const uint8_t *hdr,
			    uint32_t hdr_len, const struct wire_piece *vec, unsigned nvec);
	/* At connect: may whole messages go to dest?  The smallest message
	 * worth sending whole (rnic_qp_set_message_path), or 0: no. */
	uint32_t (*message_min)(struct srt_path *p, void *dest);
	/* Everything handed over leaves now.  Returns the packets lost. */
	unsigned (*flush)(struct srt_path *p);
	/* Fills the batch with what waits (without blocking); the number of
	 * packets, or -errno.  They stay valid until recv_done. */
	int (*recv)(struct srt_path *p, struct srt_rx_batch *b);
	void (*recv_done)(struct srt_path *p);
	/* Without the lock: does something wait to be received? */
	bool (*pending)(const struct srt_path *p);
	/* A descriptor that becomes readable when packets arrive, or -1. */
	int (*wake_fd)(const struct srt_path *p);
	/* The receiver is about to sleep (true) or woke (false).  On
	 * sleeping, false: packets wait already, do not sleep. */
	bool (*arm)(struct srt_path *p, bool sleeping);
	void (*stats)(const struct srt_path *p, struct srt_path_stats *s);
	void (*close)(struct srt_path *p);
};

/* Properties of a path the set's policies read. */
#define SRT_PATH_RECV_SYSCALL 1u        /* a receive is a system call */
#define SRT_PATH_WANTS_COPY 2u          /* a payload by reference is better copied
                                           into the queue first (udp_send.c) */

struct srt_path {
	const struct srt_path_ops *ops;
	unsigned flags;
	struct srt_path_tap tap;        /* set by the device; packet NULL: none */
};

#endif
