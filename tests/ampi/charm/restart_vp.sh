#!/usr/bin/env bash
# A checkpoint of 8 ranks, restarted with +vp 4 (refused: non-zero exit, both counts named)
# and with +vp 8 (goes on to the end).   restart_vp.sh UCHARMRUN MIGRATE_CKPT
set -uo pipefail
run=$1 prog=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/ampi-restart-vp.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
out=$("$run" -n 2 --timeout 60 "$prog" "$dir/ck" 12 --every 4 --stop-after 4 +vp 8 2>&1) || { echo "$out"; fail "checkpointing run"; }
grep -q "stopped at step 4" <<<"$out" || { echo "$out"; fail "the run did not stop after its checkpoint"; }
out=$(MIGRATE_CKPT_CONTINUE=1 "$run" -n 2 --timeout 60 "$prog" "$dir/ck" 12 +restart "$dir/ck" +vp 4 2>&1)
rc=$?
echo "$out"
[ $rc -ne 0 ] || fail "a restart with +vp 4 of a checkpoint of 8 ranks succeeded"
grep -q "the checkpoint holds 8 MPI ranks, but +vp asks for 4" <<<"$out" || fail "no message naming 8 and 4"
out=$(MIGRATE_CKPT_CONTINUE=1 "$run" -n 2 --timeout 60 "$prog" "$dir/ck" 12 +restart "$dir/ck" +vp 8 2>&1) || { echo "$out"; fail "restart with +vp 8"; }
echo "$out"
grep -q "checkpoint at step 4, restarted: yes" <<<"$out" || fail "+vp 8 did not restart at step 4"
grep -q "result " <<<"$out" || fail "the restarted run did not finish"
echo "ok"
