/*
 * receive_path.c — what arrives (device_int.h has the runtime's parts).
 * Whoever drives the rnic (progress.c: a polling application thread or
 * the progress thread) calls srt_receive_packets with the device lock
 * held: in rounds, each of the device's paths (paths.h) in order, each
 * batch checked packet by packet — length, ICRC (icrc_recv.h),
 * SOFTRNIC_PCAP's copy — before the rnic sees it, or handed to
 * SOFTRNIC_FAULTS, which delivers it later or never.
 */
#include <string.h>

#include "runtime/capture.h"
#include "runtime/device_int.h"
#include "runtime/local_ring.h"
#include "runtime/icrc_recv.h"
#include "runtime/local_path.h"

/* Put-off reads handed to srt_local_pull_many at a time (the rnic puts
 * off at most 16: RNIC_PULL_BATCH). */
#define SRT_PULLS_AT_ONCE 16u

/* Batches read per wake-up before timers get another look. */
#define SRT_RX_BATCHES_PER_WAKE 8

/* SOFTRNIC_PCAP: a packet as it was received (capture.h), with the IPv4
 * ID it carried. */
static void capture_received(struct srt_device *dev, const struct srt_rx_pkt *p, uint16_t ip_id)
{
	struct srt_capture_hdr h = { .sport = p->sport, .ip_id = ip_id, .tos = p->tos, .ttl = p->ttl };
	struct wire_piece pc = { p->data, p->len };

	memcpy(h.src, p->src.raw, 16);
	memcpy(h.dst, p->dst.raw, 16);
	srt_capture_packet(dev->capture, &h, &pc, 1);
}

/* Check one datagram before the rnic sees it.  Returns true if it may be
 * delivered, and fills rx. */
static bool accept_datagram(struct srt_device *dev, const struct srt_rx_pkt *p, struct rnic_rx *rx)
{
	if (p->truncated || p->len < WIRE_BTH_LEN + WIRE_ICRC_LEN) {
		/* A truncated datagram's bytes are not all here: not captured. */
		if (dev->capture && !p->truncated)
			capture_received(dev, p, p->seg_index);
		dev->rx_drop_malformed++;
		return false;
	}

	struct wire_ip ip;
	uint16_t id = 0;
	memset(&ip, 0, sizeof(ip));
	ip.version = dev->v6 ? 6 : 4;
	rx->src = p->src;
	/* The destination the packet carried: our address, or a multicast
	 * group (IP_PKTINFO); the ICRC covers it. */
	rx->dst = p->dst;
	memcpy(ip.src, rx->src.raw, 16);
	memcpy(ip.dst, rx->dst.raw, 16);

	/* Segment k of a GSO run was sent with IPv4 ID k (udp_send.c).  A
	 * local ring's packet may come without one (local_path.h): only when
	 * no SOFTRNIC_FAULTS of ours could have damaged it.  IPv6 has no ID
	 * and the ICRC masks what else the kernel chose (udp_port.c): one
	 * exact check. */
	int verdict;
	if (p->no_icrc && !dev->faults)
		verdict = SRT_ICRC_OK;
	else if (dev->v6)
		verdict = wire_icrc_udp_payload(&ip, p->sport, p->data, p->len - WIRE_ICRC_LEN) ==
					  wire_icrc_load(p->data + p->len - WIRE_ICRC_LEN)
				  ? SRT_ICRC_OK
				  : SRT_ICRC_BAD;
	else
		verdict = srt_icrc_verify_ipv4_hint(&ip, p->sport, p->data, p->len, p->seg_index, &id);
	/* The IPv4 ID the ICRC check found is the one the packet carried
	 * (with a bad ICRC: the one a GSO sender gave it, our best guess). */
	if (dev->capture)
		capture_received(dev, p, verdict == SRT_ICRC_BAD ? p->seg_index : id);
	if (verdict == SRT_ICRC_BAD) {
		dev->rx_drop_bad_icrc++;
		return false;
	}
	if (verdict == SRT_ICRC_OK_ID)
		dev->rx_icrc_id_recovered++;

	rx->sport = p->sport;
	rx->ecn = p->tos & 3;
	rx->dscp = p->tos >> 2;
	rx->ttl = p->ttl;
	rx->ip_id = id;                 /* as the ICRC check recovered it */
	rx->flow_label = 0;
	rx->ib = p->data;
	rx->ib_len = p->len;
	rx->alone = p->alone;
	return true;
}

/* A message-path packet's payload, read from its sender when the rnic
 * has decided where it goes (local_path.h): at once, or with the others
 * the rnic put off, at the end of the batch (srt_pull_batch). */
static int read_remote(const struct rnic_rx_remote *rem, const struct iovec *dst, unsigned n)
{
	const struct srt_remote_payload *rp = (const struct srt_remote_payload *)(const void *)rem;

	if (rp->inline_data)
		return srt_local_pull_inline(rp->inline_data, rp->inline_len, dst, n);
	return srt_local_pull(rp->desc, rp->nseg, dst, n);
}

void srt_pull_batch(void *ctx, struct rnic_pull *pulls, unsigned n)
{
	struct srt_local_pull lp[SRT_PULLS_AT_ONCE];

	struct rnic_pull *described[SRT_PULLS_AT_ONCE];

	(void)ctx;
	while (n) {
		unsigned m = n < SRT_PULLS_AT_ONCE ? n : SRT_PULLS_AT_ONCE, nd = 0;

		/* Payloads in the ring are copied here; the others are read
		 * from their senders together. */
		for (unsigned i = 0; i < m; i++) {
			const struct srt_remote_payload *rp = (const struct srt_remote_payload *)(const void *)pulls[i].rem;

			if (rp->inline_data) {
				pulls[i].ok = !srt_local_pull_inline(rp->inline_data, rp->inline_len, &pulls[i].dst, 1);
				continue;
			}
			described[nd] = &pulls[i];
			lp[nd++] = (struct srt_local_pull){ .desc = rp->desc, .nseg = rp->nseg, .dst = pulls[i].dst };
		}
		srt_local_pull_many(lp, nd);
		for (unsigned i = 0; i < nd; i++)
			described[i]->ok = lp[i].ok;
		pulls += m;
		n -= m;
	}
}

/* One received packet (or one SOFTRNIC_FAULTS let through, later
 * perhaps: srt_faults_deliver_fn) to the ICRC check and the rnic. */
void srt_deliver_packet(void *ctx, const struct srt_rx_pkt *p, uint64_t now)
{
	struct srt_device *dev = ctx;
	struct rnic_rx rx;

	if (!accept_datagram(dev, p, &rx))
		return;
	rx.remote = NULL;
	if (p->remote) {
		/* Its reader lives as long as the batch it came in: the
		 * rnic may read it at the batch's end (rnic_receive_end). */
		uintptr_t first = (uintptr_t)dev->batch.pkt, at = (uintptr_t)p;
		if (at < first || at >= first + sizeof(dev->batch.pkt)) {
			dev->rx_drop_malformed++;       /* only a ring's batch has these */
			return;
		}
		at = (at - first) / sizeof(*p);
		struct srt_remote_payload *rp = &dev->remote[at];
		rp->base.len = p->remote_inline ? p->remote_inline_len : p->remote->total;
		rp->base.read = read_remote;
		rp->desc = p->remote;
		rp->nseg = p->remote_nseg;
		rp->inline_data = p->remote_inline;
		rp->inline_len = p->remote_inline_len;
		rx.remote = &rp->base;
	}
	rnic_receive(dev->rnic, &rx, now);
}

/* A ring's fast message or its answer (local_path.h, "the fast path"),
 * read once from the ring (the sender may still write it). */
static void deliver_fast(struct srt_device *dev, const struct srt_rx_pkt *p, uint64_t now)
{
	struct srt_local *l = dev->paths.local;
	struct in_addr src4;
	struct ring_fast f;

	if (!l || !srt_gid_to_ipv4(&p->src, &src4)) {
		dev->rx_drop_malformed++;
		return;
	}
	if (p->ring_kind == SRT_RX_ANSWER) {
		struct ring_answer a;

		if (p->len != sizeof(a)) {
			dev->rx_drop_malformed++;
			return;
		}
		memcpy(&a, p->data, sizeof(a));
		rnic_fast_answer(dev->rnic, a.qpn, a.src_qpn, &p->src, a.seq, (enum rnic_fast_verdict)a.verdict, now);
		return;
	}
	if (p->len < sizeof(f)) {
		dev->rx_drop_malformed++;
		return;
	}
	memcpy(&f, p->data, sizeof(f));
	if (f.len != p->len - sizeof(f)) {
		dev->rx_drop_malformed++;
		return;
	}
	/* Executed only where an answer can go: the sender's ring. */
	if (!srt_local_route_qpn(l, src4, f.sqpn)) {
		dev->paths.answers_lost++;
		return;
	}
	struct rnic_fast_msg m = { .dqpn = f.dqpn, .sqpn = f.sqpn, .seq = f.seq, .opcode = f.opcode, .se = f.se,
				   .imm = f.imm, .rkey = f.rkey, .va = f.va, .len = f.len };
	enum rnic_fast_verdict v = rnic_fast_receive(dev->rnic, &m, p->data + sizeof(f), &p->src, now);
	if (v)
		srt_paths_answer(&dev->paths, src4, f.sqpn, f.dqpn, f.seq, v);
	/* A rejection does not wait to ride: its sender waits for it to
	 * send the message as packets. */
	if (v && v != RNIC_FAST_DONE)
		dev->paths.flush_at_unlock = true;
}

/* Read and deliver what is waiting on socket `u` (the device's own, or
 * a multicast group's), device lock held.  Trade-off: the ICRC check runs
 * under the lock too, so the batch buffer needs no lock of its own and
 * any thread may receive; it serialises multi-threaded programs a little
 * more.  Returns the number of packets read. */
static int deliver_batch(struct srt_device *dev, int n, uint64_t now)
{
	for (int i = 0; i < n; i++) {
		const struct srt_rx_pkt *p = &dev->batch.pkt[i];

		/* Not packets: a fast message or answer, which only a peer
		 * that found no SOFTRNIC_FAULTS here sends (the message
		 * path's rule, below). */
		if (p->ring_kind) {
			if (dev->faults)
				dev->rx_drop_malformed++;
			else
				deliver_fast(dev, p, now);
			continue;
		}
		/* A local peer's wake-up (local_path.h) has done its work by
		 * waking us: not a packet, not for SOFTRNIC_FAULTS to touch. */
		if (!p->truncated && srt_local_is_doorbell(p->data, p->len))
			continue;
		/* A message-path packet's payload is not here to damage or
		 * delay: a peer sends none to a device with faults (its ring
		 * says so), and one that does is not heard. */
		if (p->remote && dev->faults) {
			dev->rx_drop_malformed++;
			continue;
		}
		if (dev->faults)        /* which calls srt_deliver_packet, or not */
			srt_faults_receive(dev->faults, &dev->batch.pkt[i], now);
		else
			srt_deliver_packet(dev, &dev->batch.pkt[i], now);
	}
	/* The payload reads the rnic put off, before the ring's entries go
	 * back to their senders. */
	rnic_receive_end(dev->rnic);
	return n;
}

/* Each round: every path that receives, in the set's order (the cheap
 * ones, without system calls, first).
 *
 * A busy-polling application thread talking to a local peer would pay a
 * recvmmsg on every poll for a socket that carries nothing but the odd
 * MAD or remote packet; while a cheap path has carried packets in the
 * last SRT_PATH_ACTIVE_NS, such a thread (may_skip) reads the paths whose
 * receive is a system call only every SRT_PATH_SYSCALL_EVERY_NS, so the
 * local fast path makes no system call.  So does the progress thread when
 * the ring, not the socket, woke it.  Trade-off: a remote peer's packet
 * then waits up to that long for a polling reader (the progress thread,
 * woken by epoll, does not wait). */
int srt_receive_packets(struct srt_device *dev, bool may_skip, uint64_t now)
{
	struct srt_paths *ps = &dev->paths;
	int total = 0;

	for (int round = 0; round < SRT_RX_BATCHES_PER_WAKE; round++) {
		int got = 0, n;
		bool more = false;

		/* The caller's clock for the first round (a busy poller reads
		 * it once per poll), a fresh one after a round that did work. */
		if (round)
			now = srt_now();
		for (unsigned i = 0; i < ps->n; i++) {
			struct srt_path *p = ps->list[i];

			if (!p->ops->recv)
				continue;
			if (!(p->flags & SRT_PATH_RECV_SYSCALL)) {
				n = p->ops->recv(p, &dev->batch);
				if (n > 0) {
					ps->last_cheap_rx_ns = now;
					got += deliver_batch(dev, n, now);
					more = true;
				}
				if (p->ops->recv_done)
					p->ops->recv_done(p);   /* delivered: the entries go back */
				continue;
			}
			if (srt_paths_skip_syscall(ps, may_skip, now))
				continue;
			ps->last_syscall_read_ns = now;
			n = p->ops->recv(p, &dev->batch);
			got += n > 0 ? deliver_batch(dev, n, now) : 0;
			more |= n > 0 && !dev->batch.drained;
		}
		total += got;
		/* A socket read that came back short found the queue empty:
		 * another round now would be an empty system call on the
		 * path of every reply (a ping-pong's receiver pays it before
		 * it sees its completion; ~1 us here).  What arrives
		 * meanwhile waits for the caller's next poll. */
		if (!more)
			break;
	}
	return total;
}

int srt_receive_group(struct srt_device *dev, struct srt_udp *group, uint64_t now)
{
	int total = 0;

	for (int round = 0; round < SRT_RX_BATCHES_PER_WAKE; round++) {
		if (round)
			now = srt_now();
		int n = srt_udp_recv(group, &dev->batch);
		if (n <= 0)
			break;
		total += deliver_batch(dev, n, now);
		if (dev->batch.drained)
			break;
	}
	return total;
}
