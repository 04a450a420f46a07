/*
 * test_mr_fault.c — region pages that went away under softrnic (the
 * program unmapped them without deregistering) end each access with the
 * IBTA's error and kill nobody.  A NIC keeps registered pages pinned;
 * softrnic lives in the process and must not die of a peer's request
 * (runtime/mem_guard.h).
 *
 * Two processes, an owner and a peer, each with its own device.  The
 * owner registers mmap'd regions for remote read, write and atomics and
 * for receives, tells the peer the keys, and unmaps them without
 * deregistering.  Then, each case on a fresh QP pair (an error takes the
 * QPs to ERR):
 *   remote   the peer's RDMA WRITE and READ (64 B; 64 KiB, which the
 *            default mode carries on the message path), fetch-and-add
 *            and compare-and-swap into the gone region complete with
 *            IBV_WC_REM_ACCESS_ERR (IBTA 9.7.5.2.4); so do WRITEs and
 *            atomics into a region the owner made read-only (mprotect)
 *            after registering it, whose READ still succeeds;
 *   local    the peer's SEND and RDMA WRITE from, and RDMA READ into, an
 *            SGE of its own whose pages it unmapped after registering
 *            complete with IBV_WC_LOC_PROT_ERR (IBTA 10.6.3.3); so does a
 *            READ into an SGE it made read-only;
 *   receive  the peer's SEND into an owner's receive buffer that went
 *            away: the owner's receive completes with IBV_WC_LOC_PROT_ERR,
 *            the peer's SEND with IBV_WC_REM_OP_ERR (a NAK remote
 *            operational error, as for a receive buffer with a bad lkey);
 * and each once more behind three good WQEs of its kind posted at once
 * (on the message path their reads are put off when the bad one comes:
 * the good ones complete first, successfully);
 * afterwards a WRITE into the owner's mapped buffer still lands, and both
 * processes count mr_fault.  Before that, the guard's handler is seen to
 * pass on the faults that are not its own: to a handler the program
 * installed before the device opened, and without one, to the default
 * action (the process dies of SIGSEGV; under AddressSanitizer, of its
 * report).  CTest runs it in each transport mode (default,
 * SOFTRNIC_LOCAL=packets, SOFTRNIC_LOCAL=0).
 *
 *   test_mr_fault          all cases
 *   test_mr_fault N        case N only (0-based, as printed)
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_util.h"

#define BUF_LEN (256u << 10)
#define REGION_LEN (128u << 10)
#define BIG 65536u
#define ACCESS_ALL \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

enum kind { REMOTE, LOCAL, RECEIVE };

struct fault_case {
	const char *name;
	enum kind kind;                 /* whose memory faults */
	bool read_only;                 /* made read-only, not unmapped */
	enum ibv_wr_opcode op;
	uint32_t len;
	enum ibv_wc_status want;        /* the peer's completion */
	/* WQEs of the same kind into mapped memory posted first, in one go:
	 * on the message path, their reads are put off (pull.c) when the
	 * faulting one arrives, which must not pass them. */
	unsigned good;
};

static const struct fault_case cases[] = {
	{ "RDMA WRITE 64 B into the gone region", REMOTE, false, IBV_WR_RDMA_WRITE, 64, IBV_WC_REM_ACCESS_ERR, 0 },
	{ "RDMA WRITE 64 KiB into the gone region", REMOTE, false, IBV_WR_RDMA_WRITE, BIG, IBV_WC_REM_ACCESS_ERR, 0 },
	{ "RDMA READ 64 B of the gone region", REMOTE, false, IBV_WR_RDMA_READ, 64, IBV_WC_REM_ACCESS_ERR, 0 },
	{ "RDMA READ 64 KiB of the gone region", REMOTE, false, IBV_WR_RDMA_READ, BIG, IBV_WC_REM_ACCESS_ERR, 0 },
	{ "fetch-and-add on the gone region", REMOTE, false, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, IBV_WC_REM_ACCESS_ERR, 0 },
	{ "compare-and-swap on the gone region", REMOTE, false, IBV_WR_ATOMIC_CMP_AND_SWP, 8, IBV_WC_REM_ACCESS_ERR, 0 },
	{ "RDMA WRITE 64 B into the read-only region", REMOTE, true, IBV_WR_RDMA_WRITE, 64, IBV_WC_REM_ACCESS_ERR, 0 },
	{ "RDMA WRITE 64 KiB into the read-only region", REMOTE, true, IBV_WR_RDMA_WRITE, BIG,
	  IBV_WC_REM_ACCESS_ERR, 0 },
	{ "fetch-and-add on the read-only region", REMOTE, true, IBV_WR_ATOMIC_FETCH_AND_ADD, 8,
	  IBV_WC_REM_ACCESS_ERR, 0 },
	{ "RDMA READ 64 KiB of the read-only region", REMOTE, true, IBV_WR_RDMA_READ, BIG, IBV_WC_SUCCESS, 0 },
	{ "SEND 64 B from a gone SGE", LOCAL, false, IBV_WR_SEND, 64, IBV_WC_LOC_PROT_ERR, 0 },
	{ "SEND 64 KiB from a gone SGE", LOCAL, false, IBV_WR_SEND, BIG, IBV_WC_LOC_PROT_ERR, 0 },
	{ "RDMA WRITE 64 KiB from a gone SGE", LOCAL, false, IBV_WR_RDMA_WRITE, BIG, IBV_WC_LOC_PROT_ERR, 0 },
	{ "RDMA READ 64 B into a gone SGE", LOCAL, false, IBV_WR_RDMA_READ, 64, IBV_WC_LOC_PROT_ERR, 0 },
	{ "RDMA READ 64 KiB into a gone SGE", LOCAL, false, IBV_WR_RDMA_READ, BIG, IBV_WC_LOC_PROT_ERR, 0 },
	{ "RDMA READ 64 B into a read-only SGE", LOCAL, true, IBV_WR_RDMA_READ, 64, IBV_WC_LOC_PROT_ERR, 0 },
	{ "RDMA READ 64 KiB into a read-only SGE", LOCAL, true, IBV_WR_RDMA_READ, BIG, IBV_WC_LOC_PROT_ERR, 0 },
	{ "SEND 64 B into a gone receive buffer", RECEIVE, false, IBV_WR_SEND, 64, IBV_WC_REM_OP_ERR, 0 },
	{ "SEND 64 KiB into a gone receive buffer", RECEIVE, false, IBV_WR_SEND, BIG, IBV_WC_REM_OP_ERR, 0 },
	{ "3 RDMA WRITEs 64 KiB, then one into the gone region", REMOTE, false, IBV_WR_RDMA_WRITE, BIG,
	  IBV_WC_REM_ACCESS_ERR, 3 },
	{ "3 SENDs 64 KiB, then one into a gone receive buffer", RECEIVE, false, IBV_WR_SEND, BIG, IBV_WC_REM_OP_ERR,
	  3 },
	{ "3 RDMA READs 64 KiB, then one into a gone SGE", LOCAL, false, IBV_WR_RDMA_READ, BIG, IBV_WC_LOC_PROT_ERR,
	  3 },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* The cases to run: all, or the one named on the command line. */
static unsigned first_case, end_case = NCASES;

/* A region of its own (mmap'd, registered for everything); unmap_region
 * takes its pages away and leaves the registration.  It lies far below
 * where the kernel places mappings by itself (top down from below the
 * stack), so that no later allocation of the process (a QP's queues)
 * lands in the hole and makes the gone pages valid memory again. */
struct region {
	uint8_t *p;
	struct rnic_mr *mr;
};

static void region_init(struct rt_endpoint *ep, struct region *g, unsigned n)
{
	void *at = (void *)(uintptr_t)(0x300000000000ull + (uint64_t)n * (REGION_LEN + (1u << 20)));

	g->p = mmap(at, REGION_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	REQUIRE(g->p != MAP_FAILED, "mmap: %s", strerror(errno));
	memset(g->p, 0x5a, REGION_LEN);
	srt_lock(ep->dev);
	g->mr = rnic_mr_reg(ep->pd, g->p, REGION_LEN, (uint64_t)(uintptr_t)g->p, ACCESS_ALL);
	srt_unlock(ep->dev);
	REQUIRE(g->mr != NULL, "rnic_mr_reg: %s", strerror(errno));
}

static void unmap_region(struct region *g)
{
	REQUIRE(munmap(g->p, REGION_LEN) == 0, "munmap: %s", strerror(errno));
}

static void protect_region(struct region *g)
{
	REQUIRE(mprotect(g->p, REGION_LEN, PROT_READ) == 0, "mprotect: %s", strerror(errno));
}

/* Deregistered at last; a region made read-only is unmapped too. */
static void region_fini(struct rt_endpoint *ep, struct region *g, bool mapped)
{
	srt_lock(ep->dev);
	REQUIRE(rnic_mr_dereg(g->mr) == 0, "dereg of a gone region");
	srt_unlock(ep->dev);
	if (mapped)
		unmap_region(g);
}

/* RESET -> RTS as rt_qp_connect, with remote atomics allowed, and the
 * message path where the runtime offers it (as ibv_modify_qp does). */
static void connect_qp(struct rt_endpoint *ep, struct rnic_qp *qp, uint32_t my_psn, const struct rt_qp_info *peer)
{
	struct ibv_qp_attr a;
	uint64_t now = srt_now();

	srt_lock(ep->dev);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = ACCESS_ALL;
	REQUIRE(rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, now) == 0,
	      "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = srt_active_mtu(ep->dev);
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	REQUIRE(rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, now) == 0, "RTR");
	srt_qp_choose_path(ep->dev, qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 12;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 4;
	REQUIRE(rnic_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, now) == 0, "RTS");
	srt_unlock(ep->dev);
}

/* A new QP, its description (with the region the peer is to use) swapped
 * for the peer's, and connected. */
static struct rnic_qp *new_qp(struct rt_endpoint *ep, int fd, uint32_t psn, uint64_t addr, uint32_t rkey,
			      struct rt_qp_info *peer)
{
	struct rnic_qp *qp = rt_qp_create(ep);
	struct rt_qp_info mine;

	rt_qp_info(ep, qp, psn, &mine);
	mine.addr = addr;
	mine.rkey = rkey;
	rt_write_all(fd, &mine, sizeof(mine));
	rt_read_all(fd, peer, sizeof(*peer));
	connect_qp(ep, qp, psn, peer);
	return qp;
}

static void destroy_qp(struct rt_endpoint *ep, struct rnic_qp *qp)
{
	struct ibv_wc wc;

	srt_lock(ep->dev);
	while (rnic_cq_poll(ep->cq, 1, &wc) == 1)
		;       /* flushed receives */
	REQUIRE(rnic_qp_destroy(qp) == 0, "qp_destroy");
	srt_unlock(ep->dev);
}

static int post(struct rt_endpoint *ep, struct rnic_qp *qp, const struct fault_case *c, const uint8_t *local,
		uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad = NULL;

	wr_send_1(&wr, &sge, c->op, 7, (uint64_t)(uintptr_t)local, c->len, lkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr_remote(&wr, raddr, rkey);
	if (c->op == IBV_WR_ATOMIC_FETCH_AND_ADD || c->op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.compare_add = 1;
		wr.wr.atomic.swap = 2;
	}
	srt_lock(ep->dev);
	int e = rnic_post_send(qp, &wr, &bad, srt_now());
	srt_unlock(ep->dev);
	srt_kick(ep->dev);
	return e;
}

static void expect_status(struct rt_endpoint *ep, const char *who, const struct fault_case *c,
			  enum ibv_wc_status want)
{
	struct ibv_wc wc;

	REQUIRE(rt_wait_wc(ep, &wc, 10000), "%s: %s: no completion within 10 s", who, c->name);
	REQUIRE(wc.status == want, "%s: %s: status %d (%s), expected %d (%s)", who, c->name, wc.status,
	      rt_wc_status(wc.status), want, rt_wc_status(want));
}

static uint64_t published_mr_faults(void)
{
	struct srt_stats_file st;

	rt_read_stats(&st, srt_now());
	return st.counters.mr_fault;
}

/* A region as the other side names it. */
struct region_info {
	uint64_t addr;
	uint32_t rkey, pad;
};

/* The owner: its regions go away, its process stays. */
static int owner(int fd, struct srt_device *dev)
{
	struct rt_endpoint ep;
	struct region target, recv, ro;
	unsigned remote = 0, receive = 0;

	rt_endpoint_init(&ep, dev, BUF_LEN);
	region_init(&ep, &target, 0);
	region_init(&ep, &recv, 1);
	region_init(&ep, &ro, 2);
	unmap_region(&target);
	unmap_region(&recv);
	protect_region(&ro);
	for (unsigned i = first_case; i < end_case; i++) {
		const struct fault_case *c = &cases[i];
		struct rt_qp_info peer;
		/* The peer's READ into its gone SGE reads our mapped buffer. */
		const struct region ours = { ep.buf, ep.mr };
		const struct region *g = c->kind == LOCAL ? &ours : c->read_only ? &ro : &target;
		struct rnic_qp *qp = new_qp(&ep, fd, 0x1000 * (i + 1), (uint64_t)(uintptr_t)g->p, rnic_mr_rkey(g->mr),
					    &peer);
		/* Where the good WQEs go: our mapped buffer. */
		const struct region_info mapped = { (uint64_t)(uintptr_t)ep.buf, rnic_mr_rkey(ep.mr), 0 };

		rt_write_all(fd, &mapped, sizeof(mapped));
		if (c->kind == RECEIVE) {
			for (unsigned k = 0; k < c->good; k++)
				REQUIRE(rt_post_recv(&ep, qp, k * BIG, BIG, 8) == 0, "post_recv");
			struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)recv.p, .length = REGION_LEN,
					       .lkey = rnic_mr_lkey(recv.mr) };
			struct ibv_recv_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 }, *bad;

			srt_lock(dev);
			REQUIRE(rnic_post_recv(qp, &wr, &bad) == 0, "post_recv");
			srt_unlock(dev);
		}
		rt_barrier(fd);         /* the peer posts */
		if (c->kind == RECEIVE) {
			for (unsigned k = 0; k < c->good; k++)
				expect_status(&ep, "owner", c, IBV_WC_SUCCESS);
			expect_status(&ep, "owner", c, IBV_WC_LOC_PROT_ERR);
			receive++;
		}
		remote += c->kind == REMOTE && c->want != IBV_WC_SUCCESS;
		rt_barrier(fd);         /* the peer has its completion */
		destroy_qp(&ep, qp);
	}

	/* Still alive, and still serving: a WRITE into the mapped buffer. */
	struct rt_qp_info peer;
	struct rnic_qp *qp = new_qp(&ep, fd, 0x77000, (uint64_t)(uintptr_t)ep.buf, rnic_mr_rkey(ep.mr), &peer);
	rt_barrier(fd);
	rt_barrier(fd);
	REQUIRE(rt_check(ep.buf + 100, 5000, 42), "owner: the WRITE after the faults did not land");
	destroy_qp(&ep, qp);

	uint64_t faults = published_mr_faults();
	fprintf(stderr, "owner: pid %d alive, mr_fault %llu\n", (int)getpid(), (unsigned long long)faults);
	REQUIRE(faults >= remote + receive, "owner: mr_fault %llu, expected at least %u", (unsigned long long)faults,
	      remote + receive);
	REQUIRE(ro.p[0] == 0x5a && ro.p[REGION_LEN - 1] == 0x5a, "owner: the read-only region changed");
	region_fini(&ep, &ro, true);
	region_fini(&ep, &recv, false);
	region_fini(&ep, &target, false);
	rt_endpoint_fini(&ep);
	return 0;
}

/* The peer: hostile requests to the owner, and its own gone SGEs. */
static int peer_side(int fd, struct srt_device *dev)
{
	struct rt_endpoint ep;
	struct region gone, ro;
	unsigned local = 0;

	rt_endpoint_init(&ep, dev, BUF_LEN);
	region_init(&ep, &gone, 3);
	region_init(&ep, &ro, 4);
	unmap_region(&gone);
	protect_region(&ro);
	for (unsigned i = first_case; i < end_case; i++) {
		const struct fault_case *c = &cases[i];
		struct rt_qp_info owner_qp;
		struct rnic_qp *qp = new_qp(&ep, fd, 0x800000 + 0x1000 * i, 0, 0, &owner_qp);
		const struct region ours = { ep.buf, ep.mr };
		const struct region *g = c->kind != LOCAL ? &ours : c->read_only ? &ro : &gone;
		struct region_info mapped;

		rt_read_all(fd, &mapped, sizeof(mapped));
		rt_barrier(fd);         /* the owner's receives are posted */
		for (unsigned k = 0; k < c->good; k++)
			REQUIRE(post(&ep, qp, c, ep.buf + k * BIG, rnic_mr_lkey(ep.mr), mapped.addr + k * BIG,
				   mapped.rkey) == 0, "%s: post_send", c->name);
		REQUIRE(post(&ep, qp, c, g->p, rnic_mr_lkey(g->mr), owner_qp.addr, owner_qp.rkey) == 0, "%s: post_send",
		      c->name);
		for (unsigned k = 0; k < c->good; k++)
			expect_status(&ep, "peer", c, IBV_WC_SUCCESS);
		expect_status(&ep, "peer", c, c->want);
		fprintf(stderr, "peer: %u %s: %s\n", i, c->name, rt_wc_status(c->want));
		if (c->want == IBV_WC_SUCCESS && c->op == IBV_WR_RDMA_READ)
			REQUIRE(ep.buf[0] == 0x5a && ep.buf[c->len - 1] == 0x5a, "peer: %s: wrong data", c->name);
		local += c->kind == LOCAL;
		rt_barrier(fd);
		destroy_qp(&ep, qp);
	}

	struct rt_qp_info owner_qp;
	struct rnic_qp *qp = new_qp(&ep, fd, 0x88000, 0, 0, &owner_qp);
	const struct fault_case write = { "RDMA WRITE 5000 B after the faults", REMOTE, false, IBV_WR_RDMA_WRITE,
					  5000, IBV_WC_SUCCESS, 0 };
	rt_barrier(fd);
	rt_fill(ep.buf, 5000, 42);
	REQUIRE(post(&ep, qp, &write, ep.buf, rnic_mr_lkey(ep.mr), owner_qp.addr + 100, owner_qp.rkey) == 0,
	      "post WRITE");
	expect_status(&ep, "peer", &write, IBV_WC_SUCCESS);
	rt_barrier(fd);
	destroy_qp(&ep, qp);

	uint64_t faults = published_mr_faults();
	REQUIRE(faults >= local, "peer: mr_fault %llu, expected at least %u", (unsigned long long)faults, local);
	region_fini(&ep, &ro, true);
	region_fini(&ep, &gone, false);
	rt_endpoint_fini(&ep);
	return 0;
}

/* ---- faults that are not the guard's ---------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static sigjmp_buf program_env;
static volatile sig_atomic_t program_caught;

static void program_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	program_caught = 1;
	siglongjmp(program_env, 1);
}

/* An address nobody maps. */
static volatile uint8_t *gone_page(void)
{
	uint8_t *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	REQUIRE(p != MAP_FAILED && munmap(p, 4096) == 0, "mmap/munmap: %s", strerror(errno));
	return p;
}

/* A child that opens a device and then faults outside any guard: with
 * `own_handler`, the program's handler (installed first) must get it
 * (the child exits 0); without, the child must die of it. */
static void fault_in_child(bool own_handler)
{
	pid_t child = fork();
	int status = 0;

	REQUIRE(child >= 0, "fork: %s", strerror(errno));
	if (!own_handler && child > 0)
		fprintf(stderr, "a child faults on purpose now, outside the guard (a sanitizer reports it)\n");
	if (child == 0) {
		struct rlimit no_core = { 0, 0 };

		(void)setrlimit(RLIMIT_CORE, &no_core);
		if (own_handler) {
			struct sigaction sa;

			memset(&sa, 0, sizeof(sa));
			sa.sa_sigaction = program_handler;
			sa.sa_flags = SA_SIGINFO | SA_NODEFER;
			sigemptyset(&sa.sa_mask);
			REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0, "sigaction");
		}
		struct srt_device *dev = srt_open();
		REQUIRE(dev != NULL, "srt_open: %s", strerror(errno));
		volatile uint8_t *bad = gone_page();
		if (!sigsetjmp(program_env, 1))
			(void)*bad;
		_exit(own_handler && program_caught ? 0 : 3);
	}
	REQUIRE(waitpid(child, &status, 0) == child, "waitpid: %s", strerror(errno));
	if (own_handler) {
		REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the program's own SIGSEGV handler did not get its fault (status %#x)", status);
		return;
	}
#ifdef UNDER_ASAN
	REQUIRE(!WIFEXITED(status) || WEXITSTATUS(status) != 3, "a fault outside the guard was survived (status %#x)",
	      status);
#else
	REQUIRE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
	      "a fault outside the guard did not end the process with SIGSEGV (status %#x)", status);
#endif
}

static int run_side(int fd, bool server, void *arg)
{
	struct srt_device *dev = srt_open();
	int rc;

	(void)arg;
	REQUIRE(dev != NULL, "srt_open: %s", strerror(errno));
	rc = server ? owner(fd, dev) : peer_side(fd, dev);
	srt_close(dev);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		first_case = (unsigned)atoi(argv[1]);
		REQUIRE(first_case < NCASES, "case %u: there are %zu", first_case, NCASES);
		end_case = first_case + 1;
	}
	fault_in_child(true);
	fault_in_child(false);
	rt_run_two_processes(run_side, NULL);
	printf("test_mr_fault: %u cases passed\n", end_case - first_case);
	return 0;
}
