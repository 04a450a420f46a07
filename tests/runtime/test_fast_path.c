/*
 * test_fast_path.c — the host-local fast path (src/rnic/fast.c) between
 * two processes: what a program can observe must be what the IBTA says,
 * whether a message went as a fast ring entry or as packets.
 *
 *   1. Order and data: 300 rounds of a WRITE (1 B .. 4 KiB, its own
 *      pattern) posted together with a SEND with immediate; the receive
 *      completion carries the round's number and the WRITE's bytes are in
 *      place when it is seen (WRITE before SEND, IBTA 9.5); the answer
 *      comes back as a SEND, so most messages find their QP idle and go
 *      fast (the counters must say so: fast_tx, fast_rx).
 *   2. RNR: a SEND to a QP with no receive posted is rejected by the fast
 *      path and goes as packets, which meet RNR NAKs (rnr_retry 7: for
 *      ever) until the receive is posted 50 ms later; then it completes,
 *      its bytes intact, once.
 *   3. A length error: a SEND longer than the receive buffer: the
 *      receiver's completion is a local length error, the sender's a
 *      remote invalid request (IBTA 9.9.3.1.2), the receiver's QP in ERR.
 *   4. A remote access error on another QP: a WRITE with a wrong rkey
 *      completes with IBV_WC_REM_ACCESS_ERR, the responder's QP in ERR.
 *   5. A peer that stops answering (SIGSTOP): a fast SEND on a third QP
 *      (local ACK timeout 1 ms, 7 retries) completes with
 *      IBV_WC_RETRY_EXC_ERR once the retry budget is spent, its QP in
 *      ERR, as a request no ACK answers (IBTA 9.7.6.1.3).
 * SOFTRNIC_LOCAL_FAST=0 runs the same checks with packets only
 * (runtime_fast_path_off), and the counters must then show no fast
 * message; so must SOFTRNIC_LOCAL=packets and =0 (the CI's passes over
 * the ring's packets and over UDP).
 */
#include <arpa/inet.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "rt_util.h"

#define BUF_LEN (256u * 1024u)
#define OFF_SEND 0u
#define OFF_RECV 65536u
#define OFF_WRITE 131072u
#define ROUNDS 300u

/* Fast messages are expected unless the environment turns them off, or
 * the ring's whole messages (SOFTRNIC_LOCAL=packets), or the rings
 * (SOFTRNIC_LOCAL=0): the checks hold on every path, the counters say
 * which one carried them. */
static bool fast_on(void)
{
	const char *e = getenv("SOFTRNIC_LOCAL_FAST"), *l = getenv("SOFTRNIC_LOCAL");
	return !(e && !strcmp(e, "0")) && !(l && (!strcmp(l, "0") || !strcmp(l, "packets")));
}

/* A WRITE at OFF_WRITE of `len` bytes and, behind it in the same post, a
 * SEND with immediate `imm` of 8 bytes; both signaled. */
static void post_write_send(struct rt_endpoint *ep, struct rnic_qp *qp, const struct rt_qp_info *peer, uint32_t len,
			    uint32_t imm, uint64_t wr_id)
{
	struct ibv_sge s[2] = {
		{ .addr = (uint64_t)(uintptr_t)(ep->buf + OFF_SEND), .length = len },
		{ .addr = (uint64_t)(uintptr_t)(ep->buf + OFF_SEND), .length = 8 },
	};
	struct ibv_send_wr w[2], *bad = NULL;

	memset(w, 0, sizeof(w));
	w[0] = (struct ibv_send_wr){ .wr_id = wr_id, .sg_list = &s[0], .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				     .send_flags = IBV_SEND_SIGNALED, .next = &w[1] };
	w[0].wr.rdma.remote_addr = peer->addr + OFF_WRITE;
	w[0].wr.rdma.rkey = peer->rkey;
	w[1] = (struct ibv_send_wr){ .wr_id = wr_id + 1, .sg_list = &s[1], .num_sge = 1,
				     .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				     .imm_data = htonl(imm) };
	srt_lock(ep->dev);
	s[0].lkey = s[1].lkey = rnic_mr_lkey(ep->mr);
	REQUIRE(rnic_post_send(qp, w, &bad, srt_now()) == 0, "post WRITE + SEND");
	srt_unlock(ep->dev);
}

static struct ibv_wc wait_wc(struct rt_endpoint *ep, const char *what)
{
	struct ibv_wc wc;

	REQUIRE(rt_wait_wc(ep, &wc, 10000), "no completion for %s within 10 s", what);
	return wc;
}

static enum ibv_qp_state qp_state(struct rt_endpoint *ep, struct rnic_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	srt_lock(ep->dev);
	REQUIRE(rnic_qp_query(qp, &a, &init) == 0, "query");
	srt_unlock(ep->dev);
	return a.qp_state;
}

/* A connected QP, on the path a program's ibv_modify_qp would give it. */
static struct rnic_qp *connect_qp(struct rt_endpoint *ep, int fd, uint32_t psn, struct rt_qp_info *peer)
{
	struct rt_qp_info mine;
	struct rnic_qp *qp = rt_qp_exchange(ep, fd, psn, &mine, peer);

	REQUIRE(rt_qp_connect(ep, qp, psn, peer, srt_active_mtu(ep->dev)) == 0, "connect");
	srt_lock(ep->dev);
	srt_qp_choose_path(ep->dev, qp);
	srt_unlock(ep->dev);
	return qp;
}

static void order_and_data(struct rt_endpoint *ep, struct rnic_qp *qp, const struct rt_qp_info *peer, int fd,
			   bool server)
{
	/* The server's answers completed so far: a send's completion and
	 * the peer's next SEND may come in either order (over UDP the ACK
	 * rides behind it). */
	uint32_t answered = 0;

	for (uint32_t i = 0; i < ROUNDS; i++) {
		uint32_t len = 1 + (i * 977u) % 4096u;

		if (!server) {
			rt_fill(ep->buf + OFF_SEND, len, 1000 + i);
			post_write_send(ep, qp, peer, len, i, 10ull * i);
			/* Ours (WRITE then SEND, in order) and the answer. */
			bool got[3] = { false, false, false };
			for (int k = 0; k < 3; k++) {
				struct ibv_wc wc = wait_wc(ep, "round");
				REQUIRE(wc.status == IBV_WC_SUCCESS, "round %u: status %s", i, rt_wc_status(wc.status));
				if (wc.opcode == IBV_WC_RECV) {
					REQUIRE(wc.wr_id == 5000 + i, "round %u: answer to wr %llu", i,
						(unsigned long long)wc.wr_id);
					got[2] = true;
				} else if (wc.opcode == IBV_WC_RDMA_WRITE) {
					REQUIRE(wc.wr_id == 10ull * i && !got[0] && !got[1], "round %u: WRITE completion out of order", i);
					got[0] = true;
				} else {
					REQUIRE(wc.opcode == IBV_WC_SEND && wc.wr_id == 10ull * i + 1 && got[0],
						"round %u: SEND completion before its WRITE's", i);
					got[1] = true;
				}
			}
			if (i + 1 < ROUNDS)
				REQUIRE(rt_post_recv(ep, qp, OFF_RECV, 64, 5000 + i + 1) == 0, "post_recv");
		} else {
			struct ibv_wc wc = wait_wc(ep, "round");
			while (wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND) {
				REQUIRE(wc.wr_id == 9000 + answered, "answer %u completed out of order (wr %llu)", answered,
					(unsigned long long)wc.wr_id);
				answered++;
				wc = wait_wc(ep, "round");
			}
			REQUIRE(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id == 7000 + i,
				"round %u: server got status %s opcode %d wr %llu", i, rt_wc_status(wc.status), wc.opcode,
				(unsigned long long)wc.wr_id);
			REQUIRE((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == i && wc.byte_len == 8,
				"round %u: immediate %u, %u bytes", i, ntohl(wc.imm_data), wc.byte_len);
			REQUIRE(rt_check(ep->buf + OFF_WRITE, len, 1000 + i),
				"round %u: the WRITE's %u bytes are not in place when its SEND completes", i, len);
			if (i + 1 < ROUNDS)
				REQUIRE(rt_post_recv(ep, qp, OFF_RECV, 64, 7000 + i + 1) == 0, "post_recv");
			REQUIRE(rt_post_send(ep, qp, IBV_WR_SEND, OFF_SEND, 4, 0, 0, 9000 + i) == 0, "answer");
		}
	}
	while (server && answered < ROUNDS) {
		struct ibv_wc wc = wait_wc(ep, "answer");
		REQUIRE(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == 9000 + answered,
			"answer %u: %s, wr %llu", answered, rt_wc_status(wc.status), (unsigned long long)wc.wr_id);
		answered++;
	}
	rt_barrier(fd);
}

static void rnr(struct rt_endpoint *ep, struct rnic_qp *qp, int fd, bool server)
{
	if (!server) {
		rt_fill(ep->buf + OFF_SEND, 100, 77);
		/* The server posts nothing until 50 ms after this. */
		rt_barrier(fd);
		REQUIRE(rt_post_send(ep, qp, IBV_WR_SEND, OFF_SEND, 100, 0, 0, 1) == 0, "post SEND");
		struct ibv_wc wc = wait_wc(ep, "RNR SEND");
		REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1, "RNR SEND: %s", rt_wc_status(wc.status));
		rt_barrier(fd);
		struct srt_stats_file st;
		rt_read_stats(&st, 0);
		rt_read_stats(&st, st.updated_ns);
		REQUIRE(st.counters.rx_rnr_nak >= 1, "the SEND met no RNR NAK (%llu)",
			(unsigned long long)st.counters.rx_rnr_nak);
	} else {
		rt_barrier(fd);
		usleep(50000);
		REQUIRE(rt_post_recv(ep, qp, OFF_RECV, 4096, 2) == 0, "post_recv");
		struct ibv_wc wc = wait_wc(ep, "RNR receive");
		REQUIRE(wc.status == IBV_WC_SUCCESS && wc.wr_id == 2 && wc.byte_len == 100, "RNR receive: %s, %u bytes",
			rt_wc_status(wc.status), wc.byte_len);
		REQUIRE(rt_check(ep->buf + OFF_RECV, 100, 77), "RNR receive: wrong bytes");
		rt_barrier(fd);
		REQUIRE(!rt_wait_wc(ep, &wc, 100), "a second completion for the SEND that met RNR");
	}
}

static void length_error(struct rt_endpoint *ep, struct rnic_qp *qp, int fd, bool server)
{
	if (server)
		REQUIRE(rt_post_recv(ep, qp, OFF_RECV, 16, 3) == 0, "post_recv");
	rt_barrier(fd);
	if (!server) {
		REQUIRE(rt_post_send(ep, qp, IBV_WR_SEND, OFF_SEND, 64, 0, 0, 4) == 0, "post SEND");
		struct ibv_wc wc = wait_wc(ep, "long SEND");
		REQUIRE(wc.wr_id == 4 && wc.status == IBV_WC_REM_INV_REQ_ERR, "long SEND: %s, expected %s",
			rt_wc_status(wc.status), rt_wc_status(IBV_WC_REM_INV_REQ_ERR));
	} else {
		struct ibv_wc wc = wait_wc(ep, "short receive");
		REQUIRE(wc.wr_id == 3 && wc.status == IBV_WC_LOC_LEN_ERR, "short receive: %s, expected %s",
			rt_wc_status(wc.status), rt_wc_status(IBV_WC_LOC_LEN_ERR));
		REQUIRE(qp_state(ep, qp) == IBV_QPS_ERR, "the receiver's QP is not in ERR after a length error");
	}
	rt_barrier(fd);
}

static void access_error(struct rt_endpoint *ep, struct rnic_qp *qp, const struct rt_qp_info *peer, int fd,
			 bool server)
{
	rt_barrier(fd);
	if (!server) {
		REQUIRE(rt_post_send(ep, qp, IBV_WR_RDMA_WRITE, OFF_SEND, 32, peer->addr + OFF_WRITE, peer->rkey ^ 0x100,
				     5) == 0, "post WRITE");
		struct ibv_wc wc = wait_wc(ep, "WRITE with a wrong rkey");
		REQUIRE(wc.wr_id == 5 && wc.status == IBV_WC_REM_ACCESS_ERR, "WRITE with a wrong rkey: %s",
			rt_wc_status(wc.status));
		REQUIRE(qp_state(ep, qp) == IBV_QPS_ERR, "the requester's QP is not in ERR");
	}
	rt_barrier(fd);
	if (server)
		REQUIRE(qp_state(ep, qp) == IBV_QPS_ERR, "the responder's QP is not in ERR after an access error");
	rt_barrier(fd);
}

/* The stopped server, woken however the client ends. */
static pid_t stopped;

static void wake_stopped(void)
{
	if (stopped > 0)
		kill(stopped, SIGCONT);
}

static void stopped_peer(struct rt_endpoint *ep, int fd, bool server)
{
	struct rt_qp_info mine, peer;
	struct rnic_qp *qp = rt_qp_exchange(ep, fd, 0x77, &mine, &peer);
	pid_t pid = getpid();

	REQUIRE(rt_qp_connect_timeout(ep, qp, 0x77, &peer, srt_active_mtu(ep->dev), 8) == 0, "connect");
	srt_lock(ep->dev);
	srt_qp_choose_path(ep->dev, qp);
	srt_unlock(ep->dev);
	if (server) {
		rt_write_all(fd, &pid, sizeof(pid));
		rt_barrier(fd);
		raise(SIGSTOP);         /* the client posts, waits, then wakes us */
		rt_barrier(fd);
	} else {
		struct srt_stats_file st;

		rt_read_all(fd, &pid, sizeof(pid));
		stopped = pid;
		atexit(wake_stopped);
		rt_read_stats(&st, 0);
		rt_read_stats(&st, st.updated_ns);
		uint64_t before = st.counters.fast_tx;
		rt_barrier(fd);
		usleep(20000);          /* until the server has stopped */
		REQUIRE(rt_post_send(ep, qp, IBV_WR_SEND, OFF_SEND, 8, 0, 0, 6) == 0, "post SEND");
		struct ibv_wc wc = wait_wc(ep, "SEND to a stopped peer");
		wake_stopped();
		REQUIRE(wc.wr_id == 6 && wc.status == IBV_WC_RETRY_EXC_ERR, "SEND to a stopped peer: %s, expected %s",
			rt_wc_status(wc.status), rt_wc_status(IBV_WC_RETRY_EXC_ERR));
		REQUIRE(qp_state(ep, qp) == IBV_QPS_ERR, "the QP is not in ERR after its retries ran out");
		rt_read_stats(&st, 0);
		rt_read_stats(&st, st.updated_ns);
		if (fast_on())
			REQUIRE(st.counters.fast_tx == before + 1, "the SEND did not go as a fast message (%llu -> %llu)",
				(unsigned long long)before, (unsigned long long)st.counters.fast_tx);
		rt_barrier(fd);
	}
	srt_lock(ep->dev);
	REQUIRE(rnic_qp_destroy(qp) == 0, "qp_destroy");
	srt_unlock(ep->dev);
}

static int side(int fd, bool server, void *arg)
{
	(void)arg;
	struct srt_device *dev = srt_open();
	REQUIRE(dev != NULL, "srt_open");
	struct rt_endpoint ep;
	rt_endpoint_init(&ep, dev, BUF_LEN);
	struct rt_qp_info peer, peer2;

	struct rnic_qp *qp = connect_qp(&ep, fd, server ? 0x100 : 0xfffffe, &peer);
	REQUIRE(rt_post_recv(&ep, qp, OFF_RECV, 64, server ? 7000 : 5000) == 0, "post_recv");
	rt_barrier(fd);
	order_and_data(&ep, qp, &peer, fd, server);

	struct srt_stats_file st;
	rt_read_stats(&st, 0);
	rt_read_stats(&st, st.updated_ns);
	uint64_t tx = st.counters.fast_tx, rx = st.counters.fast_rx;
	fprintf(stderr, "%s: %llu fast messages sent, %llu received, %llu rejected, %llu packets\n",
		server ? "server" : "client", (unsigned long long)tx, (unsigned long long)rx,
		(unsigned long long)st.counters.fast_rejected, (unsigned long long)st.counters.tx_packets);
	if (fast_on())
		/* Each round's WRITE finds the QP idle; the answers too. */
		REQUIRE(tx >= ROUNDS && rx >= ROUNDS, "the fast path carried %llu/%llu messages of %u rounds",
			(unsigned long long)tx, (unsigned long long)rx, ROUNDS);
	else
		REQUIRE(tx == 0 && rx == 0, "SOFTRNIC_LOCAL_FAST=0, yet %llu fast messages", (unsigned long long)tx);

	rnr(&ep, qp, fd, server);
	length_error(&ep, qp, fd, server);

	struct rnic_qp *qp2 = connect_qp(&ep, fd, 0x42, &peer2);
	access_error(&ep, qp2, &peer2, fd, server);
	stopped_peer(&ep, fd, server);

	srt_lock(dev);
	REQUIRE(rnic_qp_destroy(qp) == 0 && rnic_qp_destroy(qp2) == 0, "qp_destroy");
	srt_unlock(dev);
	rt_endpoint_fini(&ep);
	srt_close(dev);
	fprintf(stderr, "%s: ok\n", server ? "server" : "client");
	return 0;
}

int main(void)
{
	return rt_run_two_processes(side, NULL);
}
