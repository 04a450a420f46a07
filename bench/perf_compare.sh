#!/usr/bin/env bash
# perf_compare.sh — softrnic side by side with the kernel's TCP/UDP on the
# same machine.  A benchmark, not a test: it measures and reports, it does
# not pass or fail (exit status is non-zero only when a run could not be
# made at all).
#
#   bench/perf_compare.sh [BUILD_DIR] [--quick] [--runs N] [--out DIR] [--no-netns]
#                         [--only REGEX]
#   --only REGEX: only the measurements whose label matches (e.g.
#   'lat|rtt'), without the idle checks; the other rows say n/a.
#
# What it runs, all over loopback on this machine:
#   softrnic  unmodified perftest with LD_LIBRARY_PATH=BUILD_DIR/lib, over
#             softrnic's UDP path (SOFTRNIC_LOCAL=0: the packets go
#             through the kernel's UDP, as between two hosts;
#             bench/local_compare.sh measures the host-local path):
#             ib_write_bw, ib_send_bw, ib_read_bw at 64 KiB (iteration mode,
#             so bytes moved are exact), ib_send_bw -e (event mode),
#             ib_write_lat, ib_send_lat, ib_read_lat at 2 bytes, ib_atomic_lat
#   kernel    iperf3 single-stream TCP (bandwidth); BUILD_DIR/bench/udp_pingpong,
#             a UDP ping-pong whose two processes busy-poll non-blocking
#             sockets, at 2 bytes (the latency baseline: like perftest, it
#             never sleeps); sockperf ping-pong over UDP and TCP (14-byte
#             messages: sockperf's minimum, its own header; sockperf blocks
#             in recv, so it pays two wake-ups per round trip that perftest
#             and udp_pingpong do not: a second reference, not like for like)
# Every measurement is made N times (5; --quick: 1).  Within a round the
# softrnic and kernel measurements alternate, and every other round runs the
# list backwards, so slow drift of a shared machine (other builds, thermal)
# falls on both sides alike.  The table reports medians.
#
# Like with like for latency: perftest's ib_send_lat / ib_write_lat report
# half a round trip (t_typical = median ping-pong time / 2), ib_read_lat and
# ib_atomic_lat a whole one (a READ or atomic is itself a round trip).
# udp_pingpong reports whole round trips (median as perftest takes it, and
# the mean), and sockperf is run with --full-rtt, so it does too.  The
# table converts everything to round-trip times (RTT) before dividing.  The
# headline latency ratio is ib_send_lat's RTT over udp_pingpong's: both
# busy-poll, both carry 2 bytes, one message in flight.  ib_send_lat sends
# more than 2 bytes, though: each SEND leaves with the ACK of the one
# before riding in the same GSO send.  udp_pingpong -R sends exactly that
# shape through the kernel, and its RTT splits the ratio into the kernel's
# part (RoCEv2-shaped over plain) and softrnic's own (ib_send_lat over
# RoCEv2-shaped).
#
# CPU per GiB: user+system time of both processes of a pair (/usr/bin/time,
# which counts all threads, so softrnic's progress thread too) divided by
# the bytes moved.  perftest's fixed cost (set-up and its 0.1-0.45 s clock
# calibration busy loop per process) is measured with a 5-iteration run
# and subtracted.  perftest busy-polls its CQ unless -e, so the polling
# rows charge the spinning application thread; the -e row shows the cost
# without it.
#
# Event-mode idle check: (1) an ibv_rc_pingpong -e server waits 5 s for a
# client; (2) an ib_send_lat -e pair whose client pauses 0.4 s
# before each send (--latency_gap), so the server sleeps in
# ibv_get_cq_event with nothing in flight.  (Freezing a client with SIGSTOP
# is no good: a packet caught unacknowledged makes the server's RC QP
# exhaust its retries, as it should.)  For each we read the server's CPU
# time (sum over its threads of /proc/PID/task/*/schedstat, nanoseconds)
# and its voluntary context switches (wakeups) across the wait.
#
# Isolation: when it may (root, or unprivileged user namespaces), the script
# re-runs itself in a private network namespace (unshare -n) with only
# loopback up, so other programs' traffic neither collides with its ports
# nor muddies the kernel's UDP counters: the "kernel UDP drops" it reports
# per softrnic run (Udp RcvbufErrors in /proc/net/snmp: datagrams the
# kernel dropped because a socket's receive buffer was full) are then
# exactly softrnic's.  --no-netns runs in the current namespace.
#
# Robustness: every process runs under timeout(1); an EXIT/INT/TERM trap
# stops every process this script started (by PID); ports are random in
# 30000-59999 and checked free; each softrnic process binds its own
# 127.0.0.N on UDP 4791 (the runtime picks a free one).
set -uo pipefail

usage() { sed -n '2,/^# Every measurement/{/^# Every measurement/!p}' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

repo=$(cd "$(dirname "$0")/.." && pwd)
all_args=("$@")
netns=1
build=""
runs=5
quick=0
out=""
only=""
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--runs) shift; runs=${1:-}; [[ "$runs" =~ ^[1-9][0-9]*$ ]] || usage ;;
	--out) shift; out=${1:-}; [ -n "$out" ] || usage ;;
	--no-netns) netns=0 ;;
	--only) shift; only=${1:-}; [ -n "$only" ] || usage ;;
	-h|--help) usage ;;
	-*) echo "perf_compare: unknown option $1" >&2; usage ;;
	*) build=$1 ;;
	esac
	shift
done
[ "$quick" = 1 ] && [ "$runs" = 5 ] && runs=1

# Into a private network namespace (see the top of this file).
if [ "$netns" = 1 ] && [ -z "${PERF_COMPARE_NETNS:-}" ]; then
	if unshare -n true 2>/dev/null; then
		exec unshare -n -- env PERF_COMPARE_NETNS=1 bash "$0" "${all_args[@]}"
	elif unshare -rn true 2>/dev/null; then
		exec unshare -rn -- env PERF_COMPARE_NETNS=1 bash "$0" "${all_args[@]}"
	fi
	echo "perf_compare: cannot make a network namespace; running in the current one" >&2
fi
where="current network namespace (shared with other programs)"
if [ -n "${PERF_COMPARE_NETNS:-}" ]; then
	ip link set lo up || { echo "perf_compare: cannot bring lo up in the new namespace" >&2; exit 1; }
	where="private network namespace (unshare -n), loopback only"
fi
build=$(realpath "${build:-$repo/build}")
lib=$build/lib
softrnic_cli=$build/bin/softrnic
udp_pingpong=$build/bench/udp_pingpong

# Sizes of one measurement.  Full: 4-6 minutes for 5 rounds on a
# 2-core VM; quick: 30-45 s for 1 round.  A full bandwidth run moves 48 000
# messages of 64 KiB, about a second over UDP here, so that its start
# weighs about as little as iperf3's in its 3 s: with 12 000 (0.2 s) the
# same build measured 3 340-3 720 MiB/s against 3 890-3 990 with 60 000.
if [ "$quick" = 1 ]; then
	bw_iters=4000 ev_iters=2000 lat_iters=1000 kern_secs=2 idle_secs=3 idle_iters=8 idle_window=1.2
else
	bw_iters=48000 ev_iters=24000 lat_iters=5000 kern_secs=3 idle_secs=5 idle_iters=12 idle_window=2.5
fi
bw_size=65536
lat_size=2
busy_iters=10000 busy_warmup=1000 # udp_pingpong: ~0.1 s of round trips
sockperf_size=14 # sockperf refuses less than its 14-byte header

# ---- preflight ----------------------------------------------------------------

# shellcheck source=bench/common.sh
. "$repo/bench/common.sh"
die() { echo "perf_compare: $*" >&2; exit 1; }
[ -e "$lib/libibverbs.so.1" ] || die "no $lib/libibverbs.so.1 (build first: scripts/build.sh, or pass BUILD_DIR)"
for t in ib_write_bw ib_send_bw ib_read_bw ib_write_lat ib_send_lat ib_read_lat ib_atomic_lat \
	ibv_rc_pingpong iperf3 sockperf timeout ss awk; do
	command -v "$t" >/dev/null || die "$t not found (scripts/deps.sh installs perftest, ibverbs-utils, iperf3, sockperf)"
done
[ -x /usr/bin/time ] || die "/usr/bin/time not found (Debian package: time)"
[ -x "$udp_pingpong" ] || die "no $udp_pingpong (built with the project: ninja -C $build)"

out=${out:-$(mktemp -d /tmp/perf_compare.XXXXXX)}
mkdir -p "$out" || die "cannot create $out"
results=$out/samples.tsv # name <TAB> round <TAB> value ...
: >"$results"

# ---- process bookkeeping --------------------------------------------------------

# Every process is started by bg() as a background job of this shell, so
# `jobs -p` names exactly the ones still running (or not yet reaped): the
# cleanup signals those and no other PID, even if a PID was reused.
cleanup() {
	local p
	# timeout(1) passes the signal on to the process group it leads.
	for p in $(jobs -p); do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.2
	for p in $(jobs -p); do # still there: its whole group (timeout leads one)
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
	done
}
trap cleanup EXIT
trap 'echo "perf_compare: interrupted" >&2; exit 130' INT TERM

# bg LIMIT LOG ERR CMD...: start CMD under timeout(1) in the background; the
# timeout wrapper's PID is left in $last_pid.
bg() {
	local limit=$1 log=$2 err=$3; shift 3
	timeout -k 3 "$limit" "$@" >"$log" 2>"$err" &
	last_pid=$!
}

# The PID of the program timeout(1) runs (its only child).
child_of() {
	local i c
	for i in $(seq 50); do
		c=$(pgrep -P "$1" | head -1)
		[ -n "$c" ] && { echo "$c"; return 0; }
		sleep 0.05
	done
	return 1
}

next_port=$((30000 + RANDOM % 30000))
take_port() {
	local p
	while :; do
		p=$next_port
		next_port=$((next_port + 1))
		[ "$next_port" -ge 60000 ] && next_port=30000
		if [ -z "$(ss -Htanu "( sport = :$p )" 2>/dev/null)" ]; then
			echo "$p"
			return
		fi
	done
}

# wait_listen PROTO PORT: until something listens there (max 10 s).
wait_listen() {
	local flag=-Hltn i
	[ "$1" = udp ] && flag=-Hlun
	for i in $(seq 200); do
		[ -n "$(ss $flag "( sport = :$2 )" 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}

record() { printf '%s\t%s\n' "$1" "$2" >>"$results"; }

# Datagrams the kernel dropped for a full socket receive buffer, in this
# network namespace (Udp RcvbufErrors).
udp_rcvbuf_errors() {
	awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $6; exit }' /proc/net/snmp
}

# ---- one measurement each -------------------------------------------------------

# perftest_pair NAME ROUND TOOL ARGS...: server and client of TOOL over
# softrnic, both under /usr/bin/time.  Records NAME (MiB/s or usec as
# perftest reports), NAME.retx (retransmissions seen by either device) and,
# for bandwidth tests, NAME.cpus (CPU seconds of both processes) and
# NAME.bytes (bytes moved).
perftest_pair() {
	local name=$1 round=$2 tool=$3; shift 3
	local port base=$out/$name.$round drops0
	port=$(take_port)
	drops0=$(udp_rcvbuf_errors)
	local env=(env LD_LIBRARY_PATH="$lib" SOFTRNIC_LOCAL=0 SOFTRNIC_STATS_AT_EXIT=1)
	bg 120 "$base.srv" "$base.srv.err" "${env[@]}" /usr/bin/time -f '%e %U %S' -o "$base.srv.time" \
		"$tool" -x 0 -F -p "$port" "$@"
	local srv=$last_pid
	if ! wait_listen tcp "$port"; then
		echo "  $name: server did not start (see $base.srv*)" >&2
		kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
		return 1
	fi
	bg 120 "$base.cli" "$base.cli.err" "${env[@]}" /usr/bin/time -f '%e %U %S' -o "$base.cli.time" \
		"$tool" -x 0 -F -p "$port" "$@" 127.0.0.1
	local cli=$last_pid rc_c rc_s
	wait "$cli"; rc_c=$?
	wait "$srv"; rc_s=$?
	if [ "$rc_c" != 0 ] || [ "$rc_s" != 0 ]; then
		echo "  $name: failed (client rc=$rc_c server rc=$rc_s; logs $base.*)" >&2
		return 1
	fi
	grep -q 'Device *: softrnic' "$base.cli" ||
		{ echo "  $name: client did not run on softrnic (see $base.cli)" >&2; return 1; }
	local row
	row=$(awk '/#bytes/ { getline; print; exit }' "$base.cli")
	local retx
	retx=$(cat "$base.srv.err" "$base.cli.err" | grep -o ' retransmits=[0-9]*' | awk -F= '{ s += $2 } END { print s + 0 }')
	record "$name.retx" "$retx"
	record "$name.drops" "$(( $(udp_rcvbuf_errors) - drops0 ))"
	case "$tool" in
	*_bw)
		# #bytes #iterations BW-peak BW-average(MiB/s) MsgRate
		local bytes iters mibs cpu
		read -r bytes iters _ mibs _ <<<"$row"
		record "$name" "$mibs"
		cpu=$(cat "$base.srv.time" "$base.cli.time" | awk 'NF == 3 { s += $2 + $3 } END { printf "%.3f", s }')
		record "$name.cpus" "$cpu"
		record "$name.bytes" "$((bytes * iters))"
		;;
	*_lat)
		# #bytes #iterations t_min t_max t_typical t_avg ...
		local typical avg
		read -r _ _ _ _ typical avg _ <<<"$row"
		record "$name" "$typical"
		record "$name.avg" "$avg"
		;;
	esac
}

# iperf3_pair ROUND: single TCP stream, records iperf3 (MiB/s received) and
# iperf3.cpu (CPU s per GiB, both processes).
iperf3_pair() {
	local round=$1 port base=$out/iperf3.$1
	port=$(take_port)
	bg 60 "$base.srv" "$base.srv.err" /usr/bin/time -f '%e %U %S' -o "$base.srv.time" \
		iperf3 -s -1 -B 127.0.0.1 -p "$port"
	local srv=$last_pid
	wait_listen tcp "$port" || { echo "  iperf3: server did not start" >&2; kill "$srv"; wait "$srv"; return 1; }
	bg 60 "$base.cli" "$base.cli.err" /usr/bin/time -f '%e %U %S' -o "$base.cli.time" \
		iperf3 -c 127.0.0.1 -p "$port" -t "$kern_secs" -J
	local cli=$last_pid
	wait "$cli" || { echo "  iperf3: client failed (see $base.cli*)" >&2; kill "$srv"; wait "$srv"; return 1; }
	wait "$srv"
	local got
	got=$(/usr/bin/python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["end"]["sum_received"]
print("%.2f %d" % (e["bits_per_second"] / 8 / 1048576, e["bytes"]))' "$base.cli") || return 1
	local mibs bytes
	read -r mibs bytes <<<"$got"
	record iperf3 "$mibs"
	record iperf3.cpu "$(cat "$base.srv.time" "$base.cli.time" | awk -v b="$bytes" \
		'NF == 3 { s += $2 + $3 } END { if (b > 0) printf "%.3f", s / (b / 1073741824) }')"
}

# sockperf_pair NAME ROUND [--tcp]: ping-pong, records the median RTT (usec).
sockperf_pair() {
	local name=$1 round=$2; shift 2
	local port base=$out/$name.$round proto=udp
	[ "${1:-}" = --tcp ] && proto=tcp
	port=$(take_port)
	bg 60 "$base.srv" "$base.srv.err" sockperf server -i 127.0.0.1 -p "$port" "$@"
	local srv=$last_pid
	wait_listen "$proto" "$port" || { echo "  $name: server did not start" >&2; kill "$srv"; wait "$srv"; return 1; }
	timeout -k 3 60 sockperf ping-pong -i 127.0.0.1 -p "$port" -m "$sockperf_size" -t "$kern_secs" \
		--full-rtt "$@" >"$base.cli" 2>&1
	local rc=$?
	kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
	[ "$rc" = 0 ] || { echo "  $name: client failed rc=$rc (see $base.cli)" >&2; return 1; }
	local p50
	p50=$(sed 's/\x1b\[[0-9;]*m//g' "$base.cli" | awk '/percentile 50.000/ { print $NF; exit }')
	[ -n "$p50" ] || { echo "  $name: no median in $base.cli" >&2; return 1; }
	record "$name" "$p50"
}

# busy_udp_pair NAME ROUND [-R]: udp_pingpong (both sides spin on non-blocking
# recv), lat_size bytes; records the median RTT (usec) and NAME.avg, the mean.
# -R sends each message shaped as softrnic sends a SEND with its riding ACK
# (two GSO segments, received whole with GRO and softrnic's control
# messages): the kernel's part of ib_send_lat, without softrnic's own.
busy_udp_pair() {
	local name=$1 round=$2 shape=(${3:-})
	local port base=$out/$name.$round
	port=$(take_port)
	bg 60 "$base.srv" "$base.srv.err" "$udp_pingpong" server "$port" -T 20 "${shape[@]}"
	local srv=$last_pid
	wait_listen udp "$port" || { echo "  $name: server did not start" >&2; kill "$srv"; wait "$srv"; return 1; }
	timeout -k 3 60 "$udp_pingpong" client "$port" -s "$lat_size" -n "$busy_iters" -w "$busy_warmup" "${shape[@]}" \
		>"$base.cli" 2>&1
	local rc=$?
	wait "$srv" 2>/dev/null # it exits on the client's closing datagram
	[ "$rc" = 0 ] || { echo "  $name: client failed rc=$rc (see $base.cli)" >&2; return 1; }
	local p50 mean
	p50=$(awk '/^udp_pingpong:/ { for (i = 2; i <= NF; i++) if ($i ~ /^rtt_p50_us=/) { sub(/.*=/, "", $i); print $i } }' "$base.cli")
	mean=$(awk '/^udp_pingpong:/ { for (i = 2; i <= NF; i++) if ($i ~ /^rtt_mean_us=/) { sub(/.*=/, "", $i); print $i } }' "$base.cli")
	[ -n "$p50" ] || { echo "  $name: no median in $base.cli" >&2; return 1; }
	record "$name" "$p50"
	record "$name.avg" "$mean"
}

# ---- the rounds ------------------------------------------------------------------

# One entry per measurement; softrnic and kernel alternate.
measurements=(
	"perftest_pair write_bw  ROUND ib_write_bw -s $bw_size -n $bw_iters"
	"iperf3_pair ROUND"
	"perftest_pair send_bw   ROUND ib_send_bw  -s $bw_size -n $bw_iters"
	"sockperf_pair udp_rtt   ROUND"
	"perftest_pair send_lat  ROUND ib_send_lat -s $lat_size -n $lat_iters"
	"busy_udp_pair busy_udp_rtt ROUND"
	"busy_udp_pair busy_roce_rtt ROUND -R"
	"perftest_pair write_lat ROUND ib_write_lat -s $lat_size -n $lat_iters"
	"sockperf_pair tcp_rtt   ROUND --tcp"
	"perftest_pair read_bw   ROUND ib_read_bw  -s $bw_size -n $bw_iters"
	"perftest_pair read_lat  ROUND ib_read_lat -s $lat_size -n $lat_iters"
	"perftest_pair atomic_lat ROUND ib_atomic_lat -n $lat_iters"
	"perftest_pair write_4k  ROUND ib_write_bw -s 4096 -n $((bw_iters * 4))"
	"perftest_pair send_bw_ev ROUND ib_send_bw -e -s $bw_size -n $ev_iters"
	# perftest's fixed CPU cost (set-up, MR registration, and get_cpu_mhz's
	# 0.1-0.45 s gettimeofday busy loop in each process): the same pair with 5
	# iterations, subtracted from the CPU of the runs above.
	"perftest_pair fixed_write ROUND ib_write_bw -s $bw_size -n 5"
	"perftest_pair fixed_send ROUND ib_send_bw -s $bw_size -n 5"
	"perftest_pair fixed_read ROUND ib_read_bw -s $bw_size -n 5"
	"perftest_pair fixed_send_ev ROUND ib_send_bw -e -s $bw_size -n 5"
)

echo "perf_compare: build $build, $runs round(s)$([ "$quick" = 1 ] && echo ' (quick)'), logs in $out"
echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), kernel $(uname -r)"
start=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$runs"); do
	order=("${measurements[@]}")
	if [ $((round % 2)) = 0 ]; then # every other round backwards
		order=()
		for ((i = ${#measurements[@]} - 1; i >= 0; i--)); do order+=("${measurements[$i]}"); done
	fi
	for m in "${order[@]}"; do
		read -r -a words <<<"${m//ROUND/$round}"
		label=${words[1]}
		[ "${words[0]}" = iperf3_pair ] && label=iperf3
		[ -n "$only" ] && ! [[ "$label" =~ $only ]] && continue
		printf '  round %d/%d: %s\n' "$round" "$runs" "$label"
		"${words[@]}" || true
	done
done

# ---- event-mode idle check ---------------------------------------------------------

# cpu_ns PID: CPU time of all threads, nanoseconds (schedstat field 1).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s }'; }
# wakeups PID: voluntary context switches of all threads.
wakeups() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ { s += $2 } END { printf "%d", s }'; }

# idle_listen: an ibv_rc_pingpong -e server, its device open and its QP
# made, waits for a client that comes idle_secs later.  Sets idle1 to
# "STATUS CPU_US WAKEUPS".
idle_listen() {
	local port srv pid c0 c1 w0 w1 rc
	idle1="fail - -"
	port=$(take_port)
	bg 60 "$out/idle1.srv" "$out/idle1.srv.err" env LD_LIBRARY_PATH="$lib" SOFTRNIC_LOCAL=0 \
		ibv_rc_pingpong -e -g 0 -p "$port" -n 100 -s 64
	srv=$last_pid
	wait_listen tcp "$port" || return 1
	pid=$(child_of "$srv") || return 1
	sleep 0.2 # let start-up settle
	c0=$(cpu_ns "$pid") w0=$(wakeups "$pid")
	sleep "$idle_secs"
	c1=$(cpu_ns "$pid") w1=$(wakeups "$pid")
	env LD_LIBRARY_PATH="$lib" SOFTRNIC_LOCAL=0 timeout -k 3 30 ibv_rc_pingpong -e -g 0 -p "$port" -n 100 -s 64 127.0.0.1 \
		>"$out/idle1.cli" 2>&1
	rc=$?
	wait "$srv"
	idle1="$([ "$rc" = 0 ] && echo "pingpong-ok" || echo "pingpong-failed") $(( (c1 - c0) / 1000 )) $(( w1 - w0 ))"
}

# idle_slow_peer: an ib_send_lat -e pair whose client waits long between
# its sends (--latency_gap=400000: perftest 4.5 counts it in microseconds,
# so 0.4 s per send; it turns it into TSC cycles with its CPU-frequency
# estimate, where far larger values overflow: 1e9 gives no gap at all on
# this machine).  Between two exchanges the server waits in
# ibv_get_cq_event with nothing in flight and no completion due.  Sets
# idle2 to "STATUS CPU_US WAKEUPS RX_PACKETS" over idle_window seconds.
idle_slow_peer() {
	local port srv cli spid c0 c1 w0 w1 r0 r1 rc_c rc_s
	local env=(env LD_LIBRARY_PATH="$lib" SOFTRNIC_LOCAL=0 SOFTRNIC_STATS_AT_EXIT=1)
	idle2="fail - - -"
	port=$(take_port)
	bg 90 "$out/idle2.srv" "$out/idle2.srv.err" "${env[@]}" ib_send_lat -x 0 -F -e -s 2 -n "$idle_iters" -p "$port"
	srv=$last_pid
	wait_listen tcp "$port" || return 1
	spid=$(child_of "$srv") || return 1
	bg 90 "$out/idle2.cli" "$out/idle2.cli.err" "${env[@]}" ib_send_lat -x 0 -F -e -s 2 -n "$idle_iters" -p "$port" \
		--latency_gap=400000 127.0.0.1
	cli=$last_pid
	rx_of() { # the server's rx_packets; retried, as a read can race the writer
		local v
		for _ in 1 2 3 4 5; do
			v=$("$softrnic_cli" stats "$spid" 2>/dev/null | awk '$1 == "rx_packets" { print $2 }')
			[ -n "$v" ] && { echo "$v"; return 0; }
			sleep 0.02
		done
		return 1
	}
	# The window opens after two exchanges (a SEND and an ACK each):
	# perftest spends ~0.2 s of CPU measuring the clock around the first
	# ones and again in its report after the last, and neither is
	# softrnic waiting.  idle_iters keeps the report past the window.
	local rx
	for _ in $(seq 200); do
		rx=$(rx_of) && [ "$rx" -ge 4 ] && break
		sleep 0.05
	done
	sleep 0.2
	c0=$(cpu_ns "$spid") w0=$(wakeups "$spid") r0=$(rx_of)
	sleep "$idle_window"
	c1=$(cpu_ns "$spid") w1=$(wakeups "$spid") r1=$(rx_of)
	local alive=0
	[ -d "/proc/$spid/task" ] && alive=1
	wait "$cli"; rc_c=$?
	wait "$srv"; rc_s=$?
	if [ "$alive" = 0 ]; then
		# perftest derives the gap from its own CPU-frequency estimate,
		# which a loaded VM can spoil (it then prints "inf" latencies
		# elsewhere): no gap, and the run is over too soon.
		echo "  idle check 2: perftest applied no --latency_gap (run ended early); retrying" >&2
		return 2
	fi
	if [ "$rc_c" != 0 ] || [ "$rc_s" != 0 ]; then
		echo "  idle check 2: ib_send_lat failed (client rc=$rc_c, server rc=$rc_s)" >&2
		return 1
	fi
	if [ -z "$r0" ] || [ -z "$r1" ]; then
		echo "  idle check 2: could not read the server's counters (softrnic stats $spid)" >&2
		return 1
	fi
	idle2="ok $(( (c1 - c0) / 1000 )) $(( w1 - w0 )) $(( r1 - r0 ))"
}

idle1="skipped - -" idle2="skipped - - -"
if [ -z "$only" ]; then
	echo "  idle check 1: ibv_rc_pingpong -e server waiting ${idle_secs} s for its client"
	idle_listen || echo "  idle check 1 failed (logs $out/idle1.*)" >&2
	echo "  idle check 2: ib_send_lat -e server whose client pauses ~0.4 s before each send"
	for attempt in 1 2 3; do
		idle_slow_peer && break
		rc=$?
		[ "$rc" = 2 ] && [ "$attempt" -lt 3 ] && continue
		echo "  idle check 2 failed (logs $out/idle2.*)" >&2
		break
	done
fi

# ---- report -------------------------------------------------------------------

# median NAME: median of the recorded samples ("n/a" when none).
median() {
	awk -F'\t' -v n="$1" '$1 == n && $2 != "" { print $2 }' "$results" | bench_median
}
count() { awk -F'\t' -v n="$1" '$1 == n { c++ } END { print c + 0 }' "$results"; }
# calc EXPR: awk arithmetic on medians; "n/a" if any operand is missing.
calc() { case "$*" in *n/a*) echo "n/a" ;; *) awk "BEGIN { printf \"%.3f\", $* }" ;; esac; }
retx() { # retransmissions, and kernel UDP drops, summed over the runs
	awk -F'\t' -v r="$1.retx" -v d="$1.drops" '$1 == r { s += $2 } $1 == d { k += $2 }
		END { printf "retransmits %d, kernel UDP drops %d", s, k }' "$results"
}

# net_cpu NAME FIXED: CPU s per GiB of run NAME, the fixed cost removed.
net_cpu() {
	local c f b
	c=$(median "$1.cpus") f=$(median "$2.cpus") b=$(median "$1.bytes")
	if [ "$c" = n/a ] || [ "$f" = n/a ] || [ "$b" = n/a ]; then echo n/a; return; fi
	calc "($c - $f) / ($b / 1073741824)"
}
cpu_w=$(net_cpu write_bw fixed_write) cpu_s=$(net_cpu send_bw fixed_send)
cpu_r=$(net_cpu read_bw fixed_read) cpu_e=$(net_cpu send_bw_ev fixed_send_ev)
cpu_tcp=$(median iperf3.cpu)

w_bw=$(median write_bw) s_bw=$(median send_bw) r_bw=$(median read_bw) e_bw=$(median send_bw_ev)
tcp_bw=$(median iperf3)
w_lat=$(median write_lat) s_lat=$(median send_lat) r_lat=$(median read_lat) a_lat=$(median atomic_lat)
udp_rtt=$(median udp_rtt) tcp_rtt=$(median tcp_rtt)
busy_rtt=$(median busy_udp_rtt) busy_mean=$(median busy_udp_rtt.avg)
roce_rtt=$(median busy_roce_rtt) roce_mean=$(median busy_roce_rtt.avg)
rtt2() { # half round trip -> round trip
	if [ "$1" = n/a ]; then echo n/a; else calc "2 * $1"; fi
}
w_rtt=$(rtt2 "$w_lat") s_rtt=$(rtt2 "$s_lat")
w_mean=$(rtt2 "$(median write_lat.avg)") s_mean=$(rtt2 "$(median send_lat.avg)")

verdict() { # verdict VALUE OP TARGET [WHAT]: "met" or the factor missing
	[ "$1" = n/a ] && { echo "no data"; return; }
	awk -v v="$1" -v op="$2" -v t="$3" -v what="${4:-too slow}" 'BEGIN {
		ok = (op == ">=") ? v >= t : v <= t
		if (ok) print "met"
		else if (op == ">=") printf "gap: %.2fx %s\n", t / v, what
		else printf "gap: %.2fx %s\n", v / t, what }'
}

{
	echo
	echo "softrnic vs kernel loopback — medians of $runs run(s); $(nproc) CPUs, $(uname -r); $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "load average at start: $load_start; at end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine adds noise)"
	echo "network: $where"
	echo "retransmits/drops: summed over all runs of a row, from the devices' counters (SOFTRNIC_STATS_AT_EXIT)"
	echo
	printf '%-36s %12s %8s  %s\n' "measurement" "median" "runs" "notes"
	printf '%-36s %12s %8s  %s\n' "ib_write_bw 64 KiB [MiB/s]" "$w_bw" "$(count write_bw)" "$(retx write_bw)"
	printf '%-36s %12s %8s  %s\n' "ib_send_bw 64 KiB [MiB/s]" "$s_bw" "$(count send_bw)" "$(retx send_bw)"
	printf '%-36s %12s %8s  %s\n' "ib_send_bw -e 64 KiB [MiB/s]" "$e_bw" "$(count send_bw_ev)" "event mode; $(retx send_bw_ev)"
	printf '%-36s %12s %8s  %s\n' "ib_read_bw 64 KiB [MiB/s]" "$r_bw" "$(count read_bw)" "$(retx read_bw)"
	printf '%-36s %12s %8s  %s\n' "ib_write_bw 4 KiB [Mmsg/s]" "$(calc "$(median write_4k) * 1048576 / 4096 / 1000000")" "$(count write_4k)" "message rate, from $(median write_4k) MiB/s; $(retx write_4k)"
	printf '%-36s %12s %8s  %s\n' "iperf3 TCP 1 stream [MiB/s]" "$tcp_bw" "$(count iperf3)" "-t $kern_secs"
	printf '%-36s %12s %8s  %s\n' "ib_write_lat 2 B [usec]" "$w_lat" "$(count write_lat)" "t_typical = RTT/2 -> RTT $w_rtt"
	printf '%-36s %12s %8s  %s\n' "ib_send_lat 2 B [usec]" "$s_lat" "$(count send_lat)" "t_typical = RTT/2 -> RTT $s_rtt"
	printf '%-36s %12s %8s  %s\n' "ib_read_lat 2 B [usec]" "$r_lat" "$(count read_lat)" "t_typical = full RTT"
	printf '%-36s %12s %8s  %s\n' "ib_atomic_lat 8 B [usec]" "$a_lat" "$(count atomic_lat)" "t_typical = full RTT"
	printf '%-36s %12s %8s  %s\n' "UDP busy-poll ping-pong RTT [usec]" "$busy_rtt" "$(count busy_udp_rtt)" "udp_pingpong, 2 B, p50 of $busy_iters; mean $busy_mean"
	printf '%-36s %12s %8s  %s\n' "  the same shaped as RoCEv2 [usec]" "$roce_rtt" "$(count busy_roce_rtt)" "udp_pingpong -R: SEND + riding ACK as 2 GSO segments, GRO, cmsgs; mean $roce_mean"
	printf '%-36s %12s %8s  %s\n' "sockperf UDP ping-pong RTT [usec]" "$udp_rtt" "$(count udp_rtt)" "--full-rtt, 14 B, p50; blocks in recv"
	printf '%-36s %12s %8s  %s\n' "sockperf TCP ping-pong RTT [usec]" "$tcp_rtt" "$(count tcp_rtt)" "--full-rtt, 14 B, p50; blocks in recv"
	printf '%-36s %12s %8s  %s\n' "CPU s/GiB ib_write_bw (2 procs)" "$cpu_w" "$(count write_bw.cpus)" "perftest busy-polls; fixed cost $(median fixed_write.cpus) s removed"
	printf '%-36s %12s %8s  %s\n' "CPU s/GiB ib_send_bw (2 procs)" "$cpu_s" "$(count send_bw.cpus)" "perftest busy-polls; fixed cost $(median fixed_send.cpus) s removed"
	printf '%-36s %12s %8s  %s\n' "CPU s/GiB ib_read_bw (2 procs)" "$cpu_r" "$(count read_bw.cpus)" "perftest busy-polls; fixed cost $(median fixed_read.cpus) s removed"
	printf '%-36s %12s %8s  %s\n' "CPU s/GiB ib_send_bw -e (2 procs)" "$cpu_e" "$(count send_bw_ev.cpus)" "event mode; fixed cost $(median fixed_send_ev.cpus) s removed"
	printf '%-36s %12s %8s  %s\n' "CPU s/GiB iperf3 TCP (2 procs)" "$cpu_tcp" "$(count iperf3.cpu)" ""
	echo
	ratio() { # label value op target [what]
		printf '%-44s %8s  target %s %-4s %s\n' "$1" "$2" "$3" "$4" "$(verdict "$2" "$3" "$4" "${5:-}")"
	}
	echo "goals over UDP (ratios from this run)"
	ratio "ib_send_lat RTT / UDP busy-poll RTT" "$(calc "$s_rtt / $busy_rtt")" "<=" 1.3
	printf '%-44s %8s  (the kernel alone, for packets shaped as ib_send_lat sends them)\n' \
		"  of which RoCEv2-shaped / plain ping-pong" "$(calc "$roce_rtt / $busy_rtt")"
	printf "%-44s %8s  (softrnic's own share)\n" \
		"  and ib_send_lat / RoCEv2-shaped ping-pong" "$(calc "$s_rtt / $roce_rtt")"
	ratio "ib_write_bw 64 KiB / iperf3 TCP" "$(calc "$w_bw / $tcp_bw")" ">=" 1.5
	echo
	echo "headline latency: softrnic against the busy-poll UDP ping-pong (both spin, 2 B, RTT medians)"
	ratio "ib_write_lat RTT / UDP busy-poll RTT" "$(calc "$w_rtt / $busy_rtt")" "<=" 1.0
	printf '%-44s %8s  (2 x t_avg %s usec against the mean %s usec)\n' \
		"  ib_send_lat / UDP busy-poll, means" "$(calc "$s_mean / $busy_mean")" "$(calc "$s_mean / 2")" "$busy_mean"
	printf '%-44s %8s  (2 x t_avg %s usec against the mean %s usec)\n' \
		"  ib_write_lat / UDP busy-poll, means" "$(calc "$w_mean / $busy_mean")" "$(calc "$w_mean / 2")" "$busy_mean"
	echo
	echo "ratios (softrnic against the kernel on the same machine)"
	ratio "ib_write_bw / iperf3" "$(calc "$w_bw / $tcp_bw")" ">=" 1.0
	ratio "ib_send_bw / iperf3" "$(calc "$s_bw / $tcp_bw")" ">=" 1.0
	ratio "ib_send_lat RTT / sockperf UDP RTT" "$(calc "$s_rtt / $udp_rtt")" "<=" 1.0
	ratio "ib_write_lat RTT / sockperf UDP RTT" "$(calc "$w_rtt / $udp_rtt")" "<=" 1.0
	printf '%-44s %8s  (sockperf blocks in recv: a reference, not like for like)\n' \
		"  UDP busy-poll RTT / sockperf UDP RTT" "$(calc "$busy_rtt / $udp_rtt")"
	ratio "ib_read_lat RTT / ib_write_lat RTT" "$(calc "$r_lat / $w_rtt")" "<=" 1.1
	printf '%-44s %8s  (as printed: read t_typical / write t_typical; not like for like)\n' \
		"  ib_read_lat / ib_write_lat, raw" "$(calc "$r_lat / $w_lat")"
	printf '%-44s %8s  (a READ round trip against a SEND ping-pong round trip)\n' \
		"  ib_read_lat RTT / ib_send_lat RTT" "$(calc "$r_lat / $s_rtt")"
	ratio "CPU/GiB ib_write_bw / iperf3" "$(calc "$cpu_w / $cpu_tcp")" "<=" 1.0 "more CPU per byte"
	ratio "CPU/GiB ib_send_bw / iperf3" "$(calc "$cpu_s / $cpu_tcp")" "<=" 1.0 "more CPU per byte"
	ratio "CPU/GiB ib_send_bw -e / iperf3" "$(calc "$cpu_e / $cpu_tcp")" "<=" 1.0 "more CPU per byte"
	echo
	echo "event-mode idle check (server CPU time and voluntary wakeups, all threads)"
	read -r st us wk <<<"$idle1"
	printf '  ibv_rc_pingpong -e server, %s s before its client connects: %s us CPU, %s wakeups (client run: %s)\n' \
		"$idle_secs" "$us" "$wk" "$st"
	read -r st us wk rx <<<"$idle2"
	printf '  ib_send_lat -e server, client pausing ~0.4 s per send, over %s s: %s us CPU, %s wakeups, %s packets received (%s)\n' \
		"$idle_window" "$us" "$wk" "$rx" "$st"
	echo
	echo "raw samples: $results; logs: $out; wall time $(( $(date +%s) - start )) s"
} | tee "$out/report.txt"
