# shellcheck shell=bash
# bench/common.sh — shell helpers shared by the bench scripts (sourced, not
# run).  Every process a script starts is a background job of its shell,
# so `jobs -p` names exactly the ones to stop: nothing else is touched.

# Stop this shell's background jobs (for trap ... EXIT).
bench_stop_jobs() {
	local p
	for p in $(jobs -p); do kill -TERM "$p" 2>/dev/null; done
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
