/* How a job ends when one rank ends it.
 *   err_exit abort    the last rank calls MPI_Abort(MPI_COMM_WORLD, 7): job exit code 7
 *   err_exit exit     rank 1 (rank 0 when alone) calls exit(5) inside the job: exit code 5
 *   err_exit return   rank 1 (rank 0 when alone) returns 3 from main after MPI_Finalize,
 *                     the others return 0: exit code 3
 *   err_exit nofinalize  rank 1 (rank 0 when alone) returns 6 from main without calling
 *                     MPI_Finalize while the others wait in a barrier: the job ends with 6
 *                     (OpenMPI's mpirun ends it too, reporting the rank) and does not hang
 *   err_exit unimpl   rank 0 calls MPI_Open_port (not implemented by ucharm's AMPI): a
 *                     non-zero exit and a message naming MPI_Open_port (ucharm only; a
 *                     full MPI exits 0 here)
 * The other ranks wait in a barrier the failing rank never reaches (abort, exit,
 * nofinalize). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* mode = "";
  for (int i = 1; i < argc; i++)
    if (argv[i][0] != '+') mode = argv[i];
  int chosen = size > 1 ? 1 : 0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (strcmp(mode, "abort") == 0) {
    if (rank == size - 1) MPI_Abort(MPI_COMM_WORLD, 7);
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (strcmp(mode, "exit") == 0) {
    if (rank == chosen) exit(5);
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (strcmp(mode, "return") == 0) {
    MPI_Finalize();
    return rank == chosen ? 3 : 0;
  } else if (strcmp(mode, "nofinalize") == 0) {
    if (rank == chosen) return 6;
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (strcmp(mode, "unimpl") == 0) {
    if (rank == 0) {
      char port[MPI_MAX_PORT_NAME];
      if (MPI_Open_port(MPI_INFO_NULL, port) == MPI_SUCCESS) MPI_Close_port(port);
    }
  } else {
    if (rank == 0) fprintf(stderr, "err_exit: mode abort|exit|return|nofinalize|unimpl\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Finalize();
  return 0;
}
