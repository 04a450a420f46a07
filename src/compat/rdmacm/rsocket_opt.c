/*
 * rsocket_opt.c — what a program asks of an rsocket beside its data: its
 * names (rgetpeername, rgetsockname), options (rsetsockopt,
 * rgetsockopt: SOL_SOCKET, IP_TOS, the TCP options a program sets,
 * rsockets' own SOL_RDMA sizes, which count only before the socket has
 * buffers), and file flags (rfcntl).  A datagram socket's options also go
 * to its UDP socket, as in rdma-core.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/rsocket.h>

#include "compat/rdmacm/rsocket_int.h"

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *rs = rs_lock(socket);

	if (!rs)
		return -1;
	if (!addr || !addrlen)
		return rs_unlock_ret(rs, rs_err(EFAULT));
	if (rs->type == SOCK_DGRAM)
		return rs_unlock_ret(rs, getpeername(rs->udp_sock, addr, addrlen));
	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		return rs_unlock_ret(rs, rs_err(ENOTCONN));
	rs_copy_addr(addr, addrlen, rdma_get_peer_addr(rs->cm));
	return rs_unlock_ret(rs, 0);
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *rs = rs_lock(socket);

	if (!rs)
		return -1;
	if (!addr || !addrlen)
		return rs_unlock_ret(rs, rs_err(EFAULT));
	if (rs->type == SOCK_DGRAM)
		return rs_unlock_ret(rs, getsockname(rs->udp_sock, addr, addrlen));
	struct sockaddr *local = rdma_get_local_addr(rs->cm);
	if (local->sa_family == AF_UNSPEC) {
		struct sockaddr_in any = { .sin_family = AF_INET };
		rs_copy_addr(addr, addrlen, (struct sockaddr *)&any);
	} else {
		rs_copy_addr(addr, addrlen, local);
	}
	return rs_unlock_ret(rs, 0);
}

static int int_opt(const void *optval, socklen_t optlen, int *out)
{
	if (!optval)
		return EFAULT;
	if (optlen < sizeof(int))
		return EINVAL;
	memcpy(out, optval, sizeof(int));
	return 0;
}

int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	struct rsock *rs = rs_lock(socket);
	int v = 0, e;

	if (!rs)
		return -1;
	bool no_buffers = !rs->sbuf;
	/* A datagram socket's options also go to its UDP socket (rdma-core). */
	if (rs->type == SOCK_DGRAM && level != SOL_RDMA &&
	    setsockopt(rs->udp_sock, level, optname, optval, optlen))
		return rs_unlock_ret(rs, -1);
	if (rs->type == SOCK_DGRAM && level != SOL_SOCKET && level != SOL_RDMA)
		return rs_unlock_ret(rs, 0);
	if (level == SOL_SOCKET && optname == SO_LINGER) {
		if (!optval)
			return rs_unlock_ret(rs, rs_err(EFAULT));
		if (optlen < sizeof(struct linger))
			return rs_unlock_ret(rs, rs_err(EINVAL));
		struct linger lg;
		memcpy(&lg, optval, sizeof(lg));
		/* Kept inverted, as rdma-core: off (0) is the default "on". */
		if (lg.l_onoff)
			rs->so_opts &= ~(UINT64_C(1) << SO_LINGER);
		else
			rs->so_opts |= UINT64_C(1) << SO_LINGER;
		return rs_unlock_ret(rs, 0);
	}
	if (level == SOL_RDMA && optname == RDMA_ROUTE)
		return rs_unlock_ret(rs, 0);    /* routes are local on RoCE */
	e = int_opt(optval, optlen, &v);
	if (e)
		return rs_unlock_ret(rs, rs_err(e));
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			rs->keepalive_due = 0;  /* timed afresh from now */
			if (v)
				rs->so_opts |= UINT64_C(1) << optname;
			else
				rs->so_opts &= ~(UINT64_C(1) << optname);
			return rs_unlock_ret(rs, 0);
		case SO_RCVBUF:
			if (no_buffers && v > 0)
				rs->rbuf_size = (uint32_t)v << 1;
			return rs_unlock_ret(rs, 0);
		case SO_SNDBUF:
			if (no_buffers && v > 0)
				rs->sbuf_size = (uint32_t)v << 1;
			if (rs->sbuf_size < RS_SNDLOWAT)
				rs->sbuf_size = RS_SNDLOWAT << 1;
			return rs_unlock_ret(rs, 0);
		}
		break;
	case IPPROTO_IP:
		if (optname == IP_TOS) {
			uint8_t tos = (uint8_t)v;
			rs->ip_tos = v;
			return rs_unlock_ret(rs, rdma_set_option(rs->cm, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
								 &tos, sizeof(tos)));
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			if (v)
				rs->tcp_opts |= UINT64_C(1) << optname;
			else
				rs->tcp_opts &= ~(UINT64_C(1) << optname);
			return rs_unlock_ret(rs, 0);
		case TCP_KEEPIDLE:
			if (v <= 0)
				return rs_unlock_ret(rs, rs_err(EINVAL));
			rs->keepalive_time = (unsigned)v;
			rs->keepalive_due = 0;
			return rs_unlock_ret(rs, 0);
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
		case TCP_MAXSEG:
			return rs_unlock_ret(rs, 0);    /* nothing to do on a reliable connection */
		}
		break;
	case SOL_RDMA:
		if (!no_buffers)
			return rs_unlock_ret(rs, rs_err(EINVAL));
		switch (optname) {
		case RDMA_SQSIZE:
			rs->sq_size = (uint16_t)(v < RS_QP_MAX_SIZE ? v : RS_QP_MAX_SIZE);
			return rs_unlock_ret(rs, 0);
		case RDMA_RQSIZE:
			rs->rq_size = (uint16_t)(v < RS_QP_MAX_SIZE ? v : RS_QP_MAX_SIZE);
			return rs_unlock_ret(rs, 0);
		case RDMA_INLINE:
			rs->sq_inline = (uint16_t)(v < 0 ? 0 : v > 0xFFFF ? 0xFFFF : v);
			return rs_unlock_ret(rs, 0);
		case RDMA_IOMAPSIZE:
			/* Rounded to what rs_conn_data's 8-bit scale carries. */
			if (v < 0 || v > 0xFFFF)
				return rs_unlock_ret(rs, rs_err(EINVAL));
			rs->target_iomap_size = (uint16_t)rs_scale_to_value(rs_value_to_scale(v, 8), 8);
			return rs_unlock_ret(rs, 0);
		}
		break;
	}
	if (rs->type == SOCK_DGRAM)
		return rs_unlock_ret(rs, 0);    /* the UDP socket took it */
	return rs_unlock_ret(rs, rs_err(ENOTSUP));
}

static int put_int(void *optval, socklen_t *optlen, int v)
{
	if (!optval || !optlen)
		return rs_err(EFAULT);
	socklen_t n = *optlen < sizeof(int) ? *optlen : sizeof(int);
	memcpy(optval, &v, n);
	*optlen = n;
	return 0;
}

int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct rsock *rs = rs_lock(socket);
	int ret = -1;

	if (!rs)
		return -1;
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			ret = put_int(optval, optlen, !!(rs->so_opts & (UINT64_C(1) << optname)));
			break;
		case SO_RCVBUF:
			ret = put_int(optval, optlen, (int)rs->rbuf_size);
			break;
		case SO_SNDBUF:
			ret = put_int(optval, optlen, (int)rs->sbuf_size);
			break;
		case SO_ERROR:
			ret = put_int(optval, optlen, rs->err);
			if (!ret)
				rs->err = 0;
			break;
		case SO_TYPE:
			ret = put_int(optval, optlen, rs->type);
			break;
		case SO_LINGER:
			if (!optval || !optlen) {
				ret = rs_err(EFAULT);
			} else if (*optlen < sizeof(struct linger)) {
				ret = rs_err(EINVAL);
			} else {
				struct linger lg = {
					.l_onoff = !(rs->so_opts & (UINT64_C(1) << SO_LINGER)),
					.l_linger = 0,
				};
				memcpy(optval, &lg, sizeof(lg));
				*optlen = sizeof(lg);
				ret = 0;
			}
			break;
		default:
			ret = rs_err(ENOTSUP);
		}
		break;
	case IPPROTO_IP:
		ret = optname == IP_TOS ? put_int(optval, optlen, rs->ip_tos) : rs_err(ENOTSUP);
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			ret = put_int(optval, optlen, !!(rs->tcp_opts & (UINT64_C(1) << optname)));
			break;
		case TCP_KEEPIDLE:
			ret = put_int(optval, optlen, (int)rs->keepalive_time);
			break;
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			ret = put_int(optval, optlen, 1);
			break;
		case TCP_MAXSEG: {
			int mtu = 2048;
			if (rs->cm && rs->cm->route.num_paths && rs->cm->route.path_rec)
				mtu = 1 << (7 + rs->cm->route.path_rec->mtu);
			ret = put_int(optval, optlen, mtu);
			break;
		}
		case TCP_INFO:
			if (!optval || !optlen) {
				ret = rs_err(EFAULT);
			} else {
				struct tcp_info info;
				memset(&info, 0, sizeof(info));
				info.tcpi_state = (rs->state & RS_CONNECTED) ? 1 /* TCP_ESTABLISHED */
									     : 7 /* TCP_CLOSE */;
				info.tcpi_snd_cwnd = rs->sq_size;
				socklen_t n = *optlen < sizeof(info) ? *optlen : sizeof(info);
				memcpy(optval, &info, n);
				*optlen = n;
				ret = 0;
			}
			break;
		default:
			ret = rs_err(ENOTSUP);
		}
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			ret = put_int(optval, optlen, rs->sq_size);
			break;
		case RDMA_RQSIZE:
			ret = put_int(optval, optlen, rs->rq_size);
			break;
		case RDMA_INLINE:
			ret = put_int(optval, optlen, rs->sq_inline);
			break;
		case RDMA_IOMAPSIZE:
			ret = put_int(optval, optlen, rs->target_iomap_size);
			break;
		default:
			ret = rs_err(ENOTSUP);
		}
		break;
	default:
		ret = rs_err(ENOTSUP);
	}
	return rs_unlock_ret(rs, ret);
}

int rfcntl(int socket, int cmd, ... /* arg */)
{
	struct rsock *rs = rs_lock(socket);
	va_list ap;
	int ret = 0;

	if (!rs)
		return -1;
	va_start(ap, cmd);
	switch (cmd) {
	case F_GETFL:
		ret = rs->fs_flags | O_RDWR;
		break;
	case F_SETFL:
		rs->fs_flags = va_arg(ap, int) & ~O_ACCMODE;
		break;
	case F_GETFD:
		ret = rs->fd_flags;
		break;
	case F_SETFD:
		rs->fd_flags = va_arg(ap, int);
		(void)fcntl(rs->index, F_SETFD, rs->fd_flags);
		break;
	default:
		ret = rs_err(ENOTSUP);
	}
	va_end(ap);
	return rs_unlock_ret(rs, ret);
}
