#!/usr/bin/env bash
# fabtests.sh — libfabric's fabtests on softrnic, from a source tree the
# user has (fabtests are not packaged in Debian 12): builds them against
# Debian's libfabric-dev (1.17) and runs runfabtests.sh's quick set for the
# verbs provider through `softrnic run`.
#   scripts/apps/fabtests.sh SRC_DIR [SOFTRNIC_BIN]
# SRC_DIR is a libfabric tree (its fabtests/ is used) or a fabtests tree,
# best at the tag of the installed libfabric (v1.17.x).  The build goes to
# $FABTESTS_BUILD (default: a temporary folder, removed after the run);
# FABTESTS_SET picks runfabtests.sh's set (quick), FABTESTS_TIMEOUT its
# per-test timeout in seconds (60), FABTESTS_EXCLUDE its -e list.  By
# default the tests libfabric's own list for verbs excludes are left out
# (test_configs/verbs/verbs.exclude: rdm, dgram, multi_mr, ...), as its
# maintainers run them; FABTESTS_ALL=1 runs the whole set.
#
# libfabric's verbs provider offers FI_EP_MSG (and ofi_rxm over it) only on
# an interface that is not loopback (prov/verbs/src/verbs_info.c skips
# IFF_LOOPBACK).  As root, the tests run in a network namespace of their
# own on one end of a veth (10.196.0.1/24; the other end is up,
# unaddressed) that softrnic binds
# (SOFTRNIC_IFACE); server and client share that one address, as two
# processes on a real RoCE host share its NIC's.  runfabtests.sh is given
# no host names, so it starts both sides locally (no ssh).  Not root: the
# tests run on 127.0.0.1, and the MSG and RxM tests report "notrun".
# Needs: autoconf, automake, libtool, make, a C compiler, libfabric-dev.
set -uo pipefail
SRC=${1:?usage: fabtests.sh SRC_DIR [SOFTRNIC_BIN]}
here=$(cd "$(dirname "$0")/../.." && pwd)
SOFTRNIC=${2:-$here/build/bin/softrnic}
SET=${FABTESTS_SET:-quick}
TIMEOUT=${FABTESTS_TIMEOUT:-60}
[ -x "$SOFTRNIC" ] || { echo "fabtests: no softrnic at $SOFTRNIC (build first, or give its path)" >&2; exit 2; }
[ -d "$SRC/fabtests" ] && SRC=$SRC/fabtests
[ -f "$SRC/configure.ac" ] && [ -f "$SRC/scripts/runfabtests.sh" ] ||
	{ echo "fabtests: $SRC is not a fabtests (or libfabric) source tree" >&2; exit 2; }
for tool in autoreconf automake libtoolize make cc pkg-config; do
	command -v $tool >/dev/null || { echo "fabtests: $tool is missing (autoconf automake libtool build-essential pkg-config)" >&2; exit 2; }
done
pkg-config --exists libfabric || { echo "fabtests: libfabric-dev is not installed" >&2; exit 2; }
have=$(pkg-config --modversion libfabric)
want=$(sed -n 's/^AC_INIT(\[fabtests\], \[\([^]]*\)\].*/\1/p' "$SRC/configure.ac")
echo "fabtests: sources $want, installed libfabric $have"
[ "${want%.*}" = "${have%.*}" ] || echo "fabtests: warning: the sources are not libfabric ${have%.*}'s; tests may not build or may test what 1.17 lacks" >&2

build=${FABTESTS_BUILD:-}
keep=1
[ -n "$build" ] || { build=$(mktemp -d); keep=0; }
NS=srt-fabtests-$$
cleanup() {
	[ "$(id -u)" -eq 0 ] && ip netns del "$NS" 2>/dev/null
	[ $keep -eq 1 ] || rm -rf "$build"
}
trap cleanup EXIT

# Build out of tree: autogen writes into the source tree, so copy it first.
mkdir -p "$build/src" "$build/obj"
cp -a "$SRC/." "$build/src/"
log=$build/build.log
echo "fabtests: building in $build (log: $log)"
(cd "$build/src" && ./autogen.sh) > "$log" 2>&1 &&
	(cd "$build/obj" && "$build/src/configure" --prefix="$build/inst" --with-libfabric=/usr) >> "$log" 2>&1 &&
	make -C "$build/obj" -j"$(nproc)" >> "$log" 2>&1 && make -C "$build/obj" install >> "$log" 2>&1 ||
	{ tail -20 "$log" >&2; echo "fabtests: the build failed" >&2; exit 1; }
bin=$build/inst/bin

run=()
addr=127.0.0.1
if [ "$(id -u)" -eq 0 ]; then
	addr=10.196.0.1
	ip netns add "$NS" && ip -n "$NS" link set lo up &&
		ip -n "$NS" link add srtfab0 type veth peer name srtfab1 &&
		ip -n "$NS" addr add $addr/24 dev srtfab0 && ip -n "$NS" link set srtfab1 up &&
		ip -n "$NS" link set srtfab0 up ||
		{ echo "fabtests: cannot make the namespace $NS" >&2; exit 1; }
	run=(ip netns exec "$NS" env SOFTRNIC_IFACE=srtfab0)
else
	echo "fabtests: not root: on 127.0.0.1, without MSG endpoints (libfabric skips loopback for them)"
fi
exclude_file=()
[ "${FABTESTS_ALL:-0}" = 1 ] || exclude_file=(-f "$build/src/test_configs/verbs/verbs.exclude")
out=$build/runfabtests.log
echo "fabtests: runfabtests.sh -t $SET ${exclude_file[*]} verbs on $addr (log: $out)"
# runfabtests.sh works in its current folder (its temporary output files)
cd "$build" || exit 1
"${run[@]}" "$SOFTRNIC" run bash "$build/src/scripts/runfabtests.sh" -v -p "$bin" -t "$SET" -T "$TIMEOUT" \
	${FABTESTS_EXCLUDE:+-e "$FABTESTS_EXCLUDE"} "${exclude_file[@]}" -s $addr -c $addr verbs > "$out" 2>&1
rc=$?
grep -E "^# (total|passed|failed|notrun|excluded)|^# (Total|Passed|Failed|Notrun|Excluded)" "$out"
grep -E ": *Fail" "$out" | sed 's/^/fabtests: failed: /'
echo "fabtests: runfabtests.sh exited $rc"
exit $rc
