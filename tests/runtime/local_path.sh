#!/usr/bin/env bash
# local_path.sh — the host-local path (runtime/local_path.h) with
# unmodified programs:
#   1. ib_write_bw and ib_send_lat between two processes: the data goes
#      through the rings (local_tx_packets / local_rx_packets carry it;
#      the socket only the setup) as whole messages, one packet per 64 KiB
#      WRITE read from the sender (the message path: tx_msg_packets /
#      rx_msg_packets); with SOFTRNIC_LOCAL=packets as MTU packets through
#      the rings, and with SOFTRNIC_LOCAL=0 through UDP (no ring traffic
#      at all);
#      ib_write_lat of 64 KiB, whose ACKs ride with the peer's WRITEs and
#      whose WRITEs, each sent alone, carry their payloads in the ring
#      (local_tx_inline), while ib_write_bw's stream has its payloads
#      read from the sender; ibv_rc_pingpong -c of 32 KiB SENDs in the
#      ring, every buffer checked; and ib_read_bw, whose READ responses'
#      reads are put off and joined;
#   2. ibv_rc_pingpong -e, which sleeps in ibv_get_cq_event: the
#      receiver's doorbell wakes it (local_doorbells > 0), and it finishes;
#   3. SOFTRNIC_FAULTS on the local path: loss and reordering are applied
#      to ring packets too (no message path: the faults see every MTU
#      packet) and RC recovers (retransmits > 0);
#   4. a server SIGKILLed in the middle of ib_write_bw: the client notices
#      within 2 s (its QP's retries run out; test_peer_death checks the
#      completions one by one) and exits with an error, and the dead
#      server's ring is removed by the next device to open;
#   5. SOFTRNIC_PCAP turns the path off (the capture sees every packet);
#   6. a runtime directory without room for a ring (a container's small
#      /dev/shm, both programs' directory in it: as root only, in a mount
#      namespace): no ring, the packets go over UDP, nothing crashes (a
#      ring that outgrew its tmpfs used to end its sender with SIGBUS).
# Its programs keep their files in a runtime directory of their own
# (SOFTRNIC_RUNTIME_DIR, runtime/runtime_dir.h), so other softrnic
# programs of the user neither see its rings nor reclaim them.
#   local_path.sh LIB_DIR PORT
set -uo pipefail
LIB=$1
PORT=$2
export LD_LIBRARY_PATH=$LIB
# This test picks the path itself (CI also runs the suite with
# SOFTRNIC_LOCAL=0 in the environment).
unset SOFTRNIC_LOCAL
for p in ib_write_bw ib_send_lat ibv_rc_pingpong; do
	command -v $p >/dev/null || { echo "local_path: $p not installed; skipped"; exit 77; }
done
dir=$(mktemp -d)
rundir=$(mktemp -d /dev/shm/local_path.XXXXXX)
export SOFTRNIC_RUNTIME_DIR=$rundir
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$dir" "$rundir"; }
trap cleanup EXIT
fail() { echo "local_path: FAIL: $*" >&2; for f in "$dir"/*.log; do echo "== $f"; tail -4 "$f"; done >&2; exit 1; }
. "$(dirname "$0")/../lib.sh"

# pair NAME ENV PROGRAM ARGS...: server and client with ENV, stats at exit
pair() {
	local name=$1 envs=$2
	shift 2
	env $envs SOFTRNIC_STATS_AT_EXIT=1 timeout 60 "$@" -p "$PORT" > "$dir/$name-s.log" 2>&1 &
	local s=$!
	pids+=($s)
	wait_listen "$PORT" || fail "$name: no server"
	env $envs SOFTRNIC_STATS_AT_EXIT=1 timeout 60 "$@" -p "$PORT" 127.0.0.1 > "$dir/$name-c.log" 2>&1 ||
		fail "$name: client exited $?"
	wait "$s" || fail "$name: server exited $?"
	PORT=$((PORT + 1))
}

# 1. The data through the rings, and not with SOFTRNIC_LOCAL=0.
pair bw "X=1" ib_write_bw -n 2000
tx=$(stats_counter "$dir/bw-c.log" local_tx_packets); rx=$(stats_counter "$dir/bw-s.log" local_rx_packets)
all=$(stats_counter "$dir/bw-s.log" rx_packets)
msgs=$(stats_counter "$dir/bw-c.log" tx_msg_packets); rmsgs=$(stats_counter "$dir/bw-s.log" rx_msg_packets)
[ "$msgs" -ge 2000 ] && [ "$rmsgs" -ge 2000 ] ||
	fail "ib_write_bw: $msgs / $rmsgs whole-message packets sent / received, not >= 2000 (the message path)"
[ "$tx" -ge 2000 ] || fail "ib_write_bw: $tx packets through the client's ring sends, not >= 2000"
[ "$rx" -eq "$all" ] || fail "ib_write_bw: the server received $all packets, $rx of them from its ring"
# A stream: the payloads stay in the sender's memory for the receiver to
# read (the copy is the receiver's alone), but for the odd one sent when
# nothing else was outstanding.
inl=$(stats_counter "$dir/bw-c.log" local_tx_inline)
[ "$inl" -lt 200 ] || fail "ib_write_bw: $inl of $msgs payloads of a stream went in the ring"
echo "local_path: ib_write_bw: $msgs whole messages into rings, all $rx the server received came through its ring ($(awk '/^ *65536 /{print $4}' "$dir/bw-c.log") MB/s)"
pair bw-pkt "SOFTRNIC_LOCAL=packets" ib_write_bw -n 2000
tx=$(stats_counter "$dir/bw-pkt-c.log" local_tx_packets)
[ "$tx" -ge 32000 ] || fail "SOFTRNIC_LOCAL=packets: $tx packets through the client's ring sends, not >= 2000 x 16"
[ "$(stats_counter "$dir/bw-pkt-c.log" tx_msg_packets)" -eq 0 ] || fail "SOFTRNIC_LOCAL=packets still sent whole messages"
echo "local_path: SOFTRNIC_LOCAL=packets: $tx MTU packets into rings ($(awk '/^ *65536 /{print $4}' "$dir/bw-pkt-c.log") MB/s)"
pair bw-udp "SOFTRNIC_LOCAL=0" ib_write_bw -n 2000
[ "$(stats_counter "$dir/bw-udp-s.log" local_rx_packets)" -eq 0 ] && [ "$(stats_counter "$dir/bw-udp-c.log" local_tx_packets)" -eq 0 ] ||
	fail "SOFTRNIC_LOCAL=0 still used the rings"
pair lat "X=1" ib_send_lat -n 5000
echo "local_path: ib_send_lat over the rings: $(awk '/^ *2 /{print $5}' "$dir/lat-c.log") us (t_typical)"
# ib_write_lat spins on memory once its WRITE completed: the ACK that
# completes it must ride with the peer's WRITE behind it, in one ring
# publication (with the ACK alone it stops polling, and the WRITE waits
# for the progress thread: 0 of 3000 rode, 150 us a round trip).
pair wlat "X=1" ib_write_lat -s 65536 -n 2000
rode=$(grep ' progress:' "$dir/wlat-c.log" | sed -n 's/.* acks_rode=\([0-9]*\).*/\1/p')
acks=$(stats_counter "$dir/wlat-c.log" tx_acks)
[ "$(stats_counter "$dir/wlat-c.log" tx_msg_packets)" -ge 2000 ] || fail "ib_write_lat 64 KiB: not on the message path"
[ "${rode:-0}" -gt $((acks / 4)) ] || fail "ib_write_lat 64 KiB: ${rode:-0} of $acks ACKs rode with a WRITE"
# ... and reached the client with the WRITE: its polls took nearly all
# packets, not its progress thread once the program spun on memory (an
# ACK published alone left 30-40% to the thread; together, 0.1%).
progress_of() { grep ' progress:' "$1" | sed -n "s/.* $2=\([0-9]*\).*/\1/p"; }
by_app=$(progress_of "$dir/wlat-c.log" rx_by_app); by_thread=$(progress_of "$dir/wlat-c.log" rx_by_thread)
[ $(( ${by_thread:-0} * 10 )) -lt $(( ${by_app:-0} + ${by_thread:-0} )) ] ||
	fail "ib_write_lat 64 KiB: the progress thread received ${by_thread:-0} packets, the program's polls ${by_app:-0}"
# Each WRITE is sent alone: its payload goes in the ring, no system call.
inl=$(stats_counter "$dir/wlat-c.log" local_tx_inline)
[ "$inl" -ge 1900 ] || fail "ib_write_lat 64 KiB: $inl of 2000 WRITEs sent alone carried their payload in the ring"
echo "local_path: ib_write_lat 64 KiB: $inl payloads in the ring, ${rode:-0} of $acks ACKs rode with a WRITE, ${by_app:-0} packets taken by polls and ${by_thread:-0} by the progress thread, $(awk '/^ *65536 /{print $5}' "$dir/wlat-c.log") us (t_typical)"
# Payloads in the ring, checked byte for byte by the receiver (-c).
pair chk "X=1" ibv_rc_pingpong -g 0 -c -s 32768 -n 300
grep -q "300 iters" "$dir/chk-c.log" && grep -q "300 iters" "$dir/chk-s.log" ||
	fail "ibv_rc_pingpong -c -s 32768 did not finish its 300 iterations"
! grep -qi "corrupt\|mismatch\|invalid" "$dir/chk-c.log" "$dir/chk-s.log" || fail "ibv_rc_pingpong -c: a buffer did not check"
inl=$(( $(stats_counter "$dir/chk-c.log" local_tx_inline) + $(stats_counter "$dir/chk-s.log" local_tx_inline) ))
[ "$inl" -ge 300 ] || fail "ibv_rc_pingpong -c -s 32768: $inl SENDs carried their payload in the ring"
echo "local_path: ibv_rc_pingpong -c -s 32768: 300 iterations checked, $inl payloads in the ring"
# ib_read_bw: the requester reads the READ responses' payloads, put off
# and joined at the end of each batch.
pair rbw "X=1" ib_read_bw -n 2000
put=$(stats_counter "$dir/rbw-c.log" rx_msg_reads_put_off); batches=$(stats_counter "$dir/rbw-c.log" rx_msg_pull_batches)
[ "$put" -ge 1000 ] && [ "$batches" -lt "$put" ] ||
	fail "ib_read_bw: $put READ responses' reads put off in $batches batches"
echo "local_path: ib_read_bw: $put READ responses' reads put off, in $batches batches ($(awk '/^ *65536 /{print $4}' "$dir/rbw-c.log") MB/s)"

# 2. Event mode: the sleeping side is woken by doorbells.
pair events "X=1" ibv_rc_pingpong -e -g 0 -n 200
grep -q "200 iters" "$dir/events-c.log" || fail "ibv_rc_pingpong -e did not finish its 200 iterations"
bells=$(( $(stats_counter "$dir/events-c.log" local_doorbells) + $(stats_counter "$dir/events-s.log" local_doorbells) ))
[ "$bells" -gt 0 ] || fail "ibv_rc_pingpong -e: no doorbell rung"
echo "local_path: ibv_rc_pingpong -e: 200 iterations, $bells doorbells"

# 3. Faults apply to ring packets, and RC recovers.
pair faults "SOFTRNIC_FAULTS=loss=0.01,reorder=0.01,seed=3" ib_write_bw -n 500
[ "$(stats_counter "$dir/faults-s.log" faults_loss)" -gt 0 ] || fail "no loss injected on the local path"
[ "$(stats_counter "$dir/faults-c.log" retransmits)" -gt 0 ] || fail "no retransmission after loss on the local path"
[ "$(stats_counter "$dir/faults-c.log" tx_msg_packets)" -eq 0 ] || fail "SOFTRNIC_FAULTS: whole messages went past the faults"
echo "local_path: under loss and reordering: $(stats_counter "$dir/faults-s.log" faults_loss) lost, $(stats_counter "$dir/faults-c.log" retransmits) retransmitted, completed"

# 4. A peer killed mid-traffic.
timeout 60 ib_write_bw -D 5 -p "$PORT" > "$dir/kill-s.log" 2>&1 &
ts=$!
pids+=($ts)
wait_listen "$PORT" || fail "kill: no server"
timeout 60 ib_write_bw -D 5 -p "$PORT" 127.0.0.1 > "$dir/kill-c.log" 2>&1 &
tc=$!
pids+=($tc)
sleep 1.5
victim=$(pgrep -P "$ts" ib_write_bw) || fail "kill: no server process"
ring=$(ls "$rundir" | grep "^softrnic-local-$(id -u)-" | while read -r f; do
	[ "$(od -An -tu4 -j8 -N4 "$rundir/$f" | tr -d ' ')" = "$victim" ] && echo "$f"; done)
[ -n "$ring" ] || fail "kill: the server has no ring"
kill -KILL "$victim"
killed_at=$SECONDS
wait "$tc"
[ $? -ne 0 ] || fail "kill: the client of a killed server reported success"
# Its QP failed (retries exhausted) well before the 5 s run would end;
# test_peer_death checks each completion of such a death.
[ $((SECONDS - killed_at)) -le 2 ] || fail "kill: the client took $((SECONDS - killed_at)) s to notice"
[ -e "$rundir/$ring" ] || fail "kill: the dead server's ring vanished by itself?"
ibv_devinfo > /dev/null
[ ! -e "$rundir/$ring" ] || fail "kill: the dead server's ring $ring was not removed by the next device"
pids=()
echo "local_path: a server killed mid-run: the client failed within $((SECONDS - killed_at)) s; the dead ring was removed"
PORT=$((PORT + 1))

# 5. A capture keeps everything on the socket.
pair pcap "SOFTRNIC_PCAP=$dir/cap-%p.pcap" ib_write_bw -n 200
[ "$(stats_counter "$dir/pcap-c.log" local_tx_packets)" -eq 0 ] || fail "SOFTRNIC_PCAP: the rings were used"
# 6. A /dev/shm of 4 MiB, too small for one 8 MiB ring, shared by both
#    programs, their runtime directory in it.  The packet ring
#    (SOFTRNIC_LOCAL=packets) would fill the whole area: a ring tmpfs
#    could not back ended its sender with SIGBUS.
if [ "$(id -u)" -eq 0 ] && unshare -m true 2> /dev/null; then
	unshare -m bash -c '
		mount -t tmpfs -o size=4m tmpfs /dev/shm || exit 77
		. "$3/../lib.sh"
		export SOFTRNIC_LOCAL=packets SOFTRNIC_STATS_AT_EXIT=1 SOFTRNIC_RUNTIME_DIR=/dev/shm/run
		timeout 60 ib_write_bw -n 2000 -p "$1" > "$2/shm-s.log" 2>&1 &
		s=$!
		wait_listen "$1" || { kill $s; exit 1; }
		# The server keeps its stats file in the small tmpfs: the ring
		# would have gone there too.
		ls /dev/shm/run | grep -q "^softrnic-[0-9]" || { kill $s; exit 1; }
		timeout 60 ib_write_bw -n 2000 -p "$1" 127.0.0.1 > "$2/shm-c.log" 2>&1
		c=$?
		wait $s
		echo "$c $?" > "$2/shm.rc"' _ "$PORT" "$dir" "$(dirname "$0")"
	case $? in
	77) echo "local_path: no tmpfs could be mounted: the small /dev/shm check skipped" ;;
	0)
		read -r crc src < "$dir/shm.rc"
		[ "$crc" = 0 ] && [ "$src" = 0 ] || fail "a 4 MiB /dev/shm: client exited $crc, server $src"
		[ "$(stats_counter "$dir/shm-c.log" local_tx_packets)" -eq 0 ] || fail "a 4 MiB /dev/shm: a ring was used"
		echo "local_path: a 4 MiB /dev/shm: no ring, ib_write_bw over UDP ($(awk '/^ *65536 /{print $4}' "$dir/shm-c.log") MB/s)"
		;;
	*) fail "a 4 MiB /dev/shm: the programs did not run" ;;
	esac
	PORT=$((PORT + 1))
else
	echo "local_path: not root: the small /dev/shm check skipped"
fi
echo "local_path: all checks passed"
