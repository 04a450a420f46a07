/*
 * rsocket_poll.c — rpoll and rselect over a mix of rsockets and ordinary
 * fds.  An rsocket is ready when its CQ or its CM channel says so: each
 * round looks at every fd without sleeping, then arms the rsockets' CQs and
 * sleeps in poll() on their completion and CM channel fds beside the
 * ordinary fds, until something happens or the timeout passes.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include <rdma/rsocket.h>

#include "compat/rdmacm/rsocket_int.h"
#include "compat/rdmacm/select_pollfd.h"

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t now_ms(void)
{
	return now_us() / 1000;
}

/* How long rpoll looks without sleeping before it arms the CQs and sleeps
 * (rdma-core's polling_time, 10 us by default): a reply that comes within
 * it costs no wake-up of a sleeping thread. */
#define RPOLL_SPIN_US 10

/* What the socket is ready for, without sleeping (lock held). */
static short rs_revents(struct rsock *rs, short events)
{
	short r = 0;

	if (rs->type == SOCK_DGRAM)
		return ds_revents(rs, events);
	if (rs->state == RS_LISTENING) {
		struct pollfd p = { .fd = rs->chan->fd, .events = POLLIN };
		if (poll(&p, 1, 0) > 0 && (p.revents & POLLIN))
			r |= events & POLLIN;
		return r;
	}
	if (rs->state & RS_OPENING)
		(void)rs_do_connect(rs, true);
	if (rs->state == RS_CONNECT_ERROR)
		return (short)((events & (POLLIN | POLLOUT)) | POLLERR);
	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		return 0;       /* idle, bound or still connecting */
	(void)rs_process_cm(rs);
	rs_update_credits(rs);
	(void)rs_poll_cq(rs);
	rs_update_credits(rs);
	rs_keepalive(rs);
	if ((events & POLLIN) && (rs_have_rdata(rs) || !(rs->state & RS_READABLE)))
		r |= POLLIN;
	if ((events & POLLOUT) && (rs->state & RS_WRITABLE) && rs_can_send(rs))
		r |= POLLOUT;
	/* A peer's close is reported as a hang-up once what it sent has been
	 * read (rdma-core raises POLLHUP at once, so a program that stops at
	 * POLLHUP, as rstream -T a does, could lose the peer's last bytes; a
	 * TCP socket shows POLLIN until then too). */
	if (rs->state == RS_DISCONNECTED && !rs_have_rdata(rs))
		r |= POLLHUP;
	else if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED)))
		r |= POLLERR;
	return r;
}

static int check_all(struct pollfd *fds, nfds_t nfds)
{
	/* The ordinary fds are looked at together, in one poll() (a
	 * program's event loop watches a few pipes and eventfds beside its
	 * sockets); up to 32 of them, then one call per further fd. */
	struct pollfd plain[32];
	nfds_t where[32], nplain = 0;
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct rsock *rs = rs_get(fds[i].fd);
		fds[i].revents = 0;
		if (rs) {
			pthread_mutex_lock(&rs->lock);
			fds[i].revents = rs_revents(rs, fds[i].events);
			pthread_mutex_unlock(&rs->lock);
		} else if (fds[i].fd >= 0 && nplain < 32) {
			plain[nplain] = (struct pollfd){ .fd = fds[i].fd, .events = fds[i].events };
			where[nplain++] = i;
			continue;
		} else if (fds[i].fd >= 0) {
			(void)poll(&fds[i], 1, 0);
		}
		if (fds[i].revents)
			cnt++;
	}
	if (nplain && poll(plain, nplain, 0) > 0) {
		for (nfds_t k = 0; k < nplain; k++) {
			fds[where[k]].revents = plain[k].revents;
			if (plain[k].revents)
				cnt++;
		}
	}
	return cnt;
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	int64_t deadline = timeout > 0 ? now_ms() + timeout : 0;
	struct pollfd *w = NULL;
	int cnt;

	if (nfds && !fds)
		return rs_err(EFAULT);
	int64_t spin_end = now_us() + RPOLL_SPIN_US;
	for (;;) {
		cnt = check_all(fds, nfds);
		if (cnt || timeout == 0)
			break;
		if (now_us() < spin_end)
			continue;
		/* Arm every CQ; what completed before the arming raises no
		 * event, so look once more if any was armed now. */
		bool armed = false;
		for (nfds_t i = 0; i < nfds; i++) {
			struct rsock *rs = rs_get(fds[i].fd);
			if (!rs)
				continue;
			pthread_mutex_lock(&rs->lock);
			armed |= rs_arm(rs);
			pthread_mutex_unlock(&rs->lock);
		}
		if (armed) {
			cnt = check_all(fds, nfds);
			if (cnt)
				break;
		}
		int wait = 500;         /* look again now and then regardless */
		if (!w) {
			w = calloc(2 * nfds + 1, sizeof(*w));
			if (!w)
				return rs_err(ENOMEM);
		}
		for (nfds_t i = 0; i < nfds; i++) {
			struct rsock *rs = rs_get(fds[i].fd);
			w[2 * i] = (struct pollfd){ .fd = fds[i].fd, .events = fds[i].events };
			w[2 * i + 1] = (struct pollfd){ .fd = -1 };
			if (rs) {
				pthread_mutex_lock(&rs->lock);
				/* Datagram sockets: their UDP socket (the index). */
				w[2 * i].fd = rs->type == SOCK_DGRAM ? rs->udp_sock : rs->chan->fd;
				w[2 * i].events = POLLIN;
				if (rs->cq_chan) {
					w[2 * i + 1].fd = rs->cq_chan->fd;
					w[2 * i + 1].events = POLLIN;
				}
				wait = rs_keepalive_wait_ms(rs, wait);
				pthread_mutex_unlock(&rs->lock);
			}
		}
		if (timeout > 0) {
			int64_t left = deadline - now_ms();
			if (left <= 0)
				break;
			if (left < wait)
				wait = (int)left;
		}
		/* A signal ends the wait with EINTR, as poll()'s does (a
		 * program stopped by ^C in epoll_wait or poll gets to run its
		 * handler's consequences). */
		if (poll(w, 2 * nfds, wait) < 0) {
			free(w);
			return -1;
		}
		for (nfds_t i = 0; i < nfds; i++) {
			if (w[2 * i + 1].fd < 0 || !w[2 * i + 1].revents)
				continue;
			struct rsock *rs = rs_get(fds[i].fd);
			if (!rs)
				continue;
			pthread_mutex_lock(&rs->lock);
			rs_take_cq_event(rs);
			pthread_mutex_unlock(&rs->lock);
		}
	}
	free(w);
	return cnt;
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    struct timeval *timeout)
{
	struct pollfd *fds;
	int n, ret, ms = -1;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return rs_err(EINVAL);
	if (timeout) {
		if (timeout->tv_sec < 0 || timeout->tv_usec < 0)
			return rs_err(EINVAL);
		ms = (int)(timeout->tv_sec * 1000 + (timeout->tv_usec + 999) / 1000);
	}
	fds = select_to_pollfds(nfds, readfds, writefds, exceptfds, &n);
	if (!fds)
		return rs_err(ENOMEM);
	ret = rpoll(fds, (nfds_t)n, ms);
	if (ret >= 0)
		ret = select_from_pollfds(fds, n, readfds, writefds, exceptfds);
	int e = errno;
	free(fds);
	errno = e;
	if (timeout && ret == 0) {
		timeout->tv_sec = 0;
		timeout->tv_usec = 0;
	}
	return ret;
}
