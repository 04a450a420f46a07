/*
 * verbs_api_test.c — the verbs API of our libibverbs.so.1 as a program
 * sees it: compiled against the system <infiniband/verbs.h>, so every
 * inline verb (ibv_query_port, ibv_reg_mr, ibv_poll_cq, ibv_post_send,
 * ibv_query_device_ex, ibv_create_cq_ex, ...) goes through the context's
 * ops tables exactly as in an unmodified program.
 *
 * usage: verbs_api_test [basic|loopback]
 *   basic     device list, queries, object life cycle, argument errors,
 *             completion-channel fd semantics, helper tables
 *   loopback  two RC QPs of one context connected to each other over our
 *             own GID: SEND/RECV with completion events, RDMA WRITE and
 *             RDMA READ, checked byte for byte (needs the RC transport)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_test_util.h"

static struct ibv_context *open_softrnic(void)
{
	return vt_open_device("softrnic0");
}

/* ---- basic ---------------------------------------------------------------- */

static void test_device_list(void)
{
	struct ibv_device **list;
	int n = -1;

	list = ibv_get_device_list(&n);
	REQUIRE(list);
	CHECK(n == 1);
	CHECK(list[1] == NULL);
	CHECK(list[0]->node_type == IBV_NODE_CA);
	CHECK(list[0]->transport_type == IBV_TRANSPORT_IB);
	CHECK(strcmp(list[0]->name, "softrnic0") == 0);
	CHECK(list[0]->dev_path[0] && list[0]->ibdev_path[0]);
	CHECK(ibv_get_device_guid(list[0]) != 0);
	CHECK(ibv_get_device_index(list[0]) == 0);
	ibv_free_device_list(list);
}

static void test_queries(struct ibv_context *ctx)
{
	struct ibv_device_attr da;
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge, table[4];
	union ibv_gid gid;
	__be16 pkey;

	memset(&da, 0xa5, sizeof(da));
	CHECK(ibv_query_device(ctx, &da) == 0);
	CHECK(strcmp(da.fw_ver, "softrnic 0.1") == 0);
	CHECK(da.vendor_id == 0xFFFFFF);
	CHECK(da.max_qp > 0 && da.max_qp_wr > 0 && da.max_cqe > 0 && da.max_mr > 0);
	CHECK(da.max_sge > 0 && da.max_pd > 0 && da.max_cq > 0);
	CHECK(da.atomic_cap == IBV_ATOMIC_HCA);
	CHECK(da.max_srq > 0 && da.max_srq_wr > 0 && da.max_srq_sge > 0);
	CHECK(da.phys_port_cnt == 1);
	CHECK(da.node_guid != 0 && da.node_guid == da.sys_image_guid);

	memset(&dx, 0xa5, sizeof(dx));
	CHECK(ibv_query_device_ex(ctx, NULL, &dx) == 0);
	CHECK(memcmp(&dx.orig_attr, &da, sizeof(da)) == 0);
	/* ODP is claimed (mr_ex_test checks it in depth). */
	CHECK(dx.odp_caps.general_caps & IBV_ODP_SUPPORT);
	CHECK(dx.phys_port_cnt_ex == 1);

	/* The header's ibv_query_port goes through verbs_context.query_port. */
	memset(&pa, 0xa5, sizeof(pa));
	CHECK(ibv_query_port(ctx, 1, &pa) == 0);
	CHECK(pa.state == IBV_PORT_ACTIVE);
	CHECK(pa.phys_state == 5);
	CHECK(pa.link_layer == IBV_LINK_LAYER_ETHERNET);
	CHECK(pa.max_mtu == IBV_MTU_4096);
	CHECK(pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= IBV_MTU_4096);
	CHECK(pa.gid_tbl_len == 1 && pa.pkey_tbl_len == 1);
	CHECK(pa.lid == 0);
	CHECK(pa.flags & IBV_QPF_GRH_REQUIRED);
	CHECK(ibv_query_port(ctx, 2, &pa) == EINVAL);
	/* ... and the exported symbol, as old binaries call it. */
	memset(&pa, 0, sizeof(pa));
	CHECK((ibv_query_port)(ctx, 1, (struct _compat_ibv_port_attr *)&pa) == 0);
	CHECK(pa.state == IBV_PORT_ACTIVE && pa.link_layer == IBV_LINK_LAYER_ETHERNET);

	CHECK(ibv_query_gid(ctx, 1, 0, &gid) == 0);
	/* IPv4-mapped: ::ffff:a.b.c.d */
	CHECK(gid.raw[10] == 0xff && gid.raw[11] == 0xff);
	for (int i = 0; i < 10; i++)
		CHECK(gid.raw[i] == 0);
	errno = 0;
	CHECK(ibv_query_gid(ctx, 1, 1, &gid) == -1 && errno == EINVAL);
	CHECK(ibv_query_gid_ex(ctx, 1, 0, &ge, 0) == 0);
	CHECK(ge.gid_type == IBV_GID_TYPE_ROCE_V2);
	CHECK(ge.gid.raw[10] == 0xff && ge.gid_index == 0 && ge.port_num == 1);
	CHECK(ibv_query_gid_ex(ctx, 1, 3, &ge, 0) == EINVAL);
	CHECK(ibv_query_gid_table(ctx, table, 4, 0) == 1);
	CHECK(memcmp(&table[0], &ge, sizeof(ge)) == 0);
	CHECK(ibv_query_gid_table(ctx, table, 0, 0) < 0);

	CHECK(ibv_query_pkey(ctx, 1, 0, &pkey) == 0 && pkey == htobe16(0xffff));
	CHECK(ibv_query_pkey(ctx, 1, 1, &pkey) != 0);
	CHECK(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)) == 0);
	CHECK(ibv_get_pkey_index(ctx, 1, htobe16(0x1234)) < 0);
}

static void test_objects(struct ibv_context *ctx)
{
	static char buf[8192];
	struct ibv_comp_channel *ch;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr, qattr;
	struct ibv_cq *cq, *cq2;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	struct ibv_cq *evcq;
	void *evctx;
	struct pollfd pfd;

	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	CHECK(pd->context == ctx);

	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	REQUIRE(mr);
	CHECK(mr->addr == buf && mr->length == sizeof(buf) && mr->pd == pd);
	CHECK(mr->lkey != 0 || mr->rkey != 0);
	/* remote write without local write: IBTA 10.6.3.1, EINVAL. */
	errno = 0;
	CHECK(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE) == NULL && errno == EINVAL);
	{
		struct ibv_mr *odp = ibv_reg_mr(pd, buf, sizeof(buf),
						IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);

		CHECK(odp != NULL);
		if (odp)
			CHECK(ibv_dereg_mr(odp) == 0);
	}
	/* A PD with an MR is busy. */
	CHECK(ibv_dealloc_pd(pd) == EBUSY);
	/* Refused re-registration (remote write without local write). */
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE) ==
	      IBV_REREG_MR_ERR_INPUT);

	errno = 0;
	CHECK(ibv_create_cq(ctx, 0, NULL, NULL, 0) == NULL && errno == EINVAL);
	CHECK(ibv_create_cq(ctx, 16, NULL, NULL, 1) == NULL);   /* one vector only */
	ch = ibv_create_comp_channel(ctx);
	REQUIRE(ch);
	CHECK(ch->fd >= 0 && ch->context == ctx);
	cq = ibv_create_cq(ctx, 64, (void *)0x1234, ch, 0);
	REQUIRE(cq);
	CHECK(cq->cqe >= 64 && cq->channel == ch && cq->cq_context == (void *)0x1234);
	CHECK(ibv_destroy_comp_channel(ch) == EBUSY);
	CHECK(ibv_poll_cq(cq, 1, &wc) == 0);
	CHECK(ibv_req_notify_cq(cq, 0) == 0);
	CHECK(ibv_resize_cq(cq, 128) == 0 && cq->cqe >= 128);

	/* No event yet: the channel fd is not readable, and a non-blocking
	 * ibv_get_cq_event fails with EAGAIN instead of blocking. */
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	CHECK(poll(&pfd, 1, 0) == 0);
	CHECK(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0);
	errno = 0;
	CHECK(ibv_get_cq_event(ch, &evcq, &evctx) == -1 && errno == EAGAIN);

	cq2 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	REQUIRE(cq2);

	memset(&init, 0, sizeof(init));
	init.send_cq = cq;
	init.recv_cq = cq2;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 16;
	init.cap.max_recv_wr = 16;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	init.qp_context = (void *)0x42;
	qp = ibv_create_qp(pd, &init);
	REQUIRE(qp);
	CHECK(qp->qp_num != 0 && qp->state == IBV_QPS_RESET && qp->qp_type == IBV_QPT_RC);
	CHECK(qp->send_cq == cq && qp->recv_cq == cq2 && qp->qp_context == (void *)0x42);
	CHECK(init.cap.max_send_wr >= 16 && init.cap.max_recv_wr >= 16);
	CHECK(ibv_destroy_cq(cq) == EBUSY);   /* the QP uses it */

	/* RESET -> INIT needs PKEY_INDEX | PORT | ACCESS_FLAGS (IBTA 11.2.5.2). */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = 1;
	CHECK(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == EINVAL);
	CHECK(qp->state == IBV_QPS_RESET);
	CHECK(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS) == 0);
	CHECK(qp->state == IBV_QPS_INIT);
	memset(&qattr, 0, sizeof(qattr));
	memset(&init, 0, sizeof(init));
	CHECK(ibv_query_qp(qp, &qattr, IBV_QP_STATE, &init) == 0);
	CHECK(qattr.qp_state == IBV_QPS_INIT);
	CHECK(init.send_cq == cq && init.recv_cq == cq2 && init.qp_type == IBV_QPT_RC);

	/* Extended verbs we do not offer say so instead of crashing. */
	{
		/* Extended CQs exist (verbs_ext_test); completion
		 * timestamps are a feature they lack. */
		struct ibv_cq_init_attr_ex cqx = { .cqe = 8,
			.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
		struct ibv_srq_init_attr srqa = { .attr = { .max_wr = 8, .max_sge = 1 } };

		errno = 0;
		CHECK(ibv_create_cq_ex(ctx, &cqx) == NULL && errno == EOPNOTSUPP);
		errno = 0;
		errno = 0;
		CHECK(ibv_alloc_mw(pd, (enum ibv_mw_type)7) == NULL && errno == EINVAL);
		struct ibv_srq *srq = ibv_create_srq(pd, &srqa);   /* tests/verbs/verbs_srq_test.c */

		CHECK(srq != NULL);
		if (srq)
			CHECK(ibv_destroy_srq(srq) == 0);
		CHECK(ibv_qp_to_qp_ex(qp) == NULL);
	}

	CHECK(ibv_destroy_qp(qp) == 0);
	CHECK(ibv_destroy_cq(cq2) == 0);
	CHECK(ibv_destroy_cq(cq) == 0);
	CHECK(ibv_destroy_comp_channel(ch) == 0);
	CHECK(ibv_dereg_mr(mr) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
}

static void test_async_fd(struct ibv_context *ctx)
{
	struct ibv_async_event ev;
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	CHECK(ctx->async_fd >= 0);
	CHECK(poll(&pfd, 1, 0) == 0);
	CHECK(fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK) == 0);
	errno = 0;
	CHECK(ibv_get_async_event(ctx, &ev) == -1 && errno == EAGAIN);
}

static void test_helpers(void)
{
	CHECK(strcmp(ibv_port_state_str(IBV_PORT_ACTIVE), "PORT_ACTIVE") == 0);
	CHECK(strcmp(ibv_port_state_str((enum ibv_port_state)77), "invalid state") == 0);
	CHECK(strcmp(ibv_wc_status_str(IBV_WC_SUCCESS), "success") == 0);
	CHECK(strcmp(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded") == 0);
	CHECK(strcmp(ibv_wc_status_str((enum ibv_wc_status)999), "unknown") == 0);
	CHECK(strcmp(ibv_event_type_str(IBV_EVENT_COMM_EST), "communication established") == 0);
	CHECK(strcmp(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter") == 0);
	CHECK(strcmp(ibv_node_type_str(IBV_NODE_UNKNOWN), "unknown") == 0);
	CHECK(ibv_rate_to_mult(IBV_RATE_10_GBPS) == 4);
	CHECK(ibv_rate_to_mult(IBV_RATE_25_GBPS) == -1);
	CHECK(mult_to_ibv_rate(4) == IBV_RATE_10_GBPS);
	CHECK(mult_to_ibv_rate(3) == IBV_RATE_MAX);
	CHECK(ibv_rate_to_mbps(IBV_RATE_25_GBPS) == 25781);
	CHECK(ibv_rate_to_mbps(IBV_RATE_100_GBPS) == 103125);
	CHECK(mbps_to_ibv_rate(103125) == IBV_RATE_100_GBPS);
	CHECK(mbps_to_ibv_rate(12345) == IBV_RATE_MAX);
	CHECK(ibv_fork_init() == 0);
	CHECK(ibv_is_fork_initialized() == IBV_FORK_UNNEEDED);
}

static int run_basic(void)
{
	struct ibv_context *ctx, *ctx2;

	test_device_list();
	test_helpers();
	ctx = open_softrnic();
	/* A second context shares the process's device (same GID). */
	ctx2 = open_softrnic();
	{
		union ibv_gid a, b;

		CHECK(ibv_query_gid(ctx, 1, 0, &a) == 0 && ibv_query_gid(ctx2, 1, 0, &b) == 0);
		CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	}
	test_queries(ctx);
	test_objects(ctx);
	test_async_fd(ctx);
	CHECK(ibv_close_device(ctx2) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	return check_failures ? 1 : 0;
}

/* ---- loopback ------------------------------------------------------------- */

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
};

enum { BUF = 1 << 16 };

static void setup_side(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_comp_channel *ch,
		       struct side *s)
{
	s->buf = calloc(1, BUF);
	REQUIRE(s->buf);
	s->mr = ibv_reg_mr(pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ);
	REQUIRE(s->mr);
	s->cq = ibv_create_cq(ctx, 32, s, ch, 0);
	REQUIRE(s->cq);
	s->qp = vt_create_rc_qp(pd, s->cq, s->cq, NULL);
}

/* SEND, RDMA WRITE and RDMA READ toward the peer; PSN 100 both ways. */
static const struct vt_rc_attr loop_rc = {
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	.psn = 100,
	.rd_atomic = 1,
	.timeout = 14,
};

/* Waits (poll() with a timeout, then ibv_get_cq_event) for n completions
 * on cq, all successful; returns them in wc. */
static void wait_completions(struct ibv_comp_channel *ch, struct ibv_cq *cq, int n,
			     struct ibv_wc *wc)
{
	int got = 0, events = 0;

	while (got < n) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		struct ibv_cq *evcq;
		void *evctx;
		int r;

		r = ibv_poll_cq(cq, n - got, wc + got);
		REQUIRE(r >= 0);
		got += r;
		if (got >= n)
			break;
		REQUIRE(ibv_req_notify_cq(cq, 0) == 0);
		r = ibv_poll_cq(cq, n - got, wc + got);   /* close the race */
		REQUIRE(r >= 0);
		got += r;
		if (got >= n)
			break;
		REQUIRE(poll(&pfd, 1, 5000) == 1);   /* no event in 5 s: fail */
		REQUIRE(ibv_get_cq_event(ch, &evcq, &evctx) == 0);
		CHECK(evcq->cq_context == evctx);
		events++;
		/* The event may belong to the other side's CQ: ack it there. */
		ibv_ack_cq_events(evcq, 1);
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			fprintf(stderr, "wc[%d]: %s\n", i, ibv_wc_status_str(wc[i].status));
		CHECK(wc[i].status == IBV_WC_SUCCESS);
	}
	(void)events;
}

static int run_loopback(void)
{
	struct ibv_context *ctx = open_softrnic();
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct side a, b;
	union ibv_gid gid;
	struct ibv_wc wc[4];

	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	ch = ibv_create_comp_channel(ctx);
	REQUIRE(ch);
	setup_side(ctx, pd, ch, &a);
	setup_side(ctx, pd, ch, &b);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);
	vt_connect_rc(a.qp, b.qp->qp_num, &gid, &loop_rc);
	vt_connect_rc(b.qp, a.qp->qp_num, &gid, &loop_rc);

	/* SEND 3000 bytes a -> b (3 packets at MTU 1024). */
	for (int i = 0; i < 3000; i++)
		a.buf[i] = (char)(i * 7 + 1);
	vt_post_recv(b.qp, b.mr, b.buf, BUF, 11);

	{
		REQUIRE(post_send_1(a.qp, IBV_WR_SEND, a.mr, a.buf, 3000, 22, IBV_SEND_SIGNALED, 0, 0) == 0);
		wait_completions(ch, a.cq, 1, wc);
		CHECK(wc[0].wr_id == 22 && wc[0].opcode == IBV_WC_SEND);
		wait_completions(ch, b.cq, 1, wc);
		CHECK(wc[0].wr_id == 11 && wc[0].opcode == IBV_WC_RECV && wc[0].byte_len == 3000);
		CHECK(wc[0].qp_num == b.qp->qp_num);
		CHECK(memcmp(a.buf, b.buf, 3000) == 0);
	}

	/* RDMA WRITE 40000 bytes a -> b at offset 1000. */
	{
		for (int i = 0; i < 40000; i++)
			a.buf[i] = (char)(i * 13 + 5);
		REQUIRE(post_send_1(a.qp, IBV_WR_RDMA_WRITE, a.mr, a.buf, 40000, 33, IBV_SEND_SIGNALED,
				    (uintptr_t)b.buf + 1000, b.mr->rkey) == 0);
		wait_completions(ch, a.cq, 1, wc);
		CHECK(wc[0].wr_id == 33 && wc[0].opcode == IBV_WC_RDMA_WRITE);
		CHECK(memcmp(a.buf, b.buf + 1000, 40000) == 0);
	}

	/* RDMA READ 20000 bytes of b into a at offset 50000. */
	{
		memset(a.buf + 50000, 0, 8000);
		REQUIRE(post_send_1(a.qp, IBV_WR_RDMA_READ, a.mr, a.buf + 50000, 8000, 44, IBV_SEND_SIGNALED,
				    (uintptr_t)b.buf + 2000, b.mr->rkey) == 0);
		wait_completions(ch, a.cq, 1, wc);
		CHECK(wc[0].wr_id == 44 && wc[0].opcode == IBV_WC_RDMA_READ && wc[0].byte_len == 8000);
		CHECK(memcmp(a.buf + 50000, b.buf + 2000, 8000) == 0);
	}

	/* RDMA WRITE with a wrong rkey: the requester completes with
	 * REM_ACCESS_ERR, the responder QP goes to ERR and its owner hears
	 * about it on the context's async fd (IBTA 10.8.3.1 / 11.6.3). */
	{
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
		struct ibv_async_event ev;
		int got = 0;

		REQUIRE(post_send_1(a.qp, IBV_WR_RDMA_WRITE, a.mr, a.buf, 64, 55, IBV_SEND_SIGNALED, (uintptr_t)b.buf,
				    b.mr->rkey ^ 0x5a5a00) == 0);
		for (int tries = 0; tries < 500 && !got; tries++) {
			got = ibv_poll_cq(a.cq, 1, wc);
			if (!got)
				usleep(10000);
		}
		CHECK(got == 1 && wc[0].wr_id == 55 && wc[0].status == IBV_WC_REM_ACCESS_ERR);

		REQUIRE(poll(&pfd, 1, 5000) == 1);
		REQUIRE(ibv_get_async_event(ctx, &ev) == 0);
		CHECK(ev.event_type == IBV_EVENT_QP_ACCESS_ERR);
		CHECK(ev.element.qp == b.qp);
		ibv_ack_async_event(&ev);
		/* The responder QP that saw the violation is in ERR now. */
		{
			struct ibv_qp_attr qa;
			struct ibv_qp_init_attr qi;

			CHECK(ibv_query_qp(b.qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR);
			CHECK(b.qp->state == IBV_QPS_ERR);
		}
	}

	/* Tear down; destroy_cq/qp return because every event read was acked. */
	CHECK(ibv_destroy_qp(a.qp) == 0);
	CHECK(ibv_destroy_qp(b.qp) == 0);
	CHECK(ibv_destroy_cq(a.cq) == 0);
	CHECK(ibv_destroy_cq(b.cq) == 0);
	CHECK(ibv_destroy_comp_channel(ch) == 0);
	CHECK(ibv_dereg_mr(a.mr) == 0);
	CHECK(ibv_dereg_mr(b.mr) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	free(a.buf);
	free(b.buf);
	return check_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct vt_mode modes[] = { { "basic", run_basic }, { "loopback", run_loopback } };

	return vt_main(argc, argv, modes, sizeof(modes) / sizeof(modes[0]));
}
