#!/usr/bin/env bash
# Jacobi3D three ways on the same grid, then one summary: the chare program (blocks on
# PEs), the MPI program on ucharm's AMPI (virtual ranks on PEs) and the same MPI program
# on the system OpenMPI (one process per rank). CUDA kernels when a GPU is visible.
#   examples/jacobi3d/mpi/run.sh [build-dir]
# Environment: PES (default 2), BLOCKS (chare blocks and AMPI virtual ranks, default 8),
# OMPI_ARGS (mpirun transport options; default shared memory, or pml ucx with ucharm's UCX
# when a GPU is visible, so that device pointers can be sent).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
build=${1:-$root/build}
pes=${PES:-2}
blocks=${BLOCKS:-8}
R=$build/tools/ucharmrun/ucharmrun
chare=$build/examples/jacobi3d/jacobi3d
ampi=$build/examples/jacobi3d/mpi/jacobi3d_ampi
ompi=$build/examples/jacobi3d/mpi/jacobi3d_mpi
ucx_root=$(sed -n 's/^UCHARM_UCX_ROOT:PATH=//p' "$build/CMakeCache.txt")
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  args=(--grid 384 --iters 100 --warmup 10)
  default_ompi="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x LD_LIBRARY_PATH"
  export LD_LIBRARY_PATH="$ucx_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # mpirun's ranks only
else
  args=(--grid 96 --iters 50 --warmup 5)
  default_ompi="--mca pml ob1 --mca btl self,vader"
fi
read -r -a ompi_args <<<"${OMPI_ARGS:-$default_ompi}"
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT

for mode in staging channel; do
  "$R" -n "$pes" --timeout 300 "$chare" "${args[@]}" --blocks "$blocks" --mode "$mode" --csv "$csv"
  echo
done
if [ -x "$ampi" ]; then
  for mode in staging gpuaware rma; do
    "$R" -n "$pes" --timeout 300 "$ampi" "${args[@]}" --mode "$mode" --csv "$csv" +vp "$blocks"
    echo
  done
else
  echo "(no $ampi: built without AMPI)"
fi
if [ -x "$ompi" ]; then
  for mode in staging gpuaware rma; do
    timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to core "${ompi_args[@]}" -np "$pes" \
      "$ompi" "${args[@]}" --mode "$mode" --csv "$csv" ||
      echo "(OpenMPI --mode $mode failed: on GPUs rma needs a CUDA-capable one-sided component)"
    echo
  done
else
  echo "(no $ompi: no system MPI found at configure time)"
fi

echo "== Jacobi3D summary ($pes PEs or processes; ms per iteration; comm = time blocks wait for halos)"
echo "   chare: $blocks blocks on $pes PEs; ampi: $blocks virtual ranks on $pes PEs; ompi: $pes ranks"
awk -F, '{ printf "%-14s %-5s %3d blocks: %9.4f ms/iter, comm %9.4f ms/iter, start-up %.3f s\n", $1, $2, $7, $9, $10, $11; t[$1] = $9 }
  END {
    if (t["channel"] > 0 && t["ampi-gpuaware"] > 0) printf "AMPI gpuaware / chare channel, time per iteration: %.2fx\n", t["ampi-gpuaware"] / t["channel"]
    if (t["ompi-gpuaware"] > 0 && t["ampi-gpuaware"] > 0) printf "AMPI gpuaware / OpenMPI gpuaware, time per iteration: %.2fx\n", t["ampi-gpuaware"] / t["ompi-gpuaware"]
  }' "$csv"
