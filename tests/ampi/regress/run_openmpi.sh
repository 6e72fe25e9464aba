#!/usr/bin/env bash
# The regression programs of this folder that are standard MPI, built with a system MPI
# (mpicc) and run at several rank counts: a real MPI must pass them too. Called by
# ../run_openmpi.sh; not run by CTest.
#   tests/ampi/regress/run_openmpi.sh [outdir] [rank counts...]   (defaults: /tmp/ampi-openmpi-regress, 2 3 5)
# Environment: MPICC (default mpicc), MPIRUN (default "mpirun --allow-run-as-root --oversubscribe").
# Not here: comm_create_error (MPI leaves the other members' outcome to the implementation),
# comm_handle_reuse (OpenMPI reports an error of a request whose communicator was freed on
# MPI_COMM_NULL, fatally) and abort_code at 256 (OpenMPI ends such a job with status 0: the
# defect ucharm fixed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/ampi-openmpi-regress}
shift || true
counts=("$@")
[ ${#counts[@]} -eq 0 ] && counts=(2 3 5)
mpicc=${MPICC:-mpicc}
mpirun=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
mkdir -p "$out"
progs=(type_free_pending op_free_pending bsend_init comm_idup create_group_twice finalize_self_attr type_attr fortran_types pack_external status_elements
       status_error_kept buffer_detach ncoll_errhandler init_thread)
fails=0
for p in "${progs[@]}" exit_flush abort_code; do
  $mpicc -O1 -Wall -Wextra -o "$out/$p" "$here/$p.c" || { echo "BUILD FAIL $p"; fails=$((fails+1)); }
done
expect() {  # NAME RC-WANTED REGEX NP CMD...
  local name=$1 want=$2 re=$3 np=$4; shift 4
  local log="$out/$name.np$np.log"
  timeout 120 $mpirun -np "$np" "$@" >"$log" 2>&1
  local rc=$?
  if [ $rc -eq "$want" ] && grep -Eq "$re" "$log"; then echo "PASS $name np=$np (rc $rc)"
  else echo "FAIL $name np=$np (rc $rc, wanted $want, /$re/): $log"; fails=$((fails+1)); fi
}
for np in "${counts[@]}"; do
  for p in "${progs[@]}"; do expect "$p" 0 "$p: ok" "$np" "$out/$p"; done
  expect init_thread_single 0 "init_thread: ok \(required 0, provided 0" "$np" "$out/init_thread" single
  expect abort_code_7 7 "aborting with 7" "$np" "$out/abort_code" 7
  for mode in return exit; do
    if "$here/exit_flush.sh" "$np" "$mode" $mpirun -np "$np" "$out/exit_flush" >"$out/exit_flush.$mode.np$np.log" 2>&1; then
      echo "PASS exit_flush.$mode np=$np"
    else
      echo "FAIL exit_flush.$mode np=$np: $out/exit_flush.$mode.np$np.log"; fails=$((fails+1))
    fi
  done
done
echo "failures: $fails"
[ $fails -eq 0 ]
