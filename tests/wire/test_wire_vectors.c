/*
 * test_wire_vectors.c — the codec against the kernel Soft-RoCE captures
 * (tests/vectors/rxe).  For every frame: it decodes, the ICRC verifies
 * (both from the whole IP packet and from the UDP payload + the header
 * fields, as a UDP-socket port computes it), re-encoding the decoded fields
 * with the original Ethernet header reproduces the frame byte for byte, and
 * the UDP source port follows the kernel rules stated in the README.
 * Frame counts per file are the README's numbers.
 *
 * usage: test_wire_vectors VECTOR_DIR
 */
#include "wire_test.h"

static const struct {
	const char *file;
	size_t frames;
} expected[] = {
	{ "rc_atomic.pcap", 16 },          { "rc_atomic_cas.pcap", 16 },
	{ "rc_loss_retransmit.pcap", 400 }, { "rc_rdmacm_connect.pcap", 64 },
	{ "rc_read.pcap", 32 },            { "rc_read_loss_retransmit.pcap", 227 },
	{ "rc_read_only.pcap", 16 },       { "rc_rnr_nak.pcap", 400 },
	{ "rc_send.pcap", 44 },            { "rc_send_only.pcap", 16 },
	{ "rc_write.pcap", 32 },           { "rc_write_only.pcap", 32 },
	{ "uc_send.pcap", 24 },            { "ud_send.pcap", 8 },
};

/* The two QPNs of the single RC/UC connection of a capture, learned from
 * the destination QPN of each direction (keyed by the sender's address). */
struct conn {
	uint8_t addr[2][16];
	uint32_t qpn[2];
	int known;
};

static void learn_qpn(struct conn *c, const struct wire_pkt *p)
{
	for (int i = 0; i < c->known; i++)
		if (!memcmp(c->addr[i], p->ip.src, 16))
			return;
	if (c->known < 2) {
		memcpy(c->addr[c->known], p->ip.src, 16);
		c->qpn[c->known++] = p->ib.bth.dqpn;
	}
}

static void check_frame(const char *file, size_t idx, const struct frame *f, struct conn *conn, size_t *ud_checked)
{
	struct wire_pkt pkt;
	int err = wire_decode_eth(f->data, f->len, true, &pkt);
	CHECK(!err, "%s frame %zu: %s", file, idx + 1, wire_err_name(err));
	if (err)
		return;
	CHECK(pkt.ip.version == 4);
	CHECK(pkt.udp.dport == WIRE_ROCEV2_UDP_PORT);
	CHECK(pkt.ip.df && pkt.ip.ttl == 64 && pkt.ip.dscp == 0 && pkt.ip.ecn == 0);
	CHECK(pkt.ib.bth.pkey == 0xffff && pkt.udp.csum == 0);

	/* The ICRC as a UDP-socket port computes it, from fields only. */
	const uint8_t *ib = pkt.ip_start + WIRE_IPV4_LEN + WIRE_UDP_LEN;
	size_t ib_len = pkt.udp.len - WIRE_UDP_LEN - WIRE_ICRC_LEN;
	CHECK(wire_icrc_udp_payload(&pkt.ip, pkt.udp.sport, ib, ib_len) == pkt.ib.icrc);

	/* Re-encode into a separate buffer and compare with the capture. */
	uint8_t out[WIRE_ETH_LEN + WIRE_IPV6_LEN + WIRE_UDP_LEN + WIRE_MAX_IB_PACKET];
	int n = wire_encode_eth(f->data, &pkt, out, sizeof(out));
	size_t want = WIRE_ETH_LEN + pkt.ip_len;
	CHECK(n >= 0 && (size_t)n == want && !memcmp(out, f->data, want), "%s frame %zu: re-encode differs (n=%d want %zu)",
	      file, idx + 1, n, want);

	const struct wire_opcode_info *info = wire_opcode_info(pkt.ib.bth.opcode);
	if (info->qp_types & WIRE_QP_UD) {
		CHECK(pkt.udp.sport == wire_udp_sport_ud(pkt.ib.deth.sqpn));
		++*ud_checked;
	} else {
		learn_qpn(conn, &pkt);
	}
}

/* RC/UC: both ends use rdma_get_udp_sport(0, lqpn, rqpn).  Skipped for
 * the RDMA-CM capture, whose flow label is non-zero (README). */
static size_t check_rc_sports(const char *file, const struct capture *cap, const struct conn *conn)
{
	size_t checked = 0;
	if (conn->known != 2 || strstr(file, "rdmacm"))
		return 0;
	uint16_t sport = wire_udp_sport_rc(conn->qpn[0], conn->qpn[1]);
	for (size_t i = 0; i < cap->count; i++) {
		struct wire_pkt pkt;
		if (wire_decode_eth(cap->frames[i].data, cap->frames[i].len, false, &pkt))
			continue;
		if (wire_opcode_info(pkt.ib.bth.opcode)->qp_types & (WIRE_QP_RC | WIRE_QP_UC)) {
			CHECK(pkt.udp.sport == sport);
			checked++;
		}
	}
	return checked;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s VECTOR_DIR\n", argv[0]);
		return 2;
	}
	size_t total = 0, ud_checked = 0, rc_checked = 0;
	for (size_t k = 0; k < sizeof(expected) / sizeof(expected[0]); k++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", argv[1], expected[k].file);
		struct capture cap = load_capture(path);
		CHECK(cap.count == expected[k].frames, "%s: %zu frames, README says %zu", expected[k].file, cap.count,
		      expected[k].frames);
		struct conn conn = { 0 };
		for (size_t i = 0; i < cap.count; i++)
			check_frame(expected[k].file, i, &cap.frames[i], &conn, &ud_checked);
		rc_checked += check_rc_sports(expected[k].file, &cap, &conn);
		total += cap.count;
		free_capture(&cap);
	}
	/* 1327 frames in all (README); UD: 8 in ud_send + 10 CM MADs. */
	CHECK(total == 1327);
	CHECK(ud_checked == 18);
	CHECK(rc_checked == 1327 - 64 - 8);
	printf("%zu frames, %zu UD and %zu RC/UC source ports checked\n", total, ud_checked, rc_checked);
	return check_exit("test_wire_vectors");
}
