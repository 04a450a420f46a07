#!/usr/bin/env bash
# rdma_core_tests.sh — run rdma-core's own test suite (Debian's
# python3-pyverbs ships it in /usr/share/doc/rdma-core/tests) against
# softrnic's drop-in libibverbs.so.1, on device softrnic0, port 1, GID 0.
#
#   scripts/rdma_core_tests.sh BUILD_DIR [OUT.md] [--option ...]
#
# Every test runs in its own process with a timeout; the result table goes
# to OUT.md (only the generated block is replaced when OUT.md already has
# one, e.g. docs/conformance.md).  Last line printed:
#   rdma-core suite: P passed, F failed, S skipped of T (vendor-specific excluded: V)
# Exit status: 0 unless a test crashed or hung; STRICT=1 also fails on any
# non-vendor failure; 77 when python3-pyverbs is not installed.
# Knobs (env): TEST_TIMEOUT (s per test, 40), BUDGET (s for the run, 900),
# JOBS (1), FILTER (regex of test ids), VENDOR=skip (do not run the
# mlx5/efa/cuda modules at all).  Extra arguments go to the driver.
# The work is done by scripts/rdma_core_tests.py (Debian's /usr/bin/python3,
# the interpreter pyverbs is built for).
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [OUT.md] [options of rdma_core_tests.py]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
if ! /usr/bin/python3 -c 'import pyverbs' 2>/dev/null; then
  echo "rdma_core_tests: pyverbs missing (apt-get install python3-pyverbs)" >&2
  exit 77  # "skipped" for CTest
fi
exec /usr/bin/python3 "$here/rdma_core_tests.py" "$@"
