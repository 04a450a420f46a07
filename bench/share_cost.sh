#!/usr/bin/env bash
# share_cost.sh — what sharing one host address costs (softrnic-hostd and
# the reuseport steering program, docs/architecture.md "A shared host
# address"): perftest between two processes on one shared address against
# two processes on addresses of their own, in interleaved rounds, over
# UDP (SOFTRNIC_LOCAL=0: the local path would bypass the steering).  A
# benchmark: it prints medians, it does not pass or fail.
#
#   bench/share_cost.sh [BUILD_DIR] [--runs N]        (build, 6)
set -uo pipefail
. "$(dirname "$0")/common.sh"
build=${1:-build}
runs=6
[ "${2:-}" = "--runs" ] && runs=${3:-6}
export LD_LIBRARY_PATH=$build/lib SOFTRNIC_LOCAL=0
port=14600

# one PROGRAM ENV_SERVER ENV_CLIENT ARGS...: the client's figure
one() {
	local prog=$1 es=$2 ec=$3
	shift 3
	env $es timeout 60 "$prog" -p $port "$@" > /dev/null 2>&1 &
	local s=$!
	bench_wait_listen $port
	env $ec timeout 60 "$prog" -p $port "$@" 127.0.0.1 2>&1 |
		awk '/^ *65536 / { print $4 } /^ *2 / { print $5 }'
	wait $s
	port=$((port + 1))
}

bw_sep="" bw_sh="" lat_sep="" lat_sh="" wins=0
for r in $(seq "$runs"); do
	a=$(one ib_write_bw SOFTRNIC_ADDR=127.0.0.71 SOFTRNIC_ADDR=127.0.0.72 -n 5000)
	b=$(one ib_write_bw SOFTRNIC_ADDR=127.0.0.73 SOFTRNIC_ADDR=127.0.0.73 -n 5000)
	bw_sep+="$a"$'\n' bw_sh+="$b"$'\n'
	awk -v a="$a" -v b="$b" 'BEGIN { exit !(b > a) }' && wins=$((wins + 1))
	lat_sep+="$(one ib_send_lat SOFTRNIC_ADDR=127.0.0.71 SOFTRNIC_ADDR=127.0.0.72 -n 20000)"$'\n'
	lat_sh+="$(one ib_send_lat SOFTRNIC_ADDR=127.0.0.73 SOFTRNIC_ADDR=127.0.0.73 -n 20000)"$'\n'
done
ms=$(grep . <<<"$bw_sep" | bench_median) mh=$(grep . <<<"$bw_sh" | bench_median)
echo "ib_write_bw 64 KiB, medians of $runs rounds: separate addresses $ms MB/s, one shared address $mh MB/s" \
     "($(awk -v a="$ms" -v b="$mh" 'BEGIN { printf "%.2f", b / a }')x; shared faster in $wins of $runs)"
echo "ib_send_lat t_typical: separate $(grep . <<<"$lat_sep" | bench_median) us, shared $(grep . <<<"$lat_sh" | bench_median) us"
