/*
 * paths.c — the device's set of paths (paths.h): opening them, choosing
 * the path of every packet and of every QP's messages, the transmit queue,
 * and the set's answers to the progress loop.
 *
 * Choosing: a packet goes by the first path, in order of preference, whose
 * route knows its destination (the ring's: a softrnic device of ours on
 * this host, by its address and QPN slot; UDP: any address of the port's
 * family).  It is chosen when the queue is sent, so a cache entry is used
 * at once; a packet with a payload by reference is also looked at when
 * queued, to learn whether its path wants the payload copied first.  A
 * whole message (rnic_tx.payload_vec) goes by the first path that sends
 * whole messages and knows its destination; a QP makes whole messages
 * only when a path said at connect that its peer takes them.
 */
#include "runtime/paths.h"
#include "runtime/share_steer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int srt_paths_open(struct srt_paths *ps, char *err, size_t errlen)
{
	int e;

	memset(ps, 0, sizeof(*ps));
	e = srt_udp_open(&ps->udp, err, errlen);
	if (e) {
		ps->udp.fd = -1;
		return e;
	}
	ps->txq = malloc(sizeof(*ps->txq));
	if (!ps->txq) {
		snprintf(err, errlen, "no memory for the transmit queue");
		return ENOMEM;
	}
	srt_txq_clear(ps->txq);
	srt_path_udp_init(&ps->udp_path, &ps->udp);
	ps->list[0] = &ps->udp_path.base;
	ps->n = 1;
	return 0;
}

bool srt_paths_share_slot(const struct srt_paths *ps, unsigned *slot)
{
	if (ps->udp.share.conn < 0)
		return false;
	*slot = ps->udp.share.slot;
	return true;
}

int srt_paths_share_listen(struct srt_paths *ps, uint64_t service_id, bool on)
{
	return srt_host_share_listen(&ps->udp.share, service_id, on);
}

void srt_paths_open_local(struct srt_paths *ps, int rundir, bool faults_on)
{
	unsigned slot = 0;
	bool shared;
	struct rnic_gid gid;

	/* A tap must see every packet on the socket; the rings are IPv4's. */
	if (ps->udp.tap.packet || ps->udp.v6)
		return;
	shared = srt_paths_share_slot(ps, &slot);
	ps->local = srt_local_open(rundir, ps->udp.addr, slot, shared, faults_on, ps->udp.fd);
	if (!ps->local)
		return;
	srt_udp_gid(&ps->udp, &gid);
	srt_path_message_init(&ps->message_path, ps->local, &gid);
	srt_path_ring_init(&ps->ring_path, ps->local, &gid);
	ps->list[0] = &ps->message_path.base;
	ps->list[1] = &ps->ring_path.base;
	ps->list[2] = &ps->udp_path.base;
	ps->n = 3;
	ps->has_cheap = true;   /* the ring: received without a system call */
}

void srt_paths_open_xdp(struct srt_paths *ps)
{
	const char *ifname = getenv("SOFTRNIC_XDP");
	char err[256];
	struct srt_xdp *x;

	if (!ifname || !*ifname)
		return;
	if (ps->udp.v6) {
		fprintf(stderr, "softrnic: SOFTRNIC_XDP=%s: the AF_XDP port carries IPv4 only; using UDP sockets\n",
			ifname);
		return;
	}
	const char *m = getenv("SOFTRNIC_XDP_MODE");
	enum srt_xdp_mode mode = !m || !strcmp(m, "auto")  ? SRT_XDP_AUTO
				 : !strcmp(m, "native")   ? SRT_XDP_NATIVE
							  : SRT_XDP_GENERIC;    /* env_config.c checked */
	/* The interface's MTU as the UDP port read it (the port's address
	 * is on this interface: srt_xdp_open checks). */
	struct srt_xdp_steer steer = { .qpn_lo = 0, .qpn_hi = 1u << 24, .qp1 = true,
				       .mtu = ps->udp.if_mtu ? ps->udp.if_mtu : 1500 };
	unsigned slot;
	if (srt_paths_share_slot(ps, &slot)) {
		steer.qpn_lo = slot << SRT_SHARE_QPN_SHIFT;
		steer.qpn_hi = (slot + 1) << SRT_SHARE_QPN_SHIFT;
		steer.qp1 = false;
	}
	x = srt_xdp_open(ifname, ps->udp.addr, &steer, mode, err, sizeof(err));
	if (!x) {
		fprintf(stderr, "softrnic: SOFTRNIC_XDP=%s: %s; using UDP sockets\n", ifname, err);
		return;
	}
#ifdef SOFTRNIC_HAVE_XDP
	struct rnic_gid gid;

	srt_udp_gid(&ps->udp, &gid);
	srt_path_xdp_init(&ps->xdp_path, x, &ps->udp, &gid);
	ps->xdp_path.base.tap = ps->udp.tap;
	ps->xdp = x;
	/* Just ahead of UDP, which stays last. */
	ps->list[ps->n] = ps->list[ps->n - 1];
	ps->list[ps->n - 1] = &ps->xdp_path.base;
	ps->n++;
	ps->has_cheap = true;   /* the XDP socket's ring: received without a system call */
	/* The port's MTU is the largest whose packets fit a frame, so that
	 * QPs made for it send nothing by UDP (xdp_port.h). */
	if (ps->udp.active_mtu > srt_xdp_ib_mtu(x))
		ps->udp.active_mtu = srt_xdp_ib_mtu(x);
	/* No UDP GRO on the socket: with it, the kernel would merge the
	 * packets of a flow to our socket into one buffer before a generic
	 * XDP hook sees them, and the program would take the merged buffer
	 * for one packet. */
	srt_udp_no_gro(&ps->udp);
#endif
}

void srt_paths_close(struct srt_paths *ps)
{
	srt_xdp_close(ps->xdp);
	ps->xdp = NULL;
	srt_local_close(ps->local);
	ps->local = NULL;
	srt_udp_close(&ps->udp);
	free(ps->txq);
	ps->txq = NULL;
	ps->n = 0;
	ps->has_cheap = false;
}

void srt_paths_close_inherited(struct srt_paths *ps)
{
	srt_udp_close(&ps->udp);
	ps->local = NULL;
	srt_xdp_close_inherited(ps->xdp);
	ps->xdp = NULL;
	ps->n = 0;
	ps->has_cheap = false;
}

void srt_paths_reclaim(int rundir)
{
	srt_local_remove_dead(rundir);
}

void srt_paths_unlink(struct srt_paths *ps)
{
	srt_xdp_detach(ps->xdp);
	srt_local_unlink(ps->local);
}

void srt_paths_set_tap(struct srt_paths *ps, const struct srt_path_tap *tap)
{
	ps->udp.tap = *tap;
	for (unsigned i = 0; i < ps->n; i++)
		ps->list[i]->tap = *tap;
}

/* ---- transmit ---------------------------------------------------------------- */

/* The first path that sends packets and knows dst, and its handle. */
static struct srt_path *choose(struct srt_paths *ps, const struct rnic_gid *dst, const uint8_t *bth, void **dest)
{
	for (unsigned i = 0; i < ps->n; i++) {
		struct srt_path *p = ps->list[i];

		if (p->ops->send && (*dest = p->ops->route(p, dst, bth, false)) != NULL)
			return p;
	}
	return NULL;
}

/* Each queued packet to its path (which may hold it until its flush). */
static unsigned dispatch(struct srt_paths *ps)
{
	struct srt_tx_queue *q = ps->txq;
	unsigned lost = 0;

	for (unsigned i = 0; i < q->n; i++) {
		const struct srt_tx_slot *s = &q->slot[i];
		struct srt_tx_meta m = { .dst = s->dst, .sport = s->sport, .tos = s->tos, .ttl = s->ttl,
					 .plain_ack = s->plain_ack, .alone = s->alone };
		struct wire_piece pc[3];
		uint8_t *icrc;
		unsigned npc = srt_txq_pieces(q, s, pc, &icrc);
		void *dest;
		struct srt_path *p = choose(ps, &s->dst, pc[0].p, &dest);
		int e;

		if (!p) {
			ps->tx_unroutable++;
			lost++;
			continue;
		}
		e = p->ops->send(p, dest, &m, pc, npc, icrc);
		if (e) {
			if (e == EFAULT)
				ps->tx_mr_fault++;
			lost++;
		}
	}
	srt_txq_clear(q);
	return lost;
}

static unsigned flush_paths(struct srt_paths *ps)
{
	unsigned lost = 0;

	for (unsigned i = 0; i < ps->n; i++)
		if (ps->list[i]->ops->flush)
			lost += ps->list[i]->ops->flush(ps->list[i]);
	return lost;
}

/* The answers that waited, into their senders' rings, ahead of what
 * goes with them. */
static void write_answers(struct srt_paths *ps)
{
	for (unsigned i = 0; i < ps->answers_n; i++) {
		const struct srt_answer_wait *w = &ps->answers[i];
		struct srt_local_peer *p = srt_local_route_qpn(ps->local, w->to, w->qpn);

		if (!p || !srt_local_answer(ps->local, p, w->qpn, w->src_qpn, w->seq, w->verdict))
			ps->answers_lost++;
	}
	ps->answers_n = 0;
}

void srt_paths_answer(struct srt_paths *ps, struct in_addr to, uint32_t qpn, uint32_t src_qpn, uint32_t seq,
		      uint32_t verdict)
{
	if (ps->answers_n == SRT_ANSWERS_WAIT) {
		write_answers(ps);
		ps->flush_at_unlock = true;
	}
	ps->answers[ps->answers_n++] = (struct srt_answer_wait){ to, qpn, src_qpn, seq, verdict };
}

unsigned srt_paths_flush(struct srt_paths *ps)
{
	unsigned lost = ps->txq->n ? dispatch(ps) : 0;

	if (ps->answers_n)
		write_answers(ps);
	ps->flush_at_unlock = false;
	return lost + flush_paths(ps);
}

uint8_t *srt_paths_tx_buffer(struct srt_paths *ps)
{
	uint8_t *room = srt_txq_room(ps->txq);

	if (!room) {
		srt_paths_flush(ps);
		room = srt_txq_room(ps->txq);
	}
	return room;
}

/* Before a whole message or a fast one: what waits (queued packets, the
 * answers to fast messages) goes to its paths first, a QP's packets in
 * their order, and the plain ACKs and answers among it count as having
 * ridden with the message (send_path.c takes the count at unlock). */
static void send_waiting(struct srt_paths *ps)
{
	if (ps->txq->n) {
		ps->acks_before_message += ps->txq->n - ps->txq->not_acks;
		dispatch(ps);
	}
	if (ps->answers_n) {
		ps->acks_before_message += ps->answers_n;
		write_answers(ps);
	}
}

/* A whole message: what is queued is handed to its paths first (a QP's
 * packets keep their order) but not flushed, so it leaves with the
 * message: the ACK that waited to ride and the WRITE behind it reach a
 * polling peer together, as MTU packets do, not the ACK alone, after
 * which a program may stop polling and spin on memory until the progress
 * thread comes by. */
static int send_message(struct srt_paths *ps, const struct rnic_tx *tx)
{
	struct srt_tx_meta m = { .dst = tx->dst, .sport = tx->sport,
				 .tos = (uint8_t)((tx->dscp << 2) | (tx->ecn & 3)),
				 .ttl = tx->ttl ? tx->ttl : SRT_DEFAULT_TTL, .alone = tx->alone };
	int e = EHOSTUNREACH;

	send_waiting(ps);
	if (tx->ib_len >= WIRE_BTH_LEN + WIRE_ICRC_LEN) {
		for (unsigned i = 0; i < ps->n; i++) {
			struct srt_path *p = ps->list[i];
			void *dest;

			if (p->ops->send_message && (dest = p->ops->route(p, &tx->dst, tx->ib, false)) != NULL) {
				e = p->ops->send_message(p, dest, &m, tx->ib, (uint32_t)tx->ib_len, tx->payload_vec,
							 tx->payload_nvec);
				break;
			}
		}
	}
	if (e == EHOSTUNREACH)
		ps->tx_unroutable++;
	flush_paths(ps);
	return e;
}

int srt_paths_queue(struct srt_paths *ps, const struct rnic_tx *tx)
{
	struct srt_tx_queue *q = ps->txq;
	bool copy_in = false;

	if (tx->payload_vec)
		return send_message(ps, tx);
	if (!srt_tx_shape_ok(tx)) {
		ps->tx_unroutable++;
		return EINVAL;
	}
	if (tx->payload_len) {
		void *dest;
		struct srt_path *p = choose(ps, &tx->dst, tx->ib, &dest);

		copy_in = p && (p->flags & SRT_PATH_WANTS_COPY);
	}
	if (!srt_txq_fits(q, tx, copy_in))
		srt_paths_flush(ps);
	if (srt_txq_add(q, tx, copy_in)) {
		ps->tx_mr_fault++;
		return EFAULT;
	}
	return 0;
}

bool srt_paths_fast_ok(const struct srt_paths *ps)
{
	const char *env = getenv("SOFTRNIC_LOCAL_FAST");

	return ps->local && !(env && !strcmp(env, "0"));
}

int srt_paths_fast_send(struct srt_paths *ps, const struct rnic_gid *dgid, const struct rnic_fast_msg *m,
			const struct wire_piece *pc, unsigned n)
{
	struct in_addr dst4;
	struct srt_local_peer *p;

	if (!srt_gid_to_ipv4(dgid, &dst4) || !(p = srt_local_route_qpn(ps->local, dst4, m->dqpn)))
		return EHOSTUNREACH;
	send_waiting(ps);
	int e = srt_local_fast_send(ps->local, p, m, pc, n);
	if (!e)
		ps->flush_at_unlock = true;
	return e;
}

bool srt_paths_payload_ref(const struct srt_paths *ps)
{
	/* Safe because the queue is sent at every unlock.  The host-local
	 * paths copy each payload once, into the ring, and the AF_XDP
	 * port into its frame; UDP asks for copies
	 * unless told otherwise (SRT_PATH_WANTS_COPY). */
	return ps->udp.tx_payload_ref || ps->local || ps->xdp;
}

void srt_paths_choose_for_qp(struct srt_paths *ps, struct rnic *r, struct rnic_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	struct rnic_gid dgid;

	if (rnic_qp_query(qp, &a, &init) || init.qp_type != IBV_QPT_RC ||
	    rnic_get_config(r)->max_sge + 1 > SRT_LOCAL_REMOTE_SEGS)
		return;
	memcpy(dgid.raw, a.ah_attr.grh.dgid.raw, sizeof(dgid.raw));
	/* The BTH a route looks at: its destination QPN (bytes 5..7). */
	uint8_t bth[WIRE_BTH_LEN] = { 0, 0, 0, 0, 0, (uint8_t)(a.dest_qp_num >> 16), (uint8_t)(a.dest_qp_num >> 8),
				      (uint8_t)a.dest_qp_num };
	for (unsigned i = 0; i < ps->n; i++) {
		struct srt_path *p = ps->list[i];
		void *dest;
		uint32_t min;

		if (!p->ops->message_min)
			continue;
		/* Looked up again now: the address may have changed hands
		 * since it was cached. */
		if ((dest = p->ops->route(p, &dgid, bth, true)) != NULL && (min = p->ops->message_min(p, dest)) != 0) {
			/* Where whole messages go, small ones go as fast
			 * messages (fast.c): the same peer, read once. */
			if (!rnic_qp_set_message_path(qp, min))
				rnic_qp_set_fast(qp, srt_paths_fast_ok(ps));
			return;
		}
	}
}

/* ---- receive ------------------------------------------------------------------ */

bool srt_paths_rx_pending(const struct srt_paths *ps)
{
	for (unsigned i = 0; i < ps->n; i++)
		if (ps->list[i]->ops->pending && ps->list[i]->ops->pending(ps->list[i]))
			return true;
	return false;
}

bool srt_paths_cheap_active(const struct srt_paths *ps, uint64_t now)
{
	return ps->has_cheap && now - ps->last_cheap_rx_ns < SRT_PATH_ACTIVE_NS;
}

bool srt_paths_skip_syscall(const struct srt_paths *ps, bool may_skip, uint64_t now)
{
	return may_skip && srt_paths_cheap_active(ps, now) && now - ps->last_syscall_read_ns < SRT_PATH_SYSCALL_EVERY_NS;
}

unsigned srt_paths_wake_fds(const struct srt_paths *ps, int *fds, unsigned cap)
{
	unsigned n = 0;

	for (unsigned i = 0; i < ps->n && n < cap; i++) {
		int fd = ps->list[i]->ops->wake_fd ? ps->list[i]->ops->wake_fd(ps->list[i]) : -1;
		if (fd >= 0)
			fds[n++] = fd;
	}
	return n;
}

bool srt_paths_can_arm(const struct srt_paths *ps)
{
	for (unsigned i = 0; i < ps->n; i++)
		if (ps->list[i]->ops->arm)
			return true;
	return false;
}

bool srt_paths_arm(struct srt_paths *ps, bool sleeping)
{
	for (unsigned i = 0; i < ps->n; i++) {
		struct srt_path *p = ps->list[i];

		if (!p->ops->arm || p->ops->arm(p, sleeping))
			continue;
		/* Packets wait: the paths armed so far are woken again. */
		for (unsigned j = 0; j < i; j++)
			if (ps->list[j]->ops->arm)
				ps->list[j]->ops->arm(ps->list[j], false);
		return false;
	}
	return true;
}

/* ---- counters ---------------------------------------------------------------- */

static void add_stats(struct srt_path_stats *t, const struct srt_path_stats *s)
{
	t->tx_packets += s->tx_packets;
	t->rx_packets += s->rx_packets;
	t->tx_errors += s->tx_errors;
	t->tx_dropped += s->tx_dropped;
	t->tx_unroutable += s->tx_unroutable;
	t->tx_mr_fault += s->tx_mr_fault;
	t->tx_sends += s->tx_sends;
	t->tx_gso_sends += s->tx_gso_sends;
	t->tx_inline += s->tx_inline;
	t->rx_broken += s->rx_broken;
	t->doorbells += s->doorbells;
	t->sport_fallbacks += s->sport_fallbacks;
	t->sport_sockets += s->sport_sockets;
}

void srt_paths_totals(const struct srt_paths *ps, struct srt_path_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->tx_unroutable = ps->tx_unroutable;
	s->tx_mr_fault = ps->tx_mr_fault;
	for (unsigned i = 0; i < ps->n; i++) {
		struct srt_path_stats one;

		if (!ps->list[i]->ops->stats)
			continue;
		ps->list[i]->ops->stats(ps->list[i], &one);
		add_stats(s, &one);
	}
}

unsigned srt_paths_names(const struct srt_paths *ps, const char **names, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; i < ps->n && n < max; i++)
		names[n++] = ps->list[i]->ops->name;
	return n;
}

void srt_paths_stats_of(const struct srt_paths *ps, const char *name, struct srt_path_stats *s)
{
	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; i < ps->n; i++)
		if (!strcmp(ps->list[i]->ops->name, name) && ps->list[i]->ops->stats)
			ps->list[i]->ops->stats(ps->list[i], s);
}
