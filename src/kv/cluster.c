/*
 * cluster.c — several key-value servers as one (cluster.h): a ring over
 * their names and a lazily made connection to each.
 */
#include "kv/cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"

/* How long a server that refused a connection is taken as down before
 * the next attempt (each attempt costs a connection setup's time). */
#define DOWN_NS 1000000000ull

struct kv_cluster {
	unsigned n;
	struct kv_client_opts opts;
	char name[KV_RING_MAX_SERVERS][280];    /* host:port */
	char host[KV_RING_MAX_SERVERS][256];
	char port[KV_RING_MAX_SERVERS][16];
	struct kv_client *conn[KV_RING_MAX_SERVERS];
	uint64_t down_until_ns[KV_RING_MAX_SERVERS];    /* a failed connect, remembered */
	int down_err[KV_RING_MAX_SERVERS];
	struct kv_ring ring;
};

int kv_cluster_open(struct kv_cluster **out, const char *list, const char *default_port,
		    const struct kv_client_opts *o)
{
	struct kv_cluster *cl = calloc(1, sizeof(*cl));
	const char *names[KV_RING_MAX_SERVERS];
	const char *p = list;

	if (!cl)
		return ENOMEM;
	cl->opts = *o;
	while (*p) {
		size_t len = strcspn(p, ",");
		const char *colon = memchr(p, ':', len);
		size_t hl = colon ? (size_t)(colon - p) : len;
		size_t pl = colon ? len - hl - 1 : strlen(default_port);
		if (cl->n == KV_RING_MAX_SERVERS || hl == 0 || hl >= sizeof(cl->host[0]) || pl == 0 ||
		    pl >= sizeof(cl->port[0])) {
			free(cl);
			return EINVAL;
		}
		memcpy(cl->host[cl->n], p, hl);
		memcpy(cl->port[cl->n], colon ? colon + 1 : default_port, pl);
		char name[sizeof(cl->name[0])];
		snprintf(name, sizeof(name), "%s:%s", cl->host[cl->n], cl->port[cl->n]);
		memcpy(cl->name[cl->n], name, sizeof(name));
		names[cl->n] = cl->name[cl->n];
		cl->n++;
		p += len;
		if (*p == ',')
			p++;
	}
	if (kv_ring_build(&cl->ring, names, cl->n)) {
		free(cl);
		return EINVAL;
	}
	*out = cl;
	return 0;
}

void kv_cluster_close(struct kv_cluster *cl)
{
	if (!cl)
		return;
	for (unsigned i = 0; i < cl->n; i++)
		kv_close(cl->conn[i]);
	free(cl);
}

unsigned kv_cluster_size(const struct kv_cluster *cl)
{
	return cl->n;
}

const char *kv_cluster_name(const struct kv_cluster *cl, unsigned i)
{
	return cl->name[i];
}

unsigned kv_cluster_server_of(const struct kv_cluster *cl, const void *key, uint32_t klen)
{
	return kv_ring_server(&cl->ring, key, klen);
}

struct kv_client *kv_cluster_client(struct kv_cluster *cl, unsigned i, int *err)
{
	if (i >= cl->n) {
		*err = EINVAL;
		return NULL;
	}
	if (cl->conn[i])
		return cl->conn[i];
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	if (now < cl->down_until_ns[i]) {
		*err = cl->down_err[i];
		return NULL;
	}
	cl->conn[i] = kv_connect_opts(cl->host[i], cl->port[i], &cl->opts, err);
	if (!cl->conn[i]) {
		cl->down_until_ns[i] = now + DOWN_NS;
		cl->down_err[i] = *err;
	}
	return cl->conn[i];
}

int kv_cluster_mget(struct kv_cluster *cl, unsigned n, const char *const *keys, struct kv_result *res,
		    const uint8_t **values, uint32_t *vlens)
{
	const char *sub[KV_MGET_MAX];
	const uint8_t *sv[KV_MGET_MAX];
	uint32_t sl[KV_MGET_MAX];
	unsigned where[KV_MGET_MAX];
	int err;

	if (n < 1 || n > KV_MGET_MAX)
		return EINVAL;
	for (unsigned i = 0; i < n; i++)
		where[i] = kv_cluster_server_of(cl, keys[i], (uint32_t)strlen(keys[i]));
	res->status = KV_OK;
	/* One MGET per server; each answer stays in its own connection's
	 * buffer, so all the values are readable together. */
	for (unsigned s = 0; s < cl->n; s++) {
		unsigned m = 0;
		for (unsigned i = 0; i < n; i++)
			if (where[i] == s)
				sub[m++] = keys[i];
		if (!m)
			continue;
		struct kv_client *c = kv_cluster_client(cl, s, &err);
		struct kv_result r;
		if (!c)
			return err;
		if ((err = kv_mget(c, m, sub, &r, sv, sl)) != 0)
			return err;
		if (r.status != KV_OK) {
			*res = r;
			return 0;
		}
		for (unsigned i = 0, j = 0; i < n; i++) {
			if (where[i] == s) {
				values[i] = sv[j];
				vlens[i] = sl[j++];
			}
		}
	}
	return 0;
}
