#!/usr/bin/env bash
# build.sh — configure and build one flavour of softrnic with CMake + Ninja.
#   scripts/build.sh [release|clang|asan|fuzz]   (default: release)
# Build folders: build/ (gcc), build-clang/, build-asan/ (ASan+UBSan).
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
jobs=$(nproc)
case "$flavour" in
  release) dir=build;       args=(-DCMAKE_C_COMPILER=gcc) ;;
  clang)   dir=build-clang; args=(-DCMAKE_C_COMPILER=clang) ;;
  asan)    dir=build-asan;  args=(-DCMAKE_C_COMPILER=gcc -DSOFTRNIC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug) ;;
  *) echo "usage: $0 [release|clang|asan]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja "${args[@]}" >/dev/null
ninja -C "$dir" -j "$jobs"
