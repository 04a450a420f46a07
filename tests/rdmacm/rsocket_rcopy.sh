#!/bin/sh
# rsocket_rcopy.sh — unmodified rcopy (rdmacm-utils) copies a file over
# softrnic's stream rsockets between two processes on this machine; the
# copy must match the original byte for byte (sha256).
# usage: rsocket_rcopy.sh <libdir> <port> [bytes]
# SOFTRNIC_PRELOAD (a sanitizer runtime) goes into LD_PRELOAD.
. "$(dirname "$0")/../lib.sh"
set -u
libdir=$1 port=$2 bytes=${3:-5000000}
command -v rcopy >/dev/null 2>&1 || { echo "rcopy not installed"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rsocket_rcopy.XXXXXX")
spid=""
trap '[ -n "$spid" ] && kill "$spid" 2>/dev/null; rm -rf "$work"' EXIT
run() {
	env LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	    ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} timeout -k 5 30 "$@"
}
head -c "$bytes" /dev/urandom > "$work/src"
run rcopy -p "$port" > "$work/server.log" 2>&1 &
spid=$!
# The client starts once the server's listener is registered (port space TCP).
i=0
until cm_listening 262 "$port"; do
	kill -0 "$spid" 2>/dev/null && [ $i -lt 200 ] || { echo "FAIL: rcopy server never listened"; cat "$work/server.log"; exit 1; }
	sleep 0.05
	i=$((i + 1))
done
run rcopy "$work/src" "127.0.0.1:$work/dst" -p "$port" > "$work/client.log" 2>&1
crc=$?
# rcopy's server serves for ever: it is stopped once the copy is closed.
i=0
until grep -q "closing...done" "$work/server.log" || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
spid=""
echo "---- server"; cat "$work/server.log"; echo
echo "---- client exit $crc"; cat "$work/client.log"
[ $crc -eq 0 ] || { echo "FAIL: client exit $crc"; exit 1; }
a=$(sha256sum < "$work/src" | cut -d' ' -f1)
b=$(sha256sum < "$work/dst" 2>/dev/null | cut -d' ' -f1)
echo "sha256 source $a"
echo "sha256 copy   $b"
[ "$a" = "$b" ] || { echo "FAIL: the copy differs"; exit 1; }
echo "pass: $bytes bytes copied intact"
