#!/usr/bin/env bash
# Python Channel against the C++ Channel, measured alternately in one run: 8 B one-way
# latency and 16 MiB bandwidth (windows of 64 sends, then an ack) of
#   - Python buffer forms (benchmarks/python/channel_pingpong.py --api buffer: isend/irecv,
#     receives posted ahead),
#   - Python send/recv (--api message: a message with the array's description; device
#     arrays land in a given buffer, host arrays travel inside the message),
#   - the C++ Channel API (benchmarks/osu --mode channel),
# in host memory (NumPy) or, with --device, GPU memory (CuPy, one GPU per PE); medians of
# the repetitions and the ratios against C++.
#   benchmarks/run_python_channel.sh [build-dir] [repeats] [--device]
# PYTHON: the interpreter (default: the project's .venv); PYTHONPATH: where `import ucharm`
# finds the package (default: <build>/bindings/python).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
reps=${2:-5}
dev=${3:-}
py=${PYTHON:-$root/.venv/bin/python}
run="$build/tools/ucharmrun/ucharmrun"
osu="$build/benchmarks/osu"
bench="$root/benchmarks/python/channel_pingpong.py"
export PYTHONPATH=${PYTHONPATH:-$build/bindings/python}
for f in "$run" "$osu"; do
  [ -x "$f" ] || { echo "run_python_channel.sh: $f is not built" >&2; exit 1; }
done
pyflag="" mem=host
if [ "$dev" = "--device" ]; then pyflag="--device" mem=cuda; fi

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
py_lat() { "$run" -n 2 --timeout 120 "$py" "$bench" $pyflag --api "$1" --min 8 --max 8 --iters 20000 | awk '$1==8 {print $2}'; }
py_bw() {
  "$run" -n 2 --timeout 200 "$py" "$bench" $pyflag --api "$1" --test bw --window 64 --min 16M --max 16M \
    --iters 6400 | awk '$1==16777216 {print $3}'
}
cpp_lat() { "$run" -n 2 --timeout 60 "$osu" --mode channel --mem $mem --test lat --min 8 --max 8 --iters 20000 | awk '$1==8 {print $2}'; }
cpp_bw() { "$run" -n 2 --timeout 120 "$osu" --mode channel --mem $mem --test bw --min 16M --max 16M --iters 200 | awk '$1==16777216 {print $2}'; }
buffer_8b() { py_lat buffer; }
message_8b() { py_lat message; }
cpp_8b() { cpp_lat; }
buffer_16m() { py_bw buffer; }
message_16m() { py_bw message; }
cpp_16m() { cpp_bw; }

echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $("$py" --version); memory: $mem"
echo "== $reps alternating repetitions"
names=(buffer_8b message_8b cpp_8b buffer_16m message_16m cpp_16m)
declare -A runs med
for ((i = 0; i < reps; i++)); do
  for n in "${names[@]}"; do
    v=$("$n") || v=""
    [ -n "$v" ] || { echo "$n: no result in repetition $((i + 1))" >&2; continue; }
    runs[$n]+="$v "
  done
done
label() {
  case $1 in
    buffer_8b) echo "Python isend/irecv, 8 B one-way (us)" ;;
    message_8b) echo "Python send/recv, 8 B one-way (us)" ;;
    cpp_8b) echo "C++ CkChannel, 8 B one-way (us)" ;;
    buffer_16m) echo "Python isend/irecv, 16 MiB (MB/s)" ;;
    message_16m) echo "Python send/recv, 16 MiB (MB/s)" ;;
    cpp_16m) echo "C++ CkChannel, 16 MiB (MB/s)" ;;
  esac
}
printf '%-40s %10s   %s\n' "" "median" "runs"
for n in "${names[@]}"; do
  med[$n]=$(tr ' ' '\n' <<<"${runs[$n]:-}" | grep . | median || true)
  printf '%-40s %10s   %s\n' "$(label "$n")" "${med[$n]:-n/a}" "${runs[$n]:-}"
done
ratio() {
  [ -n "${med[$1]:-}" ] && [ -n "${med[$2]:-}" ] || return 0
  awk -v a="${med[$1]}" -v b="${med[$2]}" -v l="$3" 'BEGIN { if (b > 0) printf "%-40s %10.2f\n", l, a / b }'
}
ratio buffer_8b cpp_8b "latency 8 B: isend/irecv / C++"
ratio message_8b cpp_8b "latency 8 B: send/recv / C++"
ratio buffer_16m cpp_16m "bandwidth 16 MiB: isend/irecv / C++"
ratio message_16m cpp_16m "bandwidth 16 MiB: send/recv / C++"
