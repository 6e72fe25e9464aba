#!/usr/bin/env bash
# Jacobi3D under `ucharmrun --restart-on-failure 1`: once the first checkpoint is on disk a
# PE is killed with SIGKILL; the launcher restarts the job from that checkpoint and the
# final checksum must equal an uninterrupted run's.
#   kill_restart.sh UCHARMRUN JACOBI3D PES WORKDIR
set -uo pipefail
R=$1 J=$2 pes=$3 work=$4
dir=$work/ckpt
args=(-x 24 -y 18 -z 12 --blocks 12 --iters 4000 --warmup 3 --mode staging --checkpoint-every 200 --checkpoint-dir "$dir")
rm -rf "$work" && mkdir -p "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
checksum() { grep -o 'checksum: [0-9a-f]*' "$1"; }

"$R" -n "$pes" --timeout 60 "$J" "${args[@]}" > "$work/plain.log" 2>&1 || { cat "$work/plain.log"; fail "uninterrupted run"; }
want=$(checksum "$work/plain.log") || fail "no checksum in the uninterrupted run"
rm -rf "$dir"

"$R" -n "$pes" --timeout 60 --restart-on-failure 1 "$J" "${args[@]}" > "$work/run.log" 2>&1 &
launcher=$!
# However long the first checkpoint takes (CTest's timeout stops a job that never writes one).
while [ ! -f "$dir/manifest" ] && kill -0 "$launcher" 2>/dev/null; do sleep 0.05; done
[ -f "$dir/manifest" ] || { cat "$work/run.log"; fail "the job ended before its first checkpoint"; }
victim=$(ps -o pid= --ppid "$launcher" | tail -1)  # a PE process this test's launcher started
[ -n "$victim" ] || fail "no PE process found under the launcher (pid $launcher)"
kill -9 "$victim"
wait "$launcher"
rc=$?
cat "$work/run.log"
[ $rc -eq 0 ] || fail "the launcher exited $rc"
grep -q 'restarting from checkpoint' "$work/run.log" || fail "the job was not restarted (did it end before the kill?)"
grep -q 'restarted from .* at iteration [1-9]' "$work/run.log" || fail "no restart line from the program"
got=$(checksum "$work/run.log") || fail "no checksum after the restart"
[ "$got" = "$want" ] || fail "uninterrupted $want, killed and restarted $got"
echo "ok: $want after a PE was killed and the job restarted from its checkpoint ($pes PEs)"
