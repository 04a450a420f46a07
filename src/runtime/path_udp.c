/*
 * path_udp.c — the UDP path (path.h): RoCEv2 datagrams through the
 * kernel, by the device's port (udp_port.h).  It carries any destination
 * of the port's family, computes every ICRC (a receiver over UDP always
 * checks), batches what it is handed into GSO runs at flush
 * (udp_send.c) and receives with recvmmsg (udp_recv.c).
 */
#include "runtime/paths.h"

static struct srt_udp *port_of(const struct srt_path *p)
{
	return ((const struct srt_path_udp *)(const void *)p)->u;
}

static void *udp_route(struct srt_path *p, const struct rnic_gid *dst, const uint8_t *bth, bool fresh)
{
	union srt_sockaddr ss;

	(void)bth;
	(void)fresh;
	return srt_udp_sockaddr(port_of(p), dst, WIRE_ROCEV2_UDP_PORT, &ss) ? port_of(p) : NULL;
}

static bool udp_needs_icrc(struct srt_path *p, void *dest)
{
	(void)p;
	(void)dest;
	return true;
}

static int udp_send(struct srt_path *p, void *dest, const struct srt_tx_meta *m, const struct wire_piece *pc,
		    unsigned npc, uint8_t *icrc)
{
	(void)dest;
	return srt_udp_out_add(port_of(p), m, pc, npc, icrc);
}

static unsigned udp_flush(struct srt_path *p)
{
	return srt_udp_out_flush(port_of(p));
}

static int udp_recv(struct srt_path *p, struct srt_rx_batch *b)
{
	return srt_udp_recv(port_of(p), b);
}

static int udp_wake_fd(const struct srt_path *p)
{
	return port_of(p)->fd;
}

static void udp_stats(const struct srt_path *p, struct srt_path_stats *s)
{
	const struct srt_udp *u = port_of(p);

	*s = (struct srt_path_stats){
		.tx_packets = u->tx_packets, .tx_errors = u->tx_errors, .tx_unroutable = u->tx_unroutable,
		.tx_mr_fault = u->tx_mr_fault, .tx_sends = u->tx_sends, .tx_gso_sends = u->tx_gso_sends,
		.sport_fallbacks = u->tx_sport_fallbacks, .sport_sockets = u->sport_sockets,
	};
}

static const struct srt_path_ops udp_ops = {
	.name = "udp",
	.route = udp_route,
	.needs_icrc = udp_needs_icrc,
	.send = udp_send,
	.flush = udp_flush,
	.recv = udp_recv,
	.wake_fd = udp_wake_fd,
	.stats = udp_stats,
};

void srt_path_udp_init(struct srt_path_udp *pu, struct srt_udp *u)
{
	pu->base = (struct srt_path){ .ops = &udp_ops, .flags = SRT_PATH_RECV_SYSCALL };
	if (!u->tx_payload_ref)
		pu->base.flags |= SRT_PATH_WANTS_COPY;
	pu->u = u;
}
