#!/usr/bin/env bash
# 8 B one-way latency, measured alternately in one run: ucharm's Converse ping-pong, the
# OSU-style MPI latency on ucharm's AMPI (osu_mpi_ampi) and the same program on the system
# OpenMPI (osu_mpi_ompi) over ucharm's UCX (pml ucx); medians of the repetitions and ratios.
#   benchmarks/run_mpi_pingpong.sh [build-dir] [repeats]
# On the GPU machine: source tools/device-env.sh; UCX_ROOT=$ucx bash benchmarks/run_mpi_pingpong.sh $build
# OMPI_PML=ob1 uses OpenMPI's shared-memory transport (ob1 + vader) instead of pml ucx.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
reps=${2:-5}
iters=${ITERS:-20000}
run="$build/tools/ucharmrun/ucharmrun"
pp="$build/benchmarks/converse_pingpong"
ampi="$build/benchmarks/mpi/osu_mpi_ampi"
ompi="$build/benchmarks/mpi/osu_mpi_ompi"
# UCX_ROOT: where the build's UCX is (the device machine's pack has no CMakeCache.txt).
ucx_root=${UCX_ROOT:-$(sed -n 's/^UCHARM_UCX_ROOT:PATH=//p' "$build/CMakeCache.txt")}

# OpenMPI's pml ucx refuses shared memory unless told any transport and device will do;
# LD_LIBRARY_PATH (passed to the ranks with -x) makes it load ucharm's UCX, not Debian's.
if [ "${OMPI_PML:-ucx}" = ucx ]; then
  ompi_label="OpenMPI pml ucx (ucharm's UCX)"
  ompi_cmd=(env "LD_LIBRARY_PATH=$ucx_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" mpirun --allow-run-as-root
    -np 2 --bind-to core -x LD_LIBRARY_PATH --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any "$ompi")
else
  ompi_label="OpenMPI ob1 + vader"
  ompi_cmd=(mpirun --allow-run-as-root -np 2 --bind-to core --mca pml ob1 --mca btl self,vader "$ompi")
fi
osu_args=(-t latency -m 8:8 -i "$iters" -x $((iters / 10)) -p 3)

have() { [ -x "$1" ] || { echo "(skipping: $1 is not built)" >&2; return 1; }; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
converse_8b() { "$run" -n 2 --timeout 60 "$pp" --min 8 --max 8 --iters "$iters" | awk '$1 == 8 {print $2}'; }  # UCX may log to stdout
ampi_8b() { "$run" -n 2 --timeout 60 "$ampi" "${osu_args[@]}" | awk '$1 == 8 {print $2}'; }
ompi_8b() { timeout 60 "${ompi_cmd[@]}" "${osu_args[@]}" | awk '$1 == 8 {print $2}'; }

echo "== machine: $(nproc) cores, $(uname -r); UCX $(LD_LIBRARY_PATH="$ucx_root/lib" "$ucx_root/bin/ucx_info" -v 2>/dev/null | sed -n 's/# Library version: //p' || true); $(mpirun --version | head -1)"
echo "== 8 B one-way latency (us), $reps alternating repetitions of $iters round trips"
declare -A runs
names=()
have "$pp" && names+=(converse)
have "$ampi" && names+=(ampi)
have "$ompi" && names+=(ompi)
for ((i = 0; i < reps; i++)); do
  for n in "${names[@]}"; do
    v=$("${n}_8b") || v=""
    [ -n "$v" ] || { echo "$n: no result in repetition $((i + 1))" >&2; continue; }
    runs[$n]+="$v "
  done
done

declare -A med
label() { case $1 in converse) echo "ucharm Converse ping-pong" ;; ampi) echo "AMPI (ucharmrun -n 2)" ;; *) echo "$ompi_label" ;; esac; }
printf '%-34s %10s   %s\n' "" "median" "runs"
for n in "${names[@]}"; do
  med[$n]=$(tr ' ' '\n' <<<"${runs[$n]:-}" | grep . | median || true)
  printf '%-34s %10s   %s\n' "$(label "$n")" "${med[$n]:-n/a}" "${runs[$n]:-}"
done
ratio() {  # a b -> "a / b" line when both medians exist
  [ -n "${med[$1]:-}" ] && [ -n "${med[$2]:-}" ] || return 0
  awk -v a="${med[$1]}" -v b="${med[$2]}" -v l="$1 / $2" 'BEGIN { if (b > 0) printf "ratio %-16s %6.2f\n", l, a / b }'
}
ratio ampi converse
ratio ampi ompi
ratio ompi converse
