/*
 * test_hostile.c — hostile UDP at a live device.  With two connected RC QP
 * pairs on one device (they talk to each other over the device's own UDP
 * address), a plain socket sends random bytes, runt datagrams, a packet
 * with a bad ICRC, and well-formed packets (valid ICRC) with a wrong QPN,
 * a wrong PSN, a wrong rkey and a truncated header.  The published
 * counters must count each, and the QPs must still carry traffic.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rt_util.h"
#include "runtime/icrc_recv.h"

#define BUF_LEN 65536u

struct hostile {
	int fd;
	struct sockaddr_in dev_addr;    /* the device's addr:4791 */
	struct wire_ip ip;              /* IP header our packets travel with */
	uint16_t sport;
};

/* A plain UDP socket on the device's own address (so forged requests come
 * from the address the QPs are connected to), DF set so Linux sends ID 0. */
static void hostile_open(struct hostile *h, const struct rnic_gid *dev_gid)
{
	struct sockaddr_in me = { .sin_family = AF_INET };
	socklen_t len = sizeof(me);
	int df = IP_PMTUDISC_DO;

	memcpy(&me.sin_addr, &dev_gid->raw[12], 4);
	h->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	REQUIRE(h->fd >= 0, "socket");
	REQUIRE(setsockopt(h->fd, IPPROTO_IP, IP_MTU_DISCOVER, &df, sizeof(df)) == 0, "IP_MTU_DISCOVER");
	REQUIRE(bind(h->fd, (struct sockaddr *)&me, sizeof(me)) == 0, "bind: %s", strerror(errno));
	REQUIRE(getsockname(h->fd, (struct sockaddr *)&me, &len) == 0, "getsockname");
	h->sport = ntohs(me.sin_port);
	h->dev_addr = me;
	h->dev_addr.sin_port = htons(WIRE_ROCEV2_UDP_PORT);
	memset(&h->ip, 0, sizeof(h->ip));
	h->ip.version = 4;
	h->ip.df = true;
	memcpy(h->ip.src, dev_gid->raw, 16);
	memcpy(h->ip.dst, dev_gid->raw, 16);
}

static void hostile_send(struct hostile *h, const uint8_t *p, size_t len)
{
	ssize_t n = sendto(h->fd, p, len, 0, (struct sockaddr *)&h->dev_addr, sizeof(h->dev_addr));
	REQUIRE(n == (ssize_t)len, "sendto: %s", strerror(errno));
}

/* Build a request packet with a valid ICRC for IPv4 ID `ip_id`.  Returns
 * its length. */
static size_t craft(struct hostile *h, uint8_t *buf, uint8_t opcode, uint32_t dqpn, uint32_t psn,
		    uint64_t va, uint32_t rkey, uint32_t payload_len, uint16_t ip_id)
{
	static const uint8_t payload[64] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct wire_ib ib;

	memset(&ib, 0, sizeof(ib));
	ib.bth.opcode = opcode;
	ib.bth.pkey = 0xffff;
	ib.bth.dqpn = dqpn;
	ib.bth.psn = psn;
	ib.bth.ackreq = true;
	ib.reth.va = va;
	ib.reth.rkey = rkey;
	ib.reth.dma_len = payload_len;
	ib.payload = payload;
	ib.payload_len = payload_len;
	int n = wire_encode_ib(&ib, buf, WIRE_MAX_IB_PACKET);
	REQUIRE(n > 0, "wire_encode_ib: %d", n);

	struct wire_ip ip = h->ip;
	ip.id = ip_id;
	wire_icrc_store(buf + n - WIRE_ICRC_LEN, wire_icrc_udp_payload(&ip, h->sport, buf, (size_t)n - WIRE_ICRC_LEN));
	return (size_t)n;
}

static uint64_t total_drops(const struct rnic_counters *c)
{
	return c->rx_drop_malformed + c->rx_drop_bad_icrc + c->rx_drop_unknown_qp + c->rx_drop_qp_state +
	       c->rx_drop_bad_opcode_seq + c->rx_drop_bad_pkey + c->rx_drop_bad_qkey + c->rx_drop_out_of_window +
	       c->rx_drop_ghost_response;
}

#define DELTA(field) (now.counters.field - base.counters.field)

int main(void)
{
	struct srt_device *dev = srt_open();
	REQUIRE(dev != NULL, "srt_open: %s", strerror(errno));

	struct rt_endpoint ep;
	rt_endpoint_init(&ep, dev, BUF_LEN);
	struct rnic_qp *qa = rt_qp_create(&ep), *qb = rt_qp_create(&ep);
	struct rnic_qp *qc = rt_qp_create(&ep), *qd = rt_qp_create(&ep);
	struct rt_qp_info ia, ib, ic, id;
	rt_qp_info(&ep, qa, 100, &ia);
	rt_qp_info(&ep, qb, 200, &ib);
	rt_qp_info(&ep, qc, 300, &ic);
	rt_qp_info(&ep, qd, 400, &id);
	REQUIRE(rt_qp_connect(&ep, qa, ia.psn, &ib, IBV_MTU_1024) == 0, "connect qa");
	REQUIRE(rt_qp_connect(&ep, qb, ib.psn, &ia, IBV_MTU_1024) == 0, "connect qb");
	REQUIRE(rt_qp_connect(&ep, qc, ic.psn, &id, IBV_MTU_1024) == 0, "connect qc");
	REQUIRE(rt_qp_connect(&ep, qd, id.psn, &ic, IBV_MTU_1024) == 0, "connect qd");

	/* Traffic before: qa -> qb one SEND (qb now expects PSN 101). */
	rt_fill(ep.buf, 100, 7);
	REQUIRE(rt_post_recv(&ep, qb, 8192, 1024, 10) == 0, "post_recv");
	REQUIRE(rt_post_send(&ep, qa, IBV_WR_SEND, 0, 100, 0, 0, 11) == 0, "post_send");
	for (int i = 0; i < 2; i++) {
		struct ibv_wc wc;
		REQUIRE(rt_wait_wc(&ep, &wc, 10000) && wc.status == IBV_WC_SUCCESS, "first SEND failed");
	}
	REQUIRE(rt_check(ep.buf + 8192, 100, 7), "first SEND data");
	uint32_t qb_expected_psn = ia.psn + 1;

	struct srt_stats_file base, now;
	rt_read_stats(&base, 0);
	rt_read_stats(&base, base.updated_ns);

	struct hostile h;
	hostile_open(&h, srt_gid(dev));
	uint8_t pkt[WIRE_MAX_IB_PACKET];

	/* 20 datagrams of random bytes (regenerated in the 2^-16 case that
	 * some IPv4 ID would make their ICRC right: we want bad ICRCs). */
	srand(42);
	for (int i = 0; i < 20; i++) {
		size_t len = 16 + (size_t)(rand() % 300);
		do {
			for (size_t k = 0; k < len; k++)
				pkt[k] = (uint8_t)rand();
		} while (srt_icrc_verify_ipv4(&h.ip, h.sport, pkt, len, NULL) != SRT_ICRC_BAD);
		hostile_send(&h, pkt, len);
	}
	/* 4 runts: shorter than BTH + ICRC. */
	static const size_t runts[] = { 0, 1, 8, 15 };
	memset(pkt, 0, sizeof(pkt));
	for (size_t i = 0; i < 4; i++)
		hostile_send(&h, pkt, runts[i]);

	/* A good SEND for qb with one ICRC bit wrong. */
	size_t n = craft(&h, pkt, WIRE_TR_RC | WIRE_OP_SEND_ONLY, ib.qpn, qb_expected_psn, 0, 0, 8, 0);
	pkt[n - 1] ^= 0x10;
	hostile_send(&h, pkt, n);

	/* Valid ICRC, QPN that does not exist: once as a softrnic sender
	 * (ID 0), once as a kernel rxe sender would (ID 0x5a5a). */
	uint32_t ghost_qpn = (id.qpn + 0x1000) & WIRE_QPN_MASK;
	n = craft(&h, pkt, WIRE_TR_RC | WIRE_OP_SEND_ONLY, ghost_qpn, 1, 0, 0, 8, 0);
	hostile_send(&h, pkt, n);
	n = craft(&h, pkt, WIRE_TR_RC | WIRE_OP_SEND_ONLY, ghost_qpn, 1, 0, 0, 8, 0x5a5a);
	hostile_send(&h, pkt, n);

	/* Valid ICRC, RDMA WRITE Only to qb cut off inside its RETH. */
	n = craft(&h, pkt, WIRE_TR_RC | WIRE_OP_WRITE_ONLY, ib.qpn, qb_expected_psn, ia.addr, ia.rkey, 8, 0);
	size_t cut = WIRE_BTH_LEN + 6;
	wire_icrc_store(pkt + cut, wire_icrc_udp_payload(&h.ip, h.sport, pkt, cut));
	hostile_send(&h, pkt, cut + WIRE_ICRC_LEN);

	/* Valid ICRC, PSN far ahead of what qb expects. */
	n = craft(&h, pkt, WIRE_TR_RC | WIRE_OP_SEND_ONLY, ib.qpn, wire_psn_add(qb_expected_psn, 5000), 0, 0, 8, 0);
	hostile_send(&h, pkt, n);

	/* Valid ICRC, right PSN, wrong rkey: on the spare pair (a remote
	 * access error may move qd to the error state). */
	uint32_t bad_rkey = ic.rkey ^ 0x00010000u;
	n = craft(&h, pkt, WIRE_TR_RC | WIRE_OP_WRITE_ONLY, id.qpn, ic.psn, ic.addr, bad_rkey, 8, 0);
	hostile_send(&h, pkt, n);

	/* Wait until everything has been counted. */
	for (int tries = 0; tries < 50; tries++) {
		rt_read_stats(&now, base.updated_ns);
		if (DELTA(rx_drop_bad_icrc) >= 21 && DELTA(rx_drop_unknown_qp) >= 2 && DELTA(rx_drop_malformed) >= 5 &&
		    DELTA(tx_nak_remote_access) >= 1)
			break;
		usleep(50000);
	}
	fprintf(stderr, "deltas: bad_icrc %llu malformed %llu unknown_qp %llu nak_psn_seq %llu out_of_window %llu "
		"nak_remote_access %llu all drops %llu\n",
		(unsigned long long)DELTA(rx_drop_bad_icrc), (unsigned long long)DELTA(rx_drop_malformed),
		(unsigned long long)DELTA(rx_drop_unknown_qp), (unsigned long long)DELTA(tx_nak_psn_seq),
		(unsigned long long)DELTA(rx_drop_out_of_window), (unsigned long long)DELTA(tx_nak_remote_access),
		(unsigned long long)(total_drops(&now.counters) - total_drops(&base.counters)));
	REQUIRE(DELTA(rx_drop_bad_icrc) == 21, "20 random + 1 corrupted ICRC should be counted as bad ICRC");
	REQUIRE(DELTA(rx_drop_malformed) == 5, "4 runts + 1 truncated RETH should be malformed");
	REQUIRE(DELTA(rx_drop_unknown_qp) == 2, "2 packets to a QPN that does not exist");
	REQUIRE(DELTA(tx_nak_psn_seq) + DELTA(rx_drop_out_of_window) >= 1, "PSN far ahead was not NAKed or dropped");
	REQUIRE(DELTA(tx_nak_remote_access) == 1, "wrong rkey was not NAKed with a remote access error");

	/* qa <-> qb still carry traffic: SEND, WRITE, READ. */
	rt_fill(ep.buf, 3000, 8);
	REQUIRE(rt_post_recv(&ep, qb, 8192, 4096, 20) == 0, "post_recv");
	REQUIRE(rt_post_send(&ep, qa, IBV_WR_SEND, 0, 3000, 0, 0, 21) == 0, "post SEND");
	REQUIRE(rt_post_send(&ep, qa, IBV_WR_RDMA_WRITE, 0, 3000, ib.addr + 16384, ib.rkey, 22) == 0, "post WRITE");
	REQUIRE(rt_post_send(&ep, qa, IBV_WR_RDMA_READ, 32768, 3000, ib.addr + 16384, ib.rkey, 23) == 0, "post READ");
	int seen = 0;
	for (int i = 0; i < 4; i++) {
		struct ibv_wc wc;
		REQUIRE(rt_wait_wc(&ep, &wc, 10000), "traffic after the attack stalled (%d of 4 completions)", i);
		REQUIRE(wc.status == IBV_WC_SUCCESS, "wr_id %llu failed after the attack: %s",
		      (unsigned long long)wc.wr_id, rt_wc_status(wc.status));
		seen |= 1 << (wc.wr_id - 20);
	}
	REQUIRE(seen == 0xf, "missing completions (mask %#x)", seen);
	REQUIRE(rt_check(ep.buf + 8192, 3000, 8), "SEND after attack");
	REQUIRE(rt_check(ep.buf + 16384, 3000, 8), "WRITE after attack");
	REQUIRE(rt_check(ep.buf + 32768, 3000, 8), "READ after attack");

	close(h.fd);
	srt_lock(dev);
	REQUIRE(rnic_qp_destroy(qa) == 0 && rnic_qp_destroy(qb) == 0 && rnic_qp_destroy(qc) == 0 &&
	      rnic_qp_destroy(qd) == 0, "qp_destroy");
	srt_unlock(dev);
	rt_endpoint_fini(&ep);
	srt_close(dev);
	printf("hostile: ok\n");
	return 0;
}
