/*
 * cma.c — the RDMA connection manager API of librdmacm.so.1 over softrnic's
 * IB CM (src/cm): event channels, ids, listen / connect / accept / reject /
 * disconnect, and the events that tell the program what happened.
 *
 * The cm is created once per process, on the first call that needs it,
 * and attached to the process's softrnic device as the agent that owns
 * QP1 (srt_set_agent).  Its events arrive with the device lock held
 * (cm_event below); they are copied into rcm_events and queued on the
 * event channel of the rdma_cm_id they concern.  rdma_get_cm_event then
 * does, in the program's thread, what rdma-core's librdmacm does there:
 * on a REP it moves the QP to RTR and RTS and sends the RTU before it
 * reports ESTABLISHED.
 *
 * Mapping of cm events (as the kernel's cma.c maps ib_cm events):
 *   REQ received       -> CONNECT_REQUEST on a new id (listen_id set)
 *   REP received       -> ESTABLISHED (QP moved, RTU sent), or
 *                         CONNECT_RESPONSE when the id has no QP
 *   RTU / establish    -> ESTABLISHED
 *   REJ received       -> REJECTED, status = the REJ reason (8: nobody
 *                         listens on that port; 28: rdma_reject)
 *   REQ/REP timeout    -> UNREACHABLE, status -ETIMEDOUT
 *   DREQ received, our disconnect done -> DISCONNECTED
 *   SIDR REQ / REP     -> CONNECT_REQUEST / ESTABLISHED (param.ud)
 * TimeWait exits are not reported: no program here waits for them, and a
 * synchronous id would keep one unread.  Trade-off, named: the kernel
 * reports RDMA_CM_EVENT_TIMEWAIT_EXIT.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "compat/rdmacm/rdmacm_int.h"
#include "runtime/share_steer.h"
#include "wire/mad.h"

struct rcm_global rcm = { .lock = PTHREAD_MUTEX_INITIALIZER };
/* Guards rcm.all; taken inside the device lock (ids are made in cm events). */
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the cm and its io ---------------------------------------------------- */

static void io_send_mad(void *ctx, const uint8_t dgid[16], const uint8_t mad[256])
{
	struct rnic_gid g;
	(void)ctx;
	memcpy(g.raw, dgid, 16);
	(void)rnic_gsi_send(srt_rnic(rcm.dev), &g, WIRE_GSI_QPN, mad, WIRE_MAD_LEN);
}

static void agent_gsi_receive(void *ctx, const struct rnic_gid *src, uint32_t src_qpn, const uint8_t *mad,
			      size_t len, uint64_t now)
{
	(void)ctx;
	(void)src_qpn;
	cm_receive(rcm.cm, src->raw, mad, len, now);
}

/* ---- early REQs on one host ---------------------------------------------------
 * perftest -R and qperf -cm1 open a connection right after telling their
 * server (over another channel) to expect it; the server then creates its
 * listener.  The kernel's address and route resolution take long enough
 * that the REQ arrives after the listen; softrnic's take microseconds, so
 * now and then the REQ comes first and is refused (REJ 8, or SIDR status
 * 1), which those programs do not survive (on one host and across a
 * link alike).  So a refused request is sent again every
 * RCM_EARLY_RETRY_NS, up to RCM_EARLY_RETRIES times — on one host to the
 * device the loopback registry names by then, as the listener may only
 * now have appeared — before the program hears REJECTED.  Trade-off: a
 * connect to a port nobody listens on is refused after 100 ms
 * (RCM_EARLY_RETRIES * RCM_EARLY_RETRY_NS) instead of at once as on the
 * kernel; a CM that resolved addresses as slowly as the kernel's would
 * not need it. */
#define RCM_EARLY_RETRY_NS (2ull * 1000 * 1000)
#define RCM_EARLY_RETRIES 50

static int send_request(struct rcm_id *id, uint64_t now);

/* Device lock held: arm (at > 0) or disarm (0) an id's resend.  The
 * waiting ids are a list in deadline order (every resend is due
 * RCM_EARLY_RETRY_NS after the refusal, so one arriving later goes at or
 * near the tail): the next deadline is the head's, found in O(1), not by
 * walking every id — the runtime asks for it on every post_send. */
static void set_retry(struct rcm_id *id, uint64_t at)
{
	if (id->retry_at) {
		rcm.n_early--;
		if (id->prev_early)
			id->prev_early->next_early = id->next_early;
		else
			rcm.early_head = id->next_early;
		if (id->next_early)
			id->next_early->prev_early = id->prev_early;
		else
			rcm.early_tail = id->prev_early;
		id->next_early = id->prev_early = NULL;
	}
	id->retry_at = at;
	if (!at)
		return;
	rcm.n_early++;
	struct rcm_id *p = rcm.early_tail;
	while (p && p->retry_at > at)
		p = p->prev_early;
	id->prev_early = p;
	id->next_early = p ? p->next_early : rcm.early_head;
	if (id->next_early)
		id->next_early->prev_early = id;
	else
		rcm.early_tail = id;
	if (p)
		p->next_early = id;
	else
		rcm.early_head = id;
}

/* Device lock held. */
static uint64_t early_deadline(void)
{
	return rcm.early_head ? rcm.early_head->retry_at : UINT64_MAX;
}

/* Device lock held: send the due requests again, at most 32 a call as
 * before (the rest on the next).  The due ids are taken off the list
 * first (sending may create ids); none can be freed meanwhile, because
 * rdma_destroy_id takes the device lock (and clears retry_at) before it
 * frees. */
static void early_retry(uint64_t now)
{
	struct rcm_id *due[32];
	unsigned n = 0;

	while (rcm.early_head && rcm.early_head->retry_at <= now && n < sizeof(due) / sizeof(due[0])) {
		due[n++] = rcm.early_head;
		set_retry(rcm.early_head, 0);
	}
	for (unsigned k = 0; k < n; k++) {
		struct rcm_id *i = due[k];
		if (i->cm) {
			cm_id_set_user(i->cm, NULL);
			cm_destroy_id(i->cm, now);
			i->cm = NULL;
		}
		/* On one host the listener may have appeared since: resolve
		 * again. */
		struct sockaddr_storage dst = i->id.route.addr.dst_storage;
		if (i->local_peer && rcm_resolve_dst(i, (struct sockaddr *)&dst, i->remote_gid) == 0) {
			memcpy(i->req.dgid, i->remote_gid, 16);
			rcm_fill_route(i);
		}
		if (send_request(i, now)) {
			/* Cannot send: report the refusal after all. */
			struct rcm_event *e = rcm_new_event(i, RDMA_CM_EVENT_REJECTED, CM_REJ_INVALID_SERVICE_ID);
			if (e)
				rcm_queue_event(i, e);
		}
	}
}

static uint64_t agent_next_deadline(void *ctx)
{
	uint64_t d = cm_next_deadline(rcm.cm), e = early_deadline();
	(void)ctx;
	return e < d ? e : d;
}

/* The cm's counters for `softrnic stats`, named cm_<counter>. */
static size_t agent_counters(void *ctx, struct srt_named_counter *out, size_t cap)
{
	const struct cm_counters *c = cm_counters(rcm.cm);
	size_t n = 0;
	(void)ctx;
#define CM_PUBLISH(ctr)                                                        \
	if (n < cap) {                                                         \
		snprintf(out[n].name, sizeof(out[n].name), "cm_%s", #ctr);     \
		out[n].value = c->ctr;                                         \
		n++;                                                           \
	}
	CM_COUNTER_LIST(CM_PUBLISH)
#undef CM_PUBLISH
	return n;
}

static void agent_advance(void *ctx, uint64_t now)
{
	(void)ctx;
	cm_advance(rcm.cm, now);
	early_retry(now);
}

static void cm_event(void *ctx, const struct cm_event *ev);

/* SOFTRNIC_CM_TRACE=1: one line per CM state transition on stderr. */
static void trace_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "softrnic: %s\n", line);
}

static unsigned env_uint(const char *name, unsigned dflt, unsigned max)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	v = strtoul(s, &end, 0);
	if (*end || v > max) {
		fprintf(stderr, "softrnic: ignoring %s=%s (0..%u)\n", name, s, max);
		return dflt;
	}
	return (unsigned)v;
}

/* Lock: rcm.lock. */
static int init_locked(void)
{
	struct ibv_device_attr attr;
	struct cm_config cfg;
	int n = 0, e;

	rcm.dev_list = ibv_get_device_list(&n);
	if (!rcm.dev_list || n < 1)
		return ENODEV;
	rcm.verbs = ibv_open_device(rcm.dev_list[0]);
	if (!rcm.verbs)
		return errno ? errno : ENODEV;
	rcm.dev = softrnic_context_device(rcm.verbs);
	if (!rcm.dev || ibv_query_device(rcm.verbs, &attr))
		return ENODEV;
	rcm.default_pd = ibv_alloc_pd(rcm.verbs);
	if (!rcm.default_pd)
		return ENOMEM;

	cm_config_default(&cfg);
	memcpy(cfg.gid, srt_gid(rcm.dev)->raw, 16);
	cfg.ca_guid = attr.node_guid ? attr.node_guid : 1;
	rcm.max_resp_res = attr.max_qp_rd_atom;
	rcm.max_init_depth = attr.max_qp_init_rd_atom;
	cfg.seed = (uint32_t)getpid() * 2654435761u ^ (uint32_t)srt_now();
	/* Over UDP a round trip takes microseconds, not the fabric's
	 * milliseconds: 2^16 * 4.096 us = 268 ms per try, 6 tries, so a
	 * connect to nobody fails within two seconds (librdmacm's defaults,
	 * 20 and 15, would take over a minute). */
	cfg.cm_response_timeout = (uint8_t)env_uint("SOFTRNIC_CM_RESPONSE_TIMEOUT", 16, 31);
	cfg.max_cm_retries = (uint8_t)env_uint("SOFTRNIC_CM_RETRIES", 5, 15);
	/* A consumer that is only slow to take its REQ or REP event (a
	 * loaded host) is waited for as the kernel's rdma_cm does: once the
	 * request comes again, an MRA with its service timeout 24 (68.7 s,
	 * CMA_CM_MRA_SETTING).  A peer that never answers is still found
	 * after the tries above: nobody sends it an MRA. */
	cfg.mra_service_timeout = 24;
	cfg.timewait_ns = 200ull * 1000 * 1000;
	/* A shared host address: our slot in the top bits of every comm ID
	 * (runtime/share_steer.h), so that answers reach this process. */
	unsigned slot;
	if (srt_share_slot(rcm.dev, &slot)) {
		cfg.id_prefix = (uint32_t)slot << SRT_SHARE_COMM_ID_SHIFT;
		cfg.id_prefix_mask = ~0u << SRT_SHARE_COMM_ID_SHIFT;
	}
	struct cm_io io = { .ctx = NULL, .send_mad = io_send_mad, .event = cm_event };
	rcm.cm = cm_create(&cfg, &io);
	if (!rcm.cm)
		return ENOMEM;
	if (env_uint("SOFTRNIC_CM_TRACE", 0, 1))
		cm_set_trace(rcm.cm, trace_line, NULL);
	struct srt_agent agent = { .ctx = NULL, .gsi_receive = agent_gsi_receive,
				   .next_deadline = agent_next_deadline, .advance = agent_advance,
				   .counters = agent_counters };
	e = srt_set_agent(rcm.dev, &agent);
	if (e)
		return e;
	return 0;
}

/* The process whose ids these are (a child of fork() shares the memory,
 * not the connections). */
static pid_t rcm_owner;

int rcm_init(void)
{
	int e = 0;

	pthread_mutex_lock(&rcm.lock);
	if (!rcm.ready) {
		e = init_locked();
		if (!e) {
			rcm.ready = true;
			rcm_owner = getpid();
		}
	}
	pthread_mutex_unlock(&rcm.lock);
	return e;
}

/* At exit, as the kernel does when a process dies with connections: a
 * DREQ for every established id, so that the peer learns at once (libiscsi
 * never calls rdma_disconnect; its target would otherwise wait for its own
 * keep-alive to fail).  The DREQs leave when the device lock is released;
 * nobody waits for the DREPs.  A process ended by a signal runs no
 * destructor: its peers learn from their QPs' retries or keep-alives
 * (docs/rdmacm.md). */
__attribute__((destructor)) static void rcm_disconnect_at_exit(void)
{
	unsigned sent = 0;

	if (!rcm.ready || rcm_owner != getpid())
		return;
	srt_lock(rcm.dev);     /* then list_lock, as request_received takes them */
	pthread_mutex_lock(&list_lock);
	for (struct rcm_id *id = rcm.all; id; id = id->next_all)
		if (id->cm && cm_id_state(id->cm) == CM_ST_ESTABLISHED &&
		    cm_disconnect(id->cm, NULL, 0, srt_now()) == 0)
			sent++;
	pthread_mutex_unlock(&list_lock);
	srt_unlock(rcm.dev);
	if (sent)
		srt_kick(rcm.dev);
}

/* ---- event channels ------------------------------------------------------ */

static struct rcm_channel *channel_create(bool internal)
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
	c = channel_create(false);
	return c ? &c->ch : NULL;
}

static void channel_destroy(struct rcm_channel *c)
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
	uint64_t v;
	int fl;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	for (e = c->head; e; e = next) {
		next = e->next;
		free(e);
	}
	c->head = c->tail = NULL;
	/* Drain the count of the entries just freed (semaphore mode: one
	 * per read), so a late waiter blocks instead of finding no entry. */
	fl = fcntl(c->ch.fd, F_GETFL);
	fcntl(c->ch.fd, F_SETFL, fl | O_NONBLOCK);
	while (read(c->ch.fd, &v, sizeof(v)) == sizeof(v))
		;
	fcntl(c->ch.fd, F_SETFL, fl & ~O_NONBLOCK);
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
static int channel_take(struct rcm_channel *c, struct rcm_event **out)
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
		pthread_mutex_unlock(&c->lock);
		if (!e)
			return EAGAIN;  /* cannot happen: one count per entry */
		if (!e->dead) {
			*out = e;
			return 0;
		}
		free(e);
	}
}

/* ---- ids ------------------------------------------------------------------ */

static struct rcm_id *id_alloc(struct rcm_channel *chan, bool sync, void *context, enum rdma_port_space ps,
			       enum ibv_qp_type qp_type)
{
	struct rcm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->chan = chan;
	id->sync = sync;
	id->id.channel = &chan->ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qp_type;
	id->id.verbs = rcm.verbs;
	id->id.port_num = 1;
	/* As rdma-core: an id on a device carries that device's default PD. */
	id->id.pd = rcm.default_pd;
	id->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
	/* The PSN we expect first, announced in our REQ or REP, known from
	 * the start: a program that moves its own QP (rdma_init_qp_attr) may
	 * do so before rdma_accept / the REP. */
	id->rq_psn = (uint32_t)((srt_now() ^ (uintptr_t)id) * 2654435761u) & 0xffffff;
	id->retry_count = 7;
	id->rnr_retry_count = 7;
	id->ack_timeout = CM_DEFAULT_ACK_TIMEOUT;
	id->mtu = srt_active_mtu(rcm.dev);
	pthread_mutex_lock(&list_lock);
	id->prev_all = NULL;
	id->next_all = rcm.all;
	if (rcm.all)
		rcm.all->prev_all = id;
	rcm.all = id;
	pthread_mutex_unlock(&list_lock);
	return id;
}

static void id_unlink(struct rcm_id *id)
{
	pthread_mutex_lock(&list_lock);
	if (id->prev_all)
		id->prev_all->next_all = id->next_all;
	else
		rcm.all = id->next_all;
	if (id->next_all)
		id->next_all->prev_all = id->prev_all;
	pthread_mutex_unlock(&list_lock);
}

/* The QP type of an id, as the kernel's ucma_get_qp_type decides it: TCP
 * is RC and UDP / IPoIB are UD whatever the caller asked; the IB port
 * space takes the caller's type; any other port space is EINVAL. */
static int qp_type_of(enum rdma_port_space ps, enum ibv_qp_type asked, enum ibv_qp_type *out)
{
	switch (ps) {
	case RDMA_PS_TCP:
		*out = IBV_QPT_RC;
		return 0;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		*out = IBV_QPT_UD;
		return 0;
	case RDMA_PS_IB:
		*out = asked;
		return 0;
	default:
		return EINVAL;
	}
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
		   enum rdma_port_space ps)
{
	/* rdma-core: UDP and IPoIB ids are UD, every other one RC. */
	return rcm_create_id2(channel, out, context, ps,
			      ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC);
}

int rcm_create_id2(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
		   enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct rcm_channel *chan;
	struct rcm_id *id;
	int e;

	if (!out)
		return rcm_fail(EINVAL);
	e = qp_type_of(ps, qp_type, &qp_type);
	if (e)
		return rcm_fail(e);
	e = rcm_init();
	if (e)
		return rcm_fail(e);
	chan = channel ? (struct rcm_channel *)channel : channel_create(true);
	if (!chan)
		return rcm_fail(ENOMEM);
	id = id_alloc(chan, channel == NULL, context, ps, qp_type);
	if (!id) {
		if (!channel)
			channel_destroy(chan);
		return rcm_fail(ENOMEM);
	}
	*out = &id->id;
	return 0;
}

/* Kills the queued events of `id` (the id is going): they stay in the
 * queue, counted, and channel_take skips them.  Connection requests queued
 * for a listener that goes are refused. */
static void purge_events(struct rcm_id *id)
{
	struct rcm_channel *c = id->chan;
	struct rcm_id *refuse[64];
	unsigned n = 0;

	pthread_mutex_lock(&c->lock);
	for (struct rcm_event *e = c->head; e; e = e->next) {
		if (e->dead || (e->ev.id != &id->id && e->ev.listen_id != &id->id))
			continue;
		e->dead = true;
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.listen_id == &id->id &&
		    n < sizeof(refuse) / sizeof(refuse[0]))
			refuse[n++] = to_rcm_id(e->ev.id);
	}
	pthread_mutex_unlock(&c->lock);
	for (unsigned i = 0; i < n; i++) {
		rdma_reject(&refuse[i]->id, NULL, 0);
		rdma_destroy_id(&refuse[i]->id);
	}
}

int rdma_destroy_id(struct rdma_cm_id *cmid)
{
	struct rcm_id *id;

	if (!cmid)
		return rcm_fail(EINVAL);
	id = to_rcm_id(cmid);
	srt_lock(rcm.dev);
	id->state = RCM_DESTROYING;
	set_retry(id, 0);
	if (id->cm) {
		cm_id_set_user(id->cm, NULL);
		cm_destroy_id(id->cm, srt_now());
		id->cm = NULL;
	}
	bool was_listening = id->listen != NULL;
	struct rcm_id *twin = id->twin;
	if (twin) {
		/* The twin goes on listening alone, with the cm's listen. */
		twin->twin = NULL;
		id->twin = NULL;
		if (id->listen) {
			cm_unlisten(id->listen);
			id->listen = NULL;
			if (cm_listen(rcm.cm, id->service_id, twin, &twin->listen) == 0)
				was_listening = false;  /* the steering stays the twin's */
		}
	}
	if (id->listen) {
		cm_unlisten(id->listen);
		id->listen = NULL;
	}
	srt_unlock(rcm.dev);
	if (was_listening)
		srt_share_listen(rcm.dev, id->service_id, false);
	srt_kick(rcm.dev);
	if (id->registered)
		rcm_unregister_listener(id);
	purge_events(id);
	free(id->sync_event);
	rcm_leave_all(id);
	free(id->ep_qp_attr);
	free(id->id.route.path_rec);
	id_unlink(id);
	if (id->chan->internal)
		channel_destroy(id->chan);
	free(id);
	return 0;
}

/* ---- cm events -> rdma_cm events (device lock held) ------------------------ */

static void copy_private(struct rcm_event *e, const struct cm_event *ev, size_t skip)
{
	if (!ev->private_data || ev->private_data_len <= skip)
		return;
	e->private_data_len = (uint8_t)(ev->private_data_len - skip);
	memcpy(e->private_data, ev->private_data + skip, e->private_data_len);
	e->ev.param.conn.private_data = e->private_data;
	e->ev.param.conn.private_data_len = e->private_data_len;
}

/* A REQ or SIDR_REQ for a listener: a new id, and CONNECT_REQUEST on the
 * listener's channel. */
/* The QP attributes a REQ/REP exchange gave (cm_qp_attr_active /
 * _passive) into the id, where rdma_init_qp_attr reads them; the path MTU
 * no larger than our port's, the traffic class unless the program chose a
 * TOS. */
static void take_qp_attr(struct rcm_id *id, const struct cm_qp_attr *a)
{
	id->remote_qpn = a->dest_qp_num;
	id->rq_psn = a->rq_psn;
	id->sq_psn = a->sq_psn;
	if (a->path_mtu < id->mtu)
		id->mtu = a->path_mtu;
	id->responder_resources = a->max_dest_rd_atomic > 128 ? 128 : a->max_dest_rd_atomic;
	id->initiator_depth = a->max_rd_atomic > 128 ? 128 : a->max_rd_atomic;
	id->ack_timeout = a->timeout;
	id->retry_count = a->retry_cnt;
	id->rnr_retry_count = a->rnr_retry;
	if (!id->tos_set)
		id->tos = a->traffic_class;
}

/* The family a listener takes requests for. */
static sa_family_t listen_family(const struct rcm_id *id)
{
	return id->bound_family == AF_INET6 ? AF_INET6 : AF_INET;
}

static void request_received(const struct cm_event *ev)
{
	struct rcm_id *l = ev->listen_user;
	struct wire_cma_hdr hdr;
	struct rcm_channel *chan;
	struct rcm_id *id;
	struct rcm_event *e;
	bool sidr = ev->type == CM_EV_SIDR_REQ_RECEIVED;

	/* The client looked this host's port up just before (port_registry.c). */
	rcm_registry_drain();
	if (!l || l->state != RCM_LISTEN || !ev->private_data ||
	    wire_cma_hdr_decode(ev->private_data, ev->private_data_len, &hdr) != 0) {
		/* Not an RDMA-CM IP request (or nobody to give it to). */
		if (sidr)
			cm_sidr_reply(ev->id, CM_SIDR_REJECT, 0, 0, NULL, 0, srt_now());
		else
			cm_reject(ev->id, CM_REJ_INVALID_SERVICE_ID, NULL, 0, NULL, 0, srt_now());
		cm_destroy_id(ev->id, srt_now());
		return;
	}
	/* The listener of the request's IP version (a twin of the other
	 * family, or one that is not AFONLY, takes the rest). */
	sa_family_t want = hdr.ip_version == 6 ? AF_INET6 : AF_INET;
	if (listen_family(l) != want && l->twin && listen_family(l->twin) == want)
		l = l->twin;
	chan = l->sync ? channel_create(true) : l->chan;
	id = chan ? id_alloc(chan, l->sync, l->id.context, l->id.ps, l->id.qp_type) : NULL;
	e = id ? rcm_new_event(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0) : NULL;
	if (!e) {
		if (id) {
			id_unlink(id);
			free(id);
		}
		if (chan && l->sync)
			channel_destroy(chan);
		cm_reject(ev->id, CM_REJ_NO_RESOURCES, NULL, 0, NULL, 0, srt_now());
		cm_destroy_id(ev->id, srt_now());
		return;
	}
	id->cm = ev->id;
	id->listener = l;
	id->state = RCM_REQ_RCVD;
	cm_id_set_user(ev->id, id);
	memcpy(id->remote_gid, ev->remote_gid, 16);
	/* Addresses from the RDMA-CM header: the peer's is the source.
	 * IPv6 (ip_version 6) keeps all 16 bytes. */
	uint16_t ps, port = 0;
	bool have_port = wire_rdma_cm_service_id_parse(cm_id_service_id(ev->id), &ps, &port);
	if (hdr.ip_version == 6) {
		struct sockaddr_in6 *src6 = &id->id.route.addr.src_sin6, *dst6 = &id->id.route.addr.dst_sin6;
		memset(src6, 0, sizeof(*src6));
		memset(dst6, 0, sizeof(*dst6));
		src6->sin6_family = dst6->sin6_family = AF_INET6;
		memcpy(&src6->sin6_addr, hdr.dst_addr, 16);
		memcpy(&dst6->sin6_addr, hdr.src_addr, 16);
		if (have_port)
			src6->sin6_port = htobe16(port);
		dst6->sin6_port = htobe16(hdr.src_port);
	} else {
		struct sockaddr_in *src = &id->id.route.addr.src_sin, *dst = &id->id.route.addr.dst_sin;
		src->sin_family = AF_INET;
		memcpy(&src->sin_addr, hdr.dst_addr + 12, 4);
		if (have_port)
			src->sin_port = htobe16(port);
		dst->sin_family = AF_INET;
		memcpy(&dst->sin_addr, hdr.src_addr + 12, 4);
		dst->sin_port = htobe16(hdr.src_port);
	}
	id->tos = l->tos;
	id->tos_set = l->tos_set;
	id->ack_timeout = l->ack_timeout;

	e->ev.listen_id = &l->id;
	e->cm_type = ev->type;
	memcpy(e->remote_gid, ev->remote_gid, 16);
	if (sidr) {
		copy_private(e, ev, WIRE_CMA_HDR_LEN);
		e->ev.param.ud.private_data = e->ev.param.conn.private_data;
		e->ev.param.ud.private_data_len = e->ev.param.conn.private_data_len;
	} else {
		const struct cm_req_info *r = &ev->u.req;
		e->info.req = *r;
		id->peer_req = *r;
		/* Our QP from the REQ, and from a REP with what rdma_accept
		 * uses when the program gives no values (NULL or RDMA_MAX_*,
		 * as rdma-core keeps them): a program may move its QP before
		 * it accepts. */
		struct cm_rep_param rep = {
			.starting_psn = id->rq_psn,
			.responder_resources = r->initiator_depth > 128 ? 128 : r->initiator_depth,
			.initiator_depth = r->responder_resources > 128 ? 128 : r->responder_resources,
		};
		struct cm_qp_attr a;
		cm_qp_attr_passive(r, &rep, &a);
		take_qp_attr(id, &a);
		copy_private(e, ev, WIRE_CMA_HDR_LEN);
		/* From the receiver's point of view, as librdmacm reports it:
		 * the reads the peer will issue are our responder resources. */
		e->ev.param.conn.responder_resources = r->initiator_depth;
		e->ev.param.conn.initiator_depth = r->responder_resources;
		e->ev.param.conn.flow_control = r->flow_control;
		e->ev.param.conn.retry_count = r->retry_count;
		e->ev.param.conn.rnr_retry_count = r->rnr_retry_count;
		e->ev.param.conn.srq = r->srq;
		e->ev.param.conn.qp_num = r->qpn;
	}
	rcm_fill_route(id);     /* with the MTU and traffic class just taken */
	rcm_queue_event(l, e);
}

static void cm_event(void *ctx, const struct cm_event *ev)
{
	struct rcm_id *id = ev->user;
	struct rcm_event *e;
	(void)ctx;

	if (ev->type == CM_EV_REQ_RECEIVED || ev->type == CM_EV_SIDR_REQ_RECEIVED) {
		request_received(ev);
		return;
	}
	if (!id || id->state == RCM_DESTROYING || ev->type == CM_EV_MRA_RECEIVED)
		return;
	/* A request refused because its peer on this host has not listened
	 * yet: send it again later ("early REQs" above). */
	bool refused = (ev->type == CM_EV_REJ_RECEIVED && ev->rej_reason == CM_REJ_INVALID_SERVICE_ID &&
			ev->rej_msg == 0) ||
		       (ev->type == CM_EV_SIDR_REP_RECEIVED && ev->u.sidr_rep.status == CM_SIDR_UNSUPPORTED);
	if (refused && id->state == RCM_CONNECT && id->early_retries < RCM_EARLY_RETRIES) {
		id->early_retries++;
		set_retry(id, srt_now() + RCM_EARLY_RETRY_NS);
		return;
	}
	e = rcm_new_event(id, RDMA_CM_EVENT_CONNECT_ERROR, 0);
	if (!e)
		return;
	e->cm_type = ev->type;
	memcpy(e->remote_gid, ev->remote_gid, 16);
	switch (ev->type) {
	case CM_EV_REP_RECEIVED:
		e->info.rep = ev->u.rep;
		e->ev.event = RDMA_CM_EVENT_CONNECT_RESPONSE;   /* finished in rdma_get_cm_event */
		copy_private(e, ev, 0);
		break;
	case CM_EV_ESTABLISHED:
		e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
		copy_private(e, ev, 0);
		break;
	case CM_EV_REJ_RECEIVED:
		e->ev.event = RDMA_CM_EVENT_REJECTED;
		e->ev.status = ev->rej_reason;
		copy_private(e, ev, 0);
		break;
	case CM_EV_REQ_TIMEOUT:
	case CM_EV_REP_TIMEOUT:
	case CM_EV_SIDR_TIMEOUT:
		e->ev.event = RDMA_CM_EVENT_UNREACHABLE;
		e->ev.status = -ETIMEDOUT;
		break;
	case CM_EV_DREQ_RECEIVED:
		id->peer_disconnected = true;
		e->ev.event = RDMA_CM_EVENT_DISCONNECTED;
		copy_private(e, ev, 0);
		break;
	case CM_EV_DISCONNECT_DONE:
		e->ev.event = RDMA_CM_EVENT_DISCONNECTED;
		break;
	case CM_EV_TIMEWAIT_EXIT:
		/* The kernel's cma passes the IB CM's TimeWait exit on (after
		 * DREQ/DREP, a DREQ that timed out, or a REJ of a REP): the
		 * moment a program may reuse what the connection held; tgt
		 * frees an iSER connection only then. */
		e->ev.event = RDMA_CM_EVENT_TIMEWAIT_EXIT;
		break;
	case CM_EV_SIDR_REP_RECEIVED:
		e->sidr_status = ev->u.sidr_rep.status;
		e->sidr_qpn = ev->u.sidr_rep.qpn;
		e->sidr_qkey = ev->u.sidr_rep.qkey;
		if (ev->u.sidr_rep.status == CM_SIDR_SUCCESS) {
			e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
		} else {
			e->ev.event = RDMA_CM_EVENT_UNREACHABLE;
			e->ev.status = ev->u.sidr_rep.status;
		}
		copy_private(e, ev, 0);
		e->ev.param.ud.private_data = e->ev.param.conn.private_data;
		e->ev.param.ud.private_data_len = e->ev.param.conn.private_data_len;
		break;
	default:
		free(e);
		return;
	}
	rcm_queue_event(id, e);
}

/* ---- reading events ------------------------------------------------------ */

static void fill_ud_param(struct rcm_id *id, struct rcm_event *e)
{
	struct ibv_ah_attr *ah = &e->ev.param.ud.ah_attr;

	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	memcpy(ah->grh.dgid.raw, id->remote_gid, 16);
	ah->grh.hop_limit = 64;
	ah->grh.traffic_class = id->tos;
	e->ev.param.ud.qp_num = e->sidr_qpn;
	e->ev.param.ud.qkey = e->sidr_qkey;
}

/* The program's-thread part of an event (rdma-core's rdma_get_cm_event
 * does the same work there). */
static void finish_event(struct rcm_event *e)
{
	struct rcm_id *id = to_rcm_id(e->ev.id);
	uint64_t now;

	switch (e->ev.event) {
	case RDMA_CM_EVENT_CONNECT_RESPONSE: {
		const struct cm_rep_info *r = &e->info.rep;
		struct cm_qp_attr a;
		cm_qp_attr_active(&id->req, r, &a);
		take_qp_attr(id, &a);
		/* From the receiver's point of view, as librdmacm reports it. */
		e->ev.param.conn.responder_resources = r->initiator_depth;
		e->ev.param.conn.initiator_depth = r->responder_resources;
		e->ev.param.conn.rnr_retry_count = r->rnr_retry_count;
		e->ev.param.conn.srq = r->srq;
		e->ev.param.conn.qp_num = r->qpn;
		if (!id->id.qp) {
			id->state = RCM_CONNECT_RESPONSE;
			break;
		}
		int err = rcm_qp_to_rtr_rts(id);
		now = srt_now();
		srt_lock(rcm.dev);
		if (!id->cm) {
			err = ECONNABORTED;
		} else if (err) {
			cm_reject(id->cm, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0, now);
		} else {
			cm_send_rtu(id->cm, NULL, 0, now);
		}
		srt_unlock(rcm.dev);
		srt_kick(rcm.dev);
		if (err) {
			e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
			e->ev.status = -err;
			rcm_qp_to_error(id);
		} else {
			e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
			id->state = RCM_CONNECTED;
		}
		break;
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		if (e->cm_type == CM_EV_SIDR_REP_RECEIVED)
			fill_ud_param(id, e);
		id->state = RCM_CONNECTED;
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
		if (e->cm_type == CM_EV_SIDR_REP_RECEIVED || e->cm_type == CM_EV_SIDR_TIMEOUT)
			break;
		rcm_qp_to_error(id);
		id->state = RCM_DISCONNECTED;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* The QP is left alone, as rdma-core leaves it: the program
		 * answers with rdma_disconnect (which moves it to ERR), and may
		 * be destroying the QP in another thread right now (cmtime). */
		id->state = RCM_DISCONNECTED;
		break;
	default:
		break;
	}
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct rcm_event *e;
	int err;

	if (!channel || !event)
		return rcm_fail(EINVAL);
	err = channel_take((struct rcm_channel *)channel, &e);
	if (err)
		return rcm_fail(err);
	finish_event(e);
	*event = &e->ev;
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event)
		return rcm_fail(EINVAL);
	free(event);    /* struct rcm_event starts with it */
	return 0;
}

/* Synchronous ids: wait on the id's own channel for the event that ends
 * an operation; the previous one is freed, this one kept in id->event. */
int rcm_wait_event(struct rcm_id *id, enum rdma_cm_event_type want, struct rcm_event **out)
{
	struct rcm_event *e;
	int err;

	for (;;) {
		err = channel_take(id->chan, &e);
		if (err)
			return err;
		finish_event(e);
		if (e->ev.id == &id->id || e->ev.listen_id == &id->id)
			break;
		free(e);
	}
	free(id->sync_event);
	id->sync_event = e;
	id->id.event = &e->ev;
	if (out)
		*out = e;
	if (e->ev.event != want)
		return e->ev.event == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED :
		       e->ev.status < 0 ? -e->ev.status : ECONNABORTED;
	return 0;
}

/* ---- listen, connect, accept ------------------------------------------------ */

/* A listener of this process on service_id that id may share the port
 * with: as the kernel's cma_check_port, both set AFONLY and bound
 * addresses of different families (tgt listens on 0.0.0.0 and [::] so). */
static struct rcm_id *listening_twin_candidate(uint64_t service_id, const struct rcm_id *id)
{
	struct rcm_id *found = NULL;

	pthread_mutex_lock(&list_lock);
	for (struct rcm_id *o = rcm.all; o && !found; o = o->next_all)
		if (o != id && o->state == RCM_LISTEN && o->service_id == service_id && !o->twin &&
		    o->afonly && id->afonly && listen_family(o) != listen_family(id))
			found = o;
	pthread_mutex_unlock(&list_lock);
	return found;
}

static bool pair_with_twin(struct rcm_id *id, struct rcm_id *other)
{
	srt_lock(rcm.dev);
	id->twin = other;
	other->twin = id;
	srt_unlock(rcm.dev);
	return true;
}

int rdma_listen(struct rdma_cm_id *cmid, int backlog)
{
	struct rcm_id *id = to_rcm_id(cmid);
	int e;

	/* The kernel's rdma_listen: an idle id is bound to the any address
	 * first; only a bound one may listen (a resolved, connecting or
	 * listening one is EINVAL). */
	if (!cmid || (id->state != RCM_IDLE && id->state != RCM_ADDR_BOUND))
		return rcm_fail(EINVAL);
	if (id->state == RCM_IDLE) {
		struct sockaddr_in any = { .sin_family = AF_INET };
		if (rcm_bind(id, (struct sockaddr *)&any))
			return -1;
	}
	e = rcm_register_listener(id);
	if (e)
		return rcm_fail(e);
	rcm_registry_drain();
	uint64_t service_id = wire_rdma_cm_service_id(rcm_ps(id), rcm_src_port(id));
	/* On a shared host address, REQs for the service must come to us:
	 * another process of the host listening on it is EADDRINUSE, as
	 * for a port bound twice. */
	struct rcm_id *other = listening_twin_candidate(service_id, id);
	e = other ? 0 : srt_share_listen(rcm.dev, service_id, true);
	if (e) {
		rcm_unregister_listener(id);
		return rcm_fail(e);
	}
	srt_lock(rcm.dev);
	e = cm_listen(rcm.cm, service_id, id, &id->listen);
	srt_unlock(rcm.dev);
	if (e == EADDRINUSE && other && pair_with_twin(id, other)) {
		/* The twin holds the cm's listen and the shared steering. */
		id->service_id = service_id;
		id->backlog = backlog;
		id->state = RCM_LISTEN;
		return 0;
	}
	if (e) {
		if (!other)
			srt_share_listen(rcm.dev, service_id, false);
		rcm_unregister_listener(id);
		return rcm_fail(e);
	}
	id->service_id = service_id;
	id->backlog = backlog;
	id->state = RCM_LISTEN;
	return 0;
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **out)
{
	struct rcm_id *l = to_rcm_id(listen);
	struct rcm_event *e;
	int err;

	if (!listen || !out || l->state != RCM_LISTEN)
		return rcm_fail(EINVAL);
	if (!l->sync)
		return rcm_fail(EINVAL);
	err = rcm_wait_event(l, RDMA_CM_EVENT_CONNECT_REQUEST, &e);
	if (err)
		return rcm_fail(err);
	struct rcm_id *child = to_rcm_id(e->ev.id);
	/* rdma_create_ep's QP settings apply to the ids it accepts. */
	if (l->ep_qp_attr) {
		struct ibv_qp_init_attr attr = *l->ep_qp_attr;
		if (rdma_create_qp(&child->id, l->ep_pd, &attr)) {
			err = errno;
			rdma_reject(&child->id, NULL, 0);
			rdma_destroy_id(&child->id);
			return rcm_fail(err);
		}
	}
	child->id.event = &e->ev;
	/* The event stays the child's (acked when it goes or at its next
	 * synchronous call). */
	l->sync_event = NULL;
	l->id.event = NULL;
	child->sync_event = e;
	*out = &child->id;
	return 0;
}

/* A READ/atomic depth the program asked for: RDMA_MAX_RESP_RES /
 * RDMA_MAX_INIT_DEPTH (0xFF) mean "the default" (`dflt`); at most the
 * device's 128. */
static uint8_t rd_depth(uint8_t v, uint8_t dflt)
{
	if (v == 0xFF)
		return dflt;
	return v > 128 ? 128 : v;
}

/* rdma-core's ucma_valid_param, for the TCP port space only: no QP needs
 * a conn_param, and a READ depth above the device's maximum (other than
 * RDMA_MAX_*, "the default") is EINVAL, not clamped. */
static bool valid_param(const struct rcm_id *id, const struct rdma_conn_param *p)
{
	if (id->id.ps != RDMA_PS_TCP)
		return true;
	if (!p)
		return id->id.qp != NULL;
	if (p->responder_resources != RDMA_MAX_RESP_RES && p->responder_resources > rcm.max_resp_res)
		return false;
	if (p->initiator_depth != RDMA_MAX_INIT_DEPTH && p->initiator_depth > rcm.max_init_depth)
		return false;
	return true;
}

/* Device lock held: send the REQ (or SIDR_REQ) saved in the id. */
static int send_request(struct rcm_id *id, uint64_t now)
{
	if (id->id.qp_type == IBV_QPT_UD)
		return cm_sidr_request(rcm.cm, id->remote_gid, id->sidr_service_id, id->req_private,
				       id->req_private_len, cm_get_config(rcm.cm)->cm_response_timeout,
				       cm_get_config(rcm.cm)->max_cm_retries, id, now, &id->cm);
	return cm_connect(rcm.cm, &id->req, id, now, &id->cm);
}

int rdma_connect(struct rdma_cm_id *cmid, struct rdma_conn_param *conn_param)
{
	struct rcm_id *id = to_rcm_id(cmid);
	/* Room for the larger of the two: SIDR_REQ (216) and REQ (92). */
	uint8_t buf[WIRE_CM_SIDR_REQ_PRIVATE_DATA];
	size_t max_user = (cmid && cmid->qp_type == IBV_QPT_UD ? WIRE_CM_SIDR_REQ_PRIVATE_DATA
							       : WIRE_CM_REQ_PRIVATE_DATA) - WIRE_CMA_HDR_LEN;
	uint64_t now;
	int e;

	if (!cmid || id->state != RCM_ROUTE_RESOLVED || !valid_param(id, conn_param))
		return rcm_fail(EINVAL);
	if (conn_param && conn_param->private_data_len > max_user)
		return rcm_fail(EINVAL);
	/* The RDMA-CM header (the kernel's cma_hdr): IPv4 addresses in the
	 * last 4 bytes, IPv6 ones whole, with ip_version saying which. */
	bool v6 = id->id.route.addr.src_sin6.sin6_family == AF_INET6;
	struct wire_cma_hdr hdr = { .cma_version = WIRE_CMA_VERSION, .ip_version = v6 ? 6 : 4,
				    .src_port = rcm_src_port(id) };
	if (v6) {
		memcpy(hdr.src_addr, &id->id.route.addr.src_sin6.sin6_addr, 16);
		memcpy(hdr.dst_addr, &id->id.route.addr.dst_sin6.sin6_addr, 16);
	} else {
		memcpy(hdr.src_addr + 12, &id->id.route.addr.src_sin.sin_addr, 4);
		memcpy(hdr.dst_addr + 12, &id->id.route.addr.dst_sin.sin_addr, 4);
	}
	memset(buf, 0, sizeof(buf));
	wire_cma_hdr_encode(&hdr, buf, WIRE_CMA_HDR_LEN);
	size_t len = WIRE_CMA_HDR_LEN;
	if (conn_param && conn_param->private_data_len) {
		memcpy(buf + len, conn_param->private_data, conn_param->private_data_len);
		len += conn_param->private_data_len;
	}
	uint64_t sid = wire_rdma_cm_service_id(rcm_ps(id), rcm_dst_port(id));
	memcpy(id->req_private, buf, len);
	id->req_private_len = (uint8_t)len;
	id->early_retries = 0;
	if (cmid->qp_type == IBV_QPT_UD) {
		id->sidr_service_id = sid;
	} else {
		struct cm_req_param *p = &id->req;
		if (!cmid->qp && !(conn_param && conn_param->qp_num))
			return rcm_fail(EINVAL);
		cm_req_param_init(rcm.cm, p);
		memcpy(p->dgid, id->remote_gid, 16);
		p->service_id = sid;
		p->qpn = cmid->qp ? cmid->qp->qp_num : conn_param->qp_num;
		p->qp_type = IBV_QPT_RC;
		p->starting_psn = id->rq_psn;
		id->responder_resources = conn_param ? rd_depth(conn_param->responder_resources, 128) : 128;
		id->initiator_depth = conn_param ? rd_depth(conn_param->initiator_depth, 128) : 128;
		p->responder_resources = id->responder_resources;
		p->initiator_depth = id->initiator_depth;
		p->path_mtu = id->mtu;
		/* The retry counts we ask the passive side to use; our own QP's
		 * RNR retry count comes with the REP. */
		if (conn_param) {
			id->retry_count = conn_param->retry_count > 7 ? 7 : conn_param->retry_count;
			id->rnr_retry_count = conn_param->rnr_retry_count > 7 ? 7 : conn_param->rnr_retry_count;
			p->flow_control = conn_param->flow_control;
			p->srq = cmid->qp ? cmid->qp->srq != NULL : conn_param->srq;
		}
		p->retry_count = id->retry_count;
		p->rnr_retry_count = id->rnr_retry_count;
		p->local_ack_timeout = id->ack_timeout;
		p->traffic_class = id->tos;
		p->private_data = id->req_private;
		p->private_data_len = id->req_private_len;
	}
	now = srt_now();
	srt_lock(rcm.dev);
	/* Before sending: the answer may be handled before we return. */
	id->state = RCM_CONNECT;
	e = send_request(id, now);
	if (e)
		id->state = RCM_ROUTE_RESOLVED;
	srt_unlock(rcm.dev);
	srt_kick(rcm.dev);
	if (e)
		return rcm_fail(e);
	if (id->sync) {
		e = rcm_wait_event(id, RDMA_CM_EVENT_ESTABLISHED, NULL);
		if (e)
			return rcm_fail(e);
	}
	return 0;
}

int rdma_accept(struct rdma_cm_id *cmid, struct rdma_conn_param *conn_param)
{
	struct rcm_id *id = to_rcm_id(cmid);
	uint64_t now;
	int e;

	if (!cmid || id->state != RCM_REQ_RCVD || !id->cm || !valid_param(id, conn_param))
		return rcm_fail(EINVAL);
	if (cmid->qp_type == IBV_QPT_UD) {
		uint32_t qpn = cmid->qp ? cmid->qp->qp_num : conn_param ? conn_param->qp_num : 0;
		if (conn_param && conn_param->private_data_len > WIRE_CM_SIDR_REP_PRIVATE_DATA)
			return rcm_fail(EINVAL);
		srt_lock(rcm.dev);
		e = cm_sidr_reply(id->cm, CM_SIDR_SUCCESS, qpn, RDMA_UDP_QKEY,
				  conn_param ? conn_param->private_data : NULL,
				  conn_param ? conn_param->private_data_len : 0, srt_now());
		srt_unlock(rcm.dev);
		srt_kick(rcm.dev);
		if (e)
			return rcm_fail(e);
		id->state = RCM_CONNECTED;
		return 0;
	}
	if (conn_param && conn_param->private_data_len > WIRE_CM_REP_PRIVATE_DATA)
		return rcm_fail(EINVAL);
	if (!cmid->qp && !(conn_param && conn_param->qp_num))
		return rcm_fail(EINVAL);
	/* What we give the peer's READs and our own READs: the program's
	 * values, or the REQ's (rdma-core keeps them for RDMA_MAX_*). */
	uint8_t rr = conn_param ? rd_depth(conn_param->responder_resources, id->responder_resources)
				: id->responder_resources;
	uint8_t id_depth = conn_param ? rd_depth(conn_param->initiator_depth, id->initiator_depth)
				      : id->initiator_depth;
	struct cm_rep_param p = {
		.qpn = cmid->qp ? cmid->qp->qp_num : conn_param->qp_num,
		.starting_psn = id->rq_psn,
		.responder_resources = rr,
		.initiator_depth = id_depth,
		/* What we ask the active side to use (rdma-core's default
		 * 7); our own QP keeps the REQ's. */
		.rnr_retry_count = conn_param ? (conn_param->rnr_retry_count > 7 ? 7 : conn_param->rnr_retry_count) : 7,
		.target_ack_delay = 0,
		.srq = cmid->qp ? cmid->qp->srq != NULL : conn_param && conn_param->srq,
		.flow_control = conn_param ? conn_param->flow_control : 1,
		.private_data = conn_param ? conn_param->private_data : NULL,
		.private_data_len = conn_param ? conn_param->private_data_len : 0,
	};
	struct cm_qp_attr a;
	cm_qp_attr_passive(&id->peer_req, &p, &a);
	take_qp_attr(id, &a);
	if (cmid->qp) {
		e = rcm_qp_to_rtr_rts(id);
		if (e) {
			rdma_reject(cmid, NULL, 0);
			return rcm_fail(e);
		}
	}
	now = srt_now();
	srt_lock(rcm.dev);
	e = cm_accept(id->cm, &p, now);
	srt_unlock(rcm.dev);
	srt_kick(rcm.dev);
	if (e)
		return rcm_fail(e);
	id->state = RCM_ACCEPTED;
	if (id->sync) {
		e = rcm_wait_event(id, RDMA_CM_EVENT_ESTABLISHED, NULL);
		if (e)
			return rcm_fail(e);
	}
	return 0;
}

int rdma_reject(struct rdma_cm_id *cmid, const void *private_data, uint8_t private_data_len)
{
	struct rcm_id *id = to_rcm_id(cmid);
	int e;

	if (!cmid || !id->cm)
		return rcm_fail(EINVAL);
	srt_lock(rcm.dev);
	if (cmid->qp_type == IBV_QPT_UD)
		e = cm_sidr_reply(id->cm, CM_SIDR_REJECT, 0, 0, private_data, private_data_len, srt_now());
	else
		e = cm_reject(id->cm, CM_REJ_CONSUMER_DEFINED, NULL, 0, private_data, private_data_len, srt_now());
	srt_unlock(rcm.dev);
	srt_kick(rcm.dev);
	if (e)
		return rcm_fail(e);
	id->state = RCM_DISCONNECTED;
	return 0;
}

int rdma_establish(struct rdma_cm_id *cmid)
{
	struct rcm_id *id = to_rcm_id(cmid);
	int e;

	/* rdma-core: only an id without a QP establishes by hand. */
	if (!cmid || cmid->qp || !id->cm)
		return rcm_fail(EINVAL);
	if (id->state == RCM_CONNECT_RESPONSE) {
		srt_lock(rcm.dev);
		e = cm_send_rtu(id->cm, NULL, 0, srt_now());
		srt_unlock(rcm.dev);
	} else {
		srt_lock(rcm.dev);
		e = cm_establish(id->cm, srt_now());
		srt_unlock(rcm.dev);
	}
	srt_kick(rcm.dev);
	if (e && e != EISCONN)
		return rcm_fail(e);
	id->state = RCM_CONNECTED;
	return 0;
}

int rdma_notify(struct rdma_cm_id *cmid, enum ibv_event_type event)
{
	struct rcm_id *id = to_rcm_id(cmid);
	int e;

	if (!cmid)
		return rcm_fail(EINVAL);
	if (event != IBV_EVENT_COMM_EST)
		return 0;
	if (!id->cm || id->state != RCM_ACCEPTED)
		return 0;
	srt_lock(rcm.dev);
	e = cm_establish(id->cm, srt_now());
	srt_unlock(rcm.dev);
	if (e && e != EISCONN)
		return rcm_fail(e);
	return 0;
}

int rdma_disconnect(struct rdma_cm_id *cmid)
{
	struct rcm_id *id = to_rcm_id(cmid);
	int e = 0;

	if (!cmid)
		return rcm_fail(EINVAL);
	rcm_qp_to_error(id);
	if (!id->cm)
		return rcm_fail(EINVAL);
	srt_lock(rcm.dev);
	/* The kernel's rdma_disconnect sends a DREQ, or else a DREP, and
	 * returns 0 whatever the cm's state once the id has a cm id: a
	 * DREQ_RCVD id's DREP went with the DREQ's event here already, and an
	 * id not yet established is refused by its destroy. */
	if (cm_id_state(id->cm) == CM_ST_ESTABLISHED)
		e = cm_disconnect(id->cm, NULL, 0, srt_now());
	srt_unlock(rcm.dev);
	srt_kick(rcm.dev);
	if (e)
		return rcm_fail(e);
	return 0;
}

int rdma_migrate_id(struct rdma_cm_id *cmid, struct rdma_event_channel *channel)
{
	struct rcm_id *id = to_rcm_id(cmid);
	struct rcm_channel *to;

	/* rdma-core: a synchronous id has no channel to leave. */
	if (!cmid || (id->sync && !channel))
		return rcm_fail(EINVAL);
	to = channel ? (struct rcm_channel *)channel : channel_create(true);
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
		channel_destroy(from);
	return 0;
}
