/*
 * host_share.c — joining a shared host address (host_share.h): find or
 * start softrnic-hostd, ask it for a slot, receive the slot's socket.
 *
 * Starting the helper: the first member finds nobody at the rendezvous
 * (ECONNREFUSED), spawns softrnic-hostd, which detaches at once, and
 * retries the connection for a while.  Two members starting together may
 * both spawn one; the second helper finds the name bound and exits.  A
 * helper that is on its way out (idle, closing) may drop a fresh
 * connection before answering: the member then simply starts over.
 */
#include "runtime/host_share.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

extern char **environ;

/* How long a member keeps trying to reach a helper. */
#define JOIN_TIMEOUT_MS 5000

socklen_t srt_share_rendezvous(struct in_addr addr, struct sockaddr_un *sun)
{
	int n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	/* sun_path[0] = 0: the abstract namespace. */
	n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1, "softrnic-hostd-%u-%08x", (unsigned)getuid(),
		     (unsigned)ntohl(addr.s_addr));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* softrnic-hostd: $SOFTRNIC_HOSTD, else beside the library (or program)
 * this code is linked into. */
static bool hostd_path(char *out, size_t cap)
{
	const char *env = getenv("SOFTRNIC_HOSTD");
	Dl_info info;
	const char *slash;

	if (env && *env)
		return snprintf(out, cap, "%s", env) < (int)cap;
	if (!dladdr((void *)srt_host_share_join, &info) || !info.dli_fname || !(slash = strrchr(info.dli_fname, '/')))
		return false;
	return snprintf(out, cap, "%.*s/softrnic-hostd", (int)(slash - info.dli_fname), info.dli_fname) < (int)cap &&
	       access(out, X_OK) == 0;
}

static int spawn_hostd(struct in_addr addr, char *err, size_t errlen)
{
	char path[PATH_MAX], a[INET_ADDRSTRLEN];
	char *argv[3] = { path, a, NULL };
	pid_t pid;
	int rc, status;

	if (!hostd_path(path, sizeof(path))) {
		snprintf(err, errlen, "no softrnic-hostd beside the library (set SOFTRNIC_HOSTD, or SOFTRNIC_SHARE=0)");
		return ENOENT;
	}
	inet_ntop(AF_INET, &addr, a, sizeof(a));
	rc = posix_spawn(&pid, path, NULL, NULL, argv, environ);
	if (rc) {
		snprintf(err, errlen, "cannot start %s: %s", path, strerror(rc));
		return rc;
	}
	/* It forks and its first process exits at once. */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return 0;
}

bool srt_share_peer_is_us(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) && cred.uid == getuid();
}

/* One request, one reply (and the descriptor it may carry). */
static int request(int conn, const struct srt_share_msg *req, struct srt_share_msg *rep, int *fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { rep, sizeof(*rep) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
	ssize_t got;

	if (fd)
		*fd = -1;
	if (send(conn, req, sizeof(*req), MSG_NOSIGNAL) != (ssize_t)sizeof(*req))
		return errno ? errno : EIO;
	do
		got = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)sizeof(*rep))
		return got < 0 ? errno : ECONNRESET;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int got_fd;

			memcpy(&got_fd, CMSG_DATA(c), sizeof(int));
			if (fd)
				*fd = got_fd;
			else
				close(got_fd);
		}
	return 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec t = { 0, (long)ms * 1000000L };

	nanosleep(&t, NULL);
}

int srt_host_share_join(struct srt_host_share *hs, struct in_addr addr, int *udp_fd, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	socklen_t len = srt_share_rendezvous(addr, &sun);
	bool spawned = false;
	int last = ETIMEDOUT;

	hs->conn = -1;
	for (unsigned waited = 0; waited < JOIN_TIMEOUT_MS; waited += 5) {
		struct srt_share_msg req = { .type = SRT_SHARE_JOIN }, rep;
		int conn = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), fd, rc;

		if (conn < 0) {
			snprintf(err, errlen, "socket(AF_UNIX): %s", strerror(errno));
			return errno;
		}
		if (connect(conn, (struct sockaddr *)&sun, len)) {
			last = errno;
			close(conn);
			if ((last == ECONNREFUSED || last == ENOENT) && !spawned) {
				rc = spawn_hostd(addr, err, errlen);
				if (rc)
					return rc;
				spawned = true;
			} else if (last == ECONNREFUSED && waited > 1000) {
				spawned = false;        /* it came and went: start another */
			}
			sleep_ms(5);
			continue;
		}
		if (!srt_share_peer_is_us(conn)) {
			close(conn);
			snprintf(err, errlen, "the rendezvous of %s is held by another user's process", inet_ntoa(addr));
			return EACCES;
		}
		rc = request(conn, &req, &rep, &fd);
		if (rc) {                       /* a helper on its way out */
			close(conn);
			last = rc;
			spawned = false;
			sleep_ms(5);
			continue;
		}
		if (rep.type != SRT_SHARE_SLOT || fd < 0) {
			close(conn);
			if (fd >= 0)
				close(fd);
			rc = rep.type == SRT_SHARE_ERROR && rep.value ? (int)rep.value : EPROTO;
			snprintf(err, errlen, "softrnic-hostd refused %s:4791: %s", inet_ntoa(addr), strerror(rc));
			return rc;
		}
		hs->conn = conn;
		hs->slot = rep.value;
		pthread_mutex_init(&hs->lock, NULL);
		*udp_fd = fd;
		return 0;
	}
	snprintf(err, errlen, "no softrnic-hostd answered for %s:4791: %s", inet_ntoa(addr), strerror(last));
	return last;
}

int srt_host_share_listen(struct srt_host_share *hs, uint64_t service_id, bool on)
{
	struct srt_share_msg req = { .type = on ? SRT_SHARE_LISTEN : SRT_SHARE_UNLISTEN, .service_id = service_id };
	struct srt_share_msg rep;
	int rc;

	if (!hs || hs->conn < 0)
		return 0;
	pthread_mutex_lock(&hs->lock);
	rc = request(hs->conn, &req, &rep, NULL);
	pthread_mutex_unlock(&hs->lock);
	if (rc)
		return rc;
	if (rep.type == SRT_SHARE_ERROR)
		return (int)rep.value;
	return rep.type == SRT_SHARE_OK ? 0 : EPROTO;
}

void srt_host_share_leave(struct srt_host_share *hs)
{
	if (!hs || hs->conn < 0)
		return;
	close(hs->conn);
	hs->conn = -1;
	pthread_mutex_destroy(&hs->lock);
}
