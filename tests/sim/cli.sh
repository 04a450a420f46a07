#!/usr/bin/env bash
# cli.sh — the command line of `softrnic sim` (src/tools/sim_cli.c):
#   - `sim --help` and every subcommand's --help / -h print their help on
#     stdout and exit 0 before doing anything (no output folder made, no
#     file opened: `sim run --help` does not read a config named --help);
#   - a refused value is one line on stderr naming it and why, exit 2,
#     and nothing runs (`sim exp gbn-loss --seed abc` does not run with
#     seed 0), for numbers that are not whole, negative, out of range,
#     unknown options, a missing value, a missing or extra argument;
#   - values it accepts still run (a topology, a flow file, an experiment
#     with its seed in the summary).
# usage: cli.sh SOFTRNIC
set -euo pipefail
SOFTRNIC=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sim cli: $*" >&2; exit 1; }
cd "$tmp"

helps() {   # helps ARGS...: exit 0, help on stdout, nothing on stderr, no file made
	local rc=0
	"$SOFTRNIC" sim "$@" >out 2>err || rc=$?
	[ "$rc" = 0 ] || fail "sim $*: exit $rc, not 0"
	grep -q '^usage: softrnic sim' out || fail "sim $*: no usage line on stdout: $(head -1 out)"
	[ ! -s err ] || fail "sim $*: wrote to stderr: $(cat err)"
	[ "$(ls)" = "$(printf 'err\nout')" ] || fail "sim $*: made files: $(ls | tr '\n' ' ')"
}
helps --help
helps -h
for sub in run topo gen fct exp; do
	helps "$sub" --help
	helps "$sub" -h
done
helps run --help config.txt
helps run config.txt --out somewhere -h
helps exp gbn-loss --seed 3 --help
grep -q 'gbn-loss' <("$SOFTRNIC" sim exp --help) || fail "sim exp --help does not list the experiments"

refused() {   # refused WORD ARGS...: exit 2, one line on stderr holding WORD, nothing on stdout, no file made
	local word=$1 rc=0
	shift
	"$SOFTRNIC" sim "$@" >out 2>err || rc=$?
	[ "$rc" = 2 ] || fail "sim $*: exit $rc, not 2"
	[ "$(wc -l <err)" = 1 ] || fail "sim $*: not one line on stderr: $(cat err)"
	grep -qF -- "$word" err || fail "sim $*: the message does not name $word: $(cat err)"
	[ ! -s out ] || fail "sim $*: wrote to stdout"
	[ "$(ls)" = "$(printf 'err\nout')" ] || fail "sim $*: made files: $(ls | tr '\n' ' ')"
}
refused "abc" exp gbn-loss --seed abc
refused "-1" exp gbn-loss --seed -1
refused "1x" exp gbn-loss --seed 1x
refused "18446744073709551616" exp gbn-loss --seed 18446744073709551616
refused "--seed" exp gbn-loss --seed
refused "--bogus" exp gbn-loss --bogus
refused "nope" exp nope
refused "--threads" run config.txt --threads 0
refused "two" run config.txt two
refused "2.5" run config.txt --flows 2.5
refused "--sample-us" run config.txt --sample-us ''
refused "CONFIG" run
refused "1.5" gen --cdf "$root/data/cdf/websearch.txt" --hosts 4 --load 1.5
refused "--hosts" gen --cdf "$root/data/cdf/websearch.txt" --hosts 1 --load 0.5
refused "--load" gen --cdf "$root/data/cdf/websearch.txt" --hosts 4
refused "fast" topo fat-tree 4 --rate fast
refused "7" topo fat-tree 7
refused "ring" topo ring 3
refused "K" topo fat-tree
refused "200" fct fct.txt --step 200
refused "bogus" bogus
refused "command" 

# Accepted values still do their work.
"$SOFTRNIC" sim topo dumbbell 2 --core-rate 40Gbps --delay 2us >topo.txt || fail "sim topo dumbbell"
[ "$(head -1 topo.txt)" = "6 2 5" ] || fail "sim topo dumbbell 2: header $(head -1 topo.txt)"
grep -q '^4 5 40Gbps 2us 0$' topo.txt || fail "sim topo dumbbell: the bottleneck link"
"$SOFTRNIC" sim gen --cdf "$root/data/cdf/websearch.txt" --hosts 4 --load 0.3 --time 0.001 --seed 9 \
	>flows.txt 2>/dev/null || fail "sim gen"
[ "$(head -1 flows.txt)" -gt 0 ] || fail "sim gen: no flows"
"$SOFTRNIC" sim exp gbn-loss --quick --seed 12345678901 --out exp >/dev/null || fail "sim exp gbn-loss"
grep -q 'seed 12345678901' exp/summary.txt || fail "sim exp: the seed is not the one given: $(head -1 exp/summary.txt)"
echo "sim cli: ok"
