/*
 * udp_send.c — the UDP port's transmit side (the port itself, its
 * sockets and addresses: udp_port.c).
 *
 * Sends never block (MSG_DONTWAIT), because they happen with the device
 * lock held: a full socket buffer loses the packet, like a full NIC queue,
 * and RC retransmission recovers it.
 *
 * Batching: the device's paths (paths.c) hand this port each packet
 * that leaves by UDP (srt_udp_out_add: pieces in the device's transmit
 * queue, tx_queue.h) and flush it when the device lock is released
 * (srt_udp_out_flush).  A program of its own may use srt_udp_queue /
 * srt_udp_tx_buffer / srt_udp_flush instead, with a queue of the port's.
 *
 * Payloads by reference: the payload of an RC/UC packet in one piece
 * (one SGE, the inline copy, a READ response's MR range) may stay where
 * it lies (rnic_tx.payload): the send's iovecs point into the MR and the
 * ICRC is computed over the pieces in place, so each payload byte is read
 * once for the CRC and copied once, into the kernel.  The port asks for
 * payloads to be copied into the queue instead (SRT_PATH_WANTS_COPY)
 * unless SOFTRNIC_TX_COPY=0.  Why: with perftest on 2-vCPU VMs
 * (docs/performance.md) references cut the sender's CPU by ~5% and
 * helped ib_read_bw, but ib_write_bw ran 5-10% slower: the kernel's work
 * per iovec (two per packet by reference) costs more system time than
 * the 4 KiB copy from a cache-hot buffer costs user time.  Trade-off: a
 * READ response is read from the responder's MR at flush time; a local
 * write to that range meanwhile gives undefined data (as on a NIC), and
 * one that lands between the CRC and the kernel's copy gives a bad ICRC,
 * so the requester drops the packet and retries the READ.
 *
 * Flushing: one sendmmsg per source-port socket (group_by_socket), in
 * which each run of equal-sized packets to one destination (the MIDDLEs
 * of a long message; the last may be shorter) is one UDP GSO send of up
 * to 64 KiB.  The kernel, or a NIC, cuts it into datagrams with IPv4 IDs
 * 0, 1, 2... (inet_gso_segment counts up from the send's ID, 0 here), so
 * packet k of a run carries the ICRC for ID k.  Over loopback the run
 * reaches a receiver with UDP_GRO whole, and srt_udp_recv splits it at
 * the GRO segment size; the receiver checks segment k against ID k
 * (srt_icrc_verify_ipv4_hint), all 32 bits.  Measured with perftest
 * ib_write_bw, 64 KiB, 2-core VM: ~2.5x the packets-one-by-one rate.
 *
 * The tap (path.h; SOFTRNIC_PCAP): each packet a send call accepted is
 * shown to it as it left, a GSO run as its segments with IPv4 IDs 0, 1,
 * 2...; one pointer test per socket group when there is none.
 */
#include "runtime/udp_port.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/udp.h>
#include <sys/socket.h>

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

/* The tap: a packet the kernel accepted, as it left: the pieces up to the
 * ICRC, then the ICRC. */
static void tap_sent(struct srt_udp *u, const struct rnic_gid *dst, uint16_t sport, uint16_t ip_id, uint8_t tos,
		     uint8_t ttl, const struct wire_piece *pc, unsigned npc, const uint8_t *icrc)
{
	struct wire_piece all[4];
	struct srt_capture_hdr h = { .sport = sport, .ip_id = ip_id, .tos = tos, .ttl = ttl };

	memcpy(h.src, u->gid.raw, 16);
	memcpy(h.dst, dst->raw, 16);
	memcpy(all, pc, npc * sizeof(*pc));
	all[npc] = (struct wire_piece){ icrc, WIRE_ICRC_LEN };
	u->tap.packet(u->tap.ctx, &h, all, npc + 1);
}

int srt_udp_send(struct srt_udp *u, const struct rnic_tx *tx)
{
	union srt_sockaddr to;
	socklen_t to_len;

	if (tx->payload_vec || !srt_tx_shape_ok(tx) ||
	    !(to_len = srt_udp_sockaddr(u, &tx->dst, WIRE_ROCEV2_UDP_PORT, &to))) {
		u->tx_unroutable++;
		return tx->payload_vec ? EHOSTUNREACH : EINVAL;
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
	if (u->tap.packet)
		tap_sent(u, &tx->dst, sport, 0, (uint8_t)tos, ip.ttl, pc, npc, icrc);
	return 0;
}

/* ---- batched transmit ---------------------------------------------------- */

int srt_udp_out_add(struct srt_udp *u, const struct srt_tx_meta *m, const struct wire_piece *pc, unsigned npc,
		    uint8_t *icrc)
{
	union srt_sockaddr to;
	uint32_t len = WIRE_ICRC_LEN;

	if (npc > 3 || !srt_udp_sockaddr(u, &m->dst, WIRE_ROCEV2_UDP_PORT, &to)) {
		u->tx_unroutable++;
		return EINVAL;
	}
	if (u->nout == SRT_TX_MAX_PKTS)
		srt_udp_out_flush(u);
	struct srt_udp_out *o = &u->out[u->nout++];
	o->dst = m->dst;
	o->fd = srt_udp_sport_socket(u, m->sport, &o->sport);
	o->tos = m->tos;
	o->ttl = m->ttl;
	o->plain_ack = m->plain_ack;
	o->npc = (uint8_t)npc;
	for (unsigned i = 0; i < npc; i++) {
		o->pc[i] = pc[i];
		len += (uint32_t)pc[i].len;
	}
	o->icrc = icrc;
	o->len = len;
	return 0;
}

/* Most bytes one UDP datagram carries (65535 - IPv4 20 - UDP 8), and the
 * most segments one GSO send may have (the kernel's UDP_MAX_SEGMENTS is
 * 64 on older kernels). */
#define SRT_GSO_MAX_BYTES 65507u
#define SRT_GSO_MAX_SEGS 64u

static bool same_flow(const struct srt_udp_out *a, const struct srt_udp_out *b)
{
	return a->fd == b->fd && !memcmp(a->dst.raw, b->dst.raw, 16) && a->tos == b->tos && a->ttl == b->ttl;
}

/* How many packets from position `first` of `order` (up to `end`) form
 * one send: a run to one destination from one socket whose packets are
 * all as long as the first, except that the last may be shorter (the UDP
 * GSO rule).  Each packet is an iovec of its own, so a run need not be
 * contiguous in memory. */
static unsigned gso_run(const struct srt_udp *u, const uint16_t *order, unsigned first, unsigned end)
{
	const struct srt_udp_out *s0 = &u->out[order[first]];
	uint32_t seg = s0->len, total = seg;
	unsigned n = 1;

	if (!u->gso)
		return 1;
	while (first + n < end && n < SRT_GSO_MAX_SEGS) {
		const struct srt_udp_out *s = &u->out[order[first + n]];
		if (!same_flow(s0, s) || s->len > seg || total + s->len > SRT_GSO_MAX_BYTES)
			break;
		if (s->len < seg) {
			/* A shorter packet ends the run, unless it starts a run
			 * of its own (WRITE_FIRST with its RETH is longer than
			 * the MIDDLEs after it: send it alone). */
			const struct srt_udp_out *next = first + n + 1 < end ? &u->out[order[first + n + 1]] : NULL;
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

/* The ICRC of packet o for the IPv4 header the kernel builds from our
 * address, its TOS, TTL and destination, and IPv4 ID ip_id; a payload by
 * reference (a second piece) is read under the guard (region memory may
 * have gone, mem_guard.h): false if it faulted.  By reference, the CRC
 * reads the payload where it lies (libdeflate's CRC continues piece by
 * piece). */
static bool store_icrc(const struct srt_udp *u, const struct srt_udp_out *o, uint16_t ip_id)
{
	struct wire_ip ip;
	uint32_t crc;

	srt_udp_ip_header(u, &o->dst, o->tos, o->ttl, ip_id, &ip);
	if (o->npc < 2) {
		wire_icrc_store(o->icrc, wire_icrc_udp_payload_pieces(&ip, o->sport, o->pc, o->npc));
		return true;
	}
	if (!srt_guard_icrc(&ip, o->sport, o->pc, o->npc, &crc))
		return false;
	wire_icrc_store(o->icrc, crc);
	return true;
}

/* The ICRC of every packet of a run: segment k leaves with IPv4 ID k
 * (the kernel numbers the datagrams it cuts from one GSO send from the ID
 * of the send, which is 0 for a DF datagram on an unconnected socket; see
 * the top of this file).  false: a payload by reference of the run
 * faulted; the run is not sent (its packets are lost, RC retransmission
 * recovers or the rnic then finds the fault). */
static bool fill_icrcs(struct srt_udp *u, const uint16_t *order, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		if (!store_icrc(u, &u->out[order[k]], n > 1 ? (uint16_t)k : 0))
			return false;
	return true;
}

/* Control messages of one send: GSO segment size, TOS, TTL. */
union srt_tx_control {
	char buf[CMSG_SPACE(sizeof(uint16_t)) + CMSG_SPACE(sizeof(int)) * 2];
	struct cmsghdr align;
};

static void build_control(const struct srt_udp *u, struct msghdr *m, union srt_tx_control *c,
			  const struct srt_udp_out *s, unsigned nseg)
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

/* Positions grouped by socket, each group in the order handed over (a
 * stable partition), so each socket's packets leave in one sendmmsg and
 * every flow (one QP: one port, one socket) keeps its order.  Packets of
 * different sockets may overtake each other, as packets of different QPs
 * may on any NIC.  Within a group the plain ACKs go last: an ACK that
 * waited for company (send_path.c, "ACKs ride with sends") then reaches
 * the peer after the request it rode with, so a peer that stops polling
 * at the completion the ACK brings has received the request already.
 * (ACKs answer the other direction; IBTA orders packets per direction.)
 * Returns the number of groups; group g is order[start[g] .. start[g + 1]).
 * O(n * groups), n <= SRT_TX_MAX_PKTS. */
static unsigned group_by_socket(const struct srt_udp *u, uint16_t *order, unsigned *start)
{
	bool taken[SRT_TX_MAX_PKTS] = { false };
	unsigned npos = 0, ngroups = 0;

	for (unsigned i = 0; i < u->nout; i++) {
		if (taken[i])
			continue;
		start[ngroups++] = npos;
		for (int acks = 0; acks < 2; acks++) {
			for (unsigned j = i; j < u->nout; j++) {
				if (!taken[j] && u->out[j].fd == u->out[i].fd && u->out[j].plain_ack == acks) {
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
 * (NULL unless tapped, zeroed by the caller): set for each message
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

/* The tap: the packets of messages msgs[first .. end) that the kernel
 * accepted, from position `pos` of order, each GSO segment as its own
 * frame with the IPv4 ID the kernel gives it (fill_icrcs). */
static void tap_group(struct srt_udp *u, const uint16_t *order, unsigned pos, const unsigned *npkts,
		      unsigned first, unsigned end, const bool *lost_msg)
{
	for (unsigned m = first; m < end; pos += npkts[m], m++) {
		if (lost_msg[m - first])
			continue;
		for (unsigned k = 0; k < npkts[m]; k++) {
			const struct srt_udp_out *s = &u->out[order[pos + k]];
			tap_sent(u, &s->dst, s->sport, npkts[m] > 1 ? (uint16_t)k : 0, s->tos, s->ttl, s->pc, s->npc,
				 s->icrc);
		}
	}
}

/* Append {p, len} to a message's iovecs iov[first .. n), merged into the
 * last one when it continues it: by reference, a packet's pad + ICRC and
 * the next packet's headers lie back to back in the queue, so a run of
 * MIDDLEs is headers, payload, ICRC + headers, payload, ... (2 iovecs a
 * packet instead of 3), and copied packets whose lengths are multiples of
 * 4 merge into one.  Returns the new n. */
static unsigned push_iovec(struct iovec *iov, unsigned n, unsigned first, const void *p, size_t len)
{
	if (n > first && (uint8_t *)iov[n - 1].iov_base + iov[n - 1].iov_len == (const uint8_t *)p) {
		iov[n - 1].iov_len += len;
		return n;
	}
	iov[n] = (struct iovec){ .iov_base = (void *)p, .iov_len = len };
	return n + 1;
}

/* Append the iovecs that send packet o: its pieces, then its ICRC.  A GSO
 * send concatenates the iovecs of its run; the kernel cuts segments at
 * the segment size whatever the iovec boundaries. */
static unsigned push_packet(const struct srt_udp_out *o, struct iovec *iov, unsigned n, unsigned first)
{
	for (unsigned i = 0; i < o->npc; i++)
		n = push_iovec(iov, n, first, o->pc[i].p, o->pc[i].len);
	return push_iovec(iov, n, first, o->icrc, WIRE_ICRC_LEN);
}

unsigned srt_udp_out_flush(struct srt_udp *u)
{
	struct mmsghdr msgs[SRT_TX_MAX_PKTS];
	/* Per packet, in order[] order: its pieces and its ICRC. */
	struct iovec iov[SRT_TX_MAX_PKTS * 4];
	union srt_sockaddr to[SRT_TX_MAX_PKTS];
	union srt_tx_control control[SRT_TX_MAX_PKTS];
	unsigned npkts[SRT_TX_MAX_PKTS];
	uint16_t order[SRT_TX_MAX_PKTS];
	unsigned start[SRT_TX_MAX_PKTS + 1];
	unsigned nmsg = 0, lost = 0, niov = 0;

	if (!u->nout)
		return 0;
	unsigned ngroups = group_by_socket(u, order, start);
	for (unsigned g = 0; g < ngroups; g++) {
		unsigned first_msg = nmsg;

		for (unsigned i = start[g]; i < start[g + 1];) {
			unsigned n = gso_run(u, order, i, start[g + 1]);
			const struct srt_udp_out *s = &u->out[order[i]];
			unsigned first_iov = niov;

			if (!fill_icrcs(u, order + i, n)) {
				u->tx_mr_fault += n;
				i += n;
				continue;
			}
			for (unsigned k = 0; k < n; k++)
				niov = push_packet(&u->out[order[i + k]], iov, niov, first_iov);
			memset(&msgs[nmsg], 0, sizeof(msgs[nmsg]));
			/* Routable: srt_udp_out_add checked the family. */
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
		int fd = u->out[order[start[g]]].fd;
		if (u->tap.packet) {
			bool lost_msg[SRT_TX_MAX_PKTS] = { false };
			lost += send_messages(fd, &msgs[first_msg], &npkts[first_msg], nmsg - first_msg, lost_msg);
			tap_group(u, order, start[g], npkts, first_msg, nmsg, lost_msg);
		} else {
			lost += send_messages(fd, &msgs[first_msg], &npkts[first_msg], nmsg - first_msg, NULL);
		}
	}
	u->tx_packets += u->nout - lost;
	u->tx_sends += nmsg;
	u->tx_errors += lost;
	u->nout = 0;
	return lost;
}

/* ---- the port's own queue (a program without paths) ---------------------- */

static struct srt_tx_queue *own_queue(struct srt_udp *u)
{
	if (!u->txq) {
		u->txq = malloc(sizeof(*u->txq));
		if (u->txq)
			srt_txq_clear(u->txq);
	}
	return u->txq;
}

int srt_udp_queue(struct srt_udp *u, const struct rnic_tx *tx)
{
	struct srt_tx_queue *q = own_queue(u);
	union srt_sockaddr to;
	bool copy_in;

	if (!q || tx->payload_vec)
		return srt_udp_send(u, tx);
	if (!srt_tx_shape_ok(tx) || !srt_udp_sockaddr(u, &tx->dst, WIRE_ROCEV2_UDP_PORT, &to)) {
		u->tx_unroutable++;
		return EINVAL;
	}
	copy_in = tx->payload_len && !u->tx_payload_ref;
	if (!srt_txq_fits(q, tx, copy_in))
		srt_udp_flush(u);
	if (srt_txq_add(q, tx, copy_in)) {
		u->tx_mr_fault++;
		return EFAULT;
	}
	return 0;
}

uint8_t *srt_udp_tx_buffer(struct srt_udp *u)
{
	struct srt_tx_queue *q = own_queue(u);
	uint8_t *room;

	if (!q)
		return NULL;
	if (!(room = srt_txq_room(q))) {
		srt_udp_flush(u);
		room = srt_txq_room(q);
	}
	return room;
}

bool srt_udp_pending(const struct srt_udp *u)
{
	return (u->txq && u->txq->n) || u->nout;
}

unsigned srt_udp_flush(struct srt_udp *u)
{
	struct srt_tx_queue *q = u->txq;

	if (q) {
		for (unsigned i = 0; i < q->n; i++) {
			const struct srt_tx_slot *s = &q->slot[i];
			struct srt_tx_meta m = { .dst = s->dst, .sport = s->sport, .tos = s->tos, .ttl = s->ttl,
						 .plain_ack = s->plain_ack, .alone = s->alone };
			struct wire_piece pc[3];
			uint8_t *icrc;
			unsigned npc = srt_txq_pieces(q, s, pc, &icrc);
			(void)srt_udp_out_add(u, &m, pc, npc, icrc);
		}
	}
	unsigned lost = srt_udp_out_flush(u);
	if (q)
		srt_txq_clear(q);
	return lost;
}
