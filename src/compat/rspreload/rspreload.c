/*
 * rspreload.c — softrnic's librspreload.so: an unmodified socket program
 * runs over rsockets when this library is preloaded
 * (LD_PRELOAD=<libdir>/rsocket/librspreload.so), as with rdma-core's
 * library of that name, plus epoll, which Debian 12's copy lacks (an
 * event loop such as redis-server's needs it).
 *
 * How it works.  socket() of an AF_INET or AF_INET6 stream makes an
 * rsocket (and a kernel socket if that fails); datagram sockets too with
 * SOFTRNIC_RSPRELOAD_DGRAM=1.  The program is given a placeholder fd —
 * an unconnected AF_UNIX socket, so the number is really taken and fstat
 * says "socket" — and a table maps it to the rsocket's own fd, which the
 * program never sees.  Every call this library replaces (below) looks the
 * fd up: a placeholder goes to the r* call, any other fd to the C
 * library.  The rsocket's own fds (its channels) are never placeholders,
 * so the calls softrnic's libraries make on them from any thread, the
 * progress thread included, pass straight through.  epoll_create makes a
 * repoll instance (librdmacm's epoll over rsockets), likewise behind a
 * placeholder.
 *
 * Replaced: socket, bind, listen, accept, accept4, connect, the recv,
 * send, read and write families (and their _FORTIFY_SOURCE _chk forms),
 * poll, ppoll, select, pselect, shutdown, close, getpeername,
 * getsockname, setsockopt, getsockopt, fcntl, fcntl64, epoll_create,
 * epoll_create1, epoll_ctl, epoll_wait, epoll_pwait.
 * A connect that rsockets cannot make (nobody listens there through
 * RDMA) is made again over TCP on the same fd, as rdma-core's does.
 * A forked child sees the rsockets it inherited as the placeholders they
 * are (closing one leaves the parent's rsocket alone).  Not handled, as
 * documented in docs/rdmacm.md: dup/dup2 of an rsocket, sendfile from one.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "compat/rdmacm/select_pollfd.h"

/* librdmacm's epoll over rsockets (RDMACM_1.5; Debian 12's header lacks it). */
int repoll_create(int flags);
int repoll_ctl(int epfd, int op, int fd, struct epoll_event *event);
int repoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout);

/* ---- the C library's own calls ------------------------------------------------ */

static struct {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
	int (*shutdown)(int, int);
	int (*close)(int);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*fcntl)(int, int, ...);
	int (*fcntl64)(int, int, ...);
	int (*epoll_create)(int);
	int (*epoll_create1)(int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
} real;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void *next_symbol(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

#define LOAD(n) (real.n = (__typeof__(real.n))next_symbol(#n))

/* ---- placeholder -> rsocket ------------------------------------------------------- */

enum kind { PLAIN = 0, RSOCKET = 1, REPOLL = 2 };

/* One slot per fd number the process can have; written under table_lock
 * (a placeholder made or closed), read without it. */
struct slot {
	_Atomic unsigned char kind;
	_Atomic int inner;              /* the rsocket's or repoll's own fd */
	_Atomic int family;             /* for a connect made again over TCP */
};
static struct slot *slots;
static int nslots;
static _Atomic int slots_used;          /* 1 + the highest fd ever a placeholder */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

/* The repoll instances of the process (their own fds), so that a closed
 * fd leaves every interest list, as the kernel's epoll drops a closed
 * file: else an entry outlives its fd, and a later fd of the same number
 * (an rsocket's own, or the program's) would be reported with the old
 * entry's data.  A program has one or a few; past 64, the rest keep
 * stale entries until EPOLL_CTL_DEL, as noted in docs/rdmacm.md. */
static int repolls[64];
static _Atomic unsigned nrepolls;       /* written under repolls_lock */
static pthread_mutex_t repolls_lock = PTHREAD_MUTEX_INITIALIZER;

/* A forked child inherits the placeholders but not the rsockets behind
 * them (they belong to the parent's device and its progress thread):
 * in the child they are ordinary fds again, so that a child that closes
 * what it inherited (redis's BGSAVE child closes the listeners) closes
 * only its placeholder and leaves the parent's rsocket alone. */
static void forget_all_in_child(void)
{
	int n = atomic_load(&slots_used);

	for (int fd = 0; fd < n; fd++)
		atomic_store_explicit(&slots[fd].kind, PLAIN, memory_order_relaxed);
	nrepolls = 0;
	/* Another thread of the parent may have held them at the fork. */
	pthread_mutex_init(&table_lock, NULL);
	pthread_mutex_init(&repolls_lock, NULL);
}

/* Datagram sockets become rsockets only with SOFTRNIC_RSPRELOAD_DGRAM=1:
 * a datagram rsocket's first datagram carries rdma-core's header, which a
 * plain UDP peer (a DNS server, say) does not understand.  rdma-core's
 * library takes them by default and leaves the choice to its config file. */
static bool datagrams;

static void init(void)
{
	LOAD(socket); LOAD(bind); LOAD(listen); LOAD(accept); LOAD(accept4); LOAD(connect);
	LOAD(recv); LOAD(recvfrom); LOAD(recvmsg); LOAD(read); LOAD(readv);
	LOAD(send); LOAD(sendto); LOAD(sendmsg); LOAD(write); LOAD(writev);
	LOAD(poll); LOAD(ppoll); LOAD(select); LOAD(pselect); LOAD(shutdown); LOAD(close);
	LOAD(getpeername); LOAD(getsockname); LOAD(setsockopt); LOAD(getsockopt);
	LOAD(fcntl); LOAD(fcntl64);
	LOAD(epoll_create); LOAD(epoll_create1); LOAD(epoll_ctl); LOAD(epoll_wait); LOAD(epoll_pwait);
	const char *dg = getenv("SOFTRNIC_RSPRELOAD_DGRAM");
	datagrams = dg && !strcmp(dg, "1");
	struct rlimit rl;
	/* As many slots as the fd limit allows (fds past it are never
	 * placeholders), at most 1 M. */
	rlim_t n = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_max : 65536;
	if (n == RLIM_INFINITY || n > (1u << 20))
		n = 1u << 20;
	if (n < 1024)
		n = 1024;
	slots = calloc(n, sizeof(*slots));
	nslots = slots ? (int)n : 0;
	if (nslots && pthread_atfork(NULL, NULL, forget_all_in_child)) {
		free(slots);
		slots = NULL;
		nslots = 0;     /* no rsockets then: every socket is the kernel's */
	}
}

static inline void init_preload(void)
{
	pthread_once(&init_once, init);
}

/* What fd is to this library: PLAIN for anything not a placeholder. */
static inline enum kind kind_of(int fd, int *inner)
{
	init_preload();
	if (fd < 0 || fd >= nslots)
		return PLAIN;
	enum kind k = atomic_load_explicit(&slots[fd].kind, memory_order_acquire);
	if (k != PLAIN && inner)
		*inner = atomic_load_explicit(&slots[fd].inner, memory_order_relaxed);
	return k;
}

/* A placeholder fd for inner, or -1 (inner is then closed). */
static int placeholder_for(int inner, enum kind k, int family)
{
	int fd = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && fd >= nslots) {
		(void)syscall(SYS_close, fd);
		fd = -1;
		errno = EMFILE;
	}
	if (fd < 0) {
		int e = errno;
		if (k == RSOCKET || k == REPOLL)
			(void)rclose(inner);
		errno = e;
		return -1;
	}
	pthread_mutex_lock(&table_lock);
	if (fd >= atomic_load(&slots_used))
		atomic_store(&slots_used, fd + 1);
	atomic_store_explicit(&slots[fd].inner, inner, memory_order_relaxed);
	atomic_store_explicit(&slots[fd].family, family, memory_order_relaxed);
	atomic_store_explicit(&slots[fd].kind, (unsigned char)k, memory_order_release);
	pthread_mutex_unlock(&table_lock);
	return fd;
}

static void forget(int fd)
{
	pthread_mutex_lock(&table_lock);
	atomic_store_explicit(&slots[fd].kind, PLAIN, memory_order_release);
	pthread_mutex_unlock(&table_lock);
}

/* ---- making, naming and ending sockets -------------------------------------------- */

int socket(int domain, int type, int protocol)
{
	/* Set while rsocket() runs: a socket it makes is the kernel's. */
	static __thread bool making;

	init_preload();
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	if ((domain == AF_INET || domain == AF_INET6) && nslots && !making &&
	    (base == SOCK_STREAM || (base == SOCK_DGRAM && datagrams))) {
		int saved = errno;
		making = true;
		int rs = rsocket(domain, type, protocol);
		making = false;
		if (rs >= 0) {
			int fd = placeholder_for(rs, RSOCKET, domain);
			/* The placeholder follows the socket's close-on-exec. */
			if (fd >= 0 && !(type & SOCK_CLOEXEC))
				(void)real.fcntl(fd, F_SETFD, 0);
			return fd;
		}
		errno = saved;          /* not an rsocket: a kernel socket */
	}
	return real.socket(domain, type, protocol);
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rbind(in, addr, len) : real.bind(fd, addr, len);
}

int listen(int fd, int backlog)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rlisten(in, backlog) : real.listen(fd, backlog);
}

static int accept_common(int fd, int in, struct sockaddr *addr, socklen_t *len, int flags)
{
	int rs = raccept(in, addr, len);
	if (rs < 0)
		return -1;
	if ((flags & SOCK_NONBLOCK) && rfcntl(rs, F_SETFL, rfcntl(rs, F_GETFL) | O_NONBLOCK) < 0) {
		int e = errno;
		(void)rclose(rs);
		errno = e;
		return -1;
	}
	int nfd = placeholder_for(rs, RSOCKET, atomic_load(&slots[fd].family));
	if (nfd >= 0 && !(flags & SOCK_CLOEXEC))
		(void)real.fcntl(nfd, F_SETFD, 0);
	return nfd;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? accept_common(fd, in, addr, len, 0) : real.accept(fd, addr, len);
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? accept_common(fd, in, addr, len, flags)
					   : real.accept4(fd, addr, len, flags);
}

/* The rsocket behind fd gives way to a kernel socket on the same fd
 * number, with the same blocking mode; 0 or -1. */
static int make_kernel_socket(int fd, int in)
{
	int fl = rfcntl(in, F_GETFL);
	int s = real.socket(atomic_load(&slots[fd].family), SOCK_STREAM, 0);

	if (s < 0)
		return -1;
	int fdfl = real.fcntl(fd, F_GETFD);
	/* dup2 replaces the placeholder in one step: the number stays taken. */
	if (dup2(s, fd) < 0) {
		int e = errno;
		real.close(s);
		errno = e;
		return -1;
	}
	real.close(s);
	forget(fd);
	(void)rclose(in);
	if (fl >= 0)
		(void)real.fcntl(fd, F_SETFL, fl & O_NONBLOCK);
	if (fdfl >= 0)
		(void)real.fcntl(fd, F_SETFD, fdfl);
	return 0;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	int in;

	if (kind_of(fd, &in) == RSOCKET) {
		int type = 0;
		socklen_t tl = sizeof(type);
		int ret = rconnect(in, addr, len);
		if (ret == 0 || errno == EINPROGRESS || errno == EALREADY || errno == EISCONN || errno == EINTR)
			return ret;
		/* Datagram sockets have nothing to fall back from. */
		if (rgetsockopt(in, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_STREAM)
			return ret;
		/* Nobody listens there through RDMA: try TCP. */
		if (make_kernel_socket(fd, in))
			return -1;
	}
	return real.connect(fd, addr, len);
}

int shutdown(int fd, int how)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rshutdown(in, how) : real.shutdown(fd, how);
}

static void repoll_track(int ep, bool add)
{
	pthread_mutex_lock(&repolls_lock);
	if (add && nrepolls < sizeof(repolls) / sizeof(repolls[0])) {
		repolls[nrepolls++] = ep;
	} else if (!add) {
		for (unsigned i = 0; i < nrepolls; i++)
			if (repolls[i] == ep) {
				repolls[i] = repolls[--nrepolls];
				break;
			}
	}
	pthread_mutex_unlock(&repolls_lock);
}

/* fd (as the interest lists know it: an rsocket's own fd) leaves them. */
static void repoll_drop_everywhere(int fd)
{
	int eps[64];
	unsigned n;

	/* Most programs have no epoll set of rsockets: no lock per close. */
	if (!atomic_load_explicit(&nrepolls, memory_order_relaxed))
		return;
	pthread_mutex_lock(&repolls_lock);
	n = nrepolls;
	memcpy(eps, repolls, n * sizeof(eps[0]));
	pthread_mutex_unlock(&repolls_lock);
	if (!n)
		return;
	int saved = errno;
	for (unsigned i = 0; i < n; i++)
		(void)repoll_ctl(eps[i], EPOLL_CTL_DEL, fd, NULL);
	errno = saved;
}

int close(int fd)
{
	int in;
	enum kind k = kind_of(fd, &in);

	if (k == REPOLL)
		repoll_track(in, false);
	else
		repoll_drop_everywhere(k == RSOCKET ? in : fd);
	if (k != PLAIN) {
		forget(fd);
		(void)rclose(in);
	}
	return real.close(fd);
}

int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rgetpeername(in, addr, len) : real.getpeername(fd, addr, len);
}

int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rgetsockname(in, addr, len) : real.getsockname(fd, addr, len);
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rsetsockopt(in, level, name, val, len)
					   : real.setsockopt(fd, level, name, val, len);
}

int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rgetsockopt(in, level, name, val, len)
					   : real.getsockopt(fd, level, name, val, len);
}

/* fcntl's argument is an int, a long or a pointer by command; passing
 * it on as a pointer-sized value carries each (the System V ABI passes
 * all three in the same register). */
static int fcntl_common(int (*libc)(int, int, ...), int fd, int cmd, void *arg)
{
	int in;

	if (kind_of(fd, &in) == PLAIN)
		return libc(fd, cmd, arg);
	if (cmd == F_SETFD) {
		/* Close-on-exec belongs to the placeholder the program holds. */
		(void)libc(fd, cmd, arg);
	}
	return rfcntl(in, cmd, arg);
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	init_preload();
	return fcntl_common(real.fcntl, fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	init_preload();
	return fcntl_common(real.fcntl64 ? real.fcntl64 : real.fcntl, fd, cmd, arg);
}

/* ---- data ------------------------------------------------------------------------------ */

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rrecv(in, buf, len, flags) : real.recv(fd, buf, len, flags);
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *src, socklen_t *slen)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rrecvfrom(in, buf, len, flags, src, slen)
					   : real.recvfrom(fd, buf, len, flags, src, slen);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rrecvmsg(in, msg, flags) : real.recvmsg(fd, msg, flags);
}

ssize_t read(int fd, void *buf, size_t len)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rread(in, buf, len) : real.read(fd, buf, len);
}

ssize_t readv(int fd, const struct iovec *iov, int n)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rreadv(in, iov, n) : real.readv(fd, iov, n);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rsend(in, buf, len, flags) : real.send(fd, buf, len, flags);
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tl)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rsendto(in, buf, len, flags, to, tl)
					   : real.sendto(fd, buf, len, flags, to, tl);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rsendmsg(in, msg, flags) : real.sendmsg(fd, msg, flags);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rwrite(in, buf, len) : real.write(fd, buf, len);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	int in;
	return kind_of(fd, &in) == RSOCKET ? rwritev(in, iov, n) : real.writev(fd, iov, n);
}

/* The _FORTIFY_SOURCE forms a program built with it calls; the buffer
 * size check is the C library's (__chk_fail). */
void __chk_fail(void) __attribute__((noreturn));

ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return read(fd, buf, len);
}

ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen)
		__chk_fail();
	return recv(fd, buf, len, flags);
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *src,
		       socklen_t *slen);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *src,
		       socklen_t *slen)
{
	if (len > buflen)
		__chk_fail();
	return recvfrom(fd, buf, len, flags, src, slen);
}

/* ---- waiting ------------------------------------------------------------------------- */

/* fds with each placeholder replaced by its rsocket (in a copy), or NULL
 * when none is a placeholder: then the C library's call serves. */
static struct pollfd *inner_fds(const struct pollfd *fds, nfds_t n, bool *err)
{
	struct pollfd *c = NULL;

	*err = false;
	for (nfds_t i = 0; i < n; i++) {
		int in;
		if (kind_of(fds[i].fd, &in) != RSOCKET)
			continue;
		if (!c) {
			c = malloc(n * sizeof(*c));
			if (!c) {
				*err = true;
				return NULL;
			}
			memcpy(c, fds, n * sizeof(*c));
		}
		c[i].fd = in;
	}
	return c;
}

static int poll_common(struct pollfd *fds, nfds_t n, int timeout, const sigset_t *mask)
{
	bool err;
	struct pollfd *c = inner_fds(fds, n, &err);

	if (err) {
		errno = ENOMEM;
		return -1;
	}
	if (!c)
		return -2;              /* no rsocket: the caller's libc call */
	sigset_t old;
	if (mask)
		pthread_sigmask(SIG_SETMASK, mask, &old);
	int ret = rpoll(c, n, timeout);
	int e = errno;
	if (mask)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (nfds_t i = 0; i < n; i++)
		fds[i].revents = c[i].revents;
	free(c);
	errno = e;
	return ret;
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	init_preload();
	int ret = poll_common(fds, n, timeout, NULL);
	return ret == -2 ? real.poll(fds, n, timeout) : ret;
}

static int timespec_ms(const struct timespec *ts)
{
	if (!ts)
		return -1;
	long long ms = (long long)ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	init_preload();
	int ret = poll_common(fds, n, timespec_ms(ts), mask);
	return ret == -2 ? real.ppoll(fds, n, ts, mask) : ret;
}

/* select and pselect over rsockets: the sets become a pollfd array of
 * the program's fds, which poll_common maps to the rsockets' own. */
static int select_common(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, int timeout, const sigset_t *mask)
{
	bool any = false;
	int n;

	if (nfds < 0 || nfds > FD_SETSIZE) {
		errno = EINVAL;
		return -1;
	}
	for (int fd = 0; fd < nfds && !any; fd++)
		if ((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) || (ex && FD_ISSET(fd, ex)))
			any = kind_of(fd, NULL) == RSOCKET;
	if (!any)
		return -2;
	struct pollfd *p = select_to_pollfds(nfds, rd, wr, ex, &n);
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	int ret = poll_common(p, (nfds_t)n, timeout, mask);
	ret = ret < 0 ? -1 : select_from_pollfds(p, n, rd, wr, ex);
	int e = errno;
	free(p);
	errno = e;
	return ret;
}

int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	init_preload();
	int ms = -1;
	if (tv) {
		long long t = (long long)tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000;
		ms = t > 0x7fffffff ? 0x7fffffff : t < 0 ? 0 : (int)t;
	}
	int ret = select_common(nfds, rd, wr, ex, ms, NULL);
	if (ret == -2)
		return real.select(nfds, rd, wr, ex, tv);
	if (ret == 0 && tv)
		tv->tv_sec = 0, tv->tv_usec = 0;
	return ret;
}

int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts, const sigset_t *mask)
{
	init_preload();
	int ret = select_common(nfds, rd, wr, ex, timespec_ms(ts), mask);
	return ret == -2 ? real.pselect(nfds, rd, wr, ex, ts, mask) : ret;
}

/* ---- epoll ------------------------------------------------------------------------- */

int epoll_create1(int flags)
{
	init_preload();
	if (!nslots)
		return real.epoll_create1(flags);
	int ep = repoll_create(flags);
	if (ep < 0)
		return -1;
	int fd = placeholder_for(ep, REPOLL, 0);
	if (fd >= 0 && !(flags & EPOLL_CLOEXEC))
		(void)real.fcntl(fd, F_SETFD, 0);
	if (fd >= 0)
		repoll_track(ep, true);
	return fd;
}

int epoll_create(int size)
{
	if (size <= 0) {
		errno = EINVAL;
		return -1;
	}
	return epoll_create1(0);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	int ep, in;

	if (kind_of(epfd, &ep) != REPOLL)
		return real.epoll_ctl(epfd, op, fd, event);
	switch (kind_of(fd, &in)) {
	case RSOCKET:
		return repoll_ctl(ep, op, in, event);
	case REPOLL:
		errno = EINVAL;         /* nested epoll instances: not supported */
		return -1;
	default:
		return repoll_ctl(ep, op, fd, event);
	}
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	int ep;
	return kind_of(epfd, &ep) == REPOLL ? repoll_wait(ep, events, maxevents, timeout)
					    : real.epoll_wait(epfd, events, maxevents, timeout);
}

int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout, const sigset_t *mask)
{
	int ep;

	if (kind_of(epfd, &ep) != REPOLL)
		return real.epoll_pwait(epfd, events, maxevents, timeout, mask);
	sigset_t old;
	if (mask)
		pthread_sigmask(SIG_SETMASK, mask, &old);
	int ret = repoll_wait(ep, events, maxevents, timeout);
	int e = errno;
	if (mask)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return ret;
}
