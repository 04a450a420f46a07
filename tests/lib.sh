# lib.sh — helpers the tests/ecosystem scripts source.

# wait_listen PORT [PREFIX...]: until something listens on TCP PORT (the
# setup channel of perftest, rping, fi_pingpong, ucx_perftest; their
# "waiting" lines are block-buffered, so the socket is what to watch).
# PREFIX runs ss elsewhere, e.g. `ip netns exec NS`.  1 after 5 s.
wait_listen() {
	local port=$1 i
	shift
	for i in $(seq 100); do
		[ -n "$("$@" ss -Hltn "sport = :$port")" ] && return 0
		sleep 0.05
	done
	return 1
}

# netns_pair NS_A NS_B IFNAME ADDR_A ADDR_B: two network namespaces joined
# by a veth named IFNAME at both ends, ADDR_x/24 on each, lo and the veth
# up; returns once both ends are UP (softrnic's port follows the link
# under SOFTRNIC_IFACE).  The caller deletes the namespaces.
netns_pair() {
	local a=$1 b=$2 ifname=$3 addr_a=$4 addr_b=$5 ns i
	ip netns add "$a" && ip netns add "$b" || return 1
	ip link add "$ifname" netns "$a" type veth peer name "$ifname" netns "$b" || return 1
	ip -n "$a" addr add "$addr_a/24" dev "$ifname" && ip -n "$b" addr add "$addr_b/24" dev "$ifname" || return 1
	for ns in "$a" "$b"; do
		ip -n "$ns" link set lo up && ip -n "$ns" link set "$ifname" up || return 1
	done
	for i in $(seq 50); do
		ip -n "$a" -br link show "$ifname" | grep -q "UP " && ip -n "$b" -br link show "$ifname" | grep -q "UP " &&
			return 0
		sleep 0.1
	done
	return 1
}
