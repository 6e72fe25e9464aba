#!/usr/bin/env bash
# MPI-IO strided collective write + read (benchmarks/mpi/io_strided.c) on ucharm's AMPI and
# on the system OpenMPI (its own MPI-IO, ROMIO or OMPIO) on the same disk, with a plain
# pwrite of the same bytes in each run as the disk's reference; alternated, best of each
# run's repeats, medians over the runs.
#   benchmarks/run_io_strided.sh [build-dir] [ranks] [MiB per rank] [block bytes] [runs] [dir]
# Defaults: build, 4 ranks (ucharm: one per PE), 64 MiB, 4096, 3 runs, $TMPDIR or /tmp.
# VP=N runs ucharm with +vp N on `ranks` PEs instead; REPEATS=R repeats inside a run (default 3:
# the best is the run's figure; 1: every run one measurement, a median of single ones). Measure on a quiet machine whose
# directory is on the disk to compare (not tmpfs, unless that is what is compared).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
np=${2:-4}
mib=${3:-64}
blk=${4:-4096}
runs=${5:-3}
dir=${6:-${TMPDIR:-/tmp}}
ampi="$build/benchmarks/mpi/io_strided_ampi"
ompi="$build/benchmarks/mpi/io_strided_ompi"
args=(-m "$mib" -b "$blk" -r "${REPEATS:-3}" -d "$dir")
vp=()
[ -n "${VP:-}" ] && vp=(+vp "$VP")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((i = 0; i < runs; i++)); do
  "$build/tools/ucharmrun/ucharmrun" -n "$np" --timeout 600 "$ampi" "${args[@]}" "${vp[@]}" | sed 's/^/ucharm /' >>"$out"
  if [ -x "$ompi" ]; then
    mpirun --allow-run-as-root --oversubscribe -np "${VP:-$np}" "$ompi" "${args[@]}" | sed 's/^/openmpi /' >>"$out"
  fi
done
echo "# $(hostname) ranks=${VP:-$np} MiB/rank=$mib block=$blk runs=$runs dir=$dir"
echo "# runtime phase median_MiB/s (of $runs runs)"
for who in ucharm openmpi; do
  for phase in write_all read_all plain; do
    vals=$(awk -v w="$who" -v p="$phase" '$1 == w && $3 == p { split($7, a, "="); print a[2] }' "$out" | sort -n)
    [ -z "$vals" ] && continue
    n=$(wc -l <<<"$vals")
    med=$(sed -n "$(((n + 1) / 2))p" <<<"$vals")
    printf '%-8s %-10s %s\n' "$who" "$phase" "$med"
  done
done
