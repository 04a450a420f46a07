/*
 * link_monitor.h — the port follows the link of the interface our address
 * lives on, as the kernel's rxe follows its netdev.
 *
 * A NETLINK_ROUTE socket subscribed to link and IPv4 address changes; the
 * progress thread polls its fd beside the UDP socket and, when something
 * arrived, asks srt_link_read for the interface's state now.  The runtime
 * turns a change of `active` into IBV_EVENT_PORT_ERR / PORT_ACTIVE for
 * every open context (progress.c) and ibv_query_port reports it.
 *
 * Loopback addresses (127.0.0.0/8, the default) are not watched: the port
 * is always active there.
 */
#ifndef SOFTRNIC_RUNTIME_LINK_MONITOR_H
#define SOFTRNIC_RUNTIME_LINK_MONITOR_H

#include <netinet/in.h>
#include <stdbool.h>

/* The interface as seen at one moment. */
struct srt_link_state {
	bool active;    /* IFF_UP, IFF_RUNNING (carrier) and our address on it */
	bool admin_up;  /* IFF_UP alone: down but up is "polling", not "disabled" */
};

struct srt_link {
	int fd;                 /* netlink socket; -1: not watching (always up) */
	struct in_addr addr;    /* our bound address */
	char ifname[16];        /* interface that held it at open, or "" */
};

/* Start watching the interface that holds `addr` and fill `now` with its
 * state.  Never fails: with a loopback address, or if no netlink socket
 * can be had (a message on stderr then), fd is -1 and the port stays
 * active. */
void srt_link_open(struct srt_link *l, struct in_addr addr, struct srt_link_state *now);

/* Drain pending notifications without blocking.  Returns true and fills
 * `now` if any arrived (or some were lost to a full socket buffer), so the
 * caller compares it with what it had. */
bool srt_link_read(struct srt_link *l, struct srt_link_state *now);

void srt_link_close(struct srt_link *l);

#endif
