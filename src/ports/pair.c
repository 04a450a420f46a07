/*
 * pair.c — the seeded in-memory link (see pair.h).
 *
 * Structure: every rnic's io->xmit lands in pair_xmit(), which applies the
 * tap, the bottleneck queue and the fault knobs and schedules each copy of
 * the packet as an event of the simulator's engine (sim/engine.h), with
 * the packet's record (struct pair_pkt, one allocation) as its argument.
 * The engine runs events in (time, sequence) order, FIFO among equal
 * times.  pair_run_until() repeatedly picks the earlier of "next packet"
 * (the engine's next event) and "earliest rnic or agent timer", moves the
 * simulated clock there and delivers or fires.  A packet belongs to the
 * engine until its event runs, then to the batch being delivered until
 * the batch's rnic_receive_end (or, when it must wait for the next batch,
 * to the pair's `held`), then it is freed; pair_destroy frees what is
 * still in flight.  Nothing here reads a real clock or calls rand(): the
 * only source of variation is the seed.
 * A node's agent (QP1's owner) gets the MADs gsi.c accepts through
 * pair_gsi_receive, and its deadline joins the rnics' in "earliest timer".
 */
#include "ports/pair.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/prng.h"
#include "sim/engine.h"
#include "wire/wire.h"

#define PAIR_MAX_NODES 16u
/* Steps allowed without the simulated clock moving before we call the
 * transport stuck (a timer whose deadline never advances). */
#define PAIR_STUCK_STEPS 1000000u
/* Packets handed to one rnic before its rnic_receive_end, at most. */
#define PAIR_RX_BATCH 32u

/* A packet in flight: the argument of its delivery event.  Its time and
 * sequence number are the engine's. */
struct pair_pkt {
	unsigned from, to;
	uint16_t sport;
	uint8_t ecn;
	size_t len;
	/* HPCC's INT beside the packet (pair_queue.telemetry), in the same
	 * allocation after data, or NULL; tel_echo: an ACK carrying it back. */
	struct hpcc_int *tel;
	bool tel_echo;
	/* A message-path packet's payload: the sender's pieces (in the same
	 * allocation), read on delivery. */
	struct wire_piece *vec;
	unsigned nvec;
	size_t vec_len;
	_Alignas(8) uint8_t data[];     /* the IB bytes, then tel, then vec */
};

/* A message-path packet's payload, read from the sender's pieces (which
 * the rnic keeps valid while the message is outstanding, as a process's
 * memory is for process_vm_readv). */
struct pair_remote {
	struct rnic_rx_remote base;
	struct pair *p;
	const struct pair_pkt *pkt;
};

struct pair_node {
	struct pair *pair;
	unsigned index;
	struct rnic *rnic;
	struct rnic_gid gid;
	struct pair_agent agent;        /* gsi_receive NULL: none */
	struct pair_persisted persisted;
};

/* The bottleneck in front of one node (pair.h, "a bottleneck queue"). */
struct pair_bottleneck {
	struct pair_queue cfg;
	uint64_t busy_until;                    /* the queue drains by then */
	uint64_t host_busy[PAIR_MAX_NODES];     /* each sender's host link  */
	struct pair_queue_stats stats;
};

struct pair {
	unsigned n;
	struct pair_bottleneck queue[PAIR_MAX_NODES];
	struct pair_node node[PAIR_MAX_NODES];
	struct pair_faults faults[PAIR_MAX_NODES][PAIR_MAX_NODES];
	/* Latest delivery time scheduled in order on each link: jitter never
	 * reorders (a link is a FIFO); only the reorder knob does. */
	uint64_t fifo_tail[PAIR_MAX_NODES][PAIR_MAX_NODES];
	uint64_t now;
	uint64_t rng[4];
	/* Packets in flight, one event each.  Its clock is the time of the
	 * latest delivery event, never ahead of `now` (timers move `now`
	 * alone), so sim_at never moves a packet's time. */
	struct sim_engine eng;
	/* The batch being delivered (deliver_batch), and `held`: a packet
	 * whose event ran while a batch was open but that belongs to the
	 * next one (another node, or a timer due first).  It was the
	 * engine's earliest event, so it stays ahead of every other packet
	 * and is delivered first, at held_at. */
	struct pair_pkt *batch[PAIR_RX_BATCH];
	struct pair_remote remote[PAIR_RX_BATCH];     /* batch[i]'s payload reader */
	unsigned batch_n;
	struct pair_pkt *held;
	uint64_t held_at;
	/* HPCC: the INT of the latest request from node i to node j. */
	struct hpcc_int last_int[PAIR_MAX_NODES][PAIR_MAX_NODES];
	pair_tap_fn tap;
	void *tap_arg;
	uint64_t trace;
	struct pair_stats stats;
};

/* ---- PRNG (base/prng.h) ---------------------------------------------------- */

uint64_t pair_random(struct pair *p)
{
	return prng_next(p->rng);
}

uint64_t pair_random_below(struct pair *p, uint64_t n)
{
	/* Modulo bias is at most n / 2^64: irrelevant for test decisions. */
	return n ? pair_random(p) % n : 0;
}

/* True with probability `prob`.  Draws nothing for prob <= 0 so that a
 * fault-free link does not consume randomness. */
static bool chance(struct pair *p, double prob)
{
	if (prob <= 0)
		return false;
	if (prob >= 1)
		return true;
	return (double)(pair_random(p) >> 11) * 0x1p-53 < prob;
}

/* ---- trace hash (FNV-1a 64) ------------------------------------------- */

static void trace_bytes(struct pair *p, const void *data, size_t len)
{
	const uint8_t *b = data;
	for (size_t i = 0; i < len; i++) {
		p->trace ^= b[i];
		p->trace *= 0x100000001b3ull;
	}
}

static void trace_u64(struct pair *p, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	trace_bytes(p, b, sizeof(b));
}

/* ---- ICRC, as a UDP port would compute it -------------------------------- */

/* The IP header the packet would travel in.  IPv4 id 0 and DF set, like a
 * UDP socket with PMTU discovery; the receiver rebuilds the same header. */
static void ip_for(const struct pair *p, unsigned from, unsigned to, struct wire_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	ip->version = 4;
	ip->ttl = 64;
	ip->df = true;
	memcpy(ip->src, p->node[from].gid.raw, 16);
	memcpy(ip->dst, p->node[to].gid.raw, 16);
}

static uint32_t icrc_of(const struct pair *p, unsigned from, unsigned to, uint16_t sport,
			const uint8_t *ib, size_t len)
{
	struct wire_ip ip;
	ip_for(p, from, to, &ip);
	return wire_icrc_udp_payload(&ip, sport, ib, len - WIRE_ICRC_LEN);
}

/* ---- xmit: tap, faults, enqueue ---------------------------------------- */

static int node_by_gid(const struct pair *p, const struct rnic_gid *gid)
{
	for (unsigned i = 0; i < p->n; i++)
		if (memcmp(p->node[i].gid.raw, gid->raw, 16) == 0)
			return (int)i;
	return -1;
}

/* Flip one byte of a packet in flight.  BTH byte 4 (FECN/BECN/reserved) is
 * skipped: the ICRC masks it on purpose (switches rewrite it), so flipping
 * it would be an undetectable "corruption" that no real link produces
 * silently either. */
static void corrupt_packet(struct pair *p, uint8_t *data, size_t len)
{
	size_t at;
	do
		at = (size_t)pair_random_below(p, len);
	while (at == 4 && len > 1);
	data[at] ^= (uint8_t)(1 + pair_random_below(p, 255));
}

/* ns that `bytes` take at `bps`, rounded up. */
static uint64_t wire_time(uint64_t bytes, uint64_t bps)
{
	return (bytes * 8000000000ull + bps - 1) / bps;
}

static uint64_t backlog_at(const struct pair_bottleneck *q, uint64_t t)
{
	if (q->busy_until <= t)
		return 0;
	return (q->busy_until - t) * q->cfg.rate_bps / 8000000000ull;
}

/* Pass the bottleneck in front of `to`, if there is one: false if the
 * packet is dropped; else *leave is when it has left the queue and *ecn
 * may have become CE. */
static bool pass_queue(struct pair *p, unsigned from, unsigned to, size_t len, uint8_t *ecn, uint64_t *leave,
		       struct hpcc_int *tel)
{
	struct pair_bottleneck *q = &p->queue[to];
	uint64_t t = p->now, backlog;
	/* On the wire: the UDP payload plus Ethernet, IPv4 and UDP headers. */
	uint64_t bytes = len + 42;

	*leave = t;
	if (!q->cfg.rate_bps)
		return true;
	if (q->cfg.host_rate_bps) {
		if (q->host_busy[from] > t)
			t = q->host_busy[from];
		t += wire_time(bytes, q->cfg.host_rate_bps);
		q->host_busy[from] = t;
	}
	backlog = backlog_at(q, t);
	if (q->cfg.limit_bytes && backlog + bytes > q->cfg.limit_bytes) {
		q->stats.dropped++;
		return false;
	}
	if ((*ecn == WIRE_ECN_ECT0 || *ecn == WIRE_ECN_ECT1) && backlog > q->cfg.kmin_bytes) {
		bool mark = backlog >= q->cfg.kmax_bytes ||
			    chance(p, q->cfg.pmax * (double)(backlog - q->cfg.kmin_bytes) /
					      (double)(q->cfg.kmax_bytes - q->cfg.kmin_bytes));
		if (mark) {
			*ecn = WIRE_ECN_CE;
			q->stats.marked++;
		}
	}
	q->busy_until = (q->busy_until > t ? q->busy_until : t) + wire_time(bytes, q->cfg.rate_bps);
	if (tel && q->cfg.telemetry && tel->nhop < HPCC_MAX_HOPS)
		tel->hop[tel->nhop++] = (struct hpcc_int_hop){ .ts_ns = q->busy_until, .tx_bytes = q->stats.bytes,
							      .qlen_bytes = backlog, .rate_bps = q->cfg.rate_bps };
	q->stats.packets++;
	q->stats.bytes += bytes;
	if (backlog + bytes > q->stats.max_backlog)
		q->stats.max_backlog = backlog + bytes;
	*leave = q->busy_until;
	return true;
}

int pair_set_queue(struct pair *p, unsigned to, const struct pair_queue *cfg)
{
	if (!p || to >= p->n || !cfg)
		return EINVAL;
	if (cfg->rate_bps && cfg->kmax_bytes <= cfg->kmin_bytes)
		return EINVAL;
	memset(&p->queue[to], 0, sizeof(p->queue[to]));
	p->queue[to].cfg = *cfg;
	return 0;
}

const struct pair_queue_stats *pair_queue_stats(const struct pair *p, unsigned to)
{
	return to < p->n ? &p->queue[to].stats : NULL;
}

uint64_t pair_queue_backlog(const struct pair *p, unsigned to)
{
	return to < p->n ? backlog_at(&p->queue[to], p->now) : 0;
}

static void on_arrival(void *ctx, uint64_t arg, uint64_t now);

/* Schedule one copy of the packet on link from->to. */
static void schedule_copy(struct pair *p, unsigned from, unsigned to, uint16_t sport, uint8_t ecn,
			  const uint8_t *ib, size_t len, const struct wire_piece *vec, unsigned nvec, size_t vec_len)
{
	const struct pair_faults *f = &p->faults[from][to];
	uint64_t leave;
	/* HPCC: a request (RC opcodes below ACK's 0x11) collects INT; an
	 * ACK carries back what the latest request the other way brought. */
	struct hpcc_int tel = { .nhop = 0 };
	bool echo = len && ib[0] == WIRE_OP_ACK && p->last_int[to][from].nhop;
	if (echo)
		tel = p->last_int[to][from];
	if (!pass_queue(p, from, to, len + vec_len, &ecn, &leave, len && ib[0] < WIRE_OP_ACK ? &tel : NULL))
		return;
	if (chance(p, f->loss)) {
		p->stats.lost++;
		return;
	}
	uint64_t delay = f->delay_ns;
	if (f->jitter_ns)
		delay += pair_random_below(p, f->jitter_ns + 1);
	uint64_t at = leave + delay;
	if (f->reorder_ns && chance(p, f->reorder)) {
		/* held back: later packets may overtake this one */
		at += 1 + pair_random_below(p, f->reorder_ns);
		p->stats.reordered++;
	} else {
		/* FIFO: never before the previous in-order packet */
		if (at < p->fifo_tail[from][to])
			at = p->fifo_tail[from][to];
		p->fifo_tail[from][to] = at;
	}
	/* One allocation: the record, the bytes, then the INT (8-byte
	 * aligned) when there is any, then the message's pieces. */
	size_t tel_at = (len + 7) & ~(size_t)7;
	size_t vec_at = tel.nhop ? tel_at + sizeof(tel) : tel_at;
	size_t size = nvec ? vec_at + nvec * sizeof(*vec) : tel.nhop ? tel_at + sizeof(tel) : len;
	struct pair_pkt *pkt = malloc(sizeof(*pkt) + size);
	if (!pkt) {
		p->stats.alloc_failures++;
		return;
	}
	*pkt = (struct pair_pkt){ .from = from, .to = to, .sport = sport, .ecn = ecn, .len = len };
	memcpy(pkt->data, ib, len);
	if (tel.nhop) {
		pkt->tel = (struct hpcc_int *)(void *)(pkt->data + tel_at);
		*pkt->tel = tel;
		pkt->tel_echo = echo;
	}
	if (nvec) {
		pkt->vec = (struct wire_piece *)(void *)(pkt->data + vec_at);
		memcpy(pkt->vec, vec, nvec * sizeof(*vec));
		pkt->nvec = nvec;
		pkt->vec_len = vec_len;
	}
	if (chance(p, f->corrupt)) {
		corrupt_packet(p, pkt->data, len);
		p->stats.corrupted++;
	}
	if (sim_at(&p->eng, at, on_arrival, p, (uint64_t)(uintptr_t)pkt)) {
		free(pkt);
		p->stats.alloc_failures++;
	}
}

static void pair_xmit(void *ctx, const struct rnic_tx *tx)
{
	struct pair_node *self = ctx;
	struct pair *p = self->pair;
	p->stats.sent++;
	/* A message-path packet: the headers travel, the payload is read
	 * from the pieces on delivery. */
	bool msg = tx->payload_vec != NULL;
	size_t ib_len = msg ? tx->ib_len : tx->ib_len + tx->payload_len;
	if (tx->ib_len < WIRE_BTH_LEN + WIRE_ICRC_LEN || ib_len > WIRE_MAX_IB_PACKET ||
	    (!msg && tx->payload_len && (!tx->payload || tx->hdr_len + WIRE_ICRC_LEN > tx->ib_len))) {
		p->stats.runt++;
		return;
	}
	int to = node_by_gid(p, &tx->dst);
	if (to < 0) {
		p->stats.no_route++;
		return;
	}
	/* Work on a private copy: the tap may edit it, and we write the ICRC. */
	uint8_t buf[WIRE_MAX_IB_PACKET];
	if (msg) {
		p->stats.messages++;
		memcpy(buf, tx->ib, tx->ib_len);
	} else if (tx->payload_len) {
		/* Payload by reference (rnic_tx.payload): headers, payload,
		 * then the pad and ICRC room. */
		p->stats.payload_by_ref++;
		memcpy(buf, tx->ib, tx->hdr_len);
		memcpy(buf + tx->hdr_len, tx->payload, tx->payload_len);
		memcpy(buf + tx->hdr_len + tx->payload_len, tx->ib + tx->hdr_len, tx->ib_len - tx->hdr_len);
	} else {
		memcpy(buf, tx->ib, tx->ib_len);
	}
	struct pair_packet pkt = {
		.from = self->index,
		.to = (unsigned)to,
		.now = p->now,
		.ib = buf,
		.ib_len = ib_len,
		.sport = tx->sport,
	};
	if (p->tap && !p->tap(p->tap_arg, &pkt)) {
		p->stats.tapped++;
		return;
	}
	wire_icrc_store(buf + ib_len - WIRE_ICRC_LEN,
			icrc_of(p, self->index, (unsigned)to, tx->sport, buf, ib_len));

	const struct pair_faults *f = &p->faults[self->index][to];
	const struct wire_piece *vec = msg ? tx->payload_vec : NULL;
	unsigned nvec = msg ? tx->payload_nvec : 0;
	size_t vec_len = msg ? tx->payload_len : 0;
	schedule_copy(p, self->index, (unsigned)to, tx->sport, tx->ecn, buf, ib_len, vec, nvec, vec_len);
	if (chance(p, f->dup)) {
		p->stats.duplicated++;
		schedule_copy(p, self->index, (unsigned)to, tx->sport, tx->ecn, buf, ib_len, vec, nvec, vec_len);
	}
}

/* ---- QP1: the node's agent ------------------------------------------------ */

/* rnic_io.persist of every node: nothing to write back in a simulation;
 * remember what was asked (pair_persisted), and fail when told to. */
static int pair_persist(void *ctx, void *addr, size_t len)
{
	struct pair_node *nd = ctx;

	nd->persisted.calls++;
	nd->persisted.last_addr = addr;
	nd->persisted.last_len = len;
	return nd->persisted.fail_with;
}

struct pair_persisted *pair_persist_log(struct pair *p, unsigned node)
{
	return node < p->n ? &p->node[node].persisted : NULL;
}

/* rnic_io.gsi_receive of every node: forward to the agent with the
 * simulated time (the runtime's io_gsi_receive, with srt_now() replaced). */
static void pair_gsi_receive(void *ctx, const struct rnic_gid *src, uint32_t src_qpn, const uint8_t *mad,
			     size_t len)
{
	struct pair_node *nd = ctx;
	struct pair *p = nd->pair;
	if (!nd->agent.gsi_receive) {
		p->stats.gsi_no_agent++;
		return;
	}
	p->stats.agent_mads++;
	nd->agent.gsi_receive(nd->agent.ctx, src, src_qpn, mad, len, p->now);
}

static uint64_t agent_deadline(const struct pair_node *nd)
{
	if (!nd->agent.next_deadline)
		return UINT64_MAX;
	return nd->agent.next_deadline(nd->agent.ctx);
}

int pair_set_agent(struct pair *p, unsigned node, const struct pair_agent *a)
{
	if (!p || node >= p->n)
		return EINVAL;
	struct pair_node *nd = &p->node[node];
	if (!a) {
		memset(&nd->agent, 0, sizeof(nd->agent));
		return 0;
	}
	if (!a->gsi_receive || (a->next_deadline && !a->advance))
		return EINVAL;
	if (nd->agent.gsi_receive)
		return EBUSY;
	nd->agent = *a;
	return 0;
}

/* ---- delivery and the run loop ----------------------------------------- */

static int pair_pull(const struct rnic_rx_remote *rem, const struct iovec *dst, unsigned n)
{
	const struct pair_remote *pr = (const struct pair_remote *)(const void *)rem;
	const struct pair_pkt *pkt = pr->pkt;
	struct pair *p = pr->p;
	size_t want = 0;

	p->stats.pulls++;
	for (unsigned i = 0; i < n; i++)
		want += dst[i].iov_len;
	if (want != pkt->vec_len || chance(p, p->faults[pkt->from][pkt->to].pull_fail)) {
		p->stats.pull_failures++;
		return -EFAULT;
	}
	unsigned si = 0;
	size_t so = 0;
	for (unsigned i = 0; i < n; i++) {
		uint8_t *d = dst[i].iov_base;
		size_t left = dst[i].iov_len;
		while (left) {
			size_t k = pkt->vec[si].len - so < left ? pkt->vec[si].len - so : left;
			memcpy(d, pkt->vec[si].p + so, k);
			d += k;
			left -= k;
			so += k;
			if (so == pkt->vec[si].len) {
				si++;
				so = 0;
			}
		}
	}
	return 0;
}

/* rnic_io.pull_batch of the even nodes: the reads an rnic put off, each
 * as pair_pull would do it at once (the odd nodes read at once, so every
 * message-path test runs both). */
static void pair_pull_batch(void *ctx, struct rnic_pull *pulls, unsigned n)
{
	struct pair *p = ((struct pair_node *)ctx)->pair;

	p->stats.pull_batches++;
	for (unsigned i = 0; i < n; i++) {
		pulls[i].ok = pair_pull(pulls[i].rem, &pulls[i].dst, 1) == 0;
		p->stats.pulls_put_off++;
		p->stats.put_off_failures += !pulls[i].ok;
	}
}

/* Deliver pkt; pr: where its payload's reader lives, which must last
 * until the node's rnic_receive_end (deliver_batch). */
static void deliver(struct pair *p, struct pair_pkt *pkt, struct pair_remote *pr)
{
	uint32_t want = icrc_of(p, pkt->from, pkt->to, pkt->sport, pkt->data, pkt->len);
	if (wire_icrc_load(pkt->data + pkt->len - WIRE_ICRC_LEN) != want) {
		p->stats.bad_icrc++;
		return;
	}
	p->stats.delivered++;
	trace_u64(p, p->now);
	trace_u64(p, (uint64_t)pkt->from << 32 | pkt->to);
	trace_u64(p, pkt->len);
	trace_bytes(p, pkt->data, pkt->len);

	struct rnic_rx rx = {
		.src = p->node[pkt->from].gid,
		.dst = p->node[pkt->to].gid,
		.sport = pkt->sport,
		.ecn = pkt->ecn,
		.ib = pkt->data,
		.ib_len = pkt->len,
	};
	*pr = (struct pair_remote){ .base = { .len = pkt->vec_len, .read = pair_pull }, .p = p, .pkt = pkt };
	if (pkt->vec) {
		trace_u64(p, pkt->vec_len);
		rx.remote = &pr->base;
	}
	if (pkt->tel && !pkt->tel_echo)
		p->last_int[pkt->from][pkt->to] = *pkt->tel;    /* before its ACK leaves */
	rnic_receive(p->node[pkt->to].rnic, &rx, p->now);
	if (pkt->tel && pkt->tel_echo) {
		/* BTH bytes 5..7: the ACK's DestQP, the sender's QP. */
		uint32_t qpn = (uint32_t)pkt->data[5] << 16 | (uint32_t)pkt->data[6] << 8 | pkt->data[7];
		rnic_cc_telemetry(p->node[pkt->to].rnic, qpn, pkt->tel, p->now);
	}
}

static uint64_t earliest_timer(const struct pair *p);

/* Add pkt, due at `at`, to the open batch and deliver it, or, when it
 * cannot join (it goes to another node than the batch's first, or a timer
 * is due first), hold it for the next batch. */
static void batch_add(struct pair *p, struct pair_pkt *pkt, uint64_t at)
{
	if (p->batch_n && (pkt->to != p->batch[0]->to || earliest_timer(p) <= p->now)) {
		p->held = pkt;
		p->held_at = at;
		return;
	}
	p->batch[p->batch_n] = pkt;
	deliver(p, pkt, &p->remote[p->batch_n]);
	p->batch_n++;
}

/* A packet's delivery event (the engine's argument: its record). */
static void on_arrival(void *ctx, uint64_t arg, uint64_t now)
{
	batch_add(ctx, (struct pair_pkt *)(uintptr_t)arg, now);
}

/* The time of the next packet to deliver: the held one, or the engine's
 * next event (UINT64_MAX: none). */
static uint64_t next_packet_time(const struct pair *p)
{
	return p->held ? p->held_at : sim_next_time(&p->eng);
}

/* The next packet, and those that arrive at the same node at the same
 * instant with no timer due before them, as one batch, the way the
 * runtime hands the rnic what one read of its socket or ring returned;
 * then the batch's end (rnic_receive_end: the message-path reads the rnic
 * put off).  The order is the engine's, as one at a time. */
static void deliver_batch(struct pair *p)
{
	uint64_t t0 = next_packet_time(p);

	p->batch_n = 0;
	if (p->held) {
		struct pair_pkt *first = p->held;
		p->held = NULL;
		batch_add(p, first, t0);
	} else {
		sim_step(&p->eng);
	}
	while (p->batch_n < PAIR_RX_BATCH && !p->held && sim_next_time(&p->eng) == t0)
		sim_step(&p->eng);
	rnic_receive_end(p->node[p->batch[0]->to].rnic);
	for (unsigned i = 0; i < p->batch_n; i++)
		free(p->batch[i]);
	p->batch_n = 0;
}

static uint64_t earliest_timer(const struct pair *p)
{
	uint64_t t = UINT64_MAX;
	for (unsigned i = 0; i < p->n; i++) {
		uint64_t d = rnic_next_deadline(p->node[i].rnic);
		if (d < t)
			t = d;
		d = agent_deadline(&p->node[i]);
		if (d < t)
			t = d;
	}
	return t;
}

static void fire_timers(struct pair *p)
{
	for (unsigned i = 0; i < p->n; i++) {
		struct pair_node *nd = &p->node[i];
		if (rnic_next_deadline(nd->rnic) <= p->now)
			rnic_advance(nd->rnic, p->now);
		/* Re-read: the rnic's advance cannot arm an agent timer, but an
		 * agent must never be advanced before it is due. */
		if (nd->agent.advance && agent_deadline(nd) <= p->now) {
			p->stats.agent_advances++;
			nd->agent.advance(nd->agent.ctx, p->now);
		}
	}
}

enum pair_run_result pair_run_until(struct pair *p, bool (*pred)(void *arg), void *arg, uint64_t max_sim_ns)
{
	uint64_t limit = p->now + max_sim_ns < p->now ? UINT64_MAX : p->now + max_sim_ns;
	uint64_t last_now = p->now;
	unsigned still = 0;

	for (;;) {
		if (pred && pred(arg))
			return PAIR_DONE;
		uint64_t t_pkt = next_packet_time(p);
		uint64_t t_tmr = earliest_timer(p);
		uint64_t t = t_pkt < t_tmr ? t_pkt : t_tmr;
		if (t == UINT64_MAX)
			return PAIR_IDLE;
		if (t > limit) {
			p->now = limit;
			return PAIR_TIMEOUT;
		}
		if (t > p->now)         /* a deadline in the past fires now */
			p->now = t;
		if (p->now == last_now) {
			if (++still > PAIR_STUCK_STEPS)
				return PAIR_STUCK;
		} else {
			last_now = p->now;
			still = 0;
		}
		if (t_tmr <= t_pkt) {
			fire_timers(p);
		} else {
			deliver_batch(p);
		}
	}
}

void pair_run_for(struct pair *p, uint64_t ns)
{
	uint64_t limit = p->now + ns;
	if (pair_run_until(p, NULL, NULL, ns) != PAIR_TIMEOUT)
		p->now = limit;
}

/* ---- construction and accessors ---------------------------------------- */

struct pair *pair_create(uint64_t seed, unsigned n, const struct rnic_config *cfg)
{
	struct rnic_config each[PAIR_MAX_NODES];

	if (n < 2 || n > PAIR_MAX_NODES) {
		errno = EINVAL;
		return NULL;
	}
	for (unsigned i = 0; i < n; i++) {
		if (cfg)
			each[i] = *cfg;
		else
			rnic_config_default(&each[i]);
	}
	return pair_create_each(seed, n, each);
}

struct pair *pair_create_each(uint64_t seed, unsigned n, const struct rnic_config *cfgs)
{
	if (n < 2 || n > PAIR_MAX_NODES || !cfgs) {
		errno = EINVAL;
		return NULL;
	}
	struct pair *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->n = n;
	prng_seed(p->rng, seed);
	sim_engine_init(&p->eng);
	p->trace = 0xcbf29ce484222325ull;

	struct pair_faults clean = { .delay_ns = 1000 };
	pair_set_all_faults(p, &clean);

	for (unsigned i = 0; i < n; i++) {
		const struct rnic_config base = cfgs[i];
		struct pair_node *nd = &p->node[i];
		nd->pair = p;
		nd->index = i;
		/* ::ffff:10.0.0.(i+1) */
		nd->gid.raw[10] = 0xff;
		nd->gid.raw[11] = 0xff;
		nd->gid.raw[12] = 10;
		nd->gid.raw[15] = (uint8_t)(i + 1);
		struct rnic_config c = base;
		c.gid = nd->gid;
		c.seed = base.seed ^ (uint32_t)(i * 0x9e3779b9u);
		/* Even nodes take payloads by reference (rnic_tx.payload)
		 * and let the rnic put message-path reads off (pull_batch),
		 * odd ones get payloads copied into the packet and read at
		 * once, so every transport test runs both of the rnic's send
		 * paths and both of its message-path receive paths. */
		struct rnic_io io = { .ctx = nd, .xmit = pair_xmit, .tx_payload_ref = i % 2 == 0,
				      .gsi_receive = pair_gsi_receive, .persist = pair_persist,
				      .pull_batch = i % 2 == 0 ? pair_pull_batch : NULL };
		nd->rnic = rnic_create(&c, &io);
		if (!nd->rnic) {
			int err = errno;
			pair_destroy(p);
			errno = err;
			return NULL;
		}
	}
	return p;
}

/* sim_clear's callback: a packet still in flight. */
static void free_pkt(const struct sim_event *ev, void *ctx)
{
	(void)ctx;
	free((void *)(uintptr_t)ev->arg);
}

void pair_destroy(struct pair *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->n; i++)
		if (p->node[i].rnic)
			rnic_destroy(p->node[i].rnic);
	free(p->held);
	sim_clear(&p->eng, free_pkt, NULL);
	sim_engine_free(&p->eng);
	free(p);
}

struct rnic *pair_rnic(struct pair *p, unsigned node)
{
	return node < p->n ? p->node[node].rnic : NULL;
}

const struct rnic_gid *pair_gid(const struct pair *p, unsigned node)
{
	return node < p->n ? &p->node[node].gid : NULL;
}

unsigned pair_nodes(const struct pair *p)
{
	return p->n;
}

int pair_set_faults(struct pair *p, unsigned from, unsigned to, const struct pair_faults *f)
{
	if (from >= p->n || to >= p->n || !f)
		return EINVAL;
	if (f->loss < 0 || f->loss > 1 || f->dup < 0 || f->dup > 1 || f->reorder < 0 || f->reorder > 1 ||
	    f->corrupt < 0 || f->corrupt > 1)
		return EINVAL;
	p->faults[from][to] = *f;
	return 0;
}

void pair_set_all_faults(struct pair *p, const struct pair_faults *f)
{
	for (unsigned i = 0; i < p->n; i++)
		for (unsigned j = 0; j < p->n; j++)
			pair_set_faults(p, i, j, f);
}

void pair_set_tap(struct pair *p, pair_tap_fn fn, void *arg)
{
	p->tap = fn;
	p->tap_arg = arg;
}

uint64_t pair_now(const struct pair *p)
{
	return p->now;
}

size_t pair_in_flight(const struct pair *p)
{
	return sim_pending(&p->eng) + (p->held != NULL);
}

uint64_t pair_trace_hash(const struct pair *p)
{
	return p->trace;
}

const struct pair_stats *pair_stats(const struct pair *p)
{
	return &p->stats;
}
