/*
 * udp_recv.c — the UDP port's receive side (the port itself: udp_port.c).
 * One recvmmsg per batch on the port's socket, with the TOS, TTL and
 * destination address of each datagram (srt_udp_rx_options); a datagram
 * that UDP GRO merged from a GSO run is split back into its packets at
 * the segment size, packet k carrying the IPv4 ID k its ICRC was computed
 * for (udp_send.c).
 */
#include "runtime/udp_port.h"

#include <errno.h>
#include <string.h>
#include <netinet/udp.h>
#include <sys/socket.h>

/* ---- receive --------------------------------------------------------------- */

/* Split datagram `i` of a receive into packets: `seg` bytes each (the GRO
 * segment size; 0 = one packet). */
static int split_datagram(struct srt_rx_batch *b, int np, const struct srt_rx_pkt *proto, uint8_t *data,
			  size_t len, size_t seg)
{
	uint16_t k = 0;

	if (!seg || seg >= len) {
		b->pkt[np] = *proto;
		b->pkt[np].data = data;
		b->pkt[np].len = len;
		b->pkt[np].seg_index = 0;
		return np + 1;
	}
	for (size_t off = 0; off < len; off += seg, k++) {
		if (k == SRT_RX_MAX_SEGS) {
			b->dropped += (uint32_t)((len - off + seg - 1) / seg);
			break;
		}
		b->pkt[np] = *proto;
		b->pkt[np].data = data + off;
		b->pkt[np].len = len - off < seg ? len - off : seg;
		b->pkt[np].seg_index = k;
		np++;
	}
	return np;
}

int srt_udp_recv(struct srt_udp *u, struct srt_rx_batch *b)
{
	struct mmsghdr msgs[SRT_RX_BATCH];
	struct iovec iov[SRT_RX_BATCH];
	union srt_sockaddr from[SRT_RX_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(int)) * 3 + CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} control[SRT_RX_BATCH];
	/* With GRO a datagram may be a 64 KiB run of packets. */
	int nmsg = u->gro ? SRT_RX_GRO_MSGS : SRT_RX_BATCH;
	size_t bufsz = u->gro ? SRT_RX_GRO_MSG_BYTES : SRT_RX_BUFSZ;
	int np = 0;

	_Static_assert(SRT_RX_BATCH * SRT_RX_BUFSZ <= SRT_RX_BUF_BYTES, "receive buffer");
	_Static_assert(SRT_RX_BATCH <= SRT_RX_PKTS, "receive descriptors");
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < nmsg; i++) {
		iov[i].iov_base = b->buf + (size_t)i * bufsz;
		iov[i].iov_len = bufsz;
		msgs[i].msg_hdr.msg_name = &from[i];
		msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_control = control[i].buf;
		msgs[i].msg_hdr.msg_controllen = sizeof(control[i].buf);
	}
	int n = recvmmsg(u->fd, msgs, (unsigned)nmsg, MSG_DONTWAIT, NULL);
	b->drained = n < nmsg;
	if (n < 0)
		return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;

	b->dropped = 0;
	for (int i = 0; i < n; i++) {
		struct srt_rx_pkt p;
		struct msghdr *h = &msgs[i].msg_hdr;
		size_t seg = 0;

		memset(&p, 0, sizeof(p));
		p.truncated = (h->msg_flags & MSG_TRUNC) != 0;
		if (u->v6) {
			memcpy(p.src.raw, &from[i].in6.sin6_addr, 16);
			p.sport = ntohs(from[i].in6.sin6_port);
			p.dst = u->gid;
		} else {
			srt_ipv4_to_gid(from[i].in.sin_addr, &p.src);
			p.sport = ntohs(from[i].in.sin_port);
			/* A multicast socket (mcast.c) has its group as addr. */
			srt_ipv4_to_gid(u->addr, &p.dst);
		}
		for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
			if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
				int gso_size;
				memcpy(&gso_size, CMSG_DATA(c), sizeof(gso_size));
				seg = gso_size > 0 ? (size_t)gso_size : 0;
			}
			if (c->cmsg_level == IPPROTO_IPV6) {
				int v;
				if (c->cmsg_type == IPV6_TCLASS) {
					memcpy(&v, CMSG_DATA(c), sizeof(v));
					p.tos = (uint8_t)v;
				} else if (c->cmsg_type == IPV6_HOPLIMIT) {
					memcpy(&v, CMSG_DATA(c), sizeof(v));
					p.ttl = (uint8_t)v;
				} else if (c->cmsg_type == IPV6_PKTINFO) {
					struct in6_pktinfo pi;
					memcpy(&pi, CMSG_DATA(c), sizeof(pi));
					memcpy(p.dst.raw, &pi.ipi6_addr, 16);
				}
				continue;
			}
			if (c->cmsg_level != IPPROTO_IP)
				continue;
			if (c->cmsg_type == IP_TOS) {
				p.tos = *(const uint8_t *)CMSG_DATA(c);
			} else if (c->cmsg_type == IP_TTL) {
				int ttl;
				memcpy(&ttl, CMSG_DATA(c), sizeof(ttl));
				p.ttl = (uint8_t)ttl;
			} else if (c->cmsg_type == IP_PKTINFO) {
				struct in_pktinfo pi;
				memcpy(&pi, CMSG_DATA(c), sizeof(pi));
				srt_ipv4_to_gid(pi.ipi_addr, &p.dst);
			}
		}
		np = split_datagram(b, np, &p, iov[i].iov_base, msgs[i].msg_len, p.truncated ? 0 : seg);
	}
	return np;
}
