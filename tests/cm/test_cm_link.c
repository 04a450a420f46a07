/*
 * test_cm_link.c — the seeded MAD link itself (cm_link.c), under the CM
 * tests that rely on it: the order in which it delivers, its clock, and
 * its replay from a seed.
 *
 * Node 0 sends a burst of REQs (private data byte 0: the send index) to
 * node 1, which listens; the order of node 1's REQ_RECEIVED events is the
 * order the link delivered them.  Checked: MADs due at the same time
 * arrive in the order they were sent (the engine's sequence numbers); a
 * link stays FIFO under jitter; the reorder knob does reorder, and says so
 * in its stats; link_in_flight counts MADs and alarms; an alarm stops the
 * clock at its time (a past one at now); link_run_until times out at
 * exactly now + max and link_run_for ends exactly ns later; and a run
 * with every fault knob on gives the same trace hash and stats from the
 * same seed, and another hash from another seed.
 */
#include <stdlib.h>
#include <string.h>

#include "cm_link.h"
#include "../check.h"

#define SID 0x0000000001064853ull       /* RDMA_PS_TCP port 18515 */
#define US 1000ull
#define MS 1000000ull
#define BURST 16u

static int listen_tag;

struct burst {
	struct link *l;
	struct cm_listen *lis;
	struct cm_id *ids[BURST];
	unsigned order[BURST];          /* send index of the i-th REQ received */
	uint64_t times[BURST];
	unsigned got;
};

/* Two cms, node 1 listening, the faults f on every direction; node 0
 * sends BURST REQs at once.  False (reported) if the setup fails. */
static bool burst_send(struct burst *b, uint64_t seed, const struct link_faults *f)
{
	memset(b, 0, sizeof(*b));
	b->l = link_create(seed, 2, NULL);
	REQUIRE_RET(b->l, false);
	link_set_faults(b->l, f);
	REQUIRE_RET(cm_listen(link_cm(b->l, 1), SID, &listen_tag, &b->lis) == 0, false);
	for (unsigned i = 0; i < BURST; i++) {
		struct cm_req_param p;
		uint8_t pd[1] = { (uint8_t)i };
		cm_req_param_init(link_cm(b->l, 0), &p);
		memcpy(p.dgid, link_gid(b->l, 1), 16);
		p.service_id = SID;
		p.qpn = 0x100 + i;
		p.starting_psn = 0x1000 + i;
		p.private_data = pd;
		p.private_data_len = sizeof(pd);
		REQUIRE_RET(cm_connect(link_cm(b->l, 0), &p, NULL, link_now(b->l), &b->ids[i]) == 0, false);
	}
	return true;
}

/* Deliver the burst (well before the REQs' first retry) and record the
 * order node 1 received them in. */
static void burst_receive(struct burst *b)
{
	link_run_for(b->l, 100 * US);
	struct link_event e;
	while (link_pop_event(b->l, 1, &e)) {
		if (e.ev.type != CM_EV_REQ_RECEIVED) {
			FAIL("node 1: event %s, expected REQ_RECEIVED", cm_event_name(e.ev.type));
			continue;
		}
		REQUIRE_RET(b->got < BURST, );
		REQUIRE_RET(e.ev.private_data && e.ev.private_data_len >= 1, );
		b->order[b->got] = e.ev.private_data[0];
		b->times[b->got] = e.time;
		b->got++;
		cm_destroy_id(e.ev.id, link_now(b->l));
	}
}

static void burst_end(struct burst *b)
{
	for (unsigned i = 0; i < BURST; i++)
		if (b->ids[i])
			cm_destroy_id(b->ids[i], link_now(b->l));
	/* Passive ids of REQs that arrived later (retries): destroyed too,
	 * until nothing is left to happen. */
	for (;;) {
		link_run_until(b->l, NULL, NULL, 1000000 * MS);
		struct link_event e;
		unsigned n = 0;
		while (link_pop_event(b->l, 1, &e))
			if (e.ev.type == CM_EV_REQ_RECEIVED) {
				cm_destroy_id(e.ev.id, link_now(b->l));
				n++;
			}
		while (link_pop_event(b->l, 0, &e))
			;
		if (!n)
			break;
	}
	cm_unlisten(b->lis);
	for (unsigned n = 0; n < 2; n++) {
		const struct cm_counters *c = cm_counters(link_cm(b->l, n));
		CHECK(link_counters_consistent(b->l, n));
		CHECK_EQ(c->ids_created, c->ids_freed);
	}
	CHECK_EQ(link_in_flight(b->l), 0u);
	link_destroy(b->l);
}

static bool in_send_order(const struct burst *b)
{
	for (unsigned i = 0; i < b->got; i++)
		if (b->order[i] != i)
			return false;
	return b->got == BURST;
}

static void test_ties(void)
{
	check_begin("MADs due at the same time arrive in the order they were sent");
	struct link_faults f = { .delay_ns = 1000 };
	struct burst b;
	if (burst_send(&b, 1, &f)) {
		CHECK_EQ(link_in_flight(b.l), BURST);
		burst_receive(&b);
		CHECK_EQ(b.got, BURST);
		CHECK(in_send_order(&b));
		for (unsigned i = 0; i < b.got; i++)
			CHECK_EQ(b.times[i], 1000u, "REQ %u", i);
		CHECK_EQ(link_stats(b.l)->delivered, BURST);
	}
	burst_end(&b);
	check_end_say(true);
}

static void test_fifo_jitter(void)
{
	check_begin("a link stays FIFO under jitter (seeds 1..20)");
	struct link_faults f = { .delay_ns = 1000, .jitter_ns = 5000 };
	unsigned spread = 0;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct burst b;
		if (burst_send(&b, seed, &f)) {
			burst_receive(&b);
			CHECK_EQ(b.got, BURST, "seed %llu", (unsigned long long)seed);
			CHECK(in_send_order(&b), "seed %llu", (unsigned long long)seed);
			for (unsigned i = 0; i < b.got; i++) {
				CHECK(b.times[i] >= 1000 && b.times[i] <= 6000, "seed %llu: REQ at %llu",
				      (unsigned long long)seed, (unsigned long long)b.times[i]);
				if (i && b.times[i] != b.times[0])
					spread++;
			}
			CHECK_EQ(link_stats(b.l)->reordered, 0u);
		}
		burst_end(&b);
	}
	CHECK(spread > 0, "jitter never moved a delivery time");
	check_end_say(true);
}

static void test_reorder(void)
{
	check_begin("the reorder knob lets later MADs pass");
	struct link_faults f = { .delay_ns = 1000, .reorder = 1.0, .reorder_ns = 5000 };
	struct burst b;
	if (burst_send(&b, 3, &f)) {
		CHECK_EQ(link_stats(b.l)->reordered, BURST);
		burst_receive(&b);
		CHECK_EQ(b.got, BURST);
		CHECK(!in_send_order(&b));
		for (unsigned i = 1; i < b.got; i++)
			CHECK(b.times[i] >= b.times[i - 1]);
	}
	burst_end(&b);
	check_end_say(true);
}

static void test_clock(void)
{
	check_begin("alarms, link_run_until's limit and link_run_for move the clock exactly");
	struct link *l = link_create(5, 2, NULL);
	REQUIRE_RET(l, );
	CHECK_EQ(link_now(l), 0u);
	link_alarm(l, 7777);
	CHECK_EQ(link_in_flight(l), 1u);
	CHECK_EQ(link_run_until(l, NULL, NULL, 1 * MS), LINK_IDLE);
	CHECK_EQ(link_now(l), 7777u);
	CHECK_EQ(link_in_flight(l), 0u);
	/* An alarm in the past runs now. */
	link_alarm(l, 1000);
	CHECK_EQ(link_in_flight(l), 1u);
	CHECK_EQ(link_run_until(l, NULL, NULL, 1 * MS), LINK_IDLE);
	CHECK_EQ(link_now(l), 7777u);
	/* An alarm beyond the limit: a timeout at exactly now + max. */
	link_alarm(l, 7777 + 1000);
	CHECK_EQ(link_run_until(l, NULL, NULL, 500), LINK_TIMEOUT);
	CHECK_EQ(link_now(l), 7777u + 500);
	CHECK_EQ(link_in_flight(l), 1u);
	link_run_for(l, 10000);
	CHECK_EQ(link_now(l), 7777u + 500 + 10000);
	CHECK_EQ(link_in_flight(l), 0u);
	link_run_for(l, 0);
	CHECK_EQ(link_now(l), 7777u + 500 + 10000);
	CHECK_EQ(link_stats(l)->sent, 0u);
	link_destroy(l);
	check_end_say(true);
}

struct faulty {
	uint64_t hash;
	struct link_stats stats;
};

/* A burst under every fault knob, run until nothing is left (the REQs
 * retry and time out); the trace hash and stats of the run. */
static struct faulty faulty_run(uint64_t seed)
{
	struct link_faults f = { .dup = 0.3, .reorder = 0.3, .reorder_ns = 3000, .delay_ns = 1000, .jitter_ns = 2000 };
	for (unsigned k = 0; k < LK_NKINDS; k++)
		f.loss[k] = 0.2;
	struct faulty out = { 0 };
	struct burst b;
	if (burst_send(&b, seed, &f)) {
		burst_receive(&b);
		link_run_until(b.l, NULL, NULL, 1000000 * MS);
		out.hash = link_trace_hash(b.l);
		out.stats = *link_stats(b.l);
	}
	burst_end(&b);
	return out;
}

static void test_replay(void)
{
	check_begin("every fault knob on: the same seed replays, another seed differs");
	for (uint64_t seed = 1; seed <= 5; seed++) {
		struct faulty a = faulty_run(seed), b = faulty_run(seed), c = faulty_run(seed + 1000);
		CHECK_EQ(a.hash, b.hash, "seed %llu", (unsigned long long)seed);
		CHECK(memcmp(&a.stats, &b.stats, sizeof(a.stats)) == 0, "seed %llu: stats differ", (unsigned long long)seed);
		CHECK(a.hash != c.hash, "seeds %llu and %llu: one hash", (unsigned long long)seed,
		      (unsigned long long)seed + 1000);
		CHECK(a.stats.lost > 0 && a.stats.duplicated > 0 && a.stats.reordered > 0, "seed %llu: a knob did nothing",
		      (unsigned long long)seed);
	}
	check_end_say(true);
}

int main(void)
{
	test_ties();
	test_fifo_jitter();
	test_reorder();
	test_clock();
	test_replay();
	printf("%d cases, %d failures\n", check_cases, check_failures);
	return check_exit("cm_link");
}
