/*
 * udp_pingpong.c — the like-for-like kernel baseline for perftest's
 * ib_send_lat: a UDP ping-pong between two processes over loopback in
 * which both sides busy-poll a non-blocking socket (recv with
 * MSG_DONTWAIT, spinning on EAGAIN; it never sleeps in the kernel), as
 * perftest busy-polls its completion queue.  Same payload as the perftest
 * latency runs of bench/perf_compare.sh (2 bytes by default), one message
 * in flight, every round trip timed on the client with CLOCK_MONOTONIC.
 * sockperf, the other UDP reference there, blocks in recv, so each of its
 * round trips includes two wake-ups that neither perftest nor this program
 * pays.  A benchmark, not a test.
 *
 *   udp_pingpong server PORT [-T IDLE_SECONDS] [-R] [-a ADDR]
 *   udp_pingpong client PORT [-s SIZE] [-n ITERS] [-w WARMUP] [-R] [-a ADDR]
 *
 * The server binds 127.0.0.1:PORT (or ADDR:PORT: between namespaces,
 * bench/xdp_compare.sh) and sends every datagram back to its
 * sender until a zero-length datagram arrives (the client's "done"), or
 * until nothing has arrived for IDLE_SECONDS (default 30).  The client
 * sends to 127.0.0.1:PORT (or ADDR:PORT): WARMUP untimed round trips (default 1000),
 * then ITERS timed ones (default 10000), and prints one line:
 *
 *   udp_pingpong: size=2 iters=10000 warmup=1000 rtt_p50_us=... \
 *     rtt_mean_us=... rtt_min_us=... rtt_p99_us=... rtt_max_us=... resent=0
 *
 * The first two bytes of each message carry a sequence number, so a
 * stray or late answer is never taken for the current one; a message not
 * answered within a second is sent again (counted in "resent"; that round
 * trip's time then includes the wait).  Exit status 0 on success.
 *
 * -R (both ends): each message travels as softrnic sends a SEND whose
 * ACK rides along, so that the kernel's share of ib_send_lat can be
 * measured apart from softrnic's own: one sendmsg of two equal segments
 * cut by UDP GSO (an ACK's 20 bytes, then the message in a RoCEv2
 * packet's length: BTH, payload padded to 4, ICRC), addressed on every
 * send rather than connected, received whole with UDP GRO and with the
 * TOS, TTL and destination address of each datagram as control
 * messages (the options softrnic's socket sets, udp_port.c).  The
 * client then prints shape=rocev2 (else shape=plain), and the server, on
 * stderr when it exits, how many messages came as two GRO segments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZE 65507 /* largest UDP/IPv4 payload */
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#define ROCE_ACK_BYTES 20      /* BTH 12 + AETH 4 + ICRC 4 */
#define ROCE_MAX_PAYLOAD 1024  /* -R: one packet of the smallest common MTU */

static int rocev2_shape;       /* -R */
#define RESEND_NS 1000000000LL

static uint8_t buf[MAX_SIZE];
static uint8_t rbuf[MAX_SIZE];

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: udp_pingpong server PORT [-T IDLE_SECONDS] [-R] [-a ADDR]\n"
			"       udp_pingpong client PORT [-s SIZE] [-n ITERS] [-w WARMUP] [-R] [-a ADDR]\n");
	exit(2);
}

static long parse_num(const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		usage();
	return v;
}

static int udp_socket(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("udp_pingpong: socket");
		exit(1);
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		perror("udp_pingpong: O_NONBLOCK");
		exit(1);
	}
	if (rocev2_shape) {
		int one = 1;
		if (setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one) ||
		    setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof one) ||
		    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one) ||
		    setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one)) {
			perror("udp_pingpong: -R socket options");
			exit(1);
		}
	}
	return fd;
}

/* The address both ends use: 127.0.0.1, or -a ADDR's. */
static struct in_addr peer_addr = { .s_addr = 0 };

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = peer_addr.s_addr ? peer_addr.s_addr : htonl(INADDR_LOOPBACK);
	return a;
}

/* -R: the length of a RoCEv2 packet (after the UDP header) carrying
 * `size` bytes: BTH, the payload padded to 4 bytes, ICRC. */
static size_t shaped_segment(size_t size)
{
	return 12 + ((size + 3) & ~(size_t)3) + 4;
}

/* -R: recvmsg into rbuf (MSG_DONTWAIT) with the control messages the
 * socket asked for, as softrnic reads them; *seg gets the GRO segment
 * size (0 if the datagram came alone). */
static ssize_t recv_shaped(int fd, struct sockaddr_in *from, size_t *seg)
{
	static char control[256];
	struct iovec iov = { rbuf, sizeof rbuf };
	struct msghdr h = { .msg_name = from, .msg_namelen = sizeof *from, .msg_iov = &iov,
			    .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
	ssize_t n = recvmsg(fd, &h, MSG_DONTWAIT);

	*seg = 0;
	for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&h) : NULL; c; c = CMSG_NXTHDR(&h, c)) {
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			int g;
			memcpy(&g, CMSG_DATA(c), sizeof g);
			*seg = g > 0 ? (size_t)g : 0;
		}
	}
	return n;
}

/* -R: one sendmsg of len bytes to `to`, cut by UDP GSO into segments of
 * seg bytes when seg is nonzero and shorter than len. */
static ssize_t send_shaped(int fd, const void *p, size_t len, const struct sockaddr_in *to, size_t seg)
{
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} control;
	struct iovec iov = { (void *)p, len };
	struct msghdr h = { .msg_name = (void *)to, .msg_namelen = sizeof *to, .msg_iov = &iov, .msg_iovlen = 1 };

	if (seg && seg < len) {
		uint16_t gso = (uint16_t)seg;
		memset(&control, 0, sizeof control);
		h.msg_control = control.buf;
		h.msg_controllen = sizeof control.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&h);
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof gso);
		memcpy(CMSG_DATA(c), &gso, sizeof gso);
	}
	return sendmsg(fd, &h, 0);
}

static int serve(int port, long idle_s)
{
	int fd = udp_socket();
	struct sockaddr_in a = loopback(port);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		perror("udp_pingpong: bind");
		return 1;
	}
	int64_t last = now_ns();
	unsigned spins = 0;
	long messages = 0, shaped = 0; /* -R: how many came as two segments */
	for (;;) {
		struct sockaddr_in from;
		socklen_t flen = sizeof from;
		size_t seg = 0;
		ssize_t n = rocev2_shape ? recv_shaped(fd, &from, &seg)
					 : recvfrom(fd, rbuf, sizeof rbuf, MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				perror("udp_pingpong: recvfrom");
				return 1;
			}
			if ((++spins & 1023) == 0 && now_ns() - last > idle_s * 1000000000LL) {
				fprintf(stderr, "udp_pingpong: server idle for %ld s, exiting\n", idle_s);
				return 1;
			}
			continue;
		}
		if (n == 0) { /* the client is done */
			if (rocev2_shape)
				fprintf(stderr, "udp_pingpong: server: %ld messages, %ld of them two GRO segments\n",
					messages, shaped);
			return 0;
		}
		messages++;
		shaped += seg && (size_t)n == 2 * seg;
		last = now_ns();
		spins = 0;
		while ((rocev2_shape ? send_shaped(fd, rbuf, (size_t)n, &from, seg)
				     : sendto(fd, rbuf, (size_t)n, 0, (struct sockaddr *)&from, flen)) < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				perror("udp_pingpong: sendto");
				return 1;
			}
		}
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* -R's server address (the client's socket is not connected then). */
static struct sockaddr_in shaped_peer;

/* Send len bytes to the server: on the connected socket, or with -R to
 * shaped_peer, cut into GSO segments of seg bytes (0: one datagram). */
static void send_all(int fd, const void *p, size_t len, size_t seg)
{
	while ((rocev2_shape ? send_shaped(fd, p, len, &shaped_peer, seg) : send(fd, p, len, 0)) < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			perror("udp_pingpong: send");
			exit(1);
		}
	}
}

/* A message of `size` bytes from buf; with -R, after the ACK's segment. */
static void send_message(int fd, size_t size)
{
	size_t seg = rocev2_shape ? shaped_segment(size) : 0;

	send_all(fd, buf, rocev2_shape ? 2 * seg : size, seg);
}

/* One round trip of message number seq; returns its time in ns.  The
 * message starts at buf[at]: after the ACK's segment with -R. */
static int64_t round_trip(int fd, size_t size, uint16_t seq, long *resent)
{
	size_t at = rocev2_shape ? shaped_segment(size) : 0;
	size_t want = rocev2_shape ? 2 * at : 2;
	buf[at] = (uint8_t)(seq >> 8);
	buf[at + 1] = (uint8_t)seq;
	int64_t t0 = now_ns(), sent = t0;
	send_message(fd, size);
	for (;;) {
		size_t seg;
		struct sockaddr_in from;
		ssize_t n = rocev2_shape ? recv_shaped(fd, &from, &seg) : recv(fd, rbuf, sizeof rbuf, MSG_DONTWAIT);
		if (n >= (ssize_t)want && rbuf[at] == buf[at] && rbuf[at + 1] == buf[at + 1])
			return now_ns() - t0;
		if (n < 0) {
			if (errno == ECONNREFUSED) {
				fprintf(stderr, "udp_pingpong: no server on %s\n", inet_ntoa(loopback(0).sin_addr));
				exit(1);
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				perror("udp_pingpong: recv");
				exit(1);
			}
			int64_t t = now_ns();
			if (t - sent > RESEND_NS) {
				++*resent;
				sent = t;
				send_message(fd, size);
			}
		}
		/* else: a stray or late answer; keep polling */
	}
}

static int client(int port, long size, long iters, long warmup)
{
	int fd = udp_socket();
	struct sockaddr_in a = loopback(port);
	shaped_peer = a;
	if (!rocev2_shape && connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		perror("udp_pingpong: connect");
		return 1;
	}
	int64_t *rtt = malloc((size_t)iters * sizeof *rtt);
	if (!rtt) {
		perror("udp_pingpong: malloc");
		return 1;
	}
	memset(buf, 0xab, sizeof buf);
	if (rocev2_shape)
		memset(buf, 0, shaped_segment((size_t)size)); /* the ACK's segment */
	long resent = 0;
	uint16_t seq = 0;
	for (long i = 0; i < warmup; i++)
		(void)round_trip(fd, (size_t)size, seq++, &resent);
	for (long i = 0; i < iters; i++)
		rtt[i] = round_trip(fd, (size_t)size, seq++, &resent);
	send_all(fd, buf, 0, 0); /* done: the server exits */

	double sum = 0;
	for (long i = 0; i < iters; i++)
		sum += (double)rtt[i];
	qsort(rtt, (size_t)iters, sizeof *rtt, cmp_i64);
	/* the median as perftest's get_median takes it: the middle element,
	 * or the mean of the middle two for an even count */
	double p50 = iters % 2 ? (double)rtt[iters / 2]
			       : ((double)rtt[iters / 2 - 1] + (double)rtt[iters / 2]) / 2;
	double p99 = (double)rtt[(long)((double)(iters - 1) * 0.99)];
	printf("udp_pingpong: size=%ld iters=%ld warmup=%ld rtt_p50_us=%.3f rtt_mean_us=%.3f "
	       "rtt_min_us=%.3f rtt_p99_us=%.3f rtt_max_us=%.3f resent=%ld shape=%s\n",
	       size, iters, warmup, p50 / 1e3, sum / (double)iters / 1e3, (double)rtt[0] / 1e3,
	       p99 / 1e3, (double)rtt[iters - 1] / 1e3, resent, rocev2_shape ? "rocev2" : "plain");
	free(rtt);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	int is_server = strcmp(argv[1], "server") == 0;
	if (!is_server && strcmp(argv[1], "client") != 0)
		usage();
	int port = (int)parse_num(argv[2], 1, 65535);
	long size = 2, iters = 10000, warmup = 1000, idle_s = 30;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "-R") == 0) {
			rocev2_shape = 1;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		const char *opt = argv[i], *val = argv[++i];
		if (strcmp(opt, "-a") == 0) {
			if (inet_pton(AF_INET, val, &peer_addr) != 1) {
				fprintf(stderr, "udp_pingpong: -a %s: not an IPv4 address\n", val);
				return 2;
			}
		} else if (is_server && strcmp(opt, "-T") == 0)
			idle_s = parse_num(val, 1, 86400);
		else if (!is_server && strcmp(opt, "-s") == 0)
			size = parse_num(val, 2, MAX_SIZE);
		else if (!is_server && strcmp(opt, "-n") == 0)
			iters = parse_num(val, 1, 100000000);
		else if (!is_server && strcmp(opt, "-w") == 0)
			warmup = parse_num(val, 0, 100000000);
		else
			usage();
	}
	if (rocev2_shape && size > ROCE_MAX_PAYLOAD) {
		fprintf(stderr, "udp_pingpong: -R takes messages of at most %d bytes (one packet)\n", ROCE_MAX_PAYLOAD);
		return 2;
	}
	return is_server ? serve(port, idle_s) : client(port, size, iters, warmup);
}
