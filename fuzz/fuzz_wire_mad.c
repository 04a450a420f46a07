/*
 * fuzz_wire_mad.c — libFuzzer target: the CM MAD codec (wire/mad.h) on
 * arbitrary bytes.  Each input is decoded twice: as it is (which mostly
 * exercises the header checks), and as the body of a MAD whose header is
 * forced to a valid CM header of the kind data[0] selects (so every
 * message kind is decoded deep).  Whatever decodes must re-encode to the
 * same bytes except the reserved bits, which must come out 0; the
 * re-encoded MAD must decode to the same fields (its re-encoding is
 * identical), and the one-line formatter must describe it.  The reserved
 * bits are listed here from the kernel's include/rdma/ibta_vol1_c12.h, not
 * taken from the codec, so a field the codec drops or misplaces shows.
 */
#include "fuzz_check.h"
#include "wire/mad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct rsv {
	uint8_t at;             /* offset in the MAD (header included) */
	uint8_t mask;           /* reserved bits of that byte */
};

#define B(off, m) { (uint8_t)(WIRE_MAD_HDR_LEN + (off)), (m) }

static const struct rsv rsv_req[] = {
	B(4, 0xff), B(5, 0xff), B(6, 0xff), B(7, 0xff), B(24, 0xff), B(25, 0xff), B(26, 0xff), B(27, 0xff),
	B(90, 0x0f), B(91, 0xc0), B(94, 0x07), B(95, 0x07),
	B(134, 0x0f), B(135, 0xc0), B(138, 0x07), B(139, 0x03),
};
static const struct rsv rsv_mra[] = { B(8, 0x3f), B(9, 0x07) };
static const struct rsv rsv_rej[] = { B(8, 0x3f), B(9, 0x01) };
static const struct rsv rsv_rep[] = { B(15, 0xff), B(19, 0xff), B(23, 0xff), B(27, 0x0f) };
static const struct rsv rsv_dreq[] = { B(11, 0xff) };
static const struct rsv rsv_sidr_req[] = { B(6, 0xff), B(7, 0xff) };
static const struct rsv rsv_sidr_rep[] = { B(6, 0xff), B(7, 0xff), B(11, 0xff) };

#define N(a) (sizeof(a) / sizeof(a[0]))

static void reserved_mask(uint16_t attr, uint8_t mask[WIRE_MAD_LEN])
{
	const struct rsv *r = NULL;
	size_t n = 0;
	memset(mask, 0, WIRE_MAD_LEN);
	mask[18] = mask[19] = 0xff;             /* MAD header reserved */
	switch (attr) {
	case WIRE_CM_ATTR_REQ: r = rsv_req; n = N(rsv_req); break;
	case WIRE_CM_ATTR_MRA: r = rsv_mra; n = N(rsv_mra); break;
	case WIRE_CM_ATTR_REJ: r = rsv_rej; n = N(rsv_rej); break;
	case WIRE_CM_ATTR_REP: r = rsv_rep; n = N(rsv_rep); break;
	case WIRE_CM_ATTR_DREQ: r = rsv_dreq; n = N(rsv_dreq); break;
	case WIRE_CM_ATTR_SIDR_REQ: r = rsv_sidr_req; n = N(rsv_sidr_req); break;
	case WIRE_CM_ATTR_SIDR_REP: r = rsv_sidr_rep; n = N(rsv_sidr_rep); break;
	}
	for (size_t i = 0; i < n; i++)
		mask[r[i].at] = r[i].mask;
}

static void check_format(const uint8_t *mad, size_t len)
{
	struct wire_pkt pkt;
	memset(&pkt, 0, sizeof(pkt));
	pkt.ip.version = 4;
	pkt.ib.bth.opcode = WIRE_TR_UD | WIRE_OP_SEND_ONLY;
	pkt.ib.bth.dqpn = WIRE_GSI_QPN;
	pkt.ib.headers = WIRE_HDR_DETH;
	pkt.ib.payload = mad;
	pkt.ib.payload_len = (uint32_t)len;
	char line[1024];
	int n = wire_format_pkt(&pkt, line, sizeof(line));
	FUZZ_ASSERT(n > 0 && (size_t)n < sizeof(line));
}

static void check(const uint8_t *mad, size_t len)
{
	struct wire_cm_msg m;
	struct wire_mad_hdr h;
	int rc = wire_cm_decode(mad, len, &m);
	int hrc = wire_mad_decode_hdr(mad, len, &h);
	check_format(mad, len);
	if (rc != WIRE_OK) {
		FUZZ_ASSERT(rc == WIRE_E_TRUNCATED || rc == WIRE_E_MAD_VERSION || rc == WIRE_E_MAD_CLASS ||
			    rc == WIRE_E_MAD_ATTR || rc == WIRE_E_FIELD || rc == WIRE_E_LENGTH);
		FUZZ_ASSERT((rc == WIRE_E_TRUNCATED) == (hrc == WIRE_E_TRUNCATED));
		return;
	}
	FUZZ_ASSERT(hrc == WIRE_OK && len >= WIRE_MAD_LEN);
	FUZZ_ASSERT(h.mgmt_class == m.hdr.mgmt_class && h.attr_id == m.hdr.attr_id && h.tid == m.hdr.tid &&
		    h.method == m.hdr.method && h.status == m.hdr.status && h.attr_mod == m.hdr.attr_mod);

	uint8_t out[WIRE_MAD_LEN], again[WIRE_MAD_LEN], mask[WIRE_MAD_LEN];
	FUZZ_ASSERT(wire_cm_encode(&m, out, sizeof(out)) == (int)WIRE_MAD_LEN);
	reserved_mask(m.hdr.attr_id, mask);
	for (size_t i = 0; i < WIRE_MAD_LEN; i++) {
		FUZZ_ASSERT(((mad[i] ^ out[i]) & ~mask[i]) == 0);      /* fields kept */
		FUZZ_ASSERT((out[i] & mask[i]) == 0);                   /* reserved 0 */
	}
	struct wire_cm_msg m2;
	FUZZ_ASSERT(wire_cm_decode(out, sizeof(out), &m2) == WIRE_OK);
	FUZZ_ASSERT(wire_cm_encode(&m2, again, sizeof(again)) == (int)WIRE_MAD_LEN);
	FUZZ_ASSERT(memcmp(out, again, WIRE_MAD_LEN) == 0);

	/* The RDMA-CM header of a REQ's private data, when it parses. */
	if (m.hdr.attr_id == WIRE_CM_ATTR_REQ) {
		struct wire_cma_hdr c;
		uint8_t pd[WIRE_CMA_HDR_LEN];
		const uint8_t *src = m.req.private_data;
		if (wire_cma_hdr_decode(src, sizeof(m.req.private_data), &c) == WIRE_OK) {
			FUZZ_ASSERT(wire_cma_hdr_encode(&c, pd, sizeof(pd)) == (int)WIRE_CMA_HDR_LEN);
			FUZZ_ASSERT(pd[0] == src[0] && pd[1] == (src[1] & 0xf0));
			FUZZ_ASSERT(memcmp(pd + 2, src + 2, WIRE_CMA_HDR_LEN - 2) == 0);
		}
		uint16_t ps, port;
		if (wire_rdma_cm_service_id_parse(m.req.service_id, &ps, &port))
			FUZZ_ASSERT(wire_rdma_cm_service_id(ps, port) == m.req.service_id);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t kinds[] = {
		WIRE_CM_ATTR_REQ, WIRE_CM_ATTR_MRA, WIRE_CM_ATTR_REJ, WIRE_CM_ATTR_REP, WIRE_CM_ATTR_RTU,
		WIRE_CM_ATTR_DREQ, WIRE_CM_ATTR_DREP, WIRE_CM_ATTR_SIDR_REQ, WIRE_CM_ATTR_SIDR_REP,
	};
	check(data, size);
	if (size < 1)
		return 0;
	/* data[0] picks the kind; the rest is the MAD from byte 4 on. */
	uint8_t mad[WIRE_MAD_LEN];
	size_t body = size - 1 < WIRE_MAD_LEN - 4 ? size - 1 : WIRE_MAD_LEN - 4;
	memset(mad, 0, sizeof(mad));
	memcpy(mad + 4, data + 1, body);
	mad[0] = WIRE_MAD_BASE_VERSION;
	mad[1] = WIRE_MAD_CLASS_CM;
	mad[2] = WIRE_CM_CLASS_VERSION;
	mad[3] = WIRE_MAD_METHOD_SEND;
	uint16_t attr = kinds[data[0] % N(kinds)];
	mad[16] = (uint8_t)(attr >> 8);
	mad[17] = (uint8_t)attr;
	check(mad, sizeof(mad));
	return 0;
}
