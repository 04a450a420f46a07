/*
 * ud_mcast_test.c — UD multicast and address handles across processes,
 * through the system <infiniband/verbs.h> and our libibverbs.so.1.
 *
 * The parent forks two receivers.  Each child opens the device in its own
 * process (so it binds its own 127.0.0.N, like a separate host), creates
 * a UD QP, attaches it to one IPv4-mapped multicast group
 * ::ffff:239.255.x.y (x.y from the parent's pid, so parallel runs do not
 * meet) and reports its QPN and GID through a pipe.  Then:
 *
 *  1. multicast: the parent sends MSGS messages to the group (DestQP
 *     0xFFFFFF); each child must receive every one, in order, with the
 *     right payload, byte_len = 40 + size, src_qp = the parent's QPN, and
 *     a GRH area whose IPv4 header names the parent as source and the
 *     group as destination.  ibv_init_ah_from_wc on such a completion
 *     fails with EINVAL (no GID of ours is the group), as in rdma-core.
 *  2. unicast + ibv_create_ah_from_wc: the parent sends one message to
 *     each child's own QPN; the child builds a reply AH from the work
 *     completion and GRH and answers the sender's QPN; the parent must get
 *     both replies (proving the AH points back at it).
 *  3. detach: child 0 detaches and must receive nothing more, child 1
 *     still receives (the group stays joined for the other process).
 *
 * Exit 0 when everything held; each process prints what failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define QKEY 0x11111111u
#define MSGS 50
#define SIZE 512
#define NRECV 128
#define SLOT (SIZE + 40)
#define MCAST_QPN 0xffffffu

#include "verbs_test_util.h"

struct ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;              /* receive completions */
	struct ibv_cq *send_cq;         /* send completions, apart: a reply may land before them */
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;                   /* NRECV receive slots, then a send area */
	union ibv_gid gid;
};

/* What a child tells the parent. */
struct hello {
	uint32_t qpn;
	union ibv_gid gid;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void ep_open(struct ep *e)
{
	struct ibv_qp_init_attr init;

	e->ctx = vt_open_device(NULL);
	REQUIRE(ibv_query_gid(e->ctx, 1, 0, &e->gid) == 0);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 2 * NRECV, NULL, NULL, 0);
	e->send_cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	REQUIRE(e->pd && e->cq && e->send_cq);
	e->buf = calloc(NRECV + 1, SLOT);
	REQUIRE(e->buf);
	e->mr = ibv_reg_mr(e->pd, e->buf, (size_t)(NRECV + 1) * SLOT, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(e->mr);
	memset(&init, 0, sizeof(init));
	init.send_cq = e->send_cq;
	init.recv_cq = e->cq;
	init.qp_type = IBV_QPT_UD;
	init.cap.max_send_wr = 64;
	init.cap.max_recv_wr = NRECV;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	e->qp = ibv_create_qp(e->pd, &init);
	REQUIRE(e->qp);
	vt_ud_to_rts(e->qp, QKEY, 1);
}

static void ep_close(struct ep *e)
{
	CHECK(ibv_destroy_qp(e->qp) == 0);
	CHECK(ibv_dereg_mr(e->mr) == 0);
	CHECK(ibv_destroy_cq(e->cq) == 0);
	CHECK(ibv_destroy_cq(e->send_cq) == 0);
	CHECK(ibv_dealloc_pd(e->pd) == 0);
	CHECK(ibv_close_device(e->ctx) == 0);
	free(e->buf);
}

static void post_recv(struct ep *e, int slot)
{
	vt_post_recv(e->qp, e->mr, e->buf + (size_t)slot * SLOT, SLOT, (uint64_t)slot);
}

static void send_to(struct ep *e, struct ibv_ah *ah, uint32_t qpn, uint32_t tag)
{
	uint8_t *src = e->buf + (size_t)NRECV * SLOT;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	uint64_t until = now_ms() + 5000;
	int n;

	for (int i = 0; i < SIZE; i++)
		src[i] = (uint8_t)(tag * 31 + (uint32_t)i);
	wr_send_1(&wr, &sge, IBV_WR_SEND_WITH_IMM, 0x5e0d0000u | tag, (uintptr_t)src, SIZE, e->mr->lkey);
	wr.imm_data = htonl(tag);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = QKEY;
	REQUIRE(ibv_post_send(e->qp, &wr, &bad) == 0);
	/* UD completes once sent; the send buffer is then free again. */
	while ((n = ibv_poll_cq(e->send_cq, 1, &wc)) == 0 && now_ms() < until)
		;
	REQUIRE(n == 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == wr.wr_id);
}

/* Wait up to ms for one receive completion.  0 = got one. */
static int wait_recv(struct ep *e, struct ibv_wc *wc, int ms)
{
	uint64_t until = now_ms() + (uint64_t)ms;

	do {
		int n = ibv_poll_cq(e->cq, 1, wc);

		if (n == 1)
			return 0;
		REQUIRE(n == 0);
	} while (now_ms() < until);
	return -1;
}

static bool payload_ok(const uint8_t *p, uint32_t tag)
{
	for (int i = 0; i < SIZE; i++)
		if (p[i] != (uint8_t)(tag * 31 + (uint32_t)i))
			return false;
	return true;
}

static void write_all(int fd, const void *p, size_t n)
{
	REQUIRE(write(fd, p, n) == (ssize_t)n);
}

static void read_all(int fd, void *p, size_t n)
{
	REQUIRE(read(fd, p, n) == (ssize_t)n);
}

/* ---- receiver ---------------------------------------------------------------- */

static int child(int id, const union ibv_gid *mgid, int to_parent, int from_parent)
{
	char name[16];
	struct ep e;
	struct hello h;
	struct ibv_wc wc;
	struct ibv_ah_attr attr;
	uint32_t parent_qpn = 0;
	uint8_t go;
	int slot_next = 0;

	snprintf(name, sizeof(name), "child%d", id);
	check_who = name;
	ep_open(&e);
	for (int i = 0; i < NRECV; i++)
		post_recv(&e, i);
	REQUIRE(ibv_attach_mcast(e.qp, mgid, 0) == 0);
	h.qpn = e.qp->qp_num;
	h.gid = e.gid;
	write_all(to_parent, &h, sizeof(h));

	/* 1. multicast */
	for (uint32_t tag = 0; tag < MSGS; tag++) {
		if (wait_recv(&e, &wc, 5000)) {
			CHECK(!"multicast message missing");
			fprintf(stderr, "%s: got %u of %d multicast messages\n", check_who, tag, MSGS);
			break;
		}
		REQUIRE(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id < NRECV);
		const uint8_t *slot = e.buf + wc.wr_id * SLOT;
		CHECK(wc.wr_id == (uint64_t)slot_next);
		CHECK(wc.byte_len == SIZE + 40);
		CHECK((wc.wc_flags & IBV_WC_GRH) && (wc.wc_flags & IBV_WC_WITH_IMM));
		CHECK(ntohl(wc.imm_data) == tag);
		CHECK(payload_ok(slot + 40, tag));
		/* IPv4 header in the GRH area: parent -> group. */
		CHECK(slot[20] == 0x45 && slot[29] == 17);
		CHECK(!memcmp(slot + 36, mgid->raw + 12, 4));
		if (tag == 0) {
			parent_qpn = wc.src_qp;
			errno = 0;
			CHECK(ibv_init_ah_from_wc(e.ctx, 1, &wc, (struct ibv_grh *)slot, &attr) == -1 &&
			      errno == EINVAL);
		}
		CHECK(wc.src_qp == parent_qpn);
		post_recv(&e, (int)wc.wr_id);
		slot_next = (slot_next + 1) % NRECV;
	}
	go = 1;
	write_all(to_parent, &go, 1);

	/* 2. unicast from the parent; reply through an AH made from the WC. */
	if (wait_recv(&e, &wc, 5000) == 0) {
		REQUIRE(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id < NRECV);
		const uint8_t *slot = e.buf + wc.wr_id * SLOT;
		struct ibv_ah *ah;

		CHECK(wc.src_qp == parent_qpn);
		CHECK(!memcmp(slot + 36, e.gid.raw + 12, 4));   /* to us this time */
		CHECK(ibv_init_ah_from_wc(e.ctx, 1, &wc, (struct ibv_grh *)slot, &attr) == 0);
		CHECK(attr.is_global && attr.port_num == 1 && attr.grh.sgid_index == 0);
		CHECK(!memcmp(attr.grh.dgid.raw + 12, slot + 32, 4));   /* the sender */
		CHECK(attr.grh.hop_limit == slot[28]);
		ah = ibv_create_ah_from_wc(e.pd, &wc, (struct ibv_grh *)slot, 1);
		CHECK(ah != NULL);
		if (ah) {
			send_to(&e, ah, wc.src_qp, 1000u + (uint32_t)id);
			CHECK(ibv_destroy_ah(ah) == 0);
		}
		post_recv(&e, (int)wc.wr_id);
		slot_next = (slot_next + 1) % NRECV;
	} else {
		CHECK(!"unicast message missing");
	}

	/* 3. child 0 detaches; the parent sends once more to the group. */
	if (id == 0) {
		CHECK(ibv_detach_mcast(e.qp, mgid, 0) == 0);
		errno = 0;
		CHECK(ibv_detach_mcast(e.qp, mgid, 0) == EINVAL);
	}
	write_all(to_parent, &go, 1);
	read_all(from_parent, &go, 1);          /* the last message is out */
	if (id == 0) {
		CHECK(wait_recv(&e, &wc, 300) == -1);
	} else {
		CHECK(wait_recv(&e, &wc, 5000) == 0 && wc.status == IBV_WC_SUCCESS &&
		      ntohl(wc.imm_data) == 2000u);
		CHECK(ibv_detach_mcast(e.qp, mgid, 0) == 0);
	}
	ep_close(&e);
	return check_failures ? 1 : 0;
}

/* ---- sender ------------------------------------------------------------------ */

int main(void)
{
	union ibv_gid mgid;
	int up[2][2], down[2][2];
	pid_t pid[2];
	struct hello h[2];
	struct ep e;
	struct ibv_ah *group_ah, *ah[2];
	struct ibv_wc wc;
	uint8_t go;
	int status, got;

	check_who = "parent";
	memset(&mgid, 0, sizeof(mgid));
	mgid.raw[10] = mgid.raw[11] = 0xff;
	mgid.raw[12] = 239;
	mgid.raw[13] = 255;
	mgid.raw[14] = (uint8_t)(getpid() >> 8);
	mgid.raw[15] = (uint8_t)getpid();

	for (int i = 0; i < 2; i++) {
		REQUIRE(pipe(up[i]) == 0 && pipe(down[i]) == 0);
		pid[i] = fork();
		REQUIRE(pid[i] >= 0);
		if (pid[i] == 0) {
			close(up[i][0]);
			close(down[i][1]);
			exit(child(i, &mgid, up[i][1], down[i][0]));
		}
		close(up[i][1]);
		close(down[i][0]);
	}
	for (int i = 0; i < 2; i++)
		read_all(up[i][0], &h[i], sizeof(h[i]));

	ep_open(&e);
	for (int i = 0; i < NRECV; i++)
		post_recv(&e, i);
	CHECK(memcmp(h[0].gid.raw, h[1].gid.raw, 16) && memcmp(h[0].gid.raw, e.gid.raw, 16));
	group_ah = vt_create_ah(e.pd, &mgid, 64);
	REQUIRE(group_ah);

	/* 1. multicast; pace a little so neither receiver runs dry of WQEs. */
	for (uint32_t tag = 0; tag < MSGS; tag++) {
		send_to(&e, group_ah, MCAST_QPN, tag);
		if (tag % 16 == 15)
			usleep(2000);
	}
	for (int i = 0; i < 2; i++)
		read_all(up[i][0], &go, 1);

	/* 2. unicast to each child; each replies through its WC-made AH. */
	for (int i = 0; i < 2; i++) {
		ah[i] = vt_create_ah(e.pd, &h[i].gid, 64);
		REQUIRE(ah[i]);
		send_to(&e, ah[i], h[i].qpn, 500u + (uint32_t)i);
	}
	got = 0;
	for (int i = 0; i < 2; i++) {
		if (wait_recv(&e, &wc, 5000)) {
			CHECK(!"reply missing");
			continue;
		}
		REQUIRE(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id < NRECV);
		CHECK(wc.src_qp == h[0].qpn || wc.src_qp == h[1].qpn);
		CHECK(ntohl(wc.imm_data) == 1000u + (wc.src_qp == h[0].qpn ? 0u : 1u));
		CHECK(payload_ok(e.buf + wc.wr_id * SLOT + 40, ntohl(wc.imm_data)));
		got++;
	}
	CHECK(got == 2);

	/* 3. after child 0 detached. */
	for (int i = 0; i < 2; i++)
		read_all(up[i][0], &go, 1);
	send_to(&e, group_ah, MCAST_QPN, 2000);
	for (int i = 0; i < 2; i++)
		write_all(down[i][1], &go, 1);

	for (int i = 0; i < 2; i++) {
		REQUIRE(waitpid(pid[i], &status, 0) == pid[i]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CHECK(ibv_destroy_ah(ah[0]) == 0 && ibv_destroy_ah(ah[1]) == 0 && ibv_destroy_ah(group_ah) == 0);
	ep_close(&e);
	if (check_failures) {
		check_exit("ud_mcast_test");
		return 1;
	}
	printf("ud_mcast_test: multicast to 2 processes x %d, unicast replies via ibv_create_ah_from_wc, detach: ok\n",
	       MSGS);
	return 0;
}
