#!/usr/bin/env bash
# congestion.sh — DCQCN against the Linux kernel's own ECN marks.
#
# Three network namespaces: the senders, a router, the receiver.  Each flow
# is one unmodified ib_write_bw pair over softrnic, every process on an
# address of its own (SOFTRNIC_ADDR).  The router forwards to the receiver
# through a bottleneck, htb at RATE Mbit/s into a byte FIFO of QUEUE bytes,
# and marks CE with nftables ahead of it: every RoCEv2 packet beyond a
# token bucket of MARK bytes/s (burst BURST) leaves with CE set.  The kernel
# here has no RED qdisc; this marker is a phantom queue (HULL's idea): it
# marks once the arrival rate exceeds MARK, before the real queue builds.
#
#   senders ──veth── router: nft mark (forward) → htb RATE → bfifo QUEUE ──veth── receiver
#
# For each flow count and mode (dcqcn: softrnic's DCQCN on; off: the same
# marks come and CNPs go back, SOFTRNIC_DCQCN=0 ignores them; dctcp and
# timely: SOFTRNIC_CC=dctcp or timely at both ends, DCTCP's rate cut by
# the marked fraction, TIMELY's RTT gradient with thresholds for this
# software path's millisecond round trips: T_low 2 ms, T_high 10 ms, min
# RTT 1 ms, δ 20 Mb/s unless SOFTRNIC_TIMELY_* say otherwise) it records,
# every 100 ms, each flow's goodput at the receiver (nftables input
# counters), the marked fraction, the bottleneck's backlog and drops
# (congestion_sample.py), and at the end softrnic's own counters (CNPs,
# rate cuts, retransmissions).  congestion_report.py turns the CSVs into
# PNG plots, a summary and, with --check, the assertions CI makes.
#
# usage: scripts/congestion.sh [options]     (needs root: namespaces)
#   --build DIR       softrnic build (default build)
#   --out DIR         results (default congestion-results)
#   --flows "1 2 4"   flow counts to run
#   --modes "dcqcn off"   (and dctcp, timely)
#   --duration S      seconds from the first flow's start to the end (12)
#   --stagger S       seconds between flow starts (2)
#   --rate MBIT       bottleneck (1000)    --queue BYTES  FIFO size (262144)
#   --mark BYTES/S    marker rate (default 90 % of the bottleneck)
#   --profile mlx5|paper   DCQCN parameter set (default paper)
#   --check           assert the short-form claims (CI): CNPs > 0, rate
#                     cuts > 0, no qdisc drops with DCQCN, Jain >= 0.9; the
#                     same for DCTCP (its CNPs are its ECN echo); TIMELY:
#                     rate cuts, no drops and a third of the link used (its
#                     Jain is reported: TIMELY promises no fair share)
#
# Only namespaces, links and processes created here are touched; the trap
# removes them however the script ends.  Exit 77: skipped (not root).
set -euo pipefail

BUILD=build OUT=congestion-results FLOWS="1 2 4" MODES="dcqcn off" DURATION=12 STAGGER=2
RATE=1000 QUEUE=1048576 MARK= BURST=32768 PROFILE=paper CHECK=0
MARKER=bpf KMIN=5000 KMAX=200000 PMAX=10 LINE_RATE= CLIENT_NICE=${CLIENT_NICE:-10}
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--flows) FLOWS=$2; shift 2 ;;
	--modes) MODES=$2; shift 2 ;;
	--duration) DURATION=$2; shift 2 ;;
	--stagger) STAGGER=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--queue) QUEUE=$2; shift 2 ;;
	--mark) MARK=$2; shift 2 ;;
	--profile) PROFILE=$2; shift 2 ;;
	--marker) MARKER=$2; shift 2 ;;
	--line-rate) LINE_RATE=$2; shift 2 ;;
	--kmin) KMIN=$2; shift 2 ;;
	--kmax) KMAX=$2; shift 2 ;;
	--pmax) PMAX=$2; shift 2 ;;
	--check) CHECK=1; shift ;;
	*) echo "congestion.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ -n "$LINE_RATE" ] || LINE_RATE=$RATE
[ -n "$MARK" ] || MARK=$(( RATE * 1000000 / 8 * 95 / 100 ))

if [ "$(id -u)" != 0 ]; then
	echo "congestion.sh: needs root (network namespaces); skipped" >&2
	exit 77
fi
# Debian's python3, where apt put python3-matplotlib (a pyenv or venv
# python3 earlier in PATH would not have it).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
for tool in ip tc nft ib_write_bw "$PY" clang; do
	command -v "$tool" >/dev/null || { echo "congestion.sh: $tool not found (scripts/deps.sh installs it)" >&2; exit 1; }
done
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "$BUILD" && pwd)
LIBDIR=$(dirname "$(find "$BUILD" -name libibverbs.so.1 -path '*lib*' | head -n1)")
[ -f "$LIBDIR/libibverbs.so.1" ] || { echo "congestion.sh: no libibverbs.so.1 under $BUILD" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

TAG=$$
NS_S=cgS-$TAG NS_R=cgR-$TAG NS_D=cgD-$TAG
V_S=cgs$TAG V_RS=cgrs$TAG V_RD=cgrd$TAG V_D=cgd$TAG
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
	ip netns del "$NS_S" 2>/dev/null || true
	ip netns del "$NS_R" 2>/dev/null || true
	ip netns del "$NS_D" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

build_topology() {
	local n=$1
	ip netns add "$NS_S"; ip netns add "$NS_R"; ip netns add "$NS_D"
	ip link add "$V_S" type veth peer name "$V_RS"
	ip link add "$V_D" type veth peer name "$V_RD"
	ip link set "$V_S" netns "$NS_S"; ip link set "$V_RS" netns "$NS_R"
	ip link set "$V_RD" netns "$NS_R"; ip link set "$V_D" netns "$NS_D"
	for ns in "$NS_S" "$NS_R" "$NS_D"; do in_ns "$ns" ip link set lo up; done
	in_ns "$NS_R" ip addr add 10.233.1.1/24 dev "$V_RS"
	in_ns "$NS_R" ip addr add 10.233.2.1/24 dev "$V_RD"
	in_ns "$NS_R" ip link set "$V_RS" up
	in_ns "$NS_R" ip link set "$V_RD" up
	in_ns "$NS_R" sysctl -qw net.ipv4.ip_forward=1
	for i in $(seq 0 $((n - 1))); do
		in_ns "$NS_S" ip addr add "10.233.1.$((11 + i))/24" dev "$V_S"
		in_ns "$NS_D" ip addr add "10.233.2.$((11 + i))/24" dev "$V_D"
	done
	in_ns "$NS_S" ip link set "$V_S" up
	in_ns "$NS_D" ip link set "$V_D" up
	in_ns "$NS_S" ip route add 10.233.2.0/24 via 10.233.1.1
	in_ns "$NS_D" ip route add 10.233.1.0/24 via 10.233.2.1

	# One receive CPU per veth (RPS): veth hands packets to the backlog of
	# whichever CPU sent them, and with htb dequeuing on either CPU of the
	# router the receiver saw RoCE packets out of order (each one a PSN
	# sequence NAK and a Go-Back-N resend, with nothing lost).  Switch
	# ports do not reorder a flow; with RPS on one CPU the veths do not
	# either.
	in_ns "$NS_S" sh -c "echo 1 > /sys/class/net/$V_S/queues/rx-0/rps_cpus"
	in_ns "$NS_R" sh -c "echo 1 > /sys/class/net/$V_RS/queues/rx-0/rps_cpus; echo 1 > /sys/class/net/$V_RD/queues/rx-0/rps_cpus"
	in_ns "$NS_D" sh -c "echo 1 > /sys/class/net/$V_D/queues/rx-0/rps_cpus"

	# The bottleneck: htb shapes to RATE, the bfifo under it is the queue.
	in_ns "$NS_R" tc qdisc add dev "$V_RD" root handle 1: htb default 10
	in_ns "$NS_R" tc class add dev "$V_RD" parent 1: classid 1:10 htb rate "${RATE}mbit" ceil "${RATE}mbit"
	in_ns "$NS_R" tc qdisc add dev "$V_RD" parent 1:10 handle 10: bfifo limit "$QUEUE"

	# The marker, on the router's egress toward the receiver, ahead of
	# htb: the eBPF phantom queue (default), or the nftables token bucket.
	if [ "$MARKER" = bpf ]; then
		in_ns "$NS_R" tc qdisc add dev "$V_RD" clsact
		in_ns "$NS_R" tc filter add dev "$V_RD" egress bpf direct-action obj "$OUT/phantom_queue.o" sec tc
	else
		in_ns "$NS_R" nft -f - <<-EOF
		table ip cc {
			chain to_receiver {
				type filter hook forward priority 0; policy accept;
				oifname "$V_RD" udp dport 4791 ip ecn ect0 limit rate over $MARK bytes/second burst $BURST bytes ip ecn set ce
			}
		}
		EOF
	fi
	# The receiver's counters (input hook): bytes per sender, and the
	# bytes that arrived CE-marked.
	{
		echo "table ip ccrx {"
		echo "chain from_senders {"
		echo "type filter hook input priority 0; policy accept;"
		echo "udp dport 4791 counter comment \"total\""
		echo "udp dport 4791 ip ecn ce counter comment \"marked\""
		for i in $(seq 0 $((n - 1))); do
			echo "ip saddr 10.233.1.$((11 + i)) udp dport 4791 counter comment \"flow$i\""
		done
		echo "}"
		echo "}"
	} | in_ns "$NS_D" nft -f -
}

# The phantom queue's object, built for this run's parameters.
build_marker() {
	[ "$MARKER" = bpf ] || return 0
	local inc
	inc=/usr/include/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
	clang -O2 -g -target bpf -I"$inc" -DPQ_RATE_BPS="$(( MARK * 8 ))ull" -DPQ_KMIN="${KMIN}ull" \
		-DPQ_KMAX="${KMAX}ull" -DPQ_PMAX_PERMILLE="${PMAX}ull" -DPQ_LIMIT="${QUEUE}ull" \
		-c "$HERE/congestion/phantom_queue.bpf.c" -o "$OUT/phantom_queue.o"
}

run_one() {
	local n=$1 mode=$2 tag=$1flows-$2
	local dcqcn=1 algo=dcqcn
	[ "$mode" = off ] && dcqcn=0
	case "$mode" in dctcp|timely) algo=$mode ;; esac
	echo "== $n flow(s), $mode (profile $PROFILE), bottleneck $RATE Mbit/s, queue $QUEUE B, marker $MARKER at $MARK B/s"
	build_topology "$n"
	local env=(env LD_LIBRARY_PATH="$LIBDIR" SOFTRNIC_GSO=0 SOFTRNIC_DCQCN=$dcqcn SOFTRNIC_CC=$algo
		   SOFTRNIC_CC_PROFILE=$PROFILE
		   SOFTRNIC_TIMELY_T_LOW_US="${SOFTRNIC_TIMELY_T_LOW_US:-2000}"
		   SOFTRNIC_TIMELY_T_HIGH_US="${SOFTRNIC_TIMELY_T_HIGH_US:-10000}"
		   SOFTRNIC_TIMELY_MIN_RTT_US="${SOFTRNIC_TIMELY_MIN_RTT_US:-1000}"
		   SOFTRNIC_TIMELY_RATE_AI_MBPS="${SOFTRNIC_TIMELY_RATE_AI_MBPS:-20}"
		   SOFTRNIC_LINE_RATE="$LINE_RATE"
		   SOFTRNIC_STATS_AT_EXIT=1)
	local stop=$OUT/$tag.stop
	rm -f "$stop" "$OUT/$tag".*.log
	# Servers first (they wait for their client), then the sampler.
	for i in $(seq 0 $((n - 1))); do
		in_ns "$NS_D" "${env[@]}" SOFTRNIC_ADDR="10.233.2.$((11 + i))" \
			ib_write_bw -d softrnic0 -x 0 -F -s 65536 -D $((DURATION - i * STAGGER)) -p $((18950 + i)) \
			--report_gbits >"$OUT/$tag.server$i.log" 2>&1 &
		PIDS+=($!)
	done
	sleep 1
	"$PY" "$HERE/congestion/sample.py" --router "$NS_R" --receiver "$NS_D" --dev "$V_RD" --flows "$n" \
		--out "$OUT/$tag.csv" --stop "$stop" &
	local sampler=$!
	local clients=()
	for i in $(seq 0 $((n - 1))); do
		[ "$i" -gt 0 ] && sleep "$STAGGER"
		in_ns "$NS_S" nice -n "$CLIENT_NICE" "${env[@]}" SOFTRNIC_ADDR="10.233.1.$((11 + i))" \
			ib_write_bw -d softrnic0 -x 0 -F -s 65536 -D $((DURATION - i * STAGGER)) -p $((18950 + i)) \
			--report_gbits "10.233.2.$((11 + i))" >"$OUT/$tag.client$i.log" 2>&1 &
		clients+=($!)
		PIDS+=($!)
	done
	local rc=0
	for p in "${clients[@]}"; do wait "$p" || rc=1; done
	touch "$stop"
	wait "$sampler" || true
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
	in_ns "$NS_R" tc -s qdisc show dev "$V_RD" >"$OUT/$tag.tc.txt"
	# Datagrams the hosts' kernels dropped (a receiver that fell behind).
	in_ns "$NS_D" cat /proc/net/snmp >"$OUT/$tag.snmp-receiver.txt"
	in_ns "$NS_S" cat /proc/net/snmp >"$OUT/$tag.snmp-senders.txt"
	cleanup
	rm -f "$stop"
	[ "$rc" = 0 ] || echo "congestion.sh: an ib_write_bw client failed in $tag (see $OUT/$tag.client*.log)" >&2
	return 0
}

build_marker
for n in $FLOWS; do
	for m in $MODES; do
		run_one "$n" "$m"
	done
done
args=(--out "$OUT" --flows "$FLOWS" --modes "$MODES" --stagger "$STAGGER" --rate "$RATE")
[ "$CHECK" = 1 ] && args+=(--check)
"$PY" "$HERE/congestion/report.py" "${args[@]}"
