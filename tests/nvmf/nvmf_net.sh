#!/usr/bin/env bash
# nvmf_net.sh — NVMe over Fabrics over softrnic between processes: a
# `softrnic-nvmf serve --mem 64M` target; `discover` finds its subsystem;
# `perf` runs against it at several sizes, depths and patterns with
# verify on (writes in the capsule and by RDMA READ, reads by RDMA
# WRITE, SEND with invalidate), then three at once; nvmf_net_test sends it bad input and
# checks each status; the target's counters at exit agree.  Then a
# file-backed target: what perf wrote is in the file.
#
# usage: nvmf_net.sh LIB_DIR SOFTRNIC_NVMF NVMF_NET_TEST PORT
set -euo pipefail
LIB=$1 NVMF=$2 NETTEST=$3 PORT=$4
export LD_LIBRARY_PATH=$LIB
unset SOFTRNIC_ADDR SOFTRNIC_IFACE
NQN=nqn.2026-12.io.softrnic:nvmf-net
tmp=$(mktemp -d)
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "nvmf_net: $*" >&2; cat "$tmp/server.log" >&2; exit 1; }

start_server() {
	timeout 300 "$NVMF" serve --nqn "$NQN" --port "$PORT" "$@" -v >"$tmp/server.log" 2>&1 &
	server=$!
	for _ in $(seq 50); do
		grep -q "serving" "$tmp/server.log" && return 0
		sleep 0.1
	done
	fail "the target did not start"
}
stop_server() {
	kill -TERM "$server"
	wait "$server" || fail "the target exited with $?"
	server=
}
counter() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/server.log"; }

start_server --mem 64M

# Discovery (through `softrnic nvmf`, which runs softrnic-nvmf): one entry,
# our subsystem, RDMA over IPv4 at the address we reached.
out=$(timeout 30 "$(dirname "$NVMF")/softrnic" nvmf discover --port "$PORT") || fail "discover failed"
echo "$out"
echo "$out" | grep -q "records 1" || fail "discovery: not one record"
echo "$out" | grep -q "trtype rdma adrfam ipv4 subtype nvm traddr 127.0.0.1 trsvcid $PORT subnqn $NQN" ||
	fail "discovery entry wrong"

# perf: sizes, depths and patterns, every run verified.
runs=(
	"--rw randwrite --bs 4k --qd 16"              # in-capsule writes
	"--rw randread --bs 4k --qd 1"
	"--rw write --bs 128k --qd 4"                 # RDMA READ of the data (above the capsule)
	"--rw read --bs 64k --qd 8"
	"--rw randwrite --bs 512 --qd 32 --no-inline" # small writes by RDMA READ
	"--rw randread --bs 8k --qd 8 --invalidate"   # SEND with invalidate checked
)
for r in "${runs[@]}"; do
	# shellcheck disable=SC2086
	line=$(timeout 60 "$NVMF" perf --nqn "$NQN" --port "$PORT" $r --time 0.5 --span 8M --verify 2>"$tmp/perf.err") ||
		{ cat "$tmp/perf.err" >&2; fail "perf $r failed"; }
	echo "$line"
	echo "$line" | grep -Eq "ios=[1-9][0-9]* .*errors=0 verified=[1-9][0-9]* verify_errors=0" ||
		fail "perf $r: no verified I/O"
done

# Three hosts at once (three controllers): random reads verified against the
# same pattern, which each one's prefill writes identically.
pids=()
for c in 1 2 3; do
	timeout 60 "$NVMF" perf --nqn "$NQN" --port "$PORT" --rw randread --bs 4k --qd 8 --time 1 --span 4M --verify \
		>"$tmp/multi$c.out" 2>"$tmp/multi$c.err" &
	pids+=($!)
done
for c in 1 2 3; do
	wait "${pids[$((c - 1))]}" || { cat "$tmp/multi$c.err" >&2; fail "concurrent perf $c failed"; }
	cat "$tmp/multi$c.out"
	grep -Eq "ios=[1-9][0-9]* .*errors=0 verified=[1-9][0-9]* verify_errors=0" "$tmp/multi$c.out" ||
		fail "concurrent perf $c: no verified I/O"
done

# Bad input, statuses checked, the target serving throughout.
timeout 120 "$NETTEST" 127.0.0.1 "$PORT" "$NQN" || fail "nvmf_net_test failed"

# The perf exit status: a wrong NQN is a connect failure (2) with the status.
set +e
timeout 30 "$NVMF" perf --nqn nqn.2026-12.io.softrnic:wrong --port "$PORT" --time 0.1 2>"$tmp/wrong.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "perf against a wrong NQN exited $rc"
grep -q "status 0x182 (connect: invalid parameters)" "$tmp/wrong.err" || { cat "$tmp/wrong.err"; fail "wrong NQN message"; }
# No target on a port: said so, not as an NVMe status.
set +e
timeout 30 "$NVMF" perf --nqn "$NQN" --port $((PORT + 1)) --time 0.1 2>"$tmp/none.err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "no NVMe-oF target at 127.0.0.1:$((PORT + 1))" "$tmp/none.err" ||
	{ cat "$tmp/none.err"; fail "perf against no target: exit $rc"; }

stop_server
echo "target counters:"
grep -E "^(commands|errors|lba_range|invalid_opcode|sgl_invalid|connect_rejected|keep_alive_expired|transfer_errors|sends_with_invalidate|in_capsule_writes|rdma_reads) " "$tmp/server.log"
[ "$(counter lba_range)" -ge 2 ] || fail "lba_range not counted"
[ "$(counter invalid_opcode)" -ge 2 ] || fail "invalid_opcode not counted"
[ "$(counter connect_rejected)" -ge 2 ] || fail "connect_rejected not counted"
[ "$(counter keep_alive_expired)" -ge 1 ] || fail "the keep-alive timeout did not tear a controller down"
[ "$(counter transfer_errors)" -ge 1 ] || fail "the bad rkey was not a transfer error"
[ "$(counter sends_with_invalidate)" -ge 1 ] || fail "no SEND with invalidate"
[ "$(counter in_capsule_writes)" -ge 1 ] || fail "no in-capsule write"
[ "$(counter rdma_reads)" -ge 1 ] || fail "no RDMA READ of write data"
[ "$(counter ctrls_created)" = "$(counter ctrls_freed)" ] || fail "controllers leaked"

# A file-backed namespace of 4 KiB blocks, one host allowed: perf's writes
# land in the file; another host is refused (Connect Invalid Host); a block
# size below the namespace's is refused.
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:0f0e0d0c-0b0a-4908-8706-050403020100
start_server --file "$tmp/ns.img" --size 8M --block-size 4096 --allow-host "$HOSTNQN"
set +e
timeout 30 "$NVMF" perf --nqn "$NQN" --port "$PORT" --time 0.1 2>"$tmp/perf.err" >/dev/null
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "status 0x184 (connect: invalid host)" "$tmp/perf.err" ||
	{ cat "$tmp/perf.err"; fail "a host not allowed: exit $rc"; }
line=$(timeout 60 "$NVMF" perf --nqn "$NQN" --port "$PORT" --hostnqn "$HOSTNQN" --rw randwrite --bs 8k --qd 4 --time 0.3 --verify 2>"$tmp/perf.err") ||
	{ cat "$tmp/perf.err" >&2; fail "perf on a file failed"; }
echo "$line"
grep -q "2048 blocks of 4096 bytes" "$tmp/perf.err" || { cat "$tmp/perf.err"; fail "not 4 KiB blocks"; }
set +e
timeout 30 "$NVMF" perf --nqn "$NQN" --port "$PORT" --hostnqn "$HOSTNQN" --bs 512 --time 0.1 2>"$tmp/perf.err" >/dev/null
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "not a multiple of 4096" "$tmp/perf.err" || { cat "$tmp/perf.err"; fail "512 B on 4 KiB blocks: exit $rc"; }
stop_server
[ "$(wc -c <"$tmp/ns.img")" = 8388608 ] || fail "file size"
[ "$(od -An -tx1 -N4096 "$tmp/ns.img" | tr -d ' \n' | tr -d 0 | wc -c)" -gt 0 ] || fail "nothing written to the file"
echo "nvmf_net: ok"
