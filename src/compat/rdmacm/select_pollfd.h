/*
 * select_pollfd.h — select's fd_sets as a pollfd array and back: rselect
 * (rsocket_poll.c) and the preload library's select and pselect
 * (rspreload/rspreload.c) both turn the sets into a pollfd array, wait
 * in rpoll and write the sets from what it reported.
 */
#ifndef SOFTRNIC_COMPAT_SELECT_POLLFD_H
#define SOFTRNIC_COMPAT_SELECT_POLLFD_H

#include <poll.h>
#include <stdlib.h>
#include <sys/select.h>

/* One pollfd for each fd below nfds (0..FD_SETSIZE) that is in a set:
 * POLLIN for rd, POLLOUT for wr, POLLPRI for ex (a set may be NULL).  A
 * calloc'ed array the caller frees, *n entries long; NULL when out of
 * memory. */
static inline struct pollfd *select_to_pollfds(int nfds, const fd_set *rd, const fd_set *wr,
					       const fd_set *ex, int *n)
{
	struct pollfd *fds = calloc((size_t)nfds + 1, sizeof(*fds));

	*n = 0;
	if (!fds)
		return NULL;
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;
		if (rd && FD_ISSET(fd, rd))
			ev |= POLLIN;
		if (wr && FD_ISSET(fd, wr))
			ev |= POLLOUT;
		if (ex && FD_ISSET(fd, ex))
			ev |= POLLPRI;
		if (ev)
			fds[(*n)++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	return fds;
}

/* The sets rewritten from the n pollfds' revents, as select(2) reports
 * them: a hang-up or an error makes a descriptor readable and writable.
 * Returns how many bits were set. */
static inline int select_from_pollfds(const struct pollfd *fds, int n, fd_set *rd, fd_set *wr, fd_set *ex)
{
	int ret = 0;

	if (rd)
		FD_ZERO(rd);
	if (wr)
		FD_ZERO(wr);
	if (ex)
		FD_ZERO(ex);
	for (int i = 0; i < n; i++) {
		short r = fds[i].revents;
		if (rd && (fds[i].events & POLLIN) && (r & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(fds[i].fd, rd);
			ret++;
		}
		if (wr && (fds[i].events & POLLOUT) && (r & (POLLOUT | POLLHUP | POLLERR))) {
			FD_SET(fds[i].fd, wr);
			ret++;
		}
		if (ex && (fds[i].events & POLLPRI) && (r & POLLPRI)) {
			FD_SET(fds[i].fd, ex);
			ret++;
		}
	}
	return ret;
}

#endif
