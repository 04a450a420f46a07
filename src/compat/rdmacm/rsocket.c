/*
 * rsocket.c — stream rsockets (<rdma/rsocket.h>) on softrnic's connection
 * manager: the socket table, the defaults, the calls that make, connect
 * and end a socket (rsocket, rbind, rlisten, raccept, rconnect,
 * rshutdown, rclose) and the CM events that connect and disconnect it.
 * Each socket has an rdma_cm id on an event channel of its own, whose fd
 * is the number the program holds (as in rdma-core, so it never collides
 * with a real fd and librspreload can map socket fds onto it).  The send
 * and receive calls are in rsocket_sendrecv.c, names, options and rfcntl
 * in rsocket_opt.c, the data path in rsocket_data.c, rpoll/rselect in
 * rsocket_poll.c; rsocket_int.h has the wire protocol, which is
 * rdma-core's.
 *
 * Datagram sockets (SOCK_DGRAM) are in rsocket_dgram.c; the calls here
 * hand them over; riomap/riowrite are in rsocket_iomap.c; keepalive
 * messages (SO_KEEPALIVE, TCP_KEEPIDLE) are sent from the data path
 * (rs_keepalive in rsocket_data.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "compat/rdmacm/rdmacm_int.h"
#include "compat/rdmacm/rsocket_int.h"

/* The defaults of rdma-core's rsockets, which an administrator changes as
 * for rdma-core: one number per file in /etc/rdma/rsocket (mem_default,
 * wmem_default: buffer bytes; sqsize_default, rqsize_default: queue depths;
 * inline_default: inline bytes).  SOFTRNIC_RSOCKET_CONF names another
 * directory (tests). */
#define RS_CONF_DIR "/etc/rdma/rsocket"
static struct {
	pthread_once_t once;
	uint32_t mem, wmem;
	uint16_t sqsize, rqsize, inline_size;
} defaults = { PTHREAD_ONCE_INIT, 1u << 17, 1u << 17, 384, 384, 64 };

static bool read_conf(const char *dir, const char *name, unsigned long max, unsigned long *out)
{
	char path[512];
	unsigned long v;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fscanf(f, "%lu", &v) == 1 && v <= max;
	fclose(f);
	if (ok)
		*out = v;
	return ok;
}

static void load_defaults(void)
{
	const char *dir = getenv("SOFTRNIC_RSOCKET_CONF");
	unsigned long v;

	if (!dir || !*dir)
		dir = RS_CONF_DIR;
	if (read_conf(dir, "mem_default", UINT32_MAX / 2, &v) && v >= 1)
		defaults.mem = (uint32_t)v;
	if (read_conf(dir, "wmem_default", UINT32_MAX / 2, &v))
		defaults.wmem = v < RS_SNDLOWAT ? RS_SNDLOWAT << 1 : (uint32_t)v;
	if (read_conf(dir, "sqsize_default", RS_QP_MAX_SIZE, &v))
		defaults.sqsize = (uint16_t)v;
	if (read_conf(dir, "rqsize_default", RS_QP_MAX_SIZE, &v))
		defaults.rqsize = (uint16_t)v;
	if (read_conf(dir, "inline_default", 0xFFFF, &v))
		defaults.inline_size = (uint16_t)v;
}

int rs_err(int e)
{
	errno = e;
	return -1;
}

/* ---- fd tables; the socket table: index (a channel fd) -> socket -------------- */

int fd_table_put(struct fd_table *t, int fd, void *p)
{
	int ret = 0;

	if (fd < 0)
		return EBADF;
	pthread_mutex_lock(&t->lock);
	if (fd >= t->len) {
		int n = t->len ? t->len : t->first_len;
		while (n <= fd)
			n *= 2;
		void **slot = realloc(t->slot, (size_t)n * sizeof(*slot));
		if (!slot) {
			ret = ENOMEM;
			goto out;
		}
		memset(slot + t->len, 0, (size_t)(n - t->len) * sizeof(*slot));
		t->slot = slot;
		t->len = n;
	}
	t->slot[fd] = p;
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void *fd_table_get(struct fd_table *t, int fd)
{
	void *p = NULL;

	pthread_mutex_lock(&t->lock);
	if (fd >= 0 && fd < t->len)
		p = t->slot[fd];
	pthread_mutex_unlock(&t->lock);
	return p;
}

static struct fd_table sockets = FD_TABLE_INIT(256);

struct rsock *rs_get(int index)
{
	return fd_table_get(&sockets, index);
}

/* ---- making and freeing -------------------------------------------------------- */

static struct rsock *rs_alloc(const struct rsock *parent)
{
	struct rsock *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	pthread_mutex_init(&rs->lock, NULL);
	rs->index = -1;
	rs->udp_sock = -1;
	rs->type = SOCK_STREAM;
	if (parent) {
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->sq_inline = parent->sq_inline;
		rs->so_opts = parent->so_opts;
		rs->tcp_opts = parent->tcp_opts;
		rs->fs_flags = parent->fs_flags;
		rs->fd_flags = parent->fd_flags;
		rs->keepalive_time = parent->keepalive_time;
		rs->target_iomap_size = parent->target_iomap_size;
	} else {
		pthread_once(&defaults.once, load_defaults);
		rs->sbuf_size = defaults.wmem;
		rs->rbuf_size = defaults.mem;
		rs->sq_size = defaults.sqsize;
		rs->rq_size = defaults.rqsize;
		rs->sq_inline = defaults.inline_size;
		rs->keepalive_time = 7200;
	}
	rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
	return rs;
}

static int rs_new_channel(struct rsock *rs)
{
	rs->chan = rdma_create_event_channel();
	if (!rs->chan)
		return -1;
	/* Events are read without blocking; waiting is poll()'s. */
	int fl = fcntl(rs->chan->fd, F_GETFL);
	if (fl < 0 || fcntl(rs->chan->fd, F_SETFL, fl | O_NONBLOCK))
		return -1;
	if (rs->fd_flags & FD_CLOEXEC)
		(void)fcntl(rs->chan->fd, F_SETFD, FD_CLOEXEC);
	rs->index = rs->chan->fd;
	return 0;
}

static void rs_free(struct rsock *rs)
{
	if (rs->index >= 0 && rs_get(rs->index) == rs)
		fd_table_put(&sockets, rs->index, NULL);
	if (rs->type == SOCK_DGRAM)
		ds_free(rs);
	rs_free_ep(rs);
	if (rs->cm)
		rdma_destroy_id(rs->cm);
	if (rs->chan)
		rdma_destroy_event_channel(rs->chan);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

int rsocket(int domain, int type, int protocol)
{
	int socket_type = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (domain != AF_INET && domain != AF_INET6)
		return rs_err(EAFNOSUPPORT);
	if ((socket_type != SOCK_STREAM && socket_type != SOCK_DGRAM) ||
	    (socket_type == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
	    (socket_type == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP))
		return rs_err(ENOTSUP);   /* as rdma-core */
	struct rsock *rs = rs_alloc(NULL);
	if (!rs)
		return rs_err(ENOMEM);
	rs->fs_flags = (type & SOCK_NONBLOCK) ? O_NONBLOCK : 0;
	rs->fd_flags = (type & SOCK_CLOEXEC) ? FD_CLOEXEC : 0;
	rs->type = socket_type;
	if (socket_type == SOCK_DGRAM) {
		if (ds_socket(rs, domain))
			goto fail;
	} else if (rs_new_channel(rs) || rdma_create_id(rs->chan, &rs->cm, rs, RDMA_PS_TCP)) {
		goto fail;
	}
	int e = fd_table_put(&sockets, rs->index, rs);
	if (e) {
		errno = e;
		goto fail;
	}
	return rs->index;
fail:;
	int saved = errno;
	rs_free(rs);
	return rs_err(saved);
}

/* The socket of fd, locked; NULL with errno EBADF. */
struct rsock *rs_lock(int fd)
{
	struct rsock *rs = rs_get(fd);

	if (!rs) {
		errno = EBADF;
		return NULL;
	}
	pthread_mutex_lock(&rs->lock);
	return rs;
}

int rs_unlock_ret(struct rsock *rs, int ret)
{
	int saved = errno;

	pthread_mutex_unlock(&rs->lock);
	errno = saved;
	return ret;
}

/* ---- the connection manager ---------------------------------------------------- */

static int cm_errno(const struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
		return ECONNREFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
		return ev->status < 0 ? -ev->status : ETIMEDOUT;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return EHOSTUNREACH;
	default:
		return ECONNABORTED;
	}
}

static void connect_failed(struct rsock *rs, int e)
{
	rs->state = RS_CONNECT_ERROR;
	rs->err = e;
}

static void send_req(struct rsock *rs)
{
	struct rs_conn_data cd;
	struct rdma_conn_param param;

	if (rs_create_ep(rs)) {
		connect_failed(rs, errno);
		return;
	}
	rs_format_conn_data(rs, &cd);
	memset(&param, 0, sizeof(param));
	param.private_data = &cd;
	param.private_data_len = sizeof(cd);
	param.flow_control = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(rs->cm, &param))
		connect_failed(rs, errno);
	else
		rs->step = RS_STEP_CONNECT;
}

static void cm_event(struct rsock *rs, struct rdma_cm_event *ev)
{
	if (rs->state & RS_OPENING) {
		switch (ev->event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			if (rdma_resolve_route(rs->cm, 2000))
				connect_failed(rs, errno);
			else
				rs->step = RS_STEP_ROUTE;
			return;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			send_req(rs);
			return;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (rs_save_conn_data(rs, ev->param.conn.private_data,
					      ev->param.conn.private_data_len)) {
				int e = errno;
				rdma_disconnect(rs->cm);
				connect_failed(rs, e);
				return;
			}
			rs->state = RS_CONNECT_RDWR;
			return;
		case RDMA_CM_EVENT_CONNECT_RESPONSE:
			return;         /* not with a QP */
		default:
			connect_failed(rs, cm_errno(ev));
			return;
		}
	}
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED && (rs->state & RS_CONNECTED)) {
		/* What arrived stays readable; nothing more can be sent. */
		rs->state = RS_DISCONNECTED;
	}
}

/* Whether the socket's channel holds an event, without a system call (the
 * channel is this library's own, cma_channel.c): the data path asks on
 * every round. */
static bool cm_event_pending(struct rsock *rs)
{
	struct rcm_channel *c = (struct rcm_channel *)rs->chan;

	pthread_mutex_lock(&c->lock);
	bool pending = c->head != NULL;
	pthread_mutex_unlock(&c->lock);
	return pending;
}

int rs_process_cm(struct rsock *rs)
{
	struct rdma_cm_event *ev;

	if ((rs->state & RS_LISTENING) || rs->type == SOCK_DGRAM)
		return 0;       /* raccept reads a listener's events */
	if (!cm_event_pending(rs))
		return 0;
	while (rdma_get_cm_event(rs->chan, &ev) == 0) {
		struct rdma_cm_event copy = *ev;
		uint8_t pdata[256];
		if (copy.param.conn.private_data && copy.param.conn.private_data_len) {
			memcpy(pdata, copy.param.conn.private_data, copy.param.conn.private_data_len);
			copy.param.conn.private_data = pdata;
		}
		rdma_ack_cm_event(ev);
		cm_event(rs, &copy);
	}
	return errno == EAGAIN ? 0 : -1;
}

static void wait_fd(struct rsock *rs, int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	pthread_mutex_unlock(&rs->lock);
	(void)poll(&p, 1, ms);
	pthread_mutex_lock(&rs->lock);
}

int rs_do_connect(struct rsock *rs, bool nonblock)
{
	for (;;) {
		if (rs_process_cm(rs))
			return -1;
		if (rs->state & RS_CONNECTED)
			return 0;
		if (rs->state == RS_CONNECT_ERROR)
			return rs_err(rs->err);
		if (!(rs->state & RS_OPENING))
			return rs_err(ENOTCONN);
		if (nonblock)
			return rs_err(EINPROGRESS);
		wait_fd(rs, rs->chan->fd, 1000);
	}
}

/* ---- bind, listen, accept, connect ----------------------------------------------- */

static int check_addr(const struct sockaddr *addr, socklen_t len)
{
	if (!addr)
		return EFAULT;
	if (len < sizeof(struct sockaddr_in))
		return EINVAL;
	if (addr->sa_family == AF_INET6 && len < sizeof(struct sockaddr_in6))
		return EINVAL;
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return EAFNOSUPPORT;
	return 0;
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsock *rs = rs_lock(socket);

	if (!rs)
		return -1;
	int e = check_addr(addr, addrlen);
	if (e)
		return rs_unlock_ret(rs, rs_err(e));
	if (rs->type == SOCK_DGRAM)
		return rs_unlock_ret(rs, ds_bind(rs, addr, addrlen));
	if (rs->state != RS_INIT)
		return rs_unlock_ret(rs, rs_err(EINVAL));
	if (rdma_bind_addr(rs->cm, (struct sockaddr *)addr))
		return rs_unlock_ret(rs, -1);
	rs->state = RS_BOUND;
	return rs_unlock_ret(rs, 0);
}

int rlisten(int socket, int backlog)
{
	struct rsock *rs = rs_lock(socket);

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM)
		return rs_unlock_ret(rs, rs_err(EOPNOTSUPP));
	if (rs->state == RS_LISTENING)
		return rs_unlock_ret(rs, 0);
	if (rs->state != RS_INIT && rs->state != RS_BOUND)
		return rs_unlock_ret(rs, rs_err(EINVAL));
	if (rdma_listen(rs->cm, backlog))
		return rs_unlock_ret(rs, -1);
	rs->state = RS_LISTENING;
	return rs_unlock_ret(rs, 0);
}

void rs_copy_addr(struct sockaddr *dst, socklen_t *dlen, const struct sockaddr *src)
{
	socklen_t size = src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						     : sizeof(struct sockaddr_in);
	memcpy(dst, src, *dlen < size ? *dlen : size);
	*dlen = size;
}

/* Accepts one connection request: a socket of its own, its QP and
 * buffers, the REP with its rs_conn_data.  NULL if it had to be refused. */
static struct rsock *accept_request(struct rsock *l, struct rdma_cm_id *child,
				    const struct rdma_conn_param *req, const uint8_t *pdata)
{
	struct rsock *rs = rs_alloc(l);
	struct rs_conn_data cd;
	struct rdma_conn_param param;

	if (!rs)
		goto refuse;
	if (rs_new_channel(rs) || rdma_migrate_id(child, rs->chan))
		goto refuse;
	rs->cm = child;
	child->context = rs;
	if (rs_create_ep(rs) || rs_save_conn_data(rs, pdata, req->private_data_len))
		goto refuse;
	rs_format_conn_data(rs, &cd);
	param = *req;
	param.private_data = &cd;
	param.private_data_len = sizeof(cd);
	param.rnr_retry_count = 7;
	if (rdma_accept(child, &param))
		goto refuse;
	rs->state = RS_CONNECT_RDWR;
	if (fd_table_put(&sockets, rs->index, rs))
		goto refuse;
	return rs;
refuse:
	rdma_reject(child, NULL, 0);
	if (rs) {
		if (!rs->cm)
			rdma_destroy_id(child);
		rs_free(rs);
	} else {
		rdma_destroy_id(child);
	}
	return NULL;
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *l = rs_lock(socket);
	struct rdma_cm_event *ev;

	if (!l)
		return -1;
	if (l->type == SOCK_DGRAM)
		return rs_unlock_ret(l, rs_err(EOPNOTSUPP));
	if (l->state != RS_LISTENING)
		return rs_unlock_ret(l, rs_err(EINVAL));
	for (;;) {
		if (rdma_get_cm_event(l->chan, &ev)) {
			if (errno != EAGAIN)
				return rs_unlock_ret(l, -1);
			if (l->fs_flags & O_NONBLOCK)
				return rs_unlock_ret(l, rs_err(EAGAIN));
			wait_fd(l, l->chan->fd, -1);
			continue;
		}
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		struct rdma_cm_id *child = ev->id;
		struct rdma_conn_param req = ev->param.conn;
		uint8_t pdata[256] = { 0 };
		if (req.private_data && req.private_data_len)
			memcpy(pdata, req.private_data, req.private_data_len);
		rdma_ack_cm_event(ev);
		struct rsock *rs = accept_request(l, child, &req, pdata);
		if (!rs)
			continue;
		if (addr && addrlen)
			rs_copy_addr(addr, addrlen, rdma_get_peer_addr(rs->cm));
		return rs_unlock_ret(l, rs->index);
	}
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsock *rs = rs_lock(socket);

	if (!rs)
		return -1;
	bool nonblock = rs->fs_flags & O_NONBLOCK;
	if (rs->type == SOCK_DGRAM) {
		int e = check_addr(addr, addrlen);
		if (e)
			return rs_unlock_ret(rs, rs_err(e));
		return rs_unlock_ret(rs, ds_connect(rs, addr, addrlen));
	}
	if (rs->state & RS_CONNECTED)
		return rs_unlock_ret(rs, rs_err(EISCONN));
	if (rs->state & RS_OPENING) {
		if (nonblock)
			return rs_unlock_ret(rs, rs_err(EALREADY));
		return rs_unlock_ret(rs, rs_do_connect(rs, false));
	}
	if (rs->state == RS_LISTENING)
		return rs_unlock_ret(rs, rs_err(EINVAL));
	if (rs->state != RS_INIT && rs->state != RS_BOUND)
		return rs_unlock_ret(rs, rs_err(EISCONN));
	int e = check_addr(addr, addrlen);
	if (e)
		return rs_unlock_ret(rs, rs_err(e));
	if (rdma_resolve_addr(rs->cm, NULL, (struct sockaddr *)addr, 2000))
		return rs_unlock_ret(rs, -1);
	rs->state = RS_OPENING;
	rs->step = RS_STEP_ADDR;
	return rs_unlock_ret(rs, rs_do_connect(rs, nonblock));
}

/* ---- shutdown and close -------------------------------------------------------- */

static bool ctrl_avail_or_closed(const struct rsock *rs)
{
	return rs_ctrl_avail(rs) || !(rs->state & RS_CONNECTED);
}

static int do_shutdown(struct rsock *rs, int how)
{
	uint32_t ctrl;
	int ret = 0;

	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		return rs_err(ENOTCONN);
	if (rs->state & RS_CONNECTED) {
		if (how == SHUT_RDWR) {
			ctrl = RS_CTRL_DISCONNECT;
			rs->state &= ~(RS_READABLE | RS_WRITABLE);
		} else if (how == SHUT_WR) {
			rs->state &= ~RS_WRITABLE;
			ctrl = (rs->state & RS_READABLE) ? RS_CTRL_SHUTDOWN : RS_CTRL_DISCONNECT;
		} else {
			rs->state &= ~RS_READABLE;
			if (rs->state & RS_WRITABLE)
				return 0;
			ctrl = RS_CTRL_DISCONNECT;
		}
		if (!rs_ctrl_avail(rs))
			ret = rs_wait(rs, false, ctrl_avail_or_closed);
		if (!ret && (rs->state & RS_CONNECTED) && rs_ctrl_avail(rs))
			ret = rs_post_ctrl(rs, ctrl);
	}
	if (!ret && (rs->state & RS_CONNECTED))
		ret = rs_wait(rs, false, rs_all_sends_done);
	return ret;
}

int rshutdown(int socket, int how)
{
	struct rsock *rs = rs_lock(socket);

	if (!rs)
		return -1;
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return rs_unlock_ret(rs, rs_err(EINVAL));
	if (rs->type == SOCK_DGRAM) {
		if (how != SHUT_WR)
			rs->state &= ~RS_READABLE;
		if (how != SHUT_RD)
			rs->state &= ~RS_WRITABLE;
		return rs_unlock_ret(rs, 0);
	}
	return rs_unlock_ret(rs, do_shutdown(rs, how));
}

int rclose(int socket)
{
	struct rsock *rs = rs_get(socket);

	if (!rs && repoll_is(socket))
		return repoll_close(socket);
	if (!rs)
		return rs_err(EBADF);
	fd_table_put(&sockets, socket, NULL);
	pthread_mutex_lock(&rs->lock);
	if (rs->type == SOCK_DGRAM) {
		pthread_mutex_unlock(&rs->lock);
		rs_free(rs);
		return 0;
	}
	bool had_connection = rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR);
	if (rs->state & RS_CONNECTED)
		(void)do_shutdown(rs, SHUT_RDWR);
	if (had_connection || (rs->state & RS_OPENING))
		(void)rdma_disconnect(rs->cm);
	pthread_mutex_unlock(&rs->lock);
	rs_free(rs);
	return 0;
}
