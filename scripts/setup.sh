#!/usr/bin/env bash
# setup.sh — the newcomer's first command: install the Debian packages,
# build softrnic, and run the demo (scripts/demo.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh release
exec bash scripts/demo.sh build
