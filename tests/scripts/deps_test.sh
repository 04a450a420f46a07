#!/usr/bin/env bash
# deps_test.sh — runs scripts/deps.sh against stub dpkg-query, apt-get, sudo
# and id, and checks the exact commands it runs: as root with nothing
# installed, as root with everything installed (the install line still runs:
# CI's check of the path a new machine takes), as a user through sudo, and
# as a user with everything installed (no apt at all).  A deps.sh that builds
# a broken install line (say "-E apt-get" with an empty sudo) fails here.
#   deps_test.sh SOURCE_DIR
set -euo pipefail
src=$(cd "${1:?usage: deps_test.sh SOURCE_DIR}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stub=$work/bin
mkdir -p "$stub"
log=$work/log

# Each stub appends one line: its name, the DEBIAN_FRONTEND it saw, its argv.
cat >"$stub/apt-get" <<'S'
#!/usr/bin/env bash
echo "apt-get [${DEBIAN_FRONTEND:-}] $*" >>"$STUB_LOG"
S
cat >"$stub/sudo" <<'S'
#!/usr/bin/env bash
echo "sudo $*" >>"$STUB_LOG"
while [ "${1#--}" != "$1" ]; do
  case $1 in --preserve-env=*) ;; *) echo "sudo: unknown option $1" >&2; exit 1 ;; esac
  shift
done
exec "$@"
S
cat >"$stub/id" <<'S'
#!/usr/bin/env bash
[ "$1" = "-u" ] && { echo "$STUB_UID"; exit 0; }
exit 1
S
cat >"$stub/dpkg-query" <<'S'
#!/usr/bin/env bash
if [ "$STUB_INSTALLED" = 1 ]; then printf 'install ok installed'; exit 0; fi
echo "dpkg-query: no packages found matching ${*: -1}" >&2
exit 1
S
chmod +x "$stub"/*

packages=$(sed -n '/^PACKAGES=(/,/^)/p' "$src/scripts/deps.sh" |
  sed -e '1d;$d' -e 's/#.*//' | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
[ -n "$packages" ] || { echo "FAIL: no package list read from deps.sh"; exit 1; }
install_line="install -y -q --no-install-recommends $packages"

fails=0
run_case() {
  local name=$1 uid=$2 installed=$3 expected=$4
  : >"$log"
  if ! STUB_LOG=$log STUB_UID=$uid STUB_INSTALLED=$installed DEBIAN_FRONTEND= \
       PATH="$stub:$PATH" bash "$src/scripts/deps.sh" >"$work/out" 2>&1; then
    echo "FAIL $name: deps.sh exited non-zero:"; sed 's/^/  /' "$work/out"
    fails=$((fails + 1)); return
  fi
  if ! diff -u <(printf '%s' "$expected") "$log" >"$work/diff"; then
    echo "FAIL $name: commands differ (expected, then what ran):"; sed 's/^/  /' "$work/diff"
    fails=$((fails + 1)); return
  fi
  echo "ok   $name"
}

run_case "root, nothing installed" 0 0 \
"apt-get [noninteractive] update -q
apt-get [noninteractive] $install_line
"
run_case "root, everything installed" 0 1 \
"apt-get [noninteractive] update -q
apt-get [noninteractive] $install_line
"
run_case "user through sudo, nothing installed" 1000 0 \
"sudo --preserve-env=DEBIAN_FRONTEND apt-get update -q
apt-get [noninteractive] update -q
sudo --preserve-env=DEBIAN_FRONTEND apt-get $install_line
apt-get [noninteractive] $install_line
"
run_case "user, everything installed" 1000 1 ""

[ "$fails" -eq 0 ] && echo "deps_test: all cases pass" || { echo "deps_test: $fails failed"; exit 1; }
