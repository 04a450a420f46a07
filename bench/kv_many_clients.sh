#!/usr/bin/env bash
# kv_many_clients.sh — one softrnic-kv server and N clients connected at
# once (bench/kv_many_clients: connect time per client, SET/GET/INCR with
# every answer checked, the server's resident memory per client).  A
# benchmark, not a test (tests/kv/kv_many.sh is the test, at 500).
# Results: docs/kv.md ("Many clients"), bench/results.
# usage: bench/kv_many_clients.sh [BUILD_DIR] [N] [ROUNDS]   (default build 5000 20)
set -uo pipefail
build=${1:-$(dirname "$0")/../build}
n=${2:-5000}
rounds=${3:-20}
port=18971
. "$(dirname "$0")/common.sh"
trap bench_stop_jobs EXIT
export LD_LIBRARY_PATH=$build/lib
ulimit -n "$(ulimit -Hn)"
"$build/bin/softrnic-kv" serve --port $port --mem 256m &
spid=$!
for _ in $(seq 50); do "$build/bin/softrnic-kv" stats --server 127.0.0.1:$port >/dev/null 2>&1 && break; sleep 0.1; done
echo "== kv_many_clients -n $n -r $rounds ($(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null), $(nproc) CPUs, $(uname -r))"
"$build/bench/kv_many_clients" -s 127.0.0.1:$port -n "$n" -r "$rounds" -P "$spid"
rc=$?
kill "$spid"
wait "$spid"
exit $rc
