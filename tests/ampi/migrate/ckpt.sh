#!/usr/bin/env bash
# AMPI checkpoint/restart: ckpt.sh UCHARMRUN PROGRAM FROM TO | crash PES
# FROM TO: a run of 8 ranks on FROM PEs stops after the checkpoint of step 8, a run on TO PEs
# restarts from it (+restart DIR); its result must be the uninterrupted run's.
# crash PES: the last rank is killed (SIGKILL) at step 10; ucharmrun --restart-on-failure
# restarts the job from the checkpoint of step 8, with the uninterrupted result.
set -euo pipefail
run=$1 prog=$2 mode=$3 arg=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/ampi-ckpt.XXXXXX")
trap 'rm -rf "$dir"' EXIT
result() { grep -o 'result [0-9a-f]*' <<<"$1" | tail -1; }
ref_pes=$([ "$mode" = crash ] && echo "$arg" || echo "$mode")
ref=$("$run" -n "$ref_pes" --timeout 80 "$prog" "$dir/ref" 16 --every 4 +vp 8)
want=$(result "$ref")
[ -n "$want" ] || { echo "no result from the uninterrupted run:"; echo "$ref"; exit 1; }
if [ "$mode" = crash ]; then
  out=$("$run" -n "$arg" --timeout 80 --restart-on-failure 2 "$prog" "$dir/ck" 16 --every 4 --crash-at 10 +vp 8 2>&1)
  grep -q "restarting from checkpoint $dir/ck" <<<"$out" || { echo "no restart:"; echo "$out"; exit 1; }
else
  stop=$("$run" -n "$mode" --timeout 80 "$prog" "$dir/ck" 16 --every 4 --stop-after 8 +vp 8)
  grep -q "stopped at step 8" <<<"$stop" || { echo "did not stop:"; echo "$stop"; exit 1; }
  out=$(MIGRATE_CKPT_CONTINUE=1 "$run" -n "$arg" --timeout 80 "$prog" "$dir/ck" 16 +restart "$dir/ck" 2>&1)
  grep -q "checkpoint at step 8, restarted: yes" <<<"$out" || { echo "did not restart at step 8:"; echo "$out"; exit 1; }
fi
got=$(result "$out")
if [ "$got" != "$want" ]; then
  echo "restarted run: '$got', uninterrupted: '$want'"
  echo "$out"
  exit 1
fi
echo "ok: $got"
