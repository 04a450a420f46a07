#!/usr/bin/env bash
# shared_host.sh — softrnic on a host shared with other users: what an
# unprivileged user B can do to user A's and root's softrnic programs.
#   shared_host.sh BUILD_DIR
#
# Run as root: it makes two throwaway users (deleted at exit) and runs each
# attack of docs/security.md as B against A or root, with the sysctls that
# would otherwise hide some of them (fs.protected_symlinks, _regular,
# _fifos) off for the run, as on many containers.  Exits 77 with the reason
# where that is impossible (not root, no useradd, a build the throwaway
# users cannot read).  Each case says PASS or FAIL; exit 1 on any FAIL.
set -uo pipefail
build=$(cd "${1:?usage: shared_host.sh BUILD_DIR}" && pwd) || exit 2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
lib=$build/lib
tool=$build/bin/softrnic

[ "$(id -u)" -eq 0 ] || { echo "shared_host: not root: cannot make throwaway users; skipped"; exit 77; }
command -v useradd >/dev/null && command -v setpriv >/dev/null ||
	{ echo "shared_host: no useradd/setpriv; skipped"; exit 77; }
py=/usr/bin/python3
[ -x "$py" ] || { echo "shared_host: no /usr/bin/python3; skipped"; exit 77; }
# The run has a /dev/shm of its own (a mount namespace, a fresh tmpfs), so
# that root's and the throwaway users' directories there start empty and
# nothing of this host's other softrnic users is touched.
if [ -z "${SHARED_HOST_INNER:-}" ]; then
	unshare -m --propagation private true 2>/dev/null ||
		{ echo "shared_host: cannot make a mount namespace; skipped"; exit 77; }
	exec unshare -m --propagation private env SHARED_HOST_INNER=1 bash "$0" "$@"
fi
mount -t tmpfs -o mode=1777,size=256m tmpfs /dev/shm || { echo "shared_host: cannot mount a tmpfs; skipped"; exit 77; }

failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

work=$(mktemp -d /tmp/softrnic-sec.XXXXXX)
chmod 755 "$work"
users=()
pids=()
sysctl_saved=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	for u in "${users[@]}"; do
		pkill -9 -u "$u" 2>/dev/null
		userdel "$u" 2>/dev/null
	done
	for kv in "${sysctl_saved[@]}"; do sysctl -q -w "$kv" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT

# Throwaway users A and B: no home, no shell, their own groups.
for role in a b; do
	name=srt$role$$
	name=${name:0:31}
	useradd -M -U -s /usr/sbin/nologin "$name" 2>/dev/null || { echo "shared_host: useradd failed; skipped"; exit 77; }
	users+=("$name")
done
user_a=${users[0]}
user_b=${users[1]}
uid_a=$(id -u "$user_a")
uid_b=$(id -u "$user_b")

# $as USER CMD...: CMD as USER (or root), with the environment a login
# would give (no XDG_RUNTIME_DIR: softrnic's runtime directory is then
# /dev/shm/softrnic-<uid>).  A script that execs, so that `timeout` can run
# it and a background CMD's pid is $!.
as=$work/as
cat > "$as" <<EOS
#!/bin/bash
u=\$1
shift
set -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LD_LIBRARY_PATH="$lib" ${SOFTRNIC_LOCAL+SOFTRNIC_LOCAL=$SOFTRNIC_LOCAL} "\$@"
[ "\$u" = root ] && exec "\$@"
exec setpriv --reuid="\$u" --regid="\$u" --init-groups "\$@"
EOS
chmod 755 "$as"

"$as" "$user_a" test -r "$lib/libibverbs.so.1" -a -x "$tool" ||
	{ echo "shared_host: $user_a cannot read $build (its parent folders' modes); skipped"; exit 77; }
for s in fs.protected_symlinks fs.protected_regular fs.protected_fifos; do
	v=$(sysctl -n "$s" 2>/dev/null) || continue
	sysctl_saved+=("$s=$v")
	sysctl -q -w "$s=0" >/dev/null 2>&1 || echo "shared_host: cannot set $s=0 (stays $v)"
done

# A root-owned file every clobbering attack aims at.
victim=$work/victim
echo "root's data" > "$victim"
chmod 644 "$victim"
victim_sum=$(sha256sum < "$victim")
victim_intact() { [ "$(sha256sum < "$victim")" = "$victim_sum" ]; }
# Each case starts from an intact victim, whatever the one before did.
reset_victim() { echo "root's data" > "$victim"; }

# bounded SECONDS CMD...: CMD must end within SECONDS (124: it hung).
bounded() {
	local s=$1
	shift
	timeout -k 2 "$s" "$@"
}

# ---- 1. Files of root through symlinks --------------------------------------
# B plants a symlink where root's runtime directory would be, and where the
# names of earlier versions were (stats, loopback CM registry).
root_dir=/dev/shm/softrnic-0
"$as" "$user_b" ln -s "$victim" "$root_dir"
# The stats names of earlier versions, /dev/shm/softrnic-<pid>, for the
# next 300 pids (planted by one process, so the pids stay free).
next_pid=$(sh -c 'echo $$')
"$as" "$user_b" "$py" -c 'import os, sys
for p in range(int(sys.argv[1]) + 1, int(sys.argv[1]) + 300):
    os.symlink(sys.argv[2], "/dev/shm/softrnic-%d" % p)' "$next_pid" "$victim"
"$as" "$user_b" ln -sf "$victim" /dev/shm/softrnic-cm-262-23480
out=$(bounded 20 "$as" root ibv_devinfo 2>&1)
rc=$?
if [ $rc -eq 0 ] && victim_intact; then pass "root's ibv_devinfo beside B's symlinks: ran, the file they point at is intact"
else fail "root's ibv_devinfo beside B's symlinks: exit $rc, victim intact: $(victim_intact && echo yes || echo no): $out"; fi
grep -q "$root_dir" <<<"$out" && pass "root is told why its runtime directory is refused" ||
	fail "root's ibv_devinfo did not name the refused $root_dir: $out"
reset_victim
"$as" root rping -s -a 127.0.0.1 -p 23480 -C 1 > "$work/root-server.log" 2>&1 &
r_server=$!
pids+=("$r_server")
for i in $(seq 100); do cm_listening 262 23480 "$r_server" && break; sleep 0.05; done
bounded 10 "$as" root rping -c -a 127.0.0.1 -p 23480 -C 1 > "$work/root-client.log" 2>&1
rc=$?
wait "$r_server"
if [ $rc -eq 0 ] && victim_intact; then pass "root's rping on port 23480 beside B's symlink: ran, the victim is intact"
else fail "root's rping beside B's symlink: client $rc, victim intact: $(victim_intact && echo yes || echo no)"; fi
rm -f "$root_dir" /dev/shm/softrnic-cm-262-23480
find /dev/shm -maxdepth 1 -type l -user "$uid_b" -delete

# A capture file: B links the name root's capture will take to the victim.
# (in /tmp, where B may create names: the place the docs of earlier
# versions suggested for captures).
reset_victim
pcap=/tmp/softrnic-sec-$$-server.pcap
"$as" "$user_b" ln -s "$victim" "$pcap" || fail "B could not plant $pcap"
out=$(bounded 20 "$as" root env SOFTRNIC_PCAP="$pcap" ibv_devinfo 2>&1)
if victim_intact && grep -q "$pcap" <<<"$out"; then pass "SOFTRNIC_PCAP onto B's symlink: refused, named, victim intact"
else fail "SOFTRNIC_PCAP onto B's symlink: victim intact: $(victim_intact && echo yes || echo no): $out"; fi
rm -f "$pcap"

# ---- 2. Programs hung by a FIFO ---------------------------------------------
"$as" "$user_b" mkfifo "/dev/shm/softrnic-$uid_a"
bounded 20 "$as" "$user_a" ibv_devinfo > "$work/fifo.log" 2>&1
rc=$?
[ $rc -eq 0 ] && pass "A's ibv_devinfo with B's FIFO as A's runtime directory: ran (exit 0)" ||
	fail "A's ibv_devinfo with B's FIFO: exit $rc (124: hung): $(cat "$work/fifo.log")"
for cmd in "stats" "devices"; do
	bounded 20 "$as" "$user_a" "$tool" $cmd > "$work/fifo-$cmd.log" 2>&1
	rc=$?
	[ $rc -ne 124 ] && pass "A's softrnic $cmd with B's FIFO: finished (exit $rc)" ||
		fail "A's softrnic $cmd hung on B's FIFO"
done
rm -f "/dev/shm/softrnic-$uid_a"
# A directory B made for A is refused too, and A still runs.
"$as" "$user_b" mkdir -m 777 "/dev/shm/softrnic-$uid_a"
bounded 20 "$as" "$user_a" ibv_devinfo > "$work/squat.log" 2>&1
rc=$?
[ $rc -eq 0 ] && ! find "/dev/shm/softrnic-$uid_a" -mindepth 1 | grep -q . &&
	pass "A's ibv_devinfo with B's directory as A's runtime directory: ran, wrote nothing there" ||
	fail "A's ibv_devinfo with B's squatted directory: exit $rc, files: $(ls "/dev/shm/softrnic-$uid_a")"
rm -rf "/dev/shm/softrnic-$uid_a"

# ---- 3. Ports: squatted, forged, taken over ---------------------------------
port=23600
# B writes registry entries as earlier versions kept them in /dev/shm: A's
# port "closed" at B's address, the next one "open" (a squat).
echo "127.0.0.77 1 127.0.0.1 closed" | "$as" "$user_b" tee /dev/shm/softrnic-cm-262-$port > /dev/null
echo "127.0.0.77 1 127.0.0.1 open" | "$as" "$user_b" tee /dev/shm/softrnic-cm-262-$((port + 1)) > /dev/null
"$as" "$user_a" rping -s -a 127.0.0.1 -p $port -v -C 5 > "$work/a-server.log" 2>&1 &
a_server=$!
pids+=("$a_server")
for i in $(seq 100); do cm_listening 262 $port "$a_server" && break; sleep 0.05; done
cm_listening 262 $port "$a_server" || fail "A's rping server never listened"
# B cannot listen on A's port.
bounded 10 "$as" "$user_b" rping -s -a 127.0.0.1 -p $port -C 1 > "$work/b-server.log" 2>&1
grep -qi "in use" "$work/b-server.log" && pass "B's rping -s on A's port: Address already in use" ||
	fail "B's rping -s on A's port: $(cat "$work/b-server.log")"
# B forges address names for A's port, pointing at 127.0.0.77.
forge='import socket, sys, time
socks = []
for name in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind("\0" + name)
    s.listen(16)
    socks.append(s)
time.sleep(30)'
"$as" "$user_b" "$py" -c "$forge" "softrnic-cm-262-$port@7f00004d#0000000000000000" \
	"softrnic-cm-262-$((port + 1))@7f00004d#0000000000000000" "softrnic-cm-262-$((port + 1))~7f00004d#0" &
pids+=($!)
sleep 0.5
bounded 20 "$as" "$user_a" rping -c -a 127.0.0.1 -p $port -v -C 5 > "$work/a-client.log" 2>&1
rc=$?
wait "$a_server"
src=$?
if [ $rc -eq 0 ] && [ $src -eq 0 ] && [ "$(grep -c 'ping data' "$work/a-server.log")" -eq 5 ]; then
	pass "A's client beside B's forged names reached A's server (5 pings)"
else
	fail "A's client beside B's forged names: client $rc, server $src: $(cat "$work/a-client.log" "$work/a-server.log")"
fi
# B's names for a port nobody listens on do not stop A from listening there.
"$as" "$user_a" rping -s -a 127.0.0.1 -p $((port + 1)) -C 1 > "$work/a-server2.log" 2>&1 &
a_server=$!
pids+=("$a_server")
for i in $(seq 100); do cm_listening 262 $((port + 1)) "$a_server" && break; sleep 0.05; done
cm_listening 262 $((port + 1)) "$a_server" && pass "A listens on a port B forged names for" ||
	fail "A could not listen on a port B forged names for: $(cat "$work/a-server2.log")"
kill "$a_server" 2>/dev/null
# A killed listener frees its port at once, for anyone.
"$as" "$user_a" rping -s -a 127.0.0.1 -p $((port + 2)) -C 1 > /dev/null 2>&1 &
a_server=$!
pids+=("$a_server")
for i in $(seq 100); do cm_listening 262 $((port + 2)) "$a_server" && break; sleep 0.05; done
kill -9 "$a_server"
wait "$a_server" 2>/dev/null
"$as" "$user_b" rping -s -a 127.0.0.1 -p $((port + 2)) -C 1 > "$work/b-server3.log" 2>&1 &
b_server=$!
pids+=("$b_server")
for i in $(seq 100); do cm_listening 262 $((port + 2)) "$b_server" && break; sleep 0.05; done
cm_listening 262 $((port + 2)) "$b_server" && pass "a port A held is free once A is killed" ||
	fail "B could not listen on the port of A's killed server: $(cat "$work/b-server3.log")"
kill "$b_server" 2>/dev/null

# ---- 4. Another user's counters and QP state ---------------------------------
"$as" "$user_a" ibv_rc_pingpong -g 0 -p 23700 -n 1000000 > "$work/a-pp.log" 2>&1 &
a_pp=$!
pids+=("$a_pp")
wait_server 23700 "$a_pp" "$work/a-pp.log" >/dev/null
out_b=$(bounded 10 "$as" "$user_b" "$tool" stats --qp "$a_pp" 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -qi "permission denied" <<<"$out_b" && ! grep -qi "psn" <<<"$out_b"; then
	pass "B's softrnic stats --qp <A's pid>: permission denied"
else
	fail "B's softrnic stats --qp <A's pid>: exit $rc: $out_b"
fi
out_b=$(bounded 10 "$as" "$user_b" "$tool" stats 2>&1)
grep -q "pid $a_pp\b\| $a_pp " <<<"$out_b" && fail "B's softrnic stats lists A's process: $out_b" ||
	pass "B's softrnic stats does not list A's process"
out_a=$(bounded 10 "$as" "$user_a" "$tool" stats --qp "$a_pp" 2>&1)
rc=$?
[ $rc -eq 0 ] && pass "A's own softrnic stats --qp <pid> works" || fail "A's softrnic stats --qp: exit $rc: $out_a"
out_r=$(bounded 10 "$as" root "$tool" devices 2>&1)
grep -q "$a_pp" <<<"$out_r" && pass "root's softrnic devices lists A's process" ||
	fail "root's softrnic devices does not list A's process $a_pp: $out_r"
mine=$(find /dev/shm -user "$uid_a" -type f 2>/dev/null)
bad=$(find /dev/shm -user "$uid_a" -type f -perm /077 2>/dev/null)
[ -n "$mine" ] && [ -z "$bad" ] && pass "A's files are private (no group or other bits)" ||
	fail "A's files: readable by others: ${bad:-none}; all: ${mine:-none}"
dmode=$(stat -c %a "/dev/shm/softrnic-$uid_a" 2>/dev/null)
[ "$dmode" = 700 ] && pass "A's runtime directory is 0700" || fail "A's runtime directory mode: ${dmode:-missing}"
kill "$a_pp" 2>/dev/null

# ---- 5. Nothing piles up ------------------------------------------------------
for i in $(seq 20); do
	"$as" "$user_a" ibv_rc_pingpong -g 0 -p $((23800 + i)) > /dev/null 2>&1 &
	p=$!
	pids+=("$p")
	wait_listen $((23800 + i)) >/dev/null || true
	kill -9 "$p"
	wait "$p" 2>/dev/null
done
"$as" "$user_a" ibv_devinfo > /dev/null 2>&1
left=$(find /dev/shm -user "$uid_a" ! -type d 2>/dev/null)
[ -z "$left" ] && pass "20 killed servers of A: nothing left once A's next program ran" ||
	fail "20 killed servers of A left: $left"
# A librdmacm program cleans up at its clean exit.
"$as" "$user_a" rping -s -a 127.0.0.1 -p 23900 -C 2 > /dev/null 2>&1 &
a_server=$!
pids+=("$a_server")
for i in $(seq 100); do cm_listening 262 23900 "$a_server" && break; sleep 0.05; done
bounded 20 "$as" "$user_a" env SOFTRNIC_STATS_AT_EXIT=1 rping -c -a 127.0.0.1 -p 23900 -C 2 > "$work/rping-exit.log" 2>&1
wait "$a_server"
left=$(find /dev/shm -user "$uid_a" ! -type d 2>/dev/null)
[ -z "$left" ] && pass "rping server and client of A leave no file behind" || fail "rping left: $left"
grep -q "counters:" "$work/rping-exit.log" && pass "SOFTRNIC_STATS_AT_EXIT prints for rping" ||
	fail "SOFTRNIC_STATS_AT_EXIT printed nothing for rping: $(cat "$work/rping-exit.log")"

echo "shared_host: $failures failed"
[ $failures -eq 0 ]
