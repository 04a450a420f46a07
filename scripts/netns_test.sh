#!/usr/bin/env bash
# netns_test.sh — softrnic over a real (virtual) Ethernet link.
#
# Creates two network namespaces joined by a veth pair (MTU 1500, so the
# RoCE active MTU is 1024, as on the kernel rxe captures), runs one softrnic
# process in each, bound through SOFTRNIC_ADDR, and has them do RC
# SEND/RECV, RDMA WRITE and RDMA READ with data checks
# (tests/runtime/test_two_process in its server/client mode; the QPN/GID
# exchange goes over TCP across the same link), then runs unmodified
# ibv_rc_pingpong through softrnic's libibverbs.so.1 across the link: the
# server side named by SOFTRNIC_IFACE, the client by SOFTRNIC_ADDR; and
# the same for rping and ib_send_bw -R through librdmacm.so.1.
#
# usage: scripts/netns_test.sh BUILD_DIR     (needs root; exit 77 = skipped)
#
# Only namespaces, links and addresses created here are touched, and the
# trap removes them however the script ends.
set -euo pipefail

BUILD=${1:?usage: $0 BUILD_DIR}
if [ "$(id -u)" != 0 ]; then
	echo "netns_test: needs root (network namespaces); skipped" >&2
	exit 77
fi
BIN=$BUILD/tests/runtime/test_two_process
[ -x "$BIN" ] || BIN=$(find "$BUILD" -name test_two_process -type f -perm -u+x | head -n1)
[ -n "$BIN" ] && [ -x "$BIN" ] || { echo "netns_test: test_two_process not found under $BUILD" >&2; exit 1; }

NS_A=srnA-$$
NS_B=srnB-$$
VETH_A=srnva$$
VETH_B=srnvb$$
NET=10.231.$(( $$ % 250 + 1 ))
ADDR_A=$NET.1
ADDR_B=$NET.2
PORT=18515
SERVER_PID=

cleanup() {
	[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
	ip netns del "$NS_A" 2>/dev/null || true
	ip netns del "$NS_B" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

ip netns add "$NS_A"
ip netns add "$NS_B"
ip link add "$VETH_A" type veth peer name "$VETH_B"
ip link set "$VETH_A" netns "$NS_A"
ip link set "$VETH_B" netns "$NS_B"
ip -n "$NS_A" addr add "$ADDR_A/24" dev "$VETH_A"
ip -n "$NS_B" addr add "$ADDR_B/24" dev "$VETH_B"
for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
ip -n "$NS_A" link set "$VETH_A" up
ip -n "$NS_B" link set "$VETH_B" up

echo "netns_test: $NS_A ($ADDR_A) <-> $NS_B ($ADDR_B) over veth"
ip netns exec "$NS_A" env SOFTRNIC_ADDR="$ADDR_A" timeout 60 "$BIN" server "$PORT" &
SERVER_PID=$!
status=0
ip netns exec "$NS_B" env SOFTRNIC_ADDR="$ADDR_B" timeout 60 "$BIN" client "$ADDR_A" "$PORT" || status=$?
server_status=0
wait "$SERVER_PID" || server_status=$?
SERVER_PID=
if [ "$status" != 0 ] || [ "$server_status" != 0 ]; then
	echo "netns_test: FAILED (client $status, server $server_status)" >&2
	exit 1
fi
echo "netns_test: runtime two-process exchange ok"

# Unmodified ibv_rc_pingpong across the link, through the drop-in library.
LIB=$BUILD/lib
if [ ! -e "$LIB/libibverbs.so.1" ] || ! command -v ibv_rc_pingpong >/dev/null; then
	echo "netns_test: no $LIB/libibverbs.so.1 or ibv_rc_pingpong; pingpong part skipped" >&2
	exit 0
fi
# A sanitized library inside an unsanitized program needs its runtime first.
# SOFTRNIC_PRELOAD (set by the test build) names it; otherwise ask ldd, which
# finds gcc's shared libasan (clang links its runtime into executables).
PRELOAD=${SOFTRNIC_PRELOAD:-$(ldd "$LIB/libibverbs.so.1" | awk '/lib(asan|clang_rt\.asan)/ { print $3; exit }')}
run_pp() {
	local ns=$1; shift
	ip netns exec "$ns" env LD_LIBRARY_PATH="$LIB" ${PRELOAD:+LD_PRELOAD=$PRELOAD} \
		ASAN_OPTIONS=detect_leaks=0 SOFTRNIC_STATS_AT_EXIT=1 "$@"
}
LOG_S=$(mktemp); LOG_C=$(mktemp)
trap 'rm -f "$LOG_S" "$LOG_C"; cleanup' EXIT INT TERM
# pair_ns NAME RETRY-REGEX SERVER-ARGV... -- CLIENT-ARGV...: the server in
# NS_A (bound by SOFTRNIC_IFACE), then the client in NS_B (SOFTRNIC_ADDR),
# tried again while its output matches RETRY-REGEX (server not ready yet).
# Both must exit 0; their logs stay in LOG_S / LOG_C for the caller.
pair_ns() {
	local name=$1 retry=$2; shift 2
	local srv=()
	while [ "$1" != "--" ]; do srv+=("$1"); shift; done
	shift
	run_pp "$NS_A" env SOFTRNIC_IFACE="$VETH_A" timeout 60 "${srv[@]}" >"$LOG_S" 2>&1 &
	SERVER_PID=$!
	status=1
	for _ in $(seq 50); do
		sleep 0.2
		if run_pp "$NS_B" env SOFTRNIC_ADDR="$ADDR_B" timeout 60 "$@" >"$LOG_C" 2>&1; then
			status=0; break
		fi
		grep -q "$retry" "$LOG_C" || break
	done
	server_status=0
	wait "$SERVER_PID" || server_status=$?
	SERVER_PID=
	sed 's/^/  [server] /' "$LOG_S"; sed 's/^/  [client] /' "$LOG_C"
	if [ "$status" != 0 ] || [ "$server_status" != 0 ]; then
		echo "netns_test: $name FAILED (client $status, server $server_status)" >&2
		exit 1
	fi
	echo "netns_test: $name across the veth link ok"
}
pair_ns ibv_rc_pingpong "Couldn't connect" ibv_rc_pingpong -g 0 -s 4096 -n 1000 -p "$PORT" -- \
	ibv_rc_pingpong -g 0 -s 4096 -n 1000 -p "$PORT" "$ADDR_A"
expect="8192000 bytes in"
grep -q "$expect" "$LOG_S" && grep -q "$expect" "$LOG_C" ||
	{ echo "netns_test: ibv_rc_pingpong did not report $expect" >&2; exit 1; }

# The connection manager across the link: unmodified rping and ib_send_bw -R
# through softrnic's librdmacm.so.1, server bound by SOFTRNIC_IFACE, client
# by SOFTRNIC_ADDR; the CM's REQ/REP/RTU cross the veth as UD SENDs to QP1.
if [ ! -e "$LIB/librdmacm.so.1" ] || ! command -v rping >/dev/null; then
	echo "netns_test: no librdmacm.so.1 or rping; connection-manager part skipped" >&2
	exit 0
fi
# The client retries while the server is not listening yet (REJECTED, 8).
cm_retry='REJECTED\|Failed to connect RDMA CM'
pair_ns "rping -v -C 20" "$cm_retry" rping -s -a "$ADDR_A" -p 18516 -v -C 20 -- rping -c -a "$ADDR_A" -p 18516 -v -C 20
grep -q "ping data: rdma-ping-19" "$LOG_C" || { echo "netns_test: rping printed no 20th ping" >&2; exit 1; }
pair_ns "ib_send_bw -R" "$cm_retry" ib_send_bw -R -p 18517 -n 1000 -- ib_send_bw -R -p 18517 -n 1000 "$ADDR_A"
grep -Eq "^ 65536 +1000 " "$LOG_C" || { echo "netns_test: ib_send_bw -R printed no result row" >&2; exit 1; }

# libfabric's verbs provider over the CM (libfabric-bin): fi_pingpong's msg
# endpoint, data checked (-c).  Its server binds "localhost" to probe and,
# with no device behind that bind, advertises the interface's address
# (rdmacm/addr.c, rcm_bind).  The client fails with "failed to connect"
# while the server is not up yet.
if command -v fi_pingpong >/dev/null; then
	pair_ns "fi_pingpong -e msg" "$cm_retry\|failed to connect\|fi_connect" \
		fi_pingpong -p verbs -e msg -c -I 100 -- fi_pingpong -p verbs -e msg -c -I 100 "$ADDR_A"
	grep -Eq "^1m " "$LOG_C" || { echo "netns_test: fi_pingpong printed no 1m row" >&2; exit 1; }
else
	echo "netns_test: no fi_pingpong (libfabric-bin); skipped" >&2
fi
