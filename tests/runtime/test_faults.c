/*
 * test_faults.c — SOFTRNIC_FAULTS (runtime/faults.c) without sockets:
 * the parser takes every documented form and refuses malformed ones with
 * a message naming the problem; each fault does what faults.h says on a
 * synthetic packet stream (loss drops, dup delivers twice in place,
 * reorder swaps a packet with the next one or lets it go after the hold
 * time, delay holds every packet exactly delay_ns in order and a full
 * delay line lets its oldest go early, corrupt flips exactly one bit and
 * never BTH byte 4); the observed rates match the probabilities; one
 * seed gives one sequence of decisions, another seed another; and every
 * corruption of a real RoCEv2 packet fails the runtime's ICRC check.
 *
 * The end-to-end runs (unmodified programs over the real path) are in
 * faults_e2e.sh.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "rt_util.h"
#include "runtime/faults.h"
#include "runtime/icrc_recv.h"
#include "wire/wire.h"

/* ---- parsing ------------------------------------------------------------------ */

static void parse_ok(const char *spec, struct srt_faults_config *cfg)
{
	char err[256] = "";
	REQUIRE(srt_faults_parse(spec, cfg, err, sizeof(err)) == 0, "\"%s\" refused: %s", spec, err);
}

static void parse_bad(const char *spec, const char *want_in_message)
{
	struct srt_faults_config cfg;
	char err[256] = "";
	REQUIRE(srt_faults_parse(spec, &cfg, err, sizeof(err)) == EINVAL, "\"%s\" accepted", spec);
	REQUIRE(strstr(err, want_in_message), "\"%s\": message \"%s\" lacks \"%s\"", spec, err, want_in_message);
}

static void test_parse(void)
{
	struct srt_faults_config c;

	parse_ok("", &c);
	REQUIRE(!srt_faults_config_active(&c) && !c.seeded, "empty string is not off");
	parse_ok("   ", &c);
	REQUIRE(!srt_faults_config_active(&c), "spaces are not off");
	parse_ok("seed=5", &c);
	REQUIRE(!srt_faults_config_active(&c) && c.seeded && c.seed == 5, "seed alone");
	parse_ok("loss=0.01,dup=0.001,reorder=0.01,delay=50us,corrupt=0.0001,seed=7", &c);
	REQUIRE(c.loss == 0.01 && c.dup == 0.001 && c.reorder == 0.01 && c.delay_ns == 50000 && c.corrupt == 0.0001 &&
	      c.seed == 7 && c.seeded && srt_faults_config_active(&c), "the documented example");
	parse_ok(" loss = 1 , delay=1.5ms,corrupt=1e-4, seed=0x10 ", &c);
	REQUIRE(c.loss == 1 && c.delay_ns == 1500000 && c.corrupt > 0.99e-4 && c.corrupt < 1.01e-4 && c.seed == 16,
	      "spaces, ms, exponent, hex seed");
	parse_ok("delay=250ns,reorder=0", &c);
	REQUIRE(c.delay_ns == 250 && c.reorder == 0 && srt_faults_config_active(&c), "ns");
	parse_ok("delay=1000ms", &c);
	REQUIRE(c.delay_ns == SRT_FAULTS_MAX_DELAY_NS, "the longest delay");

	char text[256];
	parse_ok("loss=0.25,delay=3us,seed=9", &c);
	srt_faults_format(&c, text, sizeof(text));
	REQUIRE(!strcmp(text, "loss=0.25,delay=3000ns,seed=9"), "format: %s", text);
	parse_ok(text, &c);
	REQUIRE(c.loss == 0.25 && c.delay_ns == 3000 && c.seed == 9, "format parses back");

	parse_bad("los=0.1", "unknown key \"los\"");
	parse_bad("loss", "expected key=value");
	parse_bad("loss=", "probability");
	parse_bad("loss=2", "probability");
	parse_bad("loss=-0.1", "probability");
	parse_bad("loss=0.1x", "probability");
	parse_bad("loss=nan", "probability");
	parse_bad("loss=0,5", "\"5\": expected key=value");    /* a decimal comma */
	parse_bad("loss=0.1,", "empty item");
	parse_bad(",loss=0.1", "empty item");
	parse_bad("loss=0.1,,dup=0.1", "empty item");
	parse_bad("loss=0.1,loss=0.2", "loss given twice");
	parse_bad("delay=50", "unit");
	parse_bad("delay=50s", "unit");
	parse_bad("delay=1001ms", "at most");
	parse_bad("delay=us", "unit");
	parse_bad("seed=-1", "unsigned integer");
	parse_bad("seed=abc", "unsigned integer");
	parse_bad("seed=99999999999999999999999", "unsigned integer");
}

/* ---- a synthetic stream -------------------------------------------------------- */

#define MAX_OUT 200000

struct sink {
	unsigned n;
	uint32_t id[MAX_OUT];           /* bytes 8..11 of each delivered packet */
	uint64_t at[MAX_OUT];
	uint64_t hash;
};

static void record(void *ctx, const struct srt_rx_pkt *p, uint64_t now)
{
	struct sink *s = ctx;
	uint32_t id;

	memcpy(&id, p->data + 8, 4);
	for (size_t i = 0; i < p->len; i++)
		s->hash = (s->hash ^ p->data[i]) * 0x100000001b3ull;
	s->hash = (s->hash ^ now) * 0x100000001b3ull;
	if (s->n < MAX_OUT) {
		s->id[s->n] = id;
		s->at[s->n] = now;
	}
	s->n++;
}

static uint8_t pkt_buf[256];

/* Packet `id`: 64 bytes, a pattern, its number in bytes 8..11. */
static struct srt_rx_pkt make(uint32_t id)
{
	struct srt_rx_pkt p;

	memset(&p, 0, sizeof(p));
	for (int i = 0; i < 64; i++)
		pkt_buf[i] = (uint8_t)(i * 7 + id);
	memcpy(pkt_buf + 8, &id, 4);
	p.len = 64;
	p.data = pkt_buf;
	p.sport = 0xc000;
	return p;
}

static struct srt_faults *make_faults(const char *spec, struct sink *s)
{
	struct srt_faults_config cfg;
	parse_ok(spec, &cfg);
	memset(s, 0, sizeof(*s));
	struct srt_faults *f = srt_faults_create(&cfg, record, s);
	REQUIRE(f != NULL, "create %s", spec);
	return f;
}

static void test_loss_dup(void)
{
	static struct sink s;
	struct srt_faults *f = make_faults("loss=1", &s);
	for (uint32_t i = 0; i < 100; i++) {
		struct srt_rx_pkt p = make(i);
		srt_faults_receive(f, &p, i);
	}
	REQUIRE(s.n == 0 && srt_faults_counters(f)->loss == 100, "loss=1: %u delivered", s.n);
	REQUIRE(srt_faults_deadline(f) == UINT64_MAX, "loss holds nothing");
	srt_faults_destroy(f);

	f = make_faults("dup=1", &s);
	for (uint32_t i = 0; i < 100; i++) {
		struct srt_rx_pkt p = make(i);
		srt_faults_receive(f, &p, i);
	}
	REQUIRE(s.n == 200 && srt_faults_counters(f)->dup == 100, "dup=1: %u delivered", s.n);
	for (unsigned i = 0; i < 200; i++)
		REQUIRE(s.id[i] == i / 2 && s.at[i] == i / 2, "dup=1: delivery %u is packet %u at %llu", i, s.id[i],
		      (unsigned long long)s.at[i]);
	srt_faults_destroy(f);
}

static void test_reorder(void)
{
	static struct sink s;
	struct srt_faults *f = make_faults("reorder=1", &s);

	/* 0 held, 1 overtakes it, 0 follows; 2 held, 3, 2; ... 6 held. */
	for (uint32_t i = 0; i < 7; i++) {
		struct srt_rx_pkt p = make(i);
		srt_faults_receive(f, &p, 1000 + i);
	}
	static const uint32_t want[] = { 1, 0, 3, 2, 5, 4 };
	REQUIRE(s.n == 6, "reorder=1: %u delivered of 7", s.n);
	for (unsigned i = 0; i < 6; i++)
		REQUIRE(s.id[i] == want[i], "reorder=1: delivery %u is packet %u, expected %u", i, s.id[i], want[i]);
	REQUIRE(srt_faults_counters(f)->reorder == 4, "reorder counted %llu",
	      (unsigned long long)srt_faults_counters(f)->reorder);
	/* The last one waits for the hold time. */
	uint64_t due = 1006 + SRT_FAULTS_REORDER_HOLD_NS;
	REQUIRE(srt_faults_deadline(f) == due, "deadline %llu", (unsigned long long)srt_faults_deadline(f));
	srt_faults_release(f, due - 1);
	REQUIRE(s.n == 6, "released early");
	srt_faults_release(f, due);
	REQUIRE(s.n == 7 && s.id[6] == 6 && s.at[6] == due, "held packet not released at its time");
	REQUIRE(srt_faults_deadline(f) == UINT64_MAX, "nothing held");
	srt_faults_destroy(f);
}

static void test_delay(void)
{
	static struct sink s;
	struct srt_faults *f = make_faults("delay=50us", &s);

	for (uint32_t i = 0; i < 10; i++) {
		struct srt_rx_pkt p = make(i);
		srt_faults_receive(f, &p, i * 10000);   /* every 10 us */
	}
	/* 0..4 arrived 50 us or more before packet 9 came (t=90 us): the
	 * receive of 9 let 0..4 out first (each at 50+ us after it came). */
	REQUIRE(s.n == 5, "delay: %u delivered by t=90us", s.n);
	REQUIRE(srt_faults_deadline(f) == 50000 + 50000, "deadline %llu", (unsigned long long)srt_faults_deadline(f));
	srt_faults_release(f, 99999);
	REQUIRE(s.n == 5, "delivered before its time");
	srt_faults_release(f, 200000);
	REQUIRE(s.n == 10, "delay: %u delivered", s.n);
	for (unsigned i = 0; i < 10; i++)
		REQUIRE(s.id[i] == i && s.at[i] >= i * 10000ull + 50000, "delay: delivery %u: packet %u at %llu", i,
		      s.id[i], (unsigned long long)s.at[i]);
	REQUIRE(srt_faults_counters(f)->delay == 10, "delay counted");
	srt_faults_destroy(f);

	/* A full line lets its oldest packet go early, loses nothing. */
	f = make_faults("delay=1ms", &s);
	for (uint32_t i = 0; i < SRT_FAULTS_DELAY_SLOTS + 5; i++) {
		struct srt_rx_pkt p = make(i);
		srt_faults_receive(f, &p, 0);
	}
	REQUIRE(s.n == 5 && s.id[0] == 0 && s.id[4] == 4, "full line: %u let out early", s.n);
	srt_faults_release(f, 1000000);
	REQUIRE(s.n == SRT_FAULTS_DELAY_SLOTS + 5, "full line lost packets: %u", s.n);
	for (unsigned i = 0; i < s.n; i++)
		REQUIRE(s.id[i] == i, "full line: order");
	srt_faults_destroy(f);

	/* reorder and delay together: swapped, then delayed. */
	f = make_faults("reorder=1,delay=10us", &s);
	for (uint32_t i = 0; i < 4; i++) {
		struct srt_rx_pkt p = make(i);
		srt_faults_receive(f, &p, 0);
	}
	srt_faults_release(f, 10000);
	REQUIRE(s.n == 4 && s.id[0] == 1 && s.id[1] == 0 && s.id[2] == 3 && s.id[3] == 2 && s.at[0] == 10000,
	      "reorder + delay");
	srt_faults_destroy(f);
}

static void test_corrupt(void)
{
	static struct sink s;
	struct srt_faults *f = make_faults("corrupt=1,seed=1", &s);
	unsigned byte_hits[64] = { 0 };

	for (uint32_t i = 0; i < 20000; i++) {
		uint8_t orig[64];
		struct srt_rx_pkt p = make(i);
		memcpy(orig, pkt_buf, 64);
		srt_faults_receive(f, &p, i);
		unsigned diff_bits = 0, where = 0;
		for (int b = 0; b < 64; b++) {
			uint8_t x = (uint8_t)(orig[b] ^ pkt_buf[b]);
			if (x)
				where = (unsigned)b;
			diff_bits += (unsigned)__builtin_popcount(x);
		}
		REQUIRE(diff_bits == 1, "packet %u: %u bits flipped", i, diff_bits);
		byte_hits[where]++;
	}
	REQUIRE(byte_hits[4] == 0, "BTH byte 4 (masked by the ICRC) was flipped %u times", byte_hits[4]);
	for (int b = 0; b < 64; b++)
		REQUIRE(b == 4 || byte_hits[b] > 100, "byte %d flipped only %u times of 20000", b, byte_hits[b]);
	REQUIRE(srt_faults_counters(f)->corrupt == 20000, "corrupt counted");
	srt_faults_destroy(f);
}

/* Observed rate of each fault near its probability (100 000 packets:
 * the standard deviation of a rate of 0.1 is 0.001). */
static void test_rates(void)
{
	static struct sink s;
	struct srt_faults *f = make_faults("loss=0.1,dup=0.05,reorder=0.2,corrupt=0.02,seed=3", &s);
	const unsigned n = 100000;

	for (uint32_t i = 0; i < n; i++) {
		struct srt_rx_pkt p = make(i);
		srt_faults_receive(f, &p, (uint64_t)i * 1000000);      /* 1 ms apart: held ones time out */
	}
	srt_faults_release(f, UINT64_MAX - 1);
	const struct srt_faults_counters *c = srt_faults_counters(f);
	double loss = (double)c->loss / n, dup = (double)c->dup / (n - c->loss),
	       corrupt = (double)c->corrupt / n;
	REQUIRE(loss > 0.095 && loss < 0.105, "loss rate %.4f", loss);
	REQUIRE(dup > 0.045 && dup < 0.055, "dup rate %.4f", dup);
	REQUIRE(corrupt > 0.018 && corrupt < 0.022, "corrupt rate %.4f", corrupt);
	/* Reorder: chosen for 20% of the packets that survive, taken only when
	 * the slot is free (1 ms apart, it always is: the hold is 100 us). */
	double reorder = (double)c->reorder / (n - c->loss);
	REQUIRE(reorder > 0.19 && reorder < 0.21, "reorder rate %.4f", reorder);
	REQUIRE(s.n == n - c->loss + c->dup, "delivered %u, expected %llu", s.n,
	      (unsigned long long)(n - c->loss + c->dup));
	srt_faults_destroy(f);
}

/* One seed, one sequence; another seed, another. */
static uint64_t run_seed(const char *spec, struct srt_faults_counters *out)
{
	static struct sink s;
	struct srt_faults *f = make_faults(spec, &s);

	for (uint32_t i = 0; i < 5000; i++) {
		struct srt_rx_pkt p = make(i);
		srt_faults_receive(f, &p, (uint64_t)i * 3000);
	}
	srt_faults_release(f, UINT64_MAX - 1);
	*out = *srt_faults_counters(f);
	srt_faults_destroy(f);
	return s.hash ^ s.n;
}

static void test_seed(void)
{
	struct srt_faults_counters a, b, c;
	const char *s7 = "loss=0.1,dup=0.1,reorder=0.1,delay=5us,corrupt=0.05,seed=7";
	uint64_t h1 = run_seed(s7, &a), h2 = run_seed(s7, &b);
	uint64_t h3 = run_seed("loss=0.1,dup=0.1,reorder=0.1,delay=5us,corrupt=0.05,seed=8", &c);

	REQUIRE(h1 == h2 && !memcmp(&a, &b, sizeof(a)), "same seed, different outcome");
	REQUIRE(h1 != h3 && memcmp(&a, &c, sizeof(a)), "different seeds, same outcome");
	printf("seed 7: loss %llu dup %llu reorder %llu delay %llu corrupt %llu; seed 8: loss %llu\n",
	       (unsigned long long)a.loss, (unsigned long long)a.dup, (unsigned long long)a.reorder,
	       (unsigned long long)a.delay, (unsigned long long)a.corrupt, (unsigned long long)c.loss);
}

/* Every corruption of a real RoCEv2 packet (ICRC computed as a softrnic
 * sender does, ID 0) fails the receive-side ICRC check, including the
 * check that tries every IPv4 ID (icrc_recv.h). */
static void test_icrc_catches(void)
{
	static struct sink s;
	struct srt_faults *f = make_faults("corrupt=1,seed=11", &s);
	struct wire_ip ip;
	uint8_t pkt[1100];
	unsigned bad = 0, total = 0;

	memset(&ip, 0, sizeof(ip));
	ip.version = 4;
	ip.df = true;
	ip.ttl = 64;
	struct in_addr a = { htonl(0x7f000001) }, b = { htonl(0x7f000002) };
	srt_ipv4_to_gid(a, (struct rnic_gid *)ip.src);
	srt_ipv4_to_gid(b, (struct rnic_gid *)ip.dst);
	for (size_t len = 32; len <= 1056; len += 1024) {
		for (unsigned i = 0; i < 3000; i++) {
			struct wire_ib ib;
			memset(&ib, 0, sizeof(ib));
			ib.bth.opcode = WIRE_OP_SEND_ONLY;
			ib.bth.pkey = 0xffff;
			ib.bth.dqpn = 0x123456;
			ib.bth.psn = i;
			uint8_t payload[1100];
			for (size_t k = 0; k < sizeof(payload); k++)
				payload[k] = (uint8_t)(k * 13 + i);
			ib.payload = payload;
			ib.payload_len = (uint32_t)(len - WIRE_BTH_LEN - WIRE_ICRC_LEN);
			int n = wire_encode_ib(&ib, pkt, sizeof(pkt));
			REQUIRE(n == (int)len, "encode: %d", n);
			wire_icrc_store(pkt + n - 4, wire_icrc_udp_payload(&ip, 0xc123, pkt, (size_t)n - 4));
			REQUIRE(srt_icrc_verify_ipv4(&ip, 0xc123, pkt, (size_t)n, NULL) == SRT_ICRC_OK, "clean packet");

			struct srt_rx_pkt p;
			memset(&p, 0, sizeof(p));
			p.data = pkt;
			p.len = (size_t)n;
			srt_faults_receive(f, &p, 0);
			total++;
			if (srt_icrc_verify_ipv4_hint(&ip, 0xc123, pkt, (size_t)n, 0, NULL) == SRT_ICRC_BAD)
				bad++;
		}
	}
	REQUIRE(bad == total, "%u of %u corrupted packets passed the ICRC check", total - bad, total);
	srt_faults_destroy(f);
}

int main(void)
{
	test_parse();
	test_loss_dup();
	test_reorder();
	test_delay();
	test_corrupt();
	test_rates();
	test_seed();
	test_icrc_catches();
	printf("faults: ok\n");
	return 0;
}
