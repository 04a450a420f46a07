#!/bin/bash
# guest-init.sh — PID 1 of the interop guest (installed as /init by
# build-guest.sh).  Loads the modules, gives eth0 the address from the kernel
# command line (srn_ip=A/24), creates rxe0 on it, and then serves jobs from
# the host through the 9p folder (mount tag "job", on /mnt/job):
#   inbox/NAME.sh   written by the host; run with bash in the background,
#   outbox/NAME.out its stdout+stderr, outbox/NAME.rc its status (last).
# /mnt/job/ready is written once rxe0 has its IPv4 RoCEv2 GID.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm /run /tmp /mnt/job
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
for kv in $(< /proc/cmdline); do
	case $kv in srn_*=*) export "$kv" ;; esac
done
log() { echo "guest-init: $*" > /dev/console; }
ulimit -l unlimited
ulimit -n 65536
for m in crc32_generic virtio_pci virtio_net 9pnet_virtio 9p ib_uverbs ib_umad rdma_ucm rdma_rxe; do
	modprobe "$m" || log "modprobe $m failed"
done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 job /mnt/job || log "no 9p job folder"
J=/mnt/job
mkdir -p "$J/inbox" "$J/outbox" "$J/run"
# fd 9: a fifo nobody writes, so `read -t` on it sleeps without a fork.
mkfifo /run/tick
exec 9<> /run/tick

ip link set lo up
for _ in $(seq 100); do [ -e /sys/class/net/eth0 ] && break; read -rt 0.05 -u 9; done
ip link set eth0 mtu "${srn_mtu:-1500}" up
ip addr add "${srn_ip:?}" dev eth0
if rdma link add rxe0 type rxe netdev eth0; then
	# The IPv4-mapped GID (index 1) appears asynchronously.  Builtins only:
	# a fork per poll is slow under TCG.
	for _ in $(seq 200); do
		g=; read -r g < /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null
		case $g in 0000:0000:0000:0000:0000:ffff:*) break ;; esac
		read -rt 0.05 -u 9
	done
else
	log "rdma link add failed"
fi
{
	echo "kernel=$(uname -r) uptime=$(cut -d' ' -f1 /proc/uptime)"
	echo "gid1=$(cat /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null)"
	ibv_devinfo -d rxe0 | grep -E 'fw_ver|active_mtu' | tr -d '\t' 
} > "$J/ready.tmp"
mv "$J/ready.tmp" "$J/ready"
log "ready: $(tr '\n' ' ' < "$J/ready")"

run_job() {
	local name=$1
	bash "$J/run/$name.sh" > "$J/outbox/$name.out" 2>&1 < /dev/null
	echo $? > "$J/outbox/$name.rc.tmp"
	mv "$J/outbox/$name.rc.tmp" "$J/outbox/$name.rc"
}
while :; do
	for f in "$J"/inbox/*.sh; do
		[ -e "$f" ] || continue
		n=${f##*/}; n=${n%.sh}
		mv "$f" "$J/run/$n.sh" && run_job "$n" &
	done
	read -rt 0.1 -u 9   # a sleep without a fork
done
