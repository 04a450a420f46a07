#!/usr/bin/env bash
# deps.sh — install the Debian 12 packages softrnic needs to build, test and
# demo.  Idempotent.  As root (a new machine, CI) it always runs
# `apt-get update` and `apt-get install` over the whole list: a no-op when
# everything is present, and the same install path a new machine takes, so
# a mistake in it shows on every run.  As another user it goes through sudo,
# and only when something is missing (no password prompt on every test run).
# tests/scripts/deps_test.sh runs this file against stub commands.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  libdeflate-dev                       # CRC32 for the ICRC
  libibverbs-dev ibverbs-utils         # verbs.h to build against; ibv_devinfo, ibv_*_pingpong
  librdmacm-dev                        # rdma_cma.h to build librdmacm.so.1 against
  perftest rdmacm-utils python3-pyverbs # unmodified rdma-core programs run on softrnic
  qperf                                # qperf -cm1 over librdmacm.so.1 (tests/rdmacm)
  libfabric-bin                        # fi_pingpong over the verbs provider (scripts/netns_test.sh)
  python3 python3-scapy tshark         # independent decoders for the wire tests
  iproute2 procps                      # network namespaces for the two-host test
  nftables libbpf-dev python3-matplotlib # the ECN bottleneck experiment (scripts/congestion.sh)
  libxdp-dev                           # the AF_XDP port (runtime/xdp_port.h), with libbpf-dev and clang
  iperf3 sockperf time                 # the kernel baselines of bench/perf_compare.sh
  linux-perf strace valgrind           # bench/perf_profile.sh
  redis-server redis-tools             # bench/kv_vs_redis.sh: Redis beside the key-value store
  bc                                   # tests/kv/kv_fsync.sh's arithmetic
  libns3-dev libgsl-dev g++            # bench/sim_speed.sh: ns-3 beside the simulator
  ucx-utils openmpi-bin libopenmpi-dev python3-mpi4py # middleware on softrnic (tests/ecosystem)
  fio mpich libmpich-dev librpma-dev    # RDMA clients on softrnic (tests/ecosystem: fio, mpich, rpma)
  qemu-system-x86 debootstrap cpio kmod # the kernel Soft-RoCE peer in a guest (tests/interop)
  gdb                                  # the stacks of a softrnic end stuck in an interop case
  tgt libiscsi-bin libiscsi-dev        # an iSCSI target and initiators over iSER (tests/ecosystem/iser.sh)
  dapl2-utils libfabric-dev autoconf automake libtool # uDAPL's dtest/dapltest (tests/ecosystem/dapl.sh); building fabtests (scripts/apps/fabtests.sh)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# The command prefix: nothing as root, sudo (keeping DEBIAN_FRONTEND) otherwise.
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if [ ${#missing[@]} -eq 0 ]; then
    echo "deps: all ${#PACKAGES[@]} packages present"
    exit 0
  fi
  command -v sudo >/dev/null || { echo "deps: not root and no sudo; install as root: ${missing[*]}" >&2; exit 1; }
  as_root=(sudo --preserve-env=DEBIAN_FRONTEND)
fi

export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PACKAGES[@]} packages present; checking the install path anyway (root)"
else
  echo "deps: installing ${missing[*]}"
fi
"${as_root[@]}" apt-get update -q
"${as_root[@]}" apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
