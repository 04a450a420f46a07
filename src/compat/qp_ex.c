/*
 * qp_ex.c — the ibv_qp_ex work-request API (ibv_wr_start, ibv_wr_send,
 * ibv_wr_set_sge, ..., ibv_wr_complete / ibv_wr_abort) for QPs created by
 * ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.
 *
 * The header's inline ibv_wr_* verbs call function pointers stored in the
 * struct ibv_qp_ex, which starts with the QP's ibv_qp (see struct sr_qp).
 * We translate the builder/setter calls into the ibv_send_wr list the
 * rnic already understands and hand the whole list to rnic_post_send once,
 * in ibv_wr_complete:
 *
 *   ibv_wr_start      takes the QP's builder lock (ibv_wr_post(3),
 *                     CONCURRENCY: start..complete/abort is a per-QP
 *                     critical section) and empties the batch;
 *   a builder         (ibv_wr_send, ibv_wr_rdma_write, ...) appends one WR,
 *                     taking wr_id and wr_flags from the ibv_qp_ex as they
 *                     are at that moment;
 *   a setter          (ibv_wr_set_sge, ibv_wr_set_inline_data, ...) fills
 *                     the last WR; inline data is copied here, so the
 *                     caller may reuse its buffer as soon as it returns;
 *   ibv_wr_complete   posts everything or nothing and returns 0 or the
 *                     first error any call since ibv_wr_start recorded;
 *   ibv_wr_abort      discards the batch.
 *
 * Builders and setters return nothing (ibv_wr_post(3): "the individual
 * APIs do not return a failure indication"), so a bad argument is
 * recorded and makes ibv_wr_complete fail with nothing posted.  All-or-
 * nothing holds because every check rnic_post_send would make per WR is
 * made here first (opcode for the QP type, SGE count, inline size, UD
 * address) and the send queue's free room is checked before the one
 * rnic_post_send call (see post_batch for why the room cannot shrink in
 * between).
 *
 * Storage: WRs, SGEs and inline bytes live in three arrays that grow on
 * demand and are reused by later batches, so a steady-state poster does
 * not allocate.  SGE and inline positions are kept as offsets while the
 * arrays may still move and become pointers at ibv_wr_complete.
 *
 * Unsupported operations (TSO, XRC) are refused at QP creation with EOPNOTSUPP, as rdma-core
 * providers do; their entry points exist anyway and record EOPNOTSUPP, so
 * a program that calls one cannot crash on a NULL pointer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat/compat.h"

/* The operations each QP type can carry in softrnic (IBTA 9.4 / the
 * opcode table: UC has no READ or atomics, UD only SEND). */
#define OPS_UD (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define OPS_UC (OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
#define OPS_RC (OPS_UC | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_READ |      \
		IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |     \
		IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_ATOMIC_WRITE |  \
		SR_QP_EX_WITH_FLUSH)

/* wr_flush sits where rdma-core 46's struct ibv_qp_ex has it: right after
 * wr_atomic_write, the last member of older headers. */
_Static_assert(offsetof(struct sr_qp_ex_flush, wr_flush) ==
	       offsetof(struct ibv_qp_ex, wr_atomic_write) + sizeof(void (*)(void)),
	       "wr_flush follows wr_atomic_write");

struct sr_wr_slot {
	struct ibv_send_wr wr;
	size_t sge_off;         /* first SGE in builder->sges            */
	size_t inl_off;         /* first inline byte in builder->inl     */
	bool is_inline;         /* sges[sge_off].addr is an inl offset   */
};

struct sr_wr_builder {
	pthread_mutex_t lock;   /* held from ibv_wr_start to complete/abort */
	uint64_t send_ops;      /* IBV_QP_EX_WITH_* the QP was created with  */
	enum ibv_qp_type type;
	uint32_t max_wr, max_sge, max_inline;
	bool open;              /* inside ibv_wr_start .. complete/abort     */
	bool have_cur;          /* the last slot may take setters            */
	int err;                /* first error since ibv_wr_start            */
	struct sr_wr_slot *slots;
	size_t n, slots_cap;
	struct ibv_sge *sges;
	size_t nsge, sges_cap;
	uint8_t *inl;
	size_t inl_len, inl_cap;
};

static struct sr_qp *qpx_to_sr(struct ibv_qp_ex *qpx)
{
	return (struct sr_qp *)qpx;
}

static void fail(struct sr_wr_builder *b, int err)
{
	if (!b->err)
		b->err = err;
	b->have_cur = false;   /* setters after a failed builder go nowhere */
}

/* Makes room for `more` elements of `size` bytes after `used` in *arr;
 * false (and ENOMEM recorded) if memory is short. */
static bool reserve(struct sr_wr_builder *b, void **arr, size_t *cap, size_t used,
		    size_t more, size_t size)
{
	size_t want = used + more, ncap;
	void *p;

	if (want <= *cap)
		return true;
	ncap = *cap ? *cap : 16;
	while (ncap < want)
		ncap *= 2;
	p = realloc(*arr, ncap * size);
	if (!p) {
		fail(b, ENOMEM);
		return false;
	}
	*arr = p;
	*cap = ncap;
	return true;
}

static struct sr_wr_slot *cur_slot(struct sr_wr_builder *b)
{
	if (!b->open)
		return NULL;
	if (!b->have_cur) {
		fail(b, EINVAL);   /* a setter with no builder before it */
		return NULL;
	}
	return &b->slots[b->n - 1];
}

/* ---- critical section ----------------------------------------------------- */

static void reset_batch(struct sr_wr_builder *b)
{
	b->n = b->nsge = b->inl_len = 0;
	b->err = 0;
	b->have_cur = false;
}

static void qpx_wr_start(struct ibv_qp_ex *qpx)
{
	struct sr_wr_builder *b = qpx_to_sr(qpx)->wrb;

	/* The lock checks errors: a second ibv_wr_start from the thread
	 * already inside (EDEADLK) starts the batch over instead of hanging. */
	pthread_mutex_lock(&b->lock);
	b->open = true;
	reset_batch(b);
}

static void end_batch(struct sr_wr_builder *b)
{
	b->open = false;
	reset_batch(b);
	pthread_mutex_unlock(&b->lock);
}

static void qpx_wr_abort(struct ibv_qp_ex *qpx)
{
	struct sr_wr_builder *b = qpx_to_sr(qpx)->wrb;

	if (b->open)
		end_batch(b);
}

/* Turns offsets into pointers and chains the WRs; EINVAL for a UD WR
 * without an address (ibv_wr_post(3): the QP setter is mandatory). */
static int link_batch(struct sr_wr_builder *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct sr_wr_slot *s = &b->slots[i];

		if (b->type == IBV_QPT_UD && !s->wr.wr.ud.ah)
			return EINVAL;
		s->wr.sg_list = s->wr.num_sge ? &b->sges[s->sge_off] : NULL;
		if (s->is_inline && s->wr.num_sge)
			b->sges[s->sge_off].addr = (uintptr_t)(b->inl + s->inl_off);
		s->wr.next = i + 1 < b->n ? &b->slots[i + 1].wr : NULL;
	}
	return 0;
}

static int post_batch(struct sr_qp *qp, struct sr_wr_builder *b)
{
	struct srt_device *dev = to_sr_ctx(qp->ibv.context)->dev;
	struct ibv_send_wr *bad = NULL;
	uint32_t room;
	int err;

	err = link_batch(b);
	if (err)
		return err;
	/* The room can only grow between this check and the post (the
	 * completer retires WRs; ibv_wr_post(3) forbids other posts to this
	 * QP inside our critical section), so checking under a separate
	 * hold of the lock is enough and the post itself goes through the
	 * runtime's srt_post_send like ibv_post_send's. */
	srt_lock(dev);
	room = rnic_qp_sq_free(qp->qp);
	srt_unlock(dev);
	if (b->n > room)
		return ENOMEM;   /* would overflow the send queue: post nothing */
	/* rnic_post_send fails a list before any WR is queued only for the
	 * QP state; every per-WR check it makes was made above, so a
	 * partial post cannot happen short of a bug we would want to see. */
	return srt_post_send(dev, qp->qp, &b->slots[0].wr, &bad);
}

static int qpx_wr_complete(struct ibv_qp_ex *qpx)
{
	struct sr_qp *qp = qpx_to_sr(qpx);
	struct sr_wr_builder *b = qp->wrb;
	int err;

	if (!b->open)
		return EINVAL;   /* no ibv_wr_start */
	err = b->err;
	if (!err && b->n)
		err = post_batch(qp, b);
	end_batch(b);
	return err;
}

/* ---- WR builders ---------------------------------------------------------- */

static struct ibv_send_wr *new_wr(struct ibv_qp_ex *qpx, uint64_t op_flag,
				  enum ibv_wr_opcode opcode)
{
	struct sr_wr_builder *b = qpx_to_sr(qpx)->wrb;
	struct sr_wr_slot *s;

	if (!b->open)
		return NULL;   /* outside a critical section: nothing to add to */
	if (!(b->send_ops & op_flag)) {
		fail(b, EINVAL);   /* not requested in send_ops_flags */
		return NULL;
	}
	if (b->n >= b->max_wr) {
		fail(b, ENOMEM);   /* more than the send queue can ever hold */
		return NULL;
	}
	if (!reserve(b, (void **)&b->slots, &b->slots_cap, b->n, 1, sizeof(*b->slots)))
		return NULL;
	s = &b->slots[b->n++];
	memset(s, 0, sizeof(*s));
	s->wr.wr_id = qpx->wr_id;
	/* Inline is chosen by the data setter, not by a flag. */
	s->wr.send_flags = qpx->wr_flags & ~(unsigned int)IBV_SEND_INLINE;
	s->wr.opcode = opcode;
	s->sge_off = b->nsge;
	s->inl_off = b->inl_len;
	b->have_cur = true;
	return &s->wr;
}

static void qpx_send(struct ibv_qp_ex *qpx)
{
	new_wr(qpx, IBV_QP_EX_WITH_SEND, IBV_WR_SEND);
}

static void qpx_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct ibv_send_wr *wr = new_wr(qpx, IBV_QP_EX_WITH_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm_data;
}

static void qpx_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = new_wr(qpx, IBV_QP_EX_WITH_SEND_WITH_INV, IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void qpx_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	struct ibv_send_wr *wr = new_wr(qpx, IBV_QP_EX_WITH_RDMA_WRITE, IBV_WR_RDMA_WRITE);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = remote_addr;
	}
}

static void qpx_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
			       __be32 imm_data)
{
	struct ibv_send_wr *wr = new_wr(qpx, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
					IBV_WR_RDMA_WRITE_WITH_IMM);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = remote_addr;
		wr->imm_data = imm_data;
	}
}

static void qpx_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	struct ibv_send_wr *wr = new_wr(qpx, IBV_QP_EX_WITH_RDMA_READ, IBV_WR_RDMA_READ);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = remote_addr;
	}
}

/* The local buffer for the 8-byte original value comes from the data
 * setter that follows, as for ibv_post_send's atomic WRs. */
static void qpx_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
			       uint64_t compare, uint64_t swap)
{
	struct ibv_send_wr *wr = new_wr(qpx, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
					IBV_WR_ATOMIC_CMP_AND_SWP);

	if (wr) {
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.remote_addr = remote_addr;
		wr->wr.atomic.compare_add = compare;
		wr->wr.atomic.swap = swap;
	}
}

static void qpx_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
				 uint64_t add)
{
	struct ibv_send_wr *wr = new_wr(qpx, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
					IBV_WR_ATOMIC_FETCH_AND_ADD);

	if (wr) {
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.remote_addr = remote_addr;
		wr->wr.atomic.compare_add = add;
	}
}

/* Operations softrnic does not have: never enabled, so never reached by a
 * correct program; a wrong one gets EOPNOTSUPP from ibv_wr_complete. */
static void record_unsupported(struct ibv_qp_ex *qpx)
{
	struct sr_wr_builder *b = qpx_to_sr(qpx)->wrb;

	if (b->open)
		fail(b, EOPNOTSUPP);
}

/* Memory windows (src/rnic/mw.c): a type 2 window only (ibv_wr_post(3);
 * type 1 goes through ibv_bind_mw).  Neither op takes setters. */
static void qpx_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
			const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr *wr = new_wr(qpx, IBV_QP_EX_WITH_BIND_MW, IBV_WR_BIND_MW);
	struct sr_wr_builder *b = qpx_to_sr(qpx)->wrb;

	if (!wr)
		return;
	if (!mw || !info || mw->type != IBV_MW_TYPE_2 || mw->context != qpx->qp_base.context) {
		fail(b, EINVAL);
		return;
	}
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *info;
	b->have_cur = false;
}

static void qpx_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct ibv_send_wr *wr = new_wr(qpx, IBV_QP_EX_WITH_LOCAL_INV, IBV_WR_LOCAL_INV);

	if (wr) {
		wr->invalidate_rkey = rkey;
		qpx_to_sr(qpx)->wrb->have_cur = false;
	}
}

static void qpx_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr; (void)hdr_sz; (void)mss;
	record_unsupported(qpx);
}

static void qpx_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	(void)srqn;
	record_unsupported(qpx);
}

/* RDMA FLUSH (ibv_wr_flush): `type` is the placement type (IBV_FLUSH_GLOBAL
 * 1, IBV_FLUSH_PERSISTENT 2, or both), `level` the selectivity
 * (IBV_FLUSH_RANGE 0, IBV_FLUSH_MR 1).  The rnic reads a FLUSH from the
 * WR's atomic arm (rnic.h).  No setters follow; a bad type, level or a
 * length past the RETH's 32 bits fails ibv_wr_complete with EINVAL. */
static void qpx_flush(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr, size_t len, uint8_t type,
		      uint8_t level)
{
	struct ibv_send_wr *wr = new_wr(qpx, SR_QP_EX_WITH_FLUSH, RNIC_WR_FLUSH);
	struct sr_wr_builder *b = qpx_to_sr(qpx)->wrb;

	if (!wr)
		return;
	b->have_cur = false;
	if (!type || (type & ~(RNIC_FLUSH_GLOBAL | RNIC_FLUSH_PERSISTENT)) ||
	    (level != RNIC_FLUSH_RANGE && level != RNIC_FLUSH_MR) || (uint64_t)len > UINT32_MAX) {
		fail(b, EINVAL);
		return;
	}
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.compare_add = len;
	wr->wr.atomic.swap = type | (uint64_t)level << 8;
	wr->num_sge = 0;
}

/* RDMA ATOMIC WRITE: the 8 bytes at `data` are copied now, as inline
 * data (ibv_wr_post(3): the buffer may be reused on return); the rnic
 * keeps them in the WQE, so max_inline_data does not apply.  No setters
 * follow. */
static void qpx_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
			     const void *data)
{
	struct ibv_send_wr *wr = new_wr(qpx, IBV_QP_EX_WITH_ATOMIC_WRITE, IBV_WR_ATOMIC_WRITE);
	struct sr_wr_builder *b = qpx_to_sr(qpx)->wrb;
	struct sr_wr_slot *s;

	if (!wr)
		return;
	b->have_cur = false;
	if (!data || b->max_sge == 0) {
		fail(b, EINVAL);
		return;
	}
	if (!reserve(b, (void **)&b->inl, &b->inl_cap, b->inl_len, 8, 1) ||
	    !reserve(b, (void **)&b->sges, &b->sges_cap, b->nsge, 1, sizeof(*b->sges)))
		return;
	s = &b->slots[b->n - 1];
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	memcpy(b->inl + b->inl_len, data, 8);
	b->inl_len += 8;
	b->sges[b->nsge].addr = 0;   /* an inl offset until link_batch */
	b->sges[b->nsge].length = 8;
	b->sges[b->nsge].lkey = 0;
	b->nsge++;
	wr->num_sge = 1;
	wr->send_flags |= IBV_SEND_INLINE;
	s->is_inline = true;
}

/* ---- setters -------------------------------------------------------------- */

/* Drops the data a previous setter gave the current WR (a second setter
 * replaces the first).  The current WR is the last one, so its SGEs and
 * inline bytes are at the ends of their arrays. */
static void clear_data(struct sr_wr_builder *b, struct sr_wr_slot *s)
{
	b->nsge = s->sge_off;
	b->inl_len = s->inl_off;
	s->wr.num_sge = 0;
	s->is_inline = false;
	s->wr.send_flags &= ~(unsigned int)IBV_SEND_INLINE;
}

static void qpx_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge, const struct ibv_sge *sg_list)
{
	struct sr_wr_builder *b = qpx_to_sr(qpx)->wrb;
	struct sr_wr_slot *s = cur_slot(b);

	if (!s)
		return;
	clear_data(b, s);
	if (num_sge > b->max_sge || (num_sge && !sg_list)) {
		fail(b, EINVAL);
		return;
	}
	if (!reserve(b, (void **)&b->sges, &b->sges_cap, b->nsge, num_sge, sizeof(*b->sges)))
		return;
	if (num_sge)
		memcpy(&b->sges[b->nsge], sg_list, num_sge * sizeof(*sg_list));
	b->nsge += num_sge;
	s->wr.num_sge = (int)num_sge;
}

static void qpx_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	qpx_set_sge_list(qpx, 1, &sge);
}

/* Inline data is allowed only where ibv_post_send allows IBV_SEND_INLINE:
 * SEND and RDMA WRITE variants (ibv_wr_post(3)). */
static bool takes_inline(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_SEND_WITH_INV ||
	       op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static void qpx_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				     const struct ibv_data_buf *buf_list)
{
	struct sr_wr_builder *b = qpx_to_sr(qpx)->wrb;
	struct sr_wr_slot *s = cur_slot(b);
	size_t total = 0;

	if (!s)
		return;
	clear_data(b, s);
	if (!takes_inline(s->wr.opcode) || (num_buf && !buf_list)) {
		fail(b, EINVAL);
		return;
	}
	for (size_t i = 0; i < num_buf; i++) {
		if (buf_list[i].length && !buf_list[i].addr) {
			fail(b, EINVAL);
			return;
		}
		total += buf_list[i].length;
		if (total > b->max_inline) {
			fail(b, EINVAL);   /* more than max_inline_data */
			return;
		}
	}
	s->wr.send_flags |= IBV_SEND_INLINE;
	s->is_inline = true;
	if (total == 0)
		return;   /* a zero-length message: no SGE at all */
	if (b->max_sge == 0) {
		/* The copy travels as one SGE, which rnic_post_send counts
		 * against max_send_sge: refuse here rather than there. */
		fail(b, EINVAL);
		return;
	}
	if (!reserve(b, (void **)&b->inl, &b->inl_cap, b->inl_len, total, 1) ||
	    !reserve(b, (void **)&b->sges, &b->sges_cap, b->nsge, 1, sizeof(*b->sges)))
		return;
	for (size_t i = 0; i < num_buf; i++) {
		memcpy(b->inl + b->inl_len, buf_list[i].addr, buf_list[i].length);
		b->inl_len += buf_list[i].length;
	}
	/* One SGE over the copy; its address becomes a pointer at complete. */
	b->sges[b->nsge].addr = 0;
	b->sges[b->nsge].length = (uint32_t)total;
	b->sges[b->nsge].lkey = 0;
	b->nsge++;
	s->wr.num_sge = 1;
}

static void qpx_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	qpx_set_inline_data_list(qpx, 1, &buf);
}

static void qpx_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
			    uint32_t remote_qkey)
{
	struct sr_wr_builder *b = qpx_to_sr(qpx)->wrb;
	struct sr_wr_slot *s = cur_slot(b);

	if (!s)
		return;
	if (b->type != IBV_QPT_UD || !ah || ah->context != qpx->qp_base.context) {
		fail(b, EINVAL);
		return;
	}
	s->wr.wr.ud.ah = ah;
	s->wr.wr.ud.remote_qpn = remote_qpn;
	s->wr.wr.ud.remote_qkey = remote_qkey;
}

/* ---- creation ------------------------------------------------------------- */

int sr_qp_ex_check_ops(enum ibv_qp_type type, uint64_t send_ops_flags)
{
	uint64_t ok;

	switch (type) {
	case IBV_QPT_RC: ok = OPS_RC; break;
	case IBV_QPT_UC: ok = OPS_UC; break;
	case IBV_QPT_UD: ok = OPS_UD; break;
	default: return EOPNOTSUPP;
	}
	return (send_ops_flags & ~ok) ? EOPNOTSUPP : 0;
}

static void install_wr_ops(struct ibv_qp_ex *qpx)
{
	qpx->comp_mask = 0;
	qpx->wr_id = 0;
	qpx->wr_flags = 0;
	qpx->wr_atomic_cmp_swp = qpx_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = qpx_atomic_fetch_add;
	qpx->wr_bind_mw = qpx_bind_mw;
	qpx->wr_local_inv = qpx_local_inv;
	qpx->wr_rdma_read = qpx_rdma_read;
	qpx->wr_rdma_write = qpx_rdma_write;
	qpx->wr_rdma_write_imm = qpx_rdma_write_imm;
	qpx->wr_send = qpx_send;
	qpx->wr_send_imm = qpx_send_imm;
	qpx->wr_send_inv = qpx_send_inv;
	qpx->wr_send_tso = qpx_send_tso;
	qpx->wr_set_ud_addr = qpx_set_ud_addr;
	qpx->wr_set_xrc_srqn = qpx_set_xrc_srqn;
	qpx->wr_set_inline_data = qpx_set_inline_data;
	qpx->wr_set_inline_data_list = qpx_set_inline_data_list;
	qpx->wr_set_sge = qpx_set_sge;
	qpx->wr_set_sge_list = qpx_set_sge_list;
	qpx->wr_start = qpx_wr_start;
	qpx->wr_complete = qpx_wr_complete;
	qpx->wr_abort = qpx_wr_abort;
	qpx->wr_atomic_write = qpx_atomic_write;
	((struct sr_qp_ex_flush *)qpx)->wr_flush = qpx_flush;
}

/* After the QP exists: attr->cap holds the capacities it got. */
int sr_qp_ex_setup(struct sr_qp *qp, const struct ibv_qp_init_attr_ex *attr)
{
	pthread_mutexattr_t ma;
	struct sr_wr_builder *b;

	b = calloc(1, sizeof(*b));
	if (!b)
		return ENOMEM;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&b->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	b->send_ops = attr->send_ops_flags;
	b->type = attr->qp_type;
	b->max_wr = attr->cap.max_send_wr;
	b->max_sge = attr->cap.max_send_sge;
	b->max_inline = attr->cap.max_inline_data;
	install_wr_ops(&qp->ibv_ex);
	qp->wrb = b;
	return 0;
}

void sr_qp_ex_free(struct sr_qp *qp)
{
	struct sr_wr_builder *b = qp->wrb;

	if (!b)
		return;
	if (b->open)
		pthread_mutex_unlock(&b->lock);   /* destroyed mid-batch */
	pthread_mutex_destroy(&b->lock);
	free(b->slots);
	free(b->sges);
	free(b->inl);
	free(b);
	qp->wrb = NULL;
}

/* rdma-core: the ibv_qp_ex of a QP created with send-ops flags, else NULL
 * (a legacy QP has no builder ops to call). */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct sr_qp *qp;

	if (!ibqp || !sr_is_our_context(ibqp->context)) {
		errno = EINVAL;
		return NULL;
	}
	qp = to_sr_qp(ibqp);
	if (!qp->wrb) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return &qp->ibv_ex;
}
