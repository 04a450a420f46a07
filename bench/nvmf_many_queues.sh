#!/usr/bin/env bash
# nvmf_many_queues.sh — one softrnic NVMe-oF target, one controller with N
# I/O queues (`softrnic nvmf perf --queues N`, each queue its own RDMA
# connection and Fabrics Connect): random writes then random reads, 4 KiB,
# qd per queue, every block verified; the connect time and the target's
# resident memory with the queues.  A benchmark, not a test
# (tests/nvmf/nvmf_many.sh is the test, at 32).  Results: docs/nvmf.md.
# usage: bench/nvmf_many_queues.sh [BUILD_DIR] [N] [QD] [SECONDS]   (default build 256 8 5)
set -uo pipefail
build=${1:-$(dirname "$0")/../build}
n=${2:-256}
qd=${3:-8}
secs=${4:-5}
port=18974
nqn=nqn.2026-12.io.softrnic:many-queues
. "$(dirname "$0")/common.sh"
trap bench_stop_jobs EXIT
export LD_LIBRARY_PATH=$build/lib
"$build/bin/softrnic-nvmf" serve --nqn $nqn --port $port --mem 256m &
spid=$!
sleep 0.5
echo "== nvmf perf --queues $n --qd $qd ($(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null), $(nproc) CPUs, $(uname -r))"
echo "target resident before: $(awk '/VmRSS/ { print $2, $3 }' /proc/$spid/status)"
rc=0
for rw in randwrite randread; do
	"$build/bin/softrnic-nvmf" perf --nqn $nqn --port $port --queues "$n" --qd "$qd" --time "$secs" --verify \
		--rw $rw & ppid=$!
	sleep $((secs / 2 + 1))
	echo "target resident with the queues: $(awk '/VmRSS/ { print $2, $3 }' /proc/$spid/status)"
	wait $ppid || rc=1
done
exit $rc
