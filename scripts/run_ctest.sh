#!/usr/bin/env bash
# run_ctest.sh — run a build's CTest suite apart from every other softrnic
# user of this host.
#   scripts/run_ctest.sh BUILD_DIR [ctest arguments...]
#
# The suite's processes get a network namespace of their own (their own
# loopback, TCP and UDP ports, 127.0.0.N addresses and softrnic's loopback
# port space, which lives in abstract Unix socket names of the namespace)
# and a runtime directory of their own (SOFTRNIC_RUNTIME_DIR: stats files
# and host-local rings), so two runs of the suite at the same time on one
# host, from two clones or two users, do not meet.  As root the namespace
# is made with `unshare --net`; as another user inside a user namespace
# that maps only that user (`unshare --user --map-current-user --net`), so
# the tests still see who they are and skip what needs root; inside it
# each test gets a namespace of its own again (scripts/test_netns.sh), so
# tests run two at a time do not meet either.  Where neither
# is allowed the suite runs in the host's namespace and says so.
#
# What isolation cannot share out: the CPU.  The tests that measure rates
# and times (label `congestion`: DCQCN, DCTCP and TIMELY against the
# kernel's ECN marks) expect the machine to themselves (docs/testing.md).
set -uo pipefail
build=${1:?usage: run_ctest.sh BUILD_DIR [ctest arguments...]}
shift
build=$(cd "$build" && pwd) || exit 2

runtime_dir=$(mktemp -d "/dev/shm/softrnic-test.XXXXXX" 2>/dev/null || mktemp -d)
trap 'rm -rf "$runtime_dir"' EXIT
export SOFTRNIC_RUNTIME_DIR=$runtime_dir

if [ "$(id -u)" -eq 0 ]; then
	ns=(unshare --net)
else
	ns=(unshare --user --map-current-user --net)
fi
if "${ns[@]}" true 2>/dev/null; then
	# And each test in one of its own inside it (scripts/test_netns.sh),
	# so that `ctest -j2` can run two at once.
	export SOFTRNIC_TEST_NETNS=1
	cd "$build" && "${ns[@]}" bash -c 'ip link set lo up && exec ctest "$@"' run_ctest "$@"
else
	echo "run_ctest: cannot make a network namespace here (${ns[*]}): the suite shares this host's ports" >&2
	cd "$build" && ctest "$@"
fi
