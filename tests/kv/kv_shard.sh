#!/usr/bin/env bash
# kv_shard.sh — keys sharded over three softrnic-kv servers by the client's
# consistent-hash ring (src/kv/cluster.h): kv_net_test's shard mode, the
# command line with a list of servers, and a server stopped (its keys fail,
# the others' are served).
#
# usage: kv_shard.sh LIB_DIR SOFTRNIC_KV KV_NET_TEST FIRST_PORT (uses 3 ports)
set -euo pipefail
LIB=$1 KV=$2 CLIENT=$3 PORT=$4
export LD_LIBRARY_PATH=$LIB
unset SOFTRNIC_ADDR SOFTRNIC_IFACE
tmp=$(mktemp -d)
servers=()
cleanup() {
	for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "kv_shard: $*" >&2; cat "$tmp"/server*.log >&2; exit 1; }

list=
for i in 0 1 2; do
	p=$((PORT + i))
	timeout 120 "$KV" serve --port "$p" --mem 64m >"$tmp/server$i.log" 2>&1 &
	servers+=($!)
	list=${list:+$list,}127.0.0.1:$p
done
for i in 0 1 2; do
	for _ in $(seq 50); do "$KV" stats --server "127.0.0.1:$((PORT + i))" >/dev/null 2>&1 && break; sleep 0.1; done
done

timeout 100 "$CLIENT" "$list" 0 20 2000 shard || fail "sharded client"

# The command line takes the same list.
"$KV" set --server "$list" greeting hello || fail "set through the list"
[ "$("$KV" get --server "$list" greeting)" = hello ] || fail "get through the list"
[ "$("$KV" get --one-sided --server "$list" greeting)" = hello ] || fail "one-sided get through the list"
[ "$("$KV" incr --server "$list" n 3)" = 3 ] || fail "incr through the list"
[ "$("$KV" mget --server "$list" greeting s:1 nothing)" = "$(printf 'hello\n%s\n(nil)' "$("$KV" get --server "$list" s:1)")" ] ||
	fail "mget through the list"
"$KV" stats --server "$list" >"$tmp/stats" || fail "stats of the list"
[ "$(grep -c '^# 127.0.0.1:' "$tmp/stats")" = 3 ] || fail "stats should show three servers"
items=$(awk '$1 == "items" { s += $2 } END { print s }' "$tmp/stats")
[ "$items" = 2002 ] || { cat "$tmp/stats" >&2; fail "the servers hold $items items, not 2000 + greeting + n"; }
rc=0; "$KV" get --server "127.0.0.1:$PORT,127.0.0.1:$PORT" x 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "each server once" "$tmp/err" || fail "a server listed twice: exit $rc"

# The last server stops: its keys fail, the others' are still served.
kill "${servers[2]}"
wait "${servers[2]}" 2>/dev/null || true
timeout 100 "$CLIENT" "$list" 0 21 2000 shard-degraded || fail "degraded cluster"
echo "kv_shard: ok"
