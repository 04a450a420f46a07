/*
 * rsocket_peer_death.c — a stream rsocket whose peer process dies mid-
 * stream ends with an error, not a hang.
 *
 * The process forks before either side touches librdmacm, so each has its
 * own softrnic device (its own 127.0.0.N).  The parent listens, the child
 * connects, and the parent turns on SO_KEEPALIVE with TCP_KEEPIDLE 1 s.
 * Then, by mode:
 *
 *   send  the parent sends without pause; the child reads 4 MiB, checks
 *         them, and is SIGKILLed while the parent is still sending (often
 *         with the parent's credits spent, all its WRITEs acknowledged:
 *         nothing in flight that could find the peer gone but the
 *         keepalive).  A send must fail.
 *   recv  the child sends 4 MiB, stays idle 2.5 s (the parent, blocked in
 *         rrecv, sends keepalives the live child acknowledges: the
 *         connection must survive them), sends 64 KiB more, and is
 *         SIGKILLed; the parent, blocked in rrecv for more, must get -1
 *         with ETIMEDOUT — only the keepalive can tell a receiver.
 *
 * Either way the error must come within 60 s of the death (about 1.5 s
 * here: the keepalive period and the RC retries), no SIGKILL, DREQ or
 * last word from the peer, and every byte read must be the byte sent.
 *
 * usage: rsocket_peer_death <port> send|recv
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#define CHUNK 65536
#define BULK (4u << 20)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint8_t byte_at(uint64_t off)
{
	return (uint8_t)(off * 131 + (off >> 12));
}

static void fill(uint8_t *buf, size_t len, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = byte_at(off + i);
}

/* Reads until `want` bytes in all have come, checking each; returns the
 * bytes read, or -1 (errno) on an error, -2 on a wrong byte. */
static int64_t read_checked(int s, uint64_t *got, uint64_t want)
{
	static uint8_t buf[CHUNK];

	while (*got < want) {
		ssize_t n = rrecv(s, buf, sizeof(buf), 0);
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = 0;
			return -1;
		}
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != byte_at(*got + (uint64_t)i))
				return -2;
		*got += (uint64_t)n;
	}
	return (int64_t)*got;
}

static int send_all(int s, uint64_t *sent, uint64_t until)
{
	static uint8_t buf[CHUNK];

	while (*sent < until) {
		size_t len = until - *sent < CHUNK ? (size_t)(until - *sent) : CHUNK;
		fill(buf, len, *sent);
		ssize_t n = rsend(s, buf, len, 0);
		if (n <= 0)
			return -1;
		*sent += (uint64_t)n;
	}
	return 0;
}

/* The child: connect, then read (send mode) or send (recv mode), tell the
 * parent, wait to be killed. */
static int child(int port, bool parent_sends, int ready_fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	uint64_t n = 0;
	int s = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < 100 && s < 0; i++) {
		s = rsocket(AF_INET, SOCK_STREAM, 0);
		if (s >= 0 && rconnect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
			rclose(s);
			s = -1;
			usleep(50000);
		}
	}
	if (s < 0)
		return 2;
	if (parent_sends) {
		int64_t r = read_checked(s, &n, BULK);
		if (r < 0)
			return r == -2 ? 4 : 3;
	} else {
		if (send_all(s, &n, BULK))
			return 3;
		usleep(2500000);        /* idle: the parent's keepalives come and go */
		if (send_all(s, &n, BULK + CHUNK))
			return 3;
	}
	if (write(ready_fd, "r", 1) != 1)
		return 5;
	for (;;)
		pause();        /* killed here, the stream still open */
}

static void kill_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* send mode: send until the child has read its 4 MiB, kill it, keep
 * sending; returns the errno a send failed with, 0 if none within 60 s. */
static int parent_sends(int s, pid_t pid, int ready_fd, double *t_kill)
{
	static uint8_t buf[CHUNK];
	uint64_t sent = 0;
	bool killed = false;
	double deadline = now_s() + 120;
	int status;
	char c;

	while (now_s() < deadline) {
		fill(buf, sizeof(buf), sent);
		ssize_t n = rsend(s, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN)
			return killed ? errno : -1;
		if (n > 0)
			sent += (uint64_t)n;
		if (!killed) {
			struct timeval tv = { 0, n > 0 ? 0 : 1000 };
			fd_set fds;
			FD_ZERO(&fds);
			FD_SET(ready_fd, &fds);
			if (select(ready_fd + 1, &fds, NULL, NULL, &tv) == 1 && read(ready_fd, &c, 1) == 1) {
				kill_child(pid);
				killed = true;
				*t_kill = now_s();
			} else if (waitpid(pid, &status, WNOHANG) == pid) {
				fprintf(stderr, "rsocket_peer_death: the child ended early (exit %d)\n",
					WIFEXITED(status) ? WEXITSTATUS(status) : -1);
				return -1;
			}
		} else if (now_s() - *t_kill > 60) {
			fprintf(stderr, "rsocket_peer_death: sends still succeed 60 s after the peer died "
				"(sent %llu)\n", (unsigned long long)sent);
			return -1;
		} else if (n <= 0) {
			usleep(1000);
		}
	}
	fprintf(stderr, "rsocket_peer_death: the child never read its 4 MiB (sent %llu)\n",
		(unsigned long long)sent);
	kill_child(pid);
	return -1;
}

/* recv mode: read the child's 4 MiB + 64 KiB, kill it, read on; returns
 * the errno the read failed with. */
static int parent_receives(int s, pid_t pid, int ready_fd, double *t_kill)
{
	uint64_t got = 0;
	char c;

	if (read_checked(s, &got, BULK + CHUNK) < 0) {
		fprintf(stderr, "rsocket_peer_death: reading the child's data failed at %llu: %s\n",
			(unsigned long long)got, errno ? strerror(errno) : "wrong byte or end of stream");
		kill_child(pid);
		return -1;
	}
	if (read(ready_fd, &c, 1) != 1) {
		fprintf(stderr, "rsocket_peer_death: the child ended early\n");
		kill_child(pid);
		return -1;
	}
	kill_child(pid);
	*t_kill = now_s();
	/* Blocks until the keepalive finds the peer gone. */
	int64_t r = read_checked(s, &got, BULK + 2 * CHUNK);
	if (r >= 0 || errno == 0) {
		fprintf(stderr, "rsocket_peer_death: rrecv after the death returned %s, not an error\n",
			r >= 0 ? "data" : "end of stream");
		return -1;
	}
	return errno;
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 18850;
	bool sends = !(argc > 2 && !strcmp(argv[2], "recv"));
	int ready[2];
	pid_t pid;

	if (pipe(ready))
		return 1;
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		_exit(child(port, sends, ready[1]));
	}
	close(ready[1]);

	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int l = rsocket(AF_INET, SOCK_STREAM, 0), one = 1, idle = 1, v = 0;
	socklen_t vlen = sizeof(v);
	if (l < 0 || rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    rbind(l, (struct sockaddr *)&a, sizeof(a)) || rlisten(l, 1)) {
		perror("rsocket listener");
		kill_child(pid);
		return 1;
	}
	int s = raccept(l, NULL, NULL);
	if (s < 0 || rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
	    rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
	    rgetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &v, &vlen) || v != 1) {
		perror("raccept or keepalive options");
		kill_child(pid);
		return 1;
	}
	double t_kill = 0;
	int e = sends ? parent_sends(s, pid, ready[0], &t_kill) : parent_receives(s, pid, ready[0], &t_kill);
	if (e <= 0)
		return 1;
	double after = now_s() - t_kill;
	if (after > 60) {
		fprintf(stderr, "rsocket_peer_death: the error came %.1f s after the death\n", after);
		return 1;
	}
	printf("rsocket_peer_death (%s): what was read was intact; after the peer's death %s failed with %s "
	       "after %.1f s\n", sends ? "send" : "recv", sends ? "a send" : "rrecv", strerror(e), after);
	rclose(s);
	rclose(l);
	return 0;
}
