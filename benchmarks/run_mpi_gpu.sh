#!/usr/bin/env bash
# On the GPU machine (with .device/ carried; see tools/device-env.sh), one rank per GPU:
# 8 B device-to-device latency of AMPI (osu_mpi_ampi), OpenMPI 4.1 + ucharm's UCX (pml ucx)
# and ucharm's Channel API (benchmarks/osu), alternated REPS times in this run, medians
# and ratios (the AMPI issue's 1.2x-of-Channel and 1.3x-better-than-OpenMPI targets); then
# bandwidth at 16 and 64 MiB of both MPIs next to cudaMemcpyPeer (the 90% target).
set -uo pipefail
source tools/device-env.sh
R=$build/tools/ucharmrun/ucharmrun
OA=$build/benchmarks/mpi/osu_mpi_ampi
O=$build/benchmarks/mpi/osu_mpi_ompi
B=$build/benchmarks/osu
export LD_LIBRARY_PATH=$ucx/lib:$LD_LIBRARY_PATH  # OpenMPI's pml ucx loads ucharm's UCX (CUDA transports)
ompi=(mpirun --allow-run-as-root -x LD_LIBRARY_PATH --mca pml ucx --mca pml_ucx_tls any
      --mca pml_ucx_devices any --bind-to core -np 2)
reps=${REPS:-5}
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
a=() o=() c=()
for i in $(seq "$reps"); do
  a+=("$($R -n 2 --timeout 60 "$OA" -t latency -d cuda -m 8:8 | awk '$1==8{print $2}')")
  o+=("$(timeout 60 "${ompi[@]}" "$O" -t latency -d cuda -m 8:8 | awk '$1==8{print $2}')")
  c+=("$($R -n 2 --timeout 60 "$B" --mode channel --mem cuda --test lat --min 8 --max 8 --iters 10000 | awk '$1==8{print $2}')")
done
ma=$(med "${a[@]}"); mo=$(med "${o[@]}"); mc=$(med "${c[@]}")
echo "8 B D-D one-way latency (us), medians of $reps alternating runs:"
echo "  AMPI $ma (${a[*]}); OpenMPI pml ucx $mo (${o[*]}); Channel $mc (${c[*]})"
awk -v a="$ma" -v o="$mo" -v c="$mc" 'BEGIN { printf "  ratios: AMPI/Channel %.3f, OpenMPI/AMPI %.3f\n", a / c, o / a }'
echo "== bandwidth, CUDA buffers (MB/s)"
echo "-- AMPI";    $R -n 2 --timeout 100 "$OA" -t bw -d cuda -m 16M:64M | grep -v '^#'
echo "-- OpenMPI"; timeout 100 "${ompi[@]}" "$O" -t bw -d cuda -m 16M:64M | grep -v '^#'
nvcc -O2 -o /tmp/peer_bw tools/peer_bw.cu && echo "-- cudaMemcpyPeer" && /tmp/peer_bw
