/*
 * unit_timers.c — the device's QP timers (rnic/timers.c) with many QPs:
 *
 *   capacity     a device takes max_qp (65 536) QPs, and refuses one more
 *                with ENOMEM;
 *   idle QPs     20 000 QPs without a timer beside one connection that
 *                loses packets: every message arrives, and rnic_advance
 *                looks only at the QPs whose timers are due (a scan of the
 *                QP table would look at all 20 001 each time);
 *   many timers  64 connections losing packets at once, so that many
 *                retransmit and ACK timers are armed, moved and fired in
 *                every order: every message arrives, in order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/rnic_int.h"
#include "unit_util.h"

#define MAXQ 65536
#define PAIRS 64
#define MSGS 4
#define MSG 3000

struct conn {
	struct rnic_qp *qp[2];
	uint8_t *buf[2];
	struct rnic_mr *mr[2];
};

static struct rnic_pd *pd[2];
static struct rnic_cq *cq[2];

static struct rnic_qp *make_qp(struct rnic_pd *p, struct rnic_cq *c, uint32_t depth)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return rnic_qp_create(p, c, c, &init, NULL);
}

static void conn_up(struct ut_loop *l, struct conn *c)
{
	for (int i = 0; i < 2; i++) {
		c->qp[i] = make_qp(pd[i], cq[i], 2 * MSGS);
		c->buf[i] = calloc(1, MSGS * MSG);
		c->mr[i] = c->buf[i] ? rnic_mr_reg(pd[i], c->buf[i], MSGS * MSG, (uintptr_t)c->buf[i],
						   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
		CHECK(c->qp[i] && c->mr[i]);
	}
	CHECK(ut_connect_rc(l, 0, c->qp[0], rnic_qp_num(c->qp[1]), 100, 100, 8, 7, 7, NULL) == 0);
	CHECK(ut_connect_rc(l, 1, c->qp[1], rnic_qp_num(c->qp[0]), 100, 100, 8, 7, 7, NULL) == 0);
}

/* Node 0 SENDs MSGS messages to node 1 on c. */
static void conn_send(struct ut_loop *l, struct conn *c, uint32_t seed)
{
	ut_fill(c->buf[0], MSGS * MSG, seed);
	for (int m = 0; m < MSGS; m++) {
		struct ibv_sge rs = { .addr = (uintptr_t)c->buf[1] + (uint64_t)m * MSG, .length = MSG,
				      .lkey = rnic_mr_lkey(c->mr[1]) };
		struct ibv_recv_wr rw = { .wr_id = (uint64_t)m, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge ss = { .addr = (uintptr_t)c->buf[0] + (uint64_t)m * MSG, .length = MSG,
				      .lkey = rnic_mr_lkey(c->mr[0]) };
		struct ibv_send_wr sw = { .wr_id = (uint64_t)m, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *sbad;
		CHECK(rnic_post_recv(c->qp[1], &rw, &rbad) == 0);
		CHECK(rnic_post_send(c->qp[0], &sw, &sbad, l->now) == 0);
	}
}

/* Every message of c arrived, in order, byte for byte. */
static bool conn_ok(const struct conn *c)
{
	return memcmp(c->buf[0], c->buf[1], MSGS * MSG) == 0;
}

static void conn_down(struct conn *c)
{
	for (int i = 0; i < 2; i++) {
		CHECK(rnic_qp_destroy(c->qp[i]) == 0);
		CHECK(rnic_mr_dereg(c->mr[i]) == 0);
		free(c->buf[i]);
	}
}

/* Loses one packet in 7 of each side's, from the third on. */
static bool drop_sevenths(struct ut_loop *l, int from, uint64_t n, const uint8_t *ib, size_t len)
{
	(void)l;
	(void)from;
	(void)ib;
	(void)len;
	return n >= 2 && n % 7 == 3;
}

/* Drains both completion queues; counts successful completions. */
static int drain(void)
{
	struct ibv_wc wc[64];
	int ok = 0, n;

	for (int i = 0; i < 2; i++)
		while ((n = rnic_cq_poll(cq[i], 64, wc)) > 0)
			for (int k = 0; k < n; k++) {
				if (wc[k].status != IBV_WC_SUCCESS)
					fprintf(stderr, "completion status %d on QP 0x%x\n", wc[k].status, wc[k].qp_num);
				ok += wc[k].status == IBV_WC_SUCCESS;
			}
	return ok;
}

static void test_capacity(void)
{
	struct ut_loop l;
	struct rnic_qp **qps = calloc(MAXQ, sizeof(*qps));
	uint32_t made = 0;

	ut_loop_init(&l, 64, NULL, 300, false);
	CHECK(l.r[0]->cfg.max_qp == MAXQ);
	pd[0] = rnic_pd_alloc(l.r[0]);
	cq[0] = rnic_cq_create(l.r[0], 16, NULL);
	while (qps && made < MAXQ && (qps[made] = make_qp(pd[0], cq[0], 1)))
		made++;
	CHECK(made == MAXQ);
	errno = 0;
	CHECK(make_qp(pd[0], cq[0], 1) == NULL && errno == ENOMEM);
	for (uint32_t i = 0; i < made; i++)
		CHECK(rnic_qp_destroy(qps[i]) == 0);
	CHECK(rnic_cq_destroy(cq[0]) == 0 && rnic_pd_free(pd[0]) == 0);
	free(qps);
	ut_loop_fini(&l);
}

static void test_idle_qps(void)
{
	enum { IDLE = 20000 };
	struct ut_loop l;
	struct conn c;
	struct rnic_qp **idle = calloc(IDLE, sizeof(*idle));

	ut_loop_init(&l, 4096, NULL, 310, false);
	l.drop = drop_sevenths;
	for (int i = 0; i < 2; i++) {
		pd[i] = rnic_pd_alloc(l.r[i]);
		cq[i] = rnic_cq_create(l.r[i], 256, NULL);
	}
	for (int i = 0; i < IDLE && idle; i++)
		CHECK((idle[i] = make_qp(pd[0], cq[0], 1)) != NULL);
	conn_up(&l, &c);
	conn_send(&l, &c, 7);
	ut_loop_run(&l, 100000);
	CHECK(drain() == 2 * MSGS);
	CHECK(conn_ok(&c));
	CHECK(rnic_counters(l.r[0])->retransmits > 0);
	/* Only the connection's QPs had timers. */
	fprintf(stderr, "idle: %llu QPs looked at by the timers (node 0), %llu retransmits\n",
		(unsigned long long)l.r[0]->timer_visits,
		(unsigned long long)rnic_counters(l.r[0])->retransmits);
	CHECK(l.r[0]->timer_visits > 0 && l.r[0]->timer_visits < IDLE / 10);
	conn_down(&c);
	for (int i = 0; i < IDLE && idle; i++)
		CHECK(rnic_qp_destroy(idle[i]) == 0);
	free(idle);
	for (int i = 0; i < 2; i++)
		CHECK(rnic_cq_destroy(cq[i]) == 0 && rnic_pd_free(pd[i]) == 0);
	ut_loop_fini(&l);
}

static void test_many_timers(void)
{
	struct ut_loop l;
	static struct conn c[PAIRS];
	int bad = 0;

	ut_loop_init(&l, 8192, NULL, 320, false);
	l.drop = drop_sevenths;
	for (int i = 0; i < 2; i++) {
		pd[i] = rnic_pd_alloc(l.r[i]);
		cq[i] = rnic_cq_create(l.r[i], 4096, NULL);
	}
	for (int k = 0; k < PAIRS; k++)
		conn_up(&l, &c[k]);
	for (int k = 0; k < PAIRS; k++)
		conn_send(&l, &c[k], 100 + (uint32_t)k);
	ut_loop_run(&l, 1000000);
	CHECK(drain() == 2 * MSGS * PAIRS);
	for (int k = 0; k < PAIRS; k++)
		bad += !conn_ok(&c[k]);
	CHECK(bad == 0);
	CHECK(rnic_counters(l.r[0])->retransmits >= PAIRS / 4);
	for (int k = 0; k < PAIRS; k++)
		conn_down(&c[k]);
	for (int i = 0; i < 2; i++)
		CHECK(rnic_cq_destroy(cq[i]) == 0 && rnic_pd_free(pd[i]) == 0);
	ut_loop_fini(&l);
}

int main(void)
{
	test_capacity();
	test_idle_qps();
	test_many_timers();
	return check_exit("rnic_unit_timers");
}
