/*
 * fuzz_device.c — libFuzzer target: the transport's receive path
 * (rnic_receive) of one device fed fuzzed packets.
 *
 * Each input starts from the same scene, built afresh (so a reproducer
 * replays alone): one rnic with QPs of every type (RC, UC, UD) in every
 * state it has — RESET, INIT, RTR, RTS, SQD, ERR, and SQE for UD (a send
 * with a bad lkey puts it there) — plus an RC QP on an SRQ and a UD QP in
 * a multicast group; receive WQEs posted wherever the RQ takes them; the
 * RTS QPs with requests outstanding (SEND, RDMA WRITE, READ, atomic) so
 * that fuzzed ACKs, NAKs and read/atomic responses reach the completer.
 * MRs of several access rights lie in one arena between canary bytes, with
 * guard pages (PROT_NONE) at both ends.
 *
 * The input is cut into packets: a 6-byte header (flags, target QP,
 * auxiliary byte, mode, 16-bit length) and that many bytes.  In raw mode
 * the bytes are the packet, read as a BTH-first IB packet (the RoCEv2 UDP
 * payload; the ICRC is the port's business and not checked by
 * rnic_receive); steering, chosen by the flags, makes them plausible:
 * DestQP set to an existing QPN, the PSN to one the responder expects, the
 * P_Key to the default, RETH/AtomicETH rkey and VA aimed at an MR, the
 * DETH Q_Key at the UD QPs'.  In synthesized mode (mode bit 0) the bytes
 * are the fields of a packet that wire_encode_ib builds: an opcode of the
 * target QP's type, PSN, AETH syndrome, keys and VA aimed at an MR, the
 * rest as payload — well-formed, so the fuzzer reaches the responder's
 * and completer's execution paths at once.  Either way the source GID is
 * the QPs' peer, another host, or our own; the destination our GID or the
 * multicast group; time may pass (timers fire) before a packet.
 *
 * Checked after each input (a violation aborts): no crash or sanitizer
 * report (each packet lies in a buffer of exactly its length); the
 * canaries around every MR and the bytes of mr_recv outside every posted
 * SGE unchanged; MRs without remote write access unchanged (mr_ro,
 * mr_noremote); every packet the rnic sent decodes; counters consistent:
 * rx_packets and rx_bytes equal what was fed, tx_packets equals the xmit
 * calls, each packet dropped at most once (the rx_drop_* counters sum to
 * at most rx_packets; see the note at the check for the one exception);
 * every completion has a known wr_id and a receive's byte_len fits its
 * SGE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rnic/rnic.h"
#include "wire/wire.h"
#include "fuzz_check.h"    /* FUZZ_ASSERT */

/* ---- memory: one arena, MRs between canaries ------------------------------- */

#define CANARY 256u
enum { MR_RW, MR_RO, MR_NOREMOTE, MR_RECV, MR_SMALL, NMR };
static const struct {
	size_t len;
	int access;
	uint64_t iova;
} mr_def[NMR] = {
	[MR_RW] = { 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC, 0x10000 },
	[MR_RO] = { 2048, IBV_ACCESS_REMOTE_READ, 0x20000 },
	[MR_NOREMOTE] = { 2048, IBV_ACCESS_LOCAL_WRITE, 0x30000 },
	/* receive and READ/atomic destination SGEs only (slots below) */
	[MR_RECV] = { 32768, IBV_ACCESS_LOCAL_WRITE, 0x40000 },
	/* 64 bytes at the top of the address space: bounds arithmetic */
	[MR_SMALL] = { 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC, UINT64_MAX - 64 - 63 },
};
/* mr_recv is cut into slots; an SGE covers [SLOT_SGE_OFF, +SLOT_SGE_LEN) of
 * its slot, the rest of every slot must never change. */
#define SLOT 512u
#define SLOT_SGE_OFF 64u
#define SLOT_SGE_LEN 320u
#define NSLOTS (32768u / SLOT)

static uint8_t *arena;          /* guard page | canary | mr | canary | ... | guard page */
static uint8_t *arena_ref;      /* what the arena is filled with */
static size_t arena_len, arena_map;
static size_t mr_off[NMR];
static bool slot_used[NSLOTS];

static uint8_t fill_byte(size_t i)
{
	return (uint8_t)(0xa5 ^ (i * 131) ^ (i >> 8));
}

static void arena_init(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t off = 0;
	for (int i = 0; i < NMR; i++) {
		off += CANARY;
		mr_off[i] = off;
		off += mr_def[i].len;
	}
	arena_len = off + CANARY;
	size_t body = (arena_len + page - 1) / page * page;
	arena_map = body + 2 * page;
	uint8_t *m = mmap(NULL, arena_map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FUZZ_ASSERT(m != MAP_FAILED);
	FUZZ_ASSERT(mprotect(m, page, PROT_NONE) == 0);
	FUZZ_ASSERT(mprotect(m + page + body, page, PROT_NONE) == 0);
	/* the arena ends right before the upper guard page */
	arena = m + page + (body - arena_len);
	arena_ref = malloc(arena_len);
	FUZZ_ASSERT(arena_ref);
	for (size_t i = 0; i < arena_len; i++)
		arena_ref[i] = fill_byte(i);
}

static void arena_fill(void)
{
	memcpy(arena, arena_ref, arena_len);
	memset(slot_used, 0, sizeof(slot_used));
}

/* [from, to) must be as filled (memcmp: the per-byte loop runs only to
 * report a difference). */
static void check_range(size_t from, size_t to)
{
	if (memcmp(arena + from, arena_ref + from, to - from) == 0)
		return;
	for (size_t i = from; i < to; i++) {
		if (arena[i] != arena_ref[i]) {
			fprintf(stderr, "arena byte %zu changed: %02x, was %02x (mr_off: rw %zu ro %zu noremote %zu recv %zu small %zu)\n",
				i, arena[i], arena_ref[i], mr_off[MR_RW], mr_off[MR_RO], mr_off[MR_NOREMOTE],
				mr_off[MR_RECV], mr_off[MR_SMALL]);
			FUZZ_ASSERT(!"memory outside the writable ranges changed");
		}
	}
}

/* What may change: mr_rw and mr_small (remote writes, atomics) and the
 * SGE areas of mr_recv's used slots.  Everything else must not. */
static void arena_check(void)
{
	size_t at = 0;
	for (int m = 0; m < NMR; m++) {
		check_range(at, mr_off[m]);             /* the canary before */
		at = mr_off[m] + mr_def[m].len;
	}
	check_range(at, arena_len);                     /* the last canary */
	check_range(mr_off[MR_RO], mr_off[MR_RO] + mr_def[MR_RO].len);
	check_range(mr_off[MR_NOREMOTE], mr_off[MR_NOREMOTE] + mr_def[MR_NOREMOTE].len);
	for (size_t i = 0; i < NSLOTS; i++) {
		size_t slot = mr_off[MR_RECV] + i * SLOT;
		if (!slot_used[i]) {
			check_range(slot, slot + SLOT);
		} else {
			check_range(slot, slot + SLOT_SGE_OFF);
			check_range(slot + SLOT_SGE_OFF + SLOT_SGE_LEN, slot + SLOT);
		}
	}
}

/* ---- the scene --------------------------------------------------------------- */

#define MAX_QPS 32
#define UD_QKEY 0x11111111u
#define PEER_QPN_BASE 0x300
#define T0 1000000000ull

#define MTU 256u                /* path MTU of the RC/UC QPs */
#define MAX_SENT 8

/* A request an RC QP sent, for synthesized answers. */
struct sent {
	enum ibv_wr_opcode op;
	uint32_t first_psn, npkts, len;
};

struct fqp {
	struct rnic_qp *qp;
	uint32_t qpn;
	enum ibv_qp_type type;
	enum ibv_qp_state state;
	struct sent sent[MAX_SENT];
	unsigned nsent;
	uint32_t next_psn;
};

static bool verbose;            /* FUZZ_DEVICE_VERBOSE: trace, and counters after each input */

static void trace_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "  %s\n", line);
}

static struct scene {
	struct rnic *r;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_srq *srq;
	struct rnic_ah *ah;
	struct rnic_mr *mr[NMR];
	struct fqp q[MAX_QPS];
	unsigned nq;
	struct rnic_gid gid, peer, mgid;
	uint64_t now;
	/* io */
	uint64_t xmits;
	/* wr_ids handed out: wr_id = 1 + index < next_wr */
	uint64_t next_wr;
	uint32_t recv_len[256];         /* SGE length of recv wr_id (0: not a recv) */
} s;

static void io_xmit(void *ctx, const struct rnic_tx *tx)
{
	(void)ctx;
	struct wire_ib d;
	s.xmits++;
	FUZZ_ASSERT(tx->payload_len == 0);     /* tx_payload_ref is off */
	FUZZ_ASSERT(tx->ib_len >= WIRE_BTH_LEN + WIRE_ICRC_LEN && tx->ib_len <= WIRE_MAX_IB_PACKET);
	/* The rnic never emits a malformed packet, whatever it was fed. */
	FUZZ_ASSERT(wire_decode_ib(tx->ib, tx->ib_len, &d) == WIRE_OK);
}

static void set_gid(struct rnic_gid *g, uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	g->raw[12] = a;
	g->raw[13] = b;
	g->raw[14] = c;
	g->raw[15] = d;
}

static uint64_t mr_va(int m, size_t off)
{
	return mr_def[m].iova + off;
}

/* A free slot of mr_recv as an SGE (marks it used). */
static bool take_slot(struct ibv_sge *sge)
{
	for (unsigned i = 0; i < NSLOTS; i++) {
		if (!slot_used[i]) {
			slot_used[i] = true;
			sge->addr = mr_va(MR_RECV, i * SLOT + SLOT_SGE_OFF);
			sge->length = SLOT_SGE_LEN;
			sge->lkey = rnic_mr_lkey(s.mr[MR_RECV]);
			return true;
		}
	}
	return false;
}

static void post_recvs(struct rnic_qp *qp, struct rnic_srq *srq, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct ibv_sge sge;
		if (s.next_wr >= 255 || !take_slot(&sge))
			return;
		struct ibv_recv_wr wr = { .wr_id = ++s.next_wr, .sg_list = &sge, .num_sge = 1 }, *bad;
		int rc = srq ? rnic_post_srq_recv(srq, &wr, &bad) : rnic_post_recv(qp, &wr, &bad);
		if (rc == 0)
			s.recv_len[wr.wr_id] = sge.length;
		else
			slot_used[(sge.addr - mr_def[MR_RECV].iova) / SLOT] = false;    /* never posted */
	}
}

static int post_send1(struct fqp *f, enum ibv_wr_opcode op, struct ibv_sge *sge, uint64_t raddr, uint32_t rkey,
		      bool ud)
{
	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof(wr));
	if (s.next_wr >= 255)
		return -1;
	wr.wr_id = ++s.next_wr;
	wr.opcode = op;
	wr.sg_list = sge;
	wr.num_sge = sge ? 1 : 0;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ud) {
		wr.wr.ud.ah = &s.ah->verbs;
		wr.wr.ud.remote_qpn = PEER_QPN_BASE;
		wr.wr.ud.remote_qkey = UD_QKEY;
	} else if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
		wr.wr.atomic.swap = 2;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	int rc = rnic_post_send(f->qp, &wr, &bad, s.now);
	if (rc == 0 && f->type == IBV_QPT_RC && f->nsent < MAX_SENT) {
		uint32_t len = sge ? sge->length : 0;
		bool atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP;
		uint32_t n = atomic ? 1 : len ? (len + MTU - 1) / MTU : 1;
		f->sent[f->nsent++] = (struct sent){ .op = op, .first_psn = f->next_psn, .npkts = n, .len = len };
		f->next_psn = (f->next_psn + n) & 0xffffff;
	}
	return rc;
}

/* Outstanding requests on an RTS QP, for the completer to match fuzzed
 * responses against.  Variant 0: SEND, WRITE, READ, atomic, SEND with
 * immediate (PSNs 0..11 at MTU 256); variant 1: READ first (PSN 0),
 * compare-and-swap, SEND. */
static void post_requests(struct fqp *f, int variant)
{
	struct ibv_sge src = { .addr = mr_va(MR_RW, 0), .length = 700, .lkey = rnic_mr_lkey(s.mr[MR_RW]) };
	if (f->type == IBV_QPT_UD) {
		src.length = 200;
		post_send1(f, IBV_WR_SEND, &src, 0, 0, true);
		return;
	}
	struct ibv_sge dst;
	if (variant == 1 && f->type == IBV_QPT_RC) {
		if (take_slot(&dst)) {
			dst.length = 40;        /* one READ RESPONSE ONLY */
			post_send1(f, IBV_WR_RDMA_READ, &dst, 0x8000, 0x4321, false);
		}
		if (take_slot(&dst)) {
			dst.addr += 16;
			dst.length = 8;
			post_send1(f, IBV_WR_ATOMIC_CMP_AND_SWP, &dst, 0x8800, 0x4321, false);
		}
		src.length = 40;
		post_send1(f, IBV_WR_SEND, &src, 0, 0, false);
		return;
	}
	post_send1(f, IBV_WR_SEND, &src, 0, 0, false);
	post_send1(f, IBV_WR_RDMA_WRITE, &src, 0x9000, 0x1234, false);
	if (f->type != IBV_QPT_RC)
		return;
	if (take_slot(&dst))
		post_send1(f, IBV_WR_RDMA_READ, &dst, 0x8000, 0x4321, false);
	if (take_slot(&dst)) {
		dst.addr += 8;                  /* aligned, inside the SGE area */
		dst.length = 8;
		post_send1(f, IBV_WR_ATOMIC_FETCH_AND_ADD, &dst, 0x8800, 0x4321, false);
	}
	post_send1(f, IBV_WR_SEND_WITH_IMM, &src, 0, 0, false);
}

static int modify(struct fqp *f, enum ibv_qp_state to)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE;
	memset(&a, 0, sizeof(a));
	a.qp_state = to;
	switch (to) {
	case IBV_QPS_INIT:
		a.port_num = 1;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (f->type == IBV_QPT_UD) {
			a.qkey = UD_QKEY;
			mask |= IBV_QP_QKEY;
		} else {
			a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
			mask |= IBV_QP_ACCESS_FLAGS;
		}
		break;
	case IBV_QPS_RTR:
		if (f->type == IBV_QPT_UD)
			break;
		a.path_mtu = IBV_MTU_256;      /* MTU */
		a.dest_qp_num = PEER_QPN_BASE + f->qpn % 64;
		a.rq_psn = 0;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.hop_limit = 64;
		memcpy(a.ah_attr.grh.dgid.raw, s.peer.raw, 16);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (f->type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		break;
	case IBV_QPS_RTS:
		a.sq_psn = 0;
		mask |= IBV_QP_SQ_PSN;
		if (f->type == IBV_QPT_RC) {
			a.timeout = 1;
			a.retry_cnt = 2;
			a.rnr_retry = 2;
			a.max_rd_atomic = 4;
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		break;
	default:
		break;
	}
	int rc = rnic_qp_modify(f->qp, &a, mask, s.now);
	if (rc == 0)
		f->state = to;
	return rc;
}

/* A QP of `type` brought to `target`, with `nrecv` receives (not with an
 * SRQ) and, from RTS on, the requests of post_requests(variant). */
static struct fqp *add_qp(enum ibv_qp_type type, enum ibv_qp_state target, bool use_srq, unsigned nrecv,
			  int variant)
{
	FUZZ_ASSERT(s.nq < MAX_QPS);
	struct fqp *f = &s.q[s.nq++];
	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof(init));
	init.qp_type = type;
	init.cap.max_send_wr = 16;
	init.cap.max_recv_wr = 16;
	init.cap.max_send_sge = 2;
	init.cap.max_recv_sge = 2;
	f->type = type;
	f->qp = use_srq ? rnic_qp_create_srq(s.pd, s.cq, s.cq, s.srq, &init, NULL)
			: rnic_qp_create(s.pd, s.cq, s.cq, &init, NULL);
	FUZZ_ASSERT(f->qp);
	f->qpn = rnic_qp_num(f->qp);
	f->state = IBV_QPS_RESET;
	if (target == IBV_QPS_RESET)
		return f;
	FUZZ_ASSERT(modify(f, IBV_QPS_INIT) == 0);
	if (!use_srq)
		post_recvs(f->qp, NULL, nrecv);
	if (target == IBV_QPS_INIT)
		return f;
	FUZZ_ASSERT(modify(f, IBV_QPS_RTR) == 0);
	if (target == IBV_QPS_RTR)
		return f;
	FUZZ_ASSERT(modify(f, IBV_QPS_RTS) == 0);
	post_requests(f, variant);
	if (target == IBV_QPS_SQD) {
		FUZZ_ASSERT(modify(f, IBV_QPS_SQD) == 0);
	} else if (target == IBV_QPS_ERR) {
		FUZZ_ASSERT(modify(f, IBV_QPS_ERR) == 0);
	} else if (target == IBV_QPS_SQE) {
		/* a UD send with a bad lkey fails locally: SQE (IBTA 10.3.1) */
		struct ibv_sge bad = { .addr = mr_va(MR_RW, 0), .length = 16, .lkey = 0xdead00 };
		post_send1(f, IBV_WR_SEND, &bad, 0, 0, true);
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		FUZZ_ASSERT(rnic_qp_query(f->qp, &a, &ia) == 0 && a.qp_state == IBV_QPS_SQE);
		f->state = IBV_QPS_SQE;
	}
	return f;
}

static void scene_build(void)
{
	memset(&s, 0, sizeof(s));
	arena_fill();
	s.now = T0;
	set_gid(&s.gid, 10, 0, 0, 1);
	set_gid(&s.peer, 10, 0, 0, 2);
	memset(&s.mgid, 0, sizeof(s.mgid));
	s.mgid.raw[0] = 0xff;
	s.mgid.raw[1] = 0x0e;
	s.mgid.raw[15] = 1;

	struct rnic_config cfg;
	rnic_config_default(&cfg);
	cfg.gid = s.gid;
	cfg.max_qp = 64;
	cfg.max_mr = 32;
	cfg.max_cqe = 4096;
	cfg.max_srq = 2;
	cfg.max_ah = 4;
	cfg.seed = 7;
	struct rnic_io io = { .xmit = io_xmit };
	s.r = rnic_create(&cfg, &io);
	FUZZ_ASSERT(s.r);
	if (verbose)
		rnic_set_trace(s.r, trace_line, NULL);
	s.pd = rnic_pd_alloc(s.r);
	s.cq = rnic_cq_create(s.r, 4096, NULL);
	FUZZ_ASSERT(s.pd && s.cq);
	for (int m = 0; m < NMR; m++) {
		s.mr[m] = rnic_mr_reg(s.pd, arena + mr_off[m], mr_def[m].len, mr_def[m].iova, mr_def[m].access);
		FUZZ_ASSERT(s.mr[m]);
	}
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	s.srq = rnic_srq_create(s.pd, &sa, NULL);
	FUZZ_ASSERT(s.srq);
	post_recvs(NULL, s.srq, 3);
	struct ibv_ah_attr aa;
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.hop_limit = 64;
	memcpy(aa.grh.dgid.raw, s.peer.raw, 16);
	s.ah = rnic_ah_create(s.pd, &aa);
	FUZZ_ASSERT(s.ah);

	static const enum ibv_qp_state conn_states[] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR,
							 IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_ERR };
	for (unsigned i = 0; i < sizeof(conn_states) / sizeof(conn_states[0]); i++) {
		add_qp(IBV_QPT_RC, conn_states[i], false, 2, 0);
		add_qp(IBV_QPT_UC, conn_states[i], false, 2, 0);
	}
	static const enum ibv_qp_state ud_states[] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
						       IBV_QPS_SQD, IBV_QPS_SQE, IBV_QPS_ERR };
	for (unsigned i = 0; i < sizeof(ud_states) / sizeof(ud_states[0]); i++)
		add_qp(IBV_QPT_UD, ud_states[i], false, 2, 0);
	add_qp(IBV_QPT_RC, IBV_QPS_RTS, true, 0, 0);                  /* on the SRQ */
	struct fqp *m = add_qp(IBV_QPT_UD, IBV_QPS_RTS, false, 2, 0); /* in the group */
	FUZZ_ASSERT(rnic_attach_mcast(m->qp, &s.mgid, 0) == 0);
	/* More RC RTS QPs: a READ outstanding at PSN 0, and one without
	 * receives (a SEND gets an RNR NAK). */
	add_qp(IBV_QPT_RC, IBV_QPS_RTS, false, 2, 1);
	add_qp(IBV_QPT_RC, IBV_QPS_RTS, false, 0, 1);
}

/* Everything the CQ holds: each completion names a WR we posted, and a
 * receive fits its SGE. */
static void drain_cq(void)
{
	struct ibv_wc wc[64];
	int n;
	while ((n = rnic_cq_poll(s.cq, 64, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			FUZZ_ASSERT(wc[i].wr_id >= 1 && wc[i].wr_id <= s.next_wr);
			if (wc[i].status == IBV_WC_SUCCESS && (wc[i].opcode & IBV_WC_RECV))
				FUZZ_ASSERT(s.recv_len[wc[i].wr_id] && wc[i].byte_len <= s.recv_len[wc[i].wr_id]);
		}
	}
}

static void scene_destroy(void)
{
	drain_cq();
	for (unsigned i = 0; i < s.nq; i++)
		FUZZ_ASSERT(rnic_qp_destroy(s.q[i].qp) == 0);
	FUZZ_ASSERT(rnic_ah_destroy(s.ah) == 0);
	FUZZ_ASSERT(rnic_srq_destroy(s.srq) == 0);
	for (int m = 0; m < NMR; m++)
		FUZZ_ASSERT(rnic_mr_dereg(s.mr[m]) == 0);
	FUZZ_ASSERT(rnic_cq_destroy(s.cq) == 0);
	FUZZ_ASSERT(rnic_pd_free(s.pd) == 0);
	rnic_destroy(s.r);
}

/* ---- packets ----------------------------------------------------------------- */

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* Header flags (raw mode: steering; both modes: source, destination,
 * time). */
enum {
	F_STEER_QP = 1u << 0,   /* DestQP := an existing QPN (sel)            */
	F_STEER_KEY = 1u << 1,  /* RETH/AtomicETH rkey + VA := an MR's (sel, aux); DETH Q_Key := UD's */
	F_STEER_PSN = 1u << 2,  /* PSN := aux & 15                             */
	F_PKEY = 1u << 3,       /* P_Key := 0xffff                             */
	F_SRC_SHIFT = 4,        /* bits 4-5: 0,1 peer; 2 another host; 3 us    */
	F_MCAST = 1u << 6,      /* IP destination := the multicast group       */
	F_TIME = 1u << 7,       /* time passes first: aux * 1.5 us, timers fire */
};

/* An rkey and VA aimed at one of the MRs (m 0..4), a stale or foreign key
 * of one (5..7); `off` folded into (a bit more than) the MR. */
static void aim(unsigned m, uint64_t off, bool aligned, bool below, uint32_t *rkey, uint64_t *va)
{
	m %= 8;
	unsigned base_mr = m < NMR ? m : m - NMR;
	*rkey = rnic_mr_rkey(s.mr[base_mr]) ^ (m < NMR ? 0 : m == 5 ? 1u : 0x100u);
	*va = mr_def[base_mr].iova + off % (mr_def[base_mr].len + 64);
	if (aligned)
		*va &= ~7ull;
	if (below)
		*va = mr_def[base_mr].iova - 8;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void steer(uint8_t *pkt, size_t len, uint8_t flags, uint8_t sel, uint8_t aux)
{
	if (len < WIRE_BTH_LEN)
		return;
	if (flags & F_PKEY) {
		pkt[2] = 0xff;
		pkt[3] = 0xff;
	}
	if (flags & F_STEER_QP) {
		uint32_t qpn = s.q[sel % s.nq].qpn;
		if (flags & F_MCAST)
			qpn = RNIC_MCAST_QPN;
		pkt[5] = (uint8_t)(qpn >> 16);
		pkt[6] = (uint8_t)(qpn >> 8);
		pkt[7] = (uint8_t)qpn;
	}
	if (flags & F_STEER_PSN) {
		pkt[9] = 0;
		pkt[10] = 0;
		pkt[11] = aux & 15;
	}
	if (!(flags & F_STEER_KEY))
		return;
	const struct wire_opcode_info *info = wire_opcode_info(pkt[0]);
	if (!info)
		return;
	size_t off = WIRE_BTH_LEN;
	if (info->headers & WIRE_HDR_RDETH)
		off += 4;
	if (info->headers & WIRE_HDR_DETH) {
		if (len >= off + 8)
			put_be32(pkt + off, UD_QKEY);
		off += 8;
	}
	if ((info->headers & (WIRE_HDR_RETH | WIRE_HDR_ATMETH)) && len >= off + 16) {
		/* sel bits 5-7: which MR; VA: the packet's own value folded
		 * into the MR; aux bit 7 aligns it (atomics), bits 5-6 both set
		 * put it just below the MR */
		uint32_t rkey;
		uint64_t va;
		aim(sel >> 5, get_be64(pkt + off), aux & 0x80, (aux & 0x60) == 0x60, &rkey, &va);
		put_be64(pkt + off, va);
		put_be32(pkt + off + 8, rkey);
	}
}

/* Synthesized mode.  The body is
 *   [0] PSN (bit 7: just below the wrap, else 0..31)
 *   [1] AETH syndrome
 *   [2] misc: bit 0 AckReq, 1 SE, 2 wrong Q_Key, 3 unaligned VA, 4-6
 *       which MR (aim), 7 RETH DMA length off by one
 *   [3] VA offset / 8, AETH MSN
 *   [4..7] ImmDt, IETH, swap/add, AtomicAckETH
 *   [8..11] compare, DETH source QP
 *   [12] length: bit 7 set: one of the lengths the scene's QPs expect
 *        (lengths[] by bits 0-2; a shorter body is padded), else the
 *        rest of the body; also a READ request's DMA length
 *   [13..] payload
 * Mode bit 1 (with requests outstanding on the target): instead of the
 * (mode >> 1)-th opcode, the answer to one of them (see below).
 * Returns the encoded length, or 0 if nothing was built. */
static const uint32_t lengths[8] = { 0, 1, 8, 40, 64, 255, 256, 320 };

static size_t synthesize(uint8_t *out, size_t cap, uint8_t flags, uint8_t sel, uint8_t mode, const uint8_t *b,
			 size_t n)
{
	uint8_t f[13] = { 0 };
	static uint8_t padded[1024];
	memcpy(f, b, n < sizeof(f) ? n : sizeof(f));
	const uint8_t *pay = n > sizeof(f) ? b + sizeof(f) : NULL;
	size_t pay_len = n > sizeof(f) ? n - sizeof(f) : 0;
	if (f[12] & 0x80) {
		size_t want_len = lengths[f[12] & 7];
		memset(padded, 0x5a, want_len);
		if (pay)
			memcpy(padded, pay, pay_len < want_len ? pay_len : want_len);
		pay = padded;
		pay_len = want_len;
	}
	const struct fqp *t = &s.q[sel % s.nq];
	unsigned want = t->type == IBV_QPT_RC ? WIRE_QP_RC : t->type == IBV_QPT_UC ? WIRE_QP_UC : WIRE_QP_UD;
	/* the (mode >> 1)-th opcode of the target's type, cyclically */
	uint8_t ops[256];
	unsigned nops = 0;
	for (unsigned op = 0; op < 256; op++) {
		const struct wire_opcode_info *info = wire_opcode_info((uint8_t)op);
		if (info && (info->qp_types & want))
			ops[nops++] = (uint8_t)op;
	}
	if (!nops)
		return 0;
	struct wire_ib ib;
	memset(&ib, 0, sizeof(ib));
	ib.bth.opcode = ops[(mode >> 1) % nops];
	/* PSNs near 0 (where the scene's QPs are) or just below the wrap */
	ib.bth.psn = (f[0] & 0x80) ? 0xfffff0u | (f[0] & 15) : f[0] & 31;
	uint8_t syndrome = f[1];
	if ((mode & 2) && t->nsent) {
		/* An answer to a request the QP sent (mode bits 2-7 pick it):
		 * the response opcode, PSN (f[0]: which packet, bit 3 one
		 * further) and length it expects; f[1] bit 7 clear: a plain
		 * ACK with credits f[1] & 0x1f, else syndrome f[1] & 0x7f
		 * (ACK, RNR NAK, reserved, NAK with the low bits' code). */
		const struct sent *w = &t->sent[(mode >> 2) % t->nsent];
		uint32_t j = (f[0] & 7) % w->npkts;
		ib.bth.psn = (w->first_psn + j + ((f[0] & 8) ? 1 : 0)) & 0xffffff;
		syndrome = (f[1] & 0x80) ? f[1] & 0x7f : wire_aeth_syndrome(WIRE_AETH_ACK, f[1]);
		if (w->op == IBV_WR_RDMA_READ) {
			uint8_t op = w->npkts == 1 ? WIRE_OP_READ_RESP_ONLY
				     : j == 0 ? WIRE_OP_READ_RESP_FIRST
				     : j == w->npkts - 1 ? WIRE_OP_READ_RESP_LAST : WIRE_OP_READ_RESP_MIDDLE;
			ib.bth.opcode = WIRE_TR_RC | op;
			if (!(f[12] & 0x80)) {
				size_t want_len = j == w->npkts - 1 ? w->len - j * MTU : MTU;
				memset(padded, 0x3c, want_len);
				if (pay)
					memcpy(padded, pay, pay_len < want_len ? pay_len : want_len);
				pay = padded;
				pay_len = want_len;
			}
		} else if (w->op == IBV_WR_ATOMIC_FETCH_AND_ADD || w->op == IBV_WR_ATOMIC_CMP_AND_SWP) {
			ib.bth.opcode = WIRE_TR_RC | WIRE_OP_ATOMIC_ACK;
		} else {
			ib.bth.opcode = WIRE_TR_RC | WIRE_OP_ACK;
		}
	}
	const struct wire_opcode_info *info = wire_opcode_info(ib.bth.opcode);
	ib.bth.pkey = 0xffff;
	ib.bth.dqpn = (flags & F_MCAST) ? RNIC_MCAST_QPN : t->qpn;
	ib.bth.ackreq = f[2] & 1;
	ib.bth.se = (f[2] >> 1) & 1;
	if (info->flags & WIRE_F_PAYLOAD) {
		ib.payload = pay;
		ib.payload_len = (uint32_t)(pay_len > 1024 ? 1024 : pay_len);
	}
	uint32_t rkey;
	uint64_t va;
	aim((f[2] >> 4) & 7, (uint64_t)f[3] * 8 + ((f[2] & 8) ? 3 : 0), false, false, &rkey, &va);
	if (info->headers & WIRE_HDR_RETH) {
		ib.reth.va = va;
		ib.reth.rkey = rkey;
		ib.reth.dma_len = ib.payload_len + ((f[2] & 0x80) ? 1 : 0);
		if (info->flags & WIRE_F_READ)
			ib.reth.dma_len = (f[12] & 0x80) ? lengths[f[12] & 7] : (uint32_t)f[12] << 4;
	}
	if (info->headers & WIRE_HDR_ATMETH) {
		ib.atmeth.va = va;
		ib.atmeth.rkey = rkey;
		ib.atmeth.swap_add = get_be32(f + 4);
		ib.atmeth.compare = get_be32(f + 8);
	}
	if (info->headers & WIRE_HDR_AETH) {
		ib.aeth.syndrome = syndrome;
		ib.aeth.msn = f[3];
	}
	if (info->headers & WIRE_HDR_ATMACK)
		ib.atmack = get_be32(f + 4);
	if (info->headers & WIRE_HDR_IMMDT)
		ib.imm = get_be32(f + 4);
	if (info->headers & WIRE_HDR_IETH)
		ib.ieth = (f[5] & 1) ? rkey : get_be32(f + 4);
	if (info->headers & WIRE_HDR_DETH) {
		ib.deth.qkey = (f[2] & 4) ? get_be32(f + 4) : UD_QKEY;
		ib.deth.sqpn = get_be32(f + 8) & 0xffffff;
	}
	int len = wire_encode_ib(&ib, out, cap);
	return len > 0 ? (size_t)len : 0;
}

static void dump_counters(const struct rnic_counters *c)
{
#define DUMP(name)                                                             \
	if (c->name)                                                           \
		fprintf(stderr, "  %s %llu\n", #name, (unsigned long long)c->name);
	RNIC_COUNTER_LIST(DUMP)
#undef DUMP
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	arena_init();
	verbose = getenv("FUZZ_DEVICE_VERBOSE") != NULL;
	return 0;
}

#define MAX_PACKETS 64
#define HDR 6

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	scene_build();
	uint64_t fed = 0, fed_bytes = 0;
	const struct rnic_counters *c = rnic_counters(s.r);
	uint64_t rx0 = c->rx_packets;

	size_t pos = 0;
	while (pos + HDR <= size && fed < MAX_PACKETS) {
		uint8_t flags = data[pos], sel = data[pos + 1], aux = data[pos + 2], mode = data[pos + 3];
		size_t len = (size_t)data[pos + 4] | (size_t)data[pos + 5] << 8;
		pos += HDR;
		if (len > size - pos)
			len = size - pos;
		if (len > WIRE_MAX_IB_PACKET + 64)
			len = WIRE_MAX_IB_PACKET + 64;
		const uint8_t *body = data + pos;
		pos += len;
		static uint8_t built[WIRE_MAX_IB_PACKET + 64];
		if (mode & 1) {
			len = synthesize(built, sizeof(built), flags, sel, mode, body, len);
			if (!len)
				continue;
			body = built;
		}
		/* exactly len bytes, so a read past the end is caught */
		uint8_t *pkt = malloc(len ? len : 1);
		FUZZ_ASSERT(pkt);
		memcpy(pkt, body, len);
		if (!(mode & 1))
			steer(pkt, len, flags, sel, aux);

		if (flags & F_TIME) {
			s.now += (uint64_t)aux * 1500;
			if (rnic_next_deadline(s.r) <= s.now)
				rnic_advance(s.r, s.now);
		}
		struct rnic_rx rx;
		memset(&rx, 0, sizeof(rx));
		switch ((flags >> F_SRC_SHIFT) & 3) {
		case 0:
		case 1:
			rx.src = s.peer;
			break;
		case 2:
			set_gid(&rx.src, 10, 0, sel, aux);
			break;
		default:
			rx.src = s.gid;
			break;
		}
		rx.dst = (flags & F_MCAST) ? s.mgid : s.gid;
		rx.sport = (uint16_t)(0xc000 | sel << 4 | aux);
		rx.ecn = aux & 3;
		rx.ib = pkt;
		rx.ib_len = len;
		if (verbose)
			fprintf(stderr, "packet %llu: %zu bytes, opcode 0x%02x to qpn 0x%06x\n", (unsigned long long)fed,
				len, len ? pkt[0] : 0, len >= 8 ? (unsigned)(pkt[5] << 16 | pkt[6] << 8 | pkt[7]) : 0);
		rnic_receive(s.r, &rx, s.now);
		free(pkt);
		fed++;
		fed_bytes += len;
	}
	/* Let the timers run out: retransmits, RNR waits, delayed ACKs. */
	for (int i = 0; i < 64; i++) {
		uint64_t d = rnic_next_deadline(s.r);
		if (d == UINT64_MAX)
			break;
		s.now = d > s.now ? d : s.now + 1;
		rnic_advance(s.r, s.now);
	}

	FUZZ_ASSERT(c->rx_packets - rx0 == fed);
	FUZZ_ASSERT(c->rx_bytes == fed_bytes);
	FUZZ_ASSERT(c->tx_packets == s.xmits);
	/* Each packet is dropped at most once.  rx_drop_bad_opcode_seq is
	 * left out of the sum and bounded on its own: the UC responder counts
	 * a MIDDLE/LAST outside a message twice (resp_check_op_seq, then
	 * resp_drop_message), and counts a FIRST/ONLY that abandons a message
	 * although the packet itself is accepted (reported; reproducer: a
	 * synthesized UC RDMA WRITE MIDDLE to the RTS UC QP). */
	FUZZ_ASSERT(c->rx_drop_bad_opcode_seq <= 2 * c->rx_packets);
	uint64_t drops = c->rx_drop_malformed + c->rx_drop_bad_icrc + c->rx_drop_unknown_qp + c->rx_drop_qp_state +
			 c->rx_drop_bad_pkey + c->rx_drop_bad_qkey +
			 c->rx_drop_out_of_window + c->rx_drop_ghost_response + c->rx_drop_bad_src +
			 c->rx_drop_no_recv_wqe + c->rx_drop_mcast_no_group + c->rx_drop_gsi;
	if (drops > c->rx_packets) {
		fprintf(stderr, "drops %llu > rx_packets %llu\n", (unsigned long long)drops,
			(unsigned long long)c->rx_packets);
		dump_counters(c);
		FUZZ_ASSERT(!"a packet dropped more than once");
	}
	if (verbose) {
		fprintf(stderr, "%llu packets fed; qps %u; counters:\n", (unsigned long long)fed, s.nq);
		dump_counters(c);
	}
	drain_cq();
	arena_check();
	scene_destroy();
	return 0;
}
