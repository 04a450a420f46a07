/*
 * fuzz_cm.c — libFuzzer target: the Communication Manager (src/cm) driven
 * by a fuzzed sequence of operations.
 *
 * Each input starts from the same scene: two cms, A and B, joined by an
 * in-memory queue, B listening on a service, and ids in most states —
 * established, REQ Received and REP Received with consumers that do not
 * answer, REP Sent with the RTU lost, DREQ Sent with the DREQ lost,
 * TimeWait, SIDR REQ Received — plus every MAD that setting it up sent.
 * The input is then read as operations: a raw MAD (any length), a real MAD
 * with one byte changed, a real MAD replayed, delivering or dropping the
 * queue, time passing, a consumer call on any id (accept, reject, RTU, MRA,
 * establish, disconnect, destroy, SIDR reply, with fuzzed arguments), a
 * new connect or SIDR request.
 *
 * Checked: no crash or sanitizer report; after every operation the
 * counters add up (tests/cm/cm_check.h); no event for an id after
 * cm_destroy_id; at the end, once every id is destroyed and time runs out,
 * both cms are empty (every id freed, no timer left).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm.h"
#include "cm_check.h"
#include "fuzz_check.h"    /* FUZZ_ASSERT */

#define SID 0x0000000001060001ull
#define QMAX 256
#define IDMAX 512

struct node {
	struct cm *cm;
	uint8_t gid[16];
	struct cm_id *ids[IDMAX];       /* ids this consumer holds */
	unsigned nids;
	uint32_t dead[IDMAX * 2];       /* comm IDs of destroyed ids */
	unsigned ndead;
};

struct qmad {
	unsigned to;
	uint8_t mad[256];
};

static struct world {
	struct node n[2];
	struct qmad q[QMAX];
	unsigned qlen;
	uint8_t cap[64][256];           /* real MADs from the set-up */
	unsigned capto[64], ncap;
	bool capturing;
	uint64_t now;
} w;

static void hold(struct node *nd, struct cm_id *id)
{
	if (nd->nids < IDMAX) {
		nd->ids[nd->nids++] = id;
		return;
	}
	if (nd->ndead < IDMAX * 2)
		nd->dead[nd->ndead++] = cm_id_local_comm_id(id);
	cm_destroy_id(id, w.now);       /* (never from inside a callback) */
}

static void send_mad(void *ctx, const uint8_t dgid[16], const uint8_t mad[256])
{
	unsigned from = (unsigned)(uintptr_t)ctx, to = 1 - from;
	FUZZ_ASSERT(memcmp(dgid, w.n[from].gid, 16) != 0);     /* never to itself */
	if (memcmp(dgid, w.n[to].gid, 16) != 0)
		return;                 /* to a GID nobody has */
	if (w.capturing && w.ncap < 64) {
		memcpy(w.cap[w.ncap], mad, 256);
		w.capto[w.ncap++] = to;
	}
	if (w.qlen < QMAX) {
		w.q[w.qlen].to = to;
		memcpy(w.q[w.qlen].mad, mad, 256);
		w.qlen++;
	}
}

static struct cm_id *pending_new[2][64];
static unsigned npending[2];

static void on_event(void *ctx, const struct cm_event *ev)
{
	unsigned me = (unsigned)(uintptr_t)ctx;
	struct node *nd = &w.n[me];
	uint32_t cid = cm_id_local_comm_id(ev->id);
	for (unsigned i = 0; i < nd->ndead; i++)
		FUZZ_ASSERT(nd->dead[i] != cid);
	FUZZ_ASSERT(ev->type < CM_EV_NTYPES);
	FUZZ_ASSERT(ev->private_data_len <= 224);
	if (ev->type == CM_EV_REQ_RECEIVED || ev->type == CM_EV_SIDR_REQ_RECEIVED) {
		/* Taken over after the call (no cm calls from here). */
		if (npending[me] < 64)
			pending_new[me][npending[me]++] = ev->id;
		else
			FUZZ_ASSERT(!"too many new ids in one step");
	}
}

static void adopt(void)
{
	for (unsigned m = 0; m < 2; m++) {
		for (unsigned i = 0; i < npending[m]; i++)
			hold(&w.n[m], pending_new[m][i]);
		npending[m] = 0;
	}
}

static void check(void)
{
	char msg[256];
	for (unsigned m = 0; m < 2; m++) {
		if (!cm_check_counters(cm_counters(w.n[m].cm), msg, sizeof(msg))) {
			fprintf(stderr, "node %u: %s\n", m, msg);
			FUZZ_ASSERT(!"counters");
		}
	}
}

static void deliver(unsigned max)
{
	while (w.qlen && max--) {
		struct qmad m = w.q[0];
		memmove(w.q, w.q + 1, (w.qlen - 1) * sizeof(w.q[0]));
		w.qlen--;
		cm_receive(w.n[m.to].cm, w.n[1 - m.to].gid, m.mad, 256, w.now);
		adopt();
	}
}

static void advance(uint64_t ns)
{
	w.now += ns;
	for (unsigned m = 0; m < 2; m++)
		cm_advance(w.n[m].cm, w.now);
	adopt();
}

static void destroy(unsigned m, unsigned i)
{
	struct node *nd = &w.n[m];
	struct cm_id *id = nd->ids[i];
	if (nd->ndead < IDMAX * 2)
		nd->dead[nd->ndead++] = cm_id_local_comm_id(id);
	nd->ids[i] = nd->ids[--nd->nids];
	cm_destroy_id(id, w.now);
	adopt();
}

static struct cm_id *connect_from(unsigned m, uint64_t sid, uint32_t qpn, uint8_t timeout, uint8_t retries)
{
	struct cm_req_param p;
	struct cm_id *id = NULL;
	cm_req_param_init(w.n[m].cm, &p);
	memcpy(p.dgid, w.n[1 - m].gid, 16);
	p.service_id = sid;
	p.qpn = qpn & 0xffffff;
	p.remote_cm_response_timeout = timeout & 31;
	p.local_cm_response_timeout = timeout & 31;
	p.max_cm_retries = retries & 15;
	if (cm_connect(w.n[m].cm, &p, NULL, w.now, &id) == 0)
		hold(&w.n[m], id);
	return id;
}

/* The scene every input starts from. */
static void setup(void)
{
	memset(&w, 0, sizeof(w));
	for (unsigned m = 0; m < 2; m++) {
		struct cm_config c;
		cm_config_default(&c);
		w.n[m].gid[10] = w.n[m].gid[11] = 0xff;
		w.n[m].gid[12] = 10;
		w.n[m].gid[15] = (uint8_t)(m + 1);
		memcpy(c.gid, w.n[m].gid, 16);
		c.ca_guid = 0x100 + m;
		c.seed = 7 + m;
		c.timewait_ns = 1000000;        /* 1 ms */
		c.cm_response_timeout = 10;
		c.max_cm_retries = 3;
		struct cm_io io = { .ctx = (void *)(uintptr_t)m, .send_mad = send_mad, .event = on_event };
		w.n[m].cm = cm_create(&c, &io);
		FUZZ_ASSERT(w.n[m].cm);
	}
	struct cm_listen *l;
	FUZZ_ASSERT(cm_listen(w.n[1].cm, SID, NULL, &l) == 0);
	w.capturing = true;
	/* established: A0 <-> B0 */
	struct cm_id *a = connect_from(0, SID, 0x10, 8, 3);
	deliver(QMAX);
	struct cm_id *b = w.n[1].ids[w.n[1].nids - 1];
	cm_accept(b, &(struct cm_rep_param){ .qpn = 0x11 }, w.now);
	deliver(QMAX);
	cm_send_rtu(a, NULL, 0, w.now);
	deliver(QMAX);
	/* REQ Received (B1) */
	connect_from(0, SID, 0x20, 8, 3);
	deliver(QMAX);
	/* REP Received (A2) */
	connect_from(0, SID, 0x30, 8, 3);
	deliver(QMAX);
	cm_accept(w.n[1].ids[w.n[1].nids - 1], &(struct cm_rep_param){ .qpn = 0x31 }, w.now);
	deliver(QMAX);
	/* REP Sent, RTU lost (B3) */
	struct cm_id *a3 = connect_from(0, SID, 0x40, 8, 3);
	deliver(QMAX);
	cm_accept(w.n[1].ids[w.n[1].nids - 1], &(struct cm_rep_param){ .qpn = 0x41 }, w.now);
	deliver(QMAX);
	cm_send_rtu(a3, NULL, 0, w.now);
	w.qlen = 0;
	/* DREQ Sent, DREQ lost (B4 disconnects) */
	struct cm_id *a4 = connect_from(0, SID, 0x50, 8, 3);
	deliver(QMAX);
	struct cm_id *b4 = w.n[1].ids[w.n[1].nids - 1];
	cm_accept(b4, &(struct cm_rep_param){ .qpn = 0x51 }, w.now);
	deliver(QMAX);
	cm_send_rtu(a4, NULL, 0, w.now);
	deliver(QMAX);
	cm_disconnect(b4, NULL, 0, w.now);
	w.qlen = 0;
	/* TimeWait (rejected) */
	connect_from(0, SID, 0x60, 8, 3);
	deliver(QMAX);
	cm_reject(w.n[1].ids[w.n[1].nids - 1], CM_REJ_CONSUMER_DEFINED, NULL, 0, "no", 2, w.now);
	deliver(QMAX);
	/* SIDR REQ Received (B) */
	struct cm_id *s;
	if (cm_sidr_request(w.n[0].cm, w.n[1].gid, SID, "s", 1, 8, 3, NULL, w.now, &s) == 0)
		hold(&w.n[0], s);
	deliver(QMAX);
	w.capturing = false;
	check();
}

static void teardown(void)
{
	for (int round = 0; round < 4; round++) {
		for (unsigned m = 0; m < 2; m++)
			while (w.n[m].nids)
				destroy(m, w.n[m].nids - 1);
		/* Let everything finish: deliver, jump to the next timer. */
		for (int i = 0; i < 200000; i++) {
			deliver(QMAX);
			uint64_t t = UINT64_MAX;
			for (unsigned m = 0; m < 2; m++) {
				uint64_t d = cm_next_deadline(w.n[m].cm);
				if (d < t)
					t = d;
			}
			if (t == UINT64_MAX && !w.qlen)
				break;
			if (t != UINT64_MAX && t > w.now)
				advance(t - w.now);
			else
				advance(0);
			if (w.n[0].nids || w.n[1].nids)
				break;  /* new ids (REQs in flight): destroy them too */
		}
	}
	check();
	for (unsigned m = 0; m < 2; m++) {
		const struct cm_counters *c = cm_counters(w.n[m].cm);
		FUZZ_ASSERT(w.n[m].nids == 0);
		FUZZ_ASSERT(c->ids_created == c->ids_freed);
		FUZZ_ASSERT(cm_next_deadline(w.n[m].cm) == UINT64_MAX);
		cm_destroy(w.n[m].cm);
	}
}

struct input {
	const uint8_t *p;
	size_t n;
};

static uint8_t u8(struct input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint32_t u32(struct input *in)
{
	return (uint32_t)u8(in) | (uint32_t)u8(in) << 8 | (uint32_t)u8(in) << 16 | (uint32_t)u8(in) << 24;
}

static void consumer_call(struct input *in)
{
	unsigned m = u8(in) & 1;
	struct node *nd = &w.n[m];
	if (!nd->nids)
		return;
	unsigned i = u8(in) % nd->nids;
	struct cm_id *id = nd->ids[i];
	uint8_t what = u8(in), a = u8(in), b = u8(in);
	uint8_t pd[256];
	memset(pd, a, sizeof(pd));
	switch (what % 9) {
	case 0: {
		struct cm_rep_param r = { .qpn = u32(in), .starting_psn = u32(in), .rnr_retry_count = a & 7,
					  .target_ack_delay = b & 31, .private_data = pd, .private_data_len = b };
		cm_accept(id, &r, w.now);
		break;
	}
	case 1: cm_reject(id, (enum cm_rej_reason)(a % 40), pd, b % 80, pd, b, w.now); break;
	case 2: cm_send_rtu(id, pd, b, w.now); break;
	case 3: cm_send_mra(id, a, w.now); break;
	case 4: cm_establish(id, w.now); break;
	case 5: cm_disconnect(id, pd, b, w.now); break;
	case 6: destroy(m, i); break;
	case 7: cm_sidr_reply(id, (enum cm_sidr_status)(a % 6), u32(in), u32(in), pd, b, w.now); break;
	case 8: cm_id_set_user(id, (void *)(uintptr_t)a); break;
	}
	adopt();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	setup();
	uint8_t buf[300];
	unsigned ops = 0;
	while (in.n && ops++ < 512) {
		uint8_t op = u8(&in);
		unsigned to = (op >> 4) & 1;
		switch (op & 15) {
		case 0: {                       /* a raw MAD of any length */
			size_t len = u8(&in) + (op & 0x20 ? 45u : 0u);
			if (len > in.n)
				len = in.n;
			memcpy(buf, in.p, len);
			in.p += len;
			in.n -= len;
			cm_receive(w.n[to].cm, w.n[1 - to].gid, buf, len, w.now);
			break;
		}
		case 1:                         /* a raw body under a valid CM header */
		case 2: {
			memset(buf, 0, 256);
			size_t len = in.n < 232 ? in.n : 232;
			memcpy(buf + 24, in.p, len);
			in.p += len;
			in.n -= len;
			buf[0] = 1;
			buf[1] = 7;
			buf[2] = 2;
			buf[3] = 3;
			buf[17] = (uint8_t)(0x10 + (op >> 5) % 9);
			cm_receive(w.n[to].cm, w.n[1 - to].gid, buf, 256, w.now);
			break;
		}
		case 3:                         /* a real MAD, one byte changed */
		case 4: {
			if (!w.ncap)
				break;
			unsigned k = u8(&in) % w.ncap;
			memcpy(buf, w.cap[k], 256);
			buf[u8(&in)] ^= u8(&in);
			cm_receive(w.n[w.capto[k]].cm, w.n[1 - w.capto[k]].gid, buf, 256, w.now);
			break;
		}
		case 5: {                       /* a real MAD again */
			if (!w.ncap)
				break;
			unsigned k = u8(&in) % w.ncap;
			cm_receive(w.n[w.capto[k]].cm, w.n[1 - w.capto[k]].gid, w.cap[k], 256, w.now);
			break;
		}
		case 6: deliver(1 + u8(&in)); break;
		case 7: w.qlen = 0; break;
		case 8: {                       /* time passes */
			uint8_t e = u8(&in);
			advance(((uint64_t)u8(&in) + 1) << (e % 34));
			break;
		}
		case 9:
		case 10:
		case 11: consumer_call(&in); break;
		case 12: connect_from(to, op & 0x20 ? SID : u32(&in), u32(&in), u8(&in), u8(&in)); break;
		case 13: {
			struct cm_id *s;
			uint8_t t = u8(&in), r = u8(&in);
			if (cm_sidr_request(w.n[to].cm, w.n[1 - to].gid, op & 0x20 ? SID : 0x99, NULL, 0, t & 31, r,
					    NULL, w.now, &s) == 0)
				hold(&w.n[to], s);
			break;
		}
		case 14: {                      /* a stray MAD from an unknown GID */
			uint8_t g[16] = { 0xfe, 0x80 };
			if (w.ncap)
				cm_receive(w.n[to].cm, g, w.cap[u8(&in) % w.ncap], 256, w.now);
			break;
		}
		default: {                      /* a delayed, reordered delivery */
			if (w.qlen > 1) {
				unsigned k = u8(&in) % w.qlen;
				struct qmad m = w.q[k];
				w.q[k] = w.q[w.qlen - 1];
				w.q[w.qlen - 1] = m;
			}
			break;
		}
		}
		adopt();
		check();
	}
	teardown();
	return 0;
}
