/*
 * mcast.h — the runtime's multicast sockets: one UDP socket per IP
 * multicast group some QP of this process attached to (rnic_io.mcast).
 *
 * The device's main socket is bound to its unicast address, and Linux
 * delivers a multicast datagram only to sockets bound to the group
 * address (or to the wildcard, which we cannot take: other processes own
 * 127.0.0.N:4791).  So each group gets a socket bound to <group>:4791
 * with SO_REUSEADDR, so that every process on the host can join the same
 * group, and IP_ADD_MEMBERSHIP on the interface of our address.  A device
 * bound to IPv6 joins IPv6 groups (the MGID is the group address, ff..)
 * with IPV6_JOIN_GROUP on its interface.
 *
 * Locking: join/leave run under the device lock (they are called by the
 * rnic).  The progress thread takes its poll set under the same lock
 * (srt_mcast_poll_set), which is also where sockets of groups that were
 * left get closed: never while the thread may still be polling them.
 */
#ifndef SOFTRNIC_RUNTIME_MCAST_H
#define SOFTRNIC_RUNTIME_MCAST_H

#include <poll.h>
#include <stdbool.h>

#include "runtime/udp_port.h"

#define SRT_MCAST_MAX 64

struct srt_mcast_sock {
	struct srt_udp udp;             /* fd < 0: slot free; gid (and, for
	                                   IPv4, addr) = the group         */
	bool closing;                   /* left; closed at the next poll set */
};

struct srt_mcast {
	struct srt_mcast_sock sock[SRT_MCAST_MAX];
};

void srt_mcast_init(struct srt_mcast *m);
/* Map a multicast GID to its IPv4 group (RoCEv2 convention: the MGID of
 * an IPv4 group is ::ffff:a.b.c.d).  false for anything else. */
bool srt_mcast_group_of(const struct rnic_gid *mgid, struct in_addr *group);
/* Open a socket for `mgid` and join it on the interface of `port` (the
 * device's main port: its family decides the group's).  0 or an errno
 * (EAFNOSUPPORT: not a multicast group of that family, ENOMEM: table
 * full). */
int srt_mcast_join(struct srt_mcast *m, const struct srt_udp *port, const struct rnic_gid *mgid);
void srt_mcast_leave(struct srt_mcast *m, const struct rnic_gid *mgid);
/* Progress thread, device lock held: close left sockets, then write a
 * pollfd (POLLIN) and the socket for every open group.  Returns the count
 * (<= cap). */
int srt_mcast_poll_set(struct srt_mcast *m, struct pollfd *fds, struct srt_udp **socks, int cap);
void srt_mcast_close_all(struct srt_mcast *m);

#endif
