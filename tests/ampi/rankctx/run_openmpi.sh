#!/usr/bin/env bash
# The programs of this folder built with a system MPI (mpicc/mpicxx) and run at 2 and 4
# ranks: a real MPI must pass them too (AMPI's moves are left out there). Not run by CTest.
#   tests/ampi/rankctx/run_openmpi.sh [outdir]   (default /tmp/ampi-openmpi-rankctx)
# Environment: MPICC, MPICXX, MPIRUN (default "mpirun --allow-run-as-root --oversubscribe").
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/ampi-openmpi-rankctx}
mpicc=${MPICC:-mpicc}
mpicxx=${MPICXX:-mpicxx}
mpirun=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
mkdir -p "$out"
fails=0
progs=()
for src in "$here"/*.c "$here"/*.cpp; do
  [ -e "$src" ] || continue
  p=$(basename "${src%.*}")
  case $src in *.c) cc=$mpicc ;; *) cc=$mpicxx ;; esac
  if $cc -O1 -o "$out/$p" "$src" 2>"$out/$p.build.log"; then progs+=("$p"); else echo "BUILD FAIL $p"; fails=$((fails + 1)); fi
done
for np in 2 4; do
  for p in "${progs[@]}"; do
    log="$out/$p.np$np.log"
    if timeout 120 $mpirun -np "$np" "$out/$p" >"$log" 2>&1 && grep -q "$p: ok ($np ranks)" "$log"; then
      echo "ok   $p -np $np"
    else
      echo "FAIL $p -np $np (see $log)"
      fails=$((fails + 1))
    fi
  done
done
exit $((fails > 0))
