#!/usr/bin/env bash
# valkey.sh — Valkey's own RDMA test (its tests/rdma) on softrnic, in the
# three transport modes, unmodified.
#
# Builds, inside a Valkey source tree you already have (nothing is
# downloaded): the server and its RDMA connection module
# (`make BUILD_RDMA=module`: src/valkey-server, src/valkey-rdma.so) and
# the test client (`make -C tests/rdma`: tests/rdma/rdma-test), against
# the system's rdma-core headers (libibverbs-dev, librdmacm-dev).  Then
# runs what Valkey's tests/rdma/run.py runs, with softrnic's libraries on
# LD_LIBRARY_PATH instead of a kernel rxe device:
#
#   valkey-server --port 0 --loglevel verbose --protected-mode PM
#       --appendonly no --daemonize no --dir TMP
#       --loadmodule src/valkey-rdma.so port=PORT bind=127.0.0.1
#   rdma-test --thread 4 -h 127.0.0.1 -p PORT      (60 s, as run.py)
#
# PM is what the tree's run.py passes: "yes" since Valkey gave its RDMA
# connections an is_local check (commit a7cbca406, September 2024, after
# 8.0.1), "no" before (8.0.x has none, so its protected mode refuses
# every RDMA client, on any device).
# A run passes when rdma-test exits 0 having printed "Valkey Over RDMA
# test [OK]" (4 threads: PING, SET and GET of 128-8191 random 1 KiB
# values each, one BGSAVE, every value read back checked).  The server is
# then SIGKILLed, as run.py does.  Modes: host-local (SOFTRNIC_LOCAL
# unset: shared-memory rings, whole messages), packets
# (SOFTRNIC_LOCAL=packets), udp (SOFTRNIC_LOCAL=0).
#
# usage: scripts/apps/valkey.sh SRC_DIR [BUILD_DIR]
#   SRC_DIR    a Valkey source tree (src/rdma.c, tests/rdma/)
#   BUILD_DIR  softrnic's build directory, default build (relative to the
#              softrnic tree); its lib/ holds libibverbs.so.1, librdmacm.so.1
# environment:
#   RUNS=N           runs per mode (default 5)
#   MODES="..."      a subset of "host-local packets udp" (default all three)
#   VALKEY_RDMA_PORT the RDMA port (default 16379)
#   MAKE_JOBS=N      make -j (default 2)
#   KEEP_LOGS=1      keep every run's logs (failed runs' logs are always kept)
# Prints one line per run, a line per mode, and "valkey: N passed, M failed";
# exit status 1 if any run failed, 2 if the build or setup failed.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -lt 1 ] || [ ! -f "$1/src/rdma.c" ] || [ ! -d "$1/tests/rdma" ]; then
	echo "usage: $0 SRC_DIR [BUILD_DIR]  (SRC_DIR: a Valkey source tree with src/rdma.c and tests/rdma)" >&2
	exit 2
fi
src=$(cd "$1" && pwd)
build=${2:-build}
case $build in /*) ;; *) build="$root/$build" ;; esac
lib="$build/lib"
runs=${RUNS:-5}
modes=${MODES:-host-local packets udp}
port=${VALKEY_RDMA_PORT:-16379}
jobs=${MAKE_JOBS:-2}

if [ ! -e "$lib/libibverbs.so.1" ] || [ ! -e "$lib/librdmacm.so.1" ]; then
	echo "valkey: $lib has no softrnic libibverbs.so.1/librdmacm.so.1; build softrnic first" >&2
	exit 2
fi
if [ ! -e /usr/include/infiniband/verbs.h ] || [ ! -e /usr/include/rdma/rdma_cma.h ]; then
	echo "valkey: rdma-core headers missing: apt-get install libibverbs-dev librdmacm-dev (scripts/deps.sh)" >&2
	exit 2
fi

version=$(sed -n 's/^#define VALKEY_VERSION "\(.*\)"/\1/p' "$src/src/version.h" 2>/dev/null)
commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo "not a git tree")
protected=$(sed -n 's/.*"--protected-mode", *"\([a-z]*\)".*/\1/p' "$src/tests/rdma/run.py" 2>/dev/null | head -1)
protected=${protected:-yes}
echo "valkey: source $src, version ${version:-?}, commit $commit"
echo "valkey: protected mode $protected (as its tests/rdma/run.py)"
echo "valkey: softrnic libraries $lib"

logs=$(mktemp -d /tmp/softrnic-valkey.XXXXXX)
server_pid=""
cleanup() {
	[ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
	# Kept: KEEP_LOGS=1, or what a failed run or build left.
	[ "${KEEP_LOGS:-0}" = 1 ] || rmdir "$logs" 2>/dev/null
}
trap cleanup EXIT

# The build: Valkey's own makefiles, the system's rdma-core to link against.
blog="$logs/build.log"
echo "valkey: building (make -j$jobs BUILD_RDMA=module; make -C tests/rdma), log $blog"
if ! { make -C "$src" -j"$jobs" BUILD_RDMA=module && make -C "$src/tests/rdma"; } >"$blog" 2>&1; then
	tail -20 "$blog" >&2
	echo "valkey: build failed (log $blog)" >&2
	exit 2
fi
server="$src/src/valkey-server"
module="$src/src/valkey-rdma.so"
client="$src/tests/rdma/rdma-test"
for f in "$server" "$module" "$client"; do
	[ -f "$f" ] || { echo "valkey: $f was not built" >&2; exit 2; }
done
[ "${KEEP_LOGS:-0}" = 1 ] || rm -f "$blog"

# Runs a command in a transport mode with softrnic's libraries (in a
# subshell: it execs).
in_mode() {
	local mode=$1
	shift
	unset SOFTRNIC_LOCAL
	case $mode in
	packets) export SOFTRNIC_LOCAL=packets ;;
	udp) export SOFTRNIC_LOCAL=0 ;;
	esac
	export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	exec "$@"
}

# One run in one mode: 0 pass, 1 fail.  Its files in $dir.
run_once() {
	local mode=$1 dir=$2 i t0 t1 rc
	mkdir -p "$dir/data"
	( in_mode "$mode" "$server" --port 0 --loglevel verbose --protected-mode "$protected" --appendonly no \
		--daemonize no --dir "$dir/data" \
		--loadmodule "$module" port="$port" bind=127.0.0.1 ) >"$dir/server.log" 2>&1 &
	server_pid=$!
	# run.py gives the server 1 s; wait for it to say it listens (up to 10 s).
	for (( i = 0; i < 100; i++ )); do
		grep -qs "Ready to accept connections rdma" "$dir/server.log" && break
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -q "Ready to accept connections rdma" "$dir/server.log"; then
		echo "server did not start listening" >"$dir/client.log"
		kill -9 "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; server_pid=""
		return 1
	fi
	t0=$(date +%s.%N)
	# (The outer subshell keeps bash's "Aborted" notice of an
	# rdma-test that asserts out of the output; client.log has its own.)
	( ( in_mode "$mode" timeout -k 5 60 "$client" --thread 4 -h 127.0.0.1 -p "$port" ) \
		>"$dir/client.log" 2>&1; echo $? >"$dir/rc" ) 2>/dev/null
	rc=$(cat "$dir/rc")
	t1=$(date +%s.%N)
	kill -9 "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; server_pid=""
	echo "$rc $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" >"$dir/result"
	[ "$rc" -eq 0 ] && grep -q "^Valkey Over RDMA test \[OK\]" "$dir/client.log"
}

passed=0
failed=0
summary=""
for mode in $modes; do
	case $mode in
	host-local | packets | udp) ;;
	*) echo "valkey: unknown mode $mode (host-local, packets, udp)" >&2; exit 2 ;;
	esac
	mode_pass=0
	for (( r = 1; r <= runs; r++ )); do
		dir="$logs/$mode-$r"
		if run_once "$mode" "$dir"; then
			read -r rc secs <"$dir/result"
			keys=$(grep -o 'SET [0-9]* KVs' "$dir/client.log" | awk '{ n += $2 } END { print n + 0 }')
			echo "valkey: $mode run $r/$runs: pass (${secs} s, $keys keys set and read back)"
			passed=$((passed + 1))
			mode_pass=$((mode_pass + 1))
			[ "${KEEP_LOGS:-0}" = 1 ] || rm -rf "$dir"
		else
			rc=$(cut -d' ' -f1 "$dir/result" 2>/dev/null || echo "?")
			echo "valkey: $mode run $r/$runs: FAIL (rdma-test exit $rc; logs $dir)"
			tail -3 "$dir/client.log" | sed 's/^/    client: /'
			grep -E '# |RDMA' "$dir/server.log" | tail -3 | sed 's/^/    server: /'
			failed=$((failed + 1))
		fi
	done
	summary="$summary $mode $mode_pass/$runs;"
done
echo "valkey: per mode:$summary"
echo "valkey: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
