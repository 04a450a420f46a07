#!/usr/bin/env bash
# kv_fsync.sh — the append-only file's fsync policies, counted from the
# outside: strace attached to a softrnic-kv server counts its fdatasync
# calls while a client SETs for a few seconds.
#   always    one per SET (every answer waits for its record on disk)
#   everysec  about one per second of writing (Redis's appendfsync
#             everysec: at most a second of acknowledged writes at risk
#             in a machine crash; a killed process loses nothing, the
#             records are in the page cache)
#   no        none while serving (the kernel writes back when it likes)
#
# usage: kv_fsync.sh LIB_DIR SOFTRNIC_KV PORT
set -euo pipefail
LIB=$1 KV=$2 PORT=$3
export LD_LIBRARY_PATH=$LIB
unset SOFTRNIC_ADDR SOFTRNIC_IFACE
command -v strace >/dev/null || { echo "kv_fsync: strace is needed (scripts/deps.sh installs it)" >&2; exit 1; }
tmp=$(mktemp -d)
server= tracer=
cleanup() {
	for p in $tracer $server; do kill -KILL "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "kv_fsync: $*" >&2; exit 1; }

# run POLICY REQUESTS [MIN_SECONDS]: SETs in rounds of REQUESTS until
# MIN_SECONDS have passed (default: one round); prints
# "<fdatasyncs> <sets> <seconds>".  strace stops only at the traced calls
# (--seccomp-bpf), so the server runs at nearly its speed.
run() {
	rm -f "$tmp/log.aof"
	"$KV" serve --port "$PORT" --mem 64m --aof "$tmp/log.aof" --appendfsync "$1" 2>"$tmp/server.log" &
	server=$!
	for _ in $(seq 50); do "$KV" stats --server "127.0.0.1:$PORT" >/dev/null 2>&1 && break; sleep 0.1; done
	strace -f -qq --seccomp-bpf -e trace=fdatasync,fsync -o "$tmp/trace" -p "$server" &
	tracer=$!
	sleep 0.5       # attached
	local t0 t1 sets=0
	t0=$(date +%s.%N)
	while :; do
		"$KV" bench --server "127.0.0.1:$PORT" --op set --requests "$2" --keys 500 --value-size 100 >"$tmp/bench" ||
			fail "bench against --appendfsync $1"
		sets=$((sets + $2))
		t1=$(date +%s.%N)
		[ "$(echo "$t1 - $t0 >= ${3:-0}" | bc)" = 1 ] && break
	done
	kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true; tracer=
	kill -TERM "$server"; wait "$server" || true; server=
	echo "$(grep -c 'sync(' "$tmp/trace" || true) $sets $(echo "$t1 - $t0" | bc -l)"
}

read -r syncs sets secs < <(run always 2000)
echo "kv_fsync: always: $syncs fdatasync calls for $sets SETs in ${secs%????????} s"
[ "$syncs" -ge "$sets" ] || fail "always: fewer syncs ($syncs) than SETs ($sets)"

read -r syncs sets secs < <(run everysec 5000 3)
echo "kv_fsync: everysec: $syncs fdatasync calls for $sets SETs in ${secs%????????} s"
[ "$(echo "$secs >= 2" | bc)" = 1 ] || fail "everysec: the writes took under 2 s ($secs): no window to see"
[ "$(echo "$syncs >= $secs - 2 && $syncs <= $secs + 2" | bc)" = 1 ] ||
	fail "everysec: $syncs syncs in $secs s of writing, not about one a second"

read -r syncs sets secs < <(run no 5000 2)
echo "kv_fsync: no: $syncs fdatasync calls for $sets SETs in ${secs%????????} s"
[ "$syncs" = 0 ] || fail "no: $syncs syncs while serving"
echo "kv_fsync: ok"
