/*
 * test_scale.c — many RC QPs on one device, over the real UDP runtime.
 *
 * Two processes (fork), each with its own softrnic device on 127.0.0.N,
 * create NQP RC QPs each (default 1000), connect them pairwise, and move traffic on every
 * one of them at once: each QP SENDs a message to its peer QP and RDMA
 * WRITEs another into the peer's buffer, and each side checks every byte
 * it received.  All completions are polled through srt_poll_cq, the path
 * the verbs library uses, so a polling thread drives receive for 1000 QPs.
 *
 * It prints what the scale costs: resident memory per QP (RSS growth over
 * creating and connecting the QPs, divided by NQP, registered buffer
 * excluded) and the time to create/connect them and to move the traffic.
 *
 *   test_scale [NQP]
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_util.h"

#define DEFAULT_NQP 1000u
#define MSG_LEN 3000u           /* SEND: one packet at MTU 4096          */
#define WRITE_LEN 6000u         /* WRITE: two packets                    */
#define SLOT 32768u             /* per-QP buffer slot                    */
#define OFF_SEND 0u             /* outgoing SEND / WRITE data in a slot  */
#define OFF_RECV 8192u          /* incoming SEND data                    */
#define OFF_WRITE 16384u        /* target of the peer's WRITE            */
#define CQ_DEPTH 8192
#define TIMEOUT_NS (30ull * 1000 * 1000 * 1000)

/* Resident set size in bytes (/proc/self/statm, second field). */
static size_t rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, resident = 0;

	REQUIRE(f != NULL, "open /proc/self/statm");
	REQUIRE(fscanf(f, "%lu %lu", &size, &resident) == 2, "parse statm");
	fclose(f);
	return resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* Pattern seeds: distinct per side, QP and kind, so a byte that lands in
 * the wrong QP's slot is caught. */
static uint32_t seed_of(int side, uint32_t i, int kind)
{
	return (uint32_t)side * 0x1000000u + i * 4u + (uint32_t)kind;
}

static int run_side(int fd, int side, uint32_t nqp)
{
	struct srt_device *dev = srt_open();
	struct rt_endpoint ep;
	struct rt_qp_info *mine, *peer;
	struct rnic_qp **qps;

	REQUIRE(dev != NULL, "srt_open");
	/* Touch the buffer now so it does not count as per-QP memory. */
	rt_endpoint_init(&ep, dev, (size_t)nqp * SLOT);
	memset(ep.buf, 0, ep.buf_len);
	/* A CQ deep enough for every completion of the run. */
	srt_lock(dev);
	REQUIRE(rnic_cq_destroy(ep.cq) == 0, "destroy small CQ");
	ep.cq = rnic_cq_create(srt_rnic(dev), CQ_DEPTH, NULL);
	srt_unlock(dev);
	REQUIRE(ep.cq != NULL, "create CQ of %d", CQ_DEPTH);

	qps = calloc(nqp, sizeof(*qps));
	mine = calloc(nqp, sizeof(*mine));
	peer = calloc(nqp, sizeof(*peer));
	REQUIRE(qps && mine && peer, "out of memory");

	size_t rss0 = rss_bytes();
	uint64_t t0 = srt_now();
	for (uint32_t i = 0; i < nqp; i++) {
		qps[i] = rt_qp_create(&ep);
		rt_qp_info(&ep, qps[i], (i * 7919u + (uint32_t)side) & 0xffffff, &mine[i]);
	}
	rt_write_all(fd, mine, nqp * sizeof(*mine));
	rt_read_all(fd, peer, nqp * sizeof(*peer));
	for (uint32_t i = 0; i < nqp; i++) {
		/* A 1000-QP burst on a loaded machine can leave the peer
		 * without a CPU for tens of milliseconds: a patient ACK
		 * timeout (4.096 us * 2^16 = 268 ms, like a wide-area RoCE
		 * setting) keeps retransmission storms from burying it. */
		int e = rt_qp_connect_timeout(&ep, qps[i], mine[i].psn, &peer[i], IBV_MTU_4096, 16);
		REQUIRE(e == 0, "connect QP %u: %s", i, strerror(e));
	}
	uint64_t t1 = srt_now();
	size_t rss1 = rss_bytes();

	for (uint32_t i = 0; i < nqp; i++) {
		uint8_t *slot = ep.buf + (size_t)i * SLOT;
		rt_fill(slot + OFF_SEND, MSG_LEN, seed_of(side, i, 0));
		rt_fill(slot + OFF_SEND + MSG_LEN, WRITE_LEN - MSG_LEN, seed_of(side, i, 1));
		REQUIRE(rt_post_recv(&ep, qps[i], (size_t)i * SLOT + OFF_RECV, 4096, 1000000u + i) == 0, "post recv %u", i);
	}
	rt_barrier(fd);   /* every receive is posted on both sides */

	uint64_t t2 = srt_now();
	for (uint32_t i = 0; i < nqp; i++) {
		size_t off = (size_t)i * SLOT;
		REQUIRE(rt_post_send(&ep, qps[i], IBV_WR_SEND, off + OFF_SEND, MSG_LEN, 0, 0, i) == 0, "post send %u", i);
		REQUIRE(rt_post_send(&ep, qps[i], IBV_WR_RDMA_WRITE, off + OFF_SEND, WRITE_LEN,
				   peer[i].addr + off + OFF_WRITE, peer[i].rkey, 2000000u + i) == 0,
		      "post write %u", i);
	}

	/* Expect nqp receives, nqp SEND and nqp WRITE completions. */
	uint32_t recvs = 0, sends = 0, writes = 0;
	uint64_t deadline = srt_now() + TIMEOUT_NS;
	while (recvs + sends + writes < 3 * nqp) {
		struct ibv_wc wc[32];
		int n = srt_poll_cq(dev, ep.cq, 32, wc);

		REQUIRE(n >= 0, "poll");
		REQUIRE(srt_now() < deadline, "timeout: %u recvs %u sends %u writes of %u", recvs, sends, writes, nqp);
		for (int k = 0; k < n; k++) {
			REQUIRE(wc[k].status == IBV_WC_SUCCESS, "wr_id %llu: %s", (unsigned long long)wc[k].wr_id,
			      rt_wc_status(wc[k].status));
			if (wc[k].opcode == IBV_WC_RECV) {
				uint32_t i = (uint32_t)(wc[k].wr_id - 1000000u);
				REQUIRE(i < nqp && wc[k].byte_len == MSG_LEN, "recv wr_id %llu len %u",
				      (unsigned long long)wc[k].wr_id, wc[k].byte_len);
				REQUIRE(wc[k].qp_num == rnic_qp_num(qps[i]), "recv on QP %u reported for QP %u",
				      wc[k].qp_num, rnic_qp_num(qps[i]));
				recvs++;
			} else if (wc[k].opcode == IBV_WC_SEND) {
				sends++;
			} else {
				REQUIRE(wc[k].opcode == IBV_WC_RDMA_WRITE, "opcode %d", wc[k].opcode);
				writes++;
			}
		}
	}
	uint64_t t3 = srt_now();
	REQUIRE(recvs == nqp && sends == nqp && writes == nqp, "%u recvs %u sends %u writes", recvs, sends, writes);
	rt_barrier(fd);   /* the peer's WRITEs are complete, so their data is here */

	for (uint32_t i = 0; i < nqp; i++) {
		uint8_t *slot = ep.buf + (size_t)i * SLOT;
		REQUIRE(rt_check(slot + OFF_RECV, MSG_LEN, seed_of(!side, i, 0)), "QP %u: SEND data wrong", i);
		REQUIRE(rt_check(slot + OFF_WRITE, MSG_LEN, seed_of(!side, i, 0)) &&
		      rt_check(slot + OFF_WRITE + MSG_LEN, WRITE_LEN - MSG_LEN, seed_of(!side, i, 1)),
		      "QP %u: WRITE data wrong", i);
	}

	if (side == 0) {
		double per_qp = rss1 > rss0 ? (double)(rss1 - rss0) / nqp : 0.0;
		printf("test_scale: %u RC QPs per process: create+connect %.1f ms, "
		       "%.0f bytes resident per QP (RSS +%.1f MiB)\n",
		       nqp, (double)(t1 - t0) / 1e6, per_qp, (double)(rss1 - rss0) / (1 << 20));
		printf("test_scale: traffic on every QP (SEND %u B + WRITE %u B each way): %.1f ms, all data checked\n",
		       MSG_LEN, WRITE_LEN, (double)(t3 - t2) / 1e6);
	}

	for (uint32_t i = 0; i < nqp; i++) {
		srt_lock(dev);
		REQUIRE(rnic_qp_destroy(qps[i]) == 0, "destroy QP %u", i);
		srt_unlock(dev);
	}
	rt_endpoint_fini(&ep);
	srt_close(dev);
	free(qps);
	free(mine);
	free(peer);
	return 0;
}

/* rt_run_two_processes: the parent is side 0, the child side 1. */
static int side_main(int fd, bool server, void *arg)
{
	return run_side(fd, server ? 0 : 1, *(const uint32_t *)arg);
}

int main(int argc, char **argv)
{
	uint32_t nqp = DEFAULT_NQP;

	if (argc > 1) {
		long v = strtol(argv[1], NULL, 10);
		REQUIRE(v >= 1 && v <= 1000000, "NQP must be 1..1000000, got %s", argv[1]);
		nqp = (uint32_t)v;
	}
	int rc = rt_run_two_processes(side_main, &nqp);
	printf("test_scale: ok\n");
	return rc;
}
