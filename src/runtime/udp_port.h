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
#include "runtime/path.h"
#include "runtime/rx_batch.h"
#include "runtime/tx_queue.h"

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
	/* Batching (srt_udp_out_add / srt_udp_out_flush).  gso: runs of
	 * equal-sized packets to one destination leave as one UDP GSO send;
	 * gro: the socket takes such runs whole (UDP_GRO).  Both on unless
	 * the kernel lacks them or SOFTRNIC_GSO=0. */
	bool gso, gro;
	struct srt_udp_out *out;        /* handed over, sent at the next flush */
	unsigned nout;
	/* The port's own transmit queue, for a program that queues rnic_tx
	 * packets here itself (srt_udp_queue); made on first use. */
	struct srt_tx_queue *txq;
	uint64_t tx_packets;            /* packets a send call accepted    */
	uint64_t tx_sends;              /* send system-call messages       */
	uint64_t tx_gso_sends;          /* ... of which carried > 1 packet */
	/* Payloads by reference (rnic_tx.payload) are sent from where they
	 * lie only with SOFTRNIC_TX_COPY=0 (udp_send.c says why); otherwise
	 * the port asks for them to be copied into the queue
	 * (SRT_PATH_WANTS_COPY). */
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
	/* Sees every packet a send accepted, each GSO segment as its own
	 * frame (path.h); set by the owner, packet NULL: none. */
	struct srt_path_tap tap;
	/* A shared host address (host_share.h): conn >= 0 when fd came from
	 * softrnic-hostd; share.slot then picks our QPN and comm ID range. */
	struct srt_host_share share;
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

/* Turn UDP GRO off on the socket (the AF_XDP port's generic hook must
 * see packets one by one, paths.c). */
void srt_udp_no_gro(struct srt_udp *u);

/* Send one packet now: fills in the ICRC for the IP header the kernel
 * will build.  Never blocks; returns 0 or an errno (the packet is then
 * lost and counted in tx_errors; RC retransmission recovers it). */
int srt_udp_send(struct srt_udp *u, const struct rnic_tx *tx);

/* One packet for the next srt_udp_out_flush: pieces up to its ICRC and
 * its 4 ICRC bytes (filled at flush), which must stay valid until then.
 * EINVAL (counted in tx_unroutable): not of our family.  Flushes first
 * when SRT_TX_MAX_PKTS wait. */
struct srt_udp_out {
	struct rnic_gid dst;
	int fd;                         /* srt_udp_sport_socket            */
	uint16_t sport;                 /* the source port it will carry   */
	uint8_t tos, ttl;
	bool plain_ack;                 /* sent after the socket's other packets */
	uint8_t npc;
	struct wire_piece pc[3];        /* a second piece: payload by reference */
	uint8_t *icrc;
	uint32_t len;                   /* on the wire, ICRC included      */
};
int srt_udp_out_add(struct srt_udp *u, const struct srt_tx_meta *m, const struct wire_piece *pc, unsigned npc,
		    uint8_t *icrc);
/* Send everything handed over: ICRCs computed, equal-sized runs to one
 * destination coalesced into UDP GSO sends, one sendmmsg per source-port
 * socket (each flow keeps its order).  Returns the number of packets lost
 * (counted in tx_errors). */
unsigned srt_udp_out_flush(struct srt_udp *u);

/* The port's own queue (a program of its own, a test): queue one packet
 * (copied: tx->ib is only valid during the rnic's call; a payload by
 * reference, tx->payload, is copied unless SOFTRNIC_TX_COPY=0, then it
 * must stay valid until the flush); room to build the next in place
 * (srt_udp_queue then takes it without a copy); send them all.  Errors
 * as for srt_udp_send. */
int srt_udp_queue(struct srt_udp *u, const struct rnic_tx *tx);
uint8_t *srt_udp_tx_buffer(struct srt_udp *u);
unsigned srt_udp_flush(struct srt_udp *u);
/* Something queued or handed over waits for a flush. */
bool srt_udp_pending(const struct srt_udp *u);

/* The socket that sends packets with UDP source port `sport` (created
 * on first use) and, in *wire_sport, the port they really carry: sport,
 * or 4791 (the main socket, fd) when sport is 0 (no preference),
 * SOFTRNIC_SPORT=fixed is set, or no socket could be bound to it (counted
 * in tx_sport_fallbacks once per port).  Never fails. */
int srt_udp_sport_socket(struct srt_udp *u, uint16_t sport, uint16_t *wire_sport);

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
