/*
 * ib.c — encode and decode the InfiniBand transport packet that RoCEv2
 * carries as its UDP payload: BTH, the extended headers the opcode table
 * names, payload, pad and the (unchecked here) ICRC.
 *
 * Layout (IBTA 9.2, 9.3):  BTH | RDETH | DETH | RETH | AtomicETH | AETH |
 * AtomicAckETH | ImmDt | IETH | payload | pad (0..3) | ICRC (4).
 *
 * The decoder validates the packet against the opcode table; the encoder
 * refuses exactly what the decoder would refuse, so anything encoded
 * decodes back to the same fields.  Reserved bits are written as zero and
 * ignored on receipt (IBTA 9.2: reserved fields), so a received packet
 * with reserved bits set decodes, but re-encodes with them cleared.
 */
#include <string.h>

#include "wire/bytes.h"
#include "wire/wire.h"

#define MAX_PAYLOAD 4096u   /* largest IBTA path MTU */

/* AETH syndrome (IBTA 9.3.5 table 43): bit 7 reserved, bits 6..5 kind
 * (10 is reserved), NAK codes above 4 are reserved (table 44). */
static bool aeth_syndrome_valid(uint8_t syndrome)
{
	switch (syndrome >> 5) {
	case WIRE_AETH_ACK:
	case WIRE_AETH_RNR_NAK:
		return true;
	case WIRE_AETH_NAK:
		return (syndrome & 0x1f) <= WIRE_NAK_INVALID_RD_REQ;
	default:
		return false;
	}
}

/* Payload rules shared by encoder and decoder.  `payload_len` excludes
 * pad; `pad` is the BTH PadCnt. */
static int check_payload(const struct wire_opcode_info *info, uint32_t payload_len, uint8_t pad)
{
	if (info->flags & WIRE_F_CNP) {
		/* A17.9.2: BTH + 16 reserved bytes, nothing else. */
		if (pad)
			return WIRE_E_PAD;
		return payload_len == WIRE_CNP_PAYLOAD_LEN ? WIRE_OK : WIRE_E_PAYLOAD;
	}
	if (!(info->flags & WIRE_F_PAYLOAD)) {
		if (pad)
			return WIRE_E_PAD;
		return payload_len ? WIRE_E_PAYLOAD : WIRE_OK;
	}
	if (payload_len > MAX_PAYLOAD)
		return WIRE_E_PAYLOAD;
	if (info->flags & (WIRE_F_FIRST | WIRE_F_MIDDLE)) {
		/* IBTA 9.7.3.1: FIRST and MIDDLE packets carry exactly one
		 * PMTU of payload, a non-zero multiple of 4, so no pad. */
		if (pad)
			return WIRE_E_PAD;
		if (payload_len == 0)
			return WIRE_E_PAYLOAD;
	}
	return WIRE_OK;
}

static void decode_bth(const uint8_t *p, struct wire_bth *bth)
{
	bth->opcode = p[0];
	bth->se = p[1] >> 7;
	bth->migreq = (p[1] >> 6) & 1;
	bth->pad = (p[1] >> 4) & 3;
	bth->tver = p[1] & 0xf;
	bth->pkey = get16(p + 2);
	bth->fecn = p[4] >> 7;
	bth->becn = (p[4] >> 6) & 1;
	bth->selective = (p[4] >> 5) & 1;
	bth->msg = (p[4] >> 4) & 1;
	bth->dqpn = get24(p + 5);
	bth->ackreq = p[8] >> 7;
	bth->psn = get24(p + 9);
}

/* Reads the extended headers present in `headers`, in wire order. */
static const uint8_t *decode_ext(const uint8_t *p, uint16_t headers, struct wire_ib *ib)
{
	if (headers & WIRE_HDR_RDETH) {
		ib->rdeth_eec = get24(p + 1);     /* byte 0 reserved */
		p += 4;
	}
	if (headers & WIRE_HDR_DETH) {
		ib->deth.qkey = get32(p);
		ib->deth.sqpn = get24(p + 5);     /* byte 4 reserved */
		p += WIRE_DETH_LEN;
	}
	if (headers & WIRE_HDR_FETH) {
		ib->feth.placement = p[3] & 0x0f;
		ib->feth.selectivity = (p[3] >> 4) & 0x03;
		p += WIRE_FETH_LEN;
	}
	if (headers & WIRE_HDR_RETH) {
		ib->reth.va = get64(p);
		ib->reth.rkey = get32(p + 8);
		ib->reth.dma_len = get32(p + 12);
		p += WIRE_RETH_LEN;
	}
	if (headers & WIRE_HDR_ATMETH) {
		ib->atmeth.va = get64(p);
		ib->atmeth.rkey = get32(p + 8);
		ib->atmeth.swap_add = get64(p + 12);
		ib->atmeth.compare = get64(p + 20);
		p += WIRE_ATMETH_LEN;
	}
	if (headers & WIRE_HDR_AETH) {
		ib->aeth.syndrome = p[0];
		ib->aeth.msn = get24(p + 1);
		p += WIRE_AETH_LEN;
	}
	if (headers & WIRE_HDR_ATMACK) {
		ib->atmack = get64(p);
		p += WIRE_ATMACK_LEN;
	}
	if (headers & WIRE_HDR_IMMDT) {
		memcpy(&ib->imm, p, 4);           /* stays in network order */
		p += WIRE_IMMDT_LEN;
	}
	if (headers & WIRE_HDR_IETH) {
		ib->ieth = get32(p);
		p += WIRE_IETH_LEN;
	}
	return p;
}

int wire_decode_ib(const uint8_t *buf, size_t len, struct wire_ib *out)
{
	if (!buf || !out)
		return WIRE_E_FIELD;
	memset(out, 0, sizeof(*out));
	if (len < WIRE_BTH_LEN + WIRE_ICRC_LEN)
		return WIRE_E_TRUNCATED;
	/* IBTA 9.6 (packet header validation): TVer must be 0. */
	if ((buf[1] & 0xf) != 0)
		return WIRE_E_TVER;
	const struct wire_opcode_info *info = wire_opcode_info(buf[0]);
	if (!info)
		return WIRE_E_OPCODE;
	/* `len` is the whole UDP payload, so a packet shorter than its
	 * opcode's headers is not truncated: its opcode is wrong. */
	if (len < (size_t)info->hdr_len + WIRE_ICRC_LEN)
		return WIRE_E_HEADERS;

	decode_bth(buf, &out->bth);
	out->headers = info->headers;
	const uint8_t *payload = decode_ext(buf + WIRE_BTH_LEN, info->headers, out);

	size_t body = len - info->hdr_len - WIRE_ICRC_LEN;   /* payload + pad */
	if (body > MAX_PAYLOAD + 3)
		return WIRE_E_PAYLOAD;
	/* IBTA 9.2: payload + pad is a whole number of 4-byte words. */
	if (body % 4)
		return WIRE_E_LENGTH;
	if (out->bth.pad > body)
		return WIRE_E_PAD;
	int err = check_payload(info, (uint32_t)(body - out->bth.pad), out->bth.pad);
	if (err)
		return err;
	if ((info->headers & WIRE_HDR_AETH) && !aeth_syndrome_valid(out->aeth.syndrome))
		return WIRE_E_FIELD;

	out->payload = payload;
	out->payload_len = (uint32_t)(body - out->bth.pad);
	out->icrc = wire_icrc_load(buf + len - WIRE_ICRC_LEN);
	return WIRE_OK;
}

/* Field range checks of the encoder (the decoder cannot see these
 * violations: it reads fields of the right width by construction). */
static int check_fields(const struct wire_ib *ib, const struct wire_opcode_info *info)
{
	if (ib->bth.tver != 0)
		return WIRE_E_TVER;
	if (ib->bth.dqpn > WIRE_QPN_MASK || ib->bth.psn > WIRE_PSN_MASK)
		return WIRE_E_FIELD;
	if ((info->headers & WIRE_HDR_DETH) && ib->deth.sqpn > WIRE_QPN_MASK)
		return WIRE_E_FIELD;
	if ((info->headers & WIRE_HDR_RDETH) && ib->rdeth_eec > 0xffffffu)
		return WIRE_E_FIELD;
	if ((info->headers & WIRE_HDR_AETH) &&
	    (ib->aeth.msn > 0xffffffu || !aeth_syndrome_valid(ib->aeth.syndrome)))
		return WIRE_E_FIELD;
	return WIRE_OK;
}

static void encode_bth(const struct wire_bth *bth, uint8_t pad, uint8_t *p)
{
	p[0] = bth->opcode;
	p[1] = (uint8_t)((bth->se ? 0x80 : 0) | (bth->migreq ? 0x40 : 0) | pad << 4);
	put16(p + 2, bth->pkey);
	p[4] = (uint8_t)((bth->fecn ? 0x80 : 0) | (bth->becn ? 0x40 : 0) | (bth->selective ? 0x20 : 0) |
			 (bth->msg ? 0x10 : 0));
	put24(p + 5, bth->dqpn);
	p[8] = bth->ackreq ? 0x80 : 0;
	put24(p + 9, bth->psn);
}

static uint8_t *encode_ext(const struct wire_ib *ib, uint16_t headers, uint8_t *p)
{
	if (headers & WIRE_HDR_RDETH) {
		p[0] = 0;
		put24(p + 1, ib->rdeth_eec);
		p += 4;
	}
	if (headers & WIRE_HDR_DETH) {
		put32(p, ib->deth.qkey);
		p[4] = 0;
		put24(p + 5, ib->deth.sqpn);
		p += WIRE_DETH_LEN;
	}
	if (headers & WIRE_HDR_FETH) {
		put32(p, (uint32_t)(ib->feth.placement & 0x0f) | (uint32_t)(ib->feth.selectivity & 0x03) << 4);
		p += WIRE_FETH_LEN;
	}
	if (headers & WIRE_HDR_RETH) {
		put64(p, ib->reth.va);
		put32(p + 8, ib->reth.rkey);
		put32(p + 12, ib->reth.dma_len);
		p += WIRE_RETH_LEN;
	}
	if (headers & WIRE_HDR_ATMETH) {
		put64(p, ib->atmeth.va);
		put32(p + 8, ib->atmeth.rkey);
		put64(p + 12, ib->atmeth.swap_add);
		put64(p + 20, ib->atmeth.compare);
		p += WIRE_ATMETH_LEN;
	}
	if (headers & WIRE_HDR_AETH) {
		p[0] = ib->aeth.syndrome;
		put24(p + 1, ib->aeth.msn);
		p += WIRE_AETH_LEN;
	}
	if (headers & WIRE_HDR_ATMACK) {
		put64(p, ib->atmack);
		p += WIRE_ATMACK_LEN;
	}
	if (headers & WIRE_HDR_IMMDT) {
		memcpy(p, &ib->imm, 4);
		p += WIRE_IMMDT_LEN;
	}
	if (headers & WIRE_HDR_IETH) {
		put32(p, ib->ieth);
		p += WIRE_IETH_LEN;
	}
	return p;
}

int wire_encode_ib(const struct wire_ib *ib, uint8_t *buf, size_t cap)
{
	if (!ib || !buf)
		return WIRE_E_FIELD;
	const struct wire_opcode_info *info = wire_opcode_info(ib->bth.opcode);
	if (!info)
		return WIRE_E_OPCODE;
	int err = check_fields(ib, info);
	if (err)
		return err;
	uint32_t payload_len = ib->payload_len;
	/* The CNP's 16 reserved bytes are always sent; a caller may leave
	 * payload_len at 0 and get zeros. */
	if ((info->flags & WIRE_F_CNP) && payload_len == 0)
		payload_len = WIRE_CNP_PAYLOAD_LEN;
	uint8_t pad = (uint8_t)((4 - payload_len % 4) % 4);
	if (payload_len > MAX_PAYLOAD)
		return WIRE_E_PAYLOAD;
	err = check_payload(info, payload_len, pad);
	if (err)
		return err;

	size_t total = (size_t)info->hdr_len + payload_len + pad + WIRE_ICRC_LEN;
	if (cap < total)
		return WIRE_E_NOSPACE;
	encode_bth(&ib->bth, pad, buf);
	uint8_t *p = encode_ext(ib, info->headers, buf + WIRE_BTH_LEN);
	if (ib->payload && ib->payload_len)
		memmove(p, ib->payload, payload_len);   /* may alias buf (in-place re-encode) */
	else if (info->flags & WIRE_F_CNP)
		memset(p, 0, payload_len);
	memset(p + payload_len, 0, pad + WIRE_ICRC_LEN);
	return (int)total;
}
