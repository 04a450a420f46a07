/*
 * local_ring.c — the host-local ring's format (local_ring.h): making a
 * ring's header, reserving an entry as a producer, reading one back as
 * the consumer.  Pure code over the ring's memory, whoever mapped it.
 */
#include "runtime/local_ring.h"

#include <string.h>

void ring_init(struct ring *r, uint32_t owner_pid, bool shared, bool wants_icrc, bool msg_ok, uint64_t probe_addr,
	       uint64_t cookie)
{
	pthread_mutexattr_t ma;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&r->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	r->version = RING_VERSION;
	r->owner_pid = owner_pid;
	r->shared = shared;
	r->area_bytes = RING_AREA_BYTES;
	r->entry_max = ENTRY_MAX_BYTES;
	r->wants_icrc = wants_icrc;
	r->msg_ok = msg_ok;
	r->probe_addr = probe_addr;
	r->cookie = cookie;
	atomic_store(&r->head, 0);
	atomic_store(&r->tail, 0);
	atomic_store(&r->sleeping, 0);
	__atomic_store_n(&r->magic, RING_MAGIC, __ATOMIC_RELEASE);
}

bool ring_header_ok(const struct ring *r)
{
	return __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) == RING_MAGIC && r->version == RING_VERSION &&
	       r->area_bytes == RING_AREA_BYTES && r->entry_max == ENTRY_MAX_BYTES;
}

struct ring_entry *ring_reserve(struct ring *r, uint64_t *head, uint64_t *tail_seen, uint32_t bytes,
				uint32_t keep_free)
{
	uint64_t h = *head;
	/* An entry does not wrap: one that would pass the area's end goes
	 * to its start, after a WRAP marker that fills the rest. */
	uint32_t need = entry_bytes(bytes), at = (uint32_t)(h % RING_AREA_BYTES);
	uint32_t skip = at + need > RING_AREA_BYTES ? RING_AREA_BYTES - at : 0;

	if (h + skip + need - *tail_seen > RING_AREA_BYTES - keep_free) {
		*tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (h + skip + need - *tail_seen > RING_AREA_BYTES - keep_free)
			return NULL;
	}
	if (skip) {
		((struct ring_entry *)(r->entries + at))->flags = ENTRY_WRAP;
		h += skip;
	}
	*head = h;
	return (struct ring_entry *)(r->entries + h % RING_AREA_BYTES);
}

uint32_t ring_read_entry(const struct ring *r, uint64_t tail, uint64_t head, struct ring_entry_view *v)
{
	uint32_t at = (uint32_t)(tail % RING_AREA_BYTES);
	const struct ring_entry *e = (const struct ring_entry *)(r->entries + at);
	uint32_t len = e->len;
	uint8_t flags = e->flags;
	bool wrap = flags & ENTRY_WRAP;
	bool in_entry = (flags & (ENTRY_REMOTE | ENTRY_INLINE)) == (ENTRY_REMOTE | ENTRY_INLINE);
	uint32_t bytes = len;

	memset(v, 0, sizeof(*v));
	/* Nothing is read past the area's end: an entry never crosses it
	 * (senders wrap), so one that would is broken.  Each length is read
	 * once: the sender can still write the entry. */
	if (!wrap && (flags & ENTRY_REMOTE) && len <= ENTRY_DATA - sizeof(struct srt_local_remote) &&
	    at + sizeof(*e) + remote_at(len) + sizeof(struct srt_local_remote) <= RING_AREA_BYTES) {
		v->remote = (const struct srt_local_remote *)(const void *)(e->data + remote_at(len));
		if (in_entry) {
			uint64_t total = v->remote->total;
			v->inline_len = (uint32_t)total;
			bytes = total && total <= ENTRY_INLINE_CAP ? inline_at(len) + v->inline_len : UINT32_MAX;
		} else {
			v->nseg = v->remote->nseg;
			bytes = v->nseg <= SRT_LOCAL_REMOTE_SEGS ? remote_bytes(len, v->nseg) : UINT32_MAX;
		}
	} else if (!wrap && (flags & ENTRY_REMOTE)) {
		bytes = UINT32_MAX;
	}
	uint32_t most = in_entry ? ENTRY_DATA + ENTRY_INLINE_CAP : ENTRY_DATA;
	uint32_t takes = wrap ? RING_AREA_BYTES - at : entry_bytes(bytes);   /* meaningful only if bytes fit */
	if ((!wrap && (bytes > most || at + takes > RING_AREA_BYTES)) || head - tail < takes)
		return 0;
	v->wrap = wrap;
	v->flags = flags;
	v->e = e;
	v->len = len;
	if (v->remote && in_entry)
		v->inline_data = e->data + inline_at(len);
	return takes;
}
