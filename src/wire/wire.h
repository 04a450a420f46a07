/*
 * wire.h — the RoCEv2 wire codec: what every other layer of softrnic knows
 * about bytes on the wire.
 *
 * Pure functions only: no I/O, no allocation, no global state besides the
 * constant opcode table.  Decoders validate everything they read and return
 * a distinct negative wire_err for each way a packet can be malformed;
 * encoders write into a caller-supplied buffer.
 *
 * Three levels of framing are handled:
 *   - the InfiniBand transport packet (BTH .. payload .. pad .. ICRC), which is
 *     the UDP payload of RoCEv2 (wire_decode_ib / wire_encode_ib);
 *   - the IP packet (IPv4 or IPv6 + UDP + IB transport packet)
 *     (wire_decode_ip / wire_encode_ip);
 *   - the Ethernet frame, as found in pcap files (wire_decode_eth /
 *     wire_encode_eth).
 *
 * Spec references are to the InfiniBand Architecture Specification Vol. 1,
 * Release 1.4 ("IBTA") and its RoCEv2 annex A17.
 */
#ifndef SOFTRNIC_WIRE_H
#define SOFTRNIC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_ROCEV2_UDP_PORT 4791u
#define WIRE_BTH_LEN 12u
#define WIRE_RETH_LEN 16u
#define WIRE_AETH_LEN 4u
#define WIRE_ATMETH_LEN 28u
#define WIRE_ATMACK_LEN 8u
#define WIRE_IMMDT_LEN 4u
#define WIRE_IETH_LEN 4u
#define WIRE_FETH_LEN 4u
#define WIRE_DETH_LEN 8u
#define WIRE_ICRC_LEN 4u
#define WIRE_CNP_PAYLOAD_LEN 16u
#define WIRE_IPV4_LEN 20u
#define WIRE_IPV6_LEN 40u
#define WIRE_UDP_LEN 8u
#define WIRE_ETH_LEN 14u
#define WIRE_PSN_MASK 0xffffffu
#define WIRE_QPN_MASK 0xffffffu
/* Largest IB transport packet we build or accept: 4096-byte MTU + headers. */
#define WIRE_MAX_IB_PACKET (4096u + 128u)

/* ---- errors ---------------------------------------------------------- */

/* Each malformation has its own code so tests and counters can tell them
 * apart.  All are negative; 0 is success. */
enum wire_err {
	WIRE_OK = 0,
	WIRE_E_TRUNCATED = -1,      /* buffer ends before a header does        */
	WIRE_E_TVER = -2,           /* BTH transport version is not 0          */
	WIRE_E_OPCODE = -3,         /* opcode not defined for RoCEv2           */
	WIRE_E_PAD = -4,            /* pad count inconsistent with the packet  */
	WIRE_E_ICRC = -5,           /* ICRC does not match                     */
	WIRE_E_LENGTH = -6,         /* a length field disagrees with the data  */
	WIRE_E_PAYLOAD = -7,        /* payload present where opcode forbids it,
	                               or absent/oversized where it needs one  */
	WIRE_E_IP_VERSION = -8,     /* not IPv4 or IPv6                        */
	WIRE_E_IP_HEADER = -9,      /* IPv4 IHL/options/fragment, bad checksum */
	WIRE_E_NOT_UDP = -10,       /* IP protocol / next header is not UDP    */
	WIRE_E_NOT_ROCE = -11,      /* UDP destination port is not 4791        */
	WIRE_E_UDP_LENGTH = -12,    /* UDP length disagrees with IP length     */
	WIRE_E_ETHERTYPE = -13,     /* Ethernet type is not IPv4/IPv6          */
	WIRE_E_FIELD = -14,         /* a field has a value the spec forbids    */
	WIRE_E_NOSPACE = -15,       /* encoder: output buffer too small        */
	WIRE_E_UDP_CSUM = -16,      /* UDP checksum non-zero and wrong         */
	WIRE_E_HEADERS = -17,       /* packet (whose length is known to be
	                               complete) is shorter than the extended
	                               headers its opcode requires             */
	WIRE_E_MAD_VERSION = -18,   /* MAD base or class version unsupported   */
	WIRE_E_MAD_CLASS = -19,     /* MAD management class is not CM          */
	WIRE_E_MAD_ATTR = -20,      /* MAD attribute ID not a CM message we
	                               decode (mad.h)                          */
};
#define WIRE_E_COUNT 21             /* number of codes, WIRE_OK included */
const char *wire_strerror(int err);
/* Symbolic name of an error code ("WIRE_E_PAD"), for logs and tools. */
const char *wire_err_name(int err);

/* ---- opcodes and the opcode table ----------------------------------- */

/* BTH opcode = 3-bit transport prefix (IBTA 9.2.1 table 36) | 5-bit op. */
enum wire_transport {
	WIRE_TR_RC = 0x00,
	WIRE_TR_UC = 0x20,
	WIRE_TR_RD = 0x40,
	WIRE_TR_UD = 0x60,
	WIRE_TR_CNP = 0x80,
	WIRE_TR_XRC = 0xa0,
};

enum wire_opcode {
	WIRE_OP_SEND_FIRST = 0x00,
	WIRE_OP_SEND_MIDDLE = 0x01,
	WIRE_OP_SEND_LAST = 0x02,
	WIRE_OP_SEND_LAST_IMM = 0x03,
	WIRE_OP_SEND_ONLY = 0x04,
	WIRE_OP_SEND_ONLY_IMM = 0x05,
	WIRE_OP_WRITE_FIRST = 0x06,
	WIRE_OP_WRITE_MIDDLE = 0x07,
	WIRE_OP_WRITE_LAST = 0x08,
	WIRE_OP_WRITE_LAST_IMM = 0x09,
	WIRE_OP_WRITE_ONLY = 0x0a,
	WIRE_OP_WRITE_ONLY_IMM = 0x0b,
	WIRE_OP_READ_REQUEST = 0x0c,
	WIRE_OP_READ_RESP_FIRST = 0x0d,
	WIRE_OP_READ_RESP_MIDDLE = 0x0e,
	WIRE_OP_READ_RESP_LAST = 0x0f,
	WIRE_OP_READ_RESP_ONLY = 0x10,
	WIRE_OP_ACK = 0x11,
	WIRE_OP_ATOMIC_ACK = 0x12,
	WIRE_OP_CMP_SWAP = 0x13,
	WIRE_OP_FETCH_ADD = 0x14,
	/* 0x15 reserved */
	WIRE_OP_SEND_LAST_INV = 0x16,
	WIRE_OP_SEND_ONLY_INV = 0x17,
	/* 0x18..0x1b reserved */
	WIRE_OP_FLUSH = 0x1c,               /* RC only (IBTA 1.5) */
	WIRE_OP_ATOMIC_WRITE = 0x1d,        /* RC only (IBTA 1.5 errata) */
};
/* Full 8-bit opcodes are formed as transport | op, e.g.
 * WIRE_TR_UD | WIRE_OP_SEND_ONLY == 0x64.  The CNP is 0x81. */
#define WIRE_OPCODE_CNP 0x81u

/* Which headers follow the BTH (bit set = present), in wire order:
 * RDETH(RD only), DETH, FETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt,
 * IETH. */
enum wire_hdr_bit {
	WIRE_HDR_DETH = 1u << 0,
	WIRE_HDR_RETH = 1u << 1,
	WIRE_HDR_ATMETH = 1u << 2,
	WIRE_HDR_AETH = 1u << 3,
	WIRE_HDR_ATMACK = 1u << 4,
	WIRE_HDR_IMMDT = 1u << 5,
	WIRE_HDR_IETH = 1u << 6,
	WIRE_HDR_RDETH = 1u << 7,
	WIRE_HDR_FETH = 1u << 8,        /* FLUSH only, between BTH and RETH */
};

/* Properties of one opcode. */
enum wire_op_flag {
	WIRE_F_FIRST = 1u << 0,     /* first packet of a multi-packet message */
	WIRE_F_MIDDLE = 1u << 1,
	WIRE_F_LAST = 1u << 2,
	WIRE_F_ONLY = 1u << 3,      /* single-packet message                  */
	WIRE_F_PAYLOAD = 1u << 4,   /* carries payload (may be 0 bytes for ONLY/LAST) */
	WIRE_F_REQUEST = 1u << 5,   /* sent by a requester                    */
	WIRE_F_RESPONSE = 1u << 6,  /* sent by a responder (ACK/read resp)    */
	WIRE_F_SEND = 1u << 7,      /* SEND: payload lands in a receive WQE (RDMA
	                               WRITE with immediate also consumes one:
	                               F_WRITE + F_IMM, LAST/ONLY)            */
	WIRE_F_WRITE = 1u << 8,
	WIRE_F_READ = 1u << 9,
	WIRE_F_ATOMIC = 1u << 10,
	WIRE_F_IMM = 1u << 11,      /* completes with immediate data          */
	WIRE_F_INV = 1u << 12,      /* carries an rkey to invalidate          */
	WIRE_F_CNP = 1u << 13,
	WIRE_F_FLUSH = 1u << 14,    /* FLUSH: answered like a zero-length READ */
};

/* QP types allowed to use an opcode (bit set = allowed). */
enum wire_qp_bit {
	WIRE_QP_RC = 1u << 0,
	WIRE_QP_UC = 1u << 1,
	WIRE_QP_RD = 1u << 2,
	WIRE_QP_UD = 1u << 3,
	WIRE_QP_XRC = 1u << 4,
	WIRE_QP_CNP = 1u << 5,
};

struct wire_opcode_info {
	const char *name;       /* e.g. "RC_SEND_FIRST"; NULL for undefined */
	uint16_t flags;         /* enum wire_op_flag                         */
	uint16_t headers;       /* enum wire_hdr_bit                         */
	uint8_t qp_types;       /* enum wire_qp_bit                          */
	uint8_t hdr_len;        /* BTH + all extended headers, bytes         */
};

/* The one opcode table.  Returns NULL for an opcode softrnic does not
 * define (reserved, RD and XRC opcodes are defined in the table for decoding
 * but softrnic never sends them). */
const struct wire_opcode_info *wire_opcode_info(uint8_t opcode);

/* ---- headers ---------------------------------------------------------- */

struct wire_bth {               /* IBTA 9.2 */
	uint8_t opcode;
	bool se;                /* solicited event */
	bool migreq;
	uint8_t pad;            /* 0..3 */
	uint8_t tver;           /* 0 */
	uint16_t pkey;
	bool fecn;              /* RoCEv2 reuses the 8 reserved bits: bit 7 = FECN, */
	bool becn;              /* bit 6 = BECN (A17.4.1)                          */
	/* softrnic's extension, bit 5 of that byte (still reserved by the
	 * spec, ignored by other RNICs, masked out of the ICRC like FECN):
	 * on a request, "my requester does selective repeat"; on a NAK,
	 * "this NAK is selective" (rnic/selective.c, docs/architecture.md). */
	bool selective;
	/* softrnic's extension, bit 4 of the same byte: on a request, "this
	 * message is one packet of up to 1 GiB" (the host-local message
	 * path, rnic.h rnic_qp_set_message_path): the responder checks its
	 * length, and answers a READ, by that rule. */
	bool msg;
	uint32_t dqpn;          /* 24 bits */
	bool ackreq;
	uint32_t psn;           /* 24 bits */
};

struct wire_reth {              /* IBTA 9.3.3 */
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
};

/* AETH syndrome (IBTA 9.3.5, table 43): bits 7..5 kind, 4..0 value. */
enum wire_aeth_kind {
	WIRE_AETH_ACK = 0,      /* value = credit count (0x1f = invalid) */
	WIRE_AETH_RNR_NAK = 1,  /* value = RNR timer code (table 45)    */
	WIRE_AETH_NAK = 3,      /* value = enum wire_nak_code          */
};
enum wire_nak_code {
	WIRE_NAK_PSN_SEQ_ERR = 0,
	WIRE_NAK_INVALID_REQ = 1,
	WIRE_NAK_REM_ACCESS_ERR = 2,
	WIRE_NAK_REM_OP_ERR = 3,
	WIRE_NAK_INVALID_RD_REQ = 4,
};
#define WIRE_AETH_CREDIT_INVALID 0x1fu

struct wire_aeth {
	uint8_t syndrome;       /* raw 8-bit syndrome */
	uint32_t msn;           /* 24 bits */
};
static inline uint8_t wire_aeth_kind(const struct wire_aeth *a) { return (uint8_t)(a->syndrome >> 5); }
static inline uint8_t wire_aeth_value(const struct wire_aeth *a) { return (uint8_t)(a->syndrome & 0x1f); }
static inline uint8_t wire_aeth_syndrome(unsigned kind, unsigned value) { return (uint8_t)((kind << 5) | (value & 0x1f)); }

/* RNR NAK timer field (IBTA 9.7.5.2.8, table 45): code 0..31 to the minimum
 * time the requester must wait, in microseconds (code 0 = 655.36 ms). */
uint32_t wire_rnr_timer_us(uint8_t code);

struct wire_atmeth {            /* IBTA 9.3.4 */
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
};

/* FLUSH Extended Transport Header (IBTA 1.5, as rxe reads it): the
 * placement type in bits 3..0, the selectivity level in bits 5..4, the
 * rest reserved. */
struct wire_feth {
	uint8_t placement;      /* WIRE_FLUSH_GLOBAL | WIRE_FLUSH_PERSISTENT */
	uint8_t selectivity;    /* WIRE_FLUSH_RANGE or WIRE_FLUSH_MR          */
};
enum {
	WIRE_FLUSH_GLOBAL = 1u << 0,        /* global visibility */
	WIRE_FLUSH_PERSISTENT = 1u << 1,    /* persistence       */
	WIRE_FLUSH_RANGE = 0,               /* the RETH's va and length */
	WIRE_FLUSH_MR = 1,                  /* the whole region of the rkey */
};

struct wire_deth {              /* IBTA 9.3.2 */
	uint32_t qkey;
	uint32_t sqpn;          /* 24 bits */
};

/* A decoded (or to-be-encoded) IB transport packet.  Multi-byte fields are
 * in host order, except `imm` which stays in network order as verbs hands
 * it around (ibv_wc.imm_data / ibv_send_wr.imm_data are __be32). */
struct wire_ib {
	struct wire_bth bth;
	uint16_t headers;       /* enum wire_hdr_bit, from the opcode table */
	struct wire_feth feth;
	struct wire_reth reth;
	struct wire_aeth aeth;
	struct wire_atmeth atmeth;
	uint64_t atmack;        /* AtomicAckETH original remote data */
	uint32_t imm;           /* ImmDt, network byte order */
	uint32_t ieth;          /* IETH rkey to invalidate, host order */
	struct wire_deth deth;
	const uint8_t *payload; /* decode: points into the input buffer */
	uint32_t payload_len;   /* bytes of payload, excluding pad      */
	uint32_t icrc;          /* decode: the ICRC as carried on the wire */
	uint32_t rdeth_eec;     /* RDETH EE-context (RD opcodes only), 24 bits */
};

/* Decode the UDP payload of a RoCEv2 packet: BTH, extended headers,
 * payload, pad and ICRC.  Validates opcode, TVer, header presence against
 * the opcode table, pad count (payload+pad must be a multiple of 4; pad only
 * where payload is allowed), payload presence, CNP layout.  Does NOT check
 * the ICRC (that needs the IP header: see wire_icrc_*).
 * `len` is taken as the whole UDP payload: under 16 bytes is
 * WIRE_E_TRUNCATED, shorter than the opcode's headers + ICRC is
 * WIRE_E_HEADERS.  Reserved bits are ignored (and re-encode as 0). */
int wire_decode_ib(const uint8_t *buf, size_t len, struct wire_ib *out);

/* Encode `ib` into buf (BTH .. payload .. pad .. 4 zero bytes of ICRC).
 * bth.pad is computed from payload_len; `headers` is taken from the opcode
 * table (the caller's value is ignored).  payload may be NULL when
 * payload_len is 0; if payload is NULL and payload_len > 0 the payload bytes
 * are left for the caller to fill at wire_payload_offset().  Returns the
 * number of bytes written (including ICRC) or a negative wire_err. */
int wire_encode_ib(const struct wire_ib *ib, uint8_t *buf, size_t cap);

/* Offset of the payload within an encoded packet of this opcode. */
int wire_payload_offset(uint8_t opcode);

/* ---- IP + UDP --------------------------------------------------------- */

/* The IP ECN field (RFC 3168 §5). */
enum wire_ecn {
	WIRE_ECN_NOT_ECT = 0,
	WIRE_ECN_ECT1 = 1,
	WIRE_ECN_ECT0 = 2,
	WIRE_ECN_CE = 3,
};

struct wire_ip {
	uint8_t version;        /* 4 or 6 */
	uint8_t dscp;           /* 6 bits */
	uint8_t ecn;            /* 2 bits: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE */
	uint8_t ttl;            /* IPv4 TTL / IPv6 hop limit */
	uint16_t id;            /* IPv4 identification */
	bool df;                /* IPv4 don't-fragment */
	uint32_t flow_label;    /* IPv6, 20 bits */
	/* Addresses as IPv6; IPv4 addresses are IPv4-mapped (::ffff:a.b.c.d),
	 * which is also how a RoCEv2 GID names an IPv4 endpoint. */
	uint8_t src[16];
	uint8_t dst[16];
};

struct wire_udp {
	uint16_t sport;
	uint16_t dport;
	uint16_t len;
	uint16_t csum;
};

struct wire_pkt {
	struct wire_ip ip;
	struct wire_udp udp;
	struct wire_ib ib;
	const uint8_t *ip_start; /* decode: start of the IP header */
	size_t ip_len;           /* decode: IP total length */
};

/* Decode an IPv4/IPv6 + UDP + RoCEv2 packet starting at the IP header.
 * Checks the IPv4 header checksum, lengths, protocol, port 4791; a non-zero
 * UDP checksum is verified.  If verify_icrc, the ICRC is checked too
 * (WIRE_E_ICRC on mismatch).  On WIRE_E_UDP_CSUM, out->ip, out->udp,
 * ip_start and ip_len are already set (for wire_udp_csum_state). */
int wire_decode_ip(const uint8_t *buf, size_t len, bool verify_icrc, struct wire_pkt *out);

/* What the UDP checksum of a packet says, for tools reading captures.  A
 * capture taken on a host that sends with checksum offload shows the field
 * as Linux leaves it for the NIC (CHECKSUM_PARTIAL): the folded ones'
 * complement sum of the pseudo-header only, not inverted (udp_set_csum:
 * ~udp_v4_check(len, saddr, daddr, 0)); the inverted form is accepted as
 * well.  Such a packet is not corrupt, but wire_decode_ip refuses it
 * (WIRE_E_UDP_CSUM), as a receiver must. */
enum wire_udp_csum_state {
	WIRE_UDP_CSUM_NONE = 0,     /* 0: not computed (what rxe sends)        */
	WIRE_UDP_CSUM_OK = 1,
	WIRE_UDP_CSUM_PARTIAL = 2,  /* pseudo-header sum only (offload)        */
	WIRE_UDP_CSUM_BAD = 3,
};
/* Classifies the UDP checksum of `pkt`, which needs ip, ip_start and ip_len
 * as wire_decode_ip sets them (also on WIRE_E_UDP_CSUM); BAD if they are
 * not set. */
enum wire_udp_csum_state wire_udp_csum_state(const struct wire_pkt *pkt);

/* Encode IP + UDP + IB packet; computes the IPv4 header checksum and the
 * ICRC.  UDP checksum is written as given in pkt->udp.csum (rxe sends 0;
 * a non-zero value must cover the ICRC too, so it is only right if the
 * caller computed it over these exact bytes); udp.len and IP lengths are
 * computed; udp.dport must be 0 or 4791 and 4791 is written.  IPv4
 * addresses are taken from bytes 12..15 of src/dst.  Returns bytes
 * written or error. */
int wire_encode_ip(const struct wire_pkt *pkt, uint8_t *buf, size_t cap);

/* Ethernet framing (pcap files): 14-byte header, optional single 802.1Q tag
 * on decode.  `eth_hdr` (14 bytes) is written as given on encode, except the
 * ethertype, which follows ip.version. */
int wire_decode_eth(const uint8_t *frame, size_t len, bool verify_icrc, struct wire_pkt *out);
int wire_encode_eth(const uint8_t eth_hdr[14], const struct wire_pkt *pkt, uint8_t *buf, size_t cap);

/* ---- ICRC (IBTA A17.3.3) -------------------------------------------- */

/* ICRC over a whole IP packet (IP header .. last byte before the ICRC),
 * with the variant fields masked: IPv4 TOS, TTL, header checksum; IPv6
 * traffic class, flow label, hop limit; UDP checksum; BTH byte 4 (resv8a).
 * `ip_len` excludes the 4 ICRC bytes.  Returns the value as a host
 * integer; on the wire it is stored little-endian (wire_icrc_store). */
uint32_t wire_icrc_ip(const uint8_t *ip, size_t ip_len);

/* ICRC of a RoCEv2 UDP payload as if it travelled in the IP packet that
 * `ip` describes (addresses, version, IPv4 id/df; TOS/TTL are masked anyway)
 * with `sport`.  This is what a UDP-socket port uses: the kernel builds the
 * real IP header, softrnic knows what it will contain.  `ib_len` excludes
 * the ICRC. */
uint32_t wire_icrc_udp_payload(const struct wire_ip *ip, uint16_t sport, const uint8_t *ib, size_t ib_len);
/* The same for an IB packet in pieces (e.g. headers in a send queue, the
 * payload still in the application's memory): the n pieces, in order, are
 * the packet up to the ICRC; piece 0 must hold at least the BTH (else
 * the result is that of an empty packet, never a read past a piece). */
struct wire_piece {
	const uint8_t *p;
	size_t len;
};
uint32_t wire_icrc_udp_payload_pieces(const struct wire_ip *ip, uint16_t sport, const struct wire_piece *piece,
				      unsigned n);

static inline void wire_icrc_store(uint8_t *p, uint32_t icrc)
{
	p[0] = (uint8_t)icrc; p[1] = (uint8_t)(icrc >> 8);
	p[2] = (uint8_t)(icrc >> 16); p[3] = (uint8_t)(icrc >> 24);
}
static inline uint32_t wire_icrc_load(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- PSN arithmetic (24-bit, IBTA 9.7.1) ----------------------------- */

static inline uint32_t wire_psn_add(uint32_t psn, uint32_t n) { return (psn + n) & WIRE_PSN_MASK; }
/* Signed distance a - b in the 24-bit circle: positive if a is after b. */
static inline int32_t wire_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* ---- UDP source port (flow entropy), as the kernel derives it --------- */

/* RC/UC: rdma_get_udp_sport(flow_label = 0, lqpn, rqpn). */
uint16_t wire_udp_sport_rc(uint32_t lqpn, uint32_t rqpn);
/* UD and QP1: 0xC000 + hash_32(qpn, 14). */
uint16_t wire_udp_sport_ud(uint32_t qpn);

/* ---- formatting ------------------------------------------------------- */

/* One-line description of a decoded packet (as `softrnic decode` prints),
 * without trailing newline.  Returns snprintf-style length. */
int wire_format_pkt(const struct wire_pkt *pkt, char *out, size_t cap);

#endif
