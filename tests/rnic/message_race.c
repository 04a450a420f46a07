/*
 * message_race.c — the message path (rnic_qp_set_message_path) raced
 * against what can go wrong while a whole message waits in the sender's
 * memory for the receiver to read it.
 *
 * For each seed, and each way (ports/pair.c: node 1 reads a payload as
 * its packet arrives, node 0 puts the reads of WRITE payloads off to the
 * end of its batch, src/rnic/pull.c), the sender posts a burst of RDMA
 * WRITEs, READs and SENDs to the receiver, most of them larger than a path
 * MTU (so each is one packet whose payload the receiver reads from the
 * sender, ports/pair's stand-in for process_vm_readv), split over 1-3
 * SGEs, over a link with a little loss and reordering and failed reads.
 * At random simulated times, zero to two of these happen:
 *   dereg      the receiver deregisters one of its target MRs (and the
 *              program reuses the memory: we fill it with a "dead"
 *              pattern);
 *   qp_error   the receiver moves its QP to the Error state;
 *   peer_death the receiver goes silent: everything to and from it is
 *              lost, and its memory can no longer be read;
 *   unmap      the sender's buffers can no longer be read by the receiver
 *              (the sender unmapped them, or died).
 * Then it checks what must hold whatever the timing:
 *   - every WR of the sender completes exactly once, in order: successes,
 *     then at most one error of the kinds these events cause, then
 *     flushes; no WR is left hanging;
 *   - a successful WRITE's bytes are in its target slot (unless that MR
 *     was deregistered later); a failed one left each byte either as it
 *     was or as the source had it; nothing outside a slot written, the
 *     guard bytes around every MR untouched, and a deregistered MR's
 *     memory never written after its deregistration;
 *   - a successful READ returned the source's bytes; a successful receive
 *     holds exactly the SEND's bytes;
 *   - the run replays exactly from its seed (trace hash, twice per seed).
 *
 * Usage: rnic_message_race [--seed N | --seeds A-B] [-v]
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NMR 3u                  /* target MRs on the receiver */
#define NSLOT 8u                /* slots per target MR, one WRITE each */
#define SLOT (64u << 10)
#define GUARD 4096u
#define MR_LEN (NSLOT * SLOT)
#define NOPS 24u
#define READ_LEN (128u << 10)   /* the receiver's READ source */
#define RECV_LEN (64u << 10)
#define NRECV 16u
#define TGT_IOVA 0x40000000ull
#define READ_IOVA 0x80000000ull
#define STEP_NS (1 * HT_US)
#define RUN_NS (3000 * HT_MS)

enum op_kind { OP_WRITE, OP_READ, OP_SEND };
enum race { RACE_DEREG, RACE_QP_ERROR, RACE_PEER_DEATH, RACE_UNMAP, RACE_KINDS };
static const char *const race_names[RACE_KINDS] = { "dereg", "qp_error", "peer_death", "unmap" };

struct op {
	enum op_kind kind;
	uint32_t len;
	unsigned mr, slot;      /* WRITE: target; READ: offset in the source */
	uint32_t read_off;
	uint8_t *local;         /* sender: source (WRITE, SEND) or destination (READ) */
	int nsge;
	struct ibv_sge sge[3];
	bool done;
	int status;
};

struct event {
	enum race kind;
	uint64_t at;
	unsigned mr;            /* dereg */
	bool fired;
};

struct run {
	struct ht h;
	uint64_t seed;
	/* The node that posts the burst and the one it goes to: node 1
	 * reads payloads at once, node 0 puts the reads off to the end of
	 * its batch (ports/pair.c); every seed runs both ways. */
	unsigned snd, rcv;
	uint64_t rng;
	uint8_t *tgt[NMR];      /* GUARD | MR_LEN | GUARD */
	uint8_t *tgt_orig[NMR];
	struct rnic_mr *tmr[NMR];
	bool dead[NMR];         /* deregistered; memory now the dead pattern */
	uint8_t *rsrc;          /* receiver: READ source */
	struct rnic_mr *rmr;
	uint8_t *recv;          /* receiver: NRECV receive buffers */
	struct rnic_mr *recv_mr;
	uint8_t *local;         /* sender: NOPS regions of SLOT bytes */
	struct rnic_mr *lmr;
	struct op op[NOPS];
	struct event ev[2];
	unsigned nev;
	unsigned completed;
	unsigned sends_posted;
	/* the SENDs, in order, and the receive completions */
	unsigned send_op[NOPS];
	unsigned nrecv_wc;
	uint64_t start;         /* simulated time of the burst */
};

static uint64_t rnd(struct run *u, uint64_t n)
{
	return n ? pair_random_below(u->h.pair, n) : 0;
}

static uint8_t pattern(uint64_t seed, unsigned who, size_t i)
{
	return (uint8_t)((i * 131u) ^ (who * 29u) ^ (seed * 7u) ^ (i >> 9));
}

static const uint8_t DEAD = 0xee;

static int setup(struct run *u, uint64_t seed, unsigned rcv)
{
	memset(u, 0, sizeof(*u));
	u->seed = seed;
	u->rcv = rcv;
	u->snd = 1 - rcv;
	struct ht_opts o;
	ht_default_opts(&o, seed);
	o.message_path[0] = o.message_path[1] = true;
	o.timeout = 8;          /* 1 ms: a dead peer is found in simulated ms */
	o.retry_cnt = 3;
	o.rnr_retry = 3;
	if (ht_setup(&u->h, &o))
		return -1;
	for (unsigned m = 0; m < NMR; m++) {
		u->tgt[m] = malloc(GUARD + MR_LEN + GUARD);
		u->tgt_orig[m] = malloc(GUARD + MR_LEN + GUARD);
		REQUIRE_RET(u->tgt[m] && u->tgt_orig[m], -1, "out of memory");
		for (size_t i = 0; i < GUARD + MR_LEN + GUARD; i++)
			u->tgt[m][i] = pattern(seed, 10 + m, i);
		memcpy(u->tgt_orig[m], u->tgt[m], GUARD + MR_LEN + GUARD);
		u->tmr[m] = rnic_mr_reg(u->h.side[u->rcv].pd, u->tgt[m] + GUARD, MR_LEN, TGT_IOVA + (uint64_t)m * MR_LEN,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		REQUIRE_RET(u->tmr[m], -1, "target mr_reg: %s", strerror(errno));
	}
	u->rsrc = malloc(READ_LEN);
	u->recv = calloc(NRECV, RECV_LEN);
	u->local = malloc((size_t)NOPS * SLOT);
	REQUIRE_RET(u->rsrc && u->recv && u->local, -1, "out of memory");
	for (size_t i = 0; i < READ_LEN; i++)
		u->rsrc[i] = pattern(seed, 20, i);
	for (size_t i = 0; i < (size_t)NOPS * SLOT; i++)
		u->local[i] = pattern(seed, 30, i);
	u->rmr = rnic_mr_reg(u->h.side[u->rcv].pd, u->rsrc, READ_LEN, READ_IOVA, IBV_ACCESS_REMOTE_READ);
	u->recv_mr = ht_reg(&u->h.side[u->rcv], u->recv, (size_t)NRECV * RECV_LEN, IBV_ACCESS_LOCAL_WRITE);
	u->lmr = ht_reg(&u->h.side[u->snd], u->local, (size_t)NOPS * SLOT, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE_RET(u->rmr && u->recv_mr && u->lmr, -1, "mr_reg: %s", strerror(errno));
	return 0;
}

static void teardown(struct run *u)
{
	for (unsigned m = 0; m < NMR; m++) {
		if (u->tmr[m] && !u->dead[m])
			rnic_mr_dereg(u->tmr[m]);
		free(u->tgt[m]);
		free(u->tgt_orig[m]);
	}
	if (u->rmr)
		rnic_mr_dereg(u->rmr);
	if (u->recv_mr)
		rnic_mr_dereg(u->recv_mr);
	if (u->lmr)
		rnic_mr_dereg(u->lmr);
	ht_teardown(&u->h);
	free(u->rsrc);
	free(u->recv);
	free(u->local);
}

/* Mostly larger than a path MTU (the message path), now and then not. */
static uint32_t random_len(struct run *u, uint32_t max)
{
	if (rnd(u, 5) == 0)
		return 1 + (uint32_t)rnd(u, 4096);
	return 4097 + (uint32_t)rnd(u, max - 4096);
}

static void split(struct run *u, struct op *o)
{
	uint32_t lkey = rnic_mr_lkey(u->lmr);
	int n = 1 + (int)rnd(u, o->len >= 3 ? 3 : o->len);
	uint32_t left = o->len, off = 0;

	o->nsge = n;
	for (int i = 0; i < n; i++) {
		uint32_t k = i == n - 1 ? left : 1 + (uint32_t)rnd(u, left - (uint32_t)(n - 1 - i));
		/* a gap between pieces: they are not one buffer */
		o->sge[i] = (struct ibv_sge){ .addr = (uint64_t)(uintptr_t)(o->local + off), .length = k, .lkey = lkey };
		off += k + (i < n - 1 ? 64 : 0);
		left -= k;
	}
}

static int post_all(struct run *u)
{
	bool slot_used[NMR][NSLOT] = { { false } };
	uint64_t now = pair_now(u->h.pair);

	for (unsigned r = 0; r < NRECV; r++) {
		struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)(u->recv + (size_t)r * RECV_LEN),
				       .length = RECV_LEN, .lkey = rnic_mr_lkey(u->recv_mr) };
		struct ibv_recv_wr wr = { .wr_id = r, .sg_list = &sge, .num_sge = 1 }, *bad;
		REQUIRE_RET(rnic_post_recv(u->h.side[u->rcv].qp, &wr, &bad) == 0, -1, "post_recv");
	}
	for (unsigned i = 0; i < NOPS; i++) {
		struct op *o = &u->op[i];
		o->local = u->local + (size_t)i * SLOT;
		o->kind = (enum op_kind)rnd(u, 3);
		if (o->kind == OP_SEND && u->sends_posted == NRECV)
			o->kind = OP_WRITE;
		struct ibv_send_wr wr;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.send_flags = IBV_SEND_SIGNALED;
		switch (o->kind) {
		case OP_WRITE:
			do {
				o->mr = (unsigned)rnd(u, NMR);
				o->slot = (unsigned)rnd(u, NSLOT);
			} while (slot_used[o->mr][o->slot]);
			slot_used[o->mr][o->slot] = true;
			o->len = random_len(u, SLOT - 256);
			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.wr.rdma.remote_addr = TGT_IOVA + (uint64_t)o->mr * MR_LEN + (uint64_t)o->slot * SLOT;
			wr.wr.rdma.rkey = rnic_mr_rkey(u->tmr[o->mr]);
			break;
		case OP_READ:
			o->len = random_len(u, SLOT - 256);
			o->read_off = (uint32_t)rnd(u, READ_LEN - o->len);
			memset(o->local, 0, SLOT);
			wr.opcode = IBV_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = READ_IOVA + o->read_off;
			wr.wr.rdma.rkey = rnic_mr_rkey(u->rmr);
			break;
		case OP_SEND:
			o->len = random_len(u, RECV_LEN);
			wr.opcode = IBV_WR_SEND;
			u->send_op[u->sends_posted++] = i;
			break;
		}
		split(u, o);
		wr.sg_list = o->sge;
		wr.num_sge = o->nsge;
		struct ibv_send_wr *bad;
		REQUIRE_RET(rnic_post_send(u->h.side[u->snd].qp, &wr, &bad, now) == 0, -1, "post_send %u", i);
	}
	return 0;
}

static void fire(struct run *u, struct event *e)
{
	struct pair_faults dead = { .loss = 1.0, .pull_fail = 1.0, .delay_ns = 1000 };

	e->fired = true;
	switch (e->kind) {
	case RACE_DEREG:
		if (!u->dead[e->mr] && rnic_mr_dereg(u->tmr[e->mr]) == 0) {
			u->dead[e->mr] = true;
			memset(u->tgt[e->mr] + GUARD, DEAD, MR_LEN);
		}
		break;
	case RACE_QP_ERROR: {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
		CHECK(rnic_qp_modify(u->h.side[u->rcv].qp, &a, IBV_QP_STATE, pair_now(u->h.pair)) == 0, "modify to ERR");
		break;
	}
	case RACE_PEER_DEATH:
		pair_set_faults(u->h.pair, u->snd, u->rcv, &dead);
		pair_set_faults(u->h.pair, u->rcv, u->snd, &dead);
		break;
	case RACE_UNMAP: {
		struct pair_faults f = { .pull_fail = 1.0, .delay_ns = 1000 };
		pair_set_faults(u->h.pair, u->snd, u->rcv, &f);
		break;
	}
	default:
		break;
	}
}

static void poll_sender(struct run *u)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = rnic_cq_poll(u->h.side[u->snd].scq, 16, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			uint64_t id = wc[k].wr_id;
			if (id >= NOPS) {
				FAIL("completion for unknown wr_id %llu", (unsigned long long)id);
				continue;
			}
			if (u->op[id].done)
				FAIL("WR %llu completed twice", (unsigned long long)id);
			if (id != u->completed)
				FAIL("WR %llu completed out of order (expected %u)", (unsigned long long)id,
					u->completed);
			u->op[id].done = true;
			u->op[id].status = wc[k].status;
			u->completed++;
		}
	}
}

static void check_recv(struct run *u)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = rnic_cq_poll(u->h.side[u->rcv].rcq, 16, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				CHECK(wc[k].status == IBV_WC_WR_FLUSH_ERR, "receive completion status %s",
				      ht_wc_status_str(wc[k].status));
				continue;
			}
			unsigned r = (unsigned)wc[k].wr_id, s = u->nrecv_wc++;
			if (r != s || s >= u->sends_posted) {
				FAIL("receive %u completed as the %u-th successful one", r, s);
				continue;
			}
			const struct op *o = &u->op[u->send_op[s]];
			CHECK_EQ(wc[k].byte_len, o->len, "receive byte_len");
			const uint8_t *got = u->recv + (size_t)r * RECV_LEN;
			uint32_t at = 0;
			for (int i = 0; i < o->nsge; i++) {
				if (memcmp(got + at, (const void *)(uintptr_t)o->sge[i].addr, o->sge[i].length)) {
					FAIL("receive %u: bytes differ from SEND %u", r, u->send_op[s]);
					break;
				}
				at += o->sge[i].length;
			}
		}
	}
}

/* What the source of WRITE o put at target offset j (its SGEs back to back). */
static uint8_t source_byte(const struct op *o, uint32_t j)
{
	for (int i = 0; i < o->nsge; i++) {
		if (j < o->sge[i].length)
			return ((const uint8_t *)(uintptr_t)o->sge[i].addr)[j];
		j -= o->sge[i].length;
	}
	return 0;
}

static void check_memory(struct run *u)
{
	for (unsigned m = 0; m < NMR; m++) {
		const uint8_t *t = u->tgt[m], *orig = u->tgt_orig[m];
		for (size_t i = 0; i < GUARD; i++)
			if (t[i] != orig[i] || t[GUARD + MR_LEN + i] != orig[GUARD + MR_LEN + i]) {
				FAIL("MR %u: a guard byte changed", m);
				break;
			}
		if (u->dead[m]) {
			for (size_t i = 0; i < MR_LEN; i++)
				if (t[GUARD + i] != DEAD) {
					FAIL("MR %u: byte %zu written after the MR was deregistered", m, i);
					break;
				}
			continue;
		}
		for (unsigned s = 0; s < NSLOT; s++) {
			const struct op *w = NULL;
			for (unsigned i = 0; i < NOPS; i++)
				if (u->op[i].kind == OP_WRITE && u->op[i].mr == m && u->op[i].slot == s)
					w = &u->op[i];
			size_t base = GUARD + (size_t)s * SLOT;
			for (uint32_t j = 0; j < SLOT; j++) {
				uint8_t b = t[base + j], was = orig[base + j];
				bool in = w && j < w->len;
				if (in && w->status == IBV_WC_SUCCESS && b != source_byte(w, j)) {
					FAIL("MR %u slot %u: byte %u of a completed WRITE is not the source's", m, s, j);
					break;
				}
				if (in && b != was && b != source_byte(w, j)) {
					FAIL("MR %u slot %u: byte %u is neither old nor the WRITE's", m, s, j);
					break;
				}
				if (!in && b != was) {
					FAIL("MR %u slot %u: byte %u outside any WRITE changed", m, s, j);
					break;
				}
			}
		}
	}
	for (unsigned i = 0; i < NOPS; i++) {
		const struct op *o = &u->op[i];
		if (o->kind != OP_READ || o->status != IBV_WC_SUCCESS)
			continue;
		uint32_t at = o->read_off;
		for (int k = 0; k < o->nsge; k++) {
			if (memcmp((const void *)(uintptr_t)o->sge[k].addr, u->rsrc + at, o->sge[k].length)) {
				FAIL("READ %u: returned bytes differ from the source", i);
				break;
			}
			at += o->sge[k].length;
		}
	}
}

static bool allowed_error(int st)
{
	return st == IBV_WC_REM_ACCESS_ERR || st == IBV_WC_RETRY_EXC_ERR || st == IBV_WC_RNR_RETRY_EXC_ERR ||
	       st == IBV_WC_REM_OP_ERR || st == IBV_WC_REM_INV_REQ_ERR;
}

static void check_statuses(struct run *u)
{
	bool failed = false;

	for (unsigned i = 0; i < NOPS; i++) {
		const struct op *o = &u->op[i];
		if (!o->done) {
			FAIL("WR %u never completed", i);
			return;
		}
		if (failed) {
			CHECK(o->status == IBV_WC_WR_FLUSH_ERR, "WR %u after an error: %s", i,
			      ht_wc_status_str(o->status));
		} else if (o->status != IBV_WC_SUCCESS) {
			CHECK(allowed_error(o->status), "WR %u: %s", i, ht_wc_status_str(o->status));
			failed = true;
		}
	}
	/* With no race, nothing may fail. */
	if (!u->nev)
		CHECK(!failed, "a run with no race had an error");
}

struct outcome {
	uint64_t trace, now;
	unsigned ok_ops, messages, pull_failures, put_off, put_off_failures;
};

static bool run_seed(uint64_t seed, unsigned rcv, struct outcome *out, bool verbose)
{
	struct run *u = malloc(sizeof(*u));
	int before = check_failures;

	if (!u) {
		FAIL("out of memory");
		return false;
	}
	if (setup(u, seed, rcv) || post_all(u))
		goto out;
	/* A little loss, reordering and failed reads: the races come on top
	 * (drawn after the burst's ops, so a seed's ops do not depend on
	 * them). */
	struct pair_faults f = { .delay_ns = 1000, .jitter_ns = 500 };
	f.loss = (double)rnd(u, 301) / 10000.0;
	f.reorder = (double)rnd(u, 501) / 10000.0;
	f.reorder_ns = 5000;
	f.pull_fail = (double)rnd(u, 201) / 10000.0;
	pair_set_all_faults(u->h.pair, &f);
	/* A 10 Gb/s link each way, so the burst (about 0.7 MB) stays on the
	 * wire for some hundreds of microseconds for the races to hit. */
	struct pair_queue q = { .rate_bps = 10000000000ull, .kmin_bytes = 1ull << 40, .kmax_bytes = 1ull << 41 };
	pair_set_queue(u->h.pair, 0, &q);
	pair_set_queue(u->h.pair, 1, &q);
	/* A quarter of the seeds run clean; the rest race while the burst
	 * is on the link. */
	u->nev = rnd(u, 4) == 0 ? 0 : 1 + (unsigned)rnd(u, 2);
	for (unsigned e = 0; e < u->nev; e++) {
		u->ev[e].kind = (enum race)rnd(u, RACE_KINDS);
		u->ev[e].at = pair_now(u->h.pair) + rnd(u, 600 * HT_US);
		u->ev[e].mr = (unsigned)rnd(u, NMR);
	}
	u->start = pair_now(u->h.pair);
	uint64_t end = u->start + RUN_NS;
	while (u->completed < NOPS && pair_now(u->h.pair) < end) {
		for (unsigned e = 0; e < u->nev; e++)
			if (!u->ev[e].fired && pair_now(u->h.pair) >= u->ev[e].at)
				fire(u, &u->ev[e]);
		pair_run_for(u->h.pair, STEP_NS);
		poll_sender(u);
	}
	pair_run_for(u->h.pair, 10 * HT_MS);       /* nothing more may come */
	poll_sender(u);
	check_recv(u);
	check_statuses(u);
	check_memory(u);
	const struct pair_stats *ps = pair_stats(u->h.pair);
	out->trace = pair_trace_hash(u->h.pair);
	out->now = pair_now(u->h.pair);
	out->messages = (unsigned)ps->messages;
	out->pull_failures = (unsigned)ps->pull_failures;
	out->put_off = (unsigned)ps->pulls_put_off;
	out->put_off_failures = (unsigned)ps->put_off_failures;
	out->ok_ops = 0;
	for (unsigned i = 0; i < NOPS; i++)
		out->ok_ops += u->op[i].status == IBV_WC_SUCCESS;
	if (verbose || check_failures != before) {
		printf("  [%s] races:", check_case);
		for (unsigned e = 0; e < u->nev; e++)
			printf(" %s@%lluus", race_names[u->ev[e].kind], (unsigned long long)((u->ev[e].at - u->start) / HT_US));
		printf("%s; %u of %u WRs succeeded; %llu message packets, %llu reads, %llu failed\n",
		       u->nev ? "" : " none", out->ok_ops, NOPS, (unsigned long long)ps->messages,
		       (unsigned long long)ps->pulls, (unsigned long long)ps->pull_failures);
	}
out:
	teardown(u);
	free(u);
	return check_failures == before;
}

static unsigned messages, ok, pull_failures, with_errors, put_off, put_off_failures;

/* Variant 0 sends to node 1 (it reads at once), variant 1 to node 0 (it
 * puts reads off: pair.c). */
static bool run_one(void *ctx, uint64_t seed, unsigned variant, bool first, bool verbose, struct ht_replay *r)
{
	(void)ctx;
	struct outcome o = { 0 };
	bool good = run_seed(seed, 1 - variant, &o, verbose);
	r->trace = o.trace;
	r->now = o.now;
	if (first) {
		messages += o.messages;
		ok += o.ok_ops;
		pull_failures += o.pull_failures;
		with_errors += o.ok_ops < NOPS;
		put_off += o.put_off;
		put_off_failures += o.put_off_failures;
	}
	return good;
}

int main(int argc, char **argv)
{
	static const char *const to[] = { "to node 1", "to node 0" };
	size_t n;
	int failed = ht_replay_seeds(argc, argv, 40, 2, to, run_one, NULL, &n);
	printf("%zu seeds each way: %u message packets, %u WRs succeeded, %u failed reads; %u reads put off, %u of them "
	       "failed; %u runs ended in an error\n",
	       n, messages, ok, pull_failures, put_off, put_off_failures, with_errors);
	/* The races must have happened, both ways, or the checks above saw
	 * nothing. */
	if (n >= 20 && (!messages || !with_errors || with_errors == 2 * n || !put_off_failures)) {
		printf("FAIL: the seeds did not exercise both clean runs and races, both ways\n");
		failed++;
	}
	printf("%s: %zu seeds, %d failed\n", failed ? "FAIL" : "PASS", n, failed);
	return failed ? 1 : 0;
}
