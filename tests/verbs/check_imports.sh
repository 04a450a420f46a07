#!/bin/sh
# check_imports.sh — every versioned symbol that the installed verbs
# programs (perftest ib_*, ibverbs-utils ibv_*, rping/qperf if present) and
# pyverbs' extension modules import from libibverbs, librdmacm, libmlx5 or
# libefa must be exported, with that version, by our library in <libdir>.
#
# usage: check_imports.sh <libdir>
set -eu
libdir=$1
tmp=${TMPDIR:-/tmp}/imports.$$
trap 'rm -f "$tmp".*' EXIT

for lib in libibverbs.so.1 librdmacm.so.1 libmlx5.so.1 libefa.so.1; do
	[ -e "$libdir/$lib" ] || { echo "missing: $libdir/$lib"; exit 1; }
	objdump -T "$libdir/$lib" | awk '$2 == "g" && $4 != "*UND*" && NF >= 7 { v = $(NF-1); gsub(/[()]/, "", v); print v, $NF }'
done | sort -u > "$tmp.have"

importers=$(ls /usr/bin/ib_* /usr/bin/ibv_* /usr/bin/rping /usr/bin/qperf 2>/dev/null || true)
importers="$importers $(find /usr/lib/python3/dist-packages/pyverbs -name '*.so' 2>/dev/null || true)"
checked=0
for f in $importers; do
	[ -f "$f" ] || continue
	objdump -T "$f" 2>/dev/null | awk '/\*UND\*/ { v = $(NF-1); gsub(/[()]/, "", v); print v, $NF }' |
		grep -E '^(IBVERBS|RDMACM|MLX5|EFA)_' > "$tmp.need" || continue
	checked=$((checked + 1))
	missing=$(sort -u "$tmp.need" | comm -23 - "$tmp.have")
	if [ -n "$missing" ]; then
		echo "$f imports symbols we do not export:"
		echo "$missing" | sed 's/^/    /'
		echo fail > "$tmp.fail"
	fi
done
[ "$checked" -gt 0 ] || { echo "no importers found (perftest / pyverbs not installed)"; exit 77; }
[ -e "$tmp.fail" ] && exit 1
echo "OK: imports of $checked programs/modules all resolved"
