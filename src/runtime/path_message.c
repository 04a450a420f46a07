/*
 * path_message.c — the host-local message path (path.h): an RC QP whose
 * peer is on this host (srt_paths_choose_for_qp) hands over each message
 * whole, and it travels as one entry of the peer's ring whose payload the
 * peer reads from our memory, or, short and sent alone, carried in the
 * entry (local_path.h, local_message.c).  It sends only whole messages;
 * what arrives this way comes through the ring path's receive, so it has
 * no receive of its own.
 */
#include "runtime/paths.h"

#include <errno.h>

static int message_send(struct srt_path *p, void *dest, const struct srt_tx_meta *m, const uint8_t *hdr,
			uint32_t hdr_len, const struct wire_piece *vec, unsigned nvec)
{
	struct srt_path_local *pl = (struct srt_path_local *)(void *)p;

	srt_local_send_remote(pl->l, dest, srt_path_local_sport(m), m->tos, m->ttl, hdr, hdr_len, vec, nvec,
			      m->alone);
	return 0;
}

static uint32_t message_min(struct srt_path *p, void *dest)
{
	struct srt_path_local *pl = (struct srt_path_local *)(void *)p;

	return srt_local_message_path(pl->l, dest) ? srt_local_message_min() : 0;
}

static const struct srt_path_ops message_ops = {
	.name = "message",
	.route = srt_path_local_route,
	.send_message = message_send,
	.message_min = message_min,
	.flush = srt_path_local_flush,
};

void srt_path_message_init(struct srt_path_local *pl, struct srt_local *l, const struct rnic_gid *gid)
{
	pl->base = (struct srt_path){ .ops = &message_ops };
	pl->l = l;
	pl->gid = *gid;
}
