#!/usr/bin/env bash
# fio.sh — fio's rdma ioengine (Debian's fio 3.33, linked against
# librdmacm.so.1 and libibverbs.so.1) on softrnic through `softrnic run`:
# a server job (rw=read, listening through the connection manager) and a
# client job (rw=write) on 127.0.0.1, one pair per verb, 64 KiB blocks:
#   - send: two-sided SEND/RECV, both sides with verify=crc32c, so the
#     server checks the header and CRC of every block it receives; a pair
#     whose client sends no verify headers must be rejected by the server
#     (the check can fail).  The server posts a receive for every block
#     before the first arrives (64 blocks, depth 64): fio's engine leaves
#     the RNR retry count at 0, so a SEND that finds no receive posted
#     ends the connection, and a server that reposts in a loop falls
#     behind on a loaded machine (docs/ecosystem.md, "send and RNR");
#   - write, read: one-sided RDMA WRITE into / RDMA READ from the server's
#     registered buffers.  fio cannot verify these (the server never looks
#     at its buffers, the client's reads are not checked), so the data is
#     checked by its amount: the client's issued blocks, and the server's
#     softrnic counters (`softrnic stats`, run by fio's exec_postrun while
#     the device is still open, after the 100 ms in which the device
#     publishes them) show at least that many bytes received (write, send)
#     or sent (read).
# The write and read runs print fio's bandwidth.  fio's engine sleeps
# 500 ms after connecting and counts it in the run time: a ramp of 700 ms
# keeps it out.  The send run is too short for a bandwidth figure.
#   fio.sh SOFTRNIC_BIN PORT
# Skips (77) when fio is not installed.
set -uo pipefail
SOFTRNIC=$1
PORT=$2
command -v fio >/dev/null || { echo "fio: fio not installed; skipped"; exit 77; }
dir=$(mktemp -d)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "fio: FAIL: $*" >&2; exit 1; }
cd "$dir" || exit 1     # fio writes its verify state and postrun output here

enghelp=$(fio --enghelp=rdma 2>&1)
grep -q "^verb" <<<"$enghelp" || fail "this fio has no rdma ioengine: $enghelp"
BS=65536
# listening PID: PID listens on PORT through librdmacm (RDMA_PS_TCP).
. "$(dirname "$0")/../lib.sh"
listening() {
	cm_listening 262 "$PORT" "$1"
}

# server_bytes STATS COUNTER PID: COUNTER of the device of process PID in
# a `softrnic stats` listing.
server_bytes() {
	awk -v pid="$3" -v name="$2" '/^softrnic/ { mine = ($3 == pid) } mine && $1 == name { print $2; exit }' "$1"
}

# One pair.  NAME; then the server's options, "--", the client's options.
# Sets ISSUED (the client's blocks after the ramp) and BW (its bandwidth);
# returns 1 if either side failed (their output is in NAME.server/client).
pair() {
	local name=$1 server=() client=()
	shift
	while [ "$1" != "--" ]; do server+=("$1"); shift; done
	shift
	client=("$@")
	rm -f server.postrun.txt
	"$SOFTRNIC" run fio --thread --name=server --ioengine=rdma --port="$PORT" --rw=read --bs=$BS \
		--exec_postrun="sleep 0.3; $SOFTRNIC stats" "${server[@]}" > "$name.server" 2>&1 &
	server_pid=$!
	local i
	for i in $(seq 200); do
		listening "$server_pid" && break
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.05
	done
	listening "$server_pid" || { cat "$name.server" >&2; fail "$name: the server never listened"; }
	timeout -k 5 30 "$SOFTRNIC" run fio --thread --name=client --ioengine=rdma --hostname=127.0.0.1 \
		--port="$PORT" --rw=write --bs=$BS "${client[@]}" > "$name.client" 2>&1
	local rc=$?
	# A server whose client failed waits for ever: give it 20 s.
	local j
	for j in $(seq 200); do
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$server_pid" 2>/dev/null
	wait "$server_pid"
	local src=$?
	SERVER_PID=$server_pid
	server_pid=
	[ -f server.postrun.txt ] && mv server.postrun.txt "$name.stats"
	# fio exits 0 even when its rdma engine fails to connect: the job's
	# "err= 0" line is what says it ran.
	grep -q "err= 0" "$name.client" || { [ "$rc" -eq 0 ] && rc=1; }
	grep -q "err= 0" "$name.server" || { [ "$src" -eq 0 ] && src=1; }
	ISSUED=$(sed -n 's/.*issued rwts: total=0,\([0-9]*\),.*/\1/p' "$name.client")
	BW=$(sed -n 's/.*WRITE: bw=\([^ ]*\) .*/\1/p' "$name.client")
	[ "$rc" -eq 0 ] && [ "$src" -eq 0 ]
}

# check_pair NAME VERB COUNTER START [BLOCKS]: a pair that must have
# passed; the server's COUNTER covers the client's blocks after the ramp,
# or BLOCKS when given (all of them).
check_pair() {
	local name=$1 verb=$2 counter=$3 start=$4 blocks=${5:-$ISSUED}
	[ -n "$ISSUED" ] && [ "$ISSUED" -gt 0 ] || fail "$name: the client issued no blocks"
	[ -f "$name.stats" ] || fail "$name: no softrnic stats from the server (exec_postrun)"
	local bytes
	bytes=$(server_bytes "$name.stats" "$counter" "$SERVER_PID")
	[ -n "$bytes" ] || { cat "$name.stats" >&2; fail "$name: no $counter for the server (pid $SERVER_PID)"; }
	[ "$bytes" -ge $((blocks * BS)) ] || fail "$name: the server's $counter $bytes < $blocks blocks of $BS"
	printf 'fio: %-6s 64 KiB  %s  %6s blocks counted by fio, server %s=%s  (%s s)\n' "$verb" "$BW" "$ISSUED" \
		"$counter" "$bytes" "$((SECONDS - start))"
}

# One-sided: the client runs 1 s after the ramp at depth 16; the server
# posts one receive for the client's "done" message.
for verb in write read; do
	start=$SECONDS
	counter=rx_bytes
	[ $verb = read ] && counter=tx_bytes
	pair "$verb" --size=1m --iodepth=16 -- --verb=$verb --iodepth=16 --size=64g --time_based --runtime=1 \
		--ramp_time=700ms || { cat "$verb.client" "$verb.server" >&2; fail "$verb: client or server failed"; }
	check_pair "$verb" "$verb" "$counter" "$start"
done

# Two-sided, every block's header and CRC checked by the receiver, which
# has all 64 receives posted before the client's first SEND.
start=$SECONDS
pair send --size=4m --iodepth=64 --verify=crc32c -- --verb=send --iodepth=16 --size=4m --verify=crc32c ||
	{ cat send.client send.server >&2; fail "send: client or server failed"; }
grep -q "READ: .*io=4096KiB" send.server || { cat send.server >&2; fail "send: the server did not receive 4 MiB"; }
grep -q "verify" send.server && { cat send.server >&2; fail "send: verify complained"; }
BW="(no bandwidth: 64 blocks)"
check_pair send send rx_bytes "$start" 64
# The same client without verify headers: the verifying server must fail.
pair send-unverified --size=1m --iodepth=64 --verify=crc32c -- --verb=send --iodepth=1 --size=1m &&
	{ cat send-unverified.server >&2; fail "send: a server verifying unverified data passed"; }
grep -q "verify: bad magic header" send-unverified.server ||
	{ cat send-unverified.server >&2; fail "send: the verifying server failed otherwise than by its check"; }
echo "fio: send without verify headers: the server's crc32c verify rejects it (as it must)"
echo "fio: all runs passed"
