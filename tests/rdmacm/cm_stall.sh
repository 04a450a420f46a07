#!/bin/sh
# cm_stall.sh — a connection made through librdmacm outlives a peer process
# that does not run for a second.  softrnic's NIC is the process: while the
# peer is descheduled (a loaded host; here SIGSTOP), nobody ACKs, and the
# requester's local ACK timer runs out retry_cnt + 1 times before the QP
# fails (IBTA 9.7.6.1.3).  The kernel's rdma_cm gives a RoCE QP a timeout
# of 17 (its packet lifetime CMA_IBOE_PACKET_LIFETIME 16, plus one: 537 ms,
# 4.3 s over 8 tries); softrnic's librdmacm gives the same
# (CM_DEFAULT_ACK_TIMEOUT, src/cm/cm.h).  With 14 (67 ms, 0.54 s over 8 tries) uDAPL's dtest over UDP lost
# its connection with "transport retry counter exceeded" in 4 runs of 10
# on a 2-core host at load 10, where the peer's progress thread waited up
# to 0.45 s for a CPU; with 17 or 18, in none.
# rping -v (per ping: SEND, the server's RDMA READ and WRITE, the data
# printed) runs 3000 pings; the client is stopped for 1.5 s mid-run, while
# the server's requests to it are outstanding.  Both must finish every
# ping, the client printing the last one's data.  With a timeout of 14 the
# server's QP failed at once (3 runs of 3).
# usage: cm_stall.sh <libdir> <port>
set -u
libdir=$1 port=$2
command -v rping >/dev/null 2>&1 || { echo "cm_stall: rping not installed; skipped"; exit 77; }
tmp=$(mktemp -d)
spid=
cpid=
cleanup() {
	for p in $spid $cpid; do kill -CONT "$p" 2>/dev/null && kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/../lib.sh"
run() {
	env LD_LIBRARY_PATH="$libdir" ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} "$@"
}
count=3000
env LD_LIBRARY_PATH="$libdir" ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} \
	rping -s -a 127.0.0.1 -p "$port" -v -C $count > "$tmp/server" 2>&1 &
spid=$!
for i in $(seq 200); do
	cm_listening 262 "$port" && break
	sleep 0.05
done
cm_listening 262 "$port" || { cat "$tmp/server"; echo "cm_stall: FAIL: the rping server never listened"; exit 1; }
env LD_LIBRARY_PATH="$libdir" ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} \
	stdbuf -oL rping -c -a 127.0.0.1 -p "$port" -v -C $count > "$tmp/client" 2>&1 &
cpid=$!
# Stop the server once pings flow, for 1.5 s; the client keeps its
# requests outstanding meanwhile.
for i in $(seq 200); do
	[ "$(grep -c 'ping data' "$tmp/client")" -ge 50 ] && break
	sleep 0.01
done
before=$(grep -c 'ping data' "$tmp/client")
kill -STOP "$cpid"
sleep 1.5
during=$(grep -c 'ping data' "$tmp/client")
kill -CONT "$cpid"
wait "$cpid"
crc=$?
cpid=
wait "$spid"
src=$?
spid=
pings=$(grep -c 'ping data' "$tmp/client")
echo "cm_stall: $before pings before the stop, $during when it ended, $pings in all; client exit $crc, server exit $src"
if [ $crc -ne 0 ] || [ "$pings" -ne $count ] || ! grep -q "ping data: rdma-ping-$((count - 1)): " "$tmp/client"; then
	tail -5 "$tmp/client"
	tail -5 "$tmp/server"
	echo "cm_stall: FAIL: the connection did not outlive a peer stopped for 1.5 s"
	exit 1
fi
[ "$before" -lt $count ] || { echo "cm_stall: FAIL: the run ended before the stop; raise the count"; exit 1; }
echo "cm_stall: ok"
