/*
 * perf.c — the workload of `softrnic nvmf perf` (perf.h) on softrnic's
 * host (host.h).  qd command slots, each with its own registered buffer
 * of bs bytes; a slot's command id is its index.  Reads go by keyed SGL
 * (the target RDMA WRITEs the data); writes in the capsule when they fit
 * (IOCCSZ) or by keyed SGL (the target RDMA READs it).
 *
 * Verify: the span is first written with a pattern (every 8-byte word
 * made from the unit's number, a generation and the word's index); the
 * run then checks every read against the generation last written to its
 * unit (two commands never touch one unit at once), and a write run
 * ends by reading the whole span back.  Keep-alive commands go on the
 * admin queue at a third of the KATO.
 *
 * With several I/O queues (--queues) each has qd slots of its own (slot
 * s is queue s / qd, command id s % qd); the loop fills every queue's
 * free slots and polls each queue's completions in turn, and every queue
 * must complete commands of the timed phase (the result counts those
 * that did not).
 */
#include "nvmf/perf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "base/clock.h"

struct slot {
	uint8_t *buf;
	uint64_t unit;
	uint64_t start_ns;
	uint32_t gen;
	bool write, busy;
};

struct run {
	struct nvmf_host *h;
	const struct nvmf_perf_opts *o;
	struct nvmf_perf_result *res;
	struct slot *slots;
	uint8_t *bufs;
	struct ibv_mr *mr;
	uint64_t units;                 /* bs-sized units in the span */
	uint32_t *gen;                  /* generation last written per unit (verify) */
	uint8_t *inflight;              /* per unit: a command is on it */
	uint32_t next_gen;
	uint64_t cursor;                /* sequential position */
	uint64_t rng;
	uint32_t *lat_ns;               /* latencies of the timed phase */
	size_t nlat, cap_lat;
	uint64_t next_keep_alive;
	unsigned nq;                    /* I/O queues: qd slots each */
	uint64_t *q_ios;                /* per queue: commands of the timed phase completed */
	bool failed;
};

static uint64_t rnd(struct run *r)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return r->rng;
}

static void pattern(uint8_t *buf, uint32_t bs, uint64_t unit, uint32_t gen)
{
	uint64_t base = unit * 0x9e3779b97f4a7c15ull ^ (uint64_t)gen << 32;

	for (uint32_t i = 0; i < bs / 8; i++) {
		uint64_t v = base ^ i;
		memcpy(buf + 8ull * i, &v, 8);
	}
}

static bool pattern_ok(const uint8_t *buf, uint32_t bs, uint64_t unit, uint32_t gen)
{
	uint64_t base = unit * 0x9e3779b97f4a7c15ull ^ (uint64_t)gen << 32;

	for (uint32_t i = 0; i < bs / 8; i++) {
		uint64_t v;
		memcpy(&v, buf + 8ull * i, 8);
		if (v != (base ^ i))
			return false;
	}
	return true;
}

enum phase { PHASE_FILL, PHASE_RUN, PHASE_READBACK };

static int submit(struct run *r, unsigned s, bool write, uint64_t unit)
{
	struct nvmf_host *h = r->h;
	struct slot *sl = &r->slots[s];
	uint32_t bs = r->o->bs, nlb = bs >> h->lba_shift;
	uint64_t slba = unit * nlb;
	struct nvme_cmd cmd = { .opcode = write ? NVME_IO_WRITE : NVME_IO_READ, .cid = (uint16_t)(s % r->o->qd), .nsid = 1,
				.flags = NVME_CMD_PSDT_SGL, .cdw10 = (uint32_t)slba, .cdw11 = (uint32_t)(slba >> 32),
				.cdw12 = nlb - 1 };
	bool in_capsule = write && !r->o->no_inline && bs <= h->inline_max;

	sl->busy = true;
	sl->write = write;
	sl->unit = unit;
	r->inflight[unit] = 1;
	if (write) {
		sl->gen = ++r->next_gen ? r->next_gen : ++r->next_gen;   /* never 0 */
		if (r->o->verify)
			pattern(sl->buf, bs, unit, sl->gen);
	}
	if (in_capsule)
		nvmf_sgl_build_in_capsule(cmd.sgl_raw, 0, bs);
	else
		nvmf_sgl_build_keyed(cmd.sgl_raw, (uintptr_t)sl->buf, bs, r->mr->rkey, r->o->invalidate);
	sl->start_ns = clock_ns(CLOCK_MONOTONIC);
	return nvmf_host_submit(nvmf_host_ioq(h, s / r->o->qd), &cmd, in_capsule ? sl->buf : NULL, in_capsule ? bs : 0);
}

static void record_latency(struct run *r, uint64_t ns)
{
	if (r->nlat == r->cap_lat) {
		size_t cap = r->cap_lat ? r->cap_lat * 2 : 65536;
		uint32_t *p = cap <= (64u << 20) ? realloc(r->lat_ns, cap * sizeof(*p)) : NULL;
		if (!p)
			return;                 /* enough samples */
		r->lat_ns = p;
		r->cap_lat = cap;
	}
	r->lat_ns[r->nlat++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* A completion on I/O queue q. */
static void complete(struct run *r, unsigned q, const struct nvmf_host_cpl *c, enum phase ph)
{
	struct nvmf_perf_result *res = r->res;
	struct slot *sl;
	unsigned s = q * r->o->qd + c->cpl.cid;

	if (c->cpl.cid >= r->o->qd || !r->slots[s].busy) {
		res->errors++;                  /* an answer to nothing we asked */
		return;
	}
	sl = &r->slots[s];
	if (ph == PHASE_RUN)
		r->q_ios[q]++;
	sl->busy = false;
	r->inflight[sl->unit] = 0;
	if (ph == PHASE_RUN) {
		res->ios++;
		record_latency(r, clock_ns(CLOCK_MONOTONIC) - sl->start_ns);
	}
	if (r->o->invalidate && !(sl->write && !r->o->no_inline && r->o->bs <= r->h->inline_max) &&
	    (!c->invalidated || c->invalidated_rkey != r->mr->rkey))
		res->invalidations_missing++;
	if (c->cpl.status) {
		if (!res->errors)
			res->first_error_status = c->cpl.status;
		res->errors++;
		return;
	}
	if (sl->write) {
		r->gen[sl->unit] = sl->gen;
	} else if (r->o->verify && r->gen[sl->unit]) {
		res->verified++;
		if (!pattern_ok(sl->buf, r->o->bs, sl->unit, r->gen[sl->unit]))
			res->verify_errors++;
	}
}

/* The next unit and direction for a free slot; false when the phase
 * has nothing more to start. */
static bool next_op(struct run *r, enum phase ph, bool *write, uint64_t *unit)
{
	enum nvmf_perf_rw rw = r->o->rw;

	if (ph != PHASE_RUN) {
		if (r->cursor >= r->units)
			return false;
		*write = ph == PHASE_FILL;
		*unit = r->cursor++;
		return true;
	}
	*write = rw == PERF_WRITE || rw == PERF_RANDWRITE;
	if (rw == PERF_READ || rw == PERF_WRITE) {
		for (uint64_t i = 0; i < r->units; i++) {
			uint64_t u = r->cursor++ % r->units;
			if (!r->inflight[u]) {
				*unit = u;
				return true;
			}
		}
		return false;
	}
	for (int tries = 0; tries < 64; tries++) {
		uint64_t u = rnd(r) % r->units;
		if (!r->inflight[u]) {
			*unit = u;
			return true;
		}
	}
	return false;
}

static int keep_alive(struct run *r)
{
	struct nvme_cmd ka = { .opcode = NVME_ADMIN_KEEP_ALIVE };
	struct nvme_cpl cpl;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (!r->h->kato_ms || now < r->next_keep_alive)
		return 0;
	r->next_keep_alive = now + (uint64_t)r->h->kato_ms * 1000000ull / 3;
	if (nvmf_host_admin(r->h, &ka, NULL, 0, false, &cpl) || cpl.status) {
		snprintf(r->h->err, sizeof(r->h->err), "keep alive failed");
		return -1;
	}
	return 0;
}

/* One phase: timed (PHASE_RUN, until `until_ns`) or over the span. */
static int phase(struct run *r, enum phase ph, uint64_t until_ns)
{
	struct nvmf_host_cpl cpl[32];
	unsigned busy = 0;
	bool more = true;
	uint64_t last_done = clock_ns(CLOCK_MONOTONIC);

	r->cursor = 0;
	for (;;) {
		if (more && ph == PHASE_RUN && clock_ns(CLOCK_MONOTONIC) >= until_ns)
			more = false;
		for (unsigned s = 0; more && s < r->nq * r->o->qd; s++) {
			bool write;
			uint64_t unit;
			if (r->slots[s].busy)
				continue;
			if (!next_op(r, ph, &write, &unit)) {
				if (ph != PHASE_RUN)
					more = false;
				break;
			}
			if (submit(r, s, write, unit)) {
				snprintf(r->h->err, sizeof(r->h->err), "cannot submit (the queue failed)");
				return -1;
			}
			busy++;
		}
		if (!busy && !more)
			return 0;
		/* One queue: wait in the library (spin, then sleep); several:
		 * look at each in turn without waiting. */
		for (unsigned q = 0; q < r->nq; q++) {
			int n = nvmf_host_poll(nvmf_host_ioq(r->h, q), cpl, 32, r->nq == 1 ? 2000 : 0);
			if (n < 0) {
				snprintf(r->h->err, sizeof(r->h->err),
					 "I/O queue %u failed (target gone, or controller torn down)", q + 1);
				return -1;
			}
			for (int i = 0; i < n; i++) {
				complete(r, q, &cpl[i], ph);
				busy--;
			}
			if (n)
				last_done = clock_ns(CLOCK_MONOTONIC);
		}
		if (busy && clock_ns(CLOCK_MONOTONIC) - last_done > 2000000000ull) {
			snprintf(r->h->err, sizeof(r->h->err), "no completion for 2 s");
			return -1;
		}
		if (keep_alive(r))
			return -1;
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int nvmf_perf_run(struct nvmf_host *h, const struct nvmf_perf_opts *o, struct nvmf_perf_result *res)
{
	struct run r;
	uint64_t bytes = h->ns_blocks << h->lba_shift;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	memset(&r, 0, sizeof(r));
	r.h = h;
	r.o = o;
	r.res = res;
	r.rng = o->seed ? o->seed : 0x2545f4914f6cdd1dull;
	if (!o->bs || o->bs % (1u << h->lba_shift) || (h->mdts_bytes && o->bs > h->mdts_bytes) || o->bs > 0xffffff) {
		snprintf(h->err, sizeof(h->err), "block size %u: not a multiple of %u or above the transfer limit %u",
			 o->bs, 1u << h->lba_shift, h->mdts_bytes);
		return -1;
	}
	r.nq = h->n_io ? h->n_io : 1;
	if (!o->qd || o->qd >= h->io.depth) {
		snprintf(h->err, sizeof(h->err), "queue depth %u: the I/O queue holds %u", o->qd, h->io.depth - 1u);
		return -1;
	}
	r.units = (o->span && o->span < bytes ? o->span : bytes) / o->bs;
	size_t nslots = (size_t)r.nq * o->qd;
	if (r.units < nslots) {
		snprintf(h->err, sizeof(h->err), "the span holds %llu blocks of %u bytes: fewer than the %zu commands "
			 "in flight (queues x queue depth)", (unsigned long long)r.units, o->bs, nslots);
		return -1;
	}
	r.slots = calloc(nslots, sizeof(*r.slots));
	r.q_ios = calloc(r.nq, sizeof(*r.q_ios));
	r.bufs = aligned_alloc(4096, (nslots * o->bs + 4095) & ~(size_t)4095);
	r.gen = calloc(r.units, sizeof(*r.gen));
	r.inflight = calloc(r.units, 1);
	r.mr = r.bufs ? nvmf_host_reg(h, r.bufs, nslots * o->bs) : NULL;
	if (!r.slots || !r.q_ios || !r.gen || !r.inflight || !r.mr) {
		snprintf(h->err, sizeof(h->err), "cannot allocate or register %zu buffers of %u bytes", nslots, o->bs);
		goto out;
	}
	memset(r.bufs, 0xa5, nslots * o->bs);
	for (size_t s = 0; s < nslots; s++)
		r.slots[s].buf = r.bufs + (size_t)s * o->bs;
	if (o->verify && phase(&r, PHASE_FILL, 0))
		goto out;
	uint64_t start = clock_ns(CLOCK_MONOTONIC);
	if (phase(&r, PHASE_RUN, start + (uint64_t)(o->seconds * 1e9)))
		goto out;
	res->seconds = (double)(clock_ns(CLOCK_MONOTONIC) - start) / 1e9;
	if (o->verify && (o->rw == PERF_WRITE || o->rw == PERF_RANDWRITE) && phase(&r, PHASE_READBACK, 0))
		goto out;
	rc = 0;
out:
	if (res->seconds > 0) {
		res->iops = (double)res->ios / res->seconds;
		res->mib_s = res->iops * o->bs / 1048576.0;
	}
	res->queues = r.nq;
	for (unsigned q = 0; r.q_ios && q < r.nq; q++) {
		if (!r.q_ios[q])
			res->queues_idle++;
		if (q == 0 || r.q_ios[q] < res->min_queue_ios)
			res->min_queue_ios = r.q_ios[q];
	}
	if (r.nlat) {
		qsort(r.lat_ns, r.nlat, sizeof(*r.lat_ns), cmp_u32);
		res->p50_us = r.lat_ns[r.nlat / 2] / 1000.0;
		res->p99_us = r.lat_ns[(size_t)((double)r.nlat * 0.99)] / 1000.0;
		res->max_us = r.lat_ns[r.nlat - 1] / 1000.0;
	}
	if (r.mr)
		ibv_dereg_mr(r.mr);
	free(r.bufs);
	free(r.slots);
	free(r.q_ios);
	free(r.gen);
	free(r.inflight);
	free(r.lat_ns);
	return rc;
}
