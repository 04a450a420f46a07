/*
 * xdp_steer.bpf.c — the XDP program of softrnic's AF_XDP port
 * (xdp_port.c): on the interface it is attached to, IPv4 UDP datagrams
 * to port 4791 (RoCEv2) addressed to softrnic's address and to a QP of
 * the process (its QPN range; QP1 only if the process has the address
 * alone) go to the AF_XDP socket bound to the queue they arrived on.
 * Everything else — other addresses of the interface, multicast, the QPs
 * and CM messages of other processes sharing the address (which
 * softrnic-hostd's steering hands to their UDP sockets, share_steer.h),
 * RoCEv2 on a queue without a socket, and what cannot be one RoCEv2
 * packet — a frame longer than the port's frames or the interface's
 * MTU, or a packet of a fixed-size opcode (ACK, READ request, atomic,
 * CNP) of another length: a GSO run of a kernel UDP sender on this host,
 * which veth hands to generic XDP whole; the UDP socket takes it apart —
 * goes on to the kernel as if no program were there (XDP_PASS).
 *
 * Compiled with clang for the BPF target when softrnic is built with
 * AF_XDP support; the object is embedded in the runtime
 * (xdp_steer_obj.c, made by scripts/cmake/embed_file.cmake) and loaded
 * with libbpf, so no file needs to be found at run time.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ROCEV2_UDP_PORT 4791

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} softrnic_xsks SEC(".maps");

/* What is steered (xdp_port.c fills entry 0): the address (network
 * order; 0 while the port is being set up: nothing), the destination
 * QPNs [qpn_lo, qpn_hi), whether QP1 is, and the longest frame. */
struct softrnic_steer {
	__u32 addr, qpn_lo, qpn_hi, qp1, max_frame;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct softrnic_steer);
} softrnic_addr SEC(".maps");

/* "xdp.frags": the program takes frames of several buffers (a jumbo
 * frame, a multi-buffer frame for an AF_XDP socket bound with
 * XDP_USE_SG); the headers it reads are in the first, and the frame's
 * whole length is bpf_xdp_get_buff_len's. */
SEC("xdp.frags")
int softrnic_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	__u8 *bth;
	__u32 zero = 0, qpn;
	struct softrnic_steer *s;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	/* A header with options, or a fragment, is the kernel's to handle
	 * (softrnic never sends either). */
	if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
	    (ip->frag_off & bpf_htons(0x3fff)))
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(ROCEV2_UDP_PORT))
		return XDP_PASS;
	s = bpf_map_lookup_elem(&softrnic_addr, &zero);
	if (!s || s->addr != ip->daddr || bpf_xdp_get_buff_len(ctx) > s->max_frame)
		return XDP_PASS;
	/* The BTH's destination QP: bytes 5..7 (IBTA 9.2). */
	bth = (void *)(udp + 1);
	if ((void *)(bth + 8) > end)
		return XDP_PASS;
	qpn = (__u32)bth[5] << 16 | (__u32)bth[6] << 8 | bth[7];
	/* The UDP length of the opcodes whose packets have one size (IBTA
	 * 9.2, 9.3; A17.9.1: UDP 8 + BTH 12 + headers + ICRC 4). */
	__u16 want = 0, ulen = bpf_ntohs(udp->len);
	switch (bth[0]) {
	case 0x0c: want = 8 + 12 + 16 + 4; break;      /* RC RDMA READ request: RETH */
	case 0x11: want = 8 + 12 + 4 + 4; break;       /* RC ACKNOWLEDGE: AETH */
	case 0x12: want = 8 + 12 + 4 + 8 + 4; break;   /* RC ATOMIC ACKNOWLEDGE */
	case 0x13: case 0x14: want = 8 + 12 + 28 + 4; break;   /* RC CMP_SWAP, FETCH_ADD */
	case 0x81: want = 8 + 12 + 16 + 4; break;      /* CNP */
	}
	if (want && ulen != want)
		return XDP_PASS;
	if (qpn == 1 ? !s->qp1 : qpn < s->qpn_lo || qpn >= s->qpn_hi)
		return XDP_PASS;
	return bpf_redirect_map(&softrnic_xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
