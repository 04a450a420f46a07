/*
 * test_rsocket.c — softrnic's stream rsockets behave as sockets: bad use
 * gets the errno a TCP socket gives (EBADF, ENOTCONN, EAGAIN, EINPROGRESS,
 * ECONNREFUSED, EPIPE, EISCONN), and a connection carries data intact
 * through every send and receive call (rsend/rwrite/rwritev/rsendmsg,
 * rrecv/rread/rreadv/rrecvmsg/rrecvfrom, MSG_PEEK, MSG_WAITALL), with
 * rpoll and rselect reporting readiness, non-blocking and blocking, and
 * the end of the stream after the peer closes; datagram sockets exchange
 * datagrams (first over UDP, then UD SENDs) and refuse what a UDP socket
 * refuses.  One process; its own listener is the peer.
 * usage: test_rsocket <port>
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <rdma/rsocket.h>

#include "check.h"

static struct sockaddr_in addr_of(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sends all of buf from a non-blocking socket while draining the peer
 * (one process is both ends: neither may block on the other). */
static int pump(int from, int to, const uint8_t *buf, uint8_t *out, size_t len)
{
	size_t sent = 0, got = 0;
	double end = now_s() + 10;

	while (got < len && now_s() < end) {
		struct pollfd p[2] = { { .fd = to, .events = POLLIN }, { .fd = from, .events = POLLOUT } };
		(void)rpoll(p, sent < len ? 2 : 1, 1000);
		if (sent < len) {
			ssize_t s = rsend(from, buf + sent, len - sent > 100000 ? 100000 : len - sent, 0);
			if (s > 0)
				sent += (size_t)s;
			else if (errno != EAGAIN)
				return -1;
		}
		ssize_t r = rrecv(to, out + got, len - got, MSG_DONTWAIT);
		if (r > 0)
			got += (size_t)r;
		else if (r == 0 || errno != EAGAIN)
			return -1;
	}
	return got == len ? 0 : -1;
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 18830;
	struct sockaddr_in la = addr_of(port), refused = addr_of(port + 1);
	/* Nobody listens on port + 1 of our own device's address (CTest
	 * pins it with SOFTRNIC_ADDR): the device answers the REQ with a
	 * REJ.  A bare 127.0.0.1 may be served by no device at that moment
	 * (another test's, or none): then the REQ times out instead. */
	const char *own = getenv("SOFTRNIC_ADDR");
	if (own)
		inet_pton(AF_INET, own, &refused.sin_addr);
	char b[64];
	struct iovec wv_bad[1] = { { NULL, 0 } };

	/* No such socket. */
	EXPECT_ERR(rsend(-1, b, 1, 0), EBADF);
	EXPECT_ERR(rrecv(1000000, b, 1, 0), EBADF);
	EXPECT_ERR(rclose(-1), EBADF);
	EXPECT_ERR(rshutdown(12345, SHUT_RDWR), EBADF);
	EXPECT_ERR(rfcntl(-1, F_GETFL), EBADF);
	EXPECT_ERR(rsetsockopt(-1, SOL_SOCKET, SO_SNDBUF, b, sizeof(int)), EBADF);
	/* What rsockets do not make. */
	EXPECT_ERR(rsocket(AF_UNIX, SOCK_STREAM, 0), EAFNOSUPPORT);
	EXPECT_ERR(rsocket(AF_INET, SOCK_STREAM, IPPROTO_UDP), ENOTSUP);

	/* Not connected. */
	int c = rsocket(AF_INET, SOCK_STREAM, 0);
	CHECK(c >= 0);
	struct sockaddr_in pa;
	socklen_t plen = sizeof(pa);
	EXPECT_ERR(rsend(c, b, 1, 0), ENOTCONN);
	EXPECT_ERR(rrecv(c, b, 1, 0), ENOTCONN);
	EXPECT_ERR(rgetpeername(c, (struct sockaddr *)&pa, &plen), ENOTCONN);
	EXPECT_ERR(rshutdown(c, SHUT_RDWR), ENOTCONN);
	EXPECT_ERR(rbind(c, (struct sockaddr *)&la, 4), EINVAL);
	int v = 1;
	EXPECT_ERR(rsetsockopt(c, SOL_SOCKET, SO_BROADCAST + 1000, &v, sizeof(v)), ENOTSUP);

	/* Nobody listens: refused, blocking. */
	double t0 = now_s();
	EXPECT_ERR(rconnect(c, (struct sockaddr *)&refused, sizeof(refused)), ECONNREFUSED);
	printf("     refused after %.0f ms\n", (now_s() - t0) * 1e3);
	CHECK(rclose(c) == 0);

	/* Options before connecting. */
	c = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK(c >= 0);
	CHECK(rfcntl(c, F_GETFL) & O_NONBLOCK);
	v = 65536;
	CHECK(rsetsockopt(c, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) == 0);
	socklen_t vl = sizeof(v);
	CHECK(rgetsockopt(c, SOL_SOCKET, SO_SNDBUF, &v, &vl) == 0 && v == 131072);
	v = 1;
	CHECK(rsetsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)) == 0);
	v = 0;
	vl = sizeof(v);
	CHECK(rgetsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &vl) == 0 && v == 1);

	/* A listener; nothing to accept yet. */
	int l = rsocket(AF_INET, SOCK_STREAM, 0);
	CHECK(l >= 0);
	v = 1;
	CHECK(rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)) == 0);
	CHECK(rbind(l, (struct sockaddr *)&la, sizeof(la)) == 0);
	CHECK(rlisten(l, 4) == 0);
	CHECK(rfcntl(l, F_SETFL, O_NONBLOCK) == 0);
	EXPECT_ERR(raccept(l, NULL, NULL), EAGAIN);
	CHECK(rfcntl(l, F_SETFL, 0) == 0);

	/* Non-blocking connect: in progress, then the listener accepts,
	 * then POLLOUT and SO_ERROR 0. */
	EXPECT_ERR(rconnect(c, (struct sockaddr *)&la, sizeof(la)), EINPROGRESS);
	struct pollfd lp = { .fd = l, .events = POLLIN };
	CHECK(rpoll(&lp, 1, 5000) == 1 && (lp.revents & POLLIN));
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	int s = raccept(l, (struct sockaddr *)&from, &flen);
	CHECK(s >= 0);
	CHECK(flen == sizeof(from) && from.sin_family == AF_INET);
	struct pollfd cp = { .fd = c, .events = POLLOUT };
	CHECK(rpoll(&cp, 1, 5000) == 1 && (cp.revents & POLLOUT));
	int err = -1;
	vl = sizeof(err);
	CHECK(rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &vl) == 0 && err == 0);
	plen = sizeof(pa);
	CHECK(rgetpeername(c, (struct sockaddr *)&pa, &plen) == 0 && pa.sin_port == htons(port));
	plen = sizeof(pa);
	CHECK(rgetsockname(s, (struct sockaddr *)&pa, &plen) == 0 && pa.sin_port == htons(port));
	EXPECT_ERR(rconnect(c, (struct sockaddr *)&la, sizeof(la)), EISCONN);
	EXPECT_ERR(rsend(c, NULL, 10, 0), EFAULT);
	EXPECT_ERR(rrecv(c, NULL, 10, 0), EFAULT);
	EXPECT_ERR(rwritev(c, NULL, 1), EFAULT);
	EXPECT_ERR(rreadv(c, wv_bad, -1), EINVAL);
	EXPECT_ERR(rsendto(c, b, 1, 0, (struct sockaddr *)&la, sizeof(la)), EISCONN);

	/* Nothing sent yet: a non-blocking receive would block. */
	EXPECT_ERR(rrecv(c, b, sizeof(b), 0), EAGAIN);
	EXPECT_ERR(rrecv(s, b, sizeof(b), MSG_DONTWAIT), EAGAIN);
	struct pollfd sp = { .fd = s, .events = POLLIN };
	CHECK(rpoll(&sp, 1, 0) == 0);

	/* 4 MiB through a 128 KiB receive buffer: many grants and credits. */
	size_t big = 4u << 20;
	uint8_t *sbig = malloc(big), *dst = calloc(1, big);
	for (size_t i = 0; i < big; i++)
		sbig[i] = (uint8_t)(i * 7 + (i >> 13));
	CHECK(pump(c, s, sbig, dst, big) == 0);
	CHECK(memcmp(sbig, dst, big) == 0);
	/* And the other way (s is blocking: 64 KiB fits its send buffer). */
	memset(dst, 0, big);
	CHECK(rsend(s, sbig, 65536, 0) == 65536);
	CHECK(rpoll(&cp, 1, 0) >= 0);
	struct pollfd cin = { .fd = c, .events = POLLIN };
	CHECK(rpoll(&cin, 1, 5000) == 1 && (cin.revents & POLLIN));
	/* MSG_PEEK leaves the bytes; MSG_WAITALL (blocking) takes all. */
	CHECK(rfcntl(c, F_SETFL, 0) == 0);
	CHECK(rrecv(c, dst, 100, MSG_PEEK) == 100 && memcmp(dst, sbig, 100) == 0);
	CHECK(rrecv(c, dst, 65536, MSG_WAITALL) == 65536 && memcmp(dst, sbig, 65536) == 0);

	/* Vectors and messages, blocking both ways. */
	char h1[5] = "hello", h2[7] = " world!";
	struct iovec wv[2] = { { h1, 5 }, { h2, 7 } };
	CHECK(rwritev(c, wv, 2) == 12);
	char r1[3], r2[9];
	struct iovec rv[2] = { { r1, 3 }, { r2, 9 } };
	CHECK(rreadv(s, rv, 2) == 12 && memcmp(r1, "hel", 3) == 0 && memcmp(r2, "lo world!", 9) == 0);
	struct msghdr mh = { .msg_iov = wv, .msg_iovlen = 2 };
	CHECK(rsendmsg(s, &mh, 0) == 12);
	memset(r2, 0, sizeof(r2));
	struct msghdr rh = { .msg_iov = rv, .msg_iovlen = 2 };
	CHECK(rrecvmsg(c, &rh, MSG_WAITALL) == 12 && memcmp(r2, "lo world!", 9) == 0);
	CHECK(rwrite(c, "x", 1) == 1);
	CHECK(rread(s, b, sizeof(b)) == 1 && b[0] == 'x');
	CHECK(rsendto(s, "yz", 2, 0, NULL, 0) == 2);
	plen = sizeof(pa);
	CHECK(rrecvfrom(c, b, 2, MSG_WAITALL, (struct sockaddr *)&pa, &plen) == 2 && b[1] == 'z');

	/* rselect: both writable, neither readable. */
	fd_set rd, wr;
	FD_ZERO(&rd);
	FD_ZERO(&wr);
	FD_SET(c, &rd);
	FD_SET(s, &rd);
	FD_SET(c, &wr);
	FD_SET(s, &wr);
	struct timeval tv = { 0, 100000 };
	int nfd = (c > s ? c : s) + 1;
	CHECK(rselect(nfd, &rd, &wr, NULL, &tv) == 2);
	CHECK(FD_ISSET(c, &wr) && FD_ISSET(s, &wr) && !FD_ISSET(c, &rd) && !FD_ISSET(s, &rd));

	/* Half close: s shuts its writing side, c reads the end of the stream
	 * and can still send to s. */
	CHECK(rsend(s, "end", 3, 0) == 3);
	CHECK(rshutdown(s, SHUT_WR) == 0);
	EXPECT_ERR(rsend(s, "no", 2, 0), EPIPE);
	CHECK(rrecv(c, b, sizeof(b), MSG_WAITALL) == 3 && memcmp(b, "end", 3) == 0);
	CHECK(rrecv(c, b, sizeof(b), 0) == 0);
	CHECK(rsend(c, "ack", 3, 0) == 3);
	CHECK(rrecv(s, b, 3, MSG_WAITALL) == 3 && memcmp(b, "ack", 3) == 0);

	/* The peer closes: end of stream, then EPIPE; POLLHUP once read. */
	CHECK(rclose(s) == 0);
	cin.revents = 0;
	CHECK(rpoll(&cin, 1, 5000) == 1 && (cin.revents & POLLHUP));
	CHECK(rrecv(c, b, sizeof(b), 0) == 0);
	EXPECT_ERR(rsend(c, "x", 1, 0), EPIPE);
	CHECK(rclose(c) == 0);
	EXPECT_ERR(rsend(c, "x", 1, 0), EBADF);
	CHECK(rclose(l) == 0);

	/* Datagrams: the first goes over UDP and teaches the receiver our QP,
	 * the rest are UD SENDs; replies go to the address rrecvfrom gave. */
	int d1 = rsocket(AF_INET, SOCK_DGRAM, 0), d2 = rsocket(AF_INET, SOCK_DGRAM, 0);
	CHECK(d1 >= 0 && d2 >= 0);
	struct sockaddr_in da = addr_of(port + 2);
	EXPECT_ERR(rsend(d2, "x", 1, 0), EDESTADDRREQ);
	EXPECT_ERR(rrecv(d1, b, sizeof(b), MSG_DONTWAIT), EINVAL);     /* not bound */
	EXPECT_ERR(rlisten(d1, 1), EOPNOTSUPP);
	CHECK(rbind(d1, (struct sockaddr *)&da, sizeof(da)) == 0);
	EXPECT_ERR(rrecv(d1, b, sizeof(b), MSG_DONTWAIT), EAGAIN);
	static char huge[3000];
	EXPECT_ERR(rsendto(d2, huge, sizeof(huge), 0, (struct sockaddr *)&da, sizeof(da)), EMSGSIZE);
	vl = sizeof(v);
	CHECK(rgetsockopt(d1, SOL_SOCKET, SO_TYPE, &v, &vl) == 0 && v == SOCK_DGRAM);
	int rounds_ok = 0;
	for (int i = 0; i < 20; i++) {
		char m[1500], r[1500];
		size_t ml = 100 + (size_t)i * 70;
		memset(m, 'a' + i, ml);
		CHECK(rsendto(d2, m, ml, 0, (struct sockaddr *)&da, sizeof(da)) == (ssize_t)ml);
		struct pollfd dp = { .fd = d1, .events = POLLIN };
		CHECK(rpoll(&dp, 1, 5000) == 1);
		struct sockaddr_in src;
		socklen_t sl = sizeof(src);
		ssize_t n = rrecvfrom(d1, r, sizeof(r), 0, (struct sockaddr *)&src, &sl);
		CHECK(n == (ssize_t)ml && memcmp(r, m, ml) == 0 && src.sin_family == AF_INET);
		m[0] = 'R';
		CHECK(rsendto(d1, m, ml, 0, (struct sockaddr *)&src, sl) == (ssize_t)ml);
		dp.fd = d2;
		CHECK(rpoll(&dp, 1, 5000) == 1);
		/* A short buffer takes the datagram's start, the rest is gone;
		 * MSG_PEEK leaves it for the next read. */
		CHECK(rrecv(d2, r, 10, MSG_PEEK) == 10 && r[0] == 'R');
		n = rrecv(d2, r, 10, 0);
		CHECK(n == 10 && r[0] == 'R' && r[9] == 'a' + i);
		rounds_ok += n == 10;
		EXPECT_ERR(rrecv(d2, r, sizeof(r), MSG_DONTWAIT), EAGAIN);
	}
	CHECK(rounds_ok == 20);
	/* rconnect fixes the peer: rsend and rrecv without addresses. */
	CHECK(rconnect(d2, (struct sockaddr *)&da, sizeof(da)) == 0);
	CHECK(rsend(d2, "ping", 4, 0) == 4);
	struct sockaddr_in src;
	socklen_t sl = sizeof(src);
	CHECK(rrecvfrom(d1, b, sizeof(b), 0, (struct sockaddr *)&src, &sl) == 4 && !memcmp(b, "ping", 4));
	CHECK(rsendto(d1, "pong", 4, 0, (struct sockaddr *)&src, sl) == 4);
	CHECK(rrecv(d2, b, sizeof(b), 0) == 4 && !memcmp(b, "pong", 4));
	plen = sizeof(pa);
	CHECK(rgetpeername(d2, (struct sockaddr *)&pa, &plen) == 0 && pa.sin_port == da.sin_port);
	CHECK(rclose(d1) == 0 && rclose(d2) == 0);
	free(sbig);
	free(dst);
	return check_exit("test_rsocket");
}
