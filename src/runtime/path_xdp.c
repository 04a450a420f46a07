/*
 * path_xdp.c — the AF_XDP path (path.h): RoCEv2 frames through the
 * device's XDP socket (xdp_port.h), for IPv4 neighbours on the
 * interface's subnet whose Ethernet address the kernel knows.  Each
 * packet is built in a UMEM frame: the headers (xdp_frame.h), the
 * pieces copied once, under the guard, straight from where they lie (a
 * payload by reference from its memory region), and the ICRC computed
 * over the frame's real IPv4 header.  Frames leave at flush; what
 * arrives is read in place, in the frames, until recv_done, its ICRC
 * checked here over the real IPv4 header (all 32 bits: the ID is in
 * the frame), so the device does not check it again.
 *
 * A frame whose ICRC does not match may be a GSO run of a kernel UDP
 * sender on this host (softrnic over its UDP sockets: veth hands the
 * run to generic XDP whole, one header before packets of one size, the
 * last maybe shorter; the program passes the runs it can tell, longer
 * than the MTU or of fixed-size opcodes, to the kernel).  So it is cut
 * at the first length whose ICRC matches, as the run's first segment
 * (IDs counting up from the frame's), and each piece checked.  That
 * search costs up to a CRC per multiple of 4 below the frame's length,
 * and is made only for a frame whose ICRC failed.
 *
 * With multi-buffer (xdp_port.h) a frame longer than a chunk is built
 * in the port's bounce buffer and copied into two; one that came in two
 * is read from the bounce buffer it was put together in.
 *
 * A packet too large for a frame goes by the UDP port instead
 * (srt_udp_out_add), as does every packet to a destination this path
 * does not route: paths.c then chooses UDP.
 */
#include "runtime/paths.h"

#include <errno.h>
#include <string.h>

#include "runtime/mem_guard.h"
#include "runtime/runtime.h"
#include "runtime/xdp_frame.h"
#include "wire/wire.h"

/* The most packets one frame may be cut into: with SRT_XDP_RX_BATCH
 * frames read per batch, their product fits the batch (SRT_RX_PKTS). */
#define SRT_XDP_RUN_MAX ((SRT_RX_PKTS - SRT_XDP_RX_BATCH) / SRT_XDP_RX_BATCH)

static struct srt_path_xdp *self_of(struct srt_path *p)
{
	return (struct srt_path_xdp *)(void *)p;
}

static const struct srt_path_xdp *cself_of(const struct srt_path *p)
{
	return (const struct srt_path_xdp *)(const void *)p;
}

/* dest: the neighbour's MAC address in the port's table. */
static void *xdp_route(struct srt_path *p, const struct rnic_gid *dst, const uint8_t *bth, bool fresh)
{
	struct in_addr ip;

	(void)bth;
	if (!srt_gid_to_ipv4(dst, &ip))
		return NULL;
	return (void *)srt_xdp_neighbour(self_of(p)->x, ip.s_addr, fresh, srt_now);
}

static bool xdp_needs_icrc(struct srt_path *p, void *dest)
{
	(void)p;
	(void)dest;
	return true;
}

static int xdp_send(struct srt_path *p, void *dest, const struct srt_tx_meta *m, const struct wire_piece *pc,
		    unsigned npc, uint8_t *icrc)
{
	struct srt_path_xdp *px = self_of(p);
	struct srt_xdp *x = px->x;
	size_t ib_len = WIRE_ICRC_LEN;
	uint64_t addr = UINT64_MAX;
	uint8_t *f;
	bool one_chunk;

	for (unsigned i = 0; i < npc; i++)
		ib_len += pc[i].len;
	if (SRT_XDP_HDR_LEN + ib_len > srt_xdp_max_frame(x)) {
		px->to_udp++;
		return srt_udp_out_add(px->u, m, pc, npc, icrc);
	}
	one_chunk = SRT_XDP_HDR_LEN + ib_len <= SRT_XDP_MAX_FRAME;
	if (one_chunk) {
		addr = srt_xdp_tx_frame(x);
		if (addr == UINT64_MAX) {
			x->tx_dropped++;        /* as a full socket buffer: the transport resends */
			return 0;
		}
		f = srt_xdp_data(x, addr);
	} else {
		f = x->tx_bounce;       /* copied into two chunks when queued */
	}
	struct srt_xdp_frame h = { .src = x->addr.s_addr, .sport = m->sport ? m->sport : WIRE_ROCEV2_UDP_PORT,
				   .tos = m->tos, .ttl = m->ttl };
	memcpy(h.dst_mac, dest, 6);
	memcpy(h.src_mac, x->mac, 6);
	struct in_addr dst4 = { 0 };
	(void)srt_gid_to_ipv4(&m->dst, &dst4);
	h.dst = dst4.s_addr;
	srt_xdp_frame_write(f, &h, (uint32_t)ib_len);
	if (!srt_guard_gather(f + SRT_XDP_HDR_LEN, pc, npc)) {
		if (one_chunk)
			x->free_tx[x->nfree_tx++] = addr;
		return EFAULT;
	}
	uint32_t crc = wire_icrc_ip(f + WIRE_ETH_LEN, WIRE_IPV4_LEN + WIRE_UDP_LEN + ib_len - WIRE_ICRC_LEN);
	wire_icrc_store(f + SRT_XDP_HDR_LEN + ib_len - WIRE_ICRC_LEN, crc);
	wire_icrc_store(icrc, crc);
	if (one_chunk ? !srt_xdp_tx_queue(x, addr, (uint32_t)(SRT_XDP_HDR_LEN + ib_len))
		      : !srt_xdp_tx_queue_long(x, (uint32_t)(SRT_XDP_HDR_LEN + ib_len))) {
		x->tx_dropped++;
		return 0;
	}
	if (p->tap.packet) {
		struct srt_capture_hdr ch = { .sport = h.sport, .ip_id = 0, .tos = h.tos, .ttl = h.ttl };
		struct wire_piece one = { f + SRT_XDP_HDR_LEN, ib_len };

		memcpy(ch.src, px->gid.raw, 16);
		memcpy(ch.dst, m->dst.raw, 16);
		p->tap.packet(p->tap.ctx, &ch, &one, 1);
	}
	return 0;
}

static unsigned xdp_flush(struct srt_path *p)
{
	srt_xdp_tx_kick(self_of(p)->x);
	return 0;
}

/* The ICRC of the RoCEv2 packet at ib (len bytes, ICRC included) as a
 * lone datagram of the frame's addresses and port with IPv4 ID id. */
static bool icrc_ok(const struct srt_xdp_frame *h, const uint8_t *ib, size_t len, uint16_t id)
{
	struct wire_ip ip;

	if (len < WIRE_BTH_LEN + WIRE_ICRC_LEN)
		return false;
	memset(&ip, 0, sizeof(ip));
	ip.version = 4;
	ip.id = id;
	ip.df = true;
	ip.src[10] = ip.src[11] = ip.dst[10] = ip.dst[11] = 0xff;
	memcpy(&ip.src[12], &h->src, 4);
	memcpy(&ip.dst[12], &h->dst, 4);
	return wire_icrc_udp_payload(&ip, h->sport, ib, len - WIRE_ICRC_LEN) == wire_icrc_load(ib + len - WIRE_ICRC_LEN);
}

static struct srt_rx_pkt *add_pkt(struct srt_rx_batch *b, unsigned *k, const struct srt_xdp_frame *h, uint8_t *ib,
				  size_t len, uint16_t id, bool checked)
{
	struct srt_rx_pkt *pk = &b->pkt[(*k)++];

	memset(pk, 0, sizeof(*pk));
	pk->len = len;
	pk->data = ib;
	srt_ipv4_to_gid((struct in_addr){ h->src }, &pk->src);
	srt_ipv4_to_gid((struct in_addr){ h->dst }, &pk->dst);
	pk->sport = h->sport;
	pk->tos = h->tos;
	pk->ttl = h->ttl;
	pk->seg_index = id;             /* the real ID: the device's ICRC check, a capture */
	pk->no_icrc = checked;          /* checked here: not again */
	return pk;
}

/* A frame whose ICRC failed, cut as a GSO run (above); the packets
 * added, or 0: it is not one. */
static unsigned split_run(struct srt_rx_batch *b, unsigned *k, unsigned room, const struct srt_xdp_frame *h,
			  uint8_t *ib)
{
	size_t len = h->ib_len, s;
	unsigned n = 0;

	for (s = WIRE_BTH_LEN + WIRE_ICRC_LEN; s + WIRE_BTH_LEN + WIRE_ICRC_LEN <= len; s += 4)
		if (icrc_ok(h, ib, s, h->ip_id))
			break;
	if (s + WIRE_BTH_LEN + WIRE_ICRC_LEN > len)
		return 0;
	for (size_t off = 0; off < len && n < room; off += s, n++) {
		size_t seg = len - off < s ? len - off : s;
		uint16_t id = (uint16_t)(h->ip_id + n);

		add_pkt(b, k, h, ib + off, seg, id, icrc_ok(h, ib + off, seg, id));
	}
	return n;
}

static int xdp_recv(struct srt_path *p, struct srt_rx_batch *b)
{
	struct srt_xdp *x = self_of(p)->x;
	const uint8_t *data[SRT_XDP_RX_BATCH];
	uint32_t len[SRT_XDP_RX_BATCH];
	unsigned n = srt_xdp_rx_peek(x, data, len, SRT_XDP_RX_BATCH), k = 0;

	b->dropped = 0;
	b->drained = n < SRT_XDP_RX_BATCH;
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *f = data[i];
		struct srt_xdp_frame h;
		int e = srt_xdp_frame_read(f, len[i], &h);

		if (e) {
			if (e == SRT_XDP_FRAME_NOT_ROCE)
				x->rx_not_roce++;
			else
				x->rx_broken++;
			continue;
		}
		uint8_t *ib = (uint8_t *)f + h.ib_off;
		bool ok = h.ib_len >= WIRE_BTH_LEN + WIRE_ICRC_LEN &&
			  wire_icrc_ip(f + WIRE_ETH_LEN, WIRE_IPV4_LEN + WIRE_UDP_LEN + h.ib_len - WIRE_ICRC_LEN) ==
				  wire_icrc_load(ib + h.ib_len - WIRE_ICRC_LEN);
		/* Room for a run of the smallest packets this frame can hold. */
		unsigned room = SRT_RX_PKTS - k;
		if (ok || !split_run(b, &k, room < SRT_XDP_RUN_MAX ? room : SRT_XDP_RUN_MAX, &h, ib))
			add_pkt(b, &k, &h, ib, h.ib_len, h.ip_id, ok);  /* unchecked: the device counts it */
		else
			self_of(p)->runs_split++;
	}
	return (int)k;
}

static void xdp_recv_done(struct srt_path *p)
{
	srt_xdp_rx_release(self_of(p)->x);
}

static bool xdp_pending(const struct srt_path *p)
{
	return srt_xdp_rx_pending(cself_of(p)->x);
}

static int xdp_wake_fd(const struct srt_path *p)
{
	return cself_of(p)->x->fd;
}

static bool xdp_arm(struct srt_path *p, bool sleeping)
{
	return !sleeping || !xdp_pending(p);
}

static void xdp_stats(const struct srt_path *p, struct srt_path_stats *s)
{
	const struct srt_xdp *x = cself_of(p)->x;

	*s = (struct srt_path_stats){ .tx_packets = x->tx_packets, .rx_packets = x->rx_packets,
				      .tx_dropped = x->tx_dropped, .tx_sends = x->tx_kicks,
				      .rx_broken = x->rx_broken + x->rx_not_roce,
				      .tx_chunked = x->tx_multi, .rx_chunked = x->rx_multi,
				      .rx_lost = srt_xdp_rx_lost(x) };
}

static const struct srt_path_ops xdp_ops = {
	.name = "xdp",
	.route = xdp_route,
	.needs_icrc = xdp_needs_icrc,
	.send = xdp_send,
	.flush = xdp_flush,
	.recv = xdp_recv,
	.recv_done = xdp_recv_done,
	.pending = xdp_pending,
	.wake_fd = xdp_wake_fd,
	.arm = xdp_arm,
	.stats = xdp_stats,
};

void srt_path_xdp_init(struct srt_path_xdp *px, struct srt_xdp *x, struct srt_udp *u, const struct rnic_gid *gid)
{
	px->base = (struct srt_path){ .ops = &xdp_ops, .flags = 0 };
	px->x = x;
	px->u = u;
	px->gid = *gid;
	px->to_udp = 0;
	px->runs_split = 0;
}
