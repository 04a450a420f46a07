/*
 * test_sport.c — UDP source ports on the runtime's real send path
 * (udp_port.c, "UDP source port"): a packet queued with rnic_tx.sport
 * leaves from <addr>:sport, as kernel rxe sends it, with the ICRC computed
 * for that port.
 *
 * Checked over real loopback sockets, with UDP GSO on and off: every
 * packet arrives with the source port it was queued with (0 = no
 * preference: 4791), once, byte for byte, each port's packets in queue
 * order, every ICRC verifies with the port the receiver saw; one socket
 * per port, reused; a port another socket holds falls back to 4791 and is
 * counted once; the socket budget is honoured; SOFTRNIC_SPORT=fixed sends
 * everything from 4791 and a bad value is refused; a datagram sent *to* a
 * send-only port is dropped by the kernel, never received; srt_udp_close
 * releases the ports.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rt_util.h"
#include "runtime/icrc_recv.h"
#include "runtime/udp_port.h"

#define MAX_PKTS 256
#define PORT_X 0xC123
#define PORT_Y 0xD456
#define PORT_Z 0xE789

struct sent {
	size_t len;
	uint8_t id;             /* first payload byte, identifies the packet */
	uint16_t sport;         /* the port it must arrive from              */
};

static void open_port(struct srt_udp *u, bool gso, const char *sport_mode)
{
	char err[256];

	if (gso)
		unsetenv("SOFTRNIC_GSO");
	else
		setenv("SOFTRNIC_GSO", "0", 1);
	if (sport_mode)
		setenv("SOFTRNIC_SPORT", sport_mode, 1);
	else
		unsetenv("SOFTRNIC_SPORT");
	REQUIRE(srt_udp_open(u, err, sizeof(err)) == 0, "srt_udp_open: %s", err);
	unsetenv("SOFTRNIC_GSO");
	unsetenv("SOFTRNIC_SPORT");
}

static void queue_packet(struct srt_udp *u, struct in_addr dst, size_t len, uint8_t id, uint16_t sport,
			 uint16_t expect_sport, bool in_place, struct sent *log, unsigned *nlog)
{
	uint8_t tmp[WIRE_MAX_IB_PACKET];
	uint8_t *p = in_place ? srt_udp_tx_buffer(u) : tmp;
	struct rnic_tx tx;

	REQUIRE(p != NULL, "no tx buffer");
	memset(p, 0, len);
	p[0] = 0x0a;
	p[11] = id;
	for (size_t i = 12; i < len - WIRE_ICRC_LEN; i++)
		p[i] = (uint8_t)(id * 31u + i);
	memset(&tx, 0, sizeof(tx));
	srt_ipv4_to_gid(dst, &tx.dst);
	tx.ib = p;
	tx.ib_len = len;
	tx.sport = sport;
	REQUIRE(srt_udp_queue(u, &tx) == 0, "queue");
	REQUIRE(*nlog < MAX_PKTS, "log full");
	log[(*nlog)++] = (struct sent){ .len = len, .id = id, .sport = expect_sport };
}

/* Receive the `n` packets of log (waiting up to 2 s): each from the port
 * logged, intact, with a good ICRC for that port, and each port's packets
 * in the order queued. */
static void expect_packets(struct srt_udp *rx, const struct srt_udp *tx, const struct sent *log, unsigned n)
{
	static struct srt_rx_batch batch;
	bool seen[MAX_PKTS] = { false };
	int last_of_port[65536 / 64];   /* index by port / 64: ports used differ there */
	unsigned got = 0;

	for (unsigned i = 0; i < sizeof(last_of_port) / sizeof(last_of_port[0]); i++)
		last_of_port[i] = -1;
	while (got < n) {
		struct pollfd pfd = { .fd = rx->fd, .events = POLLIN };
		REQUIRE(poll(&pfd, 1, 2000) == 1, "only %u of %u packets arrived", got, n);
		int k = srt_udp_recv(rx, &batch);
		REQUIRE(k >= 0, "srt_udp_recv: %s", strerror(-k));
		for (int i = 0; i < k; i++, got++) {
			const struct srt_rx_pkt *p = &batch.pkt[i];
			unsigned at = 0;

			REQUIRE(got < n, "more packets than sent");
			while (at < n && log[at].id != p->data[11])
				at++;
			REQUIRE(at < n && !seen[at], "packet id %u unknown or twice", p->data[11]);
			seen[at] = true;
			REQUIRE(p->sport == log[at].sport, "packet id %u: source port %u, expected %u", log[at].id,
			      p->sport, log[at].sport);
			REQUIRE(!p->truncated && p->len == log[at].len, "packet id %u: %zu bytes, sent %zu", log[at].id,
			      p->len, log[at].len);
			for (size_t b = 12; b < p->len - WIRE_ICRC_LEN; b++)
				REQUIRE(p->data[b] == (uint8_t)(log[at].id * 31u + b), "packet id %u byte %zu", log[at].id,
				      b);
			REQUIRE(!memcmp(p->src.raw, tx->gid.raw, 16), "source address");
			REQUIRE((int)at > last_of_port[p->sport / 64], "port %u: packet id %u overtook an earlier one",
			      p->sport, log[at].id);
			last_of_port[p->sport / 64] = (int)at;

			struct wire_ip ip;
			memset(&ip, 0, sizeof(ip));
			ip.version = 4;
			memcpy(ip.src, p->src.raw, 16);
			memcpy(ip.dst, p->dst.raw, 16);
			uint16_t id = 0xffff;
			int v = srt_icrc_verify_ipv4_hint(&ip, p->sport, p->data, p->len, p->seg_index, &id);
			REQUIRE(v == SRT_ICRC_OK && id == p->seg_index, "packet id %u: ICRC %s for port %u",
			      log[at].id, v == SRT_ICRC_BAD ? "bad" : "matched another IPv4 ID", p->sport);
		}
	}
	struct pollfd pfd = { .fd = rx->fd, .events = POLLIN };
	REQUIRE(poll(&pfd, 1, 50) == 0, "more packets than sent");
}

/* A plain UDP socket bound to addr:port (or -1 with errno). */
static int bind_plain(struct in_addr addr, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr = addr };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	REQUIRE(fd >= 0, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static void run(bool gso)
{
	struct srt_udp a, b;
	static struct sent log[MAX_PKTS];
	unsigned n = 0;
	uint16_t wire;
	uint8_t id = 1;

	open_port(&a, gso, NULL);
	open_port(&b, gso, NULL);
	REQUIRE(a.gso == gso, "GSO %d, wanted %d", a.gso, gso);
	REQUIRE(!a.sport_fixed && a.sport_sockets == 0, "fresh port has sport sockets");

	/* 1. Three flows interleaved packet by packet (X, Y, no preference),
	 * equal sizes so GSO may coalesce each flow's packets; half built in
	 * place. */
	for (int i = 0; i < 60; i++) {
		static const uint16_t ports[3] = { PORT_X, PORT_Y, 0 };
		uint16_t sp = ports[i % 3];
		queue_packet(&a, b.addr, 1036, id++, sp, sp ? sp : WIRE_ROCEV2_UDP_PORT, i % 2, log, &n);
	}
	/* A WRITE-like shape on X: longer FIRST, MIDDLEs, shorter LAST. */
	queue_packet(&a, b.addr, 2080, id++, PORT_X, PORT_X, false, log, &n);
	for (int i = 0; i < 5; i++)
		queue_packet(&a, b.addr, 2064, id++, PORT_X, PORT_X, true, log, &n);
	queue_packet(&a, b.addr, 520, id++, PORT_X, PORT_X, false, log, &n);
	uint64_t sends0 = a.tx_sends;
	REQUIRE(srt_udp_flush(&a) == 0, "flush lost packets");
	REQUIRE(a.sport_sockets == 2, "%u sport sockets, expected 2 (X, Y)", a.sport_sockets);
	REQUIRE(a.tx_sport_fallbacks == 0, "unexpected fallbacks");
	if (gso) {
		/* X: 20 x 1036 | FIRST | 5 MIDDLE + LAST; Y: 20; none: 20. */
		REQUIRE(a.tx_sends - sends0 == 5, "%llu sends, expected 5", (unsigned long long)(a.tx_sends - sends0));
	} else {
		REQUIRE(a.tx_sends - sends0 == n, "%llu sends for %u packets", (unsigned long long)(a.tx_sends - sends0),
		      n);
	}
	expect_packets(&b, &a, log, n);

	/* The same port again: the cached socket, no new one. */
	int fd_x = srt_udp_sport_socket(&a, PORT_X, &wire);
	REQUIRE(wire == PORT_X && fd_x >= 0 && fd_x != a.fd, "port X socket");
	REQUIRE(srt_udp_sport_socket(&a, PORT_X, &wire) == fd_x && a.sport_sockets == 2, "port X socket not reused");
	REQUIRE(srt_udp_sport_socket(&a, 0, &wire) == a.fd && wire == WIRE_ROCEV2_UDP_PORT, "port 0 -> 4791");

	/* 2. Port Z is taken by someone else on our address: Z's packets
	 * leave from 4791 (with the ICRC for 4791), counted once. */
	int blocker = bind_plain(a.addr, PORT_Z);
	REQUIRE(blocker >= 0, "cannot bind the blocker: %s", strerror(errno));
	n = 0;
	queue_packet(&a, b.addr, 1036, id++, PORT_Z, WIRE_ROCEV2_UDP_PORT, false, log, &n);
	queue_packet(&a, b.addr, 1036, id++, PORT_Y, PORT_Y, false, log, &n);
	queue_packet(&a, b.addr, 1036, id++, PORT_Z, WIRE_ROCEV2_UDP_PORT, true, log, &n);
	REQUIRE(srt_udp_flush(&a) == 0, "flush lost packets");
	REQUIRE(a.tx_sport_fallbacks == 1, "%llu fallbacks, expected 1", (unsigned long long)a.tx_sport_fallbacks);
	REQUIRE(a.sport_sockets == 2, "a socket was counted for the taken port");
	expect_packets(&b, &a, log, n);
	close(blocker);

	/* 3. Hostile input to a send-only port: the kernel drops it; it
	 * reaches neither that socket nor the device's receive socket. */
	int evil = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	uint8_t junk[64] = { 0x04 };
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(PORT_X), .sin_addr = a.addr };
	REQUIRE(evil >= 0, "socket");
	for (int i = 0; i < 20; i++)
		REQUIRE(sendto(evil, junk, sizeof(junk), 0, (struct sockaddr *)&to, sizeof(to)) == sizeof(junk),
		      "sendto: %s", strerror(errno));
	close(evil);
	struct pollfd pfd[2] = { { .fd = fd_x, .events = POLLIN }, { .fd = a.fd, .events = POLLIN } };
	REQUIRE(poll(pfd, 2, 100) == 0, "a datagram to a send-only port was queued (revents %#x, %#x)",
	      pfd[0].revents, pfd[1].revents);

	/* 4. The socket budget: past it, a new port falls back. */
	unsigned budget = a.sport_max_sockets;
	REQUIRE(budget >= 16, "socket budget %u", budget);
	a.sport_max_sockets = a.sport_sockets;
	REQUIRE(srt_udp_sport_socket(&a, PORT_Z + 4, &wire) == a.fd && wire == WIRE_ROCEV2_UDP_PORT,
	      "budget not honoured");
	REQUIRE(a.tx_sport_fallbacks == 2, "fallback over budget not counted");
	a.sport_max_sockets = budget;

	/* 5. Many ports (the map grows): all distinct sockets, found again. */
	int fds[200];
	for (int i = 0; i < 200; i++) {
		fds[i] = srt_udp_sport_socket(&a, (uint16_t)(0xF000 + i), &wire);
		REQUIRE(fds[i] != a.fd && wire == 0xF000 + i, "port %#x fell back", 0xF000 + i);
	}
	for (int i = 0; i < 200; i++)
		REQUIRE(srt_udp_sport_socket(&a, (uint16_t)(0xF000 + i), &wire) == fds[i], "port %#x lost", 0xF000 + i);
	REQUIRE(a.sport_sockets == 202, "%u sockets", a.sport_sockets);

	/* 6. Close releases every port. */
	struct in_addr addr = a.addr;
	srt_udp_close(&a);
	int again = bind_plain(addr, PORT_X);
	REQUIRE(again >= 0, "port X still bound after close: %s", strerror(errno));
	close(again);
	again = bind_plain(addr, 0xF000 + 199);
	REQUIRE(again >= 0, "port %#x still bound after close: %s", 0xF000 + 199, strerror(errno));
	close(again);
	srt_udp_close(&b);
}

static void run_fixed(void)
{
	struct srt_udp a, b;
	static struct sent log[MAX_PKTS];
	unsigned n = 0;
	char err[256];

	open_port(&a, true, "fixed");
	open_port(&b, true, NULL);
	REQUIRE(a.sport_fixed, "SOFTRNIC_SPORT=fixed ignored");
	for (int i = 0; i < 10; i++)
		queue_packet(&a, b.addr, 1036, (uint8_t)(i + 1), i % 2 ? PORT_X : PORT_Y, WIRE_ROCEV2_UDP_PORT, false,
			     log, &n);
	REQUIRE(srt_udp_flush(&a) == 0, "flush lost packets");
	REQUIRE(a.sport_sockets == 0 && a.tx_sport_fallbacks == 0, "fixed mode opened sockets");
	expect_packets(&b, &a, log, n);
	srt_udp_close(&a);
	srt_udp_close(&b);

	setenv("SOFTRNIC_SPORT", "random", 1);
	err[0] = 0;
	REQUIRE(srt_udp_open(&a, err, sizeof(err)) == EINVAL, "bad SOFTRNIC_SPORT accepted");
	REQUIRE(strstr(err, "SOFTRNIC_SPORT") != NULL, "error does not name the variable: %s", err);
	unsetenv("SOFTRNIC_SPORT");
}

int main(void)
{
	run(true);
	run(false);
	run_fixed();
	printf("test_sport: ok\n");
	return 0;
}
