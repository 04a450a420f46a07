/*
 * hostile.c — hostile packets fed straight into rnic_receive.
 *
 * Principle 4 of the design: every field of a packet is checked against the
 * spec and the local state before anything is written; a bad packet is
 * dropped or NAKed as the IBTA says, and counted.  Here node 1 (and node 0)
 * receive, between rounds of real traffic: random bytes, truncated copies of
 * real packets, well-formed packets for a QP that does not exist, with a bad
 * P_Key, a bad transport version, an opcode of another transport, PSNs far
 * ahead of and far behind the expected one, and responses nobody asked for.
 * After each group the connected QPs must still carry SEND / WRITE / READ
 * traffic byte-exactly (those packets could have come from anyone on the
 * network; they must not disturb the connection).
 *
 * Packets that the IBTA treats as errors of the connection itself (wrong
 * R_Key, opcode out of sequence, at the expected PSN) are indistinguishable
 * from the peer's own mistakes and may legitimately break the connection;
 * they run on fresh pairs and we check the NAK/drop counters and that no
 * memory or receive WQE was touched.
 *
 * Injected packets bypass the pair, so they carry no valid ICRC: the port
 * checks the ICRC, rnic_receive trusts it (rnic.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NRECV 64
#define BUF 8192u

struct env {
	struct ht h;
	/* node 1: receive slots and an RDMA target; node 0: local buffer */
	uint8_t *rbuf;
	struct rnic_mr *rmr;
	unsigned recv_posted, recv_done;
	uint8_t *tgt, *tgt_copy;
	struct rnic_mr *tmr;
	uint8_t *lbuf;
	struct rnic_mr *lmr;
	/* captured from the tap */
	uint32_t next_psn;              /* node 0's next request PSN */
	uint8_t send_pkt[WIRE_MAX_IB_PACKET];
	size_t send_len;
	uint8_t read_pkt[WIRE_MAX_IB_PACKET];
	size_t read_len;
	uint8_t write_first_pkt[WIRE_MAX_IB_PACKET];
	size_t write_first_len;
	unsigned round;
};

static bool tap(void *arg, struct pair_packet *pkt)
{
	struct env *e = arg;
	struct wire_ib ib;
	if (pkt->from != 0 || wire_decode_ib(pkt->ib, pkt->ib_len, &ib) != 0)
		return true;
	const struct wire_opcode_info *oi = wire_opcode_info(ib.bth.opcode);
	if (oi && (oi->flags & WIRE_F_REQUEST)) {
		uint32_t n = 1;
		/* A READ request covers one PSN per response packet. */
		if (oi->flags & WIRE_F_READ) {
			uint32_t mtu = 256u << (e->h.opts.mtu - IBV_MTU_256);
			n = ib.reth.dma_len ? (ib.reth.dma_len + mtu - 1) / mtu : 1;
		}
		e->next_psn = wire_psn_add(ib.bth.psn, n);
	}
	if (ib.bth.opcode == WIRE_OP_SEND_FIRST && !e->send_len) {
		memcpy(e->send_pkt, pkt->ib, pkt->ib_len);
		e->send_len = pkt->ib_len;
	}
	if (ib.bth.opcode == WIRE_OP_READ_REQUEST && !e->read_len) {
		memcpy(e->read_pkt, pkt->ib, pkt->ib_len);
		e->read_len = pkt->ib_len;
	}
	if (ib.bth.opcode == WIRE_OP_WRITE_FIRST && !e->write_first_len) {
		memcpy(e->write_first_pkt, pkt->ib, pkt->ib_len);
		e->write_first_len = pkt->ib_len;
	}
	return true;
}

static int env_setup(struct env *e, uint64_t seed)
{
	memset(e, 0, sizeof(*e));
	struct ht_opts o;
	ht_default_opts(&o, seed);
	o.timeout = 8;
	o.retry_cnt = 2;
	if (ht_setup(&e->h, &o))
		return -1;
	e->next_psn = o.psn[0];
	pair_set_tap(e->h.pair, tap, e);
	e->rbuf = calloc(NRECV, BUF);
	e->tgt = malloc(BUF);
	e->tgt_copy = malloc(BUF);
	e->lbuf = malloc(BUF);
	REQUIRE_RET(e->rbuf && e->tgt && e->tgt_copy && e->lbuf, -1, "out of memory");
	for (unsigned i = 0; i < BUF; i++)
		e->tgt[i] = (uint8_t)(i * 31 + 7);
	memcpy(e->tgt_copy, e->tgt, BUF);
	e->rmr = ht_reg(&e->h.side[1], e->rbuf, (size_t)NRECV * BUF, IBV_ACCESS_LOCAL_WRITE);
	e->tmr = ht_reg(&e->h.side[1], e->tgt, BUF, HT_ALL_ACCESS);
	e->lmr = ht_reg(&e->h.side[0], e->lbuf, BUF, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE_RET(e->rmr && e->tmr && e->lmr, -1, "mr_reg");
	return 0;
}

static void env_teardown(struct env *e)
{
	if (e->rmr)
		rnic_mr_dereg(e->rmr);
	if (e->tmr)
		rnic_mr_dereg(e->tmr);
	if (e->lmr)
		rnic_mr_dereg(e->lmr);
	ht_teardown(&e->h);
	free(e->rbuf);
	free(e->tgt);
	free(e->tgt_copy);
	free(e->lbuf);
}

static bool post_recv_slot(struct env *e)
{
	unsigned k = e->recv_posted;
	if (k >= NRECV) {
		FAIL("test ran out of receive slots");
		return false;
	}
	struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)(e->rbuf + (size_t)k * BUF), .length = BUF,
			       .lkey = rnic_mr_lkey(e->rmr) };
	struct ibv_recv_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = rnic_post_recv(e->h.side[1].qp, &wr, &bad);
	if (rc) {
		FAIL("post_recv: %s", strerror(rc));
		return false;
	}
	e->recv_posted++;
	return true;
}

static bool post(struct env *e, enum ibv_wr_opcode op, uint32_t loff, uint32_t len, uint32_t toff, uint64_t wr_id)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	wr_send_1(&wr, &sge, op, wr_id, (uint64_t)(uintptr_t)(e->lbuf + loff), len, rnic_mr_lkey(e->lmr));
	wr_remote(&wr, (uint64_t)(uintptr_t)(e->tgt + toff), rnic_mr_rkey(e->tmr));
	wr.send_flags = IBV_SEND_SIGNALED;
	int rc = rnic_post_send(e->h.side[0].qp, &wr, &bad, pair_now(e->h.pair));
	if (rc)
		FAIL("post_send: %s", strerror(rc));
	return rc == 0;
}

/* SEND, WRITE and READ from node 0 to node 1 all work and move the right
 * bytes.  Returns false (after reporting) if not. */
static bool traffic_ok(struct env *e, const char *after)
{
	unsigned r = ++e->round;
	for (unsigned i = 0; i < BUF; i++)
		e->lbuf[i] = (uint8_t)(i * 3 + r * 101);
	if (!post_recv_slot(e))
		return false;
	/* SEND 2000 bytes from lbuf[0..], WRITE 3000 bytes of lbuf[2048..] to
	 * tgt[0..], READ tgt[4096..+1500] into lbuf[6000..]. */
	uint8_t expect_read[1500];
	memcpy(expect_read, e->tgt + 4096, 1500);
	if (!post(e, IBV_WR_SEND, 0, 2000, 0, 100 * r + 1) || !post(e, IBV_WR_RDMA_WRITE, 2048, 3000, 0, 100 * r + 2) ||
	    !post(e, IBV_WR_RDMA_READ, 6000, 1500, 4096, 100 * r + 3))
		return false;
	struct ibv_wc wc;
	for (uint64_t id = 1; id <= 3; id++) {
		if (!ht_wait_wc(&e->h, e->h.side[0].scq, &wc, 500 * HT_MS)) {
			FAIL("after %s: WR %llu never completed", after, (unsigned long long)(100 * r + id));
			return false;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 100 * r + id) {
			FAIL("after %s: completion wr_id %llu status %s, expected %llu SUCCESS", after,
				(unsigned long long)wc.wr_id, ht_wc_status_str(wc.status),
				(unsigned long long)(100 * r + id));
			return false;
		}
	}
	if (!ht_wait_wc(&e->h, e->h.side[1].rcq, &wc, 100 * HT_MS)) {
		FAIL("after %s: no receive completion", after);
		return false;
	}
	unsigned k = e->recv_done++;
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != k || wc.byte_len != 2000) {
		FAIL("after %s: receive wr_id %llu status %s byte_len %u, expected %u SUCCESS 2000", after,
			(unsigned long long)wc.wr_id, ht_wc_status_str(wc.status), wc.byte_len, k);
		return false;
	}
	bool ok = true;
	if (memcmp(e->rbuf + (size_t)k * BUF, e->lbuf, 2000) != 0) {
		FAIL("after %s: SEND data differ", after);
		ok = false;
	}
	memcpy(e->tgt_copy, e->lbuf + 2048, 3000);
	if (memcmp(e->tgt, e->tgt_copy, BUF) != 0) {
		FAIL("after %s: target memory differs from what was written", after);
		ok = false;
	}
	if (memcmp(e->lbuf + 6000, expect_read, 1500) != 0) {
		FAIL("after %s: READ data differ", after);
		ok = false;
	}
	return ok;
}

/* ---- crafting and injecting ----------------------------------------------- */

static void inject(struct env *e, unsigned to, const uint8_t *ib, size_t len)
{
	struct rnic_rx rx = {
		.src = *pair_gid(e->h.pair, 1 - to),
		.dst = *pair_gid(e->h.pair, to),
		.sport = 0xc123,
		.ib = ib,
		.ib_len = len,
	};
	rnic_receive(e->h.side[to].r, &rx, pair_now(e->h.pair));
	/* Let any NAK/ACK it provoked travel and settle. */
	pair_run_for(e->h.pair, 200 * HT_US);
}

/* Encode a packet; dqpn/psn/opcode as given, other headers filled in
 * plausibly (valid rkey/va into the target unless changed by the caller). */
static size_t craft(struct env *e, uint8_t opcode, uint32_t dqpn, uint32_t psn, uint32_t payload_len,
		    struct wire_ib *ib_out, uint8_t *buf)
{
	static uint8_t payload[4096];
	memset(payload, 0xab, sizeof(payload));
	struct wire_ib ib;
	if (ib_out && ib_out->bth.pkey) {
		ib = *ib_out;
	} else {
		memset(&ib, 0, sizeof(ib));
		ib.bth.pkey = 0xffff;
		ib.reth.va = (uint64_t)(uintptr_t)e->tgt;
		ib.reth.rkey = rnic_mr_rkey(e->tmr);
		ib.reth.dma_len = payload_len;
		ib.atmeth.va = (uint64_t)(uintptr_t)e->tgt;
		ib.atmeth.rkey = rnic_mr_rkey(e->tmr);
		ib.aeth.syndrome = wire_aeth_syndrome(WIRE_AETH_ACK, WIRE_AETH_CREDIT_INVALID);
	}
	ib.bth.opcode = opcode;
	ib.bth.dqpn = dqpn;
	ib.bth.psn = psn & WIRE_PSN_MASK;
	ib.payload = payload;
	ib.payload_len = payload_len;
	int n = wire_encode_ib(&ib, buf, WIRE_MAX_IB_PACKET);
	if (n < 0) {
		FAIL("wire_encode_ib(opcode 0x%x): %s", opcode, wire_strerror(n));
		return 0;
	}
	return (size_t)n;
}

struct snap {
	struct rnic_counters c[2];
};

static void take(struct env *e, struct snap *s)
{
	for (int i = 0; i < 2; i++)
		s->c[i] = *rnic_counters(e->h.side[i].r);
}

#define DELTA(e, s, node, field) (rnic_counters((e)->h.side[node].r)->field - (s)->c[node].field)

static uint64_t drop_delta(struct env *e, const struct snap *s, int node)
{
	return ht_drops(rnic_counters(e->h.side[node].r)) - ht_drops(&s->c[node]);
}

static void no_recv_completion(struct env *e, const char *what)
{
	struct ibv_wc wc;
	if (rnic_cq_poll(e->h.side[1].rcq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS)
		FAIL("%s consumed a receive WQE (wr_id %llu, byte_len %u)", what, (unsigned long long)wc.wr_id,
			wc.byte_len);
}

/* ---- cases that must leave the connection working ------------------------ */

static void random_bytes(struct env *e, struct pair *rng)
{
	uint8_t buf[256];
	struct snap s;
	for (unsigned to = 0; to < 2; to++) {
		take(e, &s);
		unsigned n = 1000;
		for (unsigned i = 0; i < n; i++) {
			size_t len = (size_t)pair_random_below(rng, sizeof(buf) + 1);
			for (size_t k = 0; k < len; k++)
				buf[k] = (uint8_t)pair_random(rng);
			struct rnic_rx rx = { .src = *pair_gid(e->h.pair, 1 - to), .dst = *pair_gid(e->h.pair, to),
					      .ib = buf, .ib_len = len };
			rnic_receive(e->h.side[to].r, &rx, pair_now(e->h.pair));
		}
		pair_run_for(e->h.pair, HT_MS);
		/* Random QPNs name no QP (2 of 2^24): each packet must be
		 * dropped and counted exactly once. */
		CHECK(drop_delta(e, &s, (int)to) == n, "node %u: %u random packets, %llu counted as dropped", to, n,
		      (unsigned long long)drop_delta(e, &s, (int)to));
	}
	/* Random bytes aimed at the live QP: anything may happen to the
	 * packet, but nothing may break. */
	for (unsigned i = 0; i < 2000; i++) {
		size_t len = 12 + (size_t)pair_random_below(rng, sizeof(buf) - 11);
		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)pair_random(rng);
		buf[1] &= 0x0f;         /* TVer 0, so decoding gets past the BTH */
		buf[5] = (uint8_t)(e->h.side[1].qpn >> 16);
		buf[6] = (uint8_t)(e->h.side[1].qpn >> 8);
		buf[7] = (uint8_t)e->h.side[1].qpn;
		/* PSN in the duplicate half: a random "request" must not
		 * execute as if it were the peer's next one */
		uint32_t psn = wire_psn_add(e->next_psn, WIRE_PSN_MASK - (uint32_t)pair_random_below(rng, 0x7fffff));
		buf[9] = (uint8_t)(psn >> 16);
		buf[10] = (uint8_t)(psn >> 8);
		buf[11] = (uint8_t)psn;
		struct rnic_rx rx = { .src = *pair_gid(e->h.pair, 0), .dst = *pair_gid(e->h.pair, 1), .ib = buf,
				      .ib_len = len };
		rnic_receive(e->h.side[1].r, &rx, pair_now(e->h.pair));
	}
	pair_run_for(e->h.pair, HT_MS);
	for (size_t i = 0; i < BUF; i++)
		if (e->tgt[i] != e->tgt_copy[i]) {
			FAIL("random packets for the live QP changed target byte %zu", i);
			break;
		}
	no_recv_completion(e, "random duplicate-PSN packets");
}

static void truncations(struct env *e, const uint8_t *pkt, size_t len, const char *what)
{
	uint8_t buf[WIRE_MAX_IB_PACKET];
	struct wire_ib ib;
	if (len == 0 || wire_decode_ib(pkt, len, &ib) != 0) {
		FAIL("no captured %s packet", what);
		return;
	}
	size_t hdr = (size_t)wire_opcode_info(ib.bth.opcode)->hdr_len;
	for (size_t l = 0; l < len; l++) {
		struct snap s;
		take(e, &s);
		memcpy(buf, pkt, l);
		struct rnic_rx rx = { .src = *pair_gid(e->h.pair, 0), .dst = *pair_gid(e->h.pair, 1), .ib = buf,
				      .ib_len = l };
		rnic_receive(e->h.side[1].r, &rx, pair_now(e->h.pair));
		if (l < hdr + WIRE_ICRC_LEN)
			CHECK(DELTA(e, &s, 1, rx_drop_malformed) == 1,
			      "%s truncated to %zu bytes (headers %zu): rx_drop_malformed +%llu", what, l, hdr,
			      (unsigned long long)DELTA(e, &s, 1, rx_drop_malformed));
	}
	pair_run_for(e->h.pair, HT_MS);
}

static void wrong_fields(struct env *e)
{
	uint8_t buf[WIRE_MAX_IB_PACKET];
	struct snap s;
	size_t n;
	uint32_t qpn1 = e->h.side[1].qpn;

	/* a QPN that does not exist (IBTA 9.6.1.5: silently dropped) */
	take(e, &s);
	n = craft(e, WIRE_OP_SEND_ONLY, (qpn1 + 7) & WIRE_QPN_MASK, e->next_psn, 16, NULL, buf);
	inject(e, 1, buf, n);
	CHECK(DELTA(e, &s, 1, rx_drop_unknown_qp) == 1, "unknown QPN: rx_drop_unknown_qp +%llu",
	      (unsigned long long)DELTA(e, &s, 1, rx_drop_unknown_qp));
	no_recv_completion(e, "a SEND to an unknown QPN");

	/* a P_Key that is not ours (IBTA 9.6.1.4 / 10.9.3: dropped, counted) */
	take(e, &s);
	struct wire_ib ib;
	memset(&ib, 0, sizeof(ib));
	ib.bth.pkey = 0x1234;
	n = craft(e, WIRE_OP_SEND_ONLY, qpn1, e->next_psn, 16, &ib, buf);
	inject(e, 1, buf, n);
	CHECK(DELTA(e, &s, 1, rx_drop_bad_pkey) == 1, "bad P_Key: rx_drop_bad_pkey +%llu",
	      (unsigned long long)DELTA(e, &s, 1, rx_drop_bad_pkey));
	no_recv_completion(e, "a SEND with a bad P_Key");

	/* TVer != 0 (IBTA 9.6.1.3) */
	take(e, &s);
	n = craft(e, WIRE_OP_SEND_ONLY, qpn1, e->next_psn, 16, NULL, buf);
	buf[1] |= 0x01;
	inject(e, 1, buf, n);
	CHECK(drop_delta(e, &s, 1) == 1 && DELTA(e, &s, 1, rx_drop_malformed) == 1, "TVer 1: dropped %llu, malformed +%llu",
	      (unsigned long long)drop_delta(e, &s, 1), (unsigned long long)DELTA(e, &s, 1, rx_drop_malformed));

	/* a UD SEND (with DETH) addressed to the RC QP: wrong transport for
	 * the QP, silently dropped (IBTA 9.6.1.5.1) */
	take(e, &s);
	memset(&ib, 0, sizeof(ib));
	ib.bth.pkey = 0xffff;
	ib.deth.qkey = 0x11111111;
	ib.deth.sqpn = e->h.side[0].qpn;
	n = craft(e, WIRE_TR_UD | WIRE_OP_SEND_ONLY, qpn1, e->next_psn, 16, &ib, buf);
	inject(e, 1, buf, n);
	CHECK(drop_delta(e, &s, 1) == 1, "UD opcode to an RC QP: %llu drops counted",
	      (unsigned long long)drop_delta(e, &s, 1));
	CHECK(DELTA(e, &s, 1, tx_nak_invalid_req) == 0, "UD opcode to an RC QP was NAKed, not dropped");
	no_recv_completion(e, "a UD SEND to an RC QP");

	/* The same, marked for selective repeat (rnic/selective.c): far
	 * outside the reorder window, so neither kept nor answered with a
	 * selective NAK; and the reorder budget untouched. */
	take(e, &s);
	memset(&ib, 0, sizeof(ib));
	ib.bth.pkey = 0xffff;
	ib.bth.selective = true;
	n = craft(e, WIRE_OP_SEND_ONLY, qpn1, wire_psn_add(e->next_psn, 0x200000), 16, &ib, buf);
	inject(e, 1, buf, n);
	CHECK(DELTA(e, &s, 1, rx_drop_reorder) == 1 && DELTA(e, &s, 1, reorder_stored) == 0 &&
	      DELTA(e, &s, 1, tx_nak_selective) == 0 && DELTA(e, &s, 1, tx_nak_psn_seq) == 0,
	      "selective PSN far ahead: dropped +%llu, kept +%llu, selective NAKs +%llu",
	      (unsigned long long)DELTA(e, &s, 1, rx_drop_reorder), (unsigned long long)DELTA(e, &s, 1, reorder_stored),
	      (unsigned long long)DELTA(e, &s, 1, tx_nak_selective));
	no_recv_completion(e, "a selective SEND with a PSN far ahead");

	/* PSN far ahead (IBTA 9.7.5.1.1: out of sequence -> NAK PSN sequence
	 * error, once; further out-of-sequence packets are dropped until the
	 * expected PSN arrives) */
	take(e, &s);
	n = craft(e, WIRE_OP_SEND_ONLY, qpn1, wire_psn_add(e->next_psn, 0x200000), 16, NULL, buf);
	inject(e, 1, buf, n);
	CHECK(DELTA(e, &s, 1, tx_nak_psn_seq) == 1, "PSN far ahead: tx_nak_psn_seq +%llu",
	      (unsigned long long)DELTA(e, &s, 1, tx_nak_psn_seq));
	take(e, &s);
	n = craft(e, WIRE_OP_WRITE_ONLY, qpn1, wire_psn_add(e->next_psn, 0x300000), 16, NULL, buf);
	inject(e, 1, buf, n);
	CHECK(DELTA(e, &s, 1, tx_nak_psn_seq) + DELTA(e, &s, 1, rx_drop_out_of_window) == 1,
	      "second PSN far ahead: nak +%llu, out_of_window +%llu", (unsigned long long)DELTA(e, &s, 1, tx_nak_psn_seq),
	      (unsigned long long)DELTA(e, &s, 1, rx_drop_out_of_window));
	no_recv_completion(e, "a SEND with a PSN far ahead");

	/* PSN far behind: a duplicate (IBTA 9.7.5.1.2): ACKed, not executed,
	 * no receive WQE consumed, no memory written */
	take(e, &s);
	n = craft(e, WIRE_OP_SEND_ONLY, qpn1, wire_psn_add(e->next_psn, WIRE_PSN_MASK + 1 - 0x100000), 16, NULL, buf);
	inject(e, 1, buf, n);
	n = craft(e, WIRE_OP_WRITE_ONLY, qpn1, wire_psn_add(e->next_psn, WIRE_PSN_MASK + 1 - 0x100), 16, NULL, buf);
	inject(e, 1, buf, n);
	CHECK(DELTA(e, &s, 1, duplicate_requests) + drop_delta(e, &s, 1) == 2,
	      "two stale-PSN requests: duplicate_requests +%llu, drops +%llu",
	      (unsigned long long)DELTA(e, &s, 1, duplicate_requests), (unsigned long long)drop_delta(e, &s, 1));
	no_recv_completion(e, "a duplicate SEND");
	for (size_t i = 0; i < BUF; i++)
		if (e->tgt[i] != e->tgt_copy[i]) {
			FAIL("a duplicate WRITE re-executed: target byte %zu changed", i);
			break;
		}

	/* responses nobody asked for, at node 0 (IBTA 9.7.5.3: ghost
	 * responses are dropped) */
	uint32_t qpn0 = e->h.side[0].qpn;
	take(e, &s);
	n = craft(e, WIRE_OP_ACK, qpn0, wire_psn_add(e->next_psn, 1000), 0, NULL, buf);
	inject(e, 0, buf, n);
	n = craft(e, WIRE_OP_READ_RESP_ONLY, qpn0, wire_psn_add(e->next_psn, 5), 64, NULL, buf);
	inject(e, 0, buf, n);
	memset(&ib, 0, sizeof(ib));
	ib.bth.pkey = 0xffff;
	ib.aeth.syndrome = wire_aeth_syndrome(WIRE_AETH_ACK, 0);
	ib.atmack = 0x1234;
	n = craft(e, WIRE_OP_ATOMIC_ACK, qpn0, e->next_psn, 0, &ib, buf);
	inject(e, 0, buf, n);
	CHECK(drop_delta(e, &s, 0) == 3, "3 ghost responses at node 0: %llu drops counted",
	      (unsigned long long)drop_delta(e, &s, 0));
	struct ibv_wc wc;
	CHECK(rnic_cq_poll(e->h.side[0].scq, 1, &wc) == 0, "a ghost response produced a completion (wr_id %llu)",
	      (unsigned long long)wc.wr_id);
}

static int survive_case(uint64_t seed)
{
	check_begin("hostile packets, connection survives (seed %llu)", (unsigned long long)seed);
	struct env e;
	if (env_setup(&e, seed) == 0 && traffic_ok(&e, "setup")) {
		struct pair *rng = pair_create(seed ^ 0xbadull, 2, NULL);
		if (rng) {
			random_bytes(&e, rng);
			traffic_ok(&e, "random bytes");
			pair_destroy(rng);
		}
		truncations(&e, e.send_pkt, e.send_len, "SEND_FIRST");
		truncations(&e, e.write_first_pkt, e.write_first_len, "WRITE_FIRST");
		truncations(&e, e.read_pkt, e.read_len, "READ_REQUEST");
		traffic_ok(&e, "truncated packets");
		wrong_fields(&e);
		traffic_ok(&e, "packets with wrong fields");
		/* the same again, so that "once" rules are checked after
		 * recovery too */
		wrong_fields(&e);
		traffic_ok(&e, "packets with wrong fields (again)");
	}
	env_teardown(&e);
	return check_end();
}

/* ---- cases at the expected PSN: the connection may break ---------------- */

/* An RDMA WRITE at the expected PSN with a wrong R_Key: NAK Remote Access
 * Error (IBTA 9.7.5.2.4 / table 43), nothing written. */
static int wrong_rkey_case(void)
{
	check_begin("WRITE at the expected PSN with a wrong R_Key");
	struct env e;
	if (env_setup(&e, 31) == 0 && traffic_ok(&e, "setup")) {
		uint8_t buf[WIRE_MAX_IB_PACKET];
		struct snap s;
		struct wire_ib ib;
		memset(&ib, 0, sizeof(ib));
		ib.bth.pkey = 0xffff;
		ib.reth.va = (uint64_t)(uintptr_t)e.tgt;
		ib.reth.rkey = rnic_mr_rkey(e.tmr) ^ 0x100;
		ib.reth.dma_len = 64;
		take(&e, &s);
		size_t n = craft(&e, WIRE_OP_WRITE_ONLY, e.h.side[1].qpn, e.next_psn, 64, &ib, buf);
		inject(&e, 1, buf, n);
		CHECK(DELTA(&e, &s, 1, tx_nak_remote_access) == 1, "tx_nak_remote_access +%llu",
		      (unsigned long long)DELTA(&e, &s, 1, tx_nak_remote_access));
		CHECK(memcmp(e.tgt, e.tgt_copy, BUF) == 0, "target written through a wrong R_Key");
		/* bounds: right key, VA one byte before the region */
		ib.reth.rkey = rnic_mr_rkey(e.tmr);
		ib.reth.va = (uint64_t)(uintptr_t)e.tgt - 1;
		n = craft(&e, WIRE_OP_WRITE_ONLY, e.h.side[1].qpn, e.next_psn, 64, &ib, buf);
		inject(&e, 1, buf, n);
		CHECK(memcmp(e.tgt, e.tgt_copy, BUF) == 0, "target written through an out-of-bounds VA");
	}
	env_teardown(&e);
	return check_end();
}

/* Opcode sequence errors at the expected PSN: an RC responder NAKs
 * Invalid Request (IBTA 9.7.5.1.3 opcode sequence check, 9.7.5.2.2), and
 * executes nothing.  (rx_drop_bad_opcode_seq may count the reason too.) */
static int opcode_seq_case(const char *name, uint8_t first, uint8_t second)
{
	check_begin("opcode sequence: %s", name);
	struct env e;
	if (env_setup(&e, 32) == 0 && traffic_ok(&e, "setup")) {
		post_recv_slot(&e);
		uint8_t buf[WIRE_MAX_IB_PACKET];
		struct snap s;
		uint32_t psn = e.next_psn;
		uint32_t mtu = 256u << (e.h.opts.mtu - IBV_MTU_256);
		take(&e, &s);
		if (first != 0xff) { /* a legitimate FIRST, then the bad one */
			struct wire_ib ib;
			memset(&ib, 0, sizeof(ib));
			ib.bth.pkey = 0xffff;
			ib.reth.va = (uint64_t)(uintptr_t)e.tgt;
			ib.reth.rkey = rnic_mr_rkey(e.tmr);
			ib.reth.dma_len = 3 * mtu;
			size_t n = craft(&e, first, e.h.side[1].qpn, psn, mtu, &ib, buf);
			inject(&e, 1, buf, n);
			psn = wire_psn_add(psn, 1);
		}
		size_t n = craft(&e, second, e.h.side[1].qpn, psn, second == WIRE_OP_SEND_LAST ? 16 : mtu, NULL, buf);
		inject(&e, 1, buf, n);
		CHECK(DELTA(&e, &s, 1, tx_nak_invalid_req) == 1, "tx_nak_invalid_req +%llu, expected 1",
		      (unsigned long long)DELTA(&e, &s, 1, tx_nak_invalid_req));
		pair_run_for(e.h.pair, 10 * HT_MS);
		no_recv_completion(&e, name);
		if (first == 0xff)
			CHECK(memcmp(e.tgt, e.tgt_copy, BUF) == 0, "%s wrote into the target", name);
	}
	env_teardown(&e);
	return check_end();
}

/* Length rules of a multi-packet RDMA WRITE (IBTA 9.7.5.1.3 length
 * check: FIRST and MIDDLE carry exactly one PMTU, ONLY/LAST at most one,
 * and the total must equal the RETH DMA length): a message that would write
 * past its own RETH length, a first packet shorter than the PMTU, an ONLY
 * packet larger than the PMTU.  Nothing past the RETH range may be
 * written, and the request is NAKed Invalid Request (or dropped). */
static int write_length_case(const char *name, uint32_t dma_len, const uint32_t *pay, const uint8_t *ops, int n,
			     uint32_t max_written)
{
	check_begin("WRITE length: %s", name);
	struct env e;
	if (env_setup(&e, 33) == 0 && traffic_ok(&e, "setup")) {
		uint8_t buf[WIRE_MAX_IB_PACKET];
		struct snap s;
		struct wire_ib ib;
		take(&e, &s);
		uint32_t psn = e.next_psn;
		for (int i = 0; i < n; i++) {
			memset(&ib, 0, sizeof(ib));
			ib.bth.pkey = 0xffff;
			ib.reth.va = (uint64_t)(uintptr_t)e.tgt;
			ib.reth.rkey = rnic_mr_rkey(e.tmr);
			ib.reth.dma_len = dma_len;
			size_t len = craft(&e, ops[i], e.h.side[1].qpn, psn, pay[i], &ib, buf);
			inject(&e, 1, buf, len);
			psn = wire_psn_add(psn, 1);
		}
		pair_run_for(e.h.pair, 10 * HT_MS);
		uint64_t refused = DELTA(&e, &s, 1, tx_nak_invalid_req) + drop_delta(&e, &s, 1);
		CHECK(refused >= 1, "not refused: tx_nak_invalid_req +%llu, drops +%llu",
		      (unsigned long long)DELTA(&e, &s, 1, tx_nak_invalid_req), (unsigned long long)drop_delta(&e, &s, 1));
		for (size_t i = max_written; i < BUF; i++)
			if (e.tgt[i] != e.tgt_copy[i]) {
				FAIL("byte %zu written (limit %u: the RETH range / what was legal)", i, max_written);
				break;
			}
	}
	env_teardown(&e);
	return check_end();
}

static int write_length_cases(void)
{
	const uint32_t mtu = 1024; /* ht_default_opts: IBV_MTU_1024 */
	int failed = 0;
	{
		/* RETH says 1500; FIRST + MIDDLE would deliver 2048 */
		const uint8_t ops[] = { WIRE_OP_WRITE_FIRST, WIRE_OP_WRITE_MIDDLE, WIRE_OP_WRITE_LAST };
		const uint32_t pay[] = { mtu, mtu, 100 };
		failed += write_length_case("more data than the RETH length", 1500, pay, ops, 3, 1500);
	}
	{
		/* RETH says 3000; FIRST + LAST deliver 1124 */
		const uint8_t ops[] = { WIRE_OP_WRITE_FIRST, WIRE_OP_WRITE_LAST };
		const uint32_t pay[] = { mtu, 100 };
		failed += write_length_case("less data than the RETH length", 3000, pay, ops, 2, 3000);
	}
	{
		/* FIRST shorter than the PMTU */
		const uint8_t ops[] = { WIRE_OP_WRITE_FIRST };
		const uint32_t pay[] = { 512 };
		failed += write_length_case("FIRST shorter than the PMTU", 2048, pay, ops, 1, 0);
	}
	{
		/* ONLY with 2 KB of payload at a 1 KB PMTU, RETH says 2 KB */
		const uint8_t ops[] = { WIRE_OP_WRITE_ONLY };
		const uint32_t pay[] = { 2048 };
		failed += write_length_case("ONLY larger than the PMTU", 2048, pay, ops, 1, 0);
	}
	{
		/* ONLY with a RETH length smaller than its payload */
		const uint8_t ops[] = { WIRE_OP_WRITE_ONLY };
		const uint32_t pay[] = { 256 };
		failed += write_length_case("ONLY payload beyond the RETH length", 100, pay, ops, 1, 100);
	}
	return failed;
}

int main(int argc, char **argv)
{
	static const uint64_t defaults[] = { 1, 2, 3 };
	uint64_t seeds[64];
	size_t n = ht_seeds_from_args(argc, argv, seeds, 64, defaults, 3);
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		check_seed(seeds[i]);
		failed += survive_case(seeds[i]);
	}
	check_seeded = false;
	failed += wrong_rkey_case();
	failed += write_length_cases();
	failed += opcode_seq_case("SEND_MIDDLE without FIRST", 0xff, WIRE_OP_SEND_MIDDLE);
	failed += opcode_seq_case("SEND_LAST without FIRST", 0xff, WIRE_OP_SEND_LAST);
	failed += opcode_seq_case("WRITE_MIDDLE without FIRST", 0xff, WIRE_OP_WRITE_MIDDLE);
	failed += opcode_seq_case("WRITE_LAST without FIRST", 0xff, WIRE_OP_WRITE_LAST);
	failed += opcode_seq_case("WRITE_FIRST then SEND_MIDDLE", WIRE_OP_WRITE_FIRST, WIRE_OP_SEND_MIDDLE);
	failed += opcode_seq_case("WRITE_FIRST then SEND_ONLY", WIRE_OP_WRITE_FIRST, WIRE_OP_SEND_ONLY);
	printf("%s: %d cases failed\n", failed ? "FAIL" : "PASS", failed);
	check_exit("hostile");
	return failed ? 1 : 0;
}
