#!/bin/sh
# run_pair.sh — runs an unmodified rdma-core / perftest program as a server
# and a client on this machine over our libibverbs.so.1, the way a user
# would on two hosts, and checks both sides.
#
# usage: run_pair.sh [options] <libdir> <tcp-port> <program> [args...]
#   -t SECONDS   timeout for each side (default 60)
#   -s REGEX     extended regex the server's output must match (repeatable)
#   -c REGEX     extended regex the client's output must match (repeatable)
#   -b BYTES     both sides must print "BYTES bytes in" (ibv_*_pingpong)
#
# The program's TCP side (QPN/PSN/GID exchange) listens on <tcp-port> and
# the client connects to 127.0.0.1; each side's RDMA device binds its own
# 127.0.0.N (see runtime.h), exactly like two rxe hosts.  SOFTRNIC_PRELOAD,
# if set, is put in LD_PRELOAD (the sanitizer runtime in ASan builds).
set -u
timeout_s=60
sregs=""
cregs=""
bytes=""
while getopts t:s:c:b: opt; do
	case $opt in
	t) timeout_s=$OPTARG ;;
	s) sregs="$sregs
$OPTARG" ;;
	c) cregs="$cregs
$OPTARG" ;;
	b) bytes=$OPTARG ;;
	*) echo "bad option"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
libdir=$1 port=$2 prog=$3
shift 3
command -v "$prog" >/dev/null 2>&1 || { echo "$prog not installed"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/run_pair.XXXXXX")
trap 'rm -rf "$work"' EXIT
run() {
	env LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	    ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} \
	    timeout -k 5 "$timeout_s" "$@"
}

run "$prog" -p "$port" "$@" > "$work/server.log" 2>&1 &
server=$!

# Wait until the server listens on its TCP port (or died).
i=0
while ! ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; do
	if ! kill -0 "$server" 2>/dev/null || [ $i -ge 100 ]; then
		echo "server never listened on tcp port $port"
		cat "$work/server.log"
		kill "$server" 2>/dev/null
		exit 1
	fi
	sleep 0.1
	i=$((i + 1))
done

run "$prog" -p "$port" "$@" 127.0.0.1 > "$work/client.log" 2>&1
crc=$?
wait "$server"
src=$?

echo "---- server ($prog -p $port $*) exit $src"
cat "$work/server.log"
echo "---- client ($prog -p $port $* 127.0.0.1) exit $crc"
cat "$work/client.log"

status=0
[ $src -eq 0 ] || { echo "FAIL: server exit $src"; status=1; }
[ $crc -eq 0 ] || { echo "FAIL: client exit $crc"; status=1; }
if [ -n "$bytes" ]; then
	for side in server client; do
		grep -Eq "^$bytes bytes in [0-9.]+ seconds" "$work/$side.log" ||
			{ echo "FAIL: $side did not report $bytes bytes"; status=1; }
	done
fi
check_regs() { # side regexes
	side=$1
	echo "$2" | while IFS= read -r re; do
		[ -n "$re" ] || continue
		grep -Eq -- "$re" "$work/$side.log" || { echo "FAIL: $side output lacks /$re/"; echo fail > "$work/regfail"; }
	done
}
check_regs server "$sregs"
check_regs client "$cregs"
[ -e "$work/regfail" ] && status=1
[ $status -eq 0 ] && echo "PASS"
exit $status
