#!/usr/bin/env bash
# On the GPU machine (a pack from tools/device-pack.sh carried; DEVICE_DIR names it): the
# device-window tests (all GPUs visible, then one GPU shared), the device-window benchmark
# on two GPUs and with two PEs on one GPU, and in the same run the peers it is compared
# with: the tag-path Channel (osu --mode channel --mem cuda) and ucx_perftest's
# ucp_put_lat, host-initiated (-m cuda, as issue 19 quotes) and through the UCX device
# API (-a cuda). Logs in $OUT.
#   benchmarks/run_device_window.sh
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
source tools/device-env.sh
R=$build/tools/ucharmrun/ucharmrun
ucx=$(cat "$dev/ucx-dir")
nvidia-smi -L | tee "$out/gpus.txt"
nvidia-smi topo -m > "$out/topo.txt" 2>&1
echo "--- tests"
ctest --test-dir "$build" -R DeviceWindow --output-on-failure --timeout 120 > "$out/ctest.txt" 2>&1
grep -E "Test +#|out of|GPU|s$" "$out/ctest.txt" | grep -E "Test|out of"
CUDA_VISIBLE_DEVICES=0 ctest --test-dir "$build" -R DeviceWindowGpu --output-on-failure --timeout 120 > "$out/ctest-shared.txt" 2>&1
grep -E "Test +#|out of" "$out/ctest-shared.txt"
grep -E "two PEs on" "$out/ctest.txt" "$out/ctest-shared.txt"
echo "--- benchmark, 2 PEs on 2 GPUs"
timeout 200 "$R" -n 2 --timeout 180 "$build/benchmarks/core_device_window_lat" 20000 256 5 > "$out/bench-2gpu.txt" 2>&1
echo "exit $?"; cat "$out/bench-2gpu.txt"
echo "--- benchmark, 2 PEs on one GPU (time-sliced kernels: few iterations)"
DW_DEVICE=0 timeout 100 "$R" -n 2 --timeout 90 "$build/benchmarks/core_device_window_lat" 200 16 3 > "$out/bench-1gpu.txt" 2>&1
echo "exit $?"; cat "$out/bench-1gpu.txt"
pt() {  # server-GPU client-GPU label args... -> the "Final" line
  local label=$1 s=$2 c=$3; shift 3
  CUDA_VISIBLE_DEVICES=$s LD_LIBRARY_PATH=$ucx/lib timeout 60 "$ucx/bin/ucx_perftest" -p 23457 "$@" > "$out/pt-$label-server.txt" 2>&1 &
  sleep 1
  CUDA_VISIBLE_DEVICES=$c LD_LIBRARY_PATH=$ucx/lib timeout 60 "$ucx/bin/ucx_perftest" 127.0.0.1 -p 23457 "$@" > "$out/pt-$label.txt" 2>&1
  wait
  echo "$label ($*): $(grep Final "$out/pt-$label.txt" | tail -1)"
  grep -iE "error|unsupported|not supported" "$out/pt-$label.txt" "$out/pt-$label-server.txt" | head -3
}
echo "--- peers (8 B, ucx_perftest Final: ... latency avg)"
for rep in 1 2 3; do
  pt "put_lat_host$rep" 0 1 -t ucp_put_lat -m cuda -s 8 -n 10000
  pt "put_lat_device_thread$rep" 0 1 -t ucp_put_lat -m cuda -a cuda -s 8 -n 10000
  pt "tag_lat$rep" 0 1 -t tag_lat -m cuda -s 8 -n 10000
  "$R" -n 2 --timeout 60 "$build/benchmarks/osu" --mode channel --mem cuda --test lat --min 8 --max 8 --iters 10000 2>&1 | awk '$1==8 {print "channel 8 B one-way us: " $2}'
done
pt "put_lat_device_warp" 0 1 -t ucp_put_lat -m cuda -a cuda -L warp -s 8 -n 10000
pt "put_lat_device_1gpu" 0 0 -t ucp_put_lat -m cuda -a cuda -s 8 -n 2000
