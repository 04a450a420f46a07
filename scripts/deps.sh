#!/usr/bin/env bash
# deps.sh — install the Debian 12 packages softrnic needs to build, test and
# demo.  Idempotent; skips apt when everything is already there.  Run as
# root (or with sudo available).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  libdeflate-dev                       # CRC32 for the ICRC
  libibverbs-dev ibverbs-utils         # verbs.h to build against; ibv_devinfo, ibv_*_pingpong
  perftest rdmacm-utils python3-pyverbs # unmodified rdma-core programs run on softrnic
  python3 python3-scapy tshark         # independent decoders for the wire tests
  iproute2 procps                      # network namespaces for the two-host test
  iperf3 sockperf time                 # the kernel baselines of bench/perf_compare.sh
  linux-perf strace valgrind           # bench/perf_profile.sh
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO -E apt-get install -y -q --no-install-recommends "${missing[@]}"
