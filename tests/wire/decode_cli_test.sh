#!/bin/sh
# decode_cli_test.sh — `softrnic decode` end to end (CTest wire_decode_cli).
#  1. Every vector capture: exit 0, one icrc-ok line per frame, no BAD,
#     and a summary whose counts match.
#  2. A copy of rc_write.pcap with one payload byte flipped (and one with a
#     bad TVer): exit non-zero, icrc-BAD / malformed reported.
#  3. rc_rdmacm_connect.pcap: the CM MADs are named, in order, with their
#     key fields.
#  4. UDP checksum: frame 1 of rc_write.pcap with the pseudo-header sum as
#     its checksum (what a capture on a sender with checksum offload
#     shows): ICRC checked, "icrc-ok udp-csum-partial", exit 0; with a
#     wrong checksum: malformed WIRE_E_UDP_CSUM, exit non-zero.
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
# CM MADs: REQ, REP, RTU for each of the two connections, then DREQ, DREP
# for each, with the fields of the first REQ as tshark shows them.
cm=$vectors/rc_rdmacm_connect.pcap
"$bin" decode "$cm" >"$out" 2>&1
seq=$(sed -n 's/.* len=256 CM \([A-Z_]*\) .*/\1/p' "$out" | tr '\n' ' ')
if [ "$seq" != "REQ REP RTU REQ REP RTU DREQ DREP DREQ DREP " ]; then
	echo "FAIL: CM messages in $cm: '$seq'"; fail=1
fi
if ! grep -q '^1 .* CM REQ tid=0x00000002288af21d lcid=0x1df28a28 sid=0x0000000001060000+18515 RC qpn=0x000042 psn=0x9f9838 mtu=1024 .* ip 10.77.0.12:41091->10.77.0.11:18515 icrc-ok$' "$out" ||
   ! grep -q '^2 .* CM REP .* lcid=0x813b70b3 rcid=0x1df28a28 qpn=0x000042 psn=0x73137b .* icrc-ok$' "$out" ||
   ! grep -q '^61 .* CM DREQ .* qpn=0x000043 .* icrc-ok$' "$out"; then
	echo "FAIL: CM fields in $cm"; grep ' CM ' "$out"; fail=1
fi

# UDP checksum of frame 1 of rc_write.pcap: IP header at 24 + 16 + 14,
# addresses at +12..+19, UDP length at +24, checksum at +26.
ip=$((24 + 16 + 14))
set -- $(od -An -tu1 -j $((ip + 12)) -N 8 "$src") $(od -An -tu1 -j $((ip + 24)) -N 2 "$src")
sum=$(( ($1 << 8 | $2) + ($3 << 8 | $4) + ($5 << 8 | $6) + ($7 << 8 | $8) + 17 + ($9 << 8 | ${10}) ))
while [ $sum -gt 65535 ]; do sum=$(( (sum & 65535) + (sum >> 16) )); done
put_csum() {
	cp "$src" "$bad" && chmod u+w "$bad"
	printf "$(printf '\\%03o\\%03o' $(($1 >> 8)) $(($1 & 255)))" |
		dd of="$bad" bs=1 seek=$((ip + 26)) conv=notrunc 2>/dev/null
}
put_csum $sum
if ! "$bin" decode "$bad" >"$out" 2>&1; then
	echo "FAIL: partial UDP checksum: exit non-zero"; cat "$out"; fail=1
fi
if ! grep -q '^1 .* icrc-ok udp-csum-partial$' "$out" || [ "$(grep -c 'udp-csum-partial' "$out")" -ne 1 ] ||
   ! grep -q '^summary: frames 32, packets 32, ok 32, bad 0, skipped 0$' "$out"; then
	echo "FAIL: partial UDP checksum not reported as udp-csum-partial"; cat "$out"; fail=1
fi
put_csum $(( (sum + 1) & 65535 ))
if "$bin" decode "$bad" >"$out" 2>&1 || ! grep -q '^1 malformed WIRE_E_UDP_CSUM' "$out" ||
   grep -q 'udp-csum-partial' "$out"; then
	echo "FAIL: wrong UDP checksum not reported bad"; cat "$out"; fail=1
fi

# Not a pcap: error, non-zero.
if "$bin" decode "$0" >"$out" 2>&1 || ! grep -q 'not a pcap file' "$out"; then
	echo "FAIL: non-pcap input"; fail=1
fi
rm -f "$bad" "$out"
[ $fail -eq 0 ] && echo "decode_cli_test: all checks passed"
exit $fail
