/*
 * hostd.c — softrnic-hostd, the small per-host helper that lets several
 * processes share one address on UDP 4791 (share_steer.h; the member side
 * is host_share.c).  `softrnic-hostd ADDR` is started by the first member
 * that finds none; it detaches, serves one address for one user in one
 * network namespace, and exits a few seconds after its last member has
 * gone.  No root: every socket is an ordinary UDP socket of the user.
 *
 * Why a helper and not just SO_REUSEPORT: the kernel numbers the sockets
 * of a reuseport group by when they joined, and when one closes it moves
 * the last into the hole, so an index would change under a process when
 * another exits.  The helper creates the group's sockets itself, in slot
 * order, and never closes one while it runs: socket k is slot k for the
 * helper's whole life.  A member receives its slot's socket over the Unix
 * connection (SCM_RIGHTS) and keeps the connection open; when the member
 * exits or crashes the connection ends, the helper marks the slot free
 * (it still holds the socket, so nobody's index moves), drops the
 * member's CM listeners from the steering program, and the next member
 * gets that slot, its socket drained of what the dead one left queued.
 *
 * The rendezvous is an abstract Unix socket, "\0softrnic-hostd-<uid>-
 * <addr hex>": per network namespace like the address itself, gone with
 * the process that binds it (no file to clean up), and bound by at most
 * one helper, which settles a race between members starting together.
 * Both ends check the other's uid (SO_PEERCRED).
 *
 * Protocol (SOCK_SEQPACKET, one struct srt_share_msg per message):
 *   JOIN               -> SLOT k + the socket, or ERROR errno
 *   LISTEN service_id  -> OK, or ERROR EADDRINUSE (another slot has it)
 *   UNLISTEN service_id-> OK
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <linux/close_range.h>
#include <unistd.h>

#include "runtime/host_share.h"
#include "runtime/share_steer.h"
#include "wire/wire.h"

/* How long the helper stays with no member, so that programs run one
 * after the other (perftest's server, then its client) keep their slots'
 * sockets and do not pay a new start each. */
#define HOSTD_IDLE_EXIT_MS 3000

struct slot {
	int udp;        /* the group's socket k, -1 before first use */
	int member;     /* the member's connection, -1 when free     */
};

struct hostd {
	struct in_addr addr;
	int listen_fd;
	struct slot slots[SRT_SHARE_SLOTS];
	unsigned n_udp;                 /* sockets created: slots 0..n_udp-1 */
	struct srt_share_listener listeners[SRT_SHARE_MAX_LISTENERS];
	size_t n_listeners;
};

static int new_group_socket(struct hostd *h)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(WIRE_ROCEV2_UDP_PORT), .sin_addr = h->addr };
	/* The system call, not libc's socket(): hostd inherits the program's
	 * environment, and a preloaded socket library (librspreload.so) would
	 * make this an rsocket (runtime/udp_port.h, srt_udp_socket). */
	int one = 1, fd = (int)syscall(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* Compiles the listener table into the steering program and attaches it
 * to the group (through any of its sockets). */
static int attach_program(struct hostd *h)
{
	static struct sock_filter prog[SRT_SHARE_STEER_MAX_INSNS];
	struct sock_fprog fp;
	size_t n;

	if (!h->n_udp)
		return 0;
	n = srt_share_steer_build(h->listeners, h->n_listeners, prog);
	fp.len = (unsigned short)n;
	fp.filter = prog;
	if (!n || setsockopt(h->slots[0].udp, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fp, sizeof(fp)))
		return -errno;
	return 0;
}

static void drain(int fd)
{
	char b[1];

	while (recv(fd, b, sizeof(b), MSG_DONTWAIT | MSG_TRUNC) >= 0)
		;
}

static int send_reply(int conn, uint32_t type, uint32_t value, int fd)
{
	struct srt_share_msg m = { .type = type, .value = value };
	struct iovec iov = { &m, sizeof(m) };
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.b;
		msg.msg_controllen = sizeof(ctl.b);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(conn, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof(m) ? 0 : -1;
}

static int slot_of(const struct hostd *h, int conn)
{
	for (unsigned k = 0; k < SRT_SHARE_SLOTS; k++)
		if (h->slots[k].member == conn)
			return (int)k;
	return -1;
}

static void handle_join(struct hostd *h, int conn)
{
	unsigned k;

	if (slot_of(h, conn) >= 0) {
		send_reply(conn, SRT_SHARE_ERROR, EALREADY, -1);
		return;
	}
	for (k = 0; k < SRT_SHARE_SLOTS && h->slots[k].member >= 0; k++)
		;
	if (k == SRT_SHARE_SLOTS) {
		send_reply(conn, SRT_SHARE_ERROR, EUSERS, -1);
		return;
	}
	if (h->slots[k].udp < 0) {
		/* Slots below k all have sockets (they are created in order
		 * and never closed), so this one becomes index k. */
		int fd = new_group_socket(h);

		if (fd < 0) {
			send_reply(conn, SRT_SHARE_ERROR, (uint32_t)-fd, -1);
			return;
		}
		h->slots[k].udp = fd;
		h->n_udp = k + 1;
		if (k == 0 && attach_program(h)) {
			send_reply(conn, SRT_SHARE_ERROR, (uint32_t)errno, -1);
			return;
		}
	} else {
		drain(h->slots[k].udp);
	}
	h->slots[k].member = conn;
	send_reply(conn, SRT_SHARE_SLOT, k, h->slots[k].udp);
}

static void remove_listeners_of(struct hostd *h, uint32_t slot, bool all, uint64_t service_id)
{
	size_t j = 0;

	for (size_t i = 0; i < h->n_listeners; i++) {
		const struct srt_share_listener *l = &h->listeners[i];

		if (l->slot == slot && (all || l->service_id == service_id))
			continue;
		h->listeners[j++] = *l;
	}
	h->n_listeners = j;
}

static void handle_listen(struct hostd *h, int conn, const struct srt_share_msg *m, bool on)
{
	int slot = slot_of(h, conn);

	if (slot < 0) {
		send_reply(conn, SRT_SHARE_ERROR, ENOTCONN, -1);
		return;
	}
	if (on) {
		for (size_t i = 0; i < h->n_listeners; i++)
			if (h->listeners[i].service_id == m->service_id) {
				send_reply(conn, SRT_SHARE_ERROR, h->listeners[i].slot == (uint32_t)slot ? 0 : EADDRINUSE,
					   -1);
				return;
			}
		if (h->n_listeners == SRT_SHARE_MAX_LISTENERS) {
			send_reply(conn, SRT_SHARE_ERROR, ENOSPC, -1);
			return;
		}
		h->listeners[h->n_listeners++] = (struct srt_share_listener){ m->service_id, (uint32_t)slot };
	} else {
		remove_listeners_of(h, (uint32_t)slot, false, m->service_id);
	}
	if (attach_program(h)) {
		send_reply(conn, SRT_SHARE_ERROR, (uint32_t)errno, -1);
		return;
	}
	send_reply(conn, SRT_SHARE_OK, 0, -1);
}

/* The member on conn has gone: free its slot (keeping the socket) and its
 * listeners. */
static void member_gone(struct hostd *h, int conn)
{
	int slot = slot_of(h, conn);

	if (slot >= 0) {
		h->slots[slot].member = -1;
		remove_listeners_of(h, (uint32_t)slot, true, 0);
		attach_program(h);
	}
	close(conn);
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void serve(struct hostd *h)
{
	struct pollfd pfd[1 + SRT_SHARE_SLOTS * 2];
	int64_t idle_since = now_ms();
	/* Connections that have not joined yet, beside the members. */
	int pending[SRT_SHARE_SLOTS];
	unsigned n_pending = 0;

	for (;;) {
		unsigned n = 0, members = 0;

		pfd[n++] = (struct pollfd){ .fd = h->listen_fd, .events = POLLIN };
		for (unsigned k = 0; k < SRT_SHARE_SLOTS; k++)
			if (h->slots[k].member >= 0) {
				pfd[n++] = (struct pollfd){ .fd = h->slots[k].member, .events = POLLIN };
				members++;
			}
		for (unsigned i = 0; i < n_pending; i++)
			pfd[n++] = (struct pollfd){ .fd = pending[i], .events = POLLIN };
		/* Only members keep the helper: a connection that has not
		 * joined (someone checking whether a helper runs) does not. */
		if (members)
			idle_since = now_ms();
		else if (now_ms() - idle_since >= HOSTD_IDLE_EXIT_MS)
			return;
		if (poll(pfd, n, members ? -1 : HOSTD_IDLE_EXIT_MS) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (pfd[0].revents & POLLIN) {
			int c = accept4(h->listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (c >= 0 && (!srt_share_peer_is_us(c) || n_pending == SRT_SHARE_SLOTS))
				close(c);
			else if (c >= 0)
				pending[n_pending++] = c;
		}
		for (unsigned i = 1; i < n; i++) {
			struct srt_share_msg m;
			int fd = pfd[i].fd;
			ssize_t got;

			if (!pfd[i].revents)
				continue;
			got = recv(fd, &m, sizeof(m), MSG_DONTWAIT);
			if (got < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			bool was_pending = false;
			for (unsigned j = 0; j < n_pending; j++)
				if (pending[j] == fd) {
					pending[j] = pending[--n_pending];
					was_pending = true;
					break;
				}
			if (got != (ssize_t)sizeof(m)) {
				if (was_pending)
					close(fd);
				else
					member_gone(h, fd);
				continue;
			}
			if (m.type == SRT_SHARE_JOIN && was_pending) {
				handle_join(h, fd);
				if (slot_of(h, fd) < 0)
					close(fd);
			} else if (was_pending) {
				close(fd);      /* must join first */
			} else if (m.type == SRT_SHARE_LISTEN || m.type == SRT_SHARE_UNLISTEN) {
				handle_listen(h, fd, &m, m.type == SRT_SHARE_LISTEN);
			} else {
				send_reply(fd, SRT_SHARE_ERROR, EINVAL, -1);
			}
		}
	}
}

int main(int argc, char **argv)
{
	struct hostd h;
	struct sockaddr_un sun;
	socklen_t len;
	bool foreground = argc > 2 && !strcmp(argv[2], "--foreground");

	/* Nothing of the member that started us stays open here (its
	 * connections would outlive it). */
	close_range(3, ~0u, 0);
	if (argc < 2 || !inet_pton(AF_INET, argv[1], &h.addr)) {
		fprintf(stderr, "usage: softrnic-hostd IPV4-ADDRESS [--foreground]\n"
				"  the per-host helper that lets softrnic processes share an address;\n"
				"  started by softrnic itself when needed\n");
		return 2;
	}
	/* Detach: the member that started us waits for this parent only. */
	if (!foreground) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid > 0)
			return 0;
		setsid();
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
		if (chdir("/"))
			return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	h.listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (h.listen_fd < 0)
		return 1;
	len = srt_share_rendezvous(h.addr, &sun);
	if (bind(h.listen_fd, (struct sockaddr *)&sun, len) || listen(h.listen_fd, 64))
		return errno == EADDRINUSE ? 0 : 1;     /* another helper serves it */
	for (unsigned k = 0; k < SRT_SHARE_SLOTS; k++)
		h.slots[k] = (struct slot){ -1, -1 };
	h.n_udp = 0;
	h.n_listeners = 0;
	serve(&h);
	/* The group's sockets go before the name does: a helper started
	 * after us must begin a new group, not join this one's tail. */
	for (unsigned k = 0; k < h.n_udp; k++)
		close(h.slots[k].udp);
	close(h.listen_fd);
	return 0;
}
