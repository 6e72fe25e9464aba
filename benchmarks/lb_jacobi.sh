#!/usr/bin/env bash
# Load balancing on the imbalanced Jacobi3D (issue 17): time per iteration without
# balancing, with each strategy, and the ideal; the trace's cost; migration vs messages.
#   benchmarks/lb_jacobi.sh OUTDIR [build-dir]
# Environment: PES (4), BLOCKS (16), GRID (192), K (5), REPS (3), ITERS (60), WARMUP (20),
# JARGS (more jacobi3d options, e.g. "--kernels cpu" on a GPU machine).
#
# The heavy quarter of the blocks (the first by index: the block map puts them all on PE 0)
# repeats its kernels K = 5 times, so the total work is 4 * 5 + 12 * 1 = 32 block-updates
# for 16 blocks: exactly the work of a run where every block repeats its kernels twice.
# That uniform run (same blocks, same messages, the work spread evenly) is the measured
# ideal "total work / PEs". The balancer runs once, after the warm-up (--lb-period WARMUP;
# +LBPeriod keeps the later AtSyncs from moving anything), and the timed iterations follow.
# Every variant runs REPS times, interleaved; the summary gives medians.
set -euo pipefail
out=${1:?usage: benchmarks/lb_jacobi.sh OUTDIR [build-dir]}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${2:-$root/build}
R=$build/tools/ucharmrun/ucharmrun
J=$build/examples/jacobi3d/jacobi3d
M=$build/benchmarks/core_migrate_cost
PES=${PES:-4} BLOCKS=${BLOCKS:-16} GRID=${GRID:-192} K=${K:-5} REPS=${REPS:-3} ITERS=${ITERS:-60} WARMUP=${WARMUP:-20}
mkdir -p "$out"
# shellcheck disable=SC2206
base=(--grid "$GRID" --blocks "$BLOCKS" --iters "$ITERS" --warmup "$WARMUP" --mode staging ${JARGS:-})
imb=(--imbalance "$K" --heavy 0.25 --lb-period "$WARMUP")
once=(+LBPeriod 1e9)

run() {  # name, then the job's arguments; appends "name ms" to results.txt
  local name=$1
  shift
  local log="$out/$name.$rep.log"
  "$R" -n "$PES" --timeout 300 "$J" "$@" > "$log" 2>&1
  echo "$name $(awk '/^time per iteration/ { print $4 }' "$log")" >> "$out/results.txt"
}

: > "$out/results.txt"
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load before: $(cut -d' ' -f1-3 /proc/loadavg)" > "$out/machine.txt"
for rep in $(seq 1 "$REPS"); do
  run no_balancing "${base[@]}" "${imb[@]}" +LBOff
  for lb in GreedyLB GreedyRefineLB RefineLB MetisLB; do
    run "$lb" "${base[@]}" "${imb[@]}" +balancer "$lb" "${once[@]}" +LBDebug
  done
  run ideal_uniform "${base[@]}" --imbalance 2 --heavy 1
  run trace_off "${base[@]}" --imbalance 2 --heavy 1
  run trace_on "${base[@]}" --imbalance 2 --heavy 1 +trace "$out/uniform.$rep.trace.json"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"

# The picture: one balanced run, traced.
"$R" -n "$PES" --timeout 300 "$J" "${base[@]}" "${imb[@]}" +balancer GreedyRefineLB "${once[@]}" \
  +trace "$out/lb.trace.json" > "$out/lb_traced.log" 2>&1
py=$root/.venv/bin/python
[ -x "$py" ] || py=python3
"$py" "$root/tools/lb_plot.py" "$out/lb.trace.json" -o "$out/jacobi-lb-before-after.png" || echo "lb_plot: no PNG (matplotlib?)"

# Migration vs messages, 1 MiB, 2 PEs.
for rep in $(seq 1 "$REPS"); do
  "$R" -n 2 --timeout 300 "$M" --bytes 1048576 --trips 50 --rounds 7 > "$out/migrate.$rep.log" 2>&1
done

python3 - "$out" <<'EOF'
import glob, statistics, sys
from collections import defaultdict
out = sys.argv[1]
t = defaultdict(list)
for line in open(f"{out}/results.txt"):
    name, *v = line.split()
    if v: t[name].append(float(v[0]))
med = {k: statistics.median(v) for k, v in t.items()}
ideal = med["ideal_uniform"]
print("| run | ms/iter (median) | runs | / ideal |")
print("|---|---|---|---|")
for k in ["no_balancing", "GreedyLB", "GreedyRefineLB", "RefineLB", "MetisLB", "ideal_uniform"]:
    if k in med:
        print(f"| {k} | {med[k]:.2f} | {', '.join(f'{x:.2f}' for x in t[k])} | {med[k] / ideal:.2f}x |")
print(f"\ntrace: off {med['trace_off']:.2f} ms, on {med['trace_on']:.2f} ms: "
      f"{(med['trace_on'] / med['trace_off'] - 1) * 100:+.1f}%")
mig, msg, ratio = [], [], []
for f in sorted(glob.glob(f"{out}/migrate.*.log")):
    for line in open(f):
        if line.startswith("migrate round trip"): mig.append(float(line.split()[3]))
        if line.startswith("message round trip"): msg.append(float(line.split()[3]))
        if line.startswith("migrate / message"): ratio.append(float(line.split()[3].rstrip("x")))
if ratio:
    print(f"1 MiB round trip: migrate {statistics.median(mig):.0f} us, message {statistics.median(msg):.0f} us, "
          f"ratio per run {', '.join(f'{r:.2f}x' for r in ratio)} (median {statistics.median(ratio):.2f}x)")
EOF
for lb in GreedyLB GreedyRefineLB RefineLB MetisLB; do
  grep -h "LB step 0" "$out/$lb.1.log" || true
done
cat "$out/machine.txt"
