#!/usr/bin/env bash
# libfabric.sh — libfabric (libfabric-bin 1.17) on softrnic through
# `softrnic run`: fi_info -p verbs lists softrnic0, and fi_pingpong runs
# between two processes
#   - on loopback: -e dgram (verbs, UD) and -e rdm (verbs;ofi_rxd over UD);
#   - (root only) across two network namespaces joined by a veth: -e msg
#     (verbs over the connection manager) and -e rdm as verbs;ofi_rxm (RDM
#     over connected RC endpoints).  libfabric's verbs provider offers
#     FI_EP_MSG only on interfaces that are not loopback
#     (prov/verbs/src/verbs_info.c skips IFF_LOOPBACK), hence the veth.
#   libfabric.sh SOFTRNIC_BIN PORT
# Skips (77) without fi_pingpong.
set -uo pipefail
SOFTRNIC=$1
PORT=$2
command -v fi_pingpong >/dev/null && command -v fi_info >/dev/null ||
	{ echo "libfabric: libfabric-bin not installed; skipped"; exit 77; }
dir=$(mktemp -d)
NS_A=srt-fi-a-$$
NS_B=srt-fi-b-$$
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "libfabric: FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/../lib.sh"

"$SOFTRNIC" run fi_info -p verbs > "$dir/info" 2>&1 || fail "fi_info -p verbs exited $?"
grep -q "domain: softrnic0" "$dir/info" || { cat "$dir/info" >&2; fail "fi_info -p verbs lists no softrnic0 domain"; }
echo "libfabric: fi_info -p verbs lists $(grep -c 'domain: softrnic0' "$dir/info") softrnic0 entries"

# One fi_pingpong pair.  SERVER_NS/CLIENT_NS (prefix commands) place them.
pingpong() {
	local name=$1 provider=$2 ep=$3 server_addr=$4 client_to=$5
	shift 5
	${SERVER_NS:-} "$SOFTRNIC" run fi_pingpong -p "$provider" -e "$ep" -I 200 -B "$PORT" $server_addr \
		> "$dir/$name.server" 2>&1 &
	server_pid=$!
	wait_listen "$PORT" ${SERVER_NS:-} || fail "$name: the server does not listen"
	timeout 60 ${CLIENT_NS:-} "$SOFTRNIC" run fi_pingpong -p "$provider" -e "$ep" -I 200 -P "$PORT" "$client_to" \
		> "$dir/$name.client" 2>&1
	local rc=$?
	wait "$server_pid"
	local src=$?
	server_pid=
	[ $rc -eq 0 ] && [ $src -eq 0 ] || { cat "$dir/$name.client" "$dir/$name.server" >&2; fail "$name: client $rc, server $src"; }
	# the table has a row per size; the last (largest) must be there
	local row
	row=$(grep -E "^[0-9]+[km]? +200 +=200 " "$dir/$name.client" | tail -1) ||
		{ cat "$dir/$name.client" >&2; fail "$name: no result rows"; }
	echo "libfabric: $name ($provider -e $ep): $(grep -cE '^[0-9]+[km]? +200 +=200 ' "$dir/$name.client") sizes," \
	     "largest: $row"
}

pingpong dgram verbs dgram "" 127.0.0.1
pingpong rdm-rxd "verbs;ofi_rxd" rdm "" 127.0.0.1

if [ "$(id -u)" -ne 0 ]; then
	echo "libfabric: not root: the two-namespace runs (msg, rdm over rxm) are skipped"
	exit 0
fi
netns_pair "$NS_A" "$NS_B" srtfi0 10.198.0.1 10.198.0.2 || fail "two namespaces over a veth"
export SOFTRNIC_IFACE=srtfi0
SERVER_NS="ip netns exec $NS_A" CLIENT_NS="ip netns exec $NS_B" pingpong msg verbs msg "" 10.198.0.1
SERVER_NS="ip netns exec $NS_A" CLIENT_NS="ip netns exec $NS_B" pingpong rdm-rxm "verbs;ofi_rxm" rdm "" 10.198.0.1
echo "libfabric: all runs passed"
