/*
 * flows.h — several senders writing to one receiver over the seeded pair,
 * as the congestion and loss-recovery tests (cc_converge.c,
 * recovery_timers.c) drive it: sender i is node i, the receiver node
 * nflows; each flow is one RC QP pair kept busy with signalled RDMA WRITEs
 * from a fixed source region to a fixed destination region.
 *
 * The test creates the pair (its rnic config, bottleneck queue, tap and
 * delays), then flows_build adds the flows; the objects are created in one
 * fixed order, so a seed gives the same run every time.
 */
#ifndef SOFTRNIC_TESTS_RNIC_FLOWS_H
#define SOFTRNIC_TESTS_RNIC_FLOWS_H

#include "harness.h"

#define FLOWS_MAX 4
#define FLOWS_BUF (64u * 1024)          /* each flow's source and destination */
#define FLOWS_BINS 200                  /* bytes_in_bin's length */
/* Fixed iovas, not the buffers' addresses: the packets (and so the trace
 * hash) must not depend on where malloc put them. */
#define FLOWS_SRC_IOVA 0x100000ull
#define FLOWS_DST_IOVA(i) (0x1000000ull * ((uint64_t)(i) + 1))

struct flow {
	struct rnic_qp *qp, *peer;      /* on the sender, on the receiver */
	struct rnic_cq *cq;
	struct rnic_mr *src_mr, *dst_mr;
	uint8_t *src, *dst;
	uint64_t start_ns;              /* the test posts from this time on */
	unsigned outstanding;           /* WRITEs posted, not completed */
	uint64_t posted, completed;
	bool error;                     /* a post or a completion failed */
	uint64_t bytes_in_bin[FLOWS_BINS]; /* completed bytes per time bin (the test's bins) */
	uint32_t data_seen;             /* request packets through a tap */
	uint32_t drop_at;               /* a tap drops the request packet with this index (0: none) */
	uint32_t dropped;
};

struct flows {
	struct pair *pair;
	unsigned nflows, receiver;
	struct rnic_pd *rpd, *pd[FLOWS_MAX];
	struct rnic_cq *rcq;
	struct flow f[FLOWS_MAX];
};

/* On w->pair (nflows + 1 nodes; w->nflows and w->receiver set): the
 * receiver's PD and CQ, then per flow a PD, a CQ, the QP pair, the buffers
 * and regions, connected RESET -> RTS at path MTU mtu (timeout 14: 67 ms,
 * retry 7, RNR retry 7).  0, or -1 with the failure reported. */
int flows_build(struct flows *w, enum ibv_mtu mtu);
/* Frees what flows_build made, and the pair. */
void flows_destroy(struct flows *w);

/* One signalled WRITE of len bytes on flow f (wr_id: its post count). */
void flows_post_write(struct flows *w, struct flow *f, uint32_t len);
/* Polls flow f's completions: outstanding, completed and error follow.
 * Returns how many completed. */
unsigned flows_reap(struct flow *f);

#endif
