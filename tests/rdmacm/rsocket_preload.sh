#!/bin/sh
# rsocket_preload.sh — an unmodified socket program over softrnic's
# rsockets: iperf3, server and client, each under rdma-core's
# librspreload.so (Debian's librdmacm1), which turns its TCP sockets into
# rsockets of softrnic's librdmacm.so.1.  The server's listener must show
# up in softrnic's CM registry (so it listens through rsockets, not the
# kernel), and the client must move data for the whole run.
# usage: rsocket_preload.sh <libdir> <port> [seconds]
# SOFTRNIC_PRELOAD (a sanitizer runtime) is preloaded first.
set -u
. "$(dirname "$0")/../lib.sh"
libdir=$1 port=$2 secs=${3:-2}
pre=${RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}
command -v iperf3 >/dev/null 2>&1 || { echo "iperf3 not installed"; exit 77; }
[ -f "$pre" ] || { echo "$pre not installed (librdmacm1)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rsocket_preload.XXXXXX")
spid=""
trap '[ -n "$spid" ] && kill "$spid" 2>/dev/null; rm -rf "$work"' EXIT
run() {
	env LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	    LD_PRELOAD="${SOFTRNIC_PRELOAD:+$SOFTRNIC_PRELOAD }$pre" timeout -k 5 $((secs + 20)) "$@"
}
# -1: the server ends after one test.
start_rsocket_server "$libdir" "$pre" "$port" $((secs + 20)) "$work/server.log" \
	iperf3 -s -1 -B 127.0.0.1 -p "$port" || exit 1
run iperf3 -c 127.0.0.1 -p "$port" -t "$secs" -J > "$work/client.json" 2> "$work/client.err"
crc=$?
wait "$spid"
src=$?
spid=""
echo "---- server exit $src"; cat "$work/server.log"
echo "---- client exit $crc"; cat "$work/client.err"
[ $crc -eq 0 ] || { echo "FAIL: client exit $crc"; cat "$work/client.json"; exit 1; }
[ $src -eq 0 ] || { echo "FAIL: server exit $src"; exit 1; }
python3 - "$work/client.json" "$secs" <<'PY' || { echo "---- client JSON"; cat "$work/client.json"; exit 1; }
import json, sys
d = json.load(open(sys.argv[1]))
secs = float(sys.argv[2])
end = d["end"]
if "sum_sent" not in end:
    print("FAIL: iperf3 reported no totals (keys: %s)" % sorted(end))
    sys.exit(1)
sent, recv = end["sum_sent"], end["sum_received"]
ivals = [i["sum"]["bytes"] for i in d["intervals"]]
print("local %s:%s -> %s:%s" % tuple(d["start"]["connected"][0][k] for k in
      ("local_host", "local_port", "remote_host", "remote_port")))
print("sent %d bytes, received %d bytes in %.2f s: %.2f Gbit/s; per interval %s"
      % (sent["bytes"], recv["bytes"], recv["seconds"], recv["bits_per_second"] / 1e9, ivals))
# The server stops counting when the time is up: what was still in the
# buffers then (at most a few MiB) is sent but not received, as over TCP.
ok = 0 < recv["bytes"] <= sent["bytes"] and sent["bytes"] - recv["bytes"] < 4 << 20 \
     and recv["seconds"] >= secs * 0.9 and len(ivals) >= int(secs) and all(b > 0 for b in ivals)
if not ok:
    print("FAIL: no data, data lost, or an interval without data")
sys.exit(0 if ok else 1)
PY
