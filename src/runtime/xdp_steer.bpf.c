/*
 * xdp_steer.bpf.c — the XDP program of softrnic's AF_XDP port
 * (xdp_port.c): on the interface it is attached to, IPv4 UDP datagrams
 * to port 4791 (RoCEv2) go to the AF_XDP socket bound to the queue they
 * arrived on; everything else, and RoCEv2 on a queue without a socket,
 * goes on to the kernel as if no program were there (XDP_PASS).
 *
 * Compiled with clang for the BPF target when softrnic is built with
 * AF_XDP support; the object is embedded in the runtime
 * (xdp_steer_obj.c, made by cmake/embed_file.cmake) and loaded with
 * libxdp, so no file needs to be found at run time.
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

/* Entry 0: the address whose RoCEv2 is steered (network order); 0 while
 * the port is being set up: nothing is. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} softrnic_addr SEC(".maps");

SEC("xdp")
int softrnic_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	/* A header with options, or a fragment, is the kernel's to handle
	 * (softrnic never sends either; the AF_XDP port drops neither). */
	if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
	    (ip->frag_off & bpf_htons(0x3fff)))
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(ROCEV2_UDP_PORT))
		return XDP_PASS;
	__u32 zero = 0, *ours = bpf_map_lookup_elem(&softrnic_addr, &zero);
	if (!ours || *ours != ip->daddr)
		return XDP_PASS;
	return bpf_redirect_map(&softrnic_xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
