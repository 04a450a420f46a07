/*
 * harness.h — shared helpers for the transport tests in tests/rnic: two rnics
 * on a seeded pair link, one connected RC QP on each, CQ helpers, and the
 * seed loop that says how to replay a failed seed (failures are counted
 * and printed by tests/check.h).
 *
 * Tests stay plain C: every test binary has its own main(), runs its cases,
 * prints "FAIL ..." lines and exits non-zero if any case failed.
 */
#ifndef SOFTRNIC_TESTS_RNIC_HARNESS_H
#define SOFTRNIC_TESTS_RNIC_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../check.h"
#include "../verbs_helpers.h"
#include "ports/pair.h"
#include "rnic/rnic.h"

const char *ht_wc_status_str(int status);

/* ---- a connected pair of RC QPs ------------------------------------------ */

struct ht_opts {
	uint64_t seed;                  /* pair PRNG seed (and rnic seeds)     */
	enum ibv_mtu mtu;               /* path MTU, default IBV_MTU_1024     */
	uint32_t psn[2];                /* initial sq_psn of node 0 / node 1   */
	uint8_t timeout;                /* local ACK timeout exponent          */
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer[2];       /* per node (the receiver's value)     */
	uint8_t max_rd_atomic;          /* both directions                     */
	uint32_t sq_depth, rq_depth;
	uint32_t max_mr;                /* rnic config, 0 = default            */
	int access;                     /* qp_access_flags on both QPs         */
	bool sq_sig_all;
	bool go_back_n[2];              /* node i: no selective repeat         */
	bool message_path[2];           /* node i's QP on the message path     */
};
void ht_default_opts(struct ht_opts *o, uint64_t seed);

struct ht_side {
	struct rnic *r;
	struct rnic_pd *pd;
	struct rnic_cq *scq, *rcq;
	struct rnic_qp *qp;
	uint32_t qpn;
	uint32_t max_inline;            /* actual max_inline_data of qp        */
};

struct ht {
	struct pair *pair;
	struct ht_side side[2];
	struct ht_opts opts;
};

/* Build the pair, PDs, CQs and one RC QP per node, connected to each other
 * (RESET -> INIT -> RTR -> RTS).  Returns 0 or reports a failure and returns
 * -1 (everything created so far is freed by ht_teardown). */
int ht_setup(struct ht *h, const struct ht_opts *o);
void ht_teardown(struct ht *h);

/* The three standard transitions, separately, for tests that need to stop
 * half-way.  Return the rnic_qp_modify result. */
int ht_to_init(struct rnic_qp *qp, int access, uint64_t now);
int ht_to_rtr(struct rnic_qp *qp, const struct rnic_gid *dgid, uint32_t dqpn, uint32_t rq_psn,
	      enum ibv_mtu mtu, uint8_t max_dest_rd_atomic, uint8_t min_rnr_timer, uint64_t now);
int ht_to_rts(struct rnic_qp *qp, uint32_t sq_psn, uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry,
	      uint8_t max_rd_atomic, uint64_t now);

/* Run the pair until `cq` yields one completion (stored in *wc) or max_ns
 * of simulated time pass.  Returns true if a completion was polled. */
bool ht_wait_wc(struct ht *h, struct rnic_cq *cq, struct ibv_wc *wc, uint64_t max_ns);
/* Drain up to n completions already queued (no simulated time passes). */
int ht_poll(struct rnic_cq *cq, struct ibv_wc *wc, int n);

/* Register `len` bytes at `buf` (iova = the address) with `access`. */
struct rnic_mr *ht_reg(struct ht_side *s, void *buf, size_t len, int access);

/* Sum of every rx_drop_* counter of an rnic. */
uint64_t ht_drops(const struct rnic_counters *c);

/* Seeds: parse "--seed N" / "--seeds A-B" / "--count N" from argv and the
 * environment variable SOFTRNIC_SEED (one seed to replay).  Fills seeds[]
 * and returns how many; `defaults` is used when nothing is given.  Names
 * SOFTRNIC_SEED as the variable of check_exit's replay line: a seed loop
 * calls check_seed(seed) for each seed and ends with check_exit. */
size_t ht_seeds_from_args(int argc, char **argv, uint64_t *seeds, size_t cap, const uint64_t *defaults,
			  size_t ndefaults);

/* A seeded run's fingerprint: its trace hash and the simulated time it
 * ended at.  Two runs of one seed must agree on both. */
struct ht_replay {
	uint64_t trace, now;
};
/* One run of `seed` in variant `variant` (0..nvariants-1).  `first`: the
 * run whose counts the test keeps, and prints with -v (`verbose`); false
 * for its replay.  Returns false if a check failed. */
typedef bool (*ht_seed_run)(void *ctx, uint64_t seed, unsigned variant, bool first, bool verbose,
			    struct ht_replay *out);
/* The seed loop of a seeded test: every seed (ht_seeds_from_args; 1 ..
 * ndefaults when none is given) in each variant, as one case ("seed 7",
 * or "seed 7, <variant_names[v]>"), run twice, failing the case if the
 * replay's fingerprint differs, and printing the line that replays a
 * failed case (SOFTRNIC_SEED=N prog -v).  -v in argv makes the first run
 * verbose.  Returns the number of failed cases; *nseeds: seeds run. */
int ht_replay_seeds(int argc, char **argv, size_t ndefaults, unsigned nvariants,
		    const char *const *variant_names, ht_seed_run run, void *ctx, size_t *nseeds);

#define HT_ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		       IBV_ACCESS_REMOTE_ATOMIC)
#define HT_MS 1000000ull
#define HT_US 1000ull

#endif
