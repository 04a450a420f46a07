#!/usr/bin/env bash
# demo.sh — a live RDMA demo over softrnic, on one machine, no root, no
# kernel module: unmodified rdma-core programs load softrnic's
# libibverbs.so.1 through LD_LIBRARY_PATH and talk RoCEv2: through the
# host-local shared-memory rings between processes of one host, over UDP
# 4791 on loopback for the capture at the end.
#   scripts/demo.sh [BUILD_DIR]
# Steps: decode a kernel Soft-RoCE capture with `softrnic decode`; list the
# device (ibv_devices, ibv_devinfo); ibv_rc_pingpong between two processes;
# perftest's RDMA WRITE, READ and atomic tests; rping connected through the
# connection manager; the device counters.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
bin=$build/bin
lib=$build/lib
vectors=$(realpath tests/vectors/rxe)
port_base=$((20000 + RANDOM % 20000))

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# Runs a server and a client of the same program on this machine; both
# print their output, prefixed.  The client retries until the server's TCP
# exchange port listens.
pair() {
  local name=$1; shift
  local port=$((port_base++))
  local srv_log cli_log srv_err cli_err
  srv_log=$(mktemp); cli_log=$(mktemp); srv_err=$(mktemp); cli_err=$(mktemp)
  LD_LIBRARY_PATH=$lib SOFTRNIC_STATS_AT_EXIT=1 "$@" -p "$port" >"$srv_log" 2>"$srv_err" &
  local srv=$!
  local rc=1
  for _ in $(seq 50); do
    sleep 0.2
    if LD_LIBRARY_PATH=$lib SOFTRNIC_STATS_AT_EXIT=1 timeout 120 "$@" -p "$port" 127.0.0.1 >"$cli_log" 2>"$cli_err"; then rc=0; break; fi
    grep -q "Couldn't connect\|Unable to connect\|Connection refused" "$cli_log" "$cli_err" || break
  done
  wait "$srv" || rc=1
  # perftest prints a long banner; show the lines that tell what happened.
  local keep='GID ::|bytes in|iters in|#bytes|^ *[0-9]+ +[0-9]+ |counters|error|fail|Fail|Couldn'
  cat "$srv_log" "$srv_err" | grep -E "$keep" | sed "s/^/  [$name server] /"
  cat "$cli_log" "$cli_err" | grep -E "$keep" | sed "s/^/  [$name client] /"
  rm -f "$srv_log" "$cli_log" "$srv_err" "$cli_err"
  return $rc
}

if [ -n "$vectors" ] && [ -f "$vectors/rc_write.pcap" ]; then
  say "softrnic decode: a kernel rxe capture of ib_write_bw, checked packet by packet"
  "$bin/softrnic" decode "$vectors/rc_write.pcap"
fi

if [ ! -e "$lib/libibverbs.so.1" ]; then
  echo "demo: $lib/libibverbs.so.1 is not built; only the decoder demo ran" >&2
  exit 1
fi

say "ibv_devices and ibv_devinfo, unmodified, on softrnic's libibverbs.so.1"
LD_LIBRARY_PATH=$lib ibv_devices
LD_LIBRARY_PATH=$lib ibv_devinfo

say "ibv_rc_pingpong: two processes, RC SEND/RECV, 4 KiB x 1000"
pair pingpong ibv_rc_pingpong -g 0 -s 4096 -n 1000

say "ib_write_bw: RDMA WRITE, 64 KiB messages"
pair write ib_write_bw -x 0 -F -s 65536 -n 2000

say "ib_read_bw: RDMA READ, 64 KiB messages"
pair read ib_read_bw -x 0 -F -s 65536 -n 2000

say "ib_atomic_bw: FETCH_AND_ADD"
pair atomic ib_atomic_bw -x 0 -F -A FETCH_AND_ADD -n 2000

say "rping: connected through the connection manager (librdmacm.so.1: REQ/REP/RTU over QP1)"
port=$((port_base++))
LD_LIBRARY_PATH=$lib timeout 60 rping -s -a 127.0.0.1 -p "$port" -C 5 -v >/dev/null 2>&1 &
rping_srv=$!
rping_ok=1
for _ in $(seq 50); do
  sleep 0.1
  if LD_LIBRARY_PATH=$lib timeout 30 rping -c -a 127.0.0.1 -p "$port" -C 5 -v 2>&1 | sed 's/^/  [rping client] /'; then
    rping_ok=0; break
  fi
done
wait "$rping_srv" || rping_ok=1
[ "$rping_ok" -eq 0 ] || { echo "demo: rping failed" >&2; exit 1; }

say "softrnic decode: the demo's own first packets, captured on loopback"
if command -v tshark >/dev/null && [ "$(id -u)" -eq 0 ]; then
  cap=$(mktemp --suffix=.pcap)
  tshark -q -i lo -F pcap -f "udp port 4791" -c 12 -w "$cap" >/dev/null 2>&1 &
  tpid=$!
  sleep 1.5
  # UDP only (the host-local path would keep the packets off lo)
  SOFTRNIC_LOCAL=0 SOFTRNIC_GSO=0 pair capture ibv_rc_pingpong -g 0 -s 64 -n 3 >/dev/null || true
  sleep 0.5; kill "$tpid" 2>/dev/null || true; wait "$tpid" 2>/dev/null || true
  "$bin/softrnic" decode "$cap" || true
  rm -f "$cap"
else
  echo "(needs root and tshark to capture on lo; skipped)"
fi

say "done: every exchange above ran through softrnic as RoCEv2 packets: between processes of this host through its shared-memory rings (the capture: over UDP on loopback; SOFTRNIC_LOCAL=0 for all)"
