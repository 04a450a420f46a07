#!/usr/bin/env bash
# install.sh — `cmake --install` into a temporary prefix: softrnic,
# softrnic-kv and softrnic-nvmf in P/bin, softrnic(1) and the bash
# completion in P/share, the libraries in P/lib/softrnic (never in P/lib,
# where they would shadow the system's rdma-core), and the installed
# `softrnic run` finds them with no setting.  Then the same for the
# Debian package of scripts/package_deb.sh, unpacked with dpkg -x.
#   install.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SOURCE=$(cd "$2" && pwd)
fail() { echo "install: FAIL: $*" >&2; exit 1; }
P=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$P" "$work"' EXIT
cmake --install "$BUILD" --prefix "$P" > "$P.log" 2>&1 || { cat "$P.log"; rm -f "$P.log"; fail "cmake --install"; }
rm -f "$P.log"
for f in bin/softrnic bin/softrnic-kv bin/softrnic-nvmf lib/softrnic/libibverbs.so.1 lib/softrnic/librdmacm.so.1 \
	 lib/softrnic/libsoftrnic_shim.so share/man/man1/softrnic.1 share/bash-completion/completions/softrnic; do
	[ -e "$P/$f" ] || fail "no $f"
done
stray=$(find "$P/lib" -maxdepth 1 -name '*.so*')
[ -z "$stray" ] || fail "libraries directly in P/lib: $stray"
# Run from elsewhere, with no LD_LIBRARY_PATH and nothing of the build tree.
cd /
out=$(env -u LD_LIBRARY_PATH -u SOFTRNIC_LIBDIR "$P/bin/softrnic" run ibv_devinfo) || fail "installed softrnic run ibv_devinfo"
grep -q "hca_id:.*softrnic0" <<<"$out" || fail "installed run: no softrnic0"
env -u LD_LIBRARY_PATH "$P/bin/softrnic" run sh -c 'test -c /dev/infiniband/softrnic0' || fail "installed shim"
# Without `softrnic run` the installed libraries stay out of the way.
env -u LD_LIBRARY_PATH ldd "$(command -v ibv_devinfo)" | grep -q "$P" && fail "ibv_devinfo resolves into P without run"
# softrnic-kv finds librdmacm.so.1 and libibverbs.so.1 in P/lib/softrnic.
rdma=$(env -u LD_LIBRARY_PATH ldd "$P/bin/softrnic-kv" | grep -E "lib(ibverbs|rdmacm)")
[ "$(grep -c "=> $P/bin/../lib/softrnic/" <<<"$rdma")" -eq 2 ] ||
	fail "softrnic-kv resolves its rdma libraries elsewhere: $rdma"
rdma=$(env -u LD_LIBRARY_PATH ldd "$P/bin/softrnic-nvmf" | grep -E "lib(ibverbs|rdmacm)")
[ "$(grep -c "=> $P/bin/../lib/softrnic/" <<<"$rdma")" -eq 2 ] ||
	fail "softrnic-nvmf resolves its rdma libraries elsewhere: $rdma"

# The Debian package: its control fields and its unpacked programs.
deb=$(bash "$SOURCE/scripts/package_deb.sh" "$BUILD" "$P") || fail "package_deb.sh"
# Listings into files first: grep -q leaves a pipe at its first match, and
# with pipefail the writer's SIGPIPE ("tar subprocess was killed by
# signal (Broken pipe)") failed the check now and then.
dpkg-deb -f "$deb" Package Depends >"$work/fields.txt" || fail "dpkg-deb -f $deb"
dpkg-deb -c "$deb" >"$work/contents.txt" || fail "dpkg-deb -c $deb"
# libc6 first, then the libraries' packages found by dpkg -S, among them
# libdeflate0 (the ICRC's CRC32) and, when built with the AF_XDP port,
# libxdp1 and libbpf1.
grep -q "^Depends: libc6, .*libdeflate0" "$work/fields.txt" || fail "Depends: $(cat "$work/fields.txt")"
if ldd "$BUILD/lib/libibverbs.so.1" | grep -q libxdp; then
	grep -q "^Depends: .*libbpf1.*libxdp1" "$work/fields.txt" || fail "Depends without libxdp1, libbpf1: $(cat "$work/fields.txt")"
fi
grep -q " ./usr/lib/softrnic/libibverbs.so.1 " "$work/contents.txt" || fail "no /usr/lib/softrnic/libibverbs.so.1 in $deb"
grep -E " ./usr/lib/[^/]+\.so" "$work/contents.txt" && fail "a library directly in /usr/lib"
grep -q " ./usr/share/man/man1/softrnic.1.gz$" "$work/contents.txt" || fail "no softrnic(1) in $deb"
grep -q " ./usr/share/bash-completion/completions/softrnic$" "$work/contents.txt" || fail "no bash completion in $deb"
mkdir "$P/unpacked" && dpkg -x "$deb" "$P/unpacked" || fail "dpkg -x"
env -u LD_LIBRARY_PATH "$P/unpacked/usr/bin/softrnic" run ibv_devinfo | grep -q "hca_id:.*softrnic0" ||
	fail "the packaged softrnic run finds no device"
echo "install: all checks passed ($P; $(basename "$deb"))"
