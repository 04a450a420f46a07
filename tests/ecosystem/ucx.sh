#!/usr/bin/env bash
# ucx.sh — UCX (Debian's ucx-utils) on softrnic through `softrnic run`:
# ucx_info -d lists rc_verbs and ud_verbs on softrnic0:1, and ucx_perftest
# runs between two processes:
#  - the UCP tests (tag_lat, tag_bw eager and rendezvous, ucp_put_lat,
#    ucp_put_bw, ucp_get, ucp_am_bw, ucp_fadd) over UCX_TLS=
#    rc_verbs,ud_verbs,self and over ud_verbs,self, with UCX's defaults
#    otherwise (its UD GRH check on: softrnic reports the RoCE packet type
#    in wc.sl as mlx5 does);
#  - the UCT tests on one transport (-d softrnic0:1 -x TL): put_lat,
#    put_bw, get, am_lat, am_bw on rc_verbs; am_lat, am_bw on ud_verbs.
#   ucx.sh SOFTRNIC_BIN PORT [ITERATIONS]
# Skips (77) when ucx-utils is not installed.
set -uo pipefail
SOFTRNIC=$1
PORT=$2
N=${3:-2000}
command -v ucx_perftest >/dev/null && command -v ucx_info >/dev/null ||
	{ echo "ucx: ucx-utils not installed; skipped"; exit 77; }
dir=$(mktemp -d)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "ucx: FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/../lib.sh"

"$SOFTRNIC" run ucx_info -d > "$dir/info" 2>&1 || fail "ucx_info -d exited $?"
for tl in rc_verbs ud_verbs; do
	grep -A1 "Transport: $tl" "$dir/info" | grep -q "Device: softrnic0:1" ||
		fail "ucx_info -d lists no $tl on softrnic0:1"
done
echo "ucx: ucx_info -d lists rc_verbs and ud_verbs on softrnic0:1"

# One ucx_perftest pair: a server in the background, the client in front;
# prints the client's Final: row.
run_pair() {
	local tls=$1 test=$2 size=$3 start=$SECONDS
	shift 3
	UCX_TLS=$tls "$SOFTRNIC" run ucx_perftest -p "$PORT" "$@" > "$dir/server" 2>&1 &
	server_pid=$!
	wait_listen "$PORT" || fail "$tls $test: the server does not listen"
	UCX_TLS=$tls timeout 60 "$SOFTRNIC" run ucx_perftest 127.0.0.1 -p "$PORT" -t "$test" -s "$size" -n "$N" \
		"$@" > "$dir/client" 2>&1
	local rc=$?
	wait "$server_pid"
	local src=$?
	server_pid=
	[ $rc -eq 0 ] || { cat "$dir/client" "$dir/server" >&2; fail "$tls $test: client exited $rc"; }
	[ $src -eq 0 ] || { cat "$dir/server" >&2; fail "$tls $test: server exited $src"; }
	local row
	row=$(grep "^Final:" "$dir/client") || { cat "$dir/client" >&2; fail "$tls $test: no Final: row"; }
	# Final: iterations p50 average overall MB/s-average MB/s-overall msg/s ...
	read -r _ iters p50 avg _ mbs _ <<<"$row"
	[ "$iters" -eq "$N" ] || fail "$tls $test: $iters iterations, not $N"
	printf 'ucx: %-22s %-11s %7s B  p50 %8s us  avg %8s us  %8s MB/s  (%s s)\n' "$tls" "$test" "$size" "$p50" \
		"$avg" "$mbs" "$((SECONDS - start))"
}

for tls in rc_verbs,ud_verbs,self ud_verbs,self; do
	for test in tag_lat ucp_put_lat ucp_fadd; do run_pair "$tls" "$test" 8; done
	for test in tag_bw ucp_put_bw ucp_get ucp_am_bw; do run_pair "$tls" "$test" 65536; done
	# Past UCX's eager limits: tag_bw takes the rendezvous path (RDMA READ on rc).
	run_pair "$tls" tag_bw 1048576
done
for test in put_lat am_lat; do run_pair uct:rc_verbs "$test" 8 -d softrnic0:1 -x rc_verbs; done
for test in put_bw get; do run_pair uct:rc_verbs "$test" 65536 -d softrnic0:1 -x rc_verbs -D zcopy; done
run_pair uct:rc_verbs am_bw 4096 -d softrnic0:1 -x rc_verbs -D bcopy
run_pair uct:ud_verbs am_lat 8 -d softrnic0:1 -x ud_verbs
run_pair uct:ud_verbs am_bw 1024 -d softrnic0:1 -x ud_verbs -D bcopy
echo "ucx: all runs passed"
