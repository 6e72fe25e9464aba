#!/usr/bin/env bash
# Jacobi3D strong and weak scaling, every halo mode, each point run REPS times (medians are
# taken by tools/plot_jacobi.py). On the CPU machine: 1, 2, 4 PEs, CPU kernels. On the GPU
# machine (KERNELS=cuda): 1 and 2 PEs, one GPU each.
#   benchmarks/run_jacobi_scaling.sh OUTDIR      -> OUTDIR/{strong,weak}.csv, .md tables, .png
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:?usage: run_jacobi_scaling.sh OUTDIR}
mkdir -p "$out"
build=${BUILD:-$root/build}
R=$build/tools/ucharmrun/ucharmrun
J=$build/examples/jacobi3d/jacobi3d
kernels=${KERNELS:-cpu}
modes="staging gpumsg channel"
[ "$kernels" = cuda ] && modes="$modes device"  # device: CUDA kernels only
reps=${REPS:-3}
iters=${ITERS:-50}
if [ "$kernels" = cuda ]; then
  pes_list=${PES:-"1 2"}; strong=${STRONG:-"384 384 384"}; weak=${WEAK:-"384 384 384"}; per_pe_blocks=${BLOCKS:-"1 4"}
else
  pes_list=${PES:-"1 2 4"}; strong=${STRONG:-"96 96 96"}; weak=${WEAK:-"64 64 64"}; per_pe_blocks=${BLOCKS:-"1 4"}
fi
: > "$out/strong.csv"
: > "$out/weak.csv"
run() {  # csv pes blocks gx gy gz mode
  "$R" -n "$2" --timeout 300 "$J" -x "$4" -y "$5" -z "$6" --blocks "$3" --iters "$iters" --warmup 5 \
    --mode "$7" --kernels "$kernels" --csv "$1" > /dev/null
}
read -r sx sy sz <<< "$strong"
read -r wx wy wz <<< "$weak"
for pes in $pes_list; do
  for bpp in $per_pe_blocks; do
    blocks=$((pes * bpp))
    # weak: the grid doubles in x, then y, then z, as the PEs double (as in the paper)
    gx=$wx; gy=$wy; gz=$wz; n=1; axis=0
    while [ $n -lt "$pes" ]; do
      case $axis in 0) gx=$((gx * 2));; 1) gy=$((gy * 2));; 2) gz=$((gz * 2));; esac
      n=$((n * 2)); axis=$(((axis + 1) % 3))
    done
    for rep in $(seq "$reps"); do  # modes interleaved, so drift hits them alike
      for mode in $modes; do
        run "$out/strong.csv" "$pes" "$blocks" "$sx" "$sy" "$sz" "$mode"
        run "$out/weak.csv" "$pes" "$blocks" "$gx" "$gy" "$gz" "$mode"
      done
    done
  done
done
py=python3
[ -x "$root/.venv/bin/python" ] && py=$root/.venv/bin/python
for s in strong weak; do
  $py "$root/tools/plot_jacobi.py" "$out/$s.csv" "$out/jacobi-$s" --title "Jacobi3D $s scaling ($kernels kernels)" | tee "$out/$s.md"
done
