#!/usr/bin/env bash
# Matching and completion with many outstanding requests (benchmarks/mpi/matching.cpp), the
# same program on ucharm's AMPI and on the system OpenMPI (ob1 + vader), alternated in one
# run; each line is the median over the repetitions of the program's own medians.
#   benchmarks/run_matching.sh [build-dir] [repeats]      N=16000 receives by default
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
reps=${2:-3}
n=${N:-16000}
run="$build/tools/ucharmrun/ucharmrun"
ampi="$build/benchmarks/mpi/mpi_matching_ampi"
ompi="$build/benchmarks/mpi/mpi_matching_ompi"
args=(-n "$n" -r 3 -i 20000)

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ampi_run() { "$run" -n 2 --timeout 120 "$ampi" "${args[@]}"; }
ompi_run() { timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ob1 --mca btl self,vader "$ompi" "${args[@]}"; }

echo "== machine: $(nproc) cores, $(uname -r); $(mpirun --version | head -1)"
echo "== $n outstanding receives; $reps alternating repetitions (each the median of 3 runs)"
declare -A out
names=()
[ -x "$ampi" ] && names+=(ampi) || echo "(skipping: $ampi is not built)" >&2
[ -x "$ompi" ] && names+=(ompi) || echo "(skipping: $ompi is not built)" >&2
for ((i = 0; i < reps; i++)); do
  for m in "${names[@]}"; do out[$m]+=$("${m}_run" 2>/dev/null | grep -E '^(waitall|waitany|unexpected|ibarrier)')$'\n'; done
done
# figure: key (first words of the line) -> median of the number before "s" / "us"
printf '%-44s %12s %12s\n' "test" "ucharm AMPI" "OpenMPI"
for key in "waitall" "waitany" "unexpected" "ibarrier   MPI_COMM_SELF" "ibarrier   MPI_COMM_WORLD"; do
  row=()
  for m in ampi ompi; do
    v=$(printf '%s' "${out[$m]:-}" | grep "^$key" | sed -E 's/.*: +([0-9.]+) (s|us).*/\1/' | median)
    row+=("${v:--}")
  done
  unit=s; [[ $key == ibarrier* ]] && unit="us/call"
  printf '%-44s %12s %12s  (%s)\n' "$key" "${row[0]}" "${row[1]}" "$unit"
done
