/*
 * mr_ex_test.c — the memory verbs beyond ibv_reg_mr, through the system
 * header and our libibverbs.so.1: on-demand paging, ibv_advise_mr,
 * ibv_rereg_mr, thread and parent domains.
 *
 * usage: mr_ex_test [odp|rereg|domains|pin]
 *   odp      ODP caps; explicit and implicit ODP MRs carry RDMA WRITE,
 *            READ and SEND; an unmapped or read-only page inside an
 *            implicit MR ends in an error completion (remote access error,
 *            local protection error) instead of a crash; ibv_advise_mr
 *            argument checks
 *   rereg    ibv_rereg_mr return codes and errno, the old registration
 *            intact after a refused call, CHANGE_TRANSLATION / _PD /
 *            _ACCESS seen by traffic
 *   domains  ibv_alloc_td / ibv_alloc_parent_domain: EBUSY ordering,
 *            CQ ex / QP / MR on a parent domain, traffic over it
 *   pin      registration refuses, EFAULT, what the kernel could not pin:
 *            unmapped pages (1 GiB over a 4 KiB malloc, 64 TiB, address
 *            0x1000, a hole), PROT_NONE, a read-only mapping for writing;
 *            through ibv_reg_mr, _iova, _iova2 and ibv_rereg_mr (the old
 *            registration stands); ODP and valid mappings still register
 *
 * Every mode connects two RC QPs of one context to each other over our own
 * GID (as verbs_api_test loopback) and busy-polls with a deadline; a QP
 * that went to error is replaced by a fresh pair.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_test_util.h"

enum { BUF = 1 << 16 };

static const struct vt_rc_attr rc_attr = {
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	.psn = 7,
	.rd_atomic = 1,
	.timeout = 14,
};

/* Two connected RC QPs, each with its own CQ. */
struct pair {
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
};

static void pair_open(struct ibv_context *ctx, struct ibv_pd *pd, struct pair *p)
{
	union ibv_gid gid;

	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);
	for (int i = 0; i < 2; i++) {
		p->cq[i] = ibv_create_cq(ctx, 32, NULL, NULL, 0);
		REQUIRE(p->cq[i]);
		p->qp[i] = vt_create_rc_qp(pd, p->cq[i], p->cq[i], NULL);
	}
	vt_connect_rc(p->qp[0], p->qp[1]->qp_num, &gid, &rc_attr);
	vt_connect_rc(p->qp[1], p->qp[0]->qp_num, &gid, &rc_attr);
}

static void pair_close(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		CHECK(ibv_destroy_qp(p->qp[i]) == 0);
		CHECK(ibv_destroy_cq(p->cq[i]) == 0);
	}
}

/* One completion from cq within 5 s (polling drives the transport). */
static struct ibv_wc wait_one(struct ibv_cq *cq)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		REQUIRE(n >= 0);
		if (n == 1)
			return wc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		REQUIRE(t.tv_sec - t0.tv_sec < 5);
	}
}

/* Posts one signalled WR of opcode with one SGE on qp; returns its
 * completion. */
static struct ibv_wc post_one(struct ibv_qp *qp, struct ibv_cq *cq, enum ibv_wr_opcode op,
			      void *laddr, uint32_t len, uint32_t lkey, uint64_t raddr,
			      uint32_t rkey)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;

	wr_send_1(&wr, &sge, op, 1, (uintptr_t)laddr, len, lkey);
	wr_remote(&wr, raddr, rkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	REQUIRE(ibv_post_send(qp, &wr, &bad) == 0);
	return wait_one(cq);
}

static void fill(char *p, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(i * 31 + (size_t)seed);
}

/* ---- odp ------------------------------------------------------------------ */

static void check_odp_caps(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex dx;
	const uint32_t need = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			      IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
			      IBV_ODP_SUPPORT_SRQ_RECV;

	REQUIRE(ibv_query_device_ex(ctx, NULL, &dx) == 0);
	CHECK(dx.odp_caps.general_caps & IBV_ODP_SUPPORT);
	CHECK(dx.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT);
	CHECK((dx.odp_caps.per_transport_caps.rc_odp_caps & need) == need);
	CHECK(dx.odp_caps.per_transport_caps.ud_odp_caps & IBV_ODP_SUPPORT_SEND);
	CHECK(!(dx.odp_caps.per_transport_caps.ud_odp_caps & IBV_ODP_SUPPORT_READ));
}

static void check_advise(struct ibv_pd *pd, struct ibv_mr *odp, struct ibv_mr *plain, char *buf)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 4096, .lkey = odp->lkey };

	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0);
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &sge, 1) == 0);
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, &sge, 1) == 0);
	CHECK(ibv_advise_mr(pd, (enum ibv_advise_mr_advice)99, 0, &sge, 1) == EOPNOTSUPP);
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0x80, &sge, 1) == EOPNOTSUPP);
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 0) == EINVAL);
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, NULL, 1) == EINVAL);
	sge.length = BUF + 1;   /* past the MR */
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == EINVAL);
	sge.length = 16;
	sge.lkey = odp->lkey ^ 0x100;   /* another slot */
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == EINVAL);
	sge.lkey = plain->lkey;   /* not an ODP MR */
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == EINVAL);
}

static int run_odp(void)
{
	struct ibv_context *ctx = vt_open_device("softrnic0");
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		       IBV_ACCESS_REMOTE_ATOMIC;
	long ps = sysconf(_SC_PAGESIZE);
	struct ibv_mr *odp, *plain, *imp;
	struct ibv_pd *pd;
	struct pair p;
	struct ibv_wc wc;
	char *a, *b, *m;

	check_odp_caps(ctx);
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	a = calloc(1, BUF);
	b = calloc(1, BUF);
	REQUIRE(a && b);

	/* A NULL address is only valid as implicit ODP. */
	errno = 0;
	CHECK(!ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE) && errno == EINVAL);
	errno = 0;
	CHECK(!ibv_reg_mr(pd, NULL, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND) &&
	      errno == EINVAL);
	odp = ibv_reg_mr(pd, a, BUF, rw | IBV_ACCESS_ON_DEMAND);
	plain = ibv_reg_mr(pd, b, BUF, rw);
	imp = ibv_reg_mr(pd, NULL, SIZE_MAX, rw | IBV_ACCESS_ON_DEMAND);
	REQUIRE(odp && plain && imp);
	CHECK(imp->addr == NULL && imp->length == SIZE_MAX);
	check_advise(pd, odp, plain, a);

	/* Explicit ODP: WRITE a -> b, READ b -> a. */
	pair_open(ctx, pd, &p);
	fill(a, 5000, 1);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_WRITE, a, 5000, odp->lkey, (uintptr_t)b,
		      plain->rkey);
	CHECK(wc.status == IBV_WC_SUCCESS && memcmp(a, b, 5000) == 0);
	fill(b + 8192, 3000, 2);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_READ, a + 100, 3000, odp->lkey,
		      (uintptr_t)b + 8192, plain->rkey);
	CHECK(wc.status == IBV_WC_SUCCESS && memcmp(a + 100, b + 8192, 3000) == 0);

	/* Implicit ODP: any mapped address works through its one key, on
	 * both ends, and a SEND lands in a receive through it. */
	fill(b, 2000, 3);
	wc = post_one(p.qp[1], p.cq[1], IBV_WR_RDMA_WRITE, b, 2000, imp->lkey,
		      (uintptr_t)a + 10000, imp->rkey);
	CHECK(wc.status == IBV_WC_SUCCESS && memcmp(b, a + 10000, 2000) == 0);
	vt_post_recv(p.qp[1], imp, b + 30000, 4096, 9);
	fill(a, 1500, 4);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_SEND, a, 1500, imp->lkey, 0, 0);
	CHECK(wc.status == IBV_WC_SUCCESS);
	wc = wait_one(p.cq[1]);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 1500 && memcmp(a, b + 30000, 1500) == 0);

	/* Unmapped page inside the implicit MR: the peer gets a remote access
	 * error NAK, nobody faults. */
	m = mmap(NULL, (size_t)ps * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m != MAP_FAILED);
	REQUIRE(munmap(m + ps, (size_t)ps) == 0);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_WRITE, a, 64, odp->lkey,
		      (uintptr_t)m + ps - 32, imp->rkey);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR);
	pair_close(&p);

	/* A read-only page is no target for a write, but may be read. */
	pair_open(ctx, pd, &p);
	REQUIRE(mprotect(m, (size_t)ps, PROT_READ) == 0);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_READ, a, 64, odp->lkey, (uintptr_t)m,
		      imp->rkey);
	CHECK(wc.status == IBV_WC_SUCCESS);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_WRITE, a, 64, odp->lkey, (uintptr_t)m,
		      imp->rkey);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR);
	pair_close(&p);

	/* Local side: sending from an unmapped page through the implicit
	 * lkey is a local protection error. */
	pair_open(ctx, pd, &p);
	vt_post_recv(p.qp[1], plain, b, 4096, 5);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_SEND, m + ps, 64, imp->lkey, 0, 0);
	CHECK(wc.status == IBV_WC_LOC_PROT_ERR);
	pair_close(&p);
	REQUIRE(munmap(m, (size_t)ps) == 0);

	CHECK(ibv_dereg_mr(imp) == 0);
	CHECK(ibv_dereg_mr(plain) == 0);
	CHECK(ibv_dereg_mr(odp) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	free(a);
	free(b);
	return check_failures != 0;
}

/* ---- rereg ---------------------------------------------------------------- */

static void check_rereg_refusals(struct ibv_pd *pd, struct ibv_mr *mr, char *buf)
{
	const uint32_t lkey = mr->lkey;

	errno = 0;
	CHECK(ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT && errno == EINVAL);
	errno = 0;
	CHECK(ibv_rereg_mr(mr, 0x100, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT &&
	      errno == EINVAL);
	/* Remote write needs local write (IBTA 10.6.3.1 C10-35). */
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_REMOTE_WRITE) == IBV_REREG_MR_ERR_INPUT && errno == EINVAL);
	/* An access mask without CHANGE_ACCESS. */
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd, NULL, 0, IBV_ACCESS_LOCAL_WRITE) ==
	      IBV_REREG_MR_ERR_INPUT && errno == EINVAL);
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT &&
	      errno == EINVAL);
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 0, 0) ==
	      IBV_REREG_MR_ERR_INPUT && errno == EINVAL);
	/* The old registration stands. */
	CHECK(mr->lkey == lkey && mr->addr == buf && mr->length == BUF && mr->pd == pd);
}

static int run_rereg(void)
{
	struct ibv_context *ctx = vt_open_device("softrnic0");
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *src, *dst;
	struct pair p;
	struct ibv_wc wc;
	char *a, *b, *b2;

	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	a = calloc(1, BUF);
	b = calloc(1, BUF);
	b2 = calloc(1, BUF);
	REQUIRE(pd && pd2 && a && b && b2);
	src = ibv_reg_mr(pd, a, BUF, rw);
	dst = ibv_reg_mr(pd, b, BUF, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(src && dst);
	check_rereg_refusals(pd, dst, b);

	/* Without remote write the peer's WRITE is refused ... */
	pair_open(ctx, pd, &p);
	fill(a, 1000, 5);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_WRITE, a, 1000, src->lkey, (uintptr_t)b,
		      dst->rkey);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR);
	pair_close(&p);

	/* ... and accepted once CHANGE_ACCESS grants it. */
	CHECK(ibv_rereg_mr(dst, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, rw) == 0);
	pair_open(ctx, pd, &p);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_WRITE, a, 1000, src->lkey, (uintptr_t)b,
		      dst->rkey);
	CHECK(wc.status == IBV_WC_SUCCESS && memcmp(a, b, 1000) == 0);

	/* CHANGE_TRANSLATION: the key now names b2; b is outside it. */
	CHECK(ibv_rereg_mr(dst, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b2, 4096, 0) == 0);
	CHECK(dst->addr == b2 && dst->length == 4096);
	fill(a, 1000, 6);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_WRITE, a, 1000, src->lkey,
		      (uintptr_t)b2 + 3000, dst->rkey);
	CHECK(wc.status == IBV_WC_SUCCESS && memcmp(a, b2 + 3000, 1000) == 0);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_WRITE, a, 1000, src->lkey,
		      (uintptr_t)b2 + 3500, dst->rkey);   /* past the new end */
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR);
	pair_close(&p);

	/* CHANGE_PD: the MR leaves the QPs' PD, its old PD can go, and the
	 * new one cannot while the MR lives. */
	CHECK(ibv_rereg_mr(dst, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0) == 0);
	CHECK(dst->pd == pd2);
	CHECK(ibv_dealloc_pd(pd2) == EBUSY);
	pair_open(ctx, pd, &p);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_WRITE, a, 100, src->lkey, (uintptr_t)b2,
		      dst->rkey);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR);
	pair_close(&p);
	CHECK(ibv_rereg_mr(dst, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_TRANSLATION, pd, b,
			   BUF, 0) == 0);
	pair_open(ctx, pd, &p);
	fill(a, 100, 7);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_WRITE, a, 100, src->lkey, (uintptr_t)b + 500,
		      dst->rkey);
	CHECK(wc.status == IBV_WC_SUCCESS && memcmp(a, b + 500, 100) == 0);
	pair_close(&p);

	CHECK(ibv_dereg_mr(dst) == 0);
	CHECK(ibv_dereg_mr(src) == 0);
	CHECK(ibv_dealloc_pd(pd2) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	free(a);
	free(b);
	free(b2);
	return check_failures != 0;
}

/* ---- pin ------------------------------------------------------------------ */

/* ibv_reg_mr(pd, addr, len, access) fails with EFAULT. */
#define CHECK_EFAULT(call)                                                     \
	do {                                                                   \
		struct ibv_mr *mr_;                                            \
		errno = 0;                                                     \
		mr_ = (call);                                                  \
		CHECK(!mr_ && errno == EFAULT);                                \
		if (mr_)                                                       \
			ibv_dereg_mr(mr_);                                     \
	} while (0)

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Registers [p, p+len) with `access` (must work) and deregisters it. */
static void check_registers(struct ibv_pd *pd, void *p, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, p, len, access);

	CHECK(mr != NULL);
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0);
}

/* A mapping of `len` bytes with protection `prot`, not populated. */
static char *map(size_t len, int prot)
{
	char *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	REQUIRE(p != MAP_FAILED);
	return p;
}

static int run_pin(void)
{
	struct ibv_context *ctx = vt_open_device("softrnic0");
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		       IBV_ACCESS_REMOTE_ATOMIC;
	const size_t ps = (size_t)sysconf(_SC_PAGESIZE), small = 4 * ps, large = 1024 * ps;
	const size_t gib = (size_t)1 << 30;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	char *heap = malloc(4096), *src = calloc(1, BUF);
	struct ibv_mr *mr, *src_mr;
	struct pair p;
	struct ibv_wc wc;

	REQUIRE(pd && heap && src);

	/* Unmapped: running off a 4 KiB malloc for 1 GiB; 64 TiB, past the
	 * end of the address space; a page nobody maps. */
	CHECK_EFAULT(ibv_reg_mr(pd, heap, gib, rw));
	CHECK_EFAULT(ibv_reg_mr(pd, heap, (size_t)64 << 40, rw));
	CHECK_EFAULT(ibv_reg_mr(pd, heap, (size_t)64 << 40, IBV_ACCESS_REMOTE_READ));
	CHECK_EFAULT(ibv_reg_mr(pd, (void *)0x1000, 4096, IBV_ACCESS_LOCAL_WRITE));
	CHECK_EFAULT(ibv_reg_mr(pd, (void *)0x1000, 4096, 0));
	CHECK_EFAULT(ibv_reg_mr_iova(pd, heap, gib, 0x10000, rw));
	CHECK_EFAULT(ibv_reg_mr_iova2(pd, (void *)0x1000, 4096, 0, IBV_ACCESS_LOCAL_WRITE));
	/* The kernel's order: argument errors before any page is looked at. */
	errno = 0;
	CHECK(!ibv_reg_mr(pd, (void *)0x1000, 4096, IBV_ACCESS_REMOTE_WRITE) && errno == EINVAL);

	/* A hole in the middle, in a short range (touched page by page) and a
	 * long one (checked against /proc/self/maps). */
	for (int i = 0; i < 2; i++) {
		size_t len = i ? large : small;
		char *m = map(len, PROT_READ | PROT_WRITE);

		check_registers(pd, m, len, rw);
		REQUIRE(munmap(m + len / 2, ps) == 0);
		CHECK_EFAULT(ibv_reg_mr(pd, m, len, rw));
		CHECK_EFAULT(ibv_reg_mr(pd, m, len, IBV_ACCESS_REMOTE_READ));
		check_registers(pd, m, len / 2, rw);                    /* the part before it */
		REQUIRE(munmap(m, len) == 0);
	}

	/* PROT_READ: no writable access (local write, remote write or
	 * atomic, window bind); read-only access is fine.  PROT_NONE: none. */
	for (int i = 0; i < 2; i++) {
		size_t len = i ? large : small;
		char *ro = map(len, PROT_READ), *none = map(len, PROT_NONE);

		CHECK_EFAULT(ibv_reg_mr(pd, ro, len, IBV_ACCESS_LOCAL_WRITE));
		CHECK_EFAULT(ibv_reg_mr(pd, ro, len, rw));
		CHECK_EFAULT(ibv_reg_mr(pd, ro, len, IBV_ACCESS_MW_BIND));
		check_registers(pd, ro, len, IBV_ACCESS_REMOTE_READ);
		check_registers(pd, ro, len, 0);
		CHECK_EFAULT(ibv_reg_mr(pd, none, len, 0));
		CHECK_EFAULT(ibv_reg_mr(pd, none, len, IBV_ACCESS_REMOTE_READ));
		CHECK_EFAULT(ibv_reg_mr(pd, none, len, rw));
		/* Writable in part: only the part. */
		REQUIRE(mprotect(ro, ps, PROT_READ | PROT_WRITE) == 0);
		check_registers(pd, ro, ps, IBV_ACCESS_LOCAL_WRITE);
		CHECK_EFAULT(ibv_reg_mr(pd, ro, 2 * ps, IBV_ACCESS_LOCAL_WRITE));
		REQUIRE(munmap(ro, len) == 0 && munmap(none, len) == 0);
	}

	/* Valid mappings still register: the heap buffer, and 1 GiB never
	 * touched (checked without faulting it in: it stays unpopulated). */
	check_registers(pd, heap, 4096, rw);
	char *big = map(gib, PROT_READ | PROT_WRITE);
	double t0 = now_ms();
	mr = ibv_reg_mr(pd, big, gib, rw);
	double t1 = now_ms();
	CHECK(mr != NULL);
	unsigned char resident = 1;
	CHECK(mincore(big + gib / 2, ps, &resident) == 0 && !(resident & 1));
	printf("pin: ibv_reg_mr of 1 GiB took %.3f ms\n", t1 - t0);
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0);

	/* ODP regions are not pinned: they keep their rules. */
	check_registers(pd, (void *)0x1000, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	check_registers(pd, heap, gib, rw | IBV_ACCESS_ON_DEMAND);

	/* ibv_rereg_mr to a translation that cannot be pinned: refused with
	 * EFAULT before anything changes (IBV_REREG_MR_ERR_INPUT: "Old MR is
	 * valid"), and the old registration still carries a WRITE. */
	char *target = calloc(1, BUF);
	REQUIRE(target);
	mr = ibv_reg_mr(pd, target, BUF, rw);
	src_mr = ibv_reg_mr(pd, src, BUF, rw);
	REQUIRE(mr && src_mr);
	uint32_t rkey = mr->rkey;
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, (void *)0x1000, 4096, 0) ==
	      IBV_REREG_MR_ERR_INPUT && errno == EFAULT);
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, heap, gib, 0) ==
	      IBV_REREG_MR_ERR_INPUT && errno == EFAULT);
	char *ro = map(small, PROT_READ);
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, ro, small, 0) ==
	      IBV_REREG_MR_ERR_INPUT && errno == EFAULT);
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS, NULL, ro, small,
			   IBV_ACCESS_LOCAL_WRITE) == IBV_REREG_MR_ERR_INPUT && errno == EFAULT);
	/* Read-only access over the read-only mapping is fine. */
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS, NULL, ro, small,
			   IBV_ACCESS_REMOTE_READ) == 0);
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS, NULL, target, BUF,
			   rw) == 0);
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, (void *)0x1000, 4096, 0) ==
	      IBV_REREG_MR_ERR_INPUT && errno == EFAULT);
	CHECK(mr->addr == target && mr->length == BUF && mr->rkey == rkey);
	pair_open(ctx, pd, &p);
	fill(src, 1000, 8);
	wc = post_one(p.qp[0], p.cq[0], IBV_WR_RDMA_WRITE, src, 1000, src_mr->lkey, (uintptr_t)target + 100,
		      rkey);
	CHECK(wc.status == IBV_WC_SUCCESS && memcmp(src, target + 100, 1000) == 0);
	pair_close(&p);

	CHECK(ibv_dereg_mr(mr) == 0);
	CHECK(ibv_dereg_mr(src_mr) == 0);
	CHECK(munmap(ro, small) == 0 && munmap(big, gib) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	free(target);
	free(src);
	free(heap);
	return check_failures != 0;
}

/* ---- domains -------------------------------------------------------------- */

static void *never_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
			 uint64_t resource_type)
{
	(void)pd; (void)pd_context; (void)size; (void)alignment; (void)resource_type;
	return IBV_ALLOCATOR_USE_DEFAULT;
}

static void never_free(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type)
{
	(void)pd; (void)pd_context; (void)ptr; (void)resource_type;
}

static int run_domains(void)
{
	struct ibv_context *ctx = vt_open_device("softrnic0");
	struct ibv_parent_domain_init_attr pda;
	struct ibv_td_init_attr tda = { 0 };
	struct ibv_cq_init_attr_ex cqa;
	struct ibv_pd *pd, *pdom, *nested;
	struct ibv_cq_ex *cqx;
	struct ibv_td *td;
	struct ibv_mr *mr;
	struct ibv_qp *qp[2];
	struct ibv_wc wc;
	union ibv_gid gid;
	char *buf;

	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	tda.comp_mask = 1;
	errno = 0;
	CHECK(!ibv_alloc_td(ctx, &tda) && errno == EINVAL);
	tda.comp_mask = 0;
	td = ibv_alloc_td(ctx, &tda);
	REQUIRE(td);

	memset(&pda, 0, sizeof(pda));
	errno = 0;
	CHECK(!ibv_alloc_parent_domain(ctx, &pda) && errno == EINVAL);   /* no PD */
	pda.pd = pd;
	pda.td = td;
	pda.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	pda.alloc = never_alloc;   /* free missing */
	errno = 0;
	CHECK(!ibv_alloc_parent_domain(ctx, &pda) && errno == EINVAL);
	pda.free = never_free;
	pda.comp_mask |= IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pdom = ibv_alloc_parent_domain(ctx, &pda);
	REQUIRE(pdom);
	CHECK(pdom->context == ctx);
	pda.pd = pdom;   /* a parent of a parent */
	errno = 0;
	nested = ibv_alloc_parent_domain(ctx, &pda);
	CHECK(!nested && errno == EINVAL);
	/* Neither the PD nor the TD may go while the parent domain uses them. */
	CHECK(ibv_dealloc_pd(pd) == EBUSY);
	CHECK(ibv_dealloc_td(td) == EBUSY);

	/* An extended CQ takes a parent domain, never a plain PD. */
	memset(&cqa, 0, sizeof(cqa));
	cqa.cqe = 16;
	cqa.wc_flags = IBV_WC_STANDARD_FLAGS;
	cqa.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	cqa.parent_domain = pd;
	errno = 0;
	CHECK(!ibv_create_cq_ex(ctx, &cqa) && errno == EINVAL);
	cqa.parent_domain = pdom;
	cqx = ibv_create_cq_ex(ctx, &cqa);
	REQUIRE(cqx);

	/* QPs and an MR on the parent domain; a SEND between the QPs. */
	buf = calloc(1, BUF);
	REQUIRE(buf);
	mr = ibv_reg_mr(pdom, buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	CHECK(mr->pd == pdom);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);
	for (int i = 0; i < 2; i++)
		qp[i] = vt_create_rc_qp(pdom, ibv_cq_ex_to_cq(cqx), ibv_cq_ex_to_cq(cqx), NULL);
	vt_connect_rc(qp[0], qp[1]->qp_num, &gid, &rc_attr);
	vt_connect_rc(qp[1], qp[0]->qp_num, &gid, &rc_attr);
	vt_post_recv(qp[1], mr, buf + 8192, 4096, 2);
	fill(buf, 3000, 8);
	wc = post_one(qp[0], ibv_cq_ex_to_cq(cqx), IBV_WR_SEND, buf, 3000, mr->lkey, 0, 0);
	CHECK(wc.status == IBV_WC_SUCCESS);
	if (wc.opcode == IBV_WC_SEND)   /* the receive may come first */
		wc = wait_one(ibv_cq_ex_to_cq(cqx));
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == 3000);
	CHECK(memcmp(buf, buf + 8192, 3000) == 0);

	/* The parent domain stays while its QPs, SRQs and CQs live. */
	{
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
		struct ibv_srq *srq = ibv_create_srq(pdom, &sa);

		CHECK(srq != NULL);
		if (srq) {
			CHECK(srq->pd == pdom);
			CHECK(ibv_destroy_srq(srq) == 0);
		}
	}
	CHECK(ibv_dealloc_pd(pdom) == EBUSY);
	for (int i = 0; i < 2; i++)
		CHECK(ibv_destroy_qp(qp[i]) == 0);
	CHECK(ibv_dereg_mr(mr) == 0);
	CHECK(ibv_dealloc_pd(pdom) == EBUSY);   /* the CQ */
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)) == 0);
	CHECK(ibv_dealloc_pd(pdom) == 0);
	CHECK(ibv_dealloc_td(td) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	free(buf);
	return check_failures != 0;
}

int main(int argc, char **argv)
{
	static const struct vt_mode modes[] = {
		{ "odp", run_odp },
		{ "rereg", run_rereg },
		{ "domains", run_domains },
		{ "pin", run_pin },
	};

	return vt_main(argc, argv, modes, sizeof(modes) / sizeof(modes[0]));
}
