#!/usr/bin/env bash
# perf_ab.sh — two builds of softrnic against each other, the way changes
# to the data path are judged here: the same unmodified perftest pair, run
# with build A then build B (B then A in every other round), many rounds,
# on this noisy machine.  A benchmark, not a test: it reports, it does not
# pass or fail.
#
#   bench/perf_ab.sh BUILD_A BUILD_B [--rounds N] [--no-netns] [-- TOOL ARGS...]
#   default: --rounds 8 -- ib_write_bw -s 65536 -n 12000
#
# Prints, per build: the median and every sample of perftest's result
# (BW average in MiB/s for *_bw, t_typical in usec for *_lat) and of the
# CPU seconds of both processes (/usr/bin/time, all threads); then B/A of
# the medians and in how many rounds B beat A (the same round's runs are
# next to each other in time, so the count is less hurt by drift than
# the medians are).  One build is e.g. a worktree of the base commit:
#   git worktree add /tmp/base HEAD~1 && (cd /tmp/base && scripts/build.sh)
# then BUILD_A is /tmp/base/build (any directory with lib/libibverbs.so.1).
#
# Runs in a private network namespace when it may (unshare -n), like
# perf_compare.sh; every process runs under timeout(1) and is ended, by PID,
# if the script is interrupted.
set -uo pipefail

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

all_args=("$@")
rounds=8
netns=1
builds=()
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) shift; rounds=${1:-}; [[ "$rounds" =~ ^[1-9][0-9]*$ ]] || usage ;;
	--no-netns) netns=0 ;;
	--) shift; break ;;
	-h|--help) usage ;;
	-*) echo "perf_ab: unknown option $1" >&2; usage ;;
	*) builds+=("$1") ;;
	esac
	shift
done
[ "${#builds[@]}" = 2 ] || usage
tool_args=("$@")
[ "${#tool_args[@]}" = 0 ] && tool_args=(ib_write_bw -s 65536 -n 12000)
tool=${tool_args[0]}

if [ "$netns" = 1 ] && [ -z "${PERF_AB_NETNS:-}" ]; then
	for flag in -n -rn; do
		unshare "$flag" true 2>/dev/null &&
			exec unshare "$flag" -- env PERF_AB_NETNS=1 bash "$0" "${all_args[@]}"
	done
	echo "perf_ab: cannot make a network namespace; running in the current one" >&2
fi
[ -n "${PERF_AB_NETNS:-}" ] && { ip link set lo up || exit 1; }

die() { echo "perf_ab: $*" >&2; exit 1; }
libs=()
for b in "${builds[@]}"; do
	[ -e "$b/lib/libibverbs.so.1" ] || die "no $b/lib/libibverbs.so.1"
	libs+=("$(realpath "$b/lib")")
done
command -v "$tool" >/dev/null || die "$tool not found (Debian package perftest)"
[ -x /usr/bin/time ] || die "/usr/bin/time not found (Debian package time)"

out=$(mktemp -d /tmp/perf_ab.XXXXXX)
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
trap bench_stop_jobs EXIT
trap 'exit 130' INT TERM

port=$((30000 + RANDOM % 20000))

# one_run LIB TAG: one server+client pair; appends "result cpu" to TAG.
one_run() {
	local lib=$1 tag=$2 base=$out/run
	port=$((port + 1))
	local env=(env LD_LIBRARY_PATH="$lib")
	timeout -k 3 120 "${env[@]}" /usr/bin/time -f '%U %S' -o "$base.srv.time" \
		"${tool_args[@]}" -x 0 -F -p "$port" >"$base.srv" 2>&1 &
	local srv=$!
	bench_wait_listen "$port"
	timeout -k 3 120 "${env[@]}" /usr/bin/time -f '%U %S' -o "$base.cli.time" \
		"${tool_args[@]}" -x 0 -F -p "$port" 127.0.0.1 >"$base.cli" 2>&1
	local rc=$?
	wait "$srv" || rc=1
	if [ "$rc" != 0 ] || ! grep -q 'Device *: softrnic' "$base.cli"; then
		echo "perf_ab: a run with $lib failed:" >&2
		tail -5 "$base.cli" >&2
		return 1
	fi
	local row value
	row=$(awk '/#bytes/ { getline; print; exit }' "$base.cli")
	case "$tool" in
	*_bw) value=$(awk '{ print $4 }' <<<"$row") ;;
	*) value=$(awk '{ print $5 }' <<<"$row") ;;
	esac
	local cpu
	cpu=$(cat "$base.srv.time" "$base.cli.time" | awk 'NF == 2 { s += $1 + $2 } END { printf "%.2f", s }')
	echo "$value $cpu" >>"$out/$tag"
}

echo "perf_ab: ${tool_args[*]}, $rounds rounds; A=${builds[0]} B=${builds[1]}"
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="0 1"; else order="1 0"; fi
	for k in $order; do
		one_run "${libs[$k]}" "$k" || exit 1
	done
	printf '  round %d: A %s | B %s\n' "$r" "$(tail -1 "$out/0")" "$(tail -1 "$out/1")"
done

for k in 0 1; do
	name=$([ "$k" = 0 ] && echo A || echo B)
	printf '%s: result median %s (%s), CPU s median %s\n' "$name" \
		"$(awk '{ print $1 }' "$out/$k" | bench_median)" "$(awk '{ printf "%s ", $1 }' "$out/$k")" \
		"$(awk '{ print $2 }' "$out/$k" | bench_median)"
done
ma=$(awk '{ print $1 }' "$out/0" | bench_median)
mb=$(awk '{ print $1 }' "$out/1" | bench_median)
higher_better=1
case "$tool" in *_lat) higher_better=0 ;; esac
wins=$(paste -d' ' "$out/0" "$out/1" | awk -v h="$higher_better" '{ if ((h && $3 > $1) || (!h && $3 < $1)) w++ } END { print w + 0 }')
awk -v a="$ma" -v b="$mb" -v w="$wins" -v n="$rounds" -v h="$higher_better" 'BEGIN {
	printf "B/A of the medians: %.3f (%s is better); B better in %d of %d rounds\n", b / a, h ? "higher" : "lower", w, n }'
rm -rf "$out"
