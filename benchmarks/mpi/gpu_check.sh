#!/usr/bin/env bash
# On the GPU machine (with .device/ carried, see tools/device-env.sh; the pack must hold
# the MPI binaries: examples/jacobi3d/mpi/jacobi3d_{mpi,ampi}, benchmarks/mpi/osu_mpi_{ompi,ampi}):
# the MPI programs with CUDA kernels and buffers, on that machine's OpenMPI over ucharm's
# UCX (pml ucx: device pointers) and, where built, on AMPI. Tables and CSVs in $OUT.
#   bash benchmarks/mpi/gpu_check.sh
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
source tools/device-env.sh
R=$build/tools/ucharmrun/ucharmrun
J=$build/examples/jacobi3d/mpi/jacobi3d_mpi
JA=$build/examples/jacobi3d/mpi/jacobi3d_ampi
O=$build/benchmarks/mpi/osu_mpi_ompi
OA=$build/benchmarks/mpi/osu_mpi_ampi
export LD_LIBRARY_PATH=$ucx/lib:$LD_LIBRARY_PATH  # OpenMPI's pml ucx loads ucharm's UCX (CUDA transports)
ompi=(mpirun --allow-run-as-root --oversubscribe -x LD_LIBRARY_PATH --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
nvidia-smi -L
mpirun --version | head -1

echo "== Jacobi3D, CUDA kernels, --verify (1, 2 and 4 ranks per GPU)"
for np in 2 4 8; do
  for mode in staging gpuaware; do
    [ -x "$J" ] && timeout 120 "${ompi[@]}" -np $np "$J" --grid 96 --iters 20 --warmup 2 --kernels cuda --mode $mode --verify 2>&1 | grep -E "^Jacobi|^verify|rror"
    [ -x "$JA" ] && timeout 120 "$R" -n 2 --timeout 100 "$JA" --grid 96 --iters 20 --warmup 2 --kernels cuda --mode $mode --verify +vp $np 2>&1 | grep -E "^Jacobi|^verify|rror"
  done
done
echo "== Jacobi3D 384^3, 2 ranks (one per GPU)"
for mode in staging gpuaware; do
  [ -x "$J" ] && timeout 200 "${ompi[@]}" --bind-to core -np 2 "$J" --grid 384 --iters 100 --warmup 10 --mode $mode --csv "$out/jacobi.csv" | grep "per iteration"
  [ -x "$JA" ] && timeout 200 "$R" -n 2 --timeout 180 "$JA" --grid 384 --iters 100 --warmup 10 --mode $mode --csv "$out/jacobi.csv" | grep "per iteration"
done
cat "$out/jacobi.csv" 2>/dev/null

echo "== OSU-style, CUDA buffers: GPU-aware and staged, one CSV per MPI"
for impl in ompi ampi; do
  if [ $impl = ompi ]; then exe=$O; launch=("${ompi[@]}" --bind-to core -np 2); else exe=$OA; launch=("$R" -n 2 --timeout 200); fi
  [ -x "$exe" ] || continue
  csv=$out/osu-$impl.csv
  : > "$csv"
  for t in latency bw; do
    timeout 220 "${launch[@]}" "$exe" -t $t -d cuda -m 1:4M -p 3 --csv "$csv" > "$out/$impl-$t.txt" 2>&1
    timeout 220 "${launch[@]}" "$exe" -t $t -d cuda --staging -m 1:4M -p 3 --csv "$csv" >> "$out/$impl-$t.txt" 2>&1
  done
  grep -hE "^#|^(8|65536|4194304) " "$out/$impl-latency.txt" "$out/$impl-bw.txt"
  python3 tools/osu_table.py "$csv" --aware $impl --mem cuda
done
