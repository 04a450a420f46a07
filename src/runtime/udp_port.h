/*
 * udp_port.h — the runtime's UDP socket: choosing and binding the address,
 * sending rnic packets (with their ICRC) and receiving batches.
 *
 * Used by the device (device.c) and by `softrnic devices` (to say which
 * address a new process would get).
 */
#ifndef SOFTRNIC_RUNTIME_UDP_PORT_H
#define SOFTRNIC_RUNTIME_UDP_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <netinet/in.h>
#include <net/if.h>
#include <sys/socket.h>

#include "rnic/rnic.h"
#include "runtime/host_share.h"
#include "runtime/local_path.h"

/* The TTL every packet leaves with, unless the rnic says otherwise
 * (rnic_tx.ttl); the ICRC masks it anyway. */
#define SRT_DEFAULT_TTL 64

/* How the address was chosen (for messages). */
enum srt_addr_source {
	SRT_ADDR_LOOPBACK,      /* no configuration: first free 127.0.0.N */
	SRT_ADDR_ENV_ADDR,      /* SOFTRNIC_ADDR                          */
	SRT_ADDR_ENV_IFACE,     /* SOFTRNIC_IFACE                         */
};

struct srt_udp {
	int fd;
	/* The bound address.  IPv4: addr, and gid is ::ffff:addr.  IPv6
	 * (v6): gid is the address, addr is 0, and what only IPv4 has here
	 * is off: the host-local path, the shared host address, multicast
	 * and the link monitor (IPv6 packets go by this socket). */
	struct in_addr addr;
	bool v6;
	struct rnic_gid gid;
	uint32_t scope_id;              /* IPv6 link-local: the interface  */
	enum srt_addr_source source;
	char ifname[IF_NAMESIZE];       /* interface owning addr, or ""   */
	unsigned if_mtu;                /* its MTU, 0 if unknown          */
	enum ibv_mtu active_mtu;        /* largest IB MTU that fits       */
	uint64_t tx_errors;             /* sendmsg failures (packet lost) */
	uint64_t tx_unroutable;         /* destination GID not of our family */
	uint64_t tx_mr_fault;           /* packets not sent: a page of their payload
	                                   by reference faulted (mem_guard.h) */
	/* Batching (srt_udp_queue / srt_udp_flush).  gso: runs of equal-sized
	 * packets to one destination leave as one UDP GSO send; gro: the
	 * socket takes such runs whole (UDP_GRO).  Both on unless the kernel
	 * lacks them or SOFTRNIC_GSO=0. */
	bool gso, gro;
	struct srt_tx_queue *txq;       /* NULL: every packet sent at once */
	/* Plain ACKs the queue held that left just ahead of a message-path
	 * packet (udp_send.c, send_message): they rode with it.  The
	 * runtime takes the count at unlock (send_path.c). */
	uint64_t acks_before_message;
	uint64_t tx_sends;              /* send system-call messages       */
	uint64_t tx_gso_sends;          /* ... of which carried > 1 packet */
	/* Payloads by reference (rnic_io.tx_payload_ref, rnic_tx.payload):
	 * the queue holds only the headers, pad and ICRC of such packets and
	 * the flush sends the payload straight from where it lies, so each
	 * payload byte is copied once (into the kernel) instead of twice.
	 * Opt-in for the socket: SOFTRNIC_TX_COPY=0 (udp_port.c says why it
	 * is off).  With a local path the rnic makes them anyway, for the
	 * ring; srt_udp_queue then copies the payloads of packets that leave
	 * by the socket, unless this is set. */
	bool tx_payload_ref;
	/* UDP source ports (udp_port.c, "UDP source port"): packets leave
	 * from a socket bound to <addr>:tx->sport, created on first use and
	 * kept until srt_udp_close.  sport_fixed (SOFTRNIC_SPORT=fixed):
	 * everything leaves from fd, source port 4791. */
	bool sport_fixed;
	struct srt_sport_map *sports;   /* NULL until the first such send  */
	unsigned sport_max_sockets;     /* cap on the sockets (fd budget)  */
	unsigned sport_sockets;         /* sockets open now                */
	uint64_t tx_sport_fallbacks;    /* source ports sent from 4791
	                                   instead: bind failed (port taken,
	                                   EADDRINUSE) or cap reached      */
	/* SOFTRNIC_PCAP (capture.h): every packet a send accepted is
	 * written here, each GSO segment as its own frame.  Set and closed
	 * by the owner (device.c); NULL: off. */
	struct srt_capture *capture;
	/* A shared host address (host_share.h): conn >= 0 when fd came from
	 * softrnic-hostd; share.slot then picks our QPN and comm ID range. */
	struct srt_host_share share;
	/* The host-local path (local_path.h): packets for a softrnic device
	 * on this host go through its ring instead of this socket.  Set and
	 * closed by the owner (device.c); NULL: UDP only. */
	struct srt_local *local;
};

/* Bind UDP 4791 as configured by the environment (see runtime.h).  Returns
 * 0, or an errno value with a one-line explanation in err. */
int srt_udp_open(struct srt_udp *u, char *err, size_t errlen);
void srt_udp_close(struct srt_udp *u);

/* Our address as a GID: IPv4-mapped for IPv4, the address for IPv6. */
void srt_udp_gid(const struct srt_udp *u, struct rnic_gid *gid);
/* The socket address of `gid`, port `port`, in our family: its length,
 * or 0 when the GID is of the other family (IPv4-mapped on an IPv6 port
 * or the reverse: not routable from here). */
union srt_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};
socklen_t srt_udp_sockaddr(const struct srt_udp *u, const struct rnic_gid *gid, uint16_t port,
			   union srt_sockaddr *ss);
/* The IP header the kernel builds for a packet of ours to `dst` (for its
 * ICRC): IPv4 with DF, ID ip_id; IPv6 (where the ICRC masks traffic
 * class, flow label and hop limit, and there is no ID). */
void srt_udp_ip_header(const struct srt_udp *u, const struct rnic_gid *dst, uint8_t tos, uint8_t ttl,
		       uint16_t ip_id, struct wire_ip *ip);
/* ::ffff:a.b.c.d -> true and the address; anything else -> false. */
bool srt_gid_to_ipv4(const struct rnic_gid *gid, struct in_addr *addr);
/* a.b.c.d -> ::ffff:a.b.c.d.  Here, not in udp_port.c: the host-local
 * ring's reader (local_path.c) needs it, and its fuzz target is built
 * without the UDP port. */
static inline void srt_ipv4_to_gid(struct in_addr addr, struct rnic_gid *gid)
{
	memset(gid->raw, 0, sizeof(gid->raw));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &addr.s_addr, 4);
}

/* Send one packet: fills in the ICRC for the IP header the kernel will
 * build.  Never blocks; returns 0 or an errno (the packet is then lost and
 * counted in tx_errors; RC retransmission recovers it). */
int srt_udp_send(struct srt_udp *u, const struct rnic_tx *tx);

/* Queue one packet for the next srt_udp_flush (copied: tx->ib is only
 * valid during the rnic's call; a payload by reference, tx->payload, is
 * not copied: it must stay valid until the flush).  Flushes first when
 * the queue is full.
 * Errors as for srt_udp_send. */
int srt_udp_queue(struct srt_udp *u, const struct rnic_tx *tx);
/* Room for the next packet in the queue (flushing first if full), so the
 * rnic can build it in place (rnic_io.tx_buffer): srt_udp_queue then
 * takes it without a copy.  NULL if this port does not batch. */
uint8_t *srt_udp_tx_buffer(struct srt_udp *u);
/* Send everything queued: ICRCs computed, equal-sized runs to one
 * destination coalesced into UDP GSO sends, one sendmmsg per source-port
 * socket (each flow keeps its order).  Returns the
 * number of packets lost (counted in tx_errors). */
unsigned srt_udp_flush(struct srt_udp *u);

/* The socket that sends packets with UDP source port `sport` (created
 * on first use) and, in *wire_sport, the port they really carry: sport,
 * or 4791 (the main socket, fd) when sport is 0 (no preference),
 * SOFTRNIC_SPORT=fixed is set, or no socket could be bound to it (counted
 * in tx_sport_fallbacks once per port).  Never fails. */
int srt_udp_sport_socket(struct srt_udp *u, uint16_t sport, uint16_t *wire_sport);

/* The transmit queue: packets stored back to back with their ICRC room. */
#define SRT_TX_MAX_PKTS 192
#define SRT_TX_BUF_BYTES (SRT_TX_MAX_PKTS * (WIRE_MAX_IB_PACKET + 8))
struct srt_tx_slot {
	struct rnic_gid dst;
	int fd;                         /* srt_udp_sport_socket            */
	uint16_t sport;                 /* the source port it will carry   */
	uint8_t tos, ttl;
	bool plain_ack;                 /* sent after the socket's other packets */
	bool alone;                     /* rnic_tx.alone: told to a local peer */
	uint32_t off, len;              /* in buf; len includes the ICRC  */
	/* Payload by reference (rnic_tx.payload), payload_len > 0: len is
	 * the whole packet on the wire; buf holds its hdr_len header bytes
	 * and then the pad and ICRC, the payload stays at `payload`. */
	const uint8_t *payload;
	uint32_t payload_len;
	uint32_t hdr_len;
};
struct srt_tx_queue {
	unsigned n;
	unsigned not_acks;              /* queued packets other than plain ACKs */
	size_t used;
	struct srt_tx_slot slot[SRT_TX_MAX_PKTS];
	uint8_t buf[SRT_TX_BUF_BYTES];
};
static inline bool srt_udp_pending(const struct srt_udp *u)
{
	return u->txq && u->txq->n;
}
/* Something is queued and all of it is plain ACKs (opcode Acknowledge,
 * AETH syndrome ACK): packets that may wait a little for company
 * (send_path.c, "ACKs ride with sends"). */
static inline bool srt_udp_only_acks(const struct srt_udp *u)
{
	return u->txq && u->txq->n && !u->txq->not_acks;
}

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
	uint8_t *data;
};
struct srt_rx_batch {
	uint32_t dropped;               /* segments past SRT_RX_MAX_SEGS   */
	/* The last srt_udp_recv read fewer datagrams than it asked for: the
	 * socket's queue was empty when it returned (another read now would
	 * most likely be an empty system call). */
	bool drained;
	struct srt_rx_pkt pkt[SRT_RX_PKTS];
	uint8_t buf[SRT_RX_BUF_BYTES];
};

/* Receive what is waiting without blocking, split into packets.  Returns
 * the number of packets (0 if none are waiting) or -errno. */
int srt_udp_recv(struct srt_udp *u, struct srt_rx_batch *b);
/* The receive options srt_udp_recv relies on (TOS, TTL, destination
 * address); also used for the multicast sockets (mcast.c).  0 or errno. */
int srt_udp_rx_options(int fd);
/* The same for an IPv6 socket (traffic class, hop limit, destination),
 * which also takes datagrams with UDP checksum 0, as rxe sends them. */
int srt_udp_rx_options6(int fd);
/* The interface of an IPv6 port's address: its scope for a link-local
 * one, else the interface that holds it; 0 if unknown (the kernel then
 * chooses by route). */
unsigned srt_udp_ifindex(const struct srt_udp *u);

/* socket(2) by the system call itself: the device's sockets are its own,
 * and a socket library preloaded into the program (rdma-core's
 * librspreload.so, which makes every AF_INET socket an rsocket) must not
 * take them — an rsocket made of softrnic's own port would need the
 * device that is being made, under the device lock. */
int srt_udp_socket(int family);

#endif
