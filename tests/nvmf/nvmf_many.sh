#!/usr/bin/env bash
# nvmf_many.sh — one NVMe-oF controller with 32 I/O queues, end to end:
# `perf --queues 32` connects qid 1..32 (each its own RDMA connection and
# Fabrics Connect), writes with verify (the span written first, read back
# and checked at the end), then reads with every block checked; every
# queue must complete commands, none may fail.  The target's log says it
# accepted 33 queues (admin and 32 I/O) each time.  Figures at 256: docs/nvmf.md.
#
# usage: nvmf_many.sh LIB_DIR SOFTRNIC_NVMF PORT
set -euo pipefail
LIB=$1 NVMF=$2 PORT=$3
export LD_LIBRARY_PATH=$LIB
unset SOFTRNIC_ADDR SOFTRNIC_IFACE
NQN=nqn.2026-12.io.softrnic:nvmf-many
tmp=$(mktemp -d)
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "nvmf_many: $*" >&2; cat "$tmp"/*.log >&2; exit 1; }

timeout 300 "$NVMF" serve --nqn "$NQN" --port "$PORT" --mem 64m -v >"$tmp/server.log" 2>&1 &
server=$!
for _ in $(seq 50); do grep -q serving "$tmp/server.log" && break; sleep 0.1; done

field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$tmp/$2.log"; }
for rw in randwrite randread; do
	timeout 120 "$NVMF" perf --nqn "$NQN" --port "$PORT" --queues 32 --qd 8 --time 1 --verify --rw $rw \
		>"$tmp/$rw.log" 2>&1 || fail "perf --queues 32 --rw $rw failed"
	cat "$tmp/$rw.log"
	[ "$(field queues $rw)" = 32 ] || fail "$rw: not 32 queues"
	[ "$(field idle_queues $rw)" = 0 ] || fail "$rw: a queue completed nothing"
	[ "$(field errors $rw)" = 0 ] && [ "$(field verify_errors $rw)" = 0 ] || fail "$rw: errors"
	[ "$(field verified $rw)" -gt 0 ] || fail "$rw: nothing verified"
	[ "$(field min_queue_ios $rw)" -gt 0 ] || fail "$rw: a queue completed nothing"
done
# The target saw 32 I/O queues per run: qid 1..32 each accepted once a run.
for q in 1 32; do
	[ "$(grep -c "accepted: qid $q," "$tmp/server.log")" = 2 ] || fail "qid $q not accepted once per run"
done
[ "$(grep -c 'accepted: qid' "$tmp/server.log")" = 66 ] || fail "not 33 queues a run"
# Asking for more I/O queues than perf's range is refused by name.
if "$NVMF" perf --nqn "$NQN" --port "$PORT" --queues 1025 >"$tmp/refused.log" 2>&1; then fail "--queues 1025 taken"; fi
grep -q -- "--queues 1025" "$tmp/refused.log" || fail "--queues 1025 not named"
kill -TERM "$server"
wait "$server" || fail "the target exited badly"
server=
echo "nvmf_many: ok"
