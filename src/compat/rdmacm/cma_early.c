/*
 * cma_early.c — early REQs on one host.  perftest -R and qperf -cm1 open
 * a connection right after telling their server (over another channel)
 * to expect it; the server then creates its listener.  The kernel's
 * address and route resolution take long enough that the REQ arrives
 * after the listen; softrnic's take microseconds, so now and then the REQ
 * comes first and is refused (REJ 8, or SIDR status 1), which those
 * programs do not survive (on one host and across a link alike).  So a
 * refused request is sent again every RCM_EARLY_RETRY_NS, up to
 * RCM_EARLY_RETRIES times — on one host to the device the loopback
 * registry names by then, as the listener may only now have appeared —
 * before the program hears REJECTED.  Trade-off: a connect to a port
 * nobody listens on is refused after 100 ms (RCM_EARLY_RETRIES *
 * RCM_EARLY_RETRY_NS) instead of at once as on the kernel; a CM that
 * resolved addresses as slowly as the kernel's would not need it.
 *
 * rcm_cm_event (cma_event.c) arms the resend on a refusal, the agent
 * (cma.c) asks for the next deadline and runs rcm_early_retry, which
 * sends the request rdma_connect kept in the id (rcm_send_request,
 * cma_conn.c); rdma_destroy_id disarms it.
 */
#include <string.h>

#include "compat/rdmacm/cma_int.h"

/* Device lock held: arm (at > 0) or disarm (0) an id's resend.  The
 * waiting ids are a list in deadline order (every resend is due
 * RCM_EARLY_RETRY_NS after the refusal, so one arriving later goes at or
 * near the tail): the next deadline is the head's, found in O(1), not by
 * walking every id — the runtime asks for it on every post_send. */
void rcm_set_retry(struct rcm_id *id, uint64_t at)
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
uint64_t rcm_early_deadline(void)
{
	return rcm.early_head ? rcm.early_head->retry_at : UINT64_MAX;
}

/* Device lock held: send the due requests again, at most 32 a call (the
 * rest on the next).  The due ids are taken off the list
 * first (sending may create ids); none can be freed meanwhile, because
 * rdma_destroy_id takes the device lock (and clears retry_at) before it
 * frees. */
void rcm_early_retry(uint64_t now)
{
	struct rcm_id *due[32];
	unsigned n = 0;

	while (rcm.early_head && rcm.early_head->retry_at <= now && n < sizeof(due) / sizeof(due[0])) {
		due[n++] = rcm.early_head;
		rcm_set_retry(rcm.early_head, 0);
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
		if (rcm_send_request(i, now)) {
			/* Cannot send: report the refusal after all. */
			struct rcm_event *e = rcm_new_event(i, RDMA_CM_EVENT_REJECTED, CM_REJ_INVALID_SERVICE_ID);
			if (e)
				rcm_queue_event(i, e);
		}
	}
}
