/*
 * preload_epoll.c — an ordinary socket program (socket, bind, listen,
 * connect, accept, epoll, read, write, close: no rsocket call) that CTest
 * runs under softrnic's librspreload.so, checking that the library keeps
 * epoll's rules for rsockets:
 *  - a connection's readiness is reported with the program's epoll_data;
 *  - a socket closed without EPOLL_CTL_DEL leaves the set, as the kernel
 *    drops a closed file: the next connection (whose rsocket may reuse
 *    the closed one's internal fd) is never reported with the closed
 *    one's data; so does an ordinary fd (a pipe) closed without DEL;
 *  - the sockets really are rsockets (SOFTRNIC_RSPRELOAD_EXPECT=1: the
 *    listener is in softrnic's CM registry);
 *  - after fork, the child closing an inherited socket leaves the parent's
 *    connection working.
 * usage: preload_epoll <port>
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static struct sockaddr_in addr(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	return a;
}

/* A connected pair (client, server side) through listener l. */
static int connect_pair(int l, int port, int *server_side)
{
	struct sockaddr_in a = addr(port);
	int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	if (c < 0)
		return -1;
	int r = connect(c, (struct sockaddr *)&a, sizeof(a));
	if (r && errno != EINPROGRESS)
		return -1;
	*server_side = accept(l, NULL, NULL);
	struct pollfd p = { .fd = c, .events = POLLOUT };
	if (*server_side < 0 || poll(&p, 1, 5000) != 1)
		return -1;
	int err = -1;
	socklen_t el = sizeof(err);
	if (getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el) || err)
		return -1;
	return c;
}

/* Waits up to ms for events; the number, with out[] filled. */
/* Someone holds RDMA_PS_TCP's port in softrnic's loopback port space: an
 * abstract socket "softrnic-cm-262-<port>" (compat/rdmacm/port_registry.c). */
static bool listening_through_rsockets(int port)
{
	char line[512], want[64];
	bool found = false;
	FILE *f = fopen("/proc/net/unix", "r");

	if (!f)
		return false;
	snprintf(want, sizeof(want), " @softrnic-cm-262-%d\n", port);
	while (!found && fgets(line, sizeof(line), f)) {
		size_t n = strlen(line), w = strlen(want);
		found = n >= w && strcmp(line + n - w, want) == 0;
	}
	fclose(f);
	return found;
}

static int wait_for(int ep, struct epoll_event *out, int max, int ms)
{
	int n;

	do
		n = epoll_wait(ep, out, max, ms);
	while (n < 0 && errno == EINTR);
	return n;
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 18856;
	struct sockaddr_in a = addr(port);
	struct epoll_event ev, out[8];
	char b[16];
	int v = 1;

	int l = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(l >= 0);
	CHECK(setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)) == 0);
	CHECK(bind(l, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(l, 8) == 0);
	struct stat st;
	CHECK(fstat(l, &st) == 0 && S_ISSOCK(st.st_mode));
	if (getenv("SOFTRNIC_RSPRELOAD_EXPECT")) {
		CHECK(listening_through_rsockets(port));
	}
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);

	/* First connection: reported with data 111. */
	int s1, c1 = connect_pair(l, port, &s1);
	CHECK(c1 >= 0);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 111 };
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, s1, &ev) == 0);
	/* Both ends in the set: the fds their rsockets free are taken again
	 * by the next connection (its rsocket's or its placeholder). */
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 112 };
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, c1, &ev) == 0);
	CHECK(wait_for(ep, out, 8, 0) == 0);
	CHECK(write(c1, "one", 3) == 3);
	int n = wait_for(ep, out, 8, 5000);
	CHECK(n == 1 && out[0].data.u64 == 111);
	CHECK(read(s1, b, sizeof(b)) == 3 && !memcmp(b, "one", 3));

	/* Closed without EPOLL_CTL_DEL: it leaves the set. */
	CHECK(close(s1) == 0);
	CHECK(close(c1) == 0);
	int s2, c2 = connect_pair(l, port, &s2);
	CHECK(c2 >= 0);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 222 };
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, s2, &ev) == 0);
	/* Both ends readable: whichever of the two new rsockets took the
	 * closed one's internal fd, a stale entry would now be reported. */
	CHECK(write(c2, "two", 3) == 3);
	CHECK(write(s2, "owt", 3) == 3);
	struct pollfd pc = { .fd = c2, .events = POLLIN };
	CHECK(poll(&pc, 1, 5000) == 1);
	n = wait_for(ep, out, 8, 5000);
	CHECK(n >= 1);
	for (int i = 0; i < n; i++) {
		if (out[i].data.u64 != 222)
			fprintf(stderr, "event for data %llu: a closed socket is still in the set\n",
				(unsigned long long)out[i].data.u64);
		CHECK(out[i].data.u64 == 222);
	}

	/* An ordinary fd closed without EPOLL_CTL_DEL leaves the set too:
	 * a new pipe that takes its number is not in the set. */
	int pfd[2], qfd[2];
	CHECK(pipe(pfd) == 0);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 333 };
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev) == 0);
	CHECK(close(pfd[0]) == 0 && close(pfd[1]) == 0);
	CHECK(pipe(qfd) == 0);
	CHECK(qfd[0] == pfd[0]);        /* the lowest free number, again */
	CHECK(write(qfd[1], "x", 1) == 1);
	n = wait_for(ep, out, 8, 50);
	for (int i = 0; i < n; i++) {
		if (out[i].data.u64 == 333)
			fprintf(stderr, "event for data 333: a closed pipe is still in the set\n");
		CHECK(out[i].data.u64 != 333);
	}
	close(qfd[0]);
	close(qfd[1]);

	/* A fork: the child closes what it inherited and exits; the parent's
	 * connection still carries data both ways. */
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(s2);
		close(c2);
		close(l);
		_exit(0);
	}
	int status = -1;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(read(s2, b, sizeof(b)) == 3 && !memcmp(b, "two", 3));
	CHECK(read(c2, b, sizeof(b)) == 3 && !memcmp(b, "owt", 3));
	CHECK(write(s2, "back", 4) == 4);
	struct pollfd p = { .fd = c2, .events = POLLIN };
	CHECK(poll(&p, 1, 5000) == 1);
	CHECK(read(c2, b, sizeof(b)) == 4 && !memcmp(b, "back", 4));
	/* And the listener still accepts. */
	int s3, c3 = connect_pair(l, port, &s3);
	CHECK(c3 >= 0);

	close(c3);
	close(s3);
	close(c2);
	close(s2);
	close(ep);
	close(l);
	if (!check_failures)
		printf("preload_epoll: ok\n");
	return check_exit("preload_epoll");
}
