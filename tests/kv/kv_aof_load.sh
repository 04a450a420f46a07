#!/usr/bin/env bash
# kv_aof_load.sh — what the server does with an append-only file it cannot
# parse, and check-aof.  A log of 50 SETs written by a real server through
# its client (kv_net_test fill: keys aof:0..aof:49, values of 100+i
# bytes, so every record's offset is known here), then:
#   a  README.md as the log: the server refuses with one line naming byte
#      0, exits nonzero, and the file is byte for byte (and mtime) as it was
#   b  the log with one byte flipped at 20%: refused the same way, naming
#      the offset of the record with the flip
#   c  the log with its last record cut in the middle: the server starts,
#      says how many bytes it cut at which offset, has the 49 other keys
#   d  check-aof on each (exit 0 only for the whole log), and --fix on (b):
#      a .bak identical to the file before, the file cut to the records
#      before the flip, which a server then loads; --fix never overwrites
#      an existing .bak nor touches a log a server holds
#   e  a symbolic link planted at the rewrite's temporary name: a rewrite
#      does not write through it (the other file is unchanged, the log
#      stays a regular file); a stale regular file there is replaced
#   f  --aof naming a symbolic link: refused, its target unchanged
# KV_AOF_LOAD_ONLY="a d" runs only those parts.
#
# usage: kv_aof_load.sh LIB_DIR SOFTRNIC_KV KV_NET_TEST PORT
set -euo pipefail
LIB=$1 KV=$2 CLIENT=$3 PORT=$4
export LD_LIBRARY_PATH=$LIB
unset SOFTRNIC_ADDR SOFTRNIC_IFACE
README=$(cd "$(dirname "$0")/../.." && pwd)/README.md
ONLY=${KV_AOF_LOAD_ONLY:-a b c d e f}
tmp=$(mktemp -d)
server=
cleanup() {
	[ -n "$server" ] && kill -KILL "$server" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "kv_aof_load: $*" >&2; cat "$tmp"/*.log >&2 2>/dev/null; exit 1; }
part() { [[ " $ONLY " == *" $1 "* ]]; }
fingerprint() { echo "$(sha256sum <"$1") $(stat -c '%s %y %F' "$1")"; }

# start LOG NAME [ARGS]: a server on LOG, up and answering.
start() {
	local log=$1 name=$2
	shift 2
	"$KV" serve --port "$PORT" --mem 64m --aof "$log" "$@" >"$tmp/$name.log" 2>&1 &
	server=$!
	for _ in $(seq 100); do
		"$KV" stats --server "127.0.0.1:$PORT" >/dev/null 2>&1 && return 0
		kill -0 "$server" 2>/dev/null || { server=; fail "$name: the server exited"; }
		sleep 0.1
	done
	fail "$name: the server did not start"
}
stop() {
	kill -TERM "$server"
	wait "$server" || fail "server exit status"
	server=
}

# refused LOG NAME OFFSET: a server given LOG must exit by itself with a
# nonzero status and one line on stderr naming LOG and byte OFFSET, and
# leave LOG as it was.
refused() {
	local log=$1 name=$2 offset=$3 before rc=0
	before=$(fingerprint "$log")
	timeout 10 "$KV" serve --port "$PORT" --mem 64m --aof "$log" >"$tmp/$name.log" 2>&1 || rc=$?
	[ "$rc" != 0 ] || fail "$name: the server started on a log it cannot parse (exit 0)"
	[ "$rc" != 124 ] || fail "$name: the server was serving a log it cannot parse"
	[ "$(wc -l <"$tmp/$name.log")" = 1 ] || fail "$name: the refusal is not one line"
	grep -q "refusing to start: the log $log is not valid at byte $offset:" "$tmp/$name.log" ||
		fail "$name: the refusal does not name $log and byte $offset"
	[ "$(fingerprint "$log")" = "$before" ] || fail "$name: $log changed: $before -> $(fingerprint "$log")"
	echo "kv_aof_load: $name: $(cat "$tmp/$name.log")"
}

# The log: 50 SETs through a server, each acknowledged.
good=$tmp/good.aof
start "$good" writer --appendfsync always
timeout 60 "$CLIENT" 127.0.0.1 "$PORT" 1 50 fill >"$tmp/fill.out" 2>&1 || fail "fill"
[ "$(grep -c '^acked ' "$tmp/fill.out")" = 50 ] || fail "not all 50 SETs acknowledged"
stop
# Record i: a 24-byte header, the key aof:i, a value of 100 + i bytes.
declare -a at len
size=0
for i in $(seq 0 49); do
	at[i]=$size
	len[i]=$((24 + ${#i} + 4 + 100 + i))
	size=$((size + len[i]))
done
[ "$(stat -c %s "$good")" = "$size" ] || fail "the log is $(stat -c %s "$good") bytes, not $size"
good_print=$(fingerprint "$good")

# The log with the byte at 20% flipped (xor 0xff): in record $flipped.
flip_at=$((size / 5))
flipped=0
while [ $((at[flipped] + len[flipped])) -le "$flip_at" ]; do flipped=$((flipped + 1)); done
cp -p "$good" "$tmp/flip.aof"
byte=$(od -An -tu1 -j "$flip_at" -N1 "$good" | tr -d ' ')
printf "\\$(printf %o $((byte ^ 255)))" | dd of="$tmp/flip.aof" bs=1 seek="$flip_at" conv=notrunc status=none
cp -p "$tmp/flip.aof" "$tmp/flip.orig"
# The log with its last record cut in the middle.
cut_to=$((at[49] + len[49] / 2))
cp -p "$good" "$tmp/torn.aof"
truncate -s "$cut_to" "$tmp/torn.aof"
cp -p "$tmp/torn.aof" "$tmp/torn.orig"
echo "kv_aof_load: $size bytes of log; byte $flip_at flipped (record $flipped at byte ${at[flipped]});" \
	"torn copy cut at byte $cut_to (record 49 at byte ${at[49]})"

if part a; then
	cp "$README" "$tmp/readme.aof"
	refused "$tmp/readme.aof" readme 0
	grep -q 'it starts "# so" where a record starts "AOF1"' "$tmp/readme.log" || fail "readme: what is wrong"
	cmp -s "$README" "$tmp/readme.aof" || fail "readme: the file changed"
fi

if part b; then
	refused "$tmp/flip.aof" flip "${at[flipped]}"
	grep -q "the $flipped records before it (${at[flipped]} bytes) are valid" "$tmp/flip.log" ||
		fail "flip: the valid records before it are not counted"
	cmp -s "$tmp/flip.orig" "$tmp/flip.aof" || fail "flip: the file changed"
fi

if part c; then
	start "$tmp/torn.aof" torn
	grep -q "torn record at byte ${at[49]}.*cut $((cut_to - at[49])) bytes at offset ${at[49]}$" "$tmp/torn.log" ||
		fail "torn: the cut (bytes, offset) is not reported"
	grep -q "49 records replayed" "$tmp/torn.log" || fail "torn: not 49 records replayed"
	timeout 60 "$CLIENT" 127.0.0.1 "$PORT" 3 49 verify >"$tmp/verify.out" 2>&1 || fail "torn: keys lost"
	rc=0; "$KV" get --server "127.0.0.1:$PORT" aof:49 >/dev/null 2>&1 || rc=$?
	[ "$rc" = 1 ] || fail "torn: the torn record's key is there (get: $rc)"
	stop
	[ "$(stat -c %s "$tmp/torn.aof")" = "${at[49]}" ] || fail "torn: not cut at ${at[49]}"
	echo "kv_aof_load: torn: $(grep torn "$tmp/torn.log")"
fi

if part d; then
	# check: OK / the offset of the first bad record, exit 0 / 1, nothing changed.
	check() {       # check FILE STATUS TEXT
		local before rc=0
		before=$(fingerprint "$1")
		"$KV" check-aof "$1" >"$tmp/check.out" 2>"$tmp/check.err" || rc=$?
		[ "$rc" = "$2" ] || { cat "$tmp/check.out" "$tmp/check.err" >&2; fail "check-aof $1: exit $rc, not $2"; }
		grep -q "$3" "$tmp/check.out" || { cat "$tmp/check.out" >&2; fail "check-aof $1: no \"$3\""; }
		[ "$(fingerprint "$1")" = "$before" ] || fail "check-aof changed $1"
		echo "kv_aof_load: check-aof: $(head -1 "$tmp/check.out")"
	}
	cp "$README" "$tmp/readme2.aof"
	cp -p "$tmp/flip.orig" "$tmp/flip2.aof"
	cp -p "$tmp/torn.orig" "$tmp/torn2.aof"
	check "$good" 0 "is valid: 50 records, $size bytes"
	check "$tmp/readme2.aof" 1 "is not valid at byte 0: not a record"
	check "$tmp/flip2.aof" 1 "is not valid at byte ${at[flipped]}: .*the $flipped records before it (${at[flipped]} bytes)"
	check "$tmp/torn2.aof" 1 "ends in a torn record at byte ${at[49]} .*the last $((cut_to - at[49])) bytes are torn"
	# --help: usage on stdout, exit 0.
	"$KV" check-aof --help >"$tmp/help.out" 2>"$tmp/help.err" || fail "check-aof --help: exit status"
	grep -q "^usage: softrnic-kv check-aof \[--fix\] FILE" "$tmp/help.out" && [ ! -s "$tmp/help.err" ] ||
		fail "check-aof --help: not the usage on stdout"
	"$KV" --help | grep -q "check-aof" || fail "softrnic-kv --help does not list check-aof"

	# --fix never writes over an existing copy: every name it could take
	# in the next seconds is taken; the log and those files stay.
	now=$(date +%s)
	for t in $now $((now + 1)) $((now + 2)); do echo mine >"$tmp/flip2.aof.bak-$t"; done
	rc=0; "$KV" check-aof --fix "$tmp/flip2.aof" >"$tmp/fix.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] && grep -q "exists: not overwritten" "$tmp/fix.out" || { cat "$tmp/fix.out" >&2; fail "fix over a .bak: exit $rc"; }
	cmp -s "$tmp/flip.orig" "$tmp/flip2.aof" || fail "fix over a .bak: the log changed"
	for t in $now $((now + 1)) $((now + 2)); do [ "$(cat "$tmp/flip2.aof.bak-$t")" = mine ] || fail "a .bak overwritten"; done
	# Not a log at all: --fix leaves it.
	rc=0; "$KV" check-aof --fix "$tmp/readme2.aof" >"$tmp/fix.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] && cmp -s "$README" "$tmp/readme2.aof" && ! ls "$tmp"/readme2.aof.bak-* >/dev/null 2>&1 ||
		fail "fix of README.md: exit $rc, or it changed"

	# --fix on (b): a copy first, identical to the file before; then the log cut at the flip.
	"$KV" check-aof --fix "$tmp/flip.aof" >"$tmp/fix.out" 2>&1 || { cat "$tmp/fix.out" >&2; fail "check-aof --fix: exit status"; }
	echo "kv_aof_load: fix: $(cat "$tmp/fix.out")"
	grep -q "kept $flipped records (${at[flipped]} bytes); dropped $((size - at[flipped])) bytes from byte ${at[flipped]}" \
		"$tmp/fix.out" || fail "check-aof --fix: what was kept and dropped"
	baks=("$tmp"/flip.aof.bak-*)
	[ "${#baks[@]}" = 1 ] && [ -f "${baks[0]}" ] || fail "check-aof --fix: not one .bak: ${baks[*]}"
	grep -q "is in ${baks[0]}$" "$tmp/fix.out" || fail "check-aof --fix: the copy is not named"
	cmp -s "$tmp/flip.orig" "${baks[0]}" || fail "check-aof --fix: the .bak differs from the file before"
	[ "$(stat -c %s "$tmp/flip.aof")" = "${at[flipped]}" ] || fail "check-aof --fix: not cut at ${at[flipped]}"
	cmp -s -n "${at[flipped]}" "$good" "$tmp/flip.aof" || fail "check-aof --fix: the records kept changed"
	check "$tmp/flip.aof" 0 "is valid: $flipped records"
	"$KV" check-aof --fix "$tmp/flip.aof" | grep -q "nothing to fix" || fail "check-aof --fix on a valid log"
	[ "$(ls "$tmp"/flip.aof.bak-* | wc -l)" = 1 ] || fail "check-aof --fix made a copy of a valid log"
	start "$tmp/flip.aof" fixed
	grep -q "$flipped records replayed" "$tmp/fixed.log" || fail "the fixed log: not $flipped records replayed"
	timeout 60 "$CLIENT" 127.0.0.1 "$PORT" 4 "$flipped" verify >"$tmp/verify.out" 2>&1 || fail "the fixed log: keys lost"
	rc=0; "$KV" get --server "127.0.0.1:$PORT" "aof:$flipped" >/dev/null 2>&1 || rc=$?
	[ "$rc" = 1 ] || fail "the fixed log: the flipped record's key is there"
	# A log a server holds: --fix leaves it.
	cp -p "$tmp/flip.aof" "$tmp/held.before"
	rc=0; "$KV" check-aof --fix "$tmp/flip.aof" >"$tmp/fix.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] && grep -q "another process holds it" "$tmp/fix.out" || { cat "$tmp/fix.out" >&2; fail "fix of a held log: exit $rc"; }
	stop
	cmp -s "$tmp/held.before" "$tmp/flip.aof" || fail "fix of a held log: changed"
fi

if part e; then
	# A symbolic link at the rewrite's temporary name, to another file.
	mkdir "$tmp/rw"
	echo precious >"$tmp/rw/victim"
	victim_print=$(fingerprint "$tmp/rw/victim")
	ln -s "$tmp/rw/victim" "$tmp/rw/log.aof.rewrite"
	start "$tmp/rw/log.aof" rewrite1 --aof-rewrite-min 1m -v
	"$KV" bench --server "127.0.0.1:$PORT" --op set --keys 10 --value-size 1000 --requests 3000 >/dev/null ||
		fail "bench SETs"
	"$KV" stats --server "127.0.0.1:$PORT" >"$tmp/stats"
	[ "$(fingerprint "$tmp/rw/victim")" = "$victim_print" ] || fail "rewrite: wrote through the symbolic link"
	[ -L "$tmp/rw/log.aof.rewrite" ] && [ "$(readlink "$tmp/rw/log.aof.rewrite")" = "$tmp/rw/victim" ] ||
		fail "rewrite: the planted link was changed"
	[ -f "$tmp/rw/log.aof" ] && [ ! -L "$tmp/rw/log.aof" ] || fail "rewrite: the log is not a regular file now"
	[ "$(awk '$1 == "aof_rewrites" { print $2 }' "$tmp/stats")" = 0 ] || fail "rewrite: counted a rewrite"
	grep -q "log.aof.rewrite exists and is not a regular file of this user" "$tmp/rewrite1.log" ||
		fail "rewrite: the refusal is not reported"
	stop
	start "$tmp/rw/log.aof" rewrite2
	grep -q " 10 items" "$tmp/rewrite2.log" || fail "rewrite: the log does not hold the 10 keys"
	stop
	# A stale temporary file of ours (a rewrite that crashed) is replaced.
	rm "$tmp/rw/log.aof.rewrite"
	echo stale >"$tmp/rw/log.aof.rewrite"
	start "$tmp/rw/log.aof" rewrite3 --aof-rewrite-min 1m -v
	grep -q "rewritten:" "$tmp/rewrite3.log" || fail "rewrite: a stale temporary file stopped the rewrite"
	[ ! -e "$tmp/rw/log.aof.rewrite" ] || fail "rewrite: the stale temporary file is still there"
	stop
	[ "$(fingerprint "$tmp/rw/victim")" = "$victim_print" ] || fail "rewrite: the other file changed"
	echo "kv_aof_load: rewrite: $(grep rewriting "$tmp/rewrite1.log")"
fi

if part f; then
	cp -p "$good" "$tmp/target.aof"
	ln -s "$tmp/target.aof" "$tmp/link.aof"
	rc=0; timeout 10 "$KV" serve --port "$PORT" --aof "$tmp/link.aof" >"$tmp/link.log" 2>&1 || rc=$?
	[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "link: the server took a log through a symbolic link"
	grep -q "symbolic link" "$tmp/link.log" || fail "link: the refusal does not say why"
	[ "$(fingerprint "$tmp/target.aof")" = "$(fingerprint "$good")" ] || fail "link: the target changed"
fi
[ "$(fingerprint "$good")" = "$good_print" ] || fail "the good log changed"
echo "kv_aof_load: ok"
