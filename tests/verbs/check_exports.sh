#!/bin/sh
# check_exports.sh — compares the dynamic symbol table of one of our
# drop-in libraries with the system library of the same SONAME: every
# exported name, with its version, its default (@@) or hidden (@) status
# and its kind (function / data), must match.  Also checks the SONAME.
#
# A version node newer than the system library's rdma-core may be named
# as a third argument: ours may export that node and its symbols besides
# (they are listed, not compared).
#
# usage: check_exports.sh <our-lib> <system-lib> [newer-node]
set -eu
ours=$1
sys=$2
newer=${3:-}
[ -e "$ours" ] || { echo "missing: $ours"; exit 1; }
[ -e "$sys" ] || { echo "system library $sys not installed"; exit 77; }

# "<kind> <version> <name>", hidden versions keep their parentheses.
exports() {
	# SOFTRNIC_PRIVATE_*: softrnic's own node, for its librdmacm (libibverbs.map).
	objdump -T "$1" | awk '$2 == "g" && $4 != "*UND*" && NF >= 7 && $(NF-1) !~ /SOFTRNIC_PRIVATE/ { print $3, $(NF-1), $NF }' | sort
}
soname() {
	objdump -p "$1" | awk '$1 == "SONAME" { print $2 }'
}

status=0
if [ "$(soname "$ours")" != "$(soname "$sys")" ]; then
	echo "SONAME differs: ours $(soname "$ours"), system $(soname "$sys")"
	status=1
fi
exports "$ours" > "${TMPDIR:-/tmp}/exports.all.$$"
if [ -n "$newer" ]; then
	if objdump -T "$sys" | grep -q " $newer "; then
		echo "the system library has $newer already: compare it whole (drop the third argument)"
		status=1
	fi
	awk -v n="$newer" '$2 == n' "${TMPDIR:-/tmp}/exports.all.$$" | sed 's/^/newer than the system library: /'
	awk -v n="$newer" '$2 != n' "${TMPDIR:-/tmp}/exports.all.$$" > "${TMPDIR:-/tmp}/exports.ours.$$"
else
	cp "${TMPDIR:-/tmp}/exports.all.$$" "${TMPDIR:-/tmp}/exports.ours.$$"
fi
rm -f "${TMPDIR:-/tmp}/exports.all.$$"
exports "$sys" > "${TMPDIR:-/tmp}/exports.sys.$$"
if ! diff -u "${TMPDIR:-/tmp}/exports.sys.$$" "${TMPDIR:-/tmp}/exports.ours.$$"; then
	echo "export list of $ours differs from $sys (- system, + ours)"
	status=1
fi
n=$(wc -l < "${TMPDIR:-/tmp}/exports.ours.$$")
rm -f "${TMPDIR:-/tmp}/exports.ours.$$" "${TMPDIR:-/tmp}/exports.sys.$$"
[ $status -eq 0 ] && echo "OK: $n exports of $(basename "$ours") match $(basename "$sys")"
exit $status
