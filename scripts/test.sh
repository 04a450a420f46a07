#!/usr/bin/env bash
# test.sh — run every softrnic test, the way CI does.
#   1. release build (gcc, -Werror) and its full CTest suite over the
#      default paths (the host-local path with whole messages); then the
#      tests labelled `path` (those whose result could change with the
#      way packets travel, and the path contract test) twice more: over
#      the host-local packet ring only (SOFTRNIC_LOCAL=packets) and over
#      UDP only (SOFTRNIC_LOCAL=0);
#      then softrnic against the kernel's Soft-RoCE in a qemu guest
#      (tests/interop/run.sh; needs root, else its cases are skipped),
#      and a share of those cases again through softrnic's AF_XDP port;
#   2. clang build (-Werror), compiled to prove it is warning-free;
#   3. ASan + UBSan build and its CTest suite, but for the tests that
#      cannot run under it and the simulator's long experiments (pure
#      code, run in release above): label no_sanitize;
#   4. the libFuzzer targets for a bounded time (FUZZ_SECONDS, default 60).
# Suites run two tests at a time; the timing-sensitive ones are
# RUN_SERIAL (CTest runs them alone).  Each step's minutes are printed.
# Ends with one summary line: "tests: N passed, M failed".
# Installs missing Debian packages first (scripts/deps.sh).  Each CTest
# run has a network namespace and a runtime directory of its own
# (scripts/run_ctest.sh), so it does not meet another run on this host.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

bash scripts/deps.sh || { echo "tests: 0 passed, 1 failed"; exit 1; }

passed=0
failed=0
failed_steps=()
log_dir=$(mktemp -d)

# Adds the counts from a CTest log ("N tests failed out of M").
count_ctest() {
  local log=$1 line total fails
  line=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$log" | tail -1)
  if [ -z "$line" ]; then failed=$((failed + 1)); failed_steps+=("$(basename "$log" .log): no CTest summary"); return; fi
  fails=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")
  total=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<<"$line")
  passed=$((passed + total - fails))
  failed=$((failed + fails))
}

# Adds the counts from an interop log ("interop: N passed, M failed, K
# skipped"; skips are not counted as passed); NAME for a missing line.
count_interop() {
  local log=$1 name=$2 line
  line=$(grep -E "^interop: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped" "$log" | tail -1)
  if [ -z "$line" ]; then failed=$((failed + 1)); failed_steps+=("$name: no summary line"); return; fi
  passed=$((passed + $(sed -E 's/^interop: ([0-9]+) passed.*/\1/' <<<"$line")))
  failed=$((failed + $(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")))
}

step_start=$(date +%s)
step_name=""
step_times=()
# Closes the step running (its minutes kept for the end) and starts the next.
step() {
  local now; now=$(date +%s)
  [ -n "$step_name" ] && step_times+=("$(awk -v s="$((now - step_start))" -v n="$step_name" 'BEGIN { printf "%5.1f min  %s", s / 60, n }')")
  step_start=$now
  step_name="$*"
  echo; echo "=== $* ==="
}

step "release build (gcc)"
if bash scripts/build.sh release; then
  step "release tests"
  bash scripts/run_ctest.sh build --output-on-failure --timeout 600 -j2 2>&1 | tee "$log_dir/release.log"
  count_ctest "$log_dir/release.log"
  # The tests that touch a path twice more: with the host-local path's
  # rings carrying MTU packets, not whole messages (runtime/local_path.h),
  # and with the path off, every packet over UDP, as between hosts.  The
  # others (pure code, the simulator, programs that never send a packet)
  # give the same result in every mode, and ran above.
  step "path tests over the host-local packet ring (SOFTRNIC_LOCAL=packets)"
  SOFTRNIC_LOCAL=packets bash scripts/run_ctest.sh build --output-on-failure --timeout 600 -j2 -L '^path$' 2>&1 | tee "$log_dir/release-packets.log"
  count_ctest "$log_dir/release-packets.log"
  step "path tests over UDP only (SOFTRNIC_LOCAL=0)"
  SOFTRNIC_LOCAL=0 bash scripts/run_ctest.sh build --output-on-failure --timeout 600 -j2 -L '^path$' 2>&1 | tee "$log_dir/release-udp.log"
  count_ctest "$log_dir/release-udp.log"
else
  failed=$((failed + 1)); failed_steps+=("release build")
fi

# softrnic against the kernel's Soft-RoCE in a qemu guest (tests/interop):
# both directions, verbs and CM, loss and ECN.  Bounded: the guest build
# (about a minute when not cached), boot and every case in at most 20
# minutes; about 8 here (skips are not counted as passed).  One case is
# told its guest's NIC stalled (SOFTRNIC_INTEROP_FAKE_STALL): it passes
# only if the harness restarts the guest and the case passes again, so the
# path that copes with qemu's real stalls is checked on every run.
step "kernel interop (Soft-RoCE in a guest)"
SOFTRNIC_INTEROP_FAKE_STALL=ud_pingpong:softrnic-server \
  timeout -k 10 1200 bash tests/interop/run.sh build 2>&1 | tee "$log_dir/interop.log"
count_interop "$log_dir/interop.log" "interop"

# A share of the cases again with softrnic's end on its AF_XDP port on the
# guest's bridge (SOFTRNIC_INTEROP_XDP): both directions, verbs, CM, NVMe
# and loss of the guest's packets.  Not the IPv6 cases (the port is
# IPv4's), nor those whose faults nft makes on the bridge's output and
# ECN marks (AF_XDP's frames leave past those hooks).
step "kernel interop through the AF_XDP port"
SOFTRNIC_INTEROP_XDP=1 timeout -k 10 600 bash tests/interop/run.sh build \
  rc_pingpong:softrnic-server rc_pingpong:kernel-server ud_pingpong:kernel-server write_bw:softrnic-server \
  write_bw:kernel-server read_bw:kernel-server rping:softrnic-server rping:kernel-server \
  loss_rping:softrnic-server nvme_rdma:kernel-host 2>&1 | tee "$log_dir/interop-xdp.log"
count_interop "$log_dir/interop-xdp.log" "interop through AF_XDP"

step "clang build (-Werror)"
if bash scripts/build.sh clang; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_steps+=("clang build"); fi

step "ASan + UBSan build"
if bash scripts/build.sh asan; then
  step "ASan + UBSan tests"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     bash scripts/run_ctest.sh build-asan --output-on-failure --timeout 900 -j2 -LE no_sanitize 2>&1 | tee "$log_dir/asan.log"
  count_ctest "$log_dir/asan.log"
else
  failed=$((failed + 1)); failed_steps+=("ASan build")
fi

if [ -x fuzz/run.sh ]; then
  step "fuzzing for ${FUZZ_SECONDS:-60} s"
  if bash fuzz/run.sh "${FUZZ_SECONDS:-60}"; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_steps+=("fuzzing"); fi
fi

step "end"
echo "=== minutes per step ==="
for t in "${step_times[@]}"; do echo "  $t"; done

# Interop cases that passed only on their second attempt (tests/interop/
# run.sh runs a failed case once more): not failures, but named here.
if grep -hq '^interop: run twice' "$log_dir"/interop*.log 2>/dev/null; then
  echo
  echo "=== interop cases that failed once and passed on a second attempt ==="
  grep -h '^interop: run twice' "$log_dir"/interop*.log | sed 's/^/  /'
  grep -h '^interop: note .*attempt 1 failed' "$log_dir"/interop*.log | cut -c1-240 | sed 's/^/  /'
fi

# The names of what failed, last, so the tail of a long log shows them.
if [ "$failed" -ne 0 ]; then
  echo
  echo "=== what failed ==="
  for x in "${failed_steps[@]}"; do echo "  $x"; done
  for log in "$log_dir"/*.log; do
    sed -n '/The following tests FAILED:/,/^$/p' "$log" | grep -E '^\s+[0-9]+ - ' |
      sed "s|^|  $(basename "$log" .log): |"
    grep -E '^interop: FAIL ' "$log" | sed 's/^/  /'
  done
fi
rm -rf "$log_dir"
echo
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
