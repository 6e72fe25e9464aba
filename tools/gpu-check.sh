#!/usr/bin/env bash
# Runs on the GPU machine (device tool), from the repository root, with .device/ carried
# (tools/device-pack.sh makes it). Puts the packed build where its RPATHs and the tests'
# compiled-in paths point, then runs the GPU tests; full logs go to $OUT.
set -uo pipefail
root=$(pwd)
out=${OUT:-/tmp/out}
mkdir -p "$out"
source tools/device-env.sh
{
  nvidia-smi -L
  echo "--- libraries"
  ldd /work/main/build/tests/converse/converse_testprog | grep -E "not found|pmix|ucp|boost|fmt"
} 2>&1 | tee "$out/env.txt"
echo "--- GPU tests"
/work/main/build/tests/converse/converse_multiprocess_tests --gtest_filter='ConverseGpu.*:*Device*:*Channel*' \
  > "$out/gtest.txt" 2>&1
grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) " "$out/gtest.txt"
/work/main/build/tests/core/core_tests --gtest_filter='CoreGpu.*:*channels*' > "$out/gtest-core.txt" 2>&1
grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) " "$out/gtest-core.txt"
echo "--- Jacobi3D with CUDA kernels, every mode, 1 and 2 PEs, overdecomposed, checked against the serial run"
for mode in staging gpumsg channel; do
  for n in 1 2; do
    r=$(/work/main/build/tools/ucharmrun/ucharmrun -n $n --timeout 120 /work/main/build/examples/jacobi3d/jacobi3d \
        -x 48 -y 36 -z 24 --blocks 12 --iters 20 --warmup 3 --mode $mode --kernels cuda --verify 2>&1)
    echo "$r" >> "$out/jacobi-verify.txt"
    echo "jacobi3d $mode $n PEs: $(echo "$r" | grep -E "verify|rror|abort" | head -2)"
  done
done
echo "--- protocols UCX picked for CUDA buffers (2 PEs, one GPU each)"
UCX_PROTO_INFO=y /work/main/build/tools/ucharmrun/ucharmrun -n 2 --timeout 60 \
  /work/main/build/tests/converse/converse_testprog channel cuda > "$out/proto.txt" 2>&1
grep -E "cuda|channel ok" "$out/proto.txt" | grep -vE "^\s*$" | head -20
if [ "${GPU_DIAG:-0}" = 1 ]; then
  echo "--- diagnostics"
  ldd .device/libucx/lib/ucx/libuct_cuda.so.0 | grep -E "not found|cuda"
  ls /usr/local/cuda/lib64/libcudart.so* 2>/dev/null | head -3
  for n in 1 2; do
    UCX_LOG_LEVEL=info /work/main/build/tools/ucharmrun/ucharmrun -n $n --timeout 60 \
      /work/main/build/tests/converse/converse_testprog device cuda > "$out/diag$n.txt" 2>&1
    echo "device cuda on $n PEs: exit $?"; grep -iE "cuda|error|warn|segm|abort" "$out/diag$n.txt" | head -8
  done
  /work/main/build/tools/ucharmrun/ucharmrun -n 1 --timeout 60 /work/main/build/tests/converse/converse_testprog memtype 2>&1 | tail -4
fi
