#!/usr/bin/env bash
# On the GPU machine (after tools/gpu-check.sh set up the packed build): OSU latency and
# bandwidth for every mode with CUDA buffers, one GPU per PE, next to raw
# ucx_perftest -m cuda (same UCX) and cudaMemcpyPeer, in one run. CSV in $OUT/osu.csv.
set -uo pipefail
out=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=$PWD/.device/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=/work/main/build/tools/ucharmrun/ucharmrun
B=/work/main/build/benchmarks/osu
csv=$out/osu.csv
: > "$csv"
for mode in staging gpumsg channel; do
  $R -n 2 --timeout 200 $B --mode $mode --mem cuda --test lat --max 4M --iters 1000 --csv "$csv" > "$out/lat-$mode.txt" 2>&1
  $R -n 2 --timeout 200 $B --mode $mode --mem cuda --test bw --min 1k --max 64M --iters 2000 --csv "$csv" > "$out/bw-$mode.txt" 2>&1
done
$R -n 2 --timeout 200 $B --mode host --test lat --max 4M --iters 1000 --csv "$csv" > "$out/lat-host.txt" 2>&1
ucx=$(cat .device/ucx-dir)
pt() {  # server-GPUs client-GPUs test size iters -> ucx_perftest "Final" line
  CUDA_VISIBLE_DEVICES=$1 LD_LIBRARY_PATH=$ucx/lib $ucx/bin/ucx_perftest -p 23456 -t "$3" -m cuda -s "$4" -n "$5" > /dev/null 2>&1 &
  sleep 1
  CUDA_VISIBLE_DEVICES=$2 LD_LIBRARY_PATH=$ucx/lib $ucx/bin/ucx_perftest 127.0.0.1 -p 23456 -t "$3" -m cuda -s "$4" -n "$5" 2>&1 | grep Final
  wait
}
{
  for v in "0 1" "0,1 0,1"; do
    set -- $v
    echo "# CUDA_VISIBLE_DEVICES server=$1 client=$2"
    for s in 8 65536 1048576; do echo "tag_lat $s $(pt $1 $2 tag_lat $s 10000)"; done
    for s in 1048576 16777216 67108864; do echo "tag_bw $s $(pt $1 $2 tag_bw $s 200)"; done
  done
} > "$out/perftest.txt"
nvcc -O2 -o /tmp/peer_bw tools/peer_bw.cu && /tmp/peer_bw > "$out/peer.txt" 2>&1
echo "== ucx_perftest -m cuda (Final: iters, 50%ile, avg, overall lat us, avg, overall bw MB/s, ...)"; cat "$out/perftest.txt"
echo "== cudaMemcpyPeer"; cat "$out/peer.txt"
echo "== ucharm (test,mode,mem,size,value)"; grep -E ",(8|65536|1048576|16777216|67108864)," "$csv"
echo "== Table 1 (same run): channel vs staging, then gpumsg vs staging"
python3 tools/osu_table.py "$csv" --aware channel
python3 tools/osu_table.py "$csv" --aware gpumsg
