/* An error under the default handler, MPI_ERRORS_ARE_FATAL, ends the job.
 *   err_fatal rank|type|comm|truncate
 * Rank 0 makes the bad call (the others wait in a barrier it never reaches). Expected: a
 * non-zero exit and a message naming the call and the error:
 *   rank      MPI_Send to rank 9999      "MPI_Send", "MPI_ERR_RANK" (ucharm also names 9999)
 *   type      MPI_Send of MPI_DATATYPE_NULL  "MPI_Send", "MPI_ERR_TYPE"
 *   comm      MPI_Send on MPI_COMM_NULL  "MPI_Send", "MPI_ERR_COMM"
 *   truncate  MPI_Recv of 10 ints into 5 "MPI_Recv", "MPI_ERR_TRUNCATE"
 * Should the error not stop the job, the program says so and exits 0 (the test fails). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char* mode = "rank";
  for (int i = 1; i < argc; i++)
    if (argv[i][0] != '+') mode = argv[i];
  if (rank == 0) {
    int x = 1, buf[10] = {0};
    if (strcmp(mode, "rank") == 0) {
      MPI_Send(&x, 1, MPI_INT, 9999, 0, MPI_COMM_WORLD);
    } else if (strcmp(mode, "type") == 0) {
      MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD);
    } else if (strcmp(mode, "comm") == 0) {
      MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL);
    } else if (strcmp(mode, "truncate") == 0) {
      MPI_Request r;
      MPI_Isend(buf, 10, MPI_INT, 0, 1, MPI_COMM_WORLD, &r);
      MPI_Recv(buf, 5, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      fprintf(stderr, "err_fatal: unknown mode %s\n", mode);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    printf("err_fatal: the %s error was not fatal\n", mode);
    fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
