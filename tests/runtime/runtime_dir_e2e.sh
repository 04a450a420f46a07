#!/usr/bin/env bash
# runtime_dir_e2e.sh — the runtime directory (runtime/runtime_dir.h) with
# unmodified programs:
#   1. 20 ibv_rc_pingpong servers SIGKILLed leave their stats files and
#      rings; the next program to open a device (ibv_devinfo) removes
#      every one;
#   2. rping and ucmatose (librdmacm, which never closes the device)
#      leave nothing once they exit, and print their counters with
#      SOFTRNIC_STATS_AT_EXIT=1;
#   3. FIFOs and links at names softrnic opens in the runtime directory
#      (rings of a fixed SOFTRNIC_ADDR, stats files, the aside name of a
#      dead ring), and at /dev/shm/softrnic-* where root's readers look
#      for other users' directories: ibv_devinfo, an ibv_rc_pingpong pair,
#      `softrnic stats`, `stats --qp` and `devices` finish within seconds,
#      the links' targets unchanged;
#   4. SOFTRNIC_PCAP refuses an existing file (one line naming it; the
#      file unchanged), a link (also with SOFTRNIC_PCAP_OVERWRITE=1: its
#      target unchanged) and a FIFO (at once); SOFTRNIC_PCAP_OVERWRITE=1
#      rewrites a regular file of ours;
#   5. as root, with user nobody: a runtime directory of nobody's given
#      to root is refused in one line and an ibv_rc_pingpong pair still
#      runs, over UDP, writing nothing there; root's `softrnic devices`
#      lists nobody's device and nobody's does not list root's; nobody's
#      `softrnic stats PID` of root's process is "permission denied".
# Its programs use a runtime directory of their own (SOFTRNIC_RUNTIME_DIR).
#   runtime_dir_e2e.sh LIB_DIR SOFTRNIC PORT
set -uo pipefail
LIB=$1
TOOL=$2
PORT=$3
export LD_LIBRARY_PATH=$LIB
unset SOFTRNIC_PCAP SOFTRNIC_PCAP_OVERWRITE SOFTRNIC_STATS_AT_EXIT
for p in ibv_rc_pingpong ibv_devinfo rping ucmatose; do
	command -v $p > /dev/null || { echo "runtime_dir_e2e: $p not installed; skipped"; exit 77; }
done
work=$(mktemp -d)
rundir=$(mktemp -d /dev/shm/runtime_dir_e2e.XXXXXX)
export SOFTRNIC_RUNTIME_DIR=$rundir
pids=()
shm_plants=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2> /dev/null; done
	for f in "${shm_plants[@]}"; do rm -f "$f"; done
	rm -rf "$work" "$rundir"
}
trap cleanup EXIT
fail() { echo "runtime_dir_e2e: FAIL: $*" >&2; for f in "$work"/*.log; do [ -f "$f" ] && { echo "== $f"; tail -5 "$f"; }; done >&2; exit 1; }
. "$(dirname "$0")/../lib.sh"
# files in the runtime directory whose name starts with $1
count() { ls -A "$rundir" | grep -c "^$1"; }
# cmd...: runs it with a 5 s limit; fails the test if it hangs
quick() { timeout -k 1 5 "$@"; local rc=$?; [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "'$*' hung"; return $rc; }

# 1. 20 servers killed.
for i in $(seq 20); do
	ibv_rc_pingpong -g 0 -p $((PORT + i)) > "$work/kill-$i.log" 2>&1 &
	pids+=($!)
done
for i in $(seq 20); do wait_listen $((PORT + i)) || fail "server $i did not start"; done
rings=20
[ "${SOFTRNIC_LOCAL:-}" = 0 ] && rings=0        # no host-local path: no rings
[ "$(count softrnic-local-)" -eq $rings ] && [ "$(count 'softrnic-[0-9]')" -eq 20 ] ||
	fail "20 servers: $(count softrnic-local-) rings and $(count 'softrnic-[0-9]') stats files"
for p in "${pids[@]}"; do kill -KILL "$p"; done
wait "${pids[@]}" 2> /dev/null
pids=()
[ "$(count softrnic-)" -eq $((20 + rings)) ] || fail "20 killed servers left $(count softrnic-) files, not $((20 + rings)) (yet)"
quick ibv_devinfo > /dev/null || fail "ibv_devinfo failed"
[ "$(count softrnic-)" -eq 0 ] || fail "after 20 killed servers and ibv_devinfo: $(ls "$rundir")"
echo "runtime_dir_e2e: 20 killed ibv_rc_pingpong servers: $((20 + rings)) files, none after the next device opened"
PORT=$((PORT + 21))

# 2. librdmacm programs: nothing left, counters printed.
# client LOG CMD...: until it connects (a client before the server's
# listener is rejected at once), at most 5 s.
client() {
	local log=$1 i rc
	shift
	for i in $(seq 50); do
		SOFTRNIC_STATS_AT_EXIT=1 timeout 30 "$@" > "$log" 2>&1 && return 0
		rc=$?
		sleep 0.1
	done
	return $rc
}
SOFTRNIC_STATS_AT_EXIT=1 timeout 30 rping -s -a 127.0.0.1 -p "$PORT" -C 3 > "$work/rping-s.log" 2>&1 &
s=$!
client "$work/rping-c.log" rping -c -a 127.0.0.1 -p "$PORT" -C 3 || fail "rping client exited $?"
wait $s || fail "rping server exited $?"
for side in s c; do
	grep -q "softrnic: softrnic0 (pid [0-9]*) counters: .*rx_gsi_mads=" "$work/rping-$side.log" &&
		grep -q "softrnic: progress:" "$work/rping-$side.log" || fail "rping ($side): no counters at exit"
done
[ "$(count softrnic-)" -eq 0 ] || fail "rping left $(ls "$rundir")"
PORT=$((PORT + 1))
SOFTRNIC_STATS_AT_EXIT=1 timeout 30 ucmatose -p "$PORT" > "$work/ucma-s.log" 2>&1 &
s=$!
client "$work/ucma-c.log" ucmatose -s 127.0.0.1 -p "$PORT" || fail "ucmatose client exited $?"
wait $s || fail "ucmatose server exited $?"
grep -q "counters:" "$work/ucma-s.log" && grep -q "counters:" "$work/ucma-c.log" || fail "ucmatose: no counters at exit"
[ "$(count softrnic-)" -eq 0 ] || fail "ucmatose left $(ls "$rundir")"
echo "runtime_dir_e2e: rping and ucmatose: counters printed at exit, no file left"
PORT=$((PORT + 1))

# 3. FIFOs and links at the names softrnic opens.
echo precious > "$work/target"
cp "$work/target" "$work/target.orig"
uid=$(id -u)
netns=$(printf '%x' "$(stat -L -c %i /proc/self/ns/net)")
ring_of() { printf 'softrnic-local-%s-%s-%08x-0' "$uid" "$netns" "$1"; }
mkfifo "$rundir/$(ring_of $((0x7f0000d3)))"                 # 127.0.0.211's ring: a FIFO
ln -s "$work/target" "$rundir/$(ring_of $((0x7f0000d4)))"   # 127.0.0.212's ring: a link
mkfifo "$rundir/softrnic-local-$uid-x" "$rundir/softrnic-999999" "$rundir/softrnic-gc-$uid-1"
ln -s "$work/target" "$rundir/softrnic-$$"                  # the stats name of a live process of ours
ln -s "$work/target" "$rundir/softrnic-local-$uid-y"
if [ -w /dev/shm ]; then
	# Where root's readers look for other users' directories.
	for n in 4000000001 4000000002; do [ -e "/dev/shm/softrnic-$n" ] && fail "/dev/shm/softrnic-$n exists"; done
	mkfifo /dev/shm/softrnic-4000000001 && shm_plants+=(/dev/shm/softrnic-4000000001)
	ln -s "$rundir" /dev/shm/softrnic-4000000002 && shm_plants+=(/dev/shm/softrnic-4000000002)
fi
quick ibv_devinfo > /dev/null || fail "ibv_devinfo among FIFOs and links failed"
SOFTRNIC_SHARE=0 SOFTRNIC_ADDR=127.0.0.211 quick ibv_rc_pingpong -g 0 -p "$PORT" -n 20 > "$work/plant-s.log" 2>&1 &
s=$!
wait_listen "$PORT" || fail "no server among the plants"
SOFTRNIC_SHARE=0 SOFTRNIC_ADDR=127.0.0.212 quick ibv_rc_pingpong -g 0 -p "$PORT" -n 20 127.0.0.1 > "$work/plant-c.log" 2>&1 ||
	fail "ibv_rc_pingpong client among the plants exited $?"
wait $s || fail "ibv_rc_pingpong server among the plants exited $?"
quick "$TOOL" stats > "$work/stats.log" 2>&1 || fail "softrnic stats among the plants failed"
quick "$TOOL" devices > "$work/devices.log" 2>&1 || fail "softrnic devices among the plants failed"
quick "$TOOL" stats --qp $$ > "$work/qp.log" 2>&1
grep -q "no softrnic device in process $$" "$work/qp.log" || fail "softrnic stats --qp of the link at our stats name: $(cat "$work/qp.log")"
cmp -s "$work/target" "$work/target.orig" || fail "a link's target was written"
for f in "$(ring_of $((0x7f0000d3)))" softrnic-local-$uid-x softrnic-999999 softrnic-gc-$uid-1; do
	[ -p "$rundir/$f" ] || fail "the FIFO $f was replaced"
done
for f in "$(ring_of $((0x7f0000d4)))" softrnic-$$ softrnic-local-$uid-y; do
	[ -L "$rundir/$f" ] || fail "the link $f was replaced"
done
rm -f "$rundir"/softrnic-*
for f in "${shm_plants[@]}"; do rm -f "$f"; done
shm_plants=()
echo "runtime_dir_e2e: FIFOs and links at the names: ibv_devinfo, a pingpong, softrnic stats/devices finished; nothing followed"
PORT=$((PORT + 1))

# 4. Captures never overwrite.
echo "not a capture" > "$work/old.pcap"
cp "$work/old.pcap" "$work/old.orig"
out=$(SOFTRNIC_PCAP=$work/old.pcap quick ibv_devinfo 2>&1) && fail "ibv_devinfo overwrote an existing capture file"
echo "$out" | grep -q "softrnic: SOFTRNIC_PCAP=$work/old.pcap: $work/old.pcap exists; softrnic does not overwrite it" ||
	fail "the refusal of an existing file: $out"
cmp -s "$work/old.pcap" "$work/old.orig" || fail "the existing capture file changed"
ln -s "$work/target" "$work/link.pcap"
for o in 0 1; do
	out=$(SOFTRNIC_PCAP_OVERWRITE=$o SOFTRNIC_PCAP=$work/link.pcap quick ibv_devinfo 2>&1) &&
		fail "a capture went through a link (SOFTRNIC_PCAP_OVERWRITE=$o)"
	echo "$out" | grep -q "link.pcap" || fail "the refusal of a link: $out"
done
cmp -s "$work/target" "$work/target.orig" || fail "a capture wrote through a link"
mkfifo "$work/fifo.pcap"
for o in 0 1; do
	SOFTRNIC_PCAP_OVERWRITE=$o SOFTRNIC_PCAP=$work/fifo.pcap quick ibv_devinfo > /dev/null 2>&1 &&
		fail "a capture went into a FIFO (SOFTRNIC_PCAP_OVERWRITE=$o)"
done
SOFTRNIC_PCAP_OVERWRITE=1 SOFTRNIC_PCAP=$work/old.pcap quick ibv_devinfo > /dev/null ||
	fail "SOFTRNIC_PCAP_OVERWRITE=1 did not rewrite a file of ours"
"$TOOL" decode "$work/old.pcap" > /dev/null 2>&1 || fail "the rewritten capture is not a pcap file"
[ "$(stat -c %a "$work/old.pcap")" = 644 ] || fail "the rewritten file's mode changed"
SOFTRNIC_PCAP=$work/new-%p.pcap quick ibv_devinfo > /dev/null || fail "a new capture file"
[ "$(stat -c %a "$work"/new-*.pcap)" = 600 ] || fail "a new capture file is not 0600"
echo "runtime_dir_e2e: SOFTRNIC_PCAP refused an existing file, a link and a FIFO; overwrote with SOFTRNIC_PCAP_OVERWRITE=1"

# 5. Another user (root only).
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv > /dev/null; then
	echo "runtime_dir_e2e: not root (or no setpriv): the checks with user nobody skipped"
	echo "runtime_dir_e2e: all checks passed"
	exit 0
fi
as_nobody() { env -u SOFTRNIC_RUNTIME_DIR -u XDG_RUNTIME_DIR setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# A clone in a folder only its owner may enter (mktemp -d) is out of
# nobody's reach: nothing to check as nobody then.
if ! as_nobody test -x "$TOOL" -a -r "$LIB/libibverbs.so.1"; then
	echo "runtime_dir_e2e: user nobody cannot reach $TOOL and $LIB (the folders' modes): the checks with user nobody skipped"
	echo "runtime_dir_e2e: all checks passed"
	exit 0
fi
squat=$work/squat
mkdir -m 700 "$squat" && chown 65534:65534 "$squat" || fail "setup of a directory of nobody's"
SOFTRNIC_RUNTIME_DIR=$squat timeout 30 ibv_rc_pingpong -g 0 -p "$PORT" -n 20 > "$work/squat-s.log" 2>&1 &
s=$!
wait_listen "$PORT" || fail "no server beside a squatted directory"
SOFTRNIC_RUNTIME_DIR=$squat timeout 30 ibv_rc_pingpong -g 0 -p "$PORT" -n 20 127.0.0.1 > "$work/squat-c.log" 2>&1 ||
	fail "client beside a squatted directory exited $?"
wait $s || fail "server beside a squatted directory exited $?"
for side in s c; do
	[ "$(grep -c "runtime directory $squat refused: owned by another user (owner uid 65534, we are uid 0).*SOFTRNIC_RUNTIME_DIR" "$work/squat-$side.log")" = 1 ] ||
		fail "no one-line refusal of the squatted directory ($side)"
done
[ -z "$(ls -A "$squat")" ] || fail "something was written into the squatted directory"
PORT=$((PORT + 1))
# A device of nobody's and one of root's, side by side.
# (not through the function: in the background it would be a subshell,
# and $! not the program's pid)
env -u SOFTRNIC_RUNTIME_DIR -u XDG_RUNTIME_DIR setpriv --reuid=65534 --regid=65534 --clear-groups \
	ibv_rc_pingpong -g 0 -p "$PORT" > "$work/nobody.log" 2>&1 &
npid=$!
pids+=($npid)
ibv_rc_pingpong -g 0 -p $((PORT + 1)) > "$work/root.log" 2>&1 &
rpid=$!
pids+=($rpid)
wait_listen "$PORT" && wait_listen $((PORT + 1)) || fail "the two servers did not start"
"$TOOL" devices > "$work/root-devices.log" 2>&1
grep -q "^$npid " "$work/root-devices.log" && grep -q "^$rpid " "$work/root-devices.log" ||
	fail "root's softrnic devices does not list both: $(cat "$work/root-devices.log")"
as_nobody "$TOOL" devices > "$work/nobody-devices.log" 2>&1
grep -q "^$npid " "$work/nobody-devices.log" && ! grep -q "^$rpid " "$work/nobody-devices.log" ||
	fail "nobody's softrnic devices: $(cat "$work/nobody-devices.log")"
as_nobody "$TOOL" stats $rpid > "$work/denied.log" 2>&1 && fail "nobody's softrnic stats of root's process succeeded"
[ "$(cat "$work/denied.log")" = "softrnic: stats of pid $rpid: permission denied" ] ||
	fail "nobody's softrnic stats of root's process: $(cat "$work/denied.log")"
"$TOOL" stats --qp $npid | grep -q "pid $npid" || fail "root's softrnic stats --qp of nobody's process"
kill -KILL $npid $rpid
wait $npid $rpid 2> /dev/null
pids=()
as_nobody ibv_devinfo > /dev/null        # nobody's next device reclaims its files
rmdir /dev/shm/softrnic-65534 2> /dev/null
echo "runtime_dir_e2e: another user's directory refused in one line, the pair ran; devices and stats each user's own (root: both)"
echo "runtime_dir_e2e: all checks passed"
