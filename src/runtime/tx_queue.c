/*
 * tx_queue.c — the transmit queue (tx_queue.h): packets as the rnic built
 * them, kept until the paths take them.
 */
#include "runtime/tx_queue.h"

#include <errno.h>
#include <string.h>

#include "runtime/mem_guard.h"

bool srt_tx_shape_ok(const struct rnic_tx *tx)
{
	if (tx->ib_len < WIRE_BTH_LEN + WIRE_ICRC_LEN || tx->ib_len + tx->payload_len > WIRE_MAX_IB_PACKET)
		return false;
	if (!tx->payload_len)
		return true;
	return tx->payload && tx->hdr_len >= WIRE_BTH_LEN && tx->hdr_len + WIRE_ICRC_LEN <= tx->ib_len &&
	       tx->ib_len - tx->hdr_len - WIRE_ICRC_LEN <= 3;
}

bool srt_tx_plain_ack(const struct rnic_tx *tx)
{
	if (tx->ib_len != WIRE_BTH_LEN + WIRE_AETH_LEN + WIRE_ICRC_LEN || tx->payload_len ||
	    tx->ib[0] != WIRE_OP_ACK)
		return false;
	struct wire_aeth aeth = { .syndrome = tx->ib[WIRE_BTH_LEN] };
	return wire_aeth_kind(&aeth) == WIRE_AETH_ACK;
}

uint8_t *srt_txq_room(struct srt_tx_queue *q)
{
	if (q->n == SRT_TX_MAX_PKTS || q->used + WIRE_MAX_IB_PACKET > SRT_TX_BUF_BYTES)
		return NULL;
	return q->buf + q->used;
}

static bool built_in_place(const struct srt_tx_queue *q, const struct rnic_tx *tx)
{
	return tx->ib == q->buf + q->used && q->n < SRT_TX_MAX_PKTS;
}

bool srt_txq_fits(const struct srt_tx_queue *q, const struct rnic_tx *tx, bool copy_in)
{
	size_t need = tx->ib_len + (copy_in ? tx->payload_len : 0);

	return built_in_place(q, tx) || (q->n < SRT_TX_MAX_PKTS && q->used + need <= SRT_TX_BUF_BYTES);
}

int srt_txq_add(struct srt_tx_queue *q, const struct rnic_tx *tx, bool copy_in)
{
	bool in_place = built_in_place(q, tx);
	size_t need = tx->ib_len + (copy_in ? tx->payload_len : 0);
	struct srt_tx_slot *slot = &q->slot[q->n++];

	slot->plain_ack = srt_tx_plain_ack(tx);
	slot->alone = tx->alone;
	if (!slot->plain_ack)
		q->not_acks++;
	slot->sport = tx->sport;
	slot->dst = tx->dst;
	slot->tos = (uint8_t)((tx->dscp << 2) | (tx->ecn & 3));
	slot->ttl = tx->ttl ? tx->ttl : SRT_DEFAULT_TTL;
	slot->off = (uint32_t)q->used;
	slot->len = (uint32_t)(tx->ib_len + tx->payload_len);
	slot->payload = tx->payload_len ? tx->payload : NULL;
	slot->payload_len = (uint32_t)tx->payload_len;
	slot->hdr_len = tx->payload_len ? (uint32_t)tx->hdr_len : 0;
	/* The ICRC bytes are filled by the path that sends it (for UDP:
	 * when the packet's place in a GSO run, hence its IPv4 ID, is
	 * known). */
	if (!in_place)   /* memmove: tx->ib may lie in buf (built in place, then sent) */
		memmove(q->buf + q->used, tx->ib, tx->ib_len - WIRE_ICRC_LEN);
	if (copy_in) {
		/* headers | pad + ICRC  ->  headers | payload | pad + ICRC */
		uint8_t *pkt = q->buf + q->used;
		memmove(pkt + slot->hdr_len + tx->payload_len, pkt + slot->hdr_len, tx->ib_len - slot->hdr_len);
		/* The payload is region memory, which may have gone
		 * (mem_guard.h): the packet is then not queued, as if lost. */
		if (!srt_guard_copy(pkt + slot->hdr_len, tx->payload, tx->payload_len)) {
			q->n--;
			q->not_acks--;          /* a packet with payload is no plain ACK */
			return EFAULT;
		}
		slot->payload = NULL;
		slot->payload_len = 0;
		slot->hdr_len = 0;
	}
	/* Slots start 4-byte aligned (each packet is an iovec of its own
	 * when sent, so this is only tidiness). */
	q->used += (need + 3u) & ~3u;
	return 0;
}

unsigned srt_txq_pieces(struct srt_tx_queue *q, const struct srt_tx_slot *s, struct wire_piece *pc, uint8_t **icrc)
{
	uint8_t *pkt = q->buf + s->off;
	size_t in_buf = s->len - s->payload_len;
	unsigned n = 0;

	*icrc = pkt + in_buf - WIRE_ICRC_LEN;
	if (!s->payload_len) {
		pc[n++] = (struct wire_piece){ pkt, in_buf - WIRE_ICRC_LEN };
		return n;
	}
	pc[n++] = (struct wire_piece){ pkt, s->hdr_len };
	pc[n++] = (struct wire_piece){ s->payload, s->payload_len };
	if (in_buf - s->hdr_len > WIRE_ICRC_LEN)
		pc[n++] = (struct wire_piece){ pkt + s->hdr_len, in_buf - s->hdr_len - WIRE_ICRC_LEN };
	return n;
}
