! sentinels: the special addresses of module mpi from Fortran: MPI_BOTTOM (absolute
! addresses in a struct datatype), MPI_IN_PLACE (Gather, Scatter, Reduce, Allgather),
! MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE, MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY.
program sentinels
  use mpi
  implicit none
  integer :: rank, nranks, errs, ierr, i, n, stype, rtype, req(2), graph, indeg, outdeg
  integer :: ival, ival2, blens(2), types(2), v(64), src(1), dst(1)
  double precision :: dval, dval2
  integer(kind=MPI_ADDRESS_KIND) :: disps(2)
  logical :: weighted, flag

  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)

  ! MPI_BOTTOM: an integer and a double precision by absolute address, to the next rank
  ival = rank + 10
  dval = rank + 0.5d0
  blens = 1
  types = [MPI_INTEGER, MPI_DOUBLE_PRECISION]
  call MPI_GET_ADDRESS(ival, disps(1), ierr)
  call MPI_GET_ADDRESS(dval, disps(2), ierr)
  call MPI_TYPE_CREATE_STRUCT(2, blens, disps, types, stype, ierr)
  call MPI_TYPE_COMMIT(stype, ierr)
  call MPI_GET_ADDRESS(ival2, disps(1), ierr)
  call MPI_GET_ADDRESS(dval2, disps(2), ierr)
  call MPI_TYPE_CREATE_STRUCT(2, blens, disps, types, rtype, ierr)
  call MPI_TYPE_COMMIT(rtype, ierr)
  call MPI_IRECV(MPI_BOTTOM, 1, rtype, mod(rank + nranks - 1, nranks), 1, MPI_COMM_WORLD, req(1), ierr)
  call MPI_ISEND(MPI_BOTTOM, 1, stype, mod(rank + 1, nranks), 1, MPI_COMM_WORLD, req(2), ierr)
  call MPI_WAITALL(2, req, MPI_STATUSES_IGNORE, ierr)
  if (ival2 /= mod(rank + nranks - 1, nranks) + 10) errs = errs + 1
  if (dval2 /= mod(rank + nranks - 1, nranks) + 0.5d0) errs = errs + 1
  call MPI_TYPE_FREE(stype, ierr)
  call MPI_TYPE_FREE(rtype, ierr)

  ! MPI_IN_PLACE at the root of Gather and Scatter, in Reduce and Allgather
  v = -1
  v(rank + 1) = rank * 3
  if (rank == 0) then
    call MPI_GATHER(MPI_IN_PLACE, 1, MPI_INTEGER, v, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    do i = 1, nranks
      if (v(i) /= (i - 1) * 3) errs = errs + 1
    end do
    call MPI_SCATTER(v, 1, MPI_INTEGER, MPI_IN_PLACE, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    n = nranks
    call MPI_REDUCE(MPI_IN_PLACE, n, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    if (n /= nranks * nranks) errs = errs + 1
  else
    call MPI_GATHER(v(rank + 1), 1, MPI_INTEGER, v, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call MPI_SCATTER(v, 1, MPI_INTEGER, n, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    if (n /= rank * 3) errs = errs + 1
    call MPI_REDUCE(nranks, n, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  end if
  v = -1
  v(rank + 1) = rank + 100
  call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, v, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, nranks
    if (v(i) /= i + 99) errs = errs + 1
  end do

  ! MPI_STATUS_IGNORE on receive, wait and test
  call MPI_SENDRECV(rank, 1, MPI_INTEGER, rank, 2, n, 1, MPI_INTEGER, rank, 2, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  if (n /= rank) errs = errs + 1
  call MPI_IRECV(n, 1, MPI_INTEGER, rank, 3, MPI_COMM_WORLD, req(1), ierr)
  call MPI_SEND(rank + 1, 1, MPI_INTEGER, rank, 3, MPI_COMM_WORLD, ierr)
  call MPI_WAIT(req(1), MPI_STATUS_IGNORE, ierr)
  if (n /= rank + 1) errs = errs + 1
  call MPI_IRECV(n, 1, MPI_INTEGER, rank, 4, MPI_COMM_WORLD, req(1), ierr)
  call MPI_ISEND(rank + 2, 1, MPI_INTEGER, rank, 4, MPI_COMM_WORLD, req(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_TESTALL(2, req, flag, MPI_STATUSES_IGNORE, ierr)
  end do
  if (n /= rank + 2) errs = errs + 1

  ! MPI_UNWEIGHTED: a ring; MPI_WEIGHTS_EMPTY: no edges, weighted
  src(1) = mod(rank + nranks - 1, nranks)
  dst(1) = mod(rank + 1, nranks)
  call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, src, MPI_UNWEIGHTED, 1, dst, MPI_UNWEIGHTED, &
                                      MPI_INFO_NULL, .false., graph, ierr)
  call MPI_DIST_GRAPH_NEIGHBORS_COUNT(graph, indeg, outdeg, weighted, ierr)
  if (indeg /= 1 .or. outdeg /= 1 .or. weighted) errs = errs + 1
  call MPI_COMM_FREE(graph, ierr)
  call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 0, src, MPI_WEIGHTS_EMPTY, 0, dst, MPI_WEIGHTS_EMPTY, &
                                      MPI_INFO_NULL, .false., graph, ierr)
  call MPI_DIST_GRAPH_NEIGHBORS_COUNT(graph, indeg, outdeg, weighted, ierr)
  if (indeg /= 0 .or. outdeg /= 0 .or. .not. weighted) errs = errs + 1
  call MPI_COMM_FREE(graph, ierr)

  call MPI_ALLREDUCE(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (errs == 0) then
      print '(a,i0,a)', 'sentinels: ok (', nranks, ' ranks)'
    else
      print '(a,i0,a)', 'sentinels: ', errs, ' errors'
    end if
  end if
  call MPI_FINALIZE(ierr)
end program sentinels
