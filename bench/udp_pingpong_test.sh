#!/usr/bin/env bash
# udp_pingpong_test.sh — the kernel baseline of bench/perf_compare.sh does
# what its report says: a plain ping-pong and one shaped as softrnic's
# SEND with its riding ACK (-R) both finish without a resend, and with -R
# every message reaches the server as two GRO segments, the shape whose
# round trip perf_compare.sh sets apart as the kernel's part.
#   udp_pingpong_test.sh UDP_PINGPONG
set -euo pipefail
prog=${1:?usage: udp_pingpong_test.sh UDP_PINGPONG}
work=$(mktemp -d)
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# run SHAPE_FLAG...: one pair on a free port; the client's line in $work/c,
# the server's stderr in $work/s.
run() {
	local port
	port=$(( 20000 + RANDOM % 20000 ))
	"$prog" server "$port" -T 10 "$@" 2>"$work/s" &
	server=$!
	sleep 0.2
	"$prog" client "$port" -s 2 -n 500 -w 50 "$@" >"$work/c"
	wait "$server"
	server=
}

fail() { echo "udp_pingpong_test: $*" >&2; exit 1; }

run
grep -q 'shape=plain' "$work/c" || fail "plain: $(cat "$work/c")"
grep -q 'resent=0' "$work/c" || fail "plain resent: $(cat "$work/c")"

run -R
grep -q 'shape=rocev2' "$work/c" || fail "-R: $(cat "$work/c")"
grep -q 'resent=0' "$work/c" || fail "-R resent: $(cat "$work/c")"
# 550 messages (warm-up included), every one as two segments.
grep -q 'server: 550 messages, 550 of them two GRO segments' "$work/s" ||
	fail "-R: the server did not get every message as two segments: $(cat "$work/s")"
echo "udp_pingpong_test: ok"
