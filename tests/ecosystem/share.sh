#!/usr/bin/env bash
# share.sh — several processes behind one host address (softrnic-hostd,
# runtime/host_share.h), with unmodified programs:
#   1. four processes on one loopback address: two perftest ib_write_bw
#      pairs at once, every process on 127.0.0.60;
#   2. two rping servers on that address (different ports) and their
#      clients through the connection manager; a second listener on a
#      port already served there is refused (EADDRINUSE);
#   3. a member killed with SIGKILL in the middle of its traffic: the
#      other pair finishes undisturbed, and a new pair then starts on the
#      address (the dead member's slot is reused);
#   4. (root only) two network namespaces, one address each, two
#      ib_write_bw pairs across the same two addresses at once.
#   share.sh LIB_DIR PORT_BASE
set -uo pipefail
LIB=$1
PORT=$2
export LD_LIBRARY_PATH=$LIB
command -v ib_write_bw >/dev/null && command -v rping >/dev/null ||
	{ echo "share: perftest/rdmacm-utils not installed; skipped"; exit 77; }
dir=$(mktemp -d)
NS_A=srt-share-a-$$
NS_B=srt-share-b-$$
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
. "$(dirname "$0")/../lib.sh"
fail() { echo "share: FAIL: $*" >&2; for f in "$dir"/*.log; do echo "== $f"; tail -5 "$f"; done >&2; exit 1; }
export SOFTRNIC_ADDR=127.0.0.60

bw_of() { awk '/^ *65536 / { print $4 }' "$1"; }

# 1. Two ib_write_bw pairs at once, all four processes on one address.
for k in 1 2; do
	timeout 60 ib_write_bw -n 3000 -p $((PORT + k)) > "$dir/s$k.log" 2>&1 &
	pids+=($!)
done
wait_listen $((PORT + 1)) && wait_listen $((PORT + 2)) || fail "perftest servers did not start"
for k in 1 2; do
	timeout 60 ib_write_bw -n 3000 -p $((PORT + k)) 127.0.0.1 > "$dir/c$k.log" 2>&1 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "an ib_write_bw of the two pairs exited $?"; done
pids=()
for k in 1 2; do
	[ -n "$(bw_of "$dir/c$k.log")" ] || fail "pair $k printed no bandwidth"
	# perftest prints each side's GID: all four are the one address
	[ "$(grep -c "GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:60" "$dir/c$k.log")" -eq 2 ] ||
		fail "pair $k: both GIDs are not ::ffff:127.0.0.60"
done
echo "share: two ib_write_bw pairs on one address: $(bw_of "$dir/c1.log") and $(bw_of "$dir/c2.log") MB/s"

# 2. Two rping servers on the one address, a client for each; a third
#    listener on a port taken there is refused.
for k in 1 2; do
	timeout 30 rping -s -a 127.0.0.60 -p $((PORT + 10 + k)) -C 50 > "$dir/rs$k.log" 2>&1 &
	pids+=($!)
done
sleep 0.3
for k in 1 2; do
	timeout 30 rping -c -a 127.0.0.60 -p $((PORT + 10 + k)) -C 50 -v > "$dir/rc$k.log" 2>&1 || fail "rping client $k"
	grep -q "rdma-ping-49" "$dir/rc$k.log" || fail "rping client $k did not finish its 50 pings"
done
for p in "${pids[@]}"; do wait "$p" || fail "an rping server exited $?"; done
pids=()
timeout 10 rping -s -a 127.0.0.60 -p $((PORT + 13)) -C 1 > "$dir/rs3.log" 2>&1 &
pids+=($!)
sleep 0.3
timeout 5 rping -s -a 127.0.0.60 -p $((PORT + 13)) -C 1 > "$dir/rs4.log" 2>&1 && fail "a second listener on one port was accepted"
grep -q "Address already in use" "$dir/rs4.log" || fail "second listener: $(cat "$dir/rs4.log")"
kill "${pids[@]}" 2>/dev/null
wait 2>/dev/null
pids=()
echo "share: two rping servers on one address, 50 pings each; a duplicate listener refused"

# 3. SIGKILL one member mid-traffic; the other pair is undisturbed.
timeout 60 ib_write_bw -D 4 -p $((PORT + 21)) > "$dir/k-s.log" 2>&1 &
victim=$!
timeout 60 ib_write_bw -n 20000 -p $((PORT + 22)) > "$dir/ok-s.log" 2>&1 &
ok_server=$!
pids+=($victim $ok_server)
wait_listen $((PORT + 21)) && wait_listen $((PORT + 22)) || fail "servers of the kill test did not start"
timeout 60 ib_write_bw -D 4 -p $((PORT + 21)) 127.0.0.1 > "$dir/k-c.log" 2>&1 &
victim_client=$!
timeout 60 ib_write_bw -n 20000 -p $((PORT + 22)) 127.0.0.1 > "$dir/ok-c.log" 2>&1 &
ok_client=$!
pids+=($victim_client $ok_client)
sleep 1
# the program itself, not its `timeout` (which would not pass SIGKILL on)
victim_pid=$(pgrep -P "$victim" ib_write_bw) || fail "no ib_write_bw under $victim"
kill -KILL "$victim_pid"
wait "$ok_client" || fail "the undisturbed client exited $? after the kill"
wait "$ok_server" || fail "the undisturbed server exited $? after the kill"
[ -n "$(bw_of "$dir/ok-c.log")" ] || fail "the undisturbed pair printed no bandwidth"
wait "$victim" 2>/dev/null
wait "$victim_client"                 # it lost its peer mid-run: it must fail
[ $? -ne 0 ] || fail "the client of the killed server reported success"
grep -q "65536" "$dir/k-s.log" && fail "the killed server printed a result"

pids=()
timeout 60 ib_write_bw -n 2000 -p $((PORT + 23)) > "$dir/n-s.log" 2>&1 &
pids+=($!)
wait_listen $((PORT + 23)) || fail "the new server did not start"
timeout 60 ib_write_bw -n 2000 -p $((PORT + 23)) 127.0.0.1 > "$dir/n-c.log" 2>&1 || fail "the new pair after the kill"
wait "${pids[@]}" || fail "the new server"
pids=()
echo "share: a member SIGKILLed mid-run; the other pair finished ($(bw_of "$dir/ok-c.log") MB/s), a new pair ran after"

# 4. Two namespaces, one address each, two pairs across them at once.
if [ "$(id -u)" -ne 0 ]; then
	echo "share: not root: the two-namespace run is skipped"
	exit 0
fi
unset SOFTRNIC_ADDR
netns_pair "$NS_A" "$NS_B" srtsh0 10.197.0.1 10.197.0.2 || fail "two namespaces over a veth"
export SOFTRNIC_IFACE=srtsh0
for k in 1 2; do
	timeout 60 ip netns exec "$NS_A" ib_write_bw -n 3000 -p $((PORT + 30 + k)) > "$dir/ns-s$k.log" 2>&1 &
	pids+=($!)
done
wait_listen $((PORT + 31)) ip netns exec "$NS_A" && wait_listen $((PORT + 32)) ip netns exec "$NS_A" ||
	fail "the namespace servers did not start"
for k in 1 2; do
	timeout 60 ip netns exec "$NS_B" ib_write_bw -n 3000 -p $((PORT + 30 + k)) 10.197.0.1 > "$dir/ns-c$k.log" 2>&1 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "an ib_write_bw across the namespaces exited $?"; done
pids=()
for k in 1 2; do [ -n "$(bw_of "$dir/ns-c$k.log")" ] || fail "namespace pair $k printed no bandwidth"; done
echo "share: two namespaces, one address each, two pairs at once: $(bw_of "$dir/ns-c1.log") and $(bw_of "$dir/ns-c2.log") MB/s"
echo "share: all checks passed"
