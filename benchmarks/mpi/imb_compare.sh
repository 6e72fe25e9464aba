#!/usr/bin/env bash
# Collectives of Intel's IMB-MPI1 on ucharm's AMPI against OpenMPI, alternated in one run:
# Allreduce, Bcast, Reduce, Allgather, Alltoall and Barrier at 2, 4 and 8 ranks one per PE
# (ucharmrun -n N; mpirun -np N) and 8 ranks as +vp 8 on 2 PEs (OpenMPI: 8 processes,
# --oversubscribe). Prints, per benchmark, configuration and size, the median t_avg (us)
# of the repetitions for each and their ratio (ucharm / OpenMPI; below 1: ucharm faster).
#
#   benchmarks/mpi/imb_compare.sh [build-dir] [repeats]
#
# IMB_SRC: a checkout of https://github.com/intel/mpi-benchmarks (its src_c is built here
# twice, with the build's ampicc and with OpenMPI's mpicc, into $WORK); WORK: where the
# builds and raw outputs go (default /tmp/imb_compare). CONFIGS: which of "2 4 8 8vp" to
# run; BENCH: which benchmarks; FULL=1: every power of two from 8 B to 4 MiB (default 8 B,
# 64 B, 512 B, 4 KiB, 32 KiB, 256 KiB, 1 MiB, 4 MiB); SIZES: the sizes instead ("8 1048576");
# TIME: IMB's -time per size (s).
# OMPI_PML=ob1: OpenMPI's ob1 + vader instead of pml ucx over ucharm's UCX.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
reps=${2:-3}
work=${WORK:-/tmp/imb_compare}
src=${IMB_SRC:?set IMB_SRC to a checkout of intel/mpi-benchmarks}
configs=${CONFIGS:-2 4 8 8vp}
bench=${BENCH:-Allreduce Bcast Reduce Allgather Alltoall Barrier}
time_per=${TIME:-0.2}
run="$build/tools/ucharmrun/ucharmrun"
ucx_root=${UCX_ROOT:-$(sed -n 's/^UCHARM_UCX_ROOT:PATH=//p' "$build/CMakeCache.txt")}
mkdir -p "$work"

# --- builds ----------------------------------------------------------------------------
imb_build() {  # name compiler
  local dir="$work/$1"
  [ -x "$dir/IMB-MPI1" ] && [ "$dir/IMB-MPI1" -nt "$2" ] && return 0
  rm -rf "$dir" && mkdir -p "$dir" && cp -r "$src/src_c/." "$dir/"
  make -C "$dir" -f Makefile TARGET=MPI1 CC="$2" >"$dir/build.log" 2>&1 ||
    { tail -20 "$dir/build.log" >&2; exit 1; }
}
imb_build ampi "$build/runtime/ampi/bin/ampicc"
imb_build ompi "$(command -v mpicc)"

# --- sizes -------------------------------------------------------------------------------
lens="$work/msglens"
if [ -n "${SIZES:-}" ]; then
  printf '%s\n' $SIZES >"$lens"
elif [ "${FULL:-0}" = 1 ]; then
  for ((s = 8; s <= 4194304; s *= 2)); do echo $s; done >"$lens"
else
  printf '%s\n' 8 64 512 4096 32768 262144 1048576 4194304 >"$lens"
fi
imb_args=($bench -msglen "$lens" -time "$time_per" -iter 1000 -mem 2)

if [ "${OMPI_PML:-ucx}" = ucx ]; then
  ompi_label="OpenMPI pml ucx (ucharm's UCX)"
  ompi_env=(env "LD_LIBRARY_PATH=$ucx_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  ompi_mca=(-x LD_LIBRARY_PATH --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
else
  ompi_label="OpenMPI ob1 + vader"
  ompi_env=(env)
  ompi_mca=(--mca pml ob1 --mca btl self,vader)
fi

run_ampi() {  # config -> IMB output
  case $1 in
    8vp) "$run" -n 2 --timeout 600 "$work/ampi/IMB-MPI1" "${imb_args[@]}" -npmin 8 +vp 8 ;;
    *) "$run" -n "$1" --timeout 600 "$work/ampi/IMB-MPI1" "${imb_args[@]}" -npmin "$1" ;;
  esac
}
run_ompi() {
  local np=${1%vp} bind=(--bind-to core)
  [ "$np" -gt "$(nproc)" ] && bind=(--oversubscribe --bind-to none)
  timeout 600 "${ompi_env[@]}" mpirun --allow-run-as-root -np "$np" "${bind[@]}" "${ompi_mca[@]}" \
    "$work/ompi/IMB-MPI1" "${imb_args[@]}" -npmin "$np"
}

# IMB's tables as "bench bytes t_avg" rows (Barrier: bytes 0).
parse() {
  awk '/^# Benchmarking/ {b=$3; next}
       /^#/ || NF == 0 {next}
       b == "Barrier" && NF == 4 && $1 ~ /^[0-9]+$/ {print b, 0, $4; next}
       b != "" && NF == 5 && $1 ~ /^[0-9]+$/ {print b, $1, $5}'
}

rm -f "$work"/ampi.*.txt "$work"/ompi.*.txt
echo "== machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); $(mpirun --version | head -1); peer: $ompi_label"
echo "== IMB-MPI1 ${imb_args[*]}; $reps alternating repetitions; t_avg medians (us)"
for ((i = 1; i <= reps; i++)); do
  for cfg in $configs; do
    run_ampi "$cfg" 2>&1 | parse | sed "s/^/$cfg /" >>"$work/ampi.$i.txt" || echo "ucharm $cfg: failed (rep $i)" >&2
    run_ompi "$cfg" 2>&1 | parse | sed "s/^/$cfg /" >>"$work/ompi.$i.txt" || echo "OpenMPI $cfg: failed (rep $i)" >&2
  done
done

# Medians by (config, bench, bytes), then the table.
python3 - "$work" "$reps" <<'EOF'
import sys, statistics, collections
work, reps = sys.argv[1], int(sys.argv[2])
vals = {"ampi": collections.defaultdict(list), "ompi": collections.defaultdict(list)}
for who in vals:
    for i in range(1, reps + 1):
        try:
            for line in open(f"{work}/{who}.{i}.txt"):
                cfg, b, n, t = line.split()
                vals[who][(cfg, b, int(n))].append(float(t))
        except FileNotFoundError:
            pass
keys = sorted(set(vals["ampi"]) | set(vals["ompi"]), key=lambda k: (k[1], ["2", "4", "8", "8vp"].index(k[0]) if k[0] in ["2", "4", "8", "8vp"] else 9, k[2]))
cur = None
for k in keys:
    if (k[1], k[0]) != cur:
        cur = (k[1], k[0])
        label = f"{k[0]} ranks" if k[0] != "8vp" else "8 ranks (+vp 8 on 2 PEs; OpenMPI 8 processes)"
        print(f"\n{k[1]}, {label}\n{'bytes':>9} {'ucharm':>10} {'OpenMPI':>10} {'ratio':>7}")
    a = statistics.median(vals["ampi"][k]) if vals["ampi"][k] else None
    o = statistics.median(vals["ompi"][k]) if vals["ompi"][k] else None
    r = f"{a / o:7.2f}" if a is not None and o else "    n/a"
    fa = f"{a:10.2f}" if a is not None else "       n/a"
    fo = f"{o:10.2f}" if o is not None else "       n/a"
    print(f"{k[2]:>9} {fa} {fo} {r}")
EOF
