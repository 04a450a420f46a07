#!/usr/bin/env bash
# cc_modes.sh — `softrnic sim run` with the HPCC simulator's config for
# each congestion control softrnic models beside DCQCN (tests/sim/hpcc:
# config_timely.txt CC_MODE 7, config_dctcp.txt CC_MODE 8, with the values
# HPCC's run.py writes for them at 100 Gb/s): each run finishes every flow
# with one FCT line per flow in HPCC's format and sane slowdowns, names
# its algorithm, and replays byte for byte; DCTCP's receivers echo every
# ECN mark (one CNP per CE packet); an unknown CC_MODE is refused.
# usage: cc_modes.sh SOFTRNIC
set -euo pipefail
SOFTRNIC=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sim cc modes: $*" >&2; exit 1; }

for mode in timely:7:TIMELY dctcp:8:DCTCP; do
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
# The same flows with DCQCN (tests/sim/hpcc/config.txt) do not give the
# same FCT file: the algorithm really changed.
"$SOFTRNIC" sim run "$here/hpcc/config.txt" --out "$tmp/dcqcn" >/dev/null || fail "dcqcn: sim run failed"
! cmp -s "$tmp/dcqcn/fct.txt" "$tmp/dctcp-a/fct.txt" || fail "DCTCP's FCTs are DCQCN's"
! cmp -s "$tmp/dcqcn/fct.txt" "$tmp/timely-a/fct.txt" || fail "TIMELY's FCTs are DCQCN's"
# A mode not modelled is refused with exit 2 and a message.
sed 's/^CC_MODE 8/CC_MODE 10/' "$here/hpcc/config_dctcp.txt" >"$tmp/pint.txt"
cp "$here/hpcc/topology.txt" "$here/hpcc/flow.txt" "$tmp/"
rc=0; "$SOFTRNIC" sim run "$tmp/pint.txt" --out "$tmp/pint" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "CC_MODE 10: .* not" "$tmp/err" || fail "CC_MODE 10 not refused (exit $rc)"
echo "sim cc modes: ok"
