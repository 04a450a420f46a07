#!/usr/bin/env bash
# nvmf_compare.sh — softrnic's NVMe-oF target and host (softrnic-nvmf)
# on one host, beside what bounds them, in one run on this machine.  A
# benchmark: it measures and prints, it does not pass or fail.
#
#   bench/nvmf_compare.sh [BUILD_DIR] [--runs N] [--time SECONDS]   (default: build, 3, 5)
#
# Interleaved rounds, medians:
#   softrnic-nvmf serve (a 256 MiB file of 4 KiB blocks, page cache as the
#     target reads and writes it) and softrnic-nvmf perf over the host-local
#     path: 4 KiB random reads at queue depth 1 and 32, 128 KiB sequential
#     reads and writes at depth 8 (IOPS, MiB/s, p50/p99 latency);
#   fio with io_uring on the same file, buffered as the target's I/O is,
#     the same four patterns (what the storage under the target can do);
#   perftest over the same path, the messages one 4 KiB read costs (the
#     command SEND, the data's 4 KiB RDMA WRITE, the response SEND):
#     ib_write_bw -s 4096 and ib_send_bw -s 64 message rates, combined as
#     1 / (1/write + 2/send); ib_send_lat -s 64 (round trip) and
#     ib_write_lat -s 4096 (one way).
# Then the goals as ratios from this run: 4 KiB QD32 random-read IOPS at
# least half the combined perftest rate; QD1 p50 latency within 1.5 x one
# perftest round trip plus the 4 KiB write.
set -uo pipefail
. "$(dirname "$0")/common.sh"
build=${1:-build}
runs=3 secs=5
shift || true
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift ;;
	--time) secs=$2; shift ;;
	*) echo "usage: $0 [BUILD_DIR] [--runs N] [--time SECONDS]" >&2; exit 2 ;;
	esac
	shift
done
nvmf=$build/bin/softrnic-nvmf
[ -x "$nvmf" ] || { echo "nvmf_compare: no $nvmf (build first)" >&2; exit 1; }
export LD_LIBRARY_PATH=$build/lib
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/nvmf_compare.XXXXXX")
trap 'bench_stop_jobs; rm -rf "$tmp"' EXIT
file=$tmp/ns.img
nqn=nqn.2026-12.io.softrnic:bench
port=14600

# The target, once for the whole run (its file stays in the page cache).
truncate -s 256M "$file"
dd if=/dev/urandom of="$file" bs=1M count=256 conv=notrunc status=none
"$nvmf" serve --nqn "$nqn" --file "$file" --block-size 4096 --addr 127.0.0.1 --port 4420 > "$tmp/serve.log" 2>&1 &
for _ in $(seq 100); do grep -q serving "$tmp/serve.log" && break; sleep 0.1; done
grep -q serving "$tmp/serve.log" || { cat "$tmp/serve.log"; exit 1; }

# perf RW BS QD: one softrnic-nvmf perf run; prints "iops mibs p50_us p99_us"
perf() {
	"$nvmf" perf --nqn "$nqn" --rw "$1" --bs "$2" --qd "$3" --time "$secs" --span 256M 2>&1 |
		sed -n 's/.* iops=\([0-9.]*\) bw=\([0-9.]*\)MiB\/s lat_p50=\([0-9.]*\)us lat_p99=\([0-9.]*\)us.*/\1 \2 \3 \4/p' | tail -n1
}
# fio_run RW BS QD: the same pattern with fio's io_uring on the file.
fio_run() {
	env -u LD_LIBRARY_PATH fio --name=b --filename="$file" --ioengine=io_uring --rw="$1" --bs="$2" --iodepth="$3" \
		--size=256M --runtime="$secs" --time_based --output-format=json 2>/dev/null |
		python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
s = j["read"] if j["read"]["io_bytes"] else j["write"]
p = s["clat_ns"].get("percentile", {})
print("%.0f %.1f %.1f %.1f" % (s["iops"], s["bw_bytes"] / 1048576, p.get("50.000000", 0) / 1e3, p.get("99.000000", 0) / 1e3))'
}
# pt PROGRAM ARGS...: one perftest pair; prints its figure (message rate
# in Mpps for _bw, t_typical in µs for _lat)
pt() {
	local prog=$1
	shift
	timeout 60 "$prog" -p $port "$@" > /dev/null 2>&1 &
	local s=$!
	bench_wait_listen $port
	timeout 60 "$prog" -p $port "$@" 127.0.0.1 > "$tmp/pt" 2>&1
	wait $s
	port=$((port + 1))
	case $prog in
	*_lat) awk '/^ *[0-9]+ +[0-9]+ / { print $5; exit }' "$tmp/pt" ;;
	*) awk '/^ *[0-9]+ +[0-9]+ / { print $5; exit }' "$tmp/pt" ;;
	esac
}

declare -A res
patterns=("randread 4096 1" "randread 4096 32" "read 131072 8" "write 131072 8")
for r in $(seq "$runs"); do
	for p in "${patterns[@]}"; do
		read -r rw bs qd <<<"$p"
		key="$rw.$bs.$qd"
		read -r a b c d <<<"$(perf "$rw" "$bs" "$qd")"
		res[nv.$key.iops]+="$a " res[nv.$key.mibs]+="$b " res[nv.$key.p50]+="$c " res[nv.$key.p99]+="$d "
		read -r a b c d <<<"$(fio_run "$rw" "$bs" "$qd")"
		res[fio.$key.iops]+="$a " res[fio.$key.mibs]+="$b " res[fio.$key.p50]+="$c " res[fio.$key.p99]+="$d "
	done
	res[w4k]+="$(pt ib_write_bw -s 4096 -n 100000) "
	res[s64]+="$(pt ib_send_bw -s 64 -n 200000) "
	res[slat]+="$(pt ib_send_lat -s 64 -n 20000) "
	res[wlat]+="$(pt ib_write_lat -s 4096 -n 20000) "
done

m() { tr ' ' '\n' <<<"${res[$1]:-}" | grep . | bench_median; }
printf '%s\n' "softrnic NVMe-oF over the host-local path, medians of $runs interleaved rounds of ${secs} s; $(nproc) CPUs, $(uname -r); $(date -u +%FT%RZ)"
printf '| pattern | softrnic-nvmf IOPS | MiB/s | p50 / p99 µs | fio io_uring on the file: IOPS | MiB/s | p50 / p99 µs |\n|---|---|---|---|---|---|---|\n'
for p in "${patterns[@]}"; do
	read -r rw bs qd <<<"$p"
	key="$rw.$bs.$qd"
	printf '| %s %s KiB qd %s | %s | %s | %s / %s | %s | %s | %s / %s |\n' "$rw" "$((bs / 1024))" "$qd" \
		"$(m nv.$key.iops)" "$(m nv.$key.mibs)" "$(m nv.$key.p50)" "$(m nv.$key.p99)" \
		"$(m fio.$key.iops)" "$(m fio.$key.mibs)" "$(m fio.$key.p50)" "$(m fio.$key.p99)"
done
w=$(m w4k) s=$(m s64) sl=$(m slat) wl=$(m wlat)
printf '\n| perftest, same path | median |\n|---|---|\n'
printf '| ib_write_bw 4 KiB (Mpps) | %s |\n| ib_send_bw 64 B (Mpps) | %s |\n| ib_send_lat 64 B t_typical (µs, half a round trip) | %s |\n| ib_write_lat 4 KiB t_typical (µs) | %s |\n' "$w" "$s" "$sl" "$wl"
q32=$(m nv.randread.4096.32.iops) p1=$(m nv.randread.4096.1.p50)
printf '\ngoals (ratios from this run):\n'
awk -v w="$w" -v s="$s" -v sl="$sl" -v wl="$wl" -v q="$q32" -v p="$p1" '
function verdict(ok) { return ok ? "met" : "not met" }
BEGIN {
	if (w > 0 && s > 0) {
		rate = 1e6 / (1 / w + 2 / s)
		printf "  4 KiB QD32 random reads %s IOPS = %.2f x the perftest rate of their messages %.0f /s (goal >= 0.5): %s\n", q, q / rate, rate, verdict(q >= 0.5 * rate)
	}
	if (sl > 0 && wl > 0) {
		bound = 2 * sl + wl
		printf "  4 KiB QD1 p50 %s us = %.2f x one perftest round trip + the 4 KiB write, %.2f us (goal <= 1.5): %s\n", p, p / bound, bound, verdict(p <= 1.5 * bound)
	}
}'
