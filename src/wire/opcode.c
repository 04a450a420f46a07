/*
 * opcode.c — the one opcode table of softrnic.
 *
 * For every BTH opcode it says which extended headers follow the BTH, how
 * long they are, which QP types may use it and what kind of packet it is
 * (first/middle/last/only, payload, request/response, send/write/read/
 * atomic, immediate, invalidate).  The encoder, the decoder and the
 * transport read this table instead of switching on opcodes.
 *
 * Source: IBTA Vol. 1 9.2.1 (table 36, opcode field) and 9.3 (header
 * presence per opcode, table 37).  The header length is derived from the
 * header bits by a macro, so the two can never disagree.
 *
 * Covered: RC, UC, RD (decode-capable; softrnic never sends RD), UD and the
 * RoCEv2 CNP (A17.9.2).  XRC is left out on purpose: its XRCETH has no slot
 * in struct wire_ib, and softrnic does not implement XRC QPs, so XRC
 * opcodes decode as WIRE_E_OPCODE.
 */
#include "wire/wire.h"

/* Byte length of the extended headers named by a header bit set. */
#define EXT_LEN(h)                                                   \
	((((h) & WIRE_HDR_RDETH) ? 4 : 0) + (((h) & WIRE_HDR_DETH) ? WIRE_DETH_LEN : 0) + \
	 (((h) & WIRE_HDR_RETH) ? WIRE_RETH_LEN : 0) +                  \
	 (((h) & WIRE_HDR_FETH) ? WIRE_FETH_LEN : 0) +                  \
	 (((h) & WIRE_HDR_ATMETH) ? WIRE_ATMETH_LEN : 0) +              \
	 (((h) & WIRE_HDR_AETH) ? WIRE_AETH_LEN : 0) +                  \
	 (((h) & WIRE_HDR_ATMACK) ? WIRE_ATMACK_LEN : 0) +              \
	 (((h) & WIRE_HDR_IMMDT) ? WIRE_IMMDT_LEN : 0) +                \
	 (((h) & WIRE_HDR_IETH) ? WIRE_IETH_LEN : 0))

#define OP(code, nm, fl, hd, qp) \
	[code] = { .name = nm, .flags = (fl), .headers = (hd), .qp_types = (qp), \
		   .hdr_len = WIRE_BTH_LEN + EXT_LEN(hd) }

/* Short names for the table below. */
#define FIRST WIRE_F_FIRST
#define MIDDLE WIRE_F_MIDDLE
#define LAST WIRE_F_LAST
#define ONLY WIRE_F_ONLY
#define PAY WIRE_F_PAYLOAD
#define REQ WIRE_F_REQUEST
#define RSP WIRE_F_RESPONSE
#define SEND WIRE_F_SEND
#define WRITE WIRE_F_WRITE
#define READ WIRE_F_READ
#define ATOMIC WIRE_F_ATOMIC
#define IMM WIRE_F_IMM
#define INV WIRE_F_INV
#define FLUSH WIRE_F_FLUSH

#define H_RETH WIRE_HDR_RETH
#define H_FETH WIRE_HDR_FETH
#define H_AETH WIRE_HDR_AETH
#define H_ATM WIRE_HDR_ATMETH
#define H_ATMACK WIRE_HDR_ATMACK
#define H_IMM WIRE_HDR_IMMDT
#define H_IETH WIRE_HDR_IETH
#define H_DETH WIRE_HDR_DETH
#define H_RD (WIRE_HDR_RDETH | WIRE_HDR_DETH)  /* RD requests: RDETH + DETH */
#define H_RDR WIRE_HDR_RDETH                    /* RD responses: RDETH only  */

#define RC WIRE_QP_RC
#define UC WIRE_QP_UC
#define RD WIRE_QP_RD
#define UD WIRE_QP_UD

static const struct wire_opcode_info opcode_table[256] = {
	/* Reliable Connection, prefix 000 (IBTA 9.2.1 table 36). */
	OP(0x00, "RC_SEND_FIRST", FIRST | PAY | REQ | SEND, 0, RC),
	OP(0x01, "RC_SEND_MIDDLE", MIDDLE | PAY | REQ | SEND, 0, RC),
	OP(0x02, "RC_SEND_LAST", LAST | PAY | REQ | SEND, 0, RC),
	OP(0x03, "RC_SEND_LAST_IMM", LAST | PAY | REQ | SEND | IMM, H_IMM, RC),
	OP(0x04, "RC_SEND_ONLY", ONLY | PAY | REQ | SEND, 0, RC),
	OP(0x05, "RC_SEND_ONLY_IMM", ONLY | PAY | REQ | SEND | IMM, H_IMM, RC),
	OP(0x06, "RC_WRITE_FIRST", FIRST | PAY | REQ | WRITE, H_RETH, RC),
	OP(0x07, "RC_WRITE_MIDDLE", MIDDLE | PAY | REQ | WRITE, 0, RC),
	OP(0x08, "RC_WRITE_LAST", LAST | PAY | REQ | WRITE, 0, RC),
	OP(0x09, "RC_WRITE_LAST_IMM", LAST | PAY | REQ | WRITE | IMM, H_IMM, RC),
	OP(0x0a, "RC_WRITE_ONLY", ONLY | PAY | REQ | WRITE, H_RETH, RC),
	OP(0x0b, "RC_WRITE_ONLY_IMM", ONLY | PAY | REQ | WRITE | IMM, H_RETH | H_IMM, RC),
	OP(0x0c, "RC_READ_REQUEST", ONLY | REQ | READ, H_RETH, RC),
	OP(0x0d, "RC_READ_RESP_FIRST", FIRST | PAY | RSP | READ, H_AETH, RC),
	OP(0x0e, "RC_READ_RESP_MIDDLE", MIDDLE | PAY | RSP | READ, 0, RC),
	OP(0x0f, "RC_READ_RESP_LAST", LAST | PAY | RSP | READ, H_AETH, RC),
	OP(0x10, "RC_READ_RESP_ONLY", ONLY | PAY | RSP | READ, H_AETH, RC),
	OP(0x11, "RC_ACK", ONLY | RSP, H_AETH, RC),
	OP(0x12, "RC_ATOMIC_ACK", ONLY | RSP | ATOMIC, H_AETH | H_ATMACK, RC),
	OP(0x13, "RC_CMP_SWAP", ONLY | REQ | ATOMIC, H_ATM, RC),
	OP(0x14, "RC_FETCH_ADD", ONLY | REQ | ATOMIC, H_ATM, RC),
	/* 0x15 reserved */
	OP(0x16, "RC_SEND_LAST_INV", LAST | PAY | REQ | SEND | INV, H_IETH, RC),
	OP(0x17, "RC_SEND_ONLY_INV", ONLY | PAY | REQ | SEND | INV, H_IETH, RC),
	/* RDMA FLUSH (IBTA Vol 1 1.5, as rxe): a FETH (placement type,
	 * selectivity) and a RETH naming the range, no payload.  The
	 * responder answers it with a zero-length READ response and counts
	 * it against its READ/ATOMIC resources, so it carries the READ flag
	 * as well as its own.  0x18..0x1b are reserved. */
	OP(0x1c, "RC_FLUSH", ONLY | REQ | READ | FLUSH, H_FETH | H_RETH, RC),
	/* RDMA ATOMIC WRITE (IBTA Vol 1 1.5 errata, as rxe): a RETH and an
	 * 8-byte payload the responder stores atomically at an 8-byte
	 * aligned address; acknowledged like an RDMA WRITE, so it carries
	 * the WRITE flag. */
	OP(0x1d, "RC_ATOMIC_WRITE", ONLY | PAY | REQ | WRITE, H_RETH, RC),

	/* Unreliable Connection, prefix 001: sends and writes only. */
	OP(0x20, "UC_SEND_FIRST", FIRST | PAY | REQ | SEND, 0, UC),
	OP(0x21, "UC_SEND_MIDDLE", MIDDLE | PAY | REQ | SEND, 0, UC),
	OP(0x22, "UC_SEND_LAST", LAST | PAY | REQ | SEND, 0, UC),
	OP(0x23, "UC_SEND_LAST_IMM", LAST | PAY | REQ | SEND | IMM, H_IMM, UC),
	OP(0x24, "UC_SEND_ONLY", ONLY | PAY | REQ | SEND, 0, UC),
	OP(0x25, "UC_SEND_ONLY_IMM", ONLY | PAY | REQ | SEND | IMM, H_IMM, UC),
	OP(0x26, "UC_WRITE_FIRST", FIRST | PAY | REQ | WRITE, H_RETH, UC),
	OP(0x27, "UC_WRITE_MIDDLE", MIDDLE | PAY | REQ | WRITE, 0, UC),
	OP(0x28, "UC_WRITE_LAST", LAST | PAY | REQ | WRITE, 0, UC),
	OP(0x29, "UC_WRITE_LAST_IMM", LAST | PAY | REQ | WRITE | IMM, H_IMM, UC),
	OP(0x2a, "UC_WRITE_ONLY", ONLY | PAY | REQ | WRITE, H_RETH, UC),
	OP(0x2b, "UC_WRITE_ONLY_IMM", ONLY | PAY | REQ | WRITE | IMM, H_RETH | H_IMM, UC),

	/* Reliable Datagram, prefix 010: as RC, plus RDETH on every packet
	 * and DETH on requests (IBTA 9.3.1, 9.3.2). */
	OP(0x40, "RD_SEND_FIRST", FIRST | PAY | REQ | SEND, H_RD, RD),
	OP(0x41, "RD_SEND_MIDDLE", MIDDLE | PAY | REQ | SEND, H_RD, RD),
	OP(0x42, "RD_SEND_LAST", LAST | PAY | REQ | SEND, H_RD, RD),
	OP(0x43, "RD_SEND_LAST_IMM", LAST | PAY | REQ | SEND | IMM, H_RD | H_IMM, RD),
	OP(0x44, "RD_SEND_ONLY", ONLY | PAY | REQ | SEND, H_RD, RD),
	OP(0x45, "RD_SEND_ONLY_IMM", ONLY | PAY | REQ | SEND | IMM, H_RD | H_IMM, RD),
	OP(0x46, "RD_WRITE_FIRST", FIRST | PAY | REQ | WRITE, H_RD | H_RETH, RD),
	OP(0x47, "RD_WRITE_MIDDLE", MIDDLE | PAY | REQ | WRITE, H_RD, RD),
	OP(0x48, "RD_WRITE_LAST", LAST | PAY | REQ | WRITE, H_RD, RD),
	OP(0x49, "RD_WRITE_LAST_IMM", LAST | PAY | REQ | WRITE | IMM, H_RD | H_IMM, RD),
	OP(0x4a, "RD_WRITE_ONLY", ONLY | PAY | REQ | WRITE, H_RD | H_RETH, RD),
	OP(0x4b, "RD_WRITE_ONLY_IMM", ONLY | PAY | REQ | WRITE | IMM, H_RD | H_RETH | H_IMM, RD),
	OP(0x4c, "RD_READ_REQUEST", ONLY | REQ | READ, H_RD | H_RETH, RD),
	OP(0x4d, "RD_READ_RESP_FIRST", FIRST | PAY | RSP | READ, H_RDR | H_AETH, RD),
	OP(0x4e, "RD_READ_RESP_MIDDLE", MIDDLE | PAY | RSP | READ, H_RDR, RD),
	OP(0x4f, "RD_READ_RESP_LAST", LAST | PAY | RSP | READ, H_RDR | H_AETH, RD),
	OP(0x50, "RD_READ_RESP_ONLY", ONLY | PAY | RSP | READ, H_RDR | H_AETH, RD),
	OP(0x51, "RD_ACK", ONLY | RSP, H_RDR | H_AETH, RD),
	OP(0x52, "RD_ATOMIC_ACK", ONLY | RSP | ATOMIC, H_RDR | H_AETH | H_ATMACK, RD),
	OP(0x53, "RD_CMP_SWAP", ONLY | REQ | ATOMIC, H_RD | H_ATM, RD),
	OP(0x54, "RD_FETCH_ADD", ONLY | REQ | ATOMIC, H_RD | H_ATM, RD),
	OP(0x55, "RD_RESYNC", ONLY | REQ, H_RD, RD),

	/* Unreliable Datagram, prefix 011: single-packet sends only. */
	OP(0x64, "UD_SEND_ONLY", ONLY | PAY | REQ | SEND, H_DETH, UD),
	OP(0x65, "UD_SEND_ONLY_IMM", ONLY | PAY | REQ | SEND | IMM, H_DETH | H_IMM, UD),

	/* RoCEv2 Congestion Notification Packet (A17.9.2): BTH followed by
	 * 16 reserved bytes.  The decoder reports those bytes as payload. */
	OP(0x81, "CNP", WIRE_F_CNP, 0, WIRE_QP_CNP),
};

const struct wire_opcode_info *wire_opcode_info(uint8_t opcode)
{
	const struct wire_opcode_info *info = &opcode_table[opcode];
	return info->name ? info : NULL;
}

int wire_payload_offset(uint8_t opcode)
{
	const struct wire_opcode_info *info = wire_opcode_info(opcode);
	return info ? info->hdr_len : WIRE_E_OPCODE;
}
