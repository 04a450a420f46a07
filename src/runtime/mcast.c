/*
 * mcast.c — multicast group sockets of the runtime (see mcast.h).
 *
 * Trade-off: one socket per group keeps the receive path the same as for
 * unicast (srt_udp_recv, ICRC check against the group address from
 * IP_PKTINFO) at the cost of one fd and one poll entry per group; groups
 * are few (SRT_MCAST_MAX).
 */
#include "runtime/mcast.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void srt_mcast_init(struct srt_mcast *m)
{
	memset(m, 0, sizeof(*m));
	for (int i = 0; i < SRT_MCAST_MAX; i++)
		m->sock[i].udp.fd = -1;
}

bool srt_mcast_group_of(const struct rnic_gid *mgid, struct in_addr *group)
{
	if (!srt_gid_to_ipv4(mgid, group))
		return false;
	return IN_MULTICAST(ntohl(group->s_addr));
}

static struct srt_mcast_sock *find(struct srt_mcast *m, const struct rnic_gid *mgid)
{
	for (int i = 0; i < SRT_MCAST_MAX; i++) {
		struct srt_mcast_sock *s = &m->sock[i];

		if (s->udp.fd >= 0 && !s->closing && !memcmp(s->udp.gid.raw, mgid->raw, 16))
			return s;
	}
	return NULL;
}

/* The same for an IPv6 group: bound to [group]:4791, joined on the
 * interface of our address (its scope for a link-local one, else by name;
 * 0 lets the kernel choose by route). */
static int open_group_socket6(const struct rnic_gid *mgid, const struct srt_udp *port, int *fd_out)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(WIRE_ROCEV2_UDP_PORT) };
	struct ipv6_mreq mreq;
	unsigned ifindex = srt_udp_ifindex(port);
	int one = 1, e;
	int fd = srt_udp_socket(AF_INET6);

	if (fd < 0)
		return errno;
	memcpy(&sin6.sin6_addr, mgid->raw, 16);
	sin6.sin6_scope_id = ifindex;
	memcpy(&mreq.ipv6mr_multiaddr, mgid->raw, 16);
	mreq.ipv6mr_interface = ifindex;
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)) ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mreq, sizeof(mreq)) || srt_udp_rx_options6(fd)) {
		e = errno;
		close(fd);
		return e;
	}
	int rcvbuf = 4 << 20;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	*fd_out = fd;
	return 0;
}

/* A socket bound to group:4791, member of the group on local's interface. */
static int open_group_socket(struct in_addr group, struct in_addr local, int *fd_out)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(WIRE_ROCEV2_UDP_PORT), .sin_addr = group };
	struct ip_mreq mreq = { .imr_multiaddr = group, .imr_interface = local };
	int one = 1, e;
	int fd = srt_udp_socket(AF_INET);

	if (fd < 0)
		return errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof(mreq)) ||
	    srt_udp_rx_options(fd)) {
		e = errno;
		close(fd);
		return e;
	}
	/* Best effort, as for the main socket. */
	int rcvbuf = 4 << 20;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	*fd_out = fd;
	return 0;
}

int srt_mcast_join(struct srt_mcast *m, const struct srt_udp *port, const struct rnic_gid *mgid)
{
	struct srt_mcast_sock *slot = NULL;
	struct in_addr group = { 0 };
	int fd = -1, e;

	if (port->v6 ? mgid->raw[0] != 0xff : !srt_mcast_group_of(mgid, &group))
		return EAFNOSUPPORT;
	if (find(m, mgid))
		return 0;
	for (int i = 0; i < SRT_MCAST_MAX && !slot; i++)
		if (m->sock[i].udp.fd < 0)
			slot = &m->sock[i];
	if (!slot)
		return ENOMEM;
	e = port->v6 ? open_group_socket6(mgid, port, &fd) : open_group_socket(group, port->addr, &fd);
	if (e)
		return e;
	memset(slot, 0, sizeof(*slot));
	slot->udp.fd = fd;
	slot->udp.v6 = port->v6;
	slot->udp.gid = *mgid;
	slot->udp.addr = group;
	slot->closing = false;
	return 0;
}

void srt_mcast_leave(struct srt_mcast *m, const struct rnic_gid *mgid)
{
	struct srt_mcast_sock *s = find(m, mgid);

	if (s)
		s->closing = true;      /* closed by the progress thread */
}

int srt_mcast_poll_set(struct srt_mcast *m, struct pollfd *fds, struct srt_udp **socks, int cap)
{
	int n = 0;

	for (int i = 0; i < SRT_MCAST_MAX; i++) {
		struct srt_mcast_sock *s = &m->sock[i];

		if (s->udp.fd < 0)
			continue;
		if (s->closing) {
			/* Closing the socket drops the membership too. */
			close(s->udp.fd);
			s->udp.fd = -1;
			s->closing = false;
			continue;
		}
		if (n < cap) {
			fds[n].fd = s->udp.fd;
			fds[n].events = POLLIN;
			fds[n].revents = 0;
			socks[n] = &s->udp;
			n++;
		}
	}
	return n;
}

void srt_mcast_close_all(struct srt_mcast *m)
{
	for (int i = 0; i < SRT_MCAST_MAX; i++) {
		if (m->sock[i].udp.fd >= 0)
			close(m->sock[i].udp.fd);
		m->sock[i].udp.fd = -1;
		m->sock[i].closing = false;
	}
}
