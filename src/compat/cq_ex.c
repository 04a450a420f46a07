/*
 * cq_ex.c — extended completion queues (ibv_create_cq_ex) and their
 * iterator-style polling API: ibv_start_poll / ibv_next_poll /
 * ibv_end_poll and the ibv_wc_read_* accessors.
 *
 * The header's inline verbs call function pointers stored in the
 * struct ibv_cq_ex itself, so an extended CQ is an ordinary sr_cq (created
 * by the same code as ibv_create_cq, see objects.c) whose ibv_cq_ex half
 * is filled with the ops below.  Because ibv_cq_ex begins with the fields
 * of ibv_cq, ibv_cq_ex_to_cq(cq) is still a CQ that every legacy verb
 * accepts: ibv_poll_cq, ibv_req_notify_cq, completion channels,
 * ibv_resize_cq and ibv_destroy_cq.
 *
 * Polling takes completions from the rnic one at a time: start_poll and
 * next_poll each move one ibv_wc into cq->ex_cur and the read_* ops read
 * fields of it.  Trade-off: one device-lock round trip per completion,
 * where a batch would need one per batch; but a batch would have to hold
 * completions the program may never iterate to (it can stop at any point
 * and call end_poll), and those would then be invisible to ibv_poll_cq and
 * to the completion-event logic.  Taking exactly what the program asks for
 * keeps the CQ the single place completions live.
 *
 * Supported wc_flags: the IBV_WC_STANDARD_FLAGS set (byte_len, imm,
 * qp_num, src_qp, slid, sl, dlid_path_bits): all of them are fields of
 * the ibv_wc the rnic produces.  Completion timestamps, CVLAN, flow tag
 * and tag matching are refused with EOPNOTSUPP: the rnic records no
 * completion time (a stamp taken at poll time would be a different
 * quantity), and the device reports completion_timestamp_mask 0.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "compat/compat.h"

#define SR_CQ_EX_WC_FLAGS ((uint64_t)IBV_WC_STANDARD_FLAGS)
#define SR_CQ_EX_ATTR_FLAGS ((uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)
#define SR_CQ_EX_COMP_MASK ((uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))

static struct sr_cq *ex_to_sr_cq(struct ibv_cq_ex *cq)
{
	return (struct sr_cq *)cq;
}

/* ---- polling ------------------------------------------------------------- */

/* Moves the next completion into ex_cur; ENOENT when the CQ is empty. */
static int take_one(struct sr_cq *cq)
{
	struct srt_device *dev = to_sr_ctx(cq->ibv.context)->dev;
	int got;

	/* As in sr_poll_cq: an empty CQ makes this thread receive and run
	 * timers itself (runtime.h, "Who reads the socket"). */
	got = srt_poll_cq(dev, cq->cq, 1, &cq->ex_cur);
	if (got <= 0)
		return ENOENT;
	cq->ibv_ex.status = cq->ex_cur.status;
	cq->ibv_ex.wr_id = cq->ex_cur.wr_id;
	return 0;
}

/* rdma-core's contract (ibv_create_cq_ex(3)): unless the CQ was created
 * IBV_CREATE_CQ_ATTR_SINGLE_THREADED, it is locked from a successful
 * start_poll until end_poll, so threads polling one CQ never see each
 * other's current completion.  A start_poll that returns ENOENT (after
 * which end_poll must not be called) leaves it unlocked.  The device lock
 * is taken per step, inside srt_poll_cq, never across calls. */
static int cq_ex_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct sr_cq *cq = ex_to_sr_cq(ibcq);
	int ret;

	if (attr && attr->comp_mask)
		return EINVAL;   /* no poll attributes are defined */
	if (!cq->ex_single_threaded)
		pthread_mutex_lock(&cq->ex_lock);
	ret = take_one(cq);
	if (ret && !cq->ex_single_threaded)
		pthread_mutex_unlock(&cq->ex_lock);
	return ret;
}

static int cq_ex_next_poll(struct ibv_cq_ex *ibcq)
{
	return take_one(ex_to_sr_cq(ibcq));
}

static void cq_ex_end_poll(struct ibv_cq_ex *ibcq)
{
	struct sr_cq *cq = ex_to_sr_cq(ibcq);

	if (!cq->ex_single_threaded)
		pthread_mutex_unlock(&cq->ex_lock);
}

/* ---- accessors of the current completion --------------------------------- */

static const struct ibv_wc *cur(struct ibv_cq_ex *ibcq)
{
	return &ex_to_sr_cq(ibcq)->ex_cur;
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *c) { return cur(c)->opcode; }
static uint32_t read_vendor_err(struct ibv_cq_ex *c) { return cur(c)->vendor_err; }
static uint32_t read_byte_len(struct ibv_cq_ex *c) { return cur(c)->byte_len; }
/* imm_data and invalidated_rkey share storage in ibv_wc, and
 * ibv_wc_read_invalidated_rkey reads through this op: return the raw
 * word, which is the immediate (big endian) or the rkey (host order). */
static __be32 read_imm_data(struct ibv_cq_ex *c) { return cur(c)->imm_data; }
static uint32_t read_qp_num(struct ibv_cq_ex *c) { return cur(c)->qp_num; }
static uint32_t read_src_qp(struct ibv_cq_ex *c) { return cur(c)->src_qp; }
static unsigned int read_wc_flags(struct ibv_cq_ex *c) { return cur(c)->wc_flags; }
static uint32_t read_slid(struct ibv_cq_ex *c) { return cur(c)->slid; }
static uint8_t read_sl(struct ibv_cq_ex *c) { return cur(c)->sl; }
static uint8_t read_dlid_path_bits(struct ibv_cq_ex *c) { return cur(c)->dlid_path_bits; }

/* ---- creation ------------------------------------------------------------ */

/* rdma-core providers' convention: an unknown comp_mask bit is EINVAL (the
 * caller's struct is newer than ours), a known feature we lack is
 * EOPNOTSUPP. */
static int check_cq_init_attr(const struct ibv_cq_init_attr_ex *attr)
{
	if (attr->comp_mask & ~SR_CQ_EX_COMP_MASK)
		return EINVAL;
	/* A CQ may name a parent domain (never a plain PD): accepted, its
	 * allocators unused (pd_ex.c says why). */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain || !sr_is_our_context(attr->parent_domain->context) ||
	     !to_sr_pd(attr->parent_domain)->parent))
		return EINVAL;
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~SR_CQ_EX_ATTR_FLAGS))
		return EOPNOTSUPP;   /* IGNORE_OVERRUN: the rnic always reports overruns */
	if (attr->wc_flags & ~SR_CQ_EX_WC_FLAGS)
		return EOPNOTSUPP;
	if (attr->cqe > INT_MAX || attr->comp_vector > INT_MAX)
		return EINVAL;
	return 0;
}

static void install_poll_ops(struct ibv_cq_ex *ex)
{
	ex->comp_mask = 0;
	ex->start_poll = cq_ex_start_poll;
	ex->next_poll = cq_ex_next_poll;
	ex->end_poll = cq_ex_end_poll;
	ex->read_opcode = read_opcode;
	ex->read_vendor_err = read_vendor_err;
	ex->read_byte_len = read_byte_len;
	ex->read_imm_data = read_imm_data;
	ex->read_qp_num = read_qp_num;
	ex->read_src_qp = read_src_qp;
	ex->read_wc_flags = read_wc_flags;
	ex->read_slid = read_slid;
	ex->read_sl = read_sl;
	ex->read_dlid_path_bits = read_dlid_path_bits;
	/* Refused at creation, so never requested: left NULL as rdma-core's
	 * providers do for fields they do not produce. */
	ex->read_completion_ts = NULL;
	ex->read_cvlan = NULL;
	ex->read_flow_tag = NULL;
	ex->read_tm_info = NULL;
	ex->read_completion_wallclock_ns = NULL;
}

/* verbs_context.create_cq_ex. */
struct ibv_cq_ex *sr_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq *ibcq;
	struct sr_cq *cq;
	int err;

	if (!sr_is_our_context(context) || !attr) {
		errno = EINVAL;
		return NULL;
	}
	err = check_cq_init_attr(attr);
	if (err) {
		errno = err;
		return NULL;
	}
	/* The legacy constructor checks cqe, comp_vector and channel and
	 * zeroes the struct; the ibv_cq_ex half is ours to fill after. */
	ibcq = ibv_create_cq_1_1(context, (int)attr->cqe, attr->cq_context, attr->channel,
				 (int)attr->comp_vector);
	if (!ibcq)
		return NULL;
	cq = to_sr_cq(ibcq);
	cq->is_ex = true;
	cq->ex_single_threaded = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
				 (attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
	pthread_mutex_init(&cq->ex_lock, NULL);
	install_poll_ops(&cq->ibv_ex);
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		cq->parent_domain = attr->parent_domain;
		sr_pd_use(cq->parent_domain);
	}
	return &cq->ibv_ex;
}

/* Called by ibv_destroy_cq for every CQ. */
void sr_cq_ex_free(struct sr_cq *cq)
{
	if (cq->is_ex)
		pthread_mutex_destroy(&cq->ex_lock);
	if (cq->parent_domain)
		sr_pd_unuse(cq->parent_domain);
}
