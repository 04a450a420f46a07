#!/usr/bin/env bash
# package_deb.sh — build a Debian package of softrnic from a build folder:
#   scripts/package_deb.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, .)
# It installs the build with DESTDIR under prefix /usr — /usr/bin/softrnic,
# /usr/bin/softrnic-kv and the libraries in /usr/lib/softrnic, a folder of
# their own so that they never shadow the system's rdma-core; softrnic(1)
# and the bash completion under /usr/share — and wraps
# that with dpkg-deb.  The package conflicts with nothing: without
# `softrnic run` no program loads its libraries.  Prints the .deb's path.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-.}
[ -f "$build/CMakeCache.txt" ] || { echo "package_deb: $build is not a build folder" >&2; exit 1; }
version=$(sed -n 's/^project(softrnic.*VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
version=${version:-0.1.0}
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
DESTDIR=$stage cmake --install "$build" --prefix /usr >/dev/null
# Manual pages compressed, as Debian keeps them (the bash completion in
# /usr/share/bash-completion/completions is installed as it is).
find "$stage/usr/share/man" -name '*.[0-9]' -exec gzip -9n {} + 2>/dev/null || true
# The programs' own shared-library dependencies, named by their packages
# (dpkg -S on the real path: Debian 12 registers /usr/lib, ldd prints /lib).
deps=$( (for f in "$stage"/usr/bin/* "$stage"/usr/lib/softrnic/*.so.*; do
	[ -L "$f" ] || ldd "$f" 2>/dev/null || true
done) | awk '/=> \// { print $3 }' | grep -v "^$stage" | xargs -r realpath | sort -u |
	xargs -r dpkg -S 2>/dev/null | cut -d: -f1 | sort -u | grep -v '^libc6$' | paste -sd, - | sed 's/,/, /g' || true)
mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: softrnic
Version: $version
Architecture: $arch
Maintainer: softrnic developers <softrnic@localhost>
Depends: libc6${deps:+, $deps}
Section: net
Priority: optional
Description: software RDMA NIC in user space (RoCEv2 over UDP)
 A drop-in libibverbs.so.1 and librdmacm.so.1 that run unmodified RDMA
 programs with no kernel module and no root: softrnic run CMD.
CONTROL
deb="$out/softrnic_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$stage" "$deb" >/dev/null
echo "$deb"
