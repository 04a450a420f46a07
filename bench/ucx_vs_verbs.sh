#!/usr/bin/env bash
# ucx_vs_verbs.sh — UCX's latency over softrnic beside raw verbs on the
# same machine, in interleaved rounds (docs/ecosystem.md, "Where UCX's
# extra latency over raw verbs goes").  A benchmark: it prints, it does
# not pass or fail.
#
#   bench/ucx_vs_verbs.sh [BUILD_DIR] [--runs N] [--iters N]   (build, 3, 20000)
#
# Each round, half round trips in µs: perftest's ib_send_lat (t_typical),
# ucx_perftest's UCP tag_lat and UCT am_lat (p50) over rc_verbs and over
# ud_verbs, all through `softrnic run`.  With --profile, also a perf
# profile by object of one long tag_lat and one ib_send_lat client.
set -uo pipefail
. "$(dirname "$0")/common.sh"
build=build runs=3 iters=20000 profile=0
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift ;;
	--iters) iters=$2; shift ;;
	--profile) profile=1 ;;
	-*) echo "usage: $0 [BUILD_DIR] [--runs N] [--iters N] [--profile]" >&2; exit 2 ;;
	*) build=$1 ;;
	esac
	shift
done
S=$build/bin/softrnic
port=14500
command -v ucx_perftest > /dev/null && command -v ib_send_lat > /dev/null ||
	{ echo "ucx_vs_verbs: needs ucx-utils and perftest" >&2; exit 2; }

# ucx TLS TEST [ARGS]: p50 of one ucx_perftest pair
ucx() {
	local tls=$1 test=$2
	shift 2
	UCX_TLS=$tls "$S" run ucx_perftest -p $port "$@" > /dev/null 2>&1 &
	local s=$!
	bench_wait_listen $port
	UCX_TLS=$tls "$S" run ucx_perftest 127.0.0.1 -p $port -t "$test" -n "$iters" "$@" 2>&1 | awk '/^Final/ { print $3 }'
	wait $s
	port=$((port + 1))
}
verbs() {
	"$S" run ib_send_lat -n "$iters" -p $port > /dev/null 2>&1 &
	local s=$!
	bench_wait_listen $port
	"$S" run ib_send_lat -n "$iters" -p $port 127.0.0.1 2>&1 | awk '/^ *2 / { print $5 }'
	wait $s
	port=$((port + 1))
}

echo "| round | ib_send_lat | UCP tag_lat rc_verbs | UCT am_lat rc_verbs | UCP tag_lat ud_verbs | UCT am_lat ud_verbs |"
echo "|---|---|---|---|---|---|"
for r in $(seq "$runs"); do
	echo "| $r | $(verbs) | $(ucx rc_verbs,ud_verbs,self tag_lat) | $(ucx rc_verbs am_lat -d softrnic0:1 -x rc_verbs) |" \
	     "$(ucx ud_verbs,self tag_lat) | $(ucx ud_verbs am_lat -d softrnic0:1 -x ud_verbs) |"
done
[ $profile = 1 ] || exit 0
command -v perf > /dev/null || { echo "no perf: no profile" >&2; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
UCX_TLS=rc_verbs,ud_verbs,self "$S" run ucx_perftest -p $port > /dev/null 2>&1 &
bench_wait_listen $port
UCX_TLS=rc_verbs,ud_verbs,self perf record -q -o "$tmp/ucx.perf" -F 4999 -- \
	"$S" run ucx_perftest 127.0.0.1 -p $port -t tag_lat -n 100000 > /dev/null 2>&1
wait
port=$((port + 1))
"$S" run ib_send_lat -n 100000 -p $port > /dev/null 2>&1 &
bench_wait_listen $port
perf record -q -o "$tmp/ibv.perf" -F 4999 -- "$S" run ib_send_lat -n 100000 -p $port 127.0.0.1 > /dev/null 2>&1
wait
for f in ucx ibv; do
	echo "== $f: samples by object"
	perf report -i "$tmp/$f.perf" --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -8
done
