/*
 * cm.c — the cm object: everything around the state machines.
 *
 * It owns the ids and listeners, hands out local comm IDs and transaction
 * IDs from a generator seeded by cm_config.seed, keeps the two lookup
 * tables (by local comm ID; by the peer's comm ID + CA GUID, or request ID
 * + GID for SIDR), the timer heap, the counters and the trace hook.
 *
 * cm_receive decodes a MAD with wire/mad.h, finds the id it belongs to
 * (IBTA 12.6: the Remote Comm ID of a reply is our Local Comm ID; a REQ is
 * matched against known connections by the active side's Local Comm ID and
 * CA GUID, as the kernel's cm_insert_remote_id does) and runs it through
 * cm_step.  A REQ or SIDR_REQ nobody knows yet is looked up against the
 * listeners here: it creates a passive id, or is answered at once (REJ 8,
 * SIDR_REP status 1).  Every received MAD is counted exactly once by what
 * became of it (enum cm_disp), so the counters add up (cm.h).
 *
 * cm_step is the one door into a state machine: it calls the function of
 * the id's kind (cm_conn.c or sidr.c), traces the transition, and frees an
 * id the consumer destroyed once it has reached Idle.
 */
#include "cm/cm_int.h"

#include "base/prng.h"

#include <stdio.h>

/* ---- names ---------------------------------------------------------------- */

/* The state names of IBTA 12.9's diagrams (connection) and 12.11 (SIDR). */
static const char *const state_names[CM_NSTATES] = {
	[CM_ST_IDLE] = "Idle",
	[CM_ST_REQ_SENT] = "REQ Sent",
	[CM_ST_MRA_REQ_RCVD] = "MRA(REQ) Received",
	[CM_ST_REP_RCVD] = "REP Received",
	[CM_ST_MRA_REP_SENT] = "MRA(REP) Sent",
	[CM_ST_REQ_RCVD] = "REQ Received",
	[CM_ST_MRA_REQ_SENT] = "MRA Sent",
	[CM_ST_REP_SENT] = "REP Sent",
	[CM_ST_MRA_REP_RCVD] = "MRA(REP) Received",
	[CM_ST_ESTABLISHED] = "Established",
	[CM_ST_DREQ_SENT] = "DREQ Sent",
	[CM_ST_DREQ_RCVD] = "DREQ Received",
	[CM_ST_TIMEWAIT] = "TimeWait",
	[CM_ST_SIDR_REQ_SENT] = "SIDR REQ Sent",
	[CM_ST_SIDR_REQ_RCVD] = "SIDR REQ Received",
};

const char *cm_state_name(enum cm_state s)
{
	return (unsigned)s < CM_NSTATES ? state_names[s] : "?";
}

static const char *const event_names[CM_EV_NTYPES] = {
	[CM_EV_REQ_RECEIVED] = "REQ_RECEIVED",
	[CM_EV_REQ_TIMEOUT] = "REQ_TIMEOUT",
	[CM_EV_REP_RECEIVED] = "REP_RECEIVED",
	[CM_EV_REP_TIMEOUT] = "REP_TIMEOUT",
	[CM_EV_REJ_RECEIVED] = "REJ_RECEIVED",
	[CM_EV_MRA_RECEIVED] = "MRA_RECEIVED",
	[CM_EV_ESTABLISHED] = "ESTABLISHED",
	[CM_EV_DREQ_RECEIVED] = "DREQ_RECEIVED",
	[CM_EV_DISCONNECT_DONE] = "DISCONNECT_DONE",
	[CM_EV_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
	[CM_EV_SIDR_REQ_RECEIVED] = "SIDR_REQ_RECEIVED",
	[CM_EV_SIDR_REP_RECEIVED] = "SIDR_REP_RECEIVED",
	[CM_EV_SIDR_TIMEOUT] = "SIDR_TIMEOUT",
};

const char *cm_event_name(enum cm_event_type t)
{
	return (unsigned)t < CM_EV_NTYPES ? event_names[t] : "?";
}

static const char *const input_names[] = {
	[CM_IN_CONNECT] = "connect",
	[CM_IN_RX] = "rx",
	[CM_IN_TIMER] = "timer",
	[CM_IN_ACCEPT] = "accept",
	[CM_IN_REJECT] = "reject",
	[CM_IN_RTU] = "send RTU",
	[CM_IN_MRA] = "send MRA",
	[CM_IN_ESTABLISH] = "establish",
	[CM_IN_DISCONNECT] = "disconnect",
	[CM_IN_DESTROY] = "destroy",
	[CM_IN_SIDR_REPLY] = "SIDR reply",
	[CM_IN_SIDR_REQUEST] = "SIDR request",
};

/* ---- PRNG (base/prng.h) ---------------------------------------------------- */

static uint64_t cm_random(struct cm *cm)
{
	return prng_next(cm->rng);
}

/* A transaction ID: random high half, our comm ID in the low half (the
 * kernel's cm_form_tid puts its agent's hi_tid and the local ID there). */
uint64_t cm_new_tid(struct cm *cm, uint32_t local_id)
{
	return (cm_random(cm) & 0xffffffff00000000ull) | local_id;
}

/* ---- configuration and lifetime --------------------------------------------- */

void cm_config_default(struct cm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ca_guid = 1;
	cfg->seed = 1;
	cfg->cm_response_timeout = 20;
	cfg->max_cm_retries = 15;
	cfg->timewait_ns = 1000000000ull;
}

static int hash_init(struct cm_hash *h)
{
	h->nb = 64;
	h->count = 0;
	h->b = calloc(h->nb, sizeof(*h->b));
	return h->b ? 0 : ENOMEM;
}

struct cm *cm_create(const struct cm_config *cfg, const struct cm_io *io)
{
	if (!cfg || !io || !io->send_mad || !cfg->ca_guid) {
		errno = EINVAL;
		return NULL;
	}
	struct cm *cm = calloc(1, sizeof(*cm));
	if (!cm) {
		errno = ENOMEM;
		return NULL;
	}
	cm->cfg = *cfg;
	cm->io = *io;
	prng_seed(cm->rng, (uint64_t)cfg->seed ^ 0x636d5f73656564ull); /* "cm_seed" */
	cm->id_xor = (uint32_t)cm_random(cm);
	cm->id_next = (uint32_t)cm_random(cm);
	if (hash_init(&cm->by_local) || hash_init(&cm->by_remote) || hash_init(&cm->by_qpn)) {
		free(cm->by_local.b);
		free(cm->by_remote.b);
		free(cm->by_qpn.b);
		free(cm);
		errno = ENOMEM;
		return NULL;
	}
	return cm;
}

void cm_destroy(struct cm *cm)
{
	if (!cm)
		return;
	for (struct cm_id *id = cm->first, *n; id; id = n) {
		n = id->next;
		free(id);
	}
	for (struct cm_listen *l = cm->listeners, *n; l; l = n) {
		n = l->next;
		free(l);
	}
	free(cm->by_local.b);
	free(cm->by_remote.b);
	free(cm->by_qpn.b);
	free(cm->heap);
	free(cm);
}

const struct cm_config *cm_get_config(const struct cm *cm)
{
	return &cm->cfg;
}

const struct cm_counters *cm_counters(const struct cm *cm)
{
	return &cm->ctr;
}

void cm_set_trace(struct cm *cm, void (*fn)(void *ctx, const char *line), void *ctx)
{
	cm->trace = fn;
	cm->trace_ctx = ctx;
}

/* ---- tables ------------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t gid_hash(const uint8_t gid[16])
{
	uint64_t a, b;
	memcpy(&a, gid, 8);
	memcpy(&b, gid + 8, 8);
	return mix64(a ^ mix64(b));
}

static size_t local_slot(const struct cm_hash *h, uint32_t local_id)
{
	return (size_t)mix64(local_id) & (h->nb - 1);
}

/* Connections are known by (peer comm ID, peer CA GUID); passive SIDR ids
 * by (request ID, requester GID), as the kernel's cm_insert_remote_sidr. */
static size_t remote_slot(const struct cm_hash *h, bool sidr, uint32_t remote_id, uint64_t guid,
			  const uint8_t *gid)
{
	uint64_t k = sidr ? gid_hash(gid) : guid;
	return (size_t)mix64(k ^ ((uint64_t)remote_id << 1 | sidr)) & (h->nb - 1);
}

static size_t id_remote_slot(const struct cm_hash *h, const struct cm_id *id)
{
	return remote_slot(h, id->sidr, id->remote_id, id->remote_ca_guid, id->remote_gid);
}

/* Doubles a table when it holds more entries than buckets.  A failed
 * allocation keeps the old table (longer chains, still correct). */
static void hash_grow(struct cm_hash *h, bool remote)
{
	if (h->count < h->nb)
		return;
	size_t nb = h->nb * 2;
	struct cm_id **b = calloc(nb, sizeof(*b));
	if (!b)
		return;
	struct cm_hash nh = { .b = b, .nb = nb, .count = h->count };
	for (size_t i = 0; i < h->nb; i++) {
		for (struct cm_id *id = h->b[i], *n; id; id = n) {
			size_t s;
			if (remote) {
				n = id->next_remote;
				s = id_remote_slot(&nh, id);
				id->next_remote = b[s];
			} else {
				n = id->next_local;
				s = local_slot(&nh, id->local_id);
				id->next_local = b[s];
			}
			b[s] = id;
		}
	}
	free(h->b);
	*h = nh;
}

static struct cm_id *find_local(const struct cm *cm, uint32_t local_id)
{
	for (struct cm_id *id = cm->by_local.b[local_slot(&cm->by_local, local_id)]; id; id = id->next_local)
		if (id->local_id == local_id)
			return id;
	return NULL;
}

static struct cm_id *find_remote(const struct cm *cm, bool sidr, uint32_t remote_id, uint64_t guid,
				 const uint8_t *gid)
{
	size_t s = remote_slot(&cm->by_remote, sidr, remote_id, guid, gid);
	for (struct cm_id *id = cm->by_remote.b[s]; id; id = id->next_remote) {
		if (id->sidr != sidr || id->remote_id != remote_id)
			continue;
		if (sidr ? memcmp(id->remote_gid, gid, 16) == 0 : id->remote_ca_guid == guid)
			return id;
	}
	return NULL;
}

static void unlink_chain(struct cm_id **head, struct cm_id *id, bool remote)
{
	for (struct cm_id **pp = head; *pp; pp = remote ? &(*pp)->next_remote : &(*pp)->next_local) {
		if (*pp == id) {
			*pp = remote ? id->next_remote : id->next_local;
			return;
		}
	}
}

/* ---- connections by (remote CA GUID, remote QPN) ----------------------------
 * A REQ from a QP one of our connections still holds is refused as stale
 * (cm_req_rx below).  The check ran over every id, O(n) per REQ and so
 * O(n^2) for a server taking n connections; the index makes it O(1). */
static size_t qpn_slot(const struct cm_hash *h, uint64_t guid, uint32_t qpn)
{
	return (size_t)mix64(guid ^ mix64(qpn)) & (h->nb - 1);
}

static void qpn_unindex(struct cm *cm, struct cm_id *id)
{
	if (!id->pprev_qpn)
		return;
	*id->pprev_qpn = id->next_qpn;
	if (id->next_qpn)
		id->next_qpn->pprev_qpn = id->pprev_qpn;
	id->next_qpn = NULL;
	id->pprev_qpn = NULL;
	cm->by_qpn.count--;
}

static void qpn_push(struct cm_id **head, struct cm_id *id)
{
	id->next_qpn = *head;
	if (*head)
		(*head)->pprev_qpn = &id->next_qpn;
	*head = id;
	id->pprev_qpn = head;
}

/* As hash_grow, relinking the back pointers into the new buckets. */
static void qpn_grow(struct cm_hash *h)
{
	if (h->count < h->nb)
		return;
	size_t nb = h->nb * 2;
	struct cm_id **b = calloc(nb, sizeof(*b));
	if (!b)
		return;
	struct cm_hash nh = { .b = b, .nb = nb, .count = h->count };
	for (size_t i = 0; i < h->nb; i++) {
		for (struct cm_id *id = h->b[i], *n; id; id = n) {
			n = id->next_qpn;
			qpn_push(&b[qpn_slot(&nh, id->remote_ca_guid, id->remote_qpn)], id);
		}
	}
	free(h->b);
	*h = nh;
}

void cm_id_index_qpn(struct cm_id *id)
{
	struct cm *cm = id->cm;
	qpn_unindex(cm, id);
	if (id->sidr || (!id->remote_ca_guid && !id->remote_qpn))
		return;
	qpn_push(&cm->by_qpn.b[qpn_slot(&cm->by_qpn, id->remote_ca_guid, id->remote_qpn)], id);
	cm->by_qpn.count++;
	qpn_grow(&cm->by_qpn);
}

bool cm_id_set_remote(struct cm_id *id, uint32_t remote_id, uint64_t remote_ca_guid)
{
	struct cm *cm = id->cm;
	struct cm_id *other = find_remote(cm, id->sidr, remote_id, remote_ca_guid, id->remote_gid);
	if (other && other != id)
		return false;
	if (id->in_remote) {
		unlink_chain(&cm->by_remote.b[id_remote_slot(&cm->by_remote, id)], id, true);
		cm->by_remote.count--;
	}
	id->remote_id = remote_id;
	id->remote_ca_guid = remote_ca_guid;
	size_t s = id_remote_slot(&cm->by_remote, id);
	id->next_remote = cm->by_remote.b[s];
	cm->by_remote.b[s] = id;
	id->in_remote = true;
	cm->by_remote.count++;
	hash_grow(&cm->by_remote, true);
	cm_id_index_qpn(id);
	return true;
}

/* A fresh local comm ID: a counter XOR a random word, as the kernel's
 * cm_alloc_id_priv (xa_alloc_cyclic ^ random_id_operand), so IDs are hard
 * to guess yet a value comes back only after 2^32 allocations; never 0 and
 * never one still in the table (an id in TimeWait keeps its own); with
 * the configuration's prefix bits (cm_config id_prefix). */
static uint32_t new_local_id(struct cm *cm)
{
	for (;;) {
		uint32_t v = ((cm->id_next++ ^ cm->id_xor) & ~cm->cfg.id_prefix_mask) |
			     (cm->cfg.id_prefix & cm->cfg.id_prefix_mask);
		if (v != 0 && !find_local(cm, v))
			return v;
	}
}

struct cm_id *cm_id_new(struct cm *cm, bool active, bool sidr)
{
	/* A timer slot for every id (cm_timer_set cannot fail). */
	if (cm->heap_cap <= cm->by_local.count) {
		size_t cap = cm->heap_cap ? cm->heap_cap * 2 : 16;
		struct cm_id **h = realloc(cm->heap, cap * sizeof(*h));
		if (!h)
			return NULL;
		cm->heap = h;
		cm->heap_cap = cap;
	}
	struct cm_id *id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	id->cm = cm;
	id->seq = cm->id_seq++;
	id->state = CM_ST_IDLE;
	id->active = active;
	id->sidr = sidr;
	id->qp_type = IBV_QPT_RC;
	id->deadline = CM_NO_DEADLINE;
	id->heap_idx = SIZE_MAX;
	id->local_id = new_local_id(cm);
	size_t s = local_slot(&cm->by_local, id->local_id);
	id->next_local = cm->by_local.b[s];
	cm->by_local.b[s] = id;
	cm->by_local.count++;
	hash_grow(&cm->by_local, false);
	id->prev = cm->last;
	if (cm->last)
		cm->last->next = id;
	else
		cm->first = id;
	cm->last = id;
	CM_COUNT(cm, ids_created);
	return id;
}

void cm_id_free(struct cm_id *id)
{
	struct cm *cm = id->cm;
	cm_timer_clear(id);
	unlink_chain(&cm->by_local.b[local_slot(&cm->by_local, id->local_id)], id, false);
	cm->by_local.count--;
	if (id->in_remote) {
		unlink_chain(&cm->by_remote.b[id_remote_slot(&cm->by_remote, id)], id, true);
		cm->by_remote.count--;
	}
	qpn_unindex(cm, id);
	if (id->prev)
		id->prev->next = id->next;
	else
		cm->first = id->next;
	if (id->next)
		id->next->prev = id->prev;
	else
		cm->last = id->prev;
	CM_COUNT(cm, ids_freed);
	free(id);
}

/* ---- id accessors ------------------------------------------------------------ */

void cm_id_set_user(struct cm_id *id, void *user)
{
	id->user = user;
}

void *cm_id_get_user(const struct cm_id *id)
{
	return id->user;
}

enum cm_state cm_id_state(const struct cm_id *id)
{
	return id->state;
}

uint32_t cm_id_local_comm_id(const struct cm_id *id)
{
	return id->local_id;
}

uint32_t cm_id_remote_comm_id(const struct cm_id *id)
{
	return id->remote_id;
}

void cm_id_remote_gid(const struct cm_id *id, uint8_t gid[16])
{
	memcpy(gid, id->remote_gid, 16);
}

uint64_t cm_id_service_id(const struct cm_id *id)
{
	return id->service_id;
}

/* ---- listeners ------------------------------------------------------------------ */

static struct cm_listen *find_listener(const struct cm *cm, uint64_t service_id)
{
	for (struct cm_listen *l = cm->listeners; l; l = l->next)
		if (l->service_id == service_id)
			return l;
	return NULL;
}

int cm_listen(struct cm *cm, uint64_t service_id, void *user, struct cm_listen **out)
{
	if (!cm || !out)
		return EINVAL;
	if (find_listener(cm, service_id))
		return EADDRINUSE;
	struct cm_listen *l = calloc(1, sizeof(*l));
	if (!l)
		return ENOMEM;
	l->cm = cm;
	l->service_id = service_id;
	l->user = user;
	l->next = cm->listeners;
	cm->listeners = l;
	*out = l;
	return 0;
}

void cm_unlisten(struct cm_listen *l)
{
	if (!l)
		return;
	for (struct cm_listen **pp = &l->cm->listeners; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	free(l);
}

void *cm_listen_get_user(const struct cm_listen *l)
{
	return l->user;
}

/* ---- timers: a binary min-heap of ids by (deadline, creation order) ----------- */

static bool heap_less(const struct cm_id *a, const struct cm_id *b)
{
	return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void heap_put(struct cm *cm, size_t i, struct cm_id *id)
{
	cm->heap[i] = id;
	id->heap_idx = i;
}

static void heap_up(struct cm *cm, size_t i)
{
	struct cm_id *id = cm->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!heap_less(id, cm->heap[p]))
			break;
		heap_put(cm, i, cm->heap[p]);
		i = p;
	}
	heap_put(cm, i, id);
}

static void heap_down(struct cm *cm, size_t i)
{
	struct cm_id *id = cm->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= cm->heap_len)
			break;
		if (c + 1 < cm->heap_len && heap_less(cm->heap[c + 1], cm->heap[c]))
			c++;
		if (!heap_less(cm->heap[c], id))
			break;
		heap_put(cm, i, cm->heap[c]);
		i = c;
	}
	heap_put(cm, i, id);
}

void cm_timer_clear(struct cm_id *id)
{
	struct cm *cm = id->cm;
	size_t i = id->heap_idx;
	id->deadline = CM_NO_DEADLINE;
	if (i == SIZE_MAX)
		return;
	id->heap_idx = SIZE_MAX;
	struct cm_id *last = cm->heap[--cm->heap_len];
	if (i == cm->heap_len)
		return;
	heap_put(cm, i, last);
	heap_down(cm, i);
	heap_up(cm, last->heap_idx);
}

/* The heap never needs to grow here: cm_id_new reserved a slot for every
 * id, so setting a timer cannot fail. */
void cm_timer_set(struct cm_id *id, uint64_t deadline)
{
	struct cm *cm = id->cm;
	cm_timer_clear(id);
	if (deadline == CM_NO_DEADLINE)
		return;
	id->deadline = deadline;
	cm->heap[cm->heap_len] = id;
	id->heap_idx = cm->heap_len++;
	heap_up(cm, id->heap_idx);
}

uint64_t cm_next_deadline(const struct cm *cm)
{
	return cm->heap_len ? cm->heap[0]->deadline : CM_NO_DEADLINE;
}

void cm_advance(struct cm *cm, uint64_t now)
{
	while (cm->heap_len && cm->heap[0]->deadline <= now) {
		struct cm_id *id = cm->heap[0];
		cm_timer_clear(id);
		struct cm_in in = { .kind = CM_IN_TIMER, .now = now };
		cm_step(id, &in);
	}
}

/* ---- output ------------------------------------------------------------------------ */

void cm_send(struct cm *cm, const uint8_t dgid[16], const uint8_t mad[WIRE_MAD_LEN])
{
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);
	CM_COUNT(cm, tx_mads);
	switch (attr) {
	case WIRE_CM_ATTR_REQ: CM_COUNT(cm, tx_req); break;
	case WIRE_CM_ATTR_MRA: CM_COUNT(cm, tx_mra); break;
	case WIRE_CM_ATTR_REJ: CM_COUNT(cm, tx_rej); break;
	case WIRE_CM_ATTR_REP: CM_COUNT(cm, tx_rep); break;
	case WIRE_CM_ATTR_RTU: CM_COUNT(cm, tx_rtu); break;
	case WIRE_CM_ATTR_DREQ: CM_COUNT(cm, tx_dreq); break;
	case WIRE_CM_ATTR_DREP: CM_COUNT(cm, tx_drep); break;
	case WIRE_CM_ATTR_SIDR_REQ: CM_COUNT(cm, tx_sidr_req); break;
	case WIRE_CM_ATTR_SIDR_REP: CM_COUNT(cm, tx_sidr_rep); break;
	default: break;
	}
	cm->io.send_mad(cm->io.ctx, dgid, mad);
}

int cm_send_stored(struct cm_id *id, struct cm_stored *st, const struct wire_cm_msg *msg)
{
	int n = wire_cm_encode(msg, st->mad, sizeof(st->mad));
	if (n != (int)WIRE_MAD_LEN) {
		/* Only a bug formatting a message can get here: every value
		 * was range-checked by the consumer call. */
		st->valid = false;
		return EINVAL;
	}
	st->valid = true;
	st->attr = msg->hdr.attr_id;
	cm_send(id->cm, id->remote_gid, st->mad);
	return 0;
}

void cm_resend(struct cm_id *id, const struct cm_stored *st)
{
	if (st->valid)
		cm_send(id->cm, id->remote_gid, st->mad);
}

void cm_emit(struct cm_id *id, struct cm_event *ev)
{
	struct cm *cm = id->cm;
	if (id->destroyed)
		return;
	ev->id = id;
	ev->user = id->user;
	memcpy(ev->remote_gid, id->remote_gid, 16);
	ev->remote_comm_id = id->remote_id;
	CM_COUNT(cm, events);
	if (cm->io.event)
		cm->io.event(cm->io.ctx, ev);
}

void cm_enter_timewait(struct cm_id *id, uint64_t now, const char *why)
{
	cm_set_state(id, CM_ST_TIMEWAIT, why);
	id->req.valid = false;
	CM_COUNT(id->cm, timewait_entered);
	cm_timer_set(id, now + id->cm->cfg.timewait_ns);
}

/* ---- stepping and tracing ------------------------------------------------------- */

static void trace(struct cm_id *id, enum cm_state from, enum cm_state to, const char *why)
{
	struct cm *cm = id->cm;
	char line[128];
	if (!cm->trace)
		return;
	snprintf(line, sizeof(line), "id 0x%08x %s -> %s (%s)%s", id->local_id, cm_state_name(from),
		 cm_state_name(to), why, id->destroyed ? " [destroyed]" : "");
	cm->trace(cm->trace_ctx, line);
}

void cm_set_state(struct cm_id *id, enum cm_state s, const char *why)
{
	if (s != id->state)
		trace(id, id->state, s, why);
	id->state = s;
}

int cm_step(struct cm_id *id, struct cm_in *in)
{
	if (in->kind == CM_IN_RX) {
		const char *n = wire_cm_attr_name(in->msg->hdr.attr_id);
		snprintf(in->why, sizeof(in->why), "rx %s", n ? n : "?");
	} else {
		snprintf(in->why, sizeof(in->why), "%s", input_names[in->kind]);
	}
	enum cm_state next = id->sidr ? cm_sidr_state_fn(id, in) : cm_conn_state_fn(id, in);
	cm_set_state(id, next, in->why);
	if (id->destroyed && id->state == CM_ST_IDLE)
		cm_id_free(id);
	return in->result;
}

/* ---- receiving ------------------------------------------------------------------ */

/* Which id a reply belongs to: its Remote Comm ID is our Local Comm ID.
 * Once we know the peer's comm ID, the message's Local Comm ID must be it
 * (the kernel's cm_acquire_id(local, remote)).  A REJ "timeout" names the
 * sender by its CA GUID in the ARI (IBTA 12.6, REJ) and may not know our ID yet
 * (the active side gave up before any REP): look it up as the kernel's
 * cm_acquire_rejected_id does. */
static struct cm_id *lookup_reply(struct cm *cm, const struct wire_cm_msg *m)
{
	uint32_t ours, theirs;
	struct cm_id *id;

	switch (m->hdr.attr_id) {
	case WIRE_CM_ATTR_MRA: ours = m->mra.remote_comm_id; theirs = m->mra.local_comm_id; break;
	case WIRE_CM_ATTR_REP: ours = m->rep.remote_comm_id; theirs = m->rep.local_comm_id; break;
	case WIRE_CM_ATTR_RTU: ours = m->rtu.remote_comm_id; theirs = m->rtu.local_comm_id; break;
	case WIRE_CM_ATTR_DREQ: ours = m->dreq.remote_comm_id; theirs = m->dreq.local_comm_id; break;
	case WIRE_CM_ATTR_DREP: ours = m->drep.remote_comm_id; theirs = m->drep.local_comm_id; break;
	case WIRE_CM_ATTR_REJ:
		ours = m->rej.remote_comm_id;
		theirs = m->rej.local_comm_id;
		if (m->rej.reason == WIRE_CM_REJ_TIMEOUT && m->rej.reject_info_length >= 8 && theirs) {
			uint64_t guid = 0;
			for (int i = 0; i < 8; i++)
				guid = guid << 8 | m->rej.ari[i];
			id = find_remote(cm, false, theirs, guid, NULL);
			if (id)
				return id;
		}
		break;
	case WIRE_CM_ATTR_SIDR_REP:
		id = find_local(cm, m->sidr_rep.request_id);
		return id && id->sidr && id->active ? id : NULL;
	default:
		return NULL;
	}
	if (ours == 0)
		return NULL;
	id = find_local(cm, ours);
	if (!id || id->sidr)
		return NULL;
	/* REJ and MRA may come before we know the peer's ID (its answer to
	 * our REQ); a REJ for a REQ may carry Local Comm ID 0. */
	if (id->remote_id && theirs != id->remote_id &&
	    !(m->hdr.attr_id == WIRE_CM_ATTR_REJ && theirs == 0))
		return NULL;
	return id;
}

/* The states in which a connection holds its QP: a REQ from the same
 * remote QP (and CA) under a new comm ID means the peer lost that
 * connection (IBTA 12.9, REJ reason 10 "stale connection"; the kernel's
 * cm_insert_remote_qpn). */
static bool holds_qp(enum cm_state s)
{
	return s != CM_ST_IDLE && s != CM_ST_TIMEWAIT && s != CM_ST_SIDR_REQ_SENT && s != CM_ST_SIDR_REQ_RCVD;
}

static void fill_req_info(struct cm_req_info *o, const struct wire_cm_req *r)
{
	o->service_id = r->service_id;
	o->ca_guid = r->local_ca_guid;
	o->qpn = r->local_qpn;
	o->qp_type = r->transport_service_type == 1 ? IBV_QPT_UC : IBV_QPT_RC;
	o->starting_psn = r->starting_psn;
	o->responder_resources = r->responder_resources;
	o->initiator_depth = r->initiator_depth;
	o->path_mtu = (enum ibv_mtu)r->path_mtu;
	o->retry_count = r->retry_count;
	o->rnr_retry_count = r->rnr_retry_count;
	o->local_ack_timeout = r->primary.local_ack_timeout;
	o->remote_cm_response_timeout = r->remote_cm_response_timeout;
	o->local_cm_response_timeout = r->local_cm_response_timeout;
	o->max_cm_retries = r->max_cm_retries;
	o->srq = r->srq;
	o->flow_control = r->end_to_end_flow_control;
	o->pkey = r->pkey;
	o->flow_label = r->primary.flow_label;
	o->traffic_class = r->primary.traffic_class;
	o->hop_limit = r->primary.hop_limit;
	o->sl = r->primary.sl;
	memcpy(o->primary_local_gid, r->primary.local_gid, 16);
	memcpy(o->primary_remote_gid, r->primary.remote_gid, 16);
}

/* A REQ (IBTA 12.6, 12.9): a duplicate of a known connection goes to that
 * id's state machine; otherwise it is checked and either refused at once
 * or becomes a new passive id in REQ Received. */
static void rx_req(struct cm *cm, struct cm_in *in)
{
	const struct wire_cm_req *r = &in->msg->req;
	struct cm_id *id = find_remote(cm, false, r->local_comm_id, r->local_ca_guid, NULL);
	if (id) {
		cm_step(id, in);
		return;
	}
	if (r->transport_service_type > 1) {
		/* RD and XRC are not offered (REJ reason 9). */
		cm_issue_rej(cm, in->src_gid, in->msg, WIRE_CM_REJ_INVALID_TRANSPORT_TYPE);
		return;
	}
	/* Every connection whose remote (CA GUID, QPN) is known is in
	 * by_qpn; only a REQ naming (0, 0) can match one that knows neither
	 * yet, so that one is looked for among all ids (cm->first). */
	struct cm_id *o = r->local_ca_guid || r->local_qpn ?
				  cm->by_qpn.b[qpn_slot(&cm->by_qpn, r->local_ca_guid, r->local_qpn)] :
				  cm->first;
	for (; o; o = r->local_ca_guid || r->local_qpn ? o->next_qpn : o->next) {
		if (!o->sidr && holds_qp(o->state) && o->remote_ca_guid == r->local_ca_guid &&
		    o->remote_qpn == r->local_qpn) {
			CM_COUNT(cm, rej_stale_conn);
			cm_issue_rej(cm, in->src_gid, in->msg, WIRE_CM_REJ_STALE_CONN);
			return;
		}
	}
	struct cm_listen *l = find_listener(cm, r->service_id);
	if (!l) {
		CM_COUNT(cm, rej_invalid_service_id);
		cm_issue_rej(cm, in->src_gid, in->msg, WIRE_CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	id = cm_id_new(cm, false, false);
	if (!id) {
		/* Out of memory: drop it; the active side resends. */
		in->disp = CM_DISP_UNEXPECTED;
		return;
	}
	memcpy(id->remote_gid, in->src_gid, 16);
	id->service_id = r->service_id;
	id->remote_qpn = r->local_qpn;
	id->qp_type = r->transport_service_type == 1 ? IBV_QPT_UC : IBV_QPT_RC;
	id->tid = in->msg->hdr.tid;
	/* The passive side's wait for the RTU / DREP is the active side's
	 * promise, its Local CM Response Timeout; its retries are the REQ's
	 * (the kernel's cm_req_handler). */
	id->timeout_ns = cm_timeout_ns(r->local_cm_response_timeout);
	id->max_retries = r->max_cm_retries;
	cm_id_set_remote(id, r->local_comm_id, r->local_ca_guid);
	cm_set_state(id, CM_ST_REQ_RCVD, "rx REQ");

	struct cm_event ev = { .type = CM_EV_REQ_RECEIVED, .listen_user = l->user };
	fill_req_info(&ev.u.req, r);
	ev.private_data = cm_msg_private_data(in->msg, &ev.private_data_len);
	cm_emit(id, &ev);
}

/* A SIDR_REQ (IBTA 12.11): duplicates by (request ID, GID) go to the id that
 * answers them; a new one for a listened service becomes a passive id. */
static void rx_sidr_req(struct cm *cm, struct cm_in *in)
{
	const struct wire_cm_sidr_req *r = &in->msg->sidr_req;
	struct cm_id *id = find_remote(cm, true, r->request_id, 0, in->src_gid);
	if (id) {
		cm_step(id, in);
		return;
	}
	struct cm_listen *l = find_listener(cm, r->service_id);
	if (!l) {
		CM_COUNT(cm, sidr_unsupported);
		cm_issue_sidr_rep(cm, in->src_gid, in->msg, CM_SIDR_UNSUPPORTED);
		return;
	}
	id = cm_id_new(cm, false, true);
	if (!id) {
		in->disp = CM_DISP_UNEXPECTED;
		return;
	}
	memcpy(id->remote_gid, in->src_gid, 16);
	id->service_id = r->service_id;
	id->tid = in->msg->hdr.tid;
	cm_id_set_remote(id, r->request_id, 0);
	cm_set_state(id, CM_ST_SIDR_REQ_RCVD, "rx SIDR_REQ");

	struct cm_event ev = { .type = CM_EV_SIDR_REQ_RECEIVED, .listen_user = l->user };
	ev.u.sidr_req.service_id = r->service_id;
	ev.u.sidr_req.pkey = r->pkey;
	ev.private_data = cm_msg_private_data(in->msg, &ev.private_data_len);
	cm_emit(id, &ev);
}

static void count_rx_kind(struct cm *cm, uint16_t attr, bool dup)
{
	switch (attr) {
	case WIRE_CM_ATTR_REQ: dup ? CM_COUNT(cm, rx_dup_req) : CM_COUNT(cm, rx_req); break;
	case WIRE_CM_ATTR_MRA: dup ? CM_COUNT(cm, rx_dup_mra) : CM_COUNT(cm, rx_mra); break;
	case WIRE_CM_ATTR_REJ: dup ? CM_COUNT(cm, rx_dup_rej) : CM_COUNT(cm, rx_rej); break;
	case WIRE_CM_ATTR_REP: dup ? CM_COUNT(cm, rx_dup_rep) : CM_COUNT(cm, rx_rep); break;
	case WIRE_CM_ATTR_RTU: dup ? CM_COUNT(cm, rx_dup_rtu) : CM_COUNT(cm, rx_rtu); break;
	case WIRE_CM_ATTR_DREQ: dup ? CM_COUNT(cm, rx_dup_dreq) : CM_COUNT(cm, rx_dreq); break;
	case WIRE_CM_ATTR_DREP: dup ? CM_COUNT(cm, rx_dup_drep) : CM_COUNT(cm, rx_drep); break;
	case WIRE_CM_ATTR_SIDR_REQ: dup ? CM_COUNT(cm, rx_dup_sidr_req) : CM_COUNT(cm, rx_sidr_req); break;
	case WIRE_CM_ATTR_SIDR_REP: dup ? CM_COUNT(cm, rx_dup_sidr_rep) : CM_COUNT(cm, rx_sidr_rep); break;
	default: break;
	}
}

void cm_receive(struct cm *cm, const uint8_t src_gid[16], const uint8_t *mad, size_t len, uint64_t now)
{
	struct wire_cm_msg m;
	CM_COUNT(cm, rx_mads);
	if (!mad || !src_gid) {
		CM_COUNT(cm, rx_drop_malformed);
		return;
	}
	int rc = wire_cm_decode(mad, len, &m);
	if (rc == WIRE_E_MAD_CLASS || rc == WIRE_E_MAD_ATTR) {
		CM_COUNT(cm, rx_drop_unsupported);
		return;
	}
	if (rc < 0) {
		CM_COUNT(cm, rx_drop_malformed);
		return;
	}
	count_rx_kind(cm, m.hdr.attr_id, false);

	struct cm_in in = { .kind = CM_IN_RX, .now = now, .msg = &m, .src_gid = src_gid, .disp = CM_DISP_HANDLED };
	if (m.hdr.attr_id == WIRE_CM_ATTR_REQ) {
		rx_req(cm, &in);
	} else if (m.hdr.attr_id == WIRE_CM_ATTR_SIDR_REQ) {
		rx_sidr_req(cm, &in);
	} else {
		struct cm_id *id = lookup_reply(cm, &m);
		if (id)
			cm_step(id, &in);
		else
			in.disp = CM_DISP_UNKNOWN;
	}
	switch (in.disp) {
	case CM_DISP_HANDLED: CM_COUNT(cm, rx_handled); break;
	case CM_DISP_DUP: count_rx_kind(cm, m.hdr.attr_id, true); break;
	case CM_DISP_UNKNOWN: CM_COUNT(cm, rx_drop_unknown_id); break;
	case CM_DISP_UNEXPECTED: CM_COUNT(cm, rx_drop_unexpected); break;
	case CM_DISP_TIMEWAIT: CM_COUNT(cm, rx_drop_timewait); break;
	}
}
