/*
 * tx_queue.h — the transmit queue: the packets an rnic produced while its
 * owner held the lock, stored back to back with room for their ICRC, until
 * they are handed to the path that carries each (paths.h) at unlock.
 *
 * The rnic builds a packet in place (srt_txq_room, rnic_io.tx_buffer),
 * so queuing it copies nothing.  A payload by reference (rnic_tx.payload)
 * stays where it lies unless the caller asks for it to be copied in (the
 * path it will take sends copies: udp_send.c says when).  The queue knows
 * no path: a slot is a packet as pieces plus what its IP header will say.
 */
#ifndef SOFTRNIC_RUNTIME_TX_QUEUE_H
#define SOFTRNIC_RUNTIME_TX_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rnic/rnic.h"
#include "wire/wire.h"

/* The TTL every packet leaves with, unless the rnic says otherwise
 * (rnic_tx.ttl); the ICRC masks it anyway. */
#define SRT_DEFAULT_TTL 64

#define SRT_TX_MAX_PKTS 192
#define SRT_TX_BUF_BYTES (SRT_TX_MAX_PKTS * (WIRE_MAX_IB_PACKET + 8))

struct srt_tx_slot {
	struct rnic_gid dst;
	uint16_t sport;                 /* rnic_tx.sport: 0, no preference */
	uint8_t tos, ttl;
	bool plain_ack;                 /* a plain ACK (srt_tx_plain_ack) */
	bool alone;                     /* rnic_tx.alone: told to a local peer */
	uint32_t off, len;              /* in buf; len includes the ICRC  */
	/* Payload by reference (rnic_tx.payload), payload_len > 0: len is
	 * the whole packet on the wire; buf holds its hdr_len header bytes
	 * and then the pad and ICRC, the payload stays at `payload`. */
	const uint8_t *payload;
	uint32_t payload_len;
	uint32_t hdr_len;
};

struct srt_tx_queue {
	unsigned n;
	unsigned not_acks;              /* queued packets other than plain ACKs */
	size_t used;
	struct srt_tx_slot slot[SRT_TX_MAX_PKTS];
	uint8_t buf[SRT_TX_BUF_BYTES];
};

/* rnic_tx's shape rules (rnic.h): the whole packet fits one IB packet
 * and a payload by reference sits between the headers (at least a BTH)
 * and at most 3 pad bytes + the ICRC. */
bool srt_tx_shape_ok(const struct rnic_tx *tx);
/* A plain ACK: BTH + AETH whose syndrome says ACK (IBTA 9.3.5), no
 * payload: a packet that may wait a little for company (send_path.c). */
bool srt_tx_plain_ack(const struct rnic_tx *tx);

/* Room for the next packet, to build it in place; NULL when the queue is
 * full (send what it holds first). */
uint8_t *srt_txq_room(struct srt_tx_queue *q);
/* Would a packet of `need` bytes (not built in place) fit? */
bool srt_txq_fits(const struct srt_tx_queue *q, const struct rnic_tx *tx, bool copy_in);
/* Appends tx (copied unless built in place at srt_txq_room; its payload
 * by reference copied in when copy_in).  The caller checked the shape
 * and srt_txq_fits.  0, or EFAULT: the payload (region memory) faulted,
 * nothing queued. */
int srt_txq_add(struct srt_tx_queue *q, const struct rnic_tx *tx, bool copy_in);
/* Slot s's packet as pieces up to its ICRC (1..3: the packet, or
 * headers, payload and pad); *icrc: where its 4 ICRC bytes go. */
unsigned srt_txq_pieces(struct srt_tx_queue *q, const struct srt_tx_slot *s, struct wire_piece *pc, uint8_t **icrc);
static inline void srt_txq_clear(struct srt_tx_queue *q)
{
	q->n = 0;
	q->not_acks = 0;
	q->used = 0;
}
static inline bool srt_txq_only_acks(const struct srt_tx_queue *q)
{
	return q->n && !q->not_acks;
}

#endif
