/*
 * nvmf_net_test.c — bad input through the real transport: softrnic's
 * host (src/nvmf/host.c) against a running `softrnic-nvmf serve`, each
 * command's status checked as NVMe names it, and the target serving on
 * after every one.
 *
 *   connect    an unknown subsystem NQN: Connect Invalid Parameters (DNR);
 *              a queue deeper than 128: the CM reject's status 4 (HSQSIZE)
 *   status     LBA past the end, unknown I/O and admin opcodes, a wrong
 *              namespace, an SGL shorter than the data, in-capsule data
 *              past the capsule
 *   data       a keyed write and read round trip, in-capsule write,
 *              Write Zeroes and deallocate read back as zeroes, Flush
 *   invalidate a read asking for SEND with invalidate gets it, with its key
 *   aer        an Asynchronous Event Request stays held while later
 *              admin commands complete
 *   badkey     a read with a wrong rkey: the target's RDMA WRITE fails,
 *              the target drops that queue (as the kernel's target does),
 *              the admin queue still answers, a new controller works
 *   keepalive  no Keep Alive within the KATO: the controller is torn down
 *              (its queues fail); one that sends them lives on
 *
 * usage: nvmf_net_test ADDR PORT NQN
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "../check.h"
#include "nvmf/host.h"

static const char *addr, *port, *nqn;

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static int connect_host(struct nvmf_host *h, uint32_t kato, uint16_t depth)
{
	struct nvmf_host_opts o = { .addr = addr, .port = port, .subnqn = nqn, .kato_ms = kato, .io_depth = depth,
				    .connect_in_capsule = true };
	uint16_t status;
	int rc = nvmf_host_connect(h, &o, &status);
	if (rc)
		fprintf(stderr, "connect: %s\n", h->err);
	return rc;
}

/* One I/O command on the I/O queue (cid 0), waiting for its answer:
 * the status, or -1 if none came. */
static int io(struct nvmf_host *h, struct nvme_cmd *c, void *inline_data, uint32_t inline_len,
	      struct nvmf_host_cpl *out)
{
	struct nvmf_host_cpl cpl;

	static const uint8_t none[16];

	c->cid = 0;
	c->flags = NVME_CMD_PSDT_SGL;
	if (!memcmp(c->sgl_raw, none, 16))      /* no data: a null keyed SGL, as hosts send */
		nvmf_sgl_build_keyed(c->sgl_raw, 0, 0, 0, false);
	if (nvmf_host_submit(&h->io, c, inline_data, inline_len))
		return -1;
	if (nvmf_host_poll(&h->io, &cpl, 1, 3000) != 1)
		return -1;
	if (out)
		*out = cpl;
	return cpl.cpl.status;
}

static struct nvme_cmd rw(uint8_t opcode, uint64_t slba, uint32_t nlb)
{
	return (struct nvme_cmd){ .opcode = opcode, .nsid = 1, .cdw10 = (uint32_t)slba,
				  .cdw11 = (uint32_t)(slba >> 32), .cdw12 = nlb - 1 };
}

static void test_connect(void)
{
	struct nvmf_host h;
	struct nvmf_host_opts o = { .addr = addr, .port = port, .subnqn = "nqn.2026-12.io.softrnic:no-such-thing" };
	uint16_t status = 0;

	CHECK(nvmf_host_connect(&h, &o, &status) == -1);
	CHECK(status == (NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR));
	printf("connect to an unknown NQN: %s\n", h.err);
	nvmf_host_close(&h);

	/* The RDMA CM level: a queue deeper than the binding's 128 is
	 * rejected with the reject private data's status (Invalid HSQSIZE). */
	struct nvmf_host_queue q;
	char err[256] = "";
	CHECK(nvmf_host_queue_connect(&q, NULL, addr, port, 1, 200, 0, err, sizeof(err)) == -1);
	CHECK(strstr(err, "rejected: status 4") != NULL);
	printf("queue of 200 entries: %s\n", err);
}

static void test_commands(void)
{
	struct nvmf_host h;
	struct nvme_cmd c;
	struct nvme_cpl acpl;
	struct nvmf_host_cpl cpl;
	uint8_t *buf = aligned_alloc(4096, 65536);
	uint8_t pat[4096];

	if (connect_host(&h, 5000, 8)) {
		CHECK(!"connect");
		free(buf);
		return;
	}
	struct ibv_mr *mr = nvmf_host_reg(&h, buf, 65536);
	CHECK(mr != NULL);
	uint32_t rkey = nvmf_mr_rkey(mr), bs = 1u << h.lba_shift;
	uint64_t end = h.ns_blocks;

	/* Statuses. */
	c = rw(NVME_IO_READ, end, 1);
	nvmf_sgl_build_keyed(c.sgl_raw, (uintptr_t)buf, bs, rkey, false);
	CHECK(io(&h, &c, NULL, 0, NULL) == (NVME_SC_LBA_RANGE | NVME_SC_DNR));
	c = rw(NVME_IO_WRITE, end - 1, 2);
	nvmf_sgl_build_keyed(c.sgl_raw, (uintptr_t)buf, 2 * bs, rkey, false);
	CHECK(io(&h, &c, NULL, 0, NULL) == (NVME_SC_LBA_RANGE | NVME_SC_DNR));
	c = rw(0x7e, 0, 1);
	CHECK(io(&h, &c, NULL, 0, NULL) == (NVME_SC_INVALID_OPCODE | NVME_SC_DNR));
	c = rw(NVME_IO_READ, 0, 1);
	c.nsid = 9;
	nvmf_sgl_build_keyed(c.sgl_raw, (uintptr_t)buf, bs, rkey, false);
	CHECK(io(&h, &c, NULL, 0, NULL) == (NVME_SC_INVALID_NS | NVME_SC_DNR));
	c = rw(NVME_IO_READ, 0, 8);
	nvmf_sgl_build_keyed(c.sgl_raw, (uintptr_t)buf, 4 * bs, rkey, false);
	CHECK(io(&h, &c, NULL, 0, NULL) == (NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR));
	c = rw(NVME_IO_WRITE, 0, 1);
	nvmf_sgl_build_in_capsule(c.sgl_raw, h.inline_max, bs);   /* past the capsule's data */
	CHECK(io(&h, &c, NULL, 0, NULL) == (NVME_SC_SGL_INVALID_OFFSET | NVME_SC_DNR));
	c = (struct nvme_cmd){ .opcode = 0xc5 };
	CHECK(nvmf_host_admin(&h, &c, NULL, 0, false, &acpl) == 0 &&
	      acpl.status == (NVME_SC_INVALID_OPCODE | NVME_SC_DNR));

	/* Data: keyed write, read back. */
	for (unsigned i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 13 + 1);
	memcpy(buf, pat, 4096);
	c = rw(NVME_IO_WRITE, 100, 4096 / bs);
	nvmf_sgl_build_keyed(c.sgl_raw, (uintptr_t)buf, 4096, rkey, false);
	CHECK(io(&h, &c, NULL, 0, NULL) == 0);
	memset(buf, 0, 4096);
	c = rw(NVME_IO_READ, 100, 4096 / bs);
	nvmf_sgl_build_keyed(c.sgl_raw, (uintptr_t)buf, 4096, rkey, false);
	CHECK(io(&h, &c, NULL, 0, &cpl) == 0 && !memcmp(buf, pat, 4096) && !cpl.invalidated);
	/* In-capsule write of the first block, then Write Zeroes of the second. */
	c = rw(NVME_IO_WRITE, 100, 1);
	nvmf_sgl_build_in_capsule(c.sgl_raw, 0, bs);
	memset(pat, 0x5c, bs);
	CHECK(io(&h, &c, pat, bs, NULL) == 0);
	c = rw(NVME_IO_WRITE_ZEROES, 101, 1);
	CHECK(io(&h, &c, NULL, 0, NULL) == 0);
	/* Deallocate the third (DSM with AD, its range in the capsule). */
	uint8_t range[16] = { 0 };
	put_le32(range + 4, 1);
	put_le64(range + 8, 102);
	c = (struct nvme_cmd){ .opcode = NVME_IO_DSM, .nsid = 1, .cdw10 = 0, .cdw11 = 1 << 2 };
	nvmf_sgl_build_in_capsule(c.sgl_raw, 0, 16);
	CHECK(io(&h, &c, range, 16, NULL) == 0);
	c = (struct nvme_cmd){ .opcode = NVME_IO_FLUSH, .nsid = 1 };
	CHECK(io(&h, &c, NULL, 0, NULL) == 0);
	/* Read with invalidate: the answer comes by SEND with invalidate of our key. */
	memset(buf, 0xee, 4 * bs);
	c = rw(NVME_IO_READ, 100, 4);
	nvmf_sgl_build_keyed(c.sgl_raw, (uintptr_t)buf, 4 * bs, rkey, true);
	CHECK(io(&h, &c, NULL, 0, &cpl) == 0 && cpl.invalidated && cpl.invalidated_rkey == rkey);
	CHECK(buf[0] == 0x5c && buf[bs - 1] == 0x5c);
	CHECK(buf[bs] == 0 && buf[2 * bs - 1] == 0 && buf[2 * bs] == 0 && buf[3 * bs - 1] == 0);
	CHECK(buf[3 * bs] == (uint8_t)((3 * bs) * 13 + 1));

	/* AER: held; a Keep Alive after it completes (cid 0), the AER (cid 7) not. */
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_ASYNC_EVENT, .cid = 7, .flags = NVME_CMD_PSDT_SGL };
	nvmf_sgl_build_keyed(c.sgl_raw, 0, 0, 0, false);
	CHECK(nvmf_host_submit(&h.admin, &c, NULL, 0) == 0);
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_KEEP_ALIVE };
	CHECK(nvmf_host_admin(&h, &c, NULL, 0, false, &acpl) == 0 && acpl.status == 0 && acpl.cid == 0);
	struct nvmf_host_cpl extra;
	CHECK(nvmf_host_poll(&h.admin, &extra, 1, 200) == 0);

	/* A wrong rkey: the target's RDMA WRITE fails and it drops the queue. */
	c = rw(NVME_IO_READ, 0, 1);
	nvmf_sgl_build_keyed(c.sgl_raw, (uintptr_t)buf, bs, rkey ^ 0x5a5a00u, false);
	CHECK(io(&h, &c, NULL, 0, NULL) == -1);
	/* The controller lives (admin queue), and so does the target. */
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_KEEP_ALIVE };
	CHECK(nvmf_host_admin(&h, &c, NULL, 0, false, &acpl) == 0 && acpl.status == 0);
	ibv_dereg_mr(mr);
	nvmf_host_close(&h);

	struct nvmf_host h2;
	CHECK(connect_host(&h2, 5000, 4) == 0);
	mr = nvmf_host_reg(&h2, buf, 65536);
	c = rw(NVME_IO_READ, 100, 1);
	memset(buf, 0, bs);
	nvmf_sgl_build_keyed(c.sgl_raw, (uintptr_t)buf, bs, nvmf_mr_rkey(mr), false);
	CHECK(io(&h2, &c, NULL, 0, NULL) == 0 && buf[0] == 0x5c);
	ibv_dereg_mr(mr);
	nvmf_host_close(&h2);
	free(buf);
}

static void test_keep_alive(void)
{
	struct nvmf_host quiet, talker;
	struct nvme_cmd c;
	struct nvme_cpl acpl;

	CHECK(connect_host(&quiet, 500, 2) == 0);
	CHECK(connect_host(&talker, 500, 2) == 0);
	for (int i = 0; i < 8; i++) {   /* 1.6 s: the talker sends one every 200 ms */
		sleep_ms(200);
		c = (struct nvme_cmd){ .opcode = NVME_ADMIN_KEEP_ALIVE };
		CHECK(nvmf_host_admin(&talker, &c, NULL, 0, false, &acpl) == 0 && acpl.status == 0);
	}
	c = (struct nvme_cmd){ .opcode = NVME_IO_FLUSH, .nsid = 1 };
	CHECK(io(&talker, &c, NULL, 0, NULL) == 0);
	c = (struct nvme_cmd){ .opcode = NVME_IO_FLUSH, .nsid = 1 };
	CHECK(io(&quiet, &c, NULL, 0, NULL) == -1);     /* torn down: no answer */
	c = (struct nvme_cmd){ .opcode = NVME_ADMIN_KEEP_ALIVE };
	CHECK(nvmf_host_admin(&quiet, &c, NULL, 0, false, &acpl) == -1);
	nvmf_host_close(&quiet);
	nvmf_host_close(&talker);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: nvmf_net_test ADDR PORT NQN\n");
		return 2;
	}
	addr = argv[1];
	port = argv[2];
	nqn = argv[3];
	test_connect();
	test_commands();
	test_keep_alive();
	return check_exit("nvmf_net");
}
