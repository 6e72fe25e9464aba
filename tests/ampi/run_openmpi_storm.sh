#!/usr/bin/env bash
# The storm and fault programs (p2p_storm, coll_storm, churn_storm, master_worker, nbx,
# incast, many_ranks, fault) built with a system MPI and run at 8 and 16 ranks
# (oversubscribed): they are standard MPI, so a real MPI must pass them, and fault.c's exit
# codes are OpenMPI's (CMakeLists.txt expects the same codes from ucharm). Not run by CTest.
#   tests/ampi/run_openmpi_storm.sh [outdir] [rank counts...]   (defaults: /tmp/ampi-openmpi-storm, 8 16)
# Environment: MPICC (default mpicc), MPIRUN (default "mpirun --allow-run-as-root --oversubscribe").
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/ampi-openmpi-storm}
shift || true
counts=("$@")
[ ${#counts[@]} -eq 0 ] && counts=(8 16)
mpicc=${MPICC:-mpicc}
mpirun=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
mkdir -p "$out"
progs=(p2p_storm coll_storm churn_storm master_worker nbx incast many_ranks)
fails=0
for p in "${progs[@]}" fault; do
  $mpicc -O2 -Wall -Wextra -o "$out/$p" "$here/progs/$p.c" || { echo "BUILD FAIL $p"; fails=$((fails+1)); }
done
expect() {  # NAME RC-WANTED NP CMD...
  local name=$1 want=$2 np=$3; shift 3
  local log="$out/$name.np$np.log"
  local t0=$SECONDS
  timeout 120 $mpirun -np "$np" "$@" >"$log" 2>&1
  local rc=$?
  if [ $rc -eq "$want" ] && { [ "$want" != 0 ] || grep -q ": ok" "$log"; }; then
    echo "PASS $name np=$np (rc $rc, $((SECONDS - t0)) s)"
  else
    echo "FAIL $name np=$np (rc $rc, wanted $want): $log"
    fails=$((fails+1))
  fi
}
for np in "${counts[@]}"; do
  for p in "${progs[@]}"; do expect "$p" 0 "$np" "$out/$p"; done
  for m in abort:3 segv:139 exit:4 exit0:1 return6:6 storm_abort:3 coll_abort:3 coll_segv:139 abort_all:3 \
           abort_sub:3 big_segv:139 big_exit:4 big_abort:3 nofin_recv:1 nofin_barrier:1 nofin_return5:5 nofin_all:1; do
    expect "fault_${m%%:*}" "${m##*:}" "$np" "$out/fault" "${m%%:*}"
  done
done
echo "failures: $fails"
[ $fails -eq 0 ]
