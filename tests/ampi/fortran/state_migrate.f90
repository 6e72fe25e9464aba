! state_migrate: a rank's Fortran state is its own and moves with it: module variables,
! COMMON blocks and SAVE variables hold the rank's number; the ranks migrate (AMPI_MIGRATE
! with +balancer RotateLB) and check them after every move; a routine registered with
! AMPI_REGISTER_PUP packs a module array. Argument "stay": no migration (the sanitizer build).
module state_mod
  implicit none
  integer :: mod_rank = -1
  integer :: pupped(4) = 0
  integer :: unpacks = 0
contains
  subroutine pup_state(p, d)
    integer(kind=8) :: p
    integer :: d(4)
    integer, external :: fpup_isunpacking
    call fpup_ints(p, d, 4)
    if (fpup_isunpacking(p) /= 0) unpacks = unpacks + 1
  end subroutine pup_state
end module state_mod

integer function saved_rank(r)
  integer :: r
  integer, save :: mine = -1
  if (mine == -1) mine = r
  saved_rank = mine
end function saved_rank

program state_migrate
  use state_mod
  implicit none
  include 'mpif.h'
  integer :: com_rank, com_arr(3)
  common /state_blk/ com_rank, com_arr
  integer :: rank, nranks, ierr, errs, it, pe, pe0, moves, idx, total
  integer(kind=MPI_ADDRESS_KIND) :: val
  logical :: flag, stay
  character(len=16) :: arg
  integer, external :: saved_rank

  errs = 0
  moves = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  stay = .false.
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    stay = arg == 'stay'
  end if
  mod_rank = rank
  com_rank = rank
  com_arr = [rank, 2 * rank, 3 * rank]
  pupped = rank
  if (saved_rank(rank) /= rank) errs = errs + 1
  call AMPI_REGISTER_PUP(pup_state, pupped, idx, ierr)
  if (ierr /= MPI_SUCCESS) errs = errs + 1
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, AMPI_MY_WTH, val, flag, ierr)
  pe0 = int(val)
  ! every rank has set its state before any is checked
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  do it = 1, 3
    if (.not. stay) call AMPI_MIGRATE(AMPI_INFO_LB_SYNC, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, AMPI_MY_WTH, val, flag, ierr)
    pe = int(val)
    if (pe /= pe0) moves = moves + 1
    pe0 = pe
    if (mod_rank /= rank) errs = errs + 1
    if (com_rank /= rank .or. com_arr(3) /= 3 * rank) errs = errs + 1
    if (saved_rank(-5) /= rank) errs = errs + 1
    if (any(pupped /= rank)) errs = errs + 1
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  end do
  ! a rank that moved had its registered routine unpack its data
  if (moves > 0 .and. unpacks == 0) errs = errs + 1
  call MPI_REDUCE(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_REDUCE(moves, it, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a,i0,a)', 'state_migrate: ok (', nranks, ' ranks)'
      print '(a,i0)', 'moves: ', it
    else
      print '(a,i0,a)', 'state_migrate: ', total, ' errors'
    end if
  end if
  call MPI_FINALIZE(ierr)
end program state_migrate
