/*
 * topo.c — the topology of the simulated fabric: nodes (hosts and
 * switches), the full-duplex links between their ports, the routes
 * every switch takes to every host, and the partition each node runs in.
 *
 *   routes     (routes_compute) shortest paths by hop count from each
 *              switch to each host, hosts only at the ends (min-hop, the
 *              subnet manager's step in IB mode); every equal next hop
 *              is kept, in a set shared by the hosts that have the same
 *              (switch.c picks one by hash: ECMP); sim_set_route pins one
 *   placement  (nodes_place) hosts in runs of consecutive indexes, each
 *              switch with most of its neighbours; then the lookahead,
 *              the least delay of a link between partitions
 */
#include <string.h>

#include "sim/net_int.h"

static struct node *new_node(struct sim_net *n, bool is_host)
{
	struct node *node;

	if (n->nnodes == SIM_MAX_NODES || !(node = calloc(1, sizeof(*node))))
		return NULL;
	node->net = n;
	node->part = &n->parts[0];
	node->is_host = is_host;
	node->id = n->nnodes;
	n->nodes[n->nnodes++] = node;
	return node;
}

int sim_add_host(struct sim_net *n)
{
	struct node *node = new_node(n, true);
	struct host *h = node ? calloc(1, sizeof(*h)) : NULL;
	struct host **hs = h ? realloc(n->hosts, (n->nhosts + 1) * sizeof(*hs)) : NULL;
	unsigned *hn = hs ? realloc(n->host_nodes, (n->nhosts + 1) * sizeof(*hn)) : NULL;

	if (hs)
		n->hosts = hs;
	if (!hn) {
		free(h);
		return -1;
	}
	n->host_nodes = hn;
	h->net = n;
	h->index = n->nhosts;
	h->node = node;
	h->timer_at = UINT64_MAX;
	node->host = h;
	node->index = h->index;
	n->hosts[n->nhosts] = h;
	n->host_nodes[n->nhosts] = node->id;
	return (int)n->nhosts++;
}

int sim_add_switch(struct sim_net *n)
{
	struct node *node = new_node(n, false);
	unsigned *sn = node ? realloc(n->switch_nodes, (n->nswitches + 1) * sizeof(*sn)) : NULL;

	if (!sn)
		return -1;
	n->switch_nodes = sn;
	node->index = n->nswitches;
	n->switch_nodes[n->nswitches] = node->id;
	return (int)n->nswitches++;
}

unsigned sim_host_node(const struct sim_net *n, unsigned host)
{
	return n->host_nodes[host];
}

unsigned sim_switch_node(const struct sim_net *n, unsigned sw)
{
	return n->switch_nodes[sw];
}

static struct port *new_port(struct node *node, const struct sim_link_opts *o)
{
	struct port *p;

	if (node->nports == MAX_PORTS || (node->is_host && node->nports == 1) || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->node = node;
	p->index = node->nports;
	p->rate_bps = o->rate_bps;
	p->delay_ns = o->delay_ns;
	p->loss = o->loss;
	p->wake_at = UINT64_MAX;
	node->ports[node->nports++] = p;
	return p;
}

int sim_link(struct sim_net *n, unsigned a, unsigned b, const struct sim_link_opts *o)
{
	if (a >= n->nnodes || b >= n->nnodes || a == b || !o->rate_bps)
		return EINVAL;
	struct port *pa = new_port(n->nodes[a], o), *pb = pa ? new_port(n->nodes[b], o) : NULL;
	if (!pb)
		return EINVAL;
	pa->peer = n->nodes[b];
	pa->peer_port = pb->index;
	pb->peer = n->nodes[a];
	pb->peer_port = pa->index;
	return 0;
}

void node_free(struct node *node)
{
	for (unsigned p = 0; p < node->nports; p++) {
		for (int q = 0; q < SIM_PRIOS; q++)
			q_free(&node->ports[p]->pr[q].q);
		q_free(&node->ports[p]->ctrl);
		free(node->ports[p]);
	}
	free(node->route);
	free(node->sets);
	free(node);
}

/* ---- routes ------------------------------------------------------------- */

/* Host h's next hops at switch sw: the set's index, added to sw's sets
 * if new.  0 or ENOMEM. */
static int set_route(struct node *sw, unsigned h, const struct ecmp_set *set)
{
	unsigned i = 0;

	while (i < sw->nsets && memcmp(&sw->sets[i], set, sizeof(*set)))
		i++;
	if (i == sw->nsets) {
		if (i == UINT16_MAX)
			return ENOMEM;
		struct ecmp_set *v = realloc(sw->sets, (i + 1) * sizeof(*v));
		if (!v)
			return ENOMEM;
		sw->sets = v;
		sw->sets[sw->nsets++] = *set;
	}
	sw->route[h] = (uint16_t)(i + 1);
	return 0;
}

/* Hop counts from host h to every node (dist[], UINT32_MAX: not
 * reached), breadth first; hosts other than h do not forward. */
static void hops_from_host(const struct sim_net *n, unsigned h, unsigned *dist, unsigned *fifo)
{
	unsigned head = 0, tail = 0;

	for (unsigned i = 0; i < n->nnodes; i++)
		dist[i] = UINT32_MAX;
	dist[n->host_nodes[h]] = 0;
	fifo[tail++] = n->host_nodes[h];
	while (head < tail) {
		struct node *x = n->nodes[fifo[head++]];
		if (x->is_host && x->id != n->host_nodes[h])
			continue;
		for (unsigned i = 0; i < x->nports; i++) {
			struct node *y = x->ports[i]->peer;
			if (y && dist[y->id] == UINT32_MAX) {
				dist[y->id] = dist[x->id] + 1;
				fifo[tail++] = y->id;
			}
		}
	}
}

/* Every switch's next hops to every host: the ports (at most MAX_ECMP)
 * whose neighbour is one hop closer to it.  0 or ENOMEM. */
int routes_compute(struct sim_net *n)
{
	unsigned *dist = malloc(n->nnodes * sizeof(*dist)), *fifo = malloc(n->nnodes * sizeof(*fifo));
	int rc = dist && fifo ? 0 : ENOMEM;

	for (unsigned s = 0; !rc && s < n->nswitches; s++) {
		struct node *sw = n->nodes[n->switch_nodes[s]];
		if (!(sw->route = calloc(n->nhosts, sizeof(*sw->route))))
			rc = ENOMEM;
	}
	for (unsigned h = 0; !rc && h < n->nhosts; h++) {
		hops_from_host(n, h, dist, fifo);
		for (unsigned s = 0; !rc && s < n->nswitches; s++) {
			struct node *sw = n->nodes[n->switch_nodes[s]];
			if (dist[sw->id] == UINT32_MAX)
				continue;
			struct ecmp_set set = { 0 };
			for (unsigned i = 0; i < sw->nports && set.n < MAX_ECMP; i++) {
				struct node *y = sw->ports[i]->peer;
				if (y && dist[y->id] + 1 == dist[sw->id] && (!y->is_host || y->index == h))
					set.port[set.n++] = (uint8_t)i;
			}
			if (set.n && set_route(sw, h, &set))
				rc = ENOMEM;
		}
	}
	free(dist);
	free(fifo);
	return rc;
}

int sim_set_route(struct sim_net *n, unsigned sw, unsigned host, unsigned port)
{
	struct node *x = sw < n->nnodes ? n->nodes[sw] : NULL;

	if (!x || x->is_host || !x->route || host >= n->nhosts || port >= x->nports)
		return EINVAL;
	struct ecmp_set set = { .n = 1, .port = { (uint8_t)port } };
	return set_route(x, host, &set);
}

int sim_path(const struct sim_net *n, unsigned src, unsigned dst, uint64_t *delay_ns, uint64_t *min_rate_bps)
{
	if (src >= n->nhosts || dst >= n->nhosts || !n->hosts[src]->node->nports)
		return ENOENT;
	struct port *p = n->hosts[src]->node->ports[0];
	uint64_t delay = 0, rate = UINT64_MAX;
	for (unsigned hops = 0; hops < SIM_MAX_NODES; hops++) {
		delay += p->delay_ns;
		rate = p->rate_bps < rate ? p->rate_bps : rate;
		struct node *x = p->peer;
		if (!x)
			return ENOENT;
		if (x->is_host) {
			if (x->index != dst)
				return ENOENT;
			*delay_ns = delay;
			*min_rate_bps = rate;
			return 0;
		}
		if (!x->route || !x->route[dst])
			return ENOENT;
		p = x->ports[x->sets[x->route[dst] - 1].port[0]];
	}
	return ENOENT;
}

/* ---- placement into partitions ------------------------------------------ */

/* Which partition each node runs in: hosts in nparts runs of consecutive
 * indexes (a fat-tree's files list a pod's hosts together), then each
 * switch with the partition most of its placed neighbours are in (ToRs
 * with their hosts, aggregation switches with their ToRs), and a switch
 * whose neighbours are split evenly (a core switch) where fewer switches
 * are so far.  Trade-off: a greedy rule for the topologies HPCC's users
 * run, not a min-cut partitioner (METIS would balance any graph).  Then
 * the lookahead: the smallest delay of a link between partitions
 * (UINT64_MAX with one partition: no such link).  EINVAL: a link without
 * delay between two partitions. */
int nodes_place(struct sim_net *n)
{
	unsigned np = n->nparts, load[SIM_MAX_PARTS] = { 0 };
	bool progress = true;

	for (unsigned h = 0; h < n->nhosts; h++)
		n->hosts[h]->node->part = &n->parts[(uint64_t)h * np / n->nhosts];
	for (unsigned i = 0; i < n->nnodes; i++)
		if (!n->nodes[i]->is_host)
			n->nodes[i]->part = NULL;
	while (progress) {
		progress = false;
		for (unsigned s = 0; s < n->nswitches; s++) {
			struct node *sw = n->nodes[n->switch_nodes[s]];
			unsigned votes[SIM_MAX_PARTS] = { 0 }, best = 0, ties = 0;
			if (sw->part)
				continue;
			for (unsigned k = 0; k < sw->nports; k++)
				if (sw->ports[k]->peer && sw->ports[k]->peer->part)
					votes[sw->ports[k]->peer->part->index]++;
			for (unsigned q = 1; q < np; q++)
				if (votes[q] > votes[best])
					best = q;
			for (unsigned q = 0; q < np; q++)
				ties += votes[q] == votes[best];
			if (!votes[best] || ties > 1)
				continue;
			sw->part = &n->parts[best];
			load[best]++;
			progress = true;
		}
	}
	for (unsigned s = 0; s < n->nswitches; s++) {
		struct node *sw = n->nodes[n->switch_nodes[s]];
		if (sw->part)
			continue;
		unsigned best = 0;
		for (unsigned q = 1; q < np; q++)
			if (load[q] < load[best])
				best = q;
		sw->part = &n->parts[best];
		load[best]++;
	}
	uint64_t lookahead = UINT64_MAX;
	for (unsigned i = 0; i < n->nnodes; i++)
		for (unsigned k = 0; k < n->nodes[i]->nports; k++) {
			const struct port *p = n->nodes[i]->ports[k];
			if (p->peer && p->peer->part != p->node->part && p->delay_ns < lookahead)
				lookahead = p->delay_ns;
		}
	n->parts_eng.lookahead = lookahead;
	return lookahead ? 0 : EINVAL;
}

/* ---- walking the nodes and ports (net.h) --------------------------------- */

unsigned sim_nodes(const struct sim_net *n)
{
	return n->nnodes;
}

unsigned sim_node_ports(const struct sim_net *n, unsigned node)
{
	return node < n->nnodes ? n->nodes[node]->nports : 0;
}

bool sim_node_is_host(const struct sim_net *n, unsigned node)
{
	return node < n->nnodes && n->nodes[node]->is_host;
}

int sim_port_to_node(const struct sim_net *n, unsigned node, unsigned peer)
{
	if (node >= n->nnodes || peer >= n->nnodes)
		return -1;
	for (unsigned i = 0; i < n->nodes[node]->nports; i++)
		if (n->nodes[node]->ports[i]->peer == n->nodes[peer])
			return (int)i;
	return -1;
}

int sim_port_to_host(const struct sim_net *n, unsigned sw, unsigned host)
{
	if (sw >= n->nnodes || host >= n->nhosts)
		return -1;
	for (unsigned i = 0; i < n->nodes[sw]->nports; i++)
		if (n->nodes[sw]->ports[i]->peer == n->hosts[host]->node)
			return (int)i;
	return -1;
}
