#!/usr/bin/env bash
# path_coverage.sh — the check behind CI's choice of which tests run in
# every transport mode.  CI runs the whole suite over the default paths,
# then only the tests labelled `path` again with SOFTRNIC_LOCAL=packets
# and SOFTRNIC_LOCAL=0 (scripts/test.sh).  A test that opens a device but
# is not `path` (an application over verbs: middleware, the key-value
# store's persistence, NVMe-oF, servers over rsockets) may leave those
# modes only if it reaches no line of the runtime, the rnic or the wire
# layer that the `path` tests do not reach in the same mode.  This script
# measures that with gcc's line coverage:
#
#   scripts/path_coverage.sh [MODE...]      (default: packets 0; ~15 min each)
#
# It builds build-cov/ (--coverage), runs the `path` tests in the mode,
# then each e2e test that is not `path` alone, and prints for each the
# lines of src/runtime, src/rnic and src/wire it alone reached.  Lines
# that are the same in every mode (verbs semantics: a CQ re-armed, an SGE
# offset) are not a reason to run a test three times; a line of a path
# (runtime/path_*, local_*, udp_*, xdp_*) is.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(packets 0)
B=build-cov
cmake -S . -B "$B" -G Ninja -DCMAKE_C_COMPILER=gcc -DCMAKE_C_FLAGS=--coverage \
	-DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage >/dev/null &&
	ninja -C "$B" >/dev/null || { echo "path_coverage: build failed"; exit 1; }
out=$(mktemp -d)
# The covered lines of every object, one "file:line" per line.
covered() {
	python3 - "$B" <<'PY'
import glob, json, os, subprocess, sys
b = sys.argv[1]
for gcda in glob.glob(os.path.join(b, 'src', '**', '*.gcda'), recursive=True):
    r = subprocess.run(['gcov', '--json-format', '--stdout', gcda], capture_output=True, text=True,
                       cwd=os.path.dirname(gcda))
    for line in r.stdout.splitlines():
        if line.strip():
            for f in json.loads(line)['files']:
                for l in f['lines']:
                    if l['count'] > 0:
                        print(f"{os.path.normpath(f['file'])}:{l['line_number']}")
PY
}
others=$(cd "$B" && ctest -N -L '^e2e$' -LE '^path$' | awk '/Test +#/ { print $3 }')
for mode in "${modes[@]}"; do
	find "$B" -name '*.gcda' -delete
	SOFTRNIC_LOCAL=$mode bash scripts/run_ctest.sh "$B" -L '^path$' -j2 --timeout 600 >"$out/path.$mode.log" 2>&1
	covered | sort -u >"$out/path.$mode"
	echo "mode $mode: the path tests reach $(wc -l <"$out/path.$mode") lines"
	for t in $others; do
		find "$B" -name '*.gcda' -delete
		SOFTRNIC_LOCAL=$mode bash scripts/run_ctest.sh "$B" -R "^$t\$" --timeout 600 >"$out/$t.$mode.log" 2>&1
		covered | sort -u | comm -23 - "$out/path.$mode" | grep -E '/src/(runtime|rnic|wire)/' >"$out/$t.$mode.only"
		n=$(wc -l <"$out/$t.$mode.only")
		[ "$n" -eq 0 ] && continue
		echo "  $t alone reaches $n: $(sed -E 's|.*/src/||; s|:[0-9]+$||' "$out/$t.$mode.only" | sort | uniq -c |
			awk '{ printf "%s %s  ", $2, $1 }')"
	done
done
echo "path_coverage: details in $out"
