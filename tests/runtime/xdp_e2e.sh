#!/usr/bin/env bash
# xdp_e2e.sh — softrnic's AF_XDP port (SOFTRNIC_XDP, runtime/xdp_port.h)
# between two network namespaces joined by a veth pair, with unmodified
# programs through the drop-in libraries: ibv_rc_pingpong, ibv_ud_pingpong,
# ib_write_bw, ib_read_bw, ib_send_lat, rping (the CM over the port), and
# ibv_rc_pingpong again with loss and reordering (SOFTRNIC_FAULTS).  Each
# run must carry its RoCEv2 packets through the XDP socket (the paths
# line of SOFTRNIC_STATS_AT_EXIT: xdp tx and rx above zero) and none of
# its data through UDP; while the program is attached the kernel still
# carries everything else (the TCP exchanges of the programs, a UDP
# datagram to another port); when the processes end the XDP program is
# gone from the interface.
#
# usage: tests/runtime/xdp_e2e.sh BUILD_DIR
# Exit 77 (skipped, with the reason) when not root, or when the kernel or
# the build cannot give softrnic an XDP socket (softrnic then says why and
# uses UDP: that line is the reason given).
set -uo pipefail
BUILD=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
LIB=$BUILD/lib
[ "$(id -u)" = 0 ] || { echo "xdp_e2e: needs root (namespaces, XDP); skipped"; exit 77; }
for t in ibv_rc_pingpong ibv_ud_pingpong ib_write_bw ib_read_bw ib_send_lat rping; do
	command -v "$t" >/dev/null || { echo "xdp_e2e: $t not installed; skipped"; exit 77; }
done

A=sxA-$$ B=sxB-$$ VA=sxa$$ VB=sxb$$
NET=10.233.$(( $$ % 250 + 1 ))
ADDR_A=$NET.1 ADDR_B=$NET.2
WORK=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
ip netns add "$A" && ip netns add "$B" &&
	ip link add "$VA" type veth peer name "$VB" &&
	ip link set "$VA" netns "$A" && ip link set "$VB" netns "$B" || { echo "xdp_e2e: cannot make the namespaces"; exit 1; }
ip -n "$A" addr add "$ADDR_A/24" dev "$VA"; ip -n "$B" addr add "$ADDR_B/24" dev "$VB"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "$VA" up; ip -n "$B" link set "$VB" up

PRELOAD=${SOFTRNIC_PRELOAD:-$(ldd "$LIB/libibverbs.so.1" | awk '/lib(asan|clang_rt\.asan)/ { print $3; exit }')}
# run NS IFACE EXTRA_ENV... -- CMD...
run() {
	local ns=$1 ifc=$2; shift 2
	local extra=()
	while [ "$1" != "--" ]; do extra+=("$1"); shift; done
	shift
	ip netns exec "$ns" env LD_LIBRARY_PATH="$LIB" ${PRELOAD:+LD_PRELOAD=$PRELOAD} ASAN_OPTIONS=detect_leaks=0 \
		SOFTRNIC_RUNTIME_DIR="$WORK/rt-$ns" SOFTRNIC_LOCAL=0 SOFTRNIC_STATS_AT_EXIT=1 \
		SOFTRNIC_IFACE="$ifc" SOFTRNIC_XDP="$ifc" ${extra[@]+"${extra[@]}"} timeout 60 "$@"
}
mkdir -p "$WORK/rt-$A" "$WORK/rt-$B"
failed=0
fail() { echo "xdp_e2e: FAIL $*"; failed=$((failed + 1)); }

# The port's packets in a log: "xdp tx=N rx=M ... udp tx=K".
check_paths() {
	local name=$1 log=$2 line
	line=$(grep 'softrnic: paths:' "$log" | tail -1)
	if grep -q 'using UDP sockets' "$log"; then
		echo "xdp_e2e: no AF_XDP port here: $(grep -m1 'using UDP sockets' "$log" | sed 's/^softrnic: //'); skipped"
		exit 77
	fi
	[[ $line =~ xdp\ tx=([0-9]+)\ rx=([0-9]+) ]] || { fail "$name: no xdp path in '$line'"; return; }
	local tx=${BASH_REMATCH[1]} rx=${BASH_REMATCH[2]}
	[[ $line =~ udp\ tx=([0-9]+) ]] || { fail "$name: no udp path in '$line'"; return; }
	local udp=${BASH_REMATCH[1]}
	if [ "$tx" -eq 0 ] || [ "$rx" -eq 0 ]; then fail "$name: xdp tx=$tx rx=$rx"; return; fi
	# The CM's MADs may go by either; a data run sends none by UDP.
	if [ "${3:-data}" = data ] && [ "$udp" -ne 0 ]; then fail "$name: $udp packets by UDP"; return; fi
	echo "xdp_e2e: $name: xdp tx=$tx rx=$rx, udp tx=$udp"
}

# pair NAME [ENV... --] SERVER_ARGS... -- CLIENT_ARGS... (client gets ADDR_A last)
port=19000
pair() {
	local name=$1 kind=$2; shift 2
	local env=() srv=()
	while [ "$1" != "--" ]; do srv+=("$1"); shift; done
	shift
	if [ "${srv[0]}" = ENV ]; then env=("${srv[@]:1}"); srv=(); while [ "$1" != "--" ]; do srv+=("$1"); shift; done; shift; fi
	port=$((port + 1))
	run "$A" "$VA" ${env[@]+"${env[@]}"} -- "${srv[@]//PORT/$port}" >"$WORK/$name.srv" 2>&1 &
	local s=$!; PIDS+=("$s")
	local rc=1
	for _ in $(seq 40); do
		sleep 0.25
		run "$B" "$VB" ${env[@]+"${env[@]}"} -- "${@//PORT/$port}" >"$WORK/$name.cli" 2>&1 && { rc=0; break; }
		grep -qi "couldn't connect\|failed to connect\|unable to connect\|connection refused" "$WORK/$name.cli" || break
	done
	wait "$s"; local rs=$?
	if [ "$rc" != 0 ] || [ "$rs" != 0 ]; then
		check_paths "$name" "$WORK/$name.srv" "$kind"   # skips if the port could not be had
		fail "$name: client $rc, server $rs"
		sed 's/^/  [server] /' "$WORK/$name.srv" | tail -15; sed 's/^/  [client] /' "$WORK/$name.cli" | tail -15
		return
	fi
	check_paths "$name (server)" "$WORK/$name.srv" "$kind"
	check_paths "$name (client)" "$WORK/$name.cli" "$kind"
}

pair rc_pingpong data ibv_rc_pingpong -g 0 -s 4096 -n 1000 -p PORT -- ibv_rc_pingpong -g 0 -s 4096 -n 1000 -p PORT "$ADDR_A"
grep -q "8192000 bytes in" "$WORK/rc_pingpong.cli" || fail "rc_pingpong: no byte count"
pair ud_pingpong data ibv_ud_pingpong -g 0 -s 1024 -n 1000 -p PORT -- ibv_ud_pingpong -g 0 -s 1024 -n 1000 -p PORT "$ADDR_A"
pair write_bw data ib_write_bw -x 0 -F -s 65536 -n 500 -p PORT -- ib_write_bw -x 0 -F -s 65536 -n 500 -p PORT "$ADDR_A"
pair read_bw data ib_read_bw -x 0 -F -s 65536 -n 500 -p PORT -- ib_read_bw -x 0 -F -s 65536 -n 500 -p PORT "$ADDR_A"
pair send_lat data ib_send_lat -x 0 -F -s 2 -n 2000 -p PORT -- ib_send_lat -x 0 -F -s 2 -n 2000 -p PORT "$ADDR_A"
pair rping cm rping -s -a "$ADDR_A" -C 50 -S 1024 -p PORT -- rping -c -a "$ADDR_A" -C 50 -S 1024 -p PORT -v
grep -q "ping data" "$WORK/rping.cli" || fail "rping: no data"
# Loss and reordering of what arrives, both ends: Go-Back-N / selective
# repeat over the port.
pair loss data ENV SOFTRNIC_FAULTS=loss=0.02,reorder=0.02,seed=5 -- \
	ibv_rc_pingpong -g 0 -s 4096 -n 500 -p PORT -- ibv_rc_pingpong -g 0 -s 4096 -n 500 -p PORT "$ADDR_A"
grep -q "4096000 bytes in" "$WORK/loss.cli" || fail "loss: no byte count"
grep -qE 'dropped_by_faults=[1-9]|fault[a-z_]*=[1-9]' "$WORK/loss.cli" "$WORK/loss.srv" ||
	fail "loss: no packet was dropped by SOFTRNIC_FAULTS"

# Jumbo frames: at MTU 9000 the port's active MTU is 4096 where the
# kernel has AF_XDP's multi-buffer mode (Linux 6.6 on), a full packet
# then a frame of two chunks, both ways (chunked_tx and chunked_rx on the
# paths line); where it has not, 2048, in one chunk.
ip -n "$A" link set "$VA" mtu 9000; ip -n "$B" link set "$VB" mtu 9000
pair jumbo_write_bw data ib_write_bw -x 0 -F -s 65536 -n 500 -p PORT -- ib_write_bw -x 0 -F -s 65536 -n 500 -p PORT "$ADDR_A"
pair jumbo_pingpong data ibv_rc_pingpong -g 0 -m 4096 -s 16384 -n 300 -c -p PORT -- \
	ibv_rc_pingpong -g 0 -m 4096 -s 16384 -n 300 -c -p PORT "$ADDR_A"
grep -q "9830400 bytes in" "$WORK/jumbo_pingpong.cli" || fail "jumbo_pingpong: no byte count"
kernel=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')
mtu=$(sed -n 's/.*Mtu *: *\([0-9]*\).*/\1/p' "$WORK/jumbo_write_bw.cli" | head -1)
if [ "$kernel" -ge 6006 ] || [ "$mtu" = 4096 ]; then
	[ "$mtu" = 4096 ] || fail "jumbo: ib_write_bw ran at MTU ${mtu:-?}, not 4096 (Linux $(uname -r) has multi-buffer AF_XDP)"
	# ib_write_bw's WRITEs one way (its ACKs are short), the pingpong's
	# SENDs both ways.
	for f in jumbo_write_bw.cli:chunked_tx jumbo_write_bw.srv:chunked_rx jumbo_pingpong.srv:chunked_tx \
		jumbo_pingpong.srv:chunked_rx jumbo_pingpong.cli:chunked_tx jumbo_pingpong.cli:chunked_rx; do
		grep -q "paths: xdp .*${f#*:}=[1-9]" "$WORK/${f%%:*}" ||
			fail "jumbo: ${f%%:*}: no ${f#*:}: $(grep -h 'paths:' "$WORK/${f%%:*}")"
	done
	echo "xdp_e2e: jumbo: MTU 4096, frames of two chunks both ways: $(grep -h 'paths:' "$WORK/jumbo_pingpong.cli" | sed 's/softrnic: //')"
else
	[ "$mtu" = 2048 ] || fail "jumbo: ib_write_bw ran at MTU ${mtu:-?}, not 2048"
	echo "xdp_e2e: jumbo: Linux $(uname -r) has no multi-buffer AF_XDP: MTU 2048"
fi
ip -n "$A" link set "$VA" mtu 1500; ip -n "$B" link set "$VB" mtu 1500

# One end on the port, the other on its UDP socket (as a peer without
# AF_XDP is): the UDP end's GSO runs reach the port's interface whole, and
# the program leaves a frame longer than the MTU to the kernel, whose
# socket takes it apart; both directions.
for dir in xdp-server udp-server; do
	if [ $dir = xdp-server ]; then se=(); ce=(SOFTRNIC_XDP=); else se=(SOFTRNIC_XDP=); ce=(); fi
	run "$A" "$VA" ${se[@]+"${se[@]}"} -- ib_write_bw -x 0 -F -s 65536 -n 300 -p 19200 >"$WORK/mixed.$dir.srv" 2>&1 &
	ms=$!; PIDS+=("$ms")
	for _ in $(seq 40); do
		sleep 0.25
		run "$B" "$VB" ${ce[@]+"${ce[@]}"} -- ib_write_bw -x 0 -F -s 65536 -n 300 -p 19200 "$ADDR_A" \
			>"$WORK/mixed.$dir.cli" 2>&1 && break
		grep -qi "couldn't connect\|unable to connect\|failed to connect" "$WORK/mixed.$dir.cli" || break
	done
	wait "$ms" || fail "mixed ($dir): the server failed"
	grep -q '^ 65536 *300 ' "$WORK/mixed.$dir.cli" || fail "mixed ($dir): no result row"
	grep -qs 'rx_drop_bad_icrc' "$WORK/mixed.$dir.srv" "$WORK/mixed.$dir.cli" &&
		fail "mixed ($dir): packets dropped for a bad ICRC"
	echo "xdp_e2e: mixed ($dir): $(grep -h 'paths:' "$WORK/mixed.$dir.srv" | sed 's/softrnic: //') / $(grep -h 'paths:' "$WORK/mixed.$dir.cli" | sed 's/softrnic: //')"
done

# Two processes on one address (shared through softrnic-hostd): the first
# has the port, the second says it cannot have it and uses UDP, and the
# program steers only the first one's QPs to it, so both pairs finish.
for k in 1 2; do
	run "$A" "$VA" -- ibv_rc_pingpong -g 0 -s 1024 -n 300 -p $((19100 + k)) >"$WORK/two$k.srv" 2>&1 &
	PIDS+=($!); eval "s$k=\$!"
	sleep 0.5
done
for k in 1 2; do
	for _ in $(seq 20); do
		run "$B" "$VB" -- ibv_rc_pingpong -g 0 -s 1024 -n 300 -p $((19100 + k)) "$ADDR_A" >"$WORK/two$k.cli" 2>&1 && break
		grep -qi "couldn't connect" "$WORK/two$k.cli" || break
		sleep 0.25
	done &
	PIDS+=($!); eval "c$k=\$!"
	sleep 0.5
done
for p in "$s1" "$s2" "$c1" "$c2"; do wait "$p" || fail "two processes on one address: one of them failed"; done
for k in 1 2; do
	grep -q "614400 bytes in" "$WORK/two$k.cli" || fail "two processes on one address: pair $k did not finish"
done
grep -q 'paths: xdp tx=[1-9]' "$WORK/two1.srv" || fail "two processes on one address: the first has no AF_XDP port"
grep -q 'another process has its queue 0' "$WORK/two2.srv" ||
	fail "two processes on one address: the second did not say why it uses UDP"
echo "xdp_e2e: two processes on one address: the first by AF_XDP, the second by UDP"

# A child forked after the device opened, still running when its parent
# has ended, holds neither the program nor the queue (pthread_atfork in
# xdp_port.c): the interface is free for the next process.
run "$A" "$VA" -- python3 -c '
import ctypes, os, sys, time
v = ctypes.CDLL("libibverbs.so.1")
v.ibv_get_device_list.restype = ctypes.POINTER(ctypes.c_void_p)
v.ibv_open_device.restype = ctypes.c_void_p
v.ibv_open_device.argtypes = [ctypes.c_void_p]
devs = v.ibv_get_device_list(None)
if not devs or not devs[0] or not v.ibv_open_device(devs[0]):
    sys.exit("no device")
if os.fork() == 0:
    time.sleep(4)
    os._exit(0)
time.sleep(0.3)
os._exit(0)' >"$WORK/fork.log" 2>&1 || fail "fork: the parent failed: $(cat "$WORK/fork.log")"
sleep 0.5
grep -q 'using UDP sockets' "$WORK/fork.log" && fail "fork: the parent had no port: $(cat "$WORK/fork.log")"
ip -n "$A" link show "$VA" | grep -q 'xdp' && fail "fork: the program stayed while the parent's child lives"
pair after_fork data ibv_rc_pingpong -g 0 -s 1024 -n 100 -p PORT -- ibv_rc_pingpong -g 0 -s 1024 -n 100 -p PORT "$ADDR_A"

# Every process ended through exit: no program stayed on the interfaces.
gone() {
	for ns in "$A:$VA" "$B:$VB"; do
		if ip -n "${ns%%:*}" link show "${ns#*:}" | grep -q 'xdp'; then fail "$1: an XDP program stayed on ${ns#*:}"; fi
	done
}
gone "after exit"
# While attached, the kernel keeps what is not RoCEv2 for us: a UDP
# datagram to another port gets through (the programs' TCP exchanges did
# too).
ip netns exec "$A" timeout 10 python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], 4792)); s.settimeout(8)
print("got", s.recv(64))' "$ADDR_A" >"$WORK/udp.out" 2>&1 &
u=$!; PIDS+=("$u")
# (Not under timeout(1): $! is the program itself, to be killed below.)
ip netns exec "$A" env LD_LIBRARY_PATH="$LIB" ${PRELOAD:+LD_PRELOAD=$PRELOAD} ASAN_OPTIONS=detect_leaks=0 \
	SOFTRNIC_RUNTIME_DIR="$WORK/rt-$A" SOFTRNIC_LOCAL=0 SOFTRNIC_IFACE="$VA" SOFTRNIC_XDP="$VA" \
	ibv_rc_pingpong -g 0 -n 2000 -p 19999 >"$WORK/hold.srv" 2>&1 &
h=$!; PIDS+=("$h")
sleep 0.5
ip netns exec "$B" python3 -c '
import socket, sys
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"not roce", (sys.argv[1], 4792))' "$ADDR_A"
wait "$u"
grep -q "not roce" "$WORK/udp.out" || fail "a UDP datagram to port 4792 did not reach the kernel while the program was attached"
ip -n "$A" link show "$VA" | grep -q xdp || fail "no XDP program on $VA while a softrnic process had the port"
# Killed, a process leaves nothing behind: the kernel took its program
# off with its last descriptor, and the queue is free for the next one.
kill -KILL "$h"; wait "$h" 2>/dev/null
pair after_kill data ibv_rc_pingpong -g 0 -s 1024 -n 200 -p PORT -- ibv_rc_pingpong -g 0 -s 1024 -n 200 -p PORT "$ADDR_A"
gone "after the killed process's successor"
if [ "$failed" -ne 0 ]; then echo "xdp_e2e: $failed failures (logs were in $WORK)"; exit 1; fi
echo "xdp_e2e: all passed"
