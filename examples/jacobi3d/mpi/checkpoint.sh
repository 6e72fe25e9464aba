#!/usr/bin/env bash
# Jacobi3D (MPI) under AMPI, checkpoint/restart: an uninterrupted run, then a run that writes
# a checkpoint every 4 iterations and stops after the one at iteration 8, restarted with
# +restart on TO PEs; the restarted run must end with the same checksum and verify.
#   checkpoint.sh UCHARMRUN JACOBI3D_AMPI FROM TO RANKS WORKDIR
set -uo pipefail
R=$1 J=$2 from=$3 to=$4 ranks=$5 work=$6
args=(-x 24 -y 16 -z 16 --iters 12 --warmup 3 --kernels cpu --verify +vp "$ranks")
dir=$work/ckpt
rm -rf "$work" && mkdir -p "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
checksum() { grep -o '^checksum: .*' "$1"; }

"$R" -n "$from" --timeout 60 "$J" "${args[@]}" > "$work/plain.log" 2>&1 || { cat "$work/plain.log"; fail "uninterrupted run"; }
want=$(checksum "$work/plain.log") || { cat "$work/plain.log"; fail "no checksum in the uninterrupted run"; }

"$R" -n "$from" --timeout 60 "$J" "${args[@]}" --checkpoint-every 4 --checkpoint-dir "$dir" \
  --stop-after-checkpoint 8 > "$work/stop.log" 2>&1 || { cat "$work/stop.log"; fail "run with checkpoints"; }
cat "$work/stop.log"
grep -q 'checkpoint at iteration 4' "$work/stop.log" || fail "no checkpoint at iteration 4"
grep -q 'stopped after the checkpoint at iteration 8' "$work/stop.log" || fail "the run did not stop at iteration 8"
grep -q '^checksum:' "$work/stop.log" && fail "the stopped run went on to the end"

"$R" -n "$to" --timeout 60 "$J" +restart "$dir" > "$work/restart.log" 2>&1 || { cat "$work/restart.log"; fail "restart"; }
cat "$work/restart.log"
grep -q "restarted from $dir at iteration 8" "$work/restart.log" || fail "no restart line"
grep -q 'checkpoint at iteration 12' "$work/restart.log" || fail "the restarted run wrote no further checkpoint"
got=$(checksum "$work/restart.log") || fail "no checksum after the restart"
grep -q '^verify: ok' "$work/restart.log" || fail "the restarted run does not verify"
[ "$got" = "$want" ] || fail "uninterrupted '$want', restarted '$got'"
echo "ok: $want, $ranks ranks on $from PEs uninterrupted and $from -> $to PEs restarted"
