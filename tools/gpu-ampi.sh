#!/usr/bin/env bash
# On the GPU machine (device tool, .device/ carried: tools/device-pack.sh), AMPI with CUDA
# buffers: the p2p_cuda test program in several layouts (ranks per PE and per GPU, staging,
# every send zero-copy), Jacobi3D in MPI with --verify (1, 2 and 4 ranks per GPU), then
# benchmarks/run_mpi_gpu.sh (latency and bandwidth against OpenMPI and the Channel API).
# Exit status: non-zero if a check failed.
#   bash tools/gpu-ampi.sh            (REPS=n for run_mpi_gpu.sh; SKIP_BENCH=1 skips it)
set -uo pipefail
source tools/device-env.sh
R=$build/tools/ucharmrun/ucharmrun
P=$build/tests/ampi/ampi_p2p_cuda
C=$build/tests/ampi/ampi_collectives
JA=$build/examples/jacobi3d/mpi/jacobi3d_ampi
nvidia-smi -L
fails=0
check() {  # label expected-regex command...
  local label=$1 want=$2
  shift 2
  local log
  log=$("$@" 2>&1)
  local rc=$?
  if [ $rc -eq 0 ] && grep -qE "$want" <<<"$log"; then
    echo "ok    $label"
  else
    echo "FAIL  $label (exit $rc)"
    tail -15 <<<"$log"
    fails=$((fails + 1))
  fi
}
echo "== p2p_cuda"
for cfg in "-n 1" "-n 2" "-n 2 +vp 4" "-n 2 +vp 8" "-n 4" "-n 2 +ampi-staging" "-n 2 +vp 4 +ampi-direct-min=1" "-n 8 +vp 16"; do
  read -ra a <<<"$cfg"
  n=${a[1]}
  check "p2p_cuda $cfg" "p2p_cuda: ok" "$R" -n "$n" --timeout 100 "$P" "${a[@]:2}"
done
echo "== collectives (host buffers) on the GPU machine"
check "collectives -n 2 +vp 8" "collectives: ok" "$R" -n 2 --timeout 100 "$C" +vp 8
echo "== Jacobi3D MPI, CUDA kernels, --verify"
for vp in 2 4 8; do
  for mode in staging gpuaware; do
    check "jacobi3d_ampi -n 2 +vp $vp --mode $mode" "verify.*(ok|pass|match)" \
      "$R" -n 2 --timeout 100 "$JA" --grid 96 --iters 20 --warmup 2 --kernels cuda --mode $mode --verify +vp $vp
  done
done
[ "${SKIP_BENCH:-0}" = 1 ] || bash benchmarks/run_mpi_gpu.sh
echo "== $fails failed"
exit $((fails > 0))
