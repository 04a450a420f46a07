/*
 * hpcc_fabric.c — the fabric of `softrnic sim run` from the HPCC
 * simulator's files (hpcc.c describes their formats): the topology file
 * read, the hosts' options (MTU, congestion control, HPCC's window and
 * base RTT from the largest path BDP) and the switches' (buffer, PFC,
 * ECN maps) derived from config.txt, the nodes and links built in the
 * files' order (our node ids are theirs), ROUTE_FILE's static routes,
 * and the flow file's flows added.  Each step fills struct run
 * (hpcc_int.h) for the next.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/hpcc_int.h"


/* ROUTE_FILE (softrnic's key; HPCC computes its routes itself): the count,
 * then "switch host next_hop" lines in the topology's node ids — switch
 * `switch` sends everything for `host` to its neighbour `next_hop`,
 * replacing the shortest paths (sim_set_route).  How a routing loop, the
 * cyclic buffer dependency of a PFC deadlock, is built from files.
 * 0, or 2 with a message. */
static int load_routes(struct sim_net *n, const char *path, const bool *is_switch, const unsigned *host_of,
		       unsigned nodes)
{
	FILE *f = fopen(path, "r");
	unsigned count = 0, sw, host, next;
	int rc = 0;

	if (!f) {
		fprintf(stderr, "softrnic sim run: %s: %s\n", path, strerror(errno));
		return 2;
	}
	if (fscanf(f, "%u", &count) != 1)
		rc = 2;
	for (unsigned i = 0; !rc && i < count; i++) {
		int port;
		if (fscanf(f, "%u %u %u", &sw, &host, &next) != 3 || sw >= nodes || host >= nodes || next >= nodes ||
		    !is_switch[sw] || is_switch[host] || (port = sim_port_to_node(n, sw, next)) < 0 ||
		    sim_set_route(n, sw, host_of[host], (unsigned)port)) {
			fprintf(stderr, "softrnic sim run: %s: route line %u: not \"switch host neighbour\"\n", path, i + 1);
			rc = 2;
		}
	}
	if (!rc && count == 0)
		fprintf(stderr, "softrnic sim run: %s: no routes\n", path), rc = 2;
	fclose(f);
	return rc;
}


/* HPCC's window with HAS_WIN 1 and GLOBAL_T 1 (third.cc's maxBdp): the
 * largest bandwidth-delay product over host pairs, each path's RTT being
 * twice its propagation delay plus one packet's serialisation on every
 * hop, at the source host's link rate.  Paths are the fewest-hop ones
 * (breadth first, the first found), as the routes are.  0 on no memory. */
static uint64_t max_bdp(unsigned nodes, const bool *is_switch, const struct link_line *lk, unsigned links,
			unsigned packet_bytes, uint64_t *max_rtt)
{
	unsigned *queue = calloc(nodes, sizeof(unsigned));
	struct hop { bool seen; uint64_t delay, tx; } *h = calloc(nodes, sizeof(*h));
	uint64_t best = 0;

	for (unsigned src = 0; queue && h && src < nodes; src++) {
		uint64_t bw = 0;
		unsigned head = 0, tail = 0;

		if (is_switch[src])
			continue;
		memset(h, 0, nodes * sizeof(*h));
		h[src].seen = true;
		queue[tail++] = src;
		while (head < tail) {
			unsigned u = queue[head++];
			for (unsigned i = 0; i < links; i++) {
				unsigned v = lk[i].a == u ? lk[i].b : lk[i].b == u ? lk[i].a : nodes;
				if (v >= nodes || h[v].seen)
					continue;
				if (u == src && !bw)
					bw = lk[i].l.rate_bps;
				h[v].seen = true;
				h[v].delay = h[u].delay + lk[i].l.delay_ns;
				h[v].tx = h[u].tx + (uint64_t)packet_bytes * 8000000000ull / lk[i].l.rate_bps;
				if (is_switch[v])
					queue[tail++] = v;      /* hosts do not forward */
			}
		}
		for (unsigned d = 0; d < nodes; d++) {
			if (d == src || is_switch[d] || !h[d].seen)
				continue;
			uint64_t rtt = 2 * h[d].delay + h[d].tx, bdp = rtt * bw / 8000000000ull;
			best = bdp > best ? bdp : best;
			*max_rtt = rtt > *max_rtt ? rtt : *max_rtt;
		}
	}
	free(queue);
	free(h);
	return best;
}

/* Both input files opened, the topology read.  0, or 2 with a message. */
int simrun_read_topology(struct run *r)
{
	struct hpcc_config *c = &r->c;
	struct topo_file *t = &r->t;
	FILE *topo = fopen(c->topology, "r");

	r->flows = fopen(c->flows, "r");
	if (!topo || !r->flows) {
		fprintf(stderr, "softrnic sim run: cannot open %s\n", topo ? c->flows : c->topology);
		if (topo)
			fclose(topo);
		return 2;
	}
	if (fscanf(topo, "%u %u %u", &t->nodes, &t->switches, &t->links) != 3 || t->nodes > SIM_MAX_NODES ||
	    t->switches > t->nodes) {
		fprintf(stderr, "softrnic sim run: %s: bad header (at most %u nodes)\n", c->topology, SIM_MAX_NODES);
		fclose(topo);
		return 2;
	}
	t->is_switch = calloc(t->nodes, sizeof(*t->is_switch));
	t->host_of = calloc(t->nodes, sizeof(*t->host_of));
	t->lk = calloc(t->links ? t->links : 1, sizeof(*t->lk));
	int rc = !t->is_switch || !t->host_of || !t->lk ? 2 : 0;
	for (unsigned i = 0; !rc && i < t->switches; i++) {
		unsigned id;
		if (fscanf(topo, "%u", &id) != 1 || id >= t->nodes)
			rc = 2;
		else
			t->is_switch[id] = true;
	}
	for (unsigned i = 0; !rc && i < t->links; i++) {
		struct link_line *l = &t->lk[i];
		char rate[64], delay[64];
		double err;
		if (fscanf(topo, "%u %u %63s %63s %lf", &l->a, &l->b, rate, delay, &err) != 5 || l->a >= t->nodes ||
		    l->b >= t->nodes || !simrun_parse_rate(rate)) {
			rc = 2;
			break;
		}
		l->l = (struct sim_link_opts){ .rate_bps = simrun_parse_rate(rate), .delay_ns = simrun_parse_delay(delay),
					       .loss = err > 0 ? err : c->error_rate };
		t->fastest = l->l.rate_bps > t->fastest ? l->l.rate_bps : t->fastest;
	}
	fclose(topo);
	if (rc)
		fprintf(stderr, "softrnic sim run: %s: unreadable switch list or link line\n", c->topology);
	return rc;
}

/* The hosts' options from the config: the MTU from the payload size, the
 * algorithm from CC_MODE, and for the window-based ones HPCC's window
 * and base RTT from the topology. */
void simrun_host_opts(struct run *r)
{
	struct hpcc_config *c = &r->c;

	/* ENABLE_QCN turns the switches' ECN marking on or off; the hosts'
	 * reaction point follows it for the algorithms that hear marks
	 * (DCQCN, DCTCP), while HPCC and TIMELY, as in HPCC's simulator,
	 * react whatever it says. */
	r->ho = (struct sim_host_opts){ .dcqcn = c->qcn || c->cc_mode == 3 || c->cc_mode == 7 || c->cc_mode == 10,
					.cc = &c->cc, .qp_timeout = 10, .pint_log_base = c->pint_log_base,
					.pint_prob = c->pint_prob,
					.mtu = c->payload <= 256 ? 256 : c->payload <= 512 ? 512 : c->payload <= 1100 ? 1024
					       : c->payload <= 2100 ? 2048 : 4096,
					.dctcp = &c->dctcp, .timely = &c->timely, .hpcc = &c->hpcc };
	if (c->cc_mode != 1) {
		r->ho.cc_algo = c->cc_mode == 7 ? RNIC_CC_TIMELY : c->cc_mode == 8 ? RNIC_CC_DCTCP : RNIC_CC_HPCC;
		/* A packet on the wire: payload, IB headers, Ethernet/IP/UDP.
		 * HPCC's T is the largest base RTT (GLOBAL_T 1), and its W
		 * the BDP whether or not a window limits the sender. */
		uint64_t rtt = 0, bdp = max_bdp(r->t.nodes, r->t.is_switch, r->t.lk, r->t.links,
						r->ho.mtu + 48u + SIM_WIRE_OVERHEAD, &rtt);
		if (c->has_win)
			r->ho.cc_window = bdp;
		c->hpcc.base_rtt = rtt ? rtt : c->hpcc.base_rtt;
	}
}

/* The switches' options: buffer, PFC, and ECN with the thresholds of the
 * fastest link's rate, and every rate of the KMIN map with its KMAX and
 * PMAX. */
void simrun_switch_opts(struct run *r)
{
	const struct hpcc_config *c = &r->c;

	r->so = (struct sim_switch_opts){
		.buffer_bytes = c->buffer_bytes, .alpha = 1.0 / 8, .pfc = c->pfc, .ecn = c->qcn,
		.kmin_bytes = (uint64_t)(simrun_map_at(&c->kmin, r->t.fastest, 400) * 1000),
		.kmax_bytes = (uint64_t)(simrun_map_at(&c->kmax, r->t.fastest, 1600) * 1000),
		.pmax = simrun_map_at(&c->pmax, r->t.fastest, 0.2),
	};
	for (unsigned i = 0; i < c->kmin.n && r->so.ecn_map_n < 8; i++)
		r->so.ecn_map[r->so.ecn_map_n++] = (struct sim_ecn_entry){
			.rate_bps = c->kmin.rate[i], .kmin_bytes = (uint64_t)(c->kmin.value[i] * 1000),
			.kmax_bytes = (uint64_t)(simrun_map_at(&c->kmax, c->kmin.rate[i], 1600) * 1000),
			.pmax = simrun_map_at(&c->pmax, c->kmin.rate[i], 0.2) };
}

/* A host here is one NIC with one port: say so of a topology whose hosts
 * have more (HPCC's own files never do; some of its derivatives'
 * multi-NIC hosts do), not just that it cannot be built.  0 or 2. */
int simrun_check_host_ports(const struct run *r)
{
	const struct topo_file *t = &r->t;
	unsigned *degree = calloc(t->nodes ? t->nodes : 1, sizeof(unsigned));
	int rc = 0;

	for (unsigned i = 0; degree && i < t->links; i++) {
		degree[t->lk[i].a]++;
		degree[t->lk[i].b]++;
	}
	for (unsigned id = 0; degree && !rc && id < t->nodes; id++) {
		if (!t->is_switch[id] && degree[id] > 1) {
			fprintf(stderr, "softrnic sim run: %s: host %u has %u links; a host here has one NIC port "
					"(hosts with several NICs are not modelled)\n", r->c.topology, id, degree[id]);
			rc = 2;
		}
	}
	free(degree);
	return rc;
}

/* The fabric in o->partitions (or o->threads) partitions.  0, or 2 with a
 * message. */
static int set_partitions(struct run *r)
{
	const struct sim_run_opts *o = r->o;
	unsigned parts = o->partitions ? o->partitions : o->threads;
	bool samplers = o->sample_ns || o->queue_sample_ns;

	if (parts > 1 && (samplers || sim_net_set_partitions(r->n, parts, o->threads > 1))) {
		fprintf(stderr, "softrnic sim run: %u partitions: %s\n", parts,
			samplers ? "the samplers (--sample-us) need one" : "at most " SIM_MAX_PARTS_TEXT);
		return 2;
	}
	if (o->threads > 1 && o->partitions && o->partitions != o->threads) {
		fprintf(stderr, "softrnic sim run: --threads %u with --partitions %u: a thread per partition, or one\n",
			o->threads, o->partitions);
		return 2;
	}
	return 0;
}

/* The fabric: nodes in the files' order (our node ids are theirs), the
 * links, sim_build, then ROUTE_FILE's static routes.  0, or 2 with a
 * message. */
int simrun_build_net(struct run *r)
{
	const struct topo_file *t = &r->t;
	int rc;

	sim_engine_init(&r->e);
	r->engine_live = true;
	if (!(r->n = sim_net_create(&r->e, r->o->seed, &r->ho, &r->so))) {
		fprintf(stderr, "softrnic sim run: cannot build the topology of %s\n", r->c.topology);
		return 2;
	}
	if ((rc = set_partitions(r)))
		return rc;
	for (unsigned id = 0; !rc && id < t->nodes; id++) {
		int x = t->is_switch[id] ? sim_add_switch(r->n) : sim_add_host(r->n);
		if (x < 0)
			rc = 2;
		else if (!t->is_switch[id])
			t->host_of[id] = (unsigned)x;
	}
	for (unsigned i = 0; !rc && i < t->links; i++)
		if (sim_link(r->n, t->lk[i].a, t->lk[i].b, &t->lk[i].l))
			rc = 2;
	if (rc || sim_build(r->n)) {
		fprintf(stderr, "softrnic sim run: cannot build the topology of %s%s\n", r->c.topology,
			sim_net_partitions(r->n) > 1 ? " in partitions (a link without delay between them?)" : "");
		return 2;
	}
	return r->c.routes[0] ? load_routes(r->n, r->c.routes, t->is_switch, t->host_of, t->nodes) : 0;
}

/* The flow file's flows (its first o->flow_limit, if set).  0, or 2 with
 * a message. */
int simrun_add_flows(struct run *r)
{
	const struct topo_file *t = &r->t;
	unsigned limit = r->o->flow_limit;

	if (fscanf(r->flows, "%u", &r->listed) != 1)
		return 2;
	r->nflows = limit && r->listed > limit ? limit : r->listed;
	if (!(r->flow_src = calloc(r->nflows ? r->nflows : 1, sizeof(unsigned) * 2)))
		return 2;
	for (unsigned i = 0; i < r->nflows; i++) {
		unsigned s, d, pg, dport;
		uint64_t size;
		double start;
		if (fscanf(r->flows, "%u %u %u %u %" SCNu64 " %lf", &s, &d, &pg, &dport, &size, &start) != 6 ||
		    s >= t->nodes || d >= t->nodes || t->is_switch[s] || t->is_switch[d] ||
		    sim_add_flow(r->n, t->host_of[s], t->host_of[d], size, (uint64_t)(start * 1e9 + 0.5)) < 0) {
			fprintf(stderr, "softrnic sim run: %s: flow line %u unreadable or impossible\n", r->c.flows, i + 1);
			return 2;
		}
		r->flow_src[2 * i] = s;
		r->flow_src[2 * i + 1] = d;
	}
	return 0;
}
