/*
 * recovery_timers.c — the transport's loss-recovery timers against a
 * queue, a real loss and a slow peer, over the seeded pair.
 *
 * A probe resends the oldest unacknowledged packet when nothing has been
 * acknowledged for a while (rnic/completer.c, probe_wait_ns).  Too short a
 * while and every packet that waits in an ordinary queue is sent twice;
 * too long and a lost packet that nothing later reveals (a tail loss)
 * waits for it.  The wait follows the measured RTT, so:
 *
 *   queue      two senders, 64 KiB WRITEs eight deep each, through one
 *              1 Gb/s bottleneck with a buffer that never drops: the queue
 *              grows to milliseconds.  One packet of each flow is lost
 *              in its first window (a tap; where, the seed decides, as it
 *              does every link delay), so both senders hold a scoreboard
 *              and probe.
 *              Exactly those two packets are resent: no probe fires, no
 *              timeout, nothing else is sent twice.
 *   tail loss  a short path (1 us each way), one sender with a scoreboard,
 *              a WRITE whose last packet is lost and nothing sent after
 *              it: a probe finds the loss within 0.5 ms (the RTO floor,
 *              100 us, and the ACK that comes back), long before the
 *              QP's timeout (67 ms).
 *   slow peer  no scoreboard (Go-Back-N only), a path of 80 ms each way:
 *              the first ACK comes long after the QP's timeout (67 ms)
 *              fired.  The timeout resends one packet, not the window
 *              (rnic_config.timeout_probe), and the ACK that comes past it
 *              shows the peer had everything, so a peer that merely
 *              answers late gets one duplicate per timeout; the WRITEs
 *              complete, nothing fails.  With the option off (what RoCE
 *              NICs do, and the simulator models), every timeout resends
 *              the whole window.
 *
 * Usage: rnic_recovery_timers [--seed N]; SOFTRNIC_SEED=N.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flows.h"

#define MSG FLOWS_BUF
#define DEPTH 8

/* The flows (flows.h) and how the test drives them. */
struct world {
	struct flows fl;
	uint64_t end_ns;
	uint32_t msg;                   /* bytes per WRITE */
	unsigned depth;
	uint64_t post_limit;            /* WRITEs per flow in all (0: no limit) */
	uint64_t stop_when_done;        /* step() stops the run at flow 0's Nth completion (0: no) */
};

/* Drop the drop_at-th request packet a sender sends (first transmissions
 * and resends alike, counted from 1). */
static bool tap(void *arg, struct pair_packet *pkt)
{
	struct world *w = arg;

	if (pkt->from >= w->fl.nflows || pkt->ib_len < 12)
		return true;
	uint8_t op = pkt->ib[0];
	if (op > 0x1f || op == 0x11 || op == 0x12 || (op >= 0x0d && op <= 0x10))
		return true;    /* not an RC request */
	struct flow *f = &w->fl.f[pkt->from];
	f->data_seen++;
	if (f->drop_at && f->data_seen == f->drop_at) {
		f->dropped++;
		return false;
	}
	return true;
}

static bool step(void *arg)
{
	struct world *w = arg;
	uint64_t now = pair_now(w->fl.pair);

	for (unsigned i = 0; i < w->fl.nflows; i++) {
		struct flow *f = &w->fl.f[i];

		flows_reap(f);
		while (!f->error && f->outstanding < w->depth && now < w->end_ns &&
		       (!w->post_limit || f->posted < w->post_limit))
			flows_post_write(&w->fl, f, w->msg);
	}
	return now >= w->end_ns || (w->stop_when_done && w->fl.f[0].completed >= w->stop_when_done);
}

static int build_with(struct world *w, uint64_t seed, unsigned nflows, bool queue, uint32_t msg, unsigned depth,
		      bool one_packet, uint64_t delay_ns);

/* nflows senders -> node nflows, through a 1 Gb/s queue when `queue`. */
static int build(struct world *w, uint64_t seed, unsigned nflows, bool queue, uint32_t msg, unsigned depth)
{
	return build_with(w, seed, nflows, queue, msg, depth, true, 0);
}

/* one_packet: rnic_config.timeout_probe; delay_ns: one way, 0 for
 * the default 1-6 us. */
static int build_with(struct world *w, uint64_t seed, unsigned nflows, bool queue, uint32_t msg, unsigned depth,
		      bool one_packet, uint64_t delay_ns)
{
	struct rnic_config cfg;

	memset(w, 0, sizeof(*w));
	rnic_config_default(&cfg);
	cfg.timeout_probe = one_packet;
	cfg.dcqcn = false;
	cfg.ecn = false;                /* nothing marked: only the queue */
	w->fl.nflows = nflows;
	w->fl.receiver = nflows;
	w->msg = msg;
	w->depth = depth;
	w->fl.pair = pair_create(seed, nflows + 1, &cfg);
	REQUIRE_RET(w->fl.pair, -1, "pair_create: %s", strerror(errno));
	if (queue) {
		struct pair_queue q = {
			.rate_bps = 1000000000ull,
			.host_rate_bps = cfg.line_rate,
			.limit_bytes = 64u * 1024 * 1024,   /* never drops here */
			.kmin_bytes = 64u * 1024 * 1024,    /* nor marks */
			.kmax_bytes = 64u * 1024 * 1024 + 1,
		};
		REQUIRE_RET(pair_set_queue(w->fl.pair, w->fl.receiver, &q) == 0, -1, "%s", "pair_set_queue");
	}
	pair_set_tap(w->fl.pair, tap, w);
	/* 1-6 us each way: the seed decides every delay. */
	struct pair_faults jitter = { .delay_ns = delay_ns ? delay_ns : 1000, .jitter_ns = 5000 };
	pair_set_all_faults(w->fl.pair, &jitter);

	return flows_build(&w->fl, IBV_MTU_1024);
}

static void destroy(struct world *w)
{
	flows_destroy(&w->fl);
}

struct totals {
	uint64_t retransmits, probes, timeouts, sel_naks;
};

static struct totals totals(struct world *w)
{
	struct totals t = { 0 };

	for (unsigned i = 0; i <= w->fl.nflows; i++) {
		const struct rnic_counters *c = rnic_counters(pair_rnic(w->fl.pair, i));
		t.retransmits += c->retransmits;
		t.probes += c->retransmit_probes;
		t.timeouts += c->retransmit_timeouts;
		t.sel_naks += c->rx_nak_selective;
	}
	return t;
}

static void case_queue(uint64_t seed)
{
	struct world w;

	check_begin("seed %llu: a queue of milliseconds, one loss per flow", (unsigned long long)seed);
	if (build(&w, seed, 2, true, MSG, DEPTH) != 0)
		goto out;
	w.end_ns = 40 * HT_MS;
	/* Where each flow loses its packet: somewhere in its first window. */
	w.fl.f[0].drop_at = 10 + (uint32_t)pair_random_below(w.fl.pair, 400);
	w.fl.f[1].drop_at = 10 + (uint32_t)pair_random_below(w.fl.pair, 400);
	while (pair_now(w.fl.pair) < w.end_ns)
		if (pair_run_until(w.fl.pair, step, &w, 100 * HT_US) == PAIR_IDLE)
			break;
	step(&w);
	struct totals t = totals(&w);
	const struct pair_queue_stats *qs = pair_queue_stats(w.fl.pair, w.fl.receiver);
	printf("queue: max backlog %llu B (%.1f ms at 1 Gb/s), drops %llu; lost by the tap %u+%u; "
	       "retransmits %llu (probes %llu, timeouts %llu), selective NAKs %llu; WRITEs done %llu+%llu\n",
	       (unsigned long long)qs->max_backlog, (double)qs->max_backlog * 8 / 1e6, (unsigned long long)qs->dropped,
	       w.fl.f[0].dropped, w.fl.f[1].dropped, (unsigned long long)t.retransmits, (unsigned long long)t.probes,
	       (unsigned long long)t.timeouts, (unsigned long long)t.sel_naks, (unsigned long long)w.fl.f[0].completed,
	       (unsigned long long)w.fl.f[1].completed);
	CHECK(!w.fl.f[0].error && !w.fl.f[1].error, "%s", "completion errors");
	CHECK(qs->max_backlog * 8 > 2000000, "the queue never held 2 ms (%llu B)",
	      (unsigned long long)qs->max_backlog);
	CHECK(qs->dropped == 0, "the queue dropped %llu", (unsigned long long)qs->dropped);
	CHECK(w.fl.f[0].dropped == 1 && w.fl.f[1].dropped == 1, "%s", "the tap's two losses");
	CHECK(t.sel_naks >= 2, "selective NAKs %llu: no scoreboard", (unsigned long long)t.sel_naks);
	CHECK(t.probes == 0, "%llu probes while packets only waited in the queue", (unsigned long long)t.probes);
	CHECK(t.timeouts == 0, "%llu timeouts", (unsigned long long)t.timeouts);
	CHECK(t.retransmits == 2, "%llu retransmits for 2 losses", (unsigned long long)t.retransmits);
	CHECK(w.fl.f[0].completed > 20 && w.fl.f[1].completed > 20, "%s", "both flows made progress");
out:
	destroy(&w);
	check_end();
}

static void case_tail_loss(uint64_t seed)
{
	struct world w;

	check_begin("seed %llu: a tail loss on a short path", (unsigned long long)seed);
	/* 16 KiB WRITEs one at a time: 16 packets each. */
	if (build(&w, seed, 1, false, 16 * 1024, 1) != 0)
		goto out;
	struct flow *f = &w.fl.f[0];
	w.end_ns = 10 * HT_MS;
	w.post_limit = 10;
	/* Packet 5 (mid-message: a selective NAK, the scoreboard), then the
	 * last packet of the 11th WRITE (a tail: nothing after it). */
	f->drop_at = 5;
	w.stop_when_done = 10;
	while (f->completed < 10 && pair_now(w.fl.pair) < w.end_ns)
		if (pair_run_until(w.fl.pair, step, &w, 10 * HT_US) == PAIR_IDLE)
			break;
	REQUIRE_RET(f->completed == 10 && f->dropped == 1, (void)0, "the first ten WRITEs: %llu done, %u lost, error %d",
		(unsigned long long)f->completed, f->dropped, f->error);
	f->drop_at = f->data_seen + 16;
	w.post_limit = 11;
	w.stop_when_done = 11;
	uint64_t t0 = pair_now(w.fl.pair);
	while (f->completed < 11 && pair_now(w.fl.pair) < w.end_ns)
		if (pair_run_until(w.fl.pair, step, &w, 10 * HT_US) == PAIR_IDLE)
			break;
	uint64_t took = pair_now(w.fl.pair) - t0;
	struct totals t = totals(&w);
	printf("tail loss: the WRITE completed %.1f us after it started; retransmits %llu (probes %llu, timeouts %llu)\n",
	       (double)took / 1e3, (unsigned long long)t.retransmits, (unsigned long long)t.probes,
	       (unsigned long long)t.timeouts);
	CHECK(!f->error, "%s", "completion error");
	CHECK(f->completed >= 11 && f->dropped == 2, "%s", "the tail-lost WRITE completed");
	CHECK(took < 500 * HT_US, "took %llu ns", (unsigned long long)took);
	CHECK(t.probes >= 1 && t.timeouts == 0, "probes %llu timeouts %llu", (unsigned long long)t.probes,
	      (unsigned long long)t.timeouts);
out:
	destroy(&w);
	check_end();
}

/* 64 KiB WRITEs eight deep (a 512-packet window) over 80 ms each way. */
static void slow_peer_run(uint64_t seed, bool one_packet, struct totals *t, struct world *w, bool *ok)
{
	*ok = false;
	if (build_with(w, seed, 1, false, MSG, DEPTH, one_packet, 80 * HT_MS) != 0)
		return;
	w->end_ns = 2000 * HT_MS;
	w->post_limit = 16;
	w->stop_when_done = 16;
	while (w->fl.f[0].completed < 16 && !w->fl.f[0].error && pair_now(w->fl.pair) < w->end_ns)
		if (pair_run_until(w->fl.pair, step, w, 10 * HT_MS) == PAIR_IDLE)
			break;
	*t = totals(w);
	*ok = true;
}

static void case_slow_peer(uint64_t seed)
{
	struct world w;
	struct totals one, all;
	bool ok;

	check_begin("seed %llu: a peer that answers after the timeout", (unsigned long long)seed);
	slow_peer_run(seed, true, &one, &w, &ok);
	bool done_one = ok && w.fl.f[0].completed == 16 && !w.fl.f[0].error;
	uint64_t took_one = pair_now(w.fl.pair);
	destroy(&w);
	slow_peer_run(seed, false, &all, &w, &ok);
	uint64_t took_all = pair_now(w.fl.pair);
	destroy(&w);
	printf("slow peer: one packet after a timeout: %llu retransmits, %llu timeouts, 16 WRITEs in %.0f ms; "
	       "the window: %llu retransmits, %llu timeouts, %.0f ms\n",
	       (unsigned long long)one.retransmits, (unsigned long long)one.timeouts, (double)took_one / 1e6,
	       (unsigned long long)all.retransmits, (unsigned long long)all.timeouts, (double)took_all / 1e6);
	CHECK(done_one, "%s", "the WRITEs did not all complete");
	CHECK(one.timeouts >= 1, "%s", "no timeout: the path is not slow enough");
	CHECK(one.retransmits <= 2 * one.timeouts, "%llu retransmits for %llu timeouts",
	      (unsigned long long)one.retransmits, (unsigned long long)one.timeouts);
	CHECK(all.retransmits > 100 * all.timeouts / 2, "the window mode resent only %llu",
	      (unsigned long long)all.retransmits);
	check_end();
}

int main(int argc, char **argv)
{
	uint64_t seed = 1;
	const char *env = getenv("SOFTRNIC_SEED");

	if (env)
		seed = strtoull(env, NULL, 0);
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--seed") == 0)
			seed = strtoull(argv[i + 1], NULL, 0);
	check_seed(seed);
	check_seed_env = "SOFTRNIC_SEED";
	case_queue(seed);
	case_tail_loss(seed);
	case_slow_peer(seed);
	if (!check_failures)
		printf("recovery_timers: ok\n");
	return check_exit("recovery_timers");
}
