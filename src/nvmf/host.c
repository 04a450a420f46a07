/*
 * host.c — softrnic's NVMe over Fabrics host (host.h): the queue level
 * (rdma_cm connection with the NVMe/RDMA private data, capsules SENT,
 * responses received into posted buffers) and the controller bring-up a
 * host does (NVMe-oF 1.1 §3.5: Connect on the admin queue, Property Get
 * CAP, Property Set CC.EN, wait for CSTS.RDY, Identify; then Set Features
 * Number of Queues and Connect on each I/O queue with the controller ID).
 */
#include "nvmf/host.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "base/clock.h"

#define ADMIN_DEPTH 32
#define ADMIN_BUF_BYTES 16384
#define ADMIN_TIMEOUT_MS 5000
#define HOST_NQN_DEFAULT "nqn.2014-08.org.nvmexpress:uuid:softrnic-host"
enum { WR_SEND = 1, WR_RECV = 2 };

static void set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

uint32_t nvmf_mr_rkey(const struct ibv_mr *mr)
{
	return mr->rkey;
}

static int post_recv(struct nvmf_host_queue *q, unsigned i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(q->cqes + (size_t)i * NVME_CQE_BYTES), .length = NVME_CQE_BYTES,
			       .lkey = q->cqe_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)WR_RECV << 32 | i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(q->id->qp, &wr, &bad);
}

void nvmf_host_queue_close(struct nvmf_host_queue *q)
{
	if (q->id) {
		rdma_disconnect(q->id);
		if (q->id->qp)
			rdma_destroy_qp(q->id);
	}
	if (q->sqe_mr)
		ibv_dereg_mr(q->sqe_mr);
	if (q->cqe_mr)
		ibv_dereg_mr(q->cqe_mr);
	if (q->cq)
		ibv_destroy_cq(q->cq);
	if (q->channel)
		ibv_destroy_comp_channel(q->channel);
	if (q->pd && q->own_pd)
		ibv_dealloc_pd(q->pd);
	if (q->id)
		rdma_destroy_ep(q->id);
	free(q->sqes);
	free(q->cqes);
	memset(q, 0, sizeof(*q));
}

int nvmf_host_queue_connect(struct nvmf_host_queue *q, struct ibv_pd *pd, const char *addr, const char *port,
			    uint16_t qid, uint16_t depth, uint32_t inline_max, char *err, size_t errlen)
{
	struct rdma_addrinfo hints, *ai = NULL;
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param param;
	struct nvmf_rdma_cm_req req = { .recfmt = 0, .qid = qid, .hrqsize = depth, .hsqsize = (uint16_t)(depth - 1) };
	uint8_t pdata[NVMF_RDMA_CM_REQ_BYTES];
	size_t capsule = NVME_SQE_BYTES + inline_max;

	memset(q, 0, sizeof(*q));
	q->qid = qid;
	q->depth = depth;
	q->inline_max = inline_max;
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(addr, port, &hints, &ai) || rdma_create_ep(&q->id, ai, NULL, NULL)) {
		set_err(err, errlen, "cannot reach %s:%s: %s", addr, port, strerror(errno));
		q->id = NULL;
		goto fail;
	}
	q->own_pd = !pd;
	q->pd = pd ? pd : ibv_alloc_pd(q->id->verbs);
	q->channel = q->pd ? ibv_create_comp_channel(q->id->verbs) : NULL;
	q->cq = q->channel ? ibv_create_cq(q->id->verbs, 3 * depth + 2, NULL, q->channel, 0) : NULL;
	q->sqes = calloc(depth, capsule);
	q->cqes = calloc(depth, NVME_CQE_BYTES);
	if (!q->cq || !q->sqes || !q->cqes) {
		set_err(err, errlen, "cannot make the queue's verbs objects: %s", strerror(errno));
		goto fail;
	}
	q->sqe_mr = ibv_reg_mr(q->pd, q->sqes, (size_t)depth * capsule, 0);
	q->cqe_mr = ibv_reg_mr(q->pd, q->cqes, (size_t)depth * NVME_CQE_BYTES, IBV_ACCESS_LOCAL_WRITE);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = q->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 2u * depth;
	qa.cap.max_recv_wr = depth;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!q->sqe_mr || !q->cqe_mr || rdma_create_qp(q->id, q->pd, &qa)) {
		set_err(err, errlen, "cannot make the queue pair: %s", strerror(errno));
		goto fail;
	}
	for (unsigned i = 0; i < depth; i++)
		if (post_recv(q, i)) {
			set_err(err, errlen, "cannot post receives");
			goto fail;
		}
	nvmf_rdma_cm_req_build(&req, pdata);
	memset(&param, 0, sizeof(param));
	param.private_data = pdata;
	param.private_data_len = sizeof(pdata);
	param.responder_resources = 16;         /* the target READs our write data */
	param.initiator_depth = 0;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(q->id, &param)) {
		int e = errno;
		/* A target's reject carries the binding's status (1..) in its
		 * private data; status 0 is a reject from no target at all (the
		 * CM's, when nothing listens on that port). */
		uint16_t sts = 0;
		bool rejected = q->id->event && q->id->event->event == RDMA_CM_EVENT_REJECTED;
		if (rejected && q->id->event->param.conn.private_data_len >= NVMF_RDMA_CM_REJ_BYTES)
			sts = get_le16((const uint8_t *)q->id->event->param.conn.private_data + 2);
		if (rejected && sts)
			set_err(err, errlen, "queue %u rejected: status %u", qid, sts);
		else if (rejected)
			set_err(err, errlen, "no NVMe-oF target at %s:%s (the connection was rejected: nothing "
				"listens there)", addr, port);
		else
			set_err(err, errlen, "cannot connect queue %u to %s:%s: %s", qid, addr, port, strerror(e));
		goto fail;
	}
	rdma_freeaddrinfo(ai);
	return 0;
fail:
	if (ai)
		rdma_freeaddrinfo(ai);
	nvmf_host_queue_close(q);
	return -1;
}

int nvmf_host_submit(struct nvmf_host_queue *q, const struct nvme_cmd *cmd, const void *inline_data,
		     uint32_t inline_len)
{
	size_t capsule = NVME_SQE_BYTES + q->inline_max;
	uint8_t *sqe = q->sqes + (size_t)cmd->cid * capsule;
	struct ibv_sge sge = { .addr = (uintptr_t)sqe, .length = NVME_SQE_BYTES + inline_len, .lkey = q->sqe_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = (uint64_t)WR_SEND << 32 | cmd->cid, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (q->failed || cmd->cid >= q->depth || inline_len > q->inline_max)
		return -1;
	nvme_cmd_build(cmd, sqe);
	if (inline_len)
		memcpy(sqe + NVME_SQE_BYTES, inline_data, inline_len);
	if (ibv_post_send(q->id->qp, &wr, &bad)) {
		q->failed = true;
		return -1;
	}
	return 0;
}

#define HOST_SPIN_NS 50000ull

int nvmf_host_poll(struct nvmf_host_queue *q, struct nvmf_host_cpl *out, int max, int timeout_ms)
{
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
	int got = 0;
	uint64_t spin_end = 0;          /* 0: not spinning yet */
	bool armed = false;

	while (!q->failed) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(q->cq, max - got < 16 ? max - got : 16, wc);
		if (n < 0) {
			q->failed = true;
			break;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				q->failed = true;
				return -1;
			}
			if (wc[i].wr_id >> 32 != WR_RECV)
				continue;
			unsigned b = (unsigned)(wc[i].wr_id & 0xffffffffu);
			struct nvmf_host_cpl *o = &out[got++];
			nvme_cpl_parse(q->cqes + (size_t)b * NVME_CQE_BYTES, &o->cpl);
			o->invalidated = (wc[i].wc_flags & IBV_WC_WITH_INV) != 0;
			o->invalidated_rkey = o->invalidated ? wc[i].invalidated_rkey : 0;
			if (wc[i].byte_len != NVME_CQE_BYTES || post_recv(q, b)) {
				q->failed = true;
				return -1;
			}
		}
		if (got >= max || (got && n == 0))
			return got;
		if (n > 0)
			continue;
		if (clock_ns(CLOCK_MONOTONIC) >= deadline)
			return got;
		/* Poll for HOST_SPIN_NS, then sleep on the completion channel
		 * (a completion at queue depth 1 comes within microseconds,
		 * sooner than a sleeping thread wakes). */
		uint64_t t = clock_ns(CLOCK_MONOTONIC);
		if (!spin_end)
			spin_end = t + HOST_SPIN_NS;
		if (t < spin_end)
			continue;
		if (!armed) {
			if (ibv_req_notify_cq(q->cq, 0)) {
				q->failed = true;
				break;
			}
			armed = true;
			continue;       /* poll once more: a completion may have come before the arm */
		}
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		struct pollfd pfd = { .fd = q->channel->fd, .events = POLLIN };
		int wait_ms = (int)((deadline - now) / 1000000ull) + 1;
		if (poll(&pfd, 1, wait_ms) > 0) {
			struct ibv_cq *cq;
			void *ctx;
			if (ibv_get_cq_event(q->channel, &cq, &ctx) == 0)
				ibv_ack_cq_events(cq, 1);
		}
		armed = false;
		spin_end = 0;
	}
	return -1;
}

struct ibv_mr *nvmf_host_reg(struct nvmf_host *h, void *addr, size_t len)
{
	return ibv_reg_mr(h->admin.pd, addr, len,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
}

/* One command on q, synchronously, data through the host's buffer at
 * buf_off with a keyed SGL (or in the capsule when in_capsule). */
static int sync_cmd(struct nvmf_host *h, struct nvmf_host_queue *q, struct nvme_cmd *cmd, void *data, uint32_t len,
		    bool to_ctrl, bool in_capsule, struct nvme_cpl *cpl)
{
	struct nvmf_host_cpl got;

	if (len > ADMIN_BUF_BYTES)
		return -1;
	cmd->cid = 0;
	cmd->flags = NVME_CMD_PSDT_SGL;
	if (in_capsule && to_ctrl && len) {
		nvmf_sgl_build_in_capsule(cmd->sgl_raw, 0, len);
	} else {
		nvmf_sgl_build_keyed(cmd->sgl_raw, len ? (uintptr_t)h->buf : 0, len, len ? h->buf_mr->rkey : 0, false);
		if (to_ctrl && len)
			memcpy(h->buf, data, len);
	}
	if (nvmf_host_submit(q, cmd, in_capsule && to_ctrl ? data : NULL, in_capsule && to_ctrl ? len : 0))
		return -1;
	int n = nvmf_host_poll(q, &got, 1, ADMIN_TIMEOUT_MS);
	if (n != 1 || got.cpl.cid != cmd->cid)
		return -1;
	*cpl = got.cpl;
	if (!to_ctrl && len && cpl->status == 0)
		memcpy(data, h->buf, len);
	return 0;
}

int nvmf_host_admin(struct nvmf_host *h, struct nvme_cmd *cmd, void *data, uint32_t len, bool to_ctrl,
		    struct nvme_cpl *cpl)
{
	return sync_cmd(h, &h->admin, cmd, data, len, to_ctrl, false, cpl);
}

/* A command that failed with a status: the message, and the status out. */
static int cmd_failed(struct nvmf_host *h, const char *what, const struct nvme_cpl *cpl, uint16_t *status)
{
	if (cpl) {
		*status = cpl->status;
		set_err(h->err, sizeof(h->err), "%s: status 0x%03x (%s)%s", what, NVME_SC_CODE(cpl->status),
			nvme_status_str(cpl->status), cpl->status & NVME_SC_DNR ? ", do not retry" : "");
	} else {
		set_err(h->err, sizeof(h->err), "%s: no answer (transport failure or timeout)", what);
	}
	return -1;
}

static int connect_cmd(struct nvmf_host *h, struct nvmf_host_queue *q, const struct nvmf_host_opts *o,
		       uint16_t sqsize, bool in_capsule, struct nvme_cpl *cpl)
{
	struct nvme_cmd cmd = { .opcode = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_CONNECT };
	struct nvmf_connect_data d;
	uint8_t data[NVMF_CONNECT_DATA_BYTES];

	memset(&d, 0, sizeof(d));
	for (int i = 0; i < 16; i++)
		d.hostid[i] = (uint8_t)(0x5a ^ i);
	d.cntlid = q->qid == 0 ? 0xffff : h->cntlid;
	snprintf(d.subnqn, sizeof(d.subnqn), "%s", o->subnqn);
	snprintf(d.hostnqn, sizeof(d.hostnqn), "%s", o->hostnqn ? o->hostnqn : HOST_NQN_DEFAULT);
	nvmf_connect_data_build(&d, data);
	cmd.cdw10 = (uint32_t)q->qid << 16;     /* RECFMT 0 */
	cmd.cdw11 = sqsize;
	cmd.cdw12 = q->qid == 0 ? o->kato_ms : 0;
	return sync_cmd(h, q, &cmd, data, sizeof(data), true, in_capsule, cpl);
}

static int property(struct nvmf_host *h, bool set, uint32_t offset, bool eight, uint64_t value, uint64_t *out,
		    struct nvme_cpl *cpl)
{
	struct nvme_cmd cmd = { .opcode = NVME_FABRICS_COMMAND,
				.fctype = set ? NVMF_FCTYPE_PROPERTY_SET : NVMF_FCTYPE_PROPERTY_GET };

	cmd.cdw10 = eight ? 1 : 0;
	cmd.cdw11 = offset;
	cmd.cdw12 = (uint32_t)value;
	cmd.cdw13 = (uint32_t)(value >> 32);
	if (nvmf_host_admin(h, &cmd, NULL, 0, false, cpl))
		return -1;
	if (out)
		*out = cpl->result;
	return 0;
}

int nvmf_host_connect(struct nvmf_host *h, const struct nvmf_host_opts *o, uint16_t *status)
{
	struct nvme_cpl cpl;
	uint64_t cap, csts = 0;

	memset(h, 0, sizeof(*h));
	*status = 0;
	h->kato_ms = o->kato_ms;
	if (nvmf_host_queue_connect(&h->admin, NULL, o->addr, o->port, 0, ADMIN_DEPTH, 0, h->err, sizeof(h->err)))
		return -1;
	h->buf = aligned_alloc(4096, ADMIN_BUF_BYTES);
	h->buf_mr = h->buf ? nvmf_host_reg(h, h->buf, ADMIN_BUF_BYTES) : NULL;
	if (!h->buf_mr) {
		set_err(h->err, sizeof(h->err), "cannot register the admin buffer");
		return -1;
	}
	if (connect_cmd(h, &h->admin, o, ADMIN_DEPTH - 1, false, &cpl))
		return cmd_failed(h, "admin connect", NULL, status);
	if (cpl.status)
		return cmd_failed(h, "admin connect", &cpl, status);
	h->cntlid = (uint16_t)cpl.result;
	if (property(h, false, NVME_PROP_CAP, true, 0, &cap, &cpl) || cpl.status)
		return cmd_failed(h, "property get CAP", cpl.status ? &cpl : NULL, status);
	/* CC: EN, I/O queue entry sizes 2^6 and 2^4, NVM command set, 4 KiB pages. */
	if (property(h, true, NVME_PROP_CC, false, 1u | 6u << 16 | 4u << 20, NULL, &cpl) || cpl.status)
		return cmd_failed(h, "property set CC", cpl.status ? &cpl : NULL, status);
	uint64_t ready_by = clock_ns(CLOCK_MONOTONIC) + (uint64_t)((cap >> 24) & 0xff) * 500000000ull + 500000000ull;
	while (!(csts & 1)) {
		if (property(h, false, NVME_PROP_CSTS, false, 0, &csts, &cpl) || cpl.status)
			return cmd_failed(h, "property get CSTS", cpl.status ? &cpl : NULL, status);
		if (csts & 2 || clock_ns(CLOCK_MONOTONIC) > ready_by) {
			set_err(h->err, sizeof(h->err), "controller not ready (CSTS 0x%llx)", (unsigned long long)csts);
			return -1;
		}
	}
	struct nvme_cmd id = { .opcode = NVME_ADMIN_IDENTIFY, .cdw10 = 1 };
	if (nvmf_host_admin(h, &id, h->id_ctrl, 4096, false, &cpl) || cpl.status)
		return cmd_failed(h, "identify controller", cpl.status ? &cpl : NULL, status);
	if (!(get_le32(h->id_ctrl + 536) & 1u << 2)) {
		set_err(h->err, sizeof(h->err), "the controller does not take keyed SGLs");
		return -1;
	}
	h->mdts_bytes = h->id_ctrl[77] ? 4096u << h->id_ctrl[77] : 0;
	uint32_t ioccsz = get_le32(h->id_ctrl + 1792);
	h->inline_max = ioccsz * 16 > NVME_SQE_BYTES ? ioccsz * 16 - NVME_SQE_BYTES : 0;
	if (!o->io_depth)
		return 0;

	unsigned nio = o->io_queues > 1 ? o->io_queues : 1;
	struct nvme_cmd nq = { .opcode = NVME_ADMIN_SET_FEATURES, .cdw10 = 0x07,
			       .cdw11 = (uint32_t)(nio - 1) * 0x10001u };       /* NSQR and NCQR, 0's based */
	if (nvmf_host_admin(h, &nq, NULL, 0, false, &cpl) || cpl.status)
		return cmd_failed(h, "set features number of queues", cpl.status ? &cpl : NULL, status);
	unsigned nsqa = cpl.result & 0xffff, ncqa = cpl.result >> 16;     /* granted, 0's based */
	unsigned granted = 1 + (nsqa < ncqa ? nsqa : ncqa);
	if (granted < nio) {
		set_err(h->err, sizeof(h->err), "%u I/O queues asked for, the controller grants %u", nio, granted);
		return -1;
	}
	if (nio > 1 && !(h->more_io = calloc(nio - 1, sizeof(*h->more_io)))) {
		set_err(h->err, sizeof(h->err), "out of memory for %u I/O queues", nio);
		return -1;
	}
	uint8_t ns[4096];
	struct nvme_cmd idns = { .opcode = NVME_ADMIN_IDENTIFY, .nsid = 1, .cdw10 = 0 };
	if (nvmf_host_admin(h, &idns, ns, sizeof(ns), false, &cpl) || cpl.status)
		return cmd_failed(h, "identify namespace", cpl.status ? &cpl : NULL, status);
	h->ns_blocks = get_le64(ns);
	h->lba_shift = ns[128 + 4 * (ns[26] & 0xf) + 2];
	if (h->lba_shift < 9 || h->lba_shift > 16 || !h->ns_blocks) {
		set_err(h->err, sizeof(h->err), "namespace 1: unusable format (%llu blocks of 2^%u)",
			(unsigned long long)h->ns_blocks, h->lba_shift);
		return -1;
	}
	uint16_t depth = (uint16_t)(o->io_depth + 1);
	bool in_capsule = o->connect_in_capsule && h->inline_max >= NVMF_CONNECT_DATA_BYTES;
	for (unsigned i = 0; i < nio; i++) {
		struct nvmf_host_queue *q = nvmf_host_ioq(h, i);
		char what[64];
		if (nvmf_host_queue_connect(q, h->admin.pd, o->addr, o->port, (uint16_t)(i + 1), depth, h->inline_max,
					    h->err, sizeof(h->err)))
			return -1;
		h->n_io++;
		snprintf(what, sizeof(what), "I/O queue %u connect", i + 1);
		if (connect_cmd(h, q, o, (uint16_t)(depth - 1), in_capsule, &cpl))
			return cmd_failed(h, what, NULL, status);
		if (cpl.status)
			return cmd_failed(h, what, &cpl, status);
	}
	return 0;
}

void nvmf_host_close(struct nvmf_host *h)
{
	for (unsigned i = 1; h->more_io && i < h->n_io; i++)
		if (h->more_io[i - 1].id)
			nvmf_host_queue_close(&h->more_io[i - 1]);
	free(h->more_io);
	h->more_io = NULL;
	h->n_io = 0;
	if (h->io.id)
		nvmf_host_queue_close(&h->io);
	if (h->buf_mr)
		ibv_dereg_mr(h->buf_mr);
	h->buf_mr = NULL;
	if (h->admin.id)
		nvmf_host_queue_close(&h->admin);
	free(h->buf);
	h->buf = NULL;
}
