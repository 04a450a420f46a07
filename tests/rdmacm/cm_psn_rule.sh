#!/bin/sh
# cm_psn_rule.sh — the Starting PSN rule on softrnic's own wire: rping
# through librdmacm.so.1 with the client's packets captured
# (SOFTRNIC_PCAP), then tests/cm's cm_capture --rule checks that each side
# sent its first request from the Starting PSN of the *other* side's REQ or
# REP, as the kernel does.  Two softrnic processes that both read the rule
# backwards still connect to each other; this test does not let them.
#
# usage: cm_psn_rule.sh <libdir> <cm_capture> <port>
set -u
libdir=$1 checker=$2 port=$3
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM
"$here/cm_pair.sh" -t 60 "$libdir" 262 "$port" -- \
	rping -s -a 127.0.0.1 -p "$port" -C 5 -- \
	env SOFTRNIC_PCAP="$dir/client-%p.pcap" rping -c -a 127.0.0.1 -p "$port" -C 5 || exit 1
set -- "$dir"/client-*.pcap
[ -s "$1" ] || { echo "cm_psn_rule: the client wrote no capture"; exit 1; }
"$checker" --rule "$1"
