#!/usr/bin/env bash
# Packs what the GPU machine needs into .device/ (ignored by git; carry it with the
# device tool): the built binaries the GPU tests run, stripped, in the build tree's own
# layout, with the build tree's CTest files (so `ctest -R Gpu` runs there); the UCX
# wheel's libraries; the Debian libraries that machine's image lacks; and the scripts
# that use the pack (tools/device-env.sh, tools/gpu-check.sh), so that it runs from any
# checkout of the project.
#   tools/device-pack.sh [build-dir]      (DEBUG=1 keeps symbols; DEVICE_DIR=dir packs
#                                          into dir instead of .device, e.g. another
#                                          checkout's ignored folder, the one that travels)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath "${1:-$root/build}")
ucx=$(sed -n 's/^UCHARM_UCX_ROOT:PATH=//p' "$build/CMakeCache.txt")
dev=$(realpath -m "${DEVICE_DIR:-$root/.device}")
case $dev in / | "$root" | "$build") echo "device-pack: will not replace $dev" >&2; exit 1 ;; esac
rm -rf "$dev"
mkdir -p "$dev/build" "$dev/libucx/lib/ucx" "$dev/syslib"
for f in tools/ucharmrun/ucharmrun runtime/converse/libucharm-converse.so runtime/core/libucharm-core.so \
         tests/converse/converse_testprog tests/converse/converse_multiprocess_tests \
         tests/core/core_megatest tests/core/core_tests benchmarks/converse_pingpong benchmarks/osu \
         examples/jacobi3d/jacobi3d tests/jacobi3d/jacobi3d_unit_tests tests/machine-ucx/machine_unit_tests \
         runtime/ampi/libucharm-ampi.so examples/jacobi3d/mpi/jacobi3d_mpi benchmarks/mpi/osu_mpi_ompi \
         tests/core/core_device_window tests/core/core_device_window_tests benchmarks/core_device_window_lat \
         benchmarks/core_roofline tests/core/core_stream_ordered tests/core/core_stream_ordered_tests \
         benchmarks/core_stream_ordered_lat benchmarks/core_window_latency tests/core/core_window \
         tests/core/core_window_tests; do
  [ -e "$build/$f" ] || continue
  mkdir -p "$dev/build/$(dirname "$f")"
  if [ "${DEBUG:-0}" = 1 ]; then cp "$build/$f" "$dev/build/$f"; else strip -o "$dev/build/$f" "$build/$f"; fi
done
# AMPI programs carry the MPI program appended to the loader: strip would drop it.
for f in tests/ampi/ampi_p2p_cuda tests/ampi/ampi_collectives tests/ampi/ampi_partitioned examples/jacobi3d/mpi/jacobi3d_ampi \
         benchmarks/mpi/osu_mpi_ampi tests/ampi/ampi_enqueue; do
  [ -e "$build/$f" ] || continue
  mkdir -p "$dev/build/$(dirname "$f")"
  cp "$build/$f" "$dev/build/$f"
done
# OSU programs built by tools/osu/build.sh (AMPI ones carry the program: copied as is).
for d in osu-ampi osu-ompi; do
  [ -d "$build/$d" ] || continue
  mkdir -p "$dev/build/$d" && find "$build/$d" -maxdepth 1 -type f -perm -u+x -exec cp {} "$dev/build/$d/" \;
done
# CTest's files (they name the binaries by their absolute paths here; device-env.sh puts
# the packed tree at that path).
(cd "$build" && find . -name CTestTestfile.cmake -o -name '*_include.cmake' -o -name '*_tests.cmake') |
  while read -r f; do mkdir -p "$dev/build/$(dirname "$f")"; cp "$build/$f" "$dev/build/$f"; done
cp -L "$ucx"/lib/lib{ucp,uct,ucs,ucm}.so.0 "$dev/libucx/lib/"
cp -L "$ucx"/lib/ucx/lib{uct_cma,uct_cuda,ucm_cuda,ucx_perftest_cuda}.so.0 "$dev/libucx/lib/ucx/"
mkdir -p "$dev/libucx/bin" && cp "$ucx/bin/ucx_perftest" "$dev/libucx/bin/"
mkdir -p "$dev/libucx_cu13.libs" && cp "$ucx"/../libucx_cu13.libs/* "$dev/libucx_cu13.libs/" 2>/dev/null || true
strip --strip-unneeded "$dev"/libucx/lib/*.so.0 "$dev"/libucx/lib/ucx/*.so.0 2>/dev/null || true
for l in libboost_context.so.1.74.0 libfmt.so.9 libmetis.so.5; do cp -L "/lib/x86_64-linux-gnu/$l" "$dev/syslib/"; done
mkdir -p "$dev/tools" && cp "$root"/tools/{device-env.sh,gpu-check.sh,gpu-python.sh,gpu-ampi.sh} "$dev/tools/"
# The Python package: Cython's C++ output (compiled there for that machine's Python by
# tools/gpu-python.sh) and a greenlet wheel for its Python 3.12 (it has no registry).
if [ -e "$build/bindings/python/ucharm/_core.cpp" ]; then
  mkdir -p "$dev/python"
  cp "$build/bindings/python/ucharm/_core.cpp" "$dev/python/"
  "$root/.venv/bin/pip" download -q --disable-pip-version-check 'greenlet>=3' --python-version 3.12 \
      --only-binary=:all: --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
      -d "$dev/python/wheels" >/dev/null 2>&1 || echo "device-pack: no greenlet wheel for Python 3.12 (offline?)" >&2
fi
echo "$build" > "$dev/build-dir"  # absolute: the RPATHs and the tests' compiled-in paths
echo "$ucx" > "$dev/ucx-dir"
echo "$root" > "$dev/source-dir"  # the tests' scripts are named by their paths there
du -sh "$dev"
