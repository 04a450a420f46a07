/*
 * dcqcn.h — DCQCN, the reaction point's rate control (Zhu et al., SIGCOMM
 * 2015, "Congestion Control for Large-Scale RDMA Deployments", §3.1 and
 * Fig. 6), as NVIDIA ConnectX NICs run it per QP.
 *
 * A pure state machine, like the transport: no clock, no I/O.  Inputs are
 * CNPs (dcqcn_on_cnp), bytes sent (dcqcn_on_sent) and time passing
 * (dcqcn_advance); the output is the rate the QP may send at
 * (dcqcn_rate), and the time it next needs waking (dcqcn_next_deadline).
 * The rnic calls it from the requester (bytes), the receive path (CNPs)
 * and its timers; tests drive it alone against hand-computed sequences;
 * the simulator runs the same code.
 *
 * The algorithm, with the paper's names (RC current rate, RT target rate,
 * α the congestion estimate, g its gain, F the fast-recovery stages):
 *
 *   CNP       at most once per rate_reduce_monitor_period (a CNP inside
 *             the period is remembered and acted on when it ends):
 *                 RT ← RC (see clamp_tgt_rate), RC ← RC·(1 − α/2),
 *                 α ← (1 − g)·α + g, both increase stages reset to 0.
 *   α         for every dce_tcp_rtt without a CNP: α ← (1 − g)·α; the
 *             QP's first CNP starts from initial_alpha_value.
 *   increase  one event each rpg_time_reset (timer stage T++) and each
 *             rpg_byte_reset bytes sent (byte stage B++):
 *                 max(T, B) ≤ F  fast recovery     (RT unchanged)
 *                 min(T, B) > F  hyper increase    RT ← RT + (min(T,B) − F)·R_HAI
 *                 otherwise      additive increase RT ← RT + R_AI
 *             then RC ← (RT + RC) / 2; both clamped to [min, line rate].
 *
 * Once RC and RT are back at the line rate the QP is "uncongested": no
 * timers run and the pacer stands aside, so a QP that never sees a CNP
 * costs nothing.  α keeps decaying (lazily, dcqcn.c) and the next CNP
 * cuts with the α it has by then.
 *
 * Units: time in ns (the rnic's `now`), rates in bits per second, α and g
 * in 1/1024 (ConnectX's dce_tcp_g is 1024·(1 − g)) (ConnectX keeps α as a 10-bit fraction; initial_alpha_value
 * 1023 is 1023/1024).  Integer arithmetic only, so a run replays bit for
 * bit and the unit tests can state exact values.
 */
#ifndef SOFTRNIC_RNIC_DCQCN_H
#define SOFTRNIC_RNIC_DCQCN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* α = 1.0 in the parameters (initial_alpha_value, dce_tcp_g) and in
 * dcqcn_alpha: 10 fractional bits, as ConnectX. */
#define DCQCN_ALPHA_ONE 1024u
/* ... and inside the state machine: 20 fractional bits.  With 10, the
 * decay α·(1 − 5/1024) rounds down by a whole unit for every α < 205,
 * which drags α to 0 between CNPs a few µs apart: a bias, not a model. */
#define DCQCN_ALPHA_SHIFT 10u
#define DCQCN_ALPHA_ONE_Q20 (1u << 20)

/* The parameters, named after the ConnectX (mlx5) ones they mirror
 * (/sys/class/net/<if>/ecn/roce_rp/ and roce_np/ on a ConnectX host;
 * docs/congestion.md lists them with their sources). */
struct dcqcn_params {
	/* reaction point */
	uint32_t rpg_time_reset;                /* µs: the increase timer        */
	uint32_t rpg_byte_reset;                /* bytes per byte-counter stage  */
	uint32_t rpg_threshold;                 /* F: fast-recovery stages       */
	uint32_t rpg_ai_rate;                   /* Mb/s: additive increase R_AI  */
	uint32_t rpg_hai_rate;                  /* Mb/s: hyper increase R_HAI    */
	uint32_t rpg_min_rate;                  /* Mb/s: floor of RC             */
	uint32_t rpg_max_rate;                  /* Mb/s: ceiling (0: line rate)  */
	uint32_t rpg_gd;                        /* a cut is RC·α/2^rpg_gd (α in
	                                           1/1024): 11 gives α/2       */
	uint32_t rpg_min_dec_fac;               /* %: RC never drops below this
	                                           share of itself on one CNP  */
	uint32_t rate_to_set_on_first_cnp;      /* Mb/s: RC on the first CNP of
	                                           an uncongested QP (0: cut)  */
	uint32_t dce_tcp_g;                     /* 1 − g, in 1/1024 (1019: g =
	                                           5/1024; see dcqcn.c)        */
	uint32_t dce_tcp_rtt;                   /* µs: the α timer               */
	uint32_t initial_alpha_value;           /* α in 1/1024 on the first CNP  */
	uint32_t rate_reduce_monitor_period;    /* µs: at most one cut per period */
	uint32_t clamp_tgt_rate;                /* 1: every cut sets RT ← RC     */
	uint32_t clamp_tgt_rate_after_time_inc; /* 1: ... also after a timer
	                                           increase, not only bytes     */
	/* notification point */
	uint32_t min_time_between_cnps;         /* µs: per QP                    */
};

/* Two named sets: the ConnectX factory defaults, and the DCQCN paper's
 * evaluation parameters (55 µs timers, 10 MB byte counter, F = 5,
 * g = 1/256).  Values and their sources: dcqcn.c. */
enum dcqcn_profile { DCQCN_PROFILE_MLX5, DCQCN_PROFILE_PAPER };
void dcqcn_params_default(struct dcqcn_params *p, enum dcqcn_profile profile);

/* One entry per parameter, for setting them by name (the runtime maps
 * SOFTRNIC_CC_<NAME> environment variables onto these) and for printing
 * them.  dcqcn_param_set: 0, ENOENT (no such name) or ERANGE. */
struct dcqcn_param_info {
	const char *name;
	const char *unit;
	size_t offset;
	uint32_t min, max;
};
extern const struct dcqcn_param_info dcqcn_param_table[];
extern const size_t dcqcn_param_count;
int dcqcn_param_set(struct dcqcn_params *p, const char *name, uint64_t value);
uint32_t dcqcn_param_get(const struct dcqcn_params *p, const struct dcqcn_param_info *info);

/* The reaction point of one QP. */
struct dcqcn_rp {
	const struct dcqcn_params *p;
	uint64_t line_rate;             /* bits/s */
	uint64_t rc, rt;                /* current and target rate, bits/s */
	uint32_t alpha;                 /* 1/2^20 (dcqcn_alpha: 1/1024) */
	bool congested;                 /* a CNP was seen and the rate or α
	                                   has not recovered yet */
	bool cut_pending;               /* a CNP arrived inside the monitor
	                                   period: cut when it ends */
	bool seen_cnp;                  /* any CNP yet (α starts then)    */
	uint64_t alpha_anchor;          /* time of the latest CNP         */
	uint64_t alpha_decays;          /* α periods since then applied   */
	uint64_t last_cut;              /* time of the latest cut */
	uint64_t cut_at;                /* when the pending cut happens */
	uint64_t timer_at;              /* next increase-timer event */
	uint64_t bytes;                 /* towards the next byte stage */
	uint32_t time_stage, byte_stage;
	/* counters */
	uint64_t cnps;                  /* CNPs handed in */
	uint64_t cuts;                  /* rate decreases */
	uint64_t increases;             /* increase events */
};

#define DCQCN_NO_DEADLINE UINT64_MAX

/* Start uncongested at `line_rate` (bits/s).  p must outlive rp. */
void dcqcn_init(struct dcqcn_rp *rp, const struct dcqcn_params *p, uint64_t line_rate);
/* A CNP for this QP arrived at `now`. */
void dcqcn_on_cnp(struct dcqcn_rp *rp, uint64_t now);
/* The QP sent `bytes` bytes at `now` (counted only while congested). */
void dcqcn_on_sent(struct dcqcn_rp *rp, uint64_t bytes, uint64_t now);
/* α at `now` in 1/1024 (applies the decays due; tests, the live view). */
uint32_t dcqcn_alpha(struct dcqcn_rp *rp, uint64_t now);
/* Run every timer due at `now`. */
void dcqcn_advance(struct dcqcn_rp *rp, uint64_t now);
uint64_t dcqcn_next_deadline(const struct dcqcn_rp *rp);
/* The rate the QP may send at now: RC (the line rate, or rpg_max_rate
 * when lower, while uncongested). */
static inline uint64_t dcqcn_rate(const struct dcqcn_rp *rp)
{
	return rp->rc;
}

#endif
