#!/usr/bin/env bash
# Converse ping-pong next to raw UCX (ucx_perftest tag_lat / tag_bw from the same UCX),
# measured alternately in one run; prints the full Converse table once, then medians
# and ratios of repeated 8 B, 64 KiB and 4 MiB figures.
#   benchmarks/run_pingpong.sh [build-dir] [repeats]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
reps=${2:-5}
run="$build/tools/ucharmrun/ucharmrun"
pp="$build/benchmarks/converse_pingpong"
ucx_root=$(sed -n 's/^UCHARM_UCX_ROOT:PATH=//p' "$build/CMakeCache.txt")
perftest="$ucx_root/bin/ucx_perftest"
port=$((20000 + RANDOM % 20000))

# Both sides of ucx_perftest bound to cores 0 and 1, as ucharmrun binds the two PEs.
perf_pair() {  # test size iterations -> prints the "Final:" line
  LD_LIBRARY_PATH="$ucx_root/lib" taskset -c 0 "$perftest" -p "$port" -t "$1" -s "$2" -n "$3" >/dev/null 2>&1 &
  local srv=$!
  sleep 0.3
  LD_LIBRARY_PATH="$ucx_root/lib" taskset -c 1 "$perftest" 127.0.0.1 -p "$port" -t "$1" -s "$2" -n "$3" 2>/dev/null | grep Final
  wait "$srv" || true
  port=$((port + 1))
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "== machine: $(nproc) cores, $(uname -r); UCX $(LD_LIBRARY_PATH="$ucx_root/lib" "$ucx_root/bin/ucx_info" -v | sed -n 's/# Library version: //p')"
echo "== Converse ping-pong table (ucharmrun -n 2 converse_pingpong)"
"$run" -n 2 --timeout 120 "$pp"

# size label, converse args, perftest size, perftest iterations
cases=("8 B|8|8|200000" "64 KiB|64k|65536|20000" "4 MiB|4M|4194304|200")
declare -A ours raw
for ((i = 0; i < reps; i++)); do
  for c in "${cases[@]}"; do
    IFS='|' read -r label csize psize piters <<<"$c"
    citers=$((piters < 1000 ? 20000 : piters))
    ours[$label]+="$("$run" -n 2 --timeout 60 "$pp" --min "$csize" --max "$csize" --iters "$citers" | awk '!/^#/ {print $2}') "
    raw[$label]+="$(perf_pair tag_lat "$psize" "$piters" | awk '{print $5}') "   # overall average, us
  done
done
echo "== medians of $reps alternating runs (one-way latency, us; ucx_perftest overall average)"
printf '%-10s %12s %12s %8s\n' "size" "ucharm" "raw UCX" "ratio"
for c in "${cases[@]}"; do
  label=${c%%|*}
  o=$(tr ' ' '\n' <<<"${ours[$label]}" | grep . | median)
  r=$(tr ' ' '\n' <<<"${raw[$label]}" | grep . | median)
  printf '%-10s %12.3f %12.3f %8.2f\n' "$label" "$o" "$r" "$(echo "$o / $r" | bc -l)"
  echo "           runs: ucharm ${ours[$label]}| raw ${raw[$label]}"
done
