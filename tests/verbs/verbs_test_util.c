/*
 * verbs_test_util.c — the helpers the tests/verbs programs share (see
 * verbs_test_util.h).  Built as a static library, linked with our
 * libibverbs.so.1 by each program.
 */
#include "verbs_test_util.h"

#include <stdio.h>
#include <string.h>

/* Every failure of a verbs test says errno: most checks are of calls
 * that set it. */
__attribute__((constructor)) static void vt_report_errno(void)
{
	check_with_errno = true;
}

struct ibv_context *vt_open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n = -1;

	list = ibv_get_device_list(&n);
	REQUIRE(list && n == 1);
	if (name)
		REQUIRE(strcmp(ibv_get_device_name(list[0]), name) == 0);
	ctx = ibv_open_device(list[0]);
	REQUIRE(ctx);
	ibv_free_device_list(list);
	return ctx;
}

struct ibv_qp *vt_create_rc_qp(struct ibv_pd *pd, struct ibv_cq *send_cq, struct ibv_cq *recv_cq,
			       struct ibv_srq *srq)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp *qp;

	memset(&init, 0, sizeof(init));
	init.send_cq = send_cq;
	init.recv_cq = recv_cq;
	init.srq = srq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 16;
	init.cap.max_recv_wr = 16;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &init);
	REQUIRE(qp);
	return qp;
}

void vt_connect_rc(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *dgid,
		   const struct vt_rc_attr *attr)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = attr->access;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS) == 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = attr->psn;
	a.max_dest_rd_atomic = attr->rd_atomic;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = attr->timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = attr->psn;
	a.max_rd_atomic = attr->rd_atomic;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					  IBV_QP_MAX_QP_RD_ATOMIC) == 0);
	CHECK(qp->state == IBV_QPS_RTS);
}

void vt_ud_to_rts(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0);
	a.qp_state = IBV_QPS_RTR;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
}

struct ibv_ah *vt_create_ah(struct ibv_pd *pd, const union ibv_gid *dgid, uint8_t hop_limit)
{
	struct ibv_ah_attr a;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.grh.dgid = *dgid;
	a.grh.hop_limit = hop_limit;
	return ibv_create_ah(pd, &a);
}

void vt_post_recv(struct ibv_qp *qp, struct ibv_mr *mr, void *addr, uint32_t len, uint64_t wr_id)
{
	REQUIRE(post_recv_1(qp, mr, addr, len, wr_id) == 0);
}

int vt_main(int argc, char **argv, const struct vt_mode *modes, size_t nmodes)
{
	const char *what = argc > 1 ? argv[1] : modes[0].name;

	for (size_t i = 0; i < nmodes; i++) {
		int rc;

		if (strcmp(what, modes[i].name) != 0)
			continue;
		rc = modes[i].run();
		printf("%s: %s (%d failed checks)\n", what, rc ? "FAIL" : "PASS", check_failures);
		return rc;
	}
	fprintf(stderr, "usage: %s [", argv[0]);
	for (size_t i = 0; i < nmodes; i++)
		fprintf(stderr, "%s%s", i ? "|" : "", modes[i].name);
	fprintf(stderr, "]\n");
	return 2;
}
