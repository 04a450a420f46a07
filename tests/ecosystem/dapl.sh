#!/usr/bin/env bash
# dapl.sh — uDAPL (Debian's dapl2-utils 2.1.10: libdat2, the ofa-v2
# providers) on softrnic through `softrnic run`, every server and client
# on 127.0.0.1.  A dat.conf of our own (DAT_OVERRIDE) names two providers:
#   - ofa-v2-softrnic-cma: libdaplofa, connections through librdmacm; its
#     "device" is a netdev whose IPv4 address it binds (lo: 127.0.0.1);
#   - ofa-v2-softrnic0-1s: libdaploscm, QP attributes exchanged over a TCP
#     socket; it opens the verbs device by name ("softrnic0 1"), which the
#     shim's /sys/class/infiniband tree lets it find.
# (libdaploucm needs a LID or a UD address dtest reads from its peer: on
# RoCE the LID is 0 and dtest refuses it.)
# The checks, each against the programs' own output, since dtest and
# dapltest exit 0 whatever happens:
#   dtest        SEND/RECV, RDMA WRITE and READ of 4 MiB (each side prints
#                the string in the buffer it wrote or read), bidirectional
#                WRITEs, on both providers; and dtest -W -D, a WRITE ping-pong whose
#                every round's data is checked;
#   dtestx       immediate data, compare-and-swap and fetch-and-add, each
#                result compared by dtestx;
#   dtestcm      200 connections set up and torn down;
#   dtestsrq     a shared receive queue;
#   dapltest     the transaction test with data validation (-V): 2
#                threads x 2 endpoints, SEND/RECV both ways, RDMA READ and
#                WRITE both ways, 200 rounds; then a performance test.
#   dapl.sh SOFTRNIC_BIN PORT    (PORT: dapltest's; dtest's own are fixed:
#                                 15828 TCP, 45248 rdma_cm)
# Skips (77) without dapl2-utils.
set -uo pipefail
SOFTRNIC=$1
PORT=$2
command -v dtest >/dev/null && command -v dapltest >/dev/null ||
	{ echo "dapl: dapl2-utils not installed; skipped"; exit 77; }
dir=$(mktemp -d)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "dapl: FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/../lib.sh"
CMA=ofa-v2-softrnic-cma
SCM=ofa-v2-softrnic0-1s
cat > "$dir/dat.conf" <<CONF
$CMA u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "lo 0" ""
$SCM u2.0 nonthreadsafe default libdaploscm.so.2 dapl.2.0 "softrnic0 1" ""
CONF
export DAT_OVERRIDE=$dir/dat.conf
# libdaploscm takes its own IPv4 address from DAPL_SCM_NETDEV's interface,
# else from the host name through getaddrinfo with AI_ADDRCONFIG, which
# finds nothing where lo is the only interface (CI's network namespace).
export DAPL_SCM_NETDEV=lo

# pair NAME SERVER-CMD -- CLIENT-CMD: the server in the background, the
# client once the server listens on TCP port $LISTEN (dtest's exchange)
# or, with LISTEN=cm:<port>, through librdmacm; both bounded to 120 s.
pair() {
	local name=$1 i
	shift
	local server=() client=()
	while [ "$1" != -- ]; do server+=("$1"); shift; done
	shift
	client=("$@")
	timeout -k 5 120 "$SOFTRNIC" run "${server[@]}" > "$dir/$name.server" 2>&1 &
	server_pid=$!
	for i in $(seq 200); do
		case $LISTEN in
		cm:*) cm_listening 262 "${LISTEN#cm:}" && break ;;
		*) [ -n "$(ss -Hltn "sport = :$LISTEN")" ] && break ;;
		esac
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.05
	done
	timeout -k 5 120 "$SOFTRNIC" run "${client[@]}" > "$dir/$name.client" 2>&1
	local rc=$?
	wait "$server_pid"
	local src=$?
	server_pid=
	[ $rc -eq 0 ] && [ $src -eq 0 ] || { tail -n 5 "$dir/$name.client" "$dir/$name.server" >&2; fail "$name: client exit $rc, server $src"; }
}
# need NAME SIDE PATTERN: SIDE's output (client/server) has PATTERN
need() {
	grep -q -- "$3" "$dir/$1.$2" ||
		{ grep -E "buffer contains|Error|ERROR" "$dir/$1.$2" >&2; tail -n 8 "$dir/$1.$2" >&2; fail "$1: the $2 never printed '$3'"; }
}

start=$SECONDS
for prov in $CMA $SCM; do
	name=dtest-$prov
	LISTEN=15828 pair "$name" dtest -s -P $prov -- dtest -P $prov -h 127.0.0.1
	for side in client server; do
		need "$name" $side "Test Complete. PASSED"
		other=$([ $side = client ] && echo server || echo client)
		need "$name" $side "${side^^}: RDMA write buffer contains: $other RDMA write data"
		# dtest writes "<other> RDMA read data" into the buffer its peer
		# READs just before it posts its own READ, with nothing in
		# between to order the two: the READ may find the string the
		# WRITE test left there, "<side> RDMA write data".  Both are
		# that buffer's contents, moved by RDMA READ.
		grep -qE -- "${side^^}: RCV RDMA read buffer contains: ($other RDMA read|$side RDMA write) data" "$dir/$name.$side" ||
			need "$name" $side "${side^^}: RCV RDMA read buffer contains: $other RDMA read data"
	done
	echo "dapl: dtest ($prov): $(grep -o 'RDMA write (bi-direction).*' "$dir/$name.client")"
done
LISTEN=15828 pair dtest-pingpong dtest -s -P $CMA -W -D -b 65536 -- dtest -P $CMA -h 127.0.0.1 -W -D -b 65536
need dtest-pingpong client "RDMA WRITE PINGPONG with DATA CHECK"
need dtest-pingpong client "Test Complete. PASSED"
need dtest-pingpong server "Test Complete. PASSED"
echo "dapl: dtest -W -D: $(grep -o 'RDMA write PingPong.*' "$dir/dtest-pingpong.client")"

LISTEN=15828 pair dtestx dtestx -s -P $CMA -- dtestx -c -P $CMA -h 127.0.0.1
for t in "CMP_SWAP test - PASSED" "FETCH_ADD test - PASSED" "immed/atomic test PASSED"; do
	need dtestx client "$t"
done
need dtestx server "immed/atomic test PASSED"
echo "dapl: dtestx: immediate data, compare-and-swap, fetch-and-add passed"

LISTEN=15828 pair dtestcm dtestcm -s -P $CMA -c 200 -- dtestcm -P $CMA -h 127.0.0.1 -c 200
need dtestcm client "Num=200"
echo "dapl: dtestcm: $(grep -o 'Connections:.*' "$dir/dtestcm.client" | tr -s ' ')"

LISTEN=cm:45248 pair dtestsrq dtestsrq -s -P $CMA -- dtestsrq -P $CMA -h 127.0.0.1
need dtestsrq client "ALL 1 CONNECTED on client"
need dtestsrq client "DAPL RC SRQ Test Complete"
need dtestsrq server "DAPL RC SRQ Test Complete"
echo "dapl: dtestsrq: passed"

# dapltest: the server runs until a client sends it the quit test
timeout -k 5 120 "$SOFTRNIC" run dapltest -T S -D $CMA -n "$PORT" > "$dir/dapltest.server" 2>&1 &
server_pid=$!
for i in $(seq 200); do cm_listening 262 "$PORT" && break; sleep 0.05; done
cm_listening 262 "$PORT" || { cat "$dir/dapltest.server" >&2; fail "dapltest's server never listened"; }
client_run() {   # TEST-TYPE ARGS...: dapltest wants -T first
	local t=$1
	shift
	timeout -k 5 60 "$SOFTRNIC" run dapltest -T "$t" -D $CMA -n "$PORT" -s 127.0.0.1 "$@"
}
client_run T -t 2 -w 2 -i 200 -V client SR 4096 server SR 4096 client RR 65536 2 client RW 65536 \
	server RR 8192 server RW 4096 4 > "$dir/dapltest-t.client" 2>&1 || { cat "$dir/dapltest-t.client" >&2; fail "dapltest -T T exited $?"; }
client_run P -i 2000 RW 65536 > "$dir/dapltest-p.client" 2>&1 || fail "dapltest -T P exited $?"
client_run Q > "$dir/dapltest-q.client" 2>&1 || fail "dapltest -T Q exited $?"
wait "$server_pid"
src=$?
server_pid=
for f in dapltest-t.client dapltest-p.client dapltest.server; do
	if grep -qiE "error|fail|bad |warning|mismatch" "$dir/$f"; then
		grep -iE "error|fail|bad |warning|mismatch" "$dir/$f" | head -5 >&2
		fail "dapltest: $f reports a failure"
	fi
done
[ $src -eq 0 ] || fail "dapltest's server exited $src"
grep -q "Total RDMA Read" "$dir/dapltest-t.client" && grep -q "Total RDMA Write" "$dir/dapltest-t.client" ||
	{ cat "$dir/dapltest-t.client" >&2; fail "dapltest -T T printed no totals"; }
need dapltest-p client "^raw: RW"
echo "dapl: dapltest -T T (-V): $(grep -E 'Total (WQE|RDMA Read|RDMA Write)' "$dir/dapltest-t.client" | tr -s ' ' | tr '\n' ';')"
echo "dapl: dapltest -T P RW 64 KiB: $(grep -A0 'Throughput' "$dir/dapltest-p.client" | head -1 | tr -s ' ')"
echo "dapl: all checks passed ($((SECONDS - start)) s)"
