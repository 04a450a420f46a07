/*
 * proto.h — the key-value store's messages and how they travel (the
 * one-sided GET reads the table directly instead, table.h).
 *
 *   request   struct kv_req (32 bytes), the key, the value (SET only)
 *   response  struct kv_resp (32 bytes), the value (GET, STATS)
 *
 * Each connection has KV_DEPTH slots of KV_SLOT_BYTES on both sides, and
 * a client keeps at most KV_DEPTH requests in flight.  Two transports,
 * chosen by the client in its connect private data (kv_client_hello):
 *
 *   KV_VIA_SEND       the request is a SEND into one of the server's
 *                     receive buffers; the answer a SEND into one of the
 *                     client's.  Answers are matched to requests by id.
 *   KV_VIA_WRITE_IMM  HERD-style: the client RDMA-WRITEs the request
 *                     straight into its slot i on the server, with the
 *                     immediate KV_IMM(i, length); the server answers by
 *                     RDMA WRITE-with-immediate into the client's slot i.
 *                     Receives are still posted (an immediate consumes
 *                     one), but they carry no buffer and nothing is
 *                     copied out of them.
 *
 * Little-endian host order on both sides (x86-64 and arm64 both are); the
 * magic word catches a peer that is something else.  kv_req_parse is the
 * one place a request is trusted or refused.
 */
#ifndef SOFTRNIC_KV_PROTO_H
#define SOFTRNIC_KV_PROTO_H

#include <stdint.h>
#include <string.h>

#include "kv/table.h"

#define KV_PROTO_MAGIC 0x3150564bu      /* "KVP1" */
#define KV_MSG_MAX (32u + KV_MAX_KEY + KV_MAX_VALUE)
#define KV_DEPTH 4u                     /* requests in flight per connection */
/* Slots start 64-byte aligned (the headers are read as structs). */
#define KV_SLOT_BYTES ((KV_MSG_MAX + 63u) & ~63u)

enum kv_transport { KV_VIA_SEND = 0, KV_VIA_WRITE_IMM = 1 };

/* The immediate of a WRITE-with-immediate: the slot in the top 8 bits,
 * the message length (< 2^24, KV_MSG_MAX is about 1 MiB) below. */
#define KV_IMM(slot, len) ((uint32_t)(slot) << 24 | (uint32_t)(len))
#define KV_IMM_SLOT(imm) ((imm) >> 24)
#define KV_IMM_LEN(imm) ((imm) & 0xffffffu)
_Static_assert(KV_MSG_MAX < (1u << 24), "a message length fits the immediate");

enum kv_op { KV_OP_GET = 1, KV_OP_SET = 2, KV_OP_DEL = 3, KV_OP_INCR = 4, KV_OP_STATS = 5, KV_OP_MGET = 6 };

/* MGET: the request's klen is 0 and its "value" is up to KV_MGET_MAX keys,
 * each as a 2-byte length and the key; the answer's value is one entry per
 * key in order: a 4-byte length (KV_MGET_MISSING: no such key) and the
 * value.  The answer must fit one message (KV_MSG_MAX): a multi-GET whose
 * values add up to more is refused with KV_BAD_REQUEST — ask for fewer. */
#define KV_MGET_MAX 64u
#define KV_MGET_MISSING 0xffffffffu

enum kv_status {
	KV_OK = 0,
	KV_NOT_FOUND = 1,
	KV_BAD_REQUEST = 2,     /* malformed: lengths, op, magic */
	KV_NO_MEMORY = 3,       /* nothing of that size could be evicted */
	KV_NOT_INTEGER = 4,     /* INCR on a value that is not an int64 */
	KV_OUT_OF_RANGE = 5,    /* INCR overflow */
	KV_IO_ERROR = 6,        /* the change could not be logged (AOF) */
};

struct kv_req {
	uint32_t magic;
	uint8_t op;
	uint8_t reserved;
	uint16_t klen;
	uint32_t vlen;
	uint32_t reserved2;
	uint64_t id;
	int64_t arg;            /* SET: TTL in ms (0: none); INCR: the delta */
};

struct kv_resp {
	uint32_t magic;
	uint8_t status;         /* enum kv_status */
	uint8_t reserved[3];
	uint32_t vlen;
	uint32_t reserved2;
	uint64_t id;
	int64_t number;         /* INCR: the new value */
};

_Static_assert(sizeof(struct kv_req) == 32, "request header");
_Static_assert(sizeof(struct kv_resp) == 32, "response header");

/* The server's private data in its accept (rdma_accept): where a
 * one-sided client can READ the table, and (KV_VIA_WRITE_IMM) where this
 * connection's request slots are. */
struct kv_hello {
	uint32_t magic;
	uint32_t rkey;                  /* the arena: REMOTE_READ only */
	uint64_t addr;
	uint64_t size;
	uint32_t req_rkey;              /* this connection's request slots: */
	uint32_t transport;             /*   REMOTE_WRITE, for KV_VIA_WRITE_IMM */
	uint64_t req_addr;
};

/* The client's private data in its connect: the transport it wants and,
 * for KV_VIA_WRITE_IMM, where its response slots are.  A connect without
 * it (another program) gets KV_VIA_SEND. */
struct kv_client_hello {
	uint32_t magic;
	uint32_t transport;             /* enum kv_transport */
	uint32_t resp_rkey;
	uint32_t reserved;
	uint64_t resp_addr;
};
_Static_assert(sizeof(struct kv_client_hello) <= 56, "fits an RC connect's private data");

/* Check a received request of `len` bytes: KV_OK and the header in *req,
 * or KV_BAD_REQUEST.  Every length is checked against `len` and the
 * limits before anything is read past the header. */
static inline enum kv_status kv_req_parse(const uint8_t *buf, uint32_t len, struct kv_req *req)
{
	if (len < sizeof(*req))
		return KV_BAD_REQUEST;
	memcpy(req, buf, sizeof(*req));
	if (req->magic != KV_PROTO_MAGIC || req->op < KV_OP_GET || req->op > KV_OP_MGET)
		return KV_BAD_REQUEST;
	if (req->op == KV_OP_MGET) {
		/* Every key inside the message, 1 to KV_MAX_KEY bytes each. */
		uint32_t at = 0, n = 0;
		if (req->klen || req->vlen < 3 || (uint64_t)sizeof(*req) + req->vlen != len)
			return KV_BAD_REQUEST;
		while (at < req->vlen) {
			uint16_t kl;
			if (req->vlen - at < 2 || ++n > KV_MGET_MAX)
				return KV_BAD_REQUEST;
			memcpy(&kl, buf + sizeof(*req) + at, 2);
			if (kl < 1 || kl > KV_MAX_KEY || kl > req->vlen - at - 2)
				return KV_BAD_REQUEST;
			at += 2u + kl;
		}
		return KV_OK;
	}
	if (req->op != KV_OP_STATS && (req->klen < 1 || req->klen > KV_MAX_KEY))
		return KV_BAD_REQUEST;
	if (req->vlen > KV_MAX_VALUE || (req->op != KV_OP_SET && req->vlen))
		return KV_BAD_REQUEST;
	if ((uint64_t)sizeof(*req) + req->klen + req->vlen != len)
		return KV_BAD_REQUEST;
	if (req->op == KV_OP_SET && req->arg < 0)
		return KV_BAD_REQUEST;
	return KV_OK;
}

#endif
