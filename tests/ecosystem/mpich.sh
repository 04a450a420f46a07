#!/usr/bin/env bash
# mpich.sh — MPICH (Debian's mpich 4.0, the ch4:ucx device) on softrnic
# through `softrnic run`: mpirun.mpich launches two ranks of mpi_check.c
# (built here with mpicc.mpich; a ping-pong 8 B..256 KiB with every byte
# checked, an allreduce checked element by element) with UCX pinned to
#   - rc_verbs,ud_verbs,self: RC between the ranks,
#   - ud_verbs,self: UD only,
# so no shared memory or TCP carries the data.  UCX's info log must name
# softrnic0:1 as the transport of each rank's endpoint to the other, and
# the ranks' softrnic counters (sampled with `softrnic stats` while the
# job runs: UCX does not close the device, so no SOFTRNIC_STATS_AT_EXIT
# line comes) must show the megabytes the ping-pong moves.  Open MPI's
# mpirun/mpicc stay the system's default (mpich's alternatives rank
# lower); this test names mpich's by their full names.
#   mpich.sh SOFTRNIC_BIN SOURCE_DIR
# Skips (77) without mpirun.mpich/mpicc.mpich.
set -uo pipefail
SOFTRNIC=$1
SRC=$2
command -v mpirun.mpich >/dev/null && command -v mpicc.mpich >/dev/null ||
	{ echo "mpich: mpich/libmpich-dev not installed; skipped"; exit 77; }
dir=$(mktemp -d)
sampler_pid=
cleanup() {
	[ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "mpich: FAIL: $*" >&2; exit 1; }

mpicc.mpich -O2 -Wall -Wextra -Werror -o "$dir/mpi_check" "$SRC/mpi_check.c" || fail "mpicc.mpich mpi_check.c"
# ldd's output into a variable first: grep -q leaves a pipe at its first
# match, and with pipefail the writer's SIGPIPE would fail the check.
libs=$(ldd "$dir/mpi_check") || fail "ldd mpi_check"
grep -q "libmpich" <<<"$libs" || fail "mpi_check does not link libmpich: $libs"

# sample FILE: every 0.1 s, "pid rx_bytes tx_bytes" of each softrnic
# device held by an mpi_check process, appended to FILE.
sample() {
	while :; do
		"$SOFTRNIC" stats 2>/dev/null | awk '
			/^softrnic/ { pid = $3; next }
			$1 == "rx_bytes" { rx[pid] = $2 }
			$1 == "tx_bytes" { tx[pid] = $2 }
			END { for (p in rx) print p, rx[p], tx[p] }' |
		while read -r pid rx tx; do
			[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = mpi_check ] && echo "$pid $rx $tx"
		done >> "$1"
		sleep 0.1
	done
}

# job NAME TLS: two ranks over UCX_TLS=TLS; checks the output, the
# endpoints and the counters.
job() {
	local name=$1 tls=$2 start=$SECONDS
	: > "$dir/$name.samples"
	sample "$dir/$name.samples" &
	sampler_pid=$!
	timeout -k 5 120 "$SOFTRNIC" run mpirun.mpich -launcher fork -np 2 -genv UCX_TLS "$tls" \
		-genv UCX_LOG_LEVEL info "$dir/mpi_check" 200 300 > "$dir/$name.log" 2>&1
	local rc=$?
	kill "$sampler_pid" 2>/dev/null
	wait "$sampler_pid" 2>/dev/null
	sampler_pid=
	[ $rc -eq 0 ] && grep -q "mpi_check: ok" "$dir/$name.log" || { cat "$dir/$name.log" >&2; fail "$name: exit $rc"; }
	# Each rank's endpoint to the other (ep_cfg[1] of rank 0, ep_cfg[0] of
	# rank 1: self is the other) carries tags over TL/softrnic0:1.
	local tl=${tls%%,*}
	[ "$(grep -c "ep_cfg.*tag($tl/softrnic0:1)" "$dir/$name.log")" -ge 2 ] ||
		{ grep ep_cfg "$dir/$name.log" >&2; fail "$name: no $tl/softrnic0:1 endpoints"; }
	# The largest sample of each rank, summed: at least the 256 KiB rounds'
	# 200 x 256 KiB each way that one rank received (a sample lags the
	# counters by up to 100 ms; the ranks stay 300 ms after the last round).
	local ranks rx
	read -r ranks rx < <(awk '{ if ($2 > m[$1]) m[$1] = $2 } END { n = 0; s = 0; for (p in m) { n++; s += m[p] }; print n, s }' \
		"$dir/$name.samples")
	[ "$ranks" -eq 2 ] || fail "$name: softrnic counters of $ranks mpi_check processes sampled, not 2"
	[ "$rx" -ge $((200 * 262144)) ] || fail "$name: the ranks' softrnic devices received $rx bytes, < 200 x 256 KiB"
	grep -E "mpi_check: (pingpong|allreduce)" "$dir/$name.log" | sed "s/^/mpich: $name: /"
	echo "mpich: $name: softrnic counters: 2 ranks received $rx bytes ($((SECONDS - start)) s)"
}

job rc "rc_verbs,ud_verbs,self"
job ud "ud_verbs,self"
echo "mpich: all runs passed"
