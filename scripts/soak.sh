#!/usr/bin/env bash
# soak.sh — run the seeded fault-injection test (rnic_fault_mix) over many
# random seeds for a given wall-clock duration: a longer soak than CI's fixed
# seed list.  Every failing seed is printed with the command that replays it.
#
# usage: scripts/soak.sh [DURATION_SECONDS] [BUILD_DIR] [SEEDS_PER_BATCH]
#   DURATION_SECONDS  default 600
#   BUILD_DIR         default build (relative to the repo root); the binary is
#                     BUILD_DIR/tests/rnic/rnic_fault_mix
#   SEEDS_PER_BATCH   default 50 (one process runs a consecutive seed range)
# Batches alternate between the CI fault profile and --heavy-reorder
# (half of all packets held back, multipath-like).
# The first seed is random (from /dev/urandom) unless SOAK_START is set, so
# two soaks explore different seeds; the range is printed so a run can be
# repeated.  Exit status 1 if any seed failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
duration=${1:-600}
build=${2:-build}
batch=${3:-50}
case $build in /*) ;; *) build="$root/$build" ;; esac
bin="$build/tests/rnic/rnic_fault_mix"
if [ ! -x "$bin" ]; then
	echo "soak: $bin not found; build first (cmake --build $build)" >&2
	exit 2
fi
start=${SOAK_START:-$(( $(od -An -N4 -tu4 /dev/urandom) * 1000 ))}
end_time=$(( $(date +%s) + duration ))
seed=$start
failed=0
runs=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "soak: seeds from $start, for ${duration}s, binary $bin"
n=0
while [ "$(date +%s)" -lt "$end_time" ]; do
	last=$(( seed + batch - 1 ))
	mode=""
	[ $(( n % 2 )) -eq 1 ] && mode="--heavy-reorder"
	n=$(( n + 1 ))
	"$bin" --no-self-check $mode --seeds "$seed-$last" >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 1 ]; then
		# assertion failures: print the failing seeds and their details
		grep -E '^FAIL \[seed|^  \[seed' "$log"
		for s in $(sed -n 's/^FAIL \[seed \([0-9]*\)\].*/\1/p' "$log"); do
			echo "soak: FAILING SEED $s - replay: SOFTRNIC_SEED=$s $bin $mode"
			failed=$(( failed + 1 ))
		done
	elif [ "$rc" -ne 0 ]; then
		# a crash (signal, sanitizer): find the seed one by one
		echo "soak: batch $seed-$last crashed (exit $rc):"; tail -5 "$log"
		for (( s = seed; s <= last; s++ )); do
			if ! "$bin" --no-self-check $mode --seed "$s" >"$log" 2>&1; then
				echo "soak: FAILING SEED $s - replay: SOFTRNIC_SEED=$s $bin $mode"
				tail -5 "$log"
				failed=$(( failed + 1 ))
			fi
		done
	fi
	runs=$(( runs + batch ))
	seed=$(( last + 1 ))
done
echo "soak: $runs seeds ($start..$(( seed - 1 ))), $failed failures"
[ "$failed" -eq 0 ]
