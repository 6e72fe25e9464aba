/* The error of a nonblocking collective goes to its communicator's error handler: on a
 * duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN (MPI_COMM_WORLD keeps
 * MPI_ERRORS_ARE_FATAL) the program gets the error back and goes on: MPI_BAND on
 * MPI_DOUBLE (from the call or its MPI_Wait), and an Iallgather whose every receive is
 * truncated (2 ints sent, room for 1: from MPI_Wait). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  int rank, size, bad = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  double in = 1.0, out = 0.0;
  MPI_Request r;
  int rc = MPI_Iallreduce(&in, &out, 1, MPI_DOUBLE, MPI_BAND, c, &r);
  if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
  int cls = -1;
  MPI_Error_class(rc, &cls);
  if (cls != MPI_ERR_OP) bad = 1;
  int mine[2] = {rank, rank}, all[64] = {0};
  if (size < 63) {
    rc = MPI_Iallgather(mine, 2, MPI_INT, all, 1, MPI_INT, c, &r);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    if (size > 1 && cls != MPI_ERR_TRUNCATE) bad |= 2;
  }
  MPI_Comm_free(&c);
  int any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (bad) fprintf(stderr, "ncoll_errhandler: rank %d got %d (class %d)\n", rank, rc, cls);
  if (rank == 0 && !any_bad) printf("ncoll_errhandler: ok (%d ranks)\n", size);
  MPI_Finalize();
  return any_bad;
}
