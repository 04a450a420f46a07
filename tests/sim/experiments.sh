#!/usr/bin/env bash
# experiments.sh — each built experiment of `softrnic sim exp` in its short
# form (--quick): its qualitative result, and the same seed twice giving
# the same files byte for byte.
#   gbn-loss    goodput at 1% loss far below goodput without loss with
#               Go-Back-N, far above it with selective repeat (which
#               resends far fewer packets)
#   incast-pfc  no drops with PFC (and pauses sent), drops without, none
#               without PFC but with IRN's BDP window
#   dcqcn-fairness  with DCQCN: two flows share fairly (Jain >= 0.9) and the
#               queue stays far shorter than without; CNPs were sent
#   ib-credit   in InfiniBand credit mode: no drops, no pauses, no
#               retransmissions, goodput as with PFC
#   pfc-deadlock the ring with cyclic routes deadlocks (every ring port
#               paused, nothing delivered to the end); the watchdog detects
#               it and some traffic moves again; up/down routes never stop
#   pfc-storm   without the watchdog the storming port stays paused; with
#               it the storm is detected and the innocent flows go faster
#   hpcc-workload  the HPCC repository's files (data/hpcc) run unchanged:
#               every flow finishes, no drop under PFC, HPCC's FCT line per
#               flow, fct_analysis.py's 20 buckets; DCQCN's standing queues
#               give the short flows a far worse tail than the long ones
#   sim fct     fct_analysis.py's rule on a small file whose answer is known
# usage: experiments.sh SOFTRNIC
set -euo pipefail
SOFTRNIC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sim experiments: $*" >&2; exit 1; }

for name in gbn-loss incast-pfc dcqcn-fairness pfc-storm ib-credit pfc-deadlock hpcc-workload; do
	"$SOFTRNIC" sim exp "$name" --quick --seed 7 --out "$tmp/$name-a" >/dev/null || fail "$name failed"
	"$SOFTRNIC" sim exp "$name" --quick --seed 7 --out "$tmp/$name-b" >/dev/null || fail "$name failed (2nd)"
	for f in "$tmp/$name-a"/*; do
		cmp -s "$f" "$tmp/$name-b/$(basename "$f")" || fail "$name: $(basename "$f") differs between two runs of seed 7"
	done
	cat "$tmp/$name-a/summary.txt"
done

# gbn-loss.csv: recovery,loss,bytes,fct_ns,goodput_gbps,retransmits,...
awk -F, 'NR > 1 { g[$1 " " $2] = $5; r[$1 " " $2] = $6 } END {
	if (!(g["go-back-n 0"] > 80)) { print "no-loss goodput " g["go-back-n 0"] " Gb/s, expected > 80"; exit 1 }
	if (!(g["go-back-n 0.01"] < g["go-back-n 0"] / 5)) { print "1% loss goodput " g["go-back-n 0.01"] " not far below " g["go-back-n 0"]; exit 1 }
	if (!(g["selective 0.01"] > 4 * g["go-back-n 0.01"])) { print "1% loss: selective repeat " g["selective 0.01"] " not far above Go-Back-N " g["go-back-n 0.01"]; exit 1 }
	if (!(r["selective 0.01"] * 4 < r["go-back-n 0.01"])) { print "1% loss: selective repeat resent " r["selective 0.01"] ", Go-Back-N " r["go-back-n 0.01"]; exit 1 }
}' "$tmp/gbn-loss-a/gbn-loss.csv" || fail "gbn-loss"

# incast-pfc.csv: pfc,senders,bytes_each,done_ns,goodput_gbps,p50,p99,drops,headroom_drops,retransmits,timeouts,pauses_sent,...
# (mode: lossy, lossy-sr (selective repeat), lossy-irn (and a BDP window), pfc or ib)
awk -F, 'NR > 1 { d[$1] = $8 + $9; p[$1] = $12; r[$1] = $10; g[$1] = $5 } END {
	if (d["pfc"] != 0 || r["pfc"] != 0) { print "PFC on: " d["pfc"] " drops, " r["pfc"] " retransmissions"; exit 1 }
	if (!(p["pfc"] > 0)) { print "PFC on: no pause sent"; exit 1 }
	if (!(d["lossy"] > 0)) { print "PFC off: no drops in a 16:1 incast"; exit 1 }
	if (d["lossy-irn"] != 0) { print "PFC off, IRN (selective repeat, BDP window): " d["lossy-irn"] " drops"; exit 1 }
	if (!(g["pfc"] > g["lossy"])) { print "PFC on no faster than off"; exit 1 }
}' "$tmp/incast-pfc-a/incast-pfc.csv" || fail "incast-pfc"
awk -F, 'NR > 1 { d[$1] = $8 + $9; p[$1] = $12; r[$1] = $10; g[$1] = $5 } END {
	if (d["ib"] != 0 || p["ib"] != 0 || r["ib"] != 0) { print "IB credits: " d["ib"] " drops, " p["ib"] " pauses, " r["ib"] " retransmissions"; exit 1 }
	if (!(g["ib"] > 0.9 * g["pfc"])) { print "IB credits: goodput " g["ib"] " against PFC " g["pfc"]; exit 1 }
}' "$tmp/ib-credit-a/ib-credit.csv" || fail "ib-credit"
# dcqcn-fairness-runs.csv: flows,dcqcn,jain,total_gbps,queue_mean_bytes,queue_max_bytes,cnps,...
awk -F, 'NR > 1 { j[$1 "-" $2] = $3; q[$1 "-" $2] = $5; c[$1 "-" $2] = $7 } END {
	if (!(j["2-1"] >= 0.9)) { print "2 flows with DCQCN: Jain " j["2-1"]; exit 1 }
	if (!(c["2-1"] > 0)) { print "no CNP sent"; exit 1 }
	if (!(q["2-1"] < q["2-0"] / 2 && q["4-1"] < q["4-0"] / 2)) { print "DCQCN did not keep the queue short"; exit 1 }
}' "$tmp/dcqcn-fairness-a/dcqcn-fairness-runs.csv" || fail "dcqcn-fairness"

# pfc-storm.csv: watchdog,innocent_before,innocent_after,storm_port_paused,a_to_b_paused,nic_paused,storms,drops,...
awk -F, 'NR > 1 { after[$1] = $3; storm[$1] = $4; det[$1] = $7 } END {
	if (!(storm[0] > 0.9)) { print "without the watchdog the storming port was paused only " storm[0]; exit 1 }
	if (!(det[1] >= 1)) { print "the watchdog detected no storm"; exit 1 }
	if (!(after[1] > 1.3 * after[0])) { print "innocent flows: " after[1] " Gb/s with the watchdog, " after[0] " without"; exit 1 }
}' "$tmp/pfc-storm-a/pfc-storm.csv" || fail "pfc-storm"
# pfc-deadlock.csv: topology,watchdog,first_stall_ns,stalled_ms,cycle_paused,stalled_at_end,bytes_after,storms,drops,pauses,done,failed,flows
awk -F, 'NR > 1 { k = $1 "-" $2; stall[k] = $3; cyc[k] = $5; end[k] = $6; after[k] = $7; st[k] = $8; done[k] = $11; n[k] = $13 } END {
	if (!(cyc["ring-0"] == 1 && end["ring-0"] == 1)) { print "the ring did not deadlock"; exit 1 }
	if (!(st["ring-1"] >= 1 && after["ring-1"] > 0)) { print "the watchdog did not break the deadlock"; exit 1 }
	if (!(stall["leaf-spine-0"] == 0 && done["leaf-spine-0"] == n["leaf-spine-0"])) { print "the leaf-spine stopped"; exit 1 }
}' "$tmp/pfc-deadlock-a/pfc-deadlock.csv" || fail "pfc-deadlock"
# hpcc-workload (--quick: the flow file's first flows): all done, no drop,
# one HPCC FCT line each; fct_analysis.csv: percentile,size,flows,p50,p95,p99
d=$tmp/hpcc-workload-a
n=$(sed -n 's/.*: [0-9]* nodes .* links, \([0-9]*\) flows (the first of.*/\1/p' "$d/summary.txt")
[ -n "$n" ] && [ "$n" -ge 500 ] || fail "hpcc-workload: flows not read from data/hpcc ($n)"
grep -q "^  $n flows done, 0 failed, 0 unfinished" "$d/summary.txt" || fail "hpcc-workload: not every flow finished"
grep -q '^  0 drops, ' "$d/summary.txt" || fail "hpcc-workload: drops under PFC"
[ "$(grep -cE '^[0-9a-f]{8} [0-9a-f]{8} [0-9]+ 100 [0-9]+ [0-9]+ [0-9]+ [0-9]+$' "$d/fct_fat_websearch_l30_t50ms_dcqcn.txt")" = "$n" ] ||
	fail "hpcc-workload: not one FCT line per flow"
awk -F, -v n="$n" 'NR > 1 { k++; flows += $3
	if ($2 < last || $4 < 1 || $5 < $4 || $6 < $5) bad++
	last = $2; if (k <= 4) short += $5 / 4; if (k == 20) long = $5 }
	END {
	if (k != 20 || flows != n || bad) { print k " buckets of " flows " flows (" n " ran), " bad " out of order"; exit 1 }
	if (!(short > 1.5 * long)) { print "p95 slowdown of the shortest 20% " short ", of the longest 5% " long; exit 1 }
}' "$d/fct_analysis.csv" || fail "hpcc-workload: fct_analysis.csv"
# The same numbers from the FCT file by sim fct, in fct_analysis.py's lines.
"$SOFTRNIC" sim fct "$d/fct_fat_websearch_l30_t50ms_dcqcn.txt" >"$tmp/fct.out" || fail "sim fct"
awk -F, 'NR > 1 { printf "%.3f %d\t%.3f %.3f %.3f\n", $1, $2, $4, $5, $6 }' "$d/fct_analysis.csv" |
	cmp -s - "$tmp/fct.out" || fail "sim fct: its lines differ from fct_analysis.csv"
# sim fct by hand: ten dport-100 flows of sizes 1..10 with slowdowns 1..10
# in reverse (size 1 has 10), one below 1 (raised to 1), one incast flow
# (dport 200) and one that ends after 3 s, both left out; step 50: the
# buckets hold sizes 1-5 (slowdowns 10..6: p50 8) and 6-11 (5..1 and 1:
# p50 is the 4th of 1 1 2 3 4 5, 3).
{
	for i in 1 2 3 4 5 6 7 8 9 10; do echo "0b000001 0b000101 1 100 $i 2000000000 $((1000 * (11 - i))) 1000"; done
	echo "0b000001 0b000101 1 100 11 2000000000 500 1000"
	echo "0b000001 0b000101 1 200 12 2000000000 90000 1000"
	echo "0b000001 0b000101 1 100 13 2999999000 90000 1000"
} >"$tmp/hand.fct"
printf '0.000 5\t8.000 10.000 10.000\n0.500 11\t3.000 5.000 5.000\n' >"$tmp/hand.want"
"$SOFTRNIC" sim fct "$tmp/hand.fct" --step 50 | cmp -s - "$tmp/hand.want" || fail "sim fct: the hand-made file"

# sim run: a run described in the HPCC simulator's file formats (our own
# small leaf-spine in tests/sim/hpcc): twice the same files, one FCT line
# per flow in HPCC's format, the keys it does not use named, and a
# congestion control it does not model refused.
here=$(cd "$(dirname "$0")" && pwd)
"$SOFTRNIC" sim run "$here/hpcc/config.txt" --out "$tmp/run-a" >/dev/null || fail "sim run failed"
"$SOFTRNIC" sim run "$here/hpcc/config.txt" --out "$tmp/run-b" >/dev/null || fail "sim run failed (2nd)"
for f in fct.txt flows.csv summary.txt; do
	cmp -s "$tmp/run-a/$f" "$tmp/run-b/$f" || fail "sim run: $f differs between two runs"
done
[ "$(grep -cE '^[0-9a-f]{8} [0-9a-f]{8} [0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9]+$' "$tmp/run-a/fct.txt")" = 10 ] ||
	fail "sim run: fct.txt has not 10 lines of HPCC's format"
grep -q '^0b000401 0b000001 10000 100 2000000 1000000 ' "$tmp/run-a/fct.txt" || fail "sim run: the first flow's line"
grep -q 'not used by this model: .*QLEN_MON_FILE' "$tmp/run-a/summary.txt" || fail "sim run: unused keys not named"
# The per-port outputs: pauses per paused port, queues every 10 us.
"$SOFTRNIC" sim run "$here/hpcc/config.txt" --out "$tmp/run-q" --sample-us 10 >/dev/null || fail "sim run --sample-us"
cmp -s "$tmp/run-a/fct.txt" "$tmp/run-q/fct.txt" || fail "sim run: sampling changed the run"
[ "$(head -1 "$tmp/run-q/queues.csv")" = "t_us,node,port,queue_bytes,paused" ] && [ "$(wc -l <"$tmp/run-q/queues.csv")" -gt 10 ] ||
	fail "sim run: queues.csv"
awk -F, 'NR > 1 { p += $4 } END { exit !(p > 0) }' "$tmp/run-q/pfc.csv" || fail "sim run: pfc.csv has no pause"
# The traces' bound: 2 KB stops them early, says so, changes nothing else.
"$SOFTRNIC" sim run "$here/hpcc/config.txt" --out "$tmp/run-l" --sample-us 10 --trace-limit-mb 0.002 >/dev/null ||
	fail "sim run --trace-limit-mb"
bytes=$(cat "$tmp/run-l/queues.csv" "$tmp/run-l/throughput.csv" | wc -c)
full=$(cat "$tmp/run-q/queues.csv" "$tmp/run-q/throughput.csv" | wc -c)
[ "$bytes" -ge 2097 ] && [ "$bytes" -lt $((2097 + 3000)) ] && [ "$full" -gt $((bytes * 2)) ] ||
	fail "sim run --trace-limit-mb 0.002: traces of $bytes bytes (unbounded: $full)"
grep -q "queues.csv and throughput.csv stop at .* ms: they reached 0.002 MB" "$tmp/run-l/summary.txt" ||
	fail "sim run --trace-limit-mb: the summary does not say the traces were cut"
cmp -s "$tmp/run-a/fct.txt" "$tmp/run-l/fct.txt" || fail "sim run: the trace bound changed the run"
sed 's/^CC_MODE 1/CC_MODE 12/' "$here/hpcc/config.txt" >"$tmp/hpcc.txt"
cp "$here/hpcc/topology.txt" "$here/hpcc/flow.txt" "$tmp/"
rc=0; "$SOFTRNIC" sim run "$tmp/hpcc.txt" --out "$tmp/run-c" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "CC_MODE 12: modelled here are" "$tmp/err" || fail "sim run: CC_MODE 12 not refused (exit $rc)"
# A host with two links (a multi-NIC host) is refused by name.
printf '4 2 4\n2 3\n0 2 100Gbps 0.001ms 0\n0 3 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n1 3 100Gbps 0.001ms 0\n' >"$tmp/mnic.txt"
sed "s|^TOPOLOGY_FILE .*|TOPOLOGY_FILE $tmp/mnic.txt|" "$here/hpcc/config.txt" >"$tmp/mnic-config.txt"
rc=0; "$SOFTRNIC" sim run "$tmp/mnic-config.txt" --out "$tmp/run-m" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "host 0 has 2 links; a host here has one NIC port" "$tmp/err" ||
	fail "sim run: a two-NIC host not refused by name (exit $rc: $(cat "$tmp/err"))"
cat "$tmp/run-a/summary.txt"

# sim topo / sim gen: a k=4 fat-tree (16 hosts, 20 switches, 48 links) and
# a web-search workload, the same for the same seed, run through sim run.
root=$(cd "$here/../.." && pwd)
mkdir -p "$tmp/ft"
"$SOFTRNIC" sim topo fat-tree 4 >"$tmp/ft/topology.txt" || fail "sim topo"
[ "$(head -1 "$tmp/ft/topology.txt")" = "36 20 48" ] || fail "fat-tree 4: header $(head -1 "$tmp/ft/topology.txt")"
[ "$(wc -l <"$tmp/ft/topology.txt")" = 50 ] || fail "fat-tree 4: not 48 links"
for i in 1 2; do
	"$SOFTRNIC" sim gen --cdf "$root/data/cdf/websearch.txt" --hosts 16 --load 0.3 --time 0.002 --seed 5 \
		>"$tmp/ft/flow$i.txt" 2>"$tmp/ft/gen.log" || fail "sim gen"
done
cmp -s "$tmp/ft/flow1.txt" "$tmp/ft/flow2.txt" || fail "sim gen: two runs of one seed differ"
awk 'NR == 1 { n = $1; next } { if ($1 == $2 || $1 >= 16 || $2 >= 16) bad++; c++ } END {
	if (bad || c != n || n < 10) { print "sim gen: " c " flows for " n " announced, " bad " bad"; exit 1 } }' \
	"$tmp/ft/flow1.txt" || fail "sim gen: flow file"
cp "$tmp/ft/flow1.txt" "$tmp/ft/flow.txt"
sed -e 's/^TOPOLOGY_FILE .*/TOPOLOGY_FILE topology.txt/; s/^SIMULATOR_STOP_TIME .*/SIMULATOR_STOP_TIME 0.05/' \
	"$here/hpcc/config.txt" >"$tmp/ft/config.txt"
(cd "$tmp/ft" && "$SOFTRNIC" sim run config.txt --out out >/dev/null) || fail "sim run on the fat-tree"
grep -q " 0 failed, 0 unfinished" "$tmp/ft/out/summary.txt" || { cat "$tmp/ft/out/summary.txt" >&2; fail "fat-tree flows"; }

# sim topo leaf-spine and dumbbell, and sim run's time series: three flows
# across a dumbbell's 25 Gb/s bottleneck, sampled every 100 us.
"$SOFTRNIC" sim topo leaf-spine 2 2 4 >"$tmp/ls.txt" || fail "sim topo leaf-spine"
[ "$(head -1 "$tmp/ls.txt")" = "12 4 12" ] && [ "$(wc -l <"$tmp/ls.txt")" = 14 ] ||
	fail "leaf-spine 2 2 4: header $(head -1 "$tmp/ls.txt"), $(wc -l <"$tmp/ls.txt") lines"
"$SOFTRNIC" sim topo ring 3 >/dev/null 2>&1 && fail "sim topo ring: an unknown topology accepted"
mkdir -p "$tmp/db"
"$SOFTRNIC" sim topo dumbbell 3 --core-rate 25Gbps >"$tmp/db/topology.txt" || fail "sim topo dumbbell"
[ "$(head -1 "$tmp/db/topology.txt")" = "8 2 7" ] || fail "dumbbell 3: header $(head -1 "$tmp/db/topology.txt")"
printf '3\n0 3 3 100 4000000 0.001\n1 4 3 100 4000000 0.001\n2 5 3 100 4000000 0.001\n' >"$tmp/db/flow.txt"
sed -e 's/^TOPOLOGY_FILE .*/TOPOLOGY_FILE topology.txt/; s/^SIMULATOR_STOP_TIME .*/SIMULATOR_STOP_TIME 0.05/' \
	"$here/hpcc/config.txt" >"$tmp/db/config.txt"
(cd "$tmp/db" && "$SOFTRNIC" sim run config.txt --out out --sample-us 100 >/dev/null) || fail "sim run on the dumbbell"
grep -q " 0 failed, 0 unfinished" "$tmp/db/out/summary.txt" || { cat "$tmp/db/out/summary.txt" >&2; fail "dumbbell flows"; }
# Every flow shows up; together they never beat the bottleneck (a sample
# may hold one packet more than its 100 us) and at their peak fill it.
awk -F, 'NR > 1 { seen[$2] = 1; sum[$1] += $3 } END {
	n = 0; for (f in seen) n++
	max = 0; for (t in sum) if (sum[t] > max) max = sum[t]
	if (n != 3) { print "throughput.csv: " n " flows, expected 3"; exit 1 }
	if (max > 26 || max < 20) { print "throughput.csv: the flows together peak at " max " Gb/s, bottleneck 25"; exit 1 }
}' "$tmp/db/out/throughput.csv" || fail "dumbbell throughput series"

# ROUTE_FILE (tests/sim/ring: three switches in a ring, one host each,
# two flows from each host to the host two switches on, routed the long
# way round): the cyclic buffer dependency of pfc-deadlock, built from
# files, deadlocks under PFC (pauses, no flow finishes: each fails once
# its retries run out); without the routes (one hop the short way) every
# flow finishes.  And a route to a switch that is not a neighbour is
# refused.
(cd "$here/ring" && "$SOFTRNIC" sim run config.txt --out "$tmp/ring-with" >/dev/null) || fail "sim run with ROUTE_FILE"
grep -v '^ROUTE_FILE' "$here/ring/config.txt" >"$tmp/ring-config.txt"
sed -i "s|^TOPOLOGY_FILE .*|TOPOLOGY_FILE $here/ring/topology.txt|; s|^FLOW_FILE .*|FLOW_FILE $here/ring/flow.txt|" "$tmp/ring-config.txt"
"$SOFTRNIC" sim run "$tmp/ring-config.txt" --out "$tmp/ring-without" >/dev/null || fail "sim run without ROUTE_FILE"
grep -q "^  0 flows done" "$tmp/ring-with/summary.txt" && ! grep -q " 0 pauses" "$tmp/ring-with/summary.txt" ||
	{ cat "$tmp/ring-with/summary.txt" >&2; fail "ROUTE_FILE: the ring routed the long way round did not deadlock"; }
grep -q " 0 failed, 0 unfinished" "$tmp/ring-without/summary.txt" ||
	{ cat "$tmp/ring-without/summary.txt" >&2; fail "ring without ROUTE_FILE: flows"; }
printf '1\n3 2 3\n' >"$tmp/bad-routes.txt"
sed "s|^ROUTE_FILE .*|ROUTE_FILE $tmp/bad-routes.txt|; s|^TOPOLOGY_FILE .*|TOPOLOGY_FILE $here/ring/topology.txt|; s|^FLOW_FILE .*|FLOW_FILE $here/ring/flow.txt|" \
	"$here/ring/config.txt" >"$tmp/bad-config.txt"
rc=0; "$SOFTRNIC" sim run "$tmp/bad-config.txt" --out "$tmp/bad" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "route line 1" "$tmp/err" || fail "ROUTE_FILE: a route to a non-neighbour not refused (exit $rc)"
echo "sim experiments: ok"
