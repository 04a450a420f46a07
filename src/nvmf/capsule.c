/*
 * capsule.c — parsers and builders of the NVMe / NVMe over Fabrics
 * structures in capsule.h: byte layouts of NVMe Base 1.4 (§4.2 the
 * submission queue entry, §4.6 the completion queue entry, §4.4 SGL
 * descriptors) and NVMe-oF 1.1 (§3.3 Connect, §3.4 Property Get/Set,
 * §7.3 the RDMA binding's CM private data).
 */
#include "nvmf/capsule.h"

#include <string.h>

void nvme_cmd_parse(const uint8_t sqe[NVME_SQE_BYTES], struct nvme_cmd *cmd)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->opcode = sqe[0];
	cmd->flags = sqe[1];
	cmd->cid = get_le16(sqe + 2);
	cmd->nsid = get_le32(sqe + 4);
	cmd->fctype = sqe[4];
	memcpy(cmd->sgl_raw, sqe + 24, 16);
	cmd->cdw10 = get_le32(sqe + 40);
	cmd->cdw11 = get_le32(sqe + 44);
	cmd->cdw12 = get_le32(sqe + 48);
	cmd->cdw13 = get_le32(sqe + 52);
	cmd->cdw14 = get_le32(sqe + 56);
	cmd->cdw15 = get_le32(sqe + 60);
}

void nvme_cmd_build(const struct nvme_cmd *cmd, uint8_t sqe[NVME_SQE_BYTES])
{
	memset(sqe, 0, NVME_SQE_BYTES);
	sqe[0] = cmd->opcode;
	sqe[1] = cmd->flags;
	put_le16(sqe + 2, cmd->cid);
	if (cmd->opcode == NVME_FABRICS_COMMAND)
		sqe[4] = cmd->fctype;
	else
		put_le32(sqe + 4, cmd->nsid);
	memcpy(sqe + 24, cmd->sgl_raw, 16);
	put_le32(sqe + 40, cmd->cdw10);
	put_le32(sqe + 44, cmd->cdw11);
	put_le32(sqe + 48, cmd->cdw12);
	put_le32(sqe + 52, cmd->cdw13);
	put_le32(sqe + 56, cmd->cdw14);
	put_le32(sqe + 60, cmd->cdw15);
}

void nvme_cpl_parse(const uint8_t cqe[NVME_CQE_BYTES], struct nvme_cpl *cpl)
{
	cpl->result = get_le64(cqe);
	cpl->sq_head = get_le16(cqe + 8);
	cpl->sq_id = get_le16(cqe + 10);
	cpl->cid = get_le16(cqe + 12);
	cpl->status = (uint16_t)(get_le16(cqe + 14) >> 1);
}

void nvme_cpl_build(const struct nvme_cpl *cpl, uint8_t cqe[NVME_CQE_BYTES])
{
	put_le64(cqe, cpl->result);
	put_le16(cqe + 8, cpl->sq_head);
	put_le16(cqe + 10, cpl->sq_id);
	put_le16(cqe + 12, cpl->cid);
	put_le16(cqe + 14, (uint16_t)(cpl->status << 1));
}

uint16_t nvmf_sgl_parse(const struct nvme_cmd *cmd, struct nvmf_sgl *sgl)
{
	const uint8_t *d = cmd->sgl_raw;
	unsigned type = d[15] >> 4, subtype = d[15] & 0xf;

	memset(sgl, 0, sizeof(*sgl));
	if ((cmd->flags & NVME_CMD_PSDT_MASK) != NVME_CMD_PSDT_SGL)
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	sgl->addr = get_le64(d);
	if (type == NVME_SGL_TYPE_KEYED_DATA_BLOCK &&
	    (subtype == NVME_SGL_SUBTYPE_ADDRESS || subtype == NVME_SGL_SUBTYPE_INVALIDATE)) {
		sgl->len = (uint32_t)d[8] | (uint32_t)d[9] << 8 | (uint32_t)d[10] << 16;
		sgl->key = get_le32(d + 11);
		sgl->invalidate = subtype == NVME_SGL_SUBTYPE_INVALIDATE;
		sgl->kind = sgl->len ? NVMF_SGL_KEYED : NVMF_SGL_NONE;
		return NVME_SC_SUCCESS;
	}
	if (type == NVME_SGL_TYPE_DATA_BLOCK && subtype == NVME_SGL_SUBTYPE_OFFSET) {
		sgl->len = get_le32(d + 8);
		sgl->kind = sgl->len ? NVMF_SGL_IN_CAPSULE : NVMF_SGL_NONE;
		return NVME_SC_SUCCESS;
	}
	return NVME_SC_SGL_INVALID_TYPE | NVME_SC_DNR;
}

void nvmf_sgl_build_keyed(uint8_t out[16], uint64_t addr, uint32_t len, uint32_t key, bool invalidate)
{
	memset(out, 0, 16);
	put_le64(out, addr);
	out[8] = (uint8_t)len;
	out[9] = (uint8_t)(len >> 8);
	out[10] = (uint8_t)(len >> 16);
	put_le32(out + 11, key);
	out[15] = (uint8_t)(NVME_SGL_TYPE_KEYED_DATA_BLOCK << 4 |
			    (invalidate ? NVME_SGL_SUBTYPE_INVALIDATE : NVME_SGL_SUBTYPE_ADDRESS));
}

void nvmf_sgl_build_in_capsule(uint8_t out[16], uint32_t offset, uint32_t len)
{
	memset(out, 0, 16);
	put_le64(out, offset);
	put_le32(out + 8, len);
	out[15] = NVME_SGL_TYPE_DATA_BLOCK << 4 | NVME_SGL_SUBTYPE_OFFSET;
}

void nvmf_connect_parse(const struct nvme_cmd *cmd, struct nvmf_connect *c)
{
	c->recfmt = (uint16_t)cmd->cdw10;
	c->qid = (uint16_t)(cmd->cdw10 >> 16);
	c->sqsize = (uint16_t)cmd->cdw11;
	c->cattr = (uint8_t)(cmd->cdw11 >> 16);
	c->kato_ms = cmd->cdw12;
}

/* An NQN field: NUL-terminated inside its 256 bytes and not empty. */
static bool nqn_copy(char *dst, const uint8_t *src)
{
	const void *nul = memchr(src, 0, NVMF_NQN_FIELD);

	if (!nul || nul == (const void *)src)
		return false;
	memcpy(dst, src, (size_t)((const uint8_t *)nul - src) + 1);
	return true;
}

int nvmf_connect_data_parse(const uint8_t *data, size_t len, struct nvmf_connect_data *d, uint32_t *bad_offset)
{
	memset(d, 0, sizeof(*d));
	if (len < NVMF_CONNECT_DATA_BYTES) {
		*bad_offset = NVMF_IPO_IATTR(0, 24);    /* the data pointer */
		return -1;
	}
	memcpy(d->hostid, data, 16);
	d->cntlid = get_le16(data + NVMF_CONNECT_DATA_CNTLID);
	if (!nqn_copy(d->subnqn, data + NVMF_CONNECT_DATA_SUBNQN)) {
		*bad_offset = NVMF_IPO_IATTR(1, NVMF_CONNECT_DATA_SUBNQN);
		return -1;
	}
	if (!nqn_copy(d->hostnqn, data + NVMF_CONNECT_DATA_HOSTNQN)) {
		*bad_offset = NVMF_IPO_IATTR(1, NVMF_CONNECT_DATA_HOSTNQN);
		return -1;
	}
	return 0;
}

void nvmf_connect_data_build(const struct nvmf_connect_data *d, uint8_t out[NVMF_CONNECT_DATA_BYTES])
{
	memset(out, 0, NVMF_CONNECT_DATA_BYTES);
	memcpy(out, d->hostid, 16);
	put_le16(out + NVMF_CONNECT_DATA_CNTLID, d->cntlid);
	memcpy(out + NVMF_CONNECT_DATA_SUBNQN, d->subnqn, strnlen(d->subnqn, NVMF_NQN_FIELD - 1));
	memcpy(out + NVMF_CONNECT_DATA_HOSTNQN, d->hostnqn, strnlen(d->hostnqn, NVMF_NQN_FIELD - 1));
}

int nvmf_rdma_cm_req_parse(const uint8_t *data, size_t len, struct nvmf_rdma_cm_req *req)
{
	if (!data || len < 8)
		return -1;
	req->recfmt = get_le16(data);
	req->qid = get_le16(data + 2);
	req->hrqsize = get_le16(data + 4);
	req->hsqsize = get_le16(data + 6);
	return 0;
}

void nvmf_rdma_cm_req_build(const struct nvmf_rdma_cm_req *req, uint8_t out[NVMF_RDMA_CM_REQ_BYTES])
{
	memset(out, 0, NVMF_RDMA_CM_REQ_BYTES);
	put_le16(out, req->recfmt);
	put_le16(out + 2, req->qid);
	put_le16(out + 4, req->hrqsize);
	put_le16(out + 6, req->hsqsize);
}

void nvmf_rdma_cm_rep_build(uint16_t crqsize, uint8_t out[NVMF_RDMA_CM_REP_BYTES])
{
	memset(out, 0, NVMF_RDMA_CM_REP_BYTES);
	put_le16(out + 2, crqsize);     /* recfmt 0 */
}

void nvmf_rdma_cm_rej_build(uint16_t status, uint8_t out[NVMF_RDMA_CM_REJ_BYTES])
{
	put_le16(out, 0);
	put_le16(out + 2, status);
}

const char *nvme_status_str(uint16_t status)
{
	switch (NVME_SC_CODE(status)) {
	case NVME_SC_SUCCESS: return "success";
	case NVME_SC_INVALID_OPCODE: return "invalid opcode";
	case NVME_SC_INVALID_FIELD: return "invalid field";
	case NVME_SC_DATA_XFER_ERROR: return "data transfer error";
	case NVME_SC_INTERNAL: return "internal error";
	case NVME_SC_INVALID_NS: return "invalid namespace";
	case NVME_SC_CMD_SEQ_ERROR: return "command sequence error";
	case NVME_SC_SGL_INVALID_DATA: return "data SGL length invalid";
	case NVME_SC_SGL_INVALID_TYPE: return "SGL descriptor type invalid";
	case NVME_SC_SGL_INVALID_OFFSET: return "SGL offset invalid";
	case NVME_SC_LBA_RANGE: return "LBA out of range";
	case NVME_SC_ASYNC_LIMIT: return "asynchronous event request limit exceeded";
	case NVME_SC_CONNECT_FORMAT: return "connect: incompatible format";
	case NVME_SC_CONNECT_CTRL_BUSY: return "connect: controller busy";
	case NVME_SC_CONNECT_INVALID_PARAM: return "connect: invalid parameters";
	case NVME_SC_CONNECT_INVALID_HOST: return "connect: invalid host";
	default: return "other status";
	}
}
