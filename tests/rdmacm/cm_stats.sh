#!/bin/sh
# cm_stats.sh — `softrnic stats` shows the connection manager at work:
# while an rping pair runs, the client's device has sent a REQ and QP1
# MADs, the server's has received a REQ and sent a REP (cm_* counters
# published by librdmacm.so.1 through the runtime's agent hook).
# usage: cm_stats.sh <libdir> <softrnic-tool> <port>
. "$(dirname "$0")/../lib.sh"
set -u
libdir=$1 tool=$2 port=$3
command -v rping >/dev/null 2>&1 || { echo "rping not installed"; exit 77; }
run() {
	env LD_LIBRARY_PATH="$libdir" ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} timeout 30 "$@"
}
run rping -s -a 127.0.0.1 -p "$port" -C 1000000 >/dev/null 2>&1 &
spid=$!
out=""
for _ in $(seq 100); do
	sleep 0.1
	cm_listening 262 "$port" && break
done
run rping -c -a 127.0.0.1 -p "$port" -C 1000000 >/dev/null 2>&1 &
cpid=$!
status=1
for _ in $(seq 50); do
	sleep 0.1
	out=$("$tool" stats 2>&1)
	# One device sent a REQ, one received it and answered with a REP.
	if echo "$out" | grep -Eq "cm_tx_req +[1-9]" && echo "$out" | grep -Eq "cm_rx_req +[1-9]" &&
	   echo "$out" | grep -Eq "cm_tx_rep +[1-9]" && echo "$out" | grep -Eq "rx_gsi_mads +[1-9]"; then
		status=0
		break
	fi
done
pkill -TERM -P "$cpid" 2>/dev/null; pkill -TERM -P "$spid" 2>/dev/null
wait "$cpid" "$spid" 2>/dev/null
echo "$out" | grep -E "^softrnic|cm_tx_req|cm_rx_req|cm_tx_rep|cm_rx_rep|gsi_mads"
[ $status = 0 ] && echo "ok   softrnic stats shows the CM's REQ/REP and QP1's MADs" ||
	echo "FAIL: softrnic stats lacks the CM counters"
exit $status
