#!/usr/bin/env bash
# xdp_compare.sh — softrnic between two hosts, as hosts are: two network
# namespaces joined by a veth pair, one process in each, with softrnic's
# AF_XDP port (SOFTRNIC_XDP) and with its UDP sockets, side by side with
# the kernel's own peers in the same namespaces.  A benchmark, not a
# test: it measures and reports, and exits non-zero only when a run could
# not be made at all.
#
#   bench/xdp_compare.sh [BUILD_DIR] [--rounds N] [--mtu BYTES] [--out DIR]
#
# Needs root (namespaces, XDP).  Each round runs, in this order (every
# other round backwards, so a shared machine's drift falls on all alike):
#   pingpong   BUILD_DIR/bench/udp_pingpong, both ends busy-polling a
#              non-blocking UDP socket, 2 bytes: the latency baseline
#   lat.udp    ib_send_lat -s 2 over softrnic's UDP sockets
#   lat.xdp    ib_send_lat -s 2 over the AF_XDP port
#   iperf3     one TCP stream (iperf3 -c, 3 s): the bandwidth baseline
#   bw.udp     ib_write_bw -s 65536 over UDP sockets
#   bw.xdp     ib_write_bw -s 65536 over the AF_XDP port
#   rate.xdp   ib_write_bw -s 4096 over the AF_XDP port: messages per second
# Latencies are compared as round trips (ib_send_lat's t_typical is half
# of one).  The MTU (default 1500) gives RoCE MTU 1024; with --mtu 9000
# the AF_XDP port's RoCE MTU is 4096 where the kernel has AF_XDP's
# multi-buffer mode (each packet a frame of two chunks: chunked_tx and
# chunked_rx on the paths line of SOFTRNIC_STATS_AT_EXIT), else 2048;
# the UDP sockets' is 4096.
# The neighbours' Ethernet addresses are entered as permanent, so no run
# waits for ARP.  Prints each goal met / not met with its ratio.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$repo/build rounds=3 mtu=1500 out=
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift ;;
	--mtu) mtu=$2; shift ;;
	--out) out=$2; shift ;;
	-h|--help) sed -n '2,/^set -uo/{/^set -uo/!p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "xdp_compare: unknown option $1" >&2; exit 2 ;;
	*) build=$(cd "$1" && pwd) ;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || { echo "xdp_compare: needs root (network namespaces, XDP)" >&2; exit 77; }
for t in ib_send_lat ib_write_bw iperf3 timeout; do
	command -v "$t" >/dev/null || { echo "xdp_compare: $t not installed" >&2; exit 1; }
done
lib=$build/lib pp=$build/bench/udp_pingpong
[ -e "$lib/libibverbs.so.1" ] && [ -x "$pp" ] || { echo "xdp_compare: build $build first" >&2; exit 1; }
out=${out:-$(mktemp -d /tmp/xdp_compare.XXXXXX)}
mkdir -p "$out"

A=srxA-$$ B=srxB-$$ VA=srxa$$ VB=srxb$$
NET=10.232.$(( $$ % 250 + 1 )) ADDR_A= ADDR_B=
ADDR_A=$NET.1 ADDR_B=$NET.2
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null
}
trap cleanup EXIT INT TERM
ip netns add "$A" && ip netns add "$B" || exit 1
ip link add "$VA" mtu "$mtu" type veth peer name "$VB" mtu "$mtu" || exit 1
ip link set "$VA" netns "$A"; ip link set "$VB" netns "$B"
ip -n "$A" addr add "$ADDR_A/24" dev "$VA"; ip -n "$B" addr add "$ADDR_B/24" dev "$VB"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "$VA" up; ip -n "$B" link set "$VB" up
mac() { ip -n "$1" -o link show "$2" | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2; }
ip -n "$A" neigh replace "$ADDR_B" lladdr "$(mac "$B" "$VB")" dev "$VA" nud permanent
ip -n "$B" neigh replace "$ADDR_A" lladdr "$(mac "$A" "$VA")" dev "$VB" nud permanent

port=20000
# in NS ENV... CMD: run in a namespace with a private runtime directory.
in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
sr_env() { # sr_env NS IFACE XDP(0/1)
	local env=(env LD_LIBRARY_PATH="$lib" SOFTRNIC_LOCAL=0 SOFTRNIC_STATS_AT_EXIT=1 SOFTRNIC_RUNTIME_DIR="$out/rt-$1"
		   SOFTRNIC_IFACE="$2")
	[ "$3" = 1 ] && env+=(SOFTRNIC_XDP="$2")
	printf '%s\n' "${env[@]}"
}
# perftest NAME XDP TOOL ARGS...: server in A, client in B; prints the row.
perftest() {
	local name=$1 xdp=$2 tool=$3; shift 3
	port=$((port + 1))
	mkdir -p "$out/rt-$A" "$out/rt-$B"
	mapfile -t ea < <(sr_env "$A" "$VA" "$xdp"); mapfile -t eb < <(sr_env "$B" "$VB" "$xdp")
	in_ns "$A" "${ea[@]}" timeout 60 "$tool" -x 0 -F -p "$port" "$@" >"$out/$name.srv" 2>&1 &
	local srv=$!; pids+=("$srv")
	local ok=1
	for _ in $(seq 50); do
		sleep 0.1
		if in_ns "$B" "${eb[@]}" timeout 60 "$tool" -x 0 -F -p "$port" "$@" "$ADDR_A" >"$out/$name.cli" 2>&1; then ok=0; break; fi
		grep -q "Couldn't connect\|Unable to open\|failed to connect" "$out/$name.cli" || break
	done
	wait "$srv"
	[ "$ok" = 0 ] || { echo "xdp_compare: $name failed (logs $out/$name.*)" >&2; return 1; }
	if [ "$xdp" = 1 ] && ! grep -q 'paths: xdp tx=[1-9]' "$out/$name.cli"; then
		echo "xdp_compare: $name did not go by the AF_XDP port (see $out/$name.cli)" >&2; return 1
	fi
	awk '/#bytes/ { getline; print; exit }' "$out/$name.cli"
}
measure() { # measure WHAT ROUND -> appends "WHAT VALUE" to $out/values
	local v= row
	case $1 in
	pingpong)
		port=$((port + 1))
		in_ns "$A" timeout 60 "$pp" server "$port" -a "$ADDR_A" -T 20 >/dev/null 2>&1 &
		local srv=$!; pids+=("$srv"); sleep 0.2
		v=$(in_ns "$B" timeout 60 "$pp" client "$port" -a "$ADDR_A" -n 20000 | grep -o 'rtt_p50_us=[0-9.]*' | cut -d= -f2)
		wait "$srv" ;;
	lat.udp|lat.xdp)
		row=$(perftest "$1.$2" "$([ "$1" = lat.xdp ] && echo 1 || echo 0)" ib_send_lat -s 2 -n 20000) &&
			v=$(awk '{ printf "%.3f", $5 * 2 }' <<<"$row") ;;
	iperf3)
		port=$((port + 1))
		in_ns "$A" timeout 30 iperf3 -s -1 -B "$ADDR_A" -p "$port" >/dev/null 2>&1 &
		local srv=$!; pids+=("$srv"); sleep 0.3
		v=$(in_ns "$B" timeout 30 iperf3 -c "$ADDR_A" -p "$port" -t 3 -J | python3 -c '
import json, sys; print("%.1f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8 / 1e6))')
		wait "$srv" ;;
	bw.udp|bw.xdp)
		row=$(perftest "$1.$2" "$([ "$1" = bw.xdp ] && echo 1 || echo 0)" ib_write_bw -s 65536 -n 20000) &&
			v=$(awk '{ printf "%.1f", $4 * 1.048576 }' <<<"$row") ;;   # MiB/s -> MB/s
	rate.xdp)
		row=$(perftest "$1.$2" 1 ib_write_bw -s 4096 -n 200000) && v=$(awk '{ printf "%.3f", $5 }' <<<"$row") ;;
	esac
	[ -n "$v" ] && echo "$1 $v" >>"$out/values"
	echo "  round $2: $1 = ${v:-failed}"
}

list=(pingpong lat.udp lat.xdp iperf3 bw.udp bw.xdp rate.xdp)
echo "xdp_compare: $A ($ADDR_A) <-> $B ($ADDR_B), veth MTU $mtu; $(nproc) CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), kernel $(uname -r); logs in $out"
: >"$out/values"
for r in $(seq "$rounds"); do
	order=("${list[@]}")
	if [ $((r % 2)) = 0 ]; then order=(); for ((i = ${#list[@]} - 1; i >= 0; i--)); do order+=("${list[$i]}"); done; fi
	for m in "${order[@]}"; do measure "$m" "$r"; done
done

median() { awk -v k="$1" '$1 == k { print $2 }' "$out/values" | sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
for m in "${list[@]}"; do declare "med_${m/./_}=$(median "$m")"; done
echo
echo "medians of $rounds rounds: udp_pingpong RTT ${med_pingpong:-?} us; ib_send_lat RTT udp ${med_lat_udp:-?} us, xdp ${med_lat_xdp:-?} us;"
echo "  iperf3 ${med_iperf3:-?} MB/s; ib_write_bw 64 KiB udp ${med_bw_udp:-?} MB/s, xdp ${med_bw_xdp:-?} MB/s; 4 KiB xdp ${med_rate_xdp:-?} Mpps"
goal() { # goal LABEL VALUE BASE OP LIMIT UNIT
	if [ -z "$2" ] || [ -z "$3" ]; then printf '  %-48s n/a\n' "$1"; return; fi
	local ratio; ratio=$(awk -v a="$2" -v b="$3" 'BEGIN { printf "%.2f", a / b }')
	local met; met=$(awk -v r="$ratio" -v l="$5" -v op="$4" 'BEGIN { print ((op == "le" ? r <= l : r >= l) ? "met" : "not met") }')
	printf '  %-48s %6s %s  (goal %s %s)\n' "$1" "$ratio" "$6" "$([ "$4" = le ] && echo '<=' || echo '>=')" "$5"
	printf '  %-48s %s\n' "" "$met"
}
echo
echo "goals:"
goal "AF_XDP ib_send_lat RTT / udp_pingpong RTT" "${med_lat_xdp:-}" "${med_pingpong:-}" le 1.0 x
goal "AF_XDP ib_write_bw 64 KiB / iperf3" "${med_bw_xdp:-}" "${med_iperf3:-}" ge 2.0 x
goal "AF_XDP 4 KiB message rate (Mpps / 1 M/s)" "${med_rate_xdp:-}" 1 ge 1.0 x
goal "UDP ib_send_lat RTT / udp_pingpong RTT" "${med_lat_udp:-}" "${med_pingpong:-}" le 1.3 x
goal "UDP ib_write_bw 64 KiB / iperf3" "${med_bw_udp:-}" "${med_iperf3:-}" ge 1.5 x
