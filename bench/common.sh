# shellcheck shell=bash
# bench/common.sh — shell helpers shared by the bench scripts (sourced, not
# run).  Every process a script starts is a background job of its shell,
# so `jobs -p` names exactly the ones to stop: nothing else is touched.

# Stop this shell's background jobs (for trap ... EXIT).
bench_stop_jobs() {
	local p
	for p in $(jobs -p); do kill -TERM "$p" 2>/dev/null || true; done
}

# bench_parse_args DEFAULT_OUT "$@": the usual arguments of a bench script,
# [BUILD_DIR] [--quick] [--out DIR], into build (default build), quick
# (0/1) and out (default DEFAULT_OUT); exits 2 with the usage otherwise.
bench_parse_args() {
	out=$1
	shift
	build=build
	quick=0
	while [ $# -gt 0 ]; do
		case $1 in
		--quick) quick=1 ;;
		--out) out=$2; shift ;;
		-*) echo "usage: $0 [BUILD_DIR] [--quick] [--out DIR]" >&2; exit 2 ;;
		*) build=$1 ;;
		esac
		shift
	done
}

# The median of the numbers on standard input, one per line ("n/a" when
# there are none; the mean of the middle two, to 3 decimals, when even).
bench_median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench_wait_listen PORT [SECONDS]: until something listens on TCP PORT
# (at most SECONDS, default 10).
bench_wait_listen() {
	local _
	for _ in $(seq $((${2:-10} * 20))); do
		[ -n "$(ss -Hltn "( sport = :$1 )" 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}
