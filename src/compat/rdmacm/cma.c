/*
 * cma.c — the process's connection manager for librdmacm.so.1: softrnic's
 * IB CM (src/cm), created once per process on the first call that needs
 * it (rcm_init) and attached to the process's softrnic device as the
 * agent that owns QP1 (srt_set_agent): MADs in and out, the cm's
 * deadlines and those of early REQs (cma_early.c), its counters for
 * `softrnic stats`.  At exit, a DREQ for every established id.
 *
 * The rest of the rdma_cm API is in the other cma*.c files (cma_int.h
 * lists them); the cm's events arrive in rcm_cm_event (cma_event.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat/rdmacm/cma_int.h"
#include "runtime/share_steer.h"
#include "wire/mad.h"

struct rcm_global rcm = { .lock = PTHREAD_MUTEX_INITIALIZER };
/* Guards rcm.all; taken inside the device lock (ids are made in cm events). */
pthread_mutex_t rcm_list_lock = PTHREAD_MUTEX_INITIALIZER;

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

static uint64_t agent_next_deadline(void *ctx)
{
	uint64_t d = cm_next_deadline(rcm.cm), e = rcm_early_deadline();
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
	rcm_early_retry(now);
}

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
	struct cm_io io = { .ctx = NULL, .send_mad = io_send_mad, .event = rcm_cm_event };
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
	srt_lock(rcm.dev);     /* then rcm_list_lock, as request_received takes them */
	pthread_mutex_lock(&rcm_list_lock);
	for (struct rcm_id *id = rcm.all; id; id = id->next_all)
		if (id->cm && cm_id_state(id->cm) == CM_ST_ESTABLISHED &&
		    cm_disconnect(id->cm, NULL, 0, srt_now()) == 0)
			sent++;
	pthread_mutex_unlock(&rcm_list_lock);
	srt_unlock(rcm.dev);
	if (sent)
		srt_kick(rcm.dev);
}
