#!/usr/bin/env bash
# The README's main job: Jacobi3D on 2 PEs in each halo mode (CUDA kernels when a GPU is
# visible, CPU kernels otherwise), then a summary of the timings.
#   examples/jacobi3d/run.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
R=$build/tools/ucharmrun/ucharmrun
J=$build/examples/jacobi3d/jacobi3d
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  args=(--grid 384 --blocks 8 --iters 100 --warmup 10)
  modes="staging gpumsg channel device"  # device: CUDA kernels only
else
  args=(--grid 96 --blocks 8 --iters 50 --warmup 5)
  modes="staging gpumsg channel"
fi
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
for mode in $modes; do
  "$R" -n 2 --timeout 300 "$J" "${args[@]}" --mode "$mode" --csv "$csv"
  echo
done
echo "== Jacobi3D summary (2 PEs; ms per iteration; comm = time blocks wait for halos)"
awk -F, '{ printf "%-8s %-5s kernels: %9.4f ms/iter, comm %9.4f ms/iter, start-up %.3f s\n", $1, $2, $9, $10, $11; t[$1] = $9 }
  END { if (t["staging"] > 0) printf "GPU-aware vs staging, time per iteration: gpumsg %.2fx, channel %.2fx\n", t["staging"] / t["gpumsg"], t["staging"] / t["channel"]
        if (t["device"] > 0) printf "device vs channel, time per iteration: %.2fx\n", t["channel"] / t["device"] }' "$csv"
