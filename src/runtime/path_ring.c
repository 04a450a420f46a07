/*
 * path_ring.c — the host-local packet path (path.h): a packet for a
 * softrnic device on this host goes, as the same RoCEv2 bytes, into that
 * device's ring in shared memory (local_path.h), and our own ring is read
 * as a receive.  The ICRC is computed only for a receiver that checks it
 * (its SOFTRNIC_FAULTS can damage packets); a sleeping receiver gets a
 * doorbell at flush.
 */
#include "runtime/paths.h"

#include <errno.h>
#include <string.h>

#include "runtime/mem_guard.h"

static struct srt_path_local *self_of(const struct srt_path *p)
{
	return (struct srt_path_local *)(void *)p;
}

void *srt_path_local_route(struct srt_path *p, const struct rnic_gid *dst, const uint8_t *bth, bool fresh)
{
	struct in_addr dst4;

	if (!srt_gid_to_ipv4(dst, &dst4))
		return NULL;
	return fresh ? srt_local_route_now(self_of(p)->l, dst4, bth) : srt_local_route(self_of(p)->l, dst4, bth);
}

static bool ring_needs_icrc(struct srt_path *p, void *dest)
{
	(void)p;
	return srt_local_wants_icrc(dest);
}

/* The source port an entry carries: the flow's, or RoCEv2's own when it
 * has none.  (There are no source-port sockets here.) */
uint16_t srt_path_local_sport(const struct srt_tx_meta *m)
{
	return m->sport ? m->sport : WIRE_ROCEV2_UDP_PORT;
}

static int ring_send(struct srt_path *p, void *dest, const struct srt_tx_meta *m, const struct wire_piece *pc,
		     unsigned npc, uint8_t *icrc)
{
	struct srt_path_local *pl = self_of(p);
	struct wire_piece all[4];
	uint16_t sport = srt_path_local_sport(m);
	uint32_t len = WIRE_ICRC_LEN;
	bool with_icrc = srt_local_wants_icrc(dest);

	if (npc > 3)
		return EINVAL;
	for (unsigned i = 0; i < npc; i++) {
		all[i] = pc[i];
		len += (uint32_t)pc[i].len;
	}
	if (with_icrc) {
		/* The ICRC of the IPv4 header a lone datagram would carry
		 * (ID 0); a payload by reference read under the guard. */
		struct wire_ip ip;
		uint32_t crc;

		memset(&ip, 0, sizeof(ip));
		ip.version = 4;
		ip.df = true;
		ip.ttl = m->ttl;
		ip.dscp = m->tos >> 2;
		ip.ecn = m->tos & 3;
		memcpy(ip.src, pl->gid.raw, 16);
		memcpy(ip.dst, m->dst.raw, 16);
		if (!srt_guard_icrc(&ip, sport, pc, npc, &crc))
			return EFAULT;
		wire_icrc_store(icrc, crc);
	}
	all[npc] = (struct wire_piece){ icrc, WIRE_ICRC_LEN };
	if (!srt_local_send(pl->l, dest, sport, m->tos, m->ttl, all, npc + 1, len, with_icrc, m->alone))
		return EFAULT;
	return 0;
}

unsigned srt_path_local_flush(struct srt_path *p)
{
	srt_local_flush(self_of(p)->l);
	return 0;
}

static int ring_recv(struct srt_path *p, struct srt_rx_batch *b)
{
	return srt_local_recv(self_of(p)->l, b);
}

static void ring_recv_done(struct srt_path *p)
{
	srt_local_recv_done(self_of(p)->l);
}

static bool ring_pending(const struct srt_path *p)
{
	return srt_local_pending(self_of(p)->l);
}

static int ring_wake_fd(const struct srt_path *p)
{
	(void)p;
	return -1;      /* doorbells arrive at the UDP port's socket */
}

static bool ring_arm(struct srt_path *p, bool sleeping)
{
	return srt_local_sleep(self_of(p)->l, sleeping);
}

static void ring_stats(const struct srt_path *p, struct srt_path_stats *s)
{
	struct srt_local_stats ls;

	srt_local_get_stats(self_of(p)->l, &ls);
	*s = (struct srt_path_stats){
		.tx_packets = ls.tx_packets, .rx_packets = ls.rx_packets, .tx_dropped = ls.tx_ring_full,
		.doorbells = ls.doorbells_sent, .rx_broken = ls.rx_ring_broken, .tx_inline = ls.tx_inline,
	};
}

static const struct srt_path_ops ring_ops = {
	.name = "ring",
	.route = srt_path_local_route,
	.needs_icrc = ring_needs_icrc,
	.send = ring_send,
	.flush = srt_path_local_flush,
	.recv = ring_recv,
	.recv_done = ring_recv_done,
	.pending = ring_pending,
	.wake_fd = ring_wake_fd,
	.arm = ring_arm,
	.stats = ring_stats,
};

void srt_path_ring_init(struct srt_path_local *pl, struct srt_local *l, const struct rnic_gid *gid)
{
	pl->base = (struct srt_path){ .ops = &ring_ops };
	pl->l = l;
	pl->gid = *gid;
}
