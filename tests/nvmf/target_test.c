/*
 * target_test.c — the NVMe-oF controller logic (src/nvmf/target.c) and
 * its capsule parsers (capsule.c) in process, no transport: commands
 * built as a host builds them go through nvmf_req_prepare and
 * nvmf_req_execute, and the statuses, results and data are checked
 * against what NVMe Base 1.4 / NVMe-oF 1.1 name.
 *
 *   capsule    SQE / CQE / SGL / Connect data / CM private data layouts
 *   connect    admin and I/O Connect, controller IDs, every refusal
 *              (format, unknown NQN with its IPO, host not allowed,
 *              static controller ID, unknown controller, queue beyond
 *              the granted number, a second Connect, commands first)
 *   props      CAP, VS, CC.EN -> CSTS.RDY, bad entry sizes -> CFS, SHN
 *   admin      Identify (controller, namespace, lists), features, log
 *              pages (discovery with offsets, SMART counts), AER held up
 *              to AERL + 1, keep-alive timer expiry tears the controller
 *   io         write/read round trip, in-capsule data, Write Zeroes,
 *              deallocate, LBA out of range, invalid namespace, invalid
 *              opcode, Data SGL Length Invalid, MDTS, SGL types
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "nvmf/capsule.h"
#include "nvmf/target.h"

#define NQN "nqn.2026-12.io.softrnic:unit"
#define HOST "nqn.2014-08.org.nvmexpress:uuid:unit-host"
#define MS 1000000ull

static struct nvmf_target t;
static struct nvmf_ns ns;
static uint8_t data[NVMF_MAX_DATA];

/* One command through both steps: data in (to_ctrl) or out. */
static struct nvmf_req run(struct nvmf_queue *q, struct nvme_cmd *c, uint32_t sgl_len, bool in_capsule,
			   uint64_t now)
{
	uint8_t sqe[NVME_SQE_BYTES], cqe[NVME_CQE_BYTES];
	struct nvmf_req r;
	struct nvme_cpl cpl;

	c->flags = NVME_CMD_PSDT_SGL;
	if (in_capsule)
		nvmf_sgl_build_in_capsule(c->sgl_raw, 0, sgl_len);
	else
		nvmf_sgl_build_keyed(c->sgl_raw, sgl_len ? 0x1000 : 0, sgl_len, sgl_len ? 0x77 : 0, false);
	nvme_cmd_build(c, sqe);
	if (nvmf_req_prepare(&t, q, sqe, &r, now)) {
		CHECK(r.xfer_len == sgl_len);
		nvmf_req_execute(&t, q, &r, data, now);
	}
	nvmf_req_response(&t, q, &r, cqe);
	nvme_cpl_parse(cqe, &cpl);
	CHECK(cpl.cid == c->cid && cpl.status == r.status && cpl.result == r.result && cpl.sq_id == q->qid);
	return r;
}

static struct nvmf_req connect(struct nvmf_queue *q, const char *subnqn, const char *hostnqn, uint16_t cntlid,
			       uint16_t sqsize, uint32_t kato, uint16_t recfmt)
{
	struct nvme_cmd c = { .opcode = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_CONNECT, .cid = 9 };
	struct nvmf_connect_data d = { .cntlid = cntlid };

	snprintf(d.subnqn, sizeof(d.subnqn), "%s", subnqn);
	snprintf(d.hostnqn, sizeof(d.hostnqn), "%s", hostnqn);
	nvmf_connect_data_build(&d, data);
	c.cdw10 = recfmt | (uint32_t)q->cm_qid << 16;
	c.cdw11 = sqsize;
	c.cdw12 = kato;
	return run(q, &c, NVMF_CONNECT_DATA_BYTES, false, 0);
}

static struct nvmf_req prop(struct nvmf_queue *q, bool set, uint32_t off, bool eight, uint32_t value)
{
	struct nvme_cmd c = { .opcode = NVME_FABRICS_COMMAND,
			      .fctype = set ? NVMF_FCTYPE_PROPERTY_SET : NVMF_FCTYPE_PROPERTY_GET };
	c.cdw10 = eight;
	c.cdw11 = off;
	c.cdw12 = value;
	return run(q, &c, 0, false, 0);
}

/* An enabled controller on admin queue a (and I/O queue io if given). */
static uint16_t bring_up(struct nvmf_queue *a, struct nvmf_queue *io, uint32_t kato)
{
	nvmf_queue_init(a, 0, 32);
	struct nvmf_req r = connect(a, NQN, HOST, 0xffff, 31, kato, 0);
	CHECK(r.status == 0);
	uint16_t id = (uint16_t)r.result;
	CHECK(prop(a, true, NVME_PROP_CC, false, 1 | 6 << 16 | 4 << 20).status == 0);
	if (io) {
		struct nvme_cmd nq = { .opcode = NVME_ADMIN_SET_FEATURES, .cdw10 = 7, .cdw11 = 3 | 3 << 16 };
		CHECK(run(a, &nq, 0, false, 0).status == 0);
		nvmf_queue_init(io, 1, 64);
		r = connect(io, NQN, HOST, id, 63, 0, 0);
		CHECK(r.status == 0 && r.result == id && io->qid == 1);
	}
	return id;
}

static void test_capsule(void)
{
	struct nvme_cmd c = { .opcode = 0x02, .flags = 0x40, .cid = 0xbeef, .nsid = 7, .cdw10 = 1, .cdw12 = 0xabcd };
	uint8_t sqe[64], cqe[16];
	struct nvme_cmd back;
	struct nvmf_sgl s;

	nvmf_sgl_build_keyed(c.sgl_raw, 0x1122334455667788ull, 0x123456, 0xcafef00d, true);
	nvme_cmd_build(&c, sqe);
	CHECK(sqe[0] == 0x02 && sqe[1] == 0x40 && sqe[2] == 0xef && sqe[3] == 0xbe && sqe[4] == 7);
	CHECK(sqe[24] == 0x88 && sqe[32] == 0x56 && sqe[33] == 0x34 && sqe[34] == 0x12 && sqe[35] == 0x0d);
	CHECK(sqe[39] == 0x4f && sqe[40] == 1 && sqe[48] == 0xcd);
	nvme_cmd_parse(sqe, &back);
	CHECK(back.cid == 0xbeef && back.nsid == 7 && back.cdw12 == 0xabcd);
	CHECK(nvmf_sgl_parse(&back, &s) == 0 && s.kind == NVMF_SGL_KEYED && s.len == 0x123456 &&
	      s.key == 0xcafef00d && s.invalidate && s.addr == 0x1122334455667788ull);
	nvmf_sgl_build_in_capsule(back.sgl_raw, 16, 100);
	CHECK(nvmf_sgl_parse(&back, &s) == 0 && s.kind == NVMF_SGL_IN_CAPSULE && s.addr == 16 && s.len == 100);
	back.sgl_raw[15] = 0x30;        /* last segment descriptor: not carried by RDMA */
	CHECK(nvmf_sgl_parse(&back, &s) == (NVME_SC_SGL_INVALID_TYPE | NVME_SC_DNR));
	back.flags = 0;                 /* PRPs */
	CHECK(nvmf_sgl_parse(&back, &s) == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));

	struct nvme_cpl cpl = { .result = 0x1234, .sq_head = 3, .sq_id = 1, .cid = 0xbeef,
				.status = NVME_SC_LBA_RANGE | NVME_SC_DNR }, got;
	nvme_cpl_build(&cpl, cqe);
	CHECK(cqe[14] == 0x00 && cqe[15] == 0x81);      /* (0x4080 << 1): DNR bit 15, SC 0x80 at bits 8:1 */
	nvme_cpl_parse(cqe, &got);
	CHECK(got.status == cpl.status && got.cid == 0xbeef && got.result == 0x1234 && got.sq_head == 3);

	uint8_t pd[32];
	struct nvmf_rdma_cm_req req = { 0, 3, 128, 127 }, rq;
	nvmf_rdma_cm_req_build(&req, pd);
	CHECK(pd[2] == 3 && pd[4] == 128 && pd[6] == 127);
	CHECK(nvmf_rdma_cm_req_parse(pd, 32, &rq) == 0 && rq.qid == 3 && rq.hrqsize == 128 && rq.hsqsize == 127);
	CHECK(nvmf_rdma_cm_req_parse(pd, 7, &rq) == -1);
	nvmf_rdma_cm_rep_build(64, pd);
	CHECK(pd[0] == 0 && pd[2] == 64);

	struct nvmf_connect_data d;
	uint32_t ipo = 0;
	memset(data, 0, NVMF_CONNECT_DATA_BYTES);
	memset(data + 256, 'a', 256);   /* SUBNQN not terminated */
	CHECK(nvmf_connect_data_parse(data, 1024, &d, &ipo) == -1 && ipo == (1u << 16 | 256));
	memset(data + 256, 0, 256);     /* SUBNQN empty */
	CHECK(nvmf_connect_data_parse(data, 1024, &d, &ipo) == -1 && ipo == (1u << 16 | 256));
}

static void test_connect(void)
{
	struct nvmf_queue a, io, b;
	struct nvmf_req r;
	struct nvme_cmd ka = { .opcode = NVME_ADMIN_KEEP_ALIVE };

	/* Any command but Connect first is a sequence error. */
	nvmf_queue_init(&a, 0, 32);
	CHECK(run(&a, &ka, 0, false, 0).status == (NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR));
	CHECK(prop(&a, false, NVME_PROP_CAP, true, 0).status == (NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR));
	/* Refusals, each with its status and, for invalid parameters, the IPO. */
	r = connect(&a, "nqn.2026-12.io.softrnic:nope", HOST, 0xffff, 31, 0, 0);
	CHECK(r.status == (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR) && r.result == (1u << 16 | 256));
	r = connect(&a, NQN, HOST, 0xffff, 31, 0, 1);
	CHECK(r.status == (NVME_SC_CONNECT_FORMAT | NVME_SC_DNR));
	r = connect(&a, NQN, HOST, 5, 31, 0, 0);
	CHECK(r.status == (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR) && r.result == (1u << 16 | 16));
	r = connect(&a, NQN, HOST, 0xffff, 0, 0, 0);
	CHECK(r.status == (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR) && r.result == 44);
	r = connect(&a, NQN, HOST, 0xffff, 63, 0, 0);   /* deeper than the queue negotiated (32) */
	CHECK(r.status == (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR) && r.result == 44);
	CHECK(a.ctrl == NULL && t.stats.connect_rejected == 5);
	/* An allowed-host list refuses the others. */
	snprintf(t.allow_host, sizeof(t.allow_host), "%s", "nqn.2014-08.org.nvmexpress:uuid:only-this-one");
	r = connect(&a, NQN, HOST, 0xffff, 31, 0, 0);
	CHECK(r.status == (NVME_SC_CONNECT_INVALID_HOST | NVME_SC_DNR));
	t.allow_host[0] = '\0';

	uint16_t id = bring_up(&a, NULL, 0);
	CHECK(id >= 1 && a.ctrl && a.ctrl->cntlid == id);
	/* A second Connect on a connected queue. */
	r = connect(&a, NQN, HOST, 0xffff, 31, 0, 0);
	CHECK(r.status == (NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR));
	/* I/O queues: before Number of Queues none is granted... */
	nvmf_queue_init(&io, 1, 16);
	r = connect(&io, NQN, HOST, id, 15, 0, 0);
	CHECK(r.status == (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR) && r.result == 42);
	struct nvme_cmd nq = { .opcode = NVME_ADMIN_SET_FEATURES, .cdw10 = 7, .cdw11 = 1 | 1 << 16 };
	r = run(&a, &nq, 0, false, 0);
	CHECK(r.status == 0 && r.result == (1u | 1u << 16));
	/* ...a wrong controller ID, another host, then the right one. */
	r = connect(&io, NQN, HOST, (uint16_t)(id + 100), 15, 0, 0);
	CHECK(r.status == (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR) && r.result == (1u << 16 | 16));
	r = connect(&io, NQN, "nqn.2014-08.org.nvmexpress:uuid:other", id, 15, 0, 0);
	CHECK(r.status == (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR));
	r = connect(&io, NQN, HOST, id, 15, 0, 0);
	CHECK(r.status == 0 && r.result == id && io.ctrl == a.ctrl && a.ctrl->queues == 2);
	/* The same qid twice, and one past the granted two. */
	nvmf_queue_init(&b, 1, 16);
	CHECK(connect(&b, NQN, HOST, id, 15, 0, 0).status == (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR));
	nvmf_queue_init(&b, 3, 16);
	CHECK(connect(&b, NQN, HOST, id, 15, 0, 0).status == (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR));
	/* The qid of the Connect must be the CM's. */
	nvmf_queue_init(&b, 2, 16);
	b.cm_qid = 2;
	struct nvme_cmd c = { .opcode = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_CONNECT };
	struct nvmf_connect_data d = { .cntlid = id };
	snprintf(d.subnqn, sizeof(d.subnqn), NQN);
	snprintf(d.hostnqn, sizeof(d.hostnqn), HOST);
	nvmf_connect_data_build(&d, data);
	c.cdw10 = 1u << 16;
	c.cdw11 = 15;
	CHECK(run(&b, &c, 1024, false, 0).status == (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR));
	/* Connect data in the capsule works as well as by keyed SGL. */
	c.cdw10 = 2u << 16;
	r = run(&b, &c, 1024, true, 0);
	CHECK(r.status == 0 && b.qid == 2);
	/* The admin queue going takes the controller; its I/O queues then. */
	nvmf_queue_gone(&t, &a);
	CHECK(nvmf_queue_dead(&io) && nvmf_queue_dead(&b));
	struct nvme_cmd rd = { .opcode = NVME_IO_READ, .nsid = 1 };
	CHECK(run(&io, &rd, 512, false, 0).status == (NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR));
	uint64_t freed = t.stats.ctrls_freed;
	nvmf_queue_gone(&t, &io);
	CHECK(t.stats.ctrls_freed == freed);
	nvmf_queue_gone(&t, &b);
	CHECK(t.stats.ctrls_freed == freed + 1);
	/* Controller IDs are not reused at once. */
	CHECK(bring_up(&a, NULL, 0) != id);
	nvmf_queue_gone(&t, &a);
}

static void test_props(void)
{
	struct nvmf_queue a;
	struct nvmf_req r;

	nvmf_queue_init(&a, 0, 32);
	CHECK(connect(&a, NQN, HOST, 0xffff, 31, 0, 0).status == 0);
	r = prop(&a, false, NVME_PROP_CAP, true, 0);
	CHECK(r.status == 0 && (r.result & 0xffff) == 127 && (r.result >> 37 & 1) && (r.result >> 24 & 0xff) == 15);
	CHECK(prop(&a, false, NVME_PROP_VS, false, 0).result == 0x10300);
	CHECK(prop(&a, false, NVME_PROP_CSTS, false, 0).result == 0);
	/* Non-Fabrics commands wait for CC.EN and CSTS.RDY. */
	struct nvme_cmd id = { .opcode = NVME_ADMIN_IDENTIFY, .cdw10 = 1 };
	CHECK(run(&a, &id, 4096, false, 0).status == (NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR));
	/* Wrong entry sizes: CFS, not RDY. */
	CHECK(prop(&a, true, NVME_PROP_CC, false, 1 | 7 << 16 | 4 << 20).status == 0);
	CHECK(prop(&a, false, NVME_PROP_CSTS, false, 0).result == 2);
	CHECK(prop(&a, true, NVME_PROP_CC, false, 0).status == 0);
	CHECK(prop(&a, false, NVME_PROP_CSTS, false, 0).result == 0);
	CHECK(prop(&a, true, NVME_PROP_CC, false, 1 | 6 << 16 | 4 << 20).status == 0);
	CHECK(prop(&a, false, NVME_PROP_CSTS, false, 0).result == 1);
	CHECK(prop(&a, false, NVME_PROP_CC, false, 0).result == (1 | 6 << 16 | 4 << 20));
	CHECK(run(&a, &id, 4096, false, 0).status == 0);
	/* Shutdown: SHST complete. */
	CHECK(prop(&a, true, NVME_PROP_CC, false, 1 | 6 << 16 | 4 << 20 | 1 << 14).status == 0);
	CHECK(prop(&a, false, NVME_PROP_CSTS, false, 0).result == (1 | 2 << 2));
	/* Unknown property, read-only property, bad size. */
	CHECK(prop(&a, false, 0x40, false, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	CHECK(prop(&a, true, NVME_PROP_CAP, true, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	struct nvme_cmd p = { .opcode = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_PROPERTY_GET, .cdw10 = 3 };
	CHECK(run(&a, &p, 0, false, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	/* An unknown Fabrics command type. */
	p.fctype = 0x7e;
	CHECK(run(&a, &p, 0, false, 0).status == (NVME_SC_INVALID_OPCODE | NVME_SC_DNR));
	nvmf_queue_gone(&t, &a);
}

static void test_admin(void)
{
	struct nvmf_queue a, dq;
	struct nvmf_req r;

	uint16_t id = bring_up(&a, NULL, 1000);
	struct nvme_cmd c = { .opcode = NVME_ADMIN_IDENTIFY, .cdw10 = 1 };
	r = run(&a, &c, 4096, false, 0);
	CHECK(r.status == 0 && get_le16(data + 78) == id && data[111] == 1 && data[77] == NVMF_MDTS);
	CHECK(get_le32(data + 516) == 1 && (get_le32(data + 536) & 5) == 5 && data[512] == 0x66 && data[513] == 0x44);
	CHECK(!strcmp((char *)data + 768, NQN) && get_le32(data + 1792) == (64 + NVMF_INLINE_DATA) / 16);
	CHECK(get_le32(data + 1796) == 1 && get_le16(data + 1800) == 0 && get_le16(data + 320) == 10);
	/* The SGL must be exactly the data. */
	CHECK(run(&a, &c, 4095, false, 0).status == (NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR));
	CHECK(run(&a, &c, 4096, true, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR)); /* in capsule, but from ctrl */
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_IDENTIFY, .nsid = 1, .cdw10 = 0 };
	r = run(&a, &c, 4096, false, 0);
	CHECK(r.status == 0 && get_le64(data) == ns.blocks && data[130] == 9);
	c.nsid = 2;
	CHECK(run(&a, &c, 4096, false, 0).status == (NVME_SC_INVALID_NS | NVME_SC_DNR));
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_IDENTIFY, .nsid = 0, .cdw10 = 2 };
	r = run(&a, &c, 4096, false, 0);
	CHECK(r.status == 0 && get_le32(data) == 1 && get_le32(data + 4) == 0);
	c.nsid = 1;
	r = run(&a, &c, 4096, false, 0);
	CHECK(r.status == 0 && get_le32(data) == 0);
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_IDENTIFY, .nsid = 1, .cdw10 = 3 };
	r = run(&a, &c, 4096, false, 0);
	CHECK(r.status == 0 && data[0] == 2 && data[1] == 16 && data[20] == 3 && data[40] == 4 &&
	      !memcmp(data + 24, ns.uuid, 16));
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_IDENTIFY, .cdw10 = 6 };     /* NVM command set controller */
	memset(data, 0xff, 4096);
	CHECK(run(&a, &c, 4096, false, 0).status == 0 && data[0] == 0 && data[4095] == 0);
	c.cdw11 = 2u << 24;                                                    /* another command set */
	CHECK(run(&a, &c, 4096, false, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_IDENTIFY, .cdw10 = 0x1f };
	CHECK(run(&a, &c, 4096, false, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));

	/* Features. */
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_GET_FEATURES, .cdw10 = 0x0f };
	CHECK(run(&a, &c, 0, false, 0).result == 1000);
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_SET_FEATURES, .cdw10 = 0x0b, .cdw11 = 0x1ff };
	CHECK(run(&a, &c, 0, false, 0).status == 0);
	c.opcode = NVME_ADMIN_GET_FEATURES;
	CHECK(run(&a, &c, 0, false, 0).result == 0x1ff);
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_SET_FEATURES, .cdw10 = 7, .cdw11 = 0xffff };
	CHECK(run(&a, &c, 0, false, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	/* Number of Queues: what is asked, up to the maximum; more is capped. */
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_SET_FEATURES, .cdw10 = 7, .cdw11 = 2000 | 2000 << 16 };
	CHECK(run(&a, &c, 0, false, 0).result == (NVMF_MAX_IO_QUEUES - 1u) * 0x10001u);
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_SET_FEATURES, .cdw10 = 7, .cdw11 = 100 | 100 << 16 };
	CHECK(run(&a, &c, 0, false, 0).result == 100u * 0x10001u);
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_GET_FEATURES, .cdw10 = 0x42 };
	CHECK(run(&a, &c, 0, false, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	/* A command with no data but an SGL length. */
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_KEEP_ALIVE };
	CHECK(run(&a, &c, 8, false, 0).status == (NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR));
	/* Logs: SMART counts, error log, unknown log, discovery on an NVM controller. */
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_GET_LOG_PAGE, .cdw10 = 0x02 | (512 / 4 - 1) << 16 };
	r = run(&a, &c, 512, false, 0);
	CHECK(r.status == 0 && data[3] == 100 && get_le64(data + 64) == t.stats.reads);
	c.cdw10 = 0x70 | (1024 / 4 - 1) << 16;
	CHECK(run(&a, &c, 1024, false, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	c.cdw10 = 0x33 | (1024 / 4 - 1) << 16;
	CHECK(run(&a, &c, 1024, false, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	/* AER: held up to AERL + 1, then the limit. */
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_ASYNC_EVENT };
	for (int i = 0; i <= NVMF_AERL; i++)
		CHECK(run(&a, &c, 0, false, 0).held);
	r = run(&a, &c, 0, false, 0);
	CHECK(!r.held && r.status == (NVME_SC_ASYNC_LIMIT | NVME_SC_DNR));
	/* Unknown admin opcode. */
	c = (struct nvme_cmd){ .opcode = 0xc5 };
	CHECK(run(&a, &c, 0, false, 0).status == (NVME_SC_INVALID_OPCODE | NVME_SC_DNR));
	/* Keep-alive: a Keep Alive at 800 ms holds the timer; none by 1.8 s+ expires it. */
	CHECK(!nvmf_target_tick(&t, 999 * MS));
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_KEEP_ALIVE };
	CHECK(run(&a, &c, 0, false, 800 * MS).status == 0);
	CHECK(!nvmf_target_tick(&t, 1500 * MS));
	uint64_t expired = t.stats.keep_alive_expired;
	CHECK(nvmf_target_tick(&t, 1801 * MS) && nvmf_queue_dead(&a) && t.stats.keep_alive_expired == expired + 1);
	CHECK(run(&a, &c, 0, false, 1900 * MS).status == (NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR));
	nvmf_queue_gone(&t, &a);

	/* The discovery controller: its log, with offsets; no namespaces. */
	nvmf_queue_init(&dq, 0, 32);
	snprintf(dq.traddr, sizeof(dq.traddr), "10.1.2.3");
	CHECK(connect(&dq, NVMF_DISCOVERY_NQN, HOST, 0xffff, 31, 0, 0).status == 0);
	CHECK(prop(&dq, true, NVME_PROP_CC, false, 1 | 6 << 16 | 4 << 20).status == 0);
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_IDENTIFY, .cdw10 = 1 };
	CHECK(run(&dq, &c, 4096, false, 0).status == 0 && data[111] == 2 && !strcmp((char *)data + 768,
											 NVMF_DISCOVERY_NQN));
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_GET_LOG_PAGE, .cdw10 = 0x70 | (2048 / 4 - 1) << 16 };
	r = run(&dq, &c, 2048, false, 0);
	CHECK(r.status == 0 && get_le64(data + 8) == 1 && data[1024] == 1 && data[1026] == 2 &&
	      !strcmp((char *)data + 1024 + 256, NQN) && !strcmp((char *)data + 1024 + 512, "10.1.2.3") &&
	      !strcmp((char *)data + 1024 + 32, "4420") && data[1024 + 770] == 1);
	c.cdw10 = 0x70 | (1024 / 4 - 1) << 16;
	c.cdw12 = 1024;                 /* the entry alone, at offset 1024 */
	r = run(&dq, &c, 1024, false, 0);
	CHECK(r.status == 0 && data[0] == 1 && !strcmp((char *)data + 256, NQN));
	c.cdw12 = 3000;
	CHECK(run(&dq, &c, 1024, false, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	c.cdw12 = 2;
	CHECK(run(&dq, &c, 1024, false, 0).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_IDENTIFY, .nsid = 1, .cdw10 = 0 };
	CHECK(run(&dq, &c, 4096, false, 0).status == (NVME_SC_INVALID_NS | NVME_SC_DNR));
	/* No I/O queue joins a discovery controller. */
	struct nvmf_queue io;
	nvmf_queue_init(&io, 1, 16);
	CHECK(connect(&io, NVMF_DISCOVERY_NQN, HOST, dq.ctrl->cntlid, 15, 0, 0).status ==
	      (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR));
	nvmf_queue_gone(&t, &dq);
}

static struct nvmf_req io_cmd(struct nvmf_queue *q, uint8_t opcode, uint64_t slba, uint32_t nlb, uint32_t sgl_len,
			      bool in_capsule)
{
	struct nvme_cmd c = { .opcode = opcode, .nsid = 1, .cdw10 = (uint32_t)slba, .cdw11 = (uint32_t)(slba >> 32),
			      .cdw12 = nlb - 1 };
	return run(q, &c, sgl_len, in_capsule, 0);
}

static void test_io(void)
{
	struct nvmf_queue a, io;
	struct nvmf_req r;
	uint8_t pat[8192];

	bring_up(&a, &io, 0);
	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 7 + 3);
	memcpy(data, pat, 4096);
	CHECK(io_cmd(&io, NVME_IO_WRITE, 10, 8, 4096, false).status == 0);
	memset(data, 0, 4096);
	r = io_cmd(&io, NVME_IO_READ, 10, 8, 4096, false);
	CHECK(r.status == 0 && !memcmp(data, pat, 4096) && !memcmp(ns.mem + 10 * 512, pat, 4096));
	/* In-capsule write, at the last block. */
	memcpy(data, pat + 100, 512);
	CHECK(io_cmd(&io, NVME_IO_WRITE, ns.blocks - 1, 1, 512, true).status == 0);
	CHECK(!memcmp(ns.mem + (ns.blocks - 1) * 512, pat + 100, 512));
	/* In-capsule beyond the capsule's data, and in-capsule for a read. */
	CHECK(io_cmd(&io, NVME_IO_WRITE, 0, 32, 16384, true).status == (NVME_SC_SGL_INVALID_OFFSET | NVME_SC_DNR));
	CHECK(io_cmd(&io, NVME_IO_READ, 0, 1, 512, true).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	/* LBA out of range: past the end, straddling it, and a 64-bit wrap. */
	CHECK(io_cmd(&io, NVME_IO_READ, ns.blocks, 1, 512, false).status == (NVME_SC_LBA_RANGE | NVME_SC_DNR));
	CHECK(io_cmd(&io, NVME_IO_WRITE, ns.blocks - 1, 2, 1024, false).status == (NVME_SC_LBA_RANGE | NVME_SC_DNR));
	CHECK(io_cmd(&io, NVME_IO_READ, ~0ull, 2, 1024, false).status == (NVME_SC_LBA_RANGE | NVME_SC_DNR));
	CHECK(io_cmd(&io, NVME_IO_WRITE_ZEROES, ns.blocks - 4, 8, 0, false).status == (NVME_SC_LBA_RANGE | NVME_SC_DNR));
	/* Data SGL Length Invalid: the SGL is not the command's length. */
	CHECK(io_cmd(&io, NVME_IO_READ, 0, 8, 2048, false).status == (NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR));
	/* More than MDTS. */
	CHECK(io_cmd(&io, NVME_IO_READ, 0, 65536, 0, false).status == (NVME_SC_INVALID_FIELD | NVME_SC_DNR));
	/* Unknown I/O opcode, wrong namespace, Fabrics other than Connect. */
	CHECK(io_cmd(&io, 0x7e, 0, 1, 0, false).status == (NVME_SC_INVALID_OPCODE | NVME_SC_DNR));
	struct nvme_cmd c = { .opcode = NVME_IO_READ, .nsid = 2, .cdw12 = 0 };
	CHECK(run(&io, &c, 512, false, 0).status == (NVME_SC_INVALID_NS | NVME_SC_DNR));
	c = (struct nvme_cmd){ .opcode = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_PROPERTY_GET };
	CHECK(run(&io, &c, 0, false, 0).status == (NVME_SC_INVALID_OPCODE | NVME_SC_DNR));
	/* Write Zeroes and deallocate (DSM AD) read back as zeroes. */
	CHECK(io_cmd(&io, NVME_IO_WRITE_ZEROES, 10, 2, 0, false).status == 0);
	r = io_cmd(&io, NVME_IO_READ, 10, 8, 4096, false);
	CHECK(r.status == 0 && data[0] == 0 && data[1023] == 0 && !memcmp(data + 1024, pat + 1024, 3072));
	memset(data, 0, 32);
	put_le32(data + 4, 2);          /* range 0: 2 blocks at 12 */
	put_le64(data + 8, 12);
	put_le32(data + 16 + 4, 1);     /* range 1: 1 block at 17 */
	put_le64(data + 16 + 8, 17);
	c = (struct nvme_cmd){ .opcode = NVME_IO_DSM, .nsid = 1, .cdw10 = 1, .cdw11 = 1 << 2 };
	CHECK(run(&io, &c, 32, true, 0).status == 0);
	r = io_cmd(&io, NVME_IO_READ, 10, 8, 4096, false);
	CHECK(r.status == 0 && data[1024] == 0 && data[2047] == 0 && data[3584] == 0 && data[4095] == 0 &&
	      !memcmp(data + 2048, pat + 2048, 1536));
	/* The ranges in a longer buffer (as the Linux host sends them): taken;
	 * in a shorter one: Data SGL Length Invalid. */
	memset(data, 0, 4096);
	put_le32(data + 4, 1);
	put_le64(data + 8, 17);
	c.cdw10 = 0;
	CHECK(run(&io, &c, 4096, false, 0).status == 0);
	c.cdw10 = 1;
	CHECK(run(&io, &c, 16, false, 0).status == (NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR));
	/* A DSM range out of the namespace: refused, nothing deallocated. */
	memset(data, 0, 32);
	put_le32(data + 4, 1);
	put_le64(data + 8, 14);
	put_le32(data + 16 + 4, 8);
	put_le64(data + 16 + 8, ns.blocks - 1);
	CHECK(run(&io, &c, 32, false, 0).status == (NVME_SC_LBA_RANGE | NVME_SC_DNR));
	r = io_cmd(&io, NVME_IO_READ, 14, 1, 512, false);
	CHECK(r.status == 0 && !memcmp(data, pat + 2048, 512));
	CHECK(io_cmd(&io, NVME_IO_FLUSH, 0, 1, 0, false).status == 0);
	nvmf_queue_gone(&t, &io);
	nvmf_queue_gone(&t, &a);
	CHECK(t.stats.lba_range >= 5 && t.stats.invalid_opcode >= 1 && t.stats.sgl_invalid >= 2);
}

/* A file-backed namespace keeps its identity across a restart of the
 * target (the same file gives the same NGUID/UUID), another file gets
 * another one, and two memory namespaces differ. */
static void test_ns_identity(void)
{
	char a[] = "/tmp/softrnic-nvmf-ns-XXXXXX", b[] = "/tmp/softrnic-nvmf-ns-XXXXXX";
	int fa = mkstemp(a), fb = mkstemp(b);
	struct nvmf_ns n1, n2, n3, m1, m2;

	CHECK(fa >= 0 && fb >= 0);
	CHECK(nvmf_ns_open_file(&n1, a, 1 << 20, 12) == 0);
	CHECK(nvmf_ns_open_file(&n2, a, 1 << 20, 12) == 0);
	CHECK(nvmf_ns_open_file(&n3, b, 1 << 20, 12) == 0);
	CHECK(!memcmp(n1.uuid, n2.uuid, 16));           /* same file, same namespace */
	CHECK(memcmp(n1.uuid, n3.uuid, 16));
	CHECK((n1.uuid[6] >> 4) == 8 && (n1.uuid[8] & 0xc0) == 0x80);
	CHECK(nvmf_ns_open_mem(&m1, 1 << 20, 12) == 0 && nvmf_ns_open_mem(&m2, 1 << 20, 12) == 0);
	CHECK(memcmp(m1.uuid, m2.uuid, 16));        /* memory: a new one each time */
	nvmf_ns_close(&n1);
	nvmf_ns_close(&n2);
	nvmf_ns_close(&n3);
	nvmf_ns_close(&m1);
	nvmf_ns_close(&m2);
	close(fa);
	close(fb);
	unlink(a);
	unlink(b);
}

int main(void)
{
	struct nvmf_target_config cfg = { .nqn = NQN, .port = 4420 };

	CHECK(nvmf_ns_open_mem(&ns, 1 << 20, 9) == 0 && ns.blocks == 2048);
	CHECK(nvmf_target_init(&t, &cfg, &ns) == 0);
	struct nvmf_target bad;
	struct nvmf_target_config dcfg = { .nqn = NVMF_DISCOVERY_NQN };
	CHECK(nvmf_target_init(&bad, &dcfg, &ns) != 0);
	test_capsule();
	test_connect();
	test_props();
	test_admin();
	test_io();
	test_ns_identity();
	nvmf_ns_close(&ns);
	return check_exit("nvmf_target");
}
