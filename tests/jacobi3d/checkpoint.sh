#!/usr/bin/env bash
# Jacobi3D checkpoint/restart: an uninterrupted run, then a run on FROM PEs that stops after
# its checkpoint at iteration 8, restarted with +restart on TO PEs; both must print the same
# checksum (bits), and the restarted run must also pass --verify (taken from the checkpoint).
#   checkpoint.sh UCHARMRUN JACOBI3D FROM TO MODE WORKDIR
set -uo pipefail
R=$1 J=$2 from=$3 to=$4 mode=$5 work=$6
args=(-x 24 -y 18 -z 12 --blocks 12 --iters 15 --warmup 3 --mode "$mode" --verify)
dir=$work/ckpt
rm -rf "$work" && mkdir -p "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
checksum() { grep -o 'checksum: [0-9a-f]*' "$1"; }

"$R" -n "$from" --timeout 60 "$J" "${args[@]}" > "$work/plain.log" 2>&1 || { cat "$work/plain.log"; fail "uninterrupted run"; }
want=$(checksum "$work/plain.log") || fail "no checksum in the uninterrupted run"

"$R" -n "$from" --timeout 60 "$J" "${args[@]}" --checkpoint-every 4 --checkpoint-dir "$dir" \
  --stop-after-checkpoint 8 > "$work/stop.log" 2>&1 || { cat "$work/stop.log"; fail "run with checkpoints"; }
cat "$work/stop.log"
grep -q 'stopped after the checkpoint at iteration 8' "$work/stop.log" || fail "the run did not stop at iteration 8"
grep -q 'checksum:' "$work/stop.log" && fail "the stopped run went on to the end"
test -f "$dir/manifest" || fail "no manifest in $dir"

"$R" -n "$to" --timeout 60 "$J" +restart "$dir" > "$work/restart.log" 2>&1 || { cat "$work/restart.log"; fail "restart"; }
cat "$work/restart.log"
grep -q "restarted from .* at iteration 8 (checkpoint of $from PEs, now $to)" "$work/restart.log" || fail "no restart line"
grep -q 'checkpoint at iteration 12' "$work/restart.log" || fail "the restarted run wrote no further checkpoint"
got=$(checksum "$work/restart.log") || fail "no checksum after the restart"
grep -q 'verify: ok, all 5184 cells' "$work/restart.log" || fail "the restarted run does not verify"
[ "$got" = "$want" ] || fail "uninterrupted $want, restarted $got"
echo "ok: $want on $from PEs uninterrupted and $from -> $to PEs restarted ($mode)"
