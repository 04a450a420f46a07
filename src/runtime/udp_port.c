/*
 * udp_port.c — the runtime's UDP port: one socket bound to <addr>:4791 that
 * receives everything (and sends what has no source port of its own),
 * plus send-only sockets bound to <addr>:<source port>, one per port.
 *
 * Address choice (runtime.h): SOFTRNIC_ADDR, else SOFTRNIC_IFACE, else the
 * first 127.0.0.N (N = 1..254) whose port 4791 is free.  SOFTRNIC_ADDR may
 * be an IPv6 address (fe80::1%eth0 for a link-local one), and
 * SOFTRNIC_IFACE an interface with only IPv6 addresses (its first global
 * one, else its link-local one): the socket is then AF_INET6 (IPV6_V6ONLY)
 * and the GID is the address itself (RoCEv2 over IPv6, IBTA A17.4.1).
 *
 * IPv6 and the ICRC: IBTA A17.8 masks the traffic class, flow label and
 * hop limit of an IPv6 header, and IPv6 has no Identification field, so
 * the ICRC depends only on the addresses, the payload length and the UDP
 * header; nothing the kernel chooses needs guessing.
 *
 * What the kernel puts in the IP header, and why we care: the ICRC covers
 * the IPv4 header including the Identification field (IBTA A17.3.3), so we
 * must know every field the kernel will send.  The socket has
 * IP_MTU_DISCOVER = IP_PMTUDISC_DO, so every datagram has DF set, and for a
 * DF datagram on an unconnected socket Linux writes ID 0 (ip_select_ident:
 * "DF and no connected peer -> id = 0").  Checked with a capture on lo
 * (kernel 6.18, tests/runtime/test_two_process running):
 *   tshark -i lo -f 'udp port 4791' -T fields -e ip.id -e ip.flags.df
 *          -e ip.ttl -e udp.srcport -e udp.checksum
 * gives 0x0000, DF 1, TTL 64, checksum 0 on every frame (SOFTRNIC_GSO=0;
 * the source ports: tests/runtime/sport_capture.sh), and
 * `softrnic decode` of that capture (which recomputes the ICRC from the
 * real captured IP header) reports every ICRC ok.  A
 * side-effect is that we never fragment: a packet bigger than the path MTU
 * fails with EMSGSIZE, which is what a NIC does too.
 *
 * UDP source port: RoCEv2 uses it as flow entropy, so that ECMP fabrics
 * spread the QPs over their paths; the rnic picks it (rnic_tx.sport) with
 * kernel rxe's rules: RC/UC rdma_get_udp_sport(0, lqpn, rqpn), the same
 * at both ends; UD 0xC000 + hash_32(qpn, 14).  The destination port is
 * always 4791.  A UDP socket sends from the port it is bound to, so
 * besides the main socket (<addr>:4791, which receives everything and
 * sends what has no port of its own) we keep one send-only socket per
 * source port in use, bound to <addr>:sport, created on first use, cached
 * in a small open-addressing map (struct srt_sport_map) and closed by
 * srt_udp_close.  They get the main socket's send options (DF, TTL 64,
 * GSO or SO_NO_CHECK, send buffer, multicast interface), so the IP header
 * the kernel builds, and hence the ICRC, differs only in the port, which
 * fill_icrcs takes from the slot.  Trade-offs:
 *  - one fd per port: the sockets are capped at a quarter of the fd limit
 *    (RLIMIT_NOFILE, at most 16384 = every port 0xC000..0xFFFF); past
 *    the cap, or when the port cannot be bound (EADDRINUSE: another
 *    program holds <addr>:sport or the wildcard), packets of that port
 *    leave from 4791, the failure is remembered (no retry until close)
 *    and counted once in tx_sport_fallbacks.  Receivers accept any
 *    source port and the ICRC is computed for the port really sent, so a
 *    fallback costs only entropy.
 *  - a datagram someone sends to one of these ports is not RoCE traffic
 *    for us: the sockets are never polled, and a classic BPF filter that
 *    accepts nothing (plus the smallest receive buffer) makes the kernel
 *    drop such datagrams before they are queued.
 *  - SOFTRNIC_SPORT=fixed restores one socket for everything (source port
 *    always 4791), e.g. where binding extra ports is unwelcome.
 *  - a packet with tx->sport 0 (no preference) leaves from 4791.
 *
 * Sending is udp_send.c (one packet, or the transmit queue in batches
 * with UDP GSO), receiving udp_recv.c (recvmmsg with UDP GRO).
 */
#include "runtime/udp_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/filter.h>
#include <netinet/udp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/capture.h"
#include "runtime/host_share.h"

/* Headers around the IB payload: IPv4 20 + UDP 8 + BTH 12 + largest
 * extended headers with payload (RETH 16 + ImmDt 4) + ICRC 4, rounded up;
 * IPv6's header is 20 bytes longer. */
#define SRT_ROCE_OVERHEAD 64u
#define SRT_ROCE_OVERHEAD_V6 (SRT_ROCE_OVERHEAD + WIRE_IPV6_LEN - WIRE_IPV4_LEN)

static const char *source_name(enum srt_addr_source s)
{
	switch (s) {
	case SRT_ADDR_ENV_ADDR: return "SOFTRNIC_ADDR";
	case SRT_ADDR_ENV_IFACE: return "SOFTRNIC_IFACE";
	default: return "loopback";
	}
}

bool srt_gid_to_ipv4(const struct rnic_gid *gid, struct in_addr *addr)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(gid->raw, prefix, sizeof(prefix)))
		return false;
	memcpy(&addr->s_addr, &gid->raw[12], 4);
	return true;
}

void srt_udp_gid(const struct srt_udp *u, struct rnic_gid *gid)
{
	*gid = u->gid;
}

socklen_t srt_udp_sockaddr(const struct srt_udp *u, const struct rnic_gid *gid, uint16_t port,
			   union srt_sockaddr *ss)
{
	struct in_addr a;
	bool mapped = srt_gid_to_ipv4(gid, &a);

	if (!u->v6) {
		struct sockaddr_in *sin = &ss->in;

		memset(sin, 0, sizeof(*sin));
		if (!mapped)
			return 0;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr = a;
		return sizeof(*sin);
	}
	if (mapped)
		return 0;
	struct sockaddr_in6 *sin6 = &ss->in6;
	memset(sin6, 0, sizeof(*sin6));
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	memcpy(&sin6->sin6_addr, gid->raw, 16);
	/* A link-local peer is reached through our interface. */
	if (gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80)
		sin6->sin6_scope_id = u->scope_id;
	return sizeof(*sin6);
}

void srt_udp_ip_header(const struct srt_udp *u, const struct rnic_gid *dst, uint8_t tos, uint8_t ttl,
		       uint16_t ip_id, struct wire_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	ip->version = u->v6 ? 6 : 4;
	ip->df = !u->v6;
	ip->id = u->v6 ? 0 : ip_id;
	ip->ttl = ttl;
	ip->dscp = tos >> 2;
	ip->ecn = tos & 3;
	memcpy(ip->src, u->gid.raw, 16);
	memcpy(ip->dst, dst->raw, 16);
}

/* Largest IB MTU whose packets fit the interface MTU (loopback: 4096). */
static enum ibv_mtu ib_mtu_for(unsigned if_mtu, unsigned overhead)
{
	static const struct { unsigned bytes; enum ibv_mtu mtu; } sizes[] = {
		{ 4096, IBV_MTU_4096 }, { 2048, IBV_MTU_2048 }, { 1024, IBV_MTU_1024 },
		{ 512, IBV_MTU_512 },
	};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (sizes[i].bytes + overhead <= if_mtu)
			return sizes[i].mtu;
	return IBV_MTU_256;
}

/* Find the interface that owns `addr` and its MTU. */
static void lookup_interface(struct srt_udp *u)
{
	struct ifaddrs *list, *ifa;

	u->ifname[0] = 0;
	u->if_mtu = 0;
	if (getifaddrs(&list) == 0) {
		for (ifa = list; ifa; ifa = ifa->ifa_next) {
			if (u->v6 && ifa->ifa_addr && ifa->ifa_addr->sa_family == AF_INET6 &&
			    !memcmp(&((const struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr, u->gid.raw, 16)) {
				snprintf(u->ifname, sizeof(u->ifname), "%s", ifa->ifa_name);
				break;
			}
			if (u->v6 || !ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET)
				continue;
			const struct sockaddr_in *sin = (const struct sockaddr_in *)ifa->ifa_addr;
			const struct sockaddr_in *mask = (const struct sockaddr_in *)ifa->ifa_netmask;
			uint32_t m = mask ? mask->sin_addr.s_addr : 0xffffffffu;
			/* 127.0.0.N lives on lo as 127.0.0.1/8: match by prefix. */
			if ((sin->sin_addr.s_addr & m) == (u->addr.s_addr & m)) {
				snprintf(u->ifname, sizeof(u->ifname), "%s", ifa->ifa_name);
				if (sin->sin_addr.s_addr == u->addr.s_addr)
					break;
			}
		}
		freeifaddrs(list);
	}
	if (u->ifname[0]) {
		struct ifreq ifr;
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", u->ifname);
		if (ioctl(u->fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
			u->if_mtu = (unsigned)ifr.ifr_mtu;
	}
	/* Unknown interface: assume a standard 1500-byte Ethernet. */
	u->active_mtu = ib_mtu_for(u->if_mtu ? u->if_mtu : 1500, u->v6 ? SRT_ROCE_OVERHEAD_V6 : SRT_ROCE_OVERHEAD);
}

static bool is_link_local6(const struct in6_addr *a)
{
	return a->s6_addr[0] == 0xfe && (a->s6_addr[1] & 0xc0) == 0x80;
}

/* First IPv4 address of interface `name`; with none, its first global
 * IPv6 address, else its link-local one (*v6 true, *scope its index).
 * 0 or an errno. */
static int interface_address(const char *name, struct in_addr *addr, struct in6_addr *addr6, bool *v6,
			     uint32_t *scope, char *err, size_t errlen)
{
	struct ifaddrs *list, *ifa;
	bool exists = false, have6 = false;

	if (getifaddrs(&list) != 0) {
		int e = errno;
		snprintf(err, errlen, "getifaddrs: %s", strerror(e));
		return e;
	}
	for (ifa = list; ifa; ifa = ifa->ifa_next) {
		if (strcmp(ifa->ifa_name, name))
			continue;
		exists = true;
		if (ifa->ifa_addr && ifa->ifa_addr->sa_family == AF_INET) {
			*addr = ((const struct sockaddr_in *)ifa->ifa_addr)->sin_addr;
			*v6 = false;
			freeifaddrs(list);
			return 0;
		}
		if (ifa->ifa_addr && ifa->ifa_addr->sa_family == AF_INET6) {
			const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ifa->ifa_addr;
			/* A global address wins over a link-local one. */
			if (!have6 || (is_link_local6(addr6) && !is_link_local6(&s6->sin6_addr))) {
				*addr6 = s6->sin6_addr;
				*scope = s6->sin6_scope_id;
				have6 = true;
			}
		}
	}
	freeifaddrs(list);
	if (have6) {
		*v6 = true;
		return 0;
	}
	if (exists)
		snprintf(err, errlen, "SOFTRNIC_IFACE=%s has no IPv4 or IPv6 address", name);
	else
		snprintf(err, errlen, "SOFTRNIC_IFACE=%s: no such interface", name);
	return exists ? EADDRNOTAVAIL : ENODEV;
}

int srt_udp_socket(int family)
{
	return (int)syscall(SYS_socket, family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}

static int set_int_option(int fd, int level, int name, int value)
{
	return setsockopt(fd, level, name, &value, sizeof(value));
}

/* A socket of our family bound to <our address>:port (IPv6: IPV6_V6ONLY,
 * so it never takes IPv4 traffic), or -1 with errno set. */
static int bound_socket(const struct srt_udp *u, uint16_t port)
{
	union srt_sockaddr ss;
	socklen_t len = srt_udp_sockaddr(u, &u->gid, port, &ss);
	int fd = srt_udp_socket(u->v6 ? AF_INET6 : AF_INET);
	int e;

	if (fd < 0)
		return -1;
	if (u->v6)
		ss.in6.sin6_scope_id = u->scope_id;
	if ((u->v6 && set_int_option(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1)) || bind(fd, &ss.sa, len)) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Create the socket and try to bind addr:4791 (IPv4).  0 or an errno. */
static int try_bind(struct srt_udp *u, struct in_addr addr)
{
	int fd;

	u->v6 = false;
	u->addr = addr;
	srt_ipv4_to_gid(addr, &u->gid);
	fd = bound_socket(u, WIRE_ROCEV2_UDP_PORT);
	if (fd < 0)
		return errno;
	u->fd = fd;
	return 0;
}

/* The same for an IPv6 address (scope: its interface if link-local). */
static int try_bind6(struct srt_udp *u, const struct in6_addr *addr, uint32_t scope)
{
	int fd;

	u->v6 = true;
	u->addr.s_addr = 0;
	memcpy(u->gid.raw, addr->s6_addr, 16);
	u->scope_id = scope;
	fd = bound_socket(u, WIRE_ROCEV2_UDP_PORT);
	if (fd < 0)
		return errno;
	u->fd = fd;
	return 0;
}

int srt_udp_rx_options(int fd)
{
	/* TOS (ECN, DSCP), TTL and the destination address of every
	 * datagram: the rnic reports them in a UD receive's GRH. */
	if (set_int_option(fd, IPPROTO_IP, IP_RECVTOS, 1) ||
	    set_int_option(fd, IPPROTO_IP, IP_RECVTTL, 1) ||
	    set_int_option(fd, IPPROTO_IP, IP_PKTINFO, 1))
		return errno;
	return 0;
}

int srt_udp_rx_options6(int fd)
{
	if (set_int_option(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1) ||
	    set_int_option(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1) ||
	    set_int_option(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1))
		return errno;
	/* IPv6 UDP carries a checksum (RFC 8200 8.1), but the kernel's rxe
	 * sends RoCEv2 over IPv6 with checksum 0, as its tunnel socket is
	 * set up to; take such datagrams (best effort: an old kernel lacks
	 * the option and then drops them). */
	(void)set_int_option(fd, SOL_UDP, UDP_NO_CHECK6_RX, 1);
	return 0;
}

unsigned srt_udp_ifindex(const struct srt_udp *u)
{
	return u->scope_id ? u->scope_id : u->ifname[0] ? if_nametoindex(u->ifname) : 0;
}

/* Never fragment, hop limit / TTL 64: the options every sending socket
 * of ours has (the ICRC depends on them, top of this file). */
static int send_options(const struct srt_udp *u, int fd)
{
	if (u->v6)
		return set_int_option(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO) ||
		       set_int_option(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, SRT_DEFAULT_TTL) ? errno : 0;
	return set_int_option(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO) ||
	       set_int_option(fd, IPPROTO_IP, IP_TTL, SRT_DEFAULT_TTL) ? errno : 0;
}

/* Generous send buffer: a full send window of every QP fits.  As root
 * the FORCE variant passes net.core.wmem_max; otherwise the kernel caps
 * the request there. */
static void set_send_buffer(int fd)
{
	if (set_int_option(fd, SOL_SOCKET, SO_SNDBUFFORCE, 16 << 20))
		(void)set_int_option(fd, SOL_SOCKET, SO_SNDBUF, 16 << 20);
}

/* DF on every datagram (hence IPv4 ID 0, see the top of this file), TTL
 * 64, report the received TOS byte, generous buffers. */
static int configure_socket(struct srt_udp *u)
{
	int fd = u->fd;
	const char *env_gso = getenv("SOFTRNIC_GSO");

	if (send_options(u, fd) || (u->v6 ? srt_udp_rx_options6(fd) : srt_udp_rx_options(fd)))
		return errno;
	/* Batching: UDP GSO (one send for a run of packets, cut by the kernel
	 * or the NIC) and GRO (such runs received whole).  Trade-off: Linux
	 * refuses GSO on a socket without UDP checksums, so with GSO our
	 * datagrams carry a real UDP checksum (A17.4.2 allows either; rxe
	 * and we accept both; on lo it is offloaded and costs nothing), and a
	 * capture on lo shows a GSO run as one large datagram.
	 * SOFTRNIC_GSO=0 restores one datagram per packet with checksum 0,
	 * exactly as kernel rxe sends. */
	u->gso = !(env_gso && !strcmp(env_gso, "0")) && set_int_option(fd, SOL_UDP, UDP_SEGMENT, 0) == 0;
	u->gro = u->gso && set_int_option(fd, SOL_UDP, UDP_GRO, 1) == 0;
	/* UDP checksum 0 otherwise, as kernel rxe sends: RoCEv2 relies on the
	 * ICRC (A17.4.2).  Also keeps captures on lo clean, where checksum
	 * offload leaves partial sums. */
	if (!u->gso && set_int_option(fd, SOL_SOCKET, SO_NO_CHECK, 1))
		return errno;
	if (set_int_option(fd, SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20))
		(void)set_int_option(fd, SOL_SOCKET, SO_RCVBUF, 16 << 20);
	set_send_buffer(fd);
	u->out = malloc(SRT_TX_MAX_PKTS * sizeof(*u->out));
	if (!u->out)
		return ENOMEM;
	u->nout = 0;
	const char *env_copy = getenv("SOFTRNIC_TX_COPY");
	/* Off by default: udp_send.c says why. */
	u->tx_payload_ref = env_copy && !strcmp(env_copy, "0");
	return 0;
}

/* ---- per-source-port send sockets (top of this file) ----------------------- */

/* Open addressing, linear probing, keyed by port (0 = empty slot); fd -1
 * remembers a port that fell back to the main socket. */
struct srt_sport_entry {
	uint16_t sport;
	int fd;
};
struct srt_sport_map {
	unsigned cap;                   /* power of two */
	unsigned used;
	struct srt_sport_entry *e;
};

#define SRT_SPORT_MAP_MIN 64u
/* Every port kernel rxe derives lies in 0xC000..0xFFFF. */
#define SRT_SPORT_MAX_SOCKETS 16384u

static unsigned sport_hash(uint16_t sport, unsigned cap)
{
	return ((uint32_t)sport * 0x9E3779B1u >> 16) & (cap - 1);
}

static struct srt_sport_entry *sport_find(struct srt_sport_map *m, uint16_t sport)
{
	for (unsigned i = sport_hash(sport, m->cap);; i = (i + 1) & (m->cap - 1))
		if (m->e[i].sport == sport || m->e[i].sport == 0)
			return &m->e[i];
}

/* Make room for one more entry (load at most 1/2).  0 or ENOMEM. */
static int sport_map_reserve(struct srt_udp *u)
{
	struct srt_sport_map *m = u->sports;

	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return ENOMEM;
		m->e = calloc(SRT_SPORT_MAP_MIN, sizeof(*m->e));
		if (!m->e) {
			free(m);
			return ENOMEM;
		}
		m->cap = SRT_SPORT_MAP_MIN;
		u->sports = m;
	}
	if (2 * (m->used + 1) <= m->cap)
		return 0;
	struct srt_sport_map bigger = { .cap = m->cap * 2, .used = m->used };
	bigger.e = calloc(bigger.cap, sizeof(*bigger.e));
	if (!bigger.e)
		return ENOMEM;
	for (unsigned i = 0; i < m->cap; i++)
		if (m->e[i].sport)
			*sport_find(&bigger, m->e[i].sport) = m->e[i];
	free(m->e);
	*m = bigger;
	return 0;
}

/* A send-only socket bound to <addr>:sport with the main socket's send
 * options, or -1 with errno set. */
static int open_sport_socket(const struct srt_udp *u, uint16_t sport)
{
	/* Accept nothing: datagrams sent to this port are dropped by the
	 * kernel before they are queued (nobody reads this socket). */
	static struct sock_filter drop_all[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	static const struct sock_fprog drop_prog = { .len = 1, .filter = drop_all };
	int fd = bound_socket(u, sport);
	int e;

	if (fd < 0)
		return -1;
	/* Bound first, filtered right after: a datagram arriving in between
	 * is one stray packet in a queue nobody reads. */
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &drop_prog, sizeof(drop_prog)) ||
	    set_int_option(fd, SOL_SOCKET, SO_RCVBUF, 0) || send_options(u, fd) ||
	    (u->gso && set_int_option(fd, SOL_UDP, UDP_SEGMENT, 0)) ||
	    (!u->gso && set_int_option(fd, SOL_SOCKET, SO_NO_CHECK, 1)))
		goto fail;
	set_send_buffer(fd);
	if (!u->v6) {
		(void)setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &u->addr, sizeof(u->addr));
	} else {
		int ifindex = (int)srt_udp_ifindex(u);
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifindex, sizeof(ifindex));
	}
	return fd;
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

int srt_udp_sport_socket(struct srt_udp *u, uint16_t sport, uint16_t *wire_sport)
{
	*wire_sport = WIRE_ROCEV2_UDP_PORT;
	if (u->sport_fixed || sport == 0 || sport == WIRE_ROCEV2_UDP_PORT)
		return u->fd;
	if (u->sports) {
		const struct srt_sport_entry *hit = sport_find(u->sports, sport);
		if (hit->sport == sport) {
			if (hit->fd < 0)
				return u->fd;
			*wire_sport = sport;
			return hit->fd;
		}
	}
	if (sport_map_reserve(u)) {     /* out of memory: not remembered */
		u->tx_sport_fallbacks++;
		return u->fd;
	}
	int fd = u->sport_sockets < u->sport_max_sockets ? open_sport_socket(u, sport) : -1;
	struct srt_sport_entry *slot = sport_find(u->sports, sport);
	slot->sport = sport;
	slot->fd = fd;
	u->sports->used++;
	if (fd < 0) {
		u->tx_sport_fallbacks++;
		return u->fd;
	}
	u->sport_sockets++;
	*wire_sport = sport;
	return fd;
}

static void close_sport_sockets(struct srt_udp *u)
{
	struct srt_sport_map *m = u->sports;

	if (!m)
		return;
	for (unsigned i = 0; i < m->cap; i++)
		if (m->e[i].sport && m->e[i].fd >= 0)
			close(m->e[i].fd);
	free(m->e);
	free(m);
	u->sports = NULL;
	u->sport_sockets = 0;
}

/* SOFTRNIC_SPORT: unset, "" or "flow" = a port per flow, "fixed" = 4791.
 * The socket budget: a quarter of the fd limit. */
static int configure_sports(struct srt_udp *u, char *err, size_t errlen)
{
	const char *env = getenv("SOFTRNIC_SPORT");
	struct rlimit rl;

	if (env && *env && strcmp(env, "flow") && strcmp(env, "fixed")) {
		snprintf(err, errlen, "SOFTRNIC_SPORT=%s: expected \"flow\" (default) or \"fixed\"", env);
		return EINVAL;
	}
	u->sport_fixed = env && !strcmp(env, "fixed");
	u->sport_max_sockets = SRT_SPORT_MAX_SOCKETS;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 < u->sport_max_sockets)
		u->sport_max_sockets = (unsigned)(rl.rlim_cur / 4);
	return 0;
}

static int bind_first_free_loopback(struct srt_udp *u, char *err, size_t errlen)
{
	for (unsigned n = 1; n <= 254; n++) {
		struct in_addr a = { .s_addr = htonl(0x7f000000u | n) };
		int e = try_bind(u, a);
		if (e == 0)
			return 0;
		if (e != EADDRINUSE) {
			snprintf(err, errlen, "cannot bind 127.0.0.%u:%u: %s", n, WIRE_ROCEV2_UDP_PORT, strerror(e));
			return e;
		}
	}
	snprintf(err, errlen, "UDP port %u is in use on every address 127.0.0.1..254 "
		 "(another RoCE stack bound to 0.0.0.0? set SOFTRNIC_ADDR)", WIRE_ROCEV2_UDP_PORT);
	return EADDRINUSE;
}

/* An address given by the environment is shared with the host's other
 * softrnic processes (host_share.h) unless SOFTRNIC_SHARE=0, or softrnic-
 * hostd is not installed beside us (a program linking the runtime
 * statically, as some tests do): then it is bound alone, as before. */
static int share_or_bind(struct srt_udp *u, struct in_addr addr, const char *text, char *err, size_t errlen)
{
	const char *env = getenv("SOFTRNIC_SHARE");
	int e;

	if (!(env && !strcmp(env, "0"))) {
		int fd;

		e = srt_host_share_join(&u->share, addr, &fd, err, errlen);
		if (e == 0) {
			u->fd = fd;
			u->addr = addr;
			srt_ipv4_to_gid(addr, &u->gid);
			return 0;
		}
		if (e != ENOENT)
			return e;
	}
	e = try_bind(u, addr);
	if (e)
		snprintf(err, errlen, "cannot bind %s:%u (%s): %s%s", text, WIRE_ROCEV2_UDP_PORT, source_name(u->source),
			 strerror(e), e == EADDRINUSE && env && !strcmp(env, "0") ? " (SOFTRNIC_SHARE=0: not shared)" : "");
	return e;
}

int srt_udp_open(struct srt_udp *u, char *err, size_t errlen)
{
	const char *env_addr = getenv("SOFTRNIC_ADDR");
	const char *env_iface = getenv("SOFTRNIC_IFACE");
	struct in_addr addr = { 0 };
	struct in6_addr addr6;
	uint32_t scope = 0;
	bool v6 = false;
	int e;

	memset(u, 0, sizeof(*u));
	memset(&addr6, 0, sizeof(addr6));
	u->fd = -1;
	u->share.conn = -1;
	if (env_addr && *env_addr) {
		u->source = SRT_ADDR_ENV_ADDR;
		if (inet_pton(AF_INET, env_addr, &addr) != 1) {
			/* IPv6, with "%interface" for a link-local address. */
			char text[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
			char *pct;

			snprintf(text, sizeof(text), "%s", env_addr);
			pct = strchr(text, '%');
			if (pct) {
				*pct = 0;
				scope = if_nametoindex(pct + 1);
			}
			if (inet_pton(AF_INET6, text, &addr6) != 1 || (pct && !scope)) {
				snprintf(err, errlen, "SOFTRNIC_ADDR=%s is not an IPv4 or IPv6 address%s", env_addr,
					 pct && !scope ? " (no such interface after %)" : "");
				return EINVAL;
			}
			if (is_link_local6(&addr6) && !scope) {
				snprintf(err, errlen, "SOFTRNIC_ADDR=%s is link-local: say which interface, as in "
					 "fe80::1%%eth0", env_addr);
				return EINVAL;
			}
			v6 = true;
		}
	} else if (env_iface && *env_iface) {
		u->source = SRT_ADDR_ENV_IFACE;
		e = interface_address(env_iface, &addr, &addr6, &v6, &scope, err, errlen);
		if (e)
			return e;
	} else {
		u->source = SRT_ADDR_LOOPBACK;
	}

	if (u->source == SRT_ADDR_LOOPBACK) {
		e = bind_first_free_loopback(u, err, errlen);
	} else if (v6) {
		char text[INET6_ADDRSTRLEN];
		struct in_addr mapped;
		struct rnic_gid g;

		inet_ntop(AF_INET6, &addr6, text, sizeof(text));
		memcpy(g.raw, addr6.s6_addr, 16);
		if (IN6_IS_ADDR_UNSPECIFIED(&addr6) || IN6_IS_ADDR_MULTICAST(&addr6) || srt_gid_to_ipv4(&g, &mapped)) {
			snprintf(err, errlen, "%s: %s is not a unicast IPv6 address%s", source_name(u->source), text,
				 srt_gid_to_ipv4(&g, &mapped) ? " (write an IPv4 address as a.b.c.d)" : "");
			return EINVAL;
		}
		/* Trade-off: an IPv6 address is bound by one process (no
		 * softrnic-hostd sharing, which speaks IPv4 only yet). */
		e = try_bind6(u, &addr6, scope);
		if (e)
			snprintf(err, errlen, "cannot bind [%s]:%u (%s): %s%s", text, WIRE_ROCEV2_UDP_PORT,
				 source_name(u->source), strerror(e),
				 e == EADDRINUSE ? " (an IPv6 address is not shared between processes)" : "");
	} else {
		uint32_t h = ntohl(addr.s_addr);
		char text[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &addr, text, sizeof(text));
		if (h == 0 || h == 0xffffffffu || (h >> 28) == 0xe) {
			snprintf(err, errlen, "%s: %s is not a unicast address", source_name(u->source), text);
			return EINVAL;
		}
		e = share_or_bind(u, addr, text, err, errlen);
	}
	if (e)
		return e;

	e = configure_sports(u, err, errlen);
	if (e) {
		srt_udp_close(u);
		return e;
	}
	e = configure_socket(u);
	if (e) {
		snprintf(err, errlen, "socket options: %s", strerror(e));
		srt_udp_close(u);
		return e;
	}
	/* Multicast sends (UD to a group, mcast.c) leave through the
	 * interface of our address; best effort, unicast does not need it. */
	if (!u->v6)
		(void)setsockopt(u->fd, IPPROTO_IP, IP_MULTICAST_IF, &u->addr, sizeof(u->addr));
	lookup_interface(u);
	if (u->v6) {
		int ifindex = (int)srt_udp_ifindex(u);
		(void)setsockopt(u->fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifindex, sizeof(ifindex));
	}
	return 0;
}

void srt_udp_close(struct srt_udp *u)
{
	close_sport_sockets(u);
	if (u->fd >= 0)
		close(u->fd);
	u->fd = -1;
	srt_host_share_leave(&u->share);        /* the helper frees our slot */
	free(u->txq);
	u->txq = NULL;
	free(u->out);
	u->out = NULL;
	u->nout = 0;
}

void srt_udp_no_gro(struct srt_udp *u)
{
	if (u->gro && set_int_option(u->fd, SOL_UDP, UDP_GRO, 0) == 0)
		u->gro = false;
}
