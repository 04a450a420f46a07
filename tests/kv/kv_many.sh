#!/usr/bin/env bash
# kv_many.sh — one softrnic-kv server with 500 clients connected at once,
# end to end (bench/kv_many_clients): every client connects, the server's
# STATS counts all 500, each runs SET / GET / INCR rounds with every answer
# checked, and once they disconnect the server holds none.  The same at
# 200 clients over the SEND transport.  Figures at 5 000: docs/kv.md.
#
# usage: kv_many.sh LIB_DIR SOFTRNIC_KV KV_MANY_CLIENTS PORT
set -euo pipefail
LIB=$1 KV=$2 MANY=$3 PORT=$4
export LD_LIBRARY_PATH=$LIB
unset SOFTRNIC_ADDR SOFTRNIC_IFACE
tmp=$(mktemp -d)
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "kv_many: $*" >&2; cat "$tmp"/*.log >&2; exit 1; }

timeout 300 "$KV" serve --port "$PORT" --mem 64m >"$tmp/server.log" 2>&1 &
server=$!
for _ in $(seq 50); do "$KV" stats --server "127.0.0.1:$PORT" >/dev/null 2>&1 && break; sleep 0.1; done
kvpid=$(tr -d " " <"/proc/$server/task/$server/children")   # the server, under timeout

# clients_now: the server's "clients" less the STATS connection itself.
clients_now() { "$KV" stats --server "127.0.0.1:$PORT" | awk '$1 == "clients" { print $2 - 1 }'; }

run() {     # NAME ARGS...: kv_many_clients must pass and say so
	local name=$1
	shift
	timeout 200 "$MANY" -s "127.0.0.1:$PORT" -P "$kvpid" "$@" >"$tmp/$name.log" 2>&1 ||
		fail "$name: kv_many_clients $* failed"
	cat "$tmp/$name.log"
	grep -q '^ok$' "$tmp/$name.log" || fail "$name: no ok"
	grep -q "failures: 0 connects, 0 transport errors, 0 wrong answers$" "$tmp/$name.log" ||
		fail "$name: failures"
	# Every client gone again, reclaimed on its disconnect.
	for _ in $(seq 100); do [ "$(clients_now)" = 0 ] && break; sleep 0.1; done
	[ "$(clients_now)" = 0 ] || fail "$name: the server still holds $(clients_now) clients after they left"
}

run write -n 500 -p 2 -r 4
grep -q "server holds 500 clients" "$tmp/write.log" || fail "the server did not hold 500 clients at once"
run send -n 200 -p 1 -r 3 -t send -k send
grep -q "server holds 200 clients" "$tmp/send.log" || fail "the server did not hold 200 SEND clients at once"
# The server served throughout: its counters add up (3 requests per round).
"$KV" stats --server "127.0.0.1:$PORT" | grep -q '^bad_requests 0$' || fail "bad requests counted"
kill "$server"
wait "$server" || fail "the server did not stop cleanly"
server=
echo "kv_many: ok"
