/*
 * rsocket_dgram.c — datagram rsockets (SOCK_DGRAM) on a UD QP, in
 * rdma-core's formats (rsocket_int.h): each socket has a kernel UDP socket
 * (its index, bound where the program binds) and a UD QP on softrnic's
 * device.  A datagram to a peer whose QP is not known yet goes over UDP
 * with a ds_udp_header naming our QP; the receiver learns our QPN from it,
 * answers (over UDP, op CTRL) with its own, and passes the payload to its
 * own QP so it is read like the rest.  From then on datagrams are UD SENDs
 * with a ds_header (the sender's socket address) before the payload,
 * Q_Key RDMA_UDP_QKEY.
 *
 * rdma-core runs a service thread that answers UDP datagrams; softrnic
 * answers them whenever the program calls the socket (send, receive,
 * rpoll, rselect), and rpoll sleeps on the UDP socket too.  A peer's
 * address comes from the ds_udp_header's addr field, where softrnic puts
 * its device's address (on one host each process's device has its own
 * 127.0.0.N, which the UDP source address does not tell).
 *
 * softrnic is IPv4: an AF_INET6 datagram socket (a dual-stack UDP socket,
 * as a program binding "::" makes) talks to IPv4 peers, which it sees as
 * IPv4-mapped addresses; its datagrams carry IPv4 headers.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat/rdmacm/rdmacm_int.h"
#include "compat/rdmacm/rsocket_int.h"

#define DS_RSLOT (DS_GRH + DS_SLOT)     /* a receive slot: GRH, then the datagram */

static bool same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
}

/* A socket address as the IPv4 one it stands for: AF_INET, IPv4-mapped
 * IPv6, or the IPv6 any address.  0 or an errno. */
static int to_v4(const struct sockaddr *sa, socklen_t len, struct sockaddr_in *out)
{
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)sa;
		out->sin_port = in->sin_port;
		out->sin_addr = in->sin_addr;
		return 0;
	}
	if (sa->sa_family != AF_INET6 || len < sizeof(struct sockaddr_in6))
		return EAFNOSUPPORT;
	const struct sockaddr_in6 *in6 = (const void *)sa;
	out->sin_port = in6->sin6_port;
	if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
		memcpy(&out->sin_addr, in6->sin6_addr.s6_addr + 12, 4);
	else if (!IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
		return EAFNOSUPPORT;    /* softrnic is IPv4 (::1 too: it is not 127.0.0.1) */
	return 0;
}

/* An IPv4 address in the socket's family (IPv4-mapped for AF_INET6). */
static socklen_t from_v4(const struct rsock *rs, const struct sockaddr_in *in,
			 struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (rs->domain != AF_INET6) {
		memcpy(out, in, sizeof(*in));
		return sizeof(*in);
	}
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;
	in6->sin6_family = AF_INET6;
	in6->sin6_port = in->sin_port;
	in6->sin6_addr.s6_addr[10] = in6->sin6_addr.s6_addr[11] = 0xff;
	memcpy(in6->sin6_addr.s6_addr + 12, &in->sin_addr, 4);
	return sizeof(*in6);
}

/* A kernel UDP socket by the system call, not libc's socket(): under a
 * preload library (librspreload.so) libc's socket() makes rsockets, and a
 * datagram rsocket would then be made of datagram rsockets. */
static int kernel_udp_socket(int domain, int flags)
{
	return (int)syscall(SYS_socket, domain, SOCK_DGRAM | flags, 0);
}

int ds_socket(struct rsock *rs, int domain)
{
	rs->domain = domain;
	rs->udp_sock = kernel_udp_socket(domain, SOCK_NONBLOCK |
					 (rs->fd_flags & FD_CLOEXEC ? SOCK_CLOEXEC : 0));
	if (rs->udp_sock < 0)
		return -1;
	rs->index = rs->udp_sock;
	return 0;
}

static int post_recv(struct rsock *rs, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(rs->rbuf + (size_t)slot * DS_RSLOT),
		.length = DS_RSLOT,
		.lkey = rs->ud_rmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = RS_WR_RECV | slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	int e = ibv_post_recv(rs->ud_qp, &wr, &bad);
	return e ? rs_err(e) : 0;
}

/* The QP, CQ and buffers, made at the first bind, connect or send. */
static int ds_init_ep(struct rsock *rs)
{
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr at;
	union ibv_gid gid;
	int e;

	if (rs->ud_qp)
		return 0;
	e = rcm_init();
	if (e)
		return rs_err(e);
	/* As rdma-core: one slot of RS_SNDLOWAT bytes per work request. */
	if (rs->rq_size > rs->rbuf_size / DS_SLOT)
		rs->rq_size = (uint16_t)(rs->rbuf_size / DS_SLOT);
	if (rs->sq_size > rs->sbuf_size / DS_SLOT)
		rs->sq_size = (uint16_t)(rs->sbuf_size / DS_SLOT);
	if (rs->rq_size < 2)
		rs->rq_size = 2;
	if (rs->sq_size < 2)
		rs->sq_size = 2;
	rs->rbuf_size = rs->rq_size * DS_SLOT;
	rs->sbuf_size = rs->sq_size * DS_SLOT;

	/* An unbound socket gets its port now: datagrams name it. */
	struct sockaddr_storage me;
	struct sockaddr_in me4;
	socklen_t ml = sizeof(me);
	if (getsockname(rs->udp_sock, (struct sockaddr *)&me, &ml))
		return -1;
	if (to_v4((struct sockaddr *)&me, ml, &me4) || !me4.sin_port) {
		struct sockaddr_storage any;
		struct sockaddr_in any4 = { .sin_family = AF_INET };
		socklen_t al = from_v4(rs, &any4, &any);
		if (rs->domain == AF_INET6)
			memset(&((struct sockaddr_in6 *)&any)->sin6_addr, 0, 16);  /* "::" */
		if (bind(rs->udp_sock, (struct sockaddr *)&any, al))
			return -1;
	}
	if (ibv_query_gid(rcm.verbs, 1, 0, &gid))
		return -1;
	memcpy(&rs->local_ipv4, gid.raw + 12, 4);

	rs->cq_chan = ibv_create_comp_channel(rcm.verbs);
	if (!rs->cq_chan)
		return -1;
	if (fcntl(rs->cq_chan->fd, F_SETFL, fcntl(rs->cq_chan->fd, F_GETFL) | O_NONBLOCK))
		return -1;
	rs->cq = ibv_create_cq(rcm.verbs, rs->sq_size + rs->rq_size, rs, rs->cq_chan, 0);
	if (!rs->cq)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = rs->cq;
	qa.recv_cq = rs->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline;
	rs->ud_qp = ibv_create_qp(rcm.default_pd, &qa);
	if (!rs->ud_qp)
		return -1;
	rs->sq_inline = (uint16_t)qa.cap.max_inline_data;
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.qkey = RDMA_UDP_QKEY;
	if ((e = ibv_modify_qp(rs->ud_qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)))
		return rs_err(e);
	at.qp_state = IBV_QPS_RTR;
	if ((e = ibv_modify_qp(rs->ud_qp, &at, IBV_QP_STATE)))
		return rs_err(e);
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0;
	if ((e = ibv_modify_qp(rs->ud_qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN)))
		return rs_err(e);

	rs->sbuf = calloc(rs->sq_size, DS_SLOT);
	rs->rbuf = calloc(rs->rq_size, DS_RSLOT);
	rs->smsg_free = calloc(rs->sq_size, sizeof(*rs->smsg_free));
	rs->dmsg = calloc((size_t)rs->rq_size + 1, sizeof(*rs->dmsg));
	if (!rs->sbuf || !rs->rbuf || !rs->smsg_free || !rs->dmsg)
		return rs_err(ENOMEM);
	rs->ud_smr = ibv_reg_mr(rcm.default_pd, rs->sbuf, (size_t)rs->sq_size * DS_SLOT,
				IBV_ACCESS_LOCAL_WRITE);
	rs->ud_rmr = ibv_reg_mr(rcm.default_pd, rs->rbuf, (size_t)rs->rq_size * DS_RSLOT,
				IBV_ACCESS_LOCAL_WRITE);
	if (!rs->ud_smr || !rs->ud_rmr)
		return -1;
	for (uint32_t i = 0; i < rs->sq_size; i++)
		rs->smsg_free[rs->n_smsg_free++] = i;
	for (uint32_t i = 0; i < rs->rq_size; i++)
		if (post_recv(rs, i))
			return -1;
	rs->state = RS_READABLE | RS_WRITABLE;
	return 0;
}

void ds_free(struct rsock *rs)
{
	while (rs->dests) {
		struct ds_dest *d = rs->dests;
		rs->dests = d->next;
		if (d->ah)
			ibv_destroy_ah(d->ah);
		free(d);
	}
	if (rs->ud_qp)
		ibv_destroy_qp(rs->ud_qp);
	if (rs->self_ah)
		ibv_destroy_ah(rs->self_ah);
	rs->self_ah = NULL;
	if (rs->ud_smr)
		ibv_dereg_mr(rs->ud_smr);
	if (rs->ud_rmr)
		ibv_dereg_mr(rs->ud_rmr);
	free(rs->smsg_free);
	free(rs->dmsg);
	rs->ud_qp = NULL;
	rs->ud_smr = rs->ud_rmr = NULL;
	rs->smsg_free = NULL;
	rs->dmsg = NULL;
	rs_free_ep(rs);         /* the CQ, its channel, the buffers */
	if (rs->udp_sock >= 0)
		close(rs->udp_sock);
	rs->udp_sock = -1;
}

/* Our socket address as a peer at `to` sees it: the bound address, or
 * for the any or loopback address the one the kernel routes from. */
static void local_hdr(struct rsock *rs, const struct sockaddr_in *to, struct ds_header *h)
{
	struct sockaddr_storage ss;
	struct sockaddr_in me = { .sin_family = AF_INET };
	socklen_t ml = sizeof(ss);

	if (!getsockname(rs->udp_sock, (struct sockaddr *)&ss, &ml))
		(void)to_v4((struct sockaddr *)&ss, ml, &me);
	if (me.sin_addr.s_addr == htonl(INADDR_ANY) || me.sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
		int s = kernel_udp_socket(AF_INET, SOCK_CLOEXEC);
		struct sockaddr_in r;
		socklen_t rl = sizeof(r);
		if (s >= 0 && !connect(s, (const struct sockaddr *)to, sizeof(*to)) &&
		    !getsockname(s, (struct sockaddr *)&r, &rl))
			me.sin_addr = r.sin_addr;
		if (s >= 0)
			close(s);
	}
	h->version = 4;
	h->length = DS_IPV4_HDR_LEN;
	h->port = me.sin_port;
	h->addr = me.sin_addr.s_addr;
}

static struct ds_dest *get_dest(struct rsock *rs, const struct sockaddr_in *to)
{
	for (struct ds_dest *d = rs->dests; d; d = d->next)
		if (same_addr(&d->addr, to))
			return d;
	struct ds_dest *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->addr = *to;
	d->addr.sin_family = AF_INET;
	memset(d->addr.sin_zero, 0, sizeof(d->addr.sin_zero));
	local_hdr(rs, to, &d->hdr);
	d->next = rs->dests;
	rs->dests = d;
	return d;
}

static struct ibv_ah *make_ah(uint32_t ipv4)
{
	struct ibv_ah_attr a;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.grh.dgid.raw[10] = a.grh.dgid.raw[11] = 0xff;
	memcpy(a.grh.dgid.raw + 12, &ipv4, 4);
	a.grh.sgid_index = 0;
	a.grh.hop_limit = 64;
	a.port_num = 1;
	return ibv_create_ah(rcm.default_pd, &a);
}

static void set_peer_qp(struct ds_dest *d, uint32_t qpn, uint32_t ipv4)
{
	if (d->ah && d->qpn == qpn)
		return;
	if (d->ah)
		ibv_destroy_ah(d->ah);
	d->ah = make_ah(ipv4);
	d->qpn = qpn;
}

/* Copies an iovec into dst (len bytes in all). */
static void gather(uint8_t *dst, const struct iovec *iov, int iovcnt)
{
	for (int i = 0; i < iovcnt; i++) {
		memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
}

static int ud_send(struct rsock *rs, struct ibv_ah *ah, uint32_t qpn, const struct ds_header *h,
		   const struct iovec *iov, int iovcnt, size_t len)
{
	uint32_t slot = rs->smsg_free[--rs->n_smsg_free];
	uint8_t *msg = rs->sbuf + (size_t)slot * DS_SLOT;

	memcpy(msg, h, h->length);
	gather(msg + h->length, iov, iovcnt);
	struct ibv_sge sge = {
		.addr = (uintptr_t)msg,
		.length = (uint32_t)(h->length + len),
		.lkey = rs->ud_smr->lkey,
	};
	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = sge.length <= rs->sq_inline ? IBV_SEND_INLINE : 0;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	int e = ibv_post_send(rs->ud_qp, &wr, &bad);
	if (e) {
		rs->smsg_free[rs->n_smsg_free++] = slot;
		return rs_err(e);
	}
	return 0;
}

static ssize_t udp_send(struct rsock *rs, const struct sockaddr_in *to, uint8_t op,
			const struct iovec *iov, int iovcnt)
{
	struct ds_udp_header h = {
		.tag = htobe32(DS_UDP_TAG),
		.version = 4,
		.op = op,
		.length = DS_UDP_IPV4_HDR_LEN,
		.qpn = htobe32(rs->ud_qp->qp_num & 0xFFFFFF),
		.addr = rs->local_ipv4,
	};
	struct iovec v[9];
	struct msghdr m;
	struct sockaddr_storage dst;
	socklen_t dl = from_v4(rs, to, &dst);

	if (iovcnt > 8)
		return rs_err(EMSGSIZE);
	v[0].iov_base = &h;
	v[0].iov_len = sizeof(h);
	for (int i = 0; i < iovcnt; i++)
		v[i + 1] = iov[i];
	memset(&m, 0, sizeof(m));
	m.msg_name = &dst;
	m.msg_namelen = dl;
	m.msg_iov = v;
	m.msg_iovlen = (size_t)iovcnt + 1;
	ssize_t n = sendmsg(rs->udp_sock, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	return n > 0 ? n - (ssize_t)sizeof(h) : n;
}

/* Completions: received datagrams queue for reading, sent slots free. */
static void ds_poll_cq(struct rsock *rs)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (!(wc[i].wr_id & RS_WR_RECV)) {
				rs->smsg_free[rs->n_smsg_free++] = (uint32_t)wc[i].wr_id;
				continue;
			}
			uint32_t slot = (uint32_t)wc[i].wr_id;
			const struct ds_header *h =
				(const void *)(rs->rbuf + (size_t)slot * DS_RSLOT + DS_GRH);
			int next = rs->rmsg_tail + 1 == rs->rq_size + 1 ? 0 : rs->rmsg_tail + 1;
			bool valid = wc[i].status == IBV_WC_SUCCESS &&
				     wc[i].byte_len >= DS_GRH + DS_IPV4_HDR_LEN &&
				     h->version == 4 && h->length == DS_IPV4_HDR_LEN;
			if (!valid || next == rs->rmsg_head) {
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					(void)post_recv(rs, slot);
				continue;
			}
			rs->dmsg[rs->rmsg_tail].slot = slot;
			rs->dmsg[rs->rmsg_tail].length = wc[i].byte_len - DS_GRH;
			rs->rmsg_tail = next;
		}
	}
}

/* Datagrams that came over UDP: learn the sender's QP, answer a DATA one
 * with our QPN, and pass its payload to our own QP. */
static void process_udp(struct rsock *rs)
{
	uint8_t buf[DS_UDP_IPV4_HDR_LEN + DS_SLOT];
	struct sockaddr_storage ss;
	struct sockaddr_in from;

	for (;;) {
		socklen_t fl = sizeof(ss);
		ssize_t n = recvfrom(rs->udp_sock, buf, sizeof(buf), MSG_DONTWAIT,
				     (struct sockaddr *)&ss, &fl);
		if (n < 0)
			return;
		struct ds_udp_header h;
		if (n < DS_UDP_IPV4_HDR_LEN || to_v4((struct sockaddr *)&ss, fl, &from))
			continue;
		memcpy(&h, buf, sizeof(h));
		if (h.tag != htobe32(DS_UDP_TAG) || h.version != 4 || h.length != DS_UDP_IPV4_HDR_LEN)
			continue;
		struct ds_dest *d = get_dest(rs, &from);
		if (!d)
			continue;
		if (h.op == RS_OP_DATA)
			(void)udp_send(rs, &from, RS_OP_CTRL, NULL, 0);
		set_peer_qp(d, be32toh(h.qpn) & 0xFFFFFF, h.addr ? h.addr : from.sin_addr.s_addr);
		if (h.op != RS_OP_DATA || !rs->n_smsg_free)
			continue;       /* no room: dropped, as a full socket buffer drops */
		size_t len = (size_t)n - DS_UDP_IPV4_HDR_LEN;
		if (len > DS_SLOT - DS_IPV4_HDR_LEN)
			continue;
		struct ds_header self = {
			.version = 4,
			.length = DS_IPV4_HDR_LEN,
			.port = from.sin_port,
			.addr = from.sin_addr.s_addr,
		};
		if (!rs->self_ah)
			rs->self_ah = make_ah(rs->local_ipv4);
		if (!rs->self_ah)
			continue;
		struct iovec v = { .iov_base = buf + DS_UDP_IPV4_HDR_LEN, .iov_len = len };
		(void)ud_send(rs, rs->self_ah, rs->ud_qp->qp_num, &self, &v, 1, len);
	}
}

static void ds_progress(struct rsock *rs)
{
	if (!rs->ud_qp)
		return;
	process_udp(rs);
	ds_poll_cq(rs);
}

/* Sleeps (lock dropped) until the UDP socket or the CQ says something. */
static void ds_sleep(struct rsock *rs)
{
	if (!rs->cq_armed) {
		ibv_req_notify_cq(rs->cq, 0);
		rs->cq_armed = true;
		return;         /* the caller looks again first */
	}
	struct pollfd p[2] = {
		{ .fd = rs->udp_sock, .events = POLLIN },
		{ .fd = rs->cq_chan->fd, .events = POLLIN },
	};
	pthread_mutex_unlock(&rs->lock);
	(void)poll(p, 2, 1000);
	pthread_mutex_lock(&rs->lock);
	rs_take_cq_event(rs);
}

int ds_bind(struct rsock *rs, const struct sockaddr *addr, socklen_t len)
{
	if (rs->ud_qp)
		return rs_err(EINVAL);
	if (bind(rs->udp_sock, addr, len))
		return -1;
	return ds_init_ep(rs);
}

int ds_connect(struct rsock *rs, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_in to;
	int e = to_v4(addr, len, &to);

	if (e)
		return rs_err(e);
	if (connect(rs->udp_sock, addr, len))
		return -1;
	if (ds_init_ep(rs))
		return -1;
	rs->conn_dest = get_dest(rs, &to);
	return rs->conn_dest ? 0 : rs_err(ENOMEM);
}

ssize_t ds_sendv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		 const struct sockaddr *to, socklen_t tolen)
{
	bool nonblock = (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
	struct ds_dest *d;
	struct sockaddr_in to4;
	size_t len = 0;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > DS_SLOT - DS_IPV4_HDR_LEN)
		return rs_err(EMSGSIZE);
	if (to) {
		if (tolen < sizeof(struct sockaddr_in))
			return rs_err(EINVAL);
		int e = to_v4(to, tolen, &to4);
		if (e)
			return rs_err(e);
	} else if (!rs->conn_dest) {
		return rs_err(EDESTADDRREQ);
	}
	if (!(rs->state & RS_WRITABLE) && rs->ud_qp)
		return rs_err(EPIPE);
	if (ds_init_ep(rs))
		return -1;
	d = to ? get_dest(rs, &to4) : rs->conn_dest;
	if (!d)
		return rs_err(ENOMEM);
	for (;;) {
		ds_progress(rs);
		if (!d->ah) {
			ssize_t n = udp_send(rs, &d->addr, RS_OP_DATA, iov, iovcnt);
			if (n >= 0 || errno != EAGAIN || nonblock)
				return n;
		} else if (rs->n_smsg_free) {
			return ud_send(rs, d->ah, d->qpn, &d->hdr, iov, iovcnt, len) ? -1 : (ssize_t)len;
		} else if (nonblock) {
			return rs_err(EAGAIN);
		}
		ds_sleep(rs);
	}
}

ssize_t ds_recvv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		 struct sockaddr *from, socklen_t *fromlen)
{
	bool nonblock = (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);

	if (!rs->ud_qp || !(rs->state & RS_READABLE))
		return rs_err(EINVAL);   /* as rdma-core: not bound, nothing to receive on */
	for (;;) {
		ds_progress(rs);
		if (rs->rmsg_head != rs->rmsg_tail)
			break;
		if (nonblock)
			return rs_err(EAGAIN);
		ds_sleep(rs);
	}
	struct ds_rmsg *m = &rs->dmsg[rs->rmsg_head];
	const uint8_t *dg = rs->rbuf + (size_t)m->slot * DS_RSLOT + DS_GRH;
	const struct ds_header *h = (const void *)dg;
	size_t len = m->length - h->length, done = 0;
	for (int i = 0; i < iovcnt && done < len; i++) {
		size_t n = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;
		memcpy(iov[i].iov_base, dg + h->length + done, n);
		done += n;
	}
	if (from && fromlen) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = h->port };
		struct sockaddr_storage out;
		sa.sin_addr.s_addr = h->addr;
		socklen_t ol = from_v4(rs, &sa, &out);
		memcpy(from, &out, *fromlen < ol ? *fromlen : ol);
		*fromlen = ol;
	}
	if (!(flags & MSG_PEEK)) {
		(void)post_recv(rs, m->slot);
		if (++rs->rmsg_head == rs->rq_size + 1)
			rs->rmsg_head = 0;
	}
	return (ssize_t)done;
}

short ds_revents(struct rsock *rs, short events)
{
	short r = 0;

	if (!rs->ud_qp)
		return (short)(events & POLLOUT);
	ds_progress(rs);
	if ((events & POLLIN) && rs->rmsg_head != rs->rmsg_tail)
		r |= POLLIN;
	if ((events & POLLOUT) && rs->n_smsg_free)
		r |= POLLOUT;
	return r;
}
