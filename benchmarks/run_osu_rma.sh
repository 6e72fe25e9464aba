#!/usr/bin/env bash
# OSU's one-sided benchmarks (osu_put_latency, osu_get_latency, osu_put_bw, osu_acc_latency)
# on host memory, 2 ranks, under ucharm's AMPI and under OpenMPI, alternated REPS times in
# one run; prints the medians at a few sizes and their ratio (ours / OpenMPI) as rows of
# docs/benchmarks.md's "One-sided communication, host memory" table.
#   benchmarks/run_osu_rma.sh OSU_SRC [outdir]
# (Device memory on the GPU machine, from builds made here: benchmarks/run_osu_onesided.sh.)
# OSU_SRC: a tree holding c/mpi/one-sided and c/util (OSU Micro-Benchmarks 7.x). OSU's
# defaults: MPI_Win_allocate, MPI_Win_flush per operation (osu_put_bw: a window of 64 puts
# per flush). Environment: REPS (default 5), SIZES (default "8 1024 65536"), AMPI_ARGS (e.g.
# "+vp 2"), UCHARMRUN, AMPICC, MPICC, MPIRUN.
set -uo pipefail
src=${1:?usage: run_osu_rma.sh OSU_SRC [outdir]}
out=${2:-/tmp/osu-rma}
here=$(cd "$(dirname "$0")/.." && pwd)
reps=${REPS:-5}
sizes=${SIZES:-8 1024 65536}
ucharmrun=${UCHARMRUN:-$here/build/tools/ucharmrun/ucharmrun}
ampicc=${AMPICC:-$here/build/runtime/ampi/bin/ampicc}
mpicc=${MPICC:-mpicc}
mpirun=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
benches=(osu_put_latency osu_get_latency osu_put_bw osu_acc_latency)
# One build recipe for OSU's programs (tools/osu/build.sh), for both MPIs.
[ -x "$out/ampi/osu_put_latency" ] || "$here/tools/osu/build.sh" "$src" "$out/ampi" "$ampicc" > /dev/null ||
  { echo "build failed (ampi)"; exit 1; }
[ -x "$out/ompi/osu_put_latency" ] || "$here/tools/osu/build.sh" "$src" "$out/ompi" "$mpicc" > /dev/null ||
  { echo "build failed (ompi)"; exit 1; }
max=$(printf '%s\n' $sizes | sort -n | tail -1)
min=$(printf '%s\n' $sizes | sort -n | head -1)
# run IMPL BENCH REP: the OSU table rows "size value" of one run.
run() {
  local log="$out/$1.$2.$3.log"
  if [ "$1" = ampi ]; then
    timeout 300 "$ucharmrun" -n 2 --timeout 280 "$out/ampi/$2" -m "$min:$max" ${AMPI_ARGS:-} > "$log" 2>&1
  else
    timeout 300 $mpirun -np 2 "$out/ompi/$2" -m "$min:$max" > "$log" 2>&1
  fi
  grep -E '^[0-9]+ +[0-9.]+$' "$log"
}
med() { sort -g | awk '{a[NR]=$1} END { if (NR) print a[int((NR+1)/2)]; else print "nan" }'; }
for r in $(seq "$reps"); do
  for b in "${benches[@]}"; do
    run ampi "$b" "$r" > "$out/ampi.$b.$r.txt"
    run ompi "$b" "$r" > "$out/ompi.$b.$r.txt"
  done
done
echo "| benchmark | size (B) | ucharm AMPI | OpenMPI | ratio (ours/OpenMPI) |"
echo "|---|---|---|---|---|"
for b in "${benches[@]}"; do
  unit="us"; [ "$b" = osu_put_bw ] && unit="MB/s"
  for s in $sizes; do
    a=$(cat "$out"/ampi."$b".*.txt | awk -v s="$s" '$1==s{print $2}' | med)
    o=$(cat "$out"/ompi."$b".*.txt | awk -v s="$s" '$1==s{print $2}' | med)
    ratio=$(awk -v a="$a" -v o="$o" 'BEGIN { if (o > 0) printf "%.2f", a / o; else print "-" }')
    echo "| \`$b\` ($unit) | $s | $a | $o | $ratio |"
  done
done
