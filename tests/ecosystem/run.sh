#!/usr/bin/env bash
# run.sh — `softrnic run` and its shim (src/shim): what a program started
# through it sees, checked with ordinary tools, and what one started
# without it does not see.
#   run.sh SOFTRNIC_BIN
set -uo pipefail
SOFTRNIC=$1
fail() { echo "run: FAIL: $*" >&2; exit 1; }
run() { "$SOFTRNIC" run "$@"; }
dev=/sys/class/infiniband/softrnic0
port=$dev/ports/1

# The library path alone: ibv_devinfo finds softrnic0.
run --no-shim ibv_devinfo | grep -q "hca_id:.*softrnic0" || fail "ibv_devinfo under --no-shim finds no softrnic0"
run --no-shim sh -c "test ! -e $dev" || fail "--no-shim still shows $dev"

# The sysfs tree, read by ls, cat, stat, find, python.
[ "$(run ls /sys/class/infiniband)" = softrnic0 ] || fail "ls /sys/class/infiniband: $(run ls /sys/class/infiniband)"
[ "$(run cat $port/gid_attrs/types/0)" = "RoCE v2" ] || fail "gid type is not RoCE v2"
[ "$(run cat $port/state)" = "4: ACTIVE" ] || fail "port state: $(run cat $port/state)"
[ "$(run cat $port/link_layer)" = Ethernet ] || fail "link layer: $(run cat $port/link_layer)"
[ "$(run cat /sys/class/infiniband_verbs/softrnic0/ibdev)" = softrnic0 ] || fail "infiniband_verbs ibdev"
# The device nodes: character devices a user may open read-write.
run sh -c 'test -c /dev/infiniband/softrnic0 && test -r /dev/infiniband/softrnic0 && test -w /dev/infiniband/softrnic0' ||
	fail "/dev/infiniband/softrnic0 is not a read-write character device"
[ "$(run stat -L -c %F /dev/infiniband/uverbs0)" = "character special file" ] || fail "stat of uverbs0"
run find /sys/class/infiniband/softrnic0/ -name 0 | grep -q "gids/0" || fail "find does not see gids/0"

# The attributes that follow the address the device binds: one process
# reads the GID and node GUID from sysfs and from libibverbs, and they agree.
out=$(SOFTRNIC_ADDR=127.0.0.77 run python3 - <<'PY'
import ctypes, ctypes.util
dev = "/sys/class/infiniband/softrnic0"
gid = open(dev + "/ports/1/gids/0").read().strip()
guid = open(dev + "/node_guid").read().strip()
ndev = open(dev + "/ports/1/gid_attrs/ndevs/0").read().strip()
print(gid, guid, ndev)
PY
) || fail "python could not read the dynamic attributes"
read -r gid guid ndev <<<"$out"
[ "$gid" = "0000:0000:0000:0000:0000:ffff:7f00:004d" ] || fail "gids/0 is $gid for 127.0.0.77"
[ "$guid" = "0200:7fff:fe00:004d" ] || fail "node_guid is $guid for 127.0.0.77"
[ "$ndev" = lo ] || fail "ndevs/0 is $ndev"
devinfo_guid=$(SOFTRNIC_ADDR=127.0.0.77 run ibv_devinfo | awk '/node_guid/ { print $2 }')
[ "$devinfo_guid" = "$guid" ] || fail "ibv_devinfo node_guid $devinfo_guid, sysfs $guid"

# Writes to the tree fail; paths outside it are untouched.
run sh -c "echo x > $port/state" 2>/dev/null && fail "a write to $port/state succeeded"
[ "$(run cat /proc/self/comm)" = cat ] || fail "/proc passes through"

# The program's own exit status and a missing program.
run sh -c 'exit 7'; [ $? -eq 7 ] || fail "exit status not passed through"
run /nonexistent/program 2>/dev/null; [ $? -eq 127 ] || fail "a missing program does not give 127"
echo "run: all checks passed"
