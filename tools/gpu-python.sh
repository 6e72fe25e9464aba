#!/usr/bin/env bash
# On the GPU machine (with .device/ carried; tools/device-pack.sh): builds the Python
# package for that machine's python3 from the packed Cython output, then runs the CuPy
# tests, the Python GPU ping-pong next to the C++ Channel and cudaMemcpyPeer, and the
# Python Jacobi3D (GPU-direct vs staging, --verify), 1 and 2 PEs per GPU. Logs in $OUT.
#   tools/gpu-python.sh [tests|bench|jacobi|all]      (default all)
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
source tools/device-env.sh
what=${1:-all}
py=${PYTHON:-python3}
pkg=/tmp/ucharm-py
rm -rf "$pkg" && mkdir -p "$pkg/ucharm"
# Every module, subpackages (ucharm/ray) included.
(cd bindings/python && find ucharm -name '*.py' -exec cp --parents {} "$pkg/" \;)
ext=$($py -c 'import sysconfig;print(sysconfig.get_config_var("EXT_SUFFIX"))')
inc=$($py -c 'import sysconfig;print(sysconfig.get_paths()["include"])')
g++ -O2 -std=c++20 -shared -fPIC -I"$inc" -Iruntime/core/include -Iruntime/converse/include \
    -Ibindings/python/src "$dev/python/_core.cpp" bindings/python/src/glue.cpp \
    -L"$build/runtime/core" -L"$build/runtime/converse" -lucharm-core -lucharm-converse \
    -Wl,--disable-new-dtags -Wl,-rpath,"$build/runtime/core:$build/runtime/converse" \
    -o "$pkg/ucharm/_core$ext" 2> "$out/py-build.log" || { echo "gpu-python: build failed"; cat "$out/py-build.log"; exit 1; }
if ! $py -c 'import greenlet' 2>/dev/null; then
  (cd "$pkg" && for w in "$dev"/python/wheels/greenlet-*.whl; do $py -m zipfile -e "$w" .; done)
fi
export PYTHONPATH=$pkg${PYTHONPATH:+:$PYTHONPATH}
export UCHARMRUN=$build/tools/ucharmrun/ucharmrun
R="$UCHARMRUN"
$py -c 'import ucharm, cupy; print("ucharm", ucharm.__file__, "cupy", cupy.__version__, "GPUs", cupy.cuda.runtime.getDeviceCount())'
rc=0
if [ "$what" = all ] || [ "$what" = tests ]; then
  echo "== pytest tests/python/test_cupy.py"
  $py -m pytest -q -rfE tests/python/test_cupy.py 2>&1 | tail -40; [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
fi
med() { printf '%s\n' "$@" | grep . | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
if [ "$what" = all ] || [ "$what" = bench ]; then
  echo "== Python CuPy channel vs C++ Channel, alternating (REPS=${REPS:-5})"
  pyl=() cl=() pyb=() cb=() stl=()
  for i in $(seq "${REPS:-5}"); do
    pyl+=("$($R -n 2 --timeout 120 $py benchmarks/python/pingpong.py --mode cupy-direct --min 8 --max 8 --iters 5000 | awk '$1==8{print $2}')")
    stl+=("$($R -n 2 --timeout 120 $py benchmarks/python/pingpong.py --mode cupy-staging --min 8 --max 8 --iters 5000 | awk '$1==8{print $2}')")
    cl+=("$($R -n 2 --timeout 60 $build/benchmarks/osu --mode channel --mem cuda --test lat --min 8 --max 8 --iters 10000 | awk '$1==8{print $2}')")
    pyb+=("$($R -n 2 --timeout 120 $py benchmarks/python/pingpong.py --mode cupy-direct --test bw --window 32 --min 16M --max 16M --iters 6400 | awk '$1==16777216{print $3}')")
    cb+=("$($R -n 2 --timeout 60 $build/benchmarks/osu --mode channel --mem cuda --test bw --min 16M --max 16M --iters 200 | awk '$1==16777216{print $2}')")
  done
  echo "8 B latency us: python cupy-direct $(med "${pyl[@]}") (${pyl[*]}); python cupy-staging $(med "${stl[@]}") (${stl[*]}); C++ channel $(med "${cl[@]}") (${cl[*]})"
  echo "16 MiB bandwidth MB/s (windows of 32): python cupy-direct $(med "${pyb[@]}") (${pyb[*]}); C++ channel $(med "${cb[@]}") (${cb[*]})"
  $R -n 2 --timeout 200 $py benchmarks/python/pingpong.py --mode cupy-direct --test bw --window 32 --min 1M --max 256M --iters 3200 > "$out/py-cupy-direct-bw.txt" 2>&1
  $R -n 2 --timeout 200 $build/benchmarks/osu --mode channel --mem cuda --test bw --min 1M --max 256M --iters 200 > "$out/cpp-channel-bw.txt" 2>&1
  echo "-- bandwidth sweeps: python cupy-direct | C++ channel"; paste "$out/py-cupy-direct-bw.txt" "$out/cpp-channel-bw.txt"
  nvcc -O2 -o /tmp/peer_bw tools/peer_bw.cu && /tmp/peer_bw > "$out/peer.txt" 2>&1
  echo "-- cudaMemcpyPeer"; cat "$out/peer.txt"
fi
if [ "$what" = all ] || [ "$what" = jacobi ]; then
  echo "== Python Jacobi3D --gpu"
  for np in 2 4; do
    for mode in direct staging; do
      $R -n $np --timeout 200 $py examples/jacobi3d/python/jacobi3d.py --gpu --mode $mode --grid 192 --blocks 8 --iters 100 --verify > "$out/jacobi-$np-$mode.txt" 2>&1
      echo "np=$np mode=$mode rc=$? $(grep -iE 'time|verify' "$out/jacobi-$np-$mode.txt" | tr '\n' ' ')"
    done
  done
fi
exit $rc
