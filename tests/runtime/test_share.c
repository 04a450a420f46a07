/*
 * test_share.c — a shared host address (host_share.h, hostd.c,
 * share_steer.h) against the real kernel: members join through a real
 * softrnic-hostd, and datagrams sent to the address land on the socket of
 * the slot the steering program names — by destination QPN for data, by
 * Service ID for CM REQs, by the receiver's comm ID for the other CM
 * messages — and keep doing so when other members leave and come back.
 *   test_share HOSTD_PATH
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/host_share.h"
#include "runtime/share_steer.h"
#include "tests/check.h"
#include "wire/mad.h"

#define ADDR "127.0.0.213"
#define MEMBERS 3

static struct in_addr addr;
static int sender;

struct member {
	struct srt_host_share hs;
	int fd;
};

static void join(struct member *m)
{
	char err[256] = "";

	CHECK(srt_host_share_join(&m->hs, addr, &m->fd, err, sizeof(err)) == 0);
	if (err[0])
		fprintf(stderr, "join: %s\n", err);
}

/* A 256-byte RoCE payload: BTH to dqpn, and for QP1 a MAD of class
 * mgmt_class with attribute attr, word0/word1 and service ID set. */
static void send_packet(uint32_t dqpn, uint8_t mgmt_class, uint16_t attr, uint32_t word0, uint32_t word1,
			uint64_t service_id, uint8_t tag)
{
	uint8_t p[20 + 256] = { 0 };
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(4791), .sin_addr = addr };

	p[0] = 0x64;                    /* UD SEND only */
	p[5] = (uint8_t)(dqpn >> 16);
	p[6] = (uint8_t)(dqpn >> 8);
	p[7] = (uint8_t)dqpn;
	p[20] = 1;                      /* MAD base version */
	p[21] = mgmt_class;
	p[36] = (uint8_t)(attr >> 8);
	p[37] = (uint8_t)attr;
	for (int i = 0; i < 4; i++) {
		p[44 + i] = (uint8_t)(word0 >> (24 - 8 * i));
		p[48 + i] = (uint8_t)(word1 >> (24 - 8 * i));
	}
	for (int i = 0; i < 8; i++)
		p[52 + i] = (uint8_t)(service_id >> (56 - 8 * i));
	p[100] = tag;
	CHECK(sendto(sender, p, sizeof(p), 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)sizeof(p));
}

/* Which member received the packet with this tag (-1: none within 1 s);
 * fails if another packet is found first. */
static int receiver_of(struct member *m, int n, uint8_t tag)
{
	struct pollfd pfd[MEMBERS];

	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = m[i].fd, .events = POLLIN };
	if (poll(pfd, (nfds_t)n, 1000) <= 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (pfd[i].revents & POLLIN) {
			uint8_t p[512];
			ssize_t got = recv(m[i].fd, p, sizeof(p), MSG_DONTWAIT);

			CHECK(got == 276);
			CHECK(p[100] == tag);
			return i;
		}
	return -1;
}

static uint32_t qpn_of(unsigned slot, uint32_t n)
{
	return slot << SRT_SHARE_QPN_SHIFT | n;
}

static uint32_t comm_id_of(unsigned slot, uint32_t n)
{
	return slot << SRT_SHARE_COMM_ID_SHIFT | n;
}

int main(int argc, char **argv)
{
	struct member m[MEMBERS];
	const uint64_t svc = 0x0000000001060000ull | 7471;      /* RDMA_PS_TCP port 7471 */
	uint8_t tag = 1;

	if (argc < 2) {
		fprintf(stderr, "usage: test_share HOSTD_PATH\n");
		return 2;
	}
	setenv("SOFTRNIC_HOSTD", argv[1], 1);
	inet_pton(AF_INET, ADDR, &addr);
	sender = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(sender >= 0);

	for (int i = 0; i < MEMBERS; i++) {
		join(&m[i]);
		CHECK(m[i].hs.slot == (unsigned)i);
	}
	/* Data: by the slot bits of the destination QPN, QP 0x12 of each. */
	for (int i = 0; i < MEMBERS; i++) {
		send_packet(qpn_of((unsigned)i, 0x12), 0, 0, 0, 0, 0, tag);
		CHECK(receiver_of(m, MEMBERS, tag++) == i);
	}
	/* CM: a REQ for a service nobody listens on goes to slot 0 ... */
	send_packet(WIRE_GSI_QPN, WIRE_MAD_CLASS_CM, WIRE_CM_ATTR_REQ, comm_id_of(5, 9), 0, svc, tag);
	CHECK(receiver_of(m, MEMBERS, tag++) == 0);
	/* ... and to its listener once registered; a second listener on the
	 * same service from another slot is refused. */
	CHECK(srt_host_share_listen(&m[2].hs, svc, true) == 0);
	CHECK(srt_host_share_listen(&m[1].hs, svc, true) == EADDRINUSE);
	CHECK(srt_host_share_listen(&m[1].hs, svc + 1, true) == 0);
	send_packet(WIRE_GSI_QPN, WIRE_MAD_CLASS_CM, WIRE_CM_ATTR_REQ, comm_id_of(5, 9), 0, svc, tag);
	CHECK(receiver_of(m, MEMBERS, tag++) == 2);
	send_packet(WIRE_GSI_QPN, WIRE_MAD_CLASS_CM, WIRE_CM_ATTR_SIDR_REQ, 77, 0, svc + 1, tag);
	CHECK(receiver_of(m, MEMBERS, tag++) == 1);
	/* REP, DREQ, REJ: by the Remote Communication ID (the receiver's own). */
	send_packet(WIRE_GSI_QPN, WIRE_MAD_CLASS_CM, WIRE_CM_ATTR_REP, comm_id_of(9, 1), comm_id_of(1, 42), 0, tag);
	CHECK(receiver_of(m, MEMBERS, tag++) == 1);
	send_packet(WIRE_GSI_QPN, WIRE_MAD_CLASS_CM, WIRE_CM_ATTR_DREQ, comm_id_of(9, 1), comm_id_of(2, 42), 0, tag);
	CHECK(receiver_of(m, MEMBERS, tag++) == 2);
	send_packet(WIRE_GSI_QPN, WIRE_MAD_CLASS_CM, WIRE_CM_ATTR_REJ, comm_id_of(9, 1), comm_id_of(0, 42), 0, tag);
	CHECK(receiver_of(m, MEMBERS, tag++) == 0);
	/* SIDR_REP: by the Request ID. */
	send_packet(WIRE_GSI_QPN, WIRE_MAD_CLASS_CM, WIRE_CM_ATTR_SIDR_REP, comm_id_of(2, 3), 0, 0, tag);
	CHECK(receiver_of(m, MEMBERS, tag++) == 2);
	/* QP1 but not CM (an SA or PerfMgt MAD): slot 0. */
	send_packet(WIRE_GSI_QPN, 0x04, 0x0001, comm_id_of(2, 3), comm_id_of(2, 3), 0, tag);
	CHECK(receiver_of(m, MEMBERS, tag++) == 0);

	/* Slot 1 leaves: its listener goes with it, slot 2 keeps its index
	 * (the kernel would have moved the last socket into the hole). */
	srt_host_share_leave(&m[1].hs);
	close(m[1].fd);
	usleep(100 * 1000);             /* the helper sees the hang-up */
	send_packet(qpn_of(2, 0x13), 0, 0, 0, 0, 0, tag);
	{
		struct member rest[2] = { m[0], m[2] };
		CHECK(receiver_of(rest, 2, tag++) == 1);
		/* Something for the departed slot waits in the helper's copy of
		 * the socket ... */
		send_packet(qpn_of(1, 0x14), 0, 0, 0, 0, 0, tag++);
		CHECK(receiver_of(rest, 2, 0) == -1);
	}
	CHECK(srt_host_share_listen(&m[0].hs, svc + 1, true) == 0);     /* now free */
	/* ... and the next member takes slot 1, drained of it. */
	join(&m[1]);
	CHECK(m[1].hs.slot == 1);
	send_packet(qpn_of(1, 0x15), 0, 0, 0, 0, 0, tag);
	CHECK(receiver_of(m, MEMBERS, tag++) == 1);
	send_packet(WIRE_GSI_QPN, WIRE_MAD_CLASS_CM, WIRE_CM_ATTR_SIDR_REQ, 78, 0, svc + 1, tag);
	CHECK(receiver_of(m, MEMBERS, tag++) == 0);
	/* Unlisten: the REQ falls back to slot 0. */
	CHECK(srt_host_share_listen(&m[2].hs, svc, false) == 0);
	send_packet(WIRE_GSI_QPN, WIRE_MAD_CLASS_CM, WIRE_CM_ATTR_REQ, comm_id_of(5, 9), 0, svc, tag);
	CHECK(receiver_of(m, MEMBERS, tag++) == 0);

	/* Everyone leaves: the helper exits after its idle time and the
	 * rendezvous is gone. */
	for (int i = 0; i < MEMBERS; i++) {
		srt_host_share_leave(&m[i].hs);
		close(m[i].fd);
	}
	{
		struct sockaddr_un sun;
		socklen_t len = srt_share_rendezvous(addr, &sun);
		bool gone = false;

		for (int t = 0; t < 100 && !gone; t++) {
			int c = socket(AF_UNIX, SOCK_SEQPACKET, 0);

			gone = connect(c, (struct sockaddr *)&sun, len) != 0 && errno == ECONNREFUSED;
			close(c);
			if (!gone)
				usleep(100 * 1000);
		}
		CHECK(gone);
	}
	return check_exit("test_share");
}
