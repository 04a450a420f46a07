/*
 * rsocket_data.c — the data path of a stream rsocket: its QP, CQ and
 * buffers, RDMA WRITE WITH IMMEDIATE into the peer's receive buffer, the
 * buffer grants and credits that pace it, and waiting for completions.
 * The protocol is rdma-core's (rsocket_int.h says what goes on the wire).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "compat/rdmacm/rsocket_int.h"

static uint32_t rs_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* ---- setting up ----------------------------------------------------------------- */

static int post_recv(struct rsock *rs)
{
	struct ibv_recv_wr wr = { .wr_id = RS_WR_RECV }, *bad;

	/* Zero scatter entries: every message is an RDMA WRITE WITH
	 * IMMEDIATE whose data lands where the sender aimed it. */
	int e = ibv_post_recv(rs->cm->qp, &wr, &bad);
	return e ? rs_err(e) : 0;
}

static void *alloc_zero(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len ? len : 1))
		return NULL;
	memset(p, 0, len);
	return p;
}

int rs_create_ep(struct rsock *rs)
{
	struct ibv_qp_init_attr qa;
	struct ibv_pd *pd;

	if (rs->sq_size > RS_QP_MAX_SIZE)
		rs->sq_size = RS_QP_MAX_SIZE;
	if (rs->sq_size < RS_QP_MIN_SIZE)
		rs->sq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size > RS_QP_MAX_SIZE)
		rs->rq_size = RS_QP_MAX_SIZE;
	if (rs->rq_size < RS_QP_MIN_SIZE)
		rs->rq_size = RS_QP_MIN_SIZE;
	if (rs->sbuf_size < 2 * RS_SNDLOWAT)
		rs->sbuf_size = 2 * RS_SNDLOWAT;
	if (rs->rbuf_size < 2 * RS_SNDLOWAT)
		rs->rbuf_size = 2 * RS_SNDLOWAT;
	rs->rbuf_size &= ~1u;            /* two equal halves */

	rs->cq_chan = ibv_create_comp_channel(rs->cm->verbs);
	if (!rs->cq_chan)
		return -1;
	/* Waiting is done with poll(): the channel never blocks. */
	if (fcntl(rs->cq_chan->fd, F_SETFL, fcntl(rs->cq_chan->fd, F_GETFL) | O_NONBLOCK))
		return -1;
	rs->cq = ibv_create_cq(rs->cm->verbs, rs->sq_size + rs->rq_size, rs, rs->cq_chan, 0);
	if (!rs->cq)
		return -1;

	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = rs->cq;
	qa.recv_cq = rs->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(rs->cm, NULL, &qa))
		return -1;
	rs->sq_inline = (uint16_t)qa.cap.max_inline_data;
	pd = rs->cm->qp->pd;

	size_t slen = rs->sbuf_size + RS_QP_CTRL_SIZE * sizeof(struct rs_sge);
	/* The target list: the two buffer grants, then the iomap table. */
	size_t tlen = RS_SGL_SIZE * sizeof(struct rs_sge) +
		      (size_t)rs->target_iomap_size * sizeof(struct rs_iomap);
	rs->sbuf = alloc_zero(slen);
	rs->rbuf = alloc_zero(rs->rbuf_size);
	rs->target_sgl = alloc_zero(tlen);
	rs->rmsg = calloc((size_t)rs->rq_size + 1, sizeof(*rs->rmsg));
	if (!rs->sbuf || !rs->rbuf || !rs->target_sgl || !rs->rmsg)
		return rs_err(ENOMEM);
	rs->smr = ibv_reg_mr(pd, rs->sbuf, slen, IBV_ACCESS_LOCAL_WRITE);
	rs->rmr = ibv_reg_mr(pd, rs->rbuf, rs->rbuf_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rs->target_mr = ibv_reg_mr(pd, rs->target_sgl, tlen,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rs->smr || !rs->rmr || !rs->target_mr)
		return -1;
	rs->target_iomap = (struct rs_iomap *)(rs->target_sgl + RS_SGL_SIZE);

	rs->sbuf_avail = rs->sbuf_size;
	rs->sbuf_head = 0;
	/* The first half is granted in the REQ/REP; the second waits. */
	rs->rbuf_free_offset = rs->rbuf_size / 2;
	rs->rbuf_avail = rs->rbuf_size / 2;
	rs->sqe_avail = rs->sq_size - (int)rs->ctrl_max_seqno;
	rs->rseq_comp = rs->rq_size / 2;
	for (int i = 0; i < rs->rq_size; i++)
		if (post_recv(rs))
			return -1;
	return 0;
}

void rs_free_ep(struct rsock *rs)
{
	rs_free_iomaps(rs);
	if (rs->cm && rs->cm->qp)
		rdma_destroy_qp(rs->cm);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->target_mr)
		ibv_dereg_mr(rs->target_mr);
	if (rs->cq)
		ibv_destroy_cq(rs->cq);
	if (rs->cq_chan)
		ibv_destroy_comp_channel(rs->cq_chan);
	free(rs->sbuf);
	free(rs->rbuf);
	free(rs->target_sgl);
	free(rs->rmsg);
	rs->smr = rs->rmr = rs->target_mr = NULL;
	rs->cq = NULL;
	rs->cq_chan = NULL;
	rs->sbuf = rs->rbuf = NULL;
	rs->target_sgl = NULL;
	rs->rmsg = NULL;
}

void rs_format_conn_data(const struct rsock *rs, struct rs_conn_data *c)
{
	memset(c, 0, sizeof(*c));
	c->version = 1;
	c->flags = RS_CONN_FLAG_IOMAP | (__BYTE_ORDER == __BIG_ENDIAN ? RS_CONN_FLAG_NET : 0);
	c->credits = htobe16(rs->rq_size);
	c->target_iomap_size = (uint8_t)rs_value_to_scale(rs->target_iomap_size, 8);
	c->target_sgl.addr = htobe64((uintptr_t)rs->target_sgl);
	c->target_sgl.length = htobe32(RS_SGL_SIZE);
	c->target_sgl.key = htobe32(rs->target_mr->rkey);
	c->data_buf.addr = htobe64((uintptr_t)rs->rbuf);
	c->data_buf.length = htobe32(rs->rbuf_size / 2);
	c->data_buf.key = htobe32(rs->rmr->rkey);
}

int rs_save_conn_data(struct rsock *rs, const void *pdata, uint8_t len)
{
	struct rs_conn_data c;

	if (!pdata || len < sizeof(c))
		return rs_err(EPROTO);
	memcpy(&c, pdata, sizeof(c));
	if (c.version != 1)
		return rs_err(ENOTSUP);
	/* A peer of the other byte order writes its grants in its own order;
	 * softrnic runs little-endian only and does not swap them. */
	if (!!(c.flags & RS_CONN_FLAG_NET) != (__BYTE_ORDER == __BIG_ENDIAN))
		return rs_err(ENOTSUP);
	rs->remote_sgl.addr = be64toh(c.target_sgl.addr);
	rs->remote_sgl.length = be32toh(c.target_sgl.length);
	rs->remote_sgl.key = be32toh(c.target_sgl.key);
	if (!rs->remote_sgl.length)
		return rs_err(EPROTO);
	rs->remote_sge = 1 % rs->remote_sgl.length;
	if (c.flags & RS_CONN_FLAG_IOMAP) {
		/* The peer's iomap table follows its target SGL. */
		rs->remote_iomap.addr = rs->remote_sgl.addr + sizeof(struct rs_sge) * rs->remote_sgl.length;
		rs->remote_iomap.length = (uint32_t)rs_scale_to_value(c.target_iomap_size, 8);
		rs->remote_iomap.key = rs->remote_sgl.key;
	}
	rs->target_sgl[0].addr = be64toh(c.data_buf.addr);
	rs->target_sgl[0].length = be32toh(c.data_buf.length);
	rs->target_sgl[0].key = be32toh(c.data_buf.key);
	rs->target_sge = 0;
	rs->sseq_comp = be16toh(c.credits);
	return 0;
}

/* ---- posting ---------------------------------------------------------------------- */

static int post_write_imm(struct rsock *rs, struct ibv_sge *sgl, int nsge, uint32_t msg,
			  unsigned flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = msg;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = flags;
	wr.imm_data = htobe32(msg);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	int e = ibv_post_send(rs->cm->qp, &wr, &bad);
	return e ? rs_err(e) : 0;
}

bool rs_ctrl_avail(const struct rsock *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

int rs_post_ctrl(struct rsock *rs, uint32_t ctrl)
{
	rs->ctrl_seqno++;
	return post_write_imm(rs, NULL, 0, rs_msg(RS_OP_CTRL, ctrl), 0, 0, 0);
}

/* Grants credits (and, when half of the receive buffer has been read,
 * that half) to the peer. */
static void send_credits(struct rsock *rs)
{
	uint32_t credits = (uint32_t)rs->rseq_no + rs->rq_size;
	uint32_t half = rs->rbuf_size / 2;

	rs->ctrl_seqno++;
	rs->rseq_comp = (uint16_t)(rs->rseq_no + rs->rq_size / 2);
	if (rs->rbuf_avail >= half) {
		struct rs_sge grant = {
			.addr = (uintptr_t)(rs->rbuf + rs->rbuf_free_offset),
			.key = rs->rmr->rkey,
			.length = half,
		};
		struct ibv_sge sge;
		unsigned flags = 0;
		if (rs->sq_inline >= sizeof(grant)) {
			sge.addr = (uintptr_t)&grant;
			sge.lkey = 0;
			flags = IBV_SEND_INLINE;
		} else {
			/* A slot of its own per control message in flight. */
			struct rs_sge *slot = (struct rs_sge *)(rs->sbuf + rs->sbuf_size) +
					      (rs->ctrl_seqno & (RS_QP_CTRL_SIZE - 1));
			*slot = grant;
			sge.addr = (uintptr_t)slot;
			sge.lkey = rs->smr->lkey;
		}
		sge.length = sizeof(grant);
		if (post_write_imm(rs, &sge, 1, rs_msg(RS_OP_SGL, credits), flags,
				   rs->remote_sgl.addr + (uint64_t)rs->remote_sge * sizeof(grant),
				   rs->remote_sgl.key)) {
			rs->state = RS_ERROR;
			rs->err = errno;
			return;
		}
		rs->rbuf_avail -= half;
		rs->rbuf_free_offset += half;
		if (rs->rbuf_free_offset >= rs->rbuf_size)
			rs->rbuf_free_offset = 0;
		if (++rs->remote_sge == (int)rs->remote_sgl.length)
			rs->remote_sge = 0;
	} else if (post_write_imm(rs, NULL, 0, rs_msg(RS_OP_SGL, credits), 0, 0, 0)) {
		rs->state = RS_ERROR;
		rs->err = errno;
	}
}

void rs_update_credits(struct rsock *rs)
{
	if (!(rs->state & RS_CONNECTED) || !rs_ctrl_avail(rs))
		return;
	if (rs->rbuf_avail >= rs->rbuf_size / 2 || (int16_t)(rs->rseq_no - rs->rseq_comp) >= 0)
		send_credits(rs);
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* SO_KEEPALIVE (rdma-core's RS_CTRL_KEEPALIVE): a zero-length RDMA WRITE
 * every keepalive_time seconds (TCP_KEEPIDLE) while the socket is
 * connected.  The peer's receive queue never sees it, but the RC transport
 * must acknowledge it, so a peer that died shows as retries exhausted and
 * the socket in error (ETIMEDOUT) — the only way a socket that just
 * receives, or whose sends are all acknowledged and whose credits are
 * spent, can learn it.  rdma-core sends it from a service thread; there is
 * none here: it goes out when the program next calls the socket, and a
 * blocking wait wakes for it (rs_keepalive_wait_ms). */
static bool keepalive_on(const struct rsock *rs)
{
	return rs->type == SOCK_STREAM && (rs->so_opts & (UINT64_C(1) << SO_KEEPALIVE)) &&
	       (rs->state & RS_CONNECTED) && rs->cm && rs->cm->qp;
}

void rs_keepalive(struct rsock *rs)
{
	int64_t now, period = (int64_t)rs->keepalive_time * 1000000;

	if (!keepalive_on(rs))
		return;
	now = now_us();
	if (!rs->keepalive_due) {
		rs->keepalive_due = now + period;
		return;
	}
	if (now < rs->keepalive_due || !rs_ctrl_avail(rs))
		return;
	rs->keepalive_due = now + period;
	rs->ctrl_seqno++;

	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = rs_msg(RS_OP_CTRL, RS_CTRL_KEEPALIVE);
	wr.opcode = IBV_WR_RDMA_WRITE;
	int e = ibv_post_send(rs->cm->qp, &wr, &bad);
	if (e) {
		rs->state = RS_ERROR;
		rs->err = e;
	}
}

int rs_keepalive_wait_ms(const struct rsock *rs, int cap_ms)
{
	if (!keepalive_on(rs) || !rs->keepalive_due)
		return cap_ms;
	int64_t left_ms = (rs->keepalive_due - now_us() + 999) / 1000;
	if (left_ms < 0)
		left_ms = 0;
	return left_ms < cap_ms ? (int)left_ms : cap_ms;
}

/* ---- completions ------------------------------------------------------------------ */

int rs_poll_cq(struct rsock *rs)
{
	struct ibv_wc wc[16];
	int n, reposts = 0;

	if (!rs->cq)
		return 0;
	while ((n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			struct ibv_wc *w = &wc[i];
			if (w->wr_id & RS_WR_RECV) {
				if (w->status != IBV_WC_SUCCESS)
					continue;
				reposts++;
				if (!(w->wc_flags & IBV_WC_WITH_IMM))
					continue;       /* not from an rsocket peer */
				uint32_t msg = be32toh(w->imm_data);
				switch (RS_MSG_OP(msg)) {
				case RS_OP_SGL:
					rs->sseq_comp = (uint16_t)RS_MSG_DATA(msg);
					break;
				case RS_OP_IOMAP_SGL:
				case RS_OP_WRITE:
					break;
				case RS_OP_CTRL:
					if (RS_MSG_DATA(msg) == RS_CTRL_DISCONNECT) {
						rs->state = RS_DISCONNECTED;
					} else if (RS_MSG_DATA(msg) == RS_CTRL_SHUTDOWN) {
						if (rs->state & RS_WRITABLE)
							rs->state &= ~RS_READABLE;
						else
							rs->state = RS_DISCONNECTED;
					}
					break;
				default:
					rs->rmsg[rs->rmsg_tail].op = RS_MSG_OP(msg);
					rs->rmsg[rs->rmsg_tail].len = RS_MSG_DATA(msg);
					if (++rs->rmsg_tail == rs->rq_size + 1)
						rs->rmsg_tail = 0;
					break;
				}
			} else {
				uint32_t msg = (uint32_t)w->wr_id;
				switch (RS_MSG_OP(msg)) {
				case RS_OP_SGL:
				case RS_OP_CTRL:
					rs->ctrl_max_seqno++;
					if (RS_MSG_OP(msg) == RS_OP_CTRL &&
					    RS_MSG_DATA(msg) == RS_CTRL_DISCONNECT)
						rs->state = RS_DISCONNECTED;
					break;
				case RS_OP_IOMAP_SGL:   /* its data is the table index */
					rs->sqe_avail++;
					rs->sbuf_avail += sizeof(struct rs_iomap);
					break;
				default:
					rs->sqe_avail++;
					rs->sbuf_avail += RS_MSG_DATA(msg);
					break;
				}
				/* A peer that stopped answering (retries exhausted)
				 * is a timed-out connection, as TCP reports it. */
				if (w->status != IBV_WC_SUCCESS && (rs->state & RS_CONNECTED)) {
					rs->state = RS_ERROR;
					rs->err = w->status == IBV_WC_RETRY_EXC_ERR ? ETIMEDOUT : EIO;
				}
			}
		}
	}
	if (n < 0)
		return rs_err(EIO);
	if (rs->state & RS_CONNECTED) {
		while (reposts--)
			if (post_recv(rs)) {
				rs->state = RS_ERROR;
				rs->err = errno;
				return -1;
			}
	}
	return 0;
}

void rs_take_cq_event(struct rsock *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!rs->cq_chan)
		return;
	while (ibv_get_cq_event(rs->cq_chan, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		rs->cq_armed = false;
	}
}

bool rs_arm(struct rsock *rs)
{
	if (!rs->cq || rs->cq_armed)
		return false;
	ibv_req_notify_cq(rs->cq, 0);
	rs->cq_armed = true;
	return true;    /* the caller looks once more: no event for what came before */
}

bool rs_can_send(const struct rsock *rs)
{
	return rs->sqe_avail > 0 && rs->sbuf_avail >= RS_SNDLOWAT && rs->sseq_no != rs->sseq_comp &&
	       rs->target_sgl[rs->target_sge].length != 0;
}

bool rs_have_rdata(const struct rsock *rs)
{
	return rs->rmsg && rs->rmsg_head != rs->rmsg_tail;
}

bool rs_all_sends_done(const struct rsock *rs)
{
	return !(rs->state & RS_CONNECTED) ||
	       (int)(rs->ctrl_max_seqno - rs->ctrl_seqno) + rs->sqe_avail == rs->sq_size;
}

/* How long a blocking call polls before it sleeps (rdma-core's
 * polling_time): a ping-pong's answer within it costs no wake-up. */
#define RS_SPIN_US 10

int rs_wait(struct rsock *rs, bool nonblock, bool (*test)(const struct rsock *rs))
{
	int64_t spin_end = 0;

	for (;;) {
		if (rs_process_cm(rs) && errno != EAGAIN)
			return -1;
		rs_update_credits(rs);
		if (rs_poll_cq(rs))
			return -1;
		rs_update_credits(rs);
		rs_keepalive(rs);
		if (test(rs))
			return 0;
		if (nonblock)
			return rs_err(EAGAIN);
		if (!spin_end)
			spin_end = now_us() + RS_SPIN_US;
		if (now_us() < spin_end)
			continue;
		if (rs->cq && !rs->cq_armed) {
			ibv_req_notify_cq(rs->cq, 0);
			rs->cq_armed = true;
			continue;       /* poll once more: a completion may have beaten the arming */
		}
		struct pollfd p[2] = {
			{ .fd = rs->chan->fd, .events = POLLIN },
			{ .fd = rs->cq_chan ? rs->cq_chan->fd : -1, .events = POLLIN },
		};
		pthread_mutex_unlock(&rs->lock);
		int r = poll(p, 2, rs_keepalive_wait_ms(rs, 1000));
		pthread_mutex_lock(&rs->lock);
		if (r < 0 && errno != EINTR)
			return -1;
		rs_take_cq_event(rs);
	}
}

/* ---- send ------------------------------------------------------------------------- */

static bool can_send_or_closed(const struct rsock *rs)
{
	return rs_can_send(rs) || !(rs->state & RS_WRITABLE);
}

/* Copies len bytes from the iovec cursor (*iov, *off) to dst. */
static void iov_copy_out(uint8_t *dst, const struct iovec **iov, size_t *off, size_t len)
{
	while (len) {
		size_t n = (*iov)->iov_len - *off;
		if (n > len)
			n = len;
		memcpy(dst, (const uint8_t *)(*iov)->iov_base + *off, n);
		dst += n;
		len -= n;
		*off += n;
		if (*off == (*iov)->iov_len) {
			(*iov)++;
			*off = 0;
		}
	}
}

/* One RDMA WRITE WITH IMMEDIATE of len bytes, copied into the send
 * buffer (or sent inline), into the peer's current buffer half. */
static int write_data(struct rsock *rs, const struct iovec **iov, size_t *off, uint32_t len)
{
	struct ibv_sge sge[2];
	int nsge;
	unsigned flags = 0;
	uint8_t inline_buf[256];
	struct rs_sge *t = &rs->target_sgl[rs->target_sge];
	uint64_t addr = t->addr;
	uint32_t rkey = t->key;

	if (len <= rs->sq_inline && len <= sizeof(inline_buf)) {
		iov_copy_out(inline_buf, iov, off, len);
		sge[0].addr = (uintptr_t)inline_buf;
		sge[0].length = len;
		sge[0].lkey = 0;
		nsge = 1;
		flags = IBV_SEND_INLINE;
	} else {
		uint32_t first = rs_min(len, rs->sbuf_size - rs->sbuf_head);
		iov_copy_out(rs->sbuf + rs->sbuf_head, iov, off, first);
		sge[0].addr = (uintptr_t)(rs->sbuf + rs->sbuf_head);
		sge[0].length = first;
		sge[0].lkey = rs->smr->lkey;
		nsge = 1;
		if (first < len) {
			iov_copy_out(rs->sbuf, iov, off, len - first);
			sge[1].addr = (uintptr_t)rs->sbuf;
			sge[1].length = len - first;
			sge[1].lkey = rs->smr->lkey;
			nsge = 2;
		}
		rs->sbuf_head = (rs->sbuf_head + len) % rs->sbuf_size;
	}
	rs->sseq_no++;
	rs->sqe_avail--;
	rs->sbuf_avail -= len;
	t->addr += len;
	t->length -= len;
	if (!t->length && ++rs->target_sge == RS_SGL_SIZE)
		rs->target_sge = 0;
	return post_write_imm(rs, sge, nsge, rs_msg(RS_OP_DATA, len), flags, addr, rkey);
}

int rs_write_from(struct rsock *rs, const void *buf, uint32_t len, uint32_t msg, uint64_t addr,
		  uint32_t rkey)
{
	struct ibv_sge sge[2];
	struct ibv_send_wr wr, *bad;
	int nsge = 1;

	memset(&wr, 0, sizeof(wr));
	if (len <= rs->sq_inline) {
		sge[0].addr = (uintptr_t)buf;
		sge[0].length = len;
		sge[0].lkey = 0;
		wr.send_flags = IBV_SEND_INLINE;
	} else {
		uint32_t first = rs_min(len, rs->sbuf_size - rs->sbuf_head);
		memcpy(rs->sbuf + rs->sbuf_head, buf, first);
		sge[0].addr = (uintptr_t)(rs->sbuf + rs->sbuf_head);
		sge[0].length = first;
		sge[0].lkey = rs->smr->lkey;
		if (first < len) {
			memcpy(rs->sbuf, (const uint8_t *)buf + first, len - first);
			sge[1].addr = (uintptr_t)rs->sbuf;
			sge[1].length = len - first;
			sge[1].lkey = rs->smr->lkey;
			nsge = 2;
		}
		rs->sbuf_head = (rs->sbuf_head + len) % rs->sbuf_size;
	}
	rs->sqe_avail--;
	rs->sbuf_avail -= len;
	wr.wr_id = msg;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.opcode = RS_MSG_OP(msg) == RS_OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(msg);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	int e = ibv_post_send(rs->cm->qp, &wr, &bad);
	return e ? rs_err(e) : 0;
}

/* The errno of a stream that can take no more: its error (a dead peer,
 * a failed completion) or, shut for writing, EPIPE. */
static int write_closed_err(const struct rsock *rs)
{
	return rs->state & RS_ERROR ? (rs->err ? rs->err : EIO) : EPIPE;
}

ssize_t rs_sendv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags)
{
	size_t total = 0, left, off = 0;
	uint32_t olen = RS_OLAP_START_SIZE;
	bool nonblock = (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
	int ret = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	while (iovcnt && iov->iov_len == 0) {
		iov++;
		iovcnt--;
	}
	if (!(rs->state & RS_CONNECTED) && !(rs->state & RS_DISCONNECTED) && !(rs->state & RS_ERROR))
		return rs_err(ENOTCONN);
	if (!(rs->state & RS_WRITABLE))
		return rs_err(write_closed_err(rs));
	if (rs->iomap_pending && (ret = rs_send_iomaps(rs, flags)))
		return ret;
	for (left = total; left;) {
		if (!rs_can_send(rs)) {
			ret = rs_wait(rs, nonblock, can_send_or_closed);
			if (ret)
				break;
			if (!(rs->state & RS_WRITABLE)) {
				ret = rs_err(write_closed_err(rs));
				break;
			}
		}
		uint32_t xfer;
		if (olen < left) {
			xfer = olen;
			if (olen < RS_MAX_TRANSFER)
				olen <<= 1;
		} else {
			xfer = (uint32_t)left;
		}
		xfer = rs_min(xfer, rs->sbuf_avail);
		xfer = rs_min(xfer, rs->target_sgl[rs->target_sge].length);
		ret = write_data(rs, &iov, &off, xfer);
		if (ret)
			break;
		left -= xfer;
	}
	return (ret && left == total) ? ret : (ssize_t)(total - left);
}

/* ---- receive ---------------------------------------------------------------------- */

static bool have_rdata_or_closed(const struct rsock *rs)
{
	return rs_have_rdata(rs) || !(rs->state & RS_READABLE);
}

/* Copies from the receive buffer at *roff (wrapping) into the iovec. */
static void copy_in(struct rsock *rs, uint32_t *roff, const struct iovec **iov, size_t *off,
		    uint32_t len)
{
	while (len) {
		uint32_t n = rs_min(len, rs->rbuf_size - *roff);
		size_t room = (*iov)->iov_len - *off;
		if (n > room)
			n = (uint32_t)room;
		memcpy((uint8_t *)(*iov)->iov_base + *off, rs->rbuf + *roff, n);
		*roff = (*roff + n) % rs->rbuf_size;
		*off += n;
		len -= n;
		if (*off == (*iov)->iov_len) {
			(*iov)++;
			*off = 0;
		}
	}
}

ssize_t rs_recvv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags)
{
	size_t total = 0, left, off = 0;
	bool nonblock = (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
	int ret = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	while (iovcnt && iov->iov_len == 0) {
		iov++;
		iovcnt--;
	}
	if (!rs->rmsg)
		return rs_err(ENOTCONN);
	left = total;
	do {
		if (!rs_have_rdata(rs)) {
			ret = rs_wait(rs, nonblock, have_rdata_or_closed);
			if (ret)
				break;
			if (!rs_have_rdata(rs)) {
				/* End of stream; one that ended in error (a dead
				 * peer) says so, as TCP's recv does. */
				if ((rs->state & RS_ERROR) && left == total)
					ret = rs_err(rs->err ? rs->err : EIO);
				break;
			}
		}
		if (flags & MSG_PEEK) {
			int head = rs->rmsg_head;
			uint32_t roff = rs->rbuf_offset;
			while (left && head != rs->rmsg_tail) {
				uint32_t n = rs_min((uint32_t)rs_min((uint32_t)left, UINT32_MAX),
						    rs->rmsg[head].len);
				copy_in(rs, &roff, &iov, &off, n);
				left -= n;
				if (++head == rs->rq_size + 1)
					head = 0;
			}
			break;
		}
		while (left && rs_have_rdata(rs)) {
			struct rmsg *m = &rs->rmsg[rs->rmsg_head];
			uint32_t n = left < m->len ? (uint32_t)left : m->len;
			copy_in(rs, &rs->rbuf_offset, &iov, &off, n);
			rs->rbuf_avail += n;
			left -= n;
			m->len -= n;
			if (!m->len) {
				rs->rseq_no++;
				if (++rs->rmsg_head == rs->rq_size + 1)
					rs->rmsg_head = 0;
			}
		}
	} while (left && (flags & MSG_WAITALL) && (rs->state & RS_READABLE));
	rs_update_credits(rs);
	return (ret && left == total) ? ret : (ssize_t)(total - left);
}
