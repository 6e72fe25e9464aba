#!/usr/bin/env bash
# On the GPU machine (a pack from tools/device-pack.sh carried; DEVICE_DIR names it): the
# stream-ordered transfer tests (core chain on 2 GPUs, on one shared GPU, on one PE, with
# the host-function fallback, on pinned host buffers and with staging off; AMPI's MPIX
# enqueue at 2 PEs and +vp 4), then benchmarks/core/stream_ordered_lat (stream-ordered vs
# host-synchronous channel vs an event-chained cudaMemcpyPeerAsync chain, 8 B, medians of
# alternating runs) on 2 GPUs and with both PEs on GPU 0. Every step has a short limit (a
# hang costs seconds, not the lease). Logs in $OUT; one line per step on stdout.
#   benchmarks/run_stream_ordered.sh
set -u
out=${OUT:-/tmp/out}
mkdir -p "$out"
source tools/device-env.sh
R=$build/tools/ucharmrun/ucharmrun
T=$build/tests/core/core_stream_ordered
A=$build/tests/ampi/ampi_enqueue
B=$build/benchmarks/core_stream_ordered_lat
log=$out/stream-ordered.txt
: > "$log"
step() {  # name, seconds, command...: "name: exit N in S s" and the last lines
  local name=$1 s=$2 t0=$SECONDS; shift 2
  { echo "=== $name: $*"; timeout "$s" "$@" 2>&1; echo "=== exit $?"; } >> "$log"
  echo "$name: $(tail -1 "$log") in $((SECONDS - t0)) s"
}
nvidia-smi -L
step core-2gpu 30 "$R" -n 2 --timeout 28 "$T" gpu
step bench-2gpu 60 "$R" -n 2 --timeout 58 "$B" --iters 3000 --warm 300 --reps 5
step ampi-2pe 30 "$R" -n 2 --timeout 28 "$A" gpu
step core-1gpu 30 env SO_DEVICE=0 "$R" -n 2 --timeout 28 "$T" gpu
step core-1pe 30 env SO_ROUNDS=200 "$R" -n 1 --timeout 28 "$T" gpu
step core-fallback 30 env UCHARM_STREAM_MEMOPS=0 SO_ROUNDS=200 "$R" -n 2 --timeout 28 "$T" gpu
step core-hostbuf 30 env SO_HOSTBUF=1 SO_ROUNDS=200 "$R" -n 2 --timeout 28 "$T" gpu
step ampi-vp4 30 "$R" -n 2 --timeout 28 "$A" gpu +vp 4
step bench-1gpu 40 env SO_DEVICE=0 "$R" -n 2 --timeout 38 "$B" --iters 2000 --warm 200 --reps 3
step core-nostaging 15 env UCHARM_STREAM_STAGING=0 SO_ROUNDS=20 "$R" -n 2 --timeout 13 "$T" gpu
grep -E "^(# |path|stream-ordered|host-synchronous|event-chained)" "$log"
