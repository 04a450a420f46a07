/*
 * test_path_contract.c — one table of checks run against every path of
 * the runtime (runtime/path.h): UDP, the host-local ring and the
 * host-local message path.  Each path is opened twice in this process, a
 * sender A at 127.0.0.61 and a receiver B at 127.0.0.62, and driven only
 * through the contract's operations, so a path that breaks the contract
 * fails here whichever program would have met it.
 *
 * The checks:
 *  - route: B's address is routed; an address where nothing listens is
 *    not by the host-local paths, and a GID of the other family by none;
 *  - send and flush: 200 packets of mixed sizes arrive at B's receive,
 *    once each, in order, byte for byte, with A's address as source,
 *    B's as destination, the metadata's TOS and TTL, and an ICRC that
 *    verifies wherever the path says B checks one (needs_icrc); done
 *    gives the batch back and nothing comes twice;
 *  - waking: B armed before sleeping with nothing waiting may sleep; a
 *    packet then makes B's receive side readable (its wake descriptor or
 *    a doorbell on B's socket) or pending; B armed with packets waiting
 *    is told not to sleep;
 *  - a payload piece in memory that is gone (a PROT_NONE page) is
 *    refused or lost and counted, never a crash, and the path carries
 *    packets afterwards;
 *  - stats: the sender counts what it sent;
 *  - whole messages (the paths that send them): a message's payload,
 *    described in pieces, reaches B as one entry whose payload B reads
 *    byte for byte.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/check.h"
#include "runtime/mem_guard.h"
#include "runtime/paths.h"
#include "runtime/runtime_dir.h"

#define ADDR_A "127.0.0.61"
#define ADDR_B "127.0.0.62"
#define NOBODY "127.0.0.63"
#define DEST_QPN 0x000123u
#define NPKTS 200u

struct side {
	struct srt_udp udp;
	struct srt_local *local;
	struct srt_path_udp pu;
	struct srt_path_local pring, pmsg;
	struct srt_path *tx, *rx;       /* what this kind sends and receives by */
	struct rnic_gid gid;
};

struct fixture {
	const char *kind;
	struct side a, b;
	bool receiver_checks_icrc;      /* B's ring asks for ICRCs (its faults on) */
};

static struct srt_rx_batch batch;

static void open_udp(struct side *s, const char *addr)
{
	char err[256];

	setenv("SOFTRNIC_ADDR", addr, 1);
	int e = srt_udp_open(&s->udp, err, sizeof(err));
	unsetenv("SOFTRNIC_ADDR");
	if (e) {
		fprintf(stderr, "srt_udp_open %s: %s\n", addr, err);
		exit(1);
	}
	srt_udp_gid(&s->udp, &s->gid);
	srt_path_udp_init(&s->pu, &s->udp);
}

static void open_side(struct fixture *fx, struct side *s, const char *addr, bool wants_icrc)
{
	static int rundir = -1;

	memset(s, 0, sizeof(*s));
	open_udp(s, addr);
	s->tx = s->rx = &s->pu.base;
	if (!strcmp(fx->kind, "udp"))
		return;
	if (rundir < 0)
		rundir = srt_runtime_dir_open(true);
	s->local = srt_local_open(rundir, s->udp.addr, 0, false, wants_icrc, s->udp.fd);
	if (!s->local) {
		fprintf(stderr, "srt_local_open %s failed (no runtime directory?)\n", addr);
		exit(1);
	}
	srt_path_ring_init(&s->pring, s->local, &s->gid);
	srt_path_message_init(&s->pmsg, s->local, &s->gid);
	s->tx = !strcmp(fx->kind, "message") ? &s->pmsg.base : &s->pring.base;
	s->rx = &s->pring.base;         /* whole messages arrive through the ring */
}

static void close_side(struct side *s)
{
	srt_local_close(s->local);
	srt_udp_close(&s->udp);
}

static void gid_of(const char *addr, struct rnic_gid *gid)
{
	struct in_addr a;

	inet_pton(AF_INET, addr, &a);
	srt_ipv4_to_gid(a, gid);
}

/* A packet of len bytes (BTH first, then a pattern), and its ICRC room. */
static void make_packet(uint8_t *p, uint32_t len, uint32_t seq)
{
	memset(p, 0, WIRE_BTH_LEN);
	p[0] = 0x04;    /* SEND only */
	p[5] = (uint8_t)(DEST_QPN >> 16);
	p[6] = (uint8_t)(DEST_QPN >> 8);
	p[7] = (uint8_t)DEST_QPN;
	memcpy(p + 8, &seq, 4);
	for (uint32_t i = WIRE_BTH_LEN; i < len; i++)
		p[i] = (uint8_t)(seq * 31u + i);
}

static uint32_t len_of(uint32_t seq)
{
	static const uint32_t lens[] = { 12, 16, 40, 300, 1024 + 12, 4096 + 12, 777 };
	return lens[seq % (sizeof(lens) / sizeof(lens[0]))];
}

/* Receive up to `want` packets at B (waiting up to a second). */
static int receive(struct side *b, void (*each)(const struct srt_rx_pkt *, void *), void *arg, unsigned want)
{
	unsigned got = 0;

	for (int tries = 0; got < want && tries < 1000; tries++) {
		int n = b->rx->ops->recv(b->rx, &batch);
		for (int i = 0; i < n; i++) {
			if (srt_local_is_doorbell(batch.pkt[i].data, batch.pkt[i].len))
				continue;       /* a wake-up, not a packet */
			each(&batch.pkt[i], arg);
			got++;
		}
		if (b->rx->ops->recv_done)
			b->rx->ops->recv_done(b->rx);
		if (got < want)
			usleep(1000);
	}
	return (int)got;
}

struct expect {
	struct fixture *fx;
	uint32_t next;
	bool ok;
};

static void check_one(const struct srt_rx_pkt *p, void *arg)
{
	struct expect *x = arg;
	uint8_t want[WIRE_MAX_IB_PACKET];
	uint32_t seq = x->next++;
	uint32_t len = len_of(seq);
	struct rnic_gid ga, gb;

	make_packet(want, len, seq);
	gid_of(ADDR_A, &ga);
	gid_of(ADDR_B, &gb);
	bool same = p->len == len + WIRE_ICRC_LEN && !memcmp(p->data, want, len);
	CHECK(same);
	CHECK(!memcmp(p->src.raw, ga.raw, 16));
	CHECK(!memcmp(p->dst.raw, gb.raw, 16));
	CHECK(p->tos == 0x0a);
	CHECK(p->ttl == 33);
	/* The ICRC: always over UDP; over a ring only for a receiver that
	 * asks for it, which gets entries marked as carrying one. */
	bool icrc_expected = !strcmp(x->fx->kind, "udp") || x->fx->receiver_checks_icrc;
	if (same && icrc_expected) {
		struct wire_ip ip;
		memset(&ip, 0, sizeof(ip));
		ip.version = 4;
		ip.df = true;
		ip.id = p->seg_index;
		ip.ttl = p->ttl;
		ip.dscp = p->tos >> 2;
		ip.ecn = p->tos & 3;
		memcpy(ip.src, p->src.raw, 16);
		memcpy(ip.dst, p->dst.raw, 16);
		CHECK(!p->no_icrc);
		CHECK(wire_icrc_udp_payload(&ip, p->sport, p->data, p->len - WIRE_ICRC_LEN) ==
		      wire_icrc_load(p->data + p->len - WIRE_ICRC_LEN));
	}
	if (!same)
		x->ok = false;
}

/* Send packets [first, first + n) from A to B through A's packet path. */
static void send_packets(struct fixture *fx, uint8_t (*bufs)[WIRE_MAX_IB_PACKET + 8], uint32_t first, uint32_t n)
{
	struct side *a = &fx->a;
	struct srt_path *p = &a->pring.base;

	if (!strcmp(fx->kind, "udp"))
		p = &a->pu.base;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t seq = first + i, len = len_of(seq);
		uint8_t *buf = bufs[i];
		struct srt_tx_meta m = { .sport = 0, .tos = 0x0a, .ttl = 33 };
		struct wire_piece pc = { buf, len };

		gid_of(ADDR_B, &m.dst);
		make_packet(buf, len, seq);
		void *dest = p->ops->route(p, &m.dst, buf, false);
		CHECK(dest != NULL);
		if (!dest)
			return;
		CHECK(p->ops->send(p, dest, &m, &pc, 1, buf + len) == 0);
	}
	p->ops->flush(p);
}

static uint8_t bufs[NPKTS][WIRE_MAX_IB_PACKET + 8];

static bool check_route(struct fixture *fx)
{
	struct srt_path *p = fx->a.tx;
	struct rnic_gid dst, six;
	uint8_t bth[WIRE_BTH_LEN];

	make_packet(bth, WIRE_BTH_LEN, 0);
	gid_of(ADDR_B, &dst);
	CHECK(p->ops->route(p, &dst, bth, false) != NULL);
	CHECK(p->ops->route(p, &dst, bth, true) != NULL);
	memset(six.raw, 0, 16);
	six.raw[0] = 0xfd;      /* an IPv6 address: not of an IPv4 port's family */
	six.raw[15] = 1;
	CHECK(p->ops->route(p, &six, bth, false) == NULL);
	if (strcmp(fx->kind, "udp")) {
		gid_of(NOBODY, &dst);
		CHECK(p->ops->route(p, &dst, bth, true) == NULL);
	}
	return true;
}

static bool check_order_and_bytes(struct fixture *fx)
{
	struct expect x = { .fx = fx, .next = 0, .ok = true };
	struct srt_path_stats before, after;
	struct srt_path *sp = !strcmp(fx->kind, "udp") ? &fx->a.pu.base : &fx->a.pring.base;

	if (!strcmp(fx->kind, "message"))
		return false;   /* sends whole messages only: check_messages */
	sp->ops->stats(sp, &before);
	for (uint32_t sent = 0; sent < NPKTS; sent += 20) {
		send_packets(fx, bufs, sent, 20);
		CHECK(receive(&fx->b, check_one, &x, 20) == 20);
	}
	CHECK(x.next == NPKTS);
	CHECK(x.ok);
	sp->ops->stats(sp, &after);
	CHECK(after.tx_packets - before.tx_packets == NPKTS);
	/* Given back: nothing comes twice. */
	int n = fx->b.rx->ops->recv(fx->b.rx, &batch);
	if (fx->b.rx->ops->recv_done)
		fx->b.rx->ops->recv_done(fx->b.rx);
	CHECK(n == 0);
	return true;
}

static bool check_wake(struct fixture *fx)
{
	struct expect x = { .fx = fx, .next = 0, .ok = true };
	struct srt_path *rx = fx->b.rx;
	int fd = rx->ops->wake_fd ? rx->ops->wake_fd(rx) : -1;

	if (!strcmp(fx->kind, "message"))
		return false;   /* no packets, no receive of its own */
	if (fd < 0)
		fd = fx->b.udp.fd;      /* a path without its own: doorbells come by B's socket */
	if (rx->ops->arm)
		CHECK(rx->ops->arm(rx, true));
	send_packets(fx, bufs, 0, 1);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	bool readable = poll(&pfd, 1, 1000) == 1;
	bool pending = rx->ops->pending && rx->ops->pending(rx);
	CHECK(readable || pending);
	if (rx->ops->arm) {
		rx->ops->arm(rx, false);
		/* Packets wait: arming now says do not sleep. */
		CHECK(!rx->ops->arm(rx, true));
	}
	CHECK(receive(&fx->b, check_one, &x, 1) == 1);
	if (readable && fd == fx->b.udp.fd && rx != &fx->b.pu.base) {
		/* The doorbell itself is no packet: read and drop it. */
		(void)srt_udp_recv(&fx->b.udp, &batch);
	}
	return true;
}

static bool check_fault(struct fixture *fx)
{
	struct srt_path *p = !strcmp(fx->kind, "udp") ? &fx->a.pu.base : &fx->a.pring.base;
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *gone = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t hdr[WIRE_BTH_LEN + 4];
	struct srt_tx_meta m = { .tos = 0x0a, .ttl = 33 };
	struct srt_path_stats before, after;

	if (!strcmp(fx->kind, "message"))
		return false;   /* no packets, no receive of its own */
	CHECK(gone != MAP_FAILED);
	make_packet(hdr, WIRE_BTH_LEN, 999);
	gid_of(ADDR_B, &m.dst);
	/* Headers, a payload in memory that is gone, the ICRC room. */
	struct wire_piece pc[2] = { { hdr, WIRE_BTH_LEN }, { gone, 256 } };
	void *dest = p->ops->route(p, &m.dst, hdr, false);
	CHECK(dest != NULL);
	p->ops->stats(p, &before);
	int e = dest ? p->ops->send(p, dest, &m, pc, 2, hdr + WIRE_BTH_LEN) : 0;
	p->ops->flush(p);
	p->ops->stats(p, &after);
	/* Refused at once, or found at flush and counted: not sent. */
	CHECK(e == EFAULT || after.tx_mr_fault > before.tx_mr_fault);
	struct expect none = { .fx = fx, .next = 0, .ok = true };
	CHECK(receive(&fx->b, check_one, &none, 1) == 0);
	munmap(gone, (size_t)page);
	/* And it carries packets afterwards. */
	struct expect x = { .fx = fx, .next = 0, .ok = true };
	send_packets(fx, bufs, 0, 3);
	CHECK(receive(&fx->b, check_one, &x, 3) == 3);
	CHECK(x.ok);
	return true;
}

struct message_seen {
	const uint8_t *want;
	uint32_t len;
	bool ok;
};

static void check_message_one(const struct srt_rx_pkt *p, void *arg)
{
	struct message_seen *ms = arg;
	uint8_t *got = calloc(1, ms->len);
	struct iovec dst = { got, ms->len };

	CHECK(p->remote != NULL);
	if (p->remote && got) {
		int e = p->remote_inline ? srt_local_pull_inline(p->remote_inline, p->remote_inline_len, &dst, 1)
					 : srt_local_pull(p->remote, p->remote_nseg, &dst, 1);
		CHECK(e == 0);
		ms->ok = e == 0 && !memcmp(got, ms->want, ms->len);
	}
	free(got);
}

static bool check_messages(struct fixture *fx)
{
	struct srt_path *p = fx->a.tx;
	static uint8_t payload[3 * 65536 + 5];
	uint8_t hdr[WIRE_BTH_LEN + WIRE_ICRC_LEN];
	struct srt_tx_meta m = { .tos = 0x0a, .ttl = 33 };

	if (!p->ops->send_message) {
		CHECK(strcmp(fx->kind, "message"));     /* the message path must have it */
		return false;
	}
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	make_packet(hdr, WIRE_BTH_LEN, 1);
	gid_of(ADDR_B, &m.dst);
	void *dest = p->ops->route(p, &m.dst, hdr, true);
	CHECK(dest != NULL);
	if (!dest)
		return true;
	/* Both the described form and (alone, short) the inline form. */
	for (int alone = 0; alone < 2; alone++) {
		uint32_t len = alone ? 1000 : (uint32_t)sizeof(payload);
		struct wire_piece vec[3] = { { payload, 7 }, { payload + 7, len / 2 }, { payload + 7 + len / 2, len - 7 - len / 2 } };
		struct message_seen ms = { .want = payload, .len = len, .ok = false };

		m.alone = alone;
		CHECK(p->ops->send_message(p, dest, &m, hdr, sizeof(hdr), vec, 3) == 0);
		p->ops->flush(p);
		CHECK(receive(&fx->b, check_message_one, &ms, 1) == 1);
		CHECK(ms.ok);
	}
	if (p->ops->message_min)
		CHECK(p->ops->message_min(p, dest) > 0);
	return true;
}

static const struct {
	const char *name;
	bool (*run)(struct fixture *fx);   /* false: does not apply to this path */
} checks[] = {
	{ "route", check_route },
	{ "order and bytes", check_order_and_bytes },
	{ "wake", check_wake },
	{ "fault", check_fault },
	{ "messages", check_messages },
};

static const struct {
	const char *kind;
	bool receiver_checks_icrc;
} kinds[] = {
	{ "udp", false }, { "ring", false }, { "ring", true }, { "message", false },
};

int main(void)
{
	unsetenv("SOFTRNIC_LOCAL");
	if (srt_guard_install()) {
		fprintf(stderr, "no fault handler\n");
		return 1;
	}
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct fixture fx = { .kind = kinds[k].kind, .receiver_checks_icrc = kinds[k].receiver_checks_icrc };

		open_side(&fx, &fx.a, ADDR_A, false);
		open_side(&fx, &fx.b, ADDR_B, fx.receiver_checks_icrc);
		for (size_t c = 0; c < sizeof(checks) / sizeof(checks[0]); c++) {
			int before = check_failures;
			bool applies = checks[c].run(&fx);
			printf("%-4s %-8s%s %s\n", check_failures != before ? "FAIL" : applies ? "ok" : "n/a", fx.kind,
			       fx.receiver_checks_icrc ? " (receiver checks ICRCs)" : "", checks[c].name);
		}
		close_side(&fx.a);
		close_side(&fx.b);
	}
	return check_failures ? 1 : 0;
}
