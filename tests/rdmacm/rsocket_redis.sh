#!/bin/sh
# rsocket_redis.sh — unmodified redis-server, redis-benchmark and a Python
# client over softrnic's rsockets, each under softrnic's librspreload.so
# (which, unlike Debian 12's, gives redis's event loop epoll).
#  - The server must listen through rsockets (its listener in softrnic's
#    CM registry) and not through the kernel (a TCP connect is refused).
#  - The Python client (the system's python3, unmodified) writes KEYS keys
#    of 1 B to 16 KiB, pipelined 64 at a time, checks every reply (+OK),
#    reads every key back with GET and MGET and compares the bytes, then
#    DBSIZE.
#  - BGSAVE forks; the child closes the listener it inherited, and the
#    server must go on listening.
#  - redis-benchmark (8 clients, SET/GET/LPUSH/LPOP/INCR) must report every
#    test, and the server's own count of the commands it processed must
#    have grown by at least what the benchmark sent.
# usage: rsocket_redis.sh <libdir> <port> [keys]
# SOFTRNIC_PRELOAD (a sanitizer runtime) is preloaded first.
set -u
. "$(dirname "$0")/../lib.sh"
libdir=$(cd "$1" && pwd) port=$2 keys=${3:-3000}
pre=$libdir/rsocket/librspreload.so
py=/usr/bin/python3
for p in redis-server redis-benchmark redis-cli; do
	command -v $p >/dev/null 2>&1 || { echo "$p not installed (redis-server, redis-tools)"; exit 77; }
done
[ -x $py ] || { echo "$py not installed"; exit 77; }
[ -f "$pre" ] || { echo "FAIL: $pre not built"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rsocket_redis.XXXXXX")
spid=""
trap '[ -n "$spid" ] && kill "$spid" 2>/dev/null; rm -rf "$work"' EXIT
run() {
	env LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	    LD_PRELOAD="${SOFTRNIC_PRELOAD:+$SOFTRNIC_PRELOAD }$pre" timeout -k 5 60 "$@"
}
cd "$work" || exit 1
# Protected mode on (redis's default): it serves only clients it sees at
# 127.0.0.1 or ::1.  Each softrnic process has its own 127.0.0.N, but a
# client connecting to 127.0.0.1 speaks from 127.0.0.1, as on the kernel
# (docs/rdmacm.md, "Addresses").
start_rsocket_server "$libdir" "$pre" "$port" 120 "$work/server.log" \
	redis-server --port "$port" --bind 127.0.0.1 --save '' \
	--appendonly no --dir "$work" || exit 1
if $py -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 2)" "$port" 2>/dev/null; then
	echo "FAIL: redis-server also listens on the kernel's TCP port $port"
	exit 1
fi

cat > "$work/check.py" <<'PY'
import socket, sys

port, keys = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port), 10)
buf = b""

def fill():
    global buf
    d = s.recv(65536)
    if not d:
        raise SystemExit("FAIL: the server closed the connection")
    buf += d

def line():
    global buf
    while b"\r\n" not in buf:
        fill()
    l, buf = buf.split(b"\r\n", 1)
    return l

def bulk():
    global buf
    l = line()
    if not l.startswith(b"$"):
        raise SystemExit("FAIL: expected a bulk reply, got %r" % l[:80])
    n = int(l[1:])
    if n < 0:
        return None
    while len(buf) < n + 2:
        fill()
    v, buf = buf[:n], buf[n + 2:]
    return v

def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out

def value(i):
    # 1 B to 16 KiB, a pattern that differs per key and per byte
    n = 1 + (i * 2654435761) % 16384
    return bytes((i * 7 + j * 13) & 0xFF for j in range(n))

total = 0
for start in range(0, keys, 64):
    batch = range(start, min(keys, start + 64))
    s.sendall(b"".join(cmd("SET", "key:%d" % i, value(i)) for i in batch))
    for i in batch:
        r = line()
        if r != b"+OK":
            raise SystemExit("FAIL: SET key:%d answered %r" % (i, r[:80]))
        total += len(value(i))
for start in range(0, keys, 64):
    batch = range(start, min(keys, start + 64))
    s.sendall(b"".join(cmd("GET", "key:%d" % i) for i in batch))
    for i in batch:
        v = bulk()
        if v != value(i):
            raise SystemExit("FAIL: GET key:%d gave %s bytes, not the %d written"
                             % (i, None if v is None else len(v), len(value(i))))
s.sendall(cmd("MGET", *["key:%d" % i for i in range(0, keys, 7)]))
l = line()
if l != b"*%d" % len(range(0, keys, 7)):
    raise SystemExit("FAIL: MGET answered %r" % l[:80])
for i in range(0, keys, 7):
    if bulk() != value(i):
        raise SystemExit("FAIL: MGET's key:%d differs" % i)
s.sendall(cmd("DBSIZE"))
l = line()
if l != b":%d" % keys:
    raise SystemExit("FAIL: DBSIZE %r, expected %d" % (l, keys))
print("checked %d SET and %d GET replies, an MGET of %d keys, DBSIZE %d: %d bytes written and read back"
      % (keys, keys, len(range(0, keys, 7)), keys, total))
PY

# processed: the server's total_commands_processed, over rsockets too.
processed() {
	run $py - "$port" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 10)
s.sendall(b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n")
d = b""
while b"total_commands_processed:" not in d or not d.endswith(b"\r\n"):
    c = s.recv(65536)
    if not c:
        break
    d += c
for l in d.split(b"\r\n"):
    if l.startswith(b"total_commands_processed:"):
        print(int(l.split(b":")[1]))
PY
}

run $py "$work/check.py" "$port" "$keys" || { echo "---- server log"; cat "$work/server.log"; exit 1; }
# A fork: BGSAVE's child inherits the server's rsockets and closes its
# listener; the parent must go on listening (the benchmark below makes new
# connections).  redis-cli, unmodified, over rsockets too.
[ "$(run redis-cli -p "$port" BGSAVE)" = "Background saving started" ] || { echo "FAIL: BGSAVE not started"; exit 1; }
i=0
until run redis-cli -p "$port" INFO persistence | grep -q 'rdb_bgsave_in_progress:0'; do
	[ $i -lt 100 ] || { echo "FAIL: BGSAVE never finished"; cat "$work/server.log"; exit 1; }
	sleep 0.1
	i=$((i + 1))
done
run redis-cli -p "$port" INFO persistence | grep -q 'rdb_last_bgsave_status:ok' || { echo "FAIL: BGSAVE failed"; exit 1; }
[ -s "$work/dump.rdb" ] || { echo "FAIL: no dump.rdb after BGSAVE"; exit 1; }
echo "BGSAVE: the forked child wrote $(wc -c < "$work/dump.rdb") bytes; the server still listens"
before=$(processed)
n=4000
run redis-benchmark -p "$port" -c 8 -n $n -t set,get,lpush,lpop,incr --csv > "$work/bench.csv" 2> "$work/bench.err"
brc=$?
after=$(processed)
echo "---- redis-benchmark (exit $brc)"; cat "$work/bench.csv"
[ $brc -eq 0 ] || { echo "FAIL: redis-benchmark exit $brc"; cat "$work/bench.err"; exit 1; }
for t in SET GET LPUSH LPOP INCR; do
	grep -q "^\"$t\",\"[0-9]" "$work/bench.csv" || { echo "FAIL: redis-benchmark reported no $t"; exit 1; }
done
echo "commands processed by the server: $before before the benchmark, $after after"
case "$before$after" in *[!0-9]*|"") echo "FAIL: INFO stats unreadable"; exit 1 ;; esac
[ $((after - before)) -ge $((5 * n)) ] || { echo "FAIL: the server processed $((after - before)) commands, fewer than the benchmark's $((5 * n))"; exit 1; }
kill "$spid"
wait "$spid"
src=$?
spid=""
grep -q "ready to exit" "$work/server.log" || { echo "FAIL: redis-server did not shut down cleanly (exit $src)"; cat "$work/server.log"; exit 1; }
echo "PASS"
