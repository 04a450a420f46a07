/*
 * target.c — the controller logic of target.h: Fabrics Connect and the
 * controllers it makes, properties, admin commands (Identify, Get/Set
 * Features, Get Log Page, Keep Alive, Asynchronous Event Request, Abort)
 * and NVM I/O commands (Read, Write, Flush, Write Zeroes, Dataset
 * Management).  Statuses are those NVMe Base 1.4 and NVMe-oF 1.1 name;
 * where the specification leaves a choice, the Linux kernel's target
 * (drivers/nvme/target) is followed, since its hosts are tested against it.
 */
#include "nvmf/target.h"

#include <stdio.h>
#include <string.h>

#define NVME_VS_1_3 0x00010300u
#define CC_EN(cc) ((cc) & 1u)
#define CC_SHN(cc) (((cc) >> 14) & 3u)
#define CC_IOSQES(cc) (((cc) >> 16) & 0xfu)
#define CC_IOCQES(cc) (((cc) >> 20) & 0xfu)
#define CSTS_RDY 1u
#define CSTS_CFS 2u
#define CSTS_SHST_COMPLETE (2u << 2)

enum { FEAT_VOLATILE_WC = 0x06, FEAT_NUM_QUEUES = 0x07, FEAT_ASYNC_EVENT = 0x0b, FEAT_KATO = 0x0f };
enum { LOG_ERROR = 0x01, LOG_SMART = 0x02, LOG_FW_SLOT = 0x03, LOG_DISCOVERY = 0x70 };
enum { CNS_NS = 0x00, CNS_CTRL = 0x01, CNS_NS_ACTIVE_LIST = 0x02, CNS_NS_DESC_LIST = 0x03, CNS_CS_CTRL = 0x06 };

static void copy_padded(uint8_t *dst, const char *src, size_t width)
{
	size_t n = strlen(src);

	memset(dst, ' ', width);
	memcpy(dst, src, n < width ? n : width);
}

int nvmf_target_init(struct nvmf_target *t, const struct nvmf_target_config *cfg, struct nvmf_ns *ns)
{
	uint32_t h = 2166136261u;

	memset(t, 0, sizeof(*t));
	if (!cfg->nqn || !cfg->nqn[0] || strlen(cfg->nqn) >= NVMF_NQN_FIELD || !strcmp(cfg->nqn, NVMF_DISCOVERY_NQN))
		return -1;
	if (cfg->allow_host && strlen(cfg->allow_host) >= NVMF_NQN_FIELD)
		return -1;
	snprintf(t->nqn, sizeof(t->nqn), "%s", cfg->nqn);
	snprintf(t->allow_host, sizeof(t->allow_host), "%s", cfg->allow_host ? cfg->allow_host : "");
	for (const char *p = cfg->nqn; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	if (cfg->serial)
		snprintf(t->serial, sizeof(t->serial), "%s", cfg->serial);
	else
		snprintf(t->serial, sizeof(t->serial), "softrnic%08x", h);
	snprintf(t->traddr, sizeof(t->traddr), "%s", cfg->traddr ? cfg->traddr : "0.0.0.0");
	t->port = cfg->port ? cfg->port : NVMF_RDMA_PORT;
	t->ns = ns;
	t->next_cntlid = 1;
	return 0;
}

void nvmf_queue_init(struct nvmf_queue *q, uint16_t cm_qid, uint16_t size)
{
	memset(q, 0, sizeof(*q));
	q->cm_qid = cm_qid;
	q->size = size;
}

static uint16_t fail(struct nvmf_req *r, uint16_t status)
{
	r->status = status;
	return status;
}

/* ---- preparing: which data moves, and checks made before it moves ---- */

static uint32_t io_blocks(const struct nvme_cmd *c)
{
	return (c->cdw12 & 0xffff) + 1u;
}

static uint64_t io_slba(const struct nvme_cmd *c)
{
	return (uint64_t)c->cdw11 << 32 | c->cdw10;
}

static bool lba_in_range(const struct nvmf_ns *ns, uint64_t slba, uint64_t n)
{
	return slba < ns->blocks && n <= ns->blocks - slba;
}

/* The data an admin command moves: 0, or a status. */
static uint16_t admin_xfer(struct nvmf_req *r, uint32_t *len)
{
	const struct nvme_cmd *c = &r->cmd;

	switch (c->opcode) {
	case NVME_FABRICS_COMMAND:
		if (c->fctype == NVMF_FCTYPE_CONNECT) {
			r->xfer = NVMF_XFER_TO_CTRL;
			*len = NVMF_CONNECT_DATA_BYTES;
		} else if (c->fctype != NVMF_FCTYPE_PROPERTY_GET && c->fctype != NVMF_FCTYPE_PROPERTY_SET) {
			return NVME_SC_INVALID_OPCODE | NVME_SC_DNR;
		}
		return 0;
	case NVME_ADMIN_IDENTIFY:
		r->xfer = NVMF_XFER_FROM_CTRL;
		*len = 4096;
		return 0;
	case NVME_ADMIN_GET_LOG_PAGE: {
		uint64_t numd = ((uint64_t)(c->cdw11 & 0xffff) << 16 | c->cdw10 >> 16) + 1;
		if (numd * 4 > NVMF_MAX_DATA)
			return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
		r->xfer = NVMF_XFER_FROM_CTRL;
		*len = (uint32_t)numd * 4;
		return 0;
	}
	case NVME_ADMIN_GET_FEATURES:
	case NVME_ADMIN_SET_FEATURES:
	case NVME_ADMIN_KEEP_ALIVE:
	case NVME_ADMIN_ASYNC_EVENT:
	case NVME_ADMIN_ABORT:
		return 0;
	default:
		return NVME_SC_INVALID_OPCODE | NVME_SC_DNR;
	}
}

/* The data an I/O command moves, and the checks of its LBA range. */
static uint16_t io_xfer(struct nvmf_target *t, struct nvmf_req *r, uint32_t *len)
{
	const struct nvme_cmd *c = &r->cmd;
	const struct nvmf_ns *ns = t->ns;

	switch (c->opcode) {
	case NVME_IO_READ:
	case NVME_IO_WRITE:
		if (c->nsid != 1)
			return NVME_SC_INVALID_NS | NVME_SC_DNR;
		r->xfer = c->opcode == NVME_IO_READ ? NVMF_XFER_FROM_CTRL : NVMF_XFER_TO_CTRL;
		if (((uint64_t)io_blocks(c) << ns->lba_shift) > NVMF_MAX_DATA)
			return NVME_SC_INVALID_FIELD | NVME_SC_DNR;     /* more than MDTS */
		*len = io_blocks(c) << ns->lba_shift;
		return 0;
	case NVME_IO_FLUSH:
		return c->nsid == 1 || c->nsid == 0xffffffffu ? 0 : NVME_SC_INVALID_NS | NVME_SC_DNR;
	case NVME_IO_WRITE_ZEROES:
		return c->nsid == 1 ? 0 : NVME_SC_INVALID_NS | NVME_SC_DNR;
	case NVME_IO_DSM:
		if (c->nsid != 1)
			return NVME_SC_INVALID_NS | NVME_SC_DNR;
		r->xfer = NVMF_XFER_TO_CTRL;
		*len = ((c->cdw10 & 0xff) + 1u) * 16u;
		return 0;
	default:
		return NVME_SC_INVALID_OPCODE | NVME_SC_DNR;
	}
}

static void count_status(struct nvmf_target *t, uint16_t status)
{
	switch (NVME_SC_CODE(status)) {
	case NVME_SC_INVALID_OPCODE: t->stats.invalid_opcode++; break;
	case NVME_SC_INVALID_FIELD: t->stats.invalid_field++; break;
	case NVME_SC_INVALID_NS: t->stats.invalid_ns++; break;
	case NVME_SC_SGL_INVALID_DATA:
	case NVME_SC_SGL_INVALID_TYPE:
	case NVME_SC_SGL_INVALID_OFFSET: t->stats.sgl_invalid++; break;
	case NVME_SC_LBA_RANGE: t->stats.lba_range++; break;
	case NVME_SC_CMD_SEQ_ERROR: t->stats.seq_error++; break;
	default: break;
	}
}

bool nvmf_req_prepare(struct nvmf_target *t, struct nvmf_queue *q, const uint8_t sqe[NVME_SQE_BYTES],
		      struct nvmf_req *r, uint64_t now_ns)
{
	uint32_t len = 0;
	uint16_t st;

	(void)now_ns;
	memset(r, 0, sizeof(*r));
	nvme_cmd_parse(sqe, &r->cmd);
	t->stats.commands++;
	bool fabrics = r->cmd.opcode == NVME_FABRICS_COMMAND;
	bool connect = fabrics && r->cmd.fctype == NVMF_FCTYPE_CONNECT;

	/* A queue takes a Connect first, and only once. */
	if (!q->ctrl != connect || (q->ctrl && q->ctrl->dead)) {
		st = NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR;
	} else if ((st = nvmf_sgl_parse(&r->cmd, &r->sgl)) != 0) {
		;
	} else if (connect) {
		r->xfer = NVMF_XFER_TO_CTRL;
		len = NVMF_CONNECT_DATA_BYTES;
	} else if (q->qid == 0) {
		st = admin_xfer(r, &len);
	} else if (fabrics) {
		st = NVME_SC_INVALID_OPCODE | NVME_SC_DNR;      /* only Connect on an I/O queue */
	} else {
		st = io_xfer(t, r, &len);
	}
	/* Commands other than Fabrics need an enabled, ready controller. */
	if (!st && !fabrics && !(CC_EN(q->ctrl->cc) && (q->ctrl->csts & CSTS_RDY)))
		st = NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR;
	/* The SGL must describe exactly the data (NVMe Base 1.4 §4.4:
	 * Data SGL Length Invalid) — but a Dataset Management's ranges may
	 * lie in a longer buffer, as the kernel's target also allows; in-
	 * capsule data only goes to the controller and must fit in the
	 * capsule. */
	if (!st && !fabrics && q->qid != 0 && r->cmd.opcode == NVME_IO_DSM && r->sgl.len > len &&
	    r->sgl.len <= NVMF_MAX_DATA)
		len = r->sgl.len;       /* ranges may come in a longer buffer (the Linux host's) */
	if (!st && r->sgl.len != len)
		st = NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR;
	if (!st && r->sgl.kind == NVMF_SGL_IN_CAPSULE) {
		if (r->xfer != NVMF_XFER_TO_CTRL)
			st = NVME_SC_INVALID_FIELD | NVME_SC_DNR;
		else if (r->sgl.addr > NVMF_INLINE_DATA || len > NVMF_INLINE_DATA - r->sgl.addr)
			st = NVME_SC_SGL_INVALID_OFFSET | NVME_SC_DNR;
	}
	/* The range of a Read, Write or Write Zeroes, before data moves. */
	if (!st && !fabrics && q->qid != 0 &&
	    (r->cmd.opcode == NVME_IO_READ || r->cmd.opcode == NVME_IO_WRITE ||
	     r->cmd.opcode == NVME_IO_WRITE_ZEROES) &&
	    !lba_in_range(t->ns, io_slba(&r->cmd), io_blocks(&r->cmd)))
		st = NVME_SC_LBA_RANGE | NVME_SC_DNR;
	if (st) {
		r->xfer = NVMF_XFER_NONE;
		r->xfer_len = 0;
		fail(r, st);
		return false;
	}
	r->xfer_len = len;
	return true;
}

/* ---- Connect ---- */

static struct nvmf_ctrl *ctrl_by_id(struct nvmf_target *t, uint16_t cntlid)
{
	for (unsigned i = 0; i < NVMF_MAX_CTRLS; i++)
		if (t->ctrls[i].used && t->ctrls[i].cntlid == cntlid)
			return &t->ctrls[i];
	return NULL;
}

static uint16_t alloc_cntlid(struct nvmf_target *t)
{
	/* 1..0xffef are valid controller IDs (0xfff0 and up are reserved). */
	for (unsigned tries = 0; tries < 0xffef; tries++) {
		uint16_t id = t->next_cntlid;
		t->next_cntlid = t->next_cntlid >= 0xffef ? 1 : (uint16_t)(t->next_cntlid + 1);
		if (!ctrl_by_id(t, id))
			return id;
	}
	return 0;
}

static void connect_fail(struct nvmf_target *t, struct nvmf_req *r, uint16_t status, uint32_t ipo)
{
	t->stats.connect_rejected++;
	r->status = status;
	if (NVME_SC_CODE(status) == NVME_SC_CONNECT_INVALID_PARAM)
		r->result = ipo;
}

static void exec_connect(struct nvmf_target *t, struct nvmf_queue *q, struct nvmf_req *r, const uint8_t *data,
			 uint64_t now_ns)
{
	struct nvmf_connect c;
	struct nvmf_connect_data d;
	uint32_t ipo;

	t->stats.connects++;
	nvmf_connect_parse(&r->cmd, &c);
	if (c.recfmt != 0)
		return connect_fail(t, r, NVME_SC_CONNECT_FORMAT | NVME_SC_DNR, 0);
	if (nvmf_connect_data_parse(data, r->xfer_len, &d, &ipo))
		return connect_fail(t, r, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR, ipo);
	/* The queue the host names must be the one it opened (the CM's qid),
	 * and no deeper than the queue it negotiated. */
	if (c.qid != q->cm_qid)
		return connect_fail(t, r, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR,
				    NVMF_IPO_IATTR(0, NVMF_CONNECT_SQE_QID));
	if (c.sqsize == 0 || c.sqsize >= NVMF_RDMA_MAX_QUEUE_SIZE || (uint32_t)c.sqsize + 1 > q->size ||
	    (c.qid == 0 && c.sqsize + 1u < NVMF_ADMIN_QUEUE_MIN))
		return connect_fail(t, r, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR,
				    NVMF_IPO_IATTR(0, NVMF_CONNECT_SQE_SQSIZE));
	bool discovery = !strcmp(d.subnqn, NVMF_DISCOVERY_NQN);
	if (!discovery && strcmp(d.subnqn, t->nqn))
		return connect_fail(t, r, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR,
				    NVMF_IPO_IATTR(1, NVMF_CONNECT_DATA_SUBNQN));
	if (!discovery && t->allow_host[0] && strcmp(d.hostnqn, t->allow_host))
		return connect_fail(t, r, NVME_SC_CONNECT_INVALID_HOST | NVME_SC_DNR, 0);

	if (c.qid == 0) {
		/* The admin queue makes a controller (dynamic model: the host asks for 0xffff). */
		if (d.cntlid != 0xffff)
			return connect_fail(t, r, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR,
					    NVMF_IPO_IATTR(1, NVMF_CONNECT_DATA_CNTLID));
		struct nvmf_ctrl *ctrl = NULL;
		for (unsigned i = 0; i < NVMF_MAX_CTRLS && !ctrl; i++)
			if (!t->ctrls[i].used)
				ctrl = &t->ctrls[i];
		uint16_t id = ctrl ? alloc_cntlid(t) : 0;
		if (!ctrl || !id)
			return connect_fail(t, r, NVME_SC_CONNECT_CTRL_BUSY | NVME_SC_DNR, 0);
		memset(ctrl, 0, sizeof(*ctrl));
		ctrl->used = true;
		ctrl->discovery = discovery;
		ctrl->cntlid = id;
		snprintf(ctrl->hostnqn, sizeof(ctrl->hostnqn), "%s", d.hostnqn);
		memcpy(ctrl->hostid, d.hostid, 16);
		ctrl->kato_ms = c.kato_ms;
		ctrl->ka_deadline_ns = now_ns + (uint64_t)c.kato_ms * 1000000ull;
		ctrl->queues = 1;
		q->ctrl = ctrl;
		q->qid = 0;
		t->stats.ctrls_created++;
		r->result = id;
		return;
	}
	/* An I/O queue joins the controller its admin queue made, for the
	 * same host and subsystem. */
	struct nvmf_ctrl *ctrl = ctrl_by_id(t, d.cntlid);
	if (!ctrl || ctrl->dead || ctrl->discovery || discovery || strcmp(ctrl->hostnqn, d.hostnqn))
		return connect_fail(t, r, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR,
				    NVMF_IPO_IATTR(1, NVMF_CONNECT_DATA_CNTLID));
	if (c.qid > ctrl->io_queues || c.qid > NVMF_MAX_IO_QUEUES || ctrl->io_qid_used[c.qid] ||
	    !(ctrl->csts & CSTS_RDY))
		return connect_fail(t, r, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR,
				    NVMF_IPO_IATTR(0, NVMF_CONNECT_SQE_QID));
	ctrl->io_qid_used[c.qid] = true;
	ctrl->queues++;
	q->ctrl = ctrl;
	q->qid = c.qid;
	r->result = ctrl->cntlid;
}

/* ---- properties ---- */

static uint64_t ctrl_cap(void)
{
	return (uint64_t)(NVMF_RDMA_MAX_QUEUE_SIZE - 1)   /* MQES, 0's based */
	       | 1ull << 16                               /* CQR: contiguous queues */
	       | 15ull << 24                              /* TO: 7.5 s to ready */
	       | 1ull << 37;                              /* CSS: NVM command set */
}

static void exec_property(struct nvmf_queue *q, struct nvmf_req *r)
{
	struct nvmf_ctrl *ctrl = q->ctrl;
	bool eight = (r->cmd.cdw10 & 7) == 1;   /* ATTRIB size: 0 = 4 bytes, 1 = 8 bytes */
	uint32_t offset = r->cmd.cdw11;

	if ((r->cmd.cdw10 & 7) > 1) {
		fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
		return;
	}
	if (r->cmd.fctype == NVMF_FCTYPE_PROPERTY_GET) {
		switch (offset) {
		case NVME_PROP_CAP: r->result = eight ? ctrl_cap() : (uint32_t)ctrl_cap(); return;
		case NVME_PROP_VS: r->result = NVME_VS_1_3; return;
		case NVME_PROP_CC: r->result = ctrl->cc; return;
		case NVME_PROP_CSTS: r->result = ctrl->csts; return;
		default: fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR); return;
		}
	}
	/* Property Set: CC is the only writable property here. */
	if (offset != NVME_PROP_CC || eight) {
		fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
		return;
	}
	uint32_t old = ctrl->cc, cc = r->cmd.cdw12;
	ctrl->cc = cc;
	if (CC_EN(cc) && !CC_EN(old)) {
		/* Enabling: the entry sizes must be those of NVMe (64 / 16 bytes). */
		if (CC_IOSQES(cc) != 6 || CC_IOCQES(cc) != 4)
			ctrl->csts |= CSTS_CFS;
		else
			ctrl->csts |= CSTS_RDY;
	} else if (!CC_EN(cc) && CC_EN(old)) {
		ctrl->csts &= ~(CSTS_RDY | CSTS_CFS);
	}
	if (CC_SHN(cc) && !CC_SHN(old))
		ctrl->csts |= CSTS_SHST_COMPLETE;
	else if (!CC_SHN(cc))
		ctrl->csts &= ~(3u << 2);
}

/* ---- Identify ---- */

static void identify_ctrl(struct nvmf_target *t, const struct nvmf_ctrl *ctrl, uint8_t *d)
{
	put_le16(d + 0, 0);                                     /* VID: none */
	copy_padded(d + 4, t->serial, 20);                      /* SN */
	copy_padded(d + 24, ctrl->discovery ? "softrnic discovery" : "softrnic NVMe-oF", 40); /* MN */
	copy_padded(d + 64, "1.0", 8);                          /* FR */
	d[72] = 6;                                              /* RAB */
	d[77] = NVMF_MDTS;                                      /* MDTS */
	put_le16(d + 78, ctrl->cntlid);
	put_le32(d + 80, NVME_VS_1_3);
	d[111] = ctrl->discovery ? 2 : 1;                       /* CNTRLTYPE: discovery / I/O */
	d[258] = 3;                                             /* ACL */
	d[259] = NVMF_AERL;                                     /* AERL */
	d[260] = 1 << 1 | 1;                                    /* FRMW: 1 slot, slot 1 read only */
	d[261] = 1 << 2;                                        /* LPA: extended data for Get Log Page */
	put_le16(d + 320, 10);                                  /* KAS: 1 s granularity (100 ms units) */
	d[512] = 6 << 4 | 6;                                    /* SQES */
	d[513] = 4 << 4 | 4;                                    /* CQES */
	put_le16(d + 514, NVMF_RDMA_MAX_QUEUE_SIZE);            /* MAXCMD */
	put_le32(d + 516, ctrl->discovery ? 0 : 1);             /* NN */
	if (!ctrl->discovery) {
		put_le16(d + 520, 1 << 2 | 1 << 3);             /* ONCS: DSM, Write Zeroes */
		d[525] = 1;                                     /* VWC: Flush matters (file backend) */
	}
	/* SGLS: SGLs supported, keyed data blocks, offsets in the capsule. */
	put_le32(d + 536, 1u << 0 | 1u << 2 | 1u << 20);
	snprintf((char *)d + 768, NVMF_NQN_FIELD, "%s", ctrl->discovery ? NVMF_DISCOVERY_NQN : t->nqn);
	/* Fabrics: capsule sizes in 16-byte units, data at offset 0, one SGL descriptor. */
	put_le32(d + 1792, (NVME_SQE_BYTES + NVMF_INLINE_DATA) / 16);   /* IOCCSZ */
	put_le32(d + 1796, NVME_CQE_BYTES / 16);                        /* IORCSZ */
	put_le16(d + 1800, 0);                                          /* ICDOFF */
	d[1802] = 0;                                                    /* FCATT: dynamic model */
	d[1803] = 1;                                                    /* MSDBD */
	put_le16(d + 2048, 0);                                  /* power state 0: MP not reported */
}

static void identify_ns(const struct nvmf_ns *ns, uint8_t *d)
{
	put_le64(d + 0, ns->blocks);                            /* NSZE */
	put_le64(d + 8, ns->blocks);                            /* NCAP */
	put_le64(d + 16, ns->blocks);                           /* NUSE */
	d[25] = 0;                                              /* NLBAF: one format */
	d[26] = 0;                                              /* FLBAS: format 0 */
	d[33] = 1;                                              /* DLFEAT: deallocated blocks read 0 */
	memcpy(d + 104, ns->uuid, 16);                          /* NGUID */
	d[128 + 2] = (uint8_t)ns->lba_shift;                    /* LBAF0: LBADS */
}

static void exec_identify(struct nvmf_target *t, struct nvmf_queue *q, struct nvmf_req *r, uint8_t *d)
{
	unsigned cns = r->cmd.cdw10 & 0xff;
	uint32_t nsid = r->cmd.nsid;
	bool nvm = !q->ctrl->discovery;

	memset(d, 0, r->xfer_len);
	switch (cns) {
	case CNS_CTRL:
		identify_ctrl(t, q->ctrl, d);
		return;
	case CNS_NS:
		if (!nvm || nsid == 0 || (nsid != 1 && nsid != 0xffffffffu)) {
			fail(r, NVME_SC_INVALID_NS | NVME_SC_DNR);
			return;
		}
		if (nsid == 1)
			identify_ns(t->ns, d);
		else
			d[128 + 2] = (uint8_t)t->ns->lba_shift;  /* broadcast: the formats common to all */
		return;
	case CNS_NS_ACTIVE_LIST:
		if (nsid >= 0xfffffffeu) {
			fail(r, NVME_SC_INVALID_NS | NVME_SC_DNR);
			return;
		}
		if (nvm && nsid < 1)
			put_le32(d, 1);
		return;
	case CNS_NS_DESC_LIST:
		if (!nvm || nsid != 1) {
			fail(r, NVME_SC_INVALID_NS | NVME_SC_DNR);
			return;
		}
		d[0] = 2;               /* NIDT: NGUID */
		d[1] = 16;
		memcpy(d + 4, t->ns->uuid, 16);
		d[20] = 3;              /* NIDT: UUID */
		d[21] = 16;
		memcpy(d + 24, t->ns->uuid, 16);
		d[40] = 4;              /* NIDT: command set identifier */
		d[41] = 1;
		d[44] = 0;              /* NVM */
		return;
	case CNS_CS_CTRL:
		/* The NVM command set's controller data (NVMe 2.0, CSI 0 in
		 * CDW11 bits 31:24): all zero, no Verify/Write Zeroes/DSM limits
		 * beyond MDTS.  The Linux host asks for it. */
		if (((r->cmd.cdw11 >> 24) & 0xff) != 0 || !nvm)
			fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
		return;
	default:
		fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
		return;
	}
}

/* ---- Get Log Page ---- */

static void exec_get_log(struct nvmf_target *t, struct nvmf_queue *q, struct nvmf_req *r, uint8_t *d)
{
	uint8_t log[2048];              /* the largest page built here */
	unsigned lid = r->cmd.cdw10 & 0xff;
	uint64_t offset = (uint64_t)r->cmd.cdw13 << 32 | r->cmd.cdw12;
	size_t size;

	memset(log, 0, sizeof(log));
	memset(d, 0, r->xfer_len);
	if (offset & 3) {
		fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
		return;
	}
	switch (lid) {
	case LOG_DISCOVERY: {
		if (!q->ctrl->discovery) {
			fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
			return;
		}
		/* Header (1024 bytes) and one entry for the NVM subsystem. */
		put_le64(log + 0, 1);                   /* GENCTR */
		put_le64(log + 8, 1);                   /* NUMREC */
		uint8_t *e = log + 1024;
		e[0] = 1;                               /* TRTYPE: RDMA */
		e[1] = 1;                               /* ADRFAM: IPv4 */
		e[2] = 2;                               /* SUBTYPE: NVM subsystem */
		e[3] = 0x2;                             /* TREQ: secure channel not required */
		put_le16(e + 4, 1);                     /* PORTID */
		put_le16(e + 6, 0xffff);                /* CNTLID: dynamic */
		put_le16(e + 8, NVMF_ADMIN_QUEUE_MIN);  /* ASQSZ */
		snprintf((char *)e + 32, 32, "%u", t->port);                    /* TRSVCID */
		snprintf((char *)e + 256, NVMF_NQN_FIELD, "%s", t->nqn);       /* SUBNQN */
		snprintf((char *)e + 512, 256, "%s", q->traddr[0] ? q->traddr : t->traddr); /* TRADDR */
		e[768] = 1;                             /* RDMA QPTYPE: reliable connected */
		e[769] = 1;                             /* RDMA PRTYPE: no provider specified */
		e[770] = 1;                             /* RDMA CMS: RDMA_CM (sockets-based addressing) */
		size = 2048;
		break;
	}
	case LOG_ERROR:
		size = 64;                              /* one empty entry: no errors logged */
		break;
	case LOG_SMART: {
		/* Data units are thousands of 512-byte units, rounded up. */
		uint64_t units_read = (t->stats.read_bytes / 512 + 999) / 1000;
		uint64_t units_written = (t->stats.write_bytes / 512 + 999) / 1000;
		put_le16(log + 1, 273 + 25);            /* composite temperature: 25 °C in kelvin */
		log[3] = 100;                           /* available spare */
		log[4] = 10;                            /* its threshold */
		put_le64(log + 32, units_read);
		put_le64(log + 48, units_written);
		put_le64(log + 64, t->stats.reads);
		put_le64(log + 80, t->stats.writes);
		size = 512;
		break;
	}
	case LOG_FW_SLOT:
		log[0] = 1;                             /* AFI: slot 1 active */
		memcpy(log + 8, "1.0     ", 8);
		size = 512;
		break;
	default:
		fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
		return;
	}
	if (offset > size) {
		fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
		return;
	}
	size_t n = size - (size_t)offset < r->xfer_len ? size - (size_t)offset : r->xfer_len;
	memcpy(d, log + offset, n);
}

/* ---- Features ---- */

static void exec_features(struct nvmf_queue *q, struct nvmf_req *r, uint64_t now_ns)
{
	struct nvmf_ctrl *ctrl = q->ctrl;
	unsigned fid = r->cmd.cdw10 & 0xff;
	bool set = r->cmd.opcode == NVME_ADMIN_SET_FEATURES;

	switch (fid) {
	case FEAT_NUM_QUEUES:
		if (ctrl->discovery) {
			fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
			return;
		}
		if (set) {
			uint32_t nsq = (r->cmd.cdw11 & 0xffff) + 1u, ncq = (r->cmd.cdw11 >> 16) + 1u;
			if (nsq == 0x10000u || ncq == 0x10000u) {   /* 0xffff asks for 65536: invalid */
				fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
				return;
			}
			uint32_t n = nsq < ncq ? nsq : ncq;
			ctrl->io_queues = (uint16_t)(n < NVMF_MAX_IO_QUEUES ? n : NVMF_MAX_IO_QUEUES);
		}
		r->result = (uint32_t)(ctrl->io_queues ? ctrl->io_queues - 1 : NVMF_MAX_IO_QUEUES - 1) * 0x10001u;
		return;
	case FEAT_KATO:
		if (set) {
			ctrl->kato_ms = r->cmd.cdw11;
			ctrl->ka_deadline_ns = now_ns + (uint64_t)ctrl->kato_ms * 1000000ull;
		}
		r->result = ctrl->kato_ms;
		return;
	case FEAT_ASYNC_EVENT:
		if (set)
			ctrl->aen_cfg = r->cmd.cdw11 & (0xffu | 1u << 8 | 1u << 31);
		r->result = ctrl->aen_cfg;
		return;
	case FEAT_VOLATILE_WC:
		if (set && (r->cmd.cdw11 & 1) == 0) {
			fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);   /* writes are not cached here */
			return;
		}
		r->result = ctrl->discovery ? 0 : 1;
		return;
	default:
		fail(r, NVME_SC_INVALID_FIELD | NVME_SC_DNR);
		return;
	}
}

/* ---- I/O ---- */

static void exec_io(struct nvmf_target *t, struct nvmf_req *r, uint8_t *data)
{
	const struct nvme_cmd *c = &r->cmd;
	struct nvmf_ns *ns = t->ns;
	int e = 0;

	switch (c->opcode) {
	case NVME_IO_READ:
		e = nvmf_ns_read(ns, io_slba(c), io_blocks(c), data);
		t->stats.reads++;
		t->stats.read_bytes += r->xfer_len;
		break;
	case NVME_IO_WRITE:
		e = nvmf_ns_write(ns, io_slba(c), io_blocks(c), data);
		t->stats.writes++;
		t->stats.write_bytes += r->xfer_len;
		break;
	case NVME_IO_FLUSH:
		e = nvmf_ns_flush(ns);
		t->stats.flushes++;
		break;
	case NVME_IO_WRITE_ZEROES:
		e = nvmf_ns_zero(ns, io_slba(c), io_blocks(c));
		t->stats.write_zeroes++;
		break;
	case NVME_IO_DSM: {
		unsigned nr = (c->cdw10 & 0xff) + 1u;
		if (!(c->cdw11 & 1u << 2))
			break;                  /* only attributes (hints): nothing to do */
		/* Every range is checked before any is deallocated. */
		for (unsigned i = 0; i < nr; i++) {
			const uint8_t *rg = data + 16u * i;
			if (!lba_in_range(ns, get_le64(rg + 8), get_le32(rg + 4))) {
				fail(r, NVME_SC_LBA_RANGE | NVME_SC_DNR);
				return;
			}
		}
		for (unsigned i = 0; i < nr && !e; i++) {
			const uint8_t *rg = data + 16u * i;
			if (get_le32(rg + 4))
				e = nvmf_ns_deallocate(ns, get_le64(rg + 8), get_le32(rg + 4));
		}
		t->stats.deallocates++;
		break;
	}
	default:
		fail(r, NVME_SC_INVALID_OPCODE | NVME_SC_DNR);  /* io_xfer let it through: cannot happen */
		return;
	}
	if (e)
		fail(r, NVME_SC_INTERNAL);
}

void nvmf_req_execute(struct nvmf_target *t, struct nvmf_queue *q, struct nvmf_req *r, uint8_t *data,
		      uint64_t now_ns)
{
	const struct nvme_cmd *c = &r->cmd;

	if (c->opcode == NVME_FABRICS_COMMAND) {
		if (c->fctype == NVMF_FCTYPE_CONNECT)
			exec_connect(t, q, r, data, now_ns);
		else
			exec_property(q, r);
		return;
	}
	if (q->qid != 0) {
		exec_io(t, r, data);
		return;
	}
	switch (c->opcode) {
	case NVME_ADMIN_IDENTIFY:
		exec_identify(t, q, r, data);
		return;
	case NVME_ADMIN_GET_LOG_PAGE:
		exec_get_log(t, q, r, data);
		return;
	case NVME_ADMIN_GET_FEATURES:
	case NVME_ADMIN_SET_FEATURES:
		exec_features(q, r, now_ns);
		return;
	case NVME_ADMIN_KEEP_ALIVE:
		q->ctrl->ka_deadline_ns = now_ns + (uint64_t)q->ctrl->kato_ms * 1000000ull;
		t->stats.keep_alives++;
		return;
	case NVME_ADMIN_ASYNC_EVENT:
		/* Held until an event (softrnic raises none) or the controller goes. */
		if (q->ctrl->aer_held > NVMF_AERL) {
			fail(r, NVME_SC_ASYNC_LIMIT | NVME_SC_DNR);
			return;
		}
		q->ctrl->aer_held++;
		t->stats.aer_held++;
		r->held = true;
		return;
	case NVME_ADMIN_ABORT:
		r->result = 1;          /* bit 0: the command was not aborted */
		return;
	default:
		fail(r, NVME_SC_INVALID_OPCODE | NVME_SC_DNR);
		return;
	}
}

void nvmf_req_fail_transfer(struct nvmf_target *t, struct nvmf_req *r)
{
	(void)t;
	r->status = NVME_SC_DATA_XFER_ERROR;
	r->result = 0;
	r->held = false;
}

void nvmf_req_response(struct nvmf_target *t, struct nvmf_queue *q, const struct nvmf_req *r,
		       uint8_t cqe[NVME_CQE_BYTES])
{
	struct nvme_cpl cpl = { .result = r->result, .sq_id = q->qid, .cid = r->cmd.cid, .status = r->status };

	if (r->status) {
		t->stats.errors++;
		count_status(t, r->status);
	}
	q->sq_head = q->size ? (uint16_t)((q->sq_head + 1u) % q->size) : 0;
	cpl.sq_head = q->sq_head;
	nvme_cpl_build(&cpl, cqe);
}

/* ---- queues and controllers going ---- */

void nvmf_queue_gone(struct nvmf_target *t, struct nvmf_queue *q)
{
	struct nvmf_ctrl *ctrl = q->ctrl;

	if (!ctrl)
		return;
	q->ctrl = NULL;
	if (q->qid == 0)
		ctrl->dead = true;              /* the admin queue is the controller's life */
	else if (q->qid <= NVMF_MAX_IO_QUEUES)
		ctrl->io_qid_used[q->qid] = false;
	if (--ctrl->queues == 0) {
		ctrl->used = false;
		t->stats.ctrls_freed++;
	}
}

bool nvmf_target_tick(struct nvmf_target *t, uint64_t now_ns)
{
	bool any = false;

	for (unsigned i = 0; i < NVMF_MAX_CTRLS; i++) {
		struct nvmf_ctrl *ctrl = &t->ctrls[i];
		if (!ctrl->used || ctrl->dead || !ctrl->kato_ms || now_ns < ctrl->ka_deadline_ns)
			continue;
		ctrl->dead = true;
		t->stats.keep_alive_expired++;
		any = true;
	}
	return any;
}
