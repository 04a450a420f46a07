/*
 * host.c — a host of the simulated fabric (net.h, "host", "NIC"): one of
 * softrnic's own rnics (src/rnic: requester, responder, completer and
 * congestion control) on simulated time, behind a NIC with one port.
 *
 * The rnic's transmit callback (host_xmit) turns each packet it builds
 * into a struct sim_pkt: RoCE packets wait in the NIC's per-flow queues
 * and leave round robin (host_nic_next, from port.c), CNPs go ahead of
 * them.  An arriving packet (host_receive) is handed to the rnic with the
 * HPCC feedback its ACK carries; after each rnic call, host_after reaps
 * completions (flow.c says what a completion ends) and sets the timer to
 * the rnic's next deadline.  Hosts' addresses are GIDs 10.0.x.y by index.
 */
#include <string.h>

#include "sim/net_int.h"
#include "wire/wire.h"

void gid_of_host(unsigned h, struct rnic_gid *g)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	g->raw[12] = 10;
	g->raw[13] = (uint8_t)(h >> 16);
	g->raw[14] = (uint8_t)(h >> 8);
	g->raw[15] = (uint8_t)h;
}

static int host_of_gid(const struct sim_net *n, const struct rnic_gid *g)
{
	unsigned h = (unsigned)g->raw[13] << 16 | (unsigned)g->raw[14] << 8 | g->raw[15];

	return g->raw[12] == 10 && h < n->nhosts ? (int)h : -1;
}

/* BTH bytes 5..7: the destination QP. */
static uint32_t bth_dqp(const uint8_t *ib)
{
	return (uint32_t)ib[5] << 16 | (uint32_t)ib[6] << 8 | ib[7];
}

static void host_timer(void *ctx, uint64_t arg, uint64_t now);

/* After the rnic ran: completions, then its next timer. */
void host_after(struct host *h)
{
	struct sim_net *n = h->net;
	struct part *P = h->node->part;
	struct ibv_wc wc[16];
	int got;

	while ((got = rnic_cq_poll(h->cq, 16, wc)) > 0)
		for (int i = 0; i < got; i++)
			flow_completed(n, P, &wc[i]);
	uint64_t d = rnic_next_deadline(h->rnic);
	if (d < h->timer_at) {
		h->timer_at = d;
		sim_at(P->eng, d, host_timer, h, ++h->timer_gen);
	}
}

static void host_timer(void *ctx, uint64_t arg, uint64_t now)
{
	struct host *h = ctx;

	if (arg != h->timer_gen)
		return;                 /* superseded by an earlier deadline */
	h->timer_at = UINT64_MAX;
	rnic_advance(h->rnic, now);
	host_after(h);
}

/* The arbiter's next turn: one packet of the next flow, from its queue
 * to the port's RoCE queue. */
void host_nic_next(struct host *h, struct port *p)
{
	unsigned id = h->active[h->act_head];

	h->act_head = (h->act_head + 1) % NIC_FLOW_QUEUES;
	h->act_len--;
	struct sim_pkt *next = q_pop(&h->flowq[id]);
	h->flowq_bytes -= next->wire;
	if (h->flowq[id].len)
		h->active[(h->act_head + h->act_len++) % NIC_FLOW_QUEUES] = (uint16_t)id;
	if (port_push(p, SIM_PRIO_ROCE, next))
		free(next);
}

/* HPCC: a request collects INT at the switches; an ACK echoes what its
 * flow's latest request brought (the flow by its QP at the ACK's
 * target). */
static void mark_telemetry(struct sim_net *n, struct sim_pkt *pkt, const struct rnic_tx *tx, int dst)
{
	uint8_t op = tx->ib[0] & 0x1f;

	if (op < 0x11) {
		pkt->tel_push = true;
		return;
	}
	if (op != 0x11)
		return;
	struct host *to = n->hosts[dst];
	uint32_t qpn = bth_dqp(tx->ib), slot = qpn % to->slots;
	if (to->slot_qpn[slot] != qpn || !to->slot_flow[slot])
		return;
	const struct flow *f = &n->flows[to->slot_flow[slot] - 1];
	if (pkt->tel) {
		*pkt->tel = f->last_int;
		pkt->tel_echo = pkt->tel->nhop > 0;
	}
	if (n->pint_on) {
		pkt->pint_field = f->last_pint;
		pkt->tel_echo = f->pint_seen;
	}
}

/* The rnic sends a packet (struct rnic_io.xmit). */
static void host_xmit(void *ctx, const struct rnic_tx *tx)
{
	struct host *h = ctx;
	struct sim_net *n = h->net;
	struct part *P = h->node->part;
	int dst = host_of_gid(n, &tx->dst);
	struct sim_pkt *pkt;

	bool with_int = n->ho.cc_algo == RNIC_CC_HPCC && !n->pint_on;
	size_t int_at = (sizeof(*pkt) + tx->ib_len + 7) & ~(size_t)7;

	if (dst < 0 || tx->payload_nvec || tx->hdr_len > tx->ib_len || tx->hdr_len > UINT16_MAX ||
	    tx->ib_len + tx->payload_len > WIRE_MAX_IB_PACKET ||
	    !(pkt = malloc(with_int ? int_at + sizeof(struct hpcc_int) : sizeof(*pkt) + tx->ib_len)))
		return;
	memset(pkt, 0, sizeof(*pkt));
	if (with_int) {
		pkt->tel = (struct hpcc_int *)((uint8_t *)pkt + int_at);
		memset(pkt->tel, 0, sizeof(*pkt->tel));
	}
	pkt->kind = PKT_DATA;
	pkt->wire = (uint32_t)(tx->ib_len + tx->payload_len) + SIM_WIRE_OVERHEAD;
	pkt->prio = tx->ib_len && tx->ib[0] == OP_CNP ? SIM_PRIO_CNP : SIM_PRIO_ROCE;
	pkt->ecn = tx->ecn;
	pkt->sport = tx->sport;
	pkt->src_host = h->index;
	pkt->dst_host = (uint32_t)dst;
	pkt->ib_len = (uint32_t)tx->ib_len;
	pkt->payload_len = (uint32_t)tx->payload_len;
	pkt->hdr_len = (uint16_t)tx->hdr_len;
	memcpy(pkt->ib, tx->ib, tx->ib_len);
	P->stats.packets_sent++;
	if (n->ho.cc_algo == RNIC_CC_HPCC && pkt->prio == SIM_PRIO_ROCE && tx->ib_len >= 8)
		mark_telemetry(n, pkt, tx, dst);
	struct port *p = h->node->ports[0];
	if (!p) {
		free(pkt);
		return;
	}
	if (pkt->prio == SIM_PRIO_ROCE) {
		/* The flow's queue: by destination QP and host. */
		unsigned dqp = tx->ib_len >= 8 ? bth_dqp(tx->ib) : 0;
		unsigned id = (dqp * 2654435761u ^ (unsigned)dst * 40503u) % NIC_FLOW_QUEUES;
		if (q_push(&h->flowq[id], pkt)) {
			free(pkt);
			return;
		}
		if (h->flowq[id].len == 1)
			h->active[(h->act_head + h->act_len++) % NIC_FLOW_QUEUES] = (uint16_t)id;
		h->flowq_bytes += pkt->wire;
		if (h->flowq_bytes > P->stats.max_host_queue_bytes)
			P->stats.max_host_queue_bytes = h->flowq_bytes;
	} else if (port_push(p, pkt->prio, pkt)) {
		free(pkt);
		return;
	}
	port_kick(n, p);
}

void host_receive(struct sim_net *n, struct host *h, struct sim_pkt *pkt, uint64_t now)
{
	struct part *P = h->node->part;
	struct rnic_rx rx;

	memset(&rx, 0, sizeof(rx));
	gid_of_host(pkt->src_host, &rx.src);
	gid_of_host(h->index, &rx.dst);
	rx.sport = pkt->sport;
	rx.ecn = pkt->ecn;
	rx.ib = pkt->ib;
	rx.ib_len = pkt->ib_len;
	if (pkt->payload_len) {
		/* headers ++ payload (zeros: its bytes are not simulated) ++
		 * pad and ICRC, as on the wire (rnic_tx) */
		memcpy(P->rx_buf, pkt->ib, pkt->hdr_len);
		memcpy(P->rx_buf + pkt->hdr_len + pkt->payload_len, pkt->ib + pkt->hdr_len, pkt->ib_len - pkt->hdr_len);
		rx.ib = P->rx_buf;
		rx.ib_len = pkt->ib_len + pkt->payload_len;
	}
	rx.ttl = 64;
	P->delivered[pkt->src_host] += pkt->wire;
	/* Per-flow throughput (sim_flow_arrived): requests to a flow's QP
	 * here (BTH opcode below ACK's 0x11). */
	if (pkt->prio == SIM_PRIO_ROCE && pkt->ib_len >= 12 && (pkt->ib[0] & 0x1f) < 0x11) {
		uint32_t qpn = bth_dqp(pkt->ib), slot = qpn % h->slots;
		if (h->slot_qpn[slot] == qpn && h->slot_flow[slot]) {
			struct flow *f = &n->flows[h->slot_flow[slot] - 1];
			f->arrived += pkt->wire;
			/* Before the rnic answers it: its ACK echoes these. */
			if (pkt->tel_push) {
				if (pkt->tel)
					f->last_int = *pkt->tel;
				f->last_pint = pkt->pint_field;
				f->pint_seen = true;
			}
		}
	}
	rnic_receive(h->rnic, &rx, now);
	if (pkt->tel_echo && n->pint_on) {
		/* HPCC-PINT: a sampled share of the ACKs carries feedback. */
		if (n->ho.pint_prob >= 1 || uniform(P) < n->ho.pint_prob) {
			struct hpcc_int t = { .pint_u = sim_pint_decode_q20(&n->pint, pkt->pint_field) };
			rnic_cc_telemetry(h->rnic, bth_dqp(pkt->ib), &t, now);
		}
	} else if (pkt->tel_echo) {
		/* HPCC's feedback, once the ACK itself is processed. */
		rnic_cc_telemetry(h->rnic, bth_dqp(pkt->ib), pkt->tel, now);
	}
	free(pkt);
	host_after(h);
}

/* The rnic config of host `host` on this fabric. */
static void host_config(struct sim_net *n, struct host *host, struct rnic_config *cfg)
{
	rnic_config_default(cfg);
	/* 1024 QP slots per host: the QPNs a host hands out depend on the
	 * table's size, and with them the NIC's flow queues, so the size is
	 * fixed here for a seed to replay the same run whatever the
	 * device's default.  The experiments' hosts have far fewer flows. */
	cfg->max_qp = 1024;
	gid_of_host(host->index, &cfg->gid);
	cfg->seed = (uint32_t)(prng_next(n->parts[0].rng) | 1);
	/* The rnic paces IB bytes; the link carries 66 more per packet
	 * (net.h): pace at the rate that fills the link with full-MTU
	 * packets, not above it (else the NIC queue grows for ever and every
	 * RTT with it). */
	if (host->node->nports) {
		uint64_t ib = n->ho.mtu + 48u;  /* payload, BTH, RETH, ICRC */
		cfg->line_rate = host->node->ports[0]->rate_bps / (ib + SIM_WIRE_OVERHEAD) * ib;
	}
	cfg->pace_line_rate = true;
	cfg->ecn = true;
	cfg->cnp = n->ho.dcqcn;
	cfg->dcqcn = n->ho.dcqcn;
	cfg->selective_repeat = n->ho.selective_repeat;
	cfg->cc_algo = n->ho.cc_algo;
	if (n->ho.dctcp)
		cfg->dctcp = *n->ho.dctcp;
	if (n->ho.timely)
		cfg->timely = *n->ho.timely;
	if (n->ho.hpcc)
		cfg->hpcc = *n->ho.hpcc;
	cfg->cc_window = n->ho.cc_window;
	cfg->send_window = n->ho.send_window;
	/* A timeout resends the whole window, as RoCE NICs do: the
	 * experiments show what their Go-Back-N does to a fabric (pfc-storm:
	 * the resent windows fill the buffers that spread the pause); the
	 * runtime probes with one packet first. */
	cfg->timeout_probe = false;
	if (n->ho.cc)
		cfg->cc = *n->ho.cc;
	else if (n->ho.dcqcn_paper)
		dcqcn_params_default(&cfg->cc, DCQCN_PROFILE_PAPER);
}

/* Every host's rnic, PD, CQ and MR (its partition's buffer), in host
 * order (each draws its seed from partition 0's stream).  0 or ENOMEM. */
int hosts_create_rnics(struct sim_net *n)
{
	for (unsigned h = 0; h < n->nhosts; h++) {
		struct host *host = n->hosts[h];
		struct rnic_config cfg;
		struct rnic_io io = { .ctx = host, .xmit = host_xmit, .tx_payload_ref = true };
		host_config(n, host, &cfg);
		host->rnic = rnic_create(&cfg, &io);
		host->pd = host->rnic ? rnic_pd_alloc(host->rnic) : NULL;
		host->cq = host->pd ? rnic_cq_create(host->rnic, 65536, NULL) : NULL;
		host->buf = host->cq ? host->node->part->host_buf : NULL;
		host->slots = cfg.max_qp;
		host->slot_flow = host->buf ? calloc(host->slots, sizeof(uint32_t)) : NULL;
		host->slot_qpn = host->slot_flow ? calloc(host->slots, sizeof(uint32_t)) : NULL;
		if (!host->slot_qpn)
			return ENOMEM;
		host->mr = host->buf ? rnic_mr_reg(host->pd, host->buf, HOST_BUF, (uintptr_t)host->buf,
						   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
				     : NULL;
		if (!host->mr)
			return ENOMEM;
	}
	return 0;
}

void host_free(struct host *host)
{
	if (host->mr)
		rnic_mr_dereg(host->mr);
	if (host->cq)
		rnic_cq_destroy(host->cq);
	if (host->pd)
		rnic_pd_free(host->pd);
	if (host->rnic)
		rnic_destroy(host->rnic);
	for (unsigned q = 0; q < NIC_FLOW_QUEUES; q++)
		q_free(&host->flowq[q]);
	free(host->slot_flow);
	free(host->slot_qpn);
	free(host);
}

/* ---- hosts seen from outside (net.h) ----------------------------------- */

struct rnic *sim_host_rnic(const struct sim_net *n, unsigned h)
{
	return h < n->nhosts ? n->hosts[h]->rnic : NULL;
}

uint64_t sim_host_delivered(const struct sim_net *n, unsigned src)
{
	uint64_t d = 0;

	for (unsigned q = 0; src < n->nhosts && q < n->nparts; q++)
		d += n->parts[q].delivered[src];
	return d;
}

uint64_t sim_rnic_counter(const struct sim_net *n, const char *name)
{
	uint64_t sum = 0;

	for (unsigned h = 0; h < n->nhosts; h++) {
		const struct rnic_counters *c = n->hosts[h]->rnic ? rnic_counters(n->hosts[h]->rnic) : NULL;
		if (!c)
			continue;
#define SUM_ONE(field)                    \
		if (!strcmp(name, #field)) \
			sum += c->field;
		RNIC_COUNTER_LIST(SUM_ONE)
#undef SUM_ONE
	}
	return sum;
}
