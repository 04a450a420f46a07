/*
 * fuzz_nvmf.c — the NVMe over Fabrics target's parsers and controller
 * logic (src/nvmf: capsule.c, target.c) under fuzzed capsules: every
 * byte a host can put in an RDMA CM private data, a command capsule or
 * the data it sends.
 *
 *   the parsers   nvmf_rdma_cm_req_parse and nvmf_connect_data_parse on
 *                 the raw input: an accepted Connect data has its two
 *                 NQNs NUL-terminated and non-empty inside their fields
 *   the target    the input as a program of steps (queue, SQE, data) on
 *                 four queues of a target with a 64 KiB memory namespace;
 *                 the first byte may bring queue 0 up as an enabled
 *                 controller and queue 1 as its I/O queue first, so that
 *                 fuzzed commands reach the admin and I/O logic.  After
 *                 every step: the data a command moves is its SGL's
 *                 length and at most MDTS; in-capsule data lies in the
 *                 capsule; the response carries the command's cid.
 * A violation aborts; ASan and UBSan catch any read or write outside.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "nvmf/capsule.h"
#include "nvmf/target.h"

#define NQN "nqn.2026-12.io.softrnic:fuzz"
#define NQUEUES 4

static uint8_t data[NVMF_MAX_DATA];

static void step(struct nvmf_target *t, struct nvmf_queue *q, const uint8_t *sqe, const uint8_t *in, size_t in_len,
		 uint64_t now)
{
	struct nvmf_req r;
	uint8_t cqe[NVME_CQE_BYTES];
	struct nvme_cpl cpl;

	if (nvmf_req_prepare(t, q, sqe, &r, now)) {
		FUZZ_ASSERT(r.xfer_len <= NVMF_MAX_DATA);
		FUZZ_ASSERT(r.xfer == NVMF_XFER_NONE ? r.xfer_len == 0 : r.xfer_len == r.sgl.len);
		if (r.sgl.kind == NVMF_SGL_IN_CAPSULE)
			FUZZ_ASSERT(r.xfer == NVMF_XFER_TO_CTRL && r.sgl.addr + r.xfer_len <= NVMF_INLINE_DATA);
		memset(data, 0, r.xfer_len);
		if (r.xfer == NVMF_XFER_TO_CTRL)
			memcpy(data, in, in_len < r.xfer_len ? in_len : r.xfer_len);
		nvmf_req_execute(t, q, &r, data, now);
	}
	if (r.held)
		return;
	nvmf_req_response(t, q, &r, cqe);
	nvme_cpl_parse(cqe, &cpl);
	FUZZ_ASSERT(cpl.cid == get_le16(sqe + 2) && cpl.status == r.status);
}

/* Queue 0: Connect, CC.EN; Number of Queues; queue 1: Connect. */
static void bring_up(struct nvmf_target *t, struct nvmf_queue *qs)
{
	uint8_t sqe[NVME_SQE_BYTES], cd[NVMF_CONNECT_DATA_BYTES];
	struct nvmf_connect_data d = { .cntlid = 0xffff };
	struct nvme_cmd c = { .opcode = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_CONNECT,
			      .flags = NVME_CMD_PSDT_SGL, .cdw11 = 31 };

	memcpy(d.subnqn, NQN, sizeof(NQN));
	memcpy(d.hostnqn, "nqn.fuzz-host", 14);
	nvmf_connect_data_build(&d, cd);
	nvmf_sgl_build_keyed(c.sgl_raw, 0x1000, NVMF_CONNECT_DATA_BYTES, 1, false);
	nvme_cmd_build(&c, sqe);
	step(t, &qs[0], sqe, cd, sizeof(cd), 0);
	if (!qs[0].ctrl)
		return;
	c = (struct nvme_cmd){ .opcode = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_PROPERTY_SET,
			       .flags = NVME_CMD_PSDT_SGL, .cdw11 = NVME_PROP_CC, .cdw12 = 1 | 6 << 16 | 4 << 20 };
	nvmf_sgl_build_keyed(c.sgl_raw, 0, 0, 0, false);
	nvme_cmd_build(&c, sqe);
	step(t, &qs[0], sqe, NULL, 0, 0);
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_SET_FEATURES, .flags = NVME_CMD_PSDT_SGL, .cdw10 = 7,
			       .cdw11 = 3 | 3 << 16 };
	nvmf_sgl_build_keyed(c.sgl_raw, 0, 0, 0, false);
	nvme_cmd_build(&c, sqe);
	step(t, &qs[0], sqe, NULL, 0, 0);
	d.cntlid = qs[0].ctrl->cntlid;
	nvmf_connect_data_build(&d, cd);
	c = (struct nvme_cmd){ .opcode = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_CONNECT,
			       .flags = NVME_CMD_PSDT_SGL, .cdw10 = 1u << 16, .cdw11 = 15 };
	nvmf_sgl_build_in_capsule(c.sgl_raw, 0, NVMF_CONNECT_DATA_BYTES);
	nvme_cmd_build(&c, sqe);
	step(t, &qs[1], sqe, cd, sizeof(cd), 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t len)
{
	static struct nvmf_target t;
	static struct nvmf_ns ns;
	static bool ns_made;
	struct nvmf_target_config cfg = { .nqn = NQN, .port = 4420 };
	struct nvmf_queue qs[NQUEUES];

	/* The parsers on the raw bytes. */
	struct nvmf_rdma_cm_req req;
	if (nvmf_rdma_cm_req_parse(in, len, &req) == 0)
		FUZZ_ASSERT(len >= 8);
	struct nvmf_connect_data d;
	uint32_t ipo;
	if (nvmf_connect_data_parse(in, len, &d, &ipo) == 0)
		FUZZ_ASSERT(d.subnqn[0] && d.hostnqn[0] && strlen(d.subnqn) < NVMF_NQN_FIELD &&
			    strlen(d.hostnqn) < NVMF_NQN_FIELD);

	if (!ns_made) {
		if (nvmf_ns_open_mem(&ns, 64 << 10, 9))
			abort();
		ns_made = true;
	}
	memset(ns.mem, 0, ns.blocks << ns.lba_shift);
	if (nvmf_target_init(&t, &cfg, &ns))
		abort();
	for (unsigned i = 0; i < NQUEUES; i++)
		nvmf_queue_init(&qs[i], (uint16_t)i, 32);
	if (len && (in[0] & 1))
		bring_up(&t, qs);
	if (len) {
		in++;
		len--;
	}
	/* Steps: queue byte, time byte, data length byte (x64), SQE, data. */
	uint64_t now = 0;
	while (len >= 3 + NVME_SQE_BYTES) {
		struct nvmf_queue *q = &qs[in[0] % NQUEUES];
		now += (uint64_t)in[1] * 10000000ull;           /* up to 2.55 s a step */
		size_t dlen = (size_t)in[2] * 64;
		const uint8_t *sqe = in + 3;
		in += 3 + NVME_SQE_BYTES;
		len -= 3 + NVME_SQE_BYTES;
		if (dlen > len)
			dlen = len;
		step(&t, q, sqe, in, dlen, now);
		in += dlen;
		len -= dlen;
		if (nvmf_target_tick(&t, now))
			for (unsigned i = 0; i < NQUEUES; i++)
				if (nvmf_queue_dead(&qs[i]))
					nvmf_queue_gone(&t, &qs[i]);
	}
	for (unsigned i = 0; i < NQUEUES; i++)
		nvmf_queue_gone(&t, &qs[i]);
	FUZZ_ASSERT(t.stats.ctrls_created == t.stats.ctrls_freed);
	return 0;
}
