/*
 * client.h — the key-value client library (client.c): connect to a server
 * through librdmacm and call it, one request at a time.
 */
#ifndef SOFTRNIC_KV_CLIENT_H
#define SOFTRNIC_KV_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "kv/proto.h"

struct kv_client;

struct kv_result {
	enum kv_status status;
	int64_t number;                 /* INCR: the new value */
	const uint8_t *value;           /* GET, STATS: valid until the next call */
	uint32_t vlen;
};

/* NULL and *err (an errno: no route, refused, ...) on failure. */
struct kv_client *kv_connect(const char *host, const char *port, int *err);
/* 0 with *res filled (res->status says what the server did), or an errno
 * for a transport failure (EIO, EPROTO) or bad lengths (EINVAL). */
int kv_call(struct kv_client *c, enum kv_op op, const void *key, uint32_t klen, const void *val, uint32_t vlen,
	    int64_t arg, struct kv_result *res);
/* Multi-GET of n keys (1 .. KV_MGET_MAX) in one round trip: 0 with
 * res->status; on KV_OK, values[i]/vlens[i] for each key (values[i] NULL
 * for a missing key; valid until the next call).  KV_BAD_REQUEST when the
 * values together do not fit one answer. */
int kv_mget(struct kv_client *c, unsigned n, const char *const *keys, struct kv_result *res,
	    const uint8_t **values, uint32_t *vlens);
/* Send `len` raw bytes as a request (tests: malformed requests) and read
 * the answer, whatever its id. */
int kv_call_raw(struct kv_client *c, const void *msg, uint32_t len, struct kv_result *res);
void kv_close(struct kv_client *c);

/* GET without the server's CPU: RDMA READs of the table (Pilaf-style,
 * table.h), `now` in the server's clock (CLOCK_REALTIME, ns) for expiry.
 * 0 with *res (KV_OK or KV_NOT_FOUND; value valid until the next call),
 * EOPNOTSUPP when the server offered no table, EAGAIN after 64 reads torn
 * by concurrent SETs, or a transport errno.  It does not mark the item
 * recently used: CLOCK may evict an item that is only ever read this way. */
int kv_get_one_sided(struct kv_client *c, const void *key, uint32_t klen, uint64_t now, struct kv_result *res);
/* For tests of the server's confinement: an RDMA READ (or WRITE) of len
 * bytes at `offset` from the start of the server's arena (outside it
 * too) with the rkey it handed out.  0, EACCES (the remote access error
 * a confined rkey must give; the connection is then unusable), or EIO. */
int kv_probe_remote(struct kv_client *c, bool write, int64_t offset, uint32_t len);
/* How many one-sided reads found a chunk changing under them. */
uint64_t kv_torn_retries(const struct kv_client *c);

#endif
