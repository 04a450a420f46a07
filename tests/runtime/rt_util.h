/*
 * rt_util.h — helpers shared by the runtime tests: tests/check.h (their
 * checks are REQUIREs: a failure ends the process, whose peer then fails
 * too), and a small RC endpoint (PD, CQ, MR, QP) driven
 * through the rnic API under the runtime's device lock, the way the compat
 * layer will drive it.
 */
#ifndef SOFTRNIC_TESTS_RT_UTIL_H
#define SOFTRNIC_TESTS_RT_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"
#include "../verbs_helpers.h"
#include "runtime/runtime.h"
#include "runtime/stats_file.h"

/* What one side tells the other to connect (exchanged over a pipe or TCP). */
struct rt_qp_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t pad;
	uint64_t addr;
	uint8_t gid[16];
};

/* A PD, CQ, registered buffer and any number of RC QPs on one device. */
struct rt_endpoint {
	struct srt_device *dev;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_mr *mr;
	uint8_t *buf;
	size_t buf_len;
};

void rt_endpoint_init(struct rt_endpoint *ep, struct srt_device *dev, size_t buf_len);
/* Frees MR, CQ, PD and buffer; destroy the endpoint's QPs first. */
void rt_endpoint_fini(struct rt_endpoint *ep);

struct rnic_qp *rt_qp_create(struct rt_endpoint *ep);
void rt_qp_info(struct rt_endpoint *ep, struct rnic_qp *qp, uint32_t psn, struct rt_qp_info *out);
/* A new QP on ep with send PSN psn; *mine describes it, and it is swapped
 * for the peer's description (*peer) over the out-of-band exchange fd. */
struct rnic_qp *rt_qp_exchange(struct rt_endpoint *ep, int fd, uint32_t psn, struct rt_qp_info *mine,
			       struct rt_qp_info *peer);
/* RESET -> INIT -> RTR -> RTS towards `peer`.  Returns 0 or an errno. */
int rt_qp_connect(struct rt_endpoint *ep, struct rnic_qp *qp, uint32_t my_psn, const struct rt_qp_info *peer,
		  enum ibv_mtu mtu);
/* The same with the local ACK timeout exponent (IBTA: 4.096 us * 2^t);
 * rt_qp_connect uses 12 (16.8 ms). */
int rt_qp_connect_timeout(struct rt_endpoint *ep, struct rnic_qp *qp, uint32_t my_psn,
			  const struct rt_qp_info *peer, enum ibv_mtu mtu, uint8_t timeout);

/* Post one WR on the endpoint's buffer [off, off+len).  0 or errno. */
int rt_post_recv(struct rt_endpoint *ep, struct rnic_qp *qp, size_t off, size_t len, uint64_t wr_id);
int rt_post_send(struct rt_endpoint *ep, struct rnic_qp *qp, enum ibv_wr_opcode op, size_t off, size_t len,
		 uint64_t remote_addr, uint32_t rkey, uint64_t wr_id);

/* Poll the endpoint's CQ until a completion arrives or timeout_ms passes.
 * Returns true with *wc filled. */
bool rt_wait_wc(struct rt_endpoint *ep, struct ibv_wc *wc, int timeout_ms);
/* Wait for a successful completion of `opcode` with wr_id; fail the test
 * otherwise. */
void rt_expect_wc(struct rt_endpoint *ep, enum ibv_wc_opcode opcode, uint64_t wr_id, uint32_t byte_len);
/* The completion of a send (send_wr_id) and of a receive (recv_wr_id,
 * recv_len bytes), on one CQ in either order: completions of a send queue
 * and of a receive queue are not ordered with each other (a peer's SEND
 * may arrive ahead of the ACK of ours: ACKs that ride with a send leave
 * after it). */
void rt_expect_send_and_recv(struct rt_endpoint *ep, uint64_t send_wr_id, uint64_t recv_wr_id, uint32_t recv_len);

const char *rt_wc_status(enum ibv_wc_status s);

/* Fill / check a deterministic pattern. */
/* The tests' out-of-band exchange (a pipe or TCP socket between the two
 * processes): whole-buffer write and read, failing the test on error or
 * EOF, and a one-byte barrier both sides must reach. */
void rt_write_all(int fd, const void *p, size_t n);
void rt_read_all(int fd, void *p, size_t n);
void rt_barrier(int fd);

/* Fork: `side(fd, false, arg)` runs in a child process (the client),
 * `side(fd, true, arg)` in this one (the server), joined by a stream
 * socketpair for the out-of-band exchange.  Fails the test if the child
 * does not exit 0; returns the server's result. */
int rt_run_two_processes(int (*side)(int fd, bool server, void *arg), void *arg);

void rt_fill(uint8_t *p, size_t len, uint32_t seed);
bool rt_check(const uint8_t *p, size_t len, uint32_t seed);

/* Read our process's published counters, waiting for a refresh newer than
 * `after_ns` (0: any).  Fails the test on timeout. */
void rt_read_stats(struct srt_stats_file *out, uint64_t after_ns);

#endif
