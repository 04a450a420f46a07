/*
 * rnic.c — the device object: configuration, counters, the QP table,
 * dispatch of received packets to the responder or completer, and timers.
 *
 * Received packets are validated here as far as the device can without
 * knowing the transport state (decode, P_Key, destination QP, source
 * address, QP state, opcode vs QP type); what needs the QP's state is the
 * job of responder.c (requests) and completer.c (responses).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/prng.h"
#include "rnic/rnic_int.h"

void rnic_config_default(struct rnic_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	/* ::ffff:127.0.0.1 */
	cfg->gid.raw[10] = 0xff;
	cfg->gid.raw[11] = 0xff;
	cfg->gid.raw[12] = 127;
	cfg->gid.raw[15] = 1;
	cfg->max_mtu = IBV_MTU_4096;
	/* As the kernel's rxe (RXE_MAX_QP).  The QP table is one pointer per
	 * slot (512 KiB, calloc'ed: untouched pages cost nothing) and timers
	 * cost what the QPs that have them cost (timers.c). */
	cfg->max_qp = 65536;
	cfg->max_qp_wr = 16384;
	/* mlx5's limit (2^22 - 1): libfabric's ofi_rxm sizes one CQ for
	 * every peer it may talk to (its universe size) and fails when the
	 * device refuses.  The ring is calloc'ed, so pages are only touched
	 * as completions pass through them. */
	cfg->max_cqe = 4194303;
	cfg->max_mr = 16384;
	cfg->max_sge = 32;
	cfg->max_inline = 512;
	cfg->max_rd_atomic = 128;    /* as rxe (RXE_MAX_QP_RD_ATOM): peers exchange and adopt it */
	cfg->seed = 1;
	cfg->max_ah = 65536;
	cfg->max_mcast_grp = 64;
	cfg->max_mcast_qp_attach = 64;
	cfg->max_srq = 1024;
	cfg->max_srq_wr = 16384;
	/* The port speed ibv_query_port reports (1X EDR, compat/device.c). */
	cfg->line_rate = 25000000000ull;
	cfg->ecn = true;
	cfg->cnp = true;
	cfg->dcqcn = true;
	dcqcn_params_default(&cfg->cc, DCQCN_PROFILE_MLX5);
	cfg->cc_algo = RNIC_CC_DCQCN;
	dctcp_params_default(&cfg->dctcp);
	timely_params_default(&cfg->timely);
	hpcc_params_default(&cfg->hpcc);
	cfg->selective_repeat = true;
	cfg->timeout_probe = true;
}

/* splitmix64 (base/prng.h): tiny, seedable, good enough for QPNs and key
 * generations. */
uint64_t rnic_random(struct rnic *r)
{
	return prng_splitmix64(&r->prng);
}

static bool config_valid(const struct rnic_config *cfg)
{
	if (cfg->max_mtu < IBV_MTU_256 || cfg->max_mtu > IBV_MTU_4096)
		return false;
	if (cfg->max_qp < 1 || cfg->max_qp > (1u << 20) || cfg->max_mr < 1 || cfg->max_mr > (1u << 22))
		return false;
	if (cfg->max_qp_wr < 1 || cfg->max_cqe < 1 || cfg->max_sge < 1)
		return false;
	if (cfg->send_window > RNIC_SEND_WINDOW)
		return false;
	/* A QPN range holds at least the QP table, within 24 bits. */
	if (cfg->qpn_span && (cfg->qpn_span < 2 * cfg->max_qp ||
			      (uint64_t)cfg->qpn_base + cfg->qpn_span > WIRE_QPN_MASK + 1ull))
		return false;
	return true;
}

struct rnic *rnic_create(const struct rnic_config *cfg, const struct rnic_io *io)
{
	struct rnic *r;

	if (!cfg || !io || !io->xmit || !config_valid(cfg)) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->cfg = *cfg;
	r->io = *io;
	r->prng = cfg->seed;
	r->deadline_bound = RNIC_NO_DEADLINE;
	r->qps = calloc(cfg->max_qp, sizeof(*r->qps));
	/* MR slot 0 is never used, so no valid key is 0x000000xx. */
	r->mrs = calloc((size_t)cfg->max_mr + 1, sizeof(*r->mrs));
	r->mr_gen = calloc((size_t)cfg->max_mr + 1, 1);
	r->tx_vec = calloc((size_t)cfg->max_sge + 1, sizeof(*r->tx_vec));
	r->rx_iov = calloc((size_t)cfg->max_sge + 1, sizeof(*r->rx_iov));
	if (!r->qps || !r->mrs || !r->mr_gen || !r->tx_vec || !r->rx_iov) {
		rnic_destroy(r);
		errno = ENOMEM;
		return NULL;
	}
	if (ud_init(r)) {
		int err = errno;

		rnic_destroy(r);
		errno = err;
		return NULL;
	}
	for (uint32_t i = 0; i <= cfg->max_mr; i++)
		r->mr_gen[i] = (uint8_t)rnic_random(r);
	r->mr_next = 1;
	/* First QPN: seed-derived, in [16, 2^23) so 0 and 1 (QP0/QP1) and
	 * the wrap at 2^24 are far away; in a range of the configuration's,
	 * anywhere in its first half. */
	if (cfg->qpn_span)
		r->next_qpn = cfg->qpn_base + (uint32_t)(rnic_random(r) % (cfg->qpn_span / 2));
	else
		r->next_qpn = 16 + (uint32_t)(rnic_random(r) % ((1u << 23) - 16));
	return r;
}

void rnic_destroy(struct rnic *r)
{
	if (!r)
		return;
	/* Objects still alive are the caller's leak; free what we can reach
	 * so the process does not lose the memory. */
	while (r->n_qp)
		rnic_qp_destroy(r->live[r->n_qp - 1]);
	if (r->mrs)
		for (uint32_t i = 0; i <= r->cfg.max_mr; i++)
			free(r->mrs[i]);
	ud_fini(r);
	rnic_timers_free(r);
	free(r->qps);
	free(r->live);
	free(r->mrs);
	free(r->mr_gen);
	free(r->tx_vec);
	free(r->rx_iov);
	free(r);
}

const struct rnic_config *rnic_get_config(const struct rnic *r)
{
	return &r->cfg;
}

const struct rnic_counters *rnic_counters(const struct rnic *r)
{
	return &r->ctr;
}

void rnic_async(struct rnic *r, enum ibv_event_type type, void *obj)
{
	if (r->io.async_event)
		r->io.async_event(r->io.ctx, type, obj);
}

/* A packet of len bytes leaves for qp: the device's and the QP's counters. */
static void count_tx(struct rnic *r, struct rnic_qp *qp, size_t len)
{
	r->ctr.tx_packets++;
	r->ctr.tx_bytes += len;
	qp->stats.tx_packets++;
	qp->stats.tx_bytes += len;
}

/* A packet of `qp` to its peer: the QP's addressing, `counted` bytes in
 * the counters (payloads by reference or by pieces included). */
static void xmit_qp(struct rnic *r, struct rnic_qp *qp, struct rnic_tx *tx, size_t counted)
{
	tx->dst = qp->dgid;
	tx->sport = qp->sport;
	tx->ecn = cc_tx_ecn(qp);
	tx->dscp = qp->dscp;
	tx->ttl = qp->ttl;
	count_tx(r, qp, counted);
	r->io.xmit(r->io.ctx, tx);
}

void rnic_xmit_buf(struct rnic *r, struct rnic_qp *qp, const uint8_t *buf, size_t len)
{
	rnic_xmit_buf_alone(r, qp, buf, len, false);
}

void rnic_xmit_buf_alone(struct rnic *r, struct rnic_qp *qp, const uint8_t *buf, size_t len, bool alone)
{
	struct rnic_tx tx = { .ib = buf, .ib_len = len, .alone = alone };

	xmit_qp(r, qp, &tx, len);
}

void rnic_xmit_ref(struct rnic *r, struct rnic_qp *qp, uint8_t *buf, size_t len, size_t hdr_len,
		   const uint8_t *payload, size_t payload_len)
{
	/* wire_encode_ib left the payload bytes unwritten: the pad and the
	 * ICRC room (zeros) move up to follow the headers. */
	size_t tail = len - hdr_len - payload_len;
	memset(buf + hdr_len, 0, tail);
	struct rnic_tx tx = {
		.ib = buf,
		.ib_len = hdr_len + tail,
		.payload = payload,
		.payload_len = payload_len,
		.hdr_len = hdr_len,
	};
	xmit_qp(r, qp, &tx, len);
}

void rnic_xmit_vec(struct rnic *r, struct rnic_qp *qp, uint8_t *buf, size_t len, size_t hdr_len,
		   const struct wire_piece *vec, unsigned nvec, size_t payload_len, bool alone)
{
	struct rnic_tx tx = {
		.ib = buf,
		.ib_len = len,
		.payload_len = payload_len,
		.hdr_len = hdr_len,
		.payload_vec = vec,
		.payload_nvec = nvec,
		.alone = alone,
	};
	r->ctr.tx_msg_packets++;
	xmit_qp(r, qp, &tx, len + payload_len);
}

void rnic_xmit(struct rnic *r, struct rnic_qp *qp, size_t len)
{
	rnic_xmit_buf(r, qp, r->tx, len);
}

uint8_t *rnic_tx_buffer(struct rnic *r)
{
	uint8_t *buf = r->io.tx_buffer ? r->io.tx_buffer(r->io.ctx) : NULL;

	return buf ? buf : r->tx;
}

struct rnic_qp *rnic_qp_lookup(struct rnic *r, uint32_t qpn)
{
	struct rnic_qp *qp = r->qps[qpn % r->cfg.max_qp];

	return qp && qp->qpn == qpn ? qp : NULL;
}

/* ---- receive dispatch ---------------------------------------------------- */

static bool pkey_ok(uint16_t pkey)
{
	/* Default partition, full or limited member (IBTA 10.9.1.2). */
	return (pkey & 0x7fff) == 0x7fff;
}

static unsigned qp_type_bit(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return WIRE_QP_RC;
	case IBV_QPT_UC: return WIRE_QP_UC;
	case IBV_QPT_UD: return WIRE_QP_UD;
	default: return 0;
	}
}

/* A message-path packet (rnic_rx.remote): only an RC SEND or WRITE that
 * says so (wire_bth.msg), or a READ response, whose payload is larger
 * than a path MTU can be one, and `ib` carries no payload of its own.  The payload then stands in pkt as
 * its length with no bytes (payload NULL); the copies go through
 * rnic_rx_copy / rnic_rx_scatter, which read it from the sender. */
static bool accept_remote(struct rnic *r, struct wire_ib *pkt, const struct rnic_rx_remote *rem)
{
	const struct wire_opcode_info *info = wire_opcode_info(pkt->bth.opcode);

	if (!info || (pkt->bth.opcode & 0xe0) != WIRE_TR_RC || !(info->flags & WIRE_F_PAYLOAD) ||
	    !(info->flags & (WIRE_F_SEND | WIRE_F_WRITE | WIRE_F_RESPONSE)) || (info->flags & WIRE_F_ATOMIC) ||
	    ((info->flags & WIRE_F_REQUEST) && !pkt->bth.msg) ||
	    pkt->payload_len != 0 || rem->len <= RNIC_PKT_MAX_PAYLOAD || rem->len > RNIC_MSG_MTU || !rem->read) {
		r->ctr.rx_drop_malformed++;
		return false;
	}
	pkt->payload = NULL;
	pkt->payload_len = (uint32_t)rem->len;
	r->ctr.rx_msg_packets++;
	return true;
}

void rnic_receive(struct rnic *r, const struct rnic_rx *rx, uint64_t now)
{
	const struct wire_opcode_info *info;
	struct wire_ib pkt;
	struct rnic_qp *qp;

	r->ctr.rx_packets++;
	r->ctr.rx_bytes += rx->ib_len + (rx->remote ? rx->remote->len : 0);
	if (!rx->ib || wire_decode_ib(rx->ib, rx->ib_len, &pkt) != WIRE_OK) {
		r->ctr.rx_drop_malformed++;
		return;
	}
	if (rx->remote && !accept_remote(r, &pkt, rx->remote))
		return;
	if (pkt.bth.opcode == WIRE_OPCODE_CNP) {
		cc_receive_cnp(r, &pkt, rx, now);      /* reaction point (cc.c) */
		return;
	}
	if (rx->ecn == 3)
		r->ctr.ecn_marked++;
	info = wire_opcode_info(pkt.bth.opcode);
	if (!info) {
		r->ctr.rx_drop_malformed++;
		return;
	}
	if (!pkey_ok(pkt.bth.pkey)) {
		r->ctr.rx_drop_bad_pkey++;
		return;
	}
	/* Multicast: DestQP 0xFFFFFF, to every QP attached to the group the
	 * IP destination names (IBTA 10.5.2.5; rxe_rcv_mcast_pkt). */
	if (pkt.bth.dqpn == RNIC_MCAST_QPN) {
		ud_receive_mcast(r, &pkt, rx);
		return;
	}
	if (gsi_receive(r, &pkt, rx))
		return;
	qp = rnic_qp_lookup(r, pkt.bth.dqpn);
	if (!qp) {
		r->ctr.rx_drop_unknown_qp++;
		return;
	}
	/* An opcode of another transport (e.g. UC opcode to an RC QP) is
	 * silently dropped (IBTA 9.6.1.1 header checks). */
	if (!(info->qp_types & qp_type_bit(qp->type)) ||
	    !(info->flags & (WIRE_F_REQUEST | WIRE_F_RESPONSE))) {
		r->ctr.rx_drop_bad_opcode_seq++;
		return;
	}
	if (info->flags & WIRE_F_REQUEST) {
		if (!rnic_qp_can_receive(qp)) {
			r->ctr.rx_drop_qp_state++;
			return;
		}
	} else if (!rnic_qp_can_send(qp)) {
		r->ctr.rx_drop_qp_state++;
		return;
	}
	/* Connected QPs accept packets only from their peer (IBTA 9.6.1.5:
	 * the source address must match the QP's path). */
	if ((qp->type == IBV_QPT_RC || qp->type == IBV_QPT_UC) &&
	    memcmp(rx->src.raw, qp->dgid.raw, sizeof(rx->src.raw)) != 0) {
		r->ctr.rx_drop_bad_src++;
		return;
	}
	qp->stats.rx_packets++;
	qp->stats.rx_bytes += rx->ib_len + pkt.payload_len;
	cc_on_receive(qp, rx, now);                     /* notification point */
	/* A READ response on the message path answers only a READ our
	 * requester sent on it. */
	if (rx->remote && (info->flags & WIRE_F_RESPONSE) && !qp->msg_min) {
		r->ctr.rx_drop_malformed++;
		return;
	}
	r->rx_remote = rx->remote;
	r->rx_alone = rx->alone;
	if (qp->type == IBV_QPT_UD)
		ud_receive(qp, &pkt, rx);
	else if (info->flags & WIRE_F_REQUEST)
		responder_receive(qp, &pkt, now);
	else
		completer_receive(qp, &pkt, now);
	r->rx_remote = NULL;
	r->rx_alone = false;
}

/* ---- tracing -------------------------------------------------------------- */

void rnic_set_trace(struct rnic *r, void (*fn)(void *ctx, const char *line), void *ctx)
{
	r->trace = fn;
	r->trace_ctx = ctx;
}

void rnic_trace_step(const struct rnic_qp *qp, const char *machine, const char *state)
{
	char line[96];

	if (!qp->r->trace)
		return;
	snprintf(line, sizeof(line), "qp 0x%06x %s %s", qp->qpn, machine, state);
	qp->r->trace(qp->r->trace_ctx, line);
}
