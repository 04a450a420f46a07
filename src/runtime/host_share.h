/*
 * host_share.h — the member side of a shared host address: joining the
 * group of processes behind one IPv4 address on UDP 4791 through the
 * per-host helper softrnic-hostd (hostd.c), and telling it which CM
 * services this process listens on (share_steer.h has the numbering and
 * the steering).
 *
 * When: an address given by SOFTRNIC_ADDR or SOFTRNIC_IFACE is shared by
 * default (as on real RoCE, where every process of a host shares its NIC
 * and IP); SOFTRNIC_SHARE=0 binds it alone, the old way.  The automatic
 * 127.0.0.N addresses stay one per process: they need no sharing.
 */
#ifndef SOFTRNIC_RUNTIME_HOST_SHARE_H
#define SOFTRNIC_RUNTIME_HOST_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>
#include <pthread.h>
#include <sys/un.h>

/* Messages between a member and the helper (hostd.c). */
enum srt_share_msg_type {
	SRT_SHARE_JOIN = 1,
	SRT_SHARE_LISTEN = 2,
	SRT_SHARE_UNLISTEN = 3,
	SRT_SHARE_SLOT = 100,   /* value: the slot; carries the socket */
	SRT_SHARE_OK = 101,
	SRT_SHARE_ERROR = 102,  /* value: an errno (0: already so)     */
};
struct srt_share_msg {
	uint32_t type;
	uint32_t value;
	uint64_t service_id;
};

/* The helper's abstract socket name for addr; returns the address length. */
socklen_t srt_share_rendezvous(struct in_addr addr, struct sockaddr_un *sun);
/* Whether the process at the other end of Unix socket fd runs as our
 * user (SO_PEERCRED): both ends check before they trust a message. */
bool srt_share_peer_is_us(int fd);

struct srt_host_share {
	int conn;               /* to the helper; -1: not shared */
	unsigned slot;
	pthread_mutex_t lock;   /* one request at a time on conn */
};

/* Joins the share of addr: on success *udp_fd is this process's socket
 * (bound to addr:4791 in the group) and hs->slot its slot.  Starts the
 * helper if none runs (helper: the softrnic-hostd beside the library, or
 * $SOFTRNIC_HOSTD).  Returns 0 or an errno, with a line in err. */
int srt_host_share_join(struct srt_host_share *hs, struct in_addr addr, int *udp_fd, char *err, size_t errlen);
/* Registers (on) or drops a CM Service ID this process listens on, so
 * that REQs for it reach this process.  0, EADDRINUSE (another process
 * of the host listens on it) or another errno.  A no-op (0) when not
 * shared. */
int srt_host_share_listen(struct srt_host_share *hs, uint64_t service_id, bool on);
/* Leaves the share (the helper frees the slot); also what exiting does. */
void srt_host_share_leave(struct srt_host_share *hs);

#endif
