/*
 * link_monitor.c — watching our interface's link and address over
 * rtnetlink (contract: link_monitor.h).
 *
 * Notifications only say "something changed"; the state itself is read
 * afresh with getifaddrs, so lost notifications (ENOBUFS), renames we did
 * not parse, and events for other interfaces all end in the same truth.
 * Trade-off: a getifaddrs dump per burst of link/address events on the
 * host, even of other interfaces; such events are rare, and the dump
 * runs in the progress thread without the device lock.
 */
#include "runtime/link_monitor.h"

#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static bool is_loopback(struct in_addr a)
{
	return (ntohl(a.s_addr) >> 24) == 127;
}

/* The state of the interface holding l->addr (or, once the address is
 * gone, of the interface that held it at open). */
static void read_state(struct srt_link *l, struct srt_link_state *st)
{
	struct ifaddrs *list, *ifa;
	bool found = false;

	st->active = false;
	st->admin_up = false;
	if (getifaddrs(&list) != 0) {
		/* Cannot tell: keep the port usable rather than invent a
		 * link failure. */
		st->active = st->admin_up = true;
		return;
	}
	for (ifa = list; ifa; ifa = ifa->ifa_next) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ifa->ifa_addr;

		if (!sin || sin->sin_family != AF_INET || sin->sin_addr.s_addr != l->addr.s_addr)
			continue;
		found = true;
		if (!l->ifname[0])
			snprintf(l->ifname, sizeof(l->ifname), "%s", ifa->ifa_name);
		st->admin_up = (ifa->ifa_flags & IFF_UP) != 0;
		st->active = st->admin_up && (ifa->ifa_flags & IFF_RUNNING);
		break;
	}
	/* Address removed: the port is down; whether the link is
	 * administratively up decides "polling" vs "disabled". */
	for (ifa = list; !found && ifa && l->ifname[0]; ifa = ifa->ifa_next)
		if (!strcmp(ifa->ifa_name, l->ifname) && (ifa->ifa_flags & IFF_UP))
			st->admin_up = true;
	freeifaddrs(list);
}

void srt_link_open(struct srt_link *l, struct in_addr addr, struct srt_link_state *now)
{
	struct sockaddr_nl sa;

	l->fd = -1;
	l->addr = addr;
	l->ifname[0] = 0;
	now->active = now->admin_up = true;
	if (is_loopback(addr))
		return;
	/* Subscribe before reading the state, so no change falls between. */
	l->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (l->fd < 0) {
		fprintf(stderr, "softrnic: warning: cannot watch the link (netlink: %s); port stays active\n",
			strerror(errno));
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	sa.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR;
	if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "softrnic: warning: cannot watch the link (netlink bind: %s); port stays active\n",
			strerror(errno));
		close(l->fd);
		l->fd = -1;
		return;
	}
	read_state(l, now);
}

bool srt_link_read(struct srt_link *l, struct srt_link_state *now)
{
	char buf[8192];
	bool changed = false;

	if (l->fd < 0)
		return false;
	for (;;) {
		ssize_t n = recv(l->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0 || (n < 0 && errno == ENOBUFS)) {
			changed = true;   /* ENOBUFS: notifications lost, re-read */
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		break;   /* EAGAIN: drained */
	}
	if (changed)
		read_state(l, now);
	return changed;
}

void srt_link_close(struct srt_link *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}
