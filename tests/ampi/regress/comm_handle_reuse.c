/* A freed communicator's handle is not given at once to the next new communicator while a
 * request still names it: rank 0's receive on `a` (with MPI_ERRORS_RETURN) is truncated,
 * `a` is freed and `b` made (MPI_ERRORS_ARE_FATAL) before rank 0 waits; the error must not
 * reach b's handler (the job would end). MPI_COMM_WORLD returns errors too, so a handle
 * that names nothing any more reports there. (ucharm only: OpenMPI 4.1 reports an error of
 * a request whose communicator was freed on MPI_COMM_NULL, fatally.) */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  int rank, size, bad = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm a, b;
  MPI_Comm_dup(MPI_COMM_WORLD, &a); /* inherits MPI_ERRORS_RETURN */
  int two[2] = {1, 2}, one = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  if (rank == 1) MPI_Send(two, 2, MPI_INT, 0, 3, a);
  if (rank == 0) MPI_Irecv(&one, 1, MPI_INT, 1, 3, a, &r);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_free(&a);
  MPI_Comm_dup(MPI_COMM_WORLD, &b);
  MPI_Comm_set_errhandler(b, MPI_ERRORS_ARE_FATAL);
  if (rank == 0 && size > 1) {
    int rc = MPI_Wait(&r, MPI_STATUS_IGNORE), cls = -1;
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_TRUNCATE) bad = 1;
  }
  MPI_Comm_free(&b);
  int any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (rank == 0 && !any_bad) printf("comm_handle_reuse: ok (%d ranks)\n", size);
  MPI_Finalize();
  return any_bad;
}
