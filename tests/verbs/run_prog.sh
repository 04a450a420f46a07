#!/bin/sh
# run_prog.sh — runs one unmodified verbs program over our
# libibverbs.so.1 and checks its exit code and output.
#
# usage: run_prog.sh <libdir> <regex-file-or-'-'> <program> [args...]
#   every non-empty line of the regex file is an extended regex the
#   output must match.  SOFTRNIC_PRELOAD goes into LD_PRELOAD if set.
set -u
libdir=$1 regs=$2 prog=$3
shift 3
command -v "$prog" >/dev/null 2>&1 || { echo "$prog not installed"; exit 77; }
out=$(env LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	  ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} \
	  timeout -k 5 30 "$prog" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
[ $rc -eq 0 ] || { echo "FAIL: $prog exit $rc"; exit 1; }
status=0
if [ "$regs" != "-" ]; then
	while IFS= read -r re; do
		[ -n "$re" ] || continue
		printf '%s\n' "$out" | grep -Eq -- "$re" || { echo "FAIL: output lacks /$re/"; status=1; }
	done < "$regs"
fi
[ $status -eq 0 ] && echo PASS
exit $status
