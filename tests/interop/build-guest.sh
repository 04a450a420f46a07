#!/usr/bin/env bash
# build-guest.sh — builds (or reuses) the kernel Soft-RoCE guest that
# tests/interop/run.sh boots: Debian bookworm's kernel (the one
# linux-image-amd64 depends on now) and one uncompressed initramfs holding
# the whole root (debootstrap minbase + rdma-core tools + the modules rxe
# needs + tests/interop/guest-init.sh as /init).
#
# usage: build-guest.sh            (root; prints the cache directory's files)
# Cache: ${SOFTRNIC_INTEROP_DIR:-/var/tmp/softrnic-interop}.  Each stage is
# keyed by its inputs (stamp files), so changing the package list, the module
# list, the kernel package or /init rebuilds what depends on it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
DIR=${SOFTRNIC_INTEROP_DIR:-/var/tmp/softrnic-interop}
MIRROR=${SOFTRNIC_INTEROP_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
PKGS="rdma-core,ibverbs-providers,ibverbs-utils,perftest,rdmacm-utils,iproute2,kmod,procps,tcpdump,nvme-cli,fio"
# crc32_generic: rxe's ICRC uses the kernel crypto "crc32" (without it
# `rdma link add` fails with ENOENT).  Dependencies are added below.
# nvme_rdma, nvmet_rdma: the kernel's NVMe/RDMA host and target, for the
# nvme_rdma cases (softrnic's target and host against them).
MODULES="crc32_generic virtio_pci virtio_net 9pnet_virtio 9p rdma_rxe ib_uverbs rdma_ucm ib_umad sch_netem nvme_rdma nvmet_rdma"

say() { echo "build-guest: $*" >&2; }
[ "$(id -u)" = 0 ] || { say "needs root"; exit 1; }
for t in debootstrap cpio depmod modprobe dpkg-deb apt-get; do
	command -v "$t" >/dev/null || { say "missing $t (scripts/deps.sh installs it)"; exit 1; }
done
mkdir -p "$DIR/debs"
t0=$(date +%s)

# The kernel: whatever linux-image-amd64 depends on now.
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1=="Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kpkg" ]; then
	apt-get update -qq || true
	kpkg=$(apt-cache depends linux-image-amd64 | awk '$1=="Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}')
fi
[ -n "$kpkg" ] || { say "cannot resolve linux-image-amd64's kernel package"; exit 1; }
kver=${kpkg#linux-image-}
kdebver=$(apt-cache policy "$kpkg" | awk '/Candidate:/ {print $2}')

# A stamp is the stage's inputs, one per line, readable.
stage_key() { printf '%s\n' "$@"; }

# --- stage 1: kernel package, extracted, with modules.dep
kkey=$(stage_key "$kpkg" "$kdebver")
if [ "$(cat "$DIR/kernel.stamp" 2>/dev/null)" != "$kkey" ] || [ ! -f "$DIR/kernel/boot/vmlinuz-$kver" ]; then
	deb=$(ls "$DIR/debs/${kpkg}_${kdebver//:/%3a}_"*.deb 2>/dev/null | head -n1 || true)
	if [ -z "$deb" ]; then
		say "downloading $kpkg $kdebver"
		(cd "$DIR/debs" && { apt-get download "$kpkg" || { apt-get update -qq && apt-get download "$kpkg"; }; })
		deb=$(ls "$DIR/debs/${kpkg}_"*.deb | tail -n1)
	fi
	rm -rf "$DIR/kernel"
	dpkg-deb -x "$deb" "$DIR/kernel"
	depmod -b "$DIR/kernel" "$kver"
	echo "$kkey" > "$DIR/kernel.stamp"
fi

# --- stage 2: the debootstrap root
rkey=$(stage_key "$SUITE" "$MIRROR" "$PKGS")
if [ "$(cat "$DIR/rootfs.stamp" 2>/dev/null)" != "$rkey" ] || [ ! -d "$DIR/rootfs/usr/bin" ]; then
	say "debootstrap $SUITE minbase + $PKGS"
	rm -rf "$DIR/rootfs" "$DIR/rootfs.stamp"
	debootstrap --variant=minbase --include="$PKGS" "$SUITE" "$DIR/rootfs" "$MIRROR" > "$DIR/debootstrap.log" 2>&1 ||
		{ tail -20 "$DIR/debootstrap.log" >&2; say "debootstrap failed"; exit 1; }
	chroot "$DIR/rootfs" dpkg-query -W -f '${Package} ${Version}\n' > "$DIR/rootfs-packages.txt"
	# A RAM root needs no docs, manuals, locales or apt caches.
	rm -rf "$DIR"/rootfs/usr/share/{doc,man,info,locale}/* "$DIR"/rootfs/var/cache/apt/* \
		"$DIR"/rootfs/var/lib/apt/lists/*
	echo "$rkey" > "$DIR/rootfs.stamp"
fi

# --- stage 3: modules + /init + the initramfs
ikey=$(stage_key "kernel $kpkg $kdebver" "suite $SUITE $MIRROR" "packages $PKGS" "modules $MODULES" \
	"init $(sha256sum < "$here/guest-init.sh" | cut -d" " -f1)" "builder $(sha256sum < "$0" | cut -d" " -f1)")
if [ "$(cat "$DIR/image.stamp" 2>/dev/null)" = "$ikey" ] && [ -f "$DIR/initramfs.cpio" ] && [ -f "$DIR/vmlinuz" ]; then
	say "cached guest in $DIR (kernel $kpkg $kdebver)"
	exit 0
fi
bash -n "$here/guest-init.sh"
src=$DIR/kernel/lib/modules/$kver
dst=$DIR/rootfs/lib/modules/$kver
rm -rf "$DIR"/rootfs/lib/modules/*
mkdir -p "$dst"
cp "$src"/modules.builtin* "$src"/modules.order "$dst"/
for m in $MODULES; do
	modprobe -d "$DIR/kernel" -S "$kver" --show-depends "$m" | awk '$1=="insmod" {print $2}'
done | sort -u | while read -r ko; do
	rel=${ko#"$src"/}
	mkdir -p "$dst/$(dirname "$rel")"
	cp "$ko" "$dst/$rel"
done
depmod -b "$DIR/rootfs" "$kver"
install -m 0755 "$here/guest-init.sh" "$DIR/rootfs/init"
[ -c "$DIR/rootfs/dev/console" ] || mknod -m 600 "$DIR/rootfs/dev/console" c 5 1
[ -c "$DIR/rootfs/dev/null" ] || mknod -m 666 "$DIR/rootfs/dev/null" c 1 3
mkdir -p "$DIR/rootfs/mnt/job"
{
	echo "kernel $kpkg $kdebver"
	grep -E '^(rdma-core|ibverbs-providers|ibverbs-utils|perftest|rdmacm-utils|iproute2|nvme-cli|fio) ' "$DIR/rootfs-packages.txt"
} > "$DIR/versions.txt"
cp "$DIR/kernel/boot/vmlinuz-$kver" "$DIR/vmlinuz"
(cd "$DIR/rootfs" && find . -xdev -print0 | cpio --null -o -H newc --quiet) > "$DIR/initramfs.cpio.tmp"
mv "$DIR/initramfs.cpio.tmp" "$DIR/initramfs.cpio"
echo "$ikey" > "$DIR/image.stamp"
say "guest built in $(( $(date +%s) - t0 )) s: $(du -h "$DIR/initramfs.cpio" | cut -f1) initramfs, $(tr '\n' ';' < "$DIR/versions.txt")"
