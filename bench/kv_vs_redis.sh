#!/usr/bin/env bash
# kv_vs_redis.sh — softrnic's key-value store side by side with Redis 7 on
# this machine, in one run.  A benchmark, not a test: it measures and
# reports (exit status non-zero only when a run could not be made).
#
#   bench/kv_vs_redis.sh [BUILD_DIR] [--quick] [--out DIR]
#
# Both sides get the same load: 1000 keys "key:000000000000".. (16 bytes,
# redis-benchmark's key:__rand_int__ with -r 1000), all preloaded, values
# of 32 B, 1 KiB and 64 KiB, 1, 4 and 16 clients, one request in flight per
# client, GET and SET; the load generator is one thread in both cases
# (redis-benchmark; softrnic-kv bench with its default --threads 1, its
# one-sided GETs too, which are asynchronous chains of READs).
#
#   Redis      Debian's redis-server on 127.0.0.1, no persistence, driven
#              by redis-benchmark (-P 1); its CPU from INFO cpu.
#   softrnic   softrnic-kv serve --busy-poll (HERD-style: the serving
#              thread spins on its CQ), driven by softrnic-kv bench; GETs
#              both two-sided and one-sided (RDMA READs of the table).
#   floor      BUILD_DIR/bench/udp_pingpong: two processes busy-polling
#              UDP sockets, 100-byte messages (a GET's size on the wire):
#              the kernel's loopback round trip under any RoCEv2 software
#              stack, so the lowest p50 softrnic could reach here.
#   softrnic, sleeping server: the same server without --busy-poll, as
#              Redis sleeps in epoll: its CPU per operation is meaningful
#              (a spinning server's is not), and its latency shows what a
#              wake-up costs.  Also: requests as SENDs against
#              WRITE-with-immediate (the two transports, proto.h).
#
# Servers are started by this script on loopback and stopped by PID.
# Output: DIR/kv_bench.csv (every run), DIR/kv_bench.md (the tables),
# DIR/kv_bench.png (plots); DIR defaults to bench-out/kv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

bench_parse_args bench-out/kv "$@"
kv=$build/bin/softrnic-kv
for t in "$kv" redis-server redis-benchmark redis-cli; do
	command -v "$t" >/dev/null || { echo "kv_vs_redis: $t not found (scripts/deps.sh installs redis)" >&2; exit 2; }
done
export LD_LIBRARY_PATH=$PWD/$build/lib
unset SOFTRNIC_ADDR SOFTRNIC_IFACE
mkdir -p "$out"
csv=$out/kv_bench.csv
echo "system,path,transport,server,clients,value,requests,rps,p50_us,p99_us,cpu_thread_us,cpu_process_us" >"$csv"

KEYS=1000
REDIS_PORT=18871 BUSY_PORT=18870 SLEEP_PORT=18872
for p in $REDIS_PORT $BUSY_PORT $SLEEP_PORT 18874; do
	[ -z "$(ss -Hlntu "( sport = :$p )" 2>/dev/null)" ] ||
		{ echo "kv_vs_redis: port $p is in use: stop what listens there first" >&2; exit 2; }
done
trap bench_stop_jobs EXIT
redis-server --port $REDIS_PORT --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
	--logfile "$out/redis.log" &
redis_pid=$!
"$kv" serve --port $BUSY_PORT --mem 512m --busy-poll 2>"$out/softrnic-busy.log" &
"$kv" serve --port $SLEEP_PORT --mem 512m 2>"$out/softrnic-sleep.log" &
bench_wait_listen $REDIS_PORT && kill -0 $redis_pid 2>/dev/null ||
	{ echo "kv_vs_redis: redis-server did not start ($out/redis.log)" >&2; exit 1; }
for p in $BUSY_PORT $SLEEP_PORT; do
	for _ in $(seq 100); do "$kv" stats --server 127.0.0.1:$p >/dev/null 2>&1 && break; sleep 0.1; done
done

requests() {   # clients value -> how many requests a run makes
	local n=40000
	[ "$2" -ge 65536 ] && n=10000
	[ $quick = 1 ] && n=$((n / 5))
	echo $n
}

redis_cpu() {   # used_cpu_sys + used_cpu_user in microseconds
	redis-cli -p $REDIS_PORT info cpu | tr -d '\r' |
		awk -F: '$1 == "used_cpu_sys" || $1 == "used_cpu_user" { s += $2 } END { printf "%.0f\n", s * 1e6 }'
}

redis_preload() {   # value size: SET every key, pipelined
	/usr/bin/python3 - "$1" "$KEYS" <<'EOF' | redis-cli -p $REDIS_PORT --pipe >/dev/null
import sys
size, keys = int(sys.argv[1]), int(sys.argv[2])
v = b"x" * size
out = sys.stdout.buffer
for k in range(keys):
    key = b"key:%012d" % k
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(v), v))
EOF
}

run_redis() {   # op clients value
	local n c0 c1 line
	n=$(requests "$2" "$3")
	c0=$(redis_cpu)
	line=$(redis-benchmark -p $REDIS_PORT -t "$1" -n "$n" -c "$2" -d "$3" -r $KEYS -P 1 --csv | tail -1 | tr -d '"')
	c1=$(redis_cpu)
	# test,rps,avg,min,p50,p95,p99,max (milliseconds)
	echo "$line" | awk -F, -v op="$1" -v c="$2" -v v="$3" -v n="$n" -v cpu=$((c1 - c0)) \
		'{ printf "redis,%s,tcp,epoll,%s,%s,%s,%.0f,%.1f,%.1f,,%.3f\n", op, c, v, n, $2, $5 * 1000, $7 * 1000, cpu / n }' >>"$csv"
}

run_softrnic() {   # port server-label path transport clients value
	local n op=get extra=()
	n=$(requests "$5" "$6")
	case $3 in set) op=set ;; get-one-sided) extra=(--one-sided) ;; esac
	"$kv" bench --server 127.0.0.1:"$1" --op $op "${extra[@]}" --transport "$4" --clients "$5" \
		--value-size "$6" --keys $KEYS --requests "$n" --no-preload --csv |
		awk -F, -v srv="$2" '{ printf "softrnic,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", $1, $2, srv, $3, $4, $6, $7, $8, $9, $10, $11 }' >>"$csv"
}

softrnic_preload() {   # port value
	"$kv" bench --server 127.0.0.1:"$1" --op get --value-size "$2" --keys $KEYS --requests 1 >/dev/null
}

# The floor: the kernel's UDP round trip, busy-polled.
"$build/bench/udp_pingpong" server 18874 -T 10 &
sleep 0.3
"$build/bench/udp_pingpong" client 18874 -s 100 -n 40000 |
	sed -n 's/.*rtt_p50_us=\([0-9.]*\).*rtt_p99_us=\([0-9.]*\).*/udp,pingpong,udp,busy-poll,1,100,40000,,\1,\2,,/p' >>"$csv"

for v in 32 1024 65536; do
	echo "kv_vs_redis: values of $v bytes"
	redis_preload "$v"
	softrnic_preload $BUSY_PORT "$v"
	softrnic_preload $SLEEP_PORT "$v"
	for c in 1 4 16; do
		# Alternate the systems so slow drift of the machine falls on both.
		run_redis get "$c" "$v"
		run_softrnic $BUSY_PORT busy-poll get write "$c" "$v"
		run_softrnic $BUSY_PORT busy-poll get-one-sided write "$c" "$v"
		run_redis set "$c" "$v"
		run_softrnic $BUSY_PORT busy-poll set write "$c" "$v"
		run_softrnic $SLEEP_PORT sleeping get write "$c" "$v"
		run_softrnic $SLEEP_PORT sleeping get-one-sided write "$c" "$v"
		run_softrnic $SLEEP_PORT sleeping set write "$c" "$v"
	done
	# The two transports, one client.
	for port in $BUSY_PORT $SLEEP_PORT; do
		label=busy-poll; [ $port = $SLEEP_PORT ] && label=sleeping
		run_softrnic $port $label get send 1 "$v"
		run_softrnic $port $label set send 1 "$v"
	done
	# SETs left the servers' values as they were (same size, same bytes).
done
/usr/bin/python3 "$here/kv_report.py" "$csv" "$out"
echo "kv_vs_redis: $csv, $out/kv_bench.md, $out/kv_bench.png"
