/*
 * udp_send.c — the UDP port's transmit side (the port itself, its
 * sockets and addresses: udp_port.c).
 *
 * Sends never block (MSG_DONTWAIT), because they happen with the device
 * lock held: a full socket buffer loses the packet, like a full NIC queue,
 * and RC retransmission recovers it.
 *
 * Batching (srt_udp_queue / srt_udp_flush): the runtime queues every
 * packet the rnic produces while it holds the device lock (the rnic
 * builds them in place, srt_udp_tx_buffer) and flushes when it releases
 * the lock.  By reference, the payload of an RC/UC packet in one piece (one
 * SGE, the inline copy, a READ response's MR range) is not in the queue
 * at all (rnic_tx.payload): the queue holds headers, pad and ICRC, the
 * send's iovecs point into the MR, and the ICRC is computed over the
 * pieces in place, so each payload byte is read once for the CRC and
 * copied once, into the kernel.  This is opt-in (SOFTRNIC_TX_COPY=0);
 * by default, or with SOFTRNIC_TX_COPY=1, the payload is copied into the
 * queue as before.  Why: in A/B runs of perftest on the 2-vCPU VM
 * (docs/performance.md) it cut the sender's CPU by ~5% and helped
 * ib_read_bw, but ib_write_bw came out 5-10% slower at every rank of a
 * 10-round run: the kernel's work per iovec (two per packet by
 * reference) raised system time more than dropping the 4 KiB copy from
 * a cache-hot buffer saved in user time.  Trade-off: a READ
 * response is read from the responder's MR at flush time; a local write
 * to that range meanwhile gives undefined data (as on a NIC), and one
 * that lands between the CRC and the kernel's copy gives a bad ICRC, so
 * the requester drops the packet and retries the READ.  Flushing: one
 * sendmmsg per source-port socket (group_by_socket), in which each run of
 * equal-sized packets to one destination
 * (the MIDDLEs of a long message; the last may be shorter) is one UDP GSO
 * send of up to 64 KiB.  The kernel, or a NIC, cuts it into datagrams
 * with IPv4 IDs 0, 1, 2... (inet_gso_segment counts up from the send's ID,
 * 0 here), so packet k of a run carries the ICRC for ID k.  Over loopback
 * the run reaches a receiver with UDP_GRO whole, and srt_udp_recv splits
 * it at the GRO segment size; the receiver checks segment k against ID k
 * (srt_icrc_verify_ipv4_hint), all 32 bits.  Measured with perftest
 * ib_write_bw, 64 KiB, 2-core VM: ~2.5x the packets-one-by-one rate.
 *
 * Capture (SOFTRNIC_PCAP, capture.h): when u->capture is set, each packet
 * a send call accepted is written to it as it left, a GSO run as its
 * segments with IPv4 IDs 0, 1, 2... (capture_group); one pointer test per
 * socket group when off.
 */
#include "runtime/udp_port.h"

#include <errno.h>
#include <string.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include "runtime/capture.h"
#include "runtime/mem_guard.h"

/* A packet as pieces up to its ICRC, for wire_icrc_udp_payload_pieces
 * and the iovecs of a send: `ib` (ib_len bytes, ICRC room included)
 * alone, or, with a payload by reference (rnic_tx.payload), its headers,
 * the payload, and its pad if any.  The ICRC goes to ib + ib_len - 4
 * either way.  Returns the number of pieces (1..3). */
static unsigned packet_pieces(const uint8_t *ib, size_t ib_len, const uint8_t *payload, size_t payload_len,
			      size_t hdr_len, struct wire_piece *pc)
{
	unsigned n = 0;

	if (!payload_len) {
		pc[n++] = (struct wire_piece){ ib, ib_len - WIRE_ICRC_LEN };
		return n;
	}
	pc[n++] = (struct wire_piece){ ib, hdr_len };
	pc[n++] = (struct wire_piece){ payload, payload_len };
	if (ib_len - hdr_len > WIRE_ICRC_LEN)
		pc[n++] = (struct wire_piece){ ib + hdr_len, ib_len - hdr_len - WIRE_ICRC_LEN };
	return n;
}

/* rnic_tx's shape rules (rnic.h): the whole packet fits one IB packet
 * and a payload by reference sits between the headers (at least a BTH)
 * and at most 3 pad bytes + the ICRC. */
static bool tx_shape_ok(const struct rnic_tx *tx)
{
	if (tx->ib_len < WIRE_BTH_LEN + WIRE_ICRC_LEN || tx->ib_len + tx->payload_len > WIRE_MAX_IB_PACKET)
		return false;
	if (!tx->payload_len)
		return true;
	return tx->payload && tx->hdr_len >= WIRE_BTH_LEN && tx->hdr_len + WIRE_ICRC_LEN <= tx->ib_len &&
	       tx->ib_len - tx->hdr_len - WIRE_ICRC_LEN <= 3;
}

/* SOFTRNIC_PCAP: a packet the kernel accepted, as it left (capture.h):
 * the pieces up to the ICRC, then the ICRC. */
static void capture_sent(struct srt_udp *u, const struct rnic_gid *dst, uint16_t sport, uint16_t ip_id,
			 uint8_t tos, uint8_t ttl, const struct wire_piece *pc, unsigned npc, const uint8_t *icrc)
{
	struct wire_piece all[4];
	struct srt_capture_hdr h = { .sport = sport, .ip_id = ip_id, .tos = tos, .ttl = ttl };

	memcpy(h.src, u->gid.raw, 16);
	memcpy(h.dst, dst->raw, 16);
	memcpy(all, pc, npc * sizeof(*pc));
	all[npc] = (struct wire_piece){ icrc, WIRE_ICRC_LEN };
	srt_capture_packet(u->capture, &h, all, npc + 1);
}

static unsigned flush_queue(struct srt_udp *u);

/* A message-path packet (rnic_tx.payload_vec; local_path.h): only a
 * local ring can carry it, and what is queued leaves first (the QP's
 * packets keep their order), published with it: the ACK that waited to
 * ride and the WRITE behind it reach a polling peer together, as MTU
 * packets do, not the ACK alone, after which a program may stop polling
 * and spin on memory until the progress thread comes by.  Its payload is
 * described, not copied. */
static int send_message(struct srt_udp *u, const struct rnic_tx *tx)
{
	struct srt_local_peer *peer = NULL;
	struct in_addr dst4;
	uint16_t sport;

	if (u->txq && u->txq->n) {
		u->acks_before_message += u->txq->n - u->txq->not_acks;
		flush_queue(u);
	}
	if (u->local && tx->ib_len >= WIRE_BTH_LEN + WIRE_ICRC_LEN && srt_gid_to_ipv4(&tx->dst, &dst4))
		peer = srt_local_route(u->local, dst4, tx->ib);
	if (!peer) {
		srt_local_flush(u->local);
		u->tx_unroutable++;
		return EHOSTUNREACH;
	}
	(void)srt_udp_sport_socket(u, tx->sport, &sport);
	srt_local_send_remote(u->local, peer, sport, (uint8_t)((tx->dscp << 2) | (tx->ecn & 3)),
			      tx->ttl ? tx->ttl : SRT_DEFAULT_TTL, tx->ib, (uint32_t)tx->ib_len, tx->payload_vec,
			      tx->payload_nvec, tx->alone);
	srt_local_flush(u->local);
	return 0;
}

int srt_udp_send(struct srt_udp *u, const struct rnic_tx *tx)
{
	union srt_sockaddr to;
	socklen_t to_len;

	if (tx->payload_vec)
		return send_message(u, tx);

	if (!tx_shape_ok(tx) || !(to_len = srt_udp_sockaddr(u, &tx->dst, WIRE_ROCEV2_UDP_PORT, &to))) {
		u->tx_unroutable++;
		return EINVAL;
	}

	/* The IP header the kernel will build (udp_port.c header comment). */
	struct wire_ip ip;
	int tos = (tx->dscp << 2) | (tx->ecn & 3);
	srt_udp_ip_header(u, &tx->dst, (uint8_t)tos, tx->ttl ? tx->ttl : SRT_DEFAULT_TTL, 0, &ip);

	uint16_t sport;
	int fd = srt_udp_sport_socket(u, tx->sport, &sport);
	struct wire_piece pc[3];
	unsigned npc = packet_pieces(tx->ib, tx->ib_len, tx->payload, tx->payload_len, tx->hdr_len, pc);
	uint8_t icrc[WIRE_ICRC_LEN];
	uint32_t crc;
	/* A payload by reference is region memory, which may have gone
	 * (mem_guard.h): the packet is then not sent, as if lost. */
	if (!tx->payload_len)
		crc = wire_icrc_udp_payload_pieces(&ip, sport, pc, npc);
	else if (!srt_guard_icrc(&ip, sport, pc, npc, &crc)) {
		u->tx_mr_fault++;
		return EFAULT;
	}
	wire_icrc_store(icrc, crc);

	/* No copy of the packet: it goes out from the rnic's buffer (and
	 * the payload from wherever it lies), the ICRC from ours. */
	struct iovec iov[4];
	for (unsigned i = 0; i < npc; i++)
		iov[i] = (struct iovec){ .iov_base = (void *)pc[i].p, .iov_len = pc[i].len };
	iov[npc] = (struct iovec){ .iov_base = icrc, .iov_len = WIRE_ICRC_LEN };
	union {
		char buf[CMSG_SPACE(sizeof(int)) * 2];
		struct cmsghdr align;
	} control;
	struct msghdr msg = { .msg_name = &to, .msg_namelen = to_len, .msg_iov = iov, .msg_iovlen = npc + 1 };
	size_t control_len = 0;

	memset(&control, 0, sizeof(control));
	msg.msg_control = control.buf;
	msg.msg_controllen = sizeof(control.buf);
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (tos) {
		c->cmsg_level = u->v6 ? IPPROTO_IPV6 : IPPROTO_IP;
		c->cmsg_type = u->v6 ? IPV6_TCLASS : IP_TOS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &tos, sizeof(int));
		control_len += CMSG_SPACE(sizeof(int));
		c = CMSG_NXTHDR(&msg, c);
	}
	if (tx->ttl && tx->ttl != SRT_DEFAULT_TTL) {
		int ttl = tx->ttl;
		c->cmsg_level = u->v6 ? IPPROTO_IPV6 : IPPROTO_IP;
		c->cmsg_type = u->v6 ? IPV6_HOPLIMIT : IP_TTL;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &ttl, sizeof(int));
		control_len += CMSG_SPACE(sizeof(int));
	}
	msg.msg_controllen = control_len;
	if (!control_len)
		msg.msg_control = NULL;

	if (sendmsg(fd, &msg, MSG_DONTWAIT) < 0) {
		u->tx_errors++;
		return errno;
	}
	if (u->capture)
		capture_sent(u, &tx->dst, sport, 0, (uint8_t)tos, ip.ttl, pc, npc, icrc);
	return 0;
}

/* ---- batched transmit ---------------------------------------------------- */

/* A plain ACK: BTH + AETH whose syndrome says ACK (IBTA 9.3.5), no
 * payload. */
static bool plain_ack(const struct rnic_tx *tx)
{
	if (tx->ib_len != WIRE_BTH_LEN + WIRE_AETH_LEN + WIRE_ICRC_LEN || tx->payload_len ||
	    tx->ib[0] != WIRE_OP_ACK)
		return false;
	struct wire_aeth aeth = { .syndrome = tx->ib[WIRE_BTH_LEN] };
	return wire_aeth_kind(&aeth) == WIRE_AETH_ACK;
}

int srt_udp_queue(struct srt_udp *u, const struct rnic_tx *tx)
{
	struct srt_tx_queue *q = u->txq;
	union srt_sockaddr to;
	struct in_addr dst4;

	if (!q || tx->payload_vec)
		return srt_udp_send(u, tx);
	if (!tx_shape_ok(tx) || !srt_udp_sockaddr(u, &tx->dst, WIRE_ROCEV2_UDP_PORT, &to)) {
		u->tx_unroutable++;
		return EINVAL;
	}
	/* Built in place (srt_udp_tx_buffer): no flush, no copy. */
	bool in_place = tx->ib == q->buf + q->used && q->n < SRT_TX_MAX_PKTS;
	/* A payload by reference made for the local path (the rnic makes
	 * them when there is one) that leaves by the socket is copied in
	 * after all, as the socket's default is (top of this file). */
	bool copy_in = tx->payload_len && !u->tx_payload_ref &&
		       !(u->local && srt_gid_to_ipv4(&tx->dst, &dst4) && srt_local_route(u->local, dst4, tx->ib));
	size_t need = tx->ib_len + (copy_in ? tx->payload_len : 0);
	if (!in_place && (q->n == SRT_TX_MAX_PKTS || q->used + need > SRT_TX_BUF_BYTES))
		srt_udp_flush(u);

	struct srt_tx_slot *slot = &q->slot[q->n++];
	slot->plain_ack = plain_ack(tx);
	slot->alone = tx->alone;
	if (!slot->plain_ack)
		q->not_acks++;
	slot->fd = srt_udp_sport_socket(u, tx->sport, &slot->sport);
	slot->dst = tx->dst;
	slot->tos = (uint8_t)((tx->dscp << 2) | (tx->ecn & 3));
	slot->ttl = tx->ttl ? tx->ttl : SRT_DEFAULT_TTL;
	slot->off = (uint32_t)q->used;
	slot->len = (uint32_t)(tx->ib_len + tx->payload_len);
	slot->payload = tx->payload_len ? tx->payload : NULL;
	slot->payload_len = (uint32_t)tx->payload_len;
	slot->hdr_len = tx->payload_len ? (uint32_t)tx->hdr_len : 0;
	/* The ICRC bytes are filled at flush time, when the packet's place
	 * in a GSO run (hence its IPv4 ID) is known. */
	if (!in_place)   /* memmove: tx->ib may lie in buf (built in place, then flushed) */
		memmove(q->buf + q->used, tx->ib, tx->ib_len - WIRE_ICRC_LEN);
	if (copy_in) {
		/* headers | pad + ICRC  ->  headers | payload | pad + ICRC */
		uint8_t *pkt = q->buf + q->used;
		memmove(pkt + slot->hdr_len + tx->payload_len, pkt + slot->hdr_len, tx->ib_len - slot->hdr_len);
		/* The payload is region memory, which may have gone
		 * (mem_guard.h): the packet is then not sent, as if lost. */
		if (!srt_guard_copy(pkt + slot->hdr_len, tx->payload, tx->payload_len)) {
			q->n--;
			q->not_acks--;          /* a packet with payload is no plain ACK */
			u->tx_mr_fault++;
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

uint8_t *srt_udp_tx_buffer(struct srt_udp *u)
{
	struct srt_tx_queue *q = u->txq;

	if (!q)
		return NULL;
	if (q->n == SRT_TX_MAX_PKTS || q->used + WIRE_MAX_IB_PACKET > SRT_TX_BUF_BYTES)
		srt_udp_flush(u);
	return q->buf + q->used;
}

/* Most bytes one UDP datagram carries (65535 - IPv4 20 - UDP 8), and the
 * most segments one GSO send may have (the kernel's UDP_MAX_SEGMENTS is
 * 64 on older kernels). */
#define SRT_GSO_MAX_BYTES 65507u
#define SRT_GSO_MAX_SEGS 64u

static bool same_flow(const struct srt_tx_slot *a, const struct srt_tx_slot *b)
{
	return a->fd == b->fd && !memcmp(a->dst.raw, b->dst.raw, 16) && a->tos == b->tos && a->ttl == b->ttl;
}

/* How many packets from position `first` of `order` (up to `end`) form
 * one send: a run to one destination from one socket whose packets are
 * all as long as the first, except that the last may be shorter (the UDP
 * GSO rule).  Each packet is an iovec of its own, so a run need not be
 * contiguous in buf. */
static unsigned gso_run(const struct srt_tx_queue *q, const uint16_t *order, unsigned first, unsigned end,
			bool gso)
{
	const struct srt_tx_slot *s0 = &q->slot[order[first]];
	uint32_t seg = s0->len, total = seg;
	unsigned n = 1;

	if (!gso)
		return 1;
	while (first + n < end && n < SRT_GSO_MAX_SEGS) {
		const struct srt_tx_slot *s = &q->slot[order[first + n]];
		if (!same_flow(s0, s) || s->len > seg || total + s->len > SRT_GSO_MAX_BYTES)
			break;
		if (s->len < seg) {
			/* A shorter packet ends the run, unless it starts a run
			 * of its own (WRITE_FIRST with its RETH is longer than
			 * the MIDDLEs after it: send it alone). */
			const struct srt_tx_slot *next = first + n + 1 < end ? &q->slot[order[first + n + 1]] : NULL;
			if (n == 1 && next && same_flow(s, next) && next->len == s->len)
				break;
			n++;
			break;
		}
		total += s->len;
		n++;
	}
	return n;
}

/* Slot s's packet as pieces up to its ICRC (packet_pieces); *icrc:
 * where its ICRC goes, in buf. */
static unsigned slot_pieces(struct srt_tx_queue *q, const struct srt_tx_slot *s, struct wire_piece *pc,
			    uint8_t **icrc)
{
	uint8_t *pkt = q->buf + s->off;
	size_t in_buf = s->len - s->payload_len;

	*icrc = pkt + in_buf - WIRE_ICRC_LEN;
	return packet_pieces(pkt, in_buf, s->payload, s->payload_len, s->hdr_len, pc);
}

/* The ICRC of every packet of a run, for the source port its socket
 * really has: segment k leaves with IPv4 ID k (the kernel numbers the
 * datagrams it cuts from one GSO send from the ID of the send, which is 0
 * for a DF datagram on an unconnected socket; see the top of this file). */
/* The ICRC of slot s for the IPv4 header the kernel builds from our
 * address, the slot's TOS, TTL and destination, and IPv4 ID ip_id. */
static void store_icrc(const struct srt_udp *u, const struct srt_tx_slot *s, const struct wire_piece *pc,
		       unsigned npc, uint8_t *icrc, uint16_t ip_id)
{
	struct wire_ip ip;

	srt_udp_ip_header(u, &s->dst, s->tos, s->ttl, ip_id, &ip);
	/* By reference, the CRC reads the payload where it lies
	 * (libdeflate's CRC continues piece by piece). */
	wire_icrc_store(icrc, wire_icrc_udp_payload_pieces(&ip, s->sport, pc, npc));
}

/* The ICRC of slot s, reading a payload by reference under the guard
 * (region memory may have gone, mem_guard.h): false if it faulted. */
static bool store_icrc_guarded(struct srt_udp *u, const struct srt_tx_slot *s, const struct wire_piece *pc,
			       unsigned npc, uint8_t *icrc, uint16_t ip_id)
{
	struct wire_ip ip;
	uint32_t crc;

	if (!s->payload_len) {
		store_icrc(u, s, pc, npc, icrc, ip_id);
		return true;
	}
	srt_udp_ip_header(u, &s->dst, s->tos, s->ttl, ip_id, &ip);
	if (!srt_guard_icrc(&ip, s->sport, pc, npc, &crc))
		return false;
	wire_icrc_store(icrc, crc);
	return true;
}

/* false: a payload by reference of the run faulted; the run is not sent
 * (its packets are lost, RC retransmission recovers or the rnic then
 * finds the fault). */
static bool fill_icrcs(struct srt_udp *u, struct srt_tx_queue *q, const uint16_t *order, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		struct srt_tx_slot *s = &q->slot[order[k]];
		struct wire_piece pc[3];
		uint8_t *icrc;
		unsigned npc = slot_pieces(q, s, pc, &icrc);

		if (!store_icrc_guarded(u, s, pc, npc, icrc, n > 1 ? (uint16_t)k : 0))
			return false;
	}
	return true;
}

/* Control messages of one send: GSO segment size, TOS, TTL. */
union srt_tx_control {
	char buf[CMSG_SPACE(sizeof(uint16_t)) + CMSG_SPACE(sizeof(int)) * 2];
	struct cmsghdr align;
};

static void build_control(const struct srt_udp *u, struct msghdr *m, union srt_tx_control *c,
			  const struct srt_tx_slot *s, unsigned nseg)
{
	struct cmsghdr *h;
	size_t len = 0;

	m->msg_control = c->buf;
	m->msg_controllen = sizeof(c->buf);
	h = CMSG_FIRSTHDR(m);
	if (nseg > 1) {
		uint16_t seg = (uint16_t)s->len;
		h->cmsg_level = SOL_UDP;
		h->cmsg_type = UDP_SEGMENT;
		h->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(h), &seg, sizeof(seg));
		len += CMSG_SPACE(sizeof(seg));
		h = CMSG_NXTHDR(m, h);
	}
	if (s->tos) {
		int tos = s->tos;
		h->cmsg_level = u->v6 ? IPPROTO_IPV6 : IPPROTO_IP;
		h->cmsg_type = u->v6 ? IPV6_TCLASS : IP_TOS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &tos, sizeof(int));
		len += CMSG_SPACE(sizeof(int));
		h = CMSG_NXTHDR(m, h);
	}
	if (s->ttl != SRT_DEFAULT_TTL) {
		int ttl = s->ttl;
		h->cmsg_level = u->v6 ? IPPROTO_IPV6 : IPPROTO_IP;
		h->cmsg_type = u->v6 ? IPV6_HOPLIMIT : IP_TTL;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &ttl, sizeof(int));
		len += CMSG_SPACE(sizeof(int));
	}
	m->msg_controllen = len;
	if (!len)
		m->msg_control = NULL;
}

/* Queue positions grouped by socket, each group in queue order (a stable
 * partition), so each socket's packets leave in one sendmmsg and every
 * flow (one QP: one port, one socket) keeps its order.  Packets of
 * different sockets may overtake each other, as packets of different QPs
 * may on any NIC.  Within a group the plain ACKs go last: an ACK that
 * waited for company (send_path.c, "ACKs ride with sends") then reaches
 * the peer after the request it rode with, so a peer that stops polling
 * at the completion the ACK brings has received the request already.
 * (ACKs answer the other direction; IBTA orders packets per direction.)
 * Returns the number of groups; group g is order[start[g] .. start[g + 1]).
 * O(n * groups), n <= SRT_TX_MAX_PKTS. */
static unsigned group_by_socket(const struct srt_tx_queue *q, uint16_t *order, unsigned *start)
{
	bool taken[SRT_TX_MAX_PKTS] = { false };
	unsigned npos = 0, ngroups = 0;

	for (unsigned i = 0; i < q->n; i++) {
		if (taken[i])
			continue;
		start[ngroups++] = npos;
		for (int acks = 0; acks < 2; acks++) {
			for (unsigned j = i; j < q->n; j++) {
				if (!taken[j] && q->slot[j].fd == q->slot[i].fd && q->slot[j].plain_ack == acks) {
					taken[j] = true;
					order[npos++] = (uint16_t)j;
				}
			}
		}
	}
	start[ngroups] = npos;
	return ngroups;
}

/* sendmmsg all of msgs[0..nmsg) on fd.  Returns the packets lost: a
 * message the kernel refuses is lost (RC retransmission recovers it); a
 * full socket buffer loses the rest, like a full NIC queue.  lost_msg
 * (NULL unless capturing, zeroed by the caller): set for each message
 * lost. */
static unsigned send_messages(int fd, struct mmsghdr *msgs, const unsigned *npkts, unsigned nmsg,
			      bool *lost_msg)
{
	unsigned lost = 0;

	for (unsigned sent = 0; sent < nmsg;) {
		int r = sendmmsg(fd, &msgs[sent], nmsg - sent, MSG_DONTWAIT);
		if (r > 0) {
			sent += (unsigned)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
			for (; sent < nmsg; sent++) {
				lost += npkts[sent];
				if (lost_msg)
					lost_msg[sent] = true;
			}
			break;
		}
		if (lost_msg)
			lost_msg[sent] = true;
		lost += npkts[sent++];
	}
	return lost;
}

/* SOFTRNIC_PCAP: the packets of messages msgs[first .. end) that the
 * kernel accepted, from position `pos` of order, each GSO segment as its
 * own frame with the IPv4 ID the kernel gives it (fill_icrcs). */
static void capture_group(struct srt_udp *u, struct srt_tx_queue *q, const uint16_t *order, unsigned pos,
			  const unsigned *npkts, unsigned first, unsigned end, const bool *lost_msg)
{
	for (unsigned m = first; m < end; pos += npkts[m], m++) {
		if (lost_msg[m - first])
			continue;
		for (unsigned k = 0; k < npkts[m]; k++) {
			const struct srt_tx_slot *s = &q->slot[order[pos + k]];
			struct wire_piece pc[3];
			uint8_t *icrc;
			unsigned npc = slot_pieces(q, s, pc, &icrc);
			capture_sent(u, &s->dst, s->sport, npkts[m] > 1 ? (uint16_t)k : 0, s->tos, s->ttl, pc, npc,
				     icrc);
		}
	}
}

/* Append {p, len} to a message's iovecs iov[first .. n), merged into the
 * last one when it continues it: by reference, a packet's pad + ICRC and
 * the next packet's headers lie back to back in buf, so a run of MIDDLEs
 * is headers, payload, ICRC + headers, payload, ... (2 iovecs a packet
 * instead of 3), and copied packets whose lengths are multiples of 4 merge
 * into one.  Returns the new n. */
static unsigned push_iovec(struct iovec *iov, unsigned n, unsigned first, void *p, size_t len)
{
	if (n > first && (uint8_t *)iov[n - 1].iov_base + iov[n - 1].iov_len == (uint8_t *)p) {
		iov[n - 1].iov_len += len;
		return n;
	}
	iov[n] = (struct iovec){ .iov_base = p, .iov_len = len };
	return n + 1;
}

/* Append the iovecs that send slot s's packet: its bytes in buf, or
 * (payload by reference) headers, payload where it lies, pad and ICRC.  A
 * GSO send concatenates the iovecs of its run; the kernel cuts segments at
 * the segment size whatever the iovec boundaries. */
static unsigned push_slot(struct srt_tx_queue *q, const struct srt_tx_slot *s, struct iovec *iov, unsigned n,
			  unsigned first)
{
	uint8_t *pkt = q->buf + s->off;

	if (!s->payload_len)
		return push_iovec(iov, n, first, pkt, s->len);
	n = push_iovec(iov, n, first, pkt, s->hdr_len);
	n = push_iovec(iov, n, first, (void *)s->payload, s->payload_len);
	return push_iovec(iov, n, first, pkt + s->hdr_len, s->len - s->payload_len - s->hdr_len);
}

/* The host-local path (local_path.h): every queued packet whose
 * destination has a ring here goes into it, with the ICRC of the IPv4
 * header a lone datagram would carry (ID 0), and leaves the queue; the
 * rest keeps its order for the sockets. */
static void take_local(struct srt_udp *u, struct srt_tx_queue *q)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < q->n; i++) {
		struct srt_tx_slot *s = &q->slot[i];
		struct wire_piece pc[4];
		uint8_t *icrc;
		unsigned npc = slot_pieces(q, s, pc, &icrc);
		struct in_addr dst4;
		struct srt_local_peer *peer = srt_gid_to_ipv4(&s->dst, &dst4) ?
					      srt_local_route(u->local, dst4, pc[0].p) : NULL;

		if (!peer) {
			q->slot[kept++] = *s;
			continue;
		}
		bool with_icrc = srt_local_wants_icrc(peer);
		if (with_icrc && !store_icrc_guarded(u, s, pc, npc, icrc, 0)) {
			u->tx_mr_fault++;
			continue;
		}
		pc[npc++] = (struct wire_piece){ icrc, WIRE_ICRC_LEN };  /* the pieces stop before it */
		if (!srt_local_send(u->local, peer, s->sport, s->tos, s->ttl, pc, npc, s->len, with_icrc, s->alone))
			u->tx_mr_fault++;
	}
	q->n = kept;
}

/* srt_udp_flush, but a local ring it wrote to stays held (local_path.h):
 * what is written next to the same ring is published with it. */
static unsigned flush_queue(struct srt_udp *u)
{
	struct srt_tx_queue *q = u->txq;
	struct mmsghdr msgs[SRT_TX_MAX_PKTS];
	/* Per packet, in order[] order: the packet, or headers + payload by
	 * reference + pad and ICRC. */
	struct iovec iov[SRT_TX_MAX_PKTS * 3];
	union srt_sockaddr to[SRT_TX_MAX_PKTS];
	union srt_tx_control control[SRT_TX_MAX_PKTS];
	unsigned npkts[SRT_TX_MAX_PKTS];
	uint16_t order[SRT_TX_MAX_PKTS];
	unsigned start[SRT_TX_MAX_PKTS + 1];
	unsigned nmsg = 0, lost = 0, niov = 0;

	if (!q || !q->n)
		return 0;
	if (u->local)
		take_local(u, q);
	unsigned ngroups = q->n ? group_by_socket(q, order, start) : 0;
	for (unsigned g = 0; g < ngroups; g++) {
		unsigned first_msg = nmsg;

		for (unsigned i = start[g]; i < start[g + 1];) {
			unsigned n = gso_run(q, order, i, start[g + 1], u->gso);
			const struct srt_tx_slot *s = &q->slot[order[i]];

			unsigned first_iov = niov;

			if (!fill_icrcs(u, q, order + i, n)) {
				u->tx_mr_fault += n;
				i += n;
				continue;
			}
			for (unsigned k = 0; k < n; k++)
				niov = push_slot(q, &q->slot[order[i + k]], iov, niov, first_iov);
			memset(&msgs[nmsg], 0, sizeof(msgs[nmsg]));
			/* Routable: srt_udp_queue checked the family. */
			msgs[nmsg].msg_hdr.msg_name = &to[nmsg];
			msgs[nmsg].msg_hdr.msg_namelen = srt_udp_sockaddr(u, &s->dst, WIRE_ROCEV2_UDP_PORT, &to[nmsg]);
			msgs[nmsg].msg_hdr.msg_iov = &iov[first_iov];
			msgs[nmsg].msg_hdr.msg_iovlen = niov - first_iov;
			build_control(u, &msgs[nmsg].msg_hdr, &control[nmsg], s, n);
			npkts[nmsg] = n;
			if (n > 1)
				u->tx_gso_sends++;
			nmsg++;
			i += n;
		}
		if (u->capture) {
			bool lost_msg[SRT_TX_MAX_PKTS] = { false };
			lost += send_messages(q->slot[order[start[g]]].fd, &msgs[first_msg], &npkts[first_msg],
					      nmsg - first_msg, lost_msg);
			capture_group(u, q, order, start[g], npkts, first_msg, nmsg, lost_msg);
		} else {
			lost += send_messages(q->slot[order[start[g]]].fd, &msgs[first_msg], &npkts[first_msg],
					      nmsg - first_msg, NULL);
		}
	}
	u->tx_sends += nmsg;
	u->tx_errors += lost;
	q->n = 0;
	q->not_acks = 0;
	q->used = 0;
	return lost;
}

unsigned srt_udp_flush(struct srt_udp *u)
{
	unsigned lost = flush_queue(u);

	srt_local_flush(u->local);      /* doorbells for sleeping local peers */
	return lost;
}
