#!/usr/bin/env bash
# AMPI load balancing on the imbalanced Jacobi3D in MPI (examples/jacobi3d/mpi, issue 18):
# time per iteration without balancing, with AMPI_Migrate every LB_EVERY iterations under
# each balancer, the ideal, and OpenMPI running the same source (which cannot balance).
#   benchmarks/lb_jacobi_mpi.sh OUTDIR [build-dir]
# Environment: CONFIGS ("2:8 2:16 2:32 4:16 4:32", PEs:ranks), GRID (192), K (5), ITERS (40),
# WARMUP (10), LB_EVERY (10), REPS (3), BALANCERS ("GreedyRefineLB GreedyLB"), OMPI (1: run
# the OpenMPI peer when build/examples/jacobi3d/mpi/jacobi3d_mpi and mpirun exist),
# TRACE (1: one traced balanced run at the first config, and its picture by tools/lb_plot.py).
#
# Workload: ranks = blocks; the first quarter of the ranks (by index: AMPI's default map puts
# them all on PE 0) repeats its update K = 5 times, so the total work is 0.25 * 5 + 0.75 * 1
# = 2 updates per block: exactly the work of the uniform run where every rank repeats its
# update twice (--imbalance 2 --heavy 1). That uniform run (same ranks, same messages, the
# work spread evenly by the map) is the measured ideal "total work / PEs" (ideal_uniform).
# A second estimate: the imbalanced job on 1 PE (all the work, the same ranks) divided by
# the PEs (ideal_1pe). The balanced runs call AMPI_Migrate after every LB_EVERY-th iteration,
# warm-up included; the timed iterations include the later balancing steps.
# OpenMPI runs the same program with the same ranks (np = ranks, more ranks than cores:
# --oversubscribe, no binding, shared memory) and the same imbalance.
# Cores: where the machine has more cores than PEs, every job (AMPI's PEs, OpenMPI's ranks)
# is confined to the first PES cores with taskset, so that OpenMPI's extra ranks share the
# same cores as AMPI's PEs; with PES >= cores (the 2-core VM) nothing is pinned.
# Every variant runs REPS times, interleaved; the summary gives medians.
set -euo pipefail
out=${1:?usage: benchmarks/lb_jacobi_mpi.sh OUTDIR [build-dir]}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${2:-$root/build}
R=$build/tools/ucharmrun/ucharmrun
A=$build/examples/jacobi3d/mpi/jacobi3d_ampi
O=$build/examples/jacobi3d/mpi/jacobi3d_mpi
CONFIGS=${CONFIGS:-"2:8 2:16 2:32 4:16 4:32"}
GRID=${GRID:-192} K=${K:-5} ITERS=${ITERS:-40} WARMUP=${WARMUP:-10} LB_EVERY=${LB_EVERY:-10} REPS=${REPS:-3}
BALANCERS=${BALANCERS:-"GreedyRefineLB GreedyLB"}
OMPI=${OMPI:-1} TRACE=${TRACE:-1}
[ -x "$A" ] || { echo "lb_jacobi_mpi.sh: $A is missing (build the jacobi3d_ampi target)" >&2; exit 1; }
if [ "$OMPI" = 1 ] && { [ ! -x "$O" ] || ! command -v mpirun > /dev/null; }; then
  echo "lb_jacobi_mpi.sh: no OpenMPI peer ($O or mpirun missing)" >&2
  OMPI=0
fi
mkdir -p "$out"
base=(--grid "$GRID" --iters "$ITERS" --warmup "$WARMUP" --kernels cpu)
imb=(--imbalance "$K" --heavy 0.25)
uniform=(--imbalance 2 --heavy 1)

# run NAME PES VP CMD...: appends "PES VP NAME ms" to results.txt.
run() {
  local name=$1 pes=$2 vp=$3
  shift 3
  local log="$out/$name.p$pes.vp$vp.$rep.log"
  if ! "$@" > "$log" 2>&1; then
    echo "lb_jacobi_mpi.sh: $name at $pes PEs, $vp ranks failed: $log" >&2
    return 0
  fi
  echo "$pes $vp $name $(awk '/^time per iteration/ { print $4 }' "$log")" >> "$out/results.txt"
}
cores() {  # PES: the taskset prefix confining a job to PES cores (none if not more cores)
  if [ "$(nproc)" -gt "$1" ]; then echo "taskset -c 0-$(($1 - 1))"; fi
}
ampi() {  # PES VP ARGS...
  local pes=$1 vp=$2
  shift 2
  # shellcheck disable=SC2046
  $(cores "$pes") "$R" -n "$pes" --timeout 300 "$A" "${base[@]}" "$@" +vp "$vp"
}

: > "$out/results.txt"
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load before: $(cut -d' ' -f1-3 /proc/loadavg)" > "$out/machine.txt"
for rep in $(seq 1 "$REPS"); do
  for c in $CONFIGS; do
    pes=${c%%:*} vp=${c##*:}
    run no_balancing "$pes" "$vp" ampi "$pes" "$vp" "${imb[@]}"
    for lb in $BALANCERS; do
      run "$lb" "$pes" "$vp" ampi "$pes" "$vp" "${imb[@]}" --lb-every "$LB_EVERY" +balancer "$lb" +LBDebug
    done
    run ideal_uniform "$pes" "$vp" ampi "$pes" "$vp" "${uniform[@]}"
    run one_pe "$pes" "$vp" ampi 1 "$vp" "${imb[@]}"
    if [ "$OMPI" = 1 ]; then
      # shellcheck disable=SC2046
      run openmpi "$pes" "$vp" $(cores "$pes") timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none \
        --mca pml ob1 --mca btl self,vader -np "$vp" "$O" "${base[@]}" "${imb[@]}"
    fi
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"

if [ "$TRACE" = 1 ]; then
  c=${CONFIGS%% *}
  pes=${c%%:*} vp=${c##*:}
  lb=${BALANCERS%% *}
  ampi "$pes" "$vp" "${imb[@]}" --lb-every "$LB_EVERY" +balancer "$lb" +trace "$out/lb.trace.json" \
    > "$out/lb_traced.log" 2>&1 || echo "traced run failed: $out/lb_traced.log"
  py=$root/.venv/bin/python
  [ -x "$py" ] || py=python3
  "$py" "$root/tools/lb_plot.py" "$out/lb.trace.json" -o "$out/jacobi-mpi-lb-before-after.png" ||
    echo "lb_plot: no PNG"
fi

python3 - "$out" "$BALANCERS" <<'EOF'
import statistics, sys
from collections import defaultdict
out, balancers = sys.argv[1], sys.argv[2].split()
t = defaultdict(list)
for line in open(f"{out}/results.txt"):
    pes, vp, name, *v = line.split()
    if v: t[(int(pes), int(vp), name)].append(float(v[0]))
med = {k: statistics.median(v) for k, v in t.items()}
cols = ["no_balancing", *balancers, "ideal_uniform", "ideal_1pe", "openmpi"]
print("medians, ms per iteration (in brackets: / ideal_uniform)\n")
print("| PEs | ranks | " + " | ".join(cols) + " |")
print("|---|---|" + "---|" * len(cols))
for pes, vp in sorted({(p, v) for p, v, _ in t}):
    ideal = med.get((pes, vp, "ideal_uniform"))
    cells = []
    for c in cols:
        m = med.get((pes, vp, "one_pe")) / pes if c == "ideal_1pe" and (pes, vp, "one_pe") in med else med.get((pes, vp, c))
        if m is None: cells.append("-")
        elif ideal: cells.append(f"{m:.2f} ({m / ideal:.2f}x)")
        else: cells.append(f"{m:.2f}")
    print(f"| {pes} | {vp} | " + " | ".join(cells) + " |")
print("\nall runs:")
for k in sorted(t): print(" ", *k, ", ".join(f"{x:.2f}" for x in t[k]))
EOF
for f in "$out"/*.1.log; do
  l=$(grep -h "^ranks per PE" "$f" || true)
  [ -n "$l" ] && echo "$(basename "$f" .1.log): $l"
done
cat "$out/machine.txt"
