#!/usr/bin/env bash
# rsocket_compare.sh — softrnic's rsockets beside the kernel's TCP on this
# machine's loopback.  A benchmark, not a test: it measures and prints a
# table (medians of N runs), it does not pass or fail.  Results:
# docs/rdmacm.md ("Rsockets").
#
#   bench/rsocket_compare.sh [BUILD_DIR] [--quick] [--out DIR]
#
# Rows (each side runs the same unmodified program):
#   iperf3        single stream, 3 s (--quick: 1 s), receiver's rate; over
#                 rsockets through rdma-core's librspreload.so with
#                 LD_LIBRARY_PATH=BUILD_DIR/lib, over TCP as it is; with
#                 iperf3's default buffers and with -w 1M
#   rstream RTT   64-byte ping-pong (rstream -S 64 -C 1 -I 20000), round trip
#                 = 2 x rstream's usec/xfer; spinning (rstream's default,
#                 non-blocking calls) and blocking (-T b); TCP with -T s
#   rstream bw    1 MiB messages (-S 1048576 -C 200), Gb/s
#   redis         redis-server and redis-benchmark (8 clients, SET and GET,
#                 50 000 requests each; --quick: 10 000), requests/s; over
#                 rsockets through softrnic's own librspreload.so (redis's
#                 event loop needs epoll, which Debian 12's lacks)
# Rounds alternate rsockets and TCP so drift of a shared machine falls on
# both sides.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/lib.sh"
# shellcheck source=bench/common.sh
. "$here/common.sh"
bench_parse_args "$here/../build/rsocket_compare" "$@"
lib=$(cd "$build/lib" 2>/dev/null && pwd) || { echo "no $build/lib: build first" >&2; exit 2; }
pre=${RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}
for p in iperf3 rstream python3; do
	command -v $p >/dev/null || { echo "$p not installed" >&2; exit 2; }
done
[ -f "$pre" ] || { echo "$pre not installed (librdmacm1)" >&2; exit 2; }
runs=3 secs=3
[ "$quick" = 1 ] && runs=1 secs=1
mkdir -p "$out"
trap bench_stop_jobs EXIT
port=18950

# rsock <cmd...>: the program on softrnic's rsockets.
rs_env() { env LD_LIBRARY_PATH="$lib" "$@"; }
pre_env() { env LD_LIBRARY_PATH="$lib" LD_PRELOAD="$pre" "$@"; }

# iperf3_rate SIDE [iperf3 client args]: Gbit/s received.
iperf3_rate() {
	local side=$1 run=env
	shift
	[ "$side" = rsocket ] && run=pre_env
	port=$((port + 1))
	$run iperf3 -s -1 -B 127.0.0.1 -p $port > "$out/iperf3_srv.log" 2>&1 &
	local spid=$! i=0
	# Over rsockets the listener is in softrnic's CM registry; over TCP in ss.
	until { [ "$side" = rsocket ] && cm_listening 262 "$port"; } ||
	      { [ "$side" = tcp ] && ss -ltnH "sport = :$port" | grep -q .; }; do
		sleep 0.05; i=$((i + 1)); [ $i -lt 200 ] || break
	done
	$run timeout 60 iperf3 -c 127.0.0.1 -p $port -t $secs -J "$@" > "$out/iperf3_cli.json" 2>/dev/null
	wait $spid 2>/dev/null
	python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e9))' \
		"$out/iperf3_cli.json" 2>/dev/null || echo n/a
}

# rstream_col SIDE COLUMN [rstream args]: that column of rstream's result
# line (7: Gb/sec, 8: usec/xfer).
rstream_col() {
	local side=$1 col=$2 run=rs_env extra=""
	shift 2
	[ "$side" = tcp ] && { run=env; extra="-T s"; }
	port=$((port + 1))
	$run timeout 60 rstream -p $port $extra "$@" > "$out/rstream_srv.log" 2>&1 &
	local spid=$!
	if [ "$side" = tcp ]; then
		bench_wait_listen $port 10 || true
	else
		local i=0
		until cm_listening 262 "$port" || [ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done
	fi
	$run timeout 60 rstream -s 127.0.0.1 -p $port $extra "$@" > "$out/rstream_cli.log" 2>&1
	wait $spid 2>/dev/null
	awk -v c="$col" '$1 == "custom" { print $c }' "$out/rstream_cli.log" | head -1 | grep . || echo n/a
}

# redis_rps SIDE: "SET GET" requests per second of redis-benchmark.
redis_rps() {
	local side=$1 run=env n=50000
	[ "$quick" = 1 ] && n=10000
	[ "$side" = rsocket ] && run="env LD_LIBRARY_PATH=$lib LD_PRELOAD=$lib/rsocket/librspreload.so"
	command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || { echo "n/a n/a"; return; }
	port=$((port + 1))
	$run timeout 120 redis-server --port $port --bind 127.0.0.1 --protected-mode no --save '' \
		--appendonly no --dir "$out" > "$out/redis_srv.log" 2>&1 &
	local spid=$! i=0
	until { [ "$side" = rsocket ] && cm_listening 262 "$port"; } ||
	      { [ "$side" = tcp ] && ss -ltnH "sport = :$port" | grep -q .; }; do
		sleep 0.05; i=$((i + 1)); [ $i -lt 200 ] || break
	done
	$run timeout 120 redis-benchmark -p $port -c 8 -n $n -t set,get --csv > "$out/redis.csv" 2>/dev/null
	kill $spid 2>/dev/null
	wait $spid 2>/dev/null
	local set get
	set=$(awk -F'"' '$2 == "SET" { print $4 }' "$out/redis.csv")
	get=$(awk -F'"' '$2 == "GET" { print $4 }' "$out/redis.csv")
	echo "${set:-n/a} ${get:-n/a}"
}

declare -A res
rows=(iperf3 iperf3_w1m rtt_spin rtt_block bw_1m redis_set redis_get)
for r in $(seq 1 $runs); do
	for side in rsocket tcp; do
		res[iperf3,$side]+="$(iperf3_rate $side) "
		res[iperf3_w1m,$side]+="$(iperf3_rate $side -w 1M) "
		u=$(rstream_col $side 8 -S 64 -C 1 -I 20000)
		res[rtt_spin,$side]+="$(awk -v u="$u" 'BEGIN { if (u == "n/a") print u; else printf "%.2f", 2 * u }') "
		u=$(rstream_col $side 8 -T b -S 64 -C 1 -I 20000)
		res[rtt_block,$side]+="$(awk -v u="$u" 'BEGIN { if (u == "n/a") print u; else printf "%.2f", 2 * u }') "
		res[bw_1m,$side]+="$(rstream_col $side 7 -S 1048576 -C 200) "
		read -r rs rg <<< "$(redis_rps $side)"
		res[redis_set,$side]+="$rs "
		res[redis_get,$side]+="$rg "
	done
done

med() { tr ' ' '\n' | grep -v '^$' | grep -v n/a | bench_median; }
{
	echo "rsockets (softrnic, $(basename "$(dirname "$lib")")) vs kernel TCP, loopback, $runs run(s), medians; $(date -u +%F)"
	printf '%-34s %12s %12s\n' measurement rsockets tcp
	label() {
		case $1 in
		iperf3) echo "iperf3 1 stream, default (Gbit/s)" ;;
		iperf3_w1m) echo "iperf3 1 stream, -w 1M (Gbit/s)" ;;
		rtt_spin) echo "rstream 64 B RTT, spinning (us)" ;;
		rtt_block) echo "rstream 64 B RTT, blocking (us)" ;;
		bw_1m) echo "rstream 1 MiB messages (Gbit/s)" ;;
		redis_set) echo "redis-benchmark SET, 8 clients (req/s)" ;;
		redis_get) echo "redis-benchmark GET, 8 clients (req/s)" ;;
		esac
	}
	for k in "${rows[@]}"; do
		printf '%-34s %12s %12s\n' "$(label $k)" "$(echo "${res[$k,rsocket]}" | med)" \
			"$(echo "${res[$k,tcp]}" | med)"
	done
	echo "all runs: "; for k in "${rows[@]}"; do echo "  $k rsockets: ${res[$k,rsocket]}  tcp: ${res[$k,tcp]}"; done
} | tee "$out/table.txt"
