#!/bin/sh
# test_netns.sh CMD [ARGS...] — how every CTest test starts
# (tests/netns_launcher.cmake): in a network namespace of its own, with its
# loopback up, when the run asks for it (SOFTRNIC_TEST_NETNS=1, set by
# scripts/run_ctest.sh) and the system allows one (as root, or inside a
# user namespace of our own); otherwise the test runs where it is.  Two
# tests running at once (ctest -j2) then never meet on an address, a port
# or softrnic's loopback CM port space.
if [ "${SOFTRNIC_TEST_NETNS:-0}" = 1 ]; then
	for ns in "unshare --net" "unshare --user --map-current-user --net"; do
		if $ns true 2>/dev/null; then
			exec $ns -- sh -c 'ip link set lo up 2>/dev/null; exec "$@"' test_netns "$@"
		fi
	done
fi
exec "$@"
