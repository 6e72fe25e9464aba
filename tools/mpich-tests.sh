#!/usr/bin/env bash
# mpich-tests.sh: MPICH's test/mpi programs under OpenMPI and under ucharm's AMPI.
#
# Usage: tools/mpich-tests.sh MPICH_SRC [dir...] [--work DIR] [--minutes M] [--max-np N]
#                             [--max-mem GB] [--redo] [--redo-build] [--redo-ucharm]
#                             [--redo-failed] [--all] [--only REGEX] [--report-only]
#   MPICH_SRC  a tree holding test/mpi (e.g. `git archive HEAD test/mpi` of pmodels/mpich)
#   dir        basic pt2pt coll datatype comm group attr init errhan info topo rma io part (default: all);
#              f77, f90 (or f77/DIR, f90/DIR): MPICH's Fortran tests, built with OpenMPI's
#              mpifort and with ampif77 / ampif90 (f90/ made from f77/ by maint/f77tof90);
#              threads (threads/pt2pt comm init coll rma mpi_t: MPI_THREAD_MULTIPLE programs)
# Each testlist entry (program, process count N, arg=...) is built with OpenMPI's mpicc
# and with build/runtime/ampi/bin/ampicc (with MTest's util/mtest.c, dtypes.c and dtpools,
# and a generated minimal mpitestconf.h), then run
#   OpenMPI:    mpirun --allow-run-as-root --oversubscribe -np N ./prog args
#   ucharm pe:  ucharmrun -n N --timeout 60 ./prog args          (one rank per PE)
#   ucharm vp:  ucharmrun -n 2 --timeout 60 ./prog args +vp N     (only where N > 2)
# ucharm runs only where OpenMPI passed (--all: everywhere). --only REGEX: the programs
# whose name matches (e.g. "p_.*" for the persistent collectives in coll). Passing = exit 0 and
# " No Errors" printed. Results accumulate in the work folder (default /work/mpich-run):
# a rerun skips what was built/run (--redo, --redo-build to repeat; --redo-ucharm: every
# ucharm run again, --redo-failed: ucharm's failures again, for a runtime that changed). Writes
# results.tsv, failures.tsv (with a cause guessed from the log) and summary.md there.
# Everything runs under `nice -n 15`, one build or run at a time.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit $(( $# < 1 ? 2 : 0 ))
fi
command -v mpicc >/dev/null || { echo "mpich-tests: OpenMPI's mpicc not found" >&2; exit 2; }
exec nice -n 15 python3 -u "$here/mpich_tests.py" "$@"
