#!/usr/bin/env bash
# cc_modes.sh — `softrnic sim run` with the HPCC simulator's config for
# each congestion control softrnic models beside DCQCN (tests/sim/hpcc:
# config_hpcc.txt CC_MODE 3, config_timely.txt CC_MODE 7, config_dctcp.txt
# CC_MODE 8, config_pint.txt CC_MODE 10, with the values HPCC's run.py
# writes for them at 100 Gb/s):
#   - on tests/sim/hpcc's leaf-spine (a 4:1 incast and six other flows)
#     each run finishes every flow with one FCT line per flow in HPCC's
#     format and sane slowdowns, names its algorithm, and replays byte
#     for byte; DCTCP's receivers echo every ECN mark (one CNP per CE
#     packet); HPCC keeps the incast's queue below PFC's threshold;
#   - convergence: 2 and 4 flows through a dumbbell's 25 Gb/s bottleneck
#     (sim topo dumbbell) share it fairly (Jain's index >= 0.95 over the
#     middle of the run, from throughput.csv) and fill it, with no drop;
#   - HPCC-PINT samples a quarter of its ACKs with PINT_PROB 0.25 and
#     still finishes every flow, on other FCTs than with every ACK;
#   - a mode not modelled (11) is refused.
# usage: cc_modes.sh SOFTRNIC
set -euo pipefail
SOFTRNIC=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")   # absolute: runs cd below
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sim cc modes: $*" >&2; exit 1; }

for mode in hpcc:3:HPCC timely:7:TIMELY dctcp:8:DCTCP pint:10:HPCC-PINT; do
	IFS=: read -r name num algo <<<"$mode"
	cfg=$here/hpcc/config_$name.txt
	grep -q "^CC_MODE $num\$" "$cfg" || fail "$cfg: not CC_MODE $num"
	"$SOFTRNIC" sim run "$cfg" --out "$tmp/$name-a" >/dev/null || fail "$name: sim run failed"
	"$SOFTRNIC" sim run "$cfg" --out "$tmp/$name-b" >/dev/null || fail "$name: sim run failed (2nd)"
	for f in fct.txt flows.csv summary.txt; do
		cmp -s "$tmp/$name-a/$f" "$tmp/$name-b/$f" || fail "$name: $f differs between two runs"
	done
	s=$tmp/$name-a/summary.txt
	cat "$s"
	grep -q "; $algo, window [0-9]* bytes;" "$s" || fail "$name: the summary does not name $algo"
	grep -q "^  10 flows done, 0 failed, 0 unfinished" "$s" || fail "$name: not every flow finished"
	grep -q "^  0 drops, " "$s" || fail "$name: drops under PFC"
	[ "$(grep -cE '^[0-9a-f]{8} [0-9a-f]{8} [0-9]+ 100 [0-9]+ [0-9]+ [0-9]+ [0-9]+$' "$tmp/$name-a/fct.txt")" = 10 ] ||
		fail "$name: fct.txt has not 10 lines of HPCC's format"
	# fct_ns against the standalone time HPCC's way: never much below
	# it, and no flow 30 times slower than alone (a 4:1 incast is 4).
	awk '{ r = $7 / $8; if (r < 0.9 || r > 30) { print "flow " NR ": fct " $7 " ns, alone " $8 " ns"; bad++ } }
		END { exit bad > 0 }' "$tmp/$name-a/fct.txt" || fail "$name: FCT out of range"
done
# DCTCP runs with a window (HAS_WIN 1: the path's BDP, 104 550 bytes on
# this topology's 100 Gb/s, 1 us links) and echoes every mark.
grep -q "; DCTCP, window 104550 bytes;" "$tmp/dctcp-a/summary.txt" || fail "dctcp: window not the topology's BDP"
grep -q "; TIMELY, window 0 bytes;" "$tmp/timely-a/summary.txt" || fail "timely: HAS_WIN 0 not honoured"
sed -n 's/^  [0-9]* drops, [0-9]* pauses, \([0-9]*\) ECN marks, \([0-9]*\) CNPs.*/\1 \2/p' "$tmp/dctcp-a/summary.txt" |
	awk '{ if (!($1 > 0 && $1 == $2)) { print "ECN marks " $1 ", CNPs " $2; exit 1 } }' ||
	fail "dctcp: not one echo per mark"
grep -q "; HPCC, window 104550 bytes;" "$tmp/hpcc-a/summary.txt" || fail "hpcc: window not the topology's BDP"
grep -q "^  0 drops, 0 pauses, " "$tmp/hpcc-a/summary.txt" || fail "hpcc: the incast reached PFC"
grep -q "; HPCC-PINT, window 104550 bytes;" "$tmp/pint-a/summary.txt" || fail "pint: window not the topology's BDP"
grep -q "^  0 drops, 0 pauses, " "$tmp/pint-a/summary.txt" || fail "pint: the incast reached PFC"
! cmp -s "$tmp/pint-a/fct.txt" "$tmp/hpcc-a/fct.txt" || fail "HPCC-PINT's FCTs are HPCC's"
sed 's/^PINT_PROB .*/PINT_PROB 0.25/' "$here/hpcc/config_pint.txt" >"$tmp/pint-q.txt"
cp "$here/hpcc/topology.txt" "$here/hpcc/flow.txt" "$tmp/"
"$SOFTRNIC" sim run "$tmp/pint-q.txt" --out "$tmp/pint-q" >/dev/null || fail "pint, PINT_PROB 0.25: sim run failed"
grep -q "^  10 flows done, 0 failed, 0 unfinished" "$tmp/pint-q/summary.txt" &&
	grep -q "^  0 drops, " "$tmp/pint-q/summary.txt" || fail "pint, PINT_PROB 0.25: flows or drops"
! cmp -s "$tmp/pint-q/fct.txt" "$tmp/pint-a/fct.txt" || fail "pint: PINT_PROB 0.25 changed nothing"
# HPCC reacts to INT, not to marks: with ENABLE_QCN 0 (no ECN marking;
# the run above marked nothing either) every flow ends exactly when it
# did with ECN on.
sed 's/^ENABLE_QCN 1/ENABLE_QCN 0/' "$here/hpcc/config_hpcc.txt" >"$tmp/hpcc-noecn.txt"
cp "$here/hpcc/topology.txt" "$here/hpcc/flow.txt" "$tmp/"
"$SOFTRNIC" sim run "$tmp/hpcc-noecn.txt" --out "$tmp/hpcc-noecn" >/dev/null || fail "hpcc without ECN: sim run failed"
cmp -s "$tmp/hpcc-noecn/fct.txt" "$tmp/hpcc-a/fct.txt" || fail "hpcc without ECN: not the same run (does HPCC still react?)"
# The same flows with DCQCN (tests/sim/hpcc/config.txt) do not give the
# same FCT file: the algorithm really changed.
"$SOFTRNIC" sim run "$here/hpcc/config.txt" --out "$tmp/dcqcn" >/dev/null || fail "dcqcn: sim run failed"
! cmp -s "$tmp/dcqcn/fct.txt" "$tmp/dctcp-a/fct.txt" || fail "DCTCP's FCTs are DCQCN's"
! cmp -s "$tmp/dcqcn/fct.txt" "$tmp/timely-a/fct.txt" || fail "TIMELY's FCTs are DCQCN's"
! cmp -s "$tmp/dcqcn/fct.txt" "$tmp/hpcc-a/fct.txt" || fail "HPCC's FCTs are DCQCN's"

# Convergence on a dumbbell: N flows of 4 MB from 1 ms, 25 Gb/s core;
# every flow's mean Gb/s from 1.5 ms to 4 ms (all still running).
# HPCC-PINT's feedback is a sample (one encoded U per packet, rounded at
# random), so over a few milliseconds its shares wander: with 4 flows,
# Jain's index over 1.5-4 ms spread from 0.89 to 0.99 across seeds.  It
# is judged on 16 MB flows over 1.5-16 ms, where 16 runs (8 seeds, two
# orderings of the engine's ties) gave 0.957 to 0.998.
mkdir -p "$tmp/db"
for nf in 2 4; do
	"$SOFTRNIC" sim topo dumbbell $nf --core-rate 25Gbps >"$tmp/db/topology$nf.txt" || fail "sim topo dumbbell $nf"
	for name in hpcc timely dctcp pint; do
		size=4000000 until_us=4000
		[ $name = pint ] && size=16000000 until_us=16000
		{ echo $nf; for ((i = 0; i < nf; i++)); do echo "$i $nf 3 100 $size 0.001"; done; } >"$tmp/db/flow$name$nf.txt"
		sed -e "s|^TOPOLOGY_FILE .*|TOPOLOGY_FILE topology$nf.txt|; s|^FLOW_FILE .*|FLOW_FILE flow$name$nf.txt|" \
			-e 's/^SIMULATOR_STOP_TIME .*/SIMULATOR_STOP_TIME 0.05/' "$here/hpcc/config_$name.txt" >"$tmp/db/$name$nf.txt"
		(cd "$tmp/db" && "$SOFTRNIC" sim run $name$nf.txt --out $name$nf --sample-us 100 >/dev/null) ||
			fail "$name, $nf flows on the dumbbell: sim run failed"
		grep -q "^  $nf flows done, 0 failed, 0 unfinished" "$tmp/db/$name$nf/summary.txt" &&
			grep -q "^  0 drops, " "$tmp/db/$name$nf/summary.txt" ||
			{ cat "$tmp/db/$name$nf/summary.txt" >&2; fail "$name, $nf flows on the dumbbell: flows or drops"; }
		awk -F, -v n=$nf -v name=$name -v until_us=$until_us 'NR > 1 && $1 >= 1500 && $1 < until_us { b[$2] += $3; k[$1] = 1 } END {
			t = 0; for (x in k) t++
			s = 0; q = 0; m = 0
			for (f in b) { g = b[f] / t; s += g; q += g * g; m++; printf " %.2f", g }
			j = m ? s * s / (m * q) : 0
			printf " Gb/s: %s, %d flows, Jain %.3f, total %.1f Gb/s\n", name, n, j, s
			if (m != n || j < 0.95 || s < 20) exit 1
		}' "$tmp/db/$name$nf/throughput.csv" || fail "$name, $nf flows on the dumbbell: not fair or not full"
	done
done
# A mode not modelled is refused with exit 2 and a message.
sed 's/^CC_MODE 3/CC_MODE 11/' "$here/hpcc/config_hpcc.txt" >"$tmp/mode11.txt"
rc=0; "$SOFTRNIC" sim run "$tmp/mode11.txt" --out "$tmp/mode11" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "CC_MODE 11: modelled here are" "$tmp/err" || fail "CC_MODE 11 not refused (exit $rc)"
echo "sim cc modes: ok"
