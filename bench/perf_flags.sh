#!/usr/bin/env bash
# perf_flags.sh — which perftest options run over softrnic.  Companion of
# perf_compare.sh: before comparing numbers, know which perftest modes work
# at all.  Each case runs an unmodified perftest server and client on
# loopback (LD_LIBRARY_PATH=BUILD_DIR/lib, -x 0 -F, short runs) and prints
# "works" with the client's last result line, or "fails" with the first
# error line either side printed.  Exit status: the number of failures
# (capped at 100); failures perftest itself raises for a combination it
# does not support are marked "perftest refuses" and not counted.
#
#   bench/perf_flags.sh [BUILD_DIR]
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$repo/build}")
lib=$build/lib
[ -e "$lib/libibverbs.so.1" ] || { echo "perf_flags: no $lib/libibverbs.so.1" >&2; exit 100; }
out=$(mktemp -d /tmp/perf_flags.XXXXXX)

# shellcheck source=bench/common.sh
. "$repo/bench/common.sh"
trap bench_stop_jobs EXIT
trap 'exit 130' INT TERM

port=$((30000 + RANDOM % 30000))

# Messages with which perftest rejects an option combination by itself,
# before any verb is called.
perftest_refusal='not available on|doesn.t work with|not possible in|not supported in perftest|Parser function exited'

failures=0
try() { # try LABEL TOOL ARGS...
	local label=$1 tool=$2; shift 2
	port=$((port + 1))
	local s=$out/$port.srv c=$out/$port.cli rc_s rc_c srv
	env LD_LIBRARY_PATH="$lib" timeout -k 3 60 "$tool" -x 0 -F -p "$port" "$@" >"$s" 2>&1 &
	srv=$!
	if ! bench_wait_listen "$port"; then
		wait "$srv"; rc_s=$?
		rc_c=-
	else
		env LD_LIBRARY_PATH="$lib" timeout -k 3 60 "$tool" -x 0 -F -p "$port" "$@" 127.0.0.1 >"$c" 2>&1
		rc_c=$?
		wait "$srv"; rc_s=$?
	fi
	if [ "$rc_c" = 0 ] && [ "$rc_s" = 0 ]; then
		# The last result row (with -a: the largest size).
		printf '%-34s works   %s\n' "$label" \
			"$(awk '/#bytes/ { t = 1; next } t && /^ *[0-9]/ { $1 = $1; last = $0 } END { print last }' "$c" 2>/dev/null)"
		return
	fi
	local why
	why=$(cat "$s" "$c" 2>/dev/null | grep -iE "$perftest_refusal|error|fail|unable|couldn|invalid|not supp" |
		grep -v '^ *-' | head -1 | sed 's/^ *//')
	if grep -qiE "$perftest_refusal" "$s" "$c" 2>/dev/null; then
		printf '%-34s perftest refuses: %s\n' "$label" "$why"
	else
		printf '%-34s FAILS   (client rc=%s, server rc=%s) %s\n' "$label" "$rc_c" "$rc_s" "$why"
		failures=$((failures + 1))
	fi
}

echo "perf_flags: perftest over $lib (logs in $out)"
try "ib_write_bw -a"             ib_write_bw -a -n 100
try "ib_send_bw -a"              ib_send_bw -a -n 100
try "ib_read_bw -a"              ib_read_bw -a -n 100
try "ib_write_lat -a"            ib_write_lat -a -n 100
try "ib_send_lat -a"             ib_send_lat -a -n 100
try "ib_write_bw -b"             ib_write_bw -b -s 65536 -n 1000
try "ib_send_bw -b"              ib_send_bw -b -s 65536 -n 1000
try "ib_read_bw -b"              ib_read_bw -b -s 65536 -n 1000
try "ib_write_bw -q 4"           ib_write_bw -q 4 -s 65536 -n 1000
try "ib_send_bw -q 4"            ib_send_bw -q 4 -s 65536 -n 1000
try "ib_read_bw -q 4"            ib_read_bw -q 4 -s 65536 -n 1000
try "ib_send_bw -e"              ib_send_bw -e -s 65536 -n 1000
try "ib_send_lat -e"             ib_send_lat -e -s 2 -n 1000
try "ib_write_bw -e"             ib_write_bw -e -s 65536 -n 1000
try "ib_send_bw -e -D 2"         ib_send_bw -e -s 65536 -D 2
try "ib_write_bw -D 2"           ib_write_bw -s 65536 -D 2
try "ib_write_bw -c UC"          ib_write_bw -c UC -s 65536 -n 1000
try "ib_send_bw -c UC"           ib_send_bw -c UC -s 65536 -n 1000
try "ib_send_lat -c UC"          ib_send_lat -c UC -s 2 -n 1000
try "ib_write_lat -c UC"         ib_write_lat -c UC -s 2 -n 1000
try "ib_read_bw -c UC"           ib_read_bw -c UC -n 100
try "ib_send_bw -c UD (2048 B)"  ib_send_bw -c UD -s 2048 -n 1000
try "ib_send_lat -c UD"          ib_send_lat -c UD -s 2 -n 1000
try "ib_atomic_bw"               ib_atomic_bw -n 1000
try "ib_atomic_lat"              ib_atomic_lat -n 1000
echo "perf_flags: $failures failure(s)"
exit $((failures > 100 ? 100 : failures))
