#!/bin/sh
# capture_e2e.sh — SOFTRNIC_PCAP with unmodified programs, no root: an
# ibv_rc_pingpong pair over our libibverbs.so.1 (each side on an address
# of its own, SOFTRNIC_ADDR), both capturing to FILE-%p.pcap, then, for
# every file:
#   - tshark decodes every frame as eth:ip:udp:infiniband to UDP 4791,
#     with IPv4 and UDP checksum validation on, and its expert info has
#     no warnings and no errors;
#   - `softrnic decode` (which recomputes each ICRC from the frame's own
#     IPv4 header) finds every ICRC right;
#   - the file is pcap with the nanosecond magic, and the frames count
#     what SOFTRNIC_STATS_AT_EXIT says (capture_packets);
# and the packets the client sent are, frame for frame and byte for byte
# (timestamps aside), the packets the server received, and the other way
# round.  Run three times: GSO on (the default: 16-packet messages leave
# as GSO sends, each segment its own frame with IPv4 ID k, real UDP
# checksums), SOFTRNIC_GSO=0 (one datagram per packet, checksum 0, ID 0),
# and with SOFTRNIC_PCAP_LIMIT=20K on the client: its file stays within
# 20 KiB, reads cleanly, and capture_dropped counts the rest.  Last, a
# capture file that cannot be created makes the device open fail, named.
#
# usage: capture_e2e.sh <libdir> <softrnic-tool> <tcp-port>
# Needs tshark, ibv_rc_pingpong, python3; exit 77 (skip) otherwise.
set -u
libdir=$1 tool=$2 port=$3
PY=/usr/bin/python3

for p in tshark ibv_rc_pingpong ibv_devinfo ss; do
	command -v $p >/dev/null 2>&1 || { echo "skip: $p not installed"; exit 77; }
done
[ -x $PY ] || { echo "skip: $PY missing"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/capture_e2e.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
o2=$(( $$ % 200 + 20 ))
o3=$(( $$ / 200 % 250 + 1 ))
A=127.$o2.$o3.1         # server
B=127.$o2.$o3.2         # client

fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/../lib.sh"

run_pair() { # tag env... -- args...
	tag=$1
	shift
	envs=""
	while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
	shift
	env LD_LIBRARY_PATH="$libdir" SOFTRNIC_ADDR=$A SOFTRNIC_STATS_AT_EXIT=1 $envs \
	    SOFTRNIC_PCAP="$work/$tag-server-%p.pcap" ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} \
	    timeout -k 5 30 ibv_rc_pingpong -p "$port" "$@" > "$work/$tag-server.log" 2>&1 &
	server=$!
	wait_server "$port" "$server" "$work/$tag-server.log" || fail "server never listened"
	env LD_LIBRARY_PATH="$libdir" SOFTRNIC_ADDR=$B SOFTRNIC_STATS_AT_EXIT=1 $envs ${CLIENT_ENV:-} \
	    SOFTRNIC_PCAP="$work/$tag-client-%p.pcap" ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} \
	    timeout -k 5 30 ibv_rc_pingpong -p "$port" "$@" 127.0.0.1 > "$work/$tag-client.log" 2>&1
	crc=$?
	wait "$server"
	src=$?
	if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
		cat "$work/$tag-server.log" "$work/$tag-client.log"
		fail "$tag: server exit $src, client exit $crc"
	fi
	port=$((port + 1))
}


# tshark and softrnic decode on one capture; prints its frame count.
check_file() { # pcap log
	f=$1
	[ -s "$f" ] || fail "$f missing or empty"
	magic=$(od -An -tx1 -N4 "$f" | tr -d ' ')
	[ "$magic" = 4d3cb2a1 ] || fail "$f: magic $magic, expected the nanosecond pcap magic"
	# One tshark run (each costs ~0.5 s): a line of fields per frame,
	# then the expert summary.
	tshark -r "$f" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE -T fields \
	    -e frame.protocols -e udp.dstport -e ip.checksum.status -e udp.checksum.status -e _ws.malformed \
	    -e ip.id -e udp.checksum -e frame.len -z expert > "$work/tshark.out" 2> "$work/tshark.err" ||
		{ cat "$work/tshark.err"; fail "$f: tshark failed"; }
	if grep -Eq '^(Errors|Warnings) \(' "$work/tshark.out"; then
		sed -n '/^$/,$p' "$work/tshark.out"
		fail "$f: tshark expert warnings or errors"
	fi
	grep '	' "$work/tshark.out" > "$f.fields"
	cp "$f.fields" "$work/fields.txt"
	frames=$(wc -l < "$work/fields.txt")
	[ "$frames" -gt 0 ] || fail "$f: no frames"
	# protocols, dport, IP checksum good (1), UDP good (1) or absent (3, checksum 0)
	bad=$(awk -F'\t' '!($1 ~ /^eth:ethertype:ip:udp:infiniband/ && $2 == 4791 && $3 == 1 &&
	                    ($4 == 1 || $4 == 3) && $5 == "")' "$work/fields.txt" | head -n 3)
	[ -z "$bad" ] || fail "$f: frames not clean RoCEv2: $bad"
	"$tool" decode "$f" > "$work/decode.txt" 2>&1 || { tail -n 5 "$work/decode.txt"; fail "$f: softrnic decode failed"; }
	ok=$(grep -c ' icrc-ok$' "$work/decode.txt")
	[ "$ok" -eq "$frames" ] || fail "$f: $ok of $frames frames icrc-ok"
	want=$(stats_counter "$2" capture_packets)
	[ "$want" -eq "$frames" ] || fail "$f: $frames frames, but capture_packets=$want"
	echo "$frames"
}

# The client's sent frames against the server's received ones, and back.
compare() { # server.pcap client.pcap
	$PY - "$1" "$2" "$A" "$B" <<'EOF'
import socket, struct, sys
def frames(path):
    d = open(path, 'rb').read()
    assert struct.unpack('<I', d[:4])[0] == 0xa1b23c4d
    out, off = [], 24
    while off < len(d):
        sec, ns, cap, orig = struct.unpack('<IIII', d[off:off + 16])
        out.append(d[off + 16:off + 16 + cap])
        off += 16 + cap
    return out
srv, cli = frames(sys.argv[1]), frames(sys.argv[2])
a, b = socket.inet_aton(sys.argv[3]), socket.inet_aton(sys.argv[4])
def sent_by(fs, ip):
    return [f for f in fs if f[26:30] == ip]
for name, x, y in (("client -> server", sent_by(cli, b), sent_by(srv, b)),
                   ("server -> client", sent_by(srv, a), sent_by(cli, a))):
    if len(x) != len(y):
        sys.exit("%s: %d frames sent, %d received" % (name, len(x), len(y)))
    for i, (p, q) in enumerate(zip(x, y)):
        if p != q:
            sys.exit("%s: frame %d differs between the two captures" % (name, i + 1))
    print("%s: %d frames sent = %d received, byte for byte" % (name, len(x), len(y)))
EOF
}

scenario() { # tag env...
	tag=$1
	shift
	run_pair "$tag" "$@" -- -g 0 -m 1024 -s 16384 -n 20
	s=$(ls "$work/$tag"-server-*.pcap) c=$(ls "$work/$tag"-client-*.pcap)
	sf=$(check_file "$s" "$work/$tag-server.log") || { echo "$sf"; exit 1; }
	cf=$(check_file "$c" "$work/$tag-client.log") || { echo "$cf"; exit 1; }
	echo "$tag: server capture $sf frames, client capture $cf frames: tshark clean, all ICRCs ok"
	compare "$s" "$c" || fail "$tag: sent and received captures differ"
}

# 1. GSO on (default): segments of GSO sends as frames of their own.
scenario gso
cfields=$(ls "$work"/gso-client-*.pcap).fields
ids=$(cut -f 6 "$cfields" | sort -u | wc -l)
[ "$ids" -gt 1 ] || fail "gso: every frame has the same IPv4 ID: no GSO segment numbering seen"
big=$(awk -F'\t' '$8 > 1200' "$cfields" | wc -l)
[ "$big" -eq 0 ] || fail "gso: $big frames longer than one 1024-MTU packet (a GSO run written whole)"
sends=$(sed -n 's/.*gso_sends=\([0-9]*\).*/\1/p' "$work/gso-client.log")
[ "${sends:-0}" -gt 0 ] || fail "gso: the client made no GSO send (gso_sends=${sends:-?})"
echo "gso: $sends GSO sends by the client, $ids distinct IPv4 IDs in its capture"

# 2. SOFTRNIC_GSO=0: checksum 0 and ID 0 on every frame.
scenario nogso SOFTRNIC_GSO=0
for f in "$work"/nogso-*-*.pcap; do
	odd=$(awk -F'\t' '!($6 == "0x0000" && $7 == "0x0000")' "$f.fields" | head -n 2)
	[ -z "$odd" ] || fail "nogso: $f has frames with a UDP checksum or an IPv4 ID: $odd"
done
echo "nogso: UDP checksum 0 and IPv4 ID 0 on every frame"

# 3. The limit, on the client only.
CLIENT_ENV="SOFTRNIC_PCAP_LIMIT=20K" run_pair limit -- -g 0 -m 1024 -s 16384 -n 20
c=$(ls "$work"/limit-client-*.pcap)
size=$(stat -c %s "$c")
[ "$size" -le 20480 ] || fail "limit: client capture is $size bytes, limit 20480"
grep -q "reached SOFTRNIC_PCAP_LIMIT=20480" "$work/limit-client.log" || fail "limit: no message on stderr"
dropped=$(stats_counter "$work/limit-client.log" capture_dropped)
written=$(stats_counter "$work/limit-client.log" capture_packets)
[ "$dropped" -gt 0 ] || fail "limit: capture_dropped is 0"
frames=$(check_file "$c" "$work/limit-client.log") || { echo "$frames"; exit 1; }
sfile=$(ls "$work"/limit-server-*.pcap)
sframes=$(check_file "$sfile" "$work/limit-server.log") || { echo "$sframes"; exit 1; }
[ $((written + dropped)) -eq "$sframes" ] ||
	fail "limit: client wrote $written and dropped $dropped, the server captured $sframes"
echo "limit: client capture $size bytes: $frames frames written, $dropped not (capture_dropped)"

# 4. A file that cannot be created: the device does not open.
out=$(env LD_LIBRARY_PATH="$libdir" SOFTRNIC_PCAP=/nonexistent-dir/x.pcap \
      ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} timeout 10 ibv_devinfo 2>&1)
echo "$out" | grep -q "softrnic: SOFTRNIC_PCAP=/nonexistent-dir/x.pcap: cannot create" ||
	fail "uncreatable capture file: no message: $out"
echo "uncreatable file: device open refused with a message"
echo "capture_e2e: ok"
