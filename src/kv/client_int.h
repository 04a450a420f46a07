/*
 * client_int.h — the key-value client's connection as its two files
 * share it: client.c (connecting, requests and their answers, the
 * completion loop) and client_onesided.c (GETs by RDMA READ of the
 * server's table).  Not for the library's users: client.h is.
 */
#ifndef SOFTRNIC_KV_CLIENT_INT_H
#define SOFTRNIC_KV_CLIENT_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "kv/client.h"
#include "kv/proto.h"

/* Work request ids: what completed, and which slot or buffer. */
enum { WR_REQUEST = 1, WR_READ = 2, WR_RECV = 3, WR_PROBE = 4, WR_AREAD = 5 };
#define WR_ID(kind, idx) ((uint64_t)(kind) << 32 | (uint32_t)(idx))
#define SQ_DEPTH (KV_DEPTH + 4u)
#define NO_SLOT 0xffu

/* An asynchronous one-sided GET (kv_submit_get_one_sided) in a request
 * slot: the same READs as kv_get_one_sided, one at a time, each posted
 * from the completion of the one before (on_wc -> kvc_os_advance). */
enum os_step { OS_BUCKETS, OS_ITEM, OS_WHOLE };
struct one_sided {
	enum os_step step;
	uint8_t key[KV_MAX_KEY];
	uint32_t klen;
	uint64_t hash, now, id;
	struct kv_bucket b[KV_PROBE];
	unsigned cand;                  /* the bucket slot being looked at */
	uint64_t off;                   /* that candidate's item */
	uint32_t want;                  /* bytes of it being READ */
	bool retry;                     /* a candidate was torn: start over */
	unsigned attempts;
	enum kv_status status;          /* the result, once done */
	uint32_t voff, vlen;
};

struct kv_client {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	enum kv_transport transport;
	uint64_t spin_ns;
	uint8_t *req, *resp, *read;             /* KV_DEPTH slots each; read: one message */
	struct ibv_mr *req_mr, *resp_mr, *read_mr;
	uint8_t *aread;                         /* KV_DEPTH messages: async one-sided READs */
	struct ibv_mr *aread_mr;
	struct one_sided os[KV_DEPTH];
	bool slot_os[KV_DEPTH];                 /* slot i holds a one-sided GET */
	struct kv_hello hello;
	struct kv_table_hdr table;              /* read once, for the one-sided GET */
	bool one_sided_ok;
	int failed;                             /* an errno once the connection broke */
	bool armed;
	bool probing;                           /* a liveness probe is out */

	uint64_t next_id;
	uint64_t slot_id[KV_DEPTH];             /* the request in slot i; 0: free */
	bool slot_raw[KV_DEPTH];                /* kv_call_raw: match any answer */
	unsigned in_flight;
	unsigned sq_used;                       /* posted, not yet completed */
	unsigned recv_posted;
	uint32_t recv_free;                     /* KV_VIA_SEND: buffers to post again */
	/* Answers ready for kv_complete: FIFO of {slot, buffer, length}
	 * (one_sided: the result is in os[slot]). */
	struct ready { uint8_t slot, buf; uint32_t len; bool one_sided; } ready[KV_DEPTH];
	unsigned ready_head, ready_count;
	struct ready held;                      /* handed out last; freed on the next call */
	bool holding;
	bool read_done;
	enum ibv_wc_status read_status;
	uint64_t torn_retries;
};

/* client.c */
/* Marks the connection broken with err (the first error stays). */
void kvc_fail(struct kv_client *c, int err);
/* Handle one completion: 1, 0 if none (and !wait), or -errno. */
int kvc_progress(struct kv_client *c, bool wait);
/* Free what the last handed-out answer held. */
int kvc_release_held(struct kv_client *c);
/* Room for one more request (a slot, a send queue entry and, when
 * needs_recv, a posted receive): 0 with *slot, or an errno. */
int kvc_take_slot_for(struct kv_client *c, unsigned *slot, bool needs_recv);

/* client_onesided.c */
/* A READ of slot's asynchronous lookup completed: the next step. */
void kvc_os_advance(struct kv_client *c, unsigned slot);
/* RDMA READ len bytes of the server's arena at offset `off` into c->read
 * and wait for it. */
int kvc_read_remote(struct kv_client *c, uint64_t off, uint32_t len);

#endif
