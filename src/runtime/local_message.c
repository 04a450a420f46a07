/*
 * local_message.c — the host-local message path (local_path.h, "the
 * message path" and "payloads in the ring"): an RC message whose peer is
 * on this host travels as one ring entry holding its headers and either a
 * description of its payload, which the receiver reads with one
 * process_vm_readv once its rnic has decided where the bytes go, or,
 * for a short message sent alone, the payload itself.  Also the probe that
 * decides whether two processes may use it.
 */
#include "runtime/local_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtime/mem_guard.h"

/* May this process use the message path: can its peers (processes of
 * the same user) read its memory with process_vm_readv, and can it read
 * theirs?  Yama's ptrace_scope above 0 allows it only to ancestors; a
 * process that is not dumpable (setuid, or it said so) refuses it; a
 * seccomp filter may forbid the call itself (tried on ourselves). */
bool srt_local_memory_reachable(uint64_t cookie)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0;

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 1;
		fclose(f);
	}
	if (scope != 0 || prctl(PR_GET_DUMPABLE) != 1)
		return false;
	uint64_t got = 0;
	struct iovec dst = { &got, sizeof(got) }, src = { &cookie, sizeof(cookie) };
	return process_vm_readv(getpid(), &dst, 1, &src, 1, 0) == (ssize_t)sizeof(got) && got == cookie;
}

/* A message-path entry's headers into e; where its description goes. */
static struct srt_local_remote *remote_entry(struct ring_entry *e, const uint8_t *hdr, uint32_t hdr_len)
{
	memcpy(e->data, hdr, hdr_len);
	e->len = hdr_len;
	return (struct srt_local_remote *)(void *)(e->data + remote_at(hdr_len));
}

/* The payload into the ring itself, if it is short enough
 * (srt_local_inline_max) and the ring has room to spare; false: not
 * written, describe it instead. */
static bool send_inline(struct srt_local *l, struct srt_local_peer *p, uint16_t sport, uint8_t tos, uint8_t ttl,
			const uint8_t *hdr, uint32_t hdr_len, const struct wire_piece *vec, unsigned nvec)
{
	struct ring_entry *e;
	size_t total = 0;

	for (unsigned i = 0; i < nvec; i++)
		total += vec[i].len;
	if (!total || total > l->inline_max || hdr_len > ENTRY_DATA - sizeof(struct srt_local_remote))
		return false;
	uint32_t bytes = inline_at(hdr_len) + (uint32_t)total;
	if (!(e = srt_local_reserve(l, p, bytes, INLINE_RING_SHARE)))
		return false;
	struct srt_local_remote *d = remote_entry(e, hdr, hdr_len);
	d->pid = 0;
	d->nseg = 0;
	d->total = srt_local_copy_pieces(e->data + inline_at(hdr_len), vec, nvec);
	if (!d->total)
		return false;   /* faulted: described instead, the reader finds out */
	srt_local_commit(l, e, bytes, sport, tos, ttl, ENTRY_NO_ICRC | ENTRY_REMOTE | ENTRY_INLINE);
	l->stats.tx_inline++;
	return true;
}

void srt_local_send_remote(struct srt_local *l, struct srt_local_peer *p, uint16_t sport, uint8_t tos, uint8_t ttl,
			   const uint8_t *hdr, uint32_t hdr_len, const struct wire_piece *vec, unsigned nvec,
			   bool alone)
{
	struct ring_entry *e;
	uint32_t bytes = remote_bytes(hdr_len, nvec);

	if (alone && send_inline(l, p, sport, tos, ttl, hdr, hdr_len, vec, nvec))
		return;
	if (nvec > SRT_LOCAL_REMOTE_SEGS || bytes > ENTRY_DATA || !(e = srt_local_reserve(l, p, bytes, 0))) {
		if (nvec > SRT_LOCAL_REMOTE_SEGS || bytes > ENTRY_DATA)
			l->stats.tx_ring_full++;
		return;
	}
	struct srt_local_remote *d = remote_entry(e, hdr, hdr_len);
	d->pid = l->pid;
	d->nseg = nvec;
	d->total = 0;
	for (unsigned i = 0; i < nvec; i++) {
		d->seg[i].addr = (uint64_t)(uintptr_t)vec[i].p;
		d->seg[i].len = vec[i].len;
		d->total += vec[i].len;
	}
	srt_local_commit(l, e, bytes, sport, tos, ttl, ENTRY_NO_ICRC | ENTRY_REMOTE);
}


/* A size from the environment, `dflt` when unset or outside [lo, hi]. */
static uint32_t env_bytes(const char *name, uint32_t dflt, unsigned long lo, unsigned long hi)
{
	const char *env = getenv(name);
	char *end;
	unsigned long v;

	if (!env || !*env)
		return dflt;
	v = strtoul(env, &end, 0);
	if (*end || v < lo || v > hi)
		return dflt;
	return (uint32_t)v;
}

uint32_t srt_local_message_min(void)
{
	return env_bytes("SOFTRNIC_LOCAL_MSG_MIN", SRT_LOCAL_MSG_MIN_BYTES, 4096, 1ul << 30);
}

uint32_t srt_local_inline_max(void)
{
	return env_bytes("SOFTRNIC_LOCAL_INLINE_MAX", SRT_LOCAL_INLINE_MAX_BYTES, 0, ENTRY_INLINE_CAP);
}

int srt_local_pull_inline(const uint8_t *src, uint32_t len, const struct iovec *dst, unsigned n)
{
	size_t want = 0;

	for (unsigned i = 0; i < n; i++)
		want += dst[i].iov_len;
	if (want != len)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (!srt_guard_copy(dst[i].iov_base, src, dst[i].iov_len))
			return -EFAULT;         /* our region's page went away */
		src += dst[i].iov_len;
	}
	return 0;
}

int srt_local_pull(const struct srt_local_remote *d, uint32_t nseg, const struct iovec *dst, unsigned n)
{
	struct iovec src[SRT_LOCAL_REMOTE_SEGS];
	size_t want = 0, total = 0;

	if (nseg > SRT_LOCAL_REMOTE_SEGS)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		want += dst[i].iov_len;
	for (uint32_t i = 0; i < nseg; i++) {
		src[i] = (struct iovec){ (void *)(uintptr_t)d->seg[i].addr, (size_t)d->seg[i].len };
		total += src[i].iov_len;
	}
	if (total != want)
		return -EINVAL;
	/* One system call, however the two sides' pieces fall.  A transfer
	 * that stops short (a page the sender unmapped) is a failure. */
	ssize_t got = process_vm_readv((pid_t)d->pid, dst, n, src, nseg, 0);
	if (got < 0)
		return -errno;
	return (size_t)got == want ? 0 : -EFAULT;
}

/* The most pieces one process_vm_readv takes on either side (the
 * kernel's UIO_MAXIOV). */
#define PULL_MAX_IOV 1024u

void srt_local_pull_many(struct srt_local_pull *pulls, unsigned n)
{
	struct iovec dst[PULL_MAX_IOV], src[PULL_MAX_IOV];
	size_t end[PULL_MAX_IOV];       /* bytes read once payload k is in */
	unsigned i = 0;

	for (unsigned k = 0; k < n; k++)
		pulls[k].ok = false;
	while (i < n) {
		unsigned j = i, nd = 0, ns = 0;
		size_t bytes = 0;
		uint32_t pid = pulls[i].desc->pid;
		bool bad = false;       /* pulls[j] is not to be read */

		/* A run of one sender's payloads that fits one call.  Each
		 * description is read once: the sender can still write it. */
		while (j < n && nd < PULL_MAX_IOV) {
			const struct srt_local_remote *d = pulls[j].desc;
			uint32_t nseg = pulls[j].nseg;
			size_t total = 0;

			if (j > i && (d->pid != pid || ns + nseg > PULL_MAX_IOV))
				break;
			if (nseg > SRT_LOCAL_REMOTE_SEGS || ns + nseg > PULL_MAX_IOV) {
				bad = true;
				break;
			}
			for (uint32_t k = 0; k < nseg; k++) {
				src[ns + k] = (struct iovec){ (void *)(uintptr_t)d->seg[k].addr, (size_t)d->seg[k].len };
				total += src[ns + k].iov_len;
			}
			if (total != pulls[j].dst.iov_len) {
				bad = true;     /* does not add up */
				break;
			}
			ns += nseg;
			dst[nd++] = pulls[j].dst;
			bytes += total;
			end[j - i] = bytes;
			j++;
		}
		ssize_t got = nd ? process_vm_readv((pid_t)pid, dst, nd, src, ns, 0) : 0;
		unsigned k = i;
		while (k < j && got >= 0 && end[k - i] <= (size_t)got)
			pulls[k++].ok = true;
		/* Stopped short at pulls[k], or pulls[j] is bad: on after it. */
		i = k < j || bad ? k + 1 : j;
	}
}

bool srt_local_message_path(struct srt_local *l, struct srt_local_peer *p)
{
	struct ring *r = p->r;
	uint64_t got = 0;

	if (!l->msg_ok || !r->msg_ok)
		return false;
	/* Read the peer's cookie where it says it is: the same pid
	 * namespace, and its memory open to us. */
	uint64_t addr = r->probe_addr, want = r->cookie;
	struct iovec dst = { &got, sizeof(got) }, src = { (void *)(uintptr_t)addr, sizeof(got) };
	return process_vm_readv((pid_t)r->owner_pid, &dst, 1, &src, 1, 0) == (ssize_t)sizeof(got) && got == want;
}
