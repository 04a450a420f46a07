#!/usr/bin/env bash
# partitions.sh — `softrnic sim run` with the fabric in partitions, each on
# its own thread (net.h, "partitions"):
#   - a k=4 fat-tree (16 hosts, 20 switches) under web-search at 50% load
#     for 2 ms, DCQCN and PFC: with 2 and with 4 partitions every flow
#     finishes with no drop, the summary names the partitions and their
#     1 us windows, and the output is a function of the seed and the
#     number of partitions only — byte for byte the same on one thread
#     (--partitions N, one partition after the other) as on N threads,
#     run twice;
#   - it is another sample of the same model, not another model: the
#     median FCT slowdown of each partition count is within a quarter of
#     the one-partition run's, which itself replays as before;
#   - HPCC (INT records riding packets across partitions) on
#     tests/sim/hpcc's leaf-spine: every flow, no drop, no pause, the
#     same on threads as not;
#   - refused with a message: the samplers with partitions, more
#     partitions than SIM_MAX_PARTS, threads and partitions that differ.
# usage: partitions.sh SOFTRNIC
set -euo pipefail
SOFTRNIC=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sim partitions: $*" >&2; exit 1; }

cd "$tmp"
"$SOFTRNIC" sim topo fat-tree 4 >topology.txt
"$SOFTRNIC" sim gen --cdf "$root/data/cdf/websearch.txt" --hosts 16 --load 0.5 --time 0.002 --seed 3 \
	>flow.txt 2>/dev/null
cat >config.txt <<EOF
TOPOLOGY_FILE topology.txt
FLOW_FILE flow.txt
FCT_OUTPUT_FILE fct.txt
SIMULATOR_STOP_TIME 0.05
CC_MODE 1
ENABLE_QCN 1
ENABLE_PFC 1
PACKET_PAYLOAD_SIZE 1000
BUFFER_SIZE 32
KMAX_MAP 1 100000000000 1600
KMIN_MAP 1 100000000000 400
PMAX_MAP 1 100000000000 0.2
EOF
flows=$(head -n1 flow.txt)
[ "$flows" -gt 50 ] || fail "only $flows flows generated"

run() {   # run NAME ARGS...: sim run into NAME, every flow done, no drop
	local name=$1
	shift
	"$SOFTRNIC" sim run config.txt --out "$name" "$@" >/dev/null || fail "$name: sim run $* failed"
	grep -q "^  $flows flows done, 0 failed, 0 unfinished" "$name/summary.txt" ||
		fail "$name: not every flow finished: $(sed -n 2p "$name/summary.txt")"
	grep -q "^  0 drops, " "$name/summary.txt" || fail "$name: drops under PFC"
}
same() {  # same A B: the same output files (the summary's first line
	# says how many threads ran them)
	local f
	for f in fct.txt flows.csv; do
		cmp -s "$1/$f" "$2/$f" || fail "$1 and $2: $f differs"
	done
	cmp -s <(tail -n +2 "$1/summary.txt") <(tail -n +2 "$2/summary.txt") || fail "$1 and $2: summary.txt differs"
}
median_slowdown() {
	awk -F, 'NR > 1 && $9 == 0 { print $8 }' "$1/flows.csv" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

run one
run one-again --threads 1
same one one-again
base=$(median_slowdown one)
for p in 2 4; do
	run "seq$p" --partitions "$p"
	run "thr$p" --threads "$p"
	run "thr$p-again" --threads "$p"
	same "seq$p" "thr$p"
	same "thr$p" "thr$p-again"
	grep -q "; $p partitions on $p threads, windows of 1000 ns;" "thr$p/summary.txt" ||
		fail "thr$p: the summary does not name the partitions: $(head -n1 "thr$p/summary.txt")"
	grep -q "; $p partitions on 1 thread, windows of 1000 ns;" "seq$p/summary.txt" ||
		fail "seq$p: the summary does not name the partitions"
	! cmp -s one/fct.txt "thr$p/fct.txt" || fail "$p partitions gave the one-partition run's FCTs (not partitioned?)"
	m=$(median_slowdown "thr$p")
	awk -v a="$base" -v b="$m" 'BEGIN { exit !(b > 0.75 * a && b < 1.25 * a) }' ||
		fail "$p partitions: median slowdown $m against $base with one"
	echo "sim partitions: $p partitions: median slowdown $m (one partition: $base), $(sed -n 's/.*(\([0-9]*\) events.*/\1/p' "thr$p/summary.txt") events"
done

# HPCC: INT records travel with the packets from partition to partition.
cp "$here/hpcc/topology.txt" "$here/hpcc/flow.txt" .
cp "$here/hpcc/config_hpcc.txt" hpcc.txt
"$SOFTRNIC" sim run hpcc.txt --out hpcc-seq --partitions 2 >/dev/null || fail "hpcc: sim run --partitions 2 failed"
"$SOFTRNIC" sim run hpcc.txt --out hpcc-thr --threads 2 >/dev/null || fail "hpcc: sim run --threads 2 failed"
same hpcc-seq hpcc-thr
grep -q "^  10 flows done, 0 failed, 0 unfinished" hpcc-thr/summary.txt || fail "hpcc: not every flow finished"
grep -q "^  0 drops, 0 pauses, " hpcc-thr/summary.txt || fail "hpcc: drops or pauses in partitions"

# Refusals.
expect_refusal() {   # expect_refusal MESSAGE ARGS...
	local msg=$1 out
	shift
	if out=$("$SOFTRNIC" sim run config.txt --out refused "$@" 2>&1); then fail "sim run $* was not refused"; fi
	grep -q "$msg" <<<"$out" || fail "sim run $*: no '$msg' in: $out"
}
expect_refusal "the samplers (--sample-us) need one" --threads 2 --sample-us 10
expect_refusal "at most 8" --threads 9
expect_refusal "a thread per partition, or one" --threads 2 --partitions 4
echo "sim partitions: ok"
