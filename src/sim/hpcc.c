/*
 * hpcc.c — `softrnic sim run CONFIG`: an experiment described in the
 * files of the HPCC simulator (alibaba-edu/High-Precision-Congestion-
 * Control, and the ns-3 RDMA simulators derived from it), so that its
 * users' setups run unchanged, and its FCT file written the same way.
 *
 *   config.txt    "KEY value ..." lines.  Read: TOPOLOGY_FILE, FLOW_FILE,
 *                 ROUTE_FILE (softrnic's own: static routes, load_routes),
 *                 FCT_OUTPUT_FILE, SIMULATOR_STOP_TIME (s), CC_MODE (1
 *                 DCQCN, 3 HPCC, 7 TIMELY, 8 DCTCP, 10 HPCC-PINT:
 *                 softrnic's own dcqcn.c, hpcc_cc.c, timely.c, dctcp.c
 *                 in every host; PINT's switches in pint.c), ENABLE_QCN,
 *                 ENABLE_PFC, BUFFER_SIZE (MB), KMIN_MAP / KMAX_MAP
 *                 (KB) / PMAX_MAP per link rate, ERROR_RATE_PER_LINK,
 *                 PACKET_PAYLOAD_SIZE, and the DCQCN keys RATE_AI,
 *                 RATE_HAI, MIN_RATE, RP_TIMER (µs), EWMA_GAIN,
 *                 FAST_RECOVERY_TIMES, RATE_DECREASE_INTERVAL (µs),
 *                 ALPHA_RESUME_INTERVAL (µs), CLAMP_TARGET_RATE;
 *                 for TIMELY RATE_AI (δ), RATE_HAI and MIN_RATE (its
 *                 T_low, T_high, min RTT, α and β are not config keys in
 *                 HPCC either: their defaults, timely.h); for DCTCP
 *                 EWMA_GAIN (g), DCTCP_RATE_AI and MIN_RATE; for HPCC
 *                 RATE_AI (W_AI), MIN_RATE, U_TARGET (η), MI_THRESH
 *                 (maxStage), FAST_REACT, INT_MULTI (nothing to scale:
 *                 switch.c's INT records are full width), MULTI_RATE and
 *                 SAMPLE_FEEDBACK (only 0 is modelled); HAS_WIN (1:
 *                 a window of the largest path's BDP, max_bdp, scaled by
 *                 the rate as VAR_WIN 1 does); for HPCC-PINT the same
 *                 but FAST_REACT (it always reacts), with PINT_LOG_BASE
 *                 and PINT_PROB.  Other keys are listed in
 *                 the summary as not used.
 *   topology      "nodes switches links", the switch ids, then one
 *                 "a b rate delay error_rate" per link (rate 100Gbps,
 *                 delay 1000ns / 0.001ms).
 *   flows         the count, then "src dst priority dport size start_s"
 *                 (only the first `count` lines are read, as HPCC does).
 *   outputs       fct.txt (below), flows.csv, pfc.csv (pauses and paused
 *                 time per port that was paused), summary.txt, and with
 *                 --sample-us, queues.csv (every port holding packets or
 *                 paused, every sample) and throughput.csv (every flow
 *                 whose requests reached its destination in the sample:
 *                 their wire bytes, as Gb/s over the sample), together
 *                 at most --trace-limit-mb (1024 by default): the sample
 *                 that takes them past it is their last, and the summary
 *                 says when that was
 *   fct output    "sip dip sport dport size start_ns fct_ns standalone_ns"
 *                 with HPCC's addresses (0x0b000001 + id/256 << 16 +
 *                 id%256 << 8) in hex; sport is 10000 + the flow's index.
 *
 * Differences that remain (docs/experiments.md): ECN thresholds by port
 * rate from the maps (a rate not in them takes the fastest link's entry),
 * the MTU rounded to a power of two (1000 -> 1024), softrnic's own
 * transport and congestion control, not HPCC's rdma-hw.cc (its ACKs come
 * per AckReq, not per packet; DCTCP's ECN echo is a CNP), and the window
 * always scaled by the rate (VAR_WIN 0 is not modelled).
 */
#include "sim/hpcc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/engine.h"
#include "sim/hpcc_int.h"
#include "sim/net.h"
#include "sim/progress.h"

/* sim_net_run's progress calls. */
static void run_progress(void *ctx, const struct sim_net *n)
{
	sim_progress_update(ctx, sim_net_now(n), sim_net_events(n), sim_flows_running(n));
}

/* Until every flow ended or the stop time, with a progress line.  0, or 2
 * with a message. */
static int run_fabric(struct run *r)
{
	struct sim_progress prog;
	int rc = 0;

	sim_progress_start(&prog, "softrnic sim run", r->stop, sim_flows(r->n));
	int err = sim_net_run(r->n, r->stop, run_progress, &prog);
	if (err) {
		fprintf(stderr, "softrnic sim run: %s\n", err == EAGAIN ? "cannot start its threads" : "out of memory");
		rc = 2;
	}
	sim_progress_end(&prog, sim_net_now(r->n), sim_net_events(r->n), sim_flows_running(r->n));
	return rc;
}

static void run_free(struct run *r)
{
	if (r->flows)
		fclose(r->flows);
	simrun_stop_samplers(r);
	free(r->qs.bins);
	free(r->flow_src);
	free(r->t.is_switch);
	free(r->t.host_of);
	free(r->t.lk);
	sim_net_destroy(r->n);
	if (r->engine_live)
		sim_engine_free(&r->e);
}

int sim_run_hpcc(const char *config, const char *out_dir, struct sim_run_opts *o)
{
	struct run r = { .config = config, .out_dir = out_dir, .o = o };
	int rc = simrun_read_config(config, &r.c);

	if (rc)
		return rc;
	rc = simrun_read_topology(&r);
	if (!rc) {
		simrun_host_opts(&r);
		simrun_switch_opts(&r);
		rc = simrun_check_host_ports(&r);
	}
	if (!rc)
		rc = simrun_build_net(&r);
	if (!rc)
		rc = simrun_add_flows(&r);
	if (!rc) {
		fclose(r.flows);
		r.flows = NULL;
		r.stop = (uint64_t)(r.c.stop_s * 1e9);
		simrun_start_samplers(&r);
		rc = run_fabric(&r);
		simrun_stop_samplers(&r);
		simrun_write_pfc_csv(&r);
		int wrc = simrun_write_outputs(&r);
		rc = rc ? rc : wrc;
	}
	run_free(&r);
	return rc ? 2 : 0;
}
