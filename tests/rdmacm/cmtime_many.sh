#!/bin/sh
# cmtime_many.sh LIBDIR N PORT — unmodified cmtime (rdmacm-utils) connects
# N ids, each with its RC QP, through softrnic's CM on this host and tears
# them down: the client must end well, print every step, and create every
# QP ("failure creating qp" is cmtime's word for one it could not make).
# The per-step times at 10 000 and 50 000 ids: bench/cmtime_scale.sh.
set -u
lib=$1 n=$2 port=$3
command -v cmtime >/dev/null 2>&1 || { echo "cmtime not installed (rdmacm-utils)"; exit 77; }
tmp=$(mktemp -d)
trap 'kill "$spid" 2>/dev/null; rm -rf "$tmp"' EXIT
LD_LIBRARY_PATH=$lib cmtime -p "$port" >"$tmp/srv" 2>&1 &
spid=$!
sleep 0.5
rc=0
LD_LIBRARY_PATH=$lib timeout 120 cmtime -s 127.0.0.1 -p "$port" -c "$n" >"$tmp/cli" 2>&1 || rc=$?
cat "$tmp/cli"
fail=0
[ "$rc" = 0 ] || { echo "FAIL: cmtime -c $n exited $rc"; fail=1; }
for step in "create id" "resolve addr" "resolve route" "create qp" "connect" "disconnect" "destroy"; do
	grep -q "^$step *:" "$tmp/cli" || { echo "FAIL: no '$step' step"; fail=1; }
done
if grep -q "failure creating qp" "$tmp/cli" "$tmp/srv"; then
	echo "FAIL: $(cat "$tmp/cli" "$tmp/srv" | grep -c 'failure creating qp') QPs not created"
	fail=1
fi
[ "$fail" = 0 ] && echo "cmtime: $n connections, every QP created"
exit "$fail"
