/*
 * verbs_srq_test.c — shared receive queues and async events through our
 * libibverbs.so.1, compiled against the system <infiniband/verbs.h> so
 * the inline verbs (ibv_post_srq_recv, ibv_create_srq_ex, ...) go through
 * the context's ops tables as in an unmodified program.
 *
 * Two receiving RC QPs share one SRQ; two sending QPs of the same context
 * talk to them over our own GID.  Checked: device capabilities, SRQ
 * create/query/modify/destroy rules, XRC refused, completions naming their
 * QP, the SRQ limit event through the pollable async_fd, Last WQE Reached
 * on modify to ERR, CQ overflow -> IBV_EVENT_CQ_ERR, a non-blocking
 * async_fd, and that ibv_destroy_qp / ibv_destroy_srq / ibv_destroy_cq
 * wait until the events they were given are acked.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_test_util.h"

enum { BUF = 1 << 16, MSG = 2000 };

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char *buf;
static union ibv_gid gid;

static struct ibv_qp *make_qp(struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp *qp = vt_create_rc_qp(pd, cq, cq, srq);

	CHECK(qp->srq == srq);
	return qp;
}

/* SEND and RDMA WRITE toward the peer; PSN 7 both ways. */
static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn)
{
	static const struct vt_rc_attr attr = {
		.access = IBV_ACCESS_REMOTE_WRITE,
		.psn = 7,
		.rd_atomic = 1,
		.timeout = 14,
	};

	vt_connect_rc(qp, dest_qpn, &gid, &attr);
}

static int post_send(struct ibv_qp *qp, uint64_t wr_id, uint32_t off, uint32_t len)
{
	return post_send_1(qp, IBV_WR_SEND, mr, buf + off, len, wr_id, IBV_SEND_SIGNALED, 0, 0);
}

static int post_srq(struct ibv_srq *srq, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(buf + off), .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* Busy-poll cq for n completions (5 s at most). */
static int poll_n(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int got = 0;

	for (int spin = 0; got < n && spin < 5000; spin++) {
		int r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return -1;
		got += r;
		if (got < n)
			usleep(1000);
	}
	return got;
}

/* Wait (poll() on async_fd, 5 s) for the next async event. */
static int next_event(struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, 5000) != 1)
		return -1;
	return ibv_get_async_event(ctx, ev);
}

/* Acks an event from another thread after a pause, so the main thread's
 * destroy can be seen waiting for it. */
struct late_ack {
	struct ibv_async_event ev;
	volatile int acked;
};

static void *ack_later(void *arg)
{
	struct late_ack *la = arg;
	struct timespec ts = { 0, 150 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	la->acked = 1;
	ibv_ack_async_event(&la->ev);
	return NULL;
}

static void test_caps(void)
{
	struct ibv_device_attr da;
	struct ibv_srq_init_attr_ex ex;

	CHECK(ibv_query_device(ctx, &da) == 0);
	CHECK(da.max_srq > 0 && da.max_srq_wr > 0 && da.max_srq_sge > 0);
	CHECK(!(da.device_cap_flags & IBV_DEVICE_XRC));
	memset(&ex, 0, sizeof(ex));
	ex.attr.max_wr = 4;
	ex.attr.max_sge = 1;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
		       IBV_SRQ_INIT_ATTR_CQ;
	ex.srq_type = IBV_SRQT_XRC;
	ex.pd = pd;
	errno = 0;
	CHECK(ibv_create_srq_ex(ctx, &ex) == NULL && errno == EOPNOTSUPP);
	/* A basic SRQ through the extended verb works. */
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ex.srq_type = IBV_SRQT_BASIC;
	{
		struct ibv_srq *s = ibv_create_srq_ex(ctx, &ex);
		CHECK(s != NULL);
		if (s)
			CHECK(ibv_destroy_srq(s) == 0);
	}
	{
		struct ibv_srq_init_attr bad = { .attr = { .max_wr = (uint32_t)da.max_srq_wr + 1, .max_sge = 1 } };
		errno = 0;
		CHECK(ibv_create_srq(pd, &bad) == NULL && errno == EINVAL);
	}
}

static void test_srq_and_events(void)
{
	struct ibv_cq *scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_srq_init_attr sinit = { .srq_context = &sinit, .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq;
	struct ibv_qp *sa[2], *rb[2];
	struct ibv_srq_attr at;
	struct ibv_async_event ev;
	struct ibv_wc wc[8];
	struct late_ack la;
	pthread_t th;
	int flags;

	REQUIRE(scq && rcq);
	srq = ibv_create_srq(pd, &sinit);
	REQUIRE(srq);
	CHECK(srq->srq_context == &sinit && srq->pd == pd && srq->context == ctx);
	CHECK(ibv_query_srq(srq, &at) == 0 && at.max_wr == 16 && at.max_sge == 1 && at.srq_limit == 0);
	for (int i = 0; i < 2; i++) {
		sa[i] = make_qp(scq, NULL);
		rb[i] = make_qp(rcq, srq);
	}
	for (int i = 0; i < 2; i++) {
		connect_qp(sa[i], rb[i]->qp_num);
		connect_qp(rb[i], sa[i]->qp_num);
	}
	{
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey };
		struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
		CHECK(ibv_post_recv(rb[0], &wr, &bad) != 0);   /* SRQ QPs have no RQ */
	}
	for (int k = 0; k < 4; k++)
		CHECK(post_srq(srq, 100 + (uint64_t)k, 8192 + (uint32_t)k * 4096, 4096) == 0);
	at.srq_limit = 3;
	CHECK(ibv_modify_srq(srq, &at, IBV_SRQ_LIMIT) == 0);
	CHECK(ibv_query_srq(srq, &at) == 0 && at.srq_limit == 3);

	/* Nothing yet: a non-blocking async_fd says EAGAIN. */
	flags = fcntl(ctx->async_fd, F_GETFL);
	CHECK(fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) == 0);
	errno = 0;
	CHECK(ibv_get_async_event(ctx, &ev) == -1 && errno == EAGAIN);
	CHECK(fcntl(ctx->async_fd, F_SETFL, flags) == 0);

	for (int i = 0; i < 2; i++) {
		memset(buf + i * MSG, 'a' + i, MSG);
		CHECK(post_send(sa[i], (uint64_t)i, (uint32_t)i * MSG, MSG) == 0);
	}
	CHECK(poll_n(scq, 2, wc) == 2);
	CHECK(poll_n(rcq, 2, wc) == 2);
	for (int i = 0; i < 2; i++) {
		int which = wc[i].qp_num == rb[0]->qp_num ? 0 : wc[i].qp_num == rb[1]->qp_num ? 1 : -1;

		CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len == MSG && which >= 0);
		if (which >= 0 && wc[i].wr_id >= 100 && wc[i].wr_id < 104)
			CHECK(buf[8192 + (wc[i].wr_id - 100) * 4096] == 'a' + which);
	}
	/* 2 WQEs left < 3: the limit event, with the SRQ as element. */
	REQUIRE(next_event(&ev) == 0);
	CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq);
	CHECK(ibv_query_srq(srq, &at) == 0 && at.srq_limit == 0);   /* disarmed */
	CHECK(ibv_destroy_srq(srq) == EBUSY);
	la.ev = ev;
	la.acked = 0;

	/* Last WQE Reached when an SRQ QP enters ERR. */
	{
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
		struct ibv_async_event ev2;
		struct late_ack la2;

		CHECK(ibv_modify_qp(rb[0], &qa, IBV_QP_STATE) == 0);
		REQUIRE(next_event(&ev2) == 0);
		CHECK(ev2.event_type == IBV_EVENT_QP_LAST_WQE_REACHED && ev2.element.qp == rb[0]);
		/* ibv_destroy_qp waits for the ack of the event it handed out. */
		la2.ev = ev2;
		la2.acked = 0;
		REQUIRE(pthread_create(&th, NULL, ack_later, &la2) == 0);
		CHECK(ibv_destroy_qp(rb[0]) == 0);
		CHECK(la2.acked == 1);
		pthread_join(th, NULL);
	}
	CHECK(ibv_destroy_qp(rb[1]) == 0);
	CHECK(ibv_destroy_qp(sa[0]) == 0);
	CHECK(ibv_destroy_qp(sa[1]) == 0);
	/* ... and ibv_destroy_srq for the limit event. */
	REQUIRE(pthread_create(&th, NULL, ack_later, &la) == 0);
	CHECK(ibv_destroy_srq(srq) == 0);
	CHECK(la.acked == 1);
	pthread_join(th, NULL);
	CHECK(ibv_destroy_cq(scq) == 0);
	CHECK(ibv_destroy_cq(rcq) == 0);
}

/* A CQ of one entry receiving two completions overflows: CQ_ERR. */
static void test_cq_err(void)
{
	struct ibv_cq *scq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *tiny = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	struct ibv_srq_init_attr sinit = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sinit);
	struct ibv_async_event ev;
	struct ibv_qp *a, *b;
	struct ibv_wc wc[4];
	struct late_ack la;
	pthread_t th;

	REQUIRE(scq && tiny && srq);
	a = make_qp(scq, NULL);
	b = make_qp(tiny, srq);
	connect_qp(a, b->qp_num);
	connect_qp(b, a->qp_num);
	CHECK(post_srq(srq, 1, 0, 64) == 0);
	CHECK(post_srq(srq, 2, 64, 64) == 0);
	CHECK(post_send(a, 1, 4096, 16) == 0);
	CHECK(post_send(a, 2, 4096, 16) == 0);
	CHECK(poll_n(scq, 2, wc) == 2);
	REQUIRE(next_event(&ev) == 0);
	CHECK(ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == tiny);
	CHECK(ibv_poll_cq(tiny, 4, wc) == 1);
	CHECK(ibv_destroy_qp(a) == 0);
	CHECK(ibv_destroy_qp(b) == 0);
	CHECK(ibv_destroy_srq(srq) == 0);
	la.ev = ev;
	la.acked = 0;
	REQUIRE(pthread_create(&th, NULL, ack_later, &la) == 0);
	CHECK(ibv_destroy_cq(tiny) == 0);
	CHECK(la.acked == 1);
	pthread_join(th, NULL);
	CHECK(ibv_destroy_cq(scq) == 0);
}

int main(void)
{
	ctx = vt_open_device(NULL);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);
	pd = ibv_alloc_pd(ctx);
	buf = calloc(1, BUF);
	REQUIRE(pd && buf);
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(mr);

	test_caps();
	test_srq_and_events();
	test_cq_err();

	CHECK(ibv_dereg_mr(mr) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	free(buf);
	if (check_failures) {
		check_exit("verbs_srq_test");
		return 1;
	}
	printf("verbs_srq_test: all passed\n");
	return 0;
}
