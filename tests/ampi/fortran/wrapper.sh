#!/usr/bin/env bash
# wrapper.sh AMPIF90 UCHARMRUN SRC_DIR WORK_DIR: ampif90 / ampif77 as mpif90 is used: the
# queries, -show, compiling with -c and linking the objects apart, a module of the program's
# own beside `use mpi`, and the program runs.
set -euo pipefail
f90=$1 run=$2 src=$3 work=$4
f77=${f90%ampif90}ampif77
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "wrapper.sh: $*"; exit 1; }
[[ $("$f90" --showme:libs) == "ucharm-ampi-fortran ucharm-ampi" ]] || fail "--showme:libs"
[[ $("$f90" --showme:compile) == *-I*include*-fPIC* ]] || fail "--showme:compile"
[[ $("$f90" -show x.f90 -o x) == *-lucharm-ampi-fortran*ucharm-ampi-compose* ]] || fail "-show"
[[ $("$f77" --showme:version) == *"Language: Fortran"* ]] || fail "--showme:version"
"$f90" --version | grep -q "GNU Fortran" || fail "--version"
"$f90" -language ampif --showme:libs >/dev/null || fail "-language ampif"
out=$("$f90" -language c -c x.f90 2>&1) && fail "-language c succeeded"
[[ $out == *"-language c"*ampicc* ]] || fail "-language c's message: $out"
# separate compilation: the object, then the link
"$f77" -c -fallow-argument-mismatch -w "$src/f77_basic.f" -o f77_basic.o
"$f77" f77_basic.o -o f77_basic
"$run" -n 2 --timeout 30 ./f77_basic | grep -q "f77_basic: ok (2 ranks)" || fail "f77_basic did not run"
# a program in two files, one a module the other uses
cat > ring_mod.f90 <<'F'
module ring_mod
  use mpi
  integer :: calls = 0
contains
  integer function next_rank(comm)
    integer, intent(in) :: comm
    integer :: r, n, ierr
    call MPI_COMM_RANK(comm, r, ierr)
    call MPI_COMM_SIZE(comm, n, ierr)
    calls = calls + 1
    next_rank = mod(r + 1, n)
  end function
end module
F
cat > ring.f90 <<'F'
program ring
  use mpi
  use ring_mod
  integer :: ierr, rank, got
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_SENDRECV(rank, 1, MPI_INTEGER, next_rank(MPI_COMM_WORLD), 0, got, 1, MPI_INTEGER, &
                    MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (calls == 1 .and. rank == 0) print '(a)', 'ring: ok'
  call MPI_FINALIZE(ierr)
end program
F
"$f90" -c ring_mod.f90
"$f90" -c ring.f90
"$f90" ring.o ring_mod.o -o ring
"$run" -n 2 --timeout 30 ./ring +vp 4 | grep -q "ring: ok" || fail "ring did not run"
echo "wrapper.sh: ok"
