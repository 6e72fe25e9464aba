/* exit(0) after MPI_Finalize, as tutorial programs end (LLNL's mpi_latency.c): with several
   ranks in a process, the first rank to reach exit() must not end the others' work. Ranks
   0 and 1 exchange messages while the others finalize and exit at once; rank 0 prints its
   count after MPI_Finalize; rank 1 exits with 0 too; the job's code is 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int rank, size, n = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size >= 2 && rank < 2)
    for (int i = 0; i < 2000; ++i) {
      if (rank == 0) {
        MPI_Send(&n, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&n, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(&n, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ++n;
        MPI_Send(&n, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
      }
    }
  MPI_Finalize();
  if (rank == 0) printf("exit_after_finalize: rank 0 counted %d of %d\n", n, size >= 2 ? 2000 : 0);
  exit(0);
}
