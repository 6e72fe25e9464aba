#!/usr/bin/env bash
# An MPI-IO file open across a checkpoint: io_ckpt.sh UCHARMRUN PROGRAM FROM TO. A run of 4
# ranks on FROM PEs stops after its checkpoint with the file open; a run on TO PEs restarts
# from it and finishes the file (io_ckpt.c).
set -euo pipefail
run=$1 prog=$2 from=$3 to=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/ampi-io-ckpt.XXXXXX")
trap 'rm -rf "$dir"' EXIT
stop=$("$run" -n "$from" --timeout 50 "$prog" "$dir" +vp 4 2>&1)
grep -q "stopped with the file open" <<<"$stop" || { echo "did not stop:"; echo "$stop"; exit 1; }
out=$(IO_CKPT_CONTINUE=1 "$run" -n "$to" --timeout 50 "$prog" "$dir" +restart "$dir/ck" 2>&1)
echo "$out"
grep -q "io_ckpt: ok (4 ranks)" <<<"$out" || exit 1
[ ! -e "$dir/data" ] || { echo "the file is still there after MPI_MODE_DELETE_ON_CLOSE"; exit 1; }
left=$(find "$dir" -maxdepth 1 -name '.data.shfp.*')
[ -z "$left" ] || { echo "hidden files left: $left"; exit 1; }
