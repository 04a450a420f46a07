#!/usr/bin/env bash
# netns_ipv6_test.sh — RoCEv2 over IPv6 between two network namespaces.
#
# Two namespaces joined by two veth pairs: one with IPv6 addresses only
# (fd00:7a:N::1 and ::2, no duplicate-address wait), which carries the RDMA
# traffic, and one with IPv4 addresses only, over which the unmodified
# programs exchange QPNs and GIDs by TCP.  softrnic binds the IPv6 address:
# the server side by SOFTRNIC_IFACE (an interface with only IPv6 addresses),
# the client by SOFTRNIC_ADDR.  Then:
#   - ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong and perftest
#     (ib_write_bw, ib_read_lat, ib_atomic_lat, ib_send_lat) must finish,
#     each reporting the other side's GID as the IPv6 address;
#   - the RC pingpong's packets, captured on the veth by dumpcap (with
#     SOFTRNIC_GSO=0, so one frame is one packet), must all be RoCEv2 in
#     IPv6 with a correct ICRC by `softrnic decode` (which recomputes it from
#     the captured IPv6 header) and by tshark's independent dissector;
#   - softrnic's own capture (SOFTRNIC_PCAP) of an IPv6 run decodes too;
#   - rping, ucmatose (RC) and udaddy (UD, SIDR) through librdmacm.so.1
#     with IPv6 addresses on both ends (the CM's REQ carries them), and
#     mckey's UD multicast to an IPv6 group (ff0e::78:N);
#   - bad settings get a clear error: a link-local address without its
#     interface, a multicast address.
#
# usage: scripts/netns_ipv6_test.sh BUILD_DIR     (needs root; exit 77 = skipped)
#
# Only the namespaces and links created here are touched; the trap removes
# them however the script ends.
set -euo pipefail

BUILD=${1:?usage: $0 BUILD_DIR}
if [ "$(id -u)" != 0 ]; then
	echo "netns_ipv6_test: needs root (network namespaces); skipped" >&2
	exit 77
fi
LIB=$BUILD/lib
SOFTRNIC=$BUILD/bin/softrnic
for p in ibv_rc_pingpong ib_write_bw; do
	command -v $p >/dev/null || { echo "netns_ipv6_test: $p not installed" >&2; exit 1; }
done
[ -e "$LIB/libibverbs.so.1" ] || { echo "netns_ipv6_test: no $LIB/libibverbs.so.1" >&2; exit 1; }

NS_A=srn6A-$$
NS_B=srn6B-$$
V6_A=srn6a$$ V6_B=srn6b$$        # IPv6 only: the RDMA link
V4_A=srn4a$$ V4_B=srn4b$$        # IPv4 only: the programs' TCP exchange
N=$(( $$ % 250 + 1 ))
ADDR6_A=fd00:7a:$N::1
ADDR6_B=fd00:7a:$N::2
ADDR4_A=10.232.$N.1
ADDR4_B=10.232.$N.2
SERVER_PID=
WORK=$(mktemp -d)
LOG_S=$WORK/server.log
LOG_C=$WORK/client.log

cleanup() {
	[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
	ip netns del "$NS_A" 2>/dev/null || true
	ip netns del "$NS_B" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
fail() { echo "netns_ipv6_test: FAILED: $*" >&2; exit 1; }

ip netns add "$NS_A"
ip netns add "$NS_B"
ip link add "$V6_A" type veth peer name "$V6_B"
ip link add "$V4_A" type veth peer name "$V4_B"
ip link set "$V6_A" netns "$NS_A"; ip link set "$V4_A" netns "$NS_A"
ip link set "$V6_B" netns "$NS_B"; ip link set "$V4_B" netns "$NS_B"
ip -n "$NS_A" addr add "$ADDR6_A/64" dev "$V6_A" nodad
ip -n "$NS_B" addr add "$ADDR6_B/64" dev "$V6_B" nodad
ip -n "$NS_A" addr add "$ADDR4_A/24" dev "$V4_A"
ip -n "$NS_B" addr add "$ADDR4_B/24" dev "$V4_B"
for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
for l in "$V6_A" "$V4_A"; do ip -n "$NS_A" link set "$l" up; done
for l in "$V6_B" "$V4_B"; do ip -n "$NS_B" link set "$l" up; done
# The IPv6-only link must have no IPv4 address and keep no link-local
# one in the way: SOFTRNIC_IFACE takes its first global IPv6 address.
echo "netns_ipv6_test: $NS_A [$ADDR6_A] <-> $NS_B [$ADDR6_B] over veth (TCP side channel $ADDR4_A)"

# A sanitized library inside an unsanitized program needs its runtime first
# (as scripts/netns_test.sh).
PRELOAD=${SOFTRNIC_PRELOAD:-$(ldd "$LIB/libibverbs.so.1" | awk '/lib(asan|clang_rt\.asan)/ { print $3; exit }')}
run_in() {
	local ns=$1; shift
	ip netns exec "$ns" env LD_LIBRARY_PATH="$LIB" ${PRELOAD:+LD_PRELOAD=$PRELOAD} ASAN_OPTIONS=detect_leaks=0 "$@"
}

# pair NAME RETRY-REGEX SERVER-ARGV... -- CLIENT-ARGV...: the server in NS_A
# (SOFTRNIC_IFACE: the IPv6-only veth), the client in NS_B (SOFTRNIC_ADDR),
# retried while its output matches RETRY-REGEX (server not ready yet).
pair() {
	local name=$1 retry=$2; shift 2
	local srv=()
	while [ "$1" != "--" ]; do srv+=("$1"); shift; done
	shift
	run_in "$NS_A" env SOFTRNIC_IFACE="$V6_A" ${PAIR_ENV:-} timeout 60 "${srv[@]}" >"$LOG_S" 2>&1 &
	SERVER_PID=$!
	local status=1
	for _ in $(seq 50); do
		sleep 0.2
		if run_in "$NS_B" env SOFTRNIC_ADDR="$ADDR6_B" ${PAIR_ENV:-} timeout 60 "$@" >"$LOG_C" 2>&1; then
			status=0; break
		fi
		grep -q "$retry" "$LOG_C" || break
	done
	local server_status=0
	wait "$SERVER_PID" || server_status=$?
	SERVER_PID=
	if [ "$status" != 0 ] || [ "$server_status" != 0 ]; then
		sed 's/^/  [server] /' "$LOG_S"; sed 's/^/  [client] /' "$LOG_C"
		fail "$name (client $status, server $server_status)"
	fi
	echo "netns_ipv6_test: $name over IPv6 ok"
}

# Both ends name the other's GID as its IPv6 address (pingpong's format).
gids_ok() {
	grep -q "remote address: .*GID $ADDR6_B" "$LOG_S" && grep -q "remote address: .*GID $ADDR6_A" "$LOG_C" ||
		fail "$1: the GIDs are not the IPv6 addresses"
}

pp_retry="Couldn't connect"
pair ibv_rc_pingpong "$pp_retry" ibv_rc_pingpong -g 0 -s 4096 -n 500 -- ibv_rc_pingpong -g 0 -s 4096 -n 500 "$ADDR4_A"
grep -q "4096000 bytes in" "$LOG_C" || fail "ibv_rc_pingpong reported no 4096000 bytes"
gids_ok ibv_rc_pingpong
pair ibv_uc_pingpong "$pp_retry" ibv_uc_pingpong -g 0 -n 200 -- ibv_uc_pingpong -g 0 -n 200 "$ADDR4_A"
gids_ok ibv_uc_pingpong
pair ibv_ud_pingpong "$pp_retry" ibv_ud_pingpong -g 0 -n 200 -- ibv_ud_pingpong -g 0 -n 200 "$ADDR4_A"
gids_ok ibv_ud_pingpong

# perftest: the data path each test exercises, result row required.
pt_retry="Couldn't connect\|Unable to open file descriptor for socket connection"
for t in "ib_write_bw -s 65536 -n 2000" "ib_read_lat -n 500" "ib_atomic_lat -n 500" "ib_send_lat -n 500"; do
	# shellcheck disable=SC2086
	pair "$t" "$pt_retry" $t -x 0 -- $t -x 0 "$ADDR4_A"
	grep -Eq "^ [0-9]+ +[0-9]+ " "$LOG_C" || fail "$t printed no result row"
done

# The packets on the wire: dumpcap on the IPv6 veth, one frame per packet.
if command -v dumpcap >/dev/null && command -v tshark >/dev/null; then
	PCAP=$WORK/wire.pcap
	ip netns exec "$NS_A" dumpcap -P -q -i "$V6_A" -f "udp port 4791" -w "$PCAP" >/dev/null 2>&1 &
	CAP_PID=$!
	sleep 1
	PAIR_ENV=SOFTRNIC_GSO=0 pair "ibv_rc_pingpong (captured)" "$pp_retry" ibv_rc_pingpong -g 0 -s 2048 -n 50 -- \
		ibv_rc_pingpong -g 0 -s 2048 -n 50 "$ADDR4_A"
	sleep 0.5
	kill -INT "$CAP_PID"; wait "$CAP_PID" || true
	"$SOFTRNIC" decode "$PCAP" >"$WORK/decode.txt" || true
	summary=$(tail -n 1 "$WORK/decode.txt")
	echo "netns_ipv6_test: softrnic decode of the capture: $summary"
	frames=$(echo "$summary" | sed -n 's/.*frames \([0-9]*\),.*/\1/p')
	bad=$(echo "$summary" | sed -n 's/.* bad \([0-9]*\),.*/\1/p')
	[ -n "$frames" ] && [ "$frames" -ge 200 ] && [ "$bad" = 0 ] || fail "capture: $summary"
	grep -q "\[$ADDR6_B\]:[0-9]* > \[$ADDR6_A\]:4791 RC_SEND" "$WORK/decode.txt" ||
		fail "capture: no RC SEND from [$ADDR6_B] to [$ADDR6_A]"
	# tshark's own dissector: every frame IPv6, UDP to 4791, InfiniBand.
	ts=$(tshark -r "$PCAP" -T fields -e ipv6.src -e udp.dstport -e infiniband.bth.opcode 2>/dev/null |
		awk -v a="$ADDR6_A" -v b="$ADDR6_B" '($1 == a || $1 == b) && $2 == 4791 && $3 != "" { n++ } END { print n + 0 }')
	[ "$ts" = "$frames" ] || fail "tshark saw $ts RoCEv2-in-IPv6 frames of $frames"
	echo "netns_ipv6_test: tshark: $ts of $frames frames are RoCEv2 over IPv6"
else
	echo "netns_ipv6_test: no dumpcap/tshark; wire capture skipped" >&2
fi

# softrnic's own capture of an IPv6 run (SOFTRNIC_PCAP, capture.c).
OWN=$WORK/own.pcap
PAIR_ENV="SOFTRNIC_PCAP=$OWN.%p" pair "ibv_rc_pingpong (SOFTRNIC_PCAP)" "$pp_retry" \
	ibv_rc_pingpong -g 0 -n 20 -- ibv_rc_pingpong -g 0 -n 20 "$ADDR4_A"
for f in "$OWN".*; do
	s=$("$SOFTRNIC" decode "$f" | tail -n 1)
	echo "$s" | grep -q " bad 0," && ! echo "$s" | grep -q "packets 0," || fail "SOFTRNIC_PCAP $f: $s"
done
echo "netns_ipv6_test: SOFTRNIC_PCAP of an IPv6 run decodes with every ICRC right"

# The connection manager with IPv6 addresses (librdmacm.so.1).
if [ -e "$LIB/librdmacm.so.1" ] && command -v rping >/dev/null; then
	cm_retry='REJECTED\|Failed to connect RDMA CM\|rdma_resolve_route\|connect error'
	pair "rping -v -C 10" "$cm_retry" rping -s -a "$ADDR6_A" -p 18526 -v -C 10 -- \
		rping -c -a "$ADDR6_A" -p 18526 -v -C 10
	grep -q "ping data: rdma-ping-9" "$LOG_C" || fail "rping printed no 10th ping"
	# (perftest's -R resolves its server as IPv4 only, --ipv6 or not.)
	pair "ucmatose" "$cm_retry\|failed" ucmatose -b "$ADDR6_A" -C 10 -c 2 -- ucmatose -s "$ADDR6_A" -C 10 -c 2
	pair "udaddy" "$cm_retry\|failed\|error" udaddy -b "$ADDR6_A" -C 10 -c 2 -- udaddy -s "$ADDR6_A" -C 10 -c 2
	# UD multicast to an IPv6 group (rdma_join_multicast; the MGID is the
	# group): the receiver joins, then the sender sends 10 messages.
	group=ff0e::78:$N
	ghex=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_address(sys.argv[1]).exploded.replace(":", ""))' "$group")
	run_in "$NS_A" env SOFTRNIC_IFACE="$V6_A" timeout 60 mckey -m "$group" -b "$ADDR6_A" -C 10 >"$LOG_S" 2>&1 &
	SERVER_PID=$!
	for _ in $(seq 100); do ip netns exec "$NS_A" grep -q "$ghex" /proc/net/igmp6 && break; sleep 0.1; done
	ip netns exec "$NS_A" grep -q "$ghex" /proc/net/igmp6 || fail "mckey's receiver never joined $group"
	run_in "$NS_B" env SOFTRNIC_ADDR="$ADDR6_B" timeout 60 mckey -m "$group" -b "$ADDR6_B" -s -C 10 >"$LOG_C" 2>&1 ||
		{ cat "$LOG_C"; fail "mckey sender"; }
	status=0; wait "$SERVER_PID" || status=$?; SERVER_PID=
	grep -q "test complete" "$LOG_S" && [ $status = 0 ] ||
		{ sed 's/^/  [receiver] /' "$LOG_S"; sed 's/^/  [sender] /' "$LOG_C"; fail "mckey over IPv6 multicast (receiver exit $status)"; }
	echo "netns_ipv6_test: mckey to IPv6 group $group ok"
fi

# Settings that cannot work are refused with a message that says why.
msg=$(run_in "$NS_B" env SOFTRNIC_ADDR=fe80::1 ibv_devinfo 2>&1 || true)
echo "$msg" | grep -q "link-local" || fail "SOFTRNIC_ADDR=fe80::1 gave: $msg"
msg=$(run_in "$NS_B" env SOFTRNIC_ADDR=ff02::1 ibv_devinfo 2>&1 || true)
echo "$msg" | grep -q "not a unicast IPv6 address" || fail "SOFTRNIC_ADDR=ff02::1 gave: $msg"
echo "netns_ipv6_test: bad IPv6 settings refused with a reason"
echo "netns_ipv6_test: ok"
