/*
 * cluster.h — the key-value client over several servers (cluster.c): each
 * key goes to the server the consistent-hash ring (ring.h) names, over a
 * connection made the first time that server is needed.
 *
 * What holds across shards: every key lives on exactly one server, the
 * same one for every client given the same list (order does not matter:
 * the ring is built from the names).  What does not: a multi-GET spanning
 * servers is one round trip per server, not one snapshot; there is no
 * transaction across keys on different servers; when the list changes,
 * about 1/n of the keys are now looked for on a server that does not have
 * them (they read as missing until set again: no migration); a server
 * that is down makes its keys unavailable, not the others.
 */
#ifndef SOFTRNIC_KV_CLUSTER_H
#define SOFTRNIC_KV_CLUSTER_H

#include "kv/client.h"
#include "kv/ring.h"

struct kv_cluster;

/* `list`: "HOST[:PORT],HOST[:PORT],..." (PORT default_port when absent).
 * 0, or EINVAL (empty, too long, a server twice) or ENOMEM.  Nothing is
 * connected yet. */
int kv_cluster_open(struct kv_cluster **out, const char *list, const char *default_port,
		    const struct kv_client_opts *o);
void kv_cluster_close(struct kv_cluster *cl);
unsigned kv_cluster_size(const struct kv_cluster *cl);
/* "host:port" of server i. */
const char *kv_cluster_name(const struct kv_cluster *cl, unsigned i);
/* Which server holds the key. */
unsigned kv_cluster_server_of(const struct kv_cluster *cl, const void *key, uint32_t klen);
/* The connection to server i, made now if need be: NULL and *err.  A
 * server that refused is not tried again for a second (the same *err). */
struct kv_client *kv_cluster_client(struct kv_cluster *cl, unsigned i, int *err);
/* Multi-GET across servers: as kv_mget (one round trip per server holding
 * any of the keys); res->status is the first non-OK status of any server. */
int kv_cluster_mget(struct kv_cluster *cl, unsigned n, const char *const *keys, struct kv_result *res,
		    const uint8_t **values, uint32_t *vlens);

#endif
