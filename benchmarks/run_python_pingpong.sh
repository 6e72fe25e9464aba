#!/usr/bin/env bash
# Python ping-pong figures, measured alternately in one run: ucharm's Python bindings (a
# bytes object through a proxy call and through a Channel, 8 B; a NumPy array through a
# Channel, 1 MiB), mpi4py on the system OpenMPI (pickled comm.send/recv, 8 B) and ucharm's
# C++ Converse ping-pong (1 MiB); medians of the repetitions and ratios. The 8 B bytes
# object takes ucharm's fast wire format while mpi4py pickles it; the "object" rows send a
# small object holding it (benchmarks/python/common.py's Payload), which both pickle
# (like with like).
#   benchmarks/run_python_pingpong.sh [build-dir] [repeats]
# PYTHON: the interpreter for ucharm (NumPy, greenlet; default: the project's .venv).
# BASELINE: a folder holding an older built package (BASELINE/ucharm, e.g. a copy of
# build/bindings/python/ucharm kept before a change): its proxy and Channel 8 B figures
# are measured too, alternating with the current build's, for before/after ratios.
# mpi4py goes into a virtualenv of its own, .venv-mpi4py, created on the first run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
reps=${2:-5}
iters=${ITERS:-20000}
run="$build/tools/ucharmrun/ucharmrun"
pp="$build/benchmarks/converse_pingpong"
bench="$root/benchmarks/python"
py=${PYTHON:-$root/.venv/bin/python}
venv="$root/.venv-mpi4py"
export PYTHONPATH="$build/bindings/python${PYTHONPATH:+:$PYTHONPATH}"

for f in "$run" "$pp"; do
  [ -x "$f" ] || { echo "run_python_pingpong.sh: $f is not built" >&2; exit 1; }
done
"$py" -c 'import ucharm, numpy' 2>/dev/null || {
  echo "run_python_pingpong.sh: $py cannot import ucharm and numpy (is $build/bindings/python built? set PYTHON)" >&2
  exit 1
}
# mpi4py against the system OpenMPI, in its own virtualenv (idempotent: once installed,
# nothing is fetched again). The '*' .gitignore keeps the virtualenv out of git.
if ! "$venv/bin/python" -c 'import mpi4py' 2>/dev/null; then
  echo "== creating $venv with mpi4py"
  python3 -m venv "$venv"
  echo '*' > "$venv/.gitignore"
  "$venv/bin/pip" install --quiet mpi4py
fi

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# Column 2 of the ping-pong tables is the one-way latency (us), column 3 the bandwidth (MB/s).
ours() {  # mode size column [PYTHONPATH] [payload]
  PYTHONPATH="${4:-$PYTHONPATH}" "$run" -n 2 --timeout 120 "$py" "$bench/pingpong.py" --mode "$1" --min "$2" --max "$2" \
    --iters "$iters" --payload "${5:-bytes}" | awk -v c="$3" '!/^#/ {print $c}'
}
proxy_obj() { ours proxy-bytes 8 2 "" object; }
channel_obj() { ours channel-bytes 8 2 "" object; }
proxy_8b() { ours proxy-bytes 8 2; }
channel_8b() { ours channel-bytes 8 2; }
baseline_path() { echo "$(cd "$BASELINE" && pwd)${PYTHONPATH#"$build/bindings/python"}"; }
proxy_8b_base() { ours proxy-bytes 8 2 "$(baseline_path)"; }
channel_8b_base() { ours channel-bytes 8 2 "$(baseline_path)"; }
numpy_1m() { ours numpy 1M 3; }
mpi4py_8b() {
  timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$venv/bin/python" "$bench/mpi4py_pingpong.py" \
    --mode pickle --min 8 --max 8 --iters "$iters" --payload "${1:-bytes}" | awk '!/^#/ {print $2}'
}
mpi4py_obj() { mpi4py_8b object; }
converse_1m() { "$run" -n 2 --timeout 120 "$pp" --min 1M --max 1M --iters "$iters" | awk '!/^#/ {print $3}'; }

echo "== machine: $(nproc) cores, $(uname -r); $("$py" --version); $(mpirun --version | head -1);" \
  "mpi4py $("$venv/bin/python" -c 'import mpi4py; print(mpi4py.__version__)')"
echo "== $reps alternating repetitions; $iters round trips at 8 B, $((iters / 100 > 50 ? iters / 100 : 50)) at 1 MiB"
names=(proxy_8b channel_8b mpi4py_8b proxy_obj channel_obj mpi4py_obj numpy_1m converse_1m)
if [ -n "${BASELINE:-}" ]; then
  [ -f "$BASELINE/ucharm/__init__.py" ] || { echo "run_python_pingpong.sh: BASELINE=$BASELINE holds no ucharm package" >&2; exit 1; }
  names=(proxy_8b_base proxy_8b channel_8b_base channel_8b mpi4py_8b proxy_obj channel_obj mpi4py_obj numpy_1m converse_1m)
fi
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
    proxy_8b) echo "ucharm Python, bytes by proxy call, 8 B (us)" ;;
    channel_8b) echo "ucharm Python, bytes by Channel, 8 B (us)" ;;
    proxy_8b_base) echo "BASELINE: bytes by proxy call, 8 B (us)" ;;
    channel_8b_base) echo "BASELINE: bytes by Channel, 8 B (us)" ;;
    mpi4py_8b) echo "mpi4py pickled send/recv, 8 B (us)" ;;
    proxy_obj) echo "ucharm Python, object (pickled) by proxy call (us)" ;;
    channel_obj) echo "ucharm Python, object (pickled) by Channel (us)" ;;
    mpi4py_obj) echo "mpi4py pickled send/recv, object (us)" ;;
    numpy_1m) echo "ucharm Python, NumPy by Channel, 1 MiB (MB/s)" ;;
    *) echo "ucharm Converse ping-pong, 1 MiB (MB/s)" ;;
  esac
}
printf '%-48s %10s   %s\n' "" "median" "runs"
for n in "${names[@]}"; do
  med[$n]=$(tr ' ' '\n' <<<"${runs[$n]:-}" | grep . | median || true)
  printf '%-48s %10s   %s\n' "$(label "$n")" "${med[$n]:-n/a}" "${runs[$n]:-}"
done
ratio() {  # a b text -> "text a/b" when both medians exist
  [ -n "${med[$1]:-}" ] && [ -n "${med[$2]:-}" ] || return 0
  awk -v a="${med[$1]}" -v b="${med[$2]}" -v l="$3" 'BEGIN { if (b > 0) printf "%-48s %10.2f\n", l, a / b }'
}
ratio proxy_8b mpi4py_8b "latency 8 B: proxy call / mpi4py"
ratio channel_8b mpi4py_8b "latency 8 B: Channel / mpi4py"
ratio proxy_obj mpi4py_obj "latency object: proxy call / mpi4py"
ratio channel_obj mpi4py_obj "latency object: Channel / mpi4py"
ratio proxy_8b proxy_8b_base "latency 8 B: proxy call / BASELINE's"
ratio channel_8b channel_8b_base "latency 8 B: Channel / BASELINE's"
ratio proxy_8b_base mpi4py_8b "latency 8 B: BASELINE's proxy call / mpi4py"
ratio channel_8b_base mpi4py_8b "latency 8 B: BASELINE's Channel / mpi4py"
ratio numpy_1m converse_1m "bandwidth 1 MiB: NumPy Channel / Converse"
