/*
 * path_xdp.c — the AF_XDP path (path.h): RoCEv2 frames through the
 * device's XDP socket (xdp_port.h), for IPv4 neighbours on the
 * interface's subnet whose Ethernet address the kernel knows.  Each
 * packet is built in a UMEM frame: the headers (xdp_frame.h), the
 * pieces copied once, under the guard, straight from where they lie (a
 * payload by reference from its memory region), and the ICRC computed
 * over the frame's real IPv4 header.  Frames leave at flush; what
 * arrives is read in place, in the frames, until recv_done.
 *
 * A packet too large for a frame goes by the UDP port instead
 * (srt_udp_out_add), as does every packet to a destination this path
 * does not route: paths.c then chooses UDP.
 */
#include "runtime/paths.h"

#include <errno.h>
#include <string.h>

#include "runtime/mem_guard.h"
#include "runtime/xdp_frame.h"

static struct srt_path_xdp *self_of(struct srt_path *p)
{
	return (struct srt_path_xdp *)(void *)p;
}

static const struct srt_path_xdp *cself_of(const struct srt_path *p)
{
	return (const struct srt_path_xdp *)(const void *)p;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool gid_ipv4(const struct rnic_gid *g, uint32_t *ip)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(g->raw, mapped, sizeof(mapped)))
		return false;
	memcpy(ip, &g->raw[12], 4);
	return true;
}

/* dest: the neighbour's MAC address in the port's table. */
static void *xdp_route(struct srt_path *p, const struct rnic_gid *dst, const uint8_t *bth, bool fresh)
{
	uint32_t ip;

	(void)bth;
	if (!gid_ipv4(dst, &ip))
		return NULL;
	return (void *)srt_xdp_neighbour(self_of(p)->x, ip, fresh, now_ns);
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
	uint64_t addr;
	uint8_t *f;

	for (unsigned i = 0; i < npc; i++)
		ib_len += pc[i].len;
	if (SRT_XDP_HDR_LEN + ib_len > SRT_XDP_MAX_FRAME) {
		px->to_udp++;
		return srt_udp_out_add(px->u, m, pc, npc, icrc);
	}
	addr = srt_xdp_tx_frame(x);
	if (addr == UINT64_MAX) {
		x->tx_dropped++;        /* as a full socket buffer: the transport resends */
		return 0;
	}
	f = srt_xdp_data(x, addr);
	struct srt_xdp_frame h = { .src = x->addr.s_addr, .sport = m->sport ? m->sport : WIRE_ROCEV2_UDP_PORT,
				   .tos = m->tos, .ttl = m->ttl };
	memcpy(h.dst_mac, dest, 6);
	memcpy(h.src_mac, x->mac, 6);
	(void)gid_ipv4(&m->dst, &h.dst);
	srt_xdp_frame_write(f, &h, (uint32_t)ib_len);
	if (!srt_guard_gather(f + SRT_XDP_HDR_LEN, pc, npc)) {
		x->free_tx[x->nfree_tx++] = addr;
		return EFAULT;
	}
	uint32_t crc = wire_icrc_ip(f + WIRE_ETH_LEN, WIRE_IPV4_LEN + WIRE_UDP_LEN + ib_len - WIRE_ICRC_LEN);
	wire_icrc_store(f + SRT_XDP_HDR_LEN + ib_len - WIRE_ICRC_LEN, crc);
	wire_icrc_store(icrc, crc);
	if (!srt_xdp_tx_queue(x, addr, (uint32_t)(SRT_XDP_HDR_LEN + ib_len))) {
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

static int xdp_recv(struct srt_path *p, struct srt_rx_batch *b)
{
	struct srt_xdp *x = self_of(p)->x;
	uint64_t addr[SRT_RX_BATCH * 4];
	uint32_t len[SRT_RX_BATCH * 4];
	unsigned n = srt_xdp_rx_peek(x, addr, len, SRT_RX_BATCH * 4), k = 0;

	b->dropped = 0;
	b->drained = n < SRT_RX_BATCH * 4;
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *f = srt_xdp_data(x, addr[i]);
		struct srt_xdp_frame h;
		int e = srt_xdp_frame_read(f, len[i], &h);

		if (e) {
			if (e == SRT_XDP_FRAME_NOT_ROCE)
				x->rx_not_roce++;
			else
				x->rx_broken++;
			continue;
		}
		struct srt_rx_pkt *pk = &b->pkt[k++];
		memset(pk, 0, sizeof(*pk));
		pk->len = h.ib_len;
		pk->data = (uint8_t *)f + h.ib_off;
		srt_ipv4_to_gid((struct in_addr){ h.src }, &pk->src);
		srt_ipv4_to_gid((struct in_addr){ h.dst }, &pk->dst);
		pk->sport = h.sport;
		pk->tos = h.tos;
		pk->ttl = h.ttl;
		pk->seg_index = h.ip_id;        /* the ICRC check's ID: the real one */
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
				      .rx_broken = x->rx_broken + x->rx_not_roce };
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
}
