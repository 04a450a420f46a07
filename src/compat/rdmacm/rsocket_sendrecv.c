/*
 * rsocket_sendrecv.c — the send and receive calls of rsockets (rsend,
 * rwrite, rwritev, rsendto, rsendmsg, rrecv, rread, rreadv, rrecvfrom,
 * rrecvmsg): every one comes down to one iovec call that checks its
 * arguments as a socket does, hands a datagram socket to rsocket_dgram.c,
 * lets a connecting stream socket finish connecting (rs_do_connect,
 * rsocket.c), and moves the bytes with rs_sendv / rs_recvv
 * (rsocket_data.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/socket.h>

#include <rdma/rsocket.h>

#include "compat/rdmacm/rsocket_int.h"

/* A connecting socket goes on connecting first (EAGAIN while it does). */
static int ready_for_data(struct rsock *rs, int flags)
{
	bool nonblock = (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);

	if (rs->state & RS_OPENING) {
		if (rs_do_connect(rs, nonblock)) {
			if (errno == EINPROGRESS)
				errno = EAGAIN;
			return -1;
		}
	}
	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		return rs_err(ENOTCONN);
	return 0;
}

/* A socket's EFAULT for a buffer that is not there. */
static bool iov_bad(const struct iovec *iov, int iovcnt)
{
	for (int i = 0; i < iovcnt; i++)
		if (iov[i].iov_len && !iov[i].iov_base)
			return true;
	return false;
}

static ssize_t sendv_to(int socket, const struct iovec *iov, int iovcnt, int flags,
			const struct sockaddr *to, socklen_t tolen)
{
	struct rsock *rs = rs_lock(socket);

	if (!rs)
		return -1;
	if (iovcnt < 0 || iovcnt > IOV_MAX)
		return rs_unlock_ret(rs, rs_err(EINVAL));
	if ((iovcnt && !iov) || iov_bad(iov, iovcnt))
		return rs_unlock_ret(rs, rs_err(EFAULT));
	if (rs->type == SOCK_DGRAM) {
		ssize_t n = ds_sendv(rs, iov, iovcnt, flags, to, tolen);
		return rs_unlock_ret(rs, (int)n);
	}
	if (to || tolen)
		return rs_unlock_ret(rs, rs_err(EISCONN));  /* a stream socket has its peer */
	if (ready_for_data(rs, flags))
		return rs_unlock_ret(rs, -1);
	ssize_t n = rs_sendv(rs, iov, iovcnt, flags);
	int saved = errno;
	pthread_mutex_unlock(&rs->lock);
	errno = saved;
	return n;
}

static ssize_t sendv(int socket, const struct iovec *iov, int iovcnt, int flags)
{
	return sendv_to(socket, iov, iovcnt, flags, NULL, 0);
}

static ssize_t recvv_from(int socket, const struct iovec *iov, int iovcnt, int flags,
			  struct sockaddr *from, socklen_t *fromlen)
{
	struct rsock *rs = rs_lock(socket);

	if (!rs)
		return -1;
	if (iovcnt < 0 || iovcnt > IOV_MAX)
		return rs_unlock_ret(rs, rs_err(EINVAL));
	if ((iovcnt && !iov) || iov_bad(iov, iovcnt))
		return rs_unlock_ret(rs, rs_err(EFAULT));
	if (rs->type == SOCK_DGRAM) {
		ssize_t n = ds_recvv(rs, iov, iovcnt, flags, from, fromlen);
		return rs_unlock_ret(rs, (int)n);
	}
	if (ready_for_data(rs, flags))
		return rs_unlock_ret(rs, -1);
	ssize_t n = rs_recvv(rs, iov, iovcnt, flags);
	if (n >= 0 && from && fromlen)
		rs_copy_addr(from, fromlen, rdma_get_peer_addr(rs->cm));
	int saved = errno;
	pthread_mutex_unlock(&rs->lock);
	errno = saved;
	return n;
}

static ssize_t recvv(int socket, const struct iovec *iov, int iovcnt, int flags)
{
	return recvv_from(socket, iov, iovcnt, flags, NULL, NULL);
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };

	return sendv(socket, &v, 1, flags);
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return sendv(socket, iov, iovcnt, 0);
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };

	return sendv_to(socket, &v, 1, flags, dest_addr, addrlen);
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	if (!msg)
		return rs_err(EFAULT);
	return sendv_to(socket, msg->msg_iov, (int)msg->msg_iovlen, flags, msg->msg_name,
			msg->msg_namelen);
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct iovec v = { .iov_base = buf, .iov_len = len };

	return recvv(socket, &v, 1, flags);
}

ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return recvv(socket, iov, iovcnt, 0);
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
		  struct sockaddr *src_addr, socklen_t *addrlen)
{
	struct iovec v = { .iov_base = buf, .iov_len = len };

	return recvv_from(socket, &v, 1, flags, src_addr, addrlen);
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	if (!msg)
		return rs_err(EFAULT);
	socklen_t nl = msg->msg_name ? msg->msg_namelen : 0;
	ssize_t n = recvv_from(socket, msg->msg_iov, (int)msg->msg_iovlen, flags,
			       msg->msg_name, msg->msg_name ? &nl : NULL);
	if (n >= 0) {
		msg->msg_controllen = 0;
		msg->msg_flags = 0;
		msg->msg_namelen = msg->msg_name ? nl : 0;
	}
	return n;
}
