#!/usr/bin/env bash
# Converse ping-pong next to raw UCX (ucx_perftest tag_lat / tag_bw from the same UCX),
# measured alternately in one run; prints the full Converse table once, then medians
# and ratios of the repeated 8-byte and 4 MiB figures.
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

ours_lat=() raw_lat=() ours_bw=() raw_bw=()
for ((i = 0; i < reps; i++)); do
  ours_lat+=("$("$run" -n 2 --timeout 60 "$pp" --min 8 --max 8 --iters 200000 | awk '!/^#/ {print $2}')")
  raw_lat+=("$(perf_pair tag_lat 8 200000 | awk '{print $5}')")  # overall average, us
  ours_bw+=("$("$run" -n 2 --timeout 60 "$pp" --min 4M --max 4M --iters 20000 | awk '!/^#/ {print $2}')")
  raw_bw+=("$(perf_pair tag_lat 4194304 200 | awk '{print $5}')")
done
ol=$(printf '%s\n' "${ours_lat[@]}" | median); rl=$(printf '%s\n' "${raw_lat[@]}" | median)
ob=$(printf '%s\n' "${ours_bw[@]}" | median); rb=$(printf '%s\n' "${raw_bw[@]}" | median)
echo "== medians of $reps alternating runs (one-way latency, us)"
printf '%-34s %10s %10s %8s\n' "" "ucharm" "raw UCX" "ratio"
printf '%-34s %10.3f %10.3f %8.2f\n' "8 B   (converse vs tag_lat)" "$ol" "$rl" "$(echo "$ol / $rl" | bc -l)"
printf '%-34s %10.1f %10.1f %8.2f\n' "4 MiB (converse vs tag_lat)" "$ob" "$rb" "$(echo "$ob / $rb" | bc -l)"
echo "runs: ucharm 8B: ${ours_lat[*]} | raw 8B: ${raw_lat[*]}"
