#!/usr/bin/env bash
# Installs the build into a scratch prefix, builds package/ against it with
# find_package(ucharm), and runs the result on 2 PEs with the installed launcher.
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
out=$("$work/prefix/bin/ucharmrun" -n 2 --timeout 30 "$work/consumer/consumer")
echo "$out"
grep -q "PE 1 got .hi. from PE 0" <<<"$out"
grep -q "PE 0 got .hi. from PE 1" <<<"$out"
