/*
 * mad.h — the wire codec of InfiniBand management datagrams (MADs) for the
 * Communication Manager: the 24-byte common MAD header (IBTA Vol 1 13.4.2)
 * and the CM messages REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ and
 * SIDR_REP (IBTA Vol 1 chapter 12, 12.6 and 12.11), plus the RDMA-CM
 * conventions layered on them (the IP private-data header and the service
 * ID of librdmacm's port spaces).
 *
 * On RoCEv2 a CM MAD travels as a UD SEND ONLY to QP1 (BTH DestQP 1,
 * P_Key 0xFFFF, DETH Q_Key WIRE_GSI_QKEY, source QP 1), and the payload is
 * exactly one MAD of WIRE_MAD_LEN bytes.
 *
 * Pure functions, as the rest of wire/: no I/O, no allocation.  Decoders
 * validate and return a negative wire_err; encoders refuse exactly what the
 * decoders refuse, so whatever encodes decodes back to the same fields.
 * Reserved bits are written as 0 and ignored on decode.  Multi-byte fields
 * are host-order integers in the structs; GIDs and opaque blobs (private
 * data, ARI) are bytes as on the wire.
 *
 * Byte and bit positions are those of the Linux kernel's
 * include/rdma/ibta_vol1_c12.h (its CM_FIELD macros, "Table 106 REQ
 * Message Contents" and on, offsets counted after the MAD header) and
 * drivers/infiniband/core/cm_msgs.h; table numbers below follow the
 * kernel's header.
 */
#ifndef SOFTRNIC_WIRE_MAD_H
#define SOFTRNIC_WIRE_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

#define WIRE_MAD_LEN 256u               /* every MAD on QP1 (IBTA 13.4) */
#define WIRE_MAD_HDR_LEN 24u            /* common MAD header (13.4.2)    */
#define WIRE_GSI_QPN 1u                 /* QP1, the General Services Interface */
#define WIRE_GSI_QKEY 0x80010000u       /* the well-known Q_Key of QP1 */
#define WIRE_GSI_PKEY 0xffffu           /* default P_Key, as rxe sends CM MADs */

#define WIRE_MAD_BASE_VERSION 1u
#define WIRE_MAD_CLASS_CM 0x07u         /* Communication Management */
#define WIRE_CM_CLASS_VERSION 2u        /* the kernel's IB_CM_CLASS_VERSION  */

/* Method byte (13.4.2): bit 7 is the R (response) bit. */
enum wire_mad_method {
	WIRE_MAD_METHOD_GET = 0x01,
	WIRE_MAD_METHOD_SET = 0x02,
	WIRE_MAD_METHOD_SEND = 0x03,    /* every CM message */
	WIRE_MAD_METHOD_GET_RESP = 0x81,
};

/* CM attribute IDs (IBTA 12.6; the kernel's CM_*_ATTR_ID). */
enum wire_cm_attr {
	WIRE_CM_ATTR_CLASS_PORT_INFO = 0x0001,
	WIRE_CM_ATTR_REQ = 0x0010,
	WIRE_CM_ATTR_MRA = 0x0011,
	WIRE_CM_ATTR_REJ = 0x0012,
	WIRE_CM_ATTR_REP = 0x0013,
	WIRE_CM_ATTR_RTU = 0x0014,
	WIRE_CM_ATTR_DREQ = 0x0015,
	WIRE_CM_ATTR_DREP = 0x0016,
	WIRE_CM_ATTR_SIDR_REQ = 0x0017,
	WIRE_CM_ATTR_SIDR_REP = 0x0018,
	WIRE_CM_ATTR_LAP = 0x0019,
	WIRE_CM_ATTR_APR = 0x001a,
};

/* Private data and blob sizes of each message (bytes). */
#define WIRE_CM_REQ_PRIVATE_DATA 92u
#define WIRE_CM_MRA_PRIVATE_DATA 222u
#define WIRE_CM_REJ_PRIVATE_DATA 148u
#define WIRE_CM_REP_PRIVATE_DATA 196u
#define WIRE_CM_RTU_PRIVATE_DATA 224u
#define WIRE_CM_DREQ_PRIVATE_DATA 220u
#define WIRE_CM_DREP_PRIVATE_DATA 224u
#define WIRE_CM_SIDR_REQ_PRIVATE_DATA 216u
#define WIRE_CM_SIDR_REP_PRIVATE_DATA 136u
#define WIRE_CM_REJ_ARI_LEN 72u
#define WIRE_CM_SIDR_REP_INFO_LEN 72u

/* ---- the common MAD header (IBTA 13.4.2) ------------------------------ */

struct wire_mad_hdr {
	uint8_t base_version;   /* 1 */
	uint8_t mgmt_class;     /* 0x07 for CM */
	uint8_t class_version;  /* 2 for CM */
	uint8_t method;         /* whole byte, R bit included */
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;           /* transaction ID */
	uint16_t attr_id;
	/* bytes 18..19 reserved */
	uint32_t attr_mod;
};

/* Decodes the header of any MAD (any class).  Checks only what every MAD
 * shares: at least WIRE_MAD_LEN bytes (else WIRE_E_TRUNCATED) and base
 * version 1 (else WIRE_E_MAD_VERSION).  Bytes after the MAD are ignored. */
int wire_mad_decode_hdr(const uint8_t *mad, size_t len, struct wire_mad_hdr *out);

/* A CM header: base version 1, class CM, class version 2, method Send. */
static inline struct wire_mad_hdr wire_cm_hdr(uint16_t attr_id, uint64_t tid)
{
	struct wire_mad_hdr h = {
		.base_version = WIRE_MAD_BASE_VERSION, .mgmt_class = WIRE_MAD_CLASS_CM,
		.class_version = WIRE_CM_CLASS_VERSION, .method = WIRE_MAD_METHOD_SEND,
		.tid = tid, .attr_id = attr_id,
	};
	return h;
}

/* ---- CM messages --------------------------------------------------------- */

/* One path of a REQ (primary or alternate; table 106). */
struct wire_cm_path {
	uint16_t local_lid;             /* 0xffff on RoCE (the kernel's choice) */
	uint16_t remote_lid;
	uint8_t local_gid[16];
	uint8_t remote_gid[16];
	uint32_t flow_label;            /* 20 bits */
	uint8_t packet_rate;            /* 6 bits (0 as rxe sends it) */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;                     /* 4 bits */
	bool subnet_local;
	uint8_t local_ack_timeout;      /* 5 bits */
};

/* REQ (table 106).  Note, from the kernel (cm.c ib_send_cm_req sets the
 * active side's rq_psn from it) and rc_rdmacm_connect.pcap: starting_psn is
 * the first PSN the *passive* side sends, and the REP's is the first PSN
 * the active side sends. */
struct wire_cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;                     /* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;                    /* 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn;                   /* 24 bits */
	uint8_t remote_cm_response_timeout;     /* 5 bits: wire_cm_timeout_ns */
	uint8_t transport_service_type;         /* 2 bits: 0 RC, 1 UC, 2 RD, 3 see
	                                           extended_transport_type */
	bool end_to_end_flow_control;
	uint32_t starting_psn;                  /* 24 bits */
	uint8_t local_cm_response_timeout;      /* 5 bits */
	uint8_t retry_count;                    /* 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;                       /* 4 bits, MTU code 1..5 (enum ibv_mtu) */
	bool rdc_exists;
	uint8_t rnr_retry_count;                /* 3 bits */
	uint8_t max_cm_retries;                 /* 4 bits */
	bool srq;
	uint8_t extended_transport_type;        /* 3 bits: 1 XRC (with TST 3) */
	struct wire_cm_path primary;
	struct wire_cm_path alternate;          /* all zero: no alternate path */
	bool sap_supported;                     /* byte 139 bit 5 (kernel
	                                           CM_REQ_SAP_SUPPORTED)       */
	uint8_t private_data[WIRE_CM_REQ_PRIVATE_DATA];
};

/* Which message an MRA or REJ answers (2 bits; 3 is reserved). */
enum wire_cm_msg_response {
	WIRE_CM_MSG_REQ = 0,
	WIRE_CM_MSG_REP = 1,
	WIRE_CM_MSG_OTHER = 2,          /* REJ: other; MRA: LAP */
};

struct wire_cm_mra {                    /* table 107 */
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_mraed;          /* enum wire_cm_msg_response */
	uint8_t service_timeout;        /* 5 bits */
	uint8_t private_data[WIRE_CM_MRA_PRIVATE_DATA];
};

struct wire_cm_rej {                    /* table 108 */
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_rejected;       /* enum wire_cm_msg_response */
	uint8_t reject_info_length;     /* 7 bits, bytes of ari used: <= 72 */
	uint16_t reason;                /* wire_cm_rej_reason_name */
	uint8_t ari[WIRE_CM_REJ_ARI_LEN];
	uint8_t private_data[WIRE_CM_REJ_PRIVATE_DATA];
};

struct wire_cm_rep {                    /* table 110 */
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;             /* 24 bits */
	uint32_t local_eecn;            /* local EE context number, 24 bits */
	uint32_t starting_psn;          /* 24 bits */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;       /* 5 bits */
	uint8_t failover_accepted;      /* 2 bits */
	bool end_to_end_flow_control;
	uint8_t rnr_retry_count;        /* 3 bits */
	bool srq;
	uint64_t local_ca_guid;
	uint8_t private_data[WIRE_CM_REP_PRIVATE_DATA];
};

struct wire_cm_rtu {                    /* table 111 */
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[WIRE_CM_RTU_PRIVATE_DATA];
};

struct wire_cm_dreq {                   /* table 112 */
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn_eecn;       /* 24 bits */
	uint8_t private_data[WIRE_CM_DREQ_PRIVATE_DATA];
};

struct wire_cm_drep {                   /* table 113 */
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[WIRE_CM_DREP_PRIVATE_DATA];
};

struct wire_cm_sidr_req {               /* table 119 */
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[WIRE_CM_SIDR_REQ_PRIVATE_DATA];
};

struct wire_cm_sidr_rep {               /* table 120 */
	uint32_t request_id;
	uint8_t status;                 /* 0 valid, 1 SID not supported, 2 rejected,
	                                   3 no QP, 4 redirect, 5 class version */
	uint8_t additional_info_length; /* bytes of class_port_info used: <= 72 */
	uint32_t qpn;                   /* 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t class_port_info[WIRE_CM_SIDR_REP_INFO_LEN]; /* "additional
	                                   information" (the ClassPortInfo of a
	                                   redirect) */
	uint8_t private_data[WIRE_CM_SIDR_REP_PRIVATE_DATA];
};

/* A decoded CM MAD: hdr.attr_id says which member of the union is valid. */
struct wire_cm_msg {
	struct wire_mad_hdr hdr;
	union {
		struct wire_cm_req req;
		struct wire_cm_mra mra;
		struct wire_cm_rej rej;
		struct wire_cm_rep rep;
		struct wire_cm_rtu rtu;
		struct wire_cm_dreq dreq;
		struct wire_cm_drep drep;
		struct wire_cm_sidr_req sidr_req;
		struct wire_cm_sidr_rep sidr_rep;
	};
};

/* Decodes a CM MAD.  Errors, in the order checked:
 *   WIRE_E_TRUNCATED    fewer than WIRE_MAD_LEN bytes (bytes after the
 *                       MAD are ignored);
 *   WIRE_E_MAD_VERSION  base version not 1;
 *   WIRE_E_MAD_CLASS    management class not CM;
 *   WIRE_E_MAD_VERSION  class version not 2;
 *   WIRE_E_MAD_ATTR     attribute ID not one of the nine messages above
 *                       (ClassPortInfo, LAP and APR are known but not
 *                       decoded: softrnic, like the kernel on RoCE, has no
 *                       alternate paths);
 *   WIRE_E_FIELD        method not Send; REQ path MTU outside 1..5,
 *                       transport service type 3 without extended
 *                       transport type 1 (XRC); MRA/REJ message code 3;
 *   WIRE_E_LENGTH       REJ reject info length or SIDR_REP additional
 *                       info length over 72.
 * Values the spec defines as codes but the receiver must judge (REJ
 * reasons, SIDR statuses, packet rates) are accepted as they are. */
int wire_cm_decode(const uint8_t *mad, size_t len, struct wire_cm_msg *out);

/* Encodes `msg` as one 256-byte MAD (reserved bits 0).  Returns
 * WIRE_MAD_LEN, or WIRE_E_NOSPACE if cap < WIRE_MAD_LEN, or what
 * wire_cm_decode would say of the result, plus WIRE_E_FIELD for a value
 * wider than its field (e.g. a QPN over 24 bits). */
int wire_cm_encode(const struct wire_cm_msg *msg, uint8_t *out, size_t cap);

/* "REQ", "SIDR_REP", "ClassPortInfo", ...; NULL for an unknown ID. */
const char *wire_cm_attr_name(uint16_t attr_id);

/* REJ reasons (IBTA 12.6.7.2; the kernel's enum ib_cm_rej_reason). */
enum wire_cm_rej_reason {
	WIRE_CM_REJ_NO_QP = 1,
	WIRE_CM_REJ_NO_EEC = 2,
	WIRE_CM_REJ_NO_RESOURCES = 3,
	WIRE_CM_REJ_TIMEOUT = 4,
	WIRE_CM_REJ_UNSUPPORTED = 5,
	WIRE_CM_REJ_INVALID_COMM_ID = 6,
	WIRE_CM_REJ_INVALID_COMM_INSTANCE = 7,
	WIRE_CM_REJ_INVALID_SERVICE_ID = 8,
	WIRE_CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	WIRE_CM_REJ_STALE_CONN = 10,
	WIRE_CM_REJ_RDC_NOT_EXIST = 11,
	WIRE_CM_REJ_INVALID_GID = 12,
	WIRE_CM_REJ_INVALID_LID = 13,
	WIRE_CM_REJ_INVALID_SL = 14,
	WIRE_CM_REJ_INVALID_TRAFFIC_CLASS = 15,
	WIRE_CM_REJ_INVALID_HOP_LIMIT = 16,
	WIRE_CM_REJ_INVALID_PACKET_RATE = 17,
	WIRE_CM_REJ_INVALID_ALT_GID = 18,
	WIRE_CM_REJ_INVALID_ALT_LID = 19,
	WIRE_CM_REJ_INVALID_ALT_SL = 20,
	WIRE_CM_REJ_INVALID_ALT_TRAFFIC_CLASS = 21,
	WIRE_CM_REJ_INVALID_ALT_HOP_LIMIT = 22,
	WIRE_CM_REJ_INVALID_ALT_PACKET_RATE = 23,
	WIRE_CM_REJ_PORT_CM_REDIRECT = 24,
	WIRE_CM_REJ_PORT_REDIRECT = 25,
	WIRE_CM_REJ_INVALID_MTU = 26,
	WIRE_CM_REJ_INSUFFICIENT_RESP_RESOURCES = 27,
	WIRE_CM_REJ_CONSUMER_DEFINED = 28,
	WIRE_CM_REJ_INVALID_RNR_RETRY = 29,
	WIRE_CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	WIRE_CM_REJ_INVALID_CLASS_VERSION = 31,
	WIRE_CM_REJ_INVALID_FLOW_LABEL = 32,
	WIRE_CM_REJ_INVALID_ALT_FLOW_LABEL = 33,
	WIRE_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,
};
/* "no-QP", "invalid-service-ID", "consumer-defined", ...; NULL for a
 * reserved code. */
const char *wire_cm_rej_reason_name(uint16_t reason);

/* A CM timeout code t (5 bits: response timeouts, service timeout, ACK
 * timeouts) is 4.096 us * 2^t; this returns it in nanoseconds (t is masked
 * to 5 bits). */
static inline uint64_t wire_cm_timeout_ns(uint8_t t)
{
	return 4096ull << (t & 31);
}

/* IBTA path MTU code (1 = 256 .. 5 = 4096) in bytes; 0 for other codes. */
static inline unsigned wire_ib_mtu_bytes(uint8_t code)
{
	return code >= 1 && code <= 5 ? 128u << code : 0;
}

/* ---- RDMA-CM conventions (librdmacm / the kernel's cma.c) -------------- */

/* Port spaces (rdma-core <rdma/rdma_cma.h> enum rdma_port_space). */
enum wire_rdma_ps {
	WIRE_RDMA_PS_IPOIB = 0x0002,
	WIRE_RDMA_PS_TCP = 0x0106,
	WIRE_RDMA_PS_UDP = 0x0111,
	WIRE_RDMA_PS_IB = 0x013f,
};

/* The service ID of an RDMA-CM port: ps << 16 | port (the kernel's
 * cma_get_service_id), e.g. TCP port 18515 -> 0x0000000001064853. */
static inline uint64_t wire_rdma_cm_service_id(uint16_t ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}
/* True if sid is the service ID of a port in one of the four port spaces;
 * then *ps and *port (either may be NULL) are set. */
bool wire_rdma_cm_service_id_parse(uint64_t sid, uint16_t *ps, uint16_t *port);

/* The first 36 bytes of a REQ's (and SIDR_REQ's) private data when RDMA-CM
 * connects over IP (struct cma_hdr in the kernel's cma.c); the
 * consumer's own private data follows it. */
#define WIRE_CMA_HDR_LEN 36u
#define WIRE_CMA_VERSION 0x00u
struct wire_cma_hdr {
	uint8_t cma_version;            /* 0 */
	uint8_t ip_version;             /* 4 or 6: the high nibble of byte 1 */
	uint16_t src_port;              /* the active side's port; the
	                                   destination port is in the service ID */
	uint8_t src_addr[16];           /* IPv6, or IPv4 in the last 4 bytes */
	uint8_t dst_addr[16];           /*   (the first 12 then zero)        */
};
/* Decodes the header at the start of `pd`: WIRE_E_TRUNCATED if len < 36,
 * WIRE_E_FIELD if cma_version is not 0 or ip_version not 4 or 6. */
int wire_cma_hdr_decode(const uint8_t *pd, size_t len, struct wire_cma_hdr *out);
/* Writes the 36 bytes; same checks.  Returns WIRE_CMA_HDR_LEN or error. */
int wire_cma_hdr_encode(const struct wire_cma_hdr *h, uint8_t *out, size_t cap);

#endif
