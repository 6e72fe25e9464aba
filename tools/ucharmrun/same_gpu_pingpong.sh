#!/usr/bin/env bash
# shellcheck disable=SC2154  # build and ucx come from tools/device-env.sh
# On the GPU machine (a pack carried; see tools/device-env.sh), from the repository root:
# device-to-device one-way latency between two PEs on the SAME GPU without and with the
# job's CUDA MPS daemon (ucharmrun --mps off / --mps on), next to two PEs on two GPUs, in
# one run, alternated REPS times (default 5); medians, and the same-GPU/cross-GPU ratios
# (issue 19's target: two PEs on one GPU within 1.2x of two GPUs at 8 B). Layers: ucharm's
# Channel (benchmarks/osu), AMPI (osu_mpi_ampi -d cuda) and raw ucx_perftest tag_lat, whose
# two sides ucharmrun starts (LOCAL_RANK picks server or client) so that they get the
# job's MPS daemon too; and OSU's own osu_latency -d cuda built for AMPI (if
# tools/osu/build.sh put it in $build/osu-ampi: it picks its GPU from the local-rank
# variables ucharmrun exports). Then Channel bandwidth at 16 MiB on one GPU, off and on.
#   DEVICE_DIR=.device-x REPS=5 bash tools/ucharmrun/same_gpu_pingpong.sh
set -uo pipefail
source tools/device-env.sh  # sets build, ucx
R=$build/tools/ucharmrun/ucharmrun
B=$build/benchmarks/osu
A=$build/benchmarks/mpi/osu_mpi_ampi
P=$ucx/bin/ucx_perftest
reps=${REPS:-5}
export LD_LIBRARY_PATH=$ucx/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

nvidia-smi -L
compute_mode() { nvidia-smi --query-gpu=index,compute_mode --format=csv,noheader | tr '\n' ' '; }
before=$(compute_mode)
echo "compute mode before: $before"
echo "== what ucharmrun decides (2 PEs on GPU 0; 2 PEs on GPUs 0,1):"
CUDA_VISIBLE_DEVICES=0 $R -v -n 2 /bin/true 2>&1 | grep MPS
CUDA_VISIBLE_DEVICES=0,1 $R -v -n 2 /bin/true 2>&1 | grep MPS

# Each prints one number (us, or MB/s for bw): mps-mode gpus size
channel() {
  CUDA_VISIBLE_DEVICES=$2 $R -n 2 --mps "$1" --timeout 120 "$B" --mode channel --mem cuda \
    --test lat --min "$3" --max "$3" --iters 10000 | awk -v s="$3" '$1==s {print $2}'
}
ampi() {
  CUDA_VISIBLE_DEVICES=$2 $R -n 2 --mps "$1" --timeout 120 "$A" -t latency -d cuda -m "$3:$3" |
    awk -v s="$3" '$1==s {print $2}'
}
raw() {  # the client's Final line: iterations, typical, average, overall latency...
  local port=$((24000 + RANDOM % 8000))
  CUDA_VISIBLE_DEVICES=$2 $R -n 2 --mps "$1" --timeout 120 /bin/sh -c '
    if [ "$LOCAL_RANK" = 0 ]; then exec "$0" -p "$1" -t tag_lat -m cuda -s "$2" -n 10000 >/dev/null 2>&1
    else sleep 1; exec "$0" 127.0.0.1 -p "$1" -t tag_lat -m cuda -s "$2" -n 10000; fi' "$P" "$port" "$3" |
    awk '/Final:/ {print $4}'
}
O=$build/osu-ampi/osu_latency
osu() {
  CUDA_VISIBLE_DEVICES=$2 $R -n 2 --mps "$1" --timeout 120 "$O" -d cuda -m "$3:$3" D D |
    awk -v s="$3" '$1==s {print $2}'
}
layers=(channel ampi raw)
[ -x "$O" ] && layers+=(osu)
channel_bw() {
  CUDA_VISIBLE_DEVICES=$2 $R -n 2 --mps "$1" --timeout 120 "$B" --mode channel --mem cuda \
    --test bw --min "$3" --max "$3" --iters 200 | awk -v s="$3" '$1==s {print $2}'
}
# Two GPUs: each ucx_perftest side on its own GPU (it uses device 0 of what it sees).
raw_cross() {
  local port=$((24000 + RANDOM % 8000))
  $R -n 2 --mps off --timeout 120 /bin/sh -c '
    export CUDA_VISIBLE_DEVICES=$LOCAL_RANK
    if [ "$LOCAL_RANK" = 0 ]; then exec "$0" -p "$1" -t tag_lat -m cuda -s "$2" -n 10000 >/dev/null 2>&1
    else sleep 1; exec "$0" 127.0.0.1 -p "$1" -t tag_lat -m cuda -s "$2" -n 10000; fi' "$P" "$port" "$3" |
    awk '/Final:/ {print $4}'
}

declare -A V  # V[layer,config,size] = "v1 v2 ..."
configs=(cross same_off same_on)
for ((i = 1; i <= reps; i++)); do
  for s in 8 1048576; do
    for c in "${configs[@]}"; do
      case $c in cross) g=0,1 m=off ;; same_off) g=0 m=off ;; same_on) g=0 m=on ;; esac
      for l in "${layers[@]}"; do
        f=$l
        [ "$l" = raw ] && [ "$c" = cross ] && f=raw_cross
        V[$l,$c,$s]+="$($f "$m" "$g" "$s") "
      done
    done
  done
  for m in off on; do V[bw,same_$m,16777216]+="$(channel_bw $m 0 16777216) "; done
done

med() { tr ' ' '\n' <<<"${V[$1]:-}" | grep . | sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else printf "-" }'; }
echo "== one-way latency (us), medians of $reps alternating runs; ratios to two GPUs"
printf '%-8s %8s %10s %10s %10s %9s %9s\n' layer size two_gpus same_off same_on off/two on/two
for l in "${layers[@]}"; do
  for s in 8 1048576; do
    x=$(med "$l,cross,$s"); o=$(med "$l,same_off,$s"); n=$(med "$l,same_on,$s")
    printf '%-8s %8s %10s %10s %10s %9s %9s\n' "$l" "$s" "${x:--}" "${o:--}" "${n:--}" "$(ratio "$o" "$x")" "$(ratio "$n" "$x")"
  done
done
for l in "${layers[@]}"; do for s in 8 1048576; do for c in "${configs[@]}"; do
  echo "  runs $l $c $s: ${V[$l,$c,$s]:-}"; done; done; done
echo "== Channel bandwidth at 16 MiB on one GPU (MB/s): off $(med "bw,same_off,16777216") (${V[bw,same_off,16777216]:-}), on $(med "bw,same_on,16777216") (${V[bw,same_on,16777216]:-})"
after=$(compute_mode)
echo "compute mode after: $after"
[ "$before" = "$after" ] || echo "COMPUTE MODE CHANGED"
pgrep -a nvidia-cuda-mps || echo "no MPS process left"
