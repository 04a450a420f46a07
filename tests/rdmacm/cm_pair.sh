#!/bin/sh
# cm_pair.sh — an unmodified rdmacm-utils / perftest program as server and
# client on this machine, connecting through softrnic's librdmacm.so.1 with
# no configuration: each side's device binds its own 127.0.0.N, the client
# names 127.0.0.1, and the CM (REQ/REP/RTU over QP1) connects them.
#
# usage: cm_pair.sh [-t SECONDS] [-c REGEX] [-k] [-w CMD] <libdir> <ps> <port> -- <server argv> -- <client argv>
#   <ps>   the RDMA-CM port space the server listens in (262 TCP, 273 UDP):
#          the client starts once the server's listener is registered
#          (tests/lib.sh cm_listening, src/compat/rdmacm/port_registry.c)
#   -c     extended regex the client's output must match (repeatable)
#   -k     the server runs until it is stopped (cmtime): end it after the
#          client, and judge the client alone
#   -w     start the client once the shell command CMD succeeds instead
#          (a multicast receiver listens on no port: mckey)
# Both sides must exit 0.  SOFTRNIC_PRELOAD goes into LD_PRELOAD.
. "$(dirname "$0")/../lib.sh"
set -u
timeout_s=60
cregs=""
keep_server=0
ready_re=""
while getopts t:c:kw: opt; do
	case $opt in
	w) ready_re=$OPTARG ;;
	k) keep_server=1 ;;
	t) timeout_s=$OPTARG ;;
	c) cregs="$cregs
$OPTARG" ;;
	*) echo "bad option"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
libdir=$1 ps=$2 port=$3
shift 3
[ "$1" = "--" ] || { echo "usage: see the top of $0"; exit 2; }
shift
server=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do server="$server $1"; shift; done
[ $# -gt 0 ] || { echo "usage: see the top of $0"; exit 2; }
shift
client="$*"
prog=${server%% *}; prog=$(echo $server | cut -d' ' -f1)
command -v "$prog" >/dev/null 2>&1 || { echo "$prog not installed"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cm_pair.XXXXXX")
trap 'rm -rf "$work"' EXIT
run() {
	env LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	    ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} \
	    timeout -k 5 "$timeout_s" "$@"
}

run $server > "$work/server.log" 2>&1 &
spid=$!
i=0
while :; do
	if [ -n "$ready_re" ]; then
		sh -c "$ready_re" >/dev/null 2>&1 && break
	elif cm_listening "$ps" "$port"; then
		break
	fi
	if ! kill -0 "$spid" 2>/dev/null || [ $i -ge 200 ]; then
		echo "server never listened (port space $ps, port $port)"
		cat "$work/server.log"
		kill "$spid" 2>/dev/null
		exit 1
	fi
	sleep 0.05
	i=$((i + 1))
done
start=$(date +%s.%N)
run $client > "$work/client.log" 2>&1 &
cpid=$!
# A pair still running shortly before the timeout kills it: each
# program's softrnic counters then (a kill leaves no SOFTRNIC_STATS_AT_EXIT
# line), to tell a lost datagram from a stalled program.
tool=$libdir/../bin/softrnic
descendants() { # pid: its children and grandchildren (subshell, timeout, program)
	for c in $(pgrep -P "$1" 2>/dev/null); do
		echo "$c"
		pgrep -P "$c" 2>/dev/null
	done
}
(
	sleep $((timeout_s > 8 ? timeout_s - 4 : timeout_s))
	[ -x "$tool" ] || exit 0
	for p in $(descendants "$spid") $(descendants "$cpid"); do
		out=$("$tool" stats "$p" 2>/dev/null) || continue   # not a softrnic process (timeout)
		echo "---- softrnic stats $p ($(cat /proc/$p/comm 2>/dev/null)), still running near the timeout"
		echo "$out"
	done
) > "$work/late.log" 2>&1 &
lpid=$!
wait "$cpid"
crc=$?
end=$(date +%s.%N)
kill "$lpid" 2>/dev/null
wait "$lpid" 2>/dev/null
if [ $keep_server = 1 ]; then
	# $spid is the subshell running timeout(1): stop timeout, which stops
	# the server, and wait for the subshell, so the server is gone (its
	# ports free) when this returns.
	pkill -TERM -P "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	src=0
else
	wait "$spid"
	src=$?
fi
echo "---- server ($server) exit $src"
cat "$work/server.log"
echo "---- client ($client) exit $crc, $(echo "$end - $start" | bc 2>/dev/null || echo '?') s"
cat "$work/client.log"
[ -s "$work/late.log" ] && cat "$work/late.log"
status=0
[ $src -eq 0 ] || { echo "FAIL: server exit $src"; status=1; }
[ $crc -eq 0 ] || { echo "FAIL: client exit $crc"; status=1; }
printf '%s\n' "$cregs" | while IFS= read -r re; do
	[ -z "$re" ] && continue
	grep -Eq "$re" "$work/client.log" || { echo "FAIL: client output lacks /$re/"; echo x > "$work/bad"; }
done
[ -f "$work/bad" ] && status=1
exit $status
