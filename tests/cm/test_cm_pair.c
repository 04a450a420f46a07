/*
 * test_cm_pair.c — the connection manager over real rnics: the whole path
 * the runtime uses, replayable from a seed.
 *
 * Two rnics on the seeded pair link (src/ports/pair), each with a cm
 * attached as the node's agent (pair_set_agent, the mirror of the
 * runtime's srt_set_agent).  CM MADs travel as UD SENDs to QP1: out
 * through rnic_gsi_send, in through rnic/gsi.c and rnic_io.gsi_receive,
 * with the pair's loss, duplication, reordering and jitter applied to
 * them like to any packet, and the cm's retry timers firing in simulated
 * time.  The connections then carry data on real RC QPs brought to
 * RTR/RTS from the REQ and REP fields:
 *
 *   node 0 listens; node 1 connects N connections (its QP in INIT, REQ
 *   with its QPN, the PSN it expects, a path MTU per connection);
 *   on CM_EV_REQ_RECEIVED node 0 creates its QP, moves it INIT -> RTR ->
 *   RTS from the REQ (qpn, starting_psn, path_mtu, rd depths, ACK
 *   timeout, retry counts) and accepts with its QPN, PSN and, in the REP's
 *   private data, the address and rkey of its memory (a quarter of the
 *   connections accept only after 2.5 T: the REQ is resent meanwhile and
 *   answered with MRAs);
 *   on CM_EV_REP_RECEIVED node 1 moves its QP to RTR/RTS from the REP,
 *   sends the RTU, and sends K SENDs, one RDMA WRITE and one RDMA READ;
 *   node 0, once established (RTU, or its first receive: cm_establish as
 *   librdmacm does on IBV_EVENT_COMM_EST), sends K SENDs back;
 *   everything is checked byte for byte; then node 1 disconnects, both
 *   sides wait out TimeWait and destroy their ids and QPs.
 *
 * PSNs follow the kernel's ib_cm and softrnic's librdmacm
 * (src/compat/rdmacm): the Starting PSN a side puts in its REQ or REP is
 * the PSN it expects to receive first (its rq_psn); the peer sends from it
 * (its sq_psn).
 *
 * Cases:
 *   agent_api      pair_set_agent's argument rules
 *   req_timeout    node 0 without an agent: the MADs reach gsi.c, are
 *                  dropped by the pair, and node 1's cm reports
 *                  REQ_TIMEOUT at exactly (retries + 1) * T, its retry
 *                  timers driven by pair_run_until
 *   rej8           a REQ for a service nobody listens on: REJ reason 8
 *                  back through both rnics' QP1
 *   gsi_hostile    a UD QP sends to QP1: wrong Q_Key, wrong lengths,
 *                  SEND with immediate: dropped by gsi.c, counted in
 *                  rx_drop_gsi, the cm sees nothing; the same 256 bytes
 *                  with the GSI Q_Key do reach the cm (the control)
 *   soak           many seeds, loss 0-20%, duplication, reordering,
 *                  jitter: every connection established exactly once on
 *                  each side (15 CM retries: it must always connect, and
 *                  no REQ/REP timeout or REJ is accepted), the data
 *                  intact, disconnects clean, every MAD gsi.c accepted
 *                  seen by the cm, counters adding up, every id freed,
 *                  and each seed run twice gives the same trace hash,
 *                  events and end time
 *
 * Two outcomes are explained rather than failed, both counted and
 * printed: an RC QP that exhausts its 7 retries at 15-20% loss
 * (RETRY_EXC_ERR; the data that completed is still checked, the
 * connection still ends on both sides; asserted on at most 1% of the
 * connections), and a disconnect that ends with REJ "stale connection"
 * because a delayed duplicate REQ reached the passive side in TimeWait
 * (the kernel's CM answers it the same way).
 *
 * usage: cm_pair_rnic [--seed N | --seeds A-B]  (soak seeds only; default:
 * every case and soak seeds 1-1000; SOFTRNIC_SEED=N replays one;
 * SOFTRNIC_CM_TRACE=1 prints the cms' transitions with simulated times)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm.h"
#include "cm_check.h"
#include "harness.h"
#include "ports/pair.h"

#define SID 0x0000000001061234ull       /* RDMA_PS_TCP port 0x1234 */
#define SID_NONE 0x0000000001069999ull  /* nobody listens */
#define GSI_QKEY 0x80010000u

#define MAXCONN 16
#define K 4                             /* SENDs each way per connection */
#define MSG 200                         /* largest SEND */
#define RLEN 3000                       /* RDMA WRITE / READ length */
#define EVQ 512
#define CM_T_CODE 8                     /* 4.096 us * 2^8 = 1.05 ms */
#define CM_RETRIES 15
#define ACK_TIMEOUT 10                  /* 4.096 us * 2^10 = 4.2 ms */
/* Longer than the peer's whole DREQ retry window ((15 + 1) * 1.05 ms): a
 * passive side that leaves TimeWait sooner stops answering the active's
 * resent DREQs (their DREPs lost), and the active's disconnect then ends
 * in ETIMEDOUT.  IBTA leaves TimeWait's length to the CM. */
#define TIMEWAIT_NS (40 * HT_MS)

/* ---- the environment: two nodes, a cm on each ------------------------------ */

struct qevent {
	struct cm_event ev;
	uint64_t time;
	uint8_t priv[256];
	uint8_t ari[WIRE_CM_REJ_ARI_LEN];
};

struct env;

struct node {
	struct env *env;
	unsigned idx;
	struct rnic *r;
	struct rnic_pd *pd;
	struct cm *cm;
	struct qevent q[EVQ];
	unsigned qhead, qlen;
	uint8_t first_mad[256];         /* the first MAD this cm sent */
	unsigned mads_sent;
	uint32_t last_src_qpn;          /* of the last MAD the agent got */
	unsigned agent_calls;
};

/* One side of a connection. */
struct cside {
	struct conn *c;
	bool passive;
	struct node *n;
	struct cm_id *id;
	bool destroyed;
	struct rnic_cq *scq, *rcq;
	struct rnic_qp *qp;
	uint32_t qpn, psn;
	uint8_t *mem;                   /* send | recv | r1 | r2 */
	uint64_t iova;                  /* mem's address for the rnics: fixed,
	                                   so packets (RETH, private data) do
	                                   not depend on malloc and a seed
	                                   replays to the same trace hash */
	struct rnic_mr *mr;
	/* events */
	unsigned req_rcvd, rep_rcvd, established, rej, timeouts, dreq_rcvd, disc_done, tw_exit, mra, other;
	int disc_status;
	uint16_t disc_reason;
	/* data */
	unsigned sends_done, recvs_done;
	bool write_done, read_done, data_posted;
	/* passive: a slow consumer accepts only at accept_at (the REQ is
	 * resent meanwhile and answered with MRAs) */
	bool accept_pending;
	uint64_t accept_at;
	struct cm_rep_param rep;
	uint8_t rep_priv[32];
};

struct conn {
	unsigned idx;
	enum ibv_mtu mtu;
	struct cside a, p;              /* active (node 1), passive (node 0) */
	/* the passive's memory, as its REP told the active */
	uint64_t peer_r1, peer_r2;
	uint32_t peer_rkey;
	bool disconnecting;
	/* RC gave up (RETRY_EXC_ERR: retry_cnt is at most 7, and at 15-20%
	 * loss eight rounds without progress do happen): the data that
	 * completed is still checked, the side that saw the error
	 * disconnects, and flushes are expected from then on. */
	bool data_failed;
};

struct env {
	uint64_t seed;
	struct pair *pair;
	struct node node[2];
	struct cm_listen *lis;
	struct conn conn[MAXCONN];
	unsigned nconn;
	bool auto_consumer;             /* step() acts on events (soak) */
	uint64_t ev_hash;               /* FNV over (node, type, time) of events */
	unsigned cm_failures;           /* timeouts / REJs seen by the consumer */
};

/* What the soak did, over all seeds (first runs only). */
static struct tally {
	unsigned seeds, conns, established;
	uint64_t lost, duplicated, reordered, cm_retries, rc_retransmits, mras, early_establish;
	unsigned data_failed, stale_rej;
} tally;

static uint8_t *mem_send(struct cside *s) { return s->mem; }
static uint8_t *mem_recv(struct cside *s) { return s->mem + K * MSG; }
static uint8_t *mem_r1(struct cside *s) { return s->mem + 2 * K * MSG; }
static uint8_t *mem_r2(struct cside *s) { return s->mem + 2 * K * MSG + RLEN; }
#define MEM_LEN (2 * K * MSG + 2 * RLEN)

static uint64_t va(const struct cside *s, const uint8_t *p)
{
	return s->iova + (uint64_t)(p - s->mem);
}

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The test's data: a function of (seed, connection, what, offset). */
static uint8_t pat(uint64_t seed, unsigned conn, unsigned tag, size_t i)
{
	return (uint8_t)(mix64(seed * 0x100000001b3ull ^ (uint64_t)conn << 48 ^ (uint64_t)tag << 40 ^ i) >> 56);
}

static void fill(uint8_t *b, size_t n, uint64_t seed, unsigned conn, unsigned tag)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(seed, conn, tag, i);
}

/* First mismatch, or -1. */
static long compare(const uint8_t *b, size_t n, uint64_t seed, unsigned conn, unsigned tag)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(seed, conn, tag, i))
			return (long)i;
	return -1;
}

/* Length of the k-th SEND from the active (dir 0) or passive (dir 1). */
static uint32_t send_len(uint64_t seed, unsigned conn, unsigned dir, unsigned k)
{
	return 1 + (uint32_t)(mix64(seed ^ (uint64_t)conn << 20 ^ (uint64_t)dir << 30 ^ k) % MSG);
}

enum { TAG_SEND = 0x100, TAG_WRITE = 0x200, TAG_READ = 0x300 };

/* ---- the cm's io and the node's agent ------------------------------------------ */

static void cm_send_mad(void *ctx, const uint8_t dgid[16], const uint8_t mad[256])
{
	struct node *n = ctx;
	struct rnic_gid g;
	memcpy(g.raw, dgid, 16);
	if (n->mads_sent++ == 0)
		memcpy(n->first_mad, mad, 256);
	int rc = rnic_gsi_send(n->r, &g, 1, mad, 256);
	CHECK(rc == 0, "node %u: rnic_gsi_send %d", n->idx, rc);
}

static void cm_event_cb(void *ctx, const struct cm_event *ev)
{
	struct node *n = ctx;
	struct env *e = n->env;
	uint64_t now = pair_now(e->pair);
	uint64_t h = e->ev_hash ? e->ev_hash : 0xcbf29ce484222325ull;
	h = (h ^ (n->idx | (uint64_t)ev->type << 8)) * 0x100000001b3ull;
	h = (h ^ now) * 0x100000001b3ull;
	e->ev_hash = h;
	struct cside *s = ev->user;
	if (s && s->destroyed)
		FAIL("node %u: event %s for a destroyed id", n->idx, cm_event_name(ev->type));
	if (n->qlen == EVQ) {
		FAIL("node %u: event queue full", n->idx);
		return;
	}
	struct qevent *q = &n->q[(n->qhead + n->qlen++) % EVQ];
	q->ev = *ev;
	q->time = now;
	if (ev->private_data) {
		memcpy(q->priv, ev->private_data, ev->private_data_len);
		q->ev.private_data = q->priv;
	}
	if (ev->ari) {
		memcpy(q->ari, ev->ari, ev->ari_len);
		q->ev.ari = q->ari;
	}
}

static bool pop_event(struct node *n, struct qevent *out)
{
	if (!n->qlen)
		return false;
	*out = n->q[n->qhead];
	/* re-aim at the copy */
	if (out->ev.private_data)
		out->ev.private_data = out->priv;
	if (out->ev.ari)
		out->ev.ari = out->ari;
	n->qhead = (n->qhead + 1) % EVQ;
	n->qlen--;
	return true;
}

static void agent_gsi_receive(void *ctx, const struct rnic_gid *src, uint32_t src_qpn, const uint8_t *mad,
			      size_t len, uint64_t now)
{
	struct node *n = ctx;
	n->agent_calls++;
	n->last_src_qpn = src_qpn;
	CHECK(now == pair_now(n->env->pair), "agent now %llu", (unsigned long long)now);
	cm_receive(n->cm, src->raw, mad, len, now);
}

static uint64_t agent_next_deadline(void *ctx)
{
	struct node *n = ctx;
	return cm_next_deadline(n->cm);
}

static void agent_advance(void *ctx, uint64_t now)
{
	struct node *n = ctx;
	cm_advance(n->cm, now);
}

/* SOFTRNIC_CM_TRACE=1: print the cms' state transitions with the time. */
static void trace_line(void *ctx, const char *line)
{
	struct node *n = ctx;
	printf("  %12.6f ms node %u %s\n", (double)pair_now(n->env->pair) / 1e6, n->idx, line);
}

static int attach_agent(struct env *e, unsigned i)
{
	struct pair_agent a = { .ctx = &e->node[i], .gsi_receive = agent_gsi_receive,
				.next_deadline = agent_next_deadline, .advance = agent_advance };
	return pair_set_agent(e->pair, i, &a);
}

static int env_init(struct env *e, uint64_t seed)
{
	memset(e, 0, sizeof(*e));
	e->seed = seed;
	struct rnic_config rc;
	rnic_config_default(&rc);
	rc.seed = (uint32_t)(seed * 2654435761u);
	e->pair = pair_create(seed, 2, &rc);
	REQUIRE_RET(e->pair, -1, "pair_create: %s", strerror(errno));
	for (unsigned i = 0; i < 2; i++) {
		struct node *n = &e->node[i];
		n->env = e;
		n->idx = i;
		n->r = pair_rnic(e->pair, i);
		n->pd = rnic_pd_alloc(n->r);
		REQUIRE_RET(n->pd, -1, "pd_alloc");
		struct cm_config c;
		cm_config_default(&c);
		memcpy(c.gid, pair_gid(e->pair, i)->raw, 16);
		c.ca_guid = 0x5000 + i;
		c.seed = (uint32_t)mix64(seed * 2 + i);
		c.cm_response_timeout = CM_T_CODE;
		c.max_cm_retries = CM_RETRIES;
		c.timewait_ns = TIMEWAIT_NS;
		struct cm_io io = { .ctx = n, .send_mad = cm_send_mad, .event = cm_event_cb };
		n->cm = cm_create(&c, &io);
		REQUIRE_RET(n->cm, -1, "cm_create: %s", strerror(errno));
		const char *tr = getenv("SOFTRNIC_CM_TRACE");
		if (tr && *tr == '1')
			cm_set_trace(n->cm, trace_line, n);
		int err = attach_agent(e, i);
		REQUIRE_RET(err == 0, -1, "pair_set_agent: %d", err);
	}
	for (unsigned i = 0; i < MAXCONN; i++) {
		struct conn *c = &e->conn[i];
		c->idx = i;
		c->a.c = c->p.c = c;
		c->p.passive = true;
		c->a.n = &e->node[1];
		c->p.n = &e->node[0];
	}
	return 0;
}

static void side_free(struct cside *s)
{
	if (s->qp)
		rnic_qp_destroy(s->qp);
	if (s->mr)
		rnic_mr_dereg(s->mr);
	if (s->scq)
		rnic_cq_destroy(s->scq);
	if (s->rcq)
		rnic_cq_destroy(s->rcq);
	free(s->mem);
	s->qp = NULL;
	s->mr = NULL;
	s->scq = s->rcq = NULL;
	s->mem = NULL;
}

static void env_fini(struct env *e)
{
	for (unsigned i = 0; i < MAXCONN; i++) {
		side_free(&e->conn[i].a);
		side_free(&e->conn[i].p);
	}
	if (e->lis)
		cm_unlisten(e->lis);
	for (unsigned i = 0; i < 2; i++) {
		if (e->node[i].cm)
			cm_destroy(e->node[i].cm);
		if (e->node[i].pd)
			rnic_pd_free(e->node[i].pd);
	}
	pair_destroy(e->pair);
}

static bool counters_ok(struct env *e, unsigned i)
{
	char msg[256];
	if (!cm_check_counters(cm_counters(e->node[i].cm), msg, sizeof(msg))) {
		FAIL("node %u cm counters: %s", i, msg);
		return false;
	}
	return true;
}

/* ---- QPs ------------------------------------------------------------------------ */

/* CQs, memory (filled with this side's data), MR and an RC QP in INIT with
 * its K receives posted. */
static int side_create(struct env *e, struct cside *s)
{
	struct node *n = s->n;
	unsigned ci = s->c->idx;
	uint64_t now = pair_now(e->pair);
	s->scq = rnic_cq_create(n->r, 64, NULL);
	s->rcq = rnic_cq_create(n->r, 64, NULL);
	REQUIRE_RET(s->scq && s->rcq, -1, "cq_create");
	s->mem = calloc(1, MEM_LEN);
	REQUIRE_RET(s->mem, -1, "calloc");
	unsigned dir = s->passive ? 1 : 0;
	for (unsigned k = 0; k < K; k++)
		fill(mem_send(s) + k * MSG, send_len(e->seed, ci, dir, k), e->seed, ci, TAG_SEND + dir * 16 + k);
	if (s->passive)
		fill(mem_r2(s), RLEN, e->seed, ci, TAG_READ);   /* the READ's source */
	else
		fill(mem_r2(s), RLEN, e->seed, ci, TAG_WRITE);  /* the WRITE's source */
	s->iova = 0x10000000ull * (ci + 1) + (s->passive ? 0x8000000ull : 0);
	s->mr = rnic_mr_reg(n->pd, s->mem, MEM_LEN, s->iova, HT_ALL_ACCESS);
	REQUIRE_RET(s->mr, -1, "mr_reg: %s", strerror(errno));
	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 16;
	init.cap.max_recv_wr = 16;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	s->qp = rnic_qp_create(n->pd, s->scq, s->rcq, &init, s);
	REQUIRE_RET(s->qp, -1, "qp_create: %s", strerror(errno));
	s->qpn = rnic_qp_num(s->qp);
	/* The PSN this side expects first (its REQ/REP Starting PSN): random,
	 * now and then right before the 24-bit wrap. */
	uint64_t r = mix64(e->seed ^ (uint64_t)ci << 8 ^ dir);
	s->psn = (r & 3) == 0 ? (uint32_t)(0xfffffe - (r >> 8) % 3) : (uint32_t)(r >> 8) & 0xffffff;
	int rc = ht_to_init(s->qp, HT_ALL_ACCESS, now);
	REQUIRE_RET(rc == 0, -1, "INIT: %s", strerror(rc));
	for (unsigned k = 0; k < K; k++) {
		struct ibv_sge sge = { .addr = va(s, mem_recv(s) + k * MSG), .length = MSG,
				       .lkey = rnic_mr_lkey(s->mr) };
		struct ibv_recv_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1 }, *bad;
		rc = rnic_post_recv(s->qp, &wr, &bad);
		REQUIRE_RET(rc == 0, -1, "post_recv: %s", strerror(rc));
	}
	return 0;
}

static int post_one(struct env *e, struct cside *s, enum ibv_wr_opcode op, uint64_t wr_id, const uint8_t *local,
		    uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	wr_send_1(&wr, &sge, op, wr_id, va(s, local), len, rnic_mr_lkey(s->mr));
	wr_remote(&wr, raddr, rkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	int rc = rnic_post_send(s->qp, &wr, &bad, pair_now(e->pair));
	CHECK(rc == 0, "conn %u %s: post_send op %d: %s", s->c->idx, s->passive ? "passive" : "active", op,
	      strerror(rc));
	return rc;
}

enum { WR_SEND = 1, WR_WRITE = 2, WR_READ = 3 };

static void post_data(struct env *e, struct cside *s)
{
	struct conn *c = s->c;
	unsigned dir = s->passive ? 1 : 0;
	if (s->data_posted)
		return;
	s->data_posted = true;
	for (unsigned k = 0; k < K; k++)
		post_one(e, s, IBV_WR_SEND, (uint64_t)WR_SEND << 32 | k, mem_send(s) + k * MSG,
			 send_len(e->seed, c->idx, dir, k), 0, 0);
	if (!s->passive) {
		post_one(e, s, IBV_WR_RDMA_WRITE, (uint64_t)WR_WRITE << 32, mem_r2(s), RLEN, c->peer_r1,
			 c->peer_rkey);
		post_one(e, s, IBV_WR_RDMA_READ, (uint64_t)WR_READ << 32, mem_r1(s), RLEN, c->peer_r2,
			 c->peer_rkey);
	}
}

static void put64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> 8 * i);
}

static uint64_t get64(const uint8_t *b)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)b[i] << 8 * i;
	return v;
}

/* ---- the consumers --------------------------------------------------------------- */

static const enum ibv_mtu mtus[] = { IBV_MTU_256, IBV_MTU_512, IBV_MTU_1024, IBV_MTU_2048, IBV_MTU_4096 };

static int connect_one(struct env *e, struct conn *c, uint64_t service_id, uint8_t retries, uint8_t tcode)
{
	struct cside *a = &c->a;
	if (side_create(e, a))
		return -1;
	c->mtu = mtus[(e->seed + c->idx) % 5];
	struct cm_req_param p;
	cm_req_param_init(a->n->cm, &p);
	memcpy(p.dgid, pair_gid(e->pair, 0)->raw, 16);
	p.service_id = service_id;
	p.qpn = a->qpn;
	p.qp_type = IBV_QPT_RC;
	p.starting_psn = a->psn;
	p.responder_resources = 4;
	p.initiator_depth = 2;
	p.path_mtu = c->mtu;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	p.local_ack_timeout = ACK_TIMEOUT;
	p.remote_cm_response_timeout = tcode;
	p.local_cm_response_timeout = tcode;
	p.max_cm_retries = retries;
	uint8_t priv[8] = { 'C', (uint8_t)c->idx, (uint8_t)(c->idx >> 8), (uint8_t)e->seed, 0xa5, 0x5a, 0x12, 0x34 };
	p.private_data = priv;
	p.private_data_len = sizeof(priv);
	int rc = cm_connect(a->n->cm, &p, a, pair_now(e->pair), &a->id);
	REQUIRE_RET(rc == 0, -1, "cm_connect: %s", strerror(rc));
	return 0;
}

/* REQ_RECEIVED on node 0: QP from the REQ, then accept. */
static void on_req(struct env *e, const struct qevent *q)
{
	const struct cm_event *ev = &q->ev;
	const struct cm_req_info *req = &ev->u.req;
	const uint8_t *pd = ev->private_data;
	unsigned idx = pd ? (unsigned)(pd[1] | pd[2] << 8) : ~0u;
	if (!pd || ev->private_data_len < 8 || pd[0] != 'C' || idx >= e->nconn || pd[3] != (uint8_t)e->seed ||
	    pd[4] != 0xa5 || pd[7] != 0x34) {
		FAIL("REQ with foreign private data");
		cm_destroy_id(ev->id, pair_now(e->pair));
		return;
	}
	struct conn *c = &e->conn[idx];
	struct cside *s = &c->p;
	if (++s->req_rcvd > 1) {
		FAIL("conn %u: a second REQ_RECEIVED", idx);
		cm_destroy_id(ev->id, pair_now(e->pair));
		return;
	}
	s->id = ev->id;
	cm_id_set_user(ev->id, s);
	CHECK_EQ(req->service_id, SID, "REQ service id");
	CHECK_EQ(req->qpn, c->a.qpn, "REQ qpn");
	CHECK_EQ(req->starting_psn, c->a.psn, "REQ starting psn");
	CHECK_EQ(req->path_mtu, c->mtu, "REQ path mtu");
	CHECK_EQ(req->qp_type, IBV_QPT_RC, "REQ qp type");
	CHECK(memcmp(ev->remote_gid, pair_gid(e->pair, 1)->raw, 16) == 0, "REQ from node 1's GID");
	if (side_create(e, s))
		return;
	struct rnic_gid peer;
	memcpy(peer.raw, ev->remote_gid, 16);
	uint64_t now = pair_now(e->pair);
	/* Our responder resources serve the peer's initiator depth and vice versa. */
	int rc = ht_to_rtr(s->qp, &peer, req->qpn, s->psn, req->path_mtu, req->initiator_depth, 1, now);
	CHECK(rc == 0, "conn %u passive RTR: %s", idx, strerror(rc));
	rc = ht_to_rts(s->qp, req->starting_psn, req->local_ack_timeout, req->retry_count, req->rnr_retry_count,
		       req->responder_resources, now);
	CHECK(rc == 0, "conn %u passive RTS: %s", idx, strerror(rc));
	uint8_t *priv = s->rep_priv;
	priv[0] = 'R';
	priv[1] = (uint8_t)idx;
	priv[2] = (uint8_t)(idx >> 8);
	uint32_t rkey = rnic_mr_rkey(s->mr);
	priv[4] = (uint8_t)rkey;
	priv[5] = (uint8_t)(rkey >> 8);
	priv[6] = (uint8_t)(rkey >> 16);
	priv[7] = (uint8_t)(rkey >> 24);
	put64(priv + 8, va(s, mem_r1(s)));
	put64(priv + 16, va(s, mem_r2(s)));
	s->rep = (struct cm_rep_param){ .qpn = s->qpn, .starting_psn = s->psn,
					.responder_resources = req->initiator_depth,
					.initiator_depth = req->responder_resources, .rnr_retry_count = 7,
					.private_data = s->rep_priv, .private_data_len = sizeof(s->rep_priv) };
	if (e->auto_consumer && (e->seed + idx) % 4 == 0) {
		/* slow: the active resends the REQ after T and 2T */
		s->accept_pending = true;
		s->accept_at = now + cm_timeout_ns(CM_T_CODE) * 5 / 2;
		return;
	}
	rc = cm_accept(ev->id, &s->rep, now);
	CHECK(rc == 0, "conn %u cm_accept: %s", idx, strerror(rc));
}

/* REP_RECEIVED on node 1: QP to RTR/RTS from the REP, RTU, data. */
static void on_rep(struct env *e, struct cside *s, const struct qevent *q)
{
	const struct cm_event *ev = &q->ev;
	const struct cm_rep_info *rep = &ev->u.rep;
	struct conn *c = s->c;
	if (++s->rep_rcvd > 1) {
		FAIL("conn %u: a second REP_RECEIVED", c->idx);
		return;
	}
	CHECK_EQ(rep->qpn, c->p.qpn, "REP qpn");
	CHECK_EQ(rep->starting_psn, c->p.psn, "REP starting psn");
	CHECK_EQ(rep->responder_resources, 2, "REP responder resources");
	CHECK_EQ(rep->initiator_depth, 4, "REP initiator depth");
	const uint8_t *pd = ev->private_data;
	if (!pd || ev->private_data_len < 24 || pd[0] != 'R' || (unsigned)(pd[1] | pd[2] << 8) != c->idx) {
		FAIL("conn %u: REP with foreign private data", c->idx);
		return;
	}
	c->peer_rkey = (uint32_t)pd[4] | (uint32_t)pd[5] << 8 | (uint32_t)pd[6] << 16 | (uint32_t)pd[7] << 24;
	c->peer_r1 = get64(pd + 8);
	c->peer_r2 = get64(pd + 16);
	struct rnic_gid peer;
	memcpy(peer.raw, ev->remote_gid, 16);
	uint64_t now = pair_now(e->pair);
	int rc = ht_to_rtr(s->qp, &peer, rep->qpn, s->psn, c->mtu, 4, 1, now);
	CHECK(rc == 0, "conn %u active RTR: %s", c->idx, strerror(rc));
	uint8_t rd = rep->responder_resources < 2 ? rep->responder_resources : 2;
	rc = ht_to_rts(s->qp, rep->starting_psn, ACK_TIMEOUT, 7, rep->rnr_retry_count, rd, now);
	CHECK(rc == 0, "conn %u active RTS: %s", c->idx, strerror(rc));
	rc = cm_send_rtu(s->id, NULL, 0, now);
	CHECK(rc == 0, "conn %u cm_send_rtu: %s", c->idx, strerror(rc));
	if (rc == 0) {
		s->established++;
		post_data(e, s);
	}
}

static void destroy_side_id(struct env *e, struct cside *s)
{
	if (s->id && !s->destroyed) {
		s->destroyed = true;
		cm_destroy_id(s->id, pair_now(e->pair));
	}
}

/* Disconnected: the QP goes to ERR, as rdma_disconnect does. */
static void qp_to_err(struct env *e, struct cside *s)
{
	if (!s->qp)
		return;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int rc = rnic_qp_modify(s->qp, &a, IBV_QP_STATE, pair_now(e->pair));
	CHECK(rc == 0, "conn %u: QP to ERR: %s", s->c->idx, strerror(rc));
}

/* A completion error: RETRY_EXC_ERR may happen under heavy loss (see
 * conn.data_failed), flushes only after it; anything else is a failure. */
static void wc_error(struct env *e, struct cside *s, const struct ibv_wc *wc, const char *what)
{
	struct conn *c = s->c;
	if (wc->status == IBV_WC_RETRY_EXC_ERR) {
		if (!c->data_failed)
			tally.data_failed++;
		c->data_failed = true;
		if (!c->disconnecting && s->established && s->id && !s->destroyed) {
			c->disconnecting = true;
			int rc = cm_disconnect(s->id, NULL, 0, pair_now(e->pair));
			CHECK(rc == 0, "conn %u cm_disconnect after an error: %s", c->idx, strerror(rc));
		}
		return;
	}
	if (wc->status == IBV_WC_WR_FLUSH_ERR && c->data_failed)
		return;
	FAIL("conn %u %s: %s wc %s", c->idx, s->passive ? "passive" : "active", what,
		ht_wc_status_str(wc->status));
}

static void handle_event(struct env *e, struct node *n, const struct qevent *q)
{
	const struct cm_event *ev = &q->ev;
	struct cside *s = ev->user;
	if (ev->type == CM_EV_REQ_RECEIVED) {
		CHECK(n->idx == 0, "REQ_RECEIVED on node %u", n->idx);
		on_req(e, q);
		return;
	}
	if (!s) {
		FAIL("node %u: event %s without a user", n->idx, cm_event_name(ev->type));
		return;
	}
	switch (ev->type) {
	case CM_EV_REP_RECEIVED:
		on_rep(e, s, q);
		break;
	case CM_EV_ESTABLISHED:
		if (++s->established == 1)
			post_data(e, s);
		break;
	case CM_EV_MRA_RECEIVED:
		s->mra++;
		break;
	case CM_EV_REJ_RECEIVED:
		s->rej++;
		e->cm_failures++;
		break;
	case CM_EV_REQ_TIMEOUT:
	case CM_EV_REP_TIMEOUT:
		s->timeouts++;
		e->cm_failures++;
		break;
	case CM_EV_DREQ_RECEIVED:
		s->dreq_rcvd++;
		qp_to_err(e, s);
		break;
	case CM_EV_DISCONNECT_DONE:
		s->disc_done++;
		s->disc_status = ev->status;
		s->disc_reason = ev->rej_reason;
		qp_to_err(e, s);
		break;
	case CM_EV_TIMEWAIT_EXIT:
		s->tw_exit++;
		destroy_side_id(e, s);
		side_free(s);
		break;
	default:
		s->other++;
		break;
	}
}

/* Completions of one side; checks every byte. */
static void poll_side(struct env *e, struct cside *s)
{
	struct ibv_wc wc[16];
	struct conn *c = s->c;
	const char *who = s->passive ? "passive" : "active";
	unsigned dir = s->passive ? 1 : 0;
	int n;
	if (!s->qp)
		return;
	while ((n = rnic_cq_poll(s->scq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			unsigned kind = (unsigned)(wc[i].wr_id >> 32);
			if (wc[i].status != IBV_WC_SUCCESS) {
				wc_error(e, s, &wc[i], "send");
				continue;
			}
			if (kind == WR_SEND) {
				CHECK_EQ(wc[i].wr_id & 0xffffffff, s->sends_done, "send completion order");
				s->sends_done++;
			} else if (kind == WR_WRITE) {
				/* ACKed: the data lies in the passive's memory */
				long at = compare(mem_r1(&c->p), RLEN, e->seed, c->idx, TAG_WRITE);
				CHECK(at < 0, "conn %u: RDMA WRITE data differs at %ld", c->idx, at);
				s->write_done = true;
			} else if (kind == WR_READ) {
				long at = compare(mem_r1(s), RLEN, e->seed, c->idx, TAG_READ);
				CHECK(at < 0, "conn %u: RDMA READ data differs at %ld", c->idx, at);
				CHECK_EQ(wc[i].byte_len, RLEN, "READ byte_len");
				s->read_done = true;
			}
		}
	}
	while ((n = rnic_cq_poll(s->rcq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				wc_error(e, s, &wc[i], "recv");
				continue;
			}
			unsigned k = s->recvs_done++;
			CHECK_EQ(wc[i].wr_id, k, "recv completion order");
			if (k >= K)
				continue;
			uint32_t want = send_len(e->seed, c->idx, 1 - dir, k);
			CHECK_EQ(wc[i].byte_len, want, "recv byte_len");
			long at = compare(mem_recv(s) + k * MSG, want, e->seed, c->idx, TAG_SEND + (1 - dir) * 16 + k);
			CHECK(at < 0, "conn %u %s: SEND %u differs at %ld", c->idx, who, k, at);
			/* Data before the RTU: the consumer tells the CM (librdmacm
			 * does on IBV_EVENT_COMM_EST). */
			if (s->passive && s->id && !s->destroyed &&
			    (cm_id_state(s->id) == CM_ST_REP_SENT || cm_id_state(s->id) == CM_ST_MRA_REP_RCVD)) {
				int rc = cm_establish(s->id, pair_now(e->pair));
				CHECK(rc == 0, "conn %u cm_establish: %s", c->idx, strerror(rc));
				tally.early_establish++;
			}
		}
	}
}

/* The pair_run_until predicate: act on events and completions between
 * steps (the cm must not be called from its own callbacks). */
static bool step(void *arg)
{
	struct env *e = arg;
	bool again = true;
	if (!e->auto_consumer)
		return false;
	while (again) {
		again = false;
		for (unsigned i = 0; i < 2; i++) {
			struct qevent q;
			while (pop_event(&e->node[i], &q)) {
				handle_event(e, &e->node[i], &q);
				again = true;
			}
		}
		for (unsigned i = 0; i < e->nconn; i++) {
			struct conn *c = &e->conn[i];
			if (c->p.accept_pending && pair_now(e->pair) >= c->p.accept_at) {
				c->p.accept_pending = false;
				int rc = cm_accept(c->p.id, &c->p.rep, pair_now(e->pair));
				CHECK(rc == 0, "conn %u late cm_accept: %s", c->idx, strerror(rc));
				again = true;
			}
			poll_side(e, &c->a);
			poll_side(e, &c->p);
			if (!c->disconnecting && c->a.sends_done == K && c->a.recvs_done == K && c->a.write_done &&
			    c->a.read_done && c->p.sends_done == K && c->p.recvs_done == K) {
				c->disconnecting = true;
				int rc = cm_disconnect(c->a.id, NULL, 0, pair_now(e->pair));
				CHECK(rc == 0, "conn %u cm_disconnect: %s", c->idx, strerror(rc));
				again = true;
			}
		}
	}
	return false;
}

static enum pair_run_result run(struct env *e, uint64_t max_ns)
{
	enum pair_run_result r = pair_run_until(e->pair, step, e, max_ns);
	CHECK(r != PAIR_STUCK, "pair stuck at %llu", (unsigned long long)pair_now(e->pair));
	return r;
}

/* ---- cases --------------------------------------------------------------------- */

static void case_agent_api(void)
{
	struct env e;
	check_begin("agent_api");
	if (env_init(&e, 1) == 0) {
		struct pair_agent a = { .ctx = &e.node[0], .gsi_receive = agent_gsi_receive,
					.next_deadline = agent_next_deadline, .advance = agent_advance };
		struct pair_agent half = a;
		half.advance = NULL;
		struct pair_agent none = { 0 };
		CHECK_EQ(pair_set_agent(e.pair, 0, &a), EBUSY, "second agent");
		CHECK_EQ(pair_set_agent(e.pair, 2, &a), EINVAL, "bad node");
		CHECK_EQ(pair_set_agent(e.pair, 0, NULL), 0, "detach");
		CHECK_EQ(pair_set_agent(e.pair, 0, &half), EINVAL, "deadline without advance");
		CHECK_EQ(pair_set_agent(e.pair, 0, &none), EINVAL, "no gsi_receive");
		CHECK_EQ(pair_set_agent(e.pair, 0, &a), 0, "re-attach");
		/* An agent without timers is fine. */
		CHECK_EQ(pair_set_agent(e.pair, 1, NULL), 0, "detach 1");
		struct pair_agent notimer = { .ctx = &e.node[1], .gsi_receive = agent_gsi_receive };
		CHECK_EQ(pair_set_agent(e.pair, 1, &notimer), 0, "agent without timers");
		CHECK_EQ(pair_run_until(e.pair, NULL, NULL, HT_MS), PAIR_IDLE, "nothing to do");
	}
	env_fini(&e);
	check_end();
}

/* Node 0 has no agent: its rnic accepts the MADs and the pair drops them;
 * node 1's REQ retries fire from pair_run_until at their exact times. */
static void case_req_timeout(void)
{
	struct env e;
	check_begin("req_timeout");
	if (env_init(&e, 7) == 0) {
		e.nconn = 1;
		pair_set_agent(e.pair, 0, NULL);
		const uint8_t retries = 3, code = 10;
		pair_run_for(e.pair, 123 * HT_US);       /* not at time 0 */
		uint64_t t0 = pair_now(e.pair);
		if (connect_one(&e, &e.conn[0], SID, retries, code) == 0) {
			CHECK_EQ(run(&e, 10000 * HT_MS), PAIR_IDLE, "run to idle");
			struct qevent q;
			bool got = pop_event(&e.node[1], &q);
			CHECK(got, "an event on node 1");
			if (got) {
				CHECK_EQ(q.ev.type, CM_EV_REQ_TIMEOUT, "event type");
				CHECK_EQ(q.ev.status, ETIMEDOUT, "status");
				CHECK_EQ(q.time - t0, (retries + 1) * cm_timeout_ns(code), "time of the timeout");
			}
			/* then TimeWait, over at its configured time */
			got = pop_event(&e.node[1], &q);
			CHECK(got && q.ev.type == CM_EV_TIMEWAIT_EXIT, "then TIMEWAIT_EXIT");
			if (got)
				CHECK_EQ(q.time - t0, (retries + 1) * cm_timeout_ns(code) + TIMEWAIT_NS, "time of the TimeWait exit");
			CHECK(!pop_event(&e.node[1], &q), "no more events");
			CHECK(!pop_event(&e.node[0], &q), "no event on node 0");
			const struct cm_counters *c1 = cm_counters(e.node[1].cm);
			CHECK_EQ(c1->tx_req, retries + 1, "REQs sent");
			CHECK_EQ(c1->retries, retries, "retries");
			CHECK_EQ(c1->req_timeouts, 1, "req_timeouts");
			/* ... and a REJ "timeout" for a passive side that may hold a QP */
			CHECK_EQ(c1->tx_rej, 1, "REJ timeout sent");
			CHECK_EQ(rnic_counters(e.node[1].r)->tx_gsi_mads, retries + 2, "node 1 tx_gsi_mads");
			CHECK_EQ(rnic_counters(e.node[0].r)->rx_gsi_mads, retries + 2, "node 0 rx_gsi_mads");
			CHECK_EQ(rnic_counters(e.node[0].r)->rx_drop_gsi, 0, "node 0 rx_drop_gsi");
			CHECK_EQ(pair_stats(e.pair)->gsi_no_agent, retries + 2, "pair gsi_no_agent");
			CHECK_EQ(e.node[0].agent_calls, 0, "detached agent not called");
			CHECK_EQ(cm_counters(e.node[0].cm)->rx_mads, 0, "node 0 cm saw nothing");
			CHECK(pair_stats(e.pair)->agent_advances >= (uint64_t)retries + 1, "agent advanced by the pair");
			counters_ok(&e, 1);
		}
	}
	env_fini(&e);
	check_end();
}

static void case_rej8(void)
{
	struct env e;
	check_begin("rej8");
	if (env_init(&e, 11) == 0) {
		e.nconn = 1;
		int rc = cm_listen(e.node[0].cm, SID, NULL, &e.lis);
		CHECK(rc == 0, "cm_listen: %s", strerror(rc));
		uint64_t t0 = pair_now(e.pair);
		if (connect_one(&e, &e.conn[0], SID_NONE, CM_RETRIES, CM_T_CODE) == 0) {
			CHECK_EQ(run(&e, 10000 * HT_MS), PAIR_IDLE, "run to idle");
			struct qevent q;
			bool got = pop_event(&e.node[1], &q);
			CHECK(got, "an event on node 1");
			if (got) {
				CHECK_EQ(q.ev.type, CM_EV_REJ_RECEIVED, "event type");
				CHECK_EQ(q.ev.rej_reason, CM_REJ_INVALID_SERVICE_ID, "REJ reason");
				CHECK_EQ(q.ev.rej_msg, 0, "REJ of the REQ");
				CHECK(q.time - t0 < cm_timeout_ns(CM_T_CODE), "REJ at once, not after a timeout");
			}
			while (pop_event(&e.node[1], &q))
				CHECK(q.ev.type == CM_EV_TIMEWAIT_EXIT, "node 1: then only TimeWait exit, got %s",
				      cm_event_name(q.ev.type));
			CHECK(!pop_event(&e.node[0], &q), "no event on node 0");
			CHECK_EQ(cm_counters(e.node[0].cm)->rej_invalid_service_id, 1, "REJ 8 sent");
			CHECK_EQ(cm_counters(e.node[0].cm)->tx_rej, 1, "node 0 tx_rej");
			CHECK_EQ(cm_counters(e.node[1].cm)->rx_rej, 1, "node 1 rx_rej");
			CHECK_EQ(rnic_counters(e.node[0].r)->rx_gsi_mads, 1, "node 0 rx_gsi_mads");
			CHECK_EQ(rnic_counters(e.node[0].r)->tx_gsi_mads, 1, "node 0 tx_gsi_mads");
			CHECK_EQ(rnic_counters(e.node[1].r)->rx_gsi_mads, 1, "node 1 rx_gsi_mads");
			CHECK_EQ(e.node[1].last_src_qpn, 1, "REJ from QP1");
			CHECK_EQ(e.node[0].last_src_qpn, 1, "REQ from QP1");
			counters_ok(&e, 0);
			counters_ok(&e, 1);
		}
	}
	env_fini(&e);
	check_end();
}

/* A UD QP on node 1 aims at node 0's QP1 with the bytes of a real REQ. */
static void case_gsi_hostile(void)
{
	struct env e;
	check_begin("gsi_hostile");
	if (env_init(&e, 13) != 0) {
		env_fini(&e);
		check_end();
		return;
	}
	e.nconn = 1;
	struct rnic *r1 = e.node[1].r;
	struct rnic_cq *cq = NULL;
	struct rnic_qp *ud = NULL;
	struct rnic_mr *mr = NULL;
	struct rnic_ah *ah = NULL;
	uint8_t *buf = calloc(1, 1024);
	/* A REQ for an unlistened service: answered with REJ 8; its bytes are
	 * what we replay. */
	if (!buf || connect_one(&e, &e.conn[0], SID_NONE, CM_RETRIES, CM_T_CODE) != 0)
		goto out;
	run(&e, 10000 * HT_MS);
	REQUIRE_GOTO(e.node[1].mads_sent == 1, out, "one REQ sent");
	memcpy(buf, e.node[1].first_mad, 256);
	memcpy(buf + 256, e.node[1].first_mad, 256);    /* for the 257/300-byte sends */
	struct qevent q;
	while (pop_event(&e.node[1], &q))
		;

	cq = rnic_cq_create(r1, 64, NULL);
	mr = rnic_mr_reg(e.node[1].pd, buf, 1024, (uint64_t)(uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_UD;
	init.sq_sig_all = 1;
	init.cap.max_send_wr = 16;
	init.cap.max_recv_wr = 16;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	if (cq)
		ud = rnic_qp_create(e.node[1].pd, cq, cq, &init, NULL);
	REQUIRE_GOTO(cq && mr && ud, out, "UD objects");
	uint64_t now = pair_now(e.pair);
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = GSI_QKEY;              /* sent for a "controlled" WR Q_Key */
	int rc = rnic_qp_modify(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, now);
	REQUIRE_GOTO(rc == 0, out, "UD INIT: %s", strerror(rc));
	a.qp_state = IBV_QPS_RTR;
	rc = rnic_qp_modify(ud, &a, IBV_QP_STATE, now);
	REQUIRE_GOTO(rc == 0, out, "UD RTR: %s", strerror(rc));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x10;
	rc = rnic_qp_modify(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, now);
	REQUIRE_GOTO(rc == 0, out, "UD RTS: %s", strerror(rc));
	struct ibv_ah_attr aa;
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.hop_limit = 64;
	memcpy(aa.grh.dgid.raw, pair_gid(e.pair, 0)->raw, 16);
	ah = rnic_ah_create(e.node[1].pd, &aa);
	REQUIRE_GOTO(ah, out, "ah_create: %s", strerror(errno));

	struct {
		const char *what;
		uint32_t len, qkey;
		bool imm, reaches_cm;
	} sends[] = {
		{ "wrong Q_Key", 256, 0x11112222u, false, false },
		{ "Q_Key 0 ", 256, 0, false, false },
		{ "255 bytes", 255, 0x80000000u, false, false },
		{ "257 bytes", 257, 0x80000000u, false, false },
		{ "300 bytes", 300, 0x80000000u, false, false },
		{ "0 bytes", 0, 0x80000000u, false, false },
		{ "SEND with immediate", 256, 0x80000000u, true, false },
		{ "the control: a good MAD from a UD QP", 256, 0x80000000u, false, true },
	};
	for (size_t i = 0; i < sizeof(sends) / sizeof(sends[0]); i++) {
		struct rnic_counters r0 = *rnic_counters(e.node[0].r);
		struct cm_counters c0 = *cm_counters(e.node[0].cm);
		unsigned calls = e.node[0].agent_calls;
		struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)buf, .length = sends[i].len,
				       .lkey = rnic_mr_lkey(mr) };
		struct ibv_send_wr wr, *bad;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.opcode = sends[i].imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
		wr.imm_data = 0x01020304;
		wr.sg_list = &sge;
		wr.num_sge = sends[i].len ? 1 : 0;
		wr.wr.ud.ah = &ah->verbs;
		wr.wr.ud.remote_qpn = 1;
		wr.wr.ud.remote_qkey = sends[i].qkey;
		rc = rnic_post_send(ud, &wr, &bad, pair_now(e.pair));
		CHECK(rc == 0, "%s: post_send: %s", sends[i].what, strerror(rc));
		run(&e, 10000 * HT_MS);
		struct ibv_wc wc;
		CHECK(rnic_cq_poll(cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS, "%s: UD send completes",
		      sends[i].what);
		const struct rnic_counters *r0n = rnic_counters(e.node[0].r);
		const struct cm_counters *c0n = cm_counters(e.node[0].cm);
		CHECK_EQ(r0n->rx_packets - r0.rx_packets, 1, "%s: one packet in", sends[i].what);
		if (sends[i].reaches_cm) {
			CHECK_EQ(r0n->rx_drop_gsi - r0.rx_drop_gsi, 0, "%s: not dropped", sends[i].what);
			CHECK_EQ(r0n->rx_gsi_mads - r0.rx_gsi_mads, 1, "%s: a MAD", sends[i].what);
			CHECK_EQ(c0n->rx_mads - c0.rx_mads, 1, "%s: the cm sees it", sends[i].what);
			CHECK_EQ(c0n->tx_rej - c0.tx_rej, 1, "%s: and answers REJ 8", sends[i].what);
			CHECK_EQ(e.node[0].last_src_qpn, rnic_qp_num(ud), "the agent sees the UD QP's QPN");
		} else {
			CHECK_EQ(r0n->rx_drop_gsi - r0.rx_drop_gsi, 1, "%s: rx_drop_gsi", sends[i].what);
			CHECK_EQ(r0n->rx_gsi_mads - r0.rx_gsi_mads, 0, "%s: no MAD", sends[i].what);
			CHECK_EQ(c0n->rx_mads - c0.rx_mads, 0, "%s: the cm sees nothing", sends[i].what);
			CHECK_EQ(c0n->tx_mads - c0.tx_mads, 0, "%s: the cm sends nothing", sends[i].what);
			CHECK_EQ(e.node[0].agent_calls - calls, 0, "%s: no agent call", sends[i].what);
		}
		CHECK(!pop_event(&e.node[0], &q), "%s: no cm event on node 0", sends[i].what);
		while (pop_event(&e.node[1], &q))
			;
	}
	CHECK_EQ(pair_stats(e.pair)->bad_icrc, 0, "no ICRC failures");
	counters_ok(&e, 0);
	counters_ok(&e, 1);
out:
	if (ah)
		rnic_ah_destroy(ah);
	if (ud)
		rnic_qp_destroy(ud);
	if (mr)
		rnic_mr_dereg(mr);
	if (cq)
		rnic_cq_destroy(cq);
	env_fini(&e);
	free(buf);
	check_end();
}

/* ---- the soak -------------------------------------------------------------------- */

struct soak_result {
	uint64_t trace, ev_hash, sim_end;
	unsigned mras, retries, dup_mads, rc_retransmits;
};

static void soak_faults(uint64_t seed, struct pair_faults *f)
{
	memset(f, 0, sizeof(*f));
	f->loss = (double)(seed % 5) * 0.05;                    /* 0 .. 20% */
	f->dup = (double)((seed / 5) % 3) * 0.03;               /* 0, 3, 6% */
	f->reorder = (double)((seed / 15) % 3) * 0.05;          /* 0, 5, 10% */
	f->reorder_ns = 30 * HT_US;
	f->delay_ns = 1 * HT_US + (seed % 7) * HT_US;
	f->jitter_ns = (seed % 2) * 3 * HT_US;
}

static void soak_once(uint64_t seed, struct soak_result *res)
{
	struct env e;
	memset(res, 0, sizeof(*res));
	if (env_init(&e, seed) != 0) {
		env_fini(&e);
		return;
	}
	e.auto_consumer = true;
	e.nconn = 2 + (unsigned)(seed % 7);     /* 2 .. 8 connections */
	struct pair_faults f;
	soak_faults(seed, &f);
	pair_set_all_faults(e.pair, &f);
	int rc = cm_listen(e.node[0].cm, SID, NULL, &e.lis);
	CHECK(rc == 0, "cm_listen: %s", strerror(rc));
	/* Connect one by one, a random time apart (so REQs meet REPs and data
	 * of earlier connections on the link). */
	for (unsigned i = 0; i < e.nconn; i++) {
		if (connect_one(&e, &e.conn[i], SID, CM_RETRIES, CM_T_CODE) != 0)
			break;
		uint64_t gap = pair_random_below(e.pair, 200 * HT_US);
		if (pair_run_until(e.pair, step, &e, gap) == PAIR_IDLE)
			pair_run_for(e.pair, 0);
	}
	enum pair_run_result r = run(&e, 60000 * HT_MS);
	CHECK_EQ(r, PAIR_IDLE, "run ends idle");
	bool any_failed = false;

	for (unsigned i = 0; i < e.nconn; i++) {
		struct conn *c = &e.conn[i];
		struct cside *a = &c->a, *p = &c->p;
		CHECK(a->rep_rcvd == 1 && a->established == 1, "conn %u active: REP %u established %u", i,
		      a->rep_rcvd, a->established);
		CHECK(p->req_rcvd == 1 && p->established == 1, "conn %u passive: REQ %u established %u", i,
		      p->req_rcvd, p->established);
		CHECK(a->rej + a->timeouts + p->rej + p->timeouts == 0, "conn %u: REJ %u/%u timeouts %u/%u", i,
		      a->rej, p->rej, a->timeouts, p->timeouts);
		if (c->data_failed) {
			/* RC ran out of retries: only under heavy loss, and the
			 * connection still ends on both sides. */
			CHECK(f.loss >= 0.15, "conn %u: RETRY_EXC_ERR at loss %.2f", i, f.loss);
			CHECK(a->disc_done + a->dreq_rcvd == 1 && p->disc_done + p->dreq_rcvd == 1,
			      "conn %u after an RC error: disconnects %u/%u DREQs %u/%u", i, a->disc_done,
			      p->disc_done, a->dreq_rcvd, p->dreq_rcvd);
			any_failed = true;
		} else {
			CHECK(a->sends_done == K && a->recvs_done == K && a->write_done && a->read_done,
			      "conn %u active data: sends %u recvs %u write %d read %d", i, a->sends_done,
			      a->recvs_done, a->write_done, a->read_done);
			CHECK(p->sends_done == K && p->recvs_done == K, "conn %u passive data: sends %u recvs %u", i,
			      p->sends_done, p->recvs_done);
			/* The DREQ's outcome: the DREP, or — when a delayed duplicate
			 * REQ reached the passive side after it entered TimeWait —
			 * the REJ "stale connection" it answers that REQ with (as the
			 * kernel's cm_dup_req_handler does), which ends the active's
			 * DREQ Sent too. */
			bool stale = a->disc_status == ECONNRESET && a->disc_reason == CM_REJ_STALE_CONN;
			CHECK(a->disc_done == 1 && (a->disc_status == 0 || stale),
			      "conn %u: DISCONNECT_DONE %u status %d (REJ %u)", i, a->disc_done, a->disc_status,
			      a->disc_reason);
			tally.stale_rej += stale;
			CHECK_EQ(p->dreq_rcvd, 1, "conn %u DREQ_RECEIVED", i);
		}
		CHECK(a->tw_exit == 1 && p->tw_exit == 1, "conn %u: TimeWait exits %u/%u", i, a->tw_exit, p->tw_exit);
		CHECK(a->other + p->other == 0, "conn %u: unexpected events", i);
		CHECK(!p->accept_pending, "conn %u: accept still pending", i);
		res->mras += a->mra + p->mra;
		tally.established += a->established == 1 && p->established == 1;
	}
	tally.conns += e.nconn;
	for (unsigned i = 0; i < 2; i++) {
		const struct cm_counters *cc = cm_counters(e.node[i].cm);
		const struct rnic_counters *rc2 = rnic_counters(e.node[i].r);
		counters_ok(&e, i);
		CHECK(cc->ids_created == cc->ids_freed, "node %u: ids created %llu freed %llu", i,
		      (unsigned long long)cc->ids_created, (unsigned long long)cc->ids_freed);
		/* Every MAD gsi.c accepted went to the cm, every MAD the cm sent
		 * left through QP1. */
		CHECK_EQ(rc2->rx_gsi_mads, cc->rx_mads, "node %u: rx_gsi_mads == cm rx_mads", i);
		CHECK_EQ(rc2->tx_gsi_mads, cc->tx_mads, "node %u: tx_gsi_mads == cm tx_mads", i);
		CHECK_EQ(rc2->rx_drop_gsi, 0, "node %u: rx_drop_gsi", i);
		CHECK_EQ(cc->rx_drop_malformed, 0, "node %u: malformed MADs", i);
		if (!any_failed)
			CHECK_EQ(rc2->completion_errors, 0, "node %u: completion errors", i);
		res->retries += (unsigned)cc->retries;
		res->dup_mads += (unsigned)(cc->rx_dup_req + cc->rx_dup_rep + cc->rx_dup_rtu + cc->rx_dup_dreq +
					    cc->rx_dup_drep + cc->rx_dup_rej + cc->rx_dup_mra);
		res->rc_retransmits += (unsigned)rc2->retransmits;
	}
	CHECK_EQ(pair_stats(e.pair)->gsi_no_agent, 0, "gsi_no_agent");
	CHECK_EQ(e.cm_failures, 0, "consumer saw CM failures (REJ, timeouts)");
	res->trace = pair_trace_hash(e.pair);
	res->ev_hash = e.ev_hash;
	res->sim_end = pair_now(e.pair);
	const struct pair_stats *ps = pair_stats(e.pair);
	tally.lost += ps->lost;
	tally.duplicated += ps->duplicated;
	tally.reordered += ps->reordered;
	env_fini(&e);
}

static void case_soak(uint64_t seed)
{
	struct soak_result r1, r2;
	struct pair_faults f;
	soak_faults(seed, &f);
	check_begin("soak seed %llu (loss %.2f dup %.2f reorder %.2f)", (unsigned long long)seed, f.loss, f.dup,
		      f.reorder);
	soak_once(seed, &r1);
	/* The second run is counted only for the replay check. */
	struct tally saved = tally;
	soak_once(seed, &r2);
	tally = saved;
	CHECK_EQ(r2.trace, r1.trace, "same seed, same trace hash");
	CHECK_EQ(r2.ev_hash, r1.ev_hash, "same seed, same events at the same times");
	CHECK_EQ(r2.sim_end, r1.sim_end, "same seed, same end time");
	tally.seeds++;
	tally.cm_retries += r1.retries;
	tally.rc_retransmits += r1.rc_retransmits;
	tally.mras += r1.mras;
	check_end();
}

#define NSEEDS 1000

int main(int argc, char **argv)
{
	static uint64_t defaults[NSEEDS], seeds[100000];
	for (size_t i = 0; i < NSEEDS; i++)
		defaults[i] = i + 1;
	size_t n = ht_seeds_from_args(argc, argv, seeds, 100000, defaults, NSEEDS);
	bool replay = argc > 1 || getenv("SOFTRNIC_SEED");

	if (!replay) {
		case_agent_api();
		case_req_timeout();
		case_rej8();
		case_gsi_hostile();
	}
	for (size_t i = 0; i < n; i++) {
		check_seed(seeds[i]);
		case_soak(seeds[i]);
	}
	check_seeded = false;
	printf("soak: %u seeds, %u connections, %u established on both sides; link lost %llu, duplicated %llu, "
	       "reordered %llu; CM retries %llu, MRAs %llu, established by data before the RTU %llu, "
	       "disconnects ended by REJ stale-connection %u; RC retransmits %llu, RC retry exhausted on %u\n",
	       tally.seeds, tally.conns, tally.established, (unsigned long long)tally.lost,
	       (unsigned long long)tally.duplicated, (unsigned long long)tally.reordered,
	       (unsigned long long)tally.cm_retries, (unsigned long long)tally.mras,
	       (unsigned long long)tally.early_establish, tally.stale_rej, (unsigned long long)tally.rc_retransmits,
	       tally.data_failed);
	if (!replay) {
		/* The soak must have exercised what it claims to. */
		CHECK(tally.lost > 0 && tally.duplicated > 0 && tally.reordered > 0, "faults happened");
		CHECK(tally.cm_retries > 0, "CM retries happened");
		CHECK(tally.rc_retransmits > 0, "RC retransmits happened");
		CHECK(tally.mras > 0, "MRAs for slow accepts happened");
		CHECK(tally.early_establish > 0, "data before the RTU happened");
		CHECK_EQ(tally.established, tally.conns, "every connection established");
		/* RC retry exhaustion stays rare (it is a property of 7 retries
		 * at 15-20% loss, not of the CM). */
		CHECK(tally.data_failed * 100 <= tally.conns, "RC gave up on %u of %u connections",
		      tally.data_failed, tally.conns);
	}
	printf("%s: %d failed checks\n", check_failures ? "FAIL" : "ok", check_failures);
	return check_exit("cm_pair_rnic");
}
