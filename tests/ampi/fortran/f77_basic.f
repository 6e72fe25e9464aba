! f77_basic: an f77-style program with mpif.h: point-to-point, collectives with the Fortran
! datatypes, statuses, MPI_IN_PLACE, strings (processor name, communicator names, errors).
      program f77basic
      implicit none
      include 'mpif.h'
      integer rank, size, ierr, i, errs, n, buf(10), st(MPI_STATUS_SIZE)
      integer req(2), sts(MPI_STATUS_SIZE, 2), nxt, prv
      double precision d(4), dsum(4)
      real r(2)
      complex c
      logical flag, lin(2), lout(2)
      character*(MPI_MAX_PROCESSOR_NAME) pname
      character*(MPI_MAX_OBJECT_NAME) cname
      character*(MPI_MAX_ERROR_STRING) estr
      errs = 0
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
      call MPI_INITIALIZED(flag, ierr)
      if (.not. flag) errs = errs + 1
!     ring: Isend/Irecv/Waitall, then Sendrecv with a status
      nxt = mod(rank + 1, size)
      prv = mod(rank + size - 1, size)
      do i = 1, 10
         buf(i) = rank * 100 + i
      end do
      call MPI_IRECV(n, 1, MPI_INTEGER, prv, 7, MPI_COMM_WORLD,
     &     req(1), ierr)
      call MPI_ISEND(rank, 1, MPI_INTEGER, nxt, 7, MPI_COMM_WORLD,
     &     req(2), ierr)
      call MPI_WAITALL(2, req, sts, ierr)
      if (n .ne. prv) errs = errs + 1
      if (sts(MPI_SOURCE, 1) .ne. prv) errs = errs + 1
      if (sts(MPI_TAG, 1) .ne. 7) errs = errs + 1
      if (req(1) .ne. MPI_REQUEST_NULL) errs = errs + 1
      call MPI_SENDRECV_REPLACE(buf, 10, MPI_INTEGER, nxt, 3, prv, 3,
     &     MPI_COMM_WORLD, st, ierr)
      if (buf(10) .ne. prv * 100 + 10) errs = errs + 1
      call MPI_GET_COUNT(st, MPI_INTEGER, n, ierr)
      if (n .ne. 10) errs = errs + 1
      if (st(MPI_SOURCE) .ne. prv) errs = errs + 1
!     reductions over Fortran types, MPI_IN_PLACE
      do i = 1, 4
         d(i) = dble(rank + i)
      end do
      call MPI_ALLREDUCE(d, dsum, 4, MPI_DOUBLE_PRECISION, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      if (dsum(1) .ne. dble(size * (size - 1) / 2 + size))
     &     errs = errs + 1
      call MPI_ALLREDUCE(MPI_IN_PLACE, d, 4, MPI_DOUBLE_PRECISION,
     &     MPI_MAX, MPI_COMM_WORLD, ierr)
      if (d(4) .ne. dble(size + 3)) errs = errs + 1
      r(1) = 1.5
      r(2) = real(rank)
      call MPI_ALLREDUCE(MPI_IN_PLACE, r, 1, MPI_2REAL, MPI_MAXLOC,
     &     MPI_COMM_WORLD, ierr)
      if (r(1) .ne. 1.5 .or. r(2) .ne. 0.0) errs = errs + 1
      c = cmplx(1.0, real(rank))
      call MPI_ALLREDUCE(MPI_IN_PLACE, c, 1, MPI_COMPLEX, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      if (real(c) .ne. real(size)) errs = errs + 1
      lin(1) = rank .eq. 0
      lin(2) = .true.
      call MPI_ALLREDUCE(lin, lout, 2, MPI_LOGICAL, MPI_LAND,
     &     MPI_COMM_WORLD, ierr)
      if (lout(1) .neqv. (size .eq. 1) .or. .not. lout(2))
     &     errs = errs + 1
      call MPI_BCAST(pname, 4, MPI_CHARACTER, 0, MPI_COMM_WORLD, ierr)
!     strings both ways
      call MPI_GET_PROCESSOR_NAME(pname, n, ierr)
      if (n .le. 0 .or. pname(n+1:n+1) .ne. ' ') errs = errs + 1
      call MPI_COMM_SET_NAME(MPI_COMM_WORLD, 'my world   ', ierr)
      call MPI_COMM_GET_NAME(MPI_COMM_WORLD, cname, n, ierr)
      if (cname .ne. 'my world' .or. n .ne. 8) errs = errs + 1
      call MPI_ERROR_STRING(MPI_ERR_RANK, estr, n, ierr)
      if (n .le. 0 .or. estr(n+1:) .ne. ' ') errs = errs + 1
!     a wrong handle: an error class and a message, not a crash
      call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN,
     &     ierr)
      call MPI_SEND(buf, 1, MPI_INTEGER, 0, 0, 12345, ierr)
      call MPI_ERROR_CLASS(ierr, n, ierr)
      if (n .ne. MPI_ERR_COMM) errs = errs + 1
      call MPI_REDUCE(errs, n, 1, MPI_INTEGER, MPI_SUM, 0,
     &     MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         if (n .eq. 0) then
            print '(a,i0,a)', 'f77_basic: ok (', size, ' ranks)'
         else
            print '(a,i0,a)', 'f77_basic: ', n, ' errors'
         end if
      end if
      call MPI_FINALIZE(ierr)
      end
