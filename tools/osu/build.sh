#!/usr/bin/env bash
# Builds the OSU micro-benchmarks' MPI one-sided and point-to-point latency/bandwidth
# programs (OMB 7.x sources, not part of this repository: pass their folder) with one MPI
# compiler, optionally with CUDA buffers (-d cuda), without OSU's autotools build (its
# generated libtool does not match Debian's). Used to compare ucharm's AMPI (ampicc) with
# OpenMPI (mpicc) on the same programs:
#   tools/osu/build.sh OMB_SRC OUT_DIR CC [cuda]
#   e.g. tools/osu/build.sh ~/osu-micro-benchmarks-7.4 build/osu-ampi build/runtime/ampi/bin/ampicc cuda
set -euo pipefail
src=$(realpath "$1"); out=$(realpath -m "$2"); cc=$3; cuda=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
u=$src/c/util
[ -f "$u/osu_util_mpi.c" ] || { echo "build.sh: $src is not an OMB 7.x source tree (no c/util/osu_util_mpi.c)" >&2; exit 2; }
mkdir -p "$out/obj"
flags=(-O2 -I"$u" -DPACKAGE_VERSION='"7.4"' -D_GNU_SOURCE)
libs=(-lm)
if [ "$cuda" = cuda ]; then
  cudadir=${CUDA_HOME:-/usr/local/cuda}
  flags+=(-D_ENABLE_CUDA_ -I"$cudadir/include" -include "$here/cuda13_compat.h")
  libs+=(-L"$cudadir/lib64" -lcudart_static -lcuda -ldl -lrt -lpthread)
fi
objs=()
for f in osu_util.c osu_util_mpi.c osu_util_graph.c osu_util_papi.c osu_util_validation.c; do
  [ -f "$u/$f" ] || continue
  "$cc" "${flags[@]}" -c "$u/$f" -o "$out/obj/${f%.c}.o"
  objs+=("$out/obj/${f%.c}.o")
done
progs=(one-sided/osu_put_latency one-sided/osu_get_latency one-sided/osu_put_bw one-sided/osu_get_bw
       one-sided/osu_acc_latency one-sided/osu_fop_latency one-sided/osu_cas_latency
       one-sided/osu_get_acc_latency pt2pt/standard/osu_latency pt2pt/standard/osu_bw)
for p in "${progs[@]}"; do
  [ -f "$src/c/mpi/$p.c" ] || continue
  "$cc" "${flags[@]}" "$src/c/mpi/$p.c" "${objs[@]}" "${libs[@]}" -o "$out/$(basename "$p")"
done
ls "$out" | grep -v '^obj$'
