/*
 * test_repoll.c — librdmacm's epoll over rsockets (repoll_create,
 * repoll_ctl, repoll_wait) behaves as epoll: the errnos epoll_ctl and
 * epoll_wait give for bad use; an rsocket and a pipe in one set, each
 * reported with its own epoll_data when it is ready and not before;
 * level-triggered (ready again until read); EPOLLONESHOT until
 * EPOLL_CTL_MOD; EPOLL_CTL_DEL; timeouts; a waiter blocked with no
 * timeout woken by another thread's EPOLL_CTL_ADD of a ready fd, and
 * ended with EINTR by a signal; the
 * peer's close as EPOLLIN/EPOLLHUP; rclose of the instance.  One process;
 * its own listener is the peer.
 * usage: test_repoll <port>
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "check.h"

int repoll_create(int flags);
int repoll_ctl(int epfd, int op, int fd, struct epoll_event *event);
int repoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct adder {
	int ep, fd;
	int ret;
};

static void *add_later(void *arg)
{
	struct adder *a = arg;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 77 };

	usleep(100 * 1000);
	a->ret = repoll_ctl(a->ep, EPOLL_CTL_ADD, a->fd, &ev);
	return NULL;
}

static volatile sig_atomic_t signalled;

static void on_signal(int sig)
{
	(void)sig;
	signalled++;
}

/* arg: the pthread_t of the thread to signal after 100 ms. */
static void *kick_later(void *arg)
{
	usleep(100 * 1000);
	pthread_kill(*(pthread_t *)arg, SIGUSR1);
	return NULL;
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 18855;
	struct sockaddr_in la = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct epoll_event ev, out[8];
	char b[64];

	inet_pton(AF_INET, "127.0.0.1", &la.sin_addr);
	EXPECT_ERR(repoll_create(0x1234), EINVAL);
	int ep = repoll_create(EPOLL_CLOEXEC);
	CHECK(ep >= 0);

	/* A connected pair of rsockets and a pipe. */
	int l = rsocket(AF_INET, SOCK_STREAM, 0), c = rsocket(AF_INET, SOCK_STREAM, 0);
	int v = 1;
	CHECK(l >= 0 && c >= 0);
	CHECK(rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)) == 0);
	CHECK(rbind(l, (struct sockaddr *)&la, sizeof(la)) == 0 && rlisten(l, 4) == 0);
	/* No service thread answers the listener: connect without blocking,
	 * then accept. */
	CHECK(rfcntl(c, F_SETFL, O_NONBLOCK) == 0);
	CHECK(rconnect(c, (struct sockaddr *)&la, sizeof(la)) == -1 && errno == EINPROGRESS);
	int s = raccept(l, NULL, NULL);
	CHECK(s >= 0);
	struct pollfd cp = { .fd = c, .events = POLLOUT };
	CHECK(rpoll(&cp, 1, 5000) == 1);
	CHECK(rfcntl(c, F_SETFL, 0) == 0);
	int p[2];
	CHECK(pipe(p) == 0);

	/* Bad use, as epoll_ctl and epoll_wait answer it. */
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 1 };
	EXPECT_ERR(repoll_ctl(-1, EPOLL_CTL_ADD, s, &ev), EBADF);
	EXPECT_ERR(repoll_ctl(p[0], EPOLL_CTL_ADD, s, &ev), EBADF);     /* not an instance */
	EXPECT_ERR(repoll_ctl(ep, EPOLL_CTL_ADD, 1000000, &ev), EBADF);
	EXPECT_ERR(repoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
	EXPECT_ERR(repoll_ctl(ep, 99, s, &ev), EINVAL);
	EXPECT_ERR(repoll_ctl(ep, EPOLL_CTL_ADD, s, NULL), EFAULT);
	EXPECT_ERR(repoll_ctl(ep, EPOLL_CTL_MOD, s, &ev), ENOENT);
	EXPECT_ERR(repoll_ctl(ep, EPOLL_CTL_DEL, s, NULL), ENOENT);
	EXPECT_ERR(repoll_wait(ep, out, 0, 0), EINVAL);
	EXPECT_ERR(repoll_wait(-1, out, 8, 0), EBADF);
	EXPECT_ERR(repoll_wait(ep, NULL, 8, 0), EFAULT);

	/* Nothing ready: 0 at once, and 0 after the timeout. */
	CHECK(repoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) == 0);
	EXPECT_ERR(repoll_ctl(ep, EPOLL_CTL_ADD, s, &ev), EEXIST);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 2 };
	CHECK(repoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
	CHECK(repoll_wait(ep, out, 8, 0) == 0);
	double t0 = now_ms();
	CHECK(repoll_wait(ep, out, 8, 80) == 0);
	double waited = now_ms() - t0;
	printf("     an empty wait of 80 ms took %.1f ms\n", waited);
	CHECK(waited >= 79 && waited < 2000);

	/* The rsocket becomes readable: reported with its data, level
	 * triggered until read. */
	CHECK(rsend(c, "hello", 5, 0) == 5);
	int n = repoll_wait(ep, out, 8, 5000);
	CHECK(n == 1 && out[0].data.u64 == 1 && (out[0].events & EPOLLIN));
	CHECK(repoll_wait(ep, out, 8, 0) == 1 && out[0].data.u64 == 1);
	CHECK(rrecv(s, b, sizeof(b), 0) == 5 && !memcmp(b, "hello", 5));
	CHECK(repoll_wait(ep, out, 8, 0) == 0);

	/* Both at once, each with its own data; maxevents 1 gives one. */
	CHECK(rsend(c, "x", 1, 0) == 1);
	CHECK(write(p[1], "y", 1) == 1);
	double until = now_ms() + 5000;
	do
		n = repoll_wait(ep, out, 8, 100);
	while (n < 2 && now_ms() < until);
	CHECK(n == 2 && out[0].data.u64 + out[1].data.u64 == 3);
	CHECK(repoll_wait(ep, out, 1, 0) == 1);

	/* EPOLLONESHOT: once, then not until EPOLL_CTL_MOD. */
	ev = (struct epoll_event){ .events = EPOLLIN | EPOLLONESHOT, .data.u64 = 2 };
	CHECK(repoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev) == 0);
	CHECK(rrecv(s, b, 1, 0) == 1);
	CHECK(repoll_wait(ep, out, 8, 0) == 1 && out[0].data.u64 == 2);
	CHECK(repoll_wait(ep, out, 8, 0) == 0);
	CHECK(repoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev) == 0);
	CHECK(repoll_wait(ep, out, 8, 0) == 1 && out[0].data.u64 == 2);

	/* DEL: the pipe is no longer reported though still readable. */
	CHECK(repoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL) == 0);
	CHECK(repoll_wait(ep, out, 8, 0) == 0);

	/* EPOLLOUT on the connected rsocket. */
	ev = (struct epoll_event){ .events = EPOLLOUT, .data.u64 = 9 };
	CHECK(repoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) == 0);
	CHECK(repoll_wait(ep, out, 8, 1000) == 1 && out[0].data.u64 == 9 && (out[0].events & EPOLLOUT));
	CHECK(repoll_ctl(ep, EPOLL_CTL_DEL, c, NULL) == 0);

	/* A waiter with no timeout, woken by another thread's ADD of a fd
	 * that is already ready (the pipe still holds its byte). */
	struct adder a = { .ep = ep, .fd = p[0], .ret = -2 };
	pthread_t th;
	CHECK(pthread_create(&th, NULL, add_later, &a) == 0);
	t0 = now_ms();
	n = repoll_wait(ep, out, 8, -1);
	pthread_join(th, NULL);
	printf("     woken by the other thread's add after %.1f ms\n", now_ms() - t0);
	CHECK(a.ret == 0 && n == 1 && out[0].data.u64 == 77);
	CHECK(repoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL) == 0);

	/* A signal to the waiting thread ends a wait with no timeout: EINTR,
	 * as epoll_wait gives (the handler is installed without SA_RESTART). */
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	pthread_t self = pthread_self();
	CHECK(pthread_create(&th, NULL, kick_later, &self) == 0);
	t0 = now_ms();
	EXPECT_ERR(repoll_wait(ep, out, 8, -1), EINTR);
	pthread_join(th, NULL);
	printf("     interrupted after %.1f ms\n", now_ms() - t0);
	CHECK(signalled == 1);

	/* The peer closes: the rsocket reports it (EPOLLIN with end of
	 * stream, or a hang-up). */
	CHECK(rclose(c) == 0);
	n = repoll_wait(ep, out, 8, 5000);
	CHECK(n == 1 && out[0].data.u64 == 1 && (out[0].events & (EPOLLIN | EPOLLHUP)));
	CHECK(rrecv(s, b, sizeof(b), 0) == 0);

	/* rclose ends the instance. */
	CHECK(rclose(ep) == 0);
	EXPECT_ERR(repoll_wait(ep, out, 8, 0), EBADF);
	CHECK(rclose(s) == 0 && rclose(l) == 0);
	close(p[0]);
	close(p[1]);
	return check_exit("test_repoll");
}
