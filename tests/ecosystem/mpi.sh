#!/usr/bin/env bash
# mpi.sh — Open MPI (openmpi-bin 4.1, pml ucx) on softrnic through
# `softrnic run`, with UCX pinned to rc_verbs,ud_verbs,self so that no
# shared memory or TCP carries the data:
#   1. two ranks on this machine: mpi_check.c (ping-pong 8 B..256 KiB with
#      every byte checked, an allreduce checked element by element), built
#      here with mpicc, over pml ucx and over pml cm + the ofi MTL
#      (libfabric verbs;ofi_rxd); python3-mpi4py's helloworld and ringtest;
#   2. (root only) two network namespaces joined by a veth, one rank in
#      each, mpirun in the first launching the second through
#      `ip netns exec` as its remote-shell agent; then two ranks in each,
#      the two of a namespace sharing its one address.
#   mpi.sh SOFTRNIC_BIN SOURCE_DIR
# Skips (77) without mpirun/mpicc.
set -uo pipefail
SOFTRNIC=$1
SRC=$2
command -v mpirun >/dev/null && command -v mpicc >/dev/null ||
	{ echo "mpi: openmpi-bin/libopenmpi-dev not installed; skipped"; exit 77; }
dir=$(mktemp -d)
NS_A=srt-mpi-a-$$
NS_B=srt-mpi-b-$$
cleanup() {
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "mpi: FAIL: $*" >&2; exit 1; }
. "$SRC/../lib.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1   # CI runs as root
export OMPI_MCA_rmaps_base_oversubscribe=1                          # 2 cores, up to 4 ranks
MCA=(--mca pml ucx --mca btl self -x UCX_TLS=rc_verbs,ud_verbs,self)
LOCAL=(--mca plm isolated)      # one host: no ssh needed (a fresh machine may have none)

mpicc -O2 -Wall -Wextra -Werror -o "$dir/mpi_check" "$SRC/mpi_check.c" || fail "mpicc mpi_check.c"

# The job's output; fails unless it printed `expect`.
job() {
	local name=$1 expect=$2
	shift 2
	timeout 120 "$@" > "$dir/$name.log" 2>&1
	local rc=$?
	[ $rc -eq 0 ] && grep -q "$expect" "$dir/$name.log" || { cat "$dir/$name.log" >&2; fail "$name: exit $rc"; }
	grep -E "mpi_check|time for|Hello" "$dir/$name.log" | sed "s/^/mpi: $name: /" | head -12
}

# 1. Two ranks here.  UCX's info log names the transport of each endpoint.
job local-c "mpi_check: ok" "$SOFTRNIC" run mpirun "${LOCAL[@]}" -np 2 "${MCA[@]}" -x UCX_LOG_LEVEL=info "$dir/mpi_check" 200
grep -q "ep_cfg.*tag(rc_verbs/softrnic0:1)" "$dir/local-c.log" || fail "local-c: no rc_verbs/softrnic0:1 endpoint"
# Open MPI's other path: pml cm over the ofi MTL, libfabric's verbs;ofi_rxd
# on softrnic's UD.  (It used to die with SIGSEGV at exit: libfabric is
# unloaded with a device still open, and libibverbs' progress thread ran
# on in unmapped code; libibverbs.so.1 is now -z nodelete.)
job local-ofi "mpi_check: ok" "$SOFTRNIC" run mpirun "${LOCAL[@]}" -np 2 --mca pml cm --mca mtl ofi \
	--mca mtl_ofi_provider_include "verbs;ofi_rxd" "$dir/mpi_check" 100
job local-hello "Hello, World! I am process 1 of 2" "$SOFTRNIC" run mpirun "${LOCAL[@]}" -np 2 "${MCA[@]}" \
	/usr/bin/python3 -m mpi4py.bench helloworld
job local-ring "time for 100 loops" "$SOFTRNIC" run mpirun "${LOCAL[@]}" -np 2 "${MCA[@]}" \
	/usr/bin/python3 -m mpi4py.bench ringtest -n 1000 -l 100

# 2. Two namespaces, one rank each.
if [ "$(id -u)" -ne 0 ]; then
	echo "mpi: not root: the two-namespace run is skipped"
	exit 0
fi
netns_pair "$NS_A" "$NS_B" srtmpi0 10.199.0.1 10.199.0.2 || fail "two namespaces over a veth"
# mpirun's remote-shell agent: "host command..." -> that host's namespace.
cat > "$dir/netns_rsh" <<AGENT
#!/bin/sh
host=\$1; shift
case \$host in 10.199.0.1) ns=$NS_A ;; 10.199.0.2) ns=$NS_B ;; *) echo "netns_rsh: unknown host \$host" >&2; exit 1 ;; esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$dir/netns_rsh"
NETNS=(ip netns exec "$NS_A" "$SOFTRNIC" run mpirun --host 10.199.0.1,10.199.0.2 -np 2
       --mca plm_rsh_agent "$dir/netns_rsh" "${MCA[@]}" -x SOFTRNIC_IFACE=srtmpi0)
job netns-c "mpi_check: ok" "${NETNS[@]}" -x UCX_LOG_LEVEL=info "$dir/mpi_check" 200
# Each rank's endpoint to the other is rc_verbs, and the hosts really differ.
[ "$(grep -c "ep_cfg.*tag(rc_verbs/softrnic0:1)" "$dir/netns-c.log")" -ge 2 ] || fail "netns-c: no rc_verbs endpoints"
job netns-ring "time for 100 loops" "${NETNS[@]}" /usr/bin/python3 -m mpi4py.bench ringtest -n 1000 -l 100
# Two ranks in each namespace: the two of a host share its one address
# (softrnic-hostd, runtime/host_share.h), as MPI ranks share a NIC.
NETNS4=(ip netns exec "$NS_A" "$SOFTRNIC" run mpirun --host 10.199.0.1:2,10.199.0.2:2 -np 4
	--mca plm_rsh_agent "$dir/netns_rsh" "${MCA[@]}" -x SOFTRNIC_IFACE=srtmpi0)
job netns4-c "allreduce of 100000 longs over 4 ranks ok" "${NETNS4[@]}" "$dir/mpi_check" 200
job netns4-ring "(4 processes, 1000 bytes)" "${NETNS4[@]}" /usr/bin/python3 -m mpi4py.bench ringtest -n 1000 -l 100
echo "mpi: all runs passed"
