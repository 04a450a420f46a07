#!/usr/bin/env bash
# local_compare.sh — the host-local path (src/runtime/local_path.c) side
# by side with what it replaces and what bounds it, in one run on this
# machine.  A benchmark: it measures and prints, it does not pass or fail.
#
#   bench/local_compare.sh [BUILD_DIR] [--runs N]        (default: build, 5)
#
# Interleaved rounds, medians:
#   perftest over the local path (default: whole messages, one copy by
#     process_vm_readv), over its packet ring (SOFTRNIC_LOCAL=packets: MTU
#     packets, copied in and out of the ring; the path as it was before
#     the message path) and over UDP (SOFTRNIC_LOCAL=0):
#     ib_send_lat, ib_write_lat, ib_read_lat at 2 B (round trip = 2 x
#     t_typical for SEND and WRITE, t_typical itself for READ; and the
#     same from t_avg, the mean, where trips that waited for a CPU show),
#     ib_write_bw and ib_send_bw at 64 KiB (MB/s);
#   the kernel's UDP: bench/udp_pingpong, a busy-polling ping-pong (RTT);
#   shared memory: bench/shm_baseline pingpong (RTT of a flag between two
#     processes) and copy (64 KiB chunks in and out of a shared ring);
#   one copy: bench/shm_baseline cma (process_vm_writev into another
#     process's buffer, 64 KiB at a time);
#   UCX's shared-memory transport, the peer a user would pick for processes
#     of one host: ucx_perftest tag_lat (RTT = 2 x its typical latency, and
#     2 x its average) and
#     tag_bw at 64 KiB and at 4 KiB (its message rate) over
#     UCX_TLS=posix,self (if ucx_perftest is installed);
#   UCX over softrnic: ucx_perftest tag_lat through `softrnic run` with
#     UCX_TLS=rc_verbs,ud_verbs,self (UCX's RC transport on softrnic's
#     host-local path);
#   message rate at 4 KiB: ib_write_bw -s 4096 over each path (Mpps);
#   iperf3 over loopback TCP (if installed);
#   CPU per GiB moved (user + system, both processes, the difference
#     between a run and one 10x longer, so that starting and ending
#     cancel out; the whole run's figure is printed too): ib_write_bw
#     (busy polling) and ib_send_bw -e (event mode, sleeping as iperf3
#     does) over each path, against iperf3.
# Then each goal as a ratio measured in this run, met or not met.
set -uo pipefail
. "$(dirname "$0")/common.sh"
build=${1:-build}
runs=5
[ "${2:-}" = "--runs" ] && runs=${3:-5}
export LD_LIBRARY_PATH=$build/lib
port=14200
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# perftest PROGRAM ENV ARGS...: one server/client run, prints the figure
perftest() {
	local prog=$1 envs=$2
	shift 2
	env $envs timeout 60 "$prog" -p $port "$@" > "$tmp/s" 2>&1 &
	local s=$!
	bench_wait_listen $port
	env $envs timeout 60 "$prog" -p $port "$@" 127.0.0.1 > "$tmp/c" 2>&1
	wait $s
	port=$((port + 1))
	# perftest prints half a round trip as t_typical for SEND and WRITE
	# (a ping-pong), a whole one for READ and atomics (each is itself a
	# round trip: perftest's rtt_factor).
	# Latency: t_typical (the median) is printed; the mean (t_avg) goes
	# to $tmp/mean, as a round trip the same way.
	case $prog in
	*read_lat | *atomic_lat)
		awk '/^ *2 / { printf "%.2f", $6 }' "$tmp/c" > "$tmp/mean"
		awk '/^ *2 / { printf "%.2f", $5 }' "$tmp/c" ;;
	*_lat)
		awk '/^ *2 / { printf "%.2f", 2 * $6 }' "$tmp/c" > "$tmp/mean"
		awk '/^ *2 / { printf "%.2f", 2 * $5 }' "$tmp/c" ;;
	*) awk '/^ *65536 / { print $4 } /^ *4096 / { print $5 }' "$tmp/c" ;;
	esac
}

# ucx_pair TLS LAUNCH TEST ARGS...: one ucx_perftest pair over
# UCX_TLS=TLS, each end started by the function LAUNCH (under timeout);
# prints the client's Final line: "Final: iterations p50 avg overall
# MB/s-avg MB/s-overall msg/s-avg msg/s-overall" (latencies in µs, one
# way for tag_lat).
ucx_pair() {
	local tls=$1 launch=$2 test=$3
	shift 3
	UCX_TLS=$tls $launch ucx_perftest -p $port > /dev/null 2>&1 &
	local s=$!
	bench_wait_listen $port
	UCX_TLS=$tls $launch ucx_perftest 127.0.0.1 -p $port -t "$test" "$@" 2>&1 | awk '/^Final/'
	wait $s
	port=$((port + 1))
}
# UCX's shared memory (posix) and self, outside softrnic (no
# LD_LIBRARY_PATH); and over softrnic (`softrnic run`), UCX's RC and UD
# verbs transports on softrnic0.
outside_softrnic() { timeout 60 env -u LD_LIBRARY_PATH "$@"; }
through_softrnic() { timeout 60 "$build/bin/softrnic" run "$@"; }
ucx() { ucx_pair posix,self outside_softrnic "$@"; }
ucx_softrnic() { ucx_pair rc_verbs,ud_verbs,self through_softrnic "$@"; }

declare -A res
for r in $(seq "$runs"); do
	for path in local packets udp; do
		envs=X=1
		[ $path = udp ] && envs=SOFTRNIC_LOCAL=0
		[ $path = packets ] && envs=SOFTRNIC_LOCAL=packets
		for t in send_lat write_lat read_lat; do
			res[$t.$path]+="$(perftest ib_$t $envs -n 20000) "
			res[${t}_mean.$path]+="$(cat "$tmp/mean") "
		done
		# As many 64 KiB messages as UCX's tag_bw below moves: a
		# shorter run is mostly its start (~30 ms at 5 000).
		for t in write_bw send_bw; do
			res[$t.$path]+="$(perftest ib_$t $envs -n 20000 -s 65536) "
		done
		res[rate4k.$path]+="$(perftest ib_write_bw $envs -n 20000 -s 4096 | tail -n1) "
	done
	res[cma]+="$("$build/bench/shm_baseline" cma 4096 | awk '{ print $2 }') "
	if command -v ucx_perftest > /dev/null; then
		ucx tag_lat -n 200000 > "$tmp/ucx_lat"
		res[ucx_lat]+="$(awk '{ printf "%.3f", 2 * $3 }' "$tmp/ucx_lat") "
		res[ucx_lat_mean]+="$(awk '{ printf "%.3f", 2 * $4 }' "$tmp/ucx_lat") "
		res[ucx_bw]+="$(ucx tag_bw -s 65536 -n 20000 | awk '{ print $7 }') "
		res[ucx_rate4k]+="$(ucx tag_bw -s 4096 -n 100000 | awk '{ printf "%.3f", $9 / 1e6 }') "
		ucx_softrnic tag_lat -n 50000 > "$tmp/ucx_rc_lat"
		res[ucx_rc_lat]+="$(awk '{ printf "%.3f", 2 * $3 }' "$tmp/ucx_rc_lat") "
	fi
	"$build/bench/udp_pingpong" server $port -T 10 > /dev/null 2>&1 &
	up=$!
	sleep 0.2
	res[udp_pingpong]+="$("$build/bench/udp_pingpong" client $port -s 2 -n 50000 2>/dev/null |
		sed -n 's/.*rtt_p50_us=\([0-9.]*\).*/\1/p') "
	kill $up 2>/dev/null
	port=$((port + 1))
	res[shm_pingpong]+="$("$build/bench/shm_baseline" pingpong 200000 | awk '{ print $2 }') "
	res[shm_copy]+="$("$build/bench/shm_baseline" copy 4096 | awk '{ print $2 }') "
	if command -v iperf3 > /dev/null; then
		iperf3 -s -1 -p $port > /dev/null 2>&1 &
		bench_wait_listen $port
		res[iperf3]+="$(iperf3 -c 127.0.0.1 -p $port -t 2 -J 2>/dev/null |
			python3 -c 'import json,sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e6))' 2>/dev/null) "
		port=$((port + 1))
	fi
done

# CPU per GiB (user + system of both processes, /usr/bin/time), two ways:
#   whole: one run's CPU over its bytes (ib_write_bw 20000 x 64 KiB,
#     iperf3 1250 MB), which counts each program's start and end too —
#     perftest alone spends ~0.2 s of CPU per process measuring its clock;
#   per GiB moved (the goal): the CPU a 10x longer run adds, over the
#     bytes it adds (200000 against 20000 messages, 12500 against 1250
#     MB), which the start and end cancel out of (a 4x longer one was
#     too short: the start's CPU varies by more than 5 GB cost).
cpu_of() { awk '{ s += $1 + $2 } END { printf "%.3f", s }' "$tmp/s.t" "$tmp/c.t"; }
# cpu_run ENVS N PROGRAM ARGS...: one perftest pair moving N x 64 KiB;
# sets $cpu (both processes' CPU seconds), leaves the client's output in $tmp/c
cpu_run() {
	local envs=$1 n=$2 prog=$3
	shift 3
	env $envs /usr/bin/time -f "%U %S" -o "$tmp/s.t" "$prog" "$@" -n "$n" -p $port > /dev/null 2>&1 &
	local s=$!
	bench_wait_listen $port
	env $envs /usr/bin/time -f "%U %S" -o "$tmp/c.t" "$prog" "$@" -n "$n" -p $port 127.0.0.1 > "$tmp/c" 2>&1
	wait $s
	port=$((port + 1))
	cpu=$(cpu_of)
}
gib() { awk -v b="$1" 'BEGIN { printf "%.6f", b / 2^30 }'; }
per() { awk -v c="$1" -v g="$2" 'BEGIN { if (g > 0) printf "%.3f", c / g }'; }
# per_added CPU_LONG CPU_SHORT GIB_LONG GIB_SHORT: the CPU a longer run
# adds, per GiB it adds.
per_added() { per "$(awk -v a="$1" -v b="$2" 'BEGIN { print a - b }')" "$(awk -v a="$3" -v b="$4" 'BEGIN { print a - b }')"; }
for r in $(seq "$runs"); do
	for path in local packets udp; do
		envs=X=1
		[ $path = udp ] && envs=SOFTRNIC_LOCAL=0
		[ $path = packets ] && envs=SOFTRNIC_LOCAL=packets
		g_short=$(gib $((20000 * 65536))) g_long=$(gib $((200000 * 65536)))
		cpu_run "$envs" 20000 ib_write_bw
		c_short=$cpu
		cpu_run "$envs" 200000 ib_write_bw
		res[cpu.$path]+="$(per "$c_short" "$g_short") "
		res[cpu_m.$path]+="$(per_added "$cpu" "$c_short" "$g_long" "$g_short") "
		# Event mode (-e: both sides sleep on the completion channel,
		# as iperf3 sleeps in the kernel): the like-for-like CPU figure.
		cpu_run "$envs" 20000 ib_send_bw -e
		c_short=$cpu
		res[send_bw_e.$path]+="$(awk '/^ *65536 / { print $4 }' "$tmp/c") "
		cpu_run "$envs" 200000 ib_send_bw -e
		res[cpu_e.$path]+="$(per "$c_short" "$g_short") "
		res[cpu_em.$path]+="$(per_added "$cpu" "$c_short" "$g_long" "$g_short") "
	done
	if command -v iperf3 > /dev/null; then
		for mb in 1250 12500; do
			/usr/bin/time -f "%U %S" -o "$tmp/s.t" iperf3 -s -1 -p $port > /dev/null 2>&1 &
			s=$!
			bench_wait_listen $port
			/usr/bin/time -f "%U %S" -o "$tmp/c.t" iperf3 -c 127.0.0.1 -p $port -n ${mb}M > /dev/null 2>&1
			wait $s
			port=$((port + 1))
			[ $mb = 1250 ] && c_short=$(cpu_of) || c_long=$(cpu_of)
		done
		res[cpu.tcp]+="$(per "$c_short" "$(gib $((1250 << 20)))") "
		res[cpu_m.tcp]+="$(per_added "$c_long" "$c_short" "$(gib $((12500 << 20)))" "$(gib $((1250 << 20)))") "
	fi
done

m() { tr ' ' '\n' <<<"${res[$1]:-}" | grep . | bench_median; }
printf '%s\n' "host-local path vs UDP, medians of $runs interleaved rounds; $(nproc) CPUs, $(uname -r); $(date -u +%FT%RZ)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b }'; }
printf '| measurement | local path | its packet ring (SOFTRNIC_LOCAL=packets) | UDP (SOFTRNIC_LOCAL=0) | local / packets | local / UDP |\n|---|---|---|---|---|---|\n'
for t in send_lat write_lat read_lat write_bw send_bw; do
	l=$(m $t.local) p=$(m $t.packets) u=$(m $t.udp)
	unit="µs RTT"; [[ $t == *_bw ]] && unit="MB/s"
	printf '| ib_%s (%s) | %s | %s | %s | %s | %s |\n' "$t" "$unit" "$l" "$p" "$u" "$(ratio "$l" "$p")" "$(ratio "$l" "$u")"
done
# The rows above take perftest's t_typical, a median; a trip that waits
# for a CPU shows in the mean.
for t in send_lat write_lat read_lat; do
	l=$(m ${t}_mean.local) p=$(m ${t}_mean.packets) u=$(m ${t}_mean.udp)
	printf '| ib_%s, mean (µs RTT) | %s | %s | %s | %s | %s |\n' "$t" "$l" "$p" "$u" "$(ratio "$l" "$p")" "$(ratio "$l" "$u")"
done
l=$(m send_bw_e.local) p=$(m send_bw_e.packets) u=$(m send_bw_e.udp)
printf '| ib_send_bw -e, event mode (MB/s) | %s | %s | %s | %s | %s |\n' "$l" "$p" "$u" "$(ratio "$l" "$p")" "$(ratio "$l" "$u")"
printf '\n| baseline | median |\n|---|---|\n'
printf '| CPU per GiB moved, ib_write_bw over the local path / its packet ring / UDP (s) | %s / %s / %s |\n' "$(m cpu_m.local)" "$(m cpu_m.packets)" "$(m cpu_m.udp)"
printf '| CPU per GiB moved, ib_send_bw -e (event mode) over the local path / its packet ring / UDP (s) | %s / %s / %s |\n' "$(m cpu_em.local)" "$(m cpu_em.packets)" "$(m cpu_em.udp)"
printf '| CPU per GiB moved, iperf3 TCP (s) | %s |\n' "$(m cpu_m.tcp)"
printf '| CPU per GiB of one whole run (with start and end), ib_write_bw / ib_send_bw -e over the local path, iperf3 (s) | %s / %s, %s |\n' "$(m cpu.local)" "$(m cpu_e.local)" "$(m cpu.tcp)"
printf '| udp_pingpong RTT (µs) | %s |\n| shm_baseline pingpong RTT (µs) | %s |\n| shm_baseline copy, two copies (GB/s) | %s |\n| iperf3 TCP (MB/s) | %s |\n' \
	"$(m udp_pingpong)" "$(m shm_pingpong)" "$(m shm_copy)" "$(m iperf3)"
printf '| one copy, process_vm_writev 64 KiB (GB/s) | %s |\n' "$(m cma)"
printf '| UCX posix tag_lat RTT, median / mean (µs) / tag_bw 64 KiB (MB/s) | %s / %s / %s |\n' "$(m ucx_lat)" "$(m ucx_lat_mean)" "$(m ucx_bw)"
printf '| message rate, ib_write_bw 4 KiB, local path / its packet ring / UDP (Mpps) | %s / %s / %s |\n' "$(m rate4k.local)" "$(m rate4k.packets)" "$(m rate4k.udp)"
printf '| UCX posix tag_bw 4 KiB message rate (Mpps) | %s |\n' "$(m ucx_rate4k)"
printf '| UCX over softrnic (rc_verbs,ud_verbs,self) tag_lat RTT (µs) | %s |\n' "$(m ucx_rc_lat)"
sl=$(m send_lat.local) wl=$(m write_lat.local) rl=$(m read_lat.local) wb=$(m write_bw.local) sb=$(m send_bw.local)
ul=$(m ucx_lat) cm=$(m cma) ce=$(m cpu_em.local) cb=$(m cpu_m.local) ct=$(m cpu_m.tcp)
r4=$(m rate4k.local) u4=$(m ucx_rate4k) url=$(m ucx_rc_lat)
# The best UCX bandwidth of the rounds, as the goal names it.
ubest=$(tr ' ' '\n' <<<"${res[ucx_bw]:-}" | grep . | sort -g | tail -n1)
printf '\ngoals of the host-local path (ratios from this run):\n'
awk -v sl="$sl" -v wl="$wl" -v rl="$rl" -v wb="$wb" -v sb="$sb" -v ul="$ul" -v ub="${ubest:-0}" -v cm="$cm" \
    -v ce="$ce" -v cb="$cb" -v ct="$ct" -v r4="$r4" -v u4="$u4" -v url="$url" '
function verdict(ok) { return ok ? "met" : "not met" }
function have(x) { return x != "" && x > 0 }
function lat(name, v) {
	printf "  %s RTT %s us = %.1f x UCX posix tag_lat RTT %s us (goal <= 3): %s\n", name, v, v / ul, ul, verdict(v <= 3 * ul)
}
function bw(name, v) {
	printf "  %s 64 KiB %s MB/s = %.2f x UCX posix tag_bw best %s MB/s (goal >= 1.0; one copy by process_vm_writev: %s GB/s): %s\n", name, v, v / ub, ub, cm, verdict(v >= ub)
}
BEGIN {
	if (have(ul)) {
		lat("ib_send_lat", sl); lat("ib_write_lat", wl); lat("ib_read_lat", rl)
		if (have(url))
			printf "  UCX over softrnic rc_verbs tag_lat RTT %s us = %.1f x UCX posix %s us (goal <= 3): %s\n", url, url / ul, ul, verdict(url <= 3 * ul)
		else
			printf "  UCX over softrnic rc_verbs tag_lat: no result\n"
	} else
		printf "  ib_send_lat RTT %s us: no UCX run to compare (ucx_perftest missing)\n", sl
	printf "  ib_read_lat / ib_write_lat = %s / %s = %.2f (goal <= 1.1): %s\n", rl, wl, rl / wl, verdict(rl <= 1.1 * wl)
	if (have(ub)) {
		bw("ib_write_bw", wb); bw("ib_send_bw", sb)
	} else
		printf "  ib_write_bw 64 KiB %s MB/s: no UCX run to compare\n", wb
	if (have(u4))
		printf "  ib_write_bw 4 KiB message rate %s Mpps = %.2f x UCX posix tag_bw 4 KiB %s Mpps (goal >= 1.0): %s\n", r4, r4 / u4, u4, verdict(r4 >= u4)
	if (have(ct))
		printf "  CPU per GiB moved %s s busy-polling, %s s in event mode = %.2f x / %.2f x iperf3 TCP %s s (goal <= 1.0): %s / %s\n", cb, ce, cb / ct, ce / ct, ct, verdict(cb <= ct), verdict(ce <= ct)
}'
