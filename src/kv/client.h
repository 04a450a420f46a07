/*
 * client.h — the key-value client library (client.c): connect to a server
 * through librdmacm and call it, synchronously (kv_call) or with up to
 * KV_DEPTH requests in flight (kv_submit / kv_complete).  cluster.h
 * spreads keys over several servers.
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
	const uint8_t *value;           /* GET, STATS: valid until the next
					   kv_complete or synchronous call */
	uint32_t vlen;
	uint64_t token;                 /* kv_submit's token */
};

struct kv_client_opts {
	enum kv_transport transport;    /* how requests and answers travel (proto.h) */
	unsigned spin_us;               /* how long a wait polls before it sleeps */
};
#define KV_CLIENT_DEFAULTS { .transport = KV_VIA_WRITE_IMM, .spin_us = 50 }

/* NULL and *err (an errno: no route, refused, ...) on failure. */
struct kv_client *kv_connect(const char *host, const char *port, int *err);
struct kv_client *kv_connect_opts(const char *host, const char *port, const struct kv_client_opts *o, int *err);
void kv_close(struct kv_client *c);

/* Synchronous calls (none may be in flight: EBUSY).  0 with *res filled
 * (res->status says what the server did), or an errno for a transport
 * failure (EIO, EPROTO) or bad lengths (EINVAL). */
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

/* Asynchronous calls.  kv_submit sends a request and returns at once with
 * its token; EBUSY when KV_DEPTH are in flight (complete one first).
 * kv_complete hands back one answer in the order they arrive: 1 with
 * *res (res->token says which request), 0 when none is ready (wait
 * false) or none is in flight, or a negative errno (the connection
 * failed: every request in flight is lost). */
int kv_submit(struct kv_client *c, enum kv_op op, const void *key, uint32_t klen, const void *val, uint32_t vlen,
	      int64_t arg, uint64_t *token);
int kv_complete(struct kv_client *c, struct kv_result *res, bool wait);
unsigned kv_in_flight(const struct kv_client *c);

/* GET without the server's CPU: RDMA READs of the table (Pilaf-style,
 * table.h), `now` in the server's clock (CLOCK_REALTIME, ns) for expiry.
 * None may be in flight (EBUSY).  0 with *res (KV_OK or KV_NOT_FOUND;
 * value valid until the next call), EOPNOTSUPP when the server offered no
 * table, EAGAIN after 64 reads torn by concurrent SETs, or a transport
 * errno.  It does not mark the item recently used: CLOCK may evict an
 * item that is only ever read this way. */
int kv_get_one_sided(struct kv_client *c, const void *key, uint32_t klen, uint64_t now, struct kv_result *res);
/* The same GET asynchronously, beside kv_submit's requests (it takes one
 * of the KV_DEPTH slots): its READs follow one another as each completes,
 * and kv_complete hands back its result like an answer (res->token; the
 * value valid until the next kv_complete).  Status KV_OK, KV_NOT_FOUND, or
 * KV_IO_ERROR after 64 lookups torn by concurrent SETs.  EOPNOTSUPP,
 * EINVAL, EBUSY as kv_submit. */
int kv_submit_get_one_sided(struct kv_client *c, const void *key, uint32_t klen, uint64_t now, uint64_t *token);
/* For tests of the server's confinement: an RDMA READ (or WRITE) of len
 * bytes at `offset` from the start of the server's arena (outside it
 * too) with the rkey it handed out.  0, EACCES (the remote access error
 * a confined rkey must give; the connection is then unusable), or EIO. */
int kv_probe_remote(struct kv_client *c, bool write, int64_t offset, uint32_t len);
/* How many one-sided reads found a chunk changing under them. */
uint64_t kv_torn_retries(const struct kv_client *c);
enum kv_transport kv_client_transport(const struct kv_client *c);

#endif
