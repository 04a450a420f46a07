#!/bin/sh
# faults_e2e.sh — SOFTRNIC_FAULTS on the real path, with unmodified
# programs over our libibverbs.so.1; both sides get the same
# SOFTRNIC_FAULTS (each injects into what it receives, so both directions
# are disturbed):
#   1. ib_send_bw under loss, dup, reorder and delay: completes (RC's
#      Go-Back-N recovers), SOFTRNIC_STATS_AT_EXIT shows faults_loss,
#      faults_dup, faults_reorder, faults_delay and retransmits non-zero,
#      and `softrnic stats PID` printed the faults_* counters of the
#      running server, faults_delay > 0;
#   2. ibv_rc_pingpong -c (buffers validated) under dup, reorder and
#      delay; and test_two_process (SEND, WRITE, READ, data checked at the
#      far end) under loss, dup, reorder and delay; ib_write_bw under loss
#      with selective repeat, and with a client that does Go-Back-N;
#   3. ib_write_bw under corrupt: completes, and every flipped bit was
#      caught by the ICRC check (rx_drop_bad_icrc = faults_corrupt on each
#      side, > 0);
#   4. one seed, twice, on a loss-free ping-pong of one-packet messages:
#      the same fault counts on each side both times (the packet counts
#      may differ by an ACK or so with timing; with this seed the next
#      duplicate decision lies far beyond that);
#   5. a malformed SOFTRNIC_FAULTS: the device does not open, and stderr
#      says what is wrong.
# Loss is never put under ibv_rc_pingpong: it has no closing handshake,
# so a lost last ACK (the peer has exited) ends the run with "transport
# retry counter exceeded", as on any RoCE network (docs/capture_and_faults.md).
# Seeds are fixed, so the counters checked to be non-zero are so from the
# first packets on, whatever the timing.
#
# usage: faults_e2e.sh <libdir> <softrnic-tool> <test_two_process> <tcp-port>
# Needs ibv_rc_pingpong, ib_send_bw, ib_write_bw; exit 77 (skip) otherwise.
set -u
libdir=$1 tool=$2 two_process=$3 port=$4

for p in ibv_rc_pingpong ib_send_bw ib_write_bw ibv_devinfo ss; do
	command -v $p >/dev/null 2>&1 || { echo "skip: $p not installed"; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/faults_e2e.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/../lib.sh"

run() { # program args...
	prog=$1
	shift
	env LD_LIBRARY_PATH="$libdir" SOFTRNIC_STATS_AT_EXIT=1 SOFTRNIC_FAULTS="$faults" ${RUN_ENV:-} \
	    ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} timeout -k 5 60 "$prog" -p "$port" "$@"
}

# A server and a client of `prog`; with WATCH set, samples
# `softrnic stats` of the server meanwhile.
run_pair() { # tag prog args...
	tag=$1 prog=$2
	shift 2
	run "$prog" "$@" > "$work/$tag-server.log" 2>&1 &
	server=$!
	wait_server "$port" "$server" "$work/$tag-server.log" || fail "server never listened"
	RUN_ENV=${CLIENT_ENV:-} run "$prog" "$@" 127.0.0.1 > "$work/$tag-client.log" 2>&1 &
	client=$!
	: > "$work/$tag-stats.txt"
	if [ -n "${WATCH:-}" ]; then
		# The program's pid, from the line announcing the faults
		# ($server is the shell's, not the program's).
		pid=$(sed -n 's/^softrnic: pid \([0-9]*\): SOFTRNIC_FAULTS.*/\1/p' "$work/$tag-server.log")
		[ -n "$pid" ] || fail "$tag: the server did not announce its faults"
		while kill -0 "$client" 2>/dev/null; do
			"$tool" stats "$pid" >> "$work/$tag-stats.txt" 2>&1
			sleep 0.05
		done
	fi
	wait "$client"
	crc=$?
	wait "$server"
	src=$?
	if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
		cat "$work/$tag-server.log" "$work/$tag-client.log"
		fail "$tag: server exit $src, client exit $crc"
	fi
	port=$((port + 1))
}


both() { # tag name: the sum over both sides
	echo $(( $(stats_counter "$work/$1-server.log" "$2") + $(stats_counter "$work/$1-client.log" "$2") ))
}

need() { # tag counters...: each non-zero on one side at least
	tag=$1
	shift
	for c in "$@"; do
		[ "$(both "$tag" "$c")" -gt 0 ] ||
			{ cat "$work/$tag-server.log" "$work/$tag-client.log"; fail "$tag: $c is 0"; }
	done
}

# 1. ib_send_bw under loss, dup, reorder, delay; softrnic stats watched.
faults="loss=0.005,dup=0.01,reorder=0.005,delay=50us,seed=4"
WATCH=1 run_pair bw ib_send_bw -x 0 -s 65536 -n 3000
need bw faults_loss faults_dup faults_reorder faults_delay retransmits
grep -q "SOFTRNIC_FAULTS on received packets: loss=0.005,dup=0.01,reorder=0.005,delay=50000ns,seed=4" \
    "$work/bw-server.log" || fail "bw: no announcement of the faults on stderr"
seen=$(sed -n 's/^  faults_delay *\([0-9]*\)$/\1/p' "$work/bw-stats.txt" | sort -n | tail -n 1)
[ "${seen:-0}" -gt 0 ] || { cat "$work/bw-stats.txt"; fail "bw: softrnic stats never showed faults_delay > 0"; }
for c in faults_loss faults_dup faults_reorder faults_delay faults_corrupt; do
	grep -q "^  $c " "$work/bw-stats.txt" || fail "bw: softrnic stats does not print $c"
done
echo "bw ($faults): ib_send_bw done; lost $(both bw faults_loss), dup $(both bw faults_dup)," \
     "reordered $(both bw faults_reorder), delayed $(both bw faults_delay), retransmits $(both bw retransmits);" \
     "softrnic stats showed faults_delay up to $seen while it ran"

# 2a. Buffers validated under dup, reorder, delay.
faults="dup=0.02,reorder=0.05,delay=50us,seed=4"
run_pair pp ibv_rc_pingpong -c -g 0 -m 1024 -s 16384 -n 100
need pp faults_dup faults_reorder faults_delay
for side in server client; do
	grep -Eq '^[0-9]+ bytes in [0-9.]+ seconds' "$work/pp-$side.log" || fail "pp: $side did not finish"
done
echo "pp ($faults): ibv_rc_pingpong -c done on both sides; dup $(both pp faults_dup)," \
     "reordered $(both pp faults_reorder), retransmits $(both pp retransmits)"

# 2b. SEND, WRITE, READ checked at the far end, under loss too.
faults="loss=0.03,dup=0.01,reorder=0.02,delay=20us,seed=4"
env SOFTRNIC_STATS_AT_EXIT=1 SOFTRNIC_FAULTS="$faults" timeout -k 5 60 "$two_process" > "$work/tp.log" 2>&1 ||
	{ cat "$work/tp.log"; fail "test_two_process failed under $faults"; }
[ "$(grep -c ': ok$' "$work/tp.log")" -eq 2 ] || { cat "$work/tp.log"; fail "test_two_process: not both sides ok"; }
lost=$(( $(stats_counter "$work/tp.log" faults_loss 1) + $(stats_counter "$work/tp.log" faults_loss 2) ))
retx=$(( $(stats_counter "$work/tp.log" retransmits 1) + $(stats_counter "$work/tp.log" retransmits 2) ))
[ "$lost" -gt 0 ] && [ "$retx" -gt 0 ] || { cat "$work/tp.log"; fail "test_two_process: lost $lost, retransmits $retx"; }
echo "two_process ($faults): SEND/WRITE/READ data right; lost $lost, retransmits $retx"

# 2c. Loss recovery: selective repeat between two softrnic processes (the
#     server keeps what came after each hole and NAKs selectively, the
#     client resends only the holes); Go-Back-N as soon as one side does
#     not do it: a client with SOFTRNIC_SELECTIVE_REPEAT=0 sends no SR bit,
#     so the server keeps nothing and NAKs as IBTA says.
faults="loss=0.01,seed=5"
run_pair sr ib_write_bw -x 0 -s 65536 -n 1000
need sr reorder_stored tx_nak_selective rx_nak_selective retransmits
[ "$(both sr rx_nak_psn_seq)" -eq 0 ] || { cat "$work/sr-server.log"; fail "sr: a Go-Back-N NAK between selective peers"; }
CLIENT_ENV=SOFTRNIC_SELECTIVE_REPEAT=0 run_pair gbn ib_write_bw -x 0 -s 65536 -n 1000
need gbn tx_nak_psn_seq rx_nak_psn_seq retransmits
for c in reorder_stored tx_nak_selective rx_nak_selective; do
	[ "$(both gbn $c)" -eq 0 ] || { cat "$work/gbn-server.log"; fail "gbn: $c with a Go-Back-N client"; }
done
echo "recovery ($faults): ib_write_bw selective: retransmits $(both sr retransmits)," \
     "kept $(both sr reorder_stored), selective NAKs $(both sr tx_nak_selective);" \
     "with a Go-Back-N client: retransmits $(both gbn retransmits), NAKs $(both gbn tx_nak_psn_seq)"

# 3. corrupt: each flipped bit is an ICRC drop.
faults="corrupt=0.01,seed=3"
run_pair corrupt ib_write_bw -x 0 -s 65536 -n 1000
for side in server client; do
	log=$work/corrupt-$side.log
	fc=$(stats_counter "$log" faults_corrupt)
	bad=$(stats_counter "$log" rx_drop_bad_icrc)
	[ "$fc" -gt 0 ] && [ "$bad" -eq "$fc" ] || { cat "$log"; fail "corrupt: $side faults_corrupt=$fc rx_drop_bad_icrc=$bad"; }
done
need corrupt retransmits
echo "corrupt ($faults): faults_corrupt = rx_drop_bad_icrc on each side ($(both corrupt faults_corrupt) in all)," \
     "retransmits $(both corrupt retransmits)"

# 4. One seed, one outcome: a loss-free ping-pong of one-packet messages,
#    twice (no retransmission timer decides anything).  seed=7 draws its
#    duplicates at packets 6, 26, 30, 45, then 80: each side receives
#    about 63 packets, so 4 each, whatever an ACK more or less.
faults="dup=0.1,seed=7"
sig() { # tag
	for side in server client; do
		printf '%s ' "$side:faults_dup=$(stats_counter "$work/$1-$side.log" faults_dup)"
	done
}
packets() { # tag
	echo "rx_packets $(stats_counter "$work/$1-server.log" rx_packets)/$(stats_counter "$work/$1-client.log" rx_packets)"
}
run_pair seed1 ibv_rc_pingpong -g 0 -s 64 -n 30
run_pair seed2 ibv_rc_pingpong -g 0 -s 64 -n 30
[ "$(sig seed1)" = "$(sig seed2)" ] || fail "seed=7 twice: $(sig seed1) / $(sig seed2)"
[ "$(sig seed1)" = "server:faults_dup=4 client:faults_dup=4 " ] || fail "seed=7: $(sig seed1), expected 4 each"
echo "seed=7 twice: $(sig seed1)(server/client $(packets seed1), then $(packets seed2))"

# 5. Malformed: the open fails and says why.
out=$(env LD_LIBRARY_PATH="$libdir" SOFTRNIC_FAULTS="loss=0.1,delay=5" \
      ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} timeout 10 ibv_devinfo 2>&1)
echo "$out" | grep -q 'softrnic: SOFTRNIC_FAULTS="loss=0.1,delay=5": delay=5: expected a time with a unit' ||
	fail "malformed SOFTRNIC_FAULTS: $out"
echo "$out" | grep -q "hca_id" && fail "malformed SOFTRNIC_FAULTS: the device opened anyway"
echo "malformed: refused at device open: $(echo "$out" | grep SOFTRNIC_FAULTS | head -n 1)"
echo "faults_e2e: ok"
