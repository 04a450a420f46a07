/*
 * rsocket_peer_death.c — a stream rsocket whose peer process dies mid-
 * stream ends with an error, not a hang.
 *
 * The process forks before either side touches librdmacm, so each has its
 * own softrnic device (its own 127.0.0.N).  The parent listens and sends
 * without pause; the child connects, reads 4 MiB, checks them, and is
 * SIGKILLed while the parent is still sending: no DREQ, no last word.
 * The parent's next sends must fail (the RDMA WRITEs that carry them are
 * never acknowledged: retry exceeded, the QP in error) within 60 s, and
 * every byte the child read must be the byte that was sent.
 *
 * usage: rsocket_peer_death <port>
 */
#include <arpa/inet.h>
#include <errno.h>
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
#define CHILD_READS (4u << 20)

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

/* The child: read CHILD_READS bytes, check them, tell the parent, wait to
 * be killed. */
static int child(int port, int ready_fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	static uint8_t buf[CHUNK];
	uint64_t got = 0;
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
	while (got < CHILD_READS) {
		ssize_t n = rrecv(s, buf, sizeof(buf), 0);
		if (n <= 0)
			return 3;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != byte_at(got + (uint64_t)i))
				return 4;
		got += (uint64_t)n;
	}
	if (write(ready_fd, "r", 1) != 1)
		return 5;
	for (;;)
		pause();        /* killed here, the stream still open */
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 18850;
	int ready[2];
	pid_t pid;

	if (pipe(ready))
		return 1;
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		_exit(child(port, ready[1]));
	}
	close(ready[1]);

	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int l = rsocket(AF_INET, SOCK_STREAM, 0), one = 1;
	if (l < 0 || rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    rbind(l, (struct sockaddr *)&a, sizeof(a)) || rlisten(l, 1)) {
		perror("rsocket listener");
		kill(pid, SIGKILL);
		return 1;
	}
	int s = raccept(l, NULL, NULL);
	if (s < 0) {
		perror("raccept");
		kill(pid, SIGKILL);
		return 1;
	}
	/* Send until the child has read its 4 MiB, then kill it and keep
	 * sending: a send must fail. */
	static uint8_t buf[CHUNK];
	uint64_t sent = 0;
	bool killed = false;
	double t_kill = 0, deadline = now_s() + 120;
	int fail_errno = 0, status = 0;
	char c;

	while (now_s() < deadline) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = byte_at(sent + i);
		ssize_t n = rsend(s, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN) {
			fail_errno = errno;
			break;
		}
		if (n > 0)
			sent += (uint64_t)n;
		if (!killed) {
			struct timeval tv = { 0, n > 0 ? 0 : 1000 };
			fd_set fds;
			FD_ZERO(&fds);
			FD_SET(ready[0], &fds);
			if (select(ready[0] + 1, &fds, NULL, NULL, &tv) == 1 && read(ready[0], &c, 1) == 1) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				killed = true;
				t_kill = now_s();
			} else if (waitpid(pid, &status, WNOHANG) == pid) {
				fprintf(stderr, "rsocket_peer_death: the child ended early (exit %d)\n",
					WIFEXITED(status) ? WEXITSTATUS(status) : -1);
				return 1;
			}
		} else if (now_s() - t_kill > 60) {
			break;
		} else if (n <= 0) {
			usleep(1000);
		}
	}
	if (!killed) {
		fprintf(stderr, "rsocket_peer_death: the child never read its 4 MiB (sent %llu)\n",
			(unsigned long long)sent);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return 1;
	}
	if (!fail_errno) {
		fprintf(stderr, "rsocket_peer_death: sends still succeed 60 s after the peer died (sent %llu)\n",
			(unsigned long long)sent);
		return 1;
	}
	printf("rsocket_peer_death: the child read 4 MiB intact; after its death a send failed with %s after %.1f s "
	       "(%llu bytes sent in all)\n", strerror(fail_errno), now_s() - t_kill, (unsigned long long)sent);
	rclose(s);
	rclose(l);
	return 0;
}
