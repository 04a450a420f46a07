/*
 * udp_port.h — the runtime's UDP socket: choosing and binding the address,
 * sending rnic packets (with their ICRC) and receiving batches.
 *
 * Used by runtime.c (the device) and by `softrnic devices` (to say which
 * address a new process would get).
 */
#ifndef SOFTRNIC_RUNTIME_UDP_PORT_H
#define SOFTRNIC_RUNTIME_UDP_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>
#include <net/if.h>

#include "rnic/rnic.h"

/* How the address was chosen (for messages). */
enum srt_addr_source {
	SRT_ADDR_LOOPBACK,      /* no configuration: first free 127.0.0.N */
	SRT_ADDR_ENV_ADDR,      /* SOFTRNIC_ADDR                          */
	SRT_ADDR_ENV_IFACE,     /* SOFTRNIC_IFACE                         */
};

struct srt_udp {
	int fd;
	struct in_addr addr;            /* bound address                  */
	enum srt_addr_source source;
	char ifname[IF_NAMESIZE];       /* interface owning addr, or ""   */
	unsigned if_mtu;                /* its MTU, 0 if unknown          */
	enum ibv_mtu active_mtu;        /* largest IB MTU that fits       */
	uint64_t tx_errors;             /* sendmsg failures (packet lost) */
	uint64_t tx_unroutable;         /* destination GID not IPv4       */
};

/* Bind UDP 4791 as configured by the environment (see runtime.h).  Returns
 * 0, or an errno value with a one-line explanation in err. */
int srt_udp_open(struct srt_udp *u, char *err, size_t errlen);
void srt_udp_close(struct srt_udp *u);

/* Our address as an IPv4-mapped GID. */
void srt_udp_gid(const struct srt_udp *u, struct rnic_gid *gid);
/* ::ffff:a.b.c.d -> true and the address; anything else -> false. */
bool srt_gid_to_ipv4(const struct rnic_gid *gid, struct in_addr *addr);
void srt_ipv4_to_gid(struct in_addr addr, struct rnic_gid *gid);

/* Send one packet: fills in the ICRC for the IP header the kernel will
 * build.  Never blocks; returns 0 or an errno (the packet is then lost and
 * counted in tx_errors; RC retransmission recovers it). */
int srt_udp_send(struct srt_udp *u, const struct rnic_tx *tx);

/* The UDP source port every packet carries (see udp_port.c). */
#define SRT_UDP_SPORT WIRE_ROCEV2_UDP_PORT

/* A batch of received datagrams. */
#define SRT_RX_BATCH 16
#define SRT_RX_BUFSZ (WIRE_MAX_IB_PACKET + 64)
struct srt_rx_pkt {
	size_t len;
	bool truncated;                 /* larger than SRT_RX_BUFSZ        */
	struct in_addr src;
	uint16_t sport;
	uint8_t tos;                    /* DSCP | ECN as received          */
	uint8_t *data;
};
struct srt_rx_batch {
	struct srt_rx_pkt pkt[SRT_RX_BATCH];
	uint8_t buf[SRT_RX_BATCH][SRT_RX_BUFSZ];
};

/* Receive up to SRT_RX_BATCH datagrams without blocking.  Returns the
 * number received (0 if none are waiting) or -errno. */
int srt_udp_recv(struct srt_udp *u, struct srt_rx_batch *b);

#endif
