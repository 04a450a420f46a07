/*
 * put_off_reads.c — message-path reads put off to the end of a batch
 * (src/rnic/pull.c), hunted for the ways they could show a WRITE's effect
 * before its payload is in.
 *
 * Node 1 posts a burst of whole messages to node 0, the pair's even node,
 * which lets its rnic put the reads of RDMA WRITE and SEND payloads off
 * (rnic_io.pull_batch), a SEND's receive completion held with its read.  The link has a fixed delay and no rate, so the
 * burst arrives in one instant and node 0 receives it as one batch, as the
 * runtime does what one read of its ring returned.  The burst mixes
 * WRITEs (each to a slot of its own), WRITEs with immediate data, SENDs,
 * and READs of a slot an earlier WRITE of the burst filled; reads of the
 * sender's memory fail at random (pair_faults.pull_fail), and in a quarter
 * of the seeds one WRITE carries a wrong rkey.  What must hold:
 *   - the WRs complete in order: all successfully, or, with the wrong
 *     rkey, successes up to it, a remote access error for it, flushes
 *     after it (or, if the response of a READ before it was lost and the
 *     READ's retry found the responder in error, retries exceeded for
 *     that READ and flushes after it: first_failed);
 *   - a READ returns what the WRITE before it wrote (a READ after a WRITE
 *     on one QP sees it, IBTA 9.5), so the put-off read was done first;
 *   - every slot of a successful WRITE holds its bytes, every other slot
 *     and every guard byte is untouched; each receive holds its SEND's
 *     bytes, each WRITE with immediate data completes a receive with its
 *     immediate;
 *   - each receive completes in order, once, with its SEND's bytes (a
 *     SEND whose read failed gives its WQE back for the resend);
 *   - over all seeds, reads were put off and joined (batches of more than
 *     one), SENDs' among them, some failed, and WRITEs after a failed one
 *     were dropped and sent again (the rewind);
 *   - the run replays exactly from its seed.
 *
 * The second variant turns it around: node 0 is the requester, and its
 * completer puts off the reads of READ responses (the burst is mostly
 * READs of slots of node 1's memory, some unsignaled, with WRITEs and
 * SENDs among them, and the wrong rkey on a READ).  The READs' bytes
 * must be those of their slots and nothing past them; completions come
 * in order, each once (an unsignaled READ's none, unless it failed); a
 * READ whose read failed is asked again; over all seeds READ responses'
 * reads were put off and some failed.
 *
 * Usage: rnic_put_off_reads [--seed N | --seeds A-B] [-v]
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NOPS 40u
#define SLOT (24u << 10)        /* every message is more than a path MTU */
#define GUARD 4096u
#define TGT_LEN ((size_t)NOPS * SLOT)
#define TGT_IOVA 0x40000000ull
#define NRECV 16u
#define RUN_NS (2000 * HT_MS)

enum op_kind { OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_READ };

struct op {
	enum op_kind kind;
	uint32_t len;
	unsigned slot;          /* WRITE: its target slot; READ: the slot read */
	unsigned src;           /* READ: the op whose bytes it must see */
	int status;
	bool done;
	bool unsignaled;
};

struct run {
	struct ht h;
	uint64_t seed;
	unsigned req, tgt_side; /* the requester's node and the target's */
	uint8_t *tgt;           /* node 0: GUARD | NOPS slots | GUARD */
	uint8_t *tgt_orig;
	struct rnic_mr *tmr;
	uint8_t *recv;          /* node 0: receive buffers */
	struct rnic_mr *rmr;
	uint8_t *src;           /* node 1: one SLOT per op (READs land here) */
	struct rnic_mr *smr;
	struct op op[NOPS];
	unsigned bad;           /* the op with the wrong rkey, or NOPS */
	unsigned lost_reads;    /* check_outcome: a READ's response lost before it */
	unsigned completed;
	unsigned last_done;     /* the newest WR completed, or NOPS */
	unsigned nrecv_wc;
	unsigned send_order[NOPS];      /* SENDs and WRITE_IMMs, in order */
	unsigned nsend;
};

static uint64_t rnd(struct run *u, uint64_t n)
{
	return n ? pair_random_below(u->h.pair, n) : 0;
}

static uint8_t pattern(uint64_t seed, unsigned who, size_t i)
{
	return (uint8_t)((i * 131u) ^ (who * 29u) ^ (seed * 7u) ^ (i >> 9));
}

static uint8_t *slot_at(struct run *u, unsigned s)
{
	return u->tgt + GUARD + (size_t)s * SLOT;
}

static int setup(struct run *u, uint64_t seed, unsigned variant)
{
	struct ht_opts o;

	memset(u, 0, sizeof(*u));
	u->seed = seed;
	u->req = variant == 0 ? 1 : 0;
	u->tgt_side = 1 - u->req;
	u->last_done = NOPS;
	ht_default_opts(&o, seed);
	o.message_path[0] = o.message_path[1] = true;
	o.go_back_n[0] = o.go_back_n[1] = seed % 2 == 0;
	o.timeout = 8;          /* ~1 ms: a lost tail is resent in simulated ms */
	if (ht_setup(&u->h, &o))
		return -1;
	u->tgt = malloc(GUARD + TGT_LEN + GUARD);
	u->tgt_orig = malloc(GUARD + TGT_LEN + GUARD);
	u->recv = calloc(NRECV, SLOT);
	u->src = malloc(TGT_LEN);
	REQUIRE_RET(u->tgt && u->tgt_orig && u->recv && u->src, -1, "out of memory");
	for (size_t i = 0; i < GUARD + TGT_LEN + GUARD; i++)
		u->tgt[i] = pattern(seed, 1, i);
	memcpy(u->tgt_orig, u->tgt, GUARD + TGT_LEN + GUARD);
	for (size_t i = 0; i < TGT_LEN; i++)
		u->src[i] = pattern(seed, 2, i);
	u->tmr = rnic_mr_reg(u->h.side[u->tgt_side].pd, u->tgt + GUARD, TGT_LEN, TGT_IOVA,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	u->rmr = ht_reg(&u->h.side[u->tgt_side], u->recv, (size_t)NRECV * SLOT, IBV_ACCESS_LOCAL_WRITE);
	u->smr = ht_reg(&u->h.side[u->req], u->src, TGT_LEN, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE_RET(u->tmr && u->rmr && u->smr, -1, "mr_reg: %s", strerror(errno));
	for (unsigned r = 0; r < NRECV; r++) {
		struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)(u->recv + (size_t)r * SLOT), .length = SLOT,
				       .lkey = rnic_mr_lkey(u->rmr) };
		struct ibv_recv_wr wr = { .wr_id = r, .sg_list = &sge, .num_sge = 1 }, *bad;
		REQUIRE_RET(rnic_post_recv(u->h.side[u->tgt_side].qp, &wr, &bad) == 0, -1, "post_recv");
	}
	return 0;
}

static void teardown(struct run *u)
{
	if (u->tmr)
		rnic_mr_dereg(u->tmr);
	if (u->rmr)
		rnic_mr_dereg(u->rmr);
	if (u->smr)
		rnic_mr_dereg(u->smr);
	ht_teardown(&u->h);
	free(u->tgt);
	free(u->tgt_orig);
	free(u->recv);
	free(u->src);
}

/* The whole burst at one instant: one batch at node 0 (the requests, or
 * in the second variant the responses). */
static int post_burst(struct run *u)
{
	bool reads = u->req == 0;
	unsigned written[NOPS], nwritten = 0, recvs = 0;
	uint64_t now = pair_now(u->h.pair);

	u->bad = rnd(u, 4) == 0 ? 1 + (unsigned)rnd(u, NOPS - 2) : NOPS;
	for (unsigned i = 0; i < NOPS; i++) {
		struct op *o = &u->op[i];
		uint64_t k = rnd(u, 10);
		struct ibv_send_wr wr;

		if (reads)
			o->kind = k < 6 ? OP_READ : k < 8 ? OP_WRITE : k < 9 ? OP_WRITE_IMM : OP_SEND;
		else
			o->kind = k < 6 ? OP_WRITE : k < 7 ? OP_WRITE_IMM : k < 8 ? OP_SEND : OP_READ;
		if ((o->kind == OP_READ && !nwritten && !reads) ||
		    ((o->kind == OP_SEND || o->kind == OP_WRITE_IMM) && recvs == NRECV))
			o->kind = OP_WRITE;
		if (i == u->bad)
			o->kind = reads ? OP_READ : OP_WRITE;
		/* Some READs unsignaled, never the last WR nor the failing one. */
		o->unsignaled = reads && o->kind == OP_READ && i % 4 == 1 && i != u->bad && i != NOPS - 1;
		o->len = RNIC_PKT_MAX_PAYLOAD + 1 + (uint32_t)rnd(u, SLOT - RNIC_PKT_MAX_PAYLOAD - 1);
		o->slot = i;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.send_flags = o->unsignaled ? 0 : IBV_SEND_SIGNALED;
		struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)(u->src + (size_t)i * SLOT), .length = o->len,
				       .lkey = rnic_mr_lkey(u->smr) };
		switch (o->kind) {
		case OP_WRITE:
		case OP_WRITE_IMM:
			wr.opcode = o->kind == OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htobe32(0x1000 + i);
			wr.wr.rdma.remote_addr = TGT_IOVA + (uint64_t)i * SLOT;
			wr.wr.rdma.rkey = rnic_mr_rkey(u->tmr) ^ (i == u->bad ? 0x100u : 0u);
			if (o->kind == OP_WRITE_IMM)
				u->send_order[u->nsend++] = i, recvs++;
			else if (i != u->bad)
				written[nwritten++] = i;
			break;
		case OP_SEND:
			wr.opcode = IBV_WR_SEND;
			u->send_order[u->nsend++] = i;
			recvs++;
			break;
		case OP_READ:
			/* Into its own source slot, from a slot written before;
			 * or, reading, from its own slot as it was. */
			o->src = reads ? i : written[rnd(u, nwritten)];
			if (!reads)
				o->len = u->op[o->src].len;
			sge.length = o->len;
			memset(u->src + (size_t)i * SLOT, 0, SLOT);
			wr.opcode = IBV_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = TGT_IOVA + (uint64_t)o->src * SLOT;
			wr.wr.rdma.rkey = rnic_mr_rkey(u->tmr) ^ (i == u->bad ? 0x100u : 0u);
			break;
		}
		wr.sg_list = &sge;
		wr.num_sge = 1;
		struct ibv_send_wr *bad;
		REQUIRE_RET(rnic_post_send(u->h.side[u->req].qp, &wr, &bad, now) == 0, -1, "post_send %u", i);
	}
	return 0;
}

static void poll_sender(struct run *u)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = rnic_cq_poll(u->h.side[u->req].scq, 16, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			unsigned i = (unsigned)wc[k].wr_id;
			unsigned next = u->last_done == NOPS ? 0 : u->last_done + 1;

			/* In order: only unsignaled WRs, which succeeded, may
			 * be skipped. */
			for (unsigned j = next; j < i && j < NOPS; j++)
				CHECK(u->op[j].unsignaled, "completion of WR %u, expected WR %u (in order)", i, j);
			CHECK(i >= next, "completion of WR %u after WR %u (in order, once)", i, u->last_done);
			if (i >= NOPS || i < next || u->op[i].done)
				continue;
			u->op[i].done = true;
			u->op[i].status = wc[k].status;
			u->last_done = i;
			u->completed++;
		}
	}
}

static void check_receives(struct run *u)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = rnic_cq_poll(u->h.side[u->tgt_side].rcq, 16, wc)) > 0) {
		for (int k = 0; k < n; k++, u->nrecv_wc++) {
			if (wc[k].status != IBV_WC_SUCCESS)
				continue;       /* flushed after the wrong rkey */
			REQUIRE_RET(u->nrecv_wc < u->nsend, , "more receive completions than SENDs");
			unsigned i = u->send_order[u->nrecv_wc];
			const struct op *o = &u->op[i];
			CHECK(wc[k].wr_id == u->nrecv_wc, "receive %u completed WQE %llu", u->nrecv_wc,
			      (unsigned long long)wc[k].wr_id);
			CHECK_EQ(wc[k].byte_len, o->len, "receive byte_len");
			if (o->kind == OP_WRITE_IMM) {
				CHECK(wc[k].opcode == IBV_WC_RECV_RDMA_WITH_IMM, "op %u: opcode %d", i, wc[k].opcode);
				CHECK_EQ(be32toh(wc[k].imm_data), 0x1000 + i, "immediate data");
			} else {
				CHECK(memcmp(u->recv + wc[k].wr_id * SLOT, u->src + (size_t)i * SLOT, o->len) == 0,
				      "op %u: received bytes differ from the SEND's", i);
			}
		}
	}
}

/* The first WR that did not succeed: the one with the wrong rkey, with a
 * remote access error.  Or a READ before it whose response was lost (the
 * sender's read of the responder's memory failed) and whose retry found
 * the responder already in the error state the wrong rkey put it in:
 * retries exceeded, as a later NAK does not complete a READ whose
 * response is missing.  Then the WRITEs between that READ and the wrong
 * rkey ran at the responder and are flushed at the sender, so their
 * slots may hold their bytes. */
static unsigned first_failed(const struct run *u, bool *lost_read)
{
	*lost_read = false;
	for (unsigned i = 0; i < u->bad && i < NOPS; i++) {
		const struct op *o = &u->op[i];

		if (!o->done || o->status == IBV_WC_SUCCESS)
			continue;
		*lost_read = u->bad < NOPS && o->kind == OP_READ && o->status == IBV_WC_RETRY_EXC_ERR &&
			     rnic_counters(u->h.side[u->req].r)->rx_drop_msg_pull > 0;
		return i;
	}
	return u->bad;
}

static void check_outcome(struct run *u)
{
	bool lost_read;
	unsigned first = first_failed(u, &lost_read);

	if (lost_read)
		u->lost_reads++;
	for (unsigned i = 0; i < NOPS; i++) {
		struct op *o = &u->op[i];

		/* An unsignaled READ before the first failure succeeded (a
		 * later WR's completion says so); one after it is flushed and
		 * completes like any other. */
		if (o->unsignaled && !o->done && i < first && u->last_done != NOPS && u->last_done > i) {
			o->done = true;
			o->status = IBV_WC_SUCCESS;
		}
		int want = i < first    ? IBV_WC_SUCCESS
			   : i == first ? (lost_read ? IBV_WC_RETRY_EXC_ERR : IBV_WC_REM_ACCESS_ERR)
					: IBV_WC_WR_FLUSH_ERR;
		bool wrote = (o->kind == OP_WRITE || o->kind == OP_WRITE_IMM) && o->status == IBV_WC_SUCCESS;
		/* Flushed at the sender, executed at the responder (above). */
		if (lost_read && i > first && i < u->bad && (o->kind == OP_WRITE || o->kind == OP_WRITE_IMM) &&
		    memcmp(slot_at(u, i), u->src + (size_t)i * SLOT, o->len) == 0)
			wrote = true;

		CHECK(o->done, "WR %u never completed", i);
		CHECK(o->status == want, "WR %u (%s): %s, expected %s", i,
		      o->kind == OP_READ ? "READ" : o->kind == OP_SEND ? "SEND" : "WRITE", ht_wc_status_str(o->status),
		      ht_wc_status_str(want));
		if (o->kind == OP_READ && o->status == IBV_WC_SUCCESS && u->req == 1)
			CHECK(memcmp(u->src + (size_t)i * SLOT, u->src + (size_t)o->src * SLOT, o->len) == 0,
			      "READ %u did not see WRITE %u before it", i, o->src);
		if (o->kind == OP_READ && o->status == IBV_WC_SUCCESS && u->req == 0)
			CHECK(memcmp(u->src + (size_t)i * SLOT, u->tgt_orig + GUARD + (size_t)i * SLOT, o->len) == 0,
			      "READ %u: its bytes are not those of its slot", i);
		if (o->kind == OP_READ) {
			static const uint8_t zero[SLOT];
			CHECK(memcmp(u->src + (size_t)i * SLOT + o->len, zero, SLOT - o->len) == 0,
			      "READ %u: written past its length", i);
		}
		const uint8_t *want_bytes = wrote ? u->src + (size_t)i * SLOT : u->tgt_orig + GUARD + (size_t)i * SLOT;
		uint32_t n = wrote ? o->len : SLOT;
		CHECK(memcmp(slot_at(u, i), want_bytes, n) == 0, "slot %u: %s", i,
		      wrote ? "the WRITE's bytes are not there" : "written, but no WRITE to it succeeded");
		CHECK(memcmp(slot_at(u, i) + n, u->tgt_orig + GUARD + (size_t)i * SLOT + n, SLOT - n) == 0,
		      "slot %u: written past the WRITE", i);
	}
	CHECK(memcmp(u->tgt, u->tgt_orig, GUARD) == 0 &&
	      memcmp(u->tgt + GUARD + TGT_LEN, u->tgt_orig + GUARD + TGT_LEN, GUARD) == 0, "guard bytes written");
}

struct outcome {
	uint64_t trace, now;
	uint64_t put_off, batches, failures, dropped_after, sends_put_off, lost_reads;
	uint64_t reads_put_off, reads_failed;
};

static bool run_seed(uint64_t seed, unsigned variant, struct outcome *out, bool verbose)
{
	struct run *u = malloc(sizeof(*u));
	int before = check_failures;

	if (!u) {
		FAIL("out of memory");
		return false;
	}
	if (setup(u, seed, variant))
		goto out;
	/* One delay, no jitter, no rate: the burst arrives at one instant. */
	struct pair_faults f = { .delay_ns = 2000 };
	f.pull_fail = (double)(seed % 3) * 0.07;
	pair_set_all_faults(u->h.pair, &f);
	if (post_burst(u))
		goto out;
	uint64_t end = pair_now(u->h.pair) + RUN_NS;
	while (u->last_done != NOPS - 1 && pair_now(u->h.pair) < end) {
		pair_run_for(u->h.pair, 10 * HT_US);
		poll_sender(u);
	}
	pair_run_for(u->h.pair, 10 * HT_MS);       /* nothing more may come */
	poll_sender(u);
	check_receives(u);
	check_outcome(u);
	const struct pair_stats *ps = pair_stats(u->h.pair);
	const struct rnic_counters *c = rnic_counters(u->h.side[0].r);
	out->trace = pair_trace_hash(u->h.pair);
	out->now = pair_now(u->h.pair);
	out->put_off = ps->pulls_put_off;
	out->batches = ps->pull_batches;
	out->failures = ps->put_off_failures;
	out->dropped_after = c->rx_drop_out_of_window;
	out->sends_put_off = c->rx_msg_sends_put_off;
	out->reads_put_off = c->rx_msg_reads_put_off;
	out->reads_failed = u->req == 0 ? c->rx_drop_msg_pull : 0;
	out->lost_reads = u->lost_reads;
	if (verbose || check_failures != before)
		printf("  [%s] %s, wrong rkey at %u; %llu reads put off in %llu batches, %llu failed, %llu dropped "
		       "after a failed one; %u of %u WRs done\n",
		       check_case, seed % 2 == 0 ? "go-back-N" : "selective", u->bad, (unsigned long long)out->put_off,
		       (unsigned long long)out->batches, (unsigned long long)out->failures,
		       (unsigned long long)out->dropped_after, u->completed, NOPS);
out:
	teardown(u);
	free(u);
	return check_failures == before;
}

static struct outcome sum;

static bool run_one(void *ctx, uint64_t seed, unsigned variant, bool first, bool verbose, struct ht_replay *r)
{
	(void)ctx;
	struct outcome o = { 0 };
	bool good = run_seed(seed, variant, &o, verbose);
	r->trace = o.trace;
	r->now = o.now;
	if (first) {
		sum.put_off += o.put_off;
		sum.batches += o.batches;
		sum.failures += o.failures;
		sum.dropped_after += o.dropped_after;
		sum.sends_put_off += o.sends_put_off;
		sum.lost_reads += o.lost_reads;
		sum.reads_put_off += o.reads_put_off;
		sum.reads_failed += o.reads_failed;
	}
	return good;
}

int main(int argc, char **argv)
{
	size_t n;
	static const char *const variants[] = { "node 1 requests", "node 0 requests" };
	int failed = ht_replay_seeds(argc, argv, 60, 2, variants, run_one, NULL, &n);
	printf("%zu seeds: %llu reads put off (%llu of SENDs) in %llu batches, %llu failed, %llu WRITEs dropped "
	       "after a failed one; %llu READ responses lost before the wrong rkey\n",
	       n, (unsigned long long)sum.put_off, (unsigned long long)sum.sends_put_off,
	       (unsigned long long)sum.batches, (unsigned long long)sum.failures, (unsigned long long)sum.dropped_after,
	       (unsigned long long)sum.lost_reads);
	/* The checks above saw something only if reads were joined, SENDs'
	 * among them, failed, and rewound the WRITEs and SENDs after them. */
	printf("%llu READ responses' reads put off, %llu failed and asked again\n",
	       (unsigned long long)sum.reads_put_off, (unsigned long long)sum.reads_failed);
	if (n >= 20 && (sum.put_off < 2 * sum.batches || !sum.sends_put_off || !sum.failures || !sum.dropped_after)) {
		printf("FAIL: the seeds did not join, fail and rewind put-off reads of WRITEs and SENDs\n");
		failed++;
	}
	if (n >= 20 && (!sum.reads_put_off || !sum.reads_failed)) {
		printf("FAIL: the seeds did not put off and fail READ responses' reads\n");
		failed++;
	}
	printf("%s: %zu seeds, %d failed\n", failed ? "FAIL" : "PASS", n, failed);
	return failed ? 1 : 0;
}
