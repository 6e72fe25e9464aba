/* MPI_Abort(comm, 256): a non-zero code whose low 8 bits are 0 must not end the job with
 * status 0 (ucharm ends it with 1; the driver checks the status is not 0). Rank 0 aborts
 * after a barrier; the others wait in a receive that never comes. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = argc > 1 ? atoi(argv[1]) : 256;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    printf("abort_code: aborting with %d\n", code);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  int x;
  MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Finalize();
  return 0;
}
