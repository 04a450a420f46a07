#!/bin/sh
# port_event_test.sh — runs port_event_test in a network namespace of its
# own on one end of a veth pair (both ends inside the namespace, names
# and namespace unique per PID), removed again on exit.  Needs root and
# iproute2; skips (77) without them.
#
# usage: port_event_test.sh <port_event_test binary>
set -u
prog=$1
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for a network namespace"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: iproute2 not installed"; exit 77; }

ns=srlink$$
own=srla$$
peer=srlb$$
cidr=10.211.0.1/24

cleanup() { ip netns del "$ns" 2>/dev/null; }
trap cleanup EXIT
trap 'exit 1' INT TERM

ip netns add "$ns" || { echo "SKIP: cannot create a network namespace"; exit 77; }
ip -n "$ns" link set lo up &&
ip -n "$ns" link add "$own" type veth peer name "$peer" &&
ip -n "$ns" addr add "$cidr" dev "$own" &&
ip -n "$ns" addr add 10.211.0.2/24 dev "$peer" &&
ip -n "$ns" link set "$own" up &&
ip -n "$ns" link set "$peer" up || { echo "FAIL: cannot set up the veth pair"; exit 1; }

# A veth reports carrier a moment after both ends are up.
i=0
while ! ip -n "$ns" link show "$own" | grep -q 'state UP'; do
	i=$((i + 1))
	[ $i -le 50 ] || { echo "FAIL: $own never came up"; exit 1; }
	sleep 0.1
done

ip netns exec "$ns" env SOFTRNIC_IFACE="$own" timeout -k 5 50 "$prog" "$own" "$peer" "$cidr"
