/*
 * verbs_test_util.h — what the programs in tests/verbs (and tests/verbs/ud)
 * share: tests/check.h with errno in every failure, opening the one softrnic device,
 * an RC QP with the small default caps, the RC RESET -> INIT -> RTR -> RTS
 * walk, the UD one, an address handle for a GID, one receive, and a main()
 * that picks a mode by name.
 *
 * Everything goes through the system <infiniband/verbs.h> and our
 * libibverbs.so.1, as in an unmodified program.  Failures print and count
 * (CHECK) or print and exit(1) (REQUIRE); there is nothing to clean up.
 * A forked helper names itself in its failures with check_who.
 */
#ifndef SOFTRNIC_TESTS_VERBS_TEST_UTIL_H
#define SOFTRNIC_TESTS_VERBS_TEST_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <infiniband/verbs.h>

#include "../check.h"
#include "../verbs_helpers.h"

/* Opens the only device there must be; `name`, if not NULL, is the name
 * it must have. */
struct ibv_context *vt_open_device(const char *name);

/* An RC QP with 16 send and 16 receive WRs of one SGE each; `srq` may be
 * NULL.  Exits if it cannot be created. */
struct ibv_qp *vt_create_rc_qp(struct ibv_pd *pd, struct ibv_cq *send_cq, struct ibv_cq *recv_cq,
			       struct ibv_srq *srq);

/* What differs between the tests' RC connections; the rest is fixed:
 * port 1, path MTU 1024, hop limit 1, min RNR timer 1, retry_cnt and
 * rnr_retry 7. */
struct vt_rc_attr {
	unsigned int access;            /* qp_access_flags                      */
	uint32_t psn;                   /* both sq_psn and rq_psn               */
	uint8_t rd_atomic;              /* max_rd_atomic and max_dest_rd_atomic */
	uint8_t timeout;                /* local ACK timeout exponent           */
};

/* RESET -> INIT -> RTR -> RTS toward dest_qpn at dgid (IBTA 11.2.5.2
 * attribute masks); exits on any refusal, checks the QP says RTS. */
void vt_connect_rc(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *dgid,
		   const struct vt_rc_attr *attr);

/* RESET -> INIT (Q_Key) -> RTR -> RTS (sq_psn) for a UD QP; exits on any
 * refusal. */
void vt_ud_to_rts(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn);

/* A global AH on port 1 toward dgid; NULL (errno set) if refused. */
struct ibv_ah *vt_create_ah(struct ibv_pd *pd, const union ibv_gid *dgid, uint8_t hop_limit);

/* Posts one receive of len bytes at addr (inside mr); exits if refused. */
void vt_post_recv(struct ibv_qp *qp, struct ibv_mr *mr, void *addr, uint32_t len, uint64_t wr_id);

/* main() for a program with modes: runs the one named by argv[1]
 * (modes[0] without one), prints "<mode>: PASS|FAIL (N failed checks)"
 * and returns its result; an unknown name prints the usage and returns 2. */
struct vt_mode {
	const char *name;
	int (*run)(void);
};
int vt_main(int argc, char **argv, const struct vt_mode *modes, size_t nmodes);

#endif
