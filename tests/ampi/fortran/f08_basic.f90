! f08_basic: module mpi_f08: handle types, TYPE(MPI_Status), choice buffers of any rank and
! type (TYPE(*), DIMENSION(..)), optional ierror, nonblocking calls, collectives, derived
! datatypes, communicator creation, MPI_Sizeof, and the error a non-contiguous section gets.
program f08_basic
  use mpi_f08
  implicit none
  integer :: rank, nranks, errs, i, n, ierr
  type(MPI_Comm) :: dup, half
  type(MPI_Request) :: req(2)
  type(MPI_Status) :: st, sts(2)
  type(MPI_Datatype) :: vec
  real(8) :: a(4, 3), b(3)
  integer :: ibuf(6), got(6)
  logical :: flag
  character(len=MPI_MAX_OBJECT_NAME) :: name

  errs = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  if (ierr /= MPI_SUCCESS .or. dup == MPI_COMM_WORLD .or. dup == MPI_COMM_NULL) errs = errs + 1

  ! ring over 2-D arrays and scalars, statuses
  a = real(rank, 8)
  call MPI_Irecv(b, 3, MPI_DOUBLE_PRECISION, modulo(rank - 1, nranks), 5, dup, req(1))
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  ! a(1,:) is strided: refused with MPI_ERR_BUFFER (MPI_SUBARRAYS_SUPPORTED is .false.)
  call MPI_Isend(a(1, :), 3, MPI_DOUBLE_PRECISION, modulo(rank + 1, nranks), 5, dup, req(2), ierr)
  if (ierr /= MPI_ERR_BUFFER) errs = errs + 1
  call MPI_Isend(a(:, 2), 3, MPI_DOUBLE_PRECISION, modulo(rank + 1, nranks), 5, dup, req(2))
  call MPI_Waitall(2, req, sts)
  if (any(b /= real(modulo(rank - 1, nranks), 8))) errs = errs + 1
  if (sts(1)%MPI_SOURCE /= modulo(rank - 1, nranks) .or. sts(1)%MPI_TAG /= 5) errs = errs + 1
  call MPI_Get_count(sts(1), MPI_DOUBLE_PRECISION, n)
  if (n /= 3) errs = errs + 1
  if (req(1) /= MPI_REQUEST_NULL) errs = errs + 1

  ! a strided row through a vector datatype, received contiguously
  call MPI_Type_vector(3, 1, 4, MPI_DOUBLE_PRECISION, vec)
  call MPI_Type_commit(vec)
  a(1, :) = [1d0, 2d0, 3d0] * (rank + 1)
  call MPI_Sendrecv(a, 1, vec, modulo(rank + 1, nranks), 6, b, 3, MPI_DOUBLE_PRECISION, &
                    modulo(rank - 1, nranks), 6, dup, st)
  if (b(3) /= 3d0 * (modulo(rank - 1, nranks) + 1)) errs = errs + 1
  call MPI_Type_free(vec)

  ! collectives; MPI_IN_PLACE; a test loop
  ibuf = rank
  call MPI_Allreduce(MPI_IN_PLACE, ibuf, 6, MPI_INTEGER, MPI_SUM, dup)
  if (ibuf(6) /= nranks * (nranks - 1) / 2) errs = errs + 1
  call MPI_Iallreduce(ibuf, got, 6, MPI_INTEGER, MPI_MAX, dup, req(1))
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req(1), flag, MPI_STATUS_IGNORE)
  end do
  if (got(1) /= ibuf(1)) errs = errs + 1
  call MPI_Bcast(rank, 1, MPI_INTEGER, 0, MPI_COMM_SELF)
  call MPI_Comm_split(dup, modulo(rank, 2), rank, half)
  call MPI_Comm_size(half, n)
  if (n /= (nranks + 1 - modulo(rank, 2)) / 2) errs = errs + 1
  call MPI_Comm_set_name(half, "half")
  call MPI_Comm_get_name(half, name, n)
  if (name /= "half" .or. n /= 4) errs = errs + 1
  call MPI_Comm_free(half)
  if (half /= MPI_COMM_NULL) errs = errs + 1
  call MPI_Comm_free(dup)
  call MPI_Sizeof(a, n)          ! any rank
  if (n /= 8) errs = errs + 1

  call MPI_Reduce(errs, n, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    if (n == 0) then
      print '(a,i0,a)', 'f08_basic: ok (', nranks, ' ranks)'
    else
      print '(a,i0,a)', 'f08_basic: ', n, ' errors'
    end if
  end if
  call MPI_Finalize()
end program f08_basic
