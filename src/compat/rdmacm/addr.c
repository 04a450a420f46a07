/*
 * addr.c — addresses and routes for librdmacm.so.1: bind, resolve_addr,
 * resolve_route, ports, rdma_getaddrinfo, rdma_get_devices, and the
 * loopback listener registry.
 *
 * On RoCE an IP address names a GID (::ffff:a.b.c.d; an IPv6 address is
 * its own GID) and the route is local: there is no subnet administrator to
 * ask, so resolve_route only fills the path record from what the device
 * knows (its GID, MTU, P_Key).  A device bound to an IPv6 address
 * (SOFTRNIC_ADDR, runtime.h) takes IPv6 binds and destinations and keeps
 * sockaddr_in6 in the id; one bound to IPv4 takes IPv4, IPv4-mapped,
 * loopback and unspecified IPv6.
 *
 * One machine, no configuration: each softrnic process binds its own
 * loopback address 127.0.0.N; a listener on such a device takes its port in
 * the host's loopback port space (port_registry.c), and a client resolving
 * a loopback (or unspecified) destination with that port finds the
 * listener's device there.  Any other destination is taken as it is: the
 * GID ::ffff:<address>.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat/rdmacm/rdmacm_int.h"
#include "wire/mad.h"

/* The device's address is IPv6 (its GID is not IPv4-mapped). */
static bool device_v6(void)
{
	return !IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)srt_gid(rcm.dev)->raw);
}

/* The device's IPv4 address, network order; 0 on an IPv6 device. */
static uint32_t device_ip(void)
{
	uint32_t a;

	if (device_v6())
		return 0;
	memcpy(&a, srt_gid(rcm.dev)->raw + 12, 4);
	return a;
}

/* Store an IPv6 address and port as the id's source or destination. */
static void set_addr6(struct sockaddr_storage *ss, const uint8_t addr[16], uint16_t port_be)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	s6->sin6_family = AF_INET6;
	s6->sin6_port = port_be;
	memcpy(&s6->sin6_addr, addr, 16);
}

static bool is_loopback(uint32_t a_net)
{
	return (be32toh(a_net) >> 24) == 127;
}

uint16_t rcm_ps(const struct rcm_id *id)
{
	return (uint16_t)id->id.ps;
}

uint16_t rcm_src_port(const struct rcm_id *id)
{
	return be16toh(id->id.route.addr.src_sin.sin_port);
}

uint16_t rcm_dst_port(const struct rcm_id *id)
{
	return be16toh(id->id.route.addr.dst_sin.sin_port);
}

/* ---- the loopback port space (port_registry.c) ------------------------------ */

int rcm_register_listener(struct rcm_id *id)
{
	int e;

	if (!is_loopback(device_ip()))
		return 0;
	e = rcm_registry_listen(rcm_ps(id), rcm_src_port(id), device_ip());
	if (e == EADDRINUSE)
		return EADDRINUSE;
	/* Works without: a client must then name our address itself. */
	id->registered = e == 0;
	return 0;
}

void rcm_unregister_listener(struct rcm_id *id)
{
	if (!id->registered)
		return;
	id->registered = false;
	rcm_registry_unlisten(rcm_ps(id), rcm_src_port(id), device_ip());
}

/* ---- bind ------------------------------------------------------------------ */

static uint16_t ephemeral_port(uint16_t ps)
{
	static uint32_t next;

	if (!next)
		next = (uint32_t)(getpid() * 7919u + srt_now());
	for (int tries = 0; tries < 1000; tries++) {
		uint16_t port = (uint16_t)(32768 + (next++ * 2654435761u >> 8) % 28232);
		if (rcm_registry_port_free(ps, port))
			return port;
	}
	return (uint16_t)(32768 + next % 28232);
}

/* Bind on an IPv6 device: our own address, the unspecified one, or a
 * loopback one (device-less until a resolve, as for IPv4 below). */
static int bind6(struct rcm_id *id, const struct sockaddr *addr)
{
	uint8_t any[16] = { 0 };
	const uint8_t *want = any;
	uint16_t port = 0;
	bool loop = false;

	if (addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)addr;

		port = s6->sin6_port;
		loop = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
		if (!IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr) && !loop) {
			if (memcmp(&s6->sin6_addr, srt_gid(rcm.dev)->raw, 16))
				return rcm_fail(EADDRNOTAVAIL);
			want = s6->sin6_addr.s6_addr;
		}
	} else if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)addr;

		port = s4->sin_port;
		loop = is_loopback(s4->sin_addr.s_addr);
		if (s4->sin_addr.s_addr != INADDR_ANY && !loop)
			return rcm_fail(EADDRNOTAVAIL);
	} else {
		return rcm_fail(addr->sa_family == AF_IB ? EAFNOSUPPORT : EINVAL);
	}
	if (loop)
		want = in6addr_loopback.s6_addr;
	if (!port)
		port = htobe16(ephemeral_port(rcm_ps(id)));
	set_addr6(&id->id.route.addr.src_storage, want, port);
	memcpy(id->id.route.addr.addr.ibaddr.sgid.raw, srt_gid(rcm.dev)->raw, 16);
	id->id.verbs = loop ? NULL : rcm.verbs;
	id->id.port_num = loop ? 0 : 1;
	id->state = RCM_ADDR_BOUND;
	return 0;
}

int rcm_bind(struct rcm_id *id, const struct sockaddr *addr)
{
	struct sockaddr_in sin;

	if (!addr)
		return rcm_fail(EINVAL);
	id->bound_family = addr->sa_family;
	if (device_v6())
		return bind6(id, addr);
	if (addr->sa_family == AF_INET6) {
		/* Only the unspecified and the IPv4-mapped forms: softrnic binds
		 * IPv4. */
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)addr;
		static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = s6->sin6_port;
		if (!memcmp(s6->sin6_addr.s6_addr, mapped, 12))
			memcpy(&sin.sin_addr, s6->sin6_addr.s6_addr + 12, 4);
		else if (!IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr) && !IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			return rcm_fail(EADDRNOTAVAIL);    /* an IPv6 address, and our device is IPv4 */
		else if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			sin.sin_addr.s_addr = htobe32(INADDR_LOOPBACK);
	} else if (addr->sa_family == AF_INET) {
		memcpy(&sin, addr, sizeof(sin));
	} else if (addr->sa_family == AF_IB) {
		return rcm_fail(EAFNOSUPPORT);  /* softrnic has no native IB addresses */
	} else {
		return rcm_fail(EINVAL);        /* rdma-core: a family it does not know */
	}
	uint32_t a = sin.sin_addr.s_addr;
	/* Our device's address, any, or a loopback one: the kernel's cma
	 * binds a loopback address to a device too (cma_bind_loopback), and
	 * libfabric's verbs provider binds 127.0.0.1 to probe (device-less
	 * unless our device is on loopback, below). */
	if (a != INADDR_ANY && a != device_ip() && !is_loopback(a))
		return rcm_fail(EADDRNOTAVAIL);
	if (!sin.sin_port)
		sin.sin_port = htobe16(ephemeral_port(rcm_ps(id)));
	memset(&id->id.route.addr.src_storage, 0, sizeof(id->id.route.addr.src_storage));
	memcpy(&id->id.route.addr.src_sin, &sin, sizeof(sin));
	memcpy(id->id.route.addr.addr.ibaddr.sgid.raw, srt_gid(rcm.dev)->raw, 16);
	/* A device bound to a real address (SOFTRNIC_ADDR / SOFTRNIC_IFACE)
	 * has no loopback GID, so a loopback bind there stays device-less.
	 * libfabric's verbs provider needs that: a passive fi_getinfo binds
	 * "localhost" and, when id->verbs is NULL, advertises the device's
	 * interface address (vrb_fill_addr); with a device it advertised
	 * 127.0.0.1 and fi_pingpong's client connected to itself.  A later
	 * resolve attaches the device. */
	bool devless = is_loopback(a) && !is_loopback(device_ip());
	id->id.verbs = devless ? NULL : rcm.verbs;
	id->id.port_num = devless ? 0 : 1;
	id->state = RCM_ADDR_BOUND;
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *cmid, struct sockaddr *addr)
{
	struct rcm_id *id = to_rcm_id(cmid);

	if (!cmid || id->state != RCM_IDLE)
		return rcm_fail(EINVAL);
	return rcm_bind(id, addr);
}

/* ---- resolve --------------------------------------------------------------- */

int rcm_resolve_dst(struct rcm_id *id, const struct sockaddr *dst, uint8_t dgid[16])
{
	struct sockaddr_in sin;
	uint32_t listener_ip;

	/* An IPv6 device reaches IPv6 addresses: the address is the GID.  A
	 * loopback or unspecified destination is this device. */
	if (device_v6()) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)dst;

		if (dst->sa_family != AF_INET6 || IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
			return EAFNOSUPPORT;
		id->local_peer = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) || IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr);
		memcpy(dgid, id->local_peer ? srt_gid(rcm.dev)->raw : s6->sin6_addr.s6_addr, 16);
		set_addr6(&id->id.route.addr.dst_storage, s6->sin6_addr.s6_addr, s6->sin6_port);
		return 0;
	}
	if (dst->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)dst;
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = s6->sin6_port;
		if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			sin.sin_addr.s_addr = htobe32(INADDR_LOOPBACK);
		else if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
			memcpy(&sin.sin_addr, s6->sin6_addr.s6_addr + 12, 4);
		else
			return EAFNOSUPPORT;
	} else if (dst->sa_family == AF_INET) {
		memcpy(&sin, dst, sizeof(sin));
	} else {
		return EAFNOSUPPORT;
	}
	uint32_t a = sin.sin_addr.s_addr;
	id->local_peer = a == INADDR_ANY || is_loopback(a);
	if ((a == INADDR_ANY || is_loopback(a)) && sin.sin_port &&
	    rcm_registry_lookup(rcm_ps(id), be16toh(sin.sin_port), &listener_ip))
		a = listener_ip;
	else if (a == INADDR_ANY)
		a = device_ip();
	memset(dgid, 0, 16);
	dgid[10] = dgid[11] = 0xff;
	memcpy(dgid + 12, &a, 4);
	memset(&id->id.route.addr.dst_storage, 0, sizeof(id->id.route.addr.dst_storage));
	memcpy(&id->id.route.addr.dst_sin, &sin, sizeof(sin));
	return 0;
}

void rcm_fill_route(struct rcm_id *id)
{
	struct rdma_route *r = &id->id.route;
	struct ibv_sa_path_rec *p = r->path_rec;

	memcpy(r->addr.addr.ibaddr.sgid.raw, srt_gid(rcm.dev)->raw, 16);
	memcpy(r->addr.addr.ibaddr.dgid.raw, id->remote_gid, 16);
	r->addr.addr.ibaddr.pkey = htobe16(0xffff);
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return;
		r->path_rec = p;
	}
	memcpy(p->dgid.raw, id->remote_gid, 16);
	memcpy(p->sgid.raw, srt_gid(rcm.dev)->raw, 16);
	p->pkey = htobe16(0xffff);
	p->hop_limit = 64;
	p->traffic_class = id->tos;
	p->reversible = 1;
	p->numb_path = 1;
	p->mtu_selector = 2;    /* exactly */
	p->mtu = id->mtu;
	p->rate_selector = 2;
	p->rate = 3;            /* 10 Gb/s, what rxe reports */
	p->packet_life_time_selector = 2;
	p->packet_life_time = 18;
	r->num_paths = 1;
}

/* A destination on this host's loopback: 127.0.0.0/8, ::1, or an
 * IPv4-mapped 127.0.0.0/8 address. */
static bool is_loopback_dst(const struct sockaddr *dst)
{
	if (dst->sa_family == AF_INET)
		return is_loopback(((const struct sockaddr_in *)dst)->sin_addr.s_addr);
	if (dst->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)dst)->sin6_addr;
		uint32_t v4;

		if (IN6_IS_ADDR_LOOPBACK(a))
			return true;
		memcpy(&v4, a->s6_addr + 12, 4);
		return IN6_IS_ADDR_V4MAPPED(a) && is_loopback(v4);
	}
	return false;
}

/* rdma-core's ucma_addrlen: the families librdmacm passes on. */
static bool known_family(const struct sockaddr *a)
{
	return a->sa_family == AF_INET || a->sa_family == AF_INET6 || a->sa_family == AF_IB;
}

int rdma_resolve_addr(struct rdma_cm_id *cmid, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		      int timeout_ms)
{
	struct rcm_id *id = to_rcm_id(cmid);
	struct rcm_event *e;
	int err;
	(void)timeout_ms;

	if (!cmid || !dst_addr || (id->state != RCM_IDLE && id->state != RCM_ADDR_BOUND))
		return rcm_fail(EINVAL);
	/* rdma-core checks both families before the kernel sees them. */
	if (!known_family(dst_addr) || (src_addr && !known_family(src_addr)))
		return rcm_fail(EINVAL);
	if (id->state == RCM_IDLE) {
		struct sockaddr_in any = { .sin_family = AF_INET };
		if (rcm_bind(id, src_addr ? src_addr : (struct sockaddr *)&any))
			return -1;
	}
	/* A connecting id speaks from our device's own address (a
	 * device-less loopback bind, above, takes the device now), except
	 * towards this host's loopback.  There the kernel's route lookup
	 * gives an unbound id the loopback route's preferred source,
	 * 127.0.0.1 (::1), whichever device carries the connection, so the
	 * two ends of a connection on one host name the same address, and
	 * programs rely on it: Valkey's RDMA module takes a connection as
	 * local, for its protected mode, only when the peer's address is its
	 * own (connRdmaIsLocal).  softrnic gives each process its own
	 * 127.0.0.N only to keep their UDP sockets apart; these addresses are
	 * what the program sees (and the REQ's RDMA-CM header carries), the
	 * packets go by GID. */
	if (is_loopback_dst(dst_addr)) {
		if (device_v6() && IN6_IS_ADDR_UNSPECIFIED(&id->id.route.addr.src_sin6.sin6_addr))
			set_addr6(&id->id.route.addr.src_storage, in6addr_loopback.s6_addr,
				  id->id.route.addr.src_sin6.sin6_port);
		else if (!device_v6() && id->id.route.addr.src_sin.sin_addr.s_addr == INADDR_ANY)
			id->id.route.addr.src_sin.sin_addr.s_addr = htobe32(INADDR_LOOPBACK);
	} else if (device_v6())
		set_addr6(&id->id.route.addr.src_storage, srt_gid(rcm.dev)->raw, id->id.route.addr.src_sin6.sin6_port);
	else if (id->id.route.addr.src_sin.sin_addr.s_addr == INADDR_ANY || is_loopback(device_ip()) ||
		 !id->id.verbs)
		id->id.route.addr.src_sin.sin_addr.s_addr = device_ip();
	id->id.verbs = rcm.verbs;
	id->id.port_num = 1;
	err = rcm_resolve_dst(id, dst_addr, id->remote_gid);
	e = rcm_new_event(id, err ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED, err ? -err : 0);
	if (!e)
		return rcm_fail(ENOMEM);
	if (!err)
		id->state = RCM_ADDR_RESOLVED;
	rcm_queue_event(id, e);
	if (id->sync) {
		err = rcm_wait_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
		if (err)
			return rcm_fail(err);
	}
	return 0;
}

int rdma_resolve_route(struct rdma_cm_id *cmid, int timeout_ms)
{
	struct rcm_id *id = to_rcm_id(cmid);
	struct rcm_event *e;
	(void)timeout_ms;

	if (!cmid || id->state != RCM_ADDR_RESOLVED)
		return rcm_fail(EINVAL);
	rcm_fill_route(id);
	if (!id->id.route.path_rec)
		return rcm_fail(ENOMEM);
	e = rcm_new_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	if (!e)
		return rcm_fail(ENOMEM);
	id->state = RCM_ROUTE_RESOLVED;
	rcm_queue_event(id, e);
	if (id->sync) {
		int err = rcm_wait_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL);
		if (err)
			return rcm_fail(err);
	}
	return 0;
}

/* ---- addresses the program asks about ----------------------------------------- */

uint16_t rdma_get_src_port(struct rdma_cm_id *id)
{
	return id ? id->route.addr.src_sin.sin_port : 0;
}

uint16_t rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id ? id->route.addr.dst_sin.sin_port : 0;
}

/* (rdma_get_local_addr / rdma_get_peer_addr are inline in rdma_cma.h.) */

/* ---- devices ------------------------------------------------------------- */

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	int e = rcm_init();

	if (e) {
		if (num_devices)
			*num_devices = 0;
		errno = e;
		return NULL;
	}
	list = calloc(2, sizeof(*list));
	if (!list)
		return NULL;
	list[0] = rcm.verbs;
	if (num_devices)
		*num_devices = 1;
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* ---- rdma_getaddrinfo ------------------------------------------------------- */

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	/* A name with an IPv4 address resolves to it (softrnic binds IPv4
	 * unless told otherwise); an IPv6-only name, such as a numeric IPv6
	 * address, to IPv6.  A hint's family wins when it gives one. */
	struct addrinfo h = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL, *pick;
	struct rdma_addrinfo *r;
	int passive = hints && (hints->ai_flags & RAI_PASSIVE);
	int e;

	if (!res)
		return rcm_fail(EINVAL);
	/* No names: the addresses come in the hints (libfabric does this). */
	if (!node && !service) {
		if (!hints || (!hints->ai_src_addr && !hints->ai_dst_addr))
			return rcm_fail(EINVAL);
		r = calloc(1, sizeof(*r));
		if (!r)
			return rcm_fail(ENOMEM);
		r->ai_flags = hints->ai_flags;
		r->ai_family = hints->ai_family ? hints->ai_family : AF_INET;
		r->ai_port_space = hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
		r->ai_qp_type = hints->ai_qp_type ? hints->ai_qp_type :
				r->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
		if (hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = malloc(hints->ai_src_len);
			if (r->ai_src_addr) {
				memcpy(r->ai_src_addr, hints->ai_src_addr, hints->ai_src_len);
				r->ai_src_len = hints->ai_src_len;
			}
		}
		if (hints->ai_dst_addr && hints->ai_dst_len) {
			r->ai_dst_addr = malloc(hints->ai_dst_len);
			if (r->ai_dst_addr) {
				memcpy(r->ai_dst_addr, hints->ai_dst_addr, hints->ai_dst_len);
				r->ai_dst_len = hints->ai_dst_len;
			}
		}
		if ((hints->ai_src_len && !r->ai_src_addr) || (hints->ai_dst_len && !r->ai_dst_addr)) {
			rdma_freeaddrinfo(r);
			return rcm_fail(ENOMEM);
		}
		*res = r;
		return 0;
	}
	if (hints && (hints->ai_family == AF_INET || hints->ai_family == AF_INET6))
		h.ai_family = hints->ai_family;
	if (hints && (hints->ai_flags & RAI_NUMERICHOST))
		h.ai_flags |= AI_NUMERICHOST;
	if (passive)
		h.ai_flags |= AI_PASSIVE;
	e = getaddrinfo(node, service, &h, &ai);
	if (e) {
		errno = e == EAI_NONAME ? ENOENT : e == EAI_MEMORY ? ENOMEM : EINVAL;
		return e;       /* rdma-core returns the getaddrinfo code */
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		freeaddrinfo(ai);
		return rcm_fail(ENOMEM);
	}
	pick = ai;
	for (struct addrinfo *x = ai; x; x = x->ai_next)
		if (x->ai_family == AF_INET) {
			pick = x;
			break;
		}
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = pick->ai_family;
	r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type :
			r->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
	socklen_t alen = pick->ai_addrlen;
	struct sockaddr *a = malloc(alen);
	if (!a) {
		free(r);
		freeaddrinfo(ai);
		return rcm_fail(ENOMEM);
	}
	memcpy(a, pick->ai_addr, alen);
	freeaddrinfo(ai);
	if (passive) {
		r->ai_src_addr = a;
		r->ai_src_len = alen;
	} else {
		r->ai_dst_addr = a;
		r->ai_dst_len = alen;
		if (hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = malloc(hints->ai_src_len);
			if (r->ai_src_addr) {
				memcpy(r->ai_src_addr, hints->ai_src_addr, hints->ai_src_len);
				r->ai_src_len = hints->ai_src_len;
			}
		}
	}
	*res = r;
	return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}
