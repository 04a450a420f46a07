// SPDX-License-Identifier: GPL-2.0
/*
 * phantom_queue.bpf.c — an ECN marker for the router of scripts/congestion.sh:
 * a tc (cls_bpf, clsact egress) program that keeps a *phantom queue* (HULL,
 * Alizadeh et al., NSDI 2012) in front of the real bottleneck and marks CE
 * with the RED ramp of the DCQCN paper's switch on its length.
 *
 * Why not nftables: `limit rate over R bytes/second` is a token bucket whose
 * depth is a whole second of R plus the burst (the kernel's nft_limit sizes
 * it so), so it marks only after about a second of sustained overload and
 * never notices a burst: a poor stand-in for a switch queue that marks
 * within microseconds.  The kernel here has no RED qdisc, but cls_bpf works.
 *
 * The model: a virtual queue drained at PQ_RATE_BPS (a little below the real
 * link, so it fills before the real queue does); each packet leaving through
 * this interface adds its length, up to PQ_LIMIT (the real queue's
 * buffer).  An ECN-capable IPv4 packet (ECT(0) or
 * ECT(1)) is set to CE when the virtual backlog b exceeds PQ_KMIN, with
 * probability PQ_PMAX_PERMILLE/1000 · (b − KMIN)/(KMAX − KMIN) up to
 * PQ_KMAX and always above.  The IP checksum is updated (bpf_l3_csum_replace);
 * RoCEv2's ICRC masks the ECN bits, so the packet stays valid.
 *
 * Parameters are compile-time constants (-DPQ_RATE_BPS=... etc.): the script
 * builds the object for each run with clang, no map updates or bpftool.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef PQ_RATE_BPS
#define PQ_RATE_BPS 950000000ull
#endif
#ifndef PQ_KMIN
#define PQ_KMIN 10000ull
#endif
#ifndef PQ_KMAX
#define PQ_KMAX 100000ull
#endif
#ifndef PQ_LIMIT
#define PQ_LIMIT 1048576ull
#endif
#ifndef PQ_PMAX_PERMILLE
#define PQ_PMAX_PERMILLE 200ull
#endif

struct pq_state {
	struct bpf_spin_lock lock;
	__u64 last_ns;
	__u64 backlog;          /* bytes, virtual */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pq_state);
} phantom SEC(".maps");

SEC("tc")
int phantom_queue(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u32 key = 0;
	struct pq_state *st = bpf_map_lookup_elem(&phantom, &key);
	__u64 now = bpf_ktime_get_ns(), b, drained, dt;

	if (!st)
		return TC_ACT_OK;
	/* Every packet fills the phantom queue, marked or not. */
	bpf_spin_lock(&st->lock);
	dt = now - st->last_ns;
	if (dt > 1000000000ull)
		dt = 1000000000ull;     /* idle: empty, and no overflow below */
	drained = dt * (PQ_RATE_BPS / 1000000ull) / 8000ull;
	st->backlog = st->backlog > drained ? st->backlog - drained : 0;
	st->last_ns = now;
	st->backlog += skb->len;
	/* Bounded by the real queue's buffer: the phantom queue is that
	 * queue drained a little slower, so it holds no more than it (an
	 * unbounded count would keep marking for seconds after a startup
	 * burst).  Capping at Kmax instead was tried: marking then stops
	 * 2 ms after a burst while the real 1 MiB queue needs 8 ms to
	 * drain, and the senders recover into a full queue. */
	if (st->backlog > PQ_LIMIT)
		st->backlog = PQ_LIMIT;
	b = st->backlog;
	bpf_spin_unlock(&st->lock);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	__u8 tos = ip->tos;
	if ((tos & 3) == 0 || (tos & 3) == 3 || b <= PQ_KMIN)
		return TC_ACT_OK;
	if (b < PQ_KMAX) {
		__u64 p = PQ_PMAX_PERMILLE * (b - PQ_KMIN) / (PQ_KMAX - PQ_KMIN);
		if (bpf_get_prandom_u32() % 1000 >= p)
			return TC_ACT_OK;
	}
	/* CE, and the checksum over the 16-bit word holding TOS. */
	__u16 old = *(__u16 *)ip;
	__u8 new_tos = tos | 3;
	__u16 new = bpf_htons((bpf_ntohs(old) & 0xff00) | new_tos);
	__u32 off = ETH_HLEN + __builtin_offsetof(struct iphdr, check);
	bpf_skb_store_bytes(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, tos), &new_tos, 1, 0);
	bpf_l3_csum_replace(skb, off, old, new, 2);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
