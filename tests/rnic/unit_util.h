/*
 * unit_util.h — what the rnic layer's unit tests (unit_loop.c, unit_srq.c,
 * unit_ud.c) share: tests/check.h, and for the two-node
 * tests the "loop": two rnics wired back to back through an in-test packet
 * queue (xmit -> queue -> rnic_receive) with a simulated clock, optional
 * drop/duplicate hooks and a record of async events.
 *
 * Only wire + rnic are needed, on purpose: tests/rnic/harness.{c,h} serves
 * the transport suite over ports/pair; these tests check the rnic alone.
 */
#ifndef SOFTRNIC_TESTS_RNIC_UNIT_UTIL_H
#define SOFTRNIC_TESTS_RNIC_UNIT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../check.h"
#include "../verbs_helpers.h"
#include "rnic/rnic.h"
#include "wire/wire.h"

/* ---- the loop ------------------------------------------------------------ */

struct ut_pkt {
	int to;
	size_t len;
	uint8_t data[WIRE_MAX_IB_PACKET];
};

struct ut_event {
	enum ibv_event_type type;
	void *obj;
};

struct ut_loop;

/* A packet node `from` sends; n counts that node's packets from 0.  A drop
 * hook returns true to lose it, a dup hook true to deliver it twice. */
typedef bool (*ut_hook)(struct ut_loop *l, int from, uint64_t n, const uint8_t *ib, size_t len);

struct ut_node {
	struct ut_loop *l;
	int id;
};

struct ut_loop {
	struct rnic *r[2];
	struct rnic_gid gid[2];         /* ::ffff:10.0.0.1 and ::ffff:10.0.0.2 */
	struct ut_pkt *q;
	size_t cap, qhead, qlen;
	uint64_t now;                   /* simulated ns */
	uint64_t sent[2];               /* packets xmitted by node i */
	ut_hook drop, dup;
	void *hook_ctx;                 /* the hooks' own state */
	int hook_state;
	struct ut_event ev[64];         /* with record_events, in order */
	int nev;
	struct ut_node node[2];         /* the io ctx of r[i] */
};

/* Two rnics with seeds seed_base and seed_base + 1, from *cfg (or the
 * defaults when NULL), a queue of `cap` packets, the clock at 1000 ns.
 * With record_events, async events land in ev[] (otherwise the rnics
 * have no async_event hook). */
void ut_loop_init(struct ut_loop *l, size_t cap, const struct rnic_config *cfg, uint32_t seed_base,
		  bool record_events);
void ut_loop_fini(struct ut_loop *l);
/* Deliver one queued packet (100 ns later), or advance the clock to the
 * next timer.  Returns false when nothing is left to do. */
bool ut_loop_step(struct ut_loop *l);
void ut_loop_run(struct ut_loop *l, int max_steps);
/* How many recorded events have this type and element. */
int ut_count_events(const struct ut_loop *l, enum ibv_event_type type, void *obj);

/* What else a connection may differ in (ut_connect_rc's `opts`). */
struct ut_rc_opts {
	int access;                     /* qp_access_flags */
	enum ibv_mtu mtu;               /* path MTU */
	uint8_t rd_atomic;              /* max_rd_atomic and max_dest_rd_atomic */
	uint8_t hop_limit;              /* of the address vector's GRH */
};
/* The defaults: remote write, read and atomic access, 1024-byte MTU, 4
 * reads/atomics each way, hop limit 1. */
extern const struct ut_rc_opts ut_rc_default;

/* Moves node i's QP to RTS (RESET -> INIT -> RTR -> RTS) towards node
 * 1-i's QP dqpn, with `opts` (NULL: ut_rc_default); a UC QP gets only the
 * attributes UC takes.  0 or the errno of the modify that failed. */
int ut_connect_rc(struct ut_loop *l, int i, struct rnic_qp *qp, uint32_t dqpn, uint32_t sq_psn, uint32_t rq_psn,
		  uint8_t timeout, uint8_t retry, uint8_t rnr_retry, const struct ut_rc_opts *opts);

/* ---- data ---------------------------------------------------------------- */

/* A pattern of n bytes that depends on seed and position. */
void ut_fill(uint8_t *p, size_t n, uint32_t seed);

#endif
