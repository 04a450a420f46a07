/*
 * test_two_process.c — two processes, each with its own softrnic device,
 * talk RC over the real UDP path: SEND/RECV both ways, RDMA WRITE, RDMA
 * READ, with the data checked at the far end.
 *
 *   test_two_process                  fork: parent and child on 127.0.0.N
 *   test_two_process server PORT      wait for a TCP peer on PORT
 *   test_two_process client HOST PORT connect to HOST:PORT
 *
 * The QPN/PSN/GID/rkey exchange (and the "go on" barriers) run over a
 * stream socket: a socketpair in fork mode, TCP in the two-host modes
 * (used by scripts/netns_test.sh with SOFTRNIC_ADDR set in each namespace).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rt_util.h"

#define BUF_LEN (256u * 1024u)
/* Buffer layout (both sides). */
#define OFF_SEND 0u             /* outgoing SEND data                  */
#define OFF_RECV 65536u         /* incoming SEND data                  */
#define OFF_WRITE 131072u       /* target of the peer's RDMA WRITE     */
#define OFF_READ 196608u        /* source of the peer's RDMA READ      */
#define SEND_LEN 10000u         /* three packets at 4096, ten at 1024  */
#define RDMA_LEN 50000u

static int run_side(int fd, bool server)
{
	const char *me = server ? "server" : "client";
	struct srt_device *dev = srt_open();
	REQUIRE(dev != NULL, "%s: srt_open: %s", me, strerror(errno));

	struct rt_endpoint ep;
	rt_endpoint_init(&ep, dev, BUF_LEN);
	uint32_t my_psn = server ? 0x123456 : 0xfffff0;   /* client wraps the 24-bit PSN */
	struct rt_qp_info mine, peer;
	struct rnic_qp *qp = rt_qp_exchange(&ep, fd, my_psn, &mine, &peer);
	REQUIRE(memcmp(mine.gid, peer.gid, 16) != 0, "both processes have the same GID (address)");
	char addr[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &mine.gid[12], addr, sizeof(addr));
	fprintf(stderr, "%s: pid %d bound %s, QPN %#x\n", me, (int)getpid(), addr, mine.qpn);

	enum ibv_mtu mtu = srt_active_mtu(dev);
	REQUIRE(rt_qp_connect(&ep, qp, my_psn, &peer, mtu) == 0, "%s: connect failed", me);

	/* Data each side offers: SEND payload and the READ source. */
	rt_fill(ep.buf + OFF_SEND, SEND_LEN, server ? 1 : 2);
	rt_fill(ep.buf + OFF_READ, RDMA_LEN, server ? 3 : 4);
	REQUIRE(rt_post_recv(&ep, qp, OFF_RECV, 65536, 100) == 0, "post_recv");
	REQUIRE(rt_post_recv(&ep, qp, OFF_RECV, 65536, 101) == 0, "post_recv");
	rt_barrier(fd);

	/* 1. SEND client -> server, then server -> client. */
	if (!server) {
		REQUIRE(rt_post_send(&ep, qp, IBV_WR_SEND, OFF_SEND, SEND_LEN, 0, 0, 1) == 0, "post SEND");
		rt_expect_send_and_recv(&ep, 1, 100, SEND_LEN);
		REQUIRE(rt_check(ep.buf + OFF_RECV, SEND_LEN, 1), "client: SEND data from server is wrong");
	} else {
		rt_expect_wc(&ep, IBV_WC_RECV, 100, SEND_LEN);
		REQUIRE(rt_check(ep.buf + OFF_RECV, SEND_LEN, 2), "server: SEND data from client is wrong");
		REQUIRE(rt_post_send(&ep, qp, IBV_WR_SEND, OFF_SEND, SEND_LEN, 0, 0, 1) == 0, "post SEND");
		rt_expect_wc(&ep, IBV_WC_SEND, 1, 0);
	}
	rt_barrier(fd);

	/* 2. Client RDMA WRITEs into the server, then SENDs to say so
	 *    (RC ordering puts the data in place before the RECV completes). */
	if (!server) {
		rt_fill(ep.buf + OFF_SEND, RDMA_LEN, 5);
		REQUIRE(rt_post_send(&ep, qp, IBV_WR_RDMA_WRITE, OFF_SEND, RDMA_LEN, peer.addr + OFF_WRITE, peer.rkey, 2) == 0,
		      "post WRITE");
		REQUIRE(rt_post_send(&ep, qp, IBV_WR_SEND, OFF_SEND, 16, 0, 0, 3) == 0, "post SEND");
		rt_expect_wc(&ep, IBV_WC_RDMA_WRITE, 2, 0);
		rt_expect_wc(&ep, IBV_WC_SEND, 3, 0);
	} else {
		rt_expect_wc(&ep, IBV_WC_RECV, 101, 16);
		REQUIRE(rt_check(ep.buf + OFF_WRITE, RDMA_LEN, 5), "server: RDMA WRITE data is wrong");
	}
	rt_barrier(fd);

	/* 3. Client RDMA READs the server's READ region. */
	if (!server) {
		memset(ep.buf + OFF_WRITE, 0, RDMA_LEN);
		REQUIRE(rt_post_send(&ep, qp, IBV_WR_RDMA_READ, OFF_WRITE, RDMA_LEN, peer.addr + OFF_READ, peer.rkey, 4) == 0,
		      "post READ");
		rt_expect_wc(&ep, IBV_WC_RDMA_READ, 4, 0);
		REQUIRE(rt_check(ep.buf + OFF_WRITE, RDMA_LEN, 3), "client: RDMA READ data is wrong");
	}
	rt_barrier(fd);

	/* Counters were published and show traffic. */
	struct srt_stats_file st;
	rt_read_stats(&st, 0);
	rt_read_stats(&st, st.updated_ns);   /* one refresh after the traffic */
	REQUIRE(st.counters.tx_packets > 0 && st.counters.rx_packets > 0, "%s: counters show no traffic", me);
	REQUIRE(st.counters.rx_drop_bad_icrc == 0, "%s: %llu bad ICRCs on a clean link", me,
	      (unsigned long long)st.counters.rx_drop_bad_icrc);

	srt_lock(dev);
	REQUIRE(rnic_qp_destroy(qp) == 0, "qp_destroy");
	srt_unlock(dev);
	rt_endpoint_fini(&ep);
	srt_close(dev);
	fprintf(stderr, "%s: ok\n", me);
	return 0;
}

static int tcp_server(const char *port)
{
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };

	REQUIRE(ls >= 0, "socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	REQUIRE(bind(ls, (struct sockaddr *)&sin, sizeof(sin)) == 0, "bind TCP %s: %s", port, strerror(errno));
	REQUIRE(listen(ls, 1) == 0, "listen");
	int fd = accept(ls, NULL, NULL);
	REQUIRE(fd >= 0, "accept: %s", strerror(errno));
	close(ls);
	return fd;
}

static int tcp_client(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	REQUIRE(getaddrinfo(host, port, &hints, &res) == 0, "cannot resolve %s", host);
	for (int tries = 0; tries < 100; tries++) {   /* the server may start later */
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		REQUIRE(fd >= 0, "socket");
		if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		close(fd);
		usleep(100000);
	}
	REQUIRE(0, "cannot connect to %s:%s", host, port);
	return -1;
}

static int side_main(int fd, bool server, void *arg)
{
	(void)arg;
	return run_side(fd, server);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return run_side(tcp_server(argv[2]), true);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return run_side(tcp_client(argv[2], argv[3]), false);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [server PORT | client HOST PORT]\n", argv[0]);
		return 2;
	}

	return rt_run_two_processes(side_main, NULL);
}
