/*
 * selective.c — the state selective repeat keeps: the responder's reorder
 * buffer and the requester's scoreboard (the protocol is described in
 * rnic_int.h, the decisions live in responder.c and completer.c).
 *
 * Both are indexed by PSN modulo RNIC_SR_WINDOW and tagged with the full
 * PSN, so a slot left from an older PSN never answers for a newer one.
 * They are allocated on a QP's first loss, so QPs that never lose a
 * packet pay nothing but two NULL pointers.
 *
 * Trade-off: the responder copies each out-of-order packet (header and
 * payload) and executes it once the hole is filled, so execution stays in
 * PSN order and every check of responder.c applies unchanged.  IRN instead
 * places out-of-order WRITE payloads straight into memory, which needs
 * every packet to carry its RETH; that saves the copy but changes the
 * wire format and the ordering rules, and is the better algorithm for a
 * hardware-speed implementation.
 *
 * Exposure, said plainly: without selective repeat a packet is executed
 * only at the one expected PSN; with it, one from the peer's address and
 * to the right QP is kept anywhere in the next RNIC_SR_WINDOW PSNs, so a
 * sender that can forge the peer's source address has 512 PSNs to hit
 * instead of one.  RoCE has no packet authentication either way (IRN in
 * hardware has the same window); SOFTRNIC_SELECTIVE_REPEAT=0 restores the
 * single PSN.
 */
#include <stdlib.h>

#include "rnic/rnic_int.h"

/* ---- responder: the reorder buffer -------------------------------------- */

struct reorder_packet {
	struct wire_ib ib;              /* .payload points at data */
	size_t bytes;                   /* charged to the device's budget */
	uint8_t data[];
};

struct rnic_reorder {
	uint32_t count;
	uint32_t high;                  /* highest PSN kept */
	struct reorder_packet *slot[RNIC_SR_WINDOW];
};

bool reorder_store(struct rnic_qp *qp, const struct wire_ib *pkt, bool *dup)
{
	struct rnic *r = qp->r;
	int32_t d = wire_psn_diff(pkt->bth.psn, qp->resp.epsn);
	struct reorder_packet *p;
	uint32_t i = pkt->bth.psn % RNIC_SR_WINDOW;
	size_t bytes = sizeof(*p) + pkt->payload_len;

	*dup = false;
	/* A message-path packet's payload is still in the sender's memory:
	 * not kept (its resend comes after the hole is filled). */
	if (d <= 0 || (uint32_t)d >= RNIC_SR_WINDOW || (!pkt->payload && pkt->payload_len))
		return false;
	if (!qp->reorder) {
		qp->reorder = calloc(1, sizeof(*qp->reorder));
		if (!qp->reorder)
			return false;
	}
	/* A slot held for a PSN now behind us (only a peer breaking the
	 * PSN rules leaves one: it sent a PSN inside a READ's range) is
	 * freed for the new one. */
	if (qp->reorder->slot[i] && wire_psn_diff(qp->reorder->slot[i]->ib.bth.psn, qp->resp.epsn) < 0)
		reorder_release(qp, qp->reorder->slot[i]->ib.bth.psn);
	if (qp->reorder->slot[i]) {
		*dup = qp->reorder->slot[i]->ib.bth.psn == pkt->bth.psn;
		return false;
	}
	if (r->reorder_bytes + bytes > RNIC_SR_BUDGET)
		return false;
	p = malloc(bytes);
	if (!p)
		return false;
	p->ib = *pkt;
	p->bytes = bytes;
	if (pkt->payload_len)
		memcpy(p->data, pkt->payload, pkt->payload_len);
	p->ib.payload = p->data;
	qp->reorder->slot[i] = p;
	if (!qp->reorder->count || wire_psn_diff(pkt->bth.psn, qp->reorder->high) > 0)
		qp->reorder->high = pkt->bth.psn;
	qp->reorder->count++;
	r->reorder_bytes += bytes;
	r->ctr.reorder_stored++;
	return true;
}

const struct wire_ib *reorder_get(struct rnic_qp *qp, uint32_t psn)
{
	struct reorder_packet *p = qp->reorder ? qp->reorder->slot[psn % RNIC_SR_WINDOW] : NULL;

	return p && p->ib.bth.psn == psn ? &p->ib : NULL;
}

void reorder_release(struct rnic_qp *qp, uint32_t psn)
{
	struct reorder_packet **slot = &qp->reorder->slot[psn % RNIC_SR_WINDOW];

	if (!*slot || (*slot)->ib.bth.psn != psn)
		return;
	qp->r->reorder_bytes -= (*slot)->bytes;
	free(*slot);
	*slot = NULL;
	qp->reorder->count--;
}

bool reorder_empty(const struct rnic_qp *qp)
{
	return !qp->reorder || !qp->reorder->count;
}

uint32_t reorder_high(const struct rnic_qp *qp)
{
	return qp->reorder->high;
}

void reorder_flush(struct rnic_qp *qp)
{
	if (!qp->reorder)
		return;
	for (uint32_t i = 0; i < RNIC_SR_WINDOW && qp->reorder->count; i++) {
		if (qp->reorder->slot[i])
			reorder_release(qp, qp->reorder->slot[i]->ib.bth.psn);
	}
}

/* ---- requester: the scoreboard ------------------------------------------ */

enum {
	BOARD_HELD = 1,                 /* the peer has it (a NAK said so)  */
	BOARD_RESENT = 2,               /* resent at least once             */
	BOARD_QUEUED = 4,               /* waiting in the resend queue      */
};

/* Transmissions are numbered in the order they leave, new packets and
 * resends alike (`tsn`), once the scoreboard exists.  A path mostly keeps
 * their order, so a packet that arrived well after a resend left proves
 * that resend lost — which its PSN alone cannot show (a resend of a later
 * hole overtakes a lost resend of an earlier one).  "Well after": more
 * than SR_REORDER_TSNS transmissions later, so that a path that reorders
 * a little (SOFTRNIC_FAULTS reorder, several paths) costs no resend; TCP's
 * RACK tolerates reordering by a time window instead, the better
 * measure once the rnic keeps RTT estimates. */
#define SR_REORDER_TSNS 3u
/* The same tolerance for a first loss (TCP's duplicate-ACK threshold): a
 * hole is resent only once a packet sent SR_DUPTHRESH PSNs after it has
 * arrived.  A path that only reorders (two threads of one process sending
 * on two CPUs of a veth pair: each CPU's backlog is drained in its own
 * order) delivers the missing packet before then, and nothing is sent
 * twice; measured there, every reordering cost a resend and a duplicate
 * on the bottleneck.  A hole among the last SR_DUPTHRESH packets is left
 * to the probe (completer.c), as TCP leaves it to its RTO or RACK. */
#define SR_DUPTHRESH 3
struct board_entry {
	uint32_t psn;                   /* tag: the fields are for this PSN */
	uint32_t tsn;                   /* its last transmission (0: before the board) */
	uint8_t flags;
};

struct rnic_scoreboard {
	struct board_entry e[RNIC_SR_WINDOW];
	uint32_t queue[RNIC_SR_WINDOW];  /* PSNs to resend, a ring */
	uint32_t qhead, qcount;
	uint32_t tsn;                   /* the last transmission's number */
};

static struct board_entry *entry(struct rnic_scoreboard *b, uint32_t psn)
{
	struct board_entry *x = &b->e[psn % RNIC_SR_WINDOW];

	if (x->psn != psn) {
		x->psn = psn;
		x->tsn = 0;
		x->flags = 0;
	}
	return x;
}

static void enqueue(struct rnic_scoreboard *b, struct board_entry *x, uint32_t psn)
{
	x->flags |= BOARD_QUEUED;
	b->queue[(b->qhead + b->qcount++) % RNIC_SR_WINDOW] = psn;
}

void scoreboard_on_nak(struct rnic_qp *qp, uint32_t hole, uint32_t got)
{
	struct rnic_scoreboard *b = qp->board;
	int32_t span = wire_psn_diff(got, hole);

	/* A NAK names a hole before the packet that arrived; anything else
	 * is not a selective NAK we sent for (a stale or hostile one). */
	if (span <= 0 || (uint32_t)span >= RNIC_SR_WINDOW || wire_psn_diff(got, qp->req.psn_high) >= 0)
		return;
	if (!b) {
		b = qp->board = calloc(1, sizeof(*b));
		if (!b)
			return;
	}
	struct board_entry *g = entry(b, got);
	uint32_t got_tsn = g->tsn;

	g->flags |= BOARD_HELD;
	for (uint32_t psn = hole; psn != got; psn = wire_psn_add(psn, 1)) {
		/* Not yet: the packet may only be late (SR_DUPTHRESH). */
		if (wire_psn_diff(got, psn) < SR_DUPTHRESH)
			break;
		struct board_entry *x = entry(b, psn);

		if (x->flags & (BOARD_HELD | BOARD_QUEUED))
			continue;
		/* Resent already: lost again only if `got` left after the
		 * resend did (else the resend may still be on its way). */
		if ((x->flags & BOARD_RESENT) && (int32_t)(got_tsn - x->tsn) <= (int32_t)SR_REORDER_TSNS)
			continue;
		if (b->qcount == RNIC_SR_WINDOW)
			break;
		enqueue(b, x, psn);
	}
}

bool scoreboard_next(struct rnic_qp *qp, uint32_t *psn)
{
	struct rnic_scoreboard *b = qp->board;

	while (b && b->qcount) {
		uint32_t p = b->queue[b->qhead];
		/* Not entry(): a PSN acknowledged long ago must not take the
		 * slot back from the newer PSN that uses it now. */
		struct board_entry *x = &b->e[p % RNIC_SR_WINDOW];

		b->qhead = (b->qhead + 1) % RNIC_SR_WINDOW;
		b->qcount--;
		if (x->psn != p)
			continue;
		x->flags &= (uint8_t)~BOARD_QUEUED;
		/* Acknowledged meanwhile, or not sent at all any more (a
		 * Go-Back-N moved the send position before it). */
		if (wire_psn_diff(p, qp->comp.psn) < 0 || wire_psn_diff(p, qp->req.psn) >= 0 ||
		    (x->flags & BOARD_HELD))
			continue;
		*psn = p;
		return true;
	}
	return false;
}

void scoreboard_sent(struct rnic_qp *qp, uint32_t psn, bool resend)
{
	struct board_entry *x;

	if (!qp->board)
		return;
	x = entry(qp->board, psn);
	x->tsn = ++qp->board->tsn;
	if (resend)
		x->flags |= BOARD_RESENT;
}

void scoreboard_probe(struct rnic_qp *qp, uint32_t psn)
{
	struct board_entry *x;

	if (!qp->board || qp->board->qcount == RNIC_SR_WINDOW)
		return;
	x = entry(qp->board, psn);
	x->flags &= (uint8_t)~BOARD_HELD;
	if (!(x->flags & BOARD_QUEUED))
		enqueue(qp->board, x, psn);
}

bool scoreboard_pending(const struct rnic_qp *qp)
{
	return qp->board && qp->board->qcount;
}

void scoreboard_clear(struct rnic_qp *qp)
{
	if (qp->board)
		memset(qp->board, 0, sizeof(*qp->board));
}

void selective_free(struct rnic_qp *qp)
{
	reorder_flush(qp);
	free(qp->reorder);
	free(qp->board);
	qp->reorder = NULL;
	qp->board = NULL;
}
