/*
 * exp_loss.c — the experiments on loss and its lossless remedies, each on
 * one switch (exp_int.h's star): gbn-loss (one long write under random
 * link loss, Go-Back-N against selective repeat) and the 16:1 incast of
 * incast-pfc and ib-credit under each flow-control mode (lossy, lossy
 * with selective repeat or IRN's window, PFC, InfiniBand credits).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/exp_int.h"

int exp_gbn_loss(const struct sim_exp_opts *o)
{
	static const double losses[] = { 0, 0.00001, 0.0001, 0.001, 0.01 };
	static const char *const modes[] = { "go-back-n", "selective" };
	uint64_t bytes = o->quick ? 4u << 20 : 64u << 20;
	FILE *csv = exp_open_out(o, "gbn-loss.csv"), *sum = exp_open_out(o, "summary.txt");

	if (!csv || !sum)
		return 2;
	fprintf(csv, "recovery,loss,bytes,fct_ns,goodput_gbps,retransmits,timeouts,probes,link_losses,packets_sent,"
		     "max_nic_queue_bytes\n");
	fprintf(sum, "gbn-loss: one %" PRIu64 "-byte RDMA WRITE, 100 Gb/s links, 1 us each, seed %" PRIu64
		     ", Go-Back-N and selective repeat\n", bytes, o->seed);
	for (unsigned m = 0; m < 2; m++) {
		for (unsigned i = 0; i < sizeof(losses) / sizeof(losses[0]); i++) {
			struct sim_engine e;
			struct sim_link_opts l = { .rate_bps = 100 * GBPS, .delay_ns = 1000, .loss = losses[i] };
			struct sim_host_opts ho = EXP_HOSTS;

			ho.selective_repeat = m == 1;
			sim_engine_init(&e);
			/* The same seed for both modes: the same links. */
			struct sim_net *n = exp_star(&e, o->seed + i, 2, &l, &ho, &EXP_SWITCH);
			if (!n || sim_add_flow(n, 0, 1, bytes, 0) < 0) {
				fprintf(stderr, "softrnic sim: cannot build gbn-loss\n");
				return 2;
			}
			exp_run_flows(n, 60ull * 1000000000ull);
			const struct sim_flow_result *f = sim_flow(n, 0);
			const struct sim_net_stats *st = sim_net_stats(n);
			double gbps = f->fct_ns && !f->failed ? (double)bytes * 8 / (double)f->fct_ns : 0;
			fprintf(csv, "%s,%g,%" PRIu64 ",%" PRIu64 ",%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
				     ",%" PRIu64 ",%" PRIu64 "\n",
				modes[m], losses[i], bytes, f->fct_ns, gbps, sim_rnic_counter(n, "retransmits"),
				sim_rnic_counter(n, "retransmit_timeouts"), sim_rnic_counter(n, "retransmit_probes"),
				st->link_losses, st->packets_sent, st->max_host_queue_bytes);
			fprintf(sum, "  %-9s loss %-8g goodput %7.2f Gb/s (%5.1f%% of the link), %" PRIu64
				     " retransmitted packets, %" PRIu64 " timeouts, %" PRIu64 " probes%s\n",
				modes[m], losses[i], gbps, gbps, sim_rnic_counter(n, "retransmits"),
				sim_rnic_counter(n, "retransmit_timeouts"), sim_rnic_counter(n, "retransmit_probes"),
				f->fct_ns ? "" : " (did not finish)");
			sim_net_destroy(n);
			sim_engine_free(&e);
		}
	}
	fclose(csv);
	fclose(sum);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The 16:1 incast under each flow-control mode: 0 none (lossy), 1 PFC,
 * 2 InfiniBand credits, 3 none with selective repeat in the hosts, 4 none
 * with IRN (selective repeat and a window of one bandwidth-delay product,
 * IRN_WINDOW).  Files NAME.csv, NAME-flows.csv, summary.txt. */
static const char *const MODE_NAMES[] = { "lossy", "pfc", "ib", "lossy-sr", "lossy-irn" };
/* The star's BDP in packets: 100 Gb/s x a round trip of four 1 us links
 * plus a full packet's serialization at each of them, over 1 KiB
 * packets, rounded up (IRN's BDP-FC). */
#define IRN_WINDOW 52u

static int run_incast(const struct sim_exp_opts *o, const char *name, const int *modes, unsigned nmodes)
{
	unsigned senders = 16;
	uint64_t bytes = o->quick ? 256u << 10 : 2u << 20;
	char csv_name[64], flows_name[64];
	snprintf(csv_name, sizeof(csv_name), "%s.csv", name);
	snprintf(flows_name, sizeof(flows_name), "%s-flows.csv", name);
	FILE *csv = exp_open_out(o, csv_name), *sum = exp_open_out(o, "summary.txt"), *flows = exp_open_out(o, flows_name);

	if (!csv || !sum || !flows)
		return 2;
	fprintf(csv, "mode,senders,bytes_each,done_ns,goodput_gbps,fct_p50_ns,fct_p99_ns,drops,headroom_drops,"
		     "retransmits,timeouts,pauses_sent,pauses_received,max_buffer_bytes\n");
	fprintf(flows, "mode,flow,src,dst,bytes,start_ns,fct_ns\n");
	fprintf(sum, "%s: %u senders x %" PRIu64 " bytes to one receiver through one switch "
		     "(4 MiB shared buffer), 100 Gb/s links, 1 us each, seed %" PRIu64 "\n",
		name, senders, bytes, o->seed);
	for (unsigned m = 0; m < nmodes; m++) {
		const char *mode = MODE_NAMES[modes[m]];
		struct sim_engine e;
		struct sim_link_opts l = { .rate_bps = 100 * GBPS, .delay_ns = 1000 };
		struct sim_switch_opts so = EXP_SWITCH;
		struct sim_host_opts ho = EXP_HOSTS;
		so.pfc = modes[m] == 1;
		so.ib_credits = modes[m] == 2;
		ho.selective_repeat = modes[m] == 3 || modes[m] == 4;
		ho.send_window = modes[m] == 4 ? IRN_WINDOW : 0;
		sim_engine_init(&e);
		struct sim_net *n = exp_star(&e, o->seed, senders + 1, &l, &ho, &so);
		for (unsigned s = 1; n && s <= senders; s++)
			if (sim_add_flow(n, s, 0, bytes, 0) < 0)
				n = NULL;
		if (!n) {
			fprintf(stderr, "softrnic sim: cannot build incast-pfc\n");
			return 2;
		}
		exp_run_flows(n, 60ull * 1000000000ull);
		uint64_t fct[64], done = 0;
		unsigned finished = 0;
		for (unsigned i = 0; i < sim_flows(n); i++) {
			const struct sim_flow_result *f = sim_flow(n, i);
			fprintf(flows, "%s,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", mode, i, f->src, f->dst, f->bytes,
				f->start_ns, f->fct_ns);
			if (f->fct_ns && !f->failed) {
				fct[finished++] = f->fct_ns;
				done = f->start_ns + f->fct_ns > done ? f->start_ns + f->fct_ns : done;
			}
		}
		qsort(fct, finished, sizeof(fct[0]), cmp_u64);
		const struct sim_net_stats *st = sim_net_stats(n);
		double gbps = done ? (double)bytes * finished * 8 / (double)done : 0;
		uint64_t p50 = finished ? fct[finished / 2] : 0, p99 = finished ? fct[(finished * 99) / 100] : 0;
		fprintf(csv, "%s,%u,%" PRIu64 ",%" PRIu64 ",%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			     ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
			mode, senders, bytes, done, gbps, p50, p99, st->drops, st->headroom_drops,
			sim_rnic_counter(n, "retransmits"), sim_rnic_counter(n, "retransmit_timeouts"), st->pauses_sent,
			st->pauses_received, st->max_buffer_bytes);
		fprintf(sum, "  %-9s  %u/%u flows done, goodput %.1f Gb/s, FCT p50 %.1f us p99 %.1f us, %" PRIu64
			     " drops, %" PRIu64 " retransmitted packets, %" PRIu64 " timeouts, %" PRIu64
			     " pauses sent, %" PRIu64 " credit waits, buffer peak %" PRIu64 " bytes\n",
			mode, finished, senders, gbps, (double)p50 / 1000, (double)p99 / 1000,
			st->drops + st->headroom_drops, sim_rnic_counter(n, "retransmits"),
			sim_rnic_counter(n, "retransmit_timeouts"), st->pauses_sent, st->credit_stalls,
			st->max_buffer_bytes);
		sim_net_destroy(n);
		sim_engine_free(&e);
	}
	fclose(csv);
	fclose(flows);
	fclose(sum);
	return 0;
}

int exp_incast_pfc(const struct sim_exp_opts *o)
{
	static const int modes[] = { 0, 3, 4, 1 };

	return run_incast(o, "incast-pfc", modes, 4);
}

int exp_ib_credit(const struct sim_exp_opts *o)
{
	static const int modes[] = { 1, 2 };

	return run_incast(o, "ib-credit", modes, 2);
}
