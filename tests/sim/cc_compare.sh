#!/usr/bin/env bash
# cc_compare.sh — `softrnic sim exp cc-compare --quick` (HPCC's 320-host
# fat-tree, the first 600 flows of its 30%-load web-search file, under
# DCQCN, HPCC, TIMELY and DCTCP as HPCC's run.py configures them) for two
# seeds, asserting the HPCC paper's qualitative result in each:
#   - every flow of every run finishes, none fails, nothing is dropped;
#   - HPCC gives the short flows (below 10 KB, and 10-100 KB) the lowest
#     p95 FCT slowdown of the four;
#   - HPCC keeps the switch queues shortest (p99 of the queues holding
#     packets);
# and the first seed, run again, gives the same files byte for byte.
# usage: cc_compare.sh SOFTRNIC
set -euo pipefail
SOFTRNIC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sim cc-compare: $*" >&2; exit 1; }
export SOFTRNIC_SIM_PROGRESS=0

for seed in 1 2; do
	out=$tmp/seed$seed
	"$SOFTRNIC" sim exp cc-compare --quick --seed "$seed" --out "$out" > "$tmp/log$seed" ||
		{ cat "$tmp/log$seed" >&2; fail "seed $seed: sim exp failed"; }
	[ "$(grep -c '^30,' "$out/runs.csv")" -eq 4 ] || fail "seed $seed: not 4 runs in runs.csv"
	awk -F, -v seed="$seed" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		{
			cc = $col["cc"]
			if ($col["done"] != $col["flows"] || $col["failed"] != 0 || $col["drops"] != 0) {
				printf "seed %s: %s finished %s of %s flows, %s failed, %s drops\n", seed, cc,
					$col["done"], $col["flows"], $col["failed"], $col["drops"]; bad = 1
			}
			if ($col["queue_samples"] == 0) { printf "seed %s: %s: no queue sampled\n", seed, cc; bad = 1 }
			s[cc] = $col["lt10k_p95"]; m[cc] = $col["10k_100k_p95"]; q[cc] = $col["queue_p99"]
		}
		END {
			if (!("HPCC" in s)) { print "no HPCC run"; exit 1 }
			for (cc in s) {
				if (cc == "HPCC") continue
				if (!(s["HPCC"] < s[cc])) { printf "seed %s: p95 slowdown below 10 KB: HPCC %s, %s %s\n", seed, s["HPCC"], cc, s[cc]; bad = 1 }
				if (!(m["HPCC"] < m[cc])) { printf "seed %s: p95 slowdown 10-100 KB: HPCC %s, %s %s\n", seed, m["HPCC"], cc, m[cc]; bad = 1 }
				if (!(q["HPCC"] < q[cc])) { printf "seed %s: queue p99: HPCC %s, %s %s\n", seed, q["HPCC"], cc, q[cc]; bad = 1 }
			}
			exit bad
		}' "$out/runs.csv" >&2 || fail "seed $seed: the paper's ordering does not hold (runs.csv above)"
	sed 's/^/sim cc-compare: /' "$out/summary.txt"
done
"$SOFTRNIC" sim exp cc-compare --quick --seed 1 --out "$tmp/again" > /dev/null || fail "seed 1 again: sim exp failed"
for f in runs.csv cc-compare.csv summary.txt l30_hp95/fct.txt l30_dcqcn/flows.csv; do
	cmp -s "$tmp/seed1/$f" "$tmp/again/$f" || fail "seed 1: $f differs between two runs"
done
echo "sim cc-compare: HPCC leads on short-flow tails and queues for seeds 1 and 2; seed 1 replays byte for byte"
