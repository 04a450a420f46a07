#!/bin/sh
# cmtime_scale.sh — how softrnic's CM scales with the number of ids:
# unmodified cmtime (rdmacm-utils) server and client on this host connect
# N ids and tear them down, and cmtime prints each step's total and per-
# connection time.  A benchmark, not a test (not in CTest).  Results:
# docs/rdmacm.md ("Many ids").
# usage: bench/cmtime_scale.sh [libdir] [N...]    (default build/lib, 10000 50000)
# Every id gets an RC QP (max_qp 65536); a QP that cannot be created
# ("failure creating qp") is counted and the id connects without one.
set -u
lib=${1:-$(dirname "$0")/../build/lib}
[ $# -gt 0 ] && shift
counts=${*:-10000 50000}
command -v cmtime >/dev/null 2>&1 || { echo "cmtime not installed (rdmacm-utils)"; exit 77; }
port=18890
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in $counts; do
	port=$((port + 1))
	LD_LIBRARY_PATH=$lib cmtime -p $port >"$tmp/srv" 2>&1 &
	spid=$!
	sleep 0.5
	LD_LIBRARY_PATH=$lib timeout 600 cmtime -s 127.0.0.1 -p $port -c "$n" >"$tmp/cli" 2>&1
	rc=$?
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	echo "== cmtime -c $n: exit $rc, $(grep -c 'failure creating qp' "$tmp/cli") QPs not created"
	grep -E '^(step|create id|resolve|create qp|connect|disconnect|destroy)' "$tmp/cli"
done
