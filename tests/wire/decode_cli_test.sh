#!/bin/sh
# decode_cli_test.sh — `softrnic decode` end to end (CTest wire_decode_cli).
#  1. Every vector capture: exit 0, one icrc-ok line per frame, no BAD,
#     and a summary whose counts match.
#  2. A copy of rc_write.pcap with one payload byte flipped (and one with a
#     bad TVer): exit non-zero, icrc-BAD / malformed reported.
# usage: decode_cli_test.sh SOFTRNIC_BIN VECTOR_DIR SCRATCH_DIR
set -u
bin=$1 vectors=$2 scratch=$3
fail=0
out=$scratch/decode_cli.out

for f in "$vectors"/*.pcap; do
	if ! "$bin" decode "$f" >"$out" 2>&1; then
		echo "FAIL: decode $f exited non-zero"; fail=1
	fi
	ok=$(grep -c ' icrc-ok$' "$out")
	lines=$(grep -c '^[0-9]' "$out")
	if [ "$ok" -eq 0 ] || [ "$ok" -ne "$lines" ] || grep -q 'icrc-BAD\|malformed' "$out"; then
		echo "FAIL: $f: $ok icrc-ok of $lines packet lines"; fail=1
	fi
	if ! grep -q "^summary: frames $ok, packets $ok, ok $ok, bad 0, skipped 0\$" "$out"; then
		echo "FAIL: $f: summary wrong: $(tail -n 1 "$out")"; fail=1
	fi
done

# Corrupt frame 2 of rc_write.pcap (a 1024-byte WRITE MIDDLE): the global
# header is 24 bytes, frame 1 is 16 + caplen; flip a byte 100 bytes into
# frame 2's data, well inside the payload.
src=$vectors/rc_write.pcap
bad=$scratch/decode_cli_corrupt.pcap
cp "$src" "$bad" && chmod u+w "$bad"
caplen1=$(od -An -tu4 -j 32 -N 4 "$src" | tr -d ' ')
off=$((24 + 16 + caplen1 + 16 + 100))
byte=$(od -An -tu1 -j "$off" -N 1 "$src" | tr -d ' ')
printf "$(printf '\\%03o' $((byte ^ 255)))" | dd of="$bad" bs=1 seek="$off" conv=notrunc 2>/dev/null
if "$bin" decode "$bad" >"$out" 2>&1; then
	echo "FAIL: corrupted capture decoded with exit 0"; fail=1
fi
if ! grep -q '^2 .* icrc-BAD$' "$out" || [ "$(grep -c 'icrc-BAD' "$out")" -ne 1 ]; then
	echo "FAIL: expected exactly frame 2 icrc-BAD"; cat "$out"; fail=1
fi
grep -q '^summary: frames 32, packets 32, ok 31, bad 1, skipped 0$' "$out" || { echo "FAIL: corrupt summary"; fail=1; }
# -q prints only the bad packet and the summary.
"$bin" decode -q "$bad" >"$out" 2>&1
[ "$(wc -l <"$out")" -eq 2 ] || { echo "FAIL: -q printed $(wc -l <"$out") lines"; fail=1; }

# TVer 1 in frame 1 (BTH byte 1 at frame offset 14 + 20 + 8 + 1): malformed.
cp "$src" "$bad"
off=$((24 + 16 + 43))
printf '\001' | dd of="$bad" bs=1 seek="$off" conv=notrunc 2>/dev/null
if "$bin" decode "$bad" >"$out" 2>&1 || ! grep -q '^1 malformed WIRE_E_TVER' "$out"; then
	echo "FAIL: TVer corruption not reported"; cat "$out"; fail=1
fi
# Not a pcap: error, non-zero.
if "$bin" decode "$0" >"$out" 2>&1 || ! grep -q 'not a pcap file' "$out"; then
	echo "FAIL: non-pcap input"; fail=1
fi
rm -f "$bad" "$out"
[ $fail -eq 0 ] && echo "decode_cli_test: all checks passed"
exit $fail
