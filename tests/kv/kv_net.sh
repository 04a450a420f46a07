#!/usr/bin/env bash
# kv_net.sh — the key-value store over softrnic between processes: a
# softrnic-kv server, three kv_net_test clients at once (each against its
# own model, then malformed requests; two with requests as WRITE-with-
# immediate, one as SENDs), one-sided GETs racing SETs, the rkey's
# confinement, a client killed mid-work (the server serves on), clients
# that stop taking answers or are killed between requests (the server
# reclaims them), and the command line's contract (values, exit status
# 0 / 1 / 2, a 1 MiB value from stdin).
#
# usage: kv_net.sh LIB_DIR SOFTRNIC_KV KV_NET_TEST PORT
set -euo pipefail
LIB=$1 KV=$2 CLIENT=$3 PORT=$4
export LD_LIBRARY_PATH=$LIB
unset SOFTRNIC_ADDR SOFTRNIC_IFACE
tmp=$(mktemp -d)
server= victim= idler=
cleanup() {
	# TERM for the server's `timeout` (which passes it on), KILL for the rest.
	[ -n "$server" ] && kill "$server" 2>/dev/null || true
	for p in $victim $idler; do kill -KILL "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

timeout 120 "$KV" serve --port "$PORT" --mem 256m --probe-ms 300 -v >"$tmp/server.log" 2>&1 &
server=$!
# Wait until it serves (a client connects).
for _ in $(seq 50); do
	"$KV" stats --server "127.0.0.1:$PORT" >/dev/null 2>&1 && break
	sleep 0.1
done

fail() { echo "kv_net: $*" >&2; cat "$tmp/server.log" >&2; exit 1; }

pids=()
for c in 1 2 3; do
	transport=write; [ "$c" = 3 ] && transport=send
	KV_TEST_TRANSPORT=$transport timeout 100 "$CLIENT" 127.0.0.1 "$PORT" "$c" 3000 >"$tmp/client$c.log" 2>&1 &
	pids+=($!)
done
for i in 0 1 2; do
	wait "${pids[$i]}" || { cat "$tmp/client$((i + 1)).log" >&2; fail "client $((i + 1)) failed"; }
	cat "$tmp/client$((i + 1)).log"
done

# One-sided GETs racing SETs of the same key: never a torn value.
KV_TEST_TRANSPORT=send timeout 100 "$CLIENT" 127.0.0.1 "$PORT" 10 4000 race-writer >"$tmp/writer.log" 2>&1 &
writer=$!
timeout 100 "$CLIENT" 127.0.0.1 "$PORT" 11 20000 race-reader >"$tmp/reader.log" 2>&1 ||
	{ cat "$tmp/reader.log" >&2; fail "one-sided reader"; }
wait "$writer" || { cat "$tmp/writer.log" >&2; fail "race writer"; }
cat "$tmp/writer.log" "$tmp/reader.log"

# The rkey confines one-sided access to reading the table.
timeout 60 "$CLIENT" 127.0.0.1 "$PORT" 12 0 confine || fail "rkey confinement"

# A client killed in the middle of its work: the server serves on.
# (No `timeout` wrapper where a SIGKILL must reach the client itself.)
"$CLIENT" 127.0.0.1 "$PORT" 13 1000000 >/dev/null 2>&1 &
victim=$!
sleep 0.5
kill -KILL "$victim"
wait "$victim" 2>/dev/null || true
victim=
timeout 100 "$CLIENT" 127.0.0.1 "$PORT" 14 500 >"$tmp/after.log" 2>&1 || { cat "$tmp/after.log" >&2; fail "after a killed client"; }
cat "$tmp/after.log"

s="--server 127.0.0.1:$PORT"
stat() { "$KV" stats $s | awk -v k="$1" '$1 == k { print $2 }'; }
# Wait (up to 15 s) until the server has reclaimed more than $1 clients.
await_reclaimed() {
	for _ in $(seq 150); do
		[ "$(stat clients_reclaimed)" -gt "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
# Wait (up to 15 s) until the only connection left is the stats call's.
await_alone() {
	for _ in $(seq 150); do
		[ "$(stat clients)" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

# A client that stops taking answers (no receive posted): its connection is
# reclaimed when the server's RNR retries run out, and others are served.
before=$(stat clients_reclaimed)
timeout 60 "$CLIENT" 127.0.0.1 "$PORT" 15 40 stall >"$tmp/stall.log" 2>&1 &
staller=$!
timeout 100 "$CLIENT" 127.0.0.1 "$PORT" 16 300 >"$tmp/beside.log" 2>&1 || { cat "$tmp/beside.log" >&2; fail "beside a stalled client"; }
await_reclaimed "$before" || fail "a client that takes no answers was not reclaimed"
grep -q "gone (RNR retry counter exceeded" "$tmp/server.log" || fail "the stalled client was reclaimed for another reason"
kill "$staller" 2>/dev/null || true
wait "$staller" 2>/dev/null || true
echo "kv_net: a client taking no answers was reclaimed ($(stat clients_reclaimed) reclaimed so far)"

# A client killed between requests: nothing is in flight, no kernel says
# it has gone; the server's probe of a quiet connection finds out.
await_alone || fail "connections left behind before the idle case: $(stat clients)"
before=$(stat clients_reclaimed)
"$CLIENT" 127.0.0.1 "$PORT" 17 60 idle >"$tmp/idle.log" 2>&1 &
idler=$!
for _ in $(seq 100); do grep -q ready "$tmp/idle.log" && break; sleep 0.1; done
kill -KILL "$idler"
wait "$idler" 2>/dev/null || true
idler=
await_reclaimed "$before" || fail "a client killed between requests was not reclaimed"
await_alone || fail "connections left behind: $(stat clients) (only this stats call should be)"
echo "kv_net: a client killed between requests was reclaimed"
"$KV" set $s greeting "hello world" || fail "set"
[ "$("$KV" get $s greeting)" = "hello world" ] || fail "get returned the wrong value"
[ "$("$KV" get --one-sided $s greeting)" = "hello world" ] || fail "one-sided get returned the wrong value"
"$KV" set $s other two || fail "set"
[ "$("$KV" mget $s greeting nothing-here other)" = "$(printf 'hello world\n(nil)\ntwo')" ] || fail "mget"
rc=0; "$KV" get --one-sided $s nothing-here 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "one-sided get of a missing key: exit $rc"
rc=0; "$KV" get $s nothing-here 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] && grep -q "no such key" "$tmp/err" || fail "get of a missing key: exit $rc"
[ "$("$KV" incr $s hits 5)" = 5 ] && [ "$("$KV" incr $s hits)" = 6 ] || fail "incr"
# The same through `softrnic kv`, which runs softrnic-kv from its directory.
[ "$("$(dirname "$KV")/softrnic" kv get $s hits)" = 6 ] || fail "softrnic kv get"
rc=0; "$KV" incr $s greeting 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "not an integer" "$tmp/err" || fail "incr of a string: exit $rc"
"$KV" del $s greeting || fail "del"
rc=0; "$KV" del $s greeting 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "second del: exit $rc"
head -c 1048576 /dev/urandom >"$tmp/big"
"$KV" set $s big - <"$tmp/big" || fail "set of 1 MiB from stdin"
"$KV" get $s big | cmp -s - "$tmp/big" || fail "1 MiB value came back different"
head -c 1048577 /dev/zero >"$tmp/toobig"
rc=0; "$KV" set $s big - <"$tmp/toobig" 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "a value over 1 MiB: exit $rc"
# 1.5 s: each CLI call is a new process that opens the device and
# connects; under a loaded CI that took over the 200 ms this once had.
"$KV" set $s --ttl 1500 brief x || fail "set with ttl"
[ "$("$KV" get $s brief)" = x ] || fail "ttl key gone too soon"
sleep 1.7
rc=0; "$KV" get $s brief 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "ttl key still there after its time"
rc=0; "$KV" get --server 127.0.0.1:$((PORT + 1)) x 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "cannot connect" "$tmp/err" || fail "no server: exit $rc"
"$KV" stats $s >"$tmp/stats" || fail "stats"
grep -q "^bad_requests 35$" "$tmp/stats" || { cat "$tmp/stats" >&2; fail "server counted other than 5x7 bad requests"; }

kill -TERM "$server"
rc=0; wait "$server" || rc=$?
server=
[ "$rc" = 0 ] || fail "server exited $rc on SIGTERM"
echo "kv_net: ok"
