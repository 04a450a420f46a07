#!/usr/bin/env bash
# local_msg_sweep.sh — where the host-local path should start carrying a
# message whole: ib_write_bw at each size with every message over 4 KiB
# whole (SOFTRNIC_LOCAL_MSG_MIN=4096: one process_vm_readv by the
# receiver) against MTU packets through the ring (SOFTRNIC_LOCAL=packets),
# in interleaved rounds, medians.  A benchmark: it measures and prints.
# The result chose SRT_LOCAL_MSG_MIN_BYTES (runtime/local_path.h).
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
sizes="16384 32768 65536 131072 1048576"
declare -A res
for r in $(seq "$runs"); do
	for s in $sizes; do
		n=20000
		[ "$s" -ge 1048576 ] && n=2000
		for mode in whole packets; do
			envs=SOFTRNIC_LOCAL_MSG_MIN=4096
			[ $mode = packets ] && envs=SOFTRNIC_LOCAL=packets
			env $envs timeout 60 ib_write_bw -s "$s" -n $n -p $port > "$tmp/s" 2>&1 &
			sp=$!
			bench_wait_listen $port
			res[$s.$mode]+="$(env $envs timeout 60 ib_write_bw -s "$s" -n $n -p $port 127.0.0.1 2>&1 |
				awk -v s="$s" '$1 == s { print $4 }') "
			wait $sp
			port=$((port + 1))
		done
	done
done
m() { tr ' ' '\n' <<<"${res[$1]:-}" | grep . | bench_median; }
printf 'ib_write_bw (MB/s), medians of %s interleaved rounds; %s CPUs, %s; %s\n' "$runs" "$(nproc)" "$(uname -r)" "$(date -u +%FT%RZ)"
printf '| message | whole (one process_vm_readv) | MTU packets through the ring |\n|---|---|---|\n'
for s in $sizes; do
	printf '| %s | %s | %s |\n' "$s" "$(m $s.whole)" "$(m $s.packets)"
done
