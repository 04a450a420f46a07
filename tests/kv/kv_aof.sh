#!/usr/bin/env bash
# kv_aof.sh — the append-only file: a server with --aof and fsync
# "always" is killed with SIGKILL in the middle of a client's SETs; a new
# server on the same file must have every SET it acknowledged.  Then a torn
# record (the tail of a write that never finished) is appended by hand:
# the next start cuts it and keeps everything before it.
#
# usage: kv_aof.sh LIB_DIR SOFTRNIC_KV KV_NET_TEST PORT
set -euo pipefail
LIB=$1 KV=$2 CLIENT=$3 PORT=$4
export LD_LIBRARY_PATH=$LIB
unset SOFTRNIC_ADDR SOFTRNIC_IFACE
tmp=$(mktemp -d)
server=
cleanup() {
	[ -n "${KEEP:-}" ] && cp -r "$tmp" /tmp/kvaof-keep
	[ -n "$server" ] && kill -KILL "$server" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "kv_aof: $*" >&2; cat "$tmp"/server*.log >&2 2>/dev/null; exit 1; }

start() {
	# No timeout(1) around it: SIGKILL must reach the server itself.
	"$KV" serve --port "$PORT" --mem 256m --aof "$tmp/log.aof" --appendfsync always \
		>"$tmp/server$1.log" 2>&1 &
	server=$!
	for _ in $(seq 50); do
		"$KV" stats --server "127.0.0.1:$PORT" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "server $1 did not start"
}

start 1
timeout 60 "$CLIENT" 127.0.0.1 "$PORT" 1 100000000 fill >"$tmp/fill.log" 2>&1 &
filler=$!
sleep 1
kill -KILL "$server"
wait "$server" 2>/dev/null || true
server=
wait "$filler" 2>/dev/null || true
acked=$(grep -c '^acked ' "$tmp/fill.log" || true)
[ "$acked" -gt 100 ] || fail "only $acked SETs acknowledged before the kill"
echo "kv_aof: server killed after $acked acknowledged SETs"

start 2
grep -q "records replayed" "$tmp/server2.log" || fail "no replay reported"
timeout 60 "$CLIENT" 127.0.0.1 "$PORT" 2 "$acked" verify || fail "acknowledged SETs lost"
kill -TERM "$server"; wait "$server" || fail "server 2 exit status"
server=

# A torn last record: a header that promises more than is there.
printf 'AOF1\001\000\004\000\100\000\000\000garbage' >>"$tmp/log.aof"
start 3
grep -q "torn last record cut" "$tmp/server3.log" || fail "the torn record was not reported"
timeout 60 "$CLIENT" 127.0.0.1 "$PORT" 3 "$acked" verify || fail "data before the torn record lost"
"$KV" set --server "127.0.0.1:$PORT" after-cut yes || fail "set after the cut"
kill -TERM "$server"; wait "$server" || fail "server 3 exit status"
server=
start 4
[ "$("$KV" get --server "127.0.0.1:$PORT" after-cut)" = yes ] || fail "a record appended after the cut was lost"
kill -TERM "$server"; wait "$server" || true
server=
# Rewriting: 20 000 SETs over 100 keys (about 20 MB of log for 100 KB of
# data) with --aof-rewrite-min 1m: the log is rewritten as it grows and
# stays small; after a SIGKILL the rewritten log gives every key back.
rm -f "$tmp/log.aof"
"$KV" serve --port "$PORT" --mem 64m --aof "$tmp/log.aof" --appendfsync everysec --aof-rewrite-min 1m -v \
	>"$tmp/server5.log" 2>&1 &
server=$!
for _ in $(seq 50); do "$KV" stats --server "127.0.0.1:$PORT" >/dev/null 2>&1 && break; sleep 0.1; done
"$KV" bench --server "127.0.0.1:$PORT" --op set --keys 100 --value-size 1000 --requests 20000 >/dev/null ||
	fail "bench SETs"
"$KV" stats --server "127.0.0.1:$PORT" >"$tmp/stats"
rewrites=$(awk '$1 == "aof_rewrites" { print $2 }' "$tmp/stats")
size=$(stat -c %s "$tmp/log.aof")
[ "$rewrites" -ge 1 ] || { cat "$tmp/stats" >&2; fail "the log was never rewritten"; }
[ "$size" -lt 4000000 ] || fail "the log is $size bytes after $rewrites rewrites"
grep -q "rewritten:" "$tmp/server5.log" || fail "no rewrite reported"
kill -KILL "$server"; wait "$server" 2>/dev/null || true
server=
"$KV" serve --port "$PORT" --mem 64m --aof "$tmp/log.aof" >"$tmp/server6.log" 2>&1 &
server=$!
for _ in $(seq 50); do "$KV" stats --server "127.0.0.1:$PORT" >/dev/null 2>&1 && break; sleep 0.1; done
grep -q " 100 items" "$tmp/server6.log" || { cat "$tmp/server6.log" >&2; fail "the rewritten log does not hold the 100 keys"; }
[ "$("$KV" get --server "127.0.0.1:$PORT" key:000000000042 | wc -c)" = 1000 ] || fail "a key's value after the rewrite"
kill -TERM "$server"; wait "$server" || true
server=
echo "kv_aof: $rewrites rewrites kept the log at $size bytes; 100 keys back after a SIGKILL"
cat "$tmp"/server*.log
echo "kv_aof: ok"
