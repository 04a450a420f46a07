/*
 * gsi.c — QP1, the General Services Interface (IBTA 13.5.1), as the rnic
 * sees it: the one place where management datagrams (MADs) enter and
 * leave the device.
 *
 * The rnic keeps no QP object for QP1.  A UD SEND ONLY addressed to
 * DestQP 1 is checked here — opcode, the GSI Q_Key 0x80010000 (IBTA
 * 13.5.1.2, C13-16), P_Key, a payload of exactly one MAD (256 bytes,
 * 13.4.1) — and handed whole to rnic_io.gsi_receive, whose owner (the
 * connection manager, src/cm, driven by the runtime) parses it.  Sending
 * is the mirror image: rnic_gsi_send wraps a MAD in BTH + DETH from
 * source QP 1 and gives it to the port.  Keeping QP1 in one file is what
 * lets the demultiplexing move later (several processes behind one host
 * address need one owner of QP1).
 *
 * Trade-off: no receive queue and no flow control on QP1; a MAD arriving
 * while nobody listens (gsi_receive NULL) is dropped and counted, which is
 * what an IB port without a CM agent does too.
 */
#include <string.h>

#include "rnic_int.h"
#include "wire/mad.h"

bool gsi_receive(struct rnic *r, const struct wire_ib *pkt, const struct rnic_rx *rx)
{
	if (pkt->bth.dqpn != WIRE_GSI_QPN)
		return false;
	if (pkt->bth.opcode != (WIRE_TR_UD | WIRE_OP_SEND_ONLY) || pkt->deth.qkey != WIRE_GSI_QKEY ||
	    pkt->payload_len != WIRE_MAD_LEN) {
		r->ctr.rx_drop_gsi++;
		return true;
	}
	if (!r->io.gsi_receive) {
		r->ctr.rx_drop_gsi++;
		return true;
	}
	r->ctr.rx_gsi_mads++;
	r->io.gsi_receive(r->io.ctx, &rx->src, pkt->deth.sqpn, pkt->payload, pkt->payload_len);
	return true;
}

int rnic_gsi_send(struct rnic *r, const struct rnic_gid *dst, uint32_t dst_qpn, const uint8_t *mad, size_t len)
{
	struct wire_ib ib;
	int n;

	if (!dst || !mad || len != WIRE_MAD_LEN || dst_qpn > WIRE_QPN_MASK)
		return EINVAL;
	memset(&ib, 0, sizeof(ib));
	ib.bth.opcode = WIRE_TR_UD | WIRE_OP_SEND_ONLY;
	ib.bth.pkey = WIRE_GSI_PKEY;
	ib.bth.dqpn = dst_qpn;
	ib.bth.psn = r->gsi_psn;
	r->gsi_psn = (r->gsi_psn + 1) & WIRE_PSN_MASK;
	ib.deth.qkey = WIRE_GSI_QKEY;
	ib.deth.sqpn = WIRE_GSI_QPN;
	ib.payload = mad;
	ib.payload_len = (uint32_t)len;
	n = wire_encode_ib(&ib, r->tx, sizeof(r->tx));
	if (n < 0)
		return EINVAL;
	struct rnic_tx tx = {
		.dst = *dst,
		.sport = wire_udp_sport_ud(WIRE_GSI_QPN),
		.ttl = RNIC_ROUTE_TTL,
		.ib = r->tx,
		.ib_len = (size_t)n,
	};
	r->ctr.tx_packets++;
	r->ctr.tx_bytes += (uint64_t)n;
	r->ctr.tx_gsi_mads++;
	r->io.xmit(r->io.ctx, &tx);
	return 0;
}
