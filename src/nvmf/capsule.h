/*
 * capsule.h — the NVMe and NVMe over Fabrics structures that travel over
 * the RDMA transport, as byte layouts with their parsers and builders:
 * the 64-byte submission queue entry (command capsule), the 16-byte
 * completion queue entry (response capsule), SGL data block descriptors
 * (keyed, for RDMA READ/WRITE by the target; unkeyed offset, for data in
 * the capsule), the Fabrics Connect command and its 1024 bytes of data,
 * Property Get/Set, and the RDMA CM private data of the NVMe/RDMA
 * transport binding (request, accept, reject).
 *
 * Everything is little-endian on the wire (NVMe Base 1.4 §1.5) and read
 * and written byte by byte here, so the parsers take any bytes a peer
 * sends.  Status values are kept as the 15-bit Status Field without the
 * phase bit: SC in bits 7:0, SCT in bits 10:8, More in bit 13, DNR in
 * bit 14 (NVMe Base 1.4 §4.6.1); the completion entry stores them one
 * bit up, above the phase tag.
 */
#ifndef SOFTRNIC_NVMF_CAPSULE_H
#define SOFTRNIC_NVMF_CAPSULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NVME_SQE_BYTES 64
#define NVME_CQE_BYTES 16
#define NVMF_NQN_FIELD 256              /* SUBNQN/HOSTNQN fields of the Connect data */
#define NVMF_CONNECT_DATA_BYTES 1024
#define NVMF_DISCOVERY_NQN "nqn.2014-08.org.nvmexpress.discovery"
#define NVMF_RDMA_PORT 4420

/* Admin command opcodes (NVMe Base 1.4 Figure 139). */
enum {
	NVME_ADMIN_GET_LOG_PAGE = 0x02,
	NVME_ADMIN_IDENTIFY = 0x06,
	NVME_ADMIN_ABORT = 0x08,
	NVME_ADMIN_SET_FEATURES = 0x09,
	NVME_ADMIN_GET_FEATURES = 0x0a,
	NVME_ADMIN_ASYNC_EVENT = 0x0c,
	NVME_ADMIN_KEEP_ALIVE = 0x18,
	NVME_FABRICS_COMMAND = 0x7f,    /* on any queue; the type in byte 4 */
};

/* NVM command set I/O opcodes (NVMe Base 1.4 Figure 346). */
enum {
	NVME_IO_FLUSH = 0x00,
	NVME_IO_WRITE = 0x01,
	NVME_IO_READ = 0x02,
	NVME_IO_WRITE_ZEROES = 0x08,
	NVME_IO_DSM = 0x09,
};

/* Fabrics command types (NVMe-oF 1.1 Figure 9). */
enum {
	NVMF_FCTYPE_PROPERTY_SET = 0x00,
	NVMF_FCTYPE_CONNECT = 0x01,
	NVMF_FCTYPE_PROPERTY_GET = 0x04,
};

/* Properties (NVMe-oF 1.1 Figure 16; the controller registers' offsets). */
enum {
	NVME_PROP_CAP = 0x00,
	NVME_PROP_VS = 0x08,
	NVME_PROP_CC = 0x14,
	NVME_PROP_CSTS = 0x1c,
};

/* Status Field values (SCT << 8 | SC), NVMe Base 1.4 Figures 127-129 and
 * NVMe-oF 1.1 Figure 13. */
enum {
	NVME_SC_SUCCESS = 0x000,
	NVME_SC_INVALID_OPCODE = 0x001,
	NVME_SC_INVALID_FIELD = 0x002,
	NVME_SC_DATA_XFER_ERROR = 0x004,
	NVME_SC_INTERNAL = 0x006,
	NVME_SC_INVALID_NS = 0x00b,
	NVME_SC_CMD_SEQ_ERROR = 0x00c,
	NVME_SC_SGL_INVALID_DATA = 0x00f,       /* Data SGL Length Invalid */
	NVME_SC_SGL_INVALID_TYPE = 0x011,       /* SGL Descriptor Type Invalid */
	NVME_SC_SGL_INVALID_OFFSET = 0x016,     /* SGL Offset Invalid */
	NVME_SC_LBA_RANGE = 0x080,              /* LBA Out of Range */
	NVME_SC_ASYNC_LIMIT = 0x105,            /* Asynchronous Event Request Limit Exceeded */
	NVME_SC_CONNECT_FORMAT = 0x180,         /* Incompatible Format */
	NVME_SC_CONNECT_CTRL_BUSY = 0x181,
	NVME_SC_CONNECT_INVALID_PARAM = 0x182,
	NVME_SC_CONNECT_INVALID_HOST = 0x184,
	NVME_SC_DNR = 0x4000,                   /* Do Not Retry */
};
#define NVME_SC_CODE(st) ((st) & 0x7ff)     /* SCT and SC, without More and DNR */

/* Command flags byte: PSDT (bits 7:6) 01b = SGLs for data, the only
 * kind a Fabrics transport carries (NVMe-oF 1.1 §2.1). */
#define NVME_CMD_PSDT_MASK 0xc0
#define NVME_CMD_PSDT_SGL 0x40

/* SGL descriptor identifier byte: type in bits 7:4, sub type in 3:0. */
enum {
	NVME_SGL_TYPE_DATA_BLOCK = 0x0,
	NVME_SGL_TYPE_KEYED_DATA_BLOCK = 0x4,
	NVME_SGL_SUBTYPE_ADDRESS = 0x0,
	NVME_SGL_SUBTYPE_OFFSET = 0x1,
	NVME_SGL_SUBTYPE_INVALIDATE = 0xf,      /* keyed: send the response with invalidate */
};

/* The data pointer of a command, as the transport reads it. */
enum nvmf_sgl_kind {
	NVMF_SGL_NONE,          /* length 0: no data */
	NVMF_SGL_KEYED,         /* host memory: addr, len, key (RDMA READ/WRITE) */
	NVMF_SGL_IN_CAPSULE,    /* data after the SQE, at offset addr */
};

struct nvmf_sgl {
	enum nvmf_sgl_kind kind;
	uint64_t addr;          /* keyed: remote address; in capsule: offset */
	uint32_t len;
	uint32_t key;
	bool invalidate;        /* keyed with sub type F: invalidate `key` */
};

/* A submission queue entry, decoded. */
struct nvme_cmd {
	uint8_t opcode;
	uint8_t flags;
	uint16_t cid;
	uint32_t nsid;
	uint8_t fctype;         /* Fabrics: byte 4 (overlaps nsid) */
	uint8_t sgl_raw[16];    /* DPTR as sent */
	uint32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
};

/* A completion queue entry, decoded. */
struct nvme_cpl {
	uint64_t result;        /* Dword 0 (low) and Dword 1 */
	uint16_t sq_head, sq_id, cid;
	uint16_t status;        /* Status Field, without the phase tag */
};

/* Connect command fields (NVMe-oF 1.1 Figure 19) and data (Figure 20). */
struct nvmf_connect {
	uint16_t recfmt, qid, sqsize;   /* sqsize: 0's based */
	uint8_t cattr;
	uint32_t kato_ms;
};

struct nvmf_connect_data {
	uint8_t hostid[16];
	uint16_t cntlid;
	char subnqn[NVMF_NQN_FIELD];    /* NUL-terminated after parsing */
	char hostnqn[NVMF_NQN_FIELD];
};
/* Offsets inside the Connect data and command, for the Invalid Parameter
 * response's IPO (NVMe-oF 1.1 Figure 21: IATTR bit 0 = in the data). */
#define NVMF_CONNECT_DATA_CNTLID 16
#define NVMF_CONNECT_DATA_SUBNQN 256
#define NVMF_CONNECT_DATA_HOSTNQN 512
#define NVMF_CONNECT_SQE_QID 42
#define NVMF_CONNECT_SQE_SQSIZE 44
#define NVMF_IPO_IATTR(in_data, offset) ((uint32_t)(in_data) << 16 | (uint32_t)(offset))

/* RDMA CM private data of the NVMe/RDMA binding (NVMe-oF 1.1 §7.3.2,
 * the kernel's include/linux/nvme-rdma.h). */
#define NVMF_RDMA_CM_REQ_BYTES 32
#define NVMF_RDMA_CM_REP_BYTES 32
#define NVMF_RDMA_CM_REJ_BYTES 4
#define NVMF_RDMA_MAX_QUEUE_SIZE 128
enum {
	NVMF_RDMA_CM_INVALID_LEN = 0x01,
	NVMF_RDMA_CM_INVALID_RECFMT = 0x02,
	NVMF_RDMA_CM_INVALID_QID = 0x03,
	NVMF_RDMA_CM_INVALID_HSQSIZE = 0x04,
	NVMF_RDMA_CM_INVALID_HRQSIZE = 0x05,
	NVMF_RDMA_CM_NO_RSC = 0x06,
};

struct nvmf_rdma_cm_req {
	uint16_t recfmt, qid;
	uint16_t hrqsize;       /* host receive queue size */
	uint16_t hsqsize;       /* host send queue size, 0's based */
};

/* Little-endian access. */
static inline uint16_t get_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t get_le32(const uint8_t *p) { return (uint32_t)get_le16(p) | (uint32_t)get_le16(p + 2) << 16; }
static inline uint64_t get_le64(const uint8_t *p) { return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32; }
static inline void put_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void put_le32(uint8_t *p, uint32_t v) { put_le16(p, (uint16_t)v); put_le16(p + 2, (uint16_t)(v >> 16)); }
static inline void put_le64(uint8_t *p, uint64_t v) { put_le32(p, (uint32_t)v); put_le32(p + 4, (uint32_t)(v >> 32)); }

/* Decode / encode a submission queue entry (exactly NVME_SQE_BYTES). */
void nvme_cmd_parse(const uint8_t sqe[NVME_SQE_BYTES], struct nvme_cmd *cmd);
void nvme_cmd_build(const struct nvme_cmd *cmd, uint8_t sqe[NVME_SQE_BYTES]);

/* Decode / encode a completion queue entry (phase tag written as 0). */
void nvme_cpl_parse(const uint8_t cqe[NVME_CQE_BYTES], struct nvme_cpl *cpl);
void nvme_cpl_build(const struct nvme_cpl *cpl, uint8_t cqe[NVME_CQE_BYTES]);

/* The command's data pointer: 0 and *sgl filled, or the status to answer
 * with (SGL Descriptor Type Invalid for a type or sub type the RDMA
 * binding does not carry, Invalid Field for PSDT other than SGL). */
uint16_t nvmf_sgl_parse(const struct nvme_cmd *cmd, struct nvmf_sgl *sgl);
/* The 16 bytes of a keyed data block descriptor / an in-capsule one. */
void nvmf_sgl_build_keyed(uint8_t out[16], uint64_t addr, uint32_t len, uint32_t key, bool invalidate);
void nvmf_sgl_build_in_capsule(uint8_t out[16], uint32_t offset, uint32_t len);

/* Connect: the command's fields, and its data (len bytes, at least
 * NVMF_CONNECT_DATA_BYTES).  The data parser returns 0, or the IPO
 * of the field at fault (an NQN not NUL-terminated in its 256 bytes, or
 * an empty one) in *bad_offset and -1. */
void nvmf_connect_parse(const struct nvme_cmd *cmd, struct nvmf_connect *c);
int nvmf_connect_data_parse(const uint8_t *data, size_t len, struct nvmf_connect_data *d, uint32_t *bad_offset);
void nvmf_connect_data_build(const struct nvmf_connect_data *d, uint8_t out[NVMF_CONNECT_DATA_BYTES]);

/* RDMA CM private data: the request (0, or -1 if shorter than its 8
 * meaningful bytes), the accept and the reject. */
int nvmf_rdma_cm_req_parse(const uint8_t *data, size_t len, struct nvmf_rdma_cm_req *req);
void nvmf_rdma_cm_req_build(const struct nvmf_rdma_cm_req *req, uint8_t out[NVMF_RDMA_CM_REQ_BYTES]);
void nvmf_rdma_cm_rep_build(uint16_t crqsize, uint8_t out[NVMF_RDMA_CM_REP_BYTES]);
void nvmf_rdma_cm_rej_build(uint16_t status, uint8_t out[NVMF_RDMA_CM_REJ_BYTES]);

/* A short name of a status, for messages ("invalid opcode"). */
const char *nvme_status_str(uint16_t status);

#endif
