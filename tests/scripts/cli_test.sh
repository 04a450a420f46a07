#!/usr/bin/env bash
# cli_test.sh — the command line of softrnic, softrnic-kv and softrnic-nvmf
# (tools/cli_parse.h), walked from the commands the program lists itself
# (`softrnic help --commands`), so a new command is covered with no
# change here (CTest cli_help, label pure: no device, no network).
#  1. `--help` and `-h` of the program and of every command path, and
#     `help PATH`: exit 0, the usage on stdout, nothing on stderr; the
#     top-level help lists every path; softrnic-kv and softrnic-nvmf the
#     same for theirs.
#  2. --help wins before anything is done: `kv get --server 127.0.0.1:1
#     KEY --help` connects nowhere, `decode /nonexistent --help` opens
#     nothing.
#  3. --version and -V: "softrnic VERSION" (CMake's project version).
#  4. Each refused value: exit 2, nothing on stdout, exactly one line on
#     stderr naming the value and why.
#  5. softrnic(1) names every command path and every SOFTRNIC_* variable
#     of src/runtime/env_config.c (and each DCQCN parameter); the bash
#     completion completes commands and options.
# usage: cli_test.sh SOFTRNIC SOFTRNIC_KV SOFTRNIC_NVMF VERSION SOURCE_DIR
set -u
bin=$1 kv=$2 nvmf=$3 version=$4 src=$5
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL: $*"; fail=1; }

# run PROG ARGS...: rc, out, err set.
run() {
	timeout 10 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	out=$(cat "$tmp/out")
	err=$(cat "$tmp/err")
}

# help_ok NAME PROG ARGS...: a help answer.
help_ok() {
	local name=$1
	shift
	run "$@"
	if [ "$rc" -ne 0 ] || [ -z "$out" ] || [ -n "$err" ]; then
		bad "$* -> exit $rc, stdout ${#out} bytes, stderr: $err"
	elif ! grep -q "^usage: $name" <<<"$out"; then
		bad "$*: stdout does not start with 'usage: $name': $(head -n 1 <<<"$out")"
	fi
}

# refused PROG ARGS... -- WANT: exit 2, stdout empty, one stderr line holding WANT.
refused() {
	local args=() want
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	want=$2
	run "${args[@]}"
	if [ "$rc" -ne 2 ] || [ -n "$out" ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF -- "$want" <<<"$err"; then
		bad "${args[*]} -> exit $rc, stdout '$out', stderr '$err'; want exit 2 and one line with '$want'"
	fi
}

# 1. Every command path.
run "$bin" help --commands
paths=$out
[ "$rc" -eq 0 ] && [ -z "$err" ] && [ "$(wc -l <<<"$paths")" -ge 20 ] || bad "help --commands: exit $rc, $(wc -l <<<"$paths") paths"
for p in "kv mget" "kv bench" "sim run" "sim topo" "sim gen" "sim fct" "sim exp" "nvmf perf" "stats"; do
	grep -qxF "$p" <<<"$paths" || bad "help --commands lacks '$p'"
done
run "$bin" --help
top=$out
for p in "" $(tr ' ' '+' <<<"$paths"); do
	p=${p//+/ }
	for h in --help -h; do
		# shellcheck disable=SC2086
		help_ok "softrnic${p:+ $p}" "$bin" $p $h
	done
	# shellcheck disable=SC2086
	[ -z "$p" ] || help_ok "softrnic $p" "$bin" help $p
	[ -z "$p" ] || grep -qE "^  $p( |$)" <<<"$top" || bad "softrnic --help does not list '$p'"
done
for prog in kv nvmf; do
	exe=$kv
	[ $prog = nvmf ] && exe=$nvmf
	for h in --help -h; do
		help_ok "softrnic-$prog" "$exe" $h
		for p in $(sed -n "s/^$prog //p" <<<"$paths"); do
			help_ok "softrnic-$prog $p" "$exe" "$p" $h
		done
	done
done
run "$bin" stats --help
grep -qF -- "-w, --watch" <<<"$out" && grep -qF -- "-n, --count COUNT" <<<"$out" || bad "stats --help lacks -w, -n: $out"

# 2. Help before anything else.
help_ok "softrnic kv get" "$bin" kv get --server 127.0.0.1:1 some-key --help
help_ok "softrnic kv get" "$bin" kv get --port-typo x -h
help_ok "softrnic decode" "$bin" decode /nonexistent.pcap --help
help_ok "softrnic nvmf perf" "$bin" nvmf perf --qd 100000 --help
help_ok "softrnic-kv check-aof" "$kv" check-aof --help

# 3. The version.
for v in --version -V; do
	run "$bin" $v
	[ "$rc" -eq 0 ] && [ "$out" = "softrnic $version" ] && [ -z "$err" ] || bad "softrnic $v -> exit $rc, '$out', '$err'"
done
run "$kv" --version
[ "$rc" -eq 0 ] && [ "$out" = "softrnic-kv $version" ] || bad "softrnic-kv --version -> exit $rc, '$out'"

# 4. Refusals: one line, exit 2.
refused "$bin" kv serve --port 99999 -- "softrnic kv serve: --port 99999: not a port (1-65535)"
refused "$kv" serve --port 99999 -- "softrnic-kv serve: --port 99999: not a port (1-65535)"
refused "$bin" kv serve --port=0 -- "--port 0: not a port (1-65535)"
refused "$bin" kv serve --mem 10000g -- "softrnic kv serve: --mem 10000g: more than"
refused "$bin" kv serve --mem 12x -- "--mem 12x: not a size"
refused "$bin" kv serve --appendfsync sometimes -- "--appendfsync sometimes: not one of always, everysec, no"
refused "$bin" kv serve --port -- "--port needs a value"
refused "$bin" kv get -- "softrnic kv get: "
refused "$bin" kv get a b -- "unexpected argument 'b'"
refused "$bin" kv incr k 1x -- "DELTA 1x: not a whole number"
refused "$bin" kv bench --clients 0 -- "--clients 0: not in 1-256"
refused "$bin" kv bench --threads 4 --clients 2 -- "--threads 4: more than --clients 2"
refused "$bin" nvmf serve --block-size 1000 -- "softrnic nvmf serve: --block-size 1000: not a power of two"
refused "$bin" nvmf serve --block-size 8k -- "--block-size 8k: more than 4k"
refused "$nvmf" serve --nqn n --mem 1m --file f -- "one of them"
refused "$bin" nvmf perf -- "softrnic nvmf perf: no target given"
refused "$bin" nvmf discover -- "softrnic nvmf discover: no target given"
refused "$nvmf" perf --nqn x --rw sideways -- "--rw sideways: not one of read, write, randread, randwrite"
refused "$bin" nvmf perf --nqn x --time 0 -- "--time 0: not a time in s"
refused "$bin" sim exp gbn-loss --seed abc -- "softrnic sim exp: --seed abc: not a whole number"
refused "$bin" sim run cfg.txt --threads many -- "--threads many: not"
refused "$bin" stats bogus -- "softrnic stats: PID bogus: not a process id"
refused "$bin" stats -n 0 -- "--count 0: not in"
refused "$bin" decode --bogus x.pcap -- "softrnic decode: unknown option --bogus"
refused "$bin" decode -q -- "softrnic decode: "
refused "$bin" bogus -- "softrnic: unknown command 'bogus'"
refused "$bin" -- "softrnic: no command given"
refused "$bin" kv -- "softrnic kv: no command given"
refused "$bin" kv bogus -- "softrnic kv: unknown command 'bogus'"
refused "$bin" run -- "softrnic run: "

# 5. The manual page and the completion.
man=$src/docs/softrnic.1
while read -r p; do
	grep -qF -- "$p" "$man" || bad "softrnic.1 does not name '$p'"
done <<<"$paths"
for v in $(sed -n 's/^[[:space:]]*\(T\|TEST\)("\([A-Z0-9_]*\)".*/\2/p' "$src/src/runtime/env_config.c"); do
	grep -q "SOFTRNIC_$v" "$man" || bad "softrnic.1 does not name SOFTRNIC_$v"
done
for v in $(sed -n 's/^[[:space:]]*PARAM(\([a-z_]*\),.*/\1/p' "$src/src/rnic/dcqcn.c" | tr a-z A-Z); do
	grep -qw "$v" "$man" || bad "softrnic.1 does not name SOFTRNIC_CC_$v"
done
[ "$(sed -n 's/^[[:space:]]*\(T\|TEST\)("\([A-Z0-9_]*\)".*/\2/p' "$src/src/runtime/env_config.c" | wc -l)" -ge 30 ] ||
	bad "env_config.c's table not found by the pattern"
comp=$(bash -c '
	source "$1"
	c() { COMP_WORDS=("$2" "${@:3}"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _softrnic; echo "${COMPREPLY[*]}"; }
	c x "$2" kv ""; c x "$2" kv serve --p; c x "$2" ""' _ "$src/scripts/softrnic.bash-completion" "$bin")
[ "$(sed -n 1p <<<"$comp")" = "serve get set mget del incr stats bench check-aof" ] || bad "completion of 'kv ': $(sed -n 1p <<<"$comp")"
[ "$(sed -n 2p <<<"$comp")" = "--port --probe-ms" ] || bad "completion of 'kv serve --p': $(sed -n 2p <<<"$comp")"
grep -qw nvmf <<<"$(sed -n 3p <<<"$comp")" || bad "completion of '': $(sed -n 3p <<<"$comp")"

[ $fail -eq 0 ] && echo "cli_test: all checks passed ($(wc -l <<<"$paths") command paths)"
exit $fail
