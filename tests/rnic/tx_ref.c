/*
 * tx_ref.c — the rnic's two send paths, over the pair link.  A port that
 * sets rnic_io.tx_payload_ref gets packets whose payload stays where it
 * lies (rnic_tx.payload: an SGE's MR range, the WQE's inline copy, a READ
 * response's MR range) and only the headers built; otherwise, and for a
 * payload that spans SGEs, the rnic copies the payload into the packet.
 * The pair gives even nodes payloads by reference and odd nodes copies,
 * so here node 0 sends by reference and node 1 copies.
 *
 * Checked, with and without loss (retransmissions build the packets again
 * from the MR): WRITEs from one SGE, from three SGEs whose packets partly
 * span them, inline; ATOMIC WRITE (its 8 bytes kept apart from the inline
 * copy, in compare_add; answered by an ACK, or as the kernel's rxe answers
 * it, by a zero-length READ response); READ responses from each side;
 * every byte arrives,
 * and the pair's payload_by_ref count moves exactly when node 0 sends
 * payload (never for node 1's packets, nor for a READ request).
 */
#include <string.h>

#include "harness.h"

#define MEM 65536

static uint8_t mem0[MEM], mem1[MEM];

struct env {
	struct ht h;
	struct rnic_mr *mr0, *mr1;
};

static void fill(uint8_t *p, size_t n, unsigned salt)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(salt * 131u + i * 7u + (i >> 8));
}

static uint64_t by_ref(const struct env *e)
{
	return pair_stats(e->h.pair)->payload_by_ref;
}

/* Post one signaled WR on `node` and wait for its successful completion. */
static bool run_wr(struct env *e, int node, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	int rc = rnic_post_send(e->h.side[node].qp, wr, &bad, pair_now(e->h.pair));
	REQUIRE_RET(rc == 0, false, "post: %d", rc);
	REQUIRE_RET(ht_wait_wc(&e->h, e->h.side[node].scq, &wc, 5000 * HT_MS), false, "no completion");
	REQUIRE_RET(wc.status == IBV_WC_SUCCESS, false, "status %s", ht_wc_status_str(wc.status));
	return true;
}

/* RDMA WRITE from `node`'s memory (nsge pieces at the given offsets and
 * lengths) to the peer's memory at `dst_off`; checks the bytes. */
static void write_case(struct env *e, int node, const uint32_t *off, const uint32_t *len, int nsge,
		       uint32_t dst_off, bool inl)
{
	uint8_t *src = node ? mem1 : mem0, *dst = node ? mem0 : mem1;
	struct rnic_mr *lmr = node ? e->mr1 : e->mr0, *rmr = node ? e->mr0 : e->mr1;
	struct ibv_sge sge[3];
	struct ibv_send_wr wr;
	uint32_t total = 0;

	memset(&wr, 0, sizeof(wr));
	for (int i = 0; i < nsge; i++) {
		fill(src + off[i], len[i], (unsigned)(i + 3 * node + 1));
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)(src + off[i]), .length = len[i],
					   .lkey = rnic_mr_lkey(lmr) };
		total += len[i];
	}
	memset(dst + dst_off, 0, total);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.send_flags = inl ? IBV_SEND_INLINE : 0;
	wr.wr.rdma.remote_addr = (uintptr_t)(dst + dst_off);
	wr.wr.rdma.rkey = rnic_mr_rkey(rmr);
	if (!run_wr(e, node, &wr))
		return;
	/* The WRITE's completion follows the ACK of its last packet, so
	 * every byte is in place. */
	for (int i = 0, at = 0; i < nsge; at += (int)len[i], i++)
		CHECK(!memcmp(dst + dst_off + at, src + off[i], len[i]), "WRITE from node %d: SGE %d differs", node, i);
}

/* ATOMIC WRITE of 8 bytes from `node` to the peer's memory at dst_off
 * (8-aligned); the bytes come from the WR, copied at post. */
static void atomic_write_case(struct env *e, int node, uint32_t dst_off)
{
	uint8_t *dst = node ? mem0 : mem1;
	struct rnic_mr *rmr = node ? e->mr0 : e->mr1;
	uint8_t val[8];
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	fill(val, sizeof(val), 29u + (unsigned)node);
	memset(dst + dst_off - 8, 0xee, 24);
	memset(&wr, 0, sizeof(wr));
	sge = (struct ibv_sge){ .addr = (uintptr_t)val, .length = sizeof(val) };
	wr.opcode = IBV_WR_ATOMIC_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	wr.wr.rdma.remote_addr = (uintptr_t)(dst + dst_off);
	wr.wr.rdma.rkey = rnic_mr_rkey(rmr);
	if (!run_wr(e, node, &wr))
		return;
	CHECK(!memcmp(dst + dst_off, val, 8), "ATOMIC WRITE from node %d: the 8 bytes differ", node);
	CHECK(dst[dst_off - 1] == 0xee && dst[dst_off + 8] == 0xee, "ATOMIC WRITE from node %d: not exactly 8 bytes",
	      node);
}

/* The kernel's rxe (6.2 on) answers an ATOMIC WRITE with a zero-length
 * RDMA READ response, not an ACK: the tap turns the responder's ACK into
 * one (the same length: BTH, AETH, ICRC), and the WRITE must complete. */
static int rxe_style_from = -1;

static bool ack_as_read_response(void *arg, struct pair_packet *pkt)
{
	(void)arg;
	if ((int)pkt->from == rxe_style_from && pkt->ib_len >= 1 && pkt->ib[0] == (WIRE_TR_RC | WIRE_OP_ACK))
		pkt->ib[0] = WIRE_TR_RC | WIRE_OP_READ_RESP_ONLY;
	return true;
}

static void atomic_write_rxe_answer(struct env *e, int node)
{
	pair_set_tap(e->h.pair, ack_as_read_response, NULL);
	rxe_style_from = !node;
	atomic_write_case(e, node, 30720);
	rxe_style_from = -1;
	pair_set_tap(e->h.pair, NULL, NULL);
}

/* `node` READs len bytes of the peer's memory at src_off into its own at
 * dst_off; the peer sends the responses. */
static void read_case(struct env *e, int node, uint32_t src_off, uint32_t dst_off, uint32_t len)
{
	uint8_t *remote = node ? mem0 : mem1, *local = node ? mem1 : mem0;
	struct rnic_mr *lmr = node ? e->mr1 : e->mr0, *rmr = node ? e->mr0 : e->mr1;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	fill(remote + src_off, len, 17u + (unsigned)node);
	memset(local + dst_off, 0, len);
	wr_send_1(&wr, &sge, IBV_WR_RDMA_READ, 0, (uintptr_t)(local + dst_off), len, rnic_mr_lkey(lmr));
	wr_remote(&wr, (uintptr_t)(remote + src_off), rnic_mr_rkey(rmr));
	if (run_wr(e, node, &wr))
		CHECK(!memcmp(local + dst_off, remote + src_off, len), "READ by node %d: data differs", node);
}

static void run_seed(uint64_t seed)
{
	struct env e;
	struct ht_opts o;

	memset(&e, 0, sizeof(e));
	ht_default_opts(&o, seed);
	if (ht_setup(&e.h, &o)) {
		ht_teardown(&e.h);
		return;
	}
	e.mr0 = ht_reg(&e.h.side[0], mem0, MEM, HT_ALL_ACCESS);
	e.mr1 = ht_reg(&e.h.side[1], mem1, MEM, HT_ALL_ACCESS);
	if (!e.mr0 || !e.mr1) {
		FAIL("MR registration failed");
		if (e.mr0)
			rnic_mr_dereg(e.mr0);
		if (e.mr1)
			rnic_mr_dereg(e.mr1);
		ht_teardown(&e.h);
		return;
	}
	if (seed > 1) {
		/* Loss and reordering: retransmissions rebuild packets from
		 * the MRs, by reference again on node 0. */
		struct pair_faults f = { .loss = 0.05, .reorder = 0.05, .reorder_ns = 20000, .delay_ns = 1000 };
		pair_set_all_faults(e.h.pair, &f);
	}

	/* One SGE, 5 packets at MTU 1024: all by reference. */
	uint64_t r0 = by_ref(&e);
	write_case(&e, 0, (const uint32_t[]){ 0 }, (const uint32_t[]){ 5000 }, 1, 0, false);
	CHECK(by_ref(&e) - r0 >= 5, "%llu packets by reference for a 5-packet WRITE",
	      (unsigned long long)(by_ref(&e) - r0));

	/* Three SGEs (700 | 1500 | 2800): packets 0 and 2 span two SGEs
	 * and are copied, 1, 3 and 4 lie in one and go by reference. */
	r0 = by_ref(&e);
	write_case(&e, 0, (const uint32_t[]){ 8192, 12288, 16384 }, (const uint32_t[]){ 700, 1500, 2800 }, 3,
		   8192, false);
	CHECK(by_ref(&e) - r0 >= 3, "%llu of 5 packets by reference, expected 3 (more with loss)",
	      (unsigned long long)(by_ref(&e) - r0));
	if (seed == 1)
		CHECK_EQ(by_ref(&e) - r0, 3, "packets by reference (three SGEs, no loss)");

	/* Inline: the payload leaves from the WQE's copy. */
	r0 = by_ref(&e);
	write_case(&e, 0, (const uint32_t[]){ 24576 }, (const uint32_t[]){ 40 }, 1, 24576, true);
	CHECK(by_ref(&e) - r0 >= 1, "inline WRITE not sent by reference");

	/* ATOMIC WRITE: by reference from node 0, copied by node 1; the same
	 * bytes either way. */
	r0 = by_ref(&e);
	atomic_write_case(&e, 0, 28672);
	CHECK(by_ref(&e) - r0 >= 1, "ATOMIC WRITE not sent by reference");
	atomic_write_case(&e, 1, 28672);
	/* ... answered as the kernel's rxe answers it. */
	atomic_write_rxe_answer(&e, 0);
	atomic_write_rxe_answer(&e, 1);

	/* Node 1 READs from node 0: node 0's responses come from its MR by
	 * reference. */
	r0 = by_ref(&e);
	read_case(&e, 1, 32768, 32768, 6000);
	CHECK(by_ref(&e) - r0 >= 6, "%llu READ responses by reference, expected 6",
	      (unsigned long long)(by_ref(&e) - r0));

	/* Node 1 copies: its WRITE and its READ responses (to node 0's READ
	 * request, which has no payload) never go by reference. */
	r0 = by_ref(&e);
	write_case(&e, 1, (const uint32_t[]){ 40960 }, (const uint32_t[]){ 3000 }, 1, 40960, false);
	read_case(&e, 0, 49152, 49152, 6000);
	CHECK_EQ(by_ref(&e) - r0, 0, "packets by reference from the copying node");

	rnic_mr_dereg(e.mr0);
	rnic_mr_dereg(e.mr1);
	ht_teardown(&e.h);
}

int main(int argc, char **argv)
{
	static const uint64_t defaults[] = { 1, 2, 3, 4, 5, 6 };
	uint64_t seeds[256];
	size_t n = ht_seeds_from_args(argc, argv, seeds, 256, defaults, sizeof(defaults) / sizeof(defaults[0]));
	int failed = 0;

	for (size_t i = 0; i < n; i++) {
		check_begin("tx by reference, seed %llu", (unsigned long long)seeds[i]);
		check_seed(seeds[i]);
		run_seed(seeds[i]);
		if (check_end()) {
			printf("  replay: SOFTRNIC_SEED=%llu %s\n", (unsigned long long)seeds[i], argv[0]);
			failed++;
		}
	}
	check_seeded = false;
	printf("%s: %zu seeds, %d failed\n", failed ? "FAIL" : "PASS", n, failed);
	check_exit("tx_ref");
	return failed ? 1 : 0;
}
