#!/usr/bin/env bash
# local_msg_sweep.sh — where the host-local path should start carrying a
# message whole: at each size, every message over 4 KiB whole
# (SOFTRNIC_LOCAL_MSG_MIN=4096: one process_vm_readv by the receiver, or
# by a READ's requester) against MTU packets through the ring
# (SOFTRNIC_LOCAL=packets): ib_write_bw, ib_send_bw and ib_read_bw (MB/s)
# and ib_write_lat, ib_send_lat, ib_read_lat (typical µs), in interleaved rounds,
# medians.  A whole message sent alone (a ping-pong's) carries its payload
# in the ring (local_path.h); the latency tools also run with that off
# (SOFTRNIC_LOCAL_INLINE_MAX=0: always read by the receiver).  A
# benchmark: it measures and prints.  The results chose
# SRT_LOCAL_MSG_MIN_BYTES and SRT_LOCAL_INLINE_MAX_BYTES
# (runtime/local_path.h).
#
#   bench/local_msg_sweep.sh [BUILD_DIR] [--runs N]      (default: build, 3)
set -uo pipefail
. "$(dirname "$0")/common.sh"
build=${1:-build}
runs=3
[ "${2:-}" = "--runs" ] && runs=${3:-3}
export LD_LIBRARY_PATH=$build/lib
port=16300
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sizes="8192 16384 32768 65536"
tools="ib_write_bw ib_send_bw ib_read_bw ib_write_lat ib_send_lat ib_read_lat"
declare -A res
for r in $(seq "$runs"); do
	for t in $tools; do
		for s in $sizes; do
			n=20000 col=4 modes="whole packets"
			case $t in *_lat) n=5000 col=5 modes="whole described packets" ;; esac
			for mode in $modes; do
				envs=SOFTRNIC_LOCAL_MSG_MIN=4096
				[ $mode = described ] && envs="SOFTRNIC_LOCAL_MSG_MIN=4096 SOFTRNIC_LOCAL_INLINE_MAX=0"
				[ $mode = packets ] && envs=SOFTRNIC_LOCAL=packets
				env $envs timeout 60 $t -s "$s" -n $n -p $port > "$tmp/s" 2>&1 &
				sp=$!
				bench_wait_listen $port
				res[$t.$s.$mode]+="$(env $envs timeout 60 $t -s "$s" -n $n -p $port 127.0.0.1 2>&1 |
					awk -v s="$s" -v c=$col '$1 == s { print $c }') "
				wait $sp
				port=$((port + 1))
			done
		done
	done
done
m() { tr ' ' '\n' <<<"${res[$1]:-}" | grep . | bench_median; }
printf 'medians of %s interleaved rounds; %s CPUs, %s; %s\n' "$runs" "$(nproc)" "$(uname -r)" "$(date -u +%FT%RZ)"
printf '| tool | message | whole (streams: one process_vm_readv; sent alone: in the ring) | whole, always read by the receiver | MTU packets through the ring |\n|---|---|---|---|---|\n'
for t in $tools; do
	for s in $sizes; do
		d=$(m $t.$s.described)
		printf '| %s | %s | %s | %s | %s |\n' "$t" "$s" "$(m $t.$s.whole)" "${d:--}" "$(m $t.$s.packets)"
	done
done
