#!/usr/bin/env bash
# OSU one-sided latency (OMB 7.x programs, built by tools/osu/build.sh into
# $build/osu-ampi and $build/osu-ompi, with `cuda` for -d cuda): ucharm's AMPI under
# ucharmrun against OpenMPI 4.1 (osc ucx over the same UCX), one rank per GPU (OSU picks
# the GPU from the local-rank variables ucharmrun and mpirun export), alternated REPS
# times in one run (PROGS and SIZES choose); medians and the OpenMPI/AMPI ratio per program and size.
#   On the GPU machine (with .device/ carried):  benchmarks/run_osu_onesided.sh [D|H]
#   Here (host memory; $build defaults to ./build): MEM=H benchmarks/run_osu_onesided.sh H
set -uo pipefail
mem=${1:-D}
if nvidia-smi -L > /dev/null 2>&1 && [ -f "${DEVICE_DIR:-.device}/build-dir" ]; then
  source tools/device-env.sh
  export LD_LIBRARY_PATH=$ucx/lib:$LD_LIBRARY_PATH  # OpenMPI's UCX components load the wheel's UCX
else
  build=${build:-$PWD/build}
fi
R=$build/tools/ucharmrun/ucharmrun
reps=${REPS:-5}
sizes=${SIZES:-8:8 4096:4096 1048576:1048576}
ompi=(mpirun --allow-run-as-root -x LD_LIBRARY_PATH --mca pml ucx --mca osc ucx --mca pml_ucx_tls any
      --mca pml_ucx_devices any --bind-to core -np 2)
dev=()
[ "$mem" = D ] && dev=(-d cuda D D)
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
printf '%-22s %10s %12s %12s %8s\n' program bytes ampi_us openmpi_us ompi/ampi
for prog in ${PROGS:-osu_put_latency osu_get_latency osu_acc_latency osu_fop_latency osu_cas_latency}; do
  for m in $sizes; do
    case $prog in osu_fop_latency|osu_cas_latency) [ "$m" = "8:8" ] || continue; m="" ;; esac
    a=() o=()
    for i in $(seq "$reps"); do
      a+=("$($R -n 2 --timeout 60 "$build/osu-ampi/$prog" "${dev[@]}" ${m:+-m $m} 2>/dev/null | awk '/^[0-9]/{v=$2} END{print v}')")
      o+=("$(timeout 60 "${ompi[@]}" "$build/osu-ompi/$prog" "${dev[@]}" ${m:+-m $m} 2>/dev/null | awk '/^[0-9]/{v=$2} END{print v}')")
    done
    ma=$(med "${a[@]}"); mo=$(med "${o[@]}")
    printf '%-22s %10s %12s %12s %8s   (ampi: %s | ompi: %s)\n' "$prog" "${m%%:*}" "$ma" "$mo" \
      "$(awk -v a="$ma" -v o="$mo" 'BEGIN{ if (a > 0) printf "%.2f", o / a; else print "-" }')" "${a[*]}" "${o[*]}"
  done
done
