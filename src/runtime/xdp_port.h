/*
 * xdp_port.h — softrnic's AF_XDP port: RoCEv2 frames sent and received
 * through an XDP socket on one named interface (SOFTRNIC_XDP=<ifname>),
 * bypassing the kernel's IP and UDP stacks.  The AF_XDP path
 * (path_xdp.c) is its implementation of the path contract (path.h).
 *
 * Opening: the socket is bound to queue 0 (if another process holds it,
 * nothing else is touched), then libbpf attaches xdp_steer.bpf.c to the
 * interface through a BPF link (srt_xdp_mode; gone with the process
 * however it ends), which steers IPv4 UDP
 * 4791 for our address to the socket and passes everything else (ARP
 * among it) to the kernel; a UMEM of
 * SRT_XDP_FRAMES frames is shared between the receive side (the fill
 * ring) and the transmit side (a free list); the socket is bound in
 * zero-copy mode where the driver offers it, else in copy mode (veth,
 * virtio-net).  It needs CAP_NET_ADMIN and CAP_BPF (or root) and an
 * interface that takes XDP: without them srt_xdp_open says why, and the
 * device uses its UDP socket as without SOFTRNIC_XDP.
 *
 * What the port does not do (trade-offs, stated): one queue only (an
 * interface with several receive queues spreads RoCEv2 over them, and
 * the others' packets go to the kernel: set it to one queue with
 * `ethtool -L`); IPv4 destinations on the interface's own subnet only
 * (others go by UDP: no gateway routing); a frame in one chunk where
 * the kernel cannot split frames over chunks (AF_XDP's multi-buffer
 * mode, XDP_USE_SG, Linux 6.6 on): there the port's active MTU is at
 * most 2048 (srt_xdp_ib_mtu; a larger packet, of a QP told a larger MTU,
 * goes by UDP), with it 4096, a frame of more than a chunk arriving in
 * two and leaving in two, copied once more on each side (the receiver
 * puts the pieces together in a bounce buffer, the sender builds the
 * frame in one and copies it into the chunks); the neighbour's
 * MAC address read from the kernel's table (/proc/net/arp), which the
 * kernel fills while the first packets to a neighbour go by UDP; a
 * softrnic peer on the same host over UDP sockets with GSO (veth hands
 * its runs on whole) reaches the port partly through the kernel (runs
 * longer than the MTU, which the program leaves there) and partly
 * through the socket (path_xdp.c cuts the shorter runs), so its packets
 * arrive out of order: correct, through selective repeat, but slow —
 * give such a peer the AF_XDP port too, or SOFTRNIC_GSO=0.
 */
#ifndef SOFTRNIC_RUNTIME_XDP_PORT_H
#define SOFTRNIC_RUNTIME_XDP_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <net/if.h>
#include <netinet/in.h>

#include <infiniband/verbs.h>

#define SRT_XDP_FRAMES 4096u
#define SRT_XDP_FRAME_SIZE 4096u
#define SRT_XDP_RING 2048u              /* each of the four rings */
/* The largest frame in one chunk: a chunk less the headroom XDP keeps
 * in front of what it receives. */
#define SRT_XDP_MAX_FRAME (SRT_XDP_FRAME_SIZE - 256u)
/* With multi-buffer, a frame in up to two chunks: the largest RoCEv2
 * packet of MTU 4096 (4096 bytes of payload, BTH, RETH and immediate,
 * ICRC) with its Ethernet, IPv4 and UDP headers is 4 182 bytes. */
#define SRT_XDP_MAX_FRAME_SG (2u * SRT_XDP_MAX_FRAME)
/* Frames read per batch (srt_xdp_rx_peek's max), each of which may need
 * a bounce buffer to be put together in. */
#define SRT_XDP_RX_BATCH 16u
#define SRT_XDP_NEIGHBOURS 64u
#define SRT_XDP_BUSY_WAIT_MS 500u       /* for a queue a dead process's socket holds */

struct xsk_umem;
struct xsk_socket;
struct bpf_object;

/* What the program steers to the socket besides our address: the
 * destination QPNs [qpn_lo, qpn_hi) (a process sharing the address owns
 * its slot's range, share_steer.h; alone, all of them), QP1's CM
 * messages only when qp1 (alone: on a shared address softrnic-hostd
 * hands each process its own), and frames no longer than the
 * interface's MTU (with its Ethernet header) allows. */
struct srt_xdp_steer {
	uint32_t qpn_lo, qpn_hi;
	bool qp1;
	unsigned mtu;
};

/* One neighbour's Ethernet address, as the kernel's table gave it. */
struct srt_xdp_neighbour {
	uint32_t ip;                    /* network order; 0: unused slot */
	uint8_t mac[6];
	bool known;
	uint64_t looked_ns;             /* when the table was last read for it */
};

struct srt_xdp_rings;                   /* the four rings (xdp_port.c) */

struct srt_xdp {
	char ifname[IF_NAMESIZE];
	int ifindex;
	struct in_addr addr, mask;      /* ours, and our subnet's */
	struct srt_xdp_steer steer;
	uint8_t mac[6];
	bool zerocopy;                  /* how the socket is bound */
	bool sg;                        /* bound with XDP_USE_SG (multi-buffer) */
	int fd;                         /* the XDP socket */
	struct bpf_object *obj;         /* the steering program and its maps */
	int link_fd;                    /* its attachment (a BPF link), or -1 */
	bool native;                    /* in the driver's XDP mode, not generic */
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct srt_xdp_rings *rings;
	uint8_t *area;                  /* the UMEM */
	/* Transmit frames not in use (addresses in the UMEM). */
	uint64_t free_tx[SRT_XDP_FRAMES / 2];
	unsigned nfree_tx;
	unsigned tx_unsent;             /* submitted, not yet kicked */
	/* Received frames handed out in a batch, until recv_done. */
	uint64_t held[SRT_XDP_RING];
	unsigned nheld;
	/* Frames that came in several chunks, put together (sg only), one
	 * per frame of a batch; and the one a long frame is built in. */
	uint8_t (*rx_bounce)[SRT_XDP_MAX_FRAME_SG];
	uint8_t *tx_bounce;
	struct srt_xdp_neighbour neigh[SRT_XDP_NEIGHBOURS];
	uint64_t tx_packets, rx_packets, tx_dropped, tx_kicks, rx_broken, rx_not_roce, neigh_misses;
	uint64_t tx_multi, rx_multi;    /* frames sent, received in several chunks */
};

/* The program's XDP mode (SOFTRNIC_XDP_MODE): auto, the driver's
 * (native) mode where it has one except on veth, else generic; or one of
 * the two only. */
enum srt_xdp_mode { SRT_XDP_AUTO, SRT_XDP_NATIVE, SRT_XDP_GENERIC };

/* Opens the port on ifname for our address addr (which the interface
 * must hold).  NULL, with one line in err saying why. */
struct srt_xdp *srt_xdp_open(const char *ifname, struct in_addr addr, const struct srt_xdp_steer *steer,
			     enum srt_xdp_mode mode, char *err, size_t errlen);
void srt_xdp_close(struct srt_xdp *x);
/* In a child of fork(): closes the child's copies of the socket, the
 * program's link and the program's and maps' descriptors, so that the
 * program and the queue go when the parent does; the rings' memory is
 * left alone. */
void srt_xdp_close_inherited(struct srt_xdp *x);
/* The program off the interface (the socket stays): at exit, when the
 * process ends without closing its device, so that the packets that
 * still come go to the kernel, where the UDP socket takes them, while
 * the process finishes exiting. */
void srt_xdp_detach(struct srt_xdp *x);

/* The neighbour's MAC address, or NULL: not on our subnet, or not (yet)
 * in the kernel's table (looked at again after a millisecond, by the
 * clock now_ns, read only then; fresh: look now). */
const uint8_t *srt_xdp_neighbour(struct srt_xdp *x, uint32_t ip, bool fresh, uint64_t (*now_ns)(void));

/* Transmit: a free frame's address, or UINT64_MAX (none free even after
 * taking back what the kernel sent); queue a frame of len bytes; kick
 * the kernel to send what was queued. */
uint64_t srt_xdp_tx_frame(struct srt_xdp *x);
bool srt_xdp_tx_queue(struct srt_xdp *x, uint64_t addr, uint32_t len);
/* A frame of more than a chunk (sg only; len <= srt_xdp_max_frame), built in
 * x->tx_bounce: copied into as many free frames as it needs and queued
 * as one packet.  false: no room (nothing queued). */
bool srt_xdp_tx_queue_long(struct srt_xdp *x, uint32_t len);
void srt_xdp_tx_kick(struct srt_xdp *x);

/* The largest IB MTU whose packets fit the port's frames: 2048, or 4096
 * with multi-buffer. */
enum ibv_mtu srt_xdp_ib_mtu(const struct srt_xdp *x);

/* Receive: up to max (<= SRT_XDP_RX_BATCH) frames, where each lies and
 * its length, valid until srt_xdp_rx_release (which gives their chunks
 * back); the number.  A frame in several chunks is put together in a
 * bounce buffer; one longer than srt_xdp_max_frame is dropped (rx_broken). */
unsigned srt_xdp_rx_peek(struct srt_xdp *x, const uint8_t **data, uint32_t *len, unsigned max);
void srt_xdp_rx_release(struct srt_xdp *x);
bool srt_xdp_rx_pending(const struct srt_xdp *x);
/* Frames the kernel dropped on their way to the socket (its statistics:
 * full receive ring, empty fill ring, bad descriptors, others). */
uint64_t srt_xdp_rx_lost(const struct srt_xdp *x);

/* The longest frame the port sends and takes: one chunk's, or two's
 * with multi-buffer. */
static inline unsigned srt_xdp_max_frame(const struct srt_xdp *x)
{
	return x->sg ? SRT_XDP_MAX_FRAME_SG : SRT_XDP_MAX_FRAME;
}

static inline uint8_t *srt_xdp_data(const struct srt_xdp *x, uint64_t addr)
{
	return x->area + addr;
}

#endif
