#!/usr/bin/env bash
# One-way host latency at every power of two from 8 B to 4 MiB, measured alternately in one
# run: ucharm's Converse ping-pong, raw UCX (`ucx_perftest tag_lat` from the same UCX, with
# heap buffers: UCX_ALLOC_PRIO=heap, the memory the runtime sends from), the OSU-style MPI
# latency on ucharm's AMPI (osu_mpi_ampi) and the same program on the system OpenMPI
# (osu_mpi_ompi, pml ucx over ucharm's UCX). Prints medians of the repetitions and the
# ratios to raw UCX (Converse) and to OpenMPI (AMPI); flags sizes above LIMIT x raw.
#   benchmarks/run_pingpong.sh [build-dir] [repeats]      LIMIT=1.5 by default
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
reps=${2:-5}
limit=${LIMIT:-1.5}
run="$build/tools/ucharmrun/ucharmrun"
pp="$build/benchmarks/converse_pingpong"
ampi="$build/benchmarks/mpi/osu_mpi_ampi"
ompi="$build/benchmarks/mpi/osu_mpi_ompi"
ucx_root=${UCX_ROOT:-$(sed -n 's/^UCHARM_UCX_ROOT:PATH=//p' "$build/CMakeCache.txt")}
perftest="$ucx_root/bin/ucx_perftest"
port=$((20000 + RANDOM % 20000))
sizes=()
for ((s = 8; s <= 4194304; s *= 2)); do sizes+=("$s"); done

have() { [ -x "$1" ] || { echo "(skipping: $1 is not built)" >&2; return 1; }; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# Both sides of ucx_perftest bound to cores 0 and 1, as ucharmrun binds the two PEs.
raw_one() {  # size -> one-way latency (us), ucx_perftest's overall average
  local n=$(($1 >= 262144 ? 500 : ($1 >= 16384 ? 5000 : 20000)))
  UCX_ALLOC_PRIO=heap LD_LIBRARY_PATH="$ucx_root/lib" timeout 60 taskset -c 1 "$perftest" -p "$port" >/dev/null 2>&1 &
  local srv=$!
  sleep 0.2
  UCX_ALLOC_PRIO=heap LD_LIBRARY_PATH="$ucx_root/lib" timeout 60 taskset -c 0 "$perftest" 127.0.0.1 -p "$port" \
    -t tag_lat -s "$1" -n "$n" -w $((n / 10)) 2>/dev/null | awk '/Final:/ {print $5}'
  wait "$srv" || true
  port=$((port + 1))
}
ompi_cmd=(env "LD_LIBRARY_PATH=$ucx_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" mpirun --allow-run-as-root
  -np 2 --bind-to core -x LD_LIBRARY_PATH --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any "$ompi")
osu_args=(-t latency -m 8:4194304)

echo "== machine: $(nproc) cores, $(uname -r); UCX $(LD_LIBRARY_PATH="$ucx_root/lib" "$ucx_root/bin/ucx_info" -v 2>/dev/null | sed -n 's/# Library version: //p' || true); $(mpirun --version 2>/dev/null | head -1 || echo 'no mpirun')"
echo "== one-way latency (us), every power of two 8 B - 4 MiB, $reps alternating repetitions"
declare -A R  # R[layer,size] = "v1 v2 ..."
layers=()
have "$pp" && layers+=(converse)
have "$perftest" && layers+=(raw)
have "$ampi" && layers+=(ampi)
have "$ompi" && command -v mpirun >/dev/null && layers+=(ompi)
table() {  # layer -> "size value" lines (UCX may log to stdout: keep numeric rows only)
  case $1 in
    converse) "$run" -n 2 --timeout 120 "$pp" --min 8 --max 4M --iters 10000 --warmup 1000 ;;
    ampi) "$run" -n 2 --timeout 120 "$ampi" "${osu_args[@]}" ;;
    ompi) timeout 120 "${ompi_cmd[@]}" "${osu_args[@]}" ;;
    raw) for s in "${sizes[@]}"; do echo "$s $(raw_one "$s")"; done ;;
  esac | awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9.]+$/ {print $1, $2}'
}
for ((i = 0; i < reps; i++)); do
  for l in "${layers[@]}"; do
    out=$(table "$l") || { echo "$l: failed in repetition $((i + 1))" >&2; continue; }
    while read -r s v; do R[$l,$s]+="$v "; done <<<"$out"
  done
done

med() { tr ' ' '\n' <<<"${R[$1,$2]:-}" | grep . | median || true; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else printf "-" }'; }
printf '%9s %10s %10s %10s %10s %9s %9s\n' size converse raw_ucx ampi openmpi conv/raw ampi/ompi
bad=0
for s in "${sizes[@]}"; do
  c=$(med converse "$s"); r=$(med raw "$s"); a=$(med ampi "$s"); o=$(med ompi "$s")
  q=$(div "$c" "$r")
  flag=$(awk -v q="$q" -v l="$limit" 'BEGIN { print (q != "-" && q + 0 > l) ? "  <-- over " l "x raw" : "" }')
  [ -n "$flag" ] && bad=1
  printf '%9s %10s %10s %10s %10s %9s %9s%s\n' "$s" "${c:--}" "${r:--}" "${a:--}" "${o:--}" "$q" "$(div "$a" "$o")" "$flag"
done
exit $bad
