# lib.sh — shell helpers the test scripts source (tests/ecosystem/*.sh,
# tests/runtime/*.sh, tests/rdmacm/*.sh); plain sh, so the /bin/sh scripts can use it too.

# wait_listen PORT [PREFIX...]: until something listens on TCP PORT (the
# setup channel of perftest, rping, fi_pingpong, ucx_perftest; their
# "waiting" lines are block-buffered, so the socket is what to watch).
# PREFIX runs ss elsewhere, e.g. `ip netns exec NS`.  1 after 5 s.
wait_listen() {
	local port=$1 i
	shift
	for i in $(seq 100); do
		[ -n "$("$@" ss -Hltn "sport = :$port")" ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_server PORT PID LOG: until something listens on TCP PORT; 1 (after
# printing LOG, the server's output) if the server PID exits first or 10 s
# pass.
wait_server() {
	_ws_i=0
	while ! ss -ltnH "sport = :$1" 2>/dev/null | grep -q .; do
		if ! kill -0 "$2" 2>/dev/null || [ $_ws_i -ge 100 ]; then
			cat "$3"
			return 1
		fi
		sleep 0.1
		_ws_i=$((_ws_i + 1))
	done
}

# cm_listener PS PORT: the pid of the process whose librdmacm listens on
# PORT of port space PS (262 = RDMA_PS_TCP) on a loopback device: the
# holder of the abstract socket softrnic-cm-<ps>-<port>
# (src/compat/rdmacm/port_registry.c).  Prints nothing when nobody does.
cm_listener() {
	ss -xlpH 2>/dev/null | awk -v n="@softrnic-cm-$1-$2" \
		'$5 == n { if (match($0, /pid=[0-9]+/)) print substr($0, RSTART + 4, RLENGTH - 4); exit }'
}

# cm_listening PS PORT [PID]: true while someone (PID, if given) listens
# there.
cm_listening() {
	_cl_p=$(cm_listener "$1" "$2")
	[ -n "$_cl_p" ] && { [ -z "${3:-}" ] || [ "$_cl_p" = "$3" ]; }
}

# start_rsocket_server LIBDIR PRELOAD PORT SECONDS LOG COMMAND...: starts
# COMMAND in the background with softrnic's libraries from LIBDIR and the
# preload library PRELOAD (after SOFTRNIC_PRELOAD, a sanitizer runtime, if
# set), ended after SECONDS, its output in LOG, and sets spid to its pid
# (timeout's, which passes a kill on).  Returns once its listener on PORT
# is in softrnic's CM registry (port space TCP), so it listens through
# rsockets and not the kernel; 1, after saying so and printing LOG, if it
# exits first or 10 s pass.
start_rsocket_server() {
	local lib=$1 pre=$2 port=$3 secs=$4 log=$5 i=0
	shift 5
	env LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	    LD_PRELOAD="${SOFTRNIC_PRELOAD:+$SOFTRNIC_PRELOAD }$pre" timeout -k 5 "$secs" "$@" > "$log" 2>&1 &
	spid=$!
	until cm_listening 262 "$port"; do
		if ! kill -0 "$spid" 2>/dev/null || [ $i -ge 200 ]; then
			echo "FAIL: $1 never listened through softrnic's rsockets"
			cat "$log"
			return 1
		fi
		sleep 0.05
		i=$((i + 1))
	done
}

# stats_counter LOG NAME [N]: the counter NAME from the N-th (default the
# first) SOFTRNIC_STATS_AT_EXIT "counters:" line of LOG; 0 if not printed.
stats_counter() {
	_sc_v=$(grep ' counters:' "$1" | sed -n "${3:-1}p" | sed -n "s/.* $2=\([0-9]*\).*/\1/p")
	echo "${_sc_v:-0}"
}

# netns_pair NS_A NS_B IFNAME ADDR_A ADDR_B: two network namespaces joined
# by a veth named IFNAME at both ends, ADDR_x/24 on each, lo and the veth
# up; returns once both ends are UP (softrnic's port follows the link
# under SOFTRNIC_IFACE).  The caller deletes the namespaces.
netns_pair() {
	local a=$1 b=$2 ifname=$3 addr_a=$4 addr_b=$5 ns i
	ip netns add "$a" && ip netns add "$b" || return 1
	ip link add "$ifname" netns "$a" type veth peer name "$ifname" netns "$b" || return 1
	ip -n "$a" addr add "$addr_a/24" dev "$ifname" && ip -n "$b" addr add "$addr_b/24" dev "$ifname" || return 1
	for ns in "$a" "$b"; do
		ip -n "$ns" link set lo up && ip -n "$ns" link set "$ifname" up || return 1
	done
	for i in $(seq 50); do
		ip -n "$a" -br link show "$ifname" | grep -q "UP " && ip -n "$b" -br link show "$ifname" | grep -q "UP " &&
			return 0
		sleep 0.1
	done
	return 1
}
