! use_mpi: module mpi (explicit interfaces; choice buffers of any type): attributes and keyvals
! with Fortran copy/delete callbacks and MPI_COMM_DUP_FN / MPI_COMM_NULL_COPY_FN, a user
! reduction written in Fortran, info keys and values (strings both ways), Waitany/Waitsome
! indices (1-based), MPI_SIZEOF, MPI_TAG_UB, MPI_STATUSES_IGNORE, MPI_TYPE_CREATE_F90_*,
! MPI_ALLOC_MEM into a TYPE(C_PTR).
module use_mpi_cb
  implicit none
  integer :: copies = 0, deletes = 0
contains
  subroutine my_copy(oldcomm, keyval, extra, valin, valout, flag, ierr)
    use mpi
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
    logical :: flag
    copies = copies + 1
    valout = valin + extra
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine my_copy
  subroutine my_delete(comm, keyval, val, extra, ierr)
    use mpi
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    deletes = deletes + 1
    ierr = MPI_SUCCESS
  end subroutine my_delete
  ! complex product as a user op over pairs of double precision
  subroutine cprod(invec, inoutvec, len, dtype)
    integer :: len, dtype, i
    double complex :: invec(len), inoutvec(len)
    do i = 1, len
      inoutvec(i) = invec(i) * inoutvec(i)
    end do
  end subroutine cprod
end module use_mpi_cb

program use_mpi_prog
  use mpi
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
  use use_mpi_cb
  implicit none
  integer :: rank, nranks, errs, ierr, key1, key2, dup, op, info, n, i, idx, outc
  integer :: reqs(3), indices(3), sz
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  logical :: flag
  double complex :: z, zr
  character(len=MPI_MAX_INFO_VAL) :: value
  character(len=MPI_MAX_INFO_KEY) :: key
  integer :: bufs(3)
  real(kind=8) :: r8
  integer :: f90t, f90t2, ni, na, nd, comb
  type(c_ptr) :: cbase
  integer, pointer :: mem(:)

  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)

  ! keyvals with Fortran callbacks, and the predefined ones
  extra = 1000
  call MPI_COMM_CREATE_KEYVAL(my_copy, my_delete, key1, extra, ierr)
  call MPI_COMM_CREATE_KEYVAL(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, key2, extra, ierr)
  val = 7
  call MPI_COMM_SET_ATTR(MPI_COMM_WORLD, key1, val, ierr)
  call MPI_COMM_SET_ATTR(MPI_COMM_WORLD, key2, val, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call MPI_COMM_GET_ATTR(dup, key1, val, flag, ierr)
  if (.not. flag .or. val /= 1007 .or. copies /= 1) errs = errs + 1
  call MPI_COMM_GET_ATTR(dup, key2, val, flag, ierr)
  if (flag) errs = errs + 1
  call MPI_COMM_FREE(dup, ierr)
  if (deletes /= 1) errs = errs + 1
  call MPI_COMM_DELETE_ATTR(MPI_COMM_WORLD, key1, ierr)
  call MPI_COMM_FREE_KEYVAL(key1, ierr)
  call MPI_COMM_FREE_KEYVAL(key2, ierr)
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  if (.not. flag .or. val < 32767) errs = errs + 1

  ! a user op written in Fortran
  call MPI_OP_CREATE(cprod, .true., op, ierr)
  z = dcmplx(0d0, 1d0)
  call MPI_ALLREDUCE(z, zr, 1, MPI_DOUBLE_COMPLEX, op, MPI_COMM_WORLD, ierr)
  if (abs(zr - dcmplx(0d0, 1d0)**nranks) > 1d-12) errs = errs + 1
  call MPI_OP_FREE(op, ierr)
  if (op /= MPI_OP_NULL) errs = errs + 1

  ! info: keys and values as blank-padded Fortran strings
  call MPI_INFO_CREATE(info, ierr)
  call MPI_INFO_SET(info, 'color  ', 'deep blue   ', ierr)
  call MPI_INFO_GET(info, 'color', MPI_MAX_INFO_VAL, value, flag, ierr)
  if (.not. flag .or. value /= 'deep blue') errs = errs + 1
  call MPI_INFO_GET_VALUELEN(info, 'color', n, flag, ierr)
  if (n /= 9) errs = errs + 1
  call MPI_INFO_GET_NTHKEY(info, 0, key, ierr)
  if (key /= 'color') errs = errs + 1
  call MPI_INFO_GET(info, 'shape', MPI_MAX_INFO_VAL, value, flag, ierr)
  if (flag) errs = errs + 1
  call MPI_INFO_FREE(info, ierr)

  ! Waitany / Waitsome give 1-based indices
  do i = 1, 3
    call MPI_IRECV(bufs(i), 1, MPI_INTEGER, rank, i, MPI_COMM_WORLD, reqs(i), ierr)
  end do
  call MPI_SEND(rank, 1, MPI_INTEGER, rank, 2, MPI_COMM_WORLD, ierr)
  call MPI_WAITANY(3, reqs, idx, MPI_STATUS_IGNORE, ierr)
  if (idx /= 2) errs = errs + 1
  call MPI_SEND(rank, 1, MPI_INTEGER, rank, 3, MPI_COMM_WORLD, ierr)
  call MPI_SEND(rank, 1, MPI_INTEGER, rank, 1, MPI_COMM_WORLD, ierr)
  call MPI_WAITALL(3, reqs, MPI_STATUSES_IGNORE, ierr)
  call MPI_IRECV(bufs(1), 1, MPI_INTEGER, rank, 9, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_SEND(rank, 1, MPI_INTEGER, rank, 9, MPI_COMM_WORLD, ierr)
  call MPI_WAITSOME(1, reqs, outc, indices, MPI_STATUSES_IGNORE, ierr)
  if (outc /= 1 .or. indices(1) /= 1) errs = errs + 1

  ! MPI_TYPE_CREATE_F90_*: a kind's type, the same handle for the same parameters
  call MPI_TYPE_CREATE_F90_REAL(15, MPI_UNDEFINED, f90t, ierr)
  call MPI_TYPE_CREATE_F90_REAL(15, MPI_UNDEFINED, f90t2, ierr)
  call MPI_TYPE_SIZE(f90t, sz, ierr)
  if (sz /= 8 .or. f90t /= f90t2) errs = errs + 1
  call MPI_TYPE_GET_ENVELOPE(f90t, ni, na, nd, comb, ierr)
  if (comb /= MPI_COMBINER_F90_REAL .or. ni /= 2 .or. na /= 0 .or. nd /= 0) errs = errs + 1
  call MPI_TYPE_CREATE_F90_INTEGER(4, f90t, ierr)
  call MPI_TYPE_SIZE(f90t, sz, ierr)
  if (sz /= 2) errs = errs + 1
  ! MPI_ALLOC_MEM into a TYPE(C_PTR)
  call MPI_ALLOC_MEM(int(40, MPI_ADDRESS_KIND), MPI_INFO_NULL, cbase, ierr)
  call c_f_pointer(cbase, mem, [10])
  mem = 7
  if (sum(mem) /= 70) errs = errs + 1
  call MPI_FREE_MEM(mem, ierr)

  call MPI_SIZEOF(r8, sz, ierr)
  if (sz /= 8) errs = errs + 1
  call MPI_SIZEOF(bufs, sz, ierr)
  if (sz /= 4) errs = errs + 1
  if (MPI_COMM_F2C_CHECK() /= 0) errs = errs + 1

  call MPI_REDUCE(errs, n, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (n == 0) then
      print '(a,i0,a)', 'use_mpi: ok (', nranks, ' ranks)'
    else
      print '(a,i0,a)', 'use_mpi: ', n, ' errors'
    end if
  end if
  call MPI_FINALIZE(ierr)
contains
  integer function MPI_COMM_F2C_CHECK()
    integer :: t
    call MPI_TYPE_SIZE(MPI_DOUBLE_PRECISION, t, ierr)
    MPI_COMM_F2C_CHECK = 0
    if (t /= 8) MPI_COMM_F2C_CHECK = 1
  end function
end program use_mpi_prog
