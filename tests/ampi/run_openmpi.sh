#!/usr/bin/env bash
# Builds the AMPI test programs with a system MPI (mpicc) and runs each at several rank
# counts: the programs are standard MPI, so a real MPI must pass them too. Not run by CTest.
#   tests/ampi/run_openmpi.sh [outdir] [rank counts...]     (defaults: /tmp/ampi-openmpi, 1 2 3 4 8)
# Environment: MPICC (default mpicc), MPIRUN (default "mpirun --allow-run-as-root
# --oversubscribe"), MPI_CFLAGS (extra flags, e.g. -I<dir> where mpi.h is not installed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/ampi-openmpi}
shift || true
counts=("$@")
[ ${#counts[@]} -eq 0 ] && counts=(1 2 3 4 8)
mpicc=${MPICC:-mpicc}
mpirun=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
mkdir -p "$out"
progs=(p2p_match p2p_order p2p_probe p2p_nonblocking collectives datatypes comms pmpi globals err_return intercomm neighbor darray errhan_ext)
fails=0
for p in "${progs[@]}" err_fatal err_exit rma; do
  $mpicc -O1 -Wall -Wextra ${MPI_CFLAGS:-} -o "$out/$p" "$here/progs/$p.c" || { echo "BUILD FAIL $p"; fails=$((fails+1)); }
done
# expect NAME RC-WANTED REGEX NP CMD...: the job's exit code and an output pattern.
expect() {
  local name=$1 want=$2 re=$3 np=$4; shift 4
  local log="$out/$name.np$np.log"
  timeout 120 $mpirun -np "$np" "$@" >"$log" 2>&1
  local rc=$?
  local ok=1
  if [ "$want" = nonzero ]; then [ $rc -ne 0 ] || ok=0; else [ $rc -eq "$want" ] || ok=0; fi
  grep -Eq "$re" "$log" || ok=0
  if [ $ok = 1 ]; then echo "PASS $name np=$np (rc $rc)"; else echo "FAIL $name np=$np (rc $rc, wanted $want, /$re/): $log"; fails=$((fails+1)); fi
}
for np in "${counts[@]}"; do
  for p in "${progs[@]}"; do expect "$p" 0 ": ok" "$np" "$out/$p"; done
  expect p2p_persistent 0 ": ok" "$np" "$out/p2p_nonblocking" persistent
  # Exit code only: OpenMPI 4.1 loses its own error message now and then (show_help), and
  # never names the bad rank; the messages are checked under ucharm (CMakeLists.txt).
  expect err_fatal_rank nonzero "" "$np" "$out/err_fatal" rank
  expect err_fatal_type nonzero "" "$np" "$out/err_fatal" type
  expect err_fatal_comm nonzero "" "$np" "$out/err_fatal" comm
  expect err_fatal_truncate nonzero "" "$np" "$out/err_fatal" truncate
  expect err_abort7 7 "" "$np" "$out/err_exit" abort
  expect err_exit5 5 "" "$np" "$out/err_exit" exit
  [ "$np" -ge 2 ] && expect err_return3 3 "" "$np" "$out/err_exit" return
  # RMA without its atomics section: OpenMPI 4.1's osc/rdma crashes in MPI_Compare_and_swap
  # over vader (mca_btl_vader_emu_acswap, SIGSEGV) on this host.
  expect rma 0 ": ok" "$np" "$out/rma" fence accumulate locks pscw dynamic shared properties passive
done
# The regression programs of regress/ that are standard MPI, at their own rank counts.
"$here/regress/run_openmpi.sh" "$out/regress" || fails=$((fails+1))
echo "failures: $fails"
[ $fails -eq 0 ]
