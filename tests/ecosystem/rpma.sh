#!/usr/bin/env bash
# rpma.sh — librpma (Debian's librpma 1.2, over librdmacm.so.1 and
# libibverbs.so.1) on softrnic through `softrnic run`: rpma_check.c, built
# here against librpma-dev, as server and client on 127.0.0.1.  The client
# writes, flushes (rpma_flush to global visibility), reads back and
# compares, 64 rounds of 1 B..1 MiB; the server then compares its whole
# buffer with the client's last write.  softrnic's capture of the client
# (SOFTRNIC_PCAP, decoded by `softrnic decode`) shows how the flush went
# over the wire: Debian's librpma has only its read-after-write emulation,
# an 8-byte RDMA READ after each write, and no FLUSH packet.
#   rpma.sh SOFTRNIC_BIN SOURCE_DIR PORT
# Skips (77) without librpma-dev.
set -uo pipefail
SOFTRNIC=$1
SRC=$2
PORT=$3
ROUNDS=64
[ -f /usr/include/librpma.h ] || { echo "rpma: librpma-dev not installed; skipped"; exit 77; }
dir=$(mktemp -d)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "rpma: FAIL: $*" >&2; exit 1; }

cc -std=c11 -O2 -Wall -Wextra -Werror -o "$dir/rpma_check" "$SRC/rpma_check.c" -lrpma -libverbs ||
	fail "cc rpma_check.c"

start=$SECONDS
# listening PID: PID listens on PORT through librdmacm (RDMA_PS_TCP).
. "$(dirname "$0")/../lib.sh"
listening() {
	cm_listening 262 "$PORT" "$1"
}
"$SOFTRNIC" run "$dir/rpma_check" server 127.0.0.1 "$PORT" > "$dir/server.log" 2>&1 &
server_pid=$!
for i in $(seq 200); do
	listening "$server_pid" && break
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.05
done
listening "$server_pid" || { cat "$dir/server.log" >&2; fail "the server never listened"; }
SOFTRNIC_PCAP=$dir/client.pcap timeout -k 5 60 "$SOFTRNIC" run "$dir/rpma_check" client 127.0.0.1 "$PORT" $ROUNDS \
	> "$dir/client.log" 2>&1
rc=$?
for i in $(seq 100); do
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.1
done
kill "$server_pid" 2>/dev/null
wait "$server_pid"
src=$?
server_pid=
[ $rc -eq 0 ] && grep -q "rpma_check: ok" "$dir/client.log" || { cat "$dir/client.log" "$dir/server.log" >&2; fail "client exit $rc"; }
[ $src -eq 0 ] && grep -q "rpma_check: ok" "$dir/server.log" || { cat "$dir/server.log" >&2; fail "server exit $src"; }
sed 's/^/rpma: /' "$dir/client.log" "$dir/server.log" | grep -v "listening on"

# The flush on the wire: at least one 8-byte RDMA READ per round, no FLUSH.
"$SOFTRNIC" decode "$dir/client.pcap" > "$dir/client.txt" 2>&1 || fail "softrnic decode of the client's capture"
writes=$(grep -cE "RC_WRITE_(FIRST|ONLY) " "$dir/client.txt")
reads8=$(grep -c "RC_READ_REQUEST .*len=8)" "$dir/client.txt")
[ "$writes" -ge $ROUNDS ] || fail "$writes RDMA WRITEs in the capture, < $ROUNDS rounds"
[ "$reads8" -ge $ROUNDS ] || fail "$reads8 8-byte RDMA READ requests in the capture, < $ROUNDS flushes"
grep -q "FLUSH" "$dir/client.txt" && fail "a FLUSH packet in the capture: librpma flushed natively; update rpma_check.c's note"
echo "rpma: the capture holds $writes RDMA WRITEs and $reads8 8-byte RDMA READs (the flushes), no FLUSH ($((SECONDS - start)) s)"
echo "rpma: all checks passed"
