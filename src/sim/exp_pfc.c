/*
 * exp_pfc.c — the experiments on what PFC's pauses do beyond one hop:
 * pfc-storm (a receiver that pauses for ever, how far it spreads, the
 * watchdog that stops it) and pfc-deadlock (a cyclic buffer dependency
 * on a ring of switches, broken by the watchdog, against a leaf-spine
 * that has none).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "sim/exp_int.h"

/* pfc-storm: hosts 0-3 on switch A, hosts 4 and 5 on switch B, A and B
 * linked.  Hosts 0 and 1 write to host 5, hosts 2 and 3 to host 4.  From
 * storm_ns on, host 5's NIC pauses its port for ever.  Without the
 * watchdog the pause spreads upstream (B's port to 5 fills, B pauses A,
 * A pauses every sender) and stops the innocent flows to host 4 too; with
 * it, B's queue to host 5 is declared stormed and dropped, and the rest
 * flows again. */
int exp_pfc_storm(const struct sim_exp_opts *o)
{
	uint64_t storm_ns = o->quick ? 500000 : 2000000, end_ns = o->quick ? 8000000 : 30000000;
	uint64_t detect = o->quick ? 1000000 : 5000000;
	FILE *csv = exp_open_out(o, "pfc-storm.csv"), *sum = exp_open_out(o, "summary.txt");

	if (!csv || !sum)
		return 2;
	fprintf(csv, "watchdog,innocent_gbps_before,innocent_gbps_after,storm_port_paused,a_to_b_paused,"
		     "sender_nic_paused_mean,storms_detected,watchdog_drops,pauses_sent\n");
	fprintf(sum, "pfc-storm: 4 senders on switch A, 2 receivers on switch B, 100 Gb/s, 1 us links; "
		     "receiver 5 pauses for ever from %.1f ms; watchdog detection and restoration %.1f ms "
		     "(SONiC's default 200 ms, scaled to the run); %.1f ms simulated, seed %" PRIu64 "\n",
		(double)storm_ns / 1e6, (double)detect / 1e6, (double)end_ns / 1e6, o->seed);
	fprintf(sum, "  (paused: the share of the time after the storm began that the egress stood paused)\n");
	for (int wd = 0; wd <= 1; wd++) {
		struct sim_engine e;
		struct sim_link_opts l = { .rate_bps = 100 * GBPS, .delay_ns = 1000 };
		struct sim_switch_opts so = EXP_SWITCH;
		so.wd_detect_ns = wd ? detect : 0;
		so.wd_restore_ns = detect;
		sim_engine_init(&e);
		struct sim_net *n = sim_net_create(&e, o->seed, &EXP_HOSTS, &so);
		int a = n ? sim_add_switch(n) : -1, b = n ? sim_add_switch(n) : -1;
		bool ok = a >= 0 && b >= 0;
		for (unsigned h = 0; ok && h < 6; h++) {
			int id = sim_add_host(n);
			ok = id >= 0 && !sim_link(n, sim_host_node(n, (unsigned)id), sim_switch_node(n, h < 4 ? (unsigned)a : (unsigned)b), &l);
		}
		ok = ok && !sim_link(n, sim_switch_node(n, (unsigned)a), sim_switch_node(n, (unsigned)b), &l) && !sim_build(n);
		uint64_t bytes = 100 * GBPS / 8 * (end_ns / 1000000 + 1) / 1000;
		for (unsigned s = 0; ok && s < 4; s++)
			ok = sim_add_flow(n, s, s < 2 ? 5 : 4, bytes, 0) >= 0;
		ok = ok && !sim_host_storm(n, 5, storm_ns);
		if (!ok) {
			fprintf(stderr, "softrnic sim: cannot build pfc-storm\n");
			sim_net_destroy(n);
			return 2;
		}
		sim_run_until(&e, storm_ns);
		uint64_t before = sim_host_delivered(n, 2) + sim_host_delivered(n, 3);
		uint64_t p_storm0 = sim_port_paused_ns(n, sim_switch_node(n, (unsigned)b),
						       (unsigned)sim_port_to_host(n, sim_switch_node(n, (unsigned)b), 5));
		unsigned a_node = sim_switch_node(n, (unsigned)a);
		unsigned a_to_b = (unsigned)sim_port_to_node(n, a_node, sim_switch_node(n, (unsigned)b));
		uint64_t p_ab0 = sim_port_paused_ns(n, a_node, a_to_b), p_nic0 = 0;
		for (unsigned s = 0; s < 4; s++)
			p_nic0 += sim_port_paused_ns(n, sim_host_node(n, s), 0);
		sim_run_until(&e, end_ns);
		uint64_t after = sim_host_delivered(n, 2) + sim_host_delivered(n, 3) - before;
		double span = (double)(end_ns - storm_ns);
		double storm_port = (double)(sim_port_paused_ns(n, sim_switch_node(n, (unsigned)b),
					 (unsigned)sim_port_to_host(n, sim_switch_node(n, (unsigned)b), 5)) - p_storm0) / span;
		double ab = (double)(sim_port_paused_ns(n, a_node, a_to_b) - p_ab0) / span, nic = 0;
		for (unsigned s = 0; s < 4; s++)
			nic += (double)sim_port_paused_ns(n, sim_host_node(n, s), 0);
		nic = (nic - (double)p_nic0) / 4 / span;
		const struct sim_net_stats *st = sim_net_stats(n);
		double g_before = (double)before * 8 / (double)storm_ns, g_after = (double)after * 8 / span;
		fprintf(csv, "%d,%.2f,%.2f,%.3f,%.3f,%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", wd, g_before, g_after,
			storm_port, ab, nic, st->storms_detected, st->watchdog_drops, st->pauses_sent);
		fprintf(sum, "  watchdog %-3s innocent flows %.1f Gb/s before the storm, %.1f Gb/s after; paused: "
			     "B->storming host %.0f%%, A->B %.0f%%, senders' NICs %.0f%% (mean); %" PRIu64
			     " storms detected, %" PRIu64 " packets dropped by the watchdog\n",
			wd ? "on" : "off", g_before, g_after, 100 * storm_port, 100 * ab, 100 * nic, st->storms_detected,
			st->watchdog_drops);
		sim_net_destroy(n);
		sim_engine_free(&e);
	}
	fclose(csv);
	fclose(sum);
	return 0;
}

/* pfc-deadlock: three switches in a ring, one host on each.  Host i
 * writes to host i+1 (one hop) and to host i+2, routed the long way
 * round (two hops clockwise, static routes) so that every ring link
 * carries three flows and each switch's buffer for the next waits on the
 * next switch's: a cyclic buffer dependency.  Once every ring port is
 * paused, nothing drains and the pauses are refreshed for ever: a
 * deadlock, detected here as a millisecond in which no byte arrives
 * anywhere while every ring egress stands paused.  The watchdog breaks
 * it.  The same host pairs on a leaf-spine with up/down (shortest) routes
 * have no cycle and never stop. */
struct dl_result {
	uint64_t formed_ns;             /* the first millisecond with nothing delivered */
	uint64_t stalled_ms, progress_after;
	bool cycle_paused;              /* in a stall, every ring egress stood paused */
	bool deadlocked_at_end;
};

static uint64_t delivered_all(const struct sim_net *n, unsigned hosts)
{
	uint64_t d = 0;

	for (unsigned h = 0; h < hosts; h++)
		d += sim_host_delivered(n, h);
	return d;
}

static void run_deadlock(struct sim_engine *e, struct sim_net *n, unsigned hosts, uint64_t end_ns,
			 const unsigned (*ring)[2], unsigned nring, struct dl_result *r)
{
	uint64_t last = delivered_all(n, hosts);

	memset(r, 0, sizeof(*r));
	for (uint64_t t = 1000000; t <= end_ns; t += 1000000) {
		sim_run_until(e, t);
		uint64_t d = delivered_all(n, hosts);
		bool all_paused = nring > 0;
		for (unsigned i = 0; i < nring; i++)
			if (!sim_port_is_paused(n, ring[i][0], ring[i][1]))
				all_paused = false;
		bool stalled = d == last && sim_flows_running(n);
		if (stalled) {
			r->stalled_ms++;
			if (!r->formed_ns)
				r->formed_ns = t;
			r->cycle_paused |= all_paused;
		} else if (r->formed_ns) {
			r->progress_after += d - last;
		}
		r->deadlocked_at_end = stalled;
		last = d;
	}
}

int exp_pfc_deadlock(const struct sim_exp_opts *o)
{
	uint64_t end_ns = o->quick ? 20000000 : 100000000, detect = o->quick ? 1000000 : 2000000;
	FILE *csv = exp_open_out(o, "pfc-deadlock.csv"), *sum = exp_open_out(o, "summary.txt");
	struct sim_switch_opts so = EXP_SWITCH;
	struct sim_link_opts l = { .rate_bps = 100 * GBPS, .delay_ns = 1000 };

	if (!csv || !sum)
		return 2;
	/* A small buffer and a low threshold, as on a shallow-buffer switch. */
	so.buffer_bytes = 1u << 20;
	so.alpha = 0.125;
	fprintf(csv, "topology,watchdog,first_stall_ns,stalled_ms,cycle_paused,stalled_at_end,bytes_after_first_stall,"
		     "storms_detected,watchdog_drops,pauses_sent,flows_done,flows_failed,flows\n");
	fprintf(sum, "pfc-deadlock: a 3-switch ring with routes the long way round, against a 3-leaf, "
		     "2-spine leaf-spine with up/down routes; the same 6 flows; 1 MiB buffer, alpha 1/8; "
		     "watchdog %.0f ms; %.0f ms simulated, seed %" PRIu64 "\n",
		(double)detect / 1e6, (double)end_ns / 1e6, o->seed);
	for (int topo = 0; topo <= 1; topo++) {
		for (int wd = 0; wd <= 1; wd++) {
			if (topo == 1 && wd == 1)
				continue;               /* nothing for a watchdog to do */
			struct sim_engine e;
			struct sim_switch_opts s2 = so;
			unsigned ring[3][2], nring = 0;
			s2.wd_detect_ns = wd ? detect : 0;
			s2.wd_restore_ns = detect;
			sim_engine_init(&e);
			/* The transport's timeout (16.8 ms) longer than the
			 * watchdog's detection, as on hardware (SONiC's 200 ms
			 * against retries that run for seconds): a deadlock the
			 * watchdog breaks costs the flows a timeout, not their
			 * life. */
			struct sim_host_opts ho = EXP_HOSTS;
			ho.qp_timeout = 12;
			struct sim_net *n = sim_net_create(&e, o->seed, &ho, &s2);
			bool ok = n != NULL;
			if (topo == 0) {
				/* Switch i: host i, and links to switches i+1 and
				 * i-1 (which port is which depends on the order
				 * the links were made: asked, not assumed). */
				for (unsigned i = 0; ok && i < 3; i++)
					ok = sim_add_switch(n) >= 0 && sim_add_host(n) >= 0;
				for (unsigned i = 0; ok && i < 3; i++)
					ok = !sim_link(n, sim_host_node(n, i), sim_switch_node(n, i), &l);
				for (unsigned i = 0; ok && i < 3; i++)
					ok = !sim_link(n, sim_switch_node(n, i), sim_switch_node(n, (i + 1) % 3), &l);
				ok = ok && !sim_build(n);
				/* Every host is reached clockwise: out of the port
				 * towards switch i+1, except at its own. */
				for (unsigned i = 0; ok && i < 3; i++) {
					int next = sim_port_to_node(n, sim_switch_node(n, i), sim_switch_node(n, (i + 1) % 3));
					ok = next >= 0;
					for (unsigned h = 0; ok && h < 3; h++)
						if (h != i)
							ok = !sim_set_route(n, sim_switch_node(n, i), h, (unsigned)next);
					ring[i][0] = sim_switch_node(n, i);
					ring[i][1] = (unsigned)next;
				}
				nring = 3;
			} else {
				int leaf[3], spine[2];
				for (unsigned i = 0; ok && i < 3; i++)
					ok = (leaf[i] = sim_add_switch(n)) >= 0 && sim_add_host(n) >= 0;
				for (unsigned i = 0; ok && i < 2; i++)
					ok = (spine[i] = sim_add_switch(n)) >= 0;
				for (unsigned i = 0; ok && i < 3; i++)
					ok = !sim_link(n, sim_host_node(n, i), sim_switch_node(n, (unsigned)leaf[i]), &l);
				for (unsigned i = 0; ok && i < 3; i++)
					for (unsigned j = 0; ok && j < 2; j++)
						ok = !sim_link(n, sim_switch_node(n, (unsigned)leaf[i]),
							       sim_switch_node(n, (unsigned)spine[j]), &l);
				ok = ok && !sim_build(n);
			}
			uint64_t bytes = o->quick ? 4u << 20 : 16u << 20;
			/* Two flows from each host to the host two switches on:
			 * on the ring every packet in a switch's buffer from
			 * the previous switch waits for the next ring link
			 * (with one-hop flows beside them, whose packets leave
			 * to the local host, the buffers drain and this ring
			 * does not lock up). */
			for (unsigned i = 0; ok && i < 3; i++)
				ok = sim_add_flow(n, i, (i + 2) % 3, bytes, 0) >= 0 &&
				     sim_add_flow(n, i, (i + 2) % 3, bytes, 0) >= 0;
			if (!ok) {
				fprintf(stderr, "softrnic sim: cannot build pfc-deadlock\n");
				sim_net_destroy(n);
				return 2;
			}
			struct dl_result r;
			run_deadlock(&e, n, 3, end_ns, (const unsigned (*)[2])ring, nring, &r);
			const struct sim_net_stats *st = sim_net_stats(n);
			unsigned done = 0, failed = 0;
			for (unsigned i = 0; i < sim_flows(n); i++) {
				const struct sim_flow_result *f = sim_flow(n, i);
				done += f->fct_ns && !f->failed;
				failed += f->failed;
			}
			const char *tname = topo ? "leaf-spine" : "ring";
			fprintf(csv, "%s,%d,%" PRIu64 ",%" PRIu64 ",%d,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%u,%u,%u\n",
				tname, wd, r.formed_ns, r.stalled_ms, r.cycle_paused, r.deadlocked_at_end, r.progress_after,
				st->storms_detected, st->watchdog_drops, st->pauses_sent, done, failed, sim_flows(n));
			fprintf(sum, "  %-10s watchdog %-3s ", tname, wd ? "on" : "off");
			if (r.formed_ns)
				fprintf(sum, "stopped at %.0f ms%s; %" PRIu64 " of %.0f ms without a byte delivered; %s; "
					     "%.1f MB delivered after the first stop",
					(double)r.formed_ns / 1e6,
					r.cycle_paused ? " with every ring port paused (deadlock)" : "", r.stalled_ms,
					(double)end_ns / 1e6, r.deadlocked_at_end ? "still stopped at the end" : "moving at the end",
					(double)r.progress_after / 1e6);
			else
				fprintf(sum, "never stopped");
			fprintf(sum, "; %" PRIu64 " storms detected, %" PRIu64 " packets dropped by the watchdog; "
				     "%u/%u flows done, %u failed (retries exhausted)\n",
				st->storms_detected, st->watchdog_drops, done, sim_flows(n), failed);
			sim_net_destroy(n);
			sim_engine_free(&e);
		}
	}
	fclose(csv);
	fclose(sum);
	return 0;
}
