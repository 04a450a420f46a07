#!/usr/bin/env bash
# qemu_migrate.sh — QEMU's live migration over RDMA on softrnic: two
# unmodified qemu-system-x86_64 (Debian's 7.2, TCG, q35, 64 MiB, no disk)
# through `softrnic run`, the destination started with
# `-incoming rdma:127.0.0.1:PORT`, the source told `migrate rdma:...` over
# QMP (qmp.py).  The guest is qemu_guest.S: 56 MiB of a known pattern and
# 1 MiB it keeps rewriting.  Once the migration is `completed`, the source
# (stopped) and the destination (paused by -S) must hold the same 64 MiB
# byte for byte (pmemsave, cmp), with the pattern in place; then the
# destination is let run and its counter must move on from the source's,
# which shows it is a live copy.  The same guest then migrates over `tcp:`
# and both times are printed (QEMU's total-time and downtime).
#   qemu_migrate.sh SOFTRNIC_BIN SOURCE_DIR PORT   (PORT: rdma; PORT+1: tcp)
# Skips (77) without qemu-system-x86_64 or binutils' as/ld.
set -uo pipefail
SOFTRNIC=$1
SRC=$2
PORT=$3
MEM_MB=64
command -v qemu-system-x86_64 >/dev/null || { echo "qemu_migrate: qemu-system-x86 not installed; skipped"; exit 77; }
command -v as >/dev/null && command -v ld >/dev/null || { echo "qemu_migrate: binutils (as, ld) not installed; skipped"; exit 77; }
libs=$(ldd "$(command -v qemu-system-x86_64)")
grep -q librdmacm <<<"$libs" ||
	{ echo "qemu_migrate: this qemu-system-x86_64 is built without RDMA migration; skipped"; exit 77; }
dir=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "qemu_migrate: FAIL: $*" >&2; for f in "$dir"/*.log; do [ -s "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done; exit 1; }
. "$(dirname "$0")/../lib.sh"
qmp() { /usr/bin/python3 "$SRC/qmp.py" "$@"; }

as --32 -o "$dir/guest.o" "$SRC/qemu_guest.S" && ld -m elf_i386 -Ttext 0x100000 -e _start -o "$dir/guest.elf" "$dir/guest.o" ||
	fail "building the guest"
common=(-machine q35 -accel tcg -m ${MEM_MB}M -nographic -nodefaults -kernel "$dir/guest.elf")

# the dword at guest-physical ADDR, through HMP's xp
guest_word() {
	qmp "$1" human-monitor-command "{\"command-line\": \"xp /1wx $2\"}" | sed -n 's/.*: 0x\([0-9a-f]*\).*/\1/p'
}

# migrate MODE URI: one migration of a fresh guest; sets total_ms, down_ms
migrate() {
	local mode=$1 uri=$2 src=$dir/$1-src.sock dst=$dir/$1-dst.sock st i
	# the destination paused (-S) after the migration, so its memory stays as it came
	"$SOFTRNIC" run qemu-system-x86_64 "${common[@]}" -S -qmp "unix:$dst,server=on,wait=off" -incoming "$uri" \
		> "$dir/$mode-dst.log" 2>&1 &
	pids+=($!)
	"$SOFTRNIC" run qemu-system-x86_64 "${common[@]}" -qmp "unix:$src,server=on,wait=off" \
		> "$dir/$mode-src.log" 2>&1 &
	pids+=($!)
	for i in $(seq 300); do
		[ "$(guest_word "$src" 0x200000 2>/dev/null)" = 600df00d ] && break
		sleep 0.1
	done
	[ "$(guest_word "$src" 0x200000)" = 600df00d ] || fail "$mode: the guest never finished filling its memory"
	if [ "$mode" = rdma ]; then
		for i in $(seq 100); do cm_listening 262 "$PORT" && break; sleep 0.1; done
		cm_listening 262 "$PORT" || fail "rdma: the destination never listened through softrnic's librdmacm"
	else
		wait_listen $((PORT + 1)) || fail "tcp: the destination never listened"
	fi
	# QEMU 7.2 caps migration at 32 MiB/s unless told otherwise
	qmp "$src" migrate-set-parameters '{"max-bandwidth": 10737418240}' > /dev/null || fail "$mode: migrate-set-parameters"
	qmp "$src" migrate "{\"uri\": \"$uri\"}" > /dev/null || fail "$mode: migrate"
	for i in $(seq 1200); do
		st=$(qmp "$src" query-migrate) || fail "$mode: query-migrate"
		grep -q '"status": "\(completed\|failed\|cancelled\)"' <<<"$st" && break
		sleep 0.1
	done
	grep -q '"status": "completed"' <<<"$st" || fail "$mode: migration did not complete: $st"
	total_ms=$(sed -n 's/.*"total-time": \([0-9]*\).*/\1/p' <<<"$st")
	down_ms=$(sed -n 's/.*"downtime": \([0-9]*\).*/\1/p' <<<"$st")
	local mbps
	mbps=$(sed -n 's/.*"mbps": \([0-9.]*\).*/\1/p' <<<"$st")
	qmp "$src" query-status | grep -q '"postmigrate"' || fail "$mode: the source is not in postmigrate"
	qmp "$dst" query-status | grep -q '"paused"' || fail "$mode: the destination is not paused"
	qmp "$src" pmemsave "{\"val\": 0, \"size\": $((MEM_MB << 20)), \"filename\": \"$dir/$mode-src.mem\"}" > /dev/null &&
		qmp "$dst" pmemsave "{\"val\": 0, \"size\": $((MEM_MB << 20)), \"filename\": \"$dir/$mode-dst.mem\"}" > /dev/null ||
		fail "$mode: pmemsave"
	if ! cmp -s "$dir/$mode-src.mem" "$dir/$mode-dst.mem"; then
		# which bytes (offset, source, destination; octal as cmp -l prints them)
		cmp -l "$dir/$mode-src.mem" "$dir/$mode-dst.mem" > "$dir/$mode-diff.log"
		echo "qemu_migrate: $(wc -l < "$dir/$mode-diff.log") bytes differ; the first:" >&2
		head -8 "$dir/$mode-diff.log" | awk '{printf "  at %#x: source %s, destination %s (octal)\n", $1 - 1, $2, $3}' >&2
		fail "$mode: guest memory differs after the migration"
	fi
	/usr/bin/python3 - "$dir/$mode-dst.mem" <<-'PY' || fail "$mode: the migrated memory lacks the guest's pattern"
	import struct, sys
	d = open(sys.argv[1], "rb").read()
	word = lambda a: struct.unpack_from("<I", d, a)[0]
	assert word(0x200000) == 0x600DF00D and word(0x200004) > 0, "marker/counter"
	bad = [a for a in range(0x400000, 0x3C00000, 4) if word(a) != (a * 0x9E3779B1) & 0xFFFFFFFF]
	assert not bad, "%d dwords off the pattern, first at %#x" % (len(bad), bad[0])
	PY
	local count
	count=$(( 16#$(guest_word "$dst" 0x200004) ))
	qmp "$dst" cont > /dev/null || fail "$mode: cont on the destination"
	for i in $(seq 100); do
		[ $(( 16#$(guest_word "$dst" 0x200004) )) -gt "$count" ] && break
		sleep 0.1
	done
	[ $(( 16#$(guest_word "$dst" 0x200004) )) -gt "$count" ] || fail "$mode: the migrated guest does not run on"
	echo "qemu_migrate: $mode: completed in ${total_ms} ms (downtime ${down_ms} ms, ${mbps%.*} Mbit/s), $MEM_MB MiB identical, the guest runs on at the destination (round $count ->)"
	qmp "$src" quit > /dev/null
	qmp "$dst" quit > /dev/null
	wait "${pids[@]}" 2>/dev/null
	pids=()
	rm -f "$dir/$mode-src.mem" "$dir/$mode-dst.mem"
}

migrate rdma "rdma:127.0.0.1:$PORT"
rdma_ms=$total_ms
migrate tcp "tcp:127.0.0.1:$((PORT + 1))"
tcp_ms=$total_ms
echo "qemu_migrate: rdma ${rdma_ms} ms, tcp ${tcp_ms} ms (QEMU's total-time, $MEM_MB MiB guest, SOFTRNIC_LOCAL=${SOFTRNIC_LOCAL-unset})"
echo "qemu_migrate: all checks passed"
