#!/usr/bin/env bash
# iser.sh — Debian's tgt (tgtd 1.0.85, iSER built in) as an iSCSI target and
# libiscsi 1.19's utilities as initiators, both unmodified on softrnic's
# libibverbs.so.1 and librdmacm.so.1 (LD_LIBRARY_PATH=LIBDIR), on 127.0.0.1:
#   - tgtd in the foreground (`tgtd -f`) with a control port of its own
#     (its socket /var/run/tgtd/socket.N is host-wide, so N is one nobody
#     holds), an iSCSI/TCP portal on TCP_PORT and iSER on ISER_PORT.  tgtd
#     listens for iSER on 0.0.0.0 and [::] with RDMA_OPTION_ID_AFONLY; the
#     driver is "ready" only when both listens succeed, and the port is then
#     in softrnic's CM registry, held by tgtd;
#   - a target over iSER and one over TCP on the same backing file (tgt
#     1.0.85 lets an iSER target take only iSER logins and the other way
#     round), each bound to ALL addresses.  Over iSER tgt 1.0.85 also
#     demands an initiator-name ACL (fixed upstream after 1.0.85, "Fix IP
#     and initiator ACL testing logic"), so the initiator names used here
#     are bound;
#   - iscsi-inq and iscsi-readcapacity16 over iSER; a random 8 MiB pattern
#     written over iSER (iscsi_check.c, a libiscsi client built here) and
#     read back over iSER and over TCP, both compared with the pattern and
#     with the backing file;
#   - 50 iSER sessions one after another (iscsi-inq), after which tgtd
#     must hold no connection and no session: libiscsi never calls
#     rdma_disconnect, softrnic sends the DREQ when the process exits, and
#     tgtd frees an iSER connection only on RDMA_CM_EVENT_TIMEWAIT_EXIT;
#   - the iscsi-test-cu suites that give the same result over iSER as over
#     TCP, each run over both and compared test by test (SUITES below; the
#     others and why are listed there);
#   - iscsi-perf over iSER and over TCP, 2 s each, figures printed;
#   - tgtd stopped as an administrator does (targets deleted with --force,
#     then `--mode sys --op delete`): it must exit 0, and its log must show
#     every iSER connection it accepted freed.
#   iser.sh LIBDIR SOURCE_DIR ISER_PORT
# TCP_PORT is ISER_PORT + 1.  Skips (77) when not root (tgtd's control
# socket lives in /var/run/tgtd) or when tgt, libiscsi-bin or libiscsi-dev
# is missing.
set -uo pipefail
LIB=$1
SRC=$2
ISER_PORT=$3
TCP_PORT=$((ISER_PORT + 1))
skip() { echo "iser: $*; skipped"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "not root (tgtd's control socket is in /var/run/tgtd)"
for p in tgtd tgtadm iscsi-inq iscsi-readcapacity16 iscsi-test-cu iscsi-perf; do
	command -v $p >/dev/null || skip "$p not installed (packages tgt, libiscsi-bin)"
done
[ -f /usr/include/iscsi/iscsi.h ] || skip "libiscsi-dev not installed"

dir=$(mktemp -d)
tgtd_pid=
cleanup() {
	[ -n "$tgtd_pid" ] && kill "$tgtd_pid" 2>/dev/null && sleep 0.5 && kill -9 "$tgtd_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() {
	echo "iser: FAIL: $*" >&2
	[ -f "$dir/tgtd.log" ] && { echo "--- tgtd's log (last 30 lines):" >&2; tail -30 "$dir/tgtd.log" >&2; }
	exit 1
}
. "$(dirname "$0")/../lib.sh"
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

cc -std=c11 -O2 -Wall -Wextra -Werror -o "$dir/iscsi_check" "$SRC/iscsi_check.c" -liscsi ||
	fail "cc iscsi_check.c"

# A control port nobody uses: tgtd's socket /var/run/tgtd/socket.N is
# host-wide (network namespaces do not separate it), so N starts from this
# script's pid and moves on past any socket someone listens on.
mkdir -p /var/run/tgtd
CTL=$(( $$ % 30000 + 1000 ))   # tgtd takes a short
while ss -xlH | awk '{ print $5 }' | grep -qx "/var/run/tgtd/socket.$CTL"; do
	CTL=$(( (CTL + 1 - 1000) % 30000 + 1000 ))
done
adm() { tgtadm -C "$CTL" "$@"; }

IQN_ISER=iqn.2024-01.io.softrnic:iser-disk
IQN_TCP=iqn.2024-01.io.softrnic:tcp-disk
INITIATOR=iqn.2024-01.io.softrnic:initiator
# iscsi-test-cu's own names for its first and second sessions.
TEST_INITIATORS="iqn.2007-10.com.github:sahlberg:libiscsi:iscsi-test iqn.2007-10.com.github:sahlberg:libiscsi:iscsi-test-2"
ISER_URL=iser://127.0.0.1:$ISER_PORT/$IQN_ISER/1
TCP_URL=iscsi://127.0.0.1:$TCP_PORT/$IQN_TCP/1
DISK=$dir/disk.img
truncate -s 64M "$DISK"

tgtd -f -C "$CTL" --iscsi portal=127.0.0.1:$TCP_PORT --iser port=$ISER_PORT > "$dir/tgtd.log" 2>&1 &
tgtd_pid=$!
for i in $(seq 100); do
	cm_listening 262 "$ISER_PORT" "$tgtd_pid" && adm --mode sys --op show > "$dir/sys" 2>/dev/null && break
	kill -0 "$tgtd_pid" 2>/dev/null || break
	sleep 0.1
done
cm_listening 262 "$ISER_PORT" "$tgtd_pid" || fail "tgtd (pid $tgtd_pid) does not listen on iSER port $ISER_PORT"
grep -q "iser: ready" "$dir/sys" || { cat "$dir/sys" >&2; fail "tgtd's iSER driver is not ready"; }
grep -q "iscsi: ready" "$dir/sys" || { cat "$dir/sys" >&2; fail "tgtd's iSCSI driver is not ready"; }
echo "iser: tgtd (control port $CTL) listens: iSER on $ISER_PORT (0.0.0.0 and [::], AFONLY) through softrnic's CM, iSCSI/TCP on $TCP_PORT; drivers iser and iscsi ready"

adm --lld iser --mode target --op new --tid 1 --targetname $IQN_ISER &&
	adm --lld iser --mode logicalunit --op new --tid 1 --lun 1 --backing-store "$DISK" &&
	adm --lld iser --mode target --op bind --tid 1 --initiator-address ALL || fail "creating the iSER target"
for name in $INITIATOR $TEST_INITIATORS; do
	adm --lld iser --mode target --op bind --tid 1 --initiator-name "$name" || fail "binding $name"
done
adm --lld iscsi --mode target --op new --tid 2 --targetname $IQN_TCP &&
	adm --lld iscsi --mode logicalunit --op new --tid 2 --lun 1 --backing-store "$DISK" &&
	adm --lld iscsi --mode target --op bind --tid 2 --initiator-address ALL || fail "creating the TCP target"
targets=$(adm --lld iser --mode target --op show)
grep -q "Driver: iser" <<<"$targets" && grep -q "Driver: iscsi" <<<"$targets" || { echo "$targets" >&2; fail "no iSER and TCP targets"; }

# Inquiry and capacity over iSER.
timeout 20 iscsi-inq -i $INITIATOR "$ISER_URL" > "$dir/inq" 2>&1 || { cat "$dir/inq" >&2; fail "iscsi-inq over iSER"; }
grep -q "^Vendor:IET" "$dir/inq" && grep -q "Peripheral Device Type:DIRECT_ACCESS" "$dir/inq" ||
	{ cat "$dir/inq" >&2; fail "iscsi-inq: not tgt's disk"; }
timeout 20 iscsi-readcapacity16 -i $INITIATOR "$ISER_URL" > "$dir/cap" 2>&1 ||
	{ cat "$dir/cap" >&2; fail "iscsi-readcapacity16 over iSER"; }
grep -q "^Total size:67108864" "$dir/cap" && grep -q "BLOCK LENGTH IN BYTES:512" "$dir/cap" ||
	{ cat "$dir/cap" >&2; fail "iscsi-readcapacity16: not a 64 MiB disk of 512-byte blocks"; }
echo "iser: iscsi-inq and iscsi-readcapacity16 over iSER: $(sed -n 's/^Vendor://p' "$dir/inq" | tr -d ' ') $(sed -n 's/^Product://p' "$dir/inq" | tr -d ' '), 64 MiB of 512-byte blocks"

# A random pattern written over iSER, read back over iSER and over TCP.
LEN=$((8 << 20))
head -c $LEN /dev/urandom > "$dir/pattern"
timeout 60 "$dir/iscsi_check" write "$ISER_URL" $INITIATOR 512 "$dir/pattern" || fail "writing the pattern over iSER"
timeout 60 "$dir/iscsi_check" read "$ISER_URL" $INITIATOR 512 "$dir/back.iser" $LEN || fail "reading back over iSER"
timeout 60 "$dir/iscsi_check" read "$TCP_URL" $INITIATOR 512 "$dir/back.tcp" $LEN || fail "reading back over TCP"
cmp -s "$dir/pattern" "$dir/back.iser" || fail "the pattern read back over iSER differs"
cmp -s "$dir/pattern" "$dir/back.tcp" || fail "the pattern read back over TCP differs"
cmp -s "$dir/pattern" <(head -c $LEN "$DISK") || fail "the backing file does not hold the pattern"
echo "iser: 8 MiB of random bytes written over iSER read back the same over iSER, over TCP and from the backing file"

# no_connections TID: tgtd holds no connection on TID and no session
# (I_T nexus) on any target.
no_connections() {
	local conns targets
	conns=$(adm --lld iser --mode conn --op show --tid "$1") || return 1
	targets=$(adm --lld iser --mode target --op show) || return 1
	[ -z "$conns" ] && ! grep -q "I_T nexus: " <<<"$targets"
}
# settle TID: until no_connections (TIMEWAIT_EXIT comes 200 ms after the
# DREQ/DREP); 1 after 10 s.
settle() {
	for i in $(seq 100); do
		no_connections "$1" && return 0
		sleep 0.1
	done
	return 1
}
start=$SECONDS
for i in $(seq 50); do
	timeout 20 iscsi-inq -i $INITIATOR "$ISER_URL" > "$dir/inq.$i" 2>&1 || { cat "$dir/inq.$i" >&2; fail "session $i of 50"; }
	grep -q "^Vendor:IET" "$dir/inq.$i" || { cat "$dir/inq.$i" >&2; fail "session $i of 50: no inquiry data"; }
done
settle 1 || { adm --lld iser --mode conn --op show --tid 1 >&2; adm --lld iser --mode target --op show --tid 1 >&2
	fail "connections or sessions left 10 s after 50 sessions"; }
echo "iser: 50 iSER sessions one after another (iscsi-inq), then no connection and no session left ($((SECONDS - start)) s)"

# iscsi-test-cu suites that give the same result over iSER as over TCP.
# Left out, each for a bug of Debian's libiscsi 1.19 iSER code (lib/iser.c)
# that TCP does not have, seen in its own error messages or under valgrind:
#   ExtendedCopy, Read10, Write10 — commands over 256 KiB ("Libiscsi-iSER
#     supports messages smaller than 512k": one registered 256 KiB buffer
#     per command; ExtendedCopy.Simple writes 1 MiB), or more commands in
#     flight than its 256 buffers (Read10/Write10 .Async); the command is
#     lost and the process crashes.  Upstream: "iser: dynamic memory region
#     allocator", "iser: queue pdus when cmdsn exceeds maxcmdsn";
#   Inquiry (AllocLength, BlockLimits), ModeSense6 (Residuals),
#     iSCSIResiduals — residuals: a read's data size is the allocation
#     length, never what the target sent; iSCSIResiduals also sends a read
#     with no transfer length, which iser.c refuses, and crashes;
#   GetLBAStatus — a read of 256 bytes or
#     less is malloc'ed and freed into libiscsi's pool of 256-byte blocks,
#     which a later allocation clears whole: valgrind shows the write past
#     the block, and glibc aborts (upstream: "Fix pdu indata of iser alloc
#     and free mismatch").  Other suites meet it now and then in their
#     teardown, after their summary (accepted below);
#   iSCSITMF — a task-management response matches no command and is
#     dereferenced ("iser: fix segmentation fault when task management pdu
#     is received");
#   WriteSame10, WriteSame16 (ZeroBlocks: the whole 64 MiB), iSCSIcmdsn
#     (CmdSnTooHigh: a command the target never answers) — a command
#     slower than 1 s: libiscsi's synchronous loop polls for 1 s and hands
#     revents 0 to iser.c, which fails with "revents is not POLLIN";
#   ProutReserve, Reserve6 — a second session in one process: iser.c
#     mallocs its connection without clearing it and, on ESTABLISHED,
#     walks the uninitialised list head of its send buffers (valgrind:
#     "Conditional jump ... uninitialised" there, in its CM thread); in a
#     fresh process the bytes happen to be zero, in a second session they
#     are the first one's, and the CM thread dies of SIGSEGV (upstream:
#     "iser: fix segfault at iser_reg_mr").  A crashed initiator then
#     keeps its reservation (docs/ecosystem.md).
# Each suite runs over TCP and over iSER; the suite names, the CUnit totals
# and the names of failed tests must be the same (some fail over TCP too:
# tgt does not implement everything they check).
SUITES="CompareAndWrite Mandatory NoMedia OrWrite Prefetch10 Prefetch16 PreventAllow PrinReadKeys
PrinServiceactionRange PrinReportCapabilities ProutRegister ProutClear ProutPreempt Read6 Read12 Read16
ReadCapacity10 ReadCapacity16 ReadDefectData10 ReadDefectData12 ReadOnly ReceiveCopyResults
ReportSupportedOpcodes Sanitize StartStopUnit TestUnitReady Unmap Verify10 Verify12 Verify16 Write12 Write16
WriteAtomic16 WriteVerify10 WriteVerify12 WriteVerify16 iSCSIdatasn MultipathIO"
# outcome LOG: the CUnit totals and the failed tests of one run.
outcome() {
	grep -E '^ +tests ' "$1" | tr -s ' '
	sed -n 's/^Suite \([^,]*\), Test \(.*\) had failures:/\1.\2/p' "$1" | tr '\n' ' '
}
start=$SECONDS
n=0
retries=0
same_fail=
for s in $SUITES; do
	timeout -k 5 60 iscsi-test-cu -d -n -t ALL.$s "$TCP_URL" > "$dir/cu.$s.tcp" 2>&1
	tcp=$(outcome "$dir/cu.$s.tcp")
	[ -n "$tcp" ] || { cat "$dir/cu.$s.tcp" >&2; fail "iscsi-test-cu $s over TCP printed no summary"; }
	# The CM trace goes to the log, shown if the suite's results differ.
	SOFTRNIC_CM_TRACE=1 timeout -k 5 60 iscsi-test-cu -d -n -t ALL.$s "$ISER_URL" > "$dir/cu.$s.iser" 2>&1
	rc=$?
	iser=$(outcome "$dir/cu.$s.iser")
	# libiscsi's synchronous loop fails any iSER command or login that
	# takes over 1 s ("revents is not POLLIN", above); on a loaded machine
	# a login can.  And libiscsi 1.19's iSER heap bug (above) sometimes
	# kills a run before its summary.  Such a run is tried again, twice
	# at most per run of this test.
	if [ "$tcp" != "$iser" ] && [ "$retries" -lt 2 ] &&
	   { grep -q "revents is not POLLIN\|Login Failed" "$dir/cu.$s.iser" || [ $rc -gt 128 ]; }; then
		retries=$((retries + 1))
		why=$(grep -m1 "revents is not POLLIN\|Login Failed" "$dir/cu.$s.iser")
		[ -n "$why" ] || why="died of signal $((rc - 128)) before its summary (libiscsi's iSER heap bug)"
		echo "iser: note: iscsi-test-cu $s over iSER: $why; tried again"
		settle 1 || fail "connections or sessions left after the failed $s"
		SOFTRNIC_CM_TRACE=1 timeout -k 5 60 iscsi-test-cu -d -n -t ALL.$s "$ISER_URL" > "$dir/cu.$s.iser" 2>&1
		rc=$?
		iser=$(outcome "$dir/cu.$s.iser")
	fi
	if [ "$tcp" != "$iser" ]; then
		cat "$dir/cu.$s.iser" >&2
		fail "iscsi-test-cu $s: over TCP [$tcp], over iSER (exit $rc) [$iser]"
	fi
	# libiscsi 1.19's heap bug above can make glibc abort in the teardown
	# after a complete run: a summary like TCP's is what counts.
	[ $rc -gt 128 ] && echo "iser: note: iscsi-test-cu $s over iSER died of signal $((rc - 128)) after its summary (libiscsi's iSER heap bug)"
	n=$((n + 1))
	failed=$(echo "$tcp" | sed -n '2p')
	[ -n "$failed" ] && same_fail="$same_fail $failed"
done
settle 1 || fail "connections or sessions left after iscsi-test-cu"
echo "iser: $n iscsi-test-cu suites give the same result over iSER as over TCP ($((SECONDS - start)) s); failing on both (tgt's):${same_fail:- none}"

# iscsi-perf: random 4 KiB reads, 32 in flight, 2 s over each transport.
perf() {
	timeout 20 iscsi-perf -i $INITIATOR -t 2 -r "$1" 2>&1 | tr '\r' '\n' | sed -n 's/.*iops average \([0-9]*\) (\([0-9]*\) MB\/s).*/\1 \2/p' | tail -1
}
p_iser=$(perf "$ISER_URL")
p_tcp=$(perf "$TCP_URL")
[ -n "$p_iser" ] && [ -n "$p_tcp" ] || fail "iscsi-perf printed no average (iSER: '$p_iser', TCP: '$p_tcp')"
echo "iser: iscsi-perf 4 KiB random reads, 32 in flight, 2 s: iSER ${p_iser% *} IOPS (${p_iser#* } MB/s), TCP ${p_tcp% *} IOPS (${p_tcp#* } MB/s)"
settle 1 || fail "connections or sessions left after iscsi-perf"

# Stop tgtd as an administrator does; it must exit 0 and have freed every
# iSER connection it accepted.
adm --op delete --mode target --tid 1 --force || fail "deleting the iSER target"
adm --op delete --mode target --tid 2 --force || fail "deleting the TCP target"
adm --mode sys --op delete || fail "tgtadm --mode sys --op delete"
for i in $(seq 100); do
	kill -0 "$tgtd_pid" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$tgtd_pid" 2>/dev/null && fail "tgtd still running 10 s after --mode sys --op delete"
wait "$tgtd_pid"
rc=$?
tgtd_pid=
[ $rc -eq 0 ] || fail "tgtd exited with status $rc"
grep -q "Assertion" "$dir/tgtd.log" && fail "tgtd failed an assertion"
# Every connection established is freed; one whose initiator died before
# its RTU (libiscsi's crashes above, at ESTABLISHED in its CM thread) is
# freed too without ever being established, so there may be more freed.
accepted=$(grep -c "iser_cm_conn_established" "$dir/tgtd.log")
freed=$(grep -c "iser_cm_timewait_exit.*(after cleanup)" "$dir/tgtd.log")
[ "$freed" -ge "$accepted" ] || fail "tgtd established $accepted iSER connections and freed only $freed"
echo "iser: tgtd stopped (exit 0); it established $accepted iSER connections and freed all of them ($freed freed on TIMEWAIT_EXIT)"
echo "iser: all checks passed"
