/*
 * xdp_port.c — opening and running the AF_XDP port (xdp_port.h): the
 * steering program through libbpf, the UMEM and socket through libxdp's
 * xsk API, the UMEM and its rings, the XDP
 * socket, the frames of each side, and the neighbours' Ethernet
 * addresses.
 *
 * The UMEM's first half feeds the fill ring (receive); its second half is
 * the transmit side's free list.  Where the kernel has AF_XDP's
 * multi-buffer mode, a frame of more than one chunk comes as several
 * descriptors (all but the last marked XDP_PKT_CONTD) and is put
 * together in a bounce buffer; one is sent the same way.  A received frame goes back to the fill
 * ring when its batch is done (srt_xdp_rx_release); a sent one comes back
 * to the free list through the completion ring.  In copy mode the kernel
 * sends what the transmit ring holds only inside a sendto() on the socket
 * (up to 32 frames a call), so srt_xdp_tx_kick calls it until the ring is
 * empty or the kernel says it is busy.
 */
#include "runtime/xdp_port.h"

#include <errno.h>
#include <ifaddrs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "runtime/xdp_frame.h"
#include "runtime/xdp_steer_obj.h"
#include "wire/wire.h"

/* AF_XDP's multi-buffer mode (Linux 6.6), which Debian 12's kernel
 * headers predate: the bind flag, and the descriptor option saying that
 * the packet goes on in the next descriptor. */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

struct srt_xdp_rings {
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
};

/* libxdp and libbpf explain their failures on stderr by default; the
 * port says why in one line of its own instead. */
static int quiet_bpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

/* The interface's index, MAC address and the mask of addr on it. */
static int find_interface(struct srt_xdp *x, char *err, size_t errlen)
{
	struct ifaddrs *ifa, *i;
	bool have_addr = false, have_mac = false;

	x->ifindex = (int)if_nametoindex(x->ifname);
	if (!x->ifindex) {
		snprintf(err, errlen, "no interface named %s", x->ifname);
		return ENODEV;
	}
	if (getifaddrs(&ifa)) {
		snprintf(err, errlen, "getifaddrs: %s", strerror(errno));
		return errno;
	}
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, x->ifname))
			continue;
		if (i->ifa_addr->sa_family == AF_INET && i->ifa_netmask &&
		    ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr == x->addr.s_addr) {
			x->mask = ((struct sockaddr_in *)(void *)i->ifa_netmask)->sin_addr;
			have_addr = true;
		} else if (i->ifa_addr->sa_family == AF_PACKET) {
			const struct sockaddr_ll *ll = (const struct sockaddr_ll *)(void *)i->ifa_addr;

			if (ll->sll_halen == 6) {
				memcpy(x->mac, ll->sll_addr, 6);
				have_mac = true;
			}
		}
	}
	freeifaddrs(ifa);
	if (!have_addr) {
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &x->addr, a, sizeof(a));
		snprintf(err, errlen, "%s does not hold softrnic's address %s", x->ifname, a);
		return EADDRNOTAVAIL;
	}
	if (!have_mac) {
		snprintf(err, errlen, "%s has no Ethernet address", x->ifname);
		return ENODEV;
	}
	return 0;
}

/* The program, loaded and attached through a BPF link: the kernel takes
 * it off the interface when the link's last descriptor closes, so a
 * process killed with the port open leaves nothing behind (a program
 * left attached would keep the dead process's socket, and with it the
 * queue, through its map).  A program already on the interface, attached
 * by anyone, is left alone: EBUSY, said. */
/* Is the interface a veth (its driver's name, ETHTOOL_GDRVINFO)? */
static bool is_veth(const struct srt_xdp *x)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool veth = false;

	if (fd < 0)
		return false;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, x->ifname);
	ifr.ifr_data = (void *)&info;
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0)
		veth = !strcmp(info.driver, "veth");
	close(fd);
	return veth;
}

static int attach_program(struct srt_xdp *x, enum srt_xdp_mode mode, char *err, size_t errlen)
{
	DECLARE_LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "softrnic_steer");
	struct bpf_program *prog;
	int e;

	x->obj = bpf_object__open_mem(srt_xdp_steer_obj, srt_xdp_steer_obj_len, &oo);
	if (!x->obj) {
		e = errno ? errno : EINVAL;
		snprintf(err, errlen, "cannot open the XDP program: %s", strerror(e));
		return e;
	}
	e = -bpf_object__load(x->obj);
	if (e) {
		snprintf(err, errlen, "cannot load the XDP program: %s", strerror(e));
		return e;
	}
	prog = bpf_object__find_program_by_name(x->obj, "softrnic_steer");
	if (!prog) {
		snprintf(err, errlen, "the XDP program has no softrnic_steer");
		return ENOENT;
	}
	/* The driver's mode first, unless told otherwise or on veth;
	 * where the driver refuses (veth with an MTU above a page's worth
	 * of frame: ERANGE), the generic one.  On veth the generic mode is
	 * the faster: the driver's mode passes each frame through a NAPI
	 * ring of the receiving end (measured between two namespaces,
	 * ib_write_bw 64 KiB at MTU 1500: 513 against 355 MB/s; ib_send_lat
	 * 3.37 against 3.74 us), and neither has zero copy there. */
	DECLARE_LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_DRV_MODE);
	x->link_fd = -1;
	errno = 0;
	if (mode == SRT_XDP_NATIVE || (mode == SRT_XDP_AUTO && !is_veth(x)))
		x->link_fd = bpf_link_create(bpf_program__fd(prog), x->ifindex, BPF_XDP, &lo);
	x->native = x->link_fd >= 0;
	if (x->link_fd < 0 && mode != SRT_XDP_NATIVE && errno != EBUSY && errno != EEXIST) {
		lo.flags = XDP_FLAGS_SKB_MODE;
		x->link_fd = bpf_link_create(bpf_program__fd(prog), x->ifindex, BPF_XDP, &lo);
	}
	if (x->link_fd < 0) {
		e = errno ? errno : EINVAL;
		snprintf(err, errlen, "cannot attach an XDP program to %s: %s%s", x->ifname, strerror(e),
			 e == EBUSY || e == EEXIST ? " (the interface has one already)" : "");
		return e;
	}
	return 0;
}

/* The program steers our address's RoCEv2 to our socket. */
static int steer_to_socket(struct srt_xdp *x, char *err, size_t errlen)
{
	struct bpf_object *obj = x->obj;
	int xsks = bpf_object__find_map_fd_by_name(obj, "softrnic_xsks");
	int addr = bpf_object__find_map_fd_by_name(obj, "softrnic_addr");
	uint32_t zero = 0;
	/* As xdp_steer.bpf.c's struct softrnic_steer. */
	struct { uint32_t addr, qpn_lo, qpn_hi, qp1, max_frame; } ours = {
		x->addr.s_addr, x->steer.qpn_lo, x->steer.qpn_hi, x->steer.qp1,
		x->steer.mtu + WIRE_ETH_LEN < srt_xdp_max_frame(x) ? x->steer.mtu + WIRE_ETH_LEN : srt_xdp_max_frame(x) };
	int e = xsks < 0 ? xsks : xsk_socket__update_xskmap(x->xsk, xsks);

	if (!e)
		e = addr < 0 ? addr : bpf_map_update_elem(addr, &zero, &ours, BPF_ANY) ? -errno : 0;
	if (e)
		snprintf(err, errlen, "cannot steer %s's RoCEv2 to the XDP socket: %s", x->ifname, strerror(-e));
	return -e;
}

/* Does a program on the interface say a live process holds its queue?
 * (A process's program goes with it, through its link; its socket a
 * little later.) */
static bool held_by_live_process(const struct srt_xdp *x)
{
	uint32_t id = 0;

	return bpf_xdp_query_id(x->ifindex, 0, &id) == 0 && id != 0;
}

static int open_socket(struct srt_xdp *x, char *err, size_t errlen)
{
	struct srt_xdp_rings *r = x->rings;
	struct xsk_umem_config uc = { .fill_size = SRT_XDP_RING, .comp_size = SRT_XDP_RING,
				      .frame_size = SRT_XDP_FRAME_SIZE, .frame_headroom = 0, .flags = 0 };
	struct xsk_socket_config sc = { .rx_size = SRT_XDP_RING, .tx_size = SRT_XDP_RING,
					.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD };
	/* Zero copy before copy mode, multi-buffer before one chunk a
	 * frame: the first the kernel and driver take. */
	static const uint16_t binds[] = { XDP_ZEROCOPY | XDP_USE_SG, XDP_COPY | XDP_USE_SG, XDP_ZEROCOPY, XDP_COPY };
	size_t size = (size_t)SRT_XDP_FRAMES * SRT_XDP_FRAME_SIZE;
	int e;

	x->area = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x->area == MAP_FAILED) {
		x->area = NULL;
		snprintf(err, errlen, "no memory for the XDP frames: %s", strerror(errno));
		return ENOMEM;
	}
	e = xsk_umem__create(&x->umem, x->area, size, &r->fill, &r->comp, &uc);
	if (e) {
		x->umem = NULL;
		snprintf(err, errlen, "cannot register the XDP frames: %s", strerror(-e));
		return -e;
	}
	/* A process of ours that just ended holds the queue until the
	 * kernel has freed its socket, which it does a little later (its
	 * program and map go first, after an RCU grace period): EBUSY is
	 * tried again for up to SRT_XDP_BUSY_WAIT_MS. */
	for (unsigned waited = 0;; waited += 10) {
		for (unsigned b = 0; b < sizeof(binds) / sizeof(binds[0]); b++) {
			sc.bind_flags = XDP_USE_NEED_WAKEUP | binds[b];
			e = xsk_socket__create(&x->xsk, x->ifname, 0, x->umem, &r->rx, &r->tx, &sc);
			x->zerocopy = !e && (binds[b] & XDP_ZEROCOPY);
			x->sg = !e && (binds[b] & XDP_USE_SG);
			if (!e || e == -EBUSY)
				break;
		}
		if (e != -EBUSY || waited >= SRT_XDP_BUSY_WAIT_MS || held_by_live_process(x))
			break;
		usleep(10 * 1000);
	}
	if (e) {
		x->xsk = NULL;
		snprintf(err, errlen, "cannot open an XDP socket on %s: %s%s", x->ifname, strerror(-e),
			 e == -EBUSY ? " (another process has its queue 0)" : "");
		return -e;
	}
	x->fd = xsk_socket__fd(x->xsk);
	if (x->sg) {
		x->rx_bounce = malloc(SRT_XDP_RX_BATCH * sizeof(*x->rx_bounce));
		x->tx_bounce = malloc(SRT_XDP_MAX_FRAME_SG);
		if (!x->rx_bounce || !x->tx_bounce) {
			snprintf(err, errlen, "no memory for the XDP bounce buffers");
			return ENOMEM;
		}
	}

	/* Every receive frame to the kernel; every transmit frame free. */
	uint32_t idx;
	if (xsk_ring_prod__reserve(&r->fill, SRT_XDP_RING, &idx) != SRT_XDP_RING) {
		snprintf(err, errlen, "the XDP fill ring is short");
		return EINVAL;
	}
	for (unsigned i = 0; i < SRT_XDP_RING; i++)
		*xsk_ring_prod__fill_addr(&r->fill, idx + i) = (uint64_t)i * SRT_XDP_FRAME_SIZE;
	xsk_ring_prod__submit(&r->fill, SRT_XDP_RING);
	for (unsigned i = 0; i < SRT_XDP_FRAMES / 2; i++)
		x->free_tx[i] = (uint64_t)(SRT_XDP_FRAMES / 2 + i) * SRT_XDP_FRAME_SIZE;
	x->nfree_tx = SRT_XDP_FRAMES / 2;
	return 0;
}

/* The port of this process, for the fork handler.  A child that never
 * opens a device (a daemon's worker, a launcher) must not keep the
 * program attached and the queue held after the parent is gone: the
 * next process on the address would find the queue taken, and its QPs'
 * packets steered to a socket nobody reads. */
static struct srt_xdp *the_port;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void close_in_child(void)
{
	srt_xdp_close_inherited(the_port);
	the_port = NULL;
}

static void register_atfork(void)
{
	(void)pthread_atfork(NULL, NULL, close_in_child);
}

struct srt_xdp *srt_xdp_open(const char *ifname, struct in_addr addr, const struct srt_xdp_steer *steer,
			     enum srt_xdp_mode mode, char *err, size_t errlen)
{
	struct srt_xdp *x;
	int e;

	if (strlen(ifname) >= IF_NAMESIZE) {
		snprintf(err, errlen, "interface name too long: %s", ifname);
		return NULL;
	}
	libbpf_set_print(quiet_bpf);
	x = calloc(1, sizeof(*x));
	if (!x || !(x->rings = calloc(1, sizeof(*x->rings)))) {
		free(x);
		snprintf(err, errlen, "no memory for the XDP port");
		return NULL;
	}
	x->fd = -1;
	x->link_fd = -1;
	strcpy(x->ifname, ifname);
	x->addr = addr;
	x->steer = *steer;
	/* The socket first: if another process holds the queue, the
	 * interface's program is left as it is. */
	e = find_interface(x, err, errlen);
	if (!e)
		e = open_socket(x, err, errlen);
	if (!e)
		e = attach_program(x, mode, err, errlen);
	if (!e)
		e = steer_to_socket(x, err, errlen);
	if (e) {
		srt_xdp_close(x);
		return NULL;
	}
	pthread_once(&atfork_once, register_atfork);
	the_port = x;
	return x;
}

void srt_xdp_close_inherited(struct srt_xdp *x)
{
	if (!x)
		return;
	if (x->link_fd >= 0)
		close(x->link_fd);
	x->link_fd = -1;
	/* The socket's descriptor and its rings' mappings (a mapping holds
	 * the socket, and with it the queue), the program's and maps'
	 * descriptors (the socket map holds it too): all the child's
	 * copies. */
	if (x->xsk)
		xsk_socket__delete(x->xsk);
	if (x->umem)
		xsk_umem__delete(x->umem);
	x->xsk = NULL;
	x->umem = NULL;
	x->fd = -1;
	if (x->obj)
		bpf_object__close(x->obj);
	x->obj = NULL;
}


void srt_xdp_detach(struct srt_xdp *x)
{
	if (x && x->link_fd >= 0) {
		close(x->link_fd);
		x->link_fd = -1;
	}
}

void srt_xdp_close(struct srt_xdp *x)
{
	if (!x)
		return;
	if (the_port == x)
		the_port = NULL;
	if (x->xsk)
		xsk_socket__delete(x->xsk);
	if (x->umem)
		xsk_umem__delete(x->umem);
	srt_xdp_detach(x);
	if (x->obj)
		bpf_object__close(x->obj);
	if (x->area)
		munmap(x->area, (size_t)SRT_XDP_FRAMES * SRT_XDP_FRAME_SIZE);
	free(x->rx_bounce);
	free(x->tx_bounce);
	free(x->rings);
	free(x);
}

/* ---- neighbours ---------------------------------------------------------- */

/* The kernel's entry for ip on our interface, from /proc/net/arp ("IP
 * address, HW type, Flags, HW address, Mask, Device"; flags 0x2: the
 * address is known). */
static bool read_arp(const struct srt_xdp *x, uint32_t ip, uint8_t mac[6])
{
	char line[256], a[64], hw[64], dev[IF_NAMESIZE + 8];
	unsigned type, flags, m[6];
	struct in_addr in;
	bool found = false;
	FILE *f = fopen("/proc/net/arp", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s 0x%x 0x%x %63s %*s %19s", a, &type, &flags, hw, dev) != 5)
			continue;
		if (strcmp(dev, x->ifname) || !(flags & 2u) || inet_pton(AF_INET, a, &in) != 1 || in.s_addr != ip)
			continue;
		if (sscanf(hw, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
			continue;
		for (int i = 0; i < 6; i++)
			mac[i] = (uint8_t)m[i];
		found = true;
	}
	fclose(f);
	return found;
}

#define NEIGHBOUR_RETRY_NS (1000ull * 1000)

const uint8_t *srt_xdp_neighbour(struct srt_xdp *x, uint32_t ip, bool fresh, uint64_t (*now_ns)(void))
{
	struct srt_xdp_neighbour *n = NULL, *oldest = &x->neigh[0];

	if ((ip & x->mask.s_addr) != (x->addr.s_addr & x->mask.s_addr) || ip == x->addr.s_addr)
		return NULL;
	for (unsigned i = 0; i < SRT_XDP_NEIGHBOURS; i++) {
		if (x->neigh[i].ip == ip) {
			n = &x->neigh[i];
			break;
		}
		if (x->neigh[i].looked_ns < oldest->looked_ns)
			oldest = &x->neigh[i];
	}
	if (n && n->known && !fresh)
		return n->mac;
	uint64_t now = now_ns();
	if (n && !fresh && now - n->looked_ns < NEIGHBOUR_RETRY_NS)
		return NULL;
	if (!n) {
		n = oldest;
		memset(n, 0, sizeof(*n));
		n->ip = ip;
	}
	n->looked_ns = now;
	n->known = read_arp(x, ip, n->mac);
	if (!n->known)
		x->neigh_misses++;
	return n->known ? n->mac : NULL;
}

/* ---- transmit ------------------------------------------------------------ */

/* Frames the kernel has sent come back to the free list. */
static void take_back(struct srt_xdp *x)
{
	struct srt_xdp_rings *r = x->rings;
	uint32_t idx;
	unsigned n = xsk_ring_cons__peek(&r->comp, SRT_XDP_RING, &idx);

	for (unsigned i = 0; i < n; i++)
		x->free_tx[x->nfree_tx++] = *xsk_ring_cons__comp_addr(&r->comp, idx + i);
	if (n)
		xsk_ring_cons__release(&r->comp, n);
}

uint64_t srt_xdp_tx_frame(struct srt_xdp *x)
{
	if (!x->nfree_tx)
		take_back(x);
	if (!x->nfree_tx && x->tx_unsent) {
		srt_xdp_tx_kick(x);
		take_back(x);
	}
	if (!x->nfree_tx)
		return UINT64_MAX;
	return x->free_tx[--x->nfree_tx];
}

bool srt_xdp_tx_queue(struct srt_xdp *x, uint64_t addr, uint32_t len)
{
	struct srt_xdp_rings *r = x->rings;
	uint32_t idx;

	if (xsk_ring_prod__reserve(&r->tx, 1, &idx) != 1) {
		x->free_tx[x->nfree_tx++] = addr;
		return false;
	}
	struct xdp_desc *d = xsk_ring_prod__tx_desc(&r->tx, idx);
	d->addr = addr;
	d->len = len;
	d->options = 0;
	xsk_ring_prod__submit(&r->tx, 1);
	x->tx_unsent++;
	x->tx_packets++;
	return true;
}

bool srt_xdp_tx_queue_long(struct srt_xdp *x, uint32_t len)
{
	struct srt_xdp_rings *r = x->rings;
	uint64_t addr[SRT_XDP_MAX_FRAME_SG / SRT_XDP_FRAME_SIZE + 1];
	unsigned n = (len + SRT_XDP_FRAME_SIZE - 1) / SRT_XDP_FRAME_SIZE, got = 0;
	uint32_t idx;

	if (!x->sg || len > srt_xdp_max_frame(x))
		return false;
	while (got < n && (addr[got] = srt_xdp_tx_frame(x)) != UINT64_MAX)
		got++;
	if (got < n || xsk_ring_prod__reserve(&r->tx, n, &idx) != n) {
		while (got)
			x->free_tx[x->nfree_tx++] = addr[--got];
		return false;
	}
	for (unsigned i = 0; i < n; i++) {
		uint32_t off = i * SRT_XDP_FRAME_SIZE, piece = len - off < SRT_XDP_FRAME_SIZE ? len - off : SRT_XDP_FRAME_SIZE;
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&r->tx, idx + i);

		memcpy(srt_xdp_data(x, addr[i]), x->tx_bounce + off, piece);
		d->addr = addr[i];
		d->len = piece;
		d->options = i + 1 < n ? XDP_PKT_CONTD : 0;
	}
	xsk_ring_prod__submit(&r->tx, n);
	x->tx_unsent += n;
	x->tx_packets++;
	x->tx_multi++;
	return true;
}

enum ibv_mtu srt_xdp_ib_mtu(const struct srt_xdp *x)
{
	return x->sg ? IBV_MTU_4096 : IBV_MTU_2048;
}

void srt_xdp_tx_kick(struct srt_xdp *x)
{
	struct srt_xdp_rings *r = x->rings;

	if (!x->tx_unsent)
		return;
	/* Copy mode sends at most 32 frames per call: call until the
	 * kernel has taken every descriptor, or says to come back. */
	for (unsigned tries = 0; tries < SRT_XDP_RING / 32 + 1; tries++) {
		if (xsk_prod_nb_free(&r->tx, SRT_XDP_RING) == SRT_XDP_RING)
			break;
		if (!xsk_ring_prod__needs_wakeup(&r->tx) && x->zerocopy)
			break;
		x->tx_kicks++;
		if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0) {
			if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS)
				break;  /* ENETDOWN and the like: the frames wait */
			take_back(x);
		}
	}
	/* What the kernel left in the ring is kicked again at the next
	 * flush. */
	x->tx_unsent = xsk_prod_nb_free(&r->tx, SRT_XDP_RING) != SRT_XDP_RING;
	take_back(x);
}

/* ---- receive ------------------------------------------------------------- */

unsigned srt_xdp_rx_peek(struct srt_xdp *x, const uint8_t **data, uint32_t *len, unsigned max)
{
	struct srt_xdp_rings *r = x->rings;
	struct srt_xdp_piece pc[2 * SRT_XDP_RX_BATCH];
	struct srt_xdp_gathered out[SRT_XDP_RX_BATCH];
	uint32_t idx = 0;
	unsigned n, want;

	if (max > SRT_XDP_RX_BATCH)
		max = SRT_XDP_RX_BATCH;
	/* Room for each of max frames in two chunks (multi-buffer), among
	 * the chunks that may be held. */
	want = x->sg ? 2 * max : max;
	if (want > SRT_XDP_RING - x->nheld)
		want = SRT_XDP_RING - x->nheld;
	n = xsk_ring_cons__peek(&r->rx, want, &idx);
	for (unsigned i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&r->rx, idx + i);

		pc[i] = (struct srt_xdp_piece){ srt_xdp_data(x, xsk_umem__add_offset_to_addr(d->addr)), d->len,
						(d->options & XDP_PKT_CONTD) != 0 };
	}
	struct srt_xdp_gather_out g = srt_xdp_gather(pc, n, n == want, x->rx_bounce ? x->rx_bounce[0] : NULL,
						     SRT_XDP_MAX_FRAME_SG, out, max);
	/* Every chunk taken is held until the batch is done, a dropped
	 * frame's too; the rest are read again next time. */
	for (unsigned i = 0; i < g.used; i++)
		x->held[x->nheld++] = xsk_umem__extract_addr(xsk_ring_cons__rx_desc(&r->rx, idx + i)->addr);
	if (g.used < n)
		xsk_ring_cons__cancel(&r->rx, n - g.used);
	if (g.used)
		xsk_ring_cons__release(&r->rx, g.used);
	for (unsigned i = 0; i < g.frames; i++) {
		data[i] = out[i].data;
		len[i] = out[i].len;
	}
	x->rx_packets += g.frames;
	x->rx_multi += g.multi;
	x->rx_broken += g.dropped;
	return g.frames;
}

void srt_xdp_rx_release(struct srt_xdp *x)
{
	struct srt_xdp_rings *r = x->rings;
	uint32_t idx;

	if (!x->nheld)
		return;
	/* The fill ring has room for every frame of the receive half. */
	if (xsk_ring_prod__reserve(&r->fill, x->nheld, &idx) != x->nheld)
		return;
	for (unsigned i = 0; i < x->nheld; i++)
		*xsk_ring_prod__fill_addr(&r->fill, idx + i) = x->held[i];
	xsk_ring_prod__submit(&r->fill, x->nheld);
	x->nheld = 0;
	if (xsk_ring_prod__needs_wakeup(&r->fill))
		(void)recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

uint64_t srt_xdp_rx_lost(const struct srt_xdp *x)
{
	struct xdp_statistics st;
	socklen_t len = sizeof(st);

	memset(&st, 0, sizeof(st));
	if (x->fd < 0 || getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &st, &len))
		return 0;
	return st.rx_dropped + st.rx_invalid_descs + st.rx_ring_full + st.rx_fill_ring_empty_descs;
}

bool srt_xdp_rx_pending(const struct srt_xdp *x)
{
	const struct xsk_ring_cons *rx = &x->rings->rx;

	return __atomic_load_n(rx->producer, __ATOMIC_ACQUIRE) != *rx->consumer;
}
