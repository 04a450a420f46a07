#!/usr/bin/env bash
# sim_ab.sh — two builds of softrnic's simulator against each other, side
# by side: in each round build A runs `sim run` on core 0 while build B
# runs the same config on core 1, then the cores are swapped, so both
# share the machine's noise and its last-level cache alike.  A benchmark,
# not a test: it reports, it does not pass or fail.
#
#   bench/sim_ab.sh BUILD_A BUILD_B DIR [--rounds N] [--stop SECONDS]
#
# DIR is the output folder of a bench/sim_speed.sh run (its topology.txt,
# flow.txt and config.txt; e.g. `SIM_K=16 SIM_NS3=0 bash
# bench/sim_speed.sh build --out /tmp/k16`).  --stop replaces the
# config's SIMULATOR_STOP_TIME (a 2 ms slice of the k=16 run: --stop
# 0.002).  Default: 1 round (two runs of each build).  Prints each run's
# CPU seconds (user), the sums and A/B, and whether the two builds wrote
# the same FCT file (they must, if a change keeps the order of events).
# One build is e.g. a worktree of the base commit:
#   git worktree add /tmp/base HEAD~1 && (cd /tmp/base && scripts/build.sh)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/common.sh
. "$here/common.sh"

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

[ $# -ge 3 ] || usage
a=$(cd "$1" && pwd)/bin/softrnic b=$(cd "$2" && pwd)/bin/softrnic dir=$(cd "$3" && pwd)
shift 3
rounds=1 stop=
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift ;;
	--stop) stop=$2; shift ;;
	*) usage ;;
	esac
	shift
done
for x in "$a" "$b"; do [ -x "$x" ] || { echo "sim_ab: no $x" >&2; exit 2; }; done
for f in topology.txt flow.txt config.txt; do
	[ -f "$dir/$f" ] || { echo "sim_ab: no $dir/$f (a bench/sim_speed.sh output folder)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/sim_ab.XXXXXX)
trap bench_stop_jobs EXIT
ln -s "$dir/topology.txt" "$work/topology.txt"
ln -s "$dir/flow.txt" "$work/flow.txt"
if [ -n "$stop" ]; then
	sed "s/^SIMULATOR_STOP_TIME .*/SIMULATOR_STOP_TIME $stop/" "$dir/config.txt" >"$work/config.txt"
else
	cp "$dir/config.txt" "$work/config.txt"
fi

# run NAME BINARY CORE: one sim run, its user CPU seconds appended to times.
run() {
	(cd "$work" && /usr/bin/time -f "$1 %U" -a -o "$work/times" taskset -c "$3" "$2" sim run config.txt \
		--out "out-$1" >/dev/null 2>"$work/$1.err")
}
for _ in $(seq "$rounds"); do
	for cores in "0 1" "1 0"; do
		read -r ca cb <<<"$cores"
		run A "$a" "$ca" &
		run B "$b" "$cb" &
		wait
	done
done
awk '{ v[$1] = v[$1] " " $2; s[$1] += $2 }
	END { printf "A (%s): user s%s, sum %.1f\n", "'"$a"'", v["A"], s["A"];
	      printf "B (%s): user s%s, sum %.1f\n", "'"$b"'", v["B"], s["B"];
	      if (s["B"] > 0) printf "A/B %.2f (above 1: B is faster)\n", s["A"] / s["B"] }' "$work/times"
if cmp -s "$work/out-A/fct.txt" "$work/out-B/fct.txt"; then
	echo "FCT files: the same"
else
	echo "FCT files: differ"
fi
rm -rf "$work"
