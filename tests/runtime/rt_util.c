/*
 * rt_util.c — helpers for the runtime tests (see rt_util.h).
 */
#include "rt_util.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void rt_endpoint_init(struct rt_endpoint *ep, struct srt_device *dev, size_t buf_len)
{
	memset(ep, 0, sizeof(*ep));
	ep->dev = dev;
	ep->buf_len = buf_len;
	ep->buf = calloc(1, buf_len);
	REQUIRE(ep->buf != NULL, "out of memory");
	srt_lock(dev);
	struct rnic *r = srt_rnic(dev);
	ep->pd = rnic_pd_alloc(r);
	ep->cq = ep->pd ? rnic_cq_create(r, 256, NULL) : NULL;
	ep->mr = ep->cq ? rnic_mr_reg(ep->pd, ep->buf, buf_len, (uint64_t)(uintptr_t)ep->buf,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
			: NULL;
	srt_unlock(dev);
	REQUIRE(ep->pd && ep->cq && ep->mr, "cannot create PD/CQ/MR");
}

void rt_endpoint_fini(struct rt_endpoint *ep)
{
	srt_lock(ep->dev);
	REQUIRE(rnic_mr_dereg(ep->mr) == 0, "mr_dereg");
	REQUIRE(rnic_cq_destroy(ep->cq) == 0, "cq_destroy (QPs still on it?)");
	REQUIRE(rnic_pd_free(ep->pd) == 0, "pd_free (objects still in it?)");
	srt_unlock(ep->dev);
	free(ep->buf);
}

struct rnic_qp *rt_qp_create(struct rt_endpoint *ep)
{
	struct ibv_qp_init_attr init;

	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 32;
	init.cap.max_recv_wr = 32;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	srt_lock(ep->dev);
	struct rnic_qp *qp = rnic_qp_create(ep->pd, ep->cq, ep->cq, &init, NULL);
	srt_unlock(ep->dev);
	REQUIRE(qp != NULL, "rnic_qp_create: errno %d", errno);
	return qp;
}

void rt_qp_info(struct rt_endpoint *ep, struct rnic_qp *qp, uint32_t psn, struct rt_qp_info *out)
{
	memset(out, 0, sizeof(*out));
	srt_lock(ep->dev);
	out->qpn = rnic_qp_num(qp);
	out->rkey = rnic_mr_rkey(ep->mr);
	srt_unlock(ep->dev);
	out->psn = psn;
	out->addr = (uint64_t)(uintptr_t)ep->buf;
	memcpy(out->gid, srt_gid(ep->dev)->raw, 16);
}

int rt_qp_connect(struct rt_endpoint *ep, struct rnic_qp *qp, uint32_t my_psn, const struct rt_qp_info *peer,
		  enum ibv_mtu mtu)
{
	return rt_qp_connect_timeout(ep, qp, my_psn, peer, mtu, 12);   /* 4.096 us * 2^12 = 16.8 ms */
}

int rt_qp_connect_timeout(struct rt_endpoint *ep, struct rnic_qp *qp, uint32_t my_psn,
			  const struct rt_qp_info *peer, enum ibv_mtu mtu, uint8_t timeout)
{
	struct ibv_qp_attr a;
	uint64_t now = srt_now();
	int e;

	srt_lock(ep->dev);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	e = rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, now);
	if (e)
		goto out;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = 0;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	e = rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, now);
	if (e)
		goto out;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 4;
	e = rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, now);
out:
	srt_unlock(ep->dev);
	return e;
}

int rt_post_recv(struct rt_endpoint *ep, struct rnic_qp *qp, size_t off, size_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)(ep->buf + off), .length = (uint32_t)len };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	srt_lock(ep->dev);
	sge.lkey = rnic_mr_lkey(ep->mr);
	int e = rnic_post_recv(qp, &wr, &bad);
	srt_unlock(ep->dev);
	return e;
}

int rt_post_send(struct rt_endpoint *ep, struct rnic_qp *qp, enum ibv_wr_opcode op, size_t off, size_t len,
		 uint64_t remote_addr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_send_wr *bad = NULL;

	wr_send_1(&wr, &sge, op, wr_id, (uint64_t)(uintptr_t)(ep->buf + off), (uint32_t)len, 0);
	wr_remote(&wr, remote_addr, rkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	srt_lock(ep->dev);
	sge.lkey = rnic_mr_lkey(ep->mr);
	int e = rnic_post_send(qp, &wr, &bad, srt_now());
	srt_unlock(ep->dev);
	srt_kick(ep->dev);
	return e;
}

static uint64_t now_ms(void)
{
	return srt_now() / 1000000u;
}

bool rt_wait_wc(struct rt_endpoint *ep, struct ibv_wc *wc, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		srt_lock(ep->dev);
		int n = rnic_cq_poll(ep->cq, 1, wc);
		srt_unlock(ep->dev);
		if (n == 1)
			return true;
		if (now_ms() > end)
			return false;
		usleep(200);
	}
}

/* Not ibv_wc_status_str: the tests must not link the system libibverbs. */
const char *rt_wc_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return "success";
	case IBV_WC_LOC_LEN_ERR: return "local length error";
	case IBV_WC_LOC_PROT_ERR: return "local protection error";
	case IBV_WC_WR_FLUSH_ERR: return "flushed";
	case IBV_WC_REM_INV_REQ_ERR: return "remote invalid request";
	case IBV_WC_REM_ACCESS_ERR: return "remote access error";
	case IBV_WC_REM_OP_ERR: return "remote operation error";
	case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
	case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
	default: return "other error";
	}
}

void rt_expect_wc(struct rt_endpoint *ep, enum ibv_wc_opcode opcode, uint64_t wr_id, uint32_t byte_len)
{
	struct ibv_wc wc;

	REQUIRE(rt_wait_wc(ep, &wc, 10000), "no completion for wr_id %llu within 10 s", (unsigned long long)wr_id);
	REQUIRE(wc.status == IBV_WC_SUCCESS, "wr_id %llu completed with status %d (%s)",
	      (unsigned long long)wc.wr_id, wc.status, rt_wc_status(wc.status));
	REQUIRE(wc.wr_id == wr_id, "expected wr_id %llu, got %llu", (unsigned long long)wr_id,
	      (unsigned long long)wc.wr_id);
	REQUIRE(wc.opcode == opcode, "wr_id %llu: opcode %d, expected %d", (unsigned long long)wr_id, wc.opcode,
	      opcode);
	if (opcode & IBV_WC_RECV)
		REQUIRE(wc.byte_len == byte_len, "byte_len %u, expected %u", wc.byte_len, byte_len);
}

void rt_expect_send_and_recv(struct rt_endpoint *ep, uint64_t send_wr_id, uint64_t recv_wr_id, uint32_t recv_len)
{
	bool sent = false, received = false;

	for (int i = 0; i < 2; i++) {
		struct ibv_wc wc;

		REQUIRE(rt_wait_wc(ep, &wc, 10000), "no completion for wr_id %llu within 10 s",
		      (unsigned long long)(sent ? recv_wr_id : send_wr_id));
		REQUIRE(wc.status == IBV_WC_SUCCESS, "wr_id %llu completed with status %d (%s)",
		      (unsigned long long)wc.wr_id, wc.status, rt_wc_status(wc.status));
		if (wc.opcode == IBV_WC_SEND) {
			REQUIRE(!sent && wc.wr_id == send_wr_id, "send completion wr_id %llu, expected %llu once",
			      (unsigned long long)wc.wr_id, (unsigned long long)send_wr_id);
			sent = true;
		} else {
			REQUIRE(!received && wc.opcode == IBV_WC_RECV && wc.wr_id == recv_wr_id,
			      "completion opcode %d wr_id %llu, expected a receive of wr_id %llu once", wc.opcode,
			      (unsigned long long)wc.wr_id, (unsigned long long)recv_wr_id);
			REQUIRE(wc.byte_len == recv_len, "byte_len %u, expected %u", wc.byte_len, recv_len);
			received = true;
		}
	}
}

void rt_fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

bool rt_check(const uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		if (p[i] != (uint8_t)(x >> 16)) {
			fprintf(stderr, "pattern %u differs at byte %zu: %#x != %#x\n", seed, i, p[i],
				(uint8_t)(x >> 16));
			return false;
		}
	}
	return true;
}

void rt_read_stats(struct srt_stats_file *out, uint64_t after_ns)
{
	for (int tries = 0; tries < 300; tries++) {
		int e = srt_stats_read(getpid(), out);
		if (e == 0 && out->updated_ns > after_ns)
			return;
		usleep(10000);
	}
	REQUIRE(0, "no fresh stats for pid %d in 3 s", (int)getpid());
}

void rt_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = write(fd, b, n);
		REQUIRE(k > 0 || errno == EINTR, "exchange write: %s", strerror(errno));
		if (k > 0) {
			b += k;
			n -= (size_t)k;
		}
	}
}

void rt_read_all(int fd, void *p, size_t n)
{
	uint8_t *b = p;
	while (n) {
		ssize_t k = read(fd, b, n);
		REQUIRE(k > 0 || (k < 0 && errno == EINTR), "exchange read: %s", k == 0 ? "peer closed" : strerror(errno));
		if (k > 0) {
			b += k;
			n -= (size_t)k;
		}
	}
}

void rt_barrier(int fd)
{
	char c = 'b';
	rt_write_all(fd, &c, 1);
	rt_read_all(fd, &c, 1);
	REQUIRE(c == 'b', "bad barrier byte");
}

int rt_run_two_processes(int (*side)(int fd, bool server, void *arg), void *arg)
{
	int sv[2];

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid_t child = fork();
	REQUIRE(child >= 0, "fork: %s", strerror(errno));
	if (child == 0) {
		close(sv[0]);
		_exit(side(sv[1], false, arg));
	}
	close(sv[1]);
	int rc = side(sv[0], true, arg);
	int status = 0;
	REQUIRE(waitpid(child, &status, 0) == child, "waitpid: %s", strerror(errno));
	REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0, "client process failed (status %#x)", status);
	close(sv[0]);
	return rc;
}

struct rnic_qp *rt_qp_exchange(struct rt_endpoint *ep, int fd, uint32_t psn, struct rt_qp_info *mine,
			       struct rt_qp_info *peer)
{
	struct rnic_qp *qp = rt_qp_create(ep);

	rt_qp_info(ep, qp, psn, mine);
	rt_write_all(fd, mine, sizeof(*mine));
	rt_read_all(fd, peer, sizeof(*peer));
	return qp;
}
