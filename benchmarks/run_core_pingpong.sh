#!/usr/bin/env bash
# Chare ping-pong (group and array) next to the Converse ping-pong, alternating in one
# run; medians of the 8-byte one-way latency. Also Converse with a 56-byte payload, the
# same bytes on the wire as the chare message (16 header + 32 envelope + 24 arguments),
# to separate the core's own cost from UCX's cost for the larger message.
#   benchmarks/run_core_pingpong.sh [build-dir] [repeats]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
reps=${2:-5}
run="$build/tools/ucharmrun/ucharmrun"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "== chare ping-pong table (ucharmrun -n 2 core_pingpong)"
"$run" -n 2 --timeout 120 "$build/benchmarks/core_pingpong"
conv=() conv56=() grp=() arr=()
for ((i = 0; i < reps; i++)); do
  conv+=("$("$run" -n 2 "$build/benchmarks/converse_pingpong" --min 8 --max 8 --iters 100000 | awk '!/^#/ {print $2}')")
  conv56+=("$("$run" -n 2 "$build/benchmarks/converse_pingpong" --min 56 --max 56 --iters 100000 | awk '!/^#/ {print $2}')")
  read -r g a < <("$run" -n 2 "$build/benchmarks/core_pingpong" --min 8 --max 8 --iters 100000 | awk '!/^#/ {print $2, $3}')
  grp+=("$g")
  arr+=("$a")
done
c=$(printf '%s\n' "${conv[@]}" | median); c56=$(printf '%s\n' "${conv56[@]}" | median)
g=$(printf '%s\n' "${grp[@]}" | median); a=$(printf '%s\n' "${arr[@]}" | median)
echo "== medians of $reps alternating runs, 8-byte payload, one-way us"
printf '%-36s %8.3f\n' "Converse ping-pong (24 B on the wire)" "$c"
printf '%-36s %8.3f\n' "Converse, 56 B payload (72 B)" "$c56"
printf '%-36s %8.3f   x%.2f of Converse, x%.2f of Converse 72 B\n' "group ping-pong (72 B)" "$g" "$(echo "$g/$c" | bc -l)" "$(echo "$g/$c56" | bc -l)"
printf '%-36s %8.3f   x%.2f of Converse, x%.2f of Converse 72 B\n' "array ping-pong (72 B)" "$a" "$(echo "$a/$c" | bc -l)" "$(echo "$a/$c56" | bc -l)"
echo "runs: converse ${conv[*]} | converse56 ${conv56[*]} | group ${grp[*]} | array ${arr[*]}"
