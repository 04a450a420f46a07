#!/bin/sh
# run.sh — build the wire fuzz targets with clang + libFuzzer in their own
# build directory, seed them from the vector captures, and run each for a
# share of a bounded total time.  Exits non-zero if any target finds a
# crash, leak, sanitizer report or round-trip violation (the reproducer is
# left in fuzz/artifacts/ of the build directory).
#
# usage: fuzz/run.sh [TOTAL_SECONDS]      (default 60, split over the targets)
# env:   SOFTRNIC_VECTORS  capture dir (default tests/vectors/rxe)
#        FUZZ_BUILD_DIR    build dir   (default build-fuzz in the source root)
set -eu
total=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
vectors=${SOFTRNIC_VECTORS:-$root/tests/vectors/rxe}
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
targets="fuzz_wire_eth fuzz_wire_ip fuzz_wire_ib fuzz_wire_mad fuzz_cm fuzz_device fuzz_kv fuzz_nvmf fuzz_local_ring fuzz_xdp_frame"
per=$((total / $(echo $targets | wc -w)))
[ "$per" -ge 1 ] || per=1

mkdir -p "$build"
# A failing build says why (the log's tail), not just a non-zero status.
if ! { CC=clang cmake -S "$root" -B "$build" -G Ninja -DSOFTRNIC_FUZZ=ON \
	-DSOFTRNIC_LAYERS="src/wire;fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
	ninja -C "$build" -j2 $targets fuzz_seed_corpus; } >"$build/build.log" 2>&1; then
	echo "fuzz: build failed (log: $build/build.log)"
	tail -n 30 "$build/build.log"
	exit 1
fi

work=$build/fuzz
rm -rf "$work/seeds"
mkdir -p "$work/seeds/eth" "$work/seeds/ip" "$work/seeds/ib" "$work/seeds/mad" "$work/artifacts"
"$build/fuzz/fuzz_seed_corpus" "$work/seeds" "$vectors"/*.pcap >/dev/null
# MAD seeds: the 256-byte payload of every UD SEND ONLY (opcode 0x64) of
# 280 bytes (BTH 12 + DETH 8 + MAD + ICRC 4) among the IB seeds.
for f in "$work/seeds/ib"/*; do
	[ "$(wc -c <"$f")" -eq 280 ] && [ "$(od -An -tx1 -N1 "$f" | tr -d ' ')" = 64 ] || continue
	tail -c +21 "$f" | head -c 256 >"$work/seeds/mad/${f##*/}"
done

status=0
for t in $targets; do
	# Seeds by input kind; the CM state machine eats MADs too, the
	# device target IB packets (as raw bytes to cut up and mutate).
	kind=${t#fuzz_wire_}
	[ "$t" = fuzz_cm ] && kind=mad
	[ "$t" = fuzz_device ] && kind=ib
	[ "$t" = fuzz_kv ] && kind=ib           # any bytes will do as a start
	[ "$t" = fuzz_nvmf ] && kind=ib
	[ "$t" = fuzz_local_ring ] && kind=ib
	[ "$t" = fuzz_xdp_frame ] && kind=eth
	corpus=$work/corpus/${t#fuzz_}
	mkdir -p "$corpus"
	echo "== $t: ${per}s"
	if ! "$build/fuzz/$t" -max_total_time="$per" -max_len=4400 -print_final_stats=0 \
		-artifact_prefix="$work/artifacts/$t-" "$corpus" "$work/seeds/$kind" \
		>"$work/$t.log" 2>&1; then
		echo "FINDING in $t (log: $work/$t.log)"
		tail -n 30 "$work/$t.log"
		status=1
	else
		grep -E '^#[0-9]+.*DONE|Done [0-9]+ runs' "$work/$t.log" | tail -n 1
	fi
done
exit $status
