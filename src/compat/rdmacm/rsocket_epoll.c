/*
 * rsocket_epoll.c — repoll_create, repoll_ctl and repoll_wait: epoll over
 * rsockets and ordinary fds (rdma-core's librdmacm has them since its
 * RDMACM_1.5 interface, for the preload library's epoll_*).
 *
 * An rsocket has no kernel object that becomes ready, so the kernel's
 * epoll cannot watch one.  A repoll instance is an interest list kept
 * here; repoll_wait builds a pollfd array from it and calls rpoll, which
 * sleeps on the rsockets' channels and the ordinary fds together.  The
 * instance's fd is an eventfd: a repoll_ctl that changes the list while a
 * thread waits writes it, and the waiter takes the new list.
 *
 * Trade-offs, as rdma-core's: it is level-triggered only (EPOLLET is
 * accepted and ignored; EPOLLONESHOT is honoured), and each wait costs a
 * walk of the whole list, where the kernel's epoll reports only the ready
 * fds — fine for the few hundred sockets a preloaded program has; a list
 * of ready sockets fed by the progress thread would scale further.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "compat/rdmacm/rsocket_int.h"

struct repoll_entry {
	int fd;
	uint32_t events;                /* EPOLL* as given */
	bool off;                       /* EPOLLONESHOT fired; EPOLL_CTL_MOD turns it on */
	epoll_data_t data;
};

struct repoll {
	int fd;                         /* the eventfd the program holds */
	pthread_mutex_t lock;
	struct repoll_entry *e;
	unsigned n, cap;
	unsigned waiters;
	bool closed;                    /* repoll_close ran while a thread waited */
};

static struct fd_table instances = FD_TABLE_INIT(64);   /* by the instance's fd */

static struct repoll *repoll_get(int fd)
{
	return fd_table_get(&instances, fd);
}

bool repoll_is(int fd)
{
	return repoll_get(fd) != NULL;
}

int repoll_create(int flags)
{
	if (flags & ~EPOLL_CLOEXEC)
		return rs_err(EINVAL);
	struct repoll *r = calloc(1, sizeof(*r));
	if (!r)
		return rs_err(ENOMEM);
	r->fd = eventfd(0, EFD_NONBLOCK | ((flags & EPOLL_CLOEXEC) ? EFD_CLOEXEC : 0));
	if (r->fd < 0) {
		int e = errno;
		free(r);
		return rs_err(e);
	}
	pthread_mutex_init(&r->lock, NULL);
	int e = fd_table_put(&instances, r->fd, r);
	if (e) {
		close(r->fd);
		pthread_mutex_destroy(&r->lock);
		free(r);
		return rs_err(e);
	}
	return r->fd;
}

int repoll_close(int epfd)
{
	struct repoll *r = repoll_get(epfd);

	if (!r)
		return rs_err(EBADF);
	(void)fd_table_put(&instances, epfd, NULL);
	/* A thread still in repoll_wait on it (the program's error, as
	 * closing any fd another thread polls) must not find freed memory:
	 * the instance is then kept, marked closed, and the waiter returns
	 * EBADF when its rpoll ends (the closed eventfd ends it at once).
	 * Trade-off: that instance's memory is never freed. */
	pthread_mutex_lock(&r->lock);
	bool waited = r->waiters != 0;
	r->closed = true;
	pthread_mutex_unlock(&r->lock);
	close(epfd);
	if (waited)
		return 0;
	pthread_mutex_destroy(&r->lock);
	free(r->e);
	free(r);
	return 0;
}

static struct repoll_entry *find(struct repoll *r, int fd)
{
	for (unsigned i = 0; i < r->n; i++)
		if (r->e[i].fd == fd)
			return &r->e[i];
	return NULL;
}

/* Is fd open (an rsocket, or any fd of the process)? */
static bool fd_open(int fd)
{
	return rs_get(fd) || repoll_is(fd) || fcntl(fd, F_GETFD) >= 0;
}

int repoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	struct repoll *r = repoll_get(epfd);

	if (!r || !fd_open(fd))
		return rs_err(EBADF);
	if (fd == epfd || repoll_is(fd))
		return rs_err(EINVAL);  /* nesting epoll instances: not here */
	if ((op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && !event)
		return rs_err(EFAULT);
	pthread_mutex_lock(&r->lock);
	struct repoll_entry *e = find(r, fd);
	int ret = 0;
	switch (op) {
	case EPOLL_CTL_ADD:
		if (e) {
			ret = EEXIST;
			break;
		}
		if (r->n == r->cap) {
			unsigned cap = r->cap ? 2 * r->cap : 16;
			struct repoll_entry *t = realloc(r->e, cap * sizeof(*t));
			if (!t) {
				ret = ENOMEM;
				break;
			}
			r->e = t;
			r->cap = cap;
		}
		r->e[r->n++] = (struct repoll_entry){ .fd = fd, .events = event->events, .data = event->data };
		break;
	case EPOLL_CTL_MOD:
		if (!e) {
			ret = ENOENT;
			break;
		}
		e->events = event->events;
		e->data = event->data;
		e->off = false;
		break;
	case EPOLL_CTL_DEL:
		if (!e) {
			ret = ENOENT;
			break;
		}
		*e = r->e[--r->n];
		break;
	default:
		ret = EINVAL;
	}
	bool wake = !ret && r->waiters;
	pthread_mutex_unlock(&r->lock);
	if (wake) {
		uint64_t one = 1;
		(void)!write(r->fd, &one, sizeof(one));
	}
	return ret ? rs_err(ret) : 0;
}

static short poll_events(uint32_t ev)
{
	short p = 0;

	if (ev & EPOLLIN)
		p |= POLLIN;
	if (ev & EPOLLOUT)
		p |= POLLOUT;
	if (ev & EPOLLPRI)
		p |= POLLPRI;
	if (ev & EPOLLRDHUP)
		p |= POLLRDHUP;
	return p;
}

static uint32_t epoll_events(short p)
{
	uint32_t ev = 0;

	if (p & POLLIN)
		ev |= EPOLLIN;
	if (p & POLLOUT)
		ev |= EPOLLOUT;
	if (p & POLLPRI)
		ev |= EPOLLPRI;
	if (p & POLLRDHUP)
		ev |= EPOLLRDHUP;
	if (p & POLLERR)
		ev |= EPOLLERR;
	if (p & POLLHUP)
		ev |= EPOLLHUP;
	return ev;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int repoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	struct repoll *r = repoll_get(epfd);
	int64_t deadline = timeout > 0 ? now_ms() + timeout : 0;
	struct pollfd *fds = NULL;
	unsigned fds_cap = 0;
	int got = 0;

	if (!r)
		return rs_err(EBADF);
	if (maxevents <= 0)
		return rs_err(EINVAL);
	if (!events)
		return rs_err(EFAULT);
	pthread_mutex_lock(&r->lock);
	r->waiters++;
	for (;;) {
		/* fds[0] is the instance's own eventfd: a change of the list. */
		unsigned n = r->n + 1;
		if (n > fds_cap) {
			struct pollfd *t = realloc(fds, n * sizeof(*t));
			if (!t) {
				got = rs_err(ENOMEM);
				break;
			}
			fds = t;
			fds_cap = n;
		}
		fds[0] = (struct pollfd){ .fd = r->fd, .events = POLLIN };
		for (unsigned i = 0; i < r->n; i++) {
			short ev = poll_events(r->e[i].events);
			/* A disabled entry stays out of the poll (fd -1). */
			fds[i + 1] = (struct pollfd){ .fd = r->e[i].off ? -1 : r->e[i].fd, .events = ev };
		}
		pthread_mutex_unlock(&r->lock);
		int left = timeout;
		if (timeout > 0) {
			int64_t l = deadline - now_ms();
			left = l > 0 ? (int)l : 0;
		}
		int ready = rpoll(fds, n, left);
		pthread_mutex_lock(&r->lock);
		if (ready < 0) {
			got = -1;
			break;
		}
		if (r->closed) {
			/* Closed by another thread while this one waited. */
			got = rs_err(EBADF);
			break;
		}
		if (fds[0].revents & POLLIN) {
			uint64_t v;
			(void)!read(r->fd, &v, sizeof(v));
		}
		for (unsigned i = 1; i < n && got < maxevents; i++) {
			if (fds[i].fd < 0 || !fds[i].revents)
				continue;
			/* The list may have changed while rpoll ran. */
			struct repoll_entry *e = find(r, fds[i].fd);
			if (!e || e->off)
				continue;
			uint32_t ev = epoll_events(fds[i].revents) & (e->events | EPOLLERR | EPOLLHUP);
			if (!ev)
				continue;
			events[got].events = ev;
			events[got].data = e->data;
			got++;
			if (e->events & EPOLLONESHOT)
				e->off = true;
		}
		if (got || timeout == 0 || (timeout > 0 && now_ms() >= deadline))
			break;
	}
	r->waiters--;
	pthread_mutex_unlock(&r->lock);
	free(fds);
	return got;
}
