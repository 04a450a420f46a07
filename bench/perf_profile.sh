#!/usr/bin/env bash
# perf_profile.sh — where softrnic's time goes under perftest.  A companion
# of perf_compare.sh (which measures how fast); this one says why.
#
#   bench/perf_profile.sh [BUILD_DIR] [--out DIR]
#
# Profiles two runs over loopback, server and client each recorded on its
# own: ib_write_bw at 64 KiB (the bandwidth path) and ib_send_lat at 2 bytes
# (the latency path).  With a usable `perf` (cpu-clock sampling: works in
# VMs without hardware counters) it samples user and kernel code; without
# one it falls back to valgrind --tool=callgrind (instruction counts, user
# code only, and far slower, so the runs are shortened).
#
# For each run it prints the top symbols and a breakdown of the samples
# into buckets: kernel UDP/IP stack, syscall entry/exit, scheduler and
# wakeups, copies, ICRC (CRC-32), locking, softrnic's transport
# (the rest of libibverbs.so.1), the application.  The bucket rules are
# regular expressions on symbol names (bucket_awk below): a heuristic, good
# for proportions, not a cycle-exact accounting.
#
# Then, with perf, CPU time and context switches per operation (perf stat,
# software counters) for ib_send_lat, ib_write_lat and ib_write_bw, and
# last an strace -c of one short ib_write_bw client next to the device's
# packet counters: how many syscalls each packet costs.
#
# PERF_PROFILE_TOOL=callgrind forces the valgrind fallback.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build="" out=""
while [ $# -gt 0 ]; do
	case "$1" in
	--out) shift; out=${1:-} ;;
	-h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	*) build=$1 ;;
	esac
	shift
done
build=$(realpath "${build:-$repo/build}")
lib=$build/lib
[ -e "$lib/libibverbs.so.1" ] || { echo "perf_profile: no $lib/libibverbs.so.1" >&2; exit 1; }
out=${out:-$(mktemp -d /tmp/perf_profile.XXXXXX)}
mkdir -p "$out"

cleanup() {
	local p
	for p in $(jobs -p); do kill -TERM "$p" 2>/dev/null; done
	sleep 0.2
	for p in $(jobs -p); do kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'echo "perf_profile: interrupted" >&2; exit 130' INT TERM

tool_mode=callgrind
if [ "${PERF_PROFILE_TOOL:-}" = callgrind ]; then
	:
elif perf record -q -e cpu-clock -o "$out/probe.data" -- true >/dev/null 2>&1; then
	tool_mode=perf
fi
rm -f "$out/probe.data"
echo "perf_profile: using $tool_mode; output in $out"

port=$((30000 + RANDOM % 30000))
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
# A server under callgrind starts slowly: 20 s.
wait_listen() { bench_wait_listen "$1" 20; }

# profiler NAME SIDE: sets prof=(the command prefix that runs a program
# under the chosen profiler, output $out/NAME.SIDE.*).
profiler() {
	if [ "$tool_mode" = perf ]; then
		prof=(perf record -q -e cpu-clock -c 500000 -o "$out/$1.$2.data" -- env LD_LIBRARY_PATH="$lib")
	else
		prof=(env LD_LIBRARY_PATH="$lib" valgrind -q --tool=callgrind --callgrind-out-file="$out/$1.$2.callgrind")
	fi
}

# pair NAME TOOL ARGS...: a profiled server and client.
pair() {
	local name=$1 tool=$2 prof; shift 2
	port=$((port + 1))
	profiler "$name" srv
	timeout -k 3 240 "${prof[@]}" "$tool" -x 0 -F -p "$port" "$@" >"$out/$name.srv.log" 2>&1 &
	local srv=$!
	wait_listen "$port" || { echo "perf_profile: $name server did not start" >&2; return 1; }
	profiler "$name" cli
	timeout -k 3 240 "${prof[@]}" "$tool" -x 0 -F -p "$port" "$@" 127.0.0.1 >"$out/$name.cli.log" 2>&1
	local rc=$?
	wait "$srv"
	echo "  $name: client rc=$rc; $(awk '/#bytes/ { getline; print; exit }' "$out/$name.cli.log")"
}

# Symbol -> bucket.  Order matters: the first rule that matches wins.
bucket_awk='
function bucket(dso, sym) {
	if (sym ~ /memcpy|memmove|copy_user|rep_movs|copy_to_iter|copy_from_iter|copy_page|csum_partial_copy|skb_copy_datagram/) return "copies (user memcpy + kernel copy to/from user)"
	if (dso ~ /libdeflate/ || sym ~ /crc32/) return "ICRC (CRC-32)"
	if (sym ~ /pthread_mutex|lll_lock|lll_unlock|futex/) return "locking (pthread mutex, futex)"
	if (dso ~ /vdso/) return "perftest clock calibration (gettimeofday busy loop in get_cpu_mhz; outside the timed loop)"
	if (sym ~ /sched_yield|schedule|finish_task_switch|pick_next|try_to_wake_up|enqueue_task|dequeue_task|update_curr|update_load|psi_|ttwu|select_task_rq|set_next_entity|put_prev|switch_mm|__switch_to|context_switch|idle|hrtimer|ppoll|do_poll|poll_select|do_sys_poll|poll_schedule|eventfd|ep_poll|__pollwait|remove_wait_queue|add_wait_queue|wake_up|do_select|sock_poll|udp_poll|_raw_spin_unlock_irq|rseq|pv_queued_spin|read_tsc|ktime_get/) return "scheduler, wakeups, poll/eventfd"
	if (sym ~ /entry_SYSCALL|do_syscall|syscall_exit|syscall_return|exit_to_user|__x64_sys|syscall_enter|fdget|fput|fget|srso|retbleed|untrain_ret|clear_bhb|msghdr|iovec|check_object_size|check_heap_object|check_stack_object|virt_addr_valid|put_user|get_user|move_addr_to_user|put_cmsg|__sys_sendmsg|__sys_recvmsg|___sys_|____sys_|do_recvmmsg|sock_recvmsg|sock_sendmsg/) return "per-syscall cost (entry/exit, msghdr/iovec/cmsg handling)"
	if (dso ~ /kernel/ && sym ~ /udp|ip_|ip4|ipv4|skb|sock|sk_|net_rx|netif|loopback|dev_queue|dev_hard|napi|backlog|kfree|kmem_cache|kmalloc|alloc|slab|free_frozen|page|fib|dst_|neigh|nf_|__dev|xmit|recvmsg|sendmsg|msg|softirq|bh_|rcu|lock_sock|release_sock|memcg|__build_skb|gro|rx_|tx_|csum|cmsg/) return "kernel UDP/IP stack, skb alloc/free, softirq"
	if (dso ~ /kernel/) return "kernel, other"
	if (dso ~ /libibverbs/) return "softrnic transport + verbs (libibverbs.so.1)"
	if (dso ~ /(^|\/)(ib_|ibv_)|perftest/) return "application (perftest)"
	if (dso ~ /libc/) return "libc, other"
	return "other"
}'

# report NAME SIDE: top symbols and buckets of one recording.
report() {
	local name=$1 side=$2
	echo
	echo "== $name $side"
	if [ "$tool_mode" = perf ]; then
		local data=$out/$name.$side.data
		[ -s "$data" ] || { echo "  (no data)"; return; }
		perf report -i "$data" --stdio --no-children --sort comm,dso,sym -g none 2>/dev/null \
			>"$out/$name.$side.report.txt"
		# One sample per 0.5 ms of CPU time (-c 500000 ns); the main thread's
		# id is the process id, the lowest of the process's threads.
		echo "  CPU time sampled, per thread (lowest id = the application's main thread):"
		perf script -i "$data" -F tid 2>/dev/null | sort -n | uniq -c |
			awk '{ n[NR] = $1; t[NR] = $2; all += $1 }
			     END { for (i = 1; i <= NR; i++)
			             printf "    tid %-8s %6.2f s  %5.1f%%\n", t[i], n[i] / 2000, 100 * n[i] / all
			           printf "    total        %6.2f s\n", all / 2000 }'
		echo "  top symbols:"
		awk '/^ *[0-9.]+%/ { printf "    %s\n", $0 }' "$out/$name.$side.report.txt" | head -22
		echo "  buckets:"
		# Line: "  12.34%  comm  dso  [k] symbol"
		awk "$bucket_awk"'
			/^ *[0-9.]+%/ {
				pct = $1; sub(/%/, "", pct)
				sym = ""; for (i = 5; i <= NF; i++) sym = sym (i > 5 ? " " : "") $i
				b = bucket($3, sym); share[b] += pct
			}
			END { for (b in share) printf "    %6.2f%%  %s\n", share[b], b }' \
			"$out/$name.$side.report.txt" | sort -rn
	else
		local f=$out/$name.$side.callgrind
		[ -s "$f" ] || { echo "  (no data)"; return; }
		callgrind_annotate --inclusive=no "$f" 2>/dev/null >"$out/$name.$side.report.txt"
		echo "  top functions (instructions, user space only):"
		awk '/^ *[0-9,]+ \(/ { printf "    %s\n", $0 }' "$out/$name.$side.report.txt" | head -22
		echo "  buckets:"
		# Line: "  1,234,567 (12.34%)  file:function [dso]"
		awk "$bucket_awk"'
			/^ *[0-9,]+ \( *[0-9.]+%\)/ && !/PROGRAM TOTALS/ {
				match($0, /\( *[0-9.]+%\)/)
				pct = substr($0, RSTART + 1, RLENGTH - 3); gsub(/ /, "", pct)
				rest = substr($0, RSTART + RLENGTH); sub(/^ +/, "", rest)
				dso = rest; sub(/^.*\[/, "", dso); sub(/\].*$/, "", dso)
				sym = rest; sub(/ \[.*$/, "", sym); sub(/^.*:/, "", sym)
				b = bucket(dso, sym); share[b] += pct
			}
			END { for (b in share) printf "    %6.2f%%  %s\n", share[b], b }' \
			"$out/$name.$side.report.txt" | sort -rn
	fi
}

if [ "$tool_mode" = perf ]; then
	perf_ok=1
	write_iters=8000 lat_iters=20000
else
	perf_ok=0
	write_iters=300 lat_iters=500
fi
echo "profiling ib_write_bw 64 KiB x $write_iters and ib_send_lat 2 B x $lat_iters"
pair write_bw ib_write_bw -s 65536 -n "$write_iters"
pair send_lat ib_send_lat -s 2 -n "$lat_iters"
for r in "write_bw srv" "write_bw cli" "send_lat srv" "send_lat cli"; do
	# shellcheck disable=SC2086
	report $r
done

# Context switches and CPU per operation: perf stat (software counters,
# which work without hardware PMU access) on both processes of a pair.
stat_pair() { # stat_pair FILE ITERS TOOL ARGS...: prints "task_ms context_switches migrations"
	local f=$1 iters=$2 tool=$3; shift 3
	port=$((port + 1))
	timeout -k 3 120 perf stat -x, -e task-clock,context-switches,cpu-migrations -o "$f.srv" -- \
		env LD_LIBRARY_PATH="$lib" "$tool" -x 0 -F -p "$port" -n "$iters" "$@" >"$f.srv.log" 2>&1 &
	local srv=$!
	wait_listen "$port" || return 1
	timeout -k 3 120 perf stat -x, -e task-clock,context-switches,cpu-migrations -o "$f.cli" -- \
		env LD_LIBRARY_PATH="$lib" "$tool" -x 0 -F -p "$port" -n "$iters" "$@" 127.0.0.1 >"$f.cli.log" 2>&1
	wait "$srv"
	cat "$f.srv" "$f.cli" | awk -F, '$3 == "task-clock" { ms += $1 } $3 == "context-switches" { cs += $1 }
		$3 == "cpu-migrations" { mig += $1 } END { print ms, cs, mig }'
}
# counted NAME ITERS TOOL ARGS...: per-operation CPU and context switches
# of both processes.  perftest's fixed costs (set-up, and get_cpu_mhz's
# 0.1-0.45 s gettimeofday busy loop) are measured by a 5-iteration run and
# subtracted.
counted() {
	local name=$1 iters=$2 tool=$3; shift 3
	local base full
	base=$(stat_pair "$out/stat.$tool.base" 5 "$tool" "$@") || return 1
	full=$(stat_pair "$out/stat.$tool.full" "$iters" "$tool" "$@") || return 1
	awk -v b="$base" -v f="$full" -v n="$iters" -v name="$name" 'BEGIN {
		split(b, B, " "); split(f, F, " ")
		printf "  %-20s %8.1f us CPU/op  %6.2f context switches/op  %6.3f migrations/op  (both processes, %d ops; fixed cost %.0f ms CPU subtracted)\n",
		       name, 1000 * (F[1] - B[1]) / (n - 5), (F[2] - B[2]) / (n - 5), (F[3] - B[3]) / (n - 5), n, B[1] }'
}
if [ "$perf_ok" = 1 ]; then
	echo
	echo "== per operation, both processes (perf stat)"
	counted "ib_send_lat 2 B" 20000 ib_send_lat -s 2
	counted "ib_write_lat 2 B" 20000 ib_write_lat -s 2
	counted "ib_write_bw 64 KiB" 8000 ib_write_bw -s 65536
fi

# Syscalls per packet: strace -c on an ib_write_bw client (requester: all
# data packets leave from it).  strace slows the process, so the counts, not
# the times, are the evidence.
if command -v strace >/dev/null; then
	echo
	echo "== syscalls of one ib_write_bw client (64 KiB x 1000), strace -f -c"
	port=$((port + 1))
	env LD_LIBRARY_PATH="$lib" timeout -k 3 120 ib_write_bw -x 0 -F -s 65536 -n 1000 -p "$port" \
		>"$out/strace.srv.log" 2>&1 &
	srv=$!
	if wait_listen "$port"; then
		env LD_LIBRARY_PATH="$lib" SOFTRNIC_STATS_AT_EXIT=1 timeout -k 3 120 \
			strace -f -c -o "$out/strace.cli.txt" ib_write_bw -x 0 -F -s 65536 -n 1000 -p "$port" 127.0.0.1 \
			>"$out/strace.cli.log" 2>&1
		wait "$srv"
		grep -o 'tx_packets=[0-9]*\|rx_packets=[0-9]*\|completions=[0-9]*' "$out/strace.cli.log" | tr '\n' ' '
		echo
		awk 'NR <= 2 || /send|recv|sched_yield|write|read|poll|futex|total/' "$out/strace.cli.txt" | head -16
	fi
fi
echo
echo "perf_profile: raw reports in $out"
