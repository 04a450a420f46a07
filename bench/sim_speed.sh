#!/usr/bin/env bash
# sim_speed.sh — how fast softrnic's simulator runs a datacenter workload,
# beside ns-3 on the same topology and flow list, in one run.  A
# benchmark, not a test.
#
#   bench/sim_speed.sh [BUILD_DIR] [--quick] [--out DIR]
#
# The workload: a k=8 fat-tree (128 hosts, 80 switches, 100 Gb/s links,
# 1 us each; `softrnic sim topo fat-tree 8`), web-search flow sizes
# (data/cdf/websearch.txt) arriving as Poisson processes at 50% load
# (`softrnic sim gen`), 100 ms simulated (--quick: 10 ms).  softrnic runs
# it with DCQCN, ECN and PFC (`softrnic sim run`, HPCC's DCQCN keys);
# ns-3 3.37 (Debian's libns3-dev) runs the same files with its own
# point-to-point and UDP models (bench/sim_ns3.cc: no RDMA, no ACKs, no
# congestion control — a reference for packet-level simulation cost).
# Both on one core, one after the other.  Reported: wall time, events per
# second, packet-hops per second, peak memory (/usr/bin/time).
#
# SIM_K=16 runs a k=16 fat-tree instead (1 024 hosts, 320 switches);
# SIM_NS3=0 leaves ns-3 out (at k=16 it would run for many hours);
# SIM_CPU=N pins to core N instead of 0.  SIM_THREADS=N runs softrnic with
# the fabric in N partitions on N threads (`sim run --threads N`), pinned
# to cores 0..N-1 (ns-3 stays on one).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/common.sh"
bench_parse_args bench-out/sim-speed "$@"
softrnic=$(cd "$build" && pwd)/bin/softrnic
[ -x "$softrnic" ] || { echo "sim_speed: $softrnic not built" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
stop=0.1
[ $quick = 1 ] && stop=0.01
k=${SIM_K:-8}
hosts=$((k * k * k / 4))

"$softrnic" sim topo fat-tree "$k" >"$out/topology.txt"
"$softrnic" sim gen --cdf "$root/data/cdf/websearch.txt" --hosts "$hosts" --load 0.5 --time "$stop" --seed 1 \
	>"$out/flow.txt" 2>"$out/gen.log"
cat >"$out/config.txt" <<EOF
TOPOLOGY_FILE topology.txt
FLOW_FILE flow.txt
FCT_OUTPUT_FILE fct.txt
SIMULATOR_STOP_TIME $stop
CC_MODE 1
ENABLE_QCN 1
ENABLE_PFC 1
PACKET_PAYLOAD_SIZE 1000
BUFFER_SIZE 32
ALPHA_RESUME_INTERVAL 1
RATE_DECREASE_INTERVAL 4
CLAMP_TARGET_RATE 0
RP_TIMER 900
EWMA_GAIN 0.00390625
FAST_RECOVERY_TIMES 1
RATE_AI 50Mb/s
RATE_HAI 100Mb/s
MIN_RATE 100Mb/s
KMAX_MAP 1 100000000000 1600
KMIN_MAP 1 100000000000 400
PMAX_MAP 1 100000000000 0.2
EOF
flows=$(head -1 "$out/flow.txt")

# peak RSS (kB) and wall seconds from /usr/bin/time -v
measure() {   # LOG -> "wall_s rss_kb"
	awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i] }
		/Maximum resident/ { r = $2 } END { printf "%.2f %d\n", s, r }' "$1"
}

cpu=${SIM_CPU:-0}       # the core both simulators are pinned to
threads=${SIM_THREADS:-1}
cores=$cpu
[ "$threads" -gt 1 ] && cores=0-$((threads - 1))
(cd "$out" && /usr/bin/time -v taskset -c "$cores" "$softrnic" sim run config.txt --out softrnic --threads "$threads" \
	>"$out/softrnic.log" 2>"$out/softrnic.time")
read -r s_wall s_rss < <(measure "$out/softrnic.time")
s_events=$(sed -n 's/.*(\([0-9]*\) events, \([0-9]*\) packet-hops).*/\1/p' "$out/softrnic/summary.txt")
s_hops=$(sed -n 's/.*(\([0-9]*\) events, \([0-9]*\) packet-hops).*/\2/p' "$out/softrnic/summary.txt")

n_wall=n/a n_rss=n/a n_events=n/a n_hops=n/a n_sim=n/a
if [ "${SIM_NS3:-1}" != 0 ] && pkg-config --exists ns3-core 2>/dev/null; then
	libs=$(pkg-config --cflags --libs ns3-core ns3-network ns3-internet ns3-point-to-point ns3-applications)
	# shellcheck disable=SC2086
	g++ -O2 -std=c++17 -o "$out/sim_ns3" "$here/sim_ns3.cc" $libs 2>"$out/ns3-build.log"
	# NS3_TIMEOUT (seconds, default 3600): ns-3 can take far longer than
	# softrnic here; a run cut short is reported as such.
	(cd "$out" && /usr/bin/time -v taskset -c "$cpu" timeout "${NS3_TIMEOUT:-3600}" ./sim_ns3 topology.txt flow.txt "$stop" \
		>"$out/ns3.log" 2>"$out/ns3.time") || echo "sim_speed: ns-3 did not finish (stopped after NS3_TIMEOUT)" >&2
	read -r n_wall n_rss < <(measure "$out/ns3.time")
	n_sim=$(sed -n 's/.*wall_s=\([0-9.]*\).*/\1/p' "$out/ns3.log")
	n_events=$(sed -n 's/.*events=\([0-9]*\).*/\1/p' "$out/ns3.log")
	n_hops=$(sed -n 's/.*packet_hops=\([0-9]*\).*/\1/p' "$out/ns3.log")
	# Stopped early: how far its last progress line (one per simulated
	# millisecond, on stderr) got, and its rates until then.
	n_reached=
	if [ -z "$n_events" ]; then
		last=$(grep '^ns3 progress' "$out/ns3.time" | tail -1)
		n_reached=$(sed -n 's/.*sim_ms=\([0-9]*\).*/\1/p' <<<"$last")
		n_sim=$(sed -n 's/.*wall_s=\([0-9.]*\).*/\1/p' <<<"$last")
		n_events=$(sed -n 's/.*events=\([0-9]*\).*/\1/p' <<<"$last")
		n_hops=$(sed -n 's/.*packet_hops=\([0-9]*\).*/\1/p' <<<"$last")
		[ -n "$n_events" ] || { n_events=n/a n_hops=n/a; }
	fi
fi

rate() { [ "$2" = n/a ] || [ "$1" = n/a ] && { echo n/a; return; }; echo "$1 $2" | awk '{ printf "%.2f", $1 / $2 / 1e6 }'; }
{
	cores_said="one core"
	[ "$threads" -gt 1 ] && cores_said="softrnic on $threads threads (cores $cores), ns-3 on one core"
	echo "# sim speed: k=$k fat-tree, web-search at 50% load, ${stop} s simulated, $flows flows, $cores_said"
	echo
	echo "| simulator | wall s | events | M events/s | packet-hops | M packet-hops/s | peak MB |"
	echo "|---|---|---|---|---|---|---|"
	echo "| softrnic sim (RoCEv2 RC, DCQCN, PFC) | $s_wall | $s_events | $(rate "$s_events" "$s_wall") | $s_hops | $(rate "$s_hops" "$s_wall") | $((s_rss / 1024)) |"
	if [ "$n_wall" != n/a ]; then
		what="run only: ${n_sim} s"
		w=$n_wall
		if [ -n "$n_reached" ]; then
			# rates over the part it simulated (its own clock, from the last progress line)
			what="did not finish: reached ${n_reached} ms of ${stop} s simulated in ${n_sim} s"
			w=$n_sim
		elif [ "$n_events" = n/a ]; then
			what="did not finish: stopped at the wall time given"
		fi
		echo "| ns-3 3.37 (UDP, point-to-point; $what) | $n_wall | $n_events | $(rate "$n_events" "$w") | $n_hops | $(rate "$n_hops" "$w") | $((n_rss / 1024)) |"
	else
		echo "| ns-3 | not run (SIM_NS3=0, or libns3-dev not installed) | | | | | |"
	fi
	echo
	sed 's/^/    /' "$out/softrnic/summary.txt"
} | tee "$out/sim_speed.md"
