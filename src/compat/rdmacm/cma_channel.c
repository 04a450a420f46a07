/*
 * cma_channel.c — librdmacm's event channels: an eventfd (semaphore mode)
 * that counts the rcm_events queued under the channel's mutex, so that a
 * program may poll the fd as it polls rdma-core's.  Events are made and
 * queued here (rcm_new_event, rcm_queue_event: cma_event.c under the
 * device lock, addr.c and misc.c for the events they answer themselves)
 * and taken by rcm_channel_take (read in cma_event.c).  Channels the
 * program destroys are retired, never freed (below says why);
 * rdma_migrate_id moves an id's queued events to another channel.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "compat/rdmacm/cma_int.h"

struct rcm_channel *rcm_channel_create(bool internal)
{
	struct rcm_channel *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->internal = internal;
	return c;
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	int e = rcm_init();
	struct rcm_channel *c;

	if (e) {
		errno = e;
		return NULL;
	}
	c = rcm_channel_create(false);
	return c ? &c->ch : NULL;
}

void rcm_channel_destroy(struct rcm_channel *c)
{
	struct rcm_event *e, *next;

	for (e = c->head; e; e = next) {
		next = e->next;
		free(e);
	}
	close(c->ch.fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Channels the program destroyed are emptied and retired, never closed or
 * freed.  Programs destroy a channel while another of their threads may
 * be about to wait on it: rping's cm_thread loops on rdma_get_cm_event
 * and is never joined, and the main thread destroys the channel after the
 * last event.  With the kernel's librdmacm a thread already blocked in
 * read() stays blocked; one that arrives a moment later reads a closed fd
 * (EBADF), and rping exits 1 after a successful run — seen in CI on a
 * loaded machine.  Here a late waiter finds an open, empty eventfd and
 * blocks, as an early one does, and the struct it reads is still there.
 * Trade-off: one eventfd and one small struct per channel ever destroyed
 * (kept on a list, so leak checkers see them reachable); programs make a
 * handful of channels, not thousands. */
static struct rcm_channel *retired_channels;
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct rcm_channel *c = (struct rcm_channel *)channel;
	struct rcm_event *e, *next;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	for (e = c->head; e; e = next) {
		next = e->next;
		free(e);
	}
	c->head = c->tail = NULL;
	/* The count of the entries just freed stays in the eventfd: a late
	 * waiter that reads one finds the channel retired and waits again
	 * (rcm_channel_take), so it blocks as an early one does.  (Draining
	 * it here would mean making the shared fd non-blocking for a moment,
	 * and a waiter arriving then got EAGAIN.) */
	c->retired = true;
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_lock(&retired_lock);
	c->retired_next = retired_channels;
	retired_channels = c;
	pthread_mutex_unlock(&retired_lock);
}

void rcm_queue_event(struct rcm_id *id, struct rcm_event *e)
{
	struct rcm_channel *c = id->chan;
	uint64_t one = 1;

	/* The count goes up with the entry, under the lock, so the eventfd
	 * always counts exactly the entries queued (dead ones included). */
	pthread_mutex_lock(&c->lock);
	e->next = NULL;
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	if (write(c->ch.fd, &one, sizeof(one)) != sizeof(one))
		perror("softrnic: rdma_cm event channel");
	pthread_mutex_unlock(&c->lock);
}

struct rcm_event *rcm_new_event(struct rcm_id *id, enum rdma_cm_event_type type, int status)
{
	struct rcm_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	e->cm_type = CM_EV_NTYPES;
	return e;
}

/* Takes the first live event of the channel, blocking unless the fd is
 * non-blocking (EAGAIN then).  Entries of ids destroyed or migrated since
 * they were queued are dead: freed here and skipped. */
int rcm_channel_take(struct rcm_channel *c, struct rcm_event **out)
{
	struct rcm_event *e;
	uint64_t v;
	ssize_t n;

	for (;;) {
		do
			n = read(c->ch.fd, &v, sizeof(v));
		while (n < 0 && errno == EINTR);
		if (n != sizeof(v))
			return n < 0 ? errno : EIO;
		pthread_mutex_lock(&c->lock);
		e = c->head;
		if (e) {
			c->head = e->next;
			if (!c->head)
				c->tail = NULL;
		}
		bool retired = c->retired;
		pthread_mutex_unlock(&c->lock);
		if (!e && retired)
			continue;       /* the count of an entry freed with the channel */
		if (!e)
			return EAGAIN;
		if (!e->dead) {
			*out = e;
			return 0;
		}
		free(e);
	}
}

int rdma_migrate_id(struct rdma_cm_id *cmid, struct rdma_event_channel *channel)
{
	struct rcm_id *id = to_rcm_id(cmid);
	struct rcm_channel *to;

	/* rdma-core: a synchronous id has no channel to leave. */
	if (!cmid || (id->sync && !channel))
		return rcm_fail(EINVAL);
	to = channel ? (struct rcm_channel *)channel : rcm_channel_create(true);
	if (!to)
		return rcm_fail(ENOMEM);
	/* Move the events queued for this id, under the device lock so no
	 * new one lands on the old channel meanwhile: each is copied to the
	 * new channel and the original dies in the old one. */
	srt_lock(rcm.dev);
	struct rcm_channel *from = id->chan;
	struct rcm_event *moved = NULL, **mtail = &moved;
	pthread_mutex_lock(&from->lock);
	for (struct rcm_event *e = from->head; e; e = e->next) {
		if (e->dead || e->ev.id != cmid)
			continue;
		struct rcm_event *copy = malloc(sizeof(*copy));
		if (!copy)
			continue;       /* the event is lost, as on a full queue */
		*copy = *e;
		if (e->ev.param.conn.private_data == e->private_data)
			copy->ev.param.conn.private_data = copy->private_data;
		copy->next = NULL;
		*mtail = copy;
		mtail = &copy->next;
		e->dead = true;
	}
	pthread_mutex_unlock(&from->lock);
	id->chan = to;
	id->sync = channel == NULL;
	cmid->channel = &to->ch;
	for (struct rcm_event *e = moved; e;) {
		struct rcm_event *next = e->next;
		rcm_queue_event(id, e);
		e = next;
	}
	srt_unlock(rcm.dev);
	if (from->internal)
		rcm_channel_destroy(from);
	return 0;
}
